//! The largest box inside a joint set ([`largest_box`]), and the box through a traced point
//! ([`box_through`]): one progression per size, what a `dynamic_shapes` spec can express.

use super::search::permutations;
use super::tree::{inter, minus, union, union_all};
use super::{Budget, Exact, Tree};
use crate::suggest::{normalized, rank, Maximality};
use crate::types::{DimSet, Progression};

/// The largest box inside a joint set: one progression per size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargestBox {
    /// One side per size, in the joint set's level order.
    pub sides: Vec<Progression>,
    /// Number of tuples (the product of the sides' counts).
    pub count: u128,
    /// Whether no box of progressions inside the joint set has more tuples (false when the
    /// search ran out of its budget or a set was too large to search every step).
    pub maximal: bool,
}

/// A box through `point` (one value per level, in level order) inside `tree`: every tuple of it
/// is in the joint set, and it is maximal by inclusion: no side can take one more value (the
/// next of its progression at either end; for a side of one value, any other value) and stay
/// inside. Built side by side from the point: each side is the longest progression through the
/// point's value inside the values that fit with the sides chosen so far (`fits`); the sides
/// chosen later only narrow what fits, so no side can grow at the end. Every order of the
/// levels is tried (the first and reverse order past three levels) and the box with the most
/// tuples kept. `None` when the point is not in the tree. Not claimed largest (`maximal: false`):
/// it is the spec to use when the largest box leaves out the traced sizes (torch refuses a spec
/// that excludes its example inputs). A set operation with no closed form, or the deadline of
/// the thread's [`crate::budget`], leaves a side as it is (still sound; then maybe not maximal).
pub fn box_through(tree: &Tree, point: &[i128]) -> Option<LargestBox> {
    if point.is_empty() || !tree.contains(point) {
        return None;
    }
    let n = point.len();
    let mut orders: Vec<Vec<usize>> = Vec::new();
    if n <= 3 {
        permutations(&mut (0..n).collect(), 0, &mut |o: &[usize]| {
            orders.push(o.to_vec())
        });
    } else {
        orders.push((0..n).collect());
        orders.push((0..n).rev().collect());
    }
    let mut best: Option<LargestBox> = None;
    for order in orders {
        let mut sides: Vec<Progression> = point.iter().map(|&x| normalized(x, x, 1)).collect();
        for &l in &order {
            let sets: Vec<DimSet> = sides.iter().map(Progression::to_set).collect();
            if let Ok(p) = fits(tree, &sets, l).and_then(|s| side_through(&s, point[l])) {
                sides[l] = p;
            }
        }
        let count = sides.iter().fold(1u128, |c, p| c.saturating_mul(p.count()));
        if best.as_ref().is_none_or(|b| count > b.count) {
            best = Some(LargestBox {
                sides,
                count,
                maximal: false,
            });
        }
        if crate::budget::expired().is_some() {
            break;
        }
    }
    best
}

/// The values `v` such that the box `sides` (one set per level, the point's tuple among them)
/// with side `level` replaced by `{v}` lies inside `tree`, or an error ([`Exact`]).
fn fits(tree: &Tree, sides: &[DimSet], level: usize) -> Exact<DimSet> {
    crate::budget::check()?;
    match (tree, sides) {
        (Tree::Leaf(s), [_]) if level == 0 => Ok(s.clone()),
        (Tree::Node(groups), [_, rest @ ..]) if level == 0 => {
            let mut out = DimSet::empty();
            for (s, c) in groups {
                if holds_box(c, rest)? {
                    out = union(&out, s)?;
                }
            }
            Ok(out)
        }
        (Tree::Node(groups), [first, rest @ ..]) => {
            // Every value of this level's side must lead to a continuation where `v` fits.
            let mut covered = 0u128;
            let mut acc: Option<DimSet> = None;
            for (s, c) in groups {
                let part = inter(s, first)?;
                if part.is_empty() {
                    continue;
                }
                covered = covered.saturating_add(part.count());
                let f = fits(c, rest, level - 1)?;
                let next = match acc {
                    None => f,
                    Some(a) => inter(&a, &f)?,
                };
                if next.is_empty() {
                    return Ok(next);
                }
                acc = Some(next);
            }
            Ok(match acc {
                Some(a) if covered == first.count() => a,
                _ => DimSet::empty(),
            })
        }
        _ => Ok(DimSet::empty()),
    }
}

