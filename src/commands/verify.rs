//! `dimguard verify`: is a user's `dynamic_shapes` spec sound for some guards, with a proof or
//! counterexamples, and what is the maximal sound spec?
//!
//! One flow ([`verify`]), each step a call: [`read`] (the guards, [`GuardSet::read`], and the
//! spec, `dimguard_readers::spec::read`, from their texts) → `joint_problem` → `checks` (Z3
//! over what the spec admits) → `stage` ([`analyze`]) → `entries` → `report`.

use dimguard_prove::{box_prover, check_box, check_set, JointVerdict, Verdict};
use dimguard_readers::spec::{Given, Sheet};
use dimguard_readers::Message;
use dimguard_solver::analyze::{
    analyze, group_line, own_set, size_answer, suggestions, Analysis, Asked, GroupLine, Partners,
    Problem, Size,
};
use dimguard_solver::engine::{solve, Limits, Method, Outcome};
use dimguard_solver::expr::Value;
use dimguard_solver::joint;
use dimguard_solver::linked::{solve_joint, Budget};
use dimguard_solver::python::{self, dim_code};
use dimguard_solver::rank;
use dimguard_solver::report::{
    Certificate, Feasible, GuardFate, GuardUse, JointCheck, JointReport, Proof, SizeAnswer,
    Verified, VerifyDim, VerifyReport,
};
use dimguard_solver::RECHECK_LIMIT;
use dimguard_solver::{parse_guard, Error, ParseError};
use dimguard_solver::{CmpOp, DimSet, Expr};
use std::collections::BTreeMap;

/// The guards to verify against: from an error message, or one guard per line.
#[derive(Debug, Clone)]
pub struct GuardSet {
    /// Per size: its name, source and guards.
    pub dims: Vec<(String, Option<String>, Vec<Expr>)>,
    /// Guards over several sizes (and the message's equalities, as `a == b`): as written, and
    /// read.
    pub joint: Vec<(String, Expr)>,
}

impl GuardSet {
    /// Reads any form `diagnose` reads (an error message, a `TORCH_LOGS` log, a draft_export
    /// report, a structured trace), or else a file of guard lines (`#` starts a comment).
    pub fn read(text: &str) -> Result<GuardSet, Error> {
        let mut opts = crate::commands::diagnose::Options::default();
        match crate::commands::diagnose::read(text, &mut opts) {
            // Bare conditions, read by the reader of last resort: a file of guard lines is read
            // as such (each line a guard over the sizes it names, as written).
            Ok(msg) if msg.form == dimguard_solver::report::Form::Guards => {
                GuardSet::from_lines(text).or_else(|_| Ok(GuardSet::from_message(&msg)))
            }
            Ok(msg) => Ok(GuardSet::from_message(&msg)),
            Err(Error::Message(_)) => GuardSet::from_lines(text),
            Err(e) => Err(e),
        }
    }

    fn from_message(msg: &Message) -> GuardSet {
        let var = |name: &str| {
            msg.dims
                .iter()
                .find(|d| d.name == name)
                .map_or_else(|| name.to_string(), |d| d.var().to_string())
        };
        let mut joint: Vec<(String, Expr)> = msg
            .joint
            .iter()
            .map(|g| (g.text.clone(), g.expr.clone()))
            .collect();
        // A guard listed under a size that names another is checked with the other's values
        // (a one-size question would let it take any integer, negative ones included), once
        // (a constraint violation lists it under each size it names).
        let mut dims = Vec::new();
        for d in &msg.dims {
            let v = var(&d.name);
            let mut own = Vec::new();
            for g in &d.guards {
                if g.expr.atoms().iter().all(|a| **a == *v) {
                    own.push(g.expr.clone());
                } else if !joint.iter().any(|(t, _)| *t == g.text) {
                    joint.push((g.text.clone(), g.expr.clone()));
                }
            }
            dims.push((d.name.clone(), d.source.clone(), own));
        }
        for (a, b) in &msg.equalities {
            let e = Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::sym(&var(b))),
                Box::new(Expr::sym(&var(a))),
            );
            joint.push((format!("{b} == {a}"), e));
        }
        // "must always be related ... by dy = dx + 1": a relation the spec must keep (one whose
        // right-hand side cannot be read is left out, as `diagnose` reports it unread).
        for r in &msg.relations {
            if let Ok(e) = crate::commands::diagnose::relation_guard(msg, r) {
                joint.push((format!("{} = {}", r.name, r.expr), e));
            }
        }
        GuardSet { dims, joint }
    }

    fn from_lines(text: &str) -> Result<GuardSet, Error> {
        let mut set = GuardSet {
            dims: vec![],
            joint: vec![],
        };
        for (no, line) in text.lines().enumerate() {
            let g = line.split_once('#').map_or(line, |(a, _)| a).trim();
            if g.is_empty() {
                continue;
            }
            let e = parse_guard(g).map_err(|error| Error::Guard {
                dim: "?".into(),
                line: no + 1,
                error: Box::new(error),
            })?;
            let atoms = e.atoms();
            match atoms.len() {
                0 => {}
                1 => {
                    let a = atoms.into_iter().next().expect("one atom").to_string();
                    match set.dims.iter_mut().find(|d| d.0 == a) {
                        Some(d) => d.2.push(e),
                        None => set.dims.push((a.clone(), Some(a), vec![e])),
                    }
                }
                _ => {
                    // Each linked size is a dimension too (with no one-size guard of its own).
                    for a in atoms {
                        if !set.dims.iter().any(|d| *d.0 == *a) {
                            set.dims.push((a.to_string(), Some(a.to_string()), vec![]));
                        }
                    }
                    set.joint.push((g.to_string(), e))
                }
            }
        }
        if set.dims.is_empty() && set.joint.is_empty() {
            return Err(Error::Parse(ParseError::new(
                "no guard found: expected an error message or one guard per line",
                text,
                0,
                0,
            )));
        }
        Ok(set)
    }
}

/// Why `verify` has nothing to verify: its input does not read, or the spec and the guards do
/// not meet.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The guards or the spec do not read.
    #[error(transparent)]
    Read(#[from] Error),
    /// The spec defines no dimension.
    #[error("the spec defines no dimension: expected lines such as `_h = Dim('_h', min=17, max=270)` and `h = 8*_h`")]
    EmptySpec,
    /// No dimension of the spec is a size of the guards, nor a size named inside a guard over
    /// several sizes.
    #[error("no dimension of the spec matches a size in the guards (match by name, or map sources with dynamic_shapes = {{...}})")]
    NoMatch,
}

/// The command's input, read: the guards and the spec.
#[derive(Debug, Clone)]
pub struct Input {
    /// The guards ([`GuardSet::read`]).
    pub guards: GuardSet,
    /// The user's spec (`dimguard_readers::spec::read`).
    pub spec: Sheet,
}

/// Reads the command's input: the guards from `guards` (any form `diagnose` reads, or one guard
/// per line: [`GuardSet::read`]) and the spec from `spec` (Python defining `Dim`s); an error
/// when either does not read, when the spec defines no dimension, or when none of its
/// dimensions is a size of the guards.
pub fn read(guards: &str, spec: &str) -> Result<Input, InputError> {
    let guards = GuardSet::read(guards)?;
    let spec = dimguard_readers::spec::read(spec)?;
    if spec.is_empty() {
        return Err(InputError::EmptySpec);
    }
    if !covers_any(&guards, &spec) {
        return Err(InputError::NoMatch);
    }
    Ok(Input { guards, spec })
}

/// The command: verifies the spec `spec` (Python) against the guards `guards` (a message or
/// guard lines), with `timeout_ms` for each Z3 query: the input read ([`read`]), then verified
/// ([`verify_input`]).
///
/// ```
/// use dimguard::commands::verify::verify;
///
/// let spec = "from torch.export import Dim\n_h = Dim('_h', min=2, max=64)\nh = 8*_h\n";
/// let report = verify("h % 8 == 0\n", spec, 2000).unwrap();
/// assert_eq!(report.sound, Some(true));
/// ```
pub fn verify(guards: &str, spec: &str, timeout_ms: u32) -> Result<VerifyReport, InputError> {
    let input = read(guards, spec)?;
    Ok(verify_input(&input.guards, &input.spec, timeout_ms))
}

/// Verifies `spec` against `guards`, both read ([`read`]). The one flow of a verification, each
/// step a call: what the spec admits for the guards' sizes as the analysis stage's problem
/// (`joint_problem`), Z3 over each size's own guards and each guard over several sizes
/// (`checks`), the stage over the groups the guards link (`stage`), each size's entry with its
/// group's answer (`entries`), and the report with its verdict (`report`).
pub fn verify_input(guards: &GuardSet, spec: &Sheet, timeout_ms: u32) -> VerifyReport {
    let problem = joint_problem(guards, spec);
    let checked = checks(guards, spec, timeout_ms);
    let analysis = stage(guards, &problem, timeout_ms);
    let entries = entries(guards, spec, checked, (&problem, &analysis));
    report(spec, entries)
}

