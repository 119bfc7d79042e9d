//! The whole diagnosis of a message: per dimension, the exact feasible set, ranked sound
//! suggestions, what each guard requires and removes, a check of torch's own suggested fixes, and
//! a paste-ready `dynamic_shapes` block.
//!
//! The report's types are in [`report`](crate::report); the Python it prints comes from
//! [`python`](crate::python).

use crate::analyze::{analyze, Analysis, GroupAnswer, Problem, Size};
use crate::compiled::{recheck, RECHECK_LIMIT};
use crate::engine::{self, Limits};
use crate::error::Error;
use crate::joint;
use crate::message::{self, DimEntry, FixKind, Message, DEFAULT_MIN, SIZE_MAX};
use crate::python::{self, dim_code, py_name};
use crate::report::{
    Certificate, DataDependent, DimReport, Feasible, FixCheck, GuardFate, GuardMethod, GuardReport,
    GuardUse, LineDim, LineReport, LinkedGroup, LinkedSides, Padding, Proof, RelationReport,
    Report, Status, Suggestion,
};
use crate::suggest::{self, Maximality};
use crate::types::{CmpOp, DimSet, Expr, Progression};
use std::collections::{BTreeMap, BTreeSet};

/// How many failing values of torch's fixes are listed.
const COUNTEREXAMPLES: usize = 5;

/// Options of a diagnosis.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Traced sizes: `(None, n)` for every dimension, `(Some(name), n)` for one.
    pub examples: Vec<(Option<String>, i128)>,
    /// Solver limits.
    pub limits: Limits,
}

/// Reads any input ([`read`]: an error message, a log, a draft_export report, a run-time
/// failure, a structured trace) and diagnoses it.
///
/// ```
/// use dimguard_solver::diagnose::{diagnose_text, Options};
///
/// let text = "Constraints violated (_2)!\n  - Not all values of _2 = L['image1'].size()[2] in the \
///     specified range 135 <= _2 <= 2160 satisfy the generated guard \
///     Eq(Mod(((L['image1'].size()[2] - 1)//4) - 1, 2), 0).";
/// let report = diagnose_text(text, &Options::default()).unwrap();
/// let d = &report.dims[0];
/// assert_eq!(d.feasible.as_ref().unwrap().count, 1014); // h mod 8 in {0, 5, 6, 7}
/// let best = &d.suggestions[0]; // one residue class: the largest single Dim
/// assert_eq!((best.modulus, best.count), (8, 254));
/// assert!(report.dynamic_shapes.contains("dynamic_shapes = {\"image1\": {2: _2}}"));
/// ```
pub fn diagnose_text(text: &str, opts: &Options) -> Result<Report, Error> {
    let mut opts = opts.clone();
    let mut msg = read(text, &mut opts)?;
    crate::forms::apply_ranges(&mut msg, &[])?;
    Ok(diagnose(&msg, &opts))
}

/// Reads an input text: a structured trace (`TORCH_TRACE`; its traced sizes are added to
/// `opts.examples` before the ones given, which win) or any other form of guard text
/// ([`crate::forms::read`]: an error message, a log, a draft_export report, a run-time failure).
/// The message's `form` says which.
pub fn read(text: &str, opts: &mut Options) -> Result<Message, Error> {
    if crate::trace::looks_like_trace(text) {
        let t = crate::trace::read(text)?;
        let mut examples = t.examples();
        examples.append(&mut opts.examples);
        opts.examples = examples;
        let mut msg = t.to_message();
        crate::forms::datadep::trace_bounds(&mut msg);
        return Ok(msg);
    }
    crate::forms::read(text)
}

/// Diagnoses a message already read.
pub fn diagnose(msg: &Message, opts: &Options) -> Report {
    diagnose_with(msg, opts, None)
}

