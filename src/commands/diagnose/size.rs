//! One size's entry, built once ([`entry`]) from its own guards and its group's answer in the
//! analysis: each guard solved over the size's range, the exact accepted set, its status, ranked
//! suggestions re-checked value by value, coverage, padding, advice, and torch's own fix checked
//! against every guard listed under the size; then, for a size the guards link to others, what
//! its group decides (its joint answer, its sides, the size it is tied to).

use super::problem::Sized;
use dimguard_readers::{self, DimEntry, FixKind, Message};
use dimguard_solver::analyze::{
    describe, set_and_specs, Analysis, GroupAnswer as JointGroup, MemberAnswer, Options, OwnSet,
    WITHHELD,
};
use dimguard_solver::budget::Exhausted;
use dimguard_solver::engine;
use dimguard_solver::joint::{self, Choice, Prover};
use dimguard_solver::python::{self, py_name};
use dimguard_solver::report::{
    Certificate, Diagnosed, DimReport, FixCheck, GuardFate, GuardMethod, GuardReport, Padding,
    Proof, SizeAnswer, Status, Undecided,
};
use dimguard_solver::RECHECK_LIMIT;
use dimguard_solver::{self, Maximality};
use dimguard_solver::{DimSet, Expr};
use dimguard_solver::{DEFAULT_MIN, SIZE_MAX};

/// Every dimension's entry ([`entry`]), in the message's order.
pub(super) fn entries(
    msg: &Message,
    opts: &Options,
    prover: Option<Prover>,
    (sized, analysis): (&Sized, &mut Analysis),
) -> Vec<DimReport> {
    // Whether the deadline had passed when the last entry was finished: then no other set is
    // ranked (the stage may have decided a thousand sizes' sets by the deadline; ranking them
    // all after it ran 17% past a 1 s budget, `tests/hostile.rs`). The entry under way when it
    // passes is finished.
    let mut late = None;
    msg.dims
        .iter()
        .enumerate()
        .map(|(i, d)| {
            dimguard_solver::budget::progress(
                format!("solving dimension {}", d.name),
                i as u64,
                msg.dims.len() as u64,
            );
            let decided = Decided {
                late,
                ..decided(i, d, sized, analysis)
            };
            let e = entry(i, d, decided, (msg, opts, prover), (sized, analysis));
            late = dimguard_solver::budget::expired();
            e
        })
        .collect()
}

/// What the analysis decided of the guards listed under a dimension, for its entry
/// ([`decided`]).
struct Decided {
    /// Each listed guard's decision over the size's range, `None` where the analysis did not
    /// decide it so: a guard that names only another size (decided over that size), or one of a
    /// size the analysis solved with others (the group decided it over what the others leave).
    each: Vec<Option<joint::Decision>>,
    /// The set they leave, when they are all of its group's guards.
    set: Option<dimguard_solver::report::Decided<DimSet>>,
    /// The budget that had run out when the entry before was finished: the set is then not
    /// ranked ([`entries`]).
    late: Option<Exhausted>,
}

/// What the analysis decided of the guards listed under the `i`-th dimension `d`, when it solved
/// the size alone, guard by guard, over the same range
/// ([`Alone`](dimguard_solver::analyze::Alone)): each decision moved out of it
/// ([`Alone::take_decision`](dimguard_solver::analyze::Alone::take_decision); held twice,
/// 10,000 guards' sets went past a 128 MiB memory budget, `tests/hostile.rs`).
fn decided(i: usize, d: &DimEntry, sized: &Sized, analysis: &mut Analysis) -> Decided {
    let range = d.range.unwrap_or((DEFAULT_MIN, SIZE_MAX));
    let alone = analysis.alone_mut(d.var()).filter(|a| a.range == range);
    let Some(a) = alone else {
        return Decided {
            each: vec![None; d.guards.len()],
            set: None,
            late: None,
        };
    };
    let each: Vec<Option<joint::Decision>> = sized.listed(i).map(|k| a.take_decision(k)).collect();
    let all = each.iter().all(Option::is_some) && a.origin.len() == each.len();
    // (Moved out too: a size has one entry.)
    let set = all.then(|| std::mem::replace(&mut a.own.set, Err(Undecided::NotSolved)));
    Decided {
        each,
        set,
        late: None,
    }
}

