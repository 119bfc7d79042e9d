//! The one analysis stage: guards over named sizes in, exact answers out.
//!
//! Every command reaches its answer here. A front end turns its input into a [`Problem`]:
//! `diagnose` from any text form (the message's dimensions, their guards, equalities and
//! relations), `check` from a program (its input sizes and claimed ranges, `guards_code`, the
//! run-time asserts and implied limits found in the graph), `verify` from guards and a user's
//! spec (the spec's sets as ranges, the sizes it ties as equalities). [`analyze`] groups the
//! guards by the sizes they link ([`crate::joint::group`]), solves each group exactly (the
//! periodic engine, enumeration, the joint search, then the prover for what is left), and
//! chooses each linked group's spec once ([`crate::joint::Choice`]). The front end then reads
//! the same facts for every size ([`GroupAnswer::member`]) and renders its report: the answers
//! never depend on the input form, only the wording does.
//!
//! ```
//! use dimguard_solver::analyze::{analyze, Problem, Size};
//! use dimguard_solver::parse_guard;
//!
//! let mut p = Problem::default();
//! for (v, n) in [("h", "h"), ("w", "w")] {
//!     p.sizes.push(Size::new(v, n, Some((2, 64))));
//! }
//! // Linked: a `h*w <= 256` token budget.
//! p.guards.push(parse_guard("h*w <= 256").unwrap());
//! let a = analyze(&p, &Default::default(), None, &|_| true);
//! let g = &a.groups[0];
//! let h = g.member("h").unwrap();
//! assert_eq!(h.linked_with, vec!["w".to_string()]);
//! // Some partner passes with every h of 2..64 (w = 2), but no single Dim of h is sound alone.
//! assert_eq!(h.some.unwrap().count(), 63);
//! assert!(g.linked.as_ref().unwrap().restricts());
//! ```

mod answer;
mod group;
mod size;

pub use answer::{describe, suggestions, Ranked, WITHHELD};
pub use group::{Alone, GroupAnswer, MemberAnswer, OwnSet};
pub use size::{
    claimed_answer, group_line, own_set, set_and_specs, size_answer, Asked, Claimed, GroupLine,
    Partners,
};

use crate::engine::Limits;
use crate::joint::{self, Group, Prover};
use crate::linked::Budget;
use crate::report::GuardFate;
use crate::types::{DimSet, Expr};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Options of an analysis (every command's).
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Traced sizes: `(None, n)` for every dimension, `(Some(name), n)` for one.
    pub examples: Vec<(Option<String>, i128)>,
    /// Solver limits.
    pub limits: Limits,
}

impl Options {
    /// The example size given for `name` (by name, else the bare `--example N`).
    pub fn example_for(&self, name: &str) -> Option<i128> {
        self.examples
            .iter()
            .rev()
            .find(|(n, _)| n.as_deref() == Some(name))
            .or_else(|| self.examples.iter().rev().find(|(n, _)| n.is_none()))
            .map(|e| e.1)
    }
}

/// One size of a [`Problem`]: a variable the guards name.
#[derive(Debug, Clone, PartialEq)]
pub struct Size {
    /// The variable the guards use (`L['x'].size()[2]`, `s16`).
    pub var: String,
    /// The name reports give it (`h`, `x_2`).
    pub name: String,
    /// The name summaries use (defaults to `name`).
    pub label: String,
    /// The values it may take (`None`: torch's default, 2..2^63-1).
    pub range: Option<(i128, i128)>,
    /// How many values it is claimed to take (a program's claimed progression; defaults to the
    /// range's count).
    pub count: Option<u128>,
    /// The traced (example) value, when known.
    pub example: Option<i128>,
}

impl Size {
    /// A size with a range and no traced value.
    pub fn new(var: &str, name: &str, range: Option<(i128, i128)>) -> Size {
        Size {
            var: var.into(),
            name: name.into(),
            label: name.into(),
            range,
            count: None,
            example: None,
        }
    }
}

