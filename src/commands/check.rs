//! `dimguard check`: which sizes an exported program really accepts.
//!
//! For each dynamic dimension of each user input: the sizes `range_constraints` *claim* (for a
//! derived size such as `8*s24`, the expression's values over its root's range), and the claimed
//! sizes that pass every guard of `guards_code` — exactly, by the solver. Guards linking several
//! inputs are solved jointly (`joint/`, `linked/`): the report then carries the exact set of
//! tuples that pass (`joint`), each size's `accepted` values are those that pass with *every*
//! value of the others (the contract), `with_some_partner` those that pass with some, and the
//! corrected spec is the largest sound box. Every guard is accounted for (`fate`): solved, proved by Z3, or
//! undecided with its reason.

use dimguard_graph::graph::{symbol_ranges, ProgramGraph};
use dimguard_graph::program::{Error, Program, Size};
use dimguard_solver::analyze::{
    analyze, claimed_answer, group_line, Analysis, Asked, Claimed as ClaimedSizes, GroupAnswer,
    GroupLine, MemberAnswer, Partners, Problem,
};
use dimguard_solver::engine::Limits;
use dimguard_solver::joint;
use dimguard_solver::linked::Budget;
use dimguard_solver::parse_guard;
use dimguard_solver::python::{self, py_name};
use dimguard_solver::report::{
    CheckDim, CheckReport, Checked, Claimed, Decided, Feasible, GuardFate, GuardUse, JointReport,
    NeededBy, ProgramInput, RuntimeCheck, RuntimeKind, ShapeEntry, SizeRange, SymbolRange,
    Undecided,
};
use dimguard_solver::SIZE_MAX;
use dimguard_solver::{CmpOp, DimSet, Expr};
use std::collections::BTreeMap;

fn claimed_set(e: &Expr, ranges: &dimguard_graph::graph::SymbolRanges) -> Option<DimSet> {
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
/// use dimguard::commands::check::check;
/// use dimguard::graph::load;
///
/// let p = load("tests/data/pt2/unetish_exact.model.json".as_ref()).unwrap();
/// let r = check(&p, false).unwrap();
/// let h = &r.dims[0]; // x.size()[2] = 4*s16 over s16 in 50..100
/// assert_eq!((h.input.as_str(), h.index, h.expr.as_str()), ("x", 2, "4*s16"));
/// assert_eq!(h.answer.accepted.as_ref().unwrap().count, 51);
/// assert_eq!(h.answer.suggestions[0].code, "_x_2 = Dim('_x_2', min=50, max=100)\nx_2 = 4*_x_2");
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
    check_graph(p, &ProgramGraph::build(p)?, with_sizes, prover)
}

/// [`check_with`] on the program's graph already built (`check --dot` draws the same graph).
///
/// One shape, as every command: the program's conditions read (`conditions`: its guards
/// parsed, its dynamic input sizes, the graph's run-time asserts and implied limits), the
/// problem built over them (`problem_of`), the analysis stage run ([`analyze`]), each size's
/// entry answered from the stage's sets (`entries`), and the report assembled (`report`).
pub fn check_graph(
    p: &Program,
    pg: &ProgramGraph,
    with_sizes: bool,
    prover: Option<BoxProver>,
) -> Result<CheckReport, Error> {
    let read = conditions(p, pg, &symbol_ranges(p))?;
    let problem = problem_of(&read.ins, &read.parsed.guards);
    let budget = Budget {
        limits: Limits::default(),
        ..Default::default()
    };
    let analysis = analyze(&problem, &budget, prover, &|_| true);
    let entries = entries(read, &problem, &analysis);
    report(p, pg, entries, with_sizes)
}

/// What `check` says per size and per condition, before the report: every entry, the guards'
/// and run-time checks' fates, the joint sets and the corrected spec.
struct Entries {
    /// The conditions read, their fates filled in.
    read: Conditions,
    /// Each run-time check's index in the guards -> its entry in `read.runtime`.
    rt_of: BTreeMap<usize, usize>,
    dims: Vec<CheckDim>,
    joints: Vec<JointReport>,
    dynamic_shapes: String,
}

/// The entries from the stage's answer: each guard's and run-time check's fate, the joint
/// sets, then each size's entry ([`size_answer`]) and its line of the corrected spec.
fn entries(mut read: Conditions, problem: &Problem, analysis: &Analysis) -> Entries {
    let rt_of: BTreeMap<usize, usize> = runtime_slots(&read.runtime, read.n_code);
    for (&o, (fate, reason)) in &analysis.fates {
        if let Some(&u) = read.parsed.use_of.get(o) {
            read.parsed.uses[u].fate = *fate;
            read.parsed.uses[u].reason = reason.clone();
        } else if let Some(&r) = rt_of.get(&o) {
            read.runtime[r].fate = *fate;
            read.runtime[r].reason = reason.clone();
        }
    }
    let mut joints: Vec<JointReport> = analysis
        .groups
        .iter()
        .filter_map(|g| g.linked.as_ref().map(|l| l.report.clone()))
        .collect();
    // What the stage knows about each input size, read once (parallel to `ins`).
    let ins = &read.ins;
    let answers: Vec<_> = ins.iter().map(|i| analysis.member(&i.source)).collect();
    let never = read.parsed.never.as_deref();
    let sets = Sets::read(ins, &answers, &read.forced, never, &mut joints);
    let cx = Cx {
        ins,
        answers: &answers,
        alias: &analysis.aliases(),
        problem,
        guards: &read.parsed.guards,
        sets: &sets,
    };
    let mut spec = Spec::default();
    let dims: Vec<CheckDim> = (0..ins.len())
        .map(|k| size_answer(&cx, k, &mut spec))
        .collect();
    Entries {
        read,
        rt_of,
        dims,
        joints,
        dynamic_shapes: spec.finish(),
    }
}

