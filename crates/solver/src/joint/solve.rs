//! Solving a group: the group's guards by the periodic engine (one guard over one size by
//! [`decide`](super::decide())), the joint search, the closed form of ties and the elimination
//! of a defined size.

use super::decide::decide;
use super::defined::{definition, definition_varies};
use super::equation::solve_equation;
use super::grouping::{root_range, Group};
use super::solved::{BoxAnswer, Defined, Fate, Prover, Solved};
use crate::engine::Limits;
use crate::expr::Value;
use crate::linked::{normalize, solve_joint, solve_tied, Budget, JointSet, Tie, TiedSet, Tree};
use crate::report::{Feasible, GuardFate, TieReport, TiedReport, Undecided};
use crate::types::{DimSet, Expr, Progression};
use std::collections::BTreeMap;

/// Solves a group exactly within the members' ranges.
pub fn solve_group(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    limits: &Limits,
) -> Solved {
    let budget = Budget {
        limits: *limits,
        ..Budget::default()
    };
    solve_group_with(grp, ranges, &budget, None)
}

/// [`solve_group`] within `budget`, with a validity oracle (Z3) asked before a guard is called
/// undecided: a guard outside the engine's methods is sent as "does every value of the range
/// pass?"; a proof keeps the range, a failing value is re-checked and the guard stays
/// undecided with it in the reason.
pub fn solve_group_with(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
) -> Solved {
    // A size defined by the others in a group with a range too wide to enumerate: eliminated
    // first (a search over it is slow or hopeless: the graph of a function over an unbounded
    // range is no finite union of boxes); in a group of narrow ranges, only when the search
    // leaves it undecided (the search's answer has each size's own set).
    let def = definition(grp);
    let wide = def.is_some()
        && grp.roots.iter().any(|r| {
            let (lo, hi) = root_range(grp, r, ranges);
            DimSet::interval(lo, hi).count() > ENUMERABLE
        });
    if wide {
        if let Some(s) = solve_defined(grp, ranges, budget, prover) {
            return s;
        }
    }
    if def.is_none() || wide {
        return solve_plain_or_equation(grp, ranges, budget, prover);
    }
    // Narrow ranges: the search first, within a work cap (its answer has each size's own set);
    // past the cap, the elimination; then the search within the whole budget.
    let quick = Budget {
        work: budget.work.min(DEFINED_FIRST_WORK),
        ..*budget
    };
    let out = solve_group_plain(grp, ranges, &quick, prover);
    if out.undecided.is_none() {
        return out;
    }
    if let Some(s) = solve_defined(grp, ranges, budget, prover) {
        return s;
    }
    solve_group_plain(grp, ranges, budget, prover)
}

/// [`solve_group_plain`], and where it leaves the group undecided, the group solved as one
/// equation of products ([`solve_equation`]) when it is one.
fn solve_plain_or_equation(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
) -> Solved {
    let out = solve_group_plain(grp, ranges, budget, prover);
    if out.undecided.is_none() {
        return out;
    }
    solve_equation(grp, ranges, budget, prover).unwrap_or(out)
}

/// The largest estimated number of guard evaluations a search of a group with a defined size
/// ([`Defined`]) over narrow ranges may start with before the defined size is eliminated.
const DEFINED_FIRST_WORK: f64 = 2e6;

