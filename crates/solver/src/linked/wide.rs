//! Joint sets of boxes too wide to enumerate (sizes claimed up to `2^63 - 1`), decided by
//! bounds over boxes and the exact search on small ones.

use super::tree::{from_boxes, minus, union};
use super::{Budget, JointSet, Stats, Tree, Undecided};
use crate::bounds::{truth, Bounds, Tri};
use crate::report::{SearchLimit, Undecided as Why};
use crate::types::{DimSet, Expr};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Boxes [`solve_wide`] examines at most before what is left is reported undecided.
const WIDE_BOXES: usize = 2_000;

/// Boxes [`solve_wide`] examines before it gives up when none of them was decided.
const WIDE_HOPELESS: usize = 12;

/// Time [`solve_wide`] takes at most (less when the budget's time is shorter).
const WIDE_TIME: Duration = Duration::from_millis(1500);

/// A box whose exact search is estimated at most this many guard evaluations (the product of
/// its sides' counts but the widest, which the periodic engine solves) is searched exactly.
const WIDE_EXACT: u128 = 512;

/// The exact joint search a small box is handed to: names, domains, guards, budget.
pub(super) type ExactSearch<'a> = &'a dyn Fn(&[String], &[DimSet], &[Expr], &Budget) -> JointSet;

/// The joint set of a box too wide to enumerate (sizes claimed up to `2^63 - 1`), decided by
/// bounds: each guard's interval over a box ([`crate::bounds`]) says it holds at every point
/// (dropped for the box), fails at every point (the box is empty), or neither. A box with
/// guards left is searched exactly when it is small enough ([`WIDE_EXACT`]: near the small
/// corner, or one wide size under the periodic engine), else split in two along its widest size
/// that a guard left mentions. Products of monotone floor terms (`(1 + (h-1)//2)*(1 + (w-1)//2)
/// != 1`, `(h//4)*max(1, w//4) > 1`) hold on every box past a small corner, so an answer over
/// `2..2^63-1` costs about what `96..1024` costs. Past [`WIDE_BOXES`] boxes or the budget's
/// time, the boxes left are reported undecided (the first size's values they hold, with every
/// value of the others); what was decided stays exact. `None` when nothing could be decided
/// (the caller reports the whole box undecided). `exact` is the exact search a small box is
/// handed to (the search calls this function past its work limit, and passes itself).
pub(super) fn solve_wide(
    names: &[String],
    domains: &[DimSet],
    guards: &[Expr],
    budget: &Budget,
    exact: ExactSearch,
) -> Option<JointSet> {
    if names.len() > 64 {
        return None;
    }
    let mut wide = Wide::new(names, guards, budget, exact);
    let all: Vec<usize> = (0..guards.len()).collect();
    let mut stack: Vec<(Vec<DimSet>, Vec<usize>)> = vec![(domains.to_vec(), all)];
    let mut examined = 0usize;
    while let Some((sides, live)) = stack.pop() {
        if sides.iter().any(DimSet::is_empty) {
            continue;
        }
        examined += 1;
        wide.stats.points += 1;
        if examined > WIDE_HOPELESS && wide.decided.is_empty() {
            // Nothing decided so far: bounds do not reach these guards.
            return None;
        }
        if let Some(why) = wide.out_of_budget(examined) {
            wide.leave_open(sides, why);
            continue;
        }
        let Some(left) = wide.unknown_guards(&sides, &live) else {
            // A guard fails at every point: the box is empty.
            continue;
        };
        if left.is_empty() {
            wide.decided.push(sides);
            continue;
        }
        let mentioned: Vec<usize> = (0..names.len())
            .filter(|&i| left.iter().any(|&g| wide.masks[g] & (1 << i) != 0))
            .collect();
        let work = exact_work(&sides, &mentioned);
        let best = wide.best_split(&sides, &mentioned, &left);
        if work <= WIDE_EXACT
            && best
                .as_ref()
                .is_none_or(|split| split.score == 0 || work <= 16)
        {
            wide.search_exact(sides, &left);
            continue;
        }
        let Some(Split { a, b, .. }) = best else {
            wide.leave_open(sides, Why::Search(SearchLimit::OutsideBounds));
            continue;
        };
        stack.push((b, left.clone()));
        stack.push((a, left));
    }
    wide.answer(domains)
}