/// The report: the entries, the intermediate sizes (when asked for), the propagation's
/// findings on the accepted inputs, what each run-time check rejects, the program's inputs and
/// symbols.
fn report(
    p: &Program,
    pg: &ProgramGraph,
    e: Entries,
    with_sizes: bool,
) -> Result<CheckReport, Error> {
    let Entries {
        read,
        rt_of,
        dims,
        joints,
        dynamic_shapes,
    } = e;
    let Conditions {
        parsed: Parsed { guards, uses, .. },
        ins,
        mut runtime,
        ..
    } = read;
    let (hints, ins_forms) = traced_forms(&ins);
    let sizes = if with_sizes {
        let exprs: Vec<(Expr, String)> = ins
            .iter()
            .map(|i| (i.expr.clone(), i.source.clone()))
            .collect();
        size_table(pg, &exprs, &dims, &hints)
    } else {
        vec![]
    };
    let propagation = on_accepted(pg.report.clone(), &ins_points(&ins_forms, &dims, &joints));
    let claimed_of: BTreeMap<String, DimSet> = ins
        .iter()
        .filter_map(|i| Some((i.source.clone(), i.claimed.clone()?)))
        .collect();
    for (&g, &r) in &rt_of {
        rejected_by(&mut runtime[r], &guards[g], &claimed_of, &Limits::default());
    }
    Ok(CheckReport {
        dims,
        guards: uses,
        propagation,
        sizes,
        dynamic_shapes,
        torch_version: p.torch_version.clone(),
        joint: joints,
        runtime,
        inputs: program_inputs(p)?,
        symbols: symbols(p),
    })
}

/// Every condition the program checks, read from it without solving anything: its guards
/// parsed, its dynamic input sizes, the graph's run-time checks (their conditions appended to
/// the guards, after the first `n_code`) and the sizes an unreadable one leaves undecided.
struct Conditions {
    parsed: Parsed,
    ins: Vec<In>,
    runtime: Vec<RuntimeCheck>,
    forced: BTreeMap<String, Undecided>,
    n_code: usize,
}

fn conditions(
    p: &Program,
    pg: &ProgramGraph,
    ranges: &dimguard_graph::graph::SymbolRanges,
) -> Result<Conditions, Error> {
    let mut parsed = parse_guards(&p.guards_code);
    let ins = input_sizes(p, ranges)?;
    // Run-time asserts and implied limits: conditions over the input sizes, solved with the
    // guards (for each, its index in `guards` -> its entry in `runtime`).
    let mut to_source: BTreeMap<String, Expr> = BTreeMap::new();
    for i in &ins {
        if let Some((sym, e)) = source_of_symbol(&i.expr, &i.source) {
            to_source.entry(sym).or_insert(e);
        }
    }
    let n_code = parsed.guards.len();
    let found = dimguard_graph::runtime::find(p, pg, ranges);
    let (runtime, forced) =
        runtime_checks(&found, &to_source, &mut parsed.guards, &mut parsed.never);
    Ok(Conditions {
        parsed,
        ins,
        runtime,
        forced,
        n_code,
    })
}

/// What `check --at` evaluates ([`dimguard_graph::verdict::Facts`]: the program's inputs, symbol
/// ranges, guards and run-time checks), read from the program without solving any set: the
/// verdict at a shape costs milliseconds, not the whole report's time.
///
/// ```
/// use dimguard::commands::check::{check, facts};
/// use dimguard::graph::{load, verdict, ProgramGraph};
/// use std::collections::BTreeMap;
///
/// let p = load("tests/data/pt2/unetish_exact.model.json".as_ref()).unwrap();
/// let f = facts(&p, &ProgramGraph::build(&p).unwrap()).unwrap();
/// let report = check(&p, false).unwrap();
/// for h in [196, 200, 201, 400] {
///     let shapes = BTreeMap::from([("x".to_string(), vec![1, 3, h, h])]);
///     let full = verdict(&(&report).into(), &shapes);
///     assert_eq!(verdict(&f, &shapes).accepted, full.accepted);
/// }
/// ```
pub fn facts(p: &Program, pg: &ProgramGraph) -> Result<dimguard_graph::verdict::Facts, Error> {
    let c = conditions(p, pg, &symbol_ranges(p))?;
    Ok(dimguard_graph::verdict::Facts {
        inputs: program_inputs(p)?,
        symbols: symbols(p),
        guards: c.parsed.uses,
        runtime: c.runtime,
    })
}

/// The program's symbol ranges as the report lists them.
fn symbols(p: &Program) -> Vec<SymbolRange> {
    p.range_constraints
        .iter()
        .map(|(k, r)| SymbolRange {
            symbol: k.clone(),
            min: r.min_val.map_or(0, i128::from),
            max: r.max_val.map(i128::from),
        })
        .collect()
}

/// A dynamic dimension of a user input: where it is, its symbolic size and what the program
/// claims for it.
struct In {
    input: String,
    index: usize,
    /// `L['x'].size()[2]`: the size's variable in the guards.
    source: String,
    expr: Expr,
    claimed: Option<DimSet>,
    /// The traced size.
    hint: Option<i128>,
}

impl In {
    /// `x_2`: the size's name in reports and specs.
    fn name(&self) -> String {
        format!("{}_{}", self.input, self.index)
    }
}

/// The program's guards parsed, each with its entry in the guard accounting.
struct Parsed {
    guards: Vec<Expr>,
    uses: Vec<GuardUse>,
    /// For each parsed guard, its entry in `uses`.
    use_of: Vec<usize>,
    /// A guard without sizes that is false: nothing passes.
    never: Option<String>,
}

/// Parses `guards_code`: an unparsable guard is accounted for (`Unparsed`, with the error),
/// never dropped; a guard over no size is decided at once.
fn parse_guards(codes: &[String]) -> Parsed {
    let mut out = Parsed {
        guards: Vec::new(),
        uses: Vec::new(),
        use_of: Vec::new(),
        never: None,
    };
    for text in codes {
        match parse_guard(text) {
            Ok(g) => {
                let mut u = GuardUse {
                    guard: text.clone(),
                    sizes: g.atoms().iter().map(|a| a.to_string()).collect(),
                    error: None,
                    fate: GuardFate::Undecided,
                    reason: Some("not reached".into()),
                };
                if g.atoms().is_empty() {
                    let holds = matches!(
                        g.eval(&|_| None),
                        Ok(dimguard_solver::expr::Value::Bool(true))
                    );
                    u.fate = GuardFate::Periodic;
                    u.reason = None;
                    if !holds {
                        out.never = Some(format!("the guard `{text}` is false for every size"));
                    }
                }
                out.use_of.push(out.uses.len());
                out.uses.push(u);
                out.guards.push(g);
            }
            Err(e) => out.uses.push(GuardUse {
                guard: text.clone(),
                sizes: vec![],
                error: Some(e.to_string()),
                fate: GuardFate::Unparsed,
                reason: None,
            }),
        }
    }
    out
}