/// `grp` solved with its defined size ([`definition`]) eliminated ([`Defined`]), when the
/// defined size's own guards are decided and the reduced group decides every tuple; `None`
/// otherwise (the caller keeps its own answer).
fn solve_defined(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
) -> Option<Solved> {
    let (gi, x, e) = definition(grp)?;
    let mut fates = vec![Fate::Solved(GuardFate::Joint); grp.guards.len()];
    let (lo, hi) = root_range(grp, &x, ranges);
    let mut own = DimSet::interval(lo, hi);
    let mut reduced = Group {
        members: grp
            .members
            .iter()
            .filter(|m| m.root != x)
            .cloned()
            .collect(),
        roots: grp.roots.iter().filter(|r| **r != x).cloned().collect(),
        guards: vec![],
        origin: vec![],
        relations: grp.relations.clone(),
        held: grp.held.clone(),
    };
    let mut from: Vec<usize> = Vec::new();
    for (i, g) in grp.guards.iter().enumerate() {
        if i == gi {
            continue;
        }
        let atoms = g.atoms();
        if atoms.len() == 1 && atoms.iter().all(|a| **a == *x) {
            let d = decide(g, &x, &own, &budget.limits, prover);
            own = d.set?;
            fates[i] = d.fate;
            continue;
        }
        reduced.guards.push(g.substitute(&x, &e));
        reduced.origin.push(grp.origin[i]);
        from.push(i);
    }
    let solved = solve_group_with(&reduced, ranges, budget, prover);
    if !matches!(solved.undecided, None | Some(Undecided::Defined { .. })) {
        return None;
    }
    for (k, &i) in from.iter().enumerate() {
        fates[i] = solved.fates[k].clone();
    }
    let why = Undecided::Defined {
        sizes: grp.roots.clone(),
        dim: x.clone(),
        expr: e.to_string(),
    };
    let mut accepted = BTreeMap::new();
    let mut unsure = BTreeMap::new();
    // The others' own sets (their one-size guards decided in the reduced group).
    let domains: Vec<(String, DimSet)> = grp
        .roots
        .iter()
        .filter(|r| **r != x)
        .map(|r| {
            let reduced_own = solved
                .joint
                .as_ref()
                .and_then(|j| Some(j.domains[j.sizes.iter().position(|s| s == r)?].clone()));
            let d = reduced_own.unwrap_or_else(|| {
                let (lo, hi) = root_range(grp, r, ranges);
                DimSet::interval(lo, hi)
            });
            (r.clone(), d)
        })
        .collect();
    // The values that pass with every value of the others, decided: none, wherever the
    // partners can break the definition. An other size's value fails with some partner when
    // the defined size's own set has two values (at most one equals `E`); the defined size's
    // value fails with some partner when `E` takes two values (or raises) over the others' own
    // sets. Else (a degenerate group) undecided, as before.
    let others_nonempty = domains.iter().all(|(_, d)| !d.is_empty());
    let x_breaks = own.count() >= 2 && others_nonempty;
    let e_breaks = others_nonempty && definition_varies(&e, &domains);
    for r in &grp.roots {
        accepted.insert(r.clone(), DimSet::empty());
        let (decided, domain) = match domains.iter().find(|(n, _)| n == r) {
            Some((_, d)) => (x_breaks, d.clone()),
            None => (e_breaks, own.clone()),
        };
        if !decided {
            unsure.insert(r.clone(), domain);
        }
    }
    Some(Solved {
        accepted,
        joint_count: None,
        undecided: (!unsure.is_empty()).then_some(why),
        unsure,
        joint: None,
        fates,
        tied: None,
        equation: None,
        defined: Some(Box::new(Defined {
            dim: x,
            expr: e,
            guard: gi,
            own,
            group: reduced,
            solved,
        })),
    })
}

/// [`solve_group_with`] without eliminating a defined size.
fn solve_group_plain(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
) -> Solved {
    let mut out = Solved {
        accepted: BTreeMap::new(),
        joint_count: None,
        undecided: None,
        unsure: BTreeMap::new(),
        joint: None,
        fates: vec![Fate::Solved(GuardFate::Joint); grp.guards.len()],
        tied: None,
        defined: None,
        equation: None,
    };
    let mut linking: Vec<Expr> = Vec::new();
    let mut linking_idx: Vec<usize> = Vec::new();
    for (i, g) in grp.guards.iter().enumerate() {
        if g.atoms().len() > 1 {
            linking.push(g.clone());
            linking_idx.push(i);
        }
    }
    for root in &grp.roots {
        own_set(&mut out, grp, root, ranges, &budget.limits, prover);
    }
    if linking.is_empty() {
        return out;
    }
    if !out.unsure.is_empty() {
        let culprit = out.unsure.keys().next().cloned().unwrap_or_default();
        // Nothing is proven for any root of the group while one of them is unsure.
        for r in &grp.roots {
            if let Some(a) = out.accepted.get_mut(r) {
                if !a.is_empty() {
                    out.unsure.insert(r.clone(), std::mem::take(a));
                }
            }
        }
        for &i in &linking_idx {
            out.fates[i] = Fate::Undecided(Undecided::Depends(culprit.clone()));
        }
        return out;
    }
    let own_domains: Vec<DimSet> = grp.roots.iter().map(|r| out.accepted[r].clone()).collect();
    // A linking guard that holds on every box of the sizes' own segments (interval bounds:
    // products, min, max, abs of monotone floor terms against constants) constrains nothing:
    // it is decided for every tuple before the search.
    let printed: Vec<Expr> = linking
        .into_iter()
        .filter(|g| !crate::bounds::holds_on_segments(g, &grp.roots, &own_domains))
        .collect();
    let (mut js, linking, domains) =
        search_linked(grp, &printed, &own_domains, budget, &mut out.tied);
    if let (Some(p), None) = (prover, &out.tied) {
        if prove_joint(p, &linking, &grp.roots, &domains, &mut js) {
            for &i in &linking_idx {
                out.fates[i] = Fate::Proved;
            }
        }
    }
    // The joint set over the sizes' own accepted sets (what `for_all` and the failing
    // examples are relative to): the tuples outside the narrowed box fail.
    for (l, name) in js.sizes.iter().enumerate() {
        if let Some(i) = grp.roots.iter().position(|r| r == name) {
            js.domains[l] = own_domains[i].clone();
        }
    }
    if let Some(t) = &out.tied {
        // The closed form is the answer: every tuple decided. Each size's values that pass with
        // every value of the others, from the tied set (over the sizes' own accepted sets).
        if let Some(sets) = tied_for_all(t, &grp.roots, &own_domains) {
            for (r, set) in grp.roots.iter().zip(sets) {
                out.accepted.insert(r.clone(), set);
            }
            // A count the closed form gives up on is not counted (absent), never a number.
            out.joint_count = t.count().map(|c| (c, js.box_count()));
            out.joint = Some(js);
            return out;
        }
        out.tied = None;
    }
    joint_answers(&mut out, &js, &grp.roots, &linking_idx);
    out.joint = Some(js);
    out
}