/// The estimated guard evaluations of an exact search over `sides`: the product of the counts
/// of the sizes `mentioned` by a guard left, but the widest (which the periodic engine solves).
fn exact_work(sides: &[DimSet], mentioned: &[usize]) -> u128 {
    let widest = mentioned
        .iter()
        .copied()
        .max_by_key(|&i| sides[i].count())
        .unwrap_or(0);
    mentioned
        .iter()
        .filter(|&&i| i != widest)
        .fold(1u128, |a, &i| a.saturating_mul(sides[i].count()))
}

/// `sides` split along size `i` at `at`: the box with that size below `at`, and the box with it
/// from `at` on.
fn halves(sides: &[DimSet], i: usize, at: i128) -> (Vec<DimSet>, Vec<DimSet>) {
    let s = &sides[i];
    let mut a = sides.to_vec();
    a[i] = s.clip(i128::MIN, at - 1);
    let mut b = sides.to_vec();
    b[i] = s.clip(at, i128::MAX);
    (a, b)
}

/// A split of a box in two along one size ([`Wide::best_split`]): `score` guards decided on
/// the tail `b`, the size's count, and the two halves.
struct Split {
    score: usize,
    count: u128,
    a: Vec<DimSet>,
    b: Vec<DimSet>,
}

/// The state of [`solve_wide`]: the problem, and the boxes decided or left open so far.
struct Wide<'a> {
    names: &'a [String],
    guards: &'a [Expr],
    budget: &'a Budget,
    exact: ExactSearch<'a>,
    start: Instant,
    /// Per guard, the bit of each size it reads.
    masks: Vec<u128>,
    stats: Stats,
    /// Boxes every point of which passes every guard.
    decided: Vec<Vec<DimSet>>,
    /// Boxes left undecided, and why the first was.
    open: Option<Open>,
}

/// The boxes [`solve_wide`] leaves undecided, and why the first was.
struct Open {
    why: Why,
    boxes: Vec<Vec<DimSet>>,
}

impl<'a> Wide<'a> {
    fn new(
        names: &'a [String],
        guards: &'a [Expr],
        budget: &'a Budget,
        exact: ExactSearch<'a>,
    ) -> Self {
        let masks: Vec<u128> = guards
            .iter()
            .map(|g| {
                g.atoms()
                    .iter()
                    .filter_map(|a| names.iter().position(|nm| **nm == **a))
                    .fold(0u128, |m, i| m | 1 << i)
            })
            .collect();
        Wide {
            names,
            guards,
            budget,
            exact,
            start: Instant::now(),
            masks,
            stats: Stats::default(),
            decided: Vec::new(),
            open: None,
        }
    }

    /// Why the `examined`-th box is past [`WIDE_BOXES`] or the time (the budget's, at most
    /// [`WIDE_TIME`]); `None` when it is not.
    fn out_of_budget(&self, examined: usize) -> Option<Why> {
        let limit = self.budget.time.min(WIDE_TIME);
        let out_of_time = self.start.elapsed() > limit || crate::budget::expired().is_some();
        if examined > WIDE_BOXES || out_of_time {
            return Some(match crate::budget::expired() {
                Some(e) => Why::Exhausted(e),
                None if out_of_time => Why::Search(SearchLimit::Time(limit)),
                None => Why::Search(SearchLimit::Boxes(WIDE_BOXES)),
            });
        }
        None
    }

    /// Leaves the box `sides` undecided; the first box left says why.
    fn leave_open(&mut self, sides: Vec<DimSet>, why: Why) {
        match &mut self.open {
            Some(open) => open.boxes.push(sides),
            None => {
                self.open = Some(Open {
                    why,
                    boxes: vec![sides],
                })
            }
        }
    }