/// Every symbolic size of every user input, with its claimed set.
fn input_sizes(
    p: &Program,
    ranges: &dimguard_graph::graph::SymbolRanges,
) -> Result<Vec<In>, Error> {
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
                    claimed: claimed_set(e, ranges),
                    expr: e.clone(),
                    hint: *hint,
                });
            }
        }
    }
    Ok(ins)
}

/// The analysis stage's problem: every size with its claimed range, every guard, and two kinds
/// of facts as guards too: claimed progressions (the program only claims those sizes), and
/// sizes the program gives one symbolic expression, which are one size (torch checks their
/// equality on every call; the joint solver then solves them as one instead of asking each to
/// pass for every value of the other).
fn problem_of(ins: &[In], guards: &[Expr]) -> Problem {
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
    for (k, i) in ins.iter().enumerate() {
        if let Some(first) = ins[..k].iter().find(|o| o.expr == i.expr) {
            all.push(Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::sym(&i.source)),
                Box::new(Expr::sym(&first.source)),
            ));
        }
    }
    Problem {
        sizes: ins
            .iter()
            .map(|i| {
                let name = i.name();
                dimguard_solver::analyze::Size {
                    var: i.source.clone(),
                    label: label(&name),
                    name,
                    range: i.claimed.as_ref().and_then(|c| Some((c.min()?, c.max()?))),
                    count: Some(i.claimed.as_ref().map_or(0, DimSet::count)),
                    example: i.hint,
                }
            })
            .collect(),
        guards: all,
        extra_ranges: BTreeMap::new(),
        parts: true,
        by_guard: false,
    }
}

/// Each size's accepted set and undecided part, as the stage solved them, after the program's
/// own overrides.
struct Sets {
    accepted: BTreeMap<String, Decided<DimSet>>,
    unsure: BTreeMap<String, (DimSet, Undecided)>,
}

impl Sets {
    /// The stage's sets, then: a size a condition the graph cannot decide depends on
    /// (`forced`) has what passes everything else undecided, never accepted; a guard false for
    /// every size (`never`) leaves nothing accepted, in the sizes and the joint sets.
    fn read(
        ins: &[In],
        answers: &[Option<(&GroupAnswer, MemberAnswer<'_>)>],
        forced: &BTreeMap<String, Undecided>,
        never: Option<&str>,
        joints: &mut [JointReport],
    ) -> Sets {
        let mut accepted: BTreeMap<String, Decided<DimSet>> = BTreeMap::new();
        let mut unsure: BTreeMap<String, (DimSet, Undecided)> = BTreeMap::new();
        for (i, found) in ins.iter().zip(answers) {
            if let Some((_, m)) = found {
                accepted.insert(i.source.clone(), m.accepted.clone());
                if let Some(u) = &m.unsure {
                    unsure.insert(i.source.clone(), u.clone());
                }
            }
        }
        for (source, why) in forced {
            if let Some(Ok(a)) = accepted.get(source).cloned() {
                let u = match unsure.get(source) {
                    Some((u, _)) => a.union(u).unwrap_or(a),
                    None => a,
                };
                unsure.insert(source.clone(), (u, why.clone()));
                accepted.insert(source.clone(), Ok(DimSet::empty()));
            }
        }
        if let Some(why) = never {
            for (name, a) in accepted.iter_mut() {
                *a = Ok(DimSet::empty());
                unsure.remove(name);
            }
            for j in joints.iter_mut() {
                j.accepted = 0;
                j.summary = why.to_string();
            }
        }
        Sets { accepted, unsure }
    }
}

/// Everything a size's answer reads.
struct Cx<'a> {
    ins: &'a [In],
    /// The stage's answer for each of `ins`.
    answers: &'a [Option<(&'a GroupAnswer, MemberAnswer<'a>)>],
    /// Sizes equal to (or derived from) another's: `source -> (root, coef, offset)`.
    alias: &'a BTreeMap<String, (String, i128, i128)>,
    problem: &'a Problem,
    guards: &'a [Expr],
    sets: &'a Sets,
}

/// The corrected spec as it is written: lines, then each input's dict entries (the one
/// paste-block builder, [`python::SpecBlock`]).
#[derive(Default)]
struct Spec {
    block: python::SpecBlock,
}

impl Spec {
    /// A line defining `py`, and the size's dict entry naming it.
    fn line(&mut self, i: &In, code: &str, py: String) {
        self.block.code(code);
        self.entry(i, py);
    }

    /// The size's dict entry (`{2: h}` under its input).
    fn entry(&mut self, i: &In, value: String) {
        self.block.entry(&i.input, i.index, value, None);
    }