/// `root`'s own set: its range cut by each guard over it alone (the guards over no size with
/// the group's first root), each guard's fate recorded. A guard left undecided makes the whole
/// set unsure (no value is proven to pass it): `root` accepts nothing, and the set is kept as
/// unsure. Past the deadline of the command's budget no further guard is decided: each is
/// undecided, saying so ([`Undecided::Exhausted`]).
fn own_set(
    out: &mut Solved,
    grp: &Group,
    root: &String,
    ranges: &BTreeMap<String, (i128, i128)>,
    limits: &Limits,
    prover: Option<Prover>,
) {
    let (lo, hi) = root_range(grp, root, ranges);
    let mut set = DimSet::interval(lo, hi);
    let mut unsure = DimSet::empty();
    for (i, g) in grp.guards.iter().enumerate() {
        let atoms = g.atoms();
        if atoms.len() > 1
            || atoms.iter().any(|a| **a != **root)
            || (atoms.is_empty() && *root != grp.roots[0])
        {
            continue;
        }
        // The deadline, read without consulting it (a cut of `budget::enter_cut` falls where it
        // would without this check): past it, no further guard is decided.
        let past = crate::budget::remaining().is_some_and(|left| left.is_zero());
        if let Some(e) = past.then(crate::budget::reach_deadline).flatten() {
            let why = Undecided::Exhausted(e);
            out.undecided.get_or_insert_with(|| why.clone());
            out.fates[i] = Fate::Undecided(why);
            unsure = set.clone();
            continue;
        }
        let d = decide(g, root, &set, limits, prover);
        match d.set {
            Some(s) => set = s,
            None => {
                if let Fate::Undecided(why) = &d.fate {
                    out.undecided.get_or_insert_with(|| why.clone());
                }
                unsure = set.clone();
            }
        }
        out.fates[i] = d.fate;
    }
    if unsure.is_empty() {
        out.accepted.insert(root.clone(), set);
    } else {
        // No value is proven to pass the undecided guard: all of `set` is unsure.
        out.accepted.insert(root.clone(), DimSet::empty());
        out.unsure.insert(root.clone(), unsure);
    }
}