/// What goes into the stage: the sizes and every guard over them. A guard's origin is its index
/// in `guards`: the front end keeps, per index, where the guard came from (a line of the
/// message, a run-time assert, a claim, an equality), and reads each guard's fate back by it.
#[derive(Debug, Clone, Default)]
pub struct Problem {
    /// The sizes, in the order reports list them.
    pub sizes: Vec<Size>,
    /// Every guard, over the sizes' variables (equalities and relations as `==` guards).
    pub guards: Vec<Expr>,
    /// Ranges of variables no size stands for (a root of sizes a spec ties together).
    pub extra_ranges: BTreeMap<String, (i128, i128)>,
    /// Whether each group is solved as independent parts ([`joint::solve_parts`]): `check` and
    /// `diagnose` (a guard naming a size the problem does not list keeps its sizes together);
    /// `verify` keeps each group whole.
    pub parts: bool,
    /// Whether a size alone (a group of one size) is solved guard by guard: each of its guards
    /// decided over its whole range and kept ([`Analysis::alone`], a small answer of its own:
    /// `diagnose`'s line per guard), the set they leave its answer. Else its guards narrow its
    /// set one after another, as in any group (`check`). A variable alone that is none of
    /// [`Problem::sizes`] (a guard over a partner the text gives no dimension) is then left
    /// unsolved, in [`Analysis::skipped`]: no size's answer reads it; a size alone that no
    /// guard names is in neither (nothing to solve).
    pub by_guard: bool,
}

impl Problem {
    /// The size a variable stands for.
    pub fn size(&self, var: &str) -> Option<&Size> {
        self.sizes.iter().find(|s| s.var == var)
    }

    /// The report name of a variable (its size's name, else the variable).
    pub fn name_of(&self, var: &str) -> String {
        self.size(var)
            .map_or_else(|| var.to_string(), |s| s.name.clone())
    }

    /// Every variable's range: its size's range, torch's default for a size the guards name
    /// without one, and the extra ranges.
    pub fn ranges(&self) -> BTreeMap<String, (i128, i128)> {
        let mut r: BTreeMap<String, (i128, i128)> = self
            .sizes
            .iter()
            .map(|s| {
                (
                    s.var.clone(),
                    s.range
                        .unwrap_or((crate::types::DEFAULT_MIN, crate::types::SIZE_MAX)),
                )
            })
            .collect();
        r.extend(self.extra_ranges.iter().map(|(k, v)| (k.clone(), *v)));
        for g in &self.guards {
            for a in g.atoms() {
                // A size named only inside a guard (`x.size()[3]`) has torch's default range:
                // it is dynamic (0 and 1 would have been specialized), never negative.
                if a.contains(".size()[") || a.contains(".shape[") {
                    r.entry(a.to_string())
                        .or_insert((crate::types::DEFAULT_MIN, crate::types::SIZE_MAX));
                }
            }
        }
        r
    }
}

/// What comes out of the stage.
#[derive(Debug, Clone, Default)]
pub struct Analysis {
    /// Every group the selection kept, solved (but the sizes alone solved guard by guard).
    pub groups: Vec<GroupAnswer>,
    /// Every size alone solved guard by guard ([`Problem::by_guard`]), in the order met.
    pub alone: Vec<Alone>,
    /// The groups the selection left out, unsolved (their guards have no fate here).
    pub skipped: Vec<Group>,
    /// Equalities `(a, b)` between sizes that every accepted tuple satisfies, stated before the
    /// groups were solved again ([`analyze`]): `b` is written as `a`.
    pub implied: Vec<(String, String)>,
    /// Each guard's fate (and, undecided, why), by its index in [`Problem::guards`]; a guard
    /// that states a relation between sizes is [`GuardFate::Relation`].
    pub fates: BTreeMap<usize, (GuardFate, Option<String>)>,
    /// Where each size's answer is, in `groups` or in `alone` (a text of 75,000 sizes asks for
    /// each: a scan per size is quadratic).
    by_var: HashMap<String, Slot>,
}

/// Where a size's answer is in an [`Analysis`].
#[derive(Debug, Clone, Copy)]
enum Slot {
    /// `groups[i]`.
    Group(usize),
    /// `alone[i]`.
    Alone(usize),
}

impl Analysis {
    /// The group a size belongs to, and what it knows about the size.
    pub fn member(&self, var: &str) -> Option<(&GroupAnswer, MemberAnswer<'_>)> {
        let g = self.group(var)?;
        g.member(var).map(|m| (g, m))
    }