/// Whether every tuple of the box `sides` is in `tree`, or an error ([`Exact`]).
fn holds_box(tree: &Tree, sides: &[DimSet]) -> Exact<bool> {
    crate::budget::check()?;
    match (tree, sides) {
        (Tree::Leaf(s), [side]) => Ok(minus(side, s)?.is_empty()),
        (Tree::Node(groups), [first, rest @ ..]) => {
            let mut covered = 0u128;
            for (s, c) in groups {
                let part = inter(s, first)?;
                if part.is_empty() {
                    continue;
                }
                covered = covered.saturating_add(part.count());
                if !holds_box(c, rest)? {
                    return Ok(false);
                }
            }
            Ok(covered == first.count())
        }
        _ => Ok(false),
    }
}

/// The progression through `x` inside `set` with the most values: among the steps of the
/// largest progressions of `set`, step 1, and the distance to the nearest other member (so a
/// side of one value means `set` has no other), each run as far as `set` allows ([`run`]).
fn side_through(set: &DimSet, x: i128) -> Exact<Progression> {
    let mut steps: Vec<i128> = rank(set, Some(x), 16)
        .progressions
        .iter()
        .map(|p| p.modulus)
        .collect();
    steps.push(1);
    let near = [
        x.checked_add(1).and_then(|y| set.next_at_least(y)),
        x.checked_sub(1).and_then(|y| set.prev_at_most(y)),
    ];
    steps.extend(
        near.iter()
            .flatten()
            .filter_map(|y| y.checked_sub(x)?.checked_abs()),
    );
    steps.sort_unstable();
    steps.dedup();
    let mut best: Option<Progression> = None;
    for m in steps.into_iter().filter(|&m| m >= 1) {
        let p = run(set, x, m)?;
        if best.is_none_or(|b| p.count() > b.count()) {
            best = Some(p);
        }
    }
    Ok(best.unwrap_or(normalized(x, x, 1)))
}

/// The longest progression of step `m` through `x` (a member of `set`) inside `set`: up to
/// just before its first value past `x` that `set` misses, and down likewise.
fn run(set: &DimSet, x: i128, m: i128) -> Exact<Progression> {
    let r = x.rem_euclid(m);
    let (Some(min), Some(max)) = (set.min(), set.max()) else {
        return Ok(normalized(x, x, 1));
    };
    let hi = match x.checked_add(m) {
        Some(up) if up <= max => {
            let q = DimSet::progression(up, max, m, r);
            match minus(&q, set)?.min() {
                Some(miss) => miss - m,
                None => q.max().unwrap_or(x),
            }
        }
        _ => x,
    };
    let lo = match x.checked_sub(m) {
        Some(down) if down >= min => {
            let q = DimSet::progression(min, down, m, r);
            match minus(&q, set)?.max() {
                Some(miss) => miss + m,
                None => q.min().unwrap_or(x),
            }
        }
        _ => x,
    };
    Ok(normalized(lo, hi, m))
}

struct BoxSearch {
    work: usize,
    limit: usize,
    maximal: bool,
}

/// The box (one progression per level) inside `tree` with the most tuples.
pub fn largest_box(tree: &Tree, budget: &Budget) -> Option<LargestBox> {
    let mut bs = BoxSearch {
        work: 0,
        limit: budget.box_work,
        maximal: true,
    };
    let (count, sides) = bs.best(tree, 0)?;
    Some(LargestBox {
        sides,
        count,
        // A count saturated at `u128::MAX` (three sizes to 2^63) ties with every other such box:
        // the search cannot tell a larger one, so it does not claim this one largest.
        maximal: bs.maximal && count < u128::MAX,
    })
}