/// The entry of the message's `i`-th dimension `d`, built once: its own answer from the guards
/// listed under it and what the analysis `decided` of them ([`dim_report`]; an unbacked size's
/// suggestions are the model's `torch._check`, never a `Dim`), then, for a size of a jointly
/// solved group, its joint answer ([`linked`]), and last what its group says of it
/// ([`group_answer`]).
fn entry(
    i: usize,
    d: &DimEntry,
    decided: Decided,
    (msg, opts, prover): (&Message, &Options, Option<Prover>),
    (sized, analysis): (&Sized, &Analysis),
) -> DimReport {
    let mut r = dim_report(d, decided, (msg, opts, prover));
    // An unbacked size no input stands for gets the model's torch._check, never a Dim.
    if r.is_unbacked() {
        let name = r.name.clone();
        for s in &mut r.answer.suggestions {
            s.code = python::unbacked_checks(&name, &s.progression()).join("\n");
        }
    }
    // Its group (a size alone's answer is its lines', which the analysis decided; a part of
    // a group solved apart still answers).
    let found = analysis.member(d.var());
    // A joint answer reaches the first dimension a size has in the text.
    // (Asked only of a size of several roots' group: a scan per size is quadratic in a text
    // of 75,000 sizes, tests/hostile.rs.)
    let first = || msg.dims.iter().position(|x| x.var() == d.var()) == Some(i);
    if let Some((g, m)) = found
        .as_ref()
        .filter(|(g, _)| g.grp.roots.len() > 1 && first())
    {
        linked(&mut r, d, g, m.member, (msg, opts, prover));
    }
    // Its group answers for it when the guards listed under it are the group's (a size of a
    // group of several sizes always); a size whose guard names only another size is answered
    // by its own line.
    let answered = found.as_ref().is_some_and(|(g, _)| {
        g.is_multi() || sized.listed(i).all(|k| sized.answered_in(k, g, analysis))
    });
    group_answer(&mut r, d, found, answered, (msg, opts));
    r
}

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

/// The guards listed under `d`, each decided over its range `domain`, and the set they leave:
/// what the analysis `decided` of them, and each guard it did not decide over this size decided
/// here, once.
fn own_decisions(
    d: &DimEntry,
    decided: Decided,
    domain: &DimSet,
    (limits, prover): (&engine::Limits, Option<Prover>),
) -> OwnSet {
    let decisions: Vec<joint::Decision> = decided
        .each
        .into_iter()
        .zip(&d.guards)
        .map(|(done, g)| {
            done.unwrap_or_else(|| joint::decide(&g.expr, d.var(), domain, limits, prover))
        })
        .collect();
    match decided.set {
        Some(set) => OwnSet {
            decisions,
            set,
            domain: domain.clone(),
        },
        None => OwnSet::new(decisions, domain),
    }
}