/// [`diagnose`], with a validity oracle (Z3, `dimguard-prove::box_prover`) asked about guards
/// over several sizes before they are called undecided (a group too wide for the joint search,
/// a guard outside its methods).
pub fn diagnose_with(msg: &Message, opts: &Options, prover: Option<joint::Prover>) -> Report {
    let mut dims: Vec<DimReport> = msg
        .dims
        .iter()
        .enumerate()
        .map(|(i, d)| {
            crate::budget::progress(
                format!("solving dimension {}", d.name),
                i as u64,
                msg.dims.len() as u64,
            );
            dim_report(d, msg, opts, prover)
        })
        .collect();
    let sized = size_guards(msg);
    // A guard listed under one size that names another links them too (a constraint
    // violation lists it under each).
    let linking = sized.guards.iter().any(|g| g.atoms().len() > 1);
    let analysis = if !linking
        && msg.joint.is_empty()
        && msg.equalities.is_empty()
        && msg.relations.is_empty()
    {
        Analysis::default()
    } else {
        // The one stage, over the groups of several sizes (each size's own guards are solved
        // guard by guard above, for the per-guard lines).
        let budget = crate::linked::Budget {
            limits: opts.limits,
            ..Default::default()
        };
        analyze(&problem(msg, opts, &sized), &budget, prover, &|g| {
            g.members.len() > 1 || g.roots.len() > 1
        })
    };
    let fates: Fates = analysis.fates.clone();
    let linked = linked_groups(msg, opts, &analysis);
    let groups: Vec<joint::Group> = analysis.groups.iter().map(|g| g.grp.clone()).collect();
    let solved: Vec<JointGroup> = analysis
        .groups
        .into_iter()
        .filter(|g| g.grp.roots.len() > 1)
        .collect();
    let joint = crate::forms::explain::joint_guards(&linked, &groups, &solved, msg);
    let choices = crate::forms::explain::link_dims(&mut dims, &solved, msg, opts, prover);
    let guards = accounting(msg, &dims, &sized, &fates);
    let data_dependent: Vec<DataDependent> = msg
        .data_dependent
        .iter()
        .map(|g| crate::forms::datadep::report(g, msg, opts))
        .collect();
    // The names the block gives before the groups' partners get theirs.
    let mut taken: BTreeSet<String> = msg
        .dims
        .iter()
        .map(|d| d.name.as_str())
        .chain(msg.relations.iter().flat_map(|r| [&*r.name, &*r.other]))
        .chain(msg.equalities.iter().flat_map(|(a, b)| [&**a, &**b]))
        .chain(
            linked
                .iter()
                .flat_map(|g| std::iter::once(&*g.root).chain(g.members.iter().map(|m| &*m[0]))),
        )
        .map(py_name)
        .collect();
    let specs = crate::forms::explain::group_specs(&solved, &choices, msg, &mut taken);
    let dynamic_shapes = dynamic_shapes_block(msg, &dims, &linked, &specs, &data_dependent);
    let lines = line_reports(msg, &dims);
    let mut report = Report {
        dims,
        equalities: msg
            .equalities
            .iter()
            .map(|(a, b)| [a.clone(), b.clone()])
            .collect(),
        relations: msg
            .relations
            .iter()
            .map(|r| RelationReport {
                name: r.name.clone(),
                other: r.other.clone(),
                expr: r.expr.clone(),
            })
            .collect(),
        dynamic_shapes,
        linked,
        data_dependent,
        unrecognized: msg.unrecognized.clone(),
        lines,
        form: msg.form,
        notes: msg.notes.clone(),
        unreadable: msg.unreadable.clone(),
        joint,
        runtime: None,
        joint_sets: solved
            .iter()
            .filter_map(|g| g.linked.as_ref().map(|l| l.report.clone()))
            .collect(),
        guards,
    };
    crate::forms::explain::complete(&mut report, msg, opts);
    report
}

/// Where a guard over the message's sizes comes from.
#[derive(Debug, Clone, Copy)]
enum Origin {
    /// `msg.dims[d].guards[g]`.
    Dim(usize, usize),
    /// `msg.joint[j]`.
    Joint(usize),
    /// `msg.equalities[i]`.
    Equality(usize),
    /// `msg.relations[i]`.
    Relation(usize),
}

/// Every guard over the message's sizes as one list: one-size guards, guards over several
/// sizes, and equalities and relations as `==` guards, all over the sizes' sources.
struct Sized {
    guards: Vec<Expr>,
    origin: Vec<Origin>,
    /// Relations whose right-hand side could not be read, with the reason.
    unread: Vec<(usize, String)>,
}

fn size_guards(msg: &Message) -> Sized {
    let var = |name: &str| {
        msg.dims
            .iter()
            .find(|d| d.name == name)
            .map_or_else(|| name.to_string(), |d| d.var().to_string())
    };
    let mut out = Sized {
        guards: vec![],
        origin: vec![],
        unread: vec![],
    };
    for (di, d) in msg.dims.iter().enumerate() {
        for (gi, g) in d.guards.iter().enumerate() {
            out.guards.push(g.expr.clone());
            out.origin.push(Origin::Dim(di, gi));
        }
    }
    for (ji, g) in msg.joint.iter().enumerate() {
        out.guards.push(g.expr.clone());
        out.origin.push(Origin::Joint(ji));
    }
    for (i, (a, b)) in msg.equalities.iter().enumerate() {
        out.guards.push(Expr::Cmp(
            CmpOp::Eq,
            Box::new(Expr::sym(&var(b))),
            Box::new(Expr::sym(&var(a))),
        ));
        out.origin.push(Origin::Equality(i));
    }
    for (i, r) in msg.relations.iter().enumerate() {
        match relation_guard(msg, r) {
            Ok(g) => {
                out.guards.push(g);
                out.origin.push(Origin::Relation(i));
            }
            Err(e) => out.unread.push((i, e.message)),
        }
    }
    out
}

