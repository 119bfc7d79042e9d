//! `dimguard check`: which sizes an exported program really accepts.
//!
//! For each dynamic dimension of each user input: the sizes `range_constraints` *claim* (for a
//! derived size such as `8*s24`, the expression's values over its root's range), and the claimed
//! sizes that pass every guard of `guards_code` — exactly, by the solver. Guards linking several
//! inputs are solved jointly (`joint.rs`): a size is accepted when it passes for every accepted
//! size of the others, which the report says.

use crate::graph::{symbol_ranges, ProgramGraph};
use crate::program::{Error, Program, Size};
use dimguard_solver::compiled::recheck;
use dimguard_solver::diagnose::unchecked_suggestion;
use dimguard_solver::engine::Limits;
use dimguard_solver::joint;
use dimguard_solver::message::SIZE_MAX;
use dimguard_solver::parse_guard;
use dimguard_solver::python::{self, py_name};
use dimguard_solver::report::{
    Certificate, CheckDim, CheckReport, Claimed, Feasible, GuardUse, Proof, SizeRange,
};
use dimguard_solver::suggest::rank;
use dimguard_solver::types::{CmpOp, DimSet, Expr};
use std::collections::BTreeMap;

fn claimed_set(e: &Expr, ranges: &crate::graph::SymbolRanges) -> Option<DimSet> {
    let (coefs, c0) = e.affine()?;
    if !c0.is_integer() {
        return None;
    }
    match coefs.iter().collect::<Vec<_>>().as_slice() {
        [] => Some(DimSet::interval(*c0.numer(), *c0.numer())),
        [(s, k)] if k.is_integer() && *k.numer() > 0 => {
            let (lo, hi) = ranges.get(*s).copied().unwrap_or((2, SIZE_MAX));
            let k = *k.numer();
            let off = *c0.numer();
            let hi = hi.min((SIZE_MAX - off) / k);
            Some(DimSet::progression(k * lo + off, k * hi + off, k, off))
        }
        _ => None,
    }
}

/// `8*s24`, `s0`, `4*s16 + 1`.
fn pretty(e: &Expr) -> String {
    match e.affine() {
        Some((coefs, c0)) if coefs.len() == 1 && c0.is_integer() => {
            let (s, k) = coefs.iter().next().expect("one symbol");
            python::linear(*k, s, *c0.numer())
        }
        _ => e.to_string(),
    }
}

/// Decides whether guards hold on every point of a box of sizes. The CLI passes Z3
/// (`dimguard-prove::box_prover`); this crate does not depend on Z3.
pub type BoxProver<'a> = joint::Prover<'a>;

/// Checks a program: claimed versus accepted sizes of every input dimension.
///
/// ```
/// use dimguard_graph::{check, load};
///
/// let p = load("../../tests/data/pt2/unetish_exact.model.json".as_ref()).unwrap();
/// let r = check(&p, false).unwrap();
/// let h = &r.dims[0]; // x.size()[2] = 4*s16 over s16 in 50..100
/// assert_eq!((h.input.as_str(), h.index, h.expr.as_str()), ("x", 2, "4*s16"));
/// assert_eq!(h.accepted.as_ref().unwrap().count, 51);
/// assert_eq!(h.suggestions[0].code, "_x_2 = Dim('_x_2', min=50, max=100)\nx_2 = 4*_x_2");
/// ```
pub fn check(p: &Program, with_sizes: bool) -> Result<CheckReport, Error> {
    check_with(p, with_sizes, None)
}

