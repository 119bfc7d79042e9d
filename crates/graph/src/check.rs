//! `dimguard check`: which sizes an exported program really accepts.
//!
//! For each dynamic dimension of each user input: the sizes `range_constraints` *claim* (for a
//! derived size such as `8*s24`, the expression's values over its root's range), and the claimed
//! sizes that pass every guard of `guards_code` — exactly, by the solver. Guards linking several
//! inputs are solved jointly (`joint.rs`): a size is accepted when it passes for every accepted
//! size of the others, which the report says.

use crate::graph::{symbol_ranges, ProgramGraph};
use crate::program::{Error, Program, Size};
use dimguard_solver::diagnose::suggestions;
use dimguard_solver::engine::Limits;
use dimguard_solver::joint;
use dimguard_solver::message::SIZE_MAX;
use dimguard_solver::parse_guard;
use dimguard_solver::python::{self, py_name};
use dimguard_solver::report::{
    CheckDim, CheckReport, Claimed, Feasible, GuardUse, Proof, SizeRange,
};
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
///
/// The same pipeline as `diagnose`: guards parsed, grouped and solved jointly
/// ([`joint`]), then per dimension the ranked suggestions with their independent re-check
/// ([`suggestions`]) and one paste-ready spec ([`python::SpecBlock`]).
pub fn check_with(
    p: &Program,
    with_sizes: bool,
    prover: Option<BoxProver>,
) -> Result<CheckReport, Error> {
    let pg = ProgramGraph::build(p)?;
    let (guards, uses) = parse_guards(&p.guards_code);
    let ins = input_dims(p)?;
    let solved = solve(&guards, &ins, prover);
    let (dims, dynamic_shapes) = report_dims(&ins, &guards, &solved);
    let sizes = if with_sizes {
        size_table(&pg, &ins, &dims)
    } else {
        vec![]
    };
    Ok(CheckReport {
        dims,
        guards: uses,
        propagation: pg.report.clone(),
        sizes,
        dynamic_shapes,
        torch_version: p.torch_version.clone(),
    })
}

