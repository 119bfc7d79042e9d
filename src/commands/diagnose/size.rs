//! One size's answer from its guards: each guard solved over the size's range, the exact
//! accepted set, its status, ranked suggestions re-checked value by value, coverage, padding,
//! advice, and torch's own fix checked against every guard listed under the size.

use dimguard_readers::{self, DimEntry, FixKind, Message};
use dimguard_solver::analyze::{describe, own_set, set_and_specs, Options, WITHHELD};
use dimguard_solver::engine;
use dimguard_solver::joint;
use dimguard_solver::python::{self, py_name};
use dimguard_solver::report::{
    Certificate, Diagnosed, DimReport, FixCheck, GuardFate, GuardMethod, GuardReport, Padding,
    Proof, SizeAnswer, Status,
};
use dimguard_solver::RECHECK_LIMIT;
use dimguard_solver::{self, Maximality};
use dimguard_solver::{DimSet, Expr};
use dimguard_solver::{DEFAULT_MIN, SIZE_MAX};

/// Whether a dimension takes part in an equality or relation (then the group answers for it).
fn in_relation(msg: &Message, name: &str) -> bool {
    msg.equalities.iter().any(|(a, b)| a == name || b == name)
        || msg
            .relations
            .iter()
            .any(|r| r.name == name || r.other == name)
}

/// What a specialization's reason means, and the guard behind it when the text has one.
fn specialization_reason(name: &str, v: i128, why: &str, d: &DimEntry) -> String {
    let meaning = match why {
        "range_refined_to_singleton" => {
            format!("a guard left {name} only one possible value ({v}) in its range")
        }
        "solve" => format!("torch solved a guard for {name} = {v}"),
        other => format!("torch replaced {name} by {v} ({other})"),
    };
    let behind = d
        .guards
        .iter()
        .find(|g| g.expr.atoms().len() == 1)
        .map(|g| {
            let at = g
                .provenance
                .as_ref()
                .map(|p| format!(", from {}", p.origin()))
                .unwrap_or_default();
            format!(": the guard {}{at}", g.text)
        })
        .unwrap_or_default();
    format!("why {name} is {v}: {meaning} (torch says `{why}`){behind}")
}

/// How many failing values of torch's fixes are listed.
const COUNTEREXAMPLES: usize = 5;