/// What Z3 (else the enumeration) says over what the spec admits, before the stage: each
/// size's own guards ([`size_entry`]) and each guard over several sizes over the spec's box
/// ([`joint_check`]). They come first, in this order, as before the one flow: Z3's models (the
/// counterexamples printed) depend on the queries asked before them.
struct Checked {
    dims: Vec<VerifyDim>,
    joint: Vec<JointCheck>,
    uses: Vec<GuardUse>,
}

fn checks(guards: &GuardSet, spec: &Sheet, timeout_ms: u32) -> Checked {
    let mut uses: Vec<GuardUse> = Vec::new();
    let dims = guards
        .dims
        .iter()
        .filter_map(|dim| size_entry(dim, spec, &mut uses, timeout_ms))
        .collect();
    let joint = guards
        .joint
        .iter()
        .map(|(text, g)| joint_check(text, g, guards, spec, timeout_ms))
        .collect();
    Checked { dims, joint, uses }
}

/// The analysis stage over the spec's sets, Z3 deciding what the joint search cannot: every
/// group of sizes that guards link (or the spec ties) and the spec covers. A size alone in its
/// group is answered from its own guards ([`size_entry`]); with no guard over several sizes
/// there is nothing to link.
fn stage(guards: &GuardSet, jp: &JointProblem, timeout_ms: u32) -> Analysis {
    if guards.joint.is_empty() {
        return Analysis::default();
    }
    let z3 = box_prover(timeout_ms);
    analyze(&jp.problem, &Budget::default(), Some(&z3), &|g| {
        !(g.roots.len() == 1 && g.members.len() < 2) && jp.covers(g)
    })
}

/// What `verify` says per size and per guard, before the verdict.
struct Entries {
    dims: Vec<VerifyDim>,
    joint: Vec<JointCheck>,
    joint_sets: Vec<JointReport>,
    uses: Vec<GuardUse>,
}

/// The entries from the checks and the stage's answer: each size's entry with what its group
/// says of it ([`linked_size`]); the groups' joint sets and every guard's fate
/// ([`joint_uses`]).
fn entries(
    guards: &GuardSet,
    spec: &Sheet,
    checked: Checked,
    (jp, analysis): (&JointProblem, &Analysis),
) -> Entries {
    let Checked {
        mut dims,
        joint,
        mut uses,
    } = checked;
    for d in &mut dims {
        for g in &analysis.groups {
            linked_size(d, g, guards, spec, &jp.ranges);
        }
    }
    joint_uses(guards, jp, analysis, &mut uses);
    let joint_sets = analysis
        .groups
        .iter()
        .filter_map(|g| g.linked.as_ref().map(|l| l.report.clone()))
        .collect();
    Entries {
        dims,
        joint,
        joint_sets,
        uses,
    }
}

/// The report: sound when every size's and every joint guard's check is, unsound when one
/// fails, else undecided.
fn report(spec: &Sheet, e: Entries) -> VerifyReport {
    let all: Vec<Option<bool>> = e
        .dims
        .iter()
        .map(|d| d.sound)
        .chain(e.joint.iter().map(|j| j.sound))
        .collect();
    let sound = if all.contains(&Some(false)) {
        Some(false)
    } else if !all.is_empty() && all.iter().all(|v| *v == Some(true)) {
        Some(true)
    } else {
        None
    };
    VerifyReport {
        sound,
        dims: e.dims,
        joint: e.joint,
        unrecognized: spec.unrecognized.clone(),
        joint_sets: e.joint_sets,
        guards: e.uses,
    }
}

/// One size's entry from its own guards over the values the spec admits: each guard's use
/// ([`guard_use`]), the admitted values that pass (the stage's `own_set`), Z3's verdict over
/// them (a proof or counterexamples; else, over few enough values, the enumeration's) and the
/// largest sound spec within the admitted range. A size the spec does not cover (or makes
/// static) has no entry: its guards are undecided, with the reason.
fn size_entry(
    (name, source, gs): &(String, Option<String>, Vec<Expr>),
    spec: &Sheet,
    uses: &mut Vec<GuardUse>,
    timeout_ms: u32,
) -> Option<VerifyDim> {
    let limits = Limits::default();
    let var = source.clone().unwrap_or_else(|| name.clone());
    let sd = spec.lookup(name, source.as_deref());
    let Some(admitted) = sd.as_ref().and_then(|d| d.admitted.as_ref()) else {
        let why = match sd {
            Some(_) => {
                "the spec makes this size static (Dim.STATIC): its traced value is not known here"
            }
            None => "the spec does not cover this size",
        };
        uses.extend(gs.iter().map(|g| GuardUse {
            guard: g.to_string(),
            sizes: vec![name.clone()],
            error: None,
            fate: GuardFate::Undecided,
            reason: Some(why.into()),
        }));
        return None;
    };
    let sd = sd.as_ref().expect("admitted implies a spec entry");
    uses.extend(
        gs.iter()
            .map(|g| guard_use(g, name, &var, admitted, &limits, timeout_ms)),
    );
    let refs: Vec<&Expr> = gs.iter().collect();
    // The passing members of the admitted set (the stage's `own_set`).
    let passing = own_set(&refs, &var, admitted, &limits, None).set.ok();
    let failing_set = passing.as_ref().and_then(|p| admitted.difference(p).ok());
    let mut d = VerifyDim {
        kind: Verified {
            name: name.clone(),
            sound: None,
            admitted: admitted.count(),
            failing: failing_set.as_ref().map(DimSet::count),
            counterexamples: vec![],
            certificate: Certificate::None,
            source: source.clone(),
            spec: spec.definition(sd),
            maximal_spec: None,
            note: None,
        },
        answer: SizeAnswer {
            // The admitted values that pass every guard of the size.
            accepted: passing.as_ref().map(Feasible::from),
            ..SizeAnswer::default()
        },
    };
    match check_set(&refs, &var, admitted, 5, timeout_ms) {
        Verdict::Proved => {
            d.sound = Some(true);
            d.certificate = Certificate::Z3;
        }
        Verdict::Refuted(xs) => {
            d.sound = Some(false);
            d.certificate = Certificate::Z3;
            d.counterexamples = xs;
        }
        Verdict::Unknown(why) => {
            d.note = Some(why);
            if let Some(f) = &failing_set {
                if admitted.count() <= RECHECK_LIMIT {
                    d.sound = Some(f.is_empty());
                    d.certificate = Certificate::Enumeration;
                    d.counterexamples = f.iter().take(5).collect();
                }
            }
        }
    }
    // The largest sound spec within the admitted range.
    if let (Some(lo), Some(hi)) = (admitted.min(), admitted.max()) {
        let range = DimSet::interval(lo, hi);
        let feasible = own_set(&refs, &var, &range, &limits, None).set.ok();
        // Ranked inside what passes over that range, each re-checked value by value
        // against the size's guards (when few enough).
        if let Some(f) = feasible {
            let r = suggestions(&f, None, 4, Some(&refs), &var, &sd.name, Proof::Periodic);
            d.maximal_spec = r.progressions.first().map(|best| dim_code(&sd.name, best));
            d.answer.suggestions = r.suggestions;
        }
    }
    Some(d)
}

/// What became of a one-size guard over the admitted values: solved by the engine, else proved
/// by Z3, else undecided with the reason.
fn guard_use(
    g: &Expr,
    name: &str,
    var: &str,
    admitted: &DimSet,
    limits: &Limits,
    timeout_ms: u32,
) -> GuardUse {
    let (fate, reason) = match solve(g, var, admitted, limits) {
        Outcome::Solved {
            method: Method::Periodic { .. },
            ..
        } => (GuardFate::Periodic, None),
        Outcome::Solved {
            method: Method::Enumeration { .. },
            ..
        } => (GuardFate::Enumeration, None),
        Outcome::Undecided { reason } => match check_set(&[g], var, admitted, 1, timeout_ms) {
            Verdict::Proved => (GuardFate::Z3, None),
            Verdict::Refuted(xs) => (
                GuardFate::Undecided,
                Some(format!(
                    "{reason}; Z3 found the failing value {}, so it is not true for every admitted value",
                    xs.first().copied().unwrap_or_default()
                )),
            ),
            Verdict::Unknown(z) => (GuardFate::Undecided, Some(format!("{reason}; Z3: {z}"))),
        },
    };
    GuardUse {
        guard: g.to_string(),
        sizes: vec![name.to_string()],
        error: None,
        fate,
        reason,
    }
}

/// A size whose value the spec fixes from another's: `coef * target + offset`.
#[derive(Debug, Clone)]
struct Tie {
    target: String,
    coef: i128,
    offset: i128,
}