/// A relation torch states (`dy = dx + 1`) as an `==` guard over the sizes' sources: its
/// right-hand side names dimensions, rewritten over their sizes.
pub fn relation_guard(
    msg: &Message,
    r: &crate::message::Relation,
) -> Result<Expr, crate::error::ParseError> {
    let mut rhs = crate::syntax::parse_expr(&r.expr)?;
    for d in &msg.dims {
        rhs = rhs.substitute(&d.name, &Expr::sym(d.var()));
    }
    let lhs = msg
        .dims
        .iter()
        .find(|d| d.name == r.name)
        .map_or_else(|| r.name.clone(), |d| d.var().to_string());
    Ok(Expr::Cmp(
        CmpOp::Eq,
        Box::new(Expr::sym(&lhs)),
        Box::new(rhs),
    ))
}

/// Each size guard's fate (`fate`, reason), by its index in [`Sized`]'s list.
type Fates = BTreeMap<usize, (GuardFate, Option<String>)>;

/// A group of independent sizes linked by guards, solved jointly by the analysis stage.
pub(crate) type JointGroup = GroupAnswer;

/// The message as the analysis stage's [`Problem`]: its dimensions (range, traced value from
/// `--example`) and every guard over their sizes ([`Sized`], in its order: a guard's origin is
/// its index there).
fn problem(msg: &Message, opts: &Options, sized: &Sized) -> Problem {
    Problem {
        sizes: msg
            .dims
            .iter()
            .map(|d| Size {
                example: example_for(opts, &d.name),
                ..Size::new(d.var(), &d.name, d.range)
            })
            .collect(),
        guards: sized.guards.clone(),
        extra_ranges: Default::default(),
    }
}

/// The dimension name of a size (its source, or its name), for reports.
pub(crate) fn name_of(msg: &Message, v: &str) -> String {
    msg.dims
        .iter()
        .find(|d| d.var() == v)
        .map_or(v.to_string(), |d| d.name.clone())
}