    /// The group a size belongs to (none for a size alone solved guard by guard: [`Self::alone`]).
    pub fn group(&self, var: &str) -> Option<&GroupAnswer> {
        match self.by_var.get(var)? {
            Slot::Group(i) => self.groups.get(*i),
            Slot::Alone(_) => None,
        }
    }

    /// A size alone's answer, solved guard by guard ([`Problem::by_guard`]).
    pub fn alone(&self, var: &str) -> Option<&Alone> {
        match self.by_var.get(var)? {
            Slot::Alone(i) => self.alone.get(*i),
            Slot::Group(_) => None,
        }
    }

    /// A size alone's answer, to move its decided sets into a report (its entry's lines:
    /// [`Alone::take_decision`]).
    pub fn alone_mut(&mut self, var: &str) -> Option<&mut Alone> {
        match self.by_var.get(var)? {
            Slot::Alone(i) => self.alone.get_mut(*i),
            Slot::Group(_) => None,
        }
    }

    /// The members a size is derived from: size -> (root, coef, offset), for every member of
    /// every group (a size alone is its own root).
    pub fn aliases(&self) -> BTreeMap<String, (String, i128, i128)> {
        self.groups
            .iter()
            .flat_map(|g| &g.grp.members)
            .map(|m| (m.name.clone(), (m.root.clone(), m.coef, m.offset)))
            .chain(self.by_var.iter().filter_map(|(v, s)| match s {
                Slot::Alone(_) => Some((v.clone(), (v.clone(), 1, 0))),
                Slot::Group(_) => None,
            }))
            .collect()
    }
}

/// Solves `problem`: groups its guards by the sizes they link, solves every group `select`
/// keeps within `budget` (asking `prover`, when given, before calling a guard undecided), and
/// chooses each linked group's spec through the traced sizes.
///
/// A group of more than two sizes whose joint set lies on `a == b` for two of them (a program
/// whose two inputs must be equal, through guards no linear relation states: `8 + 8*((w1 -
/// 1)//8) == w2`) is solved again with that equality stated: the joint set is the same (the
/// equality is implied), but `b` becomes a size derived from `a`, so the spec writes `b` as `a`
/// instead of fixing both to one box (no box holds a diagonal). Re-checked: the second answer is
/// kept only when every group it changed accepts exactly as many tuples as before.
pub fn analyze(
    problem: &Problem,
    budget: &Budget,
    prover: Option<Prover>,
    select: &dyn Fn(&Group) -> bool,
) -> Analysis {
    let first = solve_all(problem, &problem.guards, &[], budget, prover, select);
    let implied: Vec<(String, String)> = first.groups.iter().flat_map(implied_equalities).collect();
    if implied.is_empty() {
        return first;
    }
    let mut guards = problem.guards.clone();
    guards.extend(implied.iter().map(|(a, b)| {
        Expr::Cmp(
            crate::types::CmpOp::Eq,
            Box::new(Expr::sym(b)),
            Box::new(Expr::sym(a)),
        )
    }));
    let mut second = solve_all(problem, &guards, &implied, budget, prover, select);
    // The joint sets must be unchanged: the total number of accepted tuples of the groups that
    // hold an implied equality, before and after.
    let tuples = |a: &Analysis| -> Option<u128> {
        a.groups
            .iter()
            .filter(|g| {
                implied
                    .iter()
                    .any(|(x, _)| g.grp.members.iter().any(|m| &m.name == x))
            })
            .map(|g| {
                let l = g.linked.as_ref()?;
                (g.solved.undecided.is_none()).then_some(l.report.accepted)
            })
            .sum()
    };
    match (tuples(&first), tuples(&second)) {
        (Some(x), Some(y)) if x == y => {
            second.fates.retain(|&o, _| o < problem.guards.len());
            for g in &mut second.groups {
                let Some(l) = g.linked.as_mut() else { continue };
                for (a, b) in &implied {
                    if g.grp.members.iter().any(|m| &m.name == a) {
                        l.report
                            .equal
                            .push([problem.name_of(b), problem.name_of(a)]);
                    }
                }
            }
            second.implied = implied;
            second
        }
        _ => first,
    }
}