/// The guards of `guards_code` that parse, and how each was used.
fn parse_guards(code: &[String]) -> (Vec<Expr>, Vec<GuardUse>) {
    let mut guards = Vec::new();
    let mut uses = Vec::new();
    for text in code {
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
    (guards, uses)
}

/// A dynamic dimension of a user input.
struct InputDim {
    input: String,
    index: usize,
    /// `L['x'].size()[2]`: the size as guards name it.
    source: String,
    /// Its size expression in the program's symbols.
    expr: Expr,
    /// What `range_constraints` claims (`None`: not a progression of one symbol).
    claimed: Option<DimSet>,
    /// The traced size.
    hint: Option<i128>,
}

impl InputDim {
    /// The dimension's name in the report and the spec (`x_2`).
    fn name(&self) -> String {
        format!("{}_{}", self.input, self.index)
    }
}

/// Every dynamic dimension of every user input, in input order, with its claimed sizes.
fn input_dims(p: &Program) -> Result<Vec<InputDim>, Error> {
    let ranges = symbol_ranges(p);
    let mut ins = Vec::new();
    for input in p.user_inputs() {
        let Some(sizes) = p.sizes(&input)? else {
            continue;
        };
        for (index, s) in sizes.iter().enumerate() {
            if let Size::Expr(e, hint) = s {
                ins.push(InputDim {
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
    Ok(ins)
}

/// The sizes each input dimension accepts, solved jointly.
struct Solved {
    /// Source -> accepted sizes (before intersecting with the claimed ones), or why undecided.
    accepted: BTreeMap<String, Result<DimSet, String>>,
    /// Source -> the sizes it is linked with by guards.
    linked: BTreeMap<String, Vec<String>>,
    /// Source -> (root source, coef, offset): equal sizes share one Dim, related ones derive
    /// from it.
    alias: BTreeMap<String, (String, i128, i128)>,
}

/// Groups and solves the guards, with each claimed progression as a guard too (the program only
/// claims those sizes).
fn solve(guards: &[Expr], ins: &[InputDim], prover: Option<BoxProver>) -> Solved {
    let mut all = guards.to_vec();
    for i in ins {
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
    let sources: Vec<String> = ins.iter().map(|i| i.source.clone()).collect();
    let bounds: BTreeMap<String, (i128, i128)> = ins
        .iter()
        .filter_map(|i| {
            i.claimed
                .as_ref()
                .and_then(|c| Some((i.source.clone(), (c.min()?, c.max()?))))
        })
        .collect();
    let mut out = Solved {
        accepted: BTreeMap::new(),
        linked: BTreeMap::new(),
        alias: BTreeMap::new(),
    };
    for grp in joint::group(&all, &sources) {
        let budget = dimguard_solver::linked::Budget {
            limits: Limits::default(),
            ..Default::default()
        };
        let solved = joint::solve_group_with(&grp, &bounds, &budget, prover);
        let multi = grp.roots.len() > 1 || grp.members.len() > 1;
        for m in &grp.members {
            out.alias
                .insert(m.name.clone(), (m.root.clone(), m.coef, m.offset));
            if multi {
                out.linked.insert(
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
            out.accepted.insert(m.name.clone(), r);
        }
    }
    out
}

/// One report entry per input dimension, and the corrected spec.
fn report_dims(ins: &[InputDim], guards: &[Expr], solved: &Solved) -> (Vec<CheckDim>, String) {
    let mut dims = Vec::new();
    let mut block = python::SpecBlock::new();
    let mut dict: BTreeMap<String, Vec<(usize, String)>> = BTreeMap::new();
    for i in ins {
        let claimed = i.claimed.clone();
        let acc = match (&claimed, solved.accepted.get(&i.source)) {
            (Some(c), Some(Ok(a))) => Ok(a.intersect(c).unwrap_or_else(|_| a.clone())),
            (None, _) => {
                Err("the claimed sizes are not an arithmetic progression of one symbol".to_string())
            }
            (_, Some(Err(e))) => Err(e.clone()),
            (_, None) => Err("not solved".to_string()),
        };
        let name = i.name();
        let alias = solved
            .alias
            .get(&i.source)
            .filter(|(root, _, _)| *root != i.source);
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
            linked_with: solved.linked.get(&i.source).cloned().unwrap_or_default(),
            undecided: None,
            same_as: alias
                .filter(|(_, k, off)| *k == 1 && *off == 0)
                .and_then(|(root, _, _)| ins.iter().find(|x| &x.source == root))
                .map(|x| (x.input.clone(), x.index)),
            example: i.hint,
        };
        let a = match acc {
            Ok(a) => a,
            Err(e) => {
                d.undecided = Some(e);
                dims.push(d);
                continue;
            }
        };
        if let Some(c) = &claimed {
            d.rejected_examples = c
                .difference(&a)
                .map(|r| r.iter().take(5).collect())
                .unwrap_or_default();
        }
        // Unlinked sizes are re-checked value by value against their own guards; linked ones
        // are certified by the joint solution.
        let own: Vec<&Expr> = guards
            .iter()
            .filter(|g| g.atoms().iter().all(|a| **a == *i.source))
            .collect();
        let recheck = d.linked_with.is_empty().then_some(own.as_slice());
        d.suggestions =
            suggestions(&a, i.hint, 4, recheck, &i.source, &name, Proof::Periodic).suggestions;
        match alias {
            // A size equal to (or derived from) another input's: reuse that Dim.
            Some((root, k, off)) => {
                let root_name = ins
                    .iter()
                    .find(|x| &x.source == root)
                    .map(|x| py_name(&x.name()))
                    .unwrap_or_else(|| py_name(root));
                let e = python::derived(&root_name, *k, *off);
                dict.entry(i.input.clone()).or_default().push((i.index, e));
            }
            None => {
                if let Some(s) = d.suggestions.first() {
                    block.code(&s.code);
                    dict.entry(i.input.clone())
                        .or_default()
                        .push((i.index, py_name(&name)));
                }
            }
        }
        d.accepted = Some(Feasible::from(&a));
        dims.push(d);
    }
    if !dict.is_empty() {
        block.dict(dict);
    }
    (dims, block.finish())
}

/// Exact values of every symbolic intermediate size, over the inputs' accepted sizes: each input
/// symbol ranges over the values of its root dimension's accepted set.
fn size_table(pg: &ProgramGraph, ins: &[InputDim], dims: &[CheckDim]) -> Vec<SizeRange> {
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
    // Symbol -> accepted root values (from a dimension whose expression is that bare symbol or
    // an affine function of it).
    let mut sym_sets: BTreeMap<String, DimSet> = BTreeMap::new();
    for (i, d) in ins.iter().zip(dims) {
        let (Some((coefs, c0)), Some(acc)) = (i.expr.affine(), d.accepted.as_ref()) else {
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