/// The joint set of the group's roots over their own sets under the linking guards `printed`,
/// with the guards and domains it was searched under. The guards as printed first: most groups
/// are decided so, and the normal form of hundreds of long guards costs more than the search
/// (a Swin-T's 418 linking guards: 0.8 s as printed, 14 s through the normal form). Guards that
/// tie sizes (`F(a) == G(b)`): a search that would evaluate more than TIE_FIRST_WORK guards is
/// not started before the closed form is tried ([`solve_tied`], kept in `tied`: it costs what
/// the problem without the tied sizes costs, whatever the ranges). Still undecided, the guards
/// in normal form ([`normal_form`]), then, without ties among the guards as printed, the closed
/// form of sizes tied in the normal form.
fn search_linked(
    grp: &Group,
    printed: &[Expr],
    own_domains: &[DimSet],
    budget: &Budget,
    tied: &mut Option<TiedSet>,
) -> (JointSet, Vec<Expr>, Vec<DimSet>) {
    // Divisibility of products (`Eq(Mod(x*y, 2560), 0)`): in closed form, whatever the ranges.
    if let Some(js) = super::divisibility::joint(&grp.roots, own_domains, printed) {
        return (js, printed.to_vec(), own_domains.to_vec());
    }
    let has_tie = printed.iter().any(|g| Tie::of(g).is_some());
    let quick = Budget {
        work: budget.work.min(TIE_FIRST_WORK),
        ..*budget
    };
    let mut js = solve_joint(
        &grp.roots,
        own_domains,
        printed,
        if has_tie { &quick } else { budget },
    );
    if has_tie && js.undecided.is_some() {
        *tied = solve_tied(&grp.roots, own_domains, printed, budget)
            .filter(|t| t.reduced.undecided.is_none() && t.count().is_some());
        if tied.is_none() {
            js = solve_joint(&grp.roots, own_domains, printed, budget);
        }
    }
    let (linking, domains) = if js.undecided.is_none() || tied.is_some() {
        (printed.to_vec(), own_domains.to_vec())
    } else {
        let (linking, domains) = normal_form(grp, printed, own_domains, &budget.limits);
        js = solve_joint(&grp.roots, &domains, &linking, budget);
        (linking, domains)
    };
    if js.undecided.is_some() && !has_tie {
        // Sizes tied by `F(a) == F(b)` over ranges no enumeration covers: in closed form.
        // Over the guards as printed (the ties' own normal form reads them) and the sizes'
        // own accepted sets.
        *tied = solve_tied(&grp.roots, own_domains, printed, budget)
            .filter(|t| t.reduced.undecided.is_none() && t.count().is_some());
    }
    (js, linking, domains)
}

/// The linking guards in normal form over the sizes' accepted sets (identities of the
/// program's code seen as such), with the narrowed domains: each holds at exactly the tuples
/// the original one does, and every tuple outside the narrowed box fails a guard: a guard left
/// over one size narrowed it. Only the guards over a size too wide to enumerate: the others the
/// search enumerates as printed (a Swin-T's batch, claimed to 2^63-1, is in 160 of its 519
/// linking guards, H and W in 116..227 in all of them).
fn normal_form(
    grp: &Group,
    printed: &[Expr],
    own_domains: &[DimSet],
    limits: &Limits,
) -> (Vec<Expr>, Vec<DimSet>) {
    let own: Vec<Expr> = grp
        .guards
        .iter()
        .filter(|g| g.atoms().len() == 1)
        .cloned()
        .collect();
    let wide = |g: &Expr| {
        g.atoms().iter().any(|a| {
            grp.roots
                .iter()
                .position(|r| **r == **a)
                .is_some_and(|i| own_domains[i].count() > ENUMERABLE)
        })
    };
    let (to_normal, as_printed): (Vec<Expr>, Vec<Expr>) = if printed.iter().any(wide) {
        printed.iter().cloned().partition(|g| wide(g))
    } else {
        (printed.to_vec(), Vec::new())
    };
    let (mut linking, domains) = normalize(&to_normal, &own, &grp.roots, own_domains, limits);
    linking.extend(as_printed);
    (linking, domains)
}

/// Past the budget, whether Z3 proves that every combination of `domains` (one per root)
/// passes the guards `linking`: then `js` holds the whole box, decided. Else `js`'s undecided
/// reason says what Z3 found (a failing combination, or why it stopped). `false` when `js` is
/// decided already.
fn prove_joint(
    p: Prover,
    linking: &[Expr],
    roots: &[String],
    domains: &[DimSet],
    js: &mut JointSet,
) -> bool {
    let Some(u) = &js.undecided else {
        return false;
    };
    let refs: Vec<&Expr> = linking.iter().collect();
    let sets: Vec<(&str, &DimSet)> = roots.iter().map(|r| r.as_str()).zip(domains).collect();
    let why = match p(&refs, &sets) {
        BoxAnswer::Holds => {
            js.tree = Tree::full(&js.domains);
            js.undecided = None;
            return true;
        }
        BoxAnswer::Fails(pt) => format!("Z3 found the failing combination {pt:?}"),
        // Z3 ran out of the same budget: said once.
        BoxAnswer::Unknown(z) if z == u.reason.to_string() => return false,
        BoxAnswer::Unknown(z) => format!("Z3: {z}"),
    };
    if let Some(u) = &mut js.undecided {
        let because = Box::new(u.reason.clone());
        u.reason = Undecided::NotProved { because, z3: why };
    }
    false
}