pub(crate) fn dim_report(
    d: &DimEntry,
    msg: &Message,
    opts: &Options,
    prover: Option<joint::Prover>,
) -> DimReport {
    let var = d.var().to_string();
    let mut r = DimReport {
        kind: Diagnosed {
            name: d.name.clone(),
            source: d.source.clone(),
            range: d.range.map(|(a, b)| [a, b]),
            status: Status::Unconstrained,
            maximality: "proven".into(),
            guards: vec![],
            specialized: d.specialized,
            coverage: None,
            padding: None,
            torch_fix: None,
            undecided: None,
            advice: vec![],
        },
        answer: SizeAnswer::default(),
    };
    if let (Some(v), true) = (d.specialized, d.forced && !d.guards.is_empty()) {
        r.advice.push(format!(
            "torch could not solve the guards for {} and forced it to {v}; dimguard solved them exactly (below). \
             torch may force the same specialization for the suggested Dim, since its solver cannot reason \
             about these guards: then export with Dim.AUTO, or one program per size you need",
            d.name
        ));
    } else if let Some(v) = d.specialized {
        r.status = Status::Specialized;
        let set = DimSet::interval(v, v);
        set_and_specs(
            &mut r.answer,
            &set,
            None,
            8,
            Some(&[]),
            &var,
            &d.name,
            Proof::Enumeration,
        );
        r.advice.push(format!(
            "the model's code fixes {} to {v} (it branches on the value or uses it as a constant); \
             use `{} = {v}` (or Dim.STATIC), or change the code so the size stays symbolic",
            d.name,
            py_name(&d.name)
        ));
        if let Some(why) = &d.specialized_reason {
            r.advice.push(specialization_reason(&d.name, v, why, d));
        }
        r.torch_fix = check_fix(msg, &d.name, &[], &var, &set, (v, v), false, opts);
        return r;
    }
    let (lo, hi) = d.range.unwrap_or((DEFAULT_MIN, SIZE_MAX));
    let domain = DimSet::interval(lo, hi);
    if d.guards.is_empty() {
        if let Some(e) = &d.inferred_equal {
            r.advice.push(format!(
                "torch inferred {} to equal {e}: express it as that derived dim",
                d.name
            ));
        }
        if d.every_guard && d.range.is_some() && !in_relation(msg, &d.name) {
            // The input lists every guard (a trace): with none, every value of the range passes.
            set_and_specs(
                &mut r.answer,
                &domain,
                None,
                8,
                Some(&[]),
                &var,
                &d.name,
                Proof::Periodic,
            );
            r.advice.push(format!(
                "no guard restricts {}: every size in {lo}..{hi} passes",
                d.name
            ));
        }
        return r;
    }
    // Each guard decided on the range, and the set they leave (the stage's `own_set`).
    let guards: Vec<&dimguard_solver::Expr> = d.guards.iter().map(|g| &g.expr).collect();
    let own = own_set(&guards, &var, &domain, &opts.limits, prover);
    let periodic = own.periodic();
    for (g, out) in d.guards.iter().zip(own.decisions) {
        let method = match &out.fate {
            joint::Fate::Solved(GuardFate::Periodic) => GuardMethod::Periodic,
            joint::Fate::Solved(_) => GuardMethod::Enumeration,
            joint::Fate::Proved => GuardMethod::Z3,
            joint::Fate::Undecided(_) => GuardMethod::Undecided,
        };
        let set = out.set;
        r.guards.push(GuardReport {
            text: g.text.clone(),
            requires: set.as_ref().map_or_else(
                || "not decided".into(),
                |s| raises(&g.text, &g.expr, s).unwrap_or_else(|| describe(s, lo, hi, &d.name)),
            ),
            removes: set.as_ref().map(|s| domain.count() - s.count()),
            redundant: false,
            folded: false,
            method,
            period: out.period,
            provenance: g.provenance.clone(),
            set,
        });
    }
    let feasible = match own.set {
        Ok(f) => f,
        Err(why) => {
            r.status = Status::Undecided;
            r.undecided = Some(why);
            if r.guards.iter().any(|g| g.method == GuardMethod::Undecided) {
                r.advice.push(UNDECIDED_ADVICE.into());
            }
            return r;
        }
    };
    let sets: Vec<&DimSet> = r.guards.iter().filter_map(|g| g.set.as_ref()).collect();
    // Redundancy: the other guards already imply this one. rest_i = prefix_i ∩ suffix_i. Past
    // the deadline it is not examined (every guard stays `redundant: false`, and the budget
    // says the answer is partial).
    if sets.len() > 1 && dimguard_solver::budget::expired().is_none() {
        let mut prefix = vec![domain.clone()];
        for s in &sets {
            let next = prefix
                .last()
                .and_then(|p| p.intersect(s).ok())
                .unwrap_or_else(|| domain.clone());
            prefix.push(next);
        }
        let mut suffix = domain.clone();
        let mut redundant = vec![false; sets.len()];
        for i in (0..sets.len()).rev() {
            if let Ok(rest) = prefix[i].intersect(&suffix) {
                redundant[i] = rest.is_subset(sets[i]).unwrap_or(false);
            }
            suffix = suffix.intersect(sets[i]).unwrap_or_else(|_| domain.clone());
        }
        for (g, r) in r.guards.iter_mut().zip(redundant) {
            g.redundant = r;
        }
    }
    let proof = if periodic {
        Proof::Periodic
    } else {
        Proof::Enumeration
    };
    // Re-checked value by value against the guards over this size alone: a guard that names
    // another size was decided for every value of it (the engine or Z3 above) and cannot be
    // evaluated with this size alone.
    let own: Vec<&Expr> = guards
        .iter()
        .copied()
        .filter(|g| g.atoms().iter().all(|a| **a == *var))
        .collect();
    conclude(&mut r, d, &feasible, Some(&own), proof, msg, opts);
    fold(&mut r, &domain, &feasible);
    r
}