/// Every guard of the message and what became of it.
fn accounting(msg: &Message, dims: &[DimReport], sized: &Sized, fates: &Fates) -> Vec<GuardUse> {
    let names = |e: &Expr| -> Vec<String> {
        e.atoms()
            .iter()
            .map(|a| name_of(msg, a))
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    for (i, o) in sized.origin.iter().enumerate() {
        let (guard, sizes) = match *o {
            Origin::Dim(di, gi) => (
                msg.dims[di].guards[gi].text.clone(),
                vec![msg.dims[di].name.clone()],
            ),
            Origin::Joint(j) => (msg.joint[j].text.clone(), names(&msg.joint[j].expr)),
            Origin::Equality(k) => {
                let (a, b) = &msg.equalities[k];
                (format!("{b} == {a}"), vec![a.clone(), b.clone()])
            }
            Origin::Relation(k) => {
                let r = &msg.relations[k];
                (format!("{} == {}", r.name, r.expr), names(&sized.guards[i]))
            }
        };
        let (fate, reason) = fates.get(&i).cloned().unwrap_or_else(|| match *o {
            Origin::Dim(di, gi) => match dims[di].guards.get(gi) {
                Some(g) => match g.method {
                    GuardMethod::Periodic => (GuardFate::Periodic, None),
                    GuardMethod::Enumeration => (GuardFate::Enumeration, None),
                    GuardMethod::Z3 => (GuardFate::Z3, None),
                    GuardMethod::Joint => (GuardFate::Joint, None),
                    GuardMethod::Undecided => (GuardFate::Undecided, dims[di].undecided.clone()),
                },
                None => (GuardFate::Specialized, None),
            },
            Origin::Equality(_) | Origin::Relation(_) => (GuardFate::Relation, None),
            Origin::Joint(_) => (GuardFate::Undecided, Some("not grouped".into())),
        });
        out.push(GuardUse {
            guard,
            sizes,
            error: None,
            fate,
            reason,
        });
    }
    for (k, why) in &sized.unread {
        let r = &msg.relations[*k];
        out.push(GuardUse {
            guard: format!("{} == {}", r.name, r.expr),
            sizes: vec![r.name.clone()],
            error: Some(why.clone()),
            fate: GuardFate::Unparsed,
            reason: None,
        });
    }
    for g in &msg.data_dependent {
        out.push(GuardUse {
            guard: g.text.clone(),
            sizes: g.expr.atoms().iter().map(|a| a.to_string()).collect(),
            error: None,
            fate: GuardFate::DataDependent,
            reason: None,
        });
    }
    for u in &msg.unreadable {
        out.push(GuardUse {
            guard: u.text.clone(),
            sizes: vec![],
            error: Some(u.reason.clone()),
            fate: GuardFate::Unparsed,
            reason: None,
        });
    }
    out
}

/// Groups the guards by the line they come from: per line, what its guards together require of
/// each size (the intersection of their exact sets) and how many values that removes.
fn line_reports(msg: &Message, dims: &[DimReport]) -> Vec<LineReport> {
    let mut out: Vec<LineReport> = vec![];
    let mut sets: Vec<BTreeMap<usize, Option<DimSet>>> = vec![];
    let slot = |p: &crate::provenance::Provenance,
                out: &mut Vec<LineReport>,
                sets: &mut Vec<BTreeMap<usize, Option<DimSet>>>| {
        let i = out
            .iter()
            .position(|l| l.file == p.file && l.line == p.line)
            .unwrap_or_else(|| {
                out.push(LineReport {
                    file: p.file.clone(),
                    line: p.line,
                    function: p.function.clone(),
                    code: p.code.clone(),
                    user: p.user,
                    ops: vec![],
                    guards: vec![],
                    dims: vec![],
                    links: vec![],
                });
                sets.push(BTreeMap::new());
                out.len() - 1
            });
        if let Some(op) = &p.op {
            if !out[i].ops.contains(op) {
                out[i].ops.push(op.clone());
            }
        }
        i
    };
    for (di, d) in dims.iter().enumerate() {
        for g in &d.guards {
            let Some(p) = &g.provenance else { continue };
            if msg.joint.iter().any(|l| l.text == g.text) {
                continue; // listed once, under `links`
            }
            let i = slot(p, &mut out, &mut sets);
            out[i].guards.push(g.text.clone());
            let acc = sets[i]
                .entry(di)
                .or_insert_with(|| d.range.map(|[lo, hi]| DimSet::interval(lo, hi)));
            *acc = match (acc.take(), &g.set) {
                (Some(a), Some(s)) => a.intersect(s).ok(),
                _ => None,
            };
        }
    }
    for g in &msg.joint {
        let Some(p) = &g.provenance else { continue };
        let i = slot(p, &mut out, &mut sets);
        out[i].guards.push(g.text.clone());
        out[i].links.push(g.text.clone());
    }
    for (l, per_dim) in out.iter_mut().zip(sets) {
        for (di, set) in per_dim {
            let d = &dims[di];
            let [lo, hi] = d.range.unwrap_or([message::DEFAULT_MIN, SIZE_MAX]);
            let of = DimSet::interval(lo, hi).count();
            l.dims.push(LineDim {
                name: d.name.clone(),
                requires: set
                    .as_ref()
                    .map_or_else(|| "not decided".into(), |s| describe(s, lo, hi, &d.name)),
                removes: set.as_ref().map(|s| of - s.count()),
                of,
            });
        }
    }
    out
}

/// Whether a dimension takes part in an equality or relation (then the group answers for it).
fn in_relation(msg: &Message, name: &str) -> bool {
    msg.equalities.iter().any(|(a, b)| a == name || b == name)
        || msg
            .relations
            .iter()
            .any(|r| r.name == name || r.other == name)
}

/// Groups of sizes that reduce to one root (equalities, relations): one `Dim` for the root,
/// derived dims for the others.
fn linked_groups(msg: &Message, opts: &Options, analysis: &Analysis) -> Vec<LinkedGroup> {
    let name_of = |v: &str| name_of(msg, v);
    let mut out = Vec::new();
    for g in &analysis.groups {
        let (grp, solved) = (&g.grp, &g.solved);
        if grp.members.len() < 2 || grp.roots.len() != 1 {
            continue;
        }
        let root = grp.roots[0].clone();
        let members: Vec<[String; 2]> = grp
            .members
            .iter()
            .filter(|m| m.name != root)
            .map(|m| {
                let e = python::derived(&py_name(&name_of(&root)), m.coef, m.offset);
                [name_of(&m.name), e]
            })
            .collect();
        let feasible = solved
            .accepted
            .get(&root)
            .filter(|_| solved.undecided.is_none());
        let best = feasible.and_then(|f| {
            suggest::rank(f, example_for(opts, &name_of(&root)), 1)
                .progressions
                .first()
                .copied()
        });
        let code = best.map(|p| {
            let mut lines = vec![dim_code(&name_of(&root), &p)];
            lines.extend(members.iter().map(|[n, e]| python::assign(n, e)));
            lines.join("\n")
        });
        // Independent re-check of the root's progression against every guard of the group.
        let guards: Vec<&Expr> = grp.guards.iter().collect();
        let certificate = match best.and_then(|p| recheck(&guards, &root, &p.to_set())) {
            Some(true) => Certificate::Enumeration,
            _ => Certificate::None,
        };
        out.push(LinkedGroup {
            root: name_of(&root),
            members,
            feasible: feasible.map(Feasible::from),
            code,
            certificate,
            undecided: g.undecided(),
            root_var: root.clone(),
            guards: grp.guards.clone(),
            progression: best,
        });
    }
    out
}

/// The example size given for `name` (by name, else the bare `--example N`).
pub(crate) fn example_for(opts: &Options, name: &str) -> Option<i128> {
    opts.examples
        .iter()
        .rev()
        .find(|(n, _)| n.as_deref() == Some(name))
        .or_else(|| opts.examples.iter().rev().find(|(n, _)| n.is_none()))
        .map(|e| e.1)
}

fn dim_report(
    d: &DimEntry,
    msg: &Message,
    opts: &Options,
    prover: Option<joint::Prover>,
) -> DimReport {
    let var = d.var().to_string();
    let mut r = DimReport {
        name: d.name.clone(),
        source: d.source.clone(),
        range: d.range.map(|(a, b)| [a, b]),
        status: Status::Unconstrained,
        feasible: None,
        suggestions: vec![],
        maximality: "proven".into(),
        guards: vec![],
        specialized: d.specialized,
        coverage: None,
        padding: None,
        torch_fix: None,
        undecided: None,
        advice: vec![],
        linked_with: vec![],
        sides: LinkedSides::default(),
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
        r.feasible = Some(Feasible::from(&set));
        let p = Progression {
            lo: v,
            hi: v,
            modulus: 1,
            residue: 0,
        };
        r.suggestions
            .extend(suggestion(&p, Some(&[]), &var, &d.name, Proof::Enumeration));
        r.advice.push(format!(
            "the model's code fixes {} to {v} (it branches on the value or uses it as a constant); \
             use `{} = {v}` (or Dim.STATIC), or change the code so the size stays symbolic",
            d.name,
            py_name(&d.name)
        ));
        if let Some(why) = &d.specialized_reason {
            r.advice.push(crate::forms::explain::specialization_reason(
                &d.name, v, why, d,
            ));
        }
        r.torch_fix = check_fix(msg, &d.name, &[], &var, &set, (v, v), false, opts);
        return r;
    }
    let (lo, hi) = d.range.unwrap_or((message::DEFAULT_MIN, SIZE_MAX));
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
            r.feasible = Some(Feasible::from(&domain));
            let p = Progression {
                lo,
                hi,
                modulus: 1,
                residue: 0,
            };
            r.suggestions
                .extend(suggestion(&p, Some(&[]), &var, &d.name, Proof::Periodic));
            r.advice.push(format!(
                "no guard restricts {}: every size in {lo}..{hi} passes",
                d.name
            ));
        }
        return r;
    }
    // Solve each guard on the range.
    let guards: Vec<&crate::types::Expr> = d.guards.iter().map(|g| &g.expr).collect();
    let mut sets: Vec<Option<DimSet>> = Vec::new();
    let mut all_periodic = true;
    for g in &d.guards {
        // The engine, else Z3 (when given) before the guard is called undecided.
        let out = joint::decide(&g.expr, &var, &domain, &opts.limits, prover);
        let method = match &out.fate {
            joint::Fate::Solved(GuardFate::Periodic) => GuardMethod::Periodic,
            joint::Fate::Solved(_) => {
                all_periodic = false;
                GuardMethod::Enumeration
            }
            joint::Fate::Proved => {
                all_periodic = false;
                GuardMethod::Z3
            }
            joint::Fate::Undecided(reason) => {
                r.undecided.get_or_insert_with(|| reason.to_string());
                GuardMethod::Undecided
            }
        };
        let period = out.period;
        let set = out.set;
        r.guards.push(GuardReport {
            text: g.text.clone(),
            requires: set
                .as_ref()
                .map_or_else(|| "not decided".into(), |s| describe(s, lo, hi, &d.name)),
            removes: set.as_ref().map(|s| domain.count() - s.count()),
            redundant: false,
            method,
            period,
            provenance: g.provenance.clone(),
            set: set.clone(),
        });
        sets.push(set);
    }
    if r.undecided.is_some() {
        r.status = Status::Undecided;
        r.advice.push(UNDECIDED_ADVICE.into());
        return r;
    }
    let sets: Vec<DimSet> = sets.into_iter().flatten().collect();
    let feasible = match intersect_all(&sets, &domain) {
        Ok(f) => f,
        Err(e) => {
            r.status = Status::Undecided;
            r.undecided = Some(e.to_string());
            return r;
        }
    };
    // Redundancy: the other guards already imply this one. rest_i = prefix_i ∩ suffix_i. Past
    // the deadline it is not examined (every guard stays `redundant: false`, and the budget
    // says the answer is partial).
    if sets.len() > 1 && crate::budget::expired().is_none() {
        let mut prefix = vec![domain.clone()];
        for s in &sets {
            let next = prefix
                .last()
                .and_then(|p| p.intersect(s).ok())
                .unwrap_or_else(|| domain.clone());
            prefix.push(next);
        }
        let mut suffix = domain.clone();
        for i in (0..sets.len()).rev() {
            if let Ok(rest) = prefix[i].intersect(&suffix) {
                r.guards[i].redundant = rest.is_subset(&sets[i]).unwrap_or(false);
            }
            suffix = suffix
                .intersect(&sets[i])
                .unwrap_or_else(|_| domain.clone());
        }
    }
    let proof = if all_periodic {
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
    r
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
    let (lo, hi) = d.range.unwrap_or((message::DEFAULT_MIN, SIZE_MAX));
    let domain = DimSet::interval(lo, hi);
    r.feasible = Some(Feasible::from(feasible));
    r.status = if feasible.is_empty() {
        Status::Unsatisfiable
    } else if feasible.count() == domain.count() {
        Status::Spurious
    } else {
        Status::Constrained
    };
    let ranking = suggestions(
        feasible,
        example_for(opts, &d.name),
        8,
        recheck,
        &var,
        &d.name,
        proof,
    );
    if let Maximality::AmongSteps { max_step } = ranking.maximality {
        r.maximality = format!("steps<={max_step}");
    }
    r.suggestions = ranking.suggestions;
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
        let pad_best = suggest::max_padding(&best.to_set(), lo.min(best.lo)).unwrap_or(0);
        r.padding = Some(Padding {
            formula: python::padding_formula(best),
            max_for_suggestion: pad_best,
            max_for_feasible: suggest::max_padding(feasible, lo),
        });
    }
    r.advice.extend(advice(r, feasible, lo, hi));
    let guards: Vec<&Expr> = d.guards.iter().map(|g| &g.expr).collect();
    r.torch_fix = check_fix(msg, &d.name, &guards, &var, feasible, (lo, hi), true, opts);
}