/// [`check`], with a prover for linked groups too wide to enumerate: when it proves that the
/// linking guards hold on the product of the sizes' own accepted sets, those sets are accepted.
pub fn check_with(
    p: &Program,
    with_sizes: bool,
    prover: Option<BoxProver>,
) -> Result<CheckReport, Error> {
    let pg = ProgramGraph::build(p)?;
    let ranges = symbol_ranges(p);
    let limits = Limits::default();
    // Parse the guards.
    let mut guards: Vec<Expr> = Vec::new();
    let mut uses = Vec::new();
    for text in &p.guards_code {
        match parse_guard(text) {
            Ok(g) => {
                uses.push(GuardUse {
                    guard: text.clone(),
                    sizes: g.atoms().iter().map(|a| a.to_string()).collect(),
                    error: None,
                });
                guards.push(g);
            }
            Err(e) => uses.push(GuardUse {
                guard: text.clone(),
                sizes: vec![],
                error: Some(e.to_string()),
            }),
        }
    }
    // Input dimensions and their claimed sets.
    struct In {
        input: String,
        index: usize,
        source: String,
        expr: Expr,
        claimed: Option<DimSet>,
        hint: Option<i128>,
    }
    let mut ins: Vec<In> = Vec::new();
    for input in p.user_inputs() {
        let Some(sizes) = p.sizes(&input)? else {
            continue;
        };
        for (index, s) in sizes.iter().enumerate() {
            if let Size::Expr(e, hint) = s {
                ins.push(In {
                    input: input.clone(),
                    index,
                    source: python::input_source(&input, index),
                    claimed: claimed_set(e, &ranges),
                    expr: e.clone(),
                    hint: *hint,
                });
            }
        }
    }
    // Claimed progressions become guards too (the program only claims those sizes), then all
    // guards are grouped and solved.
    let mut all = guards.clone();
    for i in &ins {
        if let Some(c) = i
            .claimed
            .as_ref()
            .and_then(DimSet::as_progression)
            .filter(|p| p.modulus > 1)
        {
            all.push(Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::Mod(
                    Box::new(Expr::sym(&i.source)),
                    Box::new(Expr::int(c.modulus)),
                )),
                Box::new(Expr::int(c.residue)),
            ));
        }
    }
    // Sizes the program gives the same symbolic expression are one size (torch checks their
    // equality on every call): say so, so the joint solver solves them as one instead of asking
    // each to pass for every value of the other.
    for (k, i) in ins.iter().enumerate() {
        if let Some(first) = ins[..k].iter().find(|o| o.expr == i.expr) {
            all.push(Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::sym(&i.source)),
                Box::new(Expr::sym(&first.source)),
            ));
        }
    }
    let sources: Vec<String> = ins.iter().map(|i| i.source.clone()).collect();
    let bounds: BTreeMap<String, (i128, i128)> = ins
        .iter()
        .filter_map(|i| {
            i.claimed
                .as_ref()
                .and_then(|c| Some((i.source.clone(), (c.min()?, c.max()?))))
        })
        .collect();
    let mut accepted: BTreeMap<String, Result<DimSet, String>> = BTreeMap::new();
    let mut linked: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Size -> (root size, coef, offset): equal sizes share one Dim, related ones derive from it.
    let mut alias: BTreeMap<String, (String, i128, i128)> = BTreeMap::new();
    for grp in joint::group(&all, &sources) {
        let budget = dimguard_solver::linked::Budget {
            limits,
            ..Default::default()
        };
        let solved = joint::solve_group_with(&grp, &bounds, &budget, prover);
        let multi = grp.roots.len() > 1 || grp.members.len() > 1;
        for m in &grp.members {
            alias.insert(m.name.clone(), (m.root.clone(), m.coef, m.offset));
            if multi {
                linked.insert(
                    m.name.clone(),
                    grp.members
                        .iter()
                        .filter(|o| o.name != m.name)
                        .map(|o| o.name.clone())
                        .collect(),
                );
            }
            let r = match (&solved.undecided, solved.accepted.get(&m.root)) {
                (None, Some(root_set)) => root_set
                    .affine_image(m.coef, m.offset)
                    .map_err(|e| e.to_string()),
                (Some(why), _) => Err(why.to_string()),
                (None, None) => Err("not solved".into()),
            };
            accepted.insert(m.name.clone(), r);
        }
    }
    let mut dims = Vec::new();
    let mut block = python::SpecBlock::new();
    let mut dict: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for i in &ins {
        let claimed = i.claimed.clone();
        let acc = match (&claimed, accepted.get(&i.source)) {
            (Some(c), Some(Ok(a))) => Ok(a.intersect(c).unwrap_or_else(|_| a.clone())),
            (None, _) => {
                Err("the claimed sizes are not an arithmetic progression of one symbol".to_string())
            }
            (_, Some(Err(e))) => Err(e.clone()),
            (_, None) => Err("not solved".to_string()),
        };
        let name = format!("{}_{}", i.input, i.index);
        let mut d = CheckDim {
            input: i.input.clone(),
            index: i.index,
            symbol: i
                .expr
                .atoms()
                .iter()
                .next()
                .map(|a| a.to_string())
                .unwrap_or_default(),
            expr: pretty(&i.expr),
            claimed: Claimed {
                count: claimed.as_ref().map_or(0, DimSet::count),
                min: claimed.as_ref().and_then(DimSet::min),
                max: claimed.as_ref().and_then(DimSet::max),
            },
            accepted: None,
            suggestions: vec![],
            source: i.source.clone(),
            rejected_examples: vec![],
            linked_with: linked.get(&i.source).cloned().unwrap_or_default(),
            undecided: None,
            same_as: alias
                .get(&i.source)
                .filter(|(root, k, off)| *root != i.source && *k == 1 && *off == 0)
                .and_then(|(root, _, _)| ins.iter().find(|x| &x.source == root))
                .map(|x| (x.input.clone(), x.index)),
            example: i.hint,
        };
        match acc {
            Ok(a) => {
                if let Some(c) = &claimed {
                    d.rejected_examples = c
                        .difference(&a)
                        .map(|r| r.iter().take(5).collect())
                        .unwrap_or_default();
                }
                let ranking = rank(&a, i.hint, 4);
                d.suggestions = ranking
                    .progressions
                    .iter()
                    .map(|p| unchecked_suggestion(&name, p, Proof::Periodic))
                    .collect();
                let py = py_name(&name);
                match alias
                    .get(&i.source)
                    .filter(|(root, _, _)| *root != i.source)
                {
                    // A size equal to (or derived from) another input's: reuse that Dim.
                    Some((root, k, off)) => {
                        let root_name = ins
                            .iter()
                            .find(|x| &x.source == root)
                            .map(|x| py_name(&format!("{}_{}", x.input, x.index)))
                            .unwrap_or_else(|| py_name(root));
                        let e = python::derived(&root_name, *k, *off);
                        dict.entry(i.input.clone()).or_default().push((i.index, e));
                    }
                    None => {
                        if let Some(s) = d.suggestions.first() {
                            block.code(&s.code);
                            dict.entry(i.input.clone()).or_default().push((i.index, py));
                        }
                    }
                }
                d.accepted = Some(Feasible::from(&a));
            }
            Err(e) => d.undecided = Some(e),
        }
        dims.push(d);
    }
    // Suggestions of unlinked sizes re-checked value by value against their guards.
    for d in dims.iter_mut().filter(|d| d.linked_with.is_empty()) {
        let own: Vec<&Expr> = guards
            .iter()
            .filter(|g| g.atoms().iter().all(|a| **a == *d.source))
            .collect();
        for s in d.suggestions.iter_mut() {
            let set = DimSet::progression(s.lo, s.hi, s.modulus, s.residue);
            if let Some(ok) = recheck(&own, &d.source, &set) {
                s.certificate = if ok {
                    Certificate::Enumeration
                } else {
                    Certificate::None
                };
            }
        }
    }
    if !dict.is_empty() {
        block.dict(dict);
    }
    // The traced value of each input symbol (from `k*s + o` with its hint).
    let hints: BTreeMap<String, i128> = ins
        .iter()
        .filter_map(|i| {
            let (coefs, c0) = i.expr.affine()?;
            let (s, k) = coefs.iter().next().filter(|_| coefs.len() == 1)?;
            let v = (i.hint? - c0.numer()) / k.numer();
            Some((s.clone(), v))
        })
        .collect();
    let sizes = if with_sizes {
        size_table(
            &pg,
            &ins.iter()
                .map(|i| (i.expr.clone(), i.source.clone()))
                .collect::<Vec<_>>(),
            &dims,
            &hints,
        )
    } else {
        vec![]
    };
    Ok(CheckReport {
        dims,
        guards: uses,
        propagation: pg.report.clone(),
        sizes,
        dynamic_shapes: block.finish(),
        torch_version: p.torch_version.clone(),
    })
}