/// Each root's values that pass with every value of the others, from the tied set `t` over
/// the roots' own accepted sets `own_domains`; `None` when one is not computed.
fn tied_for_all(t: &TiedSet, roots: &[String], own_domains: &[DimSet]) -> Option<Vec<DimSet>> {
    let own: BTreeMap<&str, &DimSet> = roots.iter().map(String::as_str).zip(own_domains).collect();
    let domain = |n: &str| own.get(n).map(|d| (*d).clone());
    roots.iter().map(|r| t.for_all(r, &domain).ok()).collect()
}

/// The group's answers from its joint set `js`: the count, the undecided part (each linking
/// guard of `linking_idx` undecided with it, each size's values in it unsure), and each root's
/// values that pass with every value of the others; when one of those has no closed form
/// within the budget, every root is undecided (the joint set stays exact).
fn joint_answers(out: &mut Solved, js: &JointSet, roots: &[String], linking_idx: &[usize]) {
    out.joint_count = Some((js.count(), js.box_count()));
    if let Some(u) = &js.undecided {
        let why = Undecided::Budget {
            sizes: roots.to_vec(),
            limit: Box::new(u.reason.clone()),
            combinations: u.count,
        };
        out.undecided = Some(why.clone());
        for &i in linking_idx {
            out.fates[i] = Fate::Undecided(why.clone());
        }
        for (l, name) in js.sizes.iter().enumerate() {
            let unsure = if l == 0 {
                u.sides[0].clone()
            } else {
                js.domains[l].clone()
            };
            out.unsure.insert(name.clone(), unsure);
        }
    }
    let for_all: Result<Vec<DimSet>, crate::error::Error> = js.for_all_levels().map(|sets| {
        roots
            .iter()
            .map(|r| js.level(r).map_or_else(DimSet::empty, |l| sets[l].clone()))
            .collect()
    });
    match for_all {
        Ok(sets) => {
            for (r, set) in roots.iter().zip(sets) {
                out.accepted.insert(r.clone(), set);
            }
        }
        Err(e) => {
            // A projection of the joint set has no closed form within the budget: the joint
            // set stays exact, but no size's own answer is shown, so each is undecided.
            let why = Undecided::PerSize {
                sizes: roots.to_vec(),
                error: Box::new(e),
            };
            out.undecided.get_or_insert_with(|| why.clone());
            for &i in linking_idx {
                if !matches!(out.fates[i], Fate::Undecided(_)) {
                    out.fates[i] = Fate::Undecided(why.clone());
                }
            }
            // `js.domains` is in the search's level order (`js.sizes`), not in `roots`'.
            for (r, d) in js.sizes.iter().zip(&js.domains) {
                out.accepted.insert(r.clone(), DimSet::empty());
                out.unsure.insert(r.clone(), d.clone());
            }
        }
    }
}