impl Tie {
    fn expr(&self) -> Expr {
        Expr::Add(vec![
            Expr::Mul(vec![Expr::int(self.coef), Expr::sym(&self.target)]),
            Expr::int(self.offset),
        ])
    }
}

/// How the spec ties `sizes`: per size, its [`Tie`] or `None`, and the roots that appear as
/// symbols of their own, with their ranges.
struct Ties {
    of: Vec<Option<Tie>>,
    roots: Vec<(String, (i128, i128))>,
}

/// Sizes the spec ties: one Dim object for several sizes makes them equal, and dims derived
/// from one root (`8*_h`, `8*_h + 1`; `w = h` beside `h`) move with it. Each tied size is
/// written as `coef * target + offset`, the target being the first size of the same Dim, the
/// size the root maps to, or the root itself (a symbol over its range, when two sizes derive
/// from it and none maps to it) — never a size itself tied. Sizes the spec makes static take no
/// part.
fn ties(guards: &GuardSet, spec: &Sheet, sizes: &[String]) -> Ties {
    let dims_of: Vec<Option<Given>> = sizes
        .iter()
        .map(|a| spec_of(guards, spec, a).filter(|d| d.admitted.is_some()))
        .collect();
    // Each size given as `coef*root + offset`.
    let use_of = |j: usize| dims_of[j].as_ref().and_then(Given::derived);
    let mut out = Ties {
        of: vec![None; sizes.len()],
        roots: Vec::new(),
    };
    for i in 0..sizes.len() {
        let Some((root, coef, offset)) = use_of(i) else {
            continue;
        };
        if let Some(j) = (0..i).find(|&j| use_of(j) == Some((root, coef, offset))) {
            // The same value as size `j`: written as `j` is.
            out.of[i] = Some(out.of[j].clone().unwrap_or_else(|| Tie {
                target: sizes[j].clone(),
                coef: 1,
                offset: 0,
            }));
            continue;
        }
        if (coef, offset) == (1, 0) {
            continue;
        }
        let derived_from =
            |j: &usize| use_of(*j).is_some_and(|(r, c, o)| r == root && (c, o) != (1, 0));
        let siblings = (0..sizes.len()).filter(derived_from).count();
        let plain = (0..sizes.len()).find(|&j| use_of(j) == Some((root, 1, 0)));
        let target = match plain {
            Some(j) => sizes[j].clone(),
            None if siblings >= 2 => {
                if !out.roots.iter().any(|(r, _)| r == root) {
                    let range = spec.root(root).map_or((0, 0), |r| r.range());
                    out.roots.push((root.to_string(), range));
                }
                root.to_string()
            }
            None => continue,
        };
        out.of[i] = Some(Tie {
            target,
            coef,
            offset,
        });
    }
    out
}

/// Whether the spec speaks of some size of the guards (a dimension's, or one named only inside
/// a guard over several sizes). When it does not, there is nothing to verify: the spec's names
/// and the guards' sizes do not meet.
fn covers_any(guards: &GuardSet, spec: &Sheet) -> bool {
    guards
        .dims
        .iter()
        .map(|(n, s, _)| s.clone().unwrap_or_else(|| n.clone()))
        .chain(
            guards
                .joint
                .iter()
                .flat_map(|(_, e)| e.atoms().into_iter().map(|a| a.to_string())),
        )
        .any(|s| spec_of(guards, spec, &s).is_some())
}

/// The guards' dimension whose variable (its source, else its name) is `v`.
fn dim_of<'g>(guards: &'g GuardSet, v: &str) -> Option<&'g (String, Option<String>, Vec<Expr>)> {
    guards
        .dims
        .iter()
        .find(|(n, s, _)| s.as_deref().unwrap_or(n) == v)
}

/// The spec's entry for a size of the guards (a dimension's source or name).
fn spec_of(guards: &GuardSet, spec: &Sheet, size: &str) -> Option<Given> {
    match dim_of(guards, size) {
        Some((n, s, _)) => spec.lookup(n, s.as_deref()),
        None => spec.lookup(size, Some(size)),
    }
}

/// Each guard over several sizes' use, from the stage's answer: undecided where the spec does
/// not cover a size of its group, else its fate in the analysis (a guard joining two groups,
/// held on both answers, listed with each; the guards of a group that reduced to one size, the
/// sizes the spec ties, solved jointly).
fn joint_uses(guards: &GuardSet, jp: &JointProblem, analysis: &Analysis, uses: &mut Vec<GuardUse>) {
    let name_of = |v: &str| name_of(guards, v);
    // The use of guard `o` (an index in the problem's guards) when it is one of the guards
    // over several sizes (one-size guards keep their own, over the spec's set).
    let joint_use = |o: usize, fate: GuardFate, reason: Option<String>| {
        let (text, e) = guards.joint.get(o.checked_sub(jp.first_joint)?)?;
        Some(GuardUse {
            guard: text.clone(),
            sizes: e.atoms().iter().map(|a| name_of(a)).collect(),
            error: None,
            fate,
            reason,
        })
    };
    for grp in analysis.skipped.iter().filter(|g| !jp.covers(g)) {
        let m = grp
            .members
            .iter()
            .find(|m| !jp.ranges.contains_key(&m.name))
            .expect("an uncovered member");
        let why = format!("the spec does not cover `{}`", name_of(&m.name));
        uses.extend(
            grp.origin
                .iter()
                .chain(&grp.relations)
                .filter_map(|&o| joint_use(o, GuardFate::Undecided, Some(why.clone()))),
        );
    }
    for g in &analysis.groups {
        let grp = &g.grp;
        // The guards joining this group to another that hold on both answers are listed
        // with it, whatever its size.
        let mut listed: Vec<usize> = grp.held.clone();
        if grp.roots.len() != 1 {
            listed.extend(grp.origin.iter().chain(&grp.relations));
        }
        for o in listed {
            if let Some((fate, reason)) = analysis.fates.get(&o) {
                uses.extend(joint_use(o, *fate, reason.clone()));
            }
        }
    }
    // Linking guards of groups that reduced to one size (equal sizes).
    for (text, e) in &guards.joint {
        if !uses.iter().any(|u| &u.guard == text) {
            uses.push(GuardUse {
                guard: text.clone(),
                sizes: e.atoms().iter().map(|a| name_of(a)).collect(),
                error: None,
                fate: GuardFate::Joint,
                reason: None,
            });
        }
    }
}

/// The problem `verify` gives the analysis stage over the guards of several sizes: every
/// guard (one-size ones first, then those over several sizes from `first_joint` on), the spec's
/// ties as equalities (a root no size maps to joins as a size of its own, over its range), its
/// progressions as guards, and each size's range under the spec.
struct JointProblem {
    problem: Problem,
    ranges: BTreeMap<String, (i128, i128)>,
    first_joint: usize,
}

impl JointProblem {
    /// Whether the spec covers every size of the group (a size it does not cover, or makes
    /// static, has no known values: its group is not solved over every integer).
    fn covers(&self, g: &joint::Group) -> bool {
        g.members.iter().all(|m| self.ranges.contains_key(&m.name))
    }
}

/// What `spec` admits for the sizes `guards` name, as one [`JointProblem`].
fn joint_problem(guards: &GuardSet, spec: &Sheet) -> JointProblem {
    let mut all: Vec<Expr> = guards
        .dims
        .iter()
        .flat_map(|(_, _, gs)| gs.iter().cloned())
        .collect();
    let first_joint = all.len();
    all.extend(guards.joint.iter().map(|(_, e)| e.clone()));
    let mut sizes: Vec<String> = guards
        .dims
        .iter()
        .map(|(n, s, _)| s.clone().unwrap_or_else(|| n.clone()))
        .collect();
    for e in &all {
        for a in e.atoms() {
            if !sizes.iter().any(|s| **s == *a) {
                sizes.push(a.to_string());
            }
        }
    }
    // What the spec ties (one Dim for several sizes, dims derived from one root) as equalities;
    // a root no size maps to joins as a size of its own, over its range.
    let mut ranges = BTreeMap::new();
    let ties = ties(guards, spec, &sizes);
    for (size, t) in sizes.iter().zip(&ties.of) {
        if let Some(t) = t {
            all.push(Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::sym(size)),
                Box::new(t.expr()),
            ));
        }
    }
    for (root, range) in ties.roots {
        ranges.insert(root.clone(), range);
        sizes.push(root);
    }
    // What the spec admits: its range, its progression as a guard.
    for size in &sizes {
        let Some(set) = spec_of(guards, spec, size).and_then(|d| d.admitted) else {
            continue;
        };
        if let (Some(lo), Some(hi)) = (set.min(), set.max()) {
            ranges.insert(size.clone(), (lo, hi));
        }
        if let Some(p) = set.as_progression().filter(|p| p.modulus > 1) {
            all.push(Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::Mod(
                    Box::new(Expr::sym(size)),
                    Box::new(Expr::int(p.modulus)),
                )),
                Box::new(Expr::int(p.residue)),
            ));
        }
    }
    // The analysis stage, over the spec's sets. One root: sizes the spec ties (`h = 16*_r`,
    // `w = 16*_r + 1`) solved through it, for their maximal lines only (their guards' uses are
    // listed below, as joint). A size the spec does not cover (or makes static) has no known
    // values: its group is not solved over every integer (negative sizes included).
    let problem = Problem {
        sizes: sizes
            .iter()
            .map(|v| Size::new(v, &spec_name(guards, spec, v), ranges.get(v).copied()))
            .collect(),
        guards: all,
        extra_ranges: BTreeMap::new(),
        parts: false,
        by_guard: false,
    };
    JointProblem {
        problem,
        ranges,
        first_joint,
    }
}