    fn finish(self) -> String {
        self.block.finish()
    }
}

/// The `k`th size's entry: what its program claims, its answer over those claimed sizes
/// (built in the analysis stage, [`claimed_answer`]: the accepted set, its sides when linked,
/// what is undecided and why, ranked suggestions, its tie to a partner), and its line of the
/// corrected spec (written into `spec`).
fn size_answer(cx: &Cx, k: usize, spec: &mut Spec) -> CheckDim {
    let (i, found) = (&cx.ins[k], &cx.answers[k]);
    let claimed = i.claimed.clone();
    let acc = match (&claimed, cx.sets.accepted.get(&i.source)) {
        // Past the deadline a set operation is an error: then no answer, never the
        // unclipped set (it would hold sizes the spec never claimed).
        (Some(c), Some(Ok(a))) => a.intersect(c).map_err(Undecided::Exact),
        (None, _) => Err(Undecided::NotProgression),
        (_, Some(Err(e))) => Err(e.clone()),
        (_, None) => Err(Undecided::NotSolved),
    };
    let m = found.as_ref().map(|(_, m)| m);
    let group = found.as_ref().map(|(g, _)| *g);
    let label = |src: &str| {
        cx.ins
            .iter()
            .find(|x| x.source == src)
            .map_or_else(|| src.to_string(), |x| format!("{}[{}]", x.input, x.index))
    };
    let code = |v: &str| cx.problem.name_of(v);
    let name = i.name();
    let is_size = |v: &str| cx.ins.iter().any(|x| x.source == v);
    let asked = Asked {
        label: &name,
        name: &label,
        code: &code,
        is_size: &is_size,
        own: claimed.as_ref(),
        accepted: None,
        example: i.hint,
        partners: Partners::Every,
        spec_ties: false,
    };
    // A size the others define (`tokens_1 == (image_2//16)*(image_3//16)`): its relation.
    let relation = group.and_then(|g| g.defined_relation(&i.source));
    let own: Vec<&Expr> = cx
        .guards
        .iter()
        .filter(|g| g.atoms().iter().all(|a| **a == *i.source))
        .collect();
    let (answer, rejected_examples) = claimed_answer(
        group,
        m,
        &asked,
        &ClaimedSizes {
            accepted: &acc,
            unsure: cx.sets.unsure.get(&i.source),
            guards: &own,
            var: &i.source,
            relation: relation.as_deref(),
        },
    );
    let d = CheckDim {
        kind: Checked {
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
            source: i.source.clone(),
            rejected_examples,
            same_as: cx
                .alias
                .get(&i.source)
                .filter(|(root, k, off)| *root != i.source && *k == 1 && *off == 0)
                .and_then(|(root, _, _)| cx.ins.iter().find(|x| &x.source == root))
                .map(|x| (x.input.clone(), x.index)),
            example: i.hint,
        },
        answer,
    };
    // Nothing proven to pass, with or without a partner, and values undecided (a budget cut
    // the answer short): the claimed range is kept as undecided, never a side of a partial
    // joint answer.
    let nothing_proven = d.answer.undecided.is_some()
        && d.answer.accepted.as_ref().is_none_or(|a| a.count == 0)
        && d.answer.sides.with_some_partner.is_none()
        && dimguard_solver::budget::exhausted().is_some();
    match &acc {
        Ok(_) if !nothing_proven => spec_line(cx, i, &d, m, group, spec),
        _ => {
            let py = py_name(&i.name());
            let own = cx
                .alias
                .get(&i.source)
                .is_none_or(|(root, _, _)| *root == i.source);
            if let Some(line) =
                kept_undecided(&py, claimed.as_ref(), &d, relation.clone()).filter(|_| own)
            {
                spec.line(i, &line, py);
            }
        }
    }
    d
}

/// The size's line of the corrected spec: a linked size's line under its group's one spec
/// ([`group_line`]: a size equal to (or derived from) another input's reuses that `Dim`, a
/// defined size is left for torch to derive, else its side of the group's choice, so the
/// members' lines are sound together); else the size's best suggestion; a size without one
/// keeps its claimed `Dim` as undecided (never dropped).
fn spec_line(
    cx: &Cx,
    i: &In,
    d: &CheckDim,
    m: Option<&MemberAnswer<'_>>,
    group: Option<&GroupAnswer>,
    spec: &mut Spec,
) {
    let claimed = &i.claimed;
    let py = py_name(&i.name());
    let code = |v: &str| cx.problem.name_of(v);
    let range = claimed.as_ref().and_then(|c| c.min().zip(c.max()));
    let line = group
        .zip(m)
        .and_then(|(g, m)| group_line(g, m, &i.name(), &code, range));
    let (side, from_partner) = match line {
        Some(GroupLine::Derived { root, coef, offset }) => {
            let root_name = cx
                .ins
                .iter()
                .find(|x| x.source == root)
                .map(|x| py_name(&x.name()))
                .unwrap_or_else(|| py_name(&root));
            spec.entry(i, python::derived(&root_name, coef, offset));
            return;
        }
        Some(GroupLine::Defined(line)) => return spec.line(i, &line, py),
        Some(GroupLine::Side { side, from_partner }) => (Some(side), from_partner),
        None => (None, false),
    };
    // The best suggestion that holds the traced size (torch refuses a spec that excludes its
    // example inputs), else the best.
    let holds = |s: &&dimguard_solver::report::Suggestion| {
        i.hint.is_some_and(|x| {
            (s.lo..=s.hi).contains(&x) && (x - s.residue).rem_euclid(s.modulus.max(1)) == 0
        })
    };
    let best = d.answer.suggestions.iter().find(holds);
    if let Some(s) = side.as_ref().or(best).or(d.answer.suggestions.first()) {
        // A plain range over which a guard of this size alone holds at every size but value
        // ranges cannot show it: torch refuses a `Dim` there ("Not all values ... satisfy the
        // generated guard"), and takes the same range as `Dim.DYNAMIC(min=.., max=..)`. The
        // sizes the spec writes from this one (`depth_2 = rgb_2`) are this size to torch:
        // their own guards are read over its range too.
        let hi = (s.hi < dimguard_solver::SIZE_MAX).then_some(s.hi);
        let undecidable = !from_partner && s.modulus == 1 && s.count > 1 && {
            let ranges = BTreeMap::from([(
                i.source.as_str(),
                (s.lo, hi.unwrap_or(dimguard_solver::SIZE_MAX)),
            )]);
            let written_from_me = written_from(
                &i.source,
                cx.ins.iter().map(|x| x.source.as_str()).zip(cx.answers),
                cx.alias,
            );
            cx.guards
                .iter()
                .any(|g| unshown_over(g, &i.source, &written_from_me, &ranges))
        };
        let code = if undecidable {
            format!("{py} = {}", python::dynamic_hint(Some(s.lo), hi))
        } else {
            s.code.clone()
        };
        spec.line(i, &code, py);
    } else if let Some(line) = kept_undecided(&py, claimed.as_ref(), d, None) {
        spec.line(i, &line, py);
    }
}

/// The traced value of each input symbol (from `k*s + o` with its hint), and each size's
/// affine form `(source, symbol, k, o)`.
#[allow(clippy::type_complexity)]
fn traced_forms(ins: &[In]) -> (BTreeMap<String, i128>, Vec<(String, String, i128, i128)>) {
    let hints: BTreeMap<String, i128> = ins
        .iter()
        .filter_map(|i| {
            let (coefs, c0) = i.expr.affine()?;
            let (s, k) = coefs.iter().next().filter(|_| coefs.len() == 1)?;
            let v = (i.hint? - c0.numer()) / k.numer();
            Some((s.clone(), v))
        })
        .collect();
    let forms = ins
        .iter()
        .filter_map(|i| {
            let (coefs, c0) = i.expr.affine()?;
            let (s, k) = coefs.iter().next().filter(|_| coefs.len() == 1)?;
            (k.is_integer() && c0.is_integer())
                .then(|| (i.source.clone(), s.clone(), *k.numer(), *c0.numer()))
        })
        .collect();
    (hints, forms)
}

/// Every tensor input as the program takes it: fixed sizes and symbolic expressions.
fn program_inputs(p: &Program) -> Result<Vec<ProgramInput>, Error> {
    let mut out = Vec::new();
    for input in p.user_inputs() {
        let Some(sizes) = p.sizes(&input)? else {
            continue;
        };
        out.push(ProgramInput {
            sources: (0..sizes.len())
                .map(|k| python::input_source(&input, k))
                .collect(),
            shape: sizes
                .iter()
                .map(|s| match s {
                    Size::Int(n) => match i64::try_from(*n) {
                        Ok(n) => ShapeEntry::Fixed(n),
                        Err(_) => ShapeEntry::Symbolic(n.to_string()),
                    },
                    Size::Expr(e, _) => ShapeEntry::Symbolic(e.to_string()),
                })
                .collect(),
            input,
        });
    }
    Ok(out)
}

/// The symbol of an input size `k*s + o` and `s` written over the size's source
/// (`(source - o) // k`; the claimed sizes are exactly that progression).
fn source_of_symbol(e: &Expr, source: &str) -> Option<(String, Expr)> {
    let (coefs, c0) = e.affine()?;
    let (s, k) = coefs.iter().next().filter(|_| coefs.len() == 1)?;
    if !(k.is_integer() && c0.is_integer()) || *k.numer() <= 0 {
        return None;
    }
    let (k, o) = (*k.numer(), *c0.numer());
    let src = Expr::sym(source);
    let e = match (k, o) {
        (1, 0) => src,
        _ => Expr::FloorDiv(Box::new(src + Expr::int(-o)), Box::new(Expr::int(k))),
    };
    Some((s.to_string(), e))
}

/// The run-time conditions as report entries; each readable one over input sizes is appended
/// to `guards` (solved with them). Returns the entries and, per input size that an unreadable
/// condition depends on, why its sizes are undecided. A condition on no size that is false
/// makes every size fail (`never`).
fn runtime_checks(
    found: &[dimguard_graph::runtime::Found],
    to_source: &BTreeMap<String, Expr>,
    guards: &mut Vec<Expr>,
    never: &mut Option<String>,
) -> (Vec<RuntimeCheck>, BTreeMap<String, Undecided>) {
    let mut out = Vec::new();
    let mut forced: BTreeMap<String, Undecided> = BTreeMap::new();
    let sources_of = |syms: &mut dyn Iterator<Item = &String>| -> Vec<String> {
        let mut v: Vec<String> = syms
            .filter_map(|s| to_source.get(s))
            .flat_map(|e| e.atoms().into_iter().map(|a| a.to_string()))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    for f in found {
        let mut r = RuntimeCheck {
            kind: f.kind,
            node: f.node.clone(),
            target: f.target.clone(),
            condition: String::new(),
            on_inputs: None,
            sizes: sources_of(&mut f.symbols.iter()),
            fate: GuardFate::Undecided,
            reason: Some("not reached".into()),
            rejects: None,
            rejected_examples: vec![],
            stack_trace: f.stack_trace.clone(),
            needed_by: f.needed_by.as_ref().map(|n| NeededBy {
                node: n.node.clone(),
                target: n.target.clone(),
                stack_trace: n.stack_trace.clone(),
            }),
        };
        let undecided =
            |r: &mut RuntimeCheck, why: Undecided, forced: &mut BTreeMap<String, Undecided>| {
                for s in &r.sizes {
                    forced
                        .entry(s.clone())
                        .or_insert_with(|| Undecided::Runtime {
                            kind: r.kind,
                            node: r.node.clone(),
                            why: Box::new(why.clone()),
                        });
                }
                r.reason = Some(why.to_string());
            };
        match &f.condition {
            Err(why) => {
                r.condition = match f.kind {
                    RuntimeKind::ImpliedLimit => "its index values lie inside the table (not read)",
                    RuntimeKind::RuntimeAssert => "its condition (not read)",
                }
                .into();
                undecided(&mut r, why.clone(), &mut forced);
            }
            Ok(c) => {
                r.condition = c.to_string();
                let strange: Vec<String> = c
                    .atoms()
                    .iter()
                    .map(|a| a.to_string())
                    .filter(|a| !to_source.contains_key(a))
                    .collect();
                if !strange.is_empty() {
                    undecided(&mut r, Undecided::DataValues(strange), &mut forced);
                } else {
                    let mut e = c.clone();
                    for (s, with) in to_source {
                        e = e.substitute(s, with);
                    }
                    r.on_inputs = Some(e.to_string());
                    if e.atoms().is_empty() {
                        r.fate = GuardFate::Periodic;
                        r.reason = None;
                        let holds = matches!(
                            e.eval(&|_| None),
                            Ok(dimguard_solver::expr::Value::Bool(true))
                        );
                        if !holds {
                            *never = Some(format!(
                                "the run-time check `{}` at `{}` is false for every size",
                                r.condition, r.node
                            ));
                        }
                    }
                    guards.push(e);
                }
            }
        }
        out.push(r);
    }
    (out, forced)
}

/// For each entry of `runtime` appended to the guards (in order from `first`): its index in
/// the guards -> its index in `runtime`.
fn runtime_slots(runtime: &[RuntimeCheck], first: usize) -> BTreeMap<usize, usize> {
    runtime
        .iter()
        .enumerate()
        .filter(|(_, r)| r.on_inputs.is_some())
        .enumerate()
        .map(|(k, (r, _))| (first + k, r))
        .collect()
}

/// For a condition on one size: how many claimed sizes it rejects, and a few of them.
fn rejected_by(
    r: &mut RuntimeCheck,
    e: &Expr,
    claimed: &BTreeMap<String, DimSet>,
    limits: &Limits,
) {
    let [size] = &r.sizes[..] else { return };
    let Some(domain) = claimed.get(size) else {
        return;
    };
    if let Some(set) = dimguard_solver::engine::solve(e, size, domain, limits).set() {
        if let Ok(no) = domain.difference(set) {
            r.rejects = Some(no.count());
            r.rejected_examples = no.iter().take(5).collect();
        }
    }
}

/// Accepted inputs at which shape disagreements are re-tested.
const EQUAL_POINTS: usize = 512;

/// Up to [`EQUAL_POINTS`] accepted inputs as symbol values (`forms`: source, symbol, `k`, `o`
/// with `source = k*symbol + o`), and whether they are all of them.
fn ins_points(
    forms: &[(String, String, i128, i128)],
    dims: &[CheckDim],
    joints: &[JointReport],
) -> (Vec<BTreeMap<String, i128>>, bool) {
    // Per independent part (a linked group, or one size): its accepted tuples over sources.
    let mut parts: Vec<(Vec<String>, Vec<Vec<i128>>, bool)> = Vec::new();
    for j in joints {
        let all = j.accepted as usize <= EQUAL_POINTS && j.undecided.is_none();
        let tuples = j_examples(j);
        parts.push((j.sources.clone(), tuples, all));
    }
    for d in dims {
        if joints.iter().any(|j| j.sources.contains(&d.source)) {
            continue;
        }
        let Some(a) = &d.answer.accepted else {
            continue;
        };
        let Ok(set) = DimSet::from_segments(a.segments.clone()) else {
            continue;
        };
        let all = set.count() as usize <= EQUAL_POINTS && d.answer.undecided.is_none();
        let vals: Vec<Vec<i128>> = set.iter().take(EQUAL_POINTS).map(|x| vec![x]).collect();
        parts.push((vec![d.source.clone()], vals, all));
    }
    if parts.iter().any(|(_, v, _)| v.is_empty()) {
        return (vec![], false);
    }
    let combos: u128 = parts
        .iter()
        .fold(1u128, |a, (_, v, _)| a.saturating_mul(v.len() as u128));
    let exhaustive = parts.iter().all(|(_, _, all)| *all) && combos <= EQUAL_POINTS as u128;
    let n = if exhaustive {
        combos as usize
    } else {
        EQUAL_POINTS
    };
    let mut points = Vec::new();
    for k in 0..n {
        let mut point = BTreeMap::new();
        let mut rest = k;
        for (sources, tuples, _) in &parts {
            let t = if exhaustive {
                let t = &tuples[rest % tuples.len()];
                rest /= tuples.len();
                t
            } else {
                &tuples[(k * 7919) % tuples.len()]
            };
            for (src, v) in sources.iter().zip(t) {
                if let Some((_, sym, a, b)) = forms.iter().find(|f| &f.0 == src) {
                    if (v - b) % a == 0 {
                        point.insert(sym.clone(), (v - b) / a);
                    }
                }
            }
        }
        points.push(point);
    }
    (points, exhaustive)
}

/// A joint report's accepted tuples, up to [`EQUAL_POINTS`] (from its boxes).
fn j_examples(j: &JointReport) -> Vec<Vec<i128>> {
    let sides: Vec<Vec<DimSet>> = j
        .boxes
        .iter()
        .map(|b| {
            b.iter()
                .map(|f| DimSet::from_segments(f.segments.clone()).unwrap_or_default())
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    for b in sides {
        let t = dimguard_solver::linked::Tree::full(&b).examples(EQUAL_POINTS - out.len());
        out.extend(t);
        if out.len() >= EQUAL_POINTS {
            break;
        }
    }
    out
}

/// Re-tests each shape disagreement on accepted inputs: one that holds only at inputs the
/// guards reject is moved to `equal_on_accepted` (saying how many inputs were evaluated); a
/// real one keeps an accepted witness when one is found.
fn on_accepted(
    mut p: dimguard_solver::report::Propagation,
    (points, exhaustive): &(Vec<BTreeMap<String, i128>>, bool),
) -> dimguard_solver::report::Propagation {
    if points.is_empty() {
        return p;
    }
    let parse = |v: &[String]| -> Option<Vec<Expr>> {
        v.iter()
            .map(|t| dimguard_solver::parse_expr(t).ok())
            .collect()
    };
    let mut kept = Vec::new();
    for d in std::mem::take(&mut p.disagreements) {
        let (Some(rec), Some(comp)) = (parse(&d.recorded), parse(&d.computed)) else {
            kept.push(d);
            continue;
        };
        if rec.len() != comp.len() {
            kept.push(d);
            continue;
        }
        let differs_at = |point: &BTreeMap<String, i128>| {
            let env = |n: &str| point.get(n).copied();
            rec.iter()
                .zip(&comp)
                .any(|(a, b)| match (a.eval(&env), b.eval(&env)) {
                    (Ok(x), Ok(y)) => x != y,
                    _ => false,
                })
        };
        match points.iter().find(|pt| differs_at(pt)) {
            Some(w) => {
                let mut d = d;
                d.witness = w.clone();
                kept.push(d);
            }
            None => p
                .equal_on_accepted
                .push(dimguard_solver::report::EqualOnAccepted {
                    node: d.node.clone(),
                    tensor: d.tensor.clone(),
                    method: if *exhaustive {
                        format!("every accepted input ({} evaluated)", points.len())
                    } else {
                        format!("{} sampled accepted inputs", points.len())
                    },
                    rejected_witness: d.witness.clone(),
                }),
        }
    }
    p.disagreements = kept;
    p
}

/// `x_2` as the report's text names it: `x[2]`.
fn label(name: &str) -> String {
    match name.rsplit_once('_') {
        Some((input, index)) if index.chars().all(|c| c.is_ascii_digit()) => {
            format!("{input}[{index}]")
        }
        _ => name.to_string(),
    }
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
        let (Some((coefs, c0)), Some(acc)) = (e.affine(), d.answer.accepted.as_ref()) else {
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
        .filter(|(_, v)| !v.is_bool())
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
                        let vals: std::collections::BTreeSet<i128> =
                            set.iter().filter_map(|x| e.int_at(&|_| Some(x))).collect();
                        Feasible::from(&DimSet::from_values(vals))
                    })
            } else {
                None
            };
            let example = e.int_at(&|n| hints.get(n).copied());
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

/// The sizes the spec writes from `root`, each as `coef * root + offset`: a tied group's
/// (`depth_2 = rgb_2`, `b = a + delta`) and the sizes derived from it by a linear relation
/// (`alias`: `x_3 = 2*a_2 + 1`). Torch reads each as that expression of `root`, so their own
/// guards bound `root`'s `Dim`.
fn written_from<'a, 'b: 'a>(
    root: &str,
    sizes: impl Iterator<Item = (&'a str, &'a Option<(&'b GroupAnswer, MemberAnswer<'b>)>)>,
    alias: &BTreeMap<String, (String, i128, i128)>,
) -> Vec<(String, i128, i128)> {
    let mut out: Vec<(String, i128, i128)> = sizes
        .filter_map(|(source, found)| {
            let (_, from) = found.as_ref()?.1.tied_side.as_ref()?;
            let (a, delta) = from.as_ref()?;
            (a == root && source != root).then(|| (source.to_string(), 1, *delta))
        })
        .collect();
    for (name, (r, coef, offset)) in alias {
        if r == root && name != root && !out.iter().any(|(n, _, _)| n == name) {
            out.push((name.clone(), *coef, *offset));
        }
    }
    out
}

/// Whether `g` is a guard of one size, `root` or a size the spec writes from it (`written`:
/// `coef * root + offset`), that torch's value ranges cannot show true over `ranges` (`root`'s
/// range): torch then refuses a `Dim` for `root` there.
fn unshown_over(
    g: &Expr,
    root: &str,
    written: &[(String, i128, i128)],
    ranges: &BTreeMap<&str, (i128, i128)>,
) -> bool {
    let atoms = g.atoms();
    let Some(a) = atoms.iter().next().filter(|_| atoms.len() == 1) else {
        return false;
    };
    let read = if **a == *root {
        g.clone()
    } else if let Some((_, coef, offset)) = written.iter().find(|(b, _, _)| **b == **a) {
        let at = Expr::Add(vec![
            Expr::Mul(vec![Expr::int(*coef), Expr::sym(root)]),
            Expr::int(*offset),
        ]);
        g.substitute(a, &at)
    } else {
        return false;
    };
    !dimguard_solver::shown_true(&read, ranges)
}

/// The spec line of a dynamic size whose accepted set is not decided (issue 34): the program's
/// own claim kept (`Dim.AUTO` over the claimed range), never dropped to a static size, with
/// what is unknown. `None` for a size claimed at one value or with nothing undecided.
/// A size the others define keeps its relation in the comment (`# tokens_1 = ((image_3 //
/// 16)*(image_2 // 16)); ...`): torch cannot write a floor-derived `Dim`, so the relation is
/// said, never dropped.
fn kept_undecided(
    py: &str,
    claimed: Option<&DimSet>,
    d: &CheckDim,
    relation: Option<String>,
) -> Option<String> {
    let c = claimed?;
    let u = d.answer.undecided.as_ref()?;
    if c.count() < 2 {
        return None;
    }
    let hi = c.max().filter(|&h| h < dimguard_solver::SIZE_MAX);
    Some(format!(
        "{py} = {}  # {}undecided for {} of its sizes: the claimed range is kept (see its `undecided`)",
        python::auto_hint(c.min(), hi),
        relation.map_or(String::new(), |r| format!("{r}; ")),
        dimguard_solver::report::count_text(u.count)
    ))
}

/// `dimguard check` of a `dimguard.Dispatch` archive's programs (`(entry name, .pt2 bytes)`, as
/// [`dimguard_graph::program::dispatch_programs`] reads them): each program checked, and per input size
/// the union of what the programs accept.
pub fn check_dispatch(
    programs: Vec<(String, Vec<u8>)>,
    label: &str,
    sizes: bool,
) -> Result<dimguard_solver::report::DispatchReport, dimguard_graph::Error> {
    use dimguard_solver::report::{DispatchProgram, DispatchReport, Feasible, UnionDim};
    let mut checked = Vec::new();
    for (file, bytes) in programs {
        let program = dimguard_graph::load_bytes(bytes, &format!("{label}: {file}"))?;
        checked.push(DispatchProgram {
            check: check_program(&program, sizes)?,
            file,
        });
    }
    let mut union: Vec<(UnionDim, Option<dimguard_solver::DimSet>)> = Vec::new();
    for (i, p) in checked.iter().enumerate() {
        for d in &p.check.dims {
            let set = d
                .answer
                .accepted
                .as_ref()
                .and_then(|f| dimguard_solver::DimSet::from_segments(f.segments.clone()).ok())
                .filter(|s| Some(s.count()) == d.answer.accepted.as_ref().map(|f| f.count));
            let at = union
                .iter()
                .position(|(u, _)| u.input == d.input && u.index == d.index);
            match at {
                Some(k) => {
                    let (u, acc) = &mut union[k];
                    u.dynamic_in.push(i);
                    *acc = match (acc.take(), set) {
                        (Some(a), Some(b)) => a.union(&b).ok(),
                        _ => None,
                    };
                }
                None => union.push((
                    UnionDim {
                        input: d.input.clone(),
                        index: d.index,
                        accepted: None,
                        dynamic_in: vec![i],
                    },
                    set,
                )),
            }
        }
    }
    let union: Vec<UnionDim> = union
        .into_iter()
        .map(|(mut u, acc)| {
            u.accepted = acc.as_ref().map(Feasible::from);
            u
        })
        .collect();
    let parts: Vec<String> = union
        .iter()
        .map(|u| match &u.accepted {
            Some(f) => format!(
                "{}[{}]: {} sizes accepted by some program{}",
                u.input,
                u.index,
                f.count,
                match (f.min, f.max) {
                    (Some(a), Some(b)) => format!(" ({a}..{b})"),
                    _ => String::new(),
                }
            ),
            None => format!("{}[{}]: undecided in some program", u.input, u.index),
        })
        .collect();
    let n = checked.len();
    Ok(DispatchReport {
        summary: format!(
            "{n} program{}; {}",
            if n == 1 { "" } else { "s" },
            parts.join("; ")
        ),
        programs: checked,
        union,
    })
}

/// `dimguard check` on a program already read, with Z3 deciding linked groups too wide to
/// enumerate.
pub fn check_program(program: &Program, sizes: bool) -> Result<CheckReport, dimguard_graph::Error> {
    check_program_graph(
        program,
        &dimguard_graph::ProgramGraph::build(program)?,
        sizes,
    )
}

/// [`check_program`] on the program's graph already built (`check --dot` draws it too).
pub fn check_program_graph(
    program: &Program,
    pg: &dimguard_graph::ProgramGraph,
    sizes: bool,
) -> Result<CheckReport, dimguard_graph::Error> {
    let z3 = dimguard_prove::box_prover(dimguard_prove::TIMEOUT_MS);
    check_graph(program, pg, sizes, Some(&z3))
}

#[cfg(test)]
mod written_from_a_root {
    use super::*;

    /// A size derived from a root by a linear relation (`b = 2*a + 1`) is read by torch as
    /// that expression of `a`: its own guard `b % 2 == 1` holds at every `a` (checked here value
    /// by value) but interval bounds cannot show it, so `a`'s `Dim` is refused there; a tie
    /// with an offset (`c = a + 3`) and a guard bounds can show (`b >= 5`) are read the same way.
    #[test]
    fn linear_aliases_bound_their_roots_dim() {
        let alias = BTreeMap::from([
            ("b".to_string(), ("a".to_string(), 2, 1)),
            ("a".to_string(), ("a".to_string(), 1, 0)),
        ]);
        let none: Vec<(&str, &Option<(&GroupAnswer, MemberAnswer<'_>)>)> = vec![];
        let written = written_from("a", none.into_iter(), &alias);
        assert_eq!(written, vec![("b".to_string(), 2, 1)]);
        let ranges = BTreeMap::from([("a", (2, dimguard_solver::SIZE_MAX / 4))]);
        let odd = parse_guard("b % 2 == 1").unwrap();
        // Brute force: it holds at every a of the range's start and far up.
        for a in (2..5000).chain([1 << 40, (1 << 61) - 7]) {
            let b = 2 * a + 1;
            assert_eq!(odd.truth(&|_| Some(b)), Ok(true), "{a}");
        }
        assert!(unshown_over(&odd, "a", &written, &ranges));
        // Without the alias (before: only tied sizes were read) the guard was not read at all.
        assert!(!unshown_over(&odd, "a", &[], &ranges));
        let shown = parse_guard("b >= 5").unwrap();
        assert!(!unshown_over(&shown, "a", &written, &ranges));
        // A tie with an offset: c = a + 3, its guard c >= 6 is not shown over a >= 2.
        let tie = vec![("c".to_string(), 1, 3)];
        assert!(unshown_over(
            &parse_guard("c >= 6").unwrap(),
            "a",
            &tie,
            &ranges
        ));
        assert!(!unshown_over(
            &parse_guard("c >= 5").unwrap(),
            "a",
            &tie,
            &ranges
        ));
    }
}

#[cfg(test)]
mod equal_on_accepted {
    use super::*;
    use dimguard_solver::report::{Disagreement, Propagation};

    fn prop() -> Propagation {
        Propagation {
            checked: 1,
            unchecked: vec![],
            disagreements: vec![Disagreement {
                node: "view".into(),
                target: "aten.view".into(),
                tensor: "view".into(),
                recorded: vec!["s0".into(), "3".into()],
                computed: vec!["7*(s0 // 7)".into(), "3".into()],
                witness: BTreeMap::from([("s0".to_string(), 8)]),
                stack_trace: None,
            }],
            filled: vec![],
            guards: vec![],
            equal_on_accepted: vec![],
        }
    }

    #[test]
    fn equal_where_the_guards_accept_is_not_a_disagreement() {
        // The guards accept multiples of 7 only: 7*(s0//7) == s0 there.
        let points: Vec<BTreeMap<String, i128>> = (1..=20)
            .map(|k| BTreeMap::from([("s0".to_string(), 7 * k)]))
            .collect();
        let p = on_accepted(prop(), &(points, true));
        assert!(p.disagreements.is_empty());
        assert_eq!(p.equal_on_accepted.len(), 1);
        assert_eq!(
            p.equal_on_accepted[0].method,
            "every accepted input (20 evaluated)"
        );
        assert_eq!(p.equal_on_accepted[0].rejected_witness["s0"], 8);
    }

    #[test]
    fn a_real_difference_keeps_an_accepted_witness() {
        let points: Vec<BTreeMap<String, i128>> = (7..=30)
            .map(|k| BTreeMap::from([("s0".to_string(), k)]))
            .collect();
        let p = on_accepted(prop(), &(points, false));
        assert_eq!(p.disagreements.len(), 1);
        assert_eq!(p.disagreements[0].witness["s0"], 8);
        assert!(p.equal_on_accepted.is_empty());
    }
}