/// Marks the guards that remove nothing beyond the others ([`GuardReport::folded`]): lists those
/// the others do not imply, then (in order) implied ones that narrow what the listed ones keep,
/// until the listed guards keep exactly `feasible`; folds the rest. Folds nothing when a guard is
/// undecided (no set) or a set operation fails.
fn fold(r: &mut DimReport, domain: &DimSet, feasible: &DimSet) {
    let Some(sets) = r
        .guards
        .iter()
        .map(|g| g.set.as_ref())
        .collect::<Option<Vec<_>>>()
    else {
        return;
    };
    let mut listed: Vec<bool> = r.guards.iter().map(|g| !g.redundant).collect();
    loop {
        let mut kept = domain.clone();
        for (s, _) in sets.iter().zip(&listed).filter(|(_, l)| **l) {
            match kept.intersect(s) {
                Ok(k) => kept = k,
                Err(_) => return,
            }
        }
        if kept.same_members(feasible) {
            break;
        }
        let next = (0..sets.len()).find(|&k| {
            !listed[k]
                && kept
                    .intersect(sets[k])
                    .is_ok_and(|n| n.count() < kept.count())
        });
        match next {
            Some(k) => listed[k] = true,
            None => return,
        }
    }
    for (g, l) in r.guards.iter_mut().zip(listed) {
        g.folded = !l;
    }
}

/// A dimension's answer from its exact accepted set `feasible` (inside its range): status,
/// ranked suggestions re-checked against `recheck` ([`suggestions`]), coverage, padding, advice,
/// and torch's fix checked against every guard listed under it.
pub(crate) fn conclude(
    r: &mut DimReport,
    d: &DimEntry,
    feasible: &DimSet,
    recheck: Option<&[&Expr]>,
    proof: Proof,
    msg: &Message,
    opts: &Options,
) {
    let var = d.var().to_string();
    let (lo, hi) = d.range.unwrap_or((DEFAULT_MIN, SIZE_MAX));
    let domain = DimSet::interval(lo, hi);
    r.status = if feasible.is_empty() {
        Status::Unsatisfiable
    } else if feasible.count() == domain.count() {
        Status::Spurious
    } else {
        Status::Constrained
    };
    let ranking = set_and_specs(
        &mut r.answer,
        feasible,
        opts.example_for(&d.name),
        8,
        recheck,
        &var,
        &d.name,
        proof,
    );
    if let Maximality::AmongSteps { max_step } = ranking.maximality {
        r.maximality = format!("steps<={max_step}");
    }
    if ranking.withheld > 0 {
        r.advice.push(WITHHELD.into());
    }
    if let Some(best) = ranking.progressions.first() {
        r.coverage = Some(format!(
            "holds {} of {} valid values ({} in the range)",
            best.count(),
            feasible.count(),
            domain.count()
        ));
        let pad_best = dimguard_solver::max_padding(&best.to_set(), lo.min(best.lo)).unwrap_or(0);
        r.padding = Some(Padding {
            formula: python::padding_formula(best),
            max_for_suggestion: pad_best,
            max_for_feasible: dimguard_solver::max_padding(feasible, lo),
        });
    }
    let compiled = msg.runtime.as_ref().is_some_and(|rt| rt.recompile);
    if compiled {
        compile_suggestions(r);
    }
    let said = advice(r, feasible, lo, hi, opts.example_for(&d.name), compiled);
    r.advice.extend(said);
    let guards: Vec<&Expr> = d.guards.iter().map(|g| &g.expr).collect();
    r.torch_fix = check_fix(msg, &d.name, &guards, &var, feasible, (lo, hi), true, opts);
}

