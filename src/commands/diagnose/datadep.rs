//! A data-dependent expression's answer: its exact sets over the exported range (each branch),
//! the branch that holds everywhere (with its certificate), the example's branch, and the
//! assumption to add (`torch._check`, or a ShapesSpec assumption) with what it costs.

use dimguard_readers::{Message, Unbacked};
use dimguard_solver::analyze::Options;

/// Sizes evaluated one by one to certify a data-dependent expression's sets.
const ENUMERATE: u128 = 1_000_000;

/// The `data_dependent` entry of one expression: its sets over the exported range, the branch
/// that holds everywhere (if one does), the example's branch, and the assumption to add.
pub(crate) fn report(
    g: &dimguard_readers::Guard,
    msg: &Message,
    opts: &Options,
) -> dimguard_solver::report::DataDependent {
    use dimguard_solver::engine;
    use dimguard_solver::report::{Certificate, DataDependent, Feasible, UnbackedSize};
    use dimguard_solver::{DimSet, Expr};
    let atoms: Vec<String> = g.expr.atoms().iter().map(|a| a.to_string()).collect();
    let info = |a: &str| msg.datadep.symbol(a);
    let symbols: Vec<UnbackedSize> = atoms
        .iter()
        .map(|a| UnbackedSize {
            symbol: a.clone(),
            source: info(a).and_then(|u| u.source.clone()),
            name: info(a).map_or_else(|| a.clone(), Unbacked::label),
            range: info(a).and_then(|u| u.range).map(|(l, h)| [l, h]),
        })
        .collect();
    // The expression in the user's names.
    let named = symbols.iter().fold(g.expr.clone(), |e, s| {
        e.substitute(&s.symbol, &Expr::sym(&s.name))
    });
    let mut r = DataDependent {
        guard: g.text.clone(),
        sizes: atoms.clone(),
        holds: None,
        torch_check: dimguard_solver::python::torch_check(&g.expr.torch_python()),
        source: None,
        symbols,
        range: None,
        when_true: None,
        when_false: None,
        always: None,
        certificate: Certificate::None,
        example: None,
        example_branch: None,
        assumption: None,
        removes: None,
        provenance: g.provenance.clone(),
        undecided: None,
    };
    // `Could not extract specialized integer from data-dependent expression u0 + 1`: torch needed
    // the value, not a condition; its truth (`u0 + 1 != 0`) is no answer to give.
    if dimguard_solver::syntax::parse_expr(&g.text).is_ok_and(|e| !e.is_bool()) {
        r.undecided = Some(format!(
            "`{}` is an integer, not a condition: torch needed its value as a Python int, which no condition decides; make the size static, or fix the value with torch._check({} == V)",
            g.text, g.text
        ));
        r.torch_check = [
            format!(
                "torch._check({} == V)  # V: the one value your code needs (torch needs this integer's value)",
                dimguard_solver::syntax::parse_expr(&g.text).map_or_else(|_| g.text.clone(), |e| e.torch_python())
            ),
            String::new(),
        ];
        return r;
    }
    if atoms.len() > 1 {
        several(&mut r, g, msg, opts, &named);
        return r;
    }
    let [u] = atoms.as_slice() else {
        r.undecided = Some("the expression names no size".into());
        return r;
    };
    let full = DimSet::interval(0, dimguard_solver::SIZE_MAX);
    r.holds = engine::solve(&g.expr, u, &full, &opts.limits)
        .set()
        .map(|s| dimguard_solver::analyze::describe(s, 0, dimguard_solver::SIZE_MAX, u));
    let sym = &r.symbols[0];
    r.source = sym.source.clone();
    let (lo, hi) = info(u)
        .and_then(|x| x.range)
        .unwrap_or((0, dimguard_solver::SIZE_MAX));
    r.range = Some([lo, hi]);
    let name = sym.name.clone();
    let domain = DimSet::interval(lo, hi);
    let t = engine::solve(&g.expr, u, &domain, &opts.limits);
    let f = engine::solve(
        &Expr::Not(Box::new(g.expr.clone())),
        u,
        &domain,
        &opts.limits,
    );
    let (Some(t), Some(f)) = (t.set(), f.set()) else {
        r.undecided = Some(match (&t, &f) {
            (engine::Outcome::Undecided { reason }, _)
            | (_, engine::Outcome::Undecided { reason }) => reason.to_string(),
            _ => "undecided".into(),
        });
        return r;
    };
    if domain.count() <= ENUMERATE {
        let agrees = domain.iter().all(|x| match g.expr.truth_at(u, x) {
            Ok(true) => t.contains(x) && !f.contains(x),
            Ok(false) => f.contains(x) && !t.contains(x),
            Err(_) => !t.contains(x) && !f.contains(x),
        });
        if agrees {
            r.certificate = Certificate::Enumeration;
        } else {
            r.undecided = Some("the exact sets disagree with evaluating the expression size by size (a dimguard bug: please report it)".into());
            return r;
        }
    }
    r.always = if f.is_empty() && !t.is_empty() {
        Some(true)
    } else if t.is_empty() && !f.is_empty() {
        Some(false)
    } else {
        None
    };
    r.example = opts
        .example_for(&name)
        .or_else(|| opts.example_for(u))
        .or_else(|| r.source.as_deref().and_then(|s| opts.example_for(s)));
    r.example_branch = r.example.and_then(|x| g.expr.truth_at(u, x).ok());
    let branch = r.always.or(r.example_branch);
    if let Some(b) = branch {
        r.assumption = Some(assumption(&named, b));
        r.removes = Some(if b { f.count() } else { t.count() });
    }
    r.when_true = Some(Feasible::from(t));
    r.when_false = Some(Feasible::from(f));
    r
}

