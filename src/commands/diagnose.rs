//! The text-form front end: any text (an error message, a log, a trace, a draft report) read into a
//! [`Message`], turned into the analysis stage's problem, and the whole diagnosis: per dimension, the exact feasible set, ranked sound
//! suggestions, what each guard requires and removes, a check of torch's own suggested fixes, and
//! a paste-ready `dynamic_shapes` block.
//!
//! The report's types are in [`report`](dimguard_solver::report); the Python it prints comes from
//! [`python`].

mod certify;
mod datadep;
mod explain;
mod partial;
mod paste;
mod size;

pub use certify::certify;
use dimguard_readers::{self, Message};
pub use dimguard_solver::analyze::Options;
use dimguard_solver::analyze::{analyze, describe, Analysis, GroupAnswer, Problem, Size};
use dimguard_solver::joint;
use dimguard_solver::python::{self, dim_code, py_name};
use dimguard_solver::recheck;
use dimguard_solver::report::{
    Certificate, DataDependent, DimReport, Feasible, GuardFate, GuardMethod, GuardUse, LineDim,
    LineReport, LinkedGroup, RelationReport, Report,
};
use dimguard_solver::Error;
use dimguard_solver::{CmpOp, DimSet, Expr};
use dimguard_solver::{DEFAULT_MIN, SIZE_MAX};
pub use paste::{Format, Paste};
use size::dim_report;
use std::collections::{BTreeMap, BTreeSet};

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
/// assert_eq!(d.answer.accepted.as_ref().unwrap().count, 1014); // h mod 8 in {0, 5, 6, 7}
/// let best = &d.answer.suggestions[0]; // one residue class: the largest single Dim
/// assert_eq!((best.modulus, best.count), (8, 254));
/// assert!(report.dynamic_shapes.contains("dynamic_shapes = {\"image1\": {2: _2}}"));
/// ```
pub fn diagnose_text(text: &str, opts: &Options) -> Result<Report, Error> {
    let mut opts = opts.clone();
    let mut msg = read(text, &mut opts)?;
    dimguard_readers::forms::apply_ranges(&mut msg, &[])?;
    Ok(diagnose(&msg, &opts))
}

/// Reads an input text: a structured trace (`TORCH_TRACE`; its traced sizes are added to
/// `opts.examples` before the ones given, which win) or any other form of guard text
/// ([`dimguard_readers::forms::read`]: an error message, a log, a draft_export report, a run-time failure).
/// The message's `form` says which.
pub fn read(text: &str, opts: &mut Options) -> Result<Message, Error> {
    let mut msg = dimguard_readers::forms::read(text)?;
    if msg.form == dimguard_solver::report::Form::TorchTrace {
        let mut examples = std::mem::take(&mut msg.examples);
        examples.append(&mut opts.examples);
        opts.examples = examples;
    } else {
        dimguard_readers::spec::bind_user_spec(text, &mut msg);
    }
    Ok(msg)
}

/// Diagnoses a message already read.
pub fn diagnose(msg: &Message, opts: &Options) -> Report {
    diagnose_with(msg, opts, None)
}

/// [`diagnose`], with a validity oracle (Z3, `dimguard-prove::box_prover`) asked about guards
/// over several sizes before they are called undecided (a group too wide for the joint search,
/// a guard outside its methods).
pub fn diagnose_with(msg: &Message, opts: &Options, prover: Option<joint::Prover>) -> Report {
    let stage = Stage {
        prover,
        ..Stage::default()
    };
    diagnose_staged(msg, opts, &stage).0
}

/// A check run over a finished report (Z3's certification): it may withhold a suggestion.
pub type Certifier<'a> = &'a dyn Fn(&mut Report, &Message);

/// What a diagnosis uses beyond its [`Options`]: a prover for the groups the joint search leaves
/// undecided, a certifier run over the finished answers (Z3, `dimguard-prove::certify`), and
/// the form of the paste block, which is written last, from the certified answers.
#[derive(Default)]
pub struct Stage<'a> {
    /// Asked about guards over several sizes before they are called undecided.
    pub prover: Option<joint::Prover<'a>>,
    /// Checks every answer independently; may withhold a suggestion (then never pasted).
    pub certify: Option<Certifier<'a>>,
    /// The paste block's form and the user's spec it is written into.
    pub paste: Paste,
}