/// The report of a joint set with tied sizes: its examples re-checked against every guard of
/// the group (a failing "accepted" or passing "rejected" tuple is dropped, never shown).
pub(super) fn tied_report(
    t: &TiedSet,
    grp: &Group,
    name: &dyn Fn(&str) -> String,
    label: &dyn Fn(&str) -> String,
) -> Option<TiedReport> {
    let sources = t.sizes();
    let passes = |tuple: &[i128]| {
        let env = |a: &str| sources.iter().position(|s| s == a).map(|i| tuple[i]);
        grp.guards
            .iter()
            .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
    };
    let accepted = t.count()?;
    let shared: Vec<&str> = t.shared().iter().map(|x| x.b.as_str()).collect();
    let ties: Vec<TieReport> = t
        .ties
        .iter()
        .map(|(x, own)| TieReport {
            dims: [name(&x.a), name(&x.b)],
            block: x.d,
            offset: x.c,
            shift: x.s,
            range: [own.min().unwrap_or(0), own.max().unwrap_or(-1)],
            own: Some(Feasible::from(own)),
            shared_dim: shared.contains(&x.b.as_str()),
        })
        .collect();
    let words: Vec<String> = t
        .ties
        .iter()
        .map(|(x, _)| {
            let b = if x.s == 0 {
                label(&x.b)
            } else {
                crate::python::linear(crate::num::q(1), &label(&x.b), x.s)
            };
            let mut same = if x.d == 1 {
                format!("{b} equals {}", label(&x.a))
            } else {
                format!(
                    "{b} lies in the block of {} values holding {} (blocks start at {} mod {})",
                    x.d,
                    label(&x.a),
                    (-x.c).rem_euclid(x.d),
                    x.d
                )
            };
            if let Some(e) = &x.extra {
                same = format!(
                    "{same}, where {}",
                    e.substitute(&x.a, &Expr::sym(&label(&x.a)))
                );
            }
            if shared.contains(&x.b.as_str()) {
                format!("{same}; one Dim for both is sound")
            } else {
                same
            }
        })
        .collect();
    let (boxes, complete) = t.reduced.tree.boxes(100);
    if !complete {
        return None;
    }
    Some(TiedReport {
        boxes: boxes
            .iter()
            .map(|b| b.iter().map(Feasible::from).collect())
            .collect(),
        dims: sources.iter().map(|s| name(s)).collect(),
        sources: sources.clone(),
        accepted,
        accepted_examples: t
            .accepted_examples(5)
            .into_iter()
            .filter(|x| passes(x))
            .collect(),
        rejected_examples: t
            .rejected_examples(5)
            .into_iter()
            .filter(|x| !passes(x))
            .collect(),
        summary: format!(
            "decided in closed form: {} tuples pass; {}",
            crate::report::count_text(accepted),
            words.join("; ")
        ),
        ties,
    })
}

/// Tuples of a largest box above which it is re-checked at a sample only.
pub const BOX_RECHECK: u128 = 256;

/// Guard evaluations the re-check of a largest box may spend (the exact evaluator costs
/// microseconds per evaluation on guards of thousands of characters): past it, fewer tuples.
const BOX_RECHECK_WORK: u128 = 40_000;