/// An expression over several sizes (`u1 >= 2*u3`): over the box of their ranges, evaluated
/// combination by combination when the box holds at most [`ENUMERATE`] of them (how many pass
/// each branch, whether one holds everywhere); the example's branch from every size's traced
/// value. `when_true` / `when_false` stay null (they are sets of one size); `removes` counts
/// combinations.
fn several(
    r: &mut dimguard_solver::report::DataDependent,
    g: &dimguard_readers::Guard,
    msg: &Message,
    opts: &Options,
    named: &dimguard_solver::Expr,
) {
    use dimguard_solver::report::Certificate;
    let syms: Vec<(String, Option<(i128, i128)>)> = r
        .symbols
        .iter()
        .map(|s| {
            (
                s.symbol.clone(),
                msg.datadep.symbol(&s.symbol).and_then(|u| u.range),
            )
        })
        .collect();
    let examples: Option<Vec<i128>> = r
        .symbols
        .iter()
        .map(|s| {
            opts.example_for(&s.symbol)
                .filter(|_| {
                    opts.examples
                        .iter()
                        .any(|(n, _)| n.as_deref() == Some(&s.symbol))
                })
                .or_else(|| {
                    opts.examples
                        .iter()
                        .rev()
                        .find(|(n, _)| n.as_deref() == Some(s.name.as_str()))
                        .map(|e| e.1)
                })
        })
        .collect();
    if let Some(xs) = &examples {
        let env = |a: &str| r.symbols.iter().position(|s| s.symbol == a).map(|i| xs[i]);
        r.example_branch = g.expr.truth(&env).ok();
    }
    let ranges: Option<Vec<(i128, i128)>> = syms.iter().map(|(_, r)| *r).collect();
    let total = ranges.as_ref().map(|rs| {
        rs.iter()
            .map(|(a, b)| (b - a + 1) as u128)
            .try_fold(1u128, |acc, n| acc.checked_mul(n))
    });
    match (ranges, total) {
        (Some(rs), Some(Some(n))) if n <= ENUMERATE => {
            let names: Vec<String> = syms.iter().map(|(s, _)| s.clone()).collect();
            let (t, f) =
                dimguard_solver::linked::TupleCheck::new(&names, std::slice::from_ref(&g.expr))
                    .count(&rs);
            r.certificate = Certificate::Enumeration;
            let boxed: Vec<String> = r
                .symbols
                .iter()
                .zip(&rs)
                .map(|(s, (a, b))| format!("{} in {a}..{b}", s.name))
                .collect();
            r.holds = Some(format!(
                "true at {t} and false at {f} of the {n} combinations of {}",
                boxed.join(" × ")
            ));
            r.always = if f == 0 && t > 0 {
                Some(true)
            } else if t == 0 && f > 0 {
                Some(false)
            } else {
                None
            };
            if let Some(b) = r.always.or(r.example_branch) {
                r.assumption = Some(assumption(named, b));
                r.removes = Some(if b { f } else { t });
            }
            r.undecided = None;
        }
        (ranges, _) => {
            if let Some(b) = r.example_branch {
                r.assumption = Some(assumption(named, b));
            }
            r.undecided = Some(if ranges.is_none() {
                "over several sizes, one of which has no range: give it (--range) to count what each branch removes".into()
            } else {
                format!(
                    "over several sizes whose box has more than {ENUMERATE} combinations: what each branch removes is not counted"
                )
            });
        }
    }
}

/// The branch `b` of `e` as a `ShapesSpec` assumption: the expression, or its negation with the
/// comparison turned (`x < y`, not `torch.sym_not(x >= y)`).
pub fn assumption(e: &dimguard_solver::Expr, b: bool) -> String {
    use dimguard_solver::{CmpOp, Expr};
    if b {
        return e.torch_python();
    }
    match e {
        Expr::Cmp(op, a, c) => {
            let op = match op {
                CmpOp::Eq => CmpOp::Ne,
                CmpOp::Ne => CmpOp::Eq,
                CmpOp::Lt => CmpOp::Ge,
                CmpOp::Le => CmpOp::Gt,
                CmpOp::Gt => CmpOp::Le,
                CmpOp::Ge => CmpOp::Lt,
            };
            Expr::Cmp(op, a.clone(), c.clone()).torch_python()
        }
        Expr::Not(a) => a.torch_python(),
        _ => Expr::Not(Box::new(e.clone())).torch_python(),
    }
}