impl BoxSearch {
    fn best(&mut self, tree: &Tree, floor: u128) -> Option<(u128, Vec<Progression>)> {
        self.work += 1;
        match tree {
            Tree::Leaf(s) => {
                let r = rank(s, None, 1);
                if r.maximality != Maximality::Proven {
                    self.maximal = false;
                }
                let p = *r.progressions.first()?;
                Some((p.count(), vec![p]))
            }
            Tree::Node(groups) => {
                let m = groups.len();
                let mut best: Option<(u128, Vec<Progression>)> = None;
                let mut floor = floor;
                // Subsets of groups: the progression lies in the union of their sets, and the
                // rest of the box in the intersection of their continuations.
                let exhaustive = m <= 12;
                // Past 12 groups only single groups and the chain of nested continuations
                // (`chain`) are tried: still every box when no two groups' continuations meet
                // (a box spanning groups needs a common continuation).
                if !exhaustive
                    && (m > 256
                        || (0..m).any(|i| {
                            // Past the deadline: not known, so not claimed maximal.
                            (i + 1..m).any(|j| {
                                crate::budget::expired().is_some()
                                    || groups[i]
                                        .1
                                        .intersect(&groups[j].1)
                                        .is_ok_and(|t| !t.is_empty())
                            })
                        }))
                {
                    self.maximal = false;
                }
                if !exhaustive {
                    self.chain(groups, &mut floor, &mut best);
                }
                // Values of groups i.. in all: with those of the groups chosen, a bound on the
                // first side of every box the subsets still to come from a stack entry give
                // (a sum of counts, never below the union's, so the bound prunes soundly).
                let mut after = vec![0u128; m + 1];
                for i in (0..m).rev() {
                    after[i] = after[i + 1].saturating_add(groups[i].0.count());
                }
                let mut stack: Vec<(usize, Vec<usize>, Tree)> = Vec::new();
                for (i, (_, c)) in groups.iter().enumerate() {
                    stack.push((i, vec![i], c.clone()));
                }
                while let Some((last, chosen, t)) = stack.pop() {
                    if self.out_of_work() {
                        break;
                    }
                    let rest = chosen.iter().fold(after[last + 1], |a, &i| {
                        a.saturating_add(groups[i].0.count())
                    });
                    let t_count = t.count();
                    if rest.saturating_mul(t_count) <= floor {
                        continue;
                    }
                    // A union with no closed form within the budget: that subset of groups is
                    // skipped (the box found stays sound, maybe not largest).
                    let Ok(union) = union_all(chosen.iter().map(|&i| Ok(groups[i].0.clone())))
                    else {
                        self.maximal = false;
                        continue;
                    };
                    self.consider(&union, &t, &mut floor, &mut best);
                    if exhaustive {
                        for (j, (_, cj)) in groups.iter().enumerate().skip(last + 1) {
                            let Ok(t2) = t.intersect(cj) else {
                                self.maximal = false;
                                continue;
                            };
                            if !t2.is_empty() {
                                let mut c2 = chosen.clone();
                                c2.push(j);
                                stack.push((j, c2, t2));
                            }
                        }
                    }
                }
                best
            }
        }
    }

    /// Past the work limit or the deadline: the search stops, and what it found is not claimed
    /// maximal.
    fn out_of_work(&mut self) -> bool {
        let out = self.work > self.limit || crate::budget::expired().is_some();
        if out {
            self.maximal = false;
        }
        out
    }

    /// The best box whose first side lies in `union` (values of groups whose continuations all
    /// hold `t`) and whose other sides lie in `t`; kept in `best` when it beats `floor`.
    fn consider(
        &mut self,
        union: &DimSet,
        t: &Tree,
        floor: &mut u128,
        best: &mut Option<(u128, Vec<Progression>)>,
    ) {
        let t_count = t.count();
        if union.count().saturating_mul(t_count) <= *floor {
            return;
        }
        let r = rank(union, None, 1);
        if r.maximality != Maximality::Proven {
            self.maximal = false;
        }
        let Some(p) = r.progressions.first().copied() else {
            return;
        };
        let need = *floor / p.count().max(1);
        let Some((c, sides)) = self.best(t, need) else {
            return;
        };
        let score = c.saturating_mul(p.count());
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            *floor = (*floor).max(score);
            let mut all = vec![p];
            all.extend(sides);
            *best = Some((score, all));
        }
    }

    /// Past 12 groups not every subset is tried; this chain adds the groups in decreasing order
    /// of their continuation's size, intersecting the continuations as it goes, and considers the
    /// box of every prefix. When the continuations are nested (a guard like `h * w <= N`: the
    /// smaller `h`, the more `w` pass) the largest box is among them; before the chain, a
    /// 2,047-pair box `h = 32` was all that 993 groups of `h * w <= 65536` gave, where
    /// `32..256 x 2..256` holds 57,375.
    fn chain(
        &mut self,
        groups: &[(DimSet, Tree)],
        floor: &mut u128,
        best: &mut Option<(u128, Vec<Progression>)>,
    ) {
        let counts: Vec<u128> = groups.iter().map(|(_, c)| c.count()).collect();
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(counts[i]), groups[i].0.min()));
        // The union never holds more values than all groups together: with the continuation
        // only shrinking, a prefix whose bound cannot beat the floor ends the chain.
        let total = groups
            .iter()
            .fold(0u128, |a, (s, _)| a.saturating_add(s.count()));
        let mut values = DimSet::empty();
        let mut t: Option<Tree> = None;
        for &i in &order {
            self.work += 1;
            if self.out_of_work() {
                return;
            }
            let next = match &t {
                None => Ok(groups[i].1.clone()),
                Some(t) => t.intersect(&groups[i].1),
            };
            let (Ok(next), Ok(more)) = (next, union(&values, &groups[i].0)) else {
                self.maximal = false;
                return;
            };
            if next.is_empty() || total.saturating_mul(next.count()) <= *floor {
                return;
            }
            values = more;
            self.consider(&values, &next, floor, best);
            t = Some(next);
        }
    }
}