fn intersect_all(sets: &[DimSet], domain: &DimSet) -> Result<DimSet, Error> {
    sets.iter()
        .try_fold(domain.clone(), |acc, s| acc.intersect(s))
}

/// What a dimension's advice says when a guard over its range is undecided.
pub(crate) const UNDECIDED_ADVICE: &str = "dimguard could not decide every guard over this range; narrow the range (enumeration handles up to 20,000,000 values) or check the guard by hand";

/// What a report says when a candidate failed the independent re-check.
pub const WITHHELD: &str = "internal error: a candidate failed dimguard's independent re-check and was withheld; please report this message";

/// Ranked suggestions inside a set, the last step of every pipeline (`diagnose`, `check`).
#[derive(Debug, Clone)]
pub struct Ranked {
    /// The progressions ranked by [`suggest::rank`], best first.
    pub progressions: Vec<Progression>,
    /// Their suggestions, minus any that failed the re-check.
    pub suggestions: Vec<Suggestion>,
    /// Whether the first progression is proven maximal.
    pub maximality: Maximality,
    /// How many candidates failed the re-check (a bug in the engine): withheld, never printed.
    pub withheld: usize,
}

/// The `limit` best progressions inside `set` as suggestions for the dimension `name`
/// (`example`: prefer one holding the traced size). With `guards`, each is re-checked
/// independently of the engine: every guard is evaluated at every value, in the size `var`
/// (when there are at most [`RECHECK_LIMIT`]), giving `certificate: "enumeration"`; a failing
/// candidate is withheld rather than printed unsound. Without guards nothing is re-checked
/// (`certificate: "none"`; the caller certifies).
pub fn suggestions(
    set: &DimSet,
    example: Option<i128>,
    limit: usize,
    guards: Option<&[&Expr]>,
    var: &str,
    name: &str,
    proof: Proof,
) -> Ranked {
    let ranking = suggest::rank(set, example, limit);
    let suggestions: Vec<Suggestion> = ranking
        .progressions
        .iter()
        .filter_map(|p| suggestion(p, guards, var, name, proof))
        .collect();
    Ranked {
        withheld: ranking.progressions.len() - suggestions.len(),
        progressions: ranking.progressions,
        suggestions,
        maximality: ranking.maximality,
    }
}