/// A size's name in the guards (its dimension's name, else the variable).
fn name_of(guards: &GuardSet, v: &str) -> String {
    dim_of(guards, v).map_or(v.to_string(), |(n, _, _)| n.clone())
}

/// A size's name in the spec (its `Dim`'s variable), else in the guards.
fn spec_name(guards: &GuardSet, spec: &Sheet, v: &str) -> String {
    spec_of(guards, spec, v).map_or(name_of(guards, v), |d| d.name)
}

/// The linked size `d`'s answer from its group `g`, as every command builds it, and its
/// maximal line (`maximal_spec`): its line under the group's one spec (`group_line`); a size
/// derived from a root written from the root's line; for a group without a spec of its own,
/// the largest progression of the values that pass with every value of the others.
fn linked_size(
    d: &mut VerifyDim,
    g: &dimguard_solver::analyze::GroupAnswer,
    guards: &GuardSet,
    spec: &Sheet,
    ranges: &BTreeMap<String, (i128, i128)>,
) {
    let (grp, solved) = (&g.grp, &g.solved);
    let name_of = |v: &str| name_of(guards, v);
    let spec_name = |v: &str| spec_name(guards, spec, v);
    // A group without a spec of its own (no box passes, or one root): each root's
    // maximal side, the largest progression of the values that pass with every value of
    // the others.
    let root_side = |root: &str| {
        rank(solved.accepted.get(root)?, None, 1)
            .progressions
            .first()
            .copied()
    };
    // A size's line under the group's one spec, as every command writes it
    // (`group_line`); `label` names it.
    let line = |m: &joint::Member, label: &str| {
        let range = ranges.get(&m.name).copied();
        match group_line(g, &g.member(&m.name)?, label, &spec_name, range)? {
            GroupLine::Side { side, .. } => Some(side.code),
            GroupLine::Defined(code) => Some(code),
            GroupLine::Derived { .. } => None,
        }
    };
    let var = d.source.clone().unwrap_or_else(|| d.name.clone());
    let Some(m) = grp.members.iter().find(|m| m.name == var) else {
        return;
    };
    let name = spec_of(guards, spec, &var).map_or(d.name.clone(), |sd| sd.name);
    d.maximal_spec = match &solved.undecided {
        Some(why) => {
            d.note.get_or_insert_with(|| format!("joint guards: {why}"));
            None
        }
        // A size derived from a root is written from the root's line, as the spec
        // writes it, and the line holds the root's too: one Dim object for both (`0:
        // a_0` for b's size too), and the line names this size, never `a_0 = a_0`.
        None if m.root != m.name => {
            let root = spec_name(&m.root);
            let own = if name == root { &d.name } else { &name };
            grp.members
                .iter()
                .find(|r| r.name == m.root)
                .and_then(|r| line(r, &root))
                .or_else(|| root_side(&m.root).map(|p| dim_code(&root, &p)))
                .map(|root_line| {
                    format!(
                        "{root_line}\n{}",
                        python::alias(own, &root, m.coef, m.offset)
                    )
                })
        }
        None => line(m, &name).or_else(|| root_side(&m.root).map(|p| dim_code(&name, &p))),
    };
    // Its answer from the group, as every command builds it: the sizes it is linked
    // with, its sides, and a size the spec writes from another answers with that
    // size's set, through the tie (within what the spec admits for it).
    let own = ranges.get(&var).map(|&(lo, hi)| DimSet::interval(lo, hi));
    let member = g.member(&var);
    let decided = member.as_ref().and_then(|ma| g.decided(ma, own.as_ref()));
    let is_size = |v: &str| dim_of(guards, v).is_some();
    let asked = Asked {
        label: &name,
        name: &name_of,
        code: &spec_name,
        is_size: &is_size,
        own: own.as_ref(),
        accepted: decided.as_ref(),
        example: None,
        partners: Partners::OfSeveralRoots,
        spec_ties: true,
    };
    let built = size_answer(Some(g), member.as_ref(), &asked);
    d.answer = SizeAnswer {
        accepted: d.answer.accepted.take(),
        undecided: d.answer.undecided.take(),
        suggestions: std::mem::take(&mut d.answer.suggestions),
        ..built
    };
    // A linked size's line is its side of the group's spec (`maximal_spec`): a Dim of
    // its own, ranked over its own guards, may fail a guard it shares.
    if !d.answer.linked_with.is_empty() {
        d.answer.suggestions.clear();
    }
}

/// Decides one linking guard over the spec's box by the joint search (exhaustive, exact) when
/// Z3 could not: a real failing combination, or "every combination passes" when the box is
/// small enough to have been searched tuple by tuple ([`RECHECK_LIMIT`]).
fn joint_search(g: &Expr, named: &[(&str, &DimSet)]) -> Option<Result<(), Vec<i128>>> {
    let names: Vec<String> = named.iter().map(|(n, _)| n.to_string()).collect();
    let sets: Vec<DimSet> = named.iter().map(|(_, s)| (*s).clone()).collect();
    let js = solve_joint(&names, &sets, std::slice::from_ref(g), &Budget::default());
    if js.undecided.is_some() {
        return None;
    }
    let rejected = js.rejected_examples(1).ok()?;
    if let Some(t) = rejected.into_iter().next() {
        let env = |a: &str| names.iter().position(|n| n == a).map(|i| t[i]);
        // Re-checked with the exact evaluator: it really fails.
        return (!matches!(g.eval(&env), Ok(Value::Bool(true)))).then_some(Err(t));
    }
    (js.box_count() <= RECHECK_LIMIT).then_some(Ok(()))
}