/// What a dimension's advice says when a guard over its range is undecided.
pub(crate) const UNDECIDED_ADVICE: &str = "dimguard could not decide every guard over this range; narrow the range (enumeration handles up to 20,000,000 values) or check the guard by hand";

/// For a guard that passes nowhere because evaluating it raises at every size (a constant
/// negative shift count, a division by a constant zero): what Python raises there, which is
/// what torch does when the guard is evaluated. `None` for any other guard.
pub fn raises(text: &str, expr: &dimguard_solver::Expr, set: &DimSet) -> Option<String> {
    use dimguard_solver::Expr;
    if !set.is_empty() {
        return None;
    }
    /// A division by a constant zero that every evaluation reaches (not behind a condition or
    /// a short-circuit operand).
    fn always(e: &Expr) -> bool {
        match e {
            Expr::FloorDiv(a, b) | Expr::Mod(a, b) | Expr::TrueDiv(a, b) => {
                matches!(&**b, Expr::Const(c) if c.numer() == &0) || always(a) || always(b)
            }
            Expr::Ite(c, _, _) => always(c),
            Expr::And(v) | Expr::Or(v) => v.first().is_some_and(always),
            Expr::Add(v) | Expr::Mul(v) | Expr::Min(v) | Expr::Max(v) => v.iter().any(always),
            Expr::Pow(a, b) | Expr::Cmp(_, a, b) => always(a) || always(b),
            Expr::Round(_, a) | Expr::Abs(a) | Expr::Not(a) => always(a),
            Expr::Const(_) | Expr::Inf(_) | Expr::Bool(_) | Expr::Sym(_) => false,
        }
    }
    if !always(expr) {
        return None;
    }
    Some(
        if text.contains("Shift") || text.contains("<<") || text.contains(">>") {
            "never true on the range: the shift count is negative, so evaluating the guard raises `ValueError: negative shift count` at every size (torch raises it where the guard is checked)"
        } else {
            "never true on the range: the guard divides by zero, so evaluating it raises `ZeroDivisionError` at every size (torch raises it where the guard is checked)"
        }
        .into(),
    )
}

/// A size of a torch.compile text (a recompile): each suggestion's code in torch.compile's
/// terms, never a `Dim`: `torch._dynamo.mark_dynamic(x, i, min=LO, max=HI)` over its range (no
/// `max` where it has none), a size alone is the static graph torch already compiled for it,
/// and a progression's step (which `mark_dynamic` cannot hold) is said in a comment.
fn compile_suggestions(r: &mut DimReport) {
    let src = r.source.clone().unwrap_or_else(|| r.name.clone());
    for s in &mut r.answer.suggestions {
        let Some((x, i)) = dimguard_solver::python::input_dim(&src) else {
            s.code = format!(
                "# {src}: not a dimension of a named input: mark it dynamic where its tensor enters the compiled function (torch._dynamo.mark_dynamic(tensor, dim, min={}{}))",
                s.lo,
                if s.hi == SIZE_MAX { String::new() } else { format!(", max={}", s.hi) }
            );
            continue;
        };
        // A progression without an upper end stops at its last value below SIZE_MAX.
        let unbounded = s.hi > SIZE_MAX - s.modulus.max(1);
        let max = (!unbounded).then_some(s.hi);
        s.code = if s.count == 1 {
            format!(
                "# {src} = {} only: a graph compiled for that size (static) accepts it; no mark_dynamic needed",
                s.lo
            )
        } else if s.modulus > 1 {
            format!(
                "# {src}: {}..{} in steps of {} (≡ {} mod {}); mark_dynamic holds no step: the sizes between compile another graph, or pad to the step\n{}",
                s.lo,
                if unbounded { "unbounded".to_string() } else { s.hi.to_string() },
                s.modulus,
                s.residue,
                s.modulus,
                python::mark_dynamic(&x, i, Some(s.lo), max)
            )
        } else {
            python::mark_dynamic(&x, i, Some(s.lo), max)
        };
    }
}