/// Exact values of every symbolic intermediate size, over the inputs' accepted sizes: each input
/// symbol ranges over the values of its root dimension's accepted set.
fn size_table(
    pg: &ProgramGraph,
    inputs: &[(Expr, String)],
    dims: &[CheckDim],
    hints: &BTreeMap<String, i128>,
) -> Vec<SizeRange> {
    // Symbol -> accepted root values (from a dimension whose expression is that bare symbol or
    // an affine function of it).
    let mut sym_sets: BTreeMap<String, DimSet> = BTreeMap::new();
    for ((e, _), d) in inputs.iter().zip(dims) {
        let (Some((coefs, c0)), Some(acc)) = (e.affine(), d.accepted.as_ref()) else {
            continue;
        };
        let Some((s, k)) = coefs.iter().next().filter(|_| coefs.len() == 1) else {
            continue;
        };
        if !(k.is_integer() && c0.is_integer()) {
            continue;
        }
        let set = DimSet::from_segments(acc.segments.clone())
            .and_then(|set| set.affine_preimage(*k.numer(), *c0.numer()));
        if let Ok(roots) = set {
            sym_sets.entry(s.clone()).or_insert(roots);
        }
    }
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let symints: Vec<(String, Vec<Expr>)> = pg
        .symints
        .iter()
        .map(|(k, v)| (k.clone(), vec![v.clone()]))
        .collect();
    for (tensor, sizes) in pg
        .sizes
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .chain(symints)
    {
        let tensor = &tensor;
        for (index, e) in sizes.iter().enumerate() {
            let atoms = e.atoms();
            if atoms.is_empty() || !seen.insert((e.to_string(), tensor.clone(), index)) {
                continue;
            }
            let values = if atoms.len() == 1 {
                let s = atoms.iter().next().expect("one").to_string();
                sym_sets
                    .get(&s)
                    .filter(|set| set.count() <= 1_000_000)
                    .map(|set| {
                        let vals: std::collections::BTreeSet<i128> = set
                            .iter()
                            .filter_map(|x| match e.eval(&|_| Some(x)) {
                                Ok(dimguard_solver::expr::Value::Num(q)) if q.is_integer() => {
                                    Some(*q.numer())
                                }
                                _ => None,
                            })
                            .collect();
                        Feasible::from(&DimSet::from_values(vals))
                    })
            } else {
                None
            };
            let example = match e.eval(&|n| hints.get(n).copied()) {
                Ok(dimguard_solver::expr::Value::Num(q)) if q.is_integer() => Some(*q.numer()),
                _ => None,
            };
            out.push(SizeRange {
                tensor: tensor.clone(),
                index,
                expr: e.to_string(),
                values,
                example,
            });
        }
    }
    out
}