/// Pairs of roots `(a, b)` of a decided group of more than two roots on which every accepted
/// tuple has `a == b` (every box of its joint set, listed in full, has the same one value on
/// both sides).
fn implied_equalities(g: &GroupAnswer) -> Vec<(String, String)> {
    const BOXES: usize = 100_000;
    let Some(l) = g.linked.as_ref() else {
        return vec![];
    };
    if g.grp.roots.len() <= 2 || g.solved.undecided.is_some() || l.joint.undecided.is_some() {
        return vec![];
    }
    let (boxes, complete) = l.joint.tree.boxes(BOXES);
    if !complete || boxes.is_empty() {
        return vec![];
    }
    let n = l.joint.sizes.len();
    let mut out = Vec::new();
    let mut taken: Vec<bool> = vec![false; n];
    for i in 0..n {
        for j in i + 1..n {
            if taken[j] || taken[i] {
                continue;
            }
            let equal = boxes.iter().all(|b| {
                let (x, y) = (&b[i], &b[j]);
                x.count() == 1 && y.count() == 1 && x.min() == y.min()
            });
            // A diagonal of one point is already a box (both sizes static): nothing to state.
            let values: std::collections::BTreeSet<Option<i128>> =
                boxes.iter().map(|b| b[i].min()).collect();
            if equal && values.len() > 1 {
                taken[j] = true;
                out.push((l.joint.sizes[i].clone(), l.joint.sizes[j].clone()));
            }
        }
    }
    out
}

/// The share of the time left that the sizes alone take ([`Problem::by_guard`]): each one's
/// entry is still to be written from its set (ranked suggestions re-checked value by value),
/// which costs about twice as much as deciding its guards. Past it a size alone is not solved:
/// undecided, with the budget's reason (`tests/hostile.rs`, 1,000 sizes under 1 s).
const ALONE_SHARE: f64 = 0.4;

/// [`analyze`] over `guards` (the problem's, and the `implied` equalities after them: a size
/// they write as another still counts its own claimed values among the claimed combinations).
fn solve_all(
    problem: &Problem,
    guards: &[Expr],
    implied: &[(String, String)],
    budget: &Budget,
    prover: Option<Prover>,
    select: &dyn Fn(&Group) -> bool,
) -> Analysis {
    let vars: Vec<String> = problem.sizes.iter().map(|s| s.var.clone()).collect();
    let ranges = problem.ranges();
    let sizes: HashSet<&str> = vars.iter().map(String::as_str).collect();
    let alone = |g: &Group| problem.by_guard && g.members.len() == 1 && g.roots.len() == 1;
    // A size alone that no guard names has nothing to solve: it is in no group of the answer
    // (its report says so; a text of 75,000 sizes whose guards could not be read holds none).
    let (groups, skipped): (Vec<Group>, Vec<Group>) = joint::group(guards, &vars)
        .into_iter()
        .filter(|g| !alone(g) || !g.guards.is_empty())
        .partition(|g| select(g) && (!alone(g) || sizes.contains(g.roots[0].as_str())));
    let multi = groups.iter().filter(|g| g.roots.len() > 1).count() as u64;
    let mut out = Analysis {
        skipped,
        ..Default::default()
    };
    // (A text of 75,000 sizes alone: no regrowth of the vector and the index.)
    let lone = groups.iter().filter(|g| alone(g)).count();
    out.alone.reserve_exact(lone);
    out.by_var.reserve(lone);
    let share = problem
        .by_guard
        .then(|| crate::budget::share_of_remaining(ALONE_SHARE))
        .flatten();
    let mut k = 0;
    for grp in groups {
        if alone(&grp) {
            let (var, a) = by_guard(grp, &ranges, &budget.limits, prover, share);
            for (d, &o) in a.own.decisions.iter().zip(&a.origin) {
                out.fates.insert(o, d.fate.label());
            }
            out.by_var.insert(var, Slot::Alone(out.alone.len()));
            out.alone.push(a);
            continue;
        }
        if grp.roots.len() > 1 {
            crate::budget::progress(
                format!("solving linked sizes {}", grp.roots.join(", ")),
                k,
                multi,
            );
            k += 1;
        }
        // Each group as independent parts where the guards joining them hold on every tuple
        // of the parts' answers (`joint::solve_parts`): H and W of an image stay apart.
        let parts = if problem.parts {
            joint::solve_parts(&grp, guards, &ranges, budget, prover, &|v| {
                problem.size(v).is_some()
            })
        } else {
            let solved = joint::solve_group_with(&grp, &ranges, budget, prover);
            vec![(grp, solved)]
        };
        for (grp, solved) in parts {
            let g = answer(problem, grp, solved, implied, (&ranges, budget));
            for m in &g.grp.members {
                out.by_var
                    .insert(m.name.clone(), Slot::Group(out.groups.len()));
            }
            for (i, &o) in g.grp.origin.iter().enumerate() {
                out.fates.insert(o, g.solved.fates[i].label());
            }
            for &o in &g.grp.relations {
                out.fates.insert(o, (GuardFate::Relation, None));
            }
            for &o in &g.grp.held {
                out.fates.insert(o, (GuardFate::Joint, None));
            }
            out.groups.push(g);
        }
    }
    out
}