/// A dimension's own answer, from the guards the text lists under it alone (each decided over
/// the size's range: what the analysis `decided`, [`own_decisions`]): a size the model fixes,
/// a size with no guard, else each guard's line and the set they leave ([`conclude`]).
fn dim_report(
    d: &DimEntry,
    decided: Decided,
    (msg, opts, prover): (&Message, &Options, Option<Prover>),
) -> DimReport {
    let late = decided.late;
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
        specialized(&mut r, d, v, msg, opts);
        return r;
    }
    let (lo, hi) = d.range.unwrap_or((DEFAULT_MIN, SIZE_MAX));
    let domain = DimSet::interval(lo, hi);
    if d.guards.is_empty() {
        unguarded(&mut r, d, msg, &domain);
        return r;
    }
    // Each guard decided on the range, and the set they leave.
    let guards: Vec<&dimguard_solver::Expr> = d.guards.iter().map(|g| &g.expr).collect();
    let own = own_decisions(d, decided, &domain, (&opts.limits, prover));
    let periodic = own.periodic();
    r.guards = guard_lines(d, own.decisions, &domain);
    let feasible = match own.set {
        Ok(f) => f,
        Err(why) => {
            r.status = Status::Undecided;
            r.undecided = Some(why.to_string());
            // Cut short by the budget: the range is undecided, with the reason (never silent).
            if dimguard_solver::budget::exhausted().is_some() {
                r.answer.undecided = Some(dimguard_solver::report::UndecidedSet::new(&domain, why));
            }
            if r.guards.iter().any(|g| g.method == GuardMethod::Undecided) {
                r.advice.push(UNDECIDED_ADVICE.into());
            }
            return r;
        }
    };
    mark_redundant(&mut r.guards, &domain);
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
    // Past the deadline (the entry before this one finished late), a set the stage decided is
    // not ranked: the size is undecided, with the budget's reason, never answered late.
    if let Some(e) = late {
        r.status = Status::Undecided;
        r.undecided = Some(Undecided::Exhausted(e).to_string());
        r.answer.undecided = Some(dimguard_solver::report::UndecidedSet::new(
            &domain,
            Undecided::Exhausted(e),
        ));
        return r;
    }
    conclude(&mut r, d, &feasible, Some(&own), proof, msg, opts);
    fold(&mut r, &domain, &feasible);
    r
}

/// A size the model's code fixes to `v`: that one value, the advice to make it static, why
/// torch fixed it, and torch's fix checked.
fn specialized(r: &mut DimReport, d: &DimEntry, v: i128, msg: &Message, opts: &Options) {
    let var = d.var().to_string();
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
}

/// A size the text lists no guard for: what torch inferred of it, and, when the text lists
/// every guard (a trace) and gives its range, the whole range.
fn unguarded(r: &mut DimReport, d: &DimEntry, msg: &Message, domain: &DimSet) {
    if let Some(e) = &d.inferred_equal {
        r.advice.push(format!(
            "torch inferred {} to equal {e}: express it as that derived dim",
            d.name
        ));
    }
    if let (true, Some((lo, hi)), false) = (d.every_guard, d.range, in_relation(msg, &d.name)) {
        // The input lists every guard (a trace): with none, every value of the range passes.
        set_and_specs(
            &mut r.answer,
            domain,
            None,
            8,
            Some(&[]),
            d.var(),
            &d.name,
            Proof::Periodic,
        );
        r.advice.push(format!(
            "no guard restricts {}: every size in {lo}..{hi} passes",
            d.name
        ));
    }
}

/// Each guard's line from its decision over the size's range `domain`: what it requires, what it
/// removes, how it was decided.
fn guard_lines(d: &DimEntry, decisions: Vec<joint::Decision>, domain: &DimSet) -> Vec<GuardReport> {
    let (lo, hi) = d.range.unwrap_or((DEFAULT_MIN, SIZE_MAX));
    d.guards
        .iter()
        .zip(decisions)
        .map(|(g, out)| {
            let method = match &out.fate {
                joint::Fate::Solved(GuardFate::Periodic) => GuardMethod::Periodic,
                joint::Fate::Solved(_) => GuardMethod::Enumeration,
                joint::Fate::Proved => GuardMethod::Z3,
                joint::Fate::Undecided(_) => GuardMethod::Undecided,
            };
            let set = out.set;
            GuardReport {
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
            }
        })
        .collect()
}