/// What to do about the answer, in words. `example`: the traced size, when known; `compiled`:
/// the text is torch.compile's (a recompile), so the advice is `mark_dynamic`, `dynamic=True`
/// and `recompile_limit`, never an export `Dim`.
fn advice(
    r: &DimReport,
    feasible: &DimSet,
    lo: i128,
    hi: i128,
    example: Option<i128>,
    compiled: bool,
) -> Vec<String> {
    let name = &r.name;
    let mut out = Vec::new();
    if compiled {
        let top = if hi == SIZE_MAX {
            "unbounded".to_string()
        } else {
            hi.to_string()
        };
        match r.status {
            Status::Spurious => out.push(format!(
                "every size in {lo}..{top} passes every guard listed: one graph takes them all; mark {name} dynamic before the call (torch._dynamo.mark_dynamic, the block at the end) or compile with dynamic=True"
            )),
            Status::Unsatisfiable => out.push(format!(
                "no cached graph accepts a size of {name} in {lo}..{top}: mark it dynamic before the first call (torch._dynamo.mark_dynamic, the block at the end) or compile with dynamic=True"
            )),
            Status::Constrained => {
                if let (Some(best), Some(f)) = (r.answer.suggestions.first(), &r.answer.accepted) {
                    if best.count < f.count {
                        out.push(format!(
                            "no single range holds every size the cached graphs accept: the first suggestion holds {} of {}. A call at any other size compiles another graph, up to torch._dynamo.config.recompile_limit (past it torch raises or runs the function uncompiled); to keep one graph, mark {name} dynamic over the range you run (torch._dynamo.mark_dynamic(..., min=, max=)) or compile with dynamic=True",
                            best.count, f.count
                        ));
                    }
                }
                if let Some(max) = feasible.max() {
                    if max < hi {
                        out.push(format!(
                            "no cached graph accepts {name} above {max}: a call at {}..{top} compiles another graph (up to torch._dynamo.config.recompile_limit)",
                            max + 1
                        ));
                    }
                }
            }
            _ => {}
        }
        return out;
    }
    match r.status {
        Status::Spurious => out.push(format!(
            "every value in {lo}..{hi} satisfies every guard listed: torch could not prove it symbolically, so the violation is spurious. \
             Export with `{} = Dim.AUTO` (torch keeps the guard as a run-time check that no size in the range fails), \
             or rewrite the model code that produces the guard",
            py_name(name)
        )),
        Status::Unsatisfiable => out.push(format!(
            "no value in {lo}..{hi} satisfies the guards: widen the range, or make {name} static"
        )),
        Status::Constrained => {
            if let (Some(best), Some(f)) = (r.answer.suggestions.first(), &r.answer.accepted) {
                if best.count < f.count {
                    out.push(format!(
                        "no single Dim holds every valid value: the first suggestion holds {} of {}; the others are the remaining residue classes. \
                         To accept every valid size, export once per class or pad inputs to the suggested progression",
                        best.count, f.count
                    ));
                    if example.is_none() {
                        // torch refuses a spec that leaves out its example inputs ("256 not in
                        // range [121, 128]"), and this text does not say which size was traced.
                        out.push(format!(
                            "the size you traced is not in this text: torch refuses a spec that leaves it out, so if it is not one of the first suggestion's \
                             {} values ({}..{}{}), give it (--example {}=N) and dimguard suggests the piece that holds it",
                            best.count,
                            best.lo,
                            best.hi,
                            if best.modulus > 1 {
                                format!(" ≡ {} (mod {})", best.residue, best.modulus)
                            } else {
                                String::new()
                            },
                            py_name(name)
                        ));
                    }
                }
            }
            if let Some(max) = feasible.max() {
                if max < hi {
                    out.push(format!("no valid value above {max}: sizes {}..{hi} cannot be accepted", max + 1));
                }
            }
        }
        _ => {}
    }
    out
}