/// The tuples of a box (one progression per side) its re-check evaluates: all of them when
/// there are at most [`BOX_RECHECK`] and the work allows, else every corner and tuples spread
/// evenly over the box, at most as many as the work allows (at least 16).
pub(super) fn box_sample(sides: &[Progression], count: u128, guards: usize) -> Vec<Vec<i128>> {
    let per = (BOX_RECHECK_WORK / (guards.max(1) as u128)).max(16);
    let n = BOX_RECHECK.min(per);
    let nth = |mut k: u128| -> Vec<i128> {
        let mut t = vec![0; sides.len()];
        for (l, p) in sides.iter().enumerate().rev() {
            let c = p.count().max(1);
            t[l] = p.lo + (k % c) as i128 * p.modulus;
            k /= c;
        }
        t
    };
    if count <= n {
        return (0..count).map(nth).collect();
    }
    let mut out: Vec<Vec<i128>> = Vec::new();
    for mask in 0..(1u32 << sides.len().min(16)) {
        let t: Vec<i128> = sides
            .iter()
            .enumerate()
            .map(|(l, p)| if mask >> l & 1 == 1 { p.hi } else { p.lo })
            .collect();
        if !out.contains(&t) {
            out.push(t);
        }
    }
    let step = count / n;
    for k in 0..n {
        let t = nth(k * step + step / 2);
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Most values a size may take for the joint search to enumerate it as its guards are printed,
/// without their normal form ([`normalize`]).
const ENUMERABLE: u128 = 1 << 16;

/// Guard evaluations a search of a group with tied sizes may start with before the closed form
/// of the ties is tried ([`solve_group_with`]).
const TIE_FIRST_WORK: f64 = 1e5;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::joint::group;
    use crate::syntax::parse_guard;
    use proptest::prelude::*;

    fn g(s: &str) -> Expr {
        parse_guard(s).unwrap()
    }

    #[test]
    fn equal_sizes_share_a_root() {
        let guards = vec![
            g("L['image2'].size()[2] == L['image1'].size()[2]"),
            g("L['image1'].size()[2] % 8 == 0"),
            g("(L['image2'].size()[2] // 8) % 2 == 1"),
        ];
        let groups = group(&guards, &[]);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].roots.len(), 1);
        let ranges = BTreeMap::from([
            ("L['image1'].size()[2]".to_string(), (135, 2160)),
            ("L['image2'].size()[2]".to_string(), (135, 2160)),
        ]);
        let s = solve_group(&groups[0], &ranges, &Limits::default());
        let set = &s.accepted[&groups[0].roots[0]];
        assert!(set.iter().all(|x| x % 16 == 8));
        assert_eq!(set.count(), (2152 - 136) / 16 + 1);
    }

    #[test]
    fn one_wide_root_costs_nothing() {
        let guards = vec![g("(h + w) % 8 == 0")];
        let groups = group(&guards, &["h".into(), "w".into()]);
        let ranges = BTreeMap::from([("h".to_string(), (2, 9)), ("w".to_string(), (2, 1 << 62))]);
        let s = solve_group(&groups[0], &ranges, &Limits::default());
        // For every h, a w exists; no w works for every h in 2..9.
        assert!(s.accepted["w"].is_empty());
        assert!(s.accepted["h"].is_empty());
        let (pass, total) = s.joint_count.unwrap();
        assert_eq!(total, 8 * ((1u128 << 62) - 1));
        assert_eq!(
            pass,
            (2..=9)
                .map(|h| DimSet::progression(2, 1 << 62, 8, -h).count())
                .sum::<u128>()
        );
    }

    #[test]
    fn products_link_roots() {
        // resnet18 AUTO: ((1 + (w-1)//2) * (1 + (h-1)//2)) != 1 links h and w.
        let guards = vec![g("((1 + (((-1) + w) // 2))*(1 + (((-1) + h) // 2))) != 1")];
        let groups = group(&guards, &["h".into(), "w".into()]);
        assert_eq!(groups.len(), 1);
        let ranges = BTreeMap::from([("h".to_string(), (1, 20)), ("w".to_string(), (1, 20))]);
        let s = solve_group(&groups[0], &ranges, &Limits::default());
        // Only h, w in {1, 2} make both factors 1.
        assert_eq!(s.joint_count, Some((400 - 4, 400)));
        assert_eq!(s.accepted["h"].min(), Some(3));
        assert_eq!(s.accepted["w"].min(), Some(3));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Random joint systems over two and three sizes against brute force on small boxes.
        #[test]
        fn joint_systems_match_brute_force(
            k in 1i128..4, off in -3i128..4, m1 in 2i128..6, r1 in 0i128..6, m2 in 2i128..6,
            prod in 0i128..40, three in any::<bool>(), lo in 1i128..5, w in 4i128..14,
        ) {
            let mut guards = vec![
                g(&format!("b == {k}*a + {off}")),
                g(&format!("(a + b) % {m1} != {}", r1 % m1)),
                g(&format!("a * c >= {prod}")),
            ];
            if three {
                guards.push(g(&format!("(c // 2) % {m2} != 0")));
            }
            let names = ["a", "b", "c"];
            let ranges: BTreeMap<String, (i128, i128)> = names.iter().map(|n| (n.to_string(), (lo, lo + w))).collect();
            let groups = group(&guards, &[]);
            prop_assert_eq!(groups.len(), 1);
            let s = solve_group(&groups[0], &ranges, &Limits::default());
            // Brute force over the box: a value of a root is accepted when it passes for every
            // value of the other roots that passes its own one-size guards.
            let holds = |a: i128, b: i128, c: i128| {
                let env = |n: &str| match n { "a" => Some(a), "b" => Some(b), "c" => Some(c), _ => None };
                guards.iter().all(|g| matches!(g.eval(&env), Ok(crate::expr::Value::Bool(true))))
            };
            let box_ = lo..=lo + w;
            let mut count = 0u128;
            let mut total = 0u128;
            for a in box_.clone() {
                let b = k * a + off;
                if !box_.contains(&b) { continue; }
                for c in box_.clone() {
                    // c's own guard (three) filters c's values before the product.
                    if three && (c / 2) % m2 == 0 { continue; }
                    // a's own one-size guard after substitution: (a + b) % m1 != r1.
                    if (a + b).rem_euclid(m1) == r1 % m1 { continue; }
                    total += 1;
                    if holds(a, b, c) { count += 1; }
                }
            }
            prop_assert_eq!(s.joint_count.map(|j| j.1), Some(total));
            prop_assert_eq!(s.joint_count.map(|j| j.0), Some(count));
        }
    }
}