fn joint_check(
    text: &str,
    g: &Expr,
    guards: &GuardSet,
    spec: &Sheet,
    timeout_ms: u32,
) -> JointCheck {
    let mut out = JointCheck {
        guard: text.to_string(),
        sound: None,
        counterexample: None,
        certificate: Certificate::None,
        note: None,
    };
    let g = g.clone();
    let atoms: Vec<String> = g.atoms().iter().map(|a| a.to_string()).collect();
    let mut sets = Vec::new();
    for a in &atoms {
        match spec_of(guards, spec, a).and_then(|d| d.admitted) {
            Some(s) => sets.push(s),
            None => {
                out.note = Some(format!("the spec does not cover `{a}`"));
                return out;
            }
        }
    }
    let ties = ties(guards, spec, &atoms);
    let roots: Vec<(String, DimSet)> = ties
        .roots
        .iter()
        .map(|(r, (lo, hi))| (r.clone(), DimSet::interval(*lo, *hi)))
        .collect();
    let tie = ties.of;
    let mut g = g;
    for (a, t) in atoms.iter().zip(&tie) {
        if let Some(t) = t {
            g = g.substitute(a, &t.expr());
        }
    }
    let live: Vec<usize> = (0..atoms.len())
        .filter(|&i| tie[i].is_none() && g.atoms().iter().any(|a| **a == *atoms[i]))
        .collect();
    let named: Vec<(&str, &DimSet)> = live
        .iter()
        .map(|&i| (atoms[i].as_str(), &sets[i]))
        .chain(
            roots
                .iter()
                .filter(|(r, _)| g.atoms().iter().any(|a| **a == **r))
                .map(|(r, s)| (r.as_str(), s)),
        )
        .collect();
    let verdict = match check_box(&[&g], &named, timeout_ms) {
        JointVerdict::Unknown(why) => match joint_search(&g, &named) {
            Some(Ok(())) => {
                out.certificate = Certificate::Enumeration;
                JointVerdict::Proved
            }
            Some(Err(p)) => {
                out.certificate = Certificate::Enumeration;
                JointVerdict::Refuted(p)
            }
            None => JointVerdict::Unknown(why),
        },
        v => {
            out.certificate = Certificate::Z3;
            v
        }
    };
    match verdict {
        JointVerdict::Proved => {
            out.sound = Some(true);
        }
        JointVerdict::Refuted(p) => {
            out.sound = Some(false);
            let value: std::collections::BTreeMap<&str, i128> = named
                .iter()
                .map(|(n, _)| *n)
                .zip(p.iter().copied())
                .collect();
            let ce: std::collections::BTreeMap<String, i128> = atoms
                .iter()
                .zip(&tie)
                .filter_map(|(a, t)| {
                    let v = match t {
                        Some(t) => t.coef * value.get(t.target.as_str())? + t.offset,
                        None => *value.get(a.as_str())?,
                    };
                    Some((a.clone(), v))
                })
                .collect();
            out.counterexample = Some(ce);
        }
        JointVerdict::Unknown(why) => {
            out.certificate = Certificate::None;
            out.note = Some(why);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dimguard_readers::spec;

    const RAFT: &str = "  - Not all values of dim_2 = L['image1'].size()[2] in the specified range 135 <= dim_2 <= 2160 satisfy the generated guard ((((-1) + L['image1'].size()[2]) // 8) % 8) == 1.";

    #[test]
    fn the_command_reads_its_input_and_refuses_what_leaves_nothing_to_verify() {
        let spec = "_h = Dim('_h', min=2, max=30)\ndim_2 = 64*_h + 9\n";
        let r = verify(RAFT, spec, 5_000).unwrap();
        // Read as `verify_input` is given it, the same report.
        let input = read(RAFT, spec).unwrap();
        let again = verify_input(&input.guards, &input.spec, 5_000);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            serde_json::to_string(&again).unwrap()
        );
        assert_eq!(r.sound, Some(true), "{r:?}");
        let refused = |g: &str, s: &str| verify(g, s, 5_000).unwrap_err();
        assert!(matches!(refused(RAFT, "# no Dim\n"), InputError::EmptySpec));
        assert!(matches!(
            refused(RAFT, "w = Dim('w', min=2, max=8)\n"),
            InputError::NoMatch
        ));
        // A guard line that does not parse, a spec line that does not read: the reader's error.
        assert!(matches!(
            refused("h %% 8 == 0\n", spec),
            InputError::Read(Error::Guard { line: 1, .. })
        ));
        assert!(matches!(
            refused(RAFT, "h = Dim('h', min=9, max=2)\n"),
            InputError::Read(Error::Spec { line: 1, .. })
        ));
    }

    #[test]
    fn torch_fix_is_unsound_with_counterexamples() {
        let g = GuardSet::read(RAFT).unwrap();
        let s = spec::read("_dim_2 = Dim('_dim_2', min=17, max=270)\ndim_2 = 8*_dim_2\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.sound, Some(false));
        let d = &r.dims[0];
        assert_eq!((d.admitted, d.failing), (254, Some(222)));
        assert_eq!(d.counterexamples[..3], [136, 152, 160]);
        assert_eq!(d.certificate, Certificate::Z3);
        assert_eq!(
            d.maximal_spec.as_deref(),
            Some("_dim_2 = Dim('_dim_2', min=2, max=33)\ndim_2 = 64*_dim_2 + 9")
        );
    }

    #[test]
    fn joint_guards_are_decided_over_the_spec_box() {
        let g = GuardSet::read(
            "L['image2'].size()[2] == L['image1'].size()[2]\nL['image1'].size()[2] % 2 == 0\n",
        )
        .unwrap();
        let s = spec::read(
            "h = Dim('h', min=2, max=64)\ndynamic_shapes = {'image1': {2: h}, 'image2': {2: h}}\n",
        )
        .unwrap();
        let r = verify_input(&g, &s, 5_000);
        // The same Dim on both: equal by construction, proved.
        assert_eq!(r.joint[0].sound, Some(true), "{r:?}");
        let s = spec::read("h = Dim('h', min=2, max=64)\nw = Dim('w', min=2, max=64)\ndynamic_shapes = {'image1': {2: h}, 'image2': {2: w}}\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.joint[0].sound, Some(false));
        let ce = r.joint[0].counterexample.as_ref().unwrap();
        assert_ne!(ce["L['image1'].size()[2]"], ce["L['image2'].size()[2]"]);
        assert_eq!(r.sound, Some(false));
    }

    #[test]
    fn a_guard_over_two_sizes_listed_under_one_is_checked_with_the_others_values() {
        // A constraint violation lists `x * y <= 60` under x. Before, x alone was asked to Z3
        // with y free, so a sound spec was called UNSOUND with "failing" values that need a
        // negative y; and with y not in the spec, the joint set ran over negative sizes.
        let text = "  - Not all values of d0 = L['x'].size()[0] in the specified range 2 <= d0 <= 64 satisfy the generated guard L['x'].size()[0] * L['y'].size()[0] <= 60.\n";
        let g = GuardSet::read(text).unwrap();
        for (xmax, ymax) in [(10, 6), (11, 6), (30, 2), (31, 2), (5, 12)] {
            let s = spec::read(&format!("a = Dim('a', min=2, max={xmax})\nb = Dim('b', min=2, max={ymax})\ndynamic_shapes = {{'x': {{0: a}}, 'y': {{0: b}}}}\n")).unwrap();
            let r = verify_input(&g, &s, 5_000);
            // Brute force over the spec's box.
            let sound = (2..=xmax).all(|x| (2..=ymax).all(|y| x * y <= 60));
            assert_eq!(r.sound, Some(sound), "{xmax} {ymax}: {r:?}");
            assert_eq!(r.dims[0].sound, Some(true), "no guard of x alone: {r:?}");
            assert_eq!(r.joint[0].sound, Some(sound));
            if let Some(ce) = &r.joint[0].counterexample {
                let (x, y) = (ce["L['x'].size()[0]"], ce["L['y'].size()[0]"]);
                assert!((2..=xmax).contains(&x) && (2..=ymax).contains(&y) && x * y > 60);
            }
        }
        // y not in the spec: undecided, not unsound, and no joint set over every integer.
        let s =
            spec::read("a = Dim('a', min=2, max=10)\ndynamic_shapes = {'x': {0: a}}\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.sound, None, "{r:?}");
        assert!(r.dims[0].counterexamples.is_empty());
        assert!(r.joint_sets.is_empty(), "{:?}", r.joint_sets);
        let u = r.guards.iter().find(|u| u.guard.contains('*')).unwrap();
        assert_eq!(u.fate, GuardFate::Undecided);
        assert_eq!(
            u.reason.as_deref(),
            Some("the spec does not cover `L['y'].size()[0]`")
        );
    }

    #[test]
    fn maximal_specs_respect_joint_guards() {
        // h*w must be a multiple of 16 for every pair: the maximal specs together are the
        // largest sound box, at least as large as "h a multiple of 16, any w" (12 x 63).
        let g = GuardSet::read("(L['x'].size()[2] * L['x'].size()[3]) % 16 == 0\n").unwrap();
        let s = spec::read("h = Dim('h', min=2, max=200)\nw = Dim('w', min=2, max=64)\ndynamic_shapes = {'x': {2: h, 3: w}}\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.sound, Some(false));
        let h = r
            .dims
            .iter()
            .find(|d| d.name == "L['x'].size()[2]")
            .unwrap();
        assert_eq!(h.sound, Some(true), "no one-size guard of its own");
        let b = r.joint_sets[0].largest_box.as_ref().unwrap();
        assert!(b.count >= 12 * 63 && b.maximal, "{b:?}");
        for d in &r.dims {
            assert!(b
                .sides
                .iter()
                .any(|s| Some(&s.code) == d.maximal_spec.as_ref()));
        }
        let (x, y) = (&b.sides[0], &b.sides[1]);
        for a in (x.lo..=x.hi).step_by(x.modulus as usize) {
            for c in (y.lo..=y.hi).step_by(y.modulus as usize) {
                assert_eq!((a * c) % 16, 0, "{a} {c}");
            }
        }
        // Through the joint solver directly:
        let e = parse_guard("(h * w) % 16 == 0").unwrap();
        let groups = joint::group(&[e], &[]);
        let ranges = std::collections::BTreeMap::from([
            ("h".to_string(), (2, 200)),
            ("w".to_string(), (2, 64)),
        ]);
        let solved = joint::solve_group(&groups[0], &ranges, &Limits::default());
        assert!(solved.accepted["h"].iter().all(|h| h % 16 == 0));
        assert_eq!(solved.accepted["h"].count(), 12);
    }

    #[test]
    fn joint_sets_over_the_spec_match_brute_force() {
        let g = GuardSet::read(
            "(L['x'].size()[2] * L['x'].size()[3]) % 16 == 0\nL['x'].size()[2] + L['x'].size()[3] <= 90\nL['x'].size()[2] % 3 != 1\n",
        )
        .unwrap();
        let s = spec::read("h = Dim('h', min=2, max=60)\n_w = Dim('_w', min=1, max=30)\nw = 2*_w\ndynamic_shapes = {'x': {2: h, 3: w}}\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        let pass = |h: i128, w: i128| (h * w) % 16 == 0 && h + w <= 90 && h % 3 != 1;
        let hs: Vec<i128> = (2..=60).collect();
        let ws: Vec<i128> = (1..=30).map(|k| 2 * k).collect();
        let want = hs
            .iter()
            .flat_map(|&h| ws.iter().map(move |&w| (h, w)))
            .filter(|&(h, w)| pass(h, w))
            .count() as u128;
        assert_eq!(r.joint_sets.len(), 1, "{r:?}");
        let j = &r.joint_sets[0];
        assert_eq!(j.accepted, want);
        let at = |t: &[i128], name: &str| t[j.dims.iter().position(|d| d == name).unwrap()];
        for t in &j.rejected_examples {
            assert!(!pass(at(t, "h"), at(t, "w")), "{t:?}");
        }
        // The largest box is sound, and it is what `maximal` suggests for each size.
        let b = j.largest_box.as_ref().unwrap();
        let side = |name: &str| &b.sides[j.dims.iter().position(|d| d == name).unwrap()];
        let (sh, sw) = (side("h"), side("w"));
        for h in (sh.lo..=sh.hi).step_by(sh.modulus as usize) {
            for w in (sw.lo..=sw.hi).step_by(sw.modulus as usize) {
                assert!(pass(h, w), "{h} {w}");
            }
        }
        for d in &r.dims {
            let name = if d.name.ends_with("[2]") { "h" } else { "w" };
            assert_eq!(
                d.maximal_spec.as_ref(),
                Some(&side(name).code),
                "{}",
                d.name
            );
        }
        // Every guard accounted for: the one-size guard solved, the linking ones jointly.
        assert_eq!(r.guards.len(), 3, "{:?}", r.guards);
        assert_eq!(
            r.guards
                .iter()
                .filter(|u| u.fate == GuardFate::Joint)
                .count(),
            2,
            "{:?}",
            r.guards
        );
        assert_eq!(r.sound, Some(false));
    }

    #[test]
    fn guards_over_several_sizes_in_a_log_are_checked() {
        let log = include_str!("../../tests/data/forms/product_reshape.log.txt");
        let g = GuardSet::read(log).unwrap();
        assert_eq!(g.joint.len(), 4);
        let s = spec::read("a = Dim('a', min=2, max=8)\nb = Dim('b', min=2, max=512)\nc = Dim('c', min=2, max=1024)\ndynamic_shapes = {'t': {0: a, 1: b, 2: c}}\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.joint.len(), 4);
        assert_eq!(r.sound, Some(false));
        assert_eq!(r.guards.len(), 4);
        // t_1 * t_2 == 2560: the pairs that divide it, times the 7 values of t_0.
        let pairs = (2..=512i128)
            .filter(|b| 2560 % b == 0 && (2..=1024).contains(&(2560 / b)))
            .count() as u128;
        assert_eq!(r.joint_sets[0].accepted, pairs * 7);
        // The static spec the box gives is sound.
        let static_spec = r
            .dims
            .iter()
            .map(|d| d.maximal_spec.clone().unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let fixed = spec::read(&format!(
            "{static_spec}\ndynamic_shapes = {{'t': {{0: a, 1: b, 2: c}}}}\n"
        ))
        .unwrap();
        let again = verify_input(&g, &fixed, 5_000);
        assert_eq!(again.sound, Some(true), "{static_spec}: {again:?}");
    }

    #[test]
    fn the_joint_search_decides_a_guard_z3_cannot() {
        let g = parse_guard("(a * b) % 7 != 3").unwrap();
        let (a, b) = (DimSet::interval(1, 20), DimSet::interval(1, 20));
        let Some(Err(t)) = joint_search(&g, &[("a", &a), ("b", &b)]) else {
            panic!("a failing pair exists");
        };
        assert_eq!((t[0] * t[1]) % 7, 3);
        let g = parse_guard("(a * b) % 7 != 3").unwrap();
        let a = DimSet::progression(7, 70, 7, 0);
        assert_eq!(joint_search(&g, &[("a", &a), ("b", &b)]), Some(Ok(())));
    }

    #[test]
    fn suggestion_is_proved_over_a_huge_range_from_guard_lines() {
        let g =
            GuardSet::read("# one guard per line\n((((-1) + L['x'].size()[2]) // 8) % 8) == 1\n")
                .unwrap();
        let s = spec::read("_h = Dim('_h', min=0, max=72057594037927935)\nh = 64*_h + 9\ndynamic_shapes = {'x': {2: h}}").unwrap();
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.sound, Some(true), "{r:?}");
        assert_eq!(r.dims[0].certificate, Certificate::Z3);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
        /// Two dims derived from one root (`c1*_r + o1`, `c2*_r + o2`) move together: a guard
        /// linking their sizes is sound exactly when it holds at every root value (brute force),
        /// and a counterexample is a pair the spec really admits.
        #[test]
        fn dims_derived_from_one_root_are_checked_together(
            c1 in 1i128..5, o1 in 0i128..4, c2 in 1i128..5, o2 in 0i128..4,
            lo in 2i128..20, span in 0i128..30, a in 1i128..4, n in 10i128..400, form in 0usize..2,
        ) {
            let hi = lo + span;
            let (x, y) = ("L['x'].size()[2]", "L['x'].size()[3]");
            let guard = match form {
                0 => format!("{a}*{x} + {y} <= {n}"),
                _ => format!("({x} + {y}) % {} != {}", a + 1, n % (a + 1)),
            };
            let holds = |r: i128| {
                let (vx, vy) = (c1 * r + o1, c2 * r + o2);
                match form {
                    0 => a * vx + vy <= n,
                    _ => (vx + vy).rem_euclid(a + 1) != n % (a + 1),
                }
            };
            let g = GuardSet::read(&format!("{guard}\n")).unwrap();
            let text = format!(
                "_r = Dim('_r', min={lo}, max={hi})\nh = {c1}*_r + {o1}\nw = {c2}*_r + {o2}\ndynamic_shapes = {{'x': {{2: h, 3: w}}}}\n"
            );
            let sp = spec::read(&text).unwrap();
            let r = verify_input(&g, &sp, 5_000);
            let j = &r.joint[0];
            let truth = (lo..=hi).all(holds);
            proptest::prop_assert_eq!(j.sound, Some(truth), "{} over {}", guard, text);
            if let Some(ce) = &j.counterexample {
                let (vx, vy) = (ce[x], ce[y]);
                proptest::prop_assert!((lo..=hi).any(|r| c1 * r + o1 == vx && c2 * r + o2 == vy), "{:?}", ce);
                proptest::prop_assert!(!(lo..=hi).filter(|r| c1 * r + o1 == vx).all(holds));
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(60))]
        /// Dims derived from one root: the maximal lines of all of them, pasted together, are a
        /// sound spec (brute force over the root's values) and, for a linking guard whose
        /// passing roots form an interval, hold exactly those roots. Before, each size's
        /// maximal line was a Dim of its own over its own guards (`h = Dim('h', min=32,
        /// max=1024)` beside `w = Dim('w', ...)`), and a linking guard failed between them.
        #[test]
        fn the_maximal_lines_of_tied_dims_are_sound_together(
            c1 in 1i128..5, o1 in 0i128..4, c2 in 1i128..5, o2 in 0i128..4,
            lo in 2i128..20, span in 1i128..30, a in 1i128..4, n in 10i128..400,
            periodic in proptest::bool::ANY,
        ) {
            let hi = lo + span;
            let (x, y) = ("L['x'].size()[2]", "L['x'].size()[3]");
            // A monotone guard (the passing roots an interval), or a periodic one (the maximal
            // root side a progression, written through a root of its own: a chain of derived
            // lines that must read back).
            let m = a + 1;
            let holds = |vx: i128, vy: i128| {
                if periodic { (vx + vy) % m != n % m } else { a * vx + vy <= n }
            };
            let guard = if periodic {
                format!("({x} + {y}) % {m} != {}", n % m)
            } else {
                format!("{a}*{x} + {y} <= {n}")
            };
            let g = GuardSet::read(&format!("{guard}\n")).unwrap();
            let text = format!(
                "_r = Dim('_r', min={lo}, max={hi})\nh = {c1}*_r + {o1}\nw = {c2}*_r + {o2}\ndynamic_shapes = {{'x': {{2: h, 3: w}}}}\n"
            );
            let r = verify_input(&g, &spec::read(&text).unwrap(), 5_000);
            let passing: Vec<i128> = (lo..=hi).filter(|&r| holds(c1 * r + o1, c2 * r + o2)).collect();
            let lines: Vec<&str> = r.dims.iter().filter_map(|d| d.maximal_spec.as_deref()).collect();
            if passing.is_empty() {
                proptest::prop_assert!(lines.is_empty(), "{:?}", lines);
                return Ok(());
            }
            proptest::prop_assert_eq!(lines.len(), 2, "{:?}", r.dims);
            let pasted = format!("{}\n{}\ndynamic_shapes = {{'x': {{2: h, 3: w}}}}\n", lines[0], lines[1]);
            let maximal = spec::read(&pasted).unwrap();
            // Every pair the pasted spec admits, by its root, passes.
            let hs = maximal.lookup("h", Some(x)).and_then(|d| d.admitted.clone()).unwrap();
            let ws = maximal.lookup("w", Some(y)).and_then(|d| d.admitted.clone()).unwrap();
            let roots: Vec<i128> = hs.iter().map(|v| (v - o1) / c1).collect();
            proptest::prop_assert_eq!(ws.iter().map(|v| (v - o2) / c2).collect::<Vec<_>>(), roots.clone());
            proptest::prop_assert!(roots.iter().all(|&r| holds(c1 * r + o1, c2 * r + o2)), "{}", pasted);
            // For the monotone guard the passing roots are an interval: all of them.
            if !periodic {
                proptest::prop_assert_eq!(roots, passing);
            }
            proptest::prop_assert_eq!(verify_input(&g, &maximal, 5_000).sound, Some(true), "{}", pasted);
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(80))]
        /// Two sizes of two inputs, linked by a guard of each family the group spec takes
        /// every form for (a band `|a - b| <= k`, a parity of the sum, a product or a sum
        /// bound, one-sided, an equality): the maximal lines pasted together admit only pairs
        /// that pass (brute force over the pasted spec's roots, against the guard written here
        /// as Rust), and as many pairs as the larger of the largest sound box and one shared
        /// `Dim` (the group's one spec takes the larger). Before, a group whose
        /// one spec is a shared `Dim` got a box in `verify` (`a 3..4, b 3..4` for `|a - b| <=
        /// 1` over 2..100) while check and diagnose wrote `b = a` (99 pairs).
        #[test]
        fn the_maximal_lines_follow_the_groups_one_spec(
            kind in 0usize..6, k in 0i128..6, m in 2i128..6,
            lo_a in 2i128..10, span_a in 0i128..40, lo_b in 2i128..10, span_b in 0i128..40,
        ) {
            let (x, y) = ("L['x'].size()[0]", "L['y'].size()[0]");
            let (hi_a, hi_b) = (lo_a + span_a, lo_b + span_b);
            type Holds = Box<dyn Fn(i128, i128) -> bool>;
            let (guards, holds): (Vec<String>, Holds) = match kind {
                0 => (
                    vec![format!("{x} - {y} <= {k}"), format!("{y} - {x} <= {k}")],
                    Box::new(move |a, b| (a - b).abs() <= k),
                ),
                1 => (
                    vec![format!("({x} + {y}) % {m} == {}", k % m)],
                    Box::new(move |a, b| (a + b) % m == k % m),
                ),
                2 => (
                    vec![format!("{x} * {y} <= {}", 40 + 20 * k)],
                    Box::new(move |a, b| a * b <= 40 + 20 * k),
                ),
                3 => (vec![format!("{x} <= {y} + {k}")], Box::new(move |a, b| a <= b + k)),
                4 => (vec![format!("Eq({x}, {y})")], Box::new(|a, b| a == b)),
                _ => (
                    vec![format!("{x} + {y} <= {}", 20 + 5 * k)],
                    Box::new(move |a, b| a + b <= 20 + 5 * k),
                ),
            };
            let g = GuardSet::read(&format!("{}\n", guards.join("\n"))).unwrap();
            let text = format!(
                "a = Dim('a', min={lo_a}, max={hi_a})\nb = Dim('b', min={lo_b}, max={hi_b})\ndynamic_shapes = {{'x': {{0: a}}, 'y': {{0: b}}}}\n"
            );
            let r = verify_input(&g, &spec::read(&text).unwrap(), 5_000);
            let lines: Vec<&str> = r.dims.iter().filter_map(|d| d.maximal_spec.as_deref()).collect();
            if lines.len() < 2 {
                // No pair passes, or the group is undecided: no line to paste.
                return Ok(());
            }
            let pasted = format!(
                "{}\ndynamic_shapes = {{'x': {{0: a}}, 'y': {{0: b}}}}\n",
                lines.join("\n")
            );
            let sheet = spec::read(&pasted).unwrap();
            proptest::prop_assert!(sheet.unrecognized.is_empty(), "{}", pasted);
            // Every pair the pasted spec admits: the roots' values, each size through its
            // root (`b = a` moves with `a`).
            // Each size as (root, coef, offset) and the root's values; a size written as one
            // value (`a = 8`) is a root of its own.
            let size = |input: &str| {
                let src = format!("L['{input}'].size()[0]");
                let gv = sheet.lookup("", Some(&src))?;
                Some(match gv.derived() {
                    Some((root, coef, offset)) => {
                        let r = sheet.root(root)?;
                        (root.to_string(), coef, offset, r.min.unwrap_or(0)..=r.max?)
                    }
                    None => {
                        let v = gv.admitted.as_ref().filter(|s| s.count() == 1)?.min()?;
                        (src, 1, 0, v..=v)
                    }
                })
            };
            let (Some(sa), Some(sb)) = (size("x"), size("y")) else {
                proptest::prop_assert!(false, "a size the pasted spec does not write from a Dim:\n{}", pasted);
                return Ok(());
            };
            let mut pairs = 0u128;
            let mut check = |a: i128, b: i128| -> Result<(), proptest::test_runner::TestCaseError> {
                proptest::prop_assert!(holds(a, b), "({a}, {b}) fails:\n{}", pasted);
                pairs += 1;
                Ok(())
            };
            if sa.0 == sb.0 {
                for v in sa.3.clone() {
                    check(sa.1 * v + sa.2, sb.1 * v + sb.2)?;
                }
            } else {
                for v in sa.3.clone() {
                    for w in sb.3.clone() {
                        check(sa.1 * v + sa.2, sb.1 * w + sb.2)?;
                    }
                }
            }
            // As many pairs as the larger of the largest box and one shared `Dim`.
            let best = r.joint_sets.first().map_or(0, |j| {
                let b = j.largest_box.as_ref().map_or(0, |b| b.count);
                b.max(j.shared.as_ref().map_or(0, |s| s.count))
            });
            proptest::prop_assert!(pairs >= best, "{pairs} < {best}:\n{}", pasted);
        }
    }

    #[test]
    fn a_shared_dim_chosen_for_a_band_is_written_as_a_choice() {
        // |a - b| <= 1 over 2..100 each: the largest box holds 4 pairs, one Dim for both 99.
        // The maximal lines write b from a, and say it is a choice, not an equality the guards
        // force (they pass at a != b too).
        let g = GuardSet::read(
            "L['x'].size()[0] - L['y'].size()[0] <= 1\nL['y'].size()[0] - L['x'].size()[0] <= 1\n",
        )
        .unwrap();
        let s = spec::read("a = Dim('a', min=2, max=100)\nb = Dim('b', min=2, max=100)\ndynamic_shapes = {'x': {0: a}, 'y': {0: b}}\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        let lines: Vec<&str> = r
            .dims
            .iter()
            .filter_map(|d| d.maximal_spec.as_deref())
            .collect();
        assert_eq!(lines[0], "a = Dim('a', min=2, max=100)", "{lines:?}");
        assert!(
            lines[1].starts_with("b = a  # one Dim for both"),
            "{lines:?}"
        );
        assert!(!lines[1].contains("must always be equal"), "{lines:?}");
        assert_eq!(r.joint_sets[0].shared.as_ref().map(|s| s.count), Some(99));
    }

    #[test]
    fn a_guard_over_two_sizes_listed_under_one_is_checked_jointly() {
        // `w` is named only inside the guard torch listed under `h`. Before, the guard was
        // checked as `h`'s own, with `w` any integer: "UNSOUND" for a sound spec.
        let msg = "  - Not all values of h = L['x'].size()[2] in the specified range 32 <= h <= 1024 satisfy the generated guard L['x'].size()[2] * L['x'].size()[3] <= 65536.";
        let g = GuardSet::read(msg).unwrap();
        let sound = "h = Dim('h', min=32, max=1024)\nx_3 = Dim('x_3', min=2, max=64)\ndynamic_shapes = {'x': {2: h, 3: x_3}}\n";
        let r = verify_input(&g, &spec::read(sound).unwrap(), 5_000);
        assert_eq!(r.sound, Some(true), "{r:?}");
        let wide = "h = Dim('h', min=32, max=1024)\nx_3 = Dim('x_3', min=2, max=65)\ndynamic_shapes = {'x': {2: h, 3: x_3}}\n";
        let r = verify_input(&g, &spec::read(wide).unwrap(), 5_000);
        assert_eq!(r.sound, Some(false));
        let ce = r.joint[0].counterexample.as_ref().unwrap();
        assert!(
            ce["L['x'].size()[2]"] * ce["L['x'].size()[3]"] > 65536,
            "{ce:?}"
        );
        // Not covering `w` is undecided, not sound.
        let r = verify_input(
            &g,
            &spec::read("h = Dim('h', min=32, max=1024)\n").unwrap(),
            5_000,
        );
        assert_eq!(r.joint[0].sound, None);
    }

    #[test]
    fn a_dim_written_as_another_is_that_dim() {
        // `y_2 = h` beside `"x": {2: h}` (as diagnose prints one Dim shared by two sizes): the
        // root `h` stays a dimension of its own and the sizes are equal.
        let msg = "  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 1024 satisfy the generated guard Or(Eq(L['x'].size()[2], L['y'].size()[2]), Eq(L['y'].size()[2], 1)).";
        let g = GuardSet::read(msg).unwrap();
        let s = spec::read("h = Dim('h', min=2, max=1024)\ny_2 = h  # must always be equal\ndynamic_shapes = {'x': {2: h}, 'y': {2: y_2}}\n").unwrap();
        assert!(s.lookup("h", None).is_some(), "{s:?}");
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.sound, Some(true), "{r:?}");
    }

    #[test]
    fn a_size_the_others_define_keeps_a_maximal_line() {
        // Patch tokens added to a token input: `n == (w//16)*(h//16)`. The tokens are defined
        // by the image sizes; their maximal line is a `Dim.AUTO` with the relation (torch
        // derives it), never left out, and over the box of the image sizes its range is the
        // definition's: from 2*2 to 32*32.
        let msg = "L['x'].size()[2] >= 32\nL['x'].size()[3] >= 32\n((L['x'].size()[3] // 16)*(L['x'].size()[2] // 16)) == L['t'].size()[1]";
        let g = GuardSet::read(msg).unwrap();
        let s = spec::read("h = Dim('h', min=32, max=512)\nw = Dim('w', min=32, max=512)\nn = Dim('n', min=4, max=1024)\ndynamic_shapes = {'x': {2: h, 3: w}, 't': {1: n}}\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        let n = r
            .dims
            .iter()
            .find(|d| d.source.as_deref() == Some("L['t'].size()[1]"))
            .expect("the tokens are a size of the report");
        let line = n
            .maximal_spec
            .as_deref()
            .expect("a maximal line for the tokens");
        assert!(
            line.starts_with("n = Dim.AUTO(min=4, max=1024)  # n = "),
            "{line}"
        );
        // Brute force: every (h, w) of the box with n at the definition passes every guard,
        // and n one off it fails.
        let all: Vec<&Expr> = g
            .dims
            .iter()
            .flat_map(|(_, _, e)| e)
            .chain(g.joint.iter().map(|(_, e)| e))
            .collect();
        assert_eq!(all.len(), 3);
        for h in (32..=512).step_by(37) {
            for w in (32..=512).step_by(41) {
                let n = (h / 16) * (w / 16);
                let at = |k: i128| {
                    move |v: &str| match v {
                        "L['x'].size()[2]" => Some(h),
                        "L['x'].size()[3]" => Some(w),
                        "L['t'].size()[1]" => Some(k),
                        _ => None,
                    }
                };
                assert!(all.iter().all(|e| e.truth(&at(n)) == Ok(true)));
                assert!(!all.iter().all(|e| e.truth(&at(n + 1)) == Ok(true)));
            }
        }
    }

    #[test]
    fn a_size_the_dict_leaves_static_is_not_found_by_name() {
        // `{2: None, 3: h}`: x[2] is static (its traced value decides), although the message
        // names it `h`. Before, the name matched it to the spec's `h` (x[3]), tied the two
        // sizes, and only the diagonal was checked: "sound" with a Z3 certificate.
        let msg = "  - Not all values of h = L['x'].size()[2] in the specified range 32 <= h <= 1024 satisfy the generated guard L['x'].size()[2] * L['x'].size()[3] <= 65536.";
        let g = GuardSet::read(msg).unwrap();
        let s =
            spec::read("h = Dim('h', min=2, max=256)\ndynamic_shapes = {'x': {2: None, 3: h}}\n")
                .unwrap();
        assert!(covers_any(&g, &s));
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.sound, None, "{r:?}");
        assert_eq!(r.joint[0].sound, None);
        // Without a dict, names still match.
        let s = spec::read("h = Dim('h', min=32, max=64)\n").unwrap();
        assert_eq!(
            s.lookup("h", Some("L['x'].size()[2]")).map(|d| d.name),
            Some("h".to_string())
        );
    }

    #[test]
    fn a_relation_torch_states_is_checked() {
        // "must always be related ... by dy = dx + 1": two independent Dims break it.
        let msg = "  - The values of dy = L['y'].size()[0] must always be related to the values of dx = L['x'].size()[0] by dy = dx + 1.";
        let g = GuardSet::read(msg).unwrap();
        let free = spec::read("dx = Dim('dx', min=2, max=100)\ndy = Dim('dy', min=3, max=101)\ndynamic_shapes = {'x': {0: dx}, 'y': {0: dy}}\n").unwrap();
        let r = verify_input(&g, &free, 5_000);
        assert_eq!(r.sound, Some(false), "{r:?}");
        let ce = r.joint[0].counterexample.as_ref().unwrap();
        assert_ne!(ce["L['y'].size()[0]"], ce["L['x'].size()[0]"] + 1);
        let kept = spec::read("dx = Dim('dx', min=2, max=100)\ndy = dx + 1\ndynamic_shapes = {'x': {0: dx}, 'y': {0: dy}}\n").unwrap();
        assert_eq!(verify_input(&g, &kept, 5_000).sound, Some(true));
    }

    #[test]
    fn two_uses_of_one_auto_name_are_not_tied() {
        // `a = Dim.AUTO` used twice is two independent sizes in torch (AUTO is a hint, not a
        // Dim object); one `Dim` used twice is one size. Before, both were tied by name, and a
        // guard equating them was called sound over the diagonal only.
        let g = GuardSet::read("L['x'].size()[0] == L['x'].size()[1]\n").unwrap();
        let auto = spec::read("a = Dim.AUTO\ndynamic_shapes = {'x': {0: a, 1: a}}\n").unwrap();
        let r = verify_input(&g, &auto, 5_000);
        assert_eq!(r.joint[0].sound, Some(false), "{r:?}");
        let ce = r.joint[0].counterexample.as_ref().unwrap();
        assert_ne!(ce["L['x'].size()[0]"], ce["L['x'].size()[1]"]);
        let one = spec::read("a = Dim('a', min=2, max=64)\ndynamic_shapes = {'x': {0: a, 1: a}}\n")
            .unwrap();
        assert_eq!(verify_input(&g, &one, 5_000).joint[0].sound, Some(true));
    }

    #[test]
    fn a_name_bound_twice_is_its_last_binding() {
        // Python keeps the last binding: `h` admits 2..5000, and 101 fails `h <= 100`.
        let g = GuardSet::read("L['x'].size()[2] <= 100\n").unwrap();
        let s = spec::read("h = Dim('h', min=2, max=50)\nh = Dim('h', min=2, max=5000)\ndynamic_shapes = {'x': {2: h}}\n").unwrap();
        assert_eq!(s.roots.iter().filter(|r| r.name == "h").count(), 1);
        assert_eq!(verify_input(&g, &s, 5_000).sound, Some(false));
    }

    #[test]
    fn sizes_of_one_dim_derived_from_a_used_root_are_tied_through_it() {
        // x1 = x2 = 2*_r and x0 = _r: x1 + x2 = 4*x0 always. Before, x2 was tied to x1, which was
        // itself tied to x0: x1 came back free and the spec was called UNSOUND.
        let g =
            GuardSet::read("L['x'].size()[1] + L['x'].size()[2] <= 4*L['x'].size()[0]\n").unwrap();
        let s = spec::read("_r = Dim('_r', min=2, max=10)\nh = 2*_r\ndynamic_shapes = {'x': {0: _r, 1: h, 2: h}}\n").unwrap();
        let r = verify_input(&g, &s, 5_000);
        assert_eq!(r.joint[0].sound, Some(true), "{r:?}");
        // One less is unsound, and the counterexample holds every size, consistent with the ties.
        let g = GuardSet::read("L['x'].size()[1] + L['x'].size()[2] <= 4*L['x'].size()[0] - 1\n")
            .unwrap();
        let r = verify_input(&g, &s, 5_000);
        let ce = r.joint[0].counterexample.as_ref().unwrap();
        let (x0, x1, x2) = (
            ce["L['x'].size()[0]"],
            ce["L['x'].size()[1]"],
            ce["L['x'].size()[2]"],
        );
        assert_eq!((x1, x2), (2 * x0, 2 * x0), "{ce:?}");
    }
}
