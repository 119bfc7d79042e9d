//! Joint sets of boxes too wide to enumerate (sizes claimed up to `2^63 - 1`), decided by
//! bounds over boxes and the exact search on small ones.

use super::tree::{from_boxes, minus, union};
use super::{Budget, JointSet, Stats, Tree, Undecided};
use crate::types::{DimSet, Expr};
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
    use crate::bounds::{truth, Bounds, Tri};
    let start = Instant::now();
    let n = names.len();
    if n > 64 {
        return None;
    }
    let mut stats = Stats::default();
    let mut decided: Vec<Vec<DimSet>> = Vec::new();
    let mut open: Vec<Vec<DimSet>> = Vec::new();
    let mut why: Option<String> = None;
    let all: Vec<usize> = (0..guards.len()).collect();
    let masks: Vec<u128> = guards
        .iter()
        .map(|g| {
            g.atoms()
                .iter()
                .filter_map(|a| names.iter().position(|nm| **nm == **a))
                .fold(0u128, |m, i| m | 1 << i)
        })
        .collect();
    let mut stack: Vec<(Vec<DimSet>, Vec<usize>)> = vec![(domains.to_vec(), all)];
    let mut examined = 0usize;
    while let Some((sides, live)) = stack.pop() {
        if sides.iter().any(DimSet::is_empty) {
            continue;
        }
        examined += 1;
        stats.points += 1;
        if examined > WIDE_HOPELESS && decided.is_empty() {
            // Nothing decided so far: bounds do not reach these guards.
            return None;
        }
        let out_of_time =
            start.elapsed() > budget.time.min(WIDE_TIME) || crate::budget::expired().is_some();
        if examined > WIDE_BOXES || out_of_time {
            why.get_or_insert_with(|| match crate::budget::expired() {
                Some(e) => e.reason(),
                None if out_of_time => format!(
                    "the time budget of {:.1} s ran out",
                    budget.time.min(WIDE_TIME).as_secs_f64()
                ),
                None => format!("more than {WIDE_BOXES} boxes of sizes were needed"),
            });
            open.push(sides);
            continue;
        }
        let env: std::collections::BTreeMap<&str, Bounds> = names
            .iter()
            .zip(&sides)
            .map(|(nm, s)| {
                (
                    nm.as_str(),
                    Bounds::range(s.min().unwrap_or(0), s.max().unwrap_or(0)),
                )
            })
            .collect();
        let mut left = Vec::new();
        let mut empty = false;
        for &g in &live {
            match truth(&guards[g], &env) {
                Tri::True => {}
                Tri::False => {
                    empty = true;
                    break;
                }
                Tri::Unknown => left.push(g),
            }
        }
        if empty {
            continue;
        }
        if left.is_empty() {
            decided.push(sides);
            continue;
        }
        let mentioned: Vec<usize> = (0..n)
            .filter(|&i| left.iter().any(|&g| masks[g] & (1 << i) != 0))
            .collect();
        let widest = mentioned
            .iter()
            .copied()
            .max_by_key(|&i| sides[i].count())
            .unwrap_or(0);
        let work = mentioned
            .iter()
            .filter(|&&i| i != widest)
            .fold(1u128, |a, &i| a.saturating_mul(sides[i].count()));
        // Split a size a guard left mentions at the middle of its values: the one whose halves
        // decide the most guards (the widest among equals).
        let bounds_of = |sides: &[DimSet]| -> std::collections::BTreeMap<&str, Bounds> {
            names
                .iter()
                .zip(sides)
                .map(|(nm, s)| {
                    (
                        nm.as_str(),
                        Bounds::range(s.min().unwrap_or(0), s.max().unwrap_or(0)),
                    )
                })
                .collect()
        };
        let halves = |i: usize, at: i128| -> (Vec<DimSet>, Vec<DimSet>) {
            let s = &sides[i];
            let mut a = sides.clone();
            a[i] = s.clip(i128::MIN, at - 1);
            let mut b = sides.clone();
            b[i] = s.clip(at, i128::MAX);
            (a, b)
        };
        let decided_in = |half: &[DimSet], among: &[usize]| -> Vec<usize> {
            let env = bounds_of(half);
            among
                .iter()
                .copied()
                .filter(|&g| truth(&guards[g], &env) != Tri::Unknown)
                .collect()
        };
        // For each size, the least `t` such that the box with this size in `t..` decides as many
        // guards as its last value alone (bounds are monotone in the box, so a binary search
        // finds it): a split there leaves a decided tail and the corner.
        let mut best: Option<(usize, u128, Vec<DimSet>, Vec<DimSet>)> = None;
        for &i in &mentioned {
            let s = &sides[i];
            let (Some(lo), Some(hi)) = (s.min(), s.max()) else {
                continue;
            };
            if lo == hi {
                continue;
            }
            // Only the guards its last value decides can be decided by a tail.
            let reach = decided_in(&halves(i, hi).1, &left);
            let target = reach.len();
            let tail = |t: i128| decided_in(&halves(i, t).1, &reach).len();
            let (a, b, score) = if target == 0 {
                let mid = lo + (hi - lo) / 2;
                let (a, b) = halves(i, mid + 1);
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
                let (a, b) = halves(i, l);
                (a, b, target)
            };
            let key = (score, s.count());
            if best.as_ref().is_none_or(|(s0, c0, _, _)| key > (*s0, *c0)) {
                best = Some((score, s.count(), a, b));
            }
        }
        if work <= WIDE_EXACT
            && best
                .as_ref()
                .is_none_or(|(score, ..)| *score == 0 || work <= 16)
        {
            let sub: Vec<Expr> = left.iter().map(|&g| guards[g].clone()).collect();
            let js = exact(names, &sides, &sub, budget);
            stats.periodic_solves += js.stats.periodic_solves;
            stats.points += js.stats.points;
            let (boxes, complete) = js.tree.boxes(WIDE_BOXES);
            if js.undecided.is_some() || !complete {
                why.get_or_insert_with(|| {
                    js.undecided
                        .as_ref()
                        .map_or("a box has too many pieces".to_string(), |u| {
                            u.reason.clone()
                        })
                });
                open.push(sides);
                continue;
            }
            for b in boxes {
                let mut out = sides.clone();
                for (l, side) in b.into_iter().enumerate() {
                    if let Some(i) = names.iter().position(|nm| *nm == js.sizes[l]) {
                        out[i] = side;
                    }
                }
                decided.push(out);
            }
            continue;
        }
        let Some((_, _, a, b)) = best else {
            why.get_or_insert_with(|| "a guard is outside the bounds' rules".to_string());
            open.push(sides);
            continue;
        };
        stack.push((b, left.clone()));
        stack.push((a, left));
    }
    if decided.is_empty() && !open.is_empty() {
        return None;
    }
    // The undecided region: the first size's values of the boxes left, with every value of
    // the others (what [`Undecided`] holds); decided boxes lose those values.
    let mut u0 = DimSet::empty();
    for b in &open {
        u0 = union(&u0, &b[0]).ok()?;
    }
    let mut kept = Vec::with_capacity(decided.len());
    for mut b in decided {
        if !u0.is_empty() {
            b[0] = minus(&b[0], &u0).ok()?;
        }
        if !b.iter().any(DimSet::is_empty) {
            kept.push(b);
        }
    }
    let tree = from_boxes(&kept, n).ok()?;
    let undecided = (!u0.is_empty()).then(|| {
        let mut sides = domains.to_vec();
        sides[0] = u0.clone();
        let count = Tree::full(&sides).count();
        Undecided {
            reason: why.clone().unwrap_or_default(),
            sides,
            count,
        }
    });
    Some(JointSet {
        sizes: names.to_vec(),
        domains: domains.to_vec(),
        tree,
        undecided,
        stats,
    })
}