/// Checks torch's suggested fix for `name`, if it printed one. With `within`, only over
/// `range` (the sizes the user asked for): a fix is not unsound because of sizes outside the
/// user's range (torch's `Dim('seq', max=128)` admits 0 and 1, which a range 2..512 excludes).
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_fix(
    msg: &Message,
    name: &str,
    guards: &[&dimguard_solver::Expr],
    var: &str,
    feasible_on_range: &DimSet,
    range: (i128, i128),
    within: bool,
    opts: &Options,
) -> Option<FixCheck> {
    let fix = msg.fixes.iter().find(|f| f.name == name)?;
    let (admitted, code) = match &fix.kind {
        FixKind::Const(v) => (DimSet::interval(*v, *v), format!("{name} = {}", fix.text)),
        FixKind::Dim { min, max } => (
            DimSet::interval(min.unwrap_or(0), max.unwrap_or(SIZE_MAX)),
            format!("{name} = {}", fix.text),
        ),
        FixKind::Derived { root, coef, offset } if *coef > 0 => {
            let root_fix = msg.fixes.iter().find(|f| &f.name == root)?;
            let FixKind::Dim { min, max } = root_fix.kind else {
                return None;
            };
            let (kmin, kmax) = (min.unwrap_or(0), max.unwrap_or((SIZE_MAX - offset) / coef));
            let set =
                DimSet::progression(coef * kmin + offset, coef * kmax + offset, *coef, *offset);
            (
                set,
                format!("{root} = {}\n{name} = {}", root_fix.text, fix.text),
            )
        }
        _ => return None,
    };
    let (admitted, outside_range) = if within {
        let inside = admitted
            .intersect(&DimSet::interval(range.0, range.1))
            .ok()?;
        let outside = admitted.count() - inside.count();
        (inside, outside)
    } else {
        (admitted, 0)
    };
    // The guards hold or fail wherever they are evaluated; a specialization admits one value.
    // Inside the range the feasible set already answers; outside it, solve again.
    let inside = guards.is_empty()
        || admitted.is_empty()
        || (admitted.min()? >= range.0 && admitted.max()? <= range.1);
    let passing = if inside {
        admitted.intersect(feasible_on_range).ok()?
    } else {
        guards.iter().try_fold(admitted.clone(), |acc, g| {
            engine::solve(g, var, &acc, &opts.limits)
                .set()
                .and_then(|s| acc.intersect(s).ok())
        })?
    };
    let failing = admitted.difference(&passing).ok()?;
    Some(FixCheck {
        code,
        sound: failing.is_empty(),
        admitted: admitted.count(),
        failing: failing.count(),
        counterexamples: failing.iter().take(COUNTEREXAMPLES).collect(),
        certificate: if admitted.count() <= RECHECK_LIMIT {
            Certificate::Enumeration
        } else {
            Certificate::None
        },
        admitted_set: admitted,
        judged_over: within.then_some([range.0, range.1]),
        range_is_default: within && range == (DEFAULT_MIN, SIZE_MAX),
        outside_range,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_in_plain_terms() {
        let s = DimSet::progression(136, 2120, 64, 8);
        assert_eq!(describe(&s, 135, 2160, "h"), "h ≡ 8 (mod 64)");
        let s = DimSet::interval(192, 2160);
        assert_eq!(describe(&s, 135, 2160, "h"), "h >= 192");
        let s = DimSet::progression(136, 1000, 8, 0);
        assert_eq!(describe(&s, 135, 2160, "h"), "h ≡ 0 (mod 8) and h <= 1000");
        let s = DimSet::interval(135, 2160);
        assert_eq!(describe(&s, 135, 2160, "h"), "always true on the range");
    }
}