    /// Each size's bounds over the box `sides`.
    fn bounds(&self, sides: &[DimSet]) -> BTreeMap<&'a str, Bounds> {
        self.names
            .iter()
            .zip(sides)
            .map(|(nm, s)| {
                (
                    nm.as_str(),
                    Bounds::range(s.min().unwrap_or(0), s.max().unwrap_or(0)),
                )
            })
            .collect()
    }

    /// The guards of `live` the bounds over `sides` do not decide; `None` when one fails at
    /// every point of the box.
    fn unknown_guards(&self, sides: &[DimSet], live: &[usize]) -> Option<Vec<usize>> {
        let env = self.bounds(sides);
        let mut left = Vec::new();
        for &g in live {
            match truth(&self.guards[g], &env) {
                Tri::True => {}
                Tri::False => return None,
                Tri::Unknown => left.push(g),
            }
        }
        Some(left)
    }

    /// The guards of `among` the bounds over the box `half` decide.
    fn decided_in(&self, half: &[DimSet], among: &[usize]) -> Vec<usize> {
        let env = self.bounds(half);
        among
            .iter()
            .copied()
            .filter(|&g| truth(&self.guards[g], &env) != Tri::Unknown)
            .collect()
    }

    /// Where to split the box `sides`: along a size a guard of `left` mentions, the one whose
    /// tail decides the most guards (the widest among equals). For each size, the least `t`
    /// such that the box with this size in `t..` decides as many guards as its last value alone
    /// (bounds are monotone in the box, so a binary search finds it): a split there leaves a
    /// decided tail and the corner; a size whose last value decides none splits at the middle
    /// of its values. `None` when every mentioned size has one value.
    fn best_split(&self, sides: &[DimSet], mentioned: &[usize], left: &[usize]) -> Option<Split> {
        let mut best: Option<Split> = None;
        for &i in mentioned {
            let s = &sides[i];
            let (Some(lo), Some(hi)) = (s.min(), s.max()) else {
                continue;
            };
            if lo == hi {
                continue;
            }
            // Only the guards its last value decides can be decided by a tail.
            let reach = self.decided_in(&halves(sides, i, hi).1, left);
            let target = reach.len();
            let tail = |t: i128| self.decided_in(&halves(sides, i, t).1, &reach).len();
            let (a, b, score) = if target == 0 {
                let mid = lo + (hi - lo) / 2;
                let (a, b) = halves(sides, i, mid + 1);
                (a, b, 0)
            } else {
                let (mut l, mut h) = (lo + 1, hi);
                while l < h {
                    let m = l + (h - l) / 2;
                    if tail(m) >= target {
                        h = m;
                    } else {
                        l = m + 1;
                    }
                }
                let (a, b) = halves(sides, i, l);
                (a, b, target)
            };
            let key = (score, s.count());
            if best
                .as_ref()
                .is_none_or(|split| key > (split.score, split.count))
            {
                best = Some(Split {
                    score,
                    count: s.count(),
                    a,
                    b,
                });
            }
        }
        best
    }

    /// The box `sides` under the guards `left`, handed to the exact search: its boxes decided,
    /// or the whole box left open when the search leaves something undecided.
    fn search_exact(&mut self, sides: Vec<DimSet>, left: &[usize]) {
        let sub: Vec<Expr> = left.iter().map(|&g| self.guards[g].clone()).collect();
        let js = (self.exact)(self.names, &sides, &sub, self.budget);
        self.stats.periodic_solves += js.stats.periodic_solves;
        self.stats.points += js.stats.points;
        let (boxes, complete) = js.tree.boxes(WIDE_BOXES);
        if js.undecided.is_some() || !complete {
            let why = js
                .undecided
                .map_or(Why::Search(SearchLimit::BoxPieces), |u| u.reason);
            self.leave_open(sides, why);
            return;
        }
        for b in boxes {
            let mut out = sides.clone();
            for (l, side) in b.into_iter().enumerate() {
                if let Some(i) = self.names.iter().position(|nm| *nm == js.sizes[l]) {
                    out[i] = side;
                }
            }
            self.decided.push(out);
        }
    }

    /// The joint set of the boxes decided over `domains`, with the undecided region: the first
    /// size's values of the boxes left open, with every value of the others (what
    /// [`Undecided`] holds); decided boxes lose those values. `None` when nothing was decided.
    fn answer(self, domains: &[DimSet]) -> Option<JointSet> {
        if self.decided.is_empty() && self.open.is_some() {
            return None;
        }
        let mut u0 = DimSet::empty();
        for b in self.open.iter().flat_map(|o| &o.boxes) {
            u0 = union(&u0, &b[0]).ok()?;
        }
        let mut kept = Vec::with_capacity(self.decided.len());
        for mut b in self.decided {
            if !u0.is_empty() {
                b[0] = minus(&b[0], &u0).ok()?;
            }
            if !b.iter().any(DimSet::is_empty) {
                kept.push(b);
            }
        }
        let tree = from_boxes(&kept, self.names.len()).ok()?;
        let undecided = self.open.filter(|_| !u0.is_empty()).map(|open| {
            let mut sides = domains.to_vec();
            sides[0] = u0.clone();
            let count = Tree::full(&sides).count();
            Undecided {
                reason: open.why,
                sides,
                count,
            }
        });
        Some(JointSet {
            sizes: self.names.to_vec(),
            domains: domains.to_vec(),
            tree,
            undecided,
            stats: self.stats,
        })
    }
}