/// Redundancy: marks the guards the others already imply. rest_i = prefix_i ∩ suffix_i. Past
/// the deadline it is not examined (every guard stays `redundant: false`, and the budget says
/// the answer is partial).
fn mark_redundant(guards: &mut [GuardReport], domain: &DimSet) {
    let sets: Vec<&DimSet> = guards.iter().filter_map(|g| g.set.as_ref()).collect();
    if sets.len() <= 1 || dimguard_solver::budget::expired().is_some() {
        return;
    }
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
    for (g, r) in guards.iter_mut().zip(redundant) {
        g.redundant = r;
    }
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
fn conclude(
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
const UNDECIDED_ADVICE: &str = "dimguard could not decide every guard over this range; narrow the range (enumeration handles up to 20,000,000 values) or check the guard by hand";

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
fn check_fix(
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

/// The answer of a size `m` of a jointly solved group (several roots; its sides, ties and
/// linked sizes come from [`group_answer`]): when the linking guards reject some combination of
/// the sizes' own answers, status `linked`, no single-`Dim` suggestion (none is sound alone) and
/// advice naming the spec the block uses; a size whose values each go with every accepted
/// combination of the others keeps its own answer. A group the search left undecided makes its
/// sizes undecided, with the reason.
fn linked(
    d: &mut DimReport,
    entry: &DimEntry,
    j: &JointGroup,
    m: &joint::Member,
    (msg, opts, prover): (&Message, &Options, Option<Prover>),
) {
    // The group's one choice of spec, made by the analysis stage.
    let choice = &j.choice;
    // Named as the report names them: a dimension's name, else the size's source.
    let others: Vec<String> = j
        .grp
        .members
        .iter()
        .filter(|o| o.name != m.name)
        .map(|o| msg.name_of(&o.name))
        .collect();
    let range = d.range.map(|[lo, hi]| DimSet::interval(lo, hi));
    let why = match (&j.solved.undecided, &j.linked) {
        (Some(u), _) => Some(format!(
            "linked to {} and undecided: {u}",
            others.join(", ")
        )),
        (None, None) => Some(format!("linked to {}: not solved", others.join(", "))),
        (None, Some(l)) => {
            let set = l.some(m);
            let set = match (&range, set) {
                (Some(r), Ok(set)) => set.intersect(r),
                (None, set) => set,
                (_, Err(e)) => Err(e),
            };
            // A size whose every accepted value goes with every accepted combination
            // of the others keeps its own answer.
            let free = l.tied.is_none()
                && l.joint.level(&m.root).is_some_and(|lv| {
                    l.joint.free_levels()[lv]
                        && l.joint.tree.projection(lv).ok().as_ref() == Some(&l.joint.domains[lv])
                });
            if !l.restricts() || free {
                if let Some(set) = decided_jointly(d, entry, &m.name, &set) {
                    answer_jointly(d, entry, m, &set, &others, j, l, (msg, opts, prover));
                }
                d.advice.push(if free && l.restricts() {
                    format!(
                        "linked to {} by guards, but each of its values goes with every accepted combination of theirs: its own answer stands (see linked)",
                        others.join(", ")
                    )
                } else {
                    format!(
                        "linked to {} by guards that hold for every combination of their accepted values",
                        others.join(", ")
                    )
                });
                None
            } else {
                let side = l.side(m);
                d.status = Status::Linked;
                d.answer.suggestions.clear();
                d.coverage = None;
                d.padding = None;
                // The guards over several sizes were decided jointly: not undecided.
                d.undecided = None;
                for g in d.guards.iter_mut().filter(|g| g.set.is_none()) {
                    g.method = GuardMethod::Joint;
                    g.requires = format!("decided jointly with {} (see linked)", others.join(", "));
                }
                d.advice = vec![l.report.summary.clone()];
                let tied_pairs = l.report.tied.as_ref().map(|t| {
                    t.ties
                        .iter()
                        .map(|x| format!("{} from {}", x.dims[1], x.dims[0]))
                        .collect::<Vec<_>>()
                        .join(", ")
                });
                let why = match &side {
                    _ if matches!(choice, Some(Choice::Tied(_))) => format!(
                        "no Dim of {} alone is sound: which of its values pass depends on {}; its spec below writes each tied size from its partner ({}), which admits more than any box (see linked)",
                        d.name,
                        others.join(", "),
                        tied_pairs.unwrap_or_default()
                    ),
                    None if l.tied.is_some() => format!(
                        "no Dim of {} alone is sound: which of its values pass depends on {}, and no spec through the traced sizes was found sound (see linked)",
                        d.name,
                        others.join(", ")
                    ),
                    Some(_) if matches!(choice, Some(Choice::Shared(_))) => format!(
                        "no Dim of {} alone is sound: which of its values pass depends on {}; its spec below is one Dim shared with {}, which admits more than any box (see linked)",
                        d.name,
                        others.join(", "),
                        others.join(", ")
                    ),
                    Some(_) if matches!(choice, Some(Choice::Example(_))) => format!(
                        "no Dim of {} alone is sound: which of its values pass depends on {}; the largest sound box leaves out the traced sizes (--example), so its spec below is its side of a sound box through them (see linked)",
                        d.name,
                        others.join(", ")
                    ),
                    Some(_) => format!(
                        "no Dim of {} alone is sound: which of its values pass depends on {}; its spec below is its side of the largest sound box (see linked)",
                        d.name,
                        others.join(", ")
                    ),
                    None => match &j.cut {
                        // The budget ran out before the group's spec was found.
                        Some(u) => format!("no spec for {} and {} within the budget: {u}", d.name, others.join(", ")),
                        None => format!("no combination of {} and {} passes every guard", d.name, others.join(", ")),
                    },
                };
                d.advice.push(why);
                None
            }
        }
    };
    if let Some(why) = why {
        d.status = Status::Undecided;
        d.answer.suggestions.clear();
        d.coverage = None;
        d.padding = None;
        d.undecided.get_or_insert_with(|| why.clone());
        // Cut short by the budget: its range is undecided, with the reason (never silent).
        if let (None, Some(r), Some(_)) = (
            &d.answer.undecided,
            &range,
            dimguard_solver::budget::exhausted(),
        ) {
            d.answer.undecided = Some(dimguard_solver::report::UndecidedSet::new(r, &why));
        }
        d.advice = vec![why];
    }
}

/// A size's answer from its group, as every command builds it
/// ([`dimguard_solver::analyze::size_answer`]): the sizes it is linked with, its sides of the
/// joint set, the size it is tied to (a root it is derived from answers through the relation; a
/// partner the group's spec writes it from, with its values with some partner), a defined size's
/// values, and the nearest accepted sizes around a rejected traced size. The last step of
/// [`entry`]: the set it is given is the size's final `feasible`.
fn group_answer(
    d: &mut DimReport,
    entry: &DimEntry,
    found: Option<(&JointGroup, MemberAnswer<'_>)>,
    answered: bool,
    (msg, opts): (&Message, &Options),
) {
    let own = d.range.map(|[lo, hi]| DimSet::interval(lo, hi));
    // A size of a group of one root (tied to it by equalities and relations): its set as
    // the group decides it (the root's answer through the relation, within its range);
    // else its own `feasible`.
    let grouped = found
        .as_ref()
        .filter(|(g, _)| answered && g.grp.roots.len() == 1)
        .and_then(|(g, m)| g.decided(m, Some(own.as_ref()?)));
    // A size whose one-size answer is undecided only because a guard names another size,
    // alone in its part of the group: the stage set that guard aside as holding on every
    // tuple of the parts' answers (`Group::held`; a guard that fails somewhere merges the
    // parts), so the part's set is the size's answer, and each of its values has a partner.
    let mut held = false;
    if d.status == Status::Undecided {
        if let Some(set) = grouped.as_ref().filter(|_| {
            d.guards
                .iter()
                .zip(&entry.guards)
                .filter(|(g, _)| g.set.is_none())
                .all(|(_, e)| e.expr.atoms().iter().any(|a| **a != *entry.var()))
        }) {
            held_apart(d, entry, set, msg, opts);
            held = true;
        }
    }
    let example = opts.example_for(&d.name);
    // (Read back from its contract form only when a traced size needs it.)
    let accepted = grouped.or_else(|| {
        example?;
        d.answer.accepted.as_ref()?.set().ok()
    });
    let name = |v: &str| msg.name_of(v);
    let is_size = |v: &str| msg.dims.iter().any(|d| d.var() == v);
    let asked = dimguard_solver::analyze::Asked {
        label: &d.name,
        name: &name,
        code: &name,
        is_size: &is_size,
        own: own.as_ref(),
        accepted: accepted.as_ref(),
        example,
        partners: dimguard_solver::analyze::Partners::OfSeveralRoots,
        spec_ties: false,
    };
    let g = dimguard_solver::analyze::size_answer(
        found.as_ref().map(|(g, _)| *g),
        found.as_ref().map(|(_, m)| m),
        &asked,
    );
    // The set and its suggestions are the dimension's own (its guards over its range);
    // everything else is the group's answer, field for field.
    d.answer = dimguard_solver::report::SizeAnswer {
        accepted: d.answer.accepted.take(),
        // (The group's undecided part when the budget cut its answer short and the size's own
        // answer has none: never silent.)
        undecided: d.answer.undecided.take().or_else(|| {
            dimguard_solver::budget::exhausted()?;
            let (set, why) = found.as_ref()?.1.unsure.as_ref()?;
            let set = match &own {
                Some(o) => set.intersect(o).ok()?,
                None => set.clone(),
            };
            (!set.is_empty()).then(|| dimguard_solver::report::UndecidedSet::new(&set, why))
        }),
        suggestions: std::mem::take(&mut d.answer.suggestions),
        ..g
    };
    // A size that keeps its own answer (its group's guards reject no combination of the
    // sizes' answers, or each of its values goes with every accepted combination of the
    // others) is pasted from its own suggestions: no side of a box is its spec.
    if held {
        d.answer.sides.with_some_partner = d.answer.accepted.clone();
    }
    if d.status != Status::Linked {
        let s = &mut d.answer.sides;
        (s.box_side, s.example_box_side, s.shared_side) = (None, None, None);
    }
    // A tied size the text lists no guard for has its partner's set through the tie as
    // its answer (`feasible`), linked: never "unconstrained" with no set beside a tie that
    // says which of its values pass.
    if d.status == Status::Unconstrained && d.answer.accepted.is_none() {
        let tied = d.answer.sides.tied_to.as_ref();
        if let Some((set, t)) = tied.and_then(|t| Some((t.accepted.clone()?, t.clone()))) {
            // Linked to its partner: its values with some partner are the tie's.
            d.answer.sides.with_some_partner = Some(set.clone());
            if !d.answer.linked_with.contains(&t.partner) {
                d.answer.linked_with.push(t.partner);
            }
            d.answer.accepted = Some(set);
            d.status = Status::Linked;
        }
    }
}

/// For a size in a group whose linking guards hold for every accepted combination of the
/// others (or whose values combine freely with theirs): its values that pass (`set`, from the
/// joint set) when its own line is waiting for that answer, that is, when every guard listed
/// under it that the one-size solve left open names another size. The one-size question lets
/// the others take any integer, torch's sizes cannot: only the joint set decides.
fn decided_jointly(
    d: &DimReport,
    entry: &DimEntry,
    var: &str,
    set: &Result<DimSet, dimguard_solver::Error>,
) -> Option<DimSet> {
    let open: Vec<&dimguard_readers::Guard> = entry
        .guards
        .iter()
        .zip(&d.guards)
        .filter(|(_, g)| g.set.is_none())
        .map(|(e, _)| e)
        .collect();
    let names_other = |g: &&dimguard_readers::Guard| g.expr.atoms().iter().any(|a| **a != *var);
    let waiting = !open.is_empty() && open.iter().all(names_other);
    set.as_ref().ok().filter(|_| waiting).cloned()
}

/// A size's answer when every guard it could not decide alone names another size and holds on
/// every tuple of the parts' answers: `set`, its part's, concluded as for a size of its own, each
/// suggestion re-checked against the size's own guards.
fn held_apart(d: &mut DimReport, entry: &DimEntry, set: &DimSet, msg: &Message, opts: &Options) {
    let var = entry.var();
    let own: Vec<&Expr> = entry
        .guards
        .iter()
        .map(|g| &g.expr)
        .filter(|e| e.atoms().iter().all(|a| **a == *var))
        .collect();
    d.undecided = None;
    d.advice.retain(|a| a != UNDECIDED_ADVICE);
    for g in d.guards.iter_mut().filter(|g| g.set.is_none()) {
        g.method = GuardMethod::Joint;
        g.requires =
            "holds with every accepted value of the sizes it names (decided jointly)".into();
    }
    conclude(d, entry, set, Some(&own), Proof::Enumeration, msg, opts);
}

/// Replaces a size's one-size answer by the joint set's `set` (see [`decided_jointly`]):
/// status, suggestions and the rest as for a size of its own ([`conclude`]), each suggestion
/// re-checked against its own guards value by value and, with the rest of the joint set,
/// against every guard of the group ([`joint::Linked::check_side`]): tuple by tuple when few,
/// else by Z3 (`prover`); a suggestion that fails is withheld.
#[allow(clippy::too_many_arguments)]
fn answer_jointly(
    d: &mut DimReport,
    entry: &DimEntry,
    m: &joint::Member,
    set: &DimSet,
    others: &[String],
    j: &JointGroup,
    l: &joint::Linked,
    (msg, opts, prover): (&Message, &Options, Option<Prover>),
) {
    let own: Vec<&Expr> = entry
        .guards
        .iter()
        .map(|g| &g.expr)
        .filter(|e| e.atoms().iter().all(|a| **a == *m.name))
        .collect();
    d.undecided = None;
    // The one-size solve's "could not decide" goes; other advice (a forced specialization) stays.
    d.advice.retain(|a| a != UNDECIDED_ADVICE);
    for g in d.guards.iter_mut().filter(|g| g.set.is_none()) {
        g.method = GuardMethod::Joint;
        g.requires = match others {
            [one] => {
                format!("holds with every accepted value of {one} (decided jointly, see linked)")
            }
            _ => format!(
                "holds with every accepted combination of {} (decided jointly, see linked)",
                others.join(", ")
            ),
        };
    }
    conclude(d, entry, set, Some(&own), Proof::Periodic, msg, opts);
    let level = l.joint.level(&m.root);
    let mut withheld = false;
    d.answer.suggestions.retain_mut(|s| {
        let root_set = s.progression().to_set().affine_preimage(m.coef, m.offset);
        let check = match (level, root_set) {
            (Some(lv), Ok(rs)) => l.check_side(&j.grp.guards, lv, &rs, prover),
            (None, _) => joint::SideCheck::Unchecked(joint::Unchecked::NotInJoint),
            (_, Err(e)) => joint::SideCheck::Unchecked(joint::Unchecked::Root(e)),
        };
        match check {
            joint::SideCheck::Enumerated => s.certificate = Certificate::Enumeration,
            joint::SideCheck::Proved => s.certificate = Certificate::Z3,
            joint::SideCheck::Fails(_) => {
                withheld = true;
                return false;
            }
            joint::SideCheck::Unchecked(why) => {
                s.certificate = Certificate::None;
                s.certificate_note = Some(why.to_string());
            }
        }
        true
    });
    if withheld && !d.advice.iter().any(|a| a == WITHHELD) {
        d.advice.push(WITHHELD.into());
    }
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