/// [`diagnose_with`], certified and pasted as `stage` says: the report, and the user's spec
/// with the diagnosis merged in when [`Paste::merge`] is given.
pub fn diagnose_staged(
    msg: &Message,
    opts: &Options,
    stage: &Stage,
) -> (Report, Option<dimguard_readers::spec::Sheet>) {
    let prover = stage.prover;
    let mut dims: Vec<DimReport> = msg
        .dims
        .iter()
        .enumerate()
        .map(|(i, d)| {
            dimguard_solver::budget::progress(
                format!("solving dimension {}", d.name),
                i as u64,
                msg.dims.len() as u64,
            );
            dim_report(d, msg, opts, prover)
        })
        .collect();
    // An unbacked size no input stands for gets the model's torch._check, never a Dim.
    for d in dims.iter_mut().filter(|d| d.is_unbacked()) {
        let name = d.name.clone();
        for s in &mut d.answer.suggestions {
            s.code = python::unbacked_checks(&name, &s.progression()).join("\n");
        }
    }
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
        let budget = dimguard_solver::linked::Budget {
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
    let (solved, single): (Vec<JointGroup>, Vec<JointGroup>) = analysis
        .groups
        .into_iter()
        .partition(|g| g.grp.roots.len() > 1);
    let joint = explain::joint_guards(&linked, &groups, &solved, msg);
    let choices = explain::link_dims(&mut dims, &solved, msg, opts, prover);
    let every: Vec<&JointGroup> = solved.iter().chain(&single).collect();
    explain::group_answers(&mut dims, msg, &every, opts);
    let guards = accounting(msg, &dims, &sized, &fates);
    let data_dependent: Vec<DataDependent> = msg
        .data_dependent
        .iter()
        .map(|g| datadep::report(g, msg, opts))
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
    let mut specs = explain::group_specs(&solved, &choices, msg, &mut taken);
    if msg.partial.is_some() {
        // A text with only some of the export's guards: no group's spec is sound from it.
        specs.clear();
    }
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
        dynamic_shapes: String::new(),
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
        missing_bounds: msg.missing_bounds.clone(),
        partial: None,
    };
    partial::necessary_only(&mut report, msg);
    explain::complete(&mut report, msg, opts);
    if let Some(certify) = stage.certify {
        certify(&mut report, msg);
    }
    let (code, merged) = paste::block(msg, &report, &specs, &stage.paste);
    report.dynamic_shapes = code;
    (report, merged)
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
    r: &dimguard_readers::Relation,
) -> Result<Expr, dimguard_solver::ParseError> {
    let mut rhs = dimguard_solver::syntax::parse_expr(&r.expr)?;
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
                example: opts.example_for(&d.name),
                ..Size::new(d.var(), &d.name, d.range)
            })
            .collect(),
        guards: sized.guards.clone(),
        extra_ranges: Default::default(),
        parts: true,
    }
}

/// Every guard of the message and what became of it.
fn accounting(msg: &Message, dims: &[DimReport], sized: &Sized, fates: &Fates) -> Vec<GuardUse> {
    let names =
        |e: &Expr| -> Vec<String> { e.atoms().iter().map(|a| msg.name_of(a)).collect::<Vec<_>>() };
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
    let slot = |p: &dimguard_solver::provenance::Provenance,
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
            let [lo, hi] = d.range.unwrap_or([DEFAULT_MIN, SIZE_MAX]);
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

/// Groups of sizes that reduce to one root (equalities, relations): one `Dim` for the root,
/// derived dims for the others.
fn linked_groups(msg: &Message, opts: &Options, analysis: &Analysis) -> Vec<LinkedGroup> {
    let name_of = |v: &str| msg.name_of(v);
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
            dimguard_solver::rank(f, opts.example_for(&name_of(&root)), 1)
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