/// One suggestion, re-checked against `guards` as [`suggestions`] says; `None` when it fails.
fn suggestion(
    p: &Progression,
    guards: Option<&[&Expr]>,
    var: &str,
    name: &str,
    proof: Proof,
) -> Option<Suggestion> {
    let certificate = match guards.and_then(|g| recheck(g, var, &p.to_set())) {
        Some(false) => return None,
        Some(true) => Certificate::Enumeration,
        None => Certificate::None,
    };
    Some(Suggestion {
        certificate,
        ..unchecked_suggestion(name, p, proof)
    })
}

/// A suggestion for `name` without dimguard's value-by-value re-check (`certificate: "none"`),
/// for callers that certify it themselves.
pub fn unchecked_suggestion(name: &str, p: &Progression, proof: Proof) -> Suggestion {
    Suggestion {
        lo: p.lo,
        hi: p.hi,
        modulus: p.modulus,
        residue: p.residue,
        count: p.count(),
        code: dim_code(name, p),
        certificate: Certificate::None,
        proof,
        certificate_note: None,
    }
}

/// Most residues a guard's description lists.
const LISTED_RESIDUES: usize = 64;

/// A set described in plain terms relative to the range `[lo, hi]`.
pub fn describe(s: &DimSet, lo: i128, hi: i128, v: &str) -> String {
    let total = DimSet::interval(lo, hi).count();
    if s.count() == total {
        return "always true on the range".into();
    }
    if s.is_empty() {
        return "never true on the range".into();
    }
    if s.count() == 1 {
        return format!("{v} = {}", s.min().unwrap_or_default());
    }
    let pattern = |seg: &crate::types::Segment| -> Option<String> {
        let (m, res) = (seg.modulus, &seg.residues);
        if m == 1 {
            return None;
        }
        let list = |v: &[i128]| v.iter().map(i128::to_string).collect::<Vec<_>>().join(", ");
        Some(match res.len() {
            1 => format!("{v} ≡ {} (mod {m})", res[0]),
            n if n as i128 == m - 1 => {
                // Residues are sorted: the missing one is where the count breaks (one pass;
                // a search per candidate cost 660 ms at m = 64,000, fuzzer seed 1795455210
                // execution 540114).
                let missing = (0i128..)
                    .zip(res.iter())
                    .find(|(i, r)| *i != **r)
                    .map_or(m - 1, |(i, _)| i);
                format!("{v} mod {m} ≠ {missing}")
            }
            n if n > LISTED_RESIDUES => format!(
                "{v} mod {m} ∈ {{{}, ...}} ({n} residues)",
                list(&res[..LISTED_RESIDUES])
            ),
            _ => format!("{v} mod {m} ∈ {{{}}}", list(res)),
        })
    };
    let segs = s.segments();
    if let [seg] = segs {
        let mut parts: Vec<String> = pattern(seg).into_iter().collect();
        // Bounds only where the pattern alone would admit values outside.
        let below = crate::types::Segment {
            lo,
            hi: seg.lo - 1,
            ..seg.clone()
        };
        if seg.lo > lo && below.next_at_least(lo).is_some() {
            parts.push(format!("{v} >= {}", seg.lo));
        }
        let above = crate::types::Segment {
            lo: seg.hi + 1,
            hi,
            ..seg.clone()
        };
        if seg.hi < hi && above.next_at_least(seg.hi + 1).is_some() {
            parts.push(format!("{v} <= {}", seg.hi));
        }
        return parts.join(" and ");
    }
    let mut pieces: Vec<String> = segs
        .iter()
        .take(3)
        .map(|seg| {
            let range = if seg.lo == seg.hi {
                format!("{v} = {}", seg.lo)
            } else {
                format!("{} <= {v} <= {}", seg.lo, seg.hi)
            };
            match pattern(seg) {
                Some(p) if seg.lo != seg.hi => format!("{range} with {p}"),
                _ => range,
            }
        })
        .collect();
    if segs.len() > 3 {
        pieces.push(format!("{} more pieces", segs.len() - 3));
    }
    pieces.join("; or ")
}