/// A solved group's answer: its joint set as reported, and its one choice of spec through the
/// traced sizes.
fn answer(
    problem: &Problem,
    grp: Group,
    solved: joint::Solved,
    implied: &[(String, String)],
    (ranges, budget): (&BTreeMap<String, (i128, i128)>, &Budget),
) -> GroupAnswer {
    let name = |v: &str| problem.name_of(v);
    let label = |v: &str| problem.size(v).map_or(v.to_string(), |s| s.label.clone());
    let own = |v: &str| match problem.size(v).and_then(|s| s.count) {
        Some(c) => c,
        None => {
            let (lo, hi) = joint::root_range(&grp, v, ranges);
            DimSet::interval(lo, hi).count()
        }
    };
    let count = |v: &str| {
        implied
            .iter()
            .filter(|(a, _)| a == v)
            .fold(own(v), |c, (_, b)| c.saturating_mul(own(b)))
    };
    let linked = joint::linked(&solved, &grp, budget, &name, &label, &count);
    let traced = |v: &str| problem.size(v)?.example;
    let example_box = linked
        .as_ref()
        .and_then(|l| l.example_box(&l.point(&grp, &traced)?));
    let choice = linked
        .as_ref()
        .and_then(|l| l.choice(&grp, &traced, example_box.as_ref()));
    // Past the deadline a group with no choice may have been cut short (its box search
    // stopped): its members say so ([`GroupAnswer::cut`]).
    let cut = linked
        .as_ref()
        .filter(|_| choice.is_none())
        .and(crate::budget::exhausted())
        .map(crate::report::Undecided::Exhausted);
    GroupAnswer {
        grp,
        solved,
        linked,
        example_box,
        choice,
        cut,
    }
}

/// A size alone solved guard by guard ([`Problem::by_guard`]): each guard decided over the
/// size's whole range ([`own_set`]), and the set they leave; where one is undecided (or the
/// budget ran out), nothing proven, with why. Past `share` (the sizes alone's share of the time
/// left, [`ALONE_SHARE`]) its guards are not decided: undecided, with the budget's reason.
fn by_guard(
    grp: Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    limits: &Limits,
    prover: Option<Prover>,
    share: Option<std::time::Instant>,
) -> (String, Alone) {
    let root = &grp.roots[0];
    let range = joint::root_range(&grp, root, ranges);
    let (lo, hi) = range;
    let domain = DimSet::interval(lo, hi);
    let past = share
        .filter(|s| std::time::Instant::now() >= *s)
        .and_then(|_| crate::budget::share_spent("solving the sizes alone", ALONE_SHARE));
    let decisions: Vec<joint::Decision> = match past {
        Some(e) => grp
            .guards
            .iter()
            .map(|_| joint::Decision {
                set: None,
                fate: joint::Fate::Undecided(crate::report::Undecided::Exhausted(e)),
                period: None,
            })
            .collect(),
        None => grp
            .guards
            .iter()
            .map(|g| joint::decide(g, root, &domain, limits, prover))
            .collect(),
    };
    let set = group::leave(&decisions, &domain);
    let own = OwnSet {
        decisions,
        set,
        domain,
    };
    let Group {
        mut roots, origin, ..
    } = grp;
    (roots.swap_remove(0), Alone { range, origin, own })
}