fn advice(r: &DimReport, feasible: &DimSet, lo: i128, hi: i128) -> Vec<String> {
    let name = &r.name;
    let mut out = Vec::new();
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
            if let (Some(best), Some(f)) = (r.suggestions.first(), &r.feasible) {
                if best.count < f.count {
                    out.push(format!(
                        "no single Dim holds every valid value: the first suggestion holds {} of {}; the others are the remaining residue classes. \
                         To accept every valid size, export once per class or pad inputs to the suggested progression",
                        best.count, f.count
                    ));
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
fn check_fix(
    msg: &Message,
    name: &str,
    guards: &[&crate::types::Expr],
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

/// The `dynamic_shapes` block: every dimension's best sound spec (a linked group's lines all
/// from its one answer, [`crate::forms::explain::group_specs`]), then the dict, which names only
/// what the block defines.
fn dynamic_shapes_block(
    msg: &Message,
    dims: &[DimReport],
    linked: &[LinkedGroup],
    specs: &[crate::forms::explain::GroupSpec],
    dd: &[DataDependent],
) -> String {
    if msg.datadep.shapes_spec && msg.dims.is_empty() && !dd.is_empty() {
        // torch 2.15's ShapesSpec: what it needs are assumptions, in the user's names.
        return python::shapes_spec_block(dd);
    }
    let mut block = python::SpecBlock::new();
    // The names the block defines (Python names), so far.
    let mut defined: BTreeSet<String> = BTreeSet::new();
    // Sizes the text names only inside a guard: (name in the text, Python name).
    let mut unnamed: Vec<(String, String)> = Vec::new();
    let in_group = |n: &str| {
        linked
            .iter()
            .any(|g| g.code.is_some() && (g.root == n || g.members.iter().any(|m| m[0] == n)))
    };
    let is_dim = |n: &str| msg.dims.iter().any(|d| d.name == n);
    for g in linked {
        if let Some(c) = &g.code {
            let members: Vec<&str> = g.members.iter().map(|m| m[0].as_str()).collect();
            block.comment(&format!(
                "{} and {} are solved together",
                g.root,
                members.join(", ")
            ));
            block.code(c);
            for n in std::iter::once(&g.root).chain(g.members.iter().map(|m| &m[0])) {
                defined.insert(py_name(n));
                if !is_dim(n) && n.contains('[') {
                    unnamed.push((n.clone(), py_name(n)));
                }
            }
        }
    }
    let mut printed = vec![false; specs.len()];
    for d in dims.iter().filter(|d| !in_group(&d.name)) {
        // A linked group: every member's line from the group's one answer, printed once, where
        // its first dimension comes.
        if let Some(k) = specs.iter().position(|s| s.named.contains(&d.name)) {
            if !std::mem::replace(&mut printed[k], true) {
                block.code(&specs[k].code);
                defined.extend(specs[k].named.iter().map(|n| py_name(n)));
                defined.extend(specs[k].partners.iter().map(|p| p.name.clone()));
                unnamed.extend(
                    specs[k]
                        .partners
                        .iter()
                        .map(|p| (p.source.clone(), p.name.clone())),
                );
            }
            continue;
        }
        let code = match d.suggestions.first() {
            Some(s) if d.status == Status::Spurious => python::dim_auto(&d.name, s.lo, s.hi),
            Some(s) => s.code.clone(),
            None => {
                block.code(&python::dim_comment(
                    &d.name,
                    d.undecided.as_deref().unwrap_or("no constraint to express"),
                ));
                continue;
            }
        };
        block.code(&code);
        defined.insert(py_name(&d.name));
    }
    for rel in msg.relations.iter().filter(|r| !in_group(&r.name)) {
        if defined.contains(&py_name(&rel.other)) {
            block.code(&python::assign(&rel.name, &rel.expr));
            defined.insert(py_name(&rel.name));
        }
    }
    for (a, b) in msg.equalities.iter().filter(|(_, b)| !in_group(b)) {
        if defined.contains(&py_name(a)) {
            block.code(&python::equal(b, a));
            defined.insert(py_name(b));
        }
    }
    if !dd.is_empty() {
        block.blank();
        block.comment("Data-dependent guards: in the model, before the code that branches, assert the case you need:");
        for d in dd {
            block.comment(&d.torch_check[0]);
            block.comment(&d.torch_check[1]);
        }
    }
    // The dict, when every dimension names its input and index: inputs in the order first
    // named, indices in order; only names the block defines (a dimension left without a spec
    // keeps torch's default, static). A size named only inside a guard whose source is not an
    // input's dimension is left to the user, with a comment.
    let mapped: Option<Vec<(String, usize, String)>> = dims
        .iter()
        .filter(|d| defined.contains(&py_name(&d.name)))
        .map(|d| {
            d.source
                .as_deref()
                .and_then(python::source_input)
                .map(|(i, k)| (i, k, py_name(&d.name)))
        })
        .collect();
    if let Some(mut mapped) = mapped {
        for (source, name) in &unnamed {
            match python::source_input(source) {
                Some((i, k)) => mapped.push((i, k, name.clone())),
                None => block.comment(&format!(
                    "{name} is {source}, not a dimension of a named input: add it to dynamic_shapes at that size's place"
                )),
            }
        }
        let mut inputs: Vec<(String, Vec<(usize, String)>)> = Vec::new();
        for (i, k, n) in mapped {
            match inputs.iter_mut().find(|(name, _)| *name == i) {
                Some((_, entries)) => entries.push((k, n)),
                None => inputs.push((i, vec![(k, n)])),
            }
        }
        for (_, entries) in inputs.iter_mut() {
            entries.sort();
            entries.dedup();
        }
        block.dict(inputs);
    }
    block.finish()
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
