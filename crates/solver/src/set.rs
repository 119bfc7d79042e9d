//! Exact sets of sizes: unions of intervals intersected with residue classes.
//!
//! A [`DimSet`] is a sorted list of disjoint [`Segment`]s, each
//! `{ x : lo <= x <= hi and x mod modulus in residues }`. Every operation is exact and costs
//! time in the number of segments and the moduli, never in the width of the range: a set over
//! `[2, 2^62]` costs what the same pattern over `[135, 2160]` costs.
//!
//! Boolean operations lift both operands to a common modulus `L`, turn each segment into one
//! *run* per residue class, and sweep over the run boundaries. A run of class `r` is widened by
//! `L - 1` on both sides before the sweep: that adds no member of class `r` (its neighbours in the
//! class are `L` away) but stops ragged run ends from splitting one periodic pattern into many
//! small pieces. The result is then canonicalized (tight bounds, smallest modulus, neighbours
//! merged), so equal sets usually print the same way.

use crate::error::Error;
use crate::num::{int_ceildiv, lcm};
use crate::types::{DimSet, Progression, Segment};
use num_integer::Integer;
use std::collections::BTreeMap;

/// Largest common modulus a set operation may build. Operations that would need more return
/// [`Error::PeriodTooLarge`] (a limit reported as data, not a panic).
pub const PERIOD_LIMIT: i128 = 1 << 16;

impl Segment {
    /// Whether `x` is a member.
    pub fn contains(&self, x: i128) -> bool {
        x >= self.lo
            && x <= self.hi
            && self
                .residues
                .binary_search(&x.mod_floor(&self.modulus))
                .is_ok()
    }

    /// Number of members.
    pub fn count(&self) -> u128 {
        self.residues
            .iter()
            .map(|&r| class_count(self.lo, self.hi, self.modulus, r))
            .sum()
    }

    /// The smallest member `>= x`.
    pub fn next_at_least(&self, x: i128) -> Option<i128> {
        let x = x.max(self.lo);
        if x > self.hi {
            return None;
        }
        let m = self.modulus;
        let base = x - x.mod_floor(&m);
        let rx = x - base;
        let cand = match self.residues.iter().find(|&&r| r >= rx) {
            Some(&r) => base + r,
            None => base.checked_add(m)? + self.residues[0],
        };
        (cand <= self.hi).then_some(cand)
    }

    /// The largest member `<= x`.
    pub fn prev_at_most(&self, x: i128) -> Option<i128> {
        let x = x.min(self.hi);
        if x < self.lo {
            return None;
        }
        let m = self.modulus;
        let base = x - x.mod_floor(&m);
        let rx = x - base;
        let cand = match self.residues.iter().rev().find(|&&r| r <= rx) {
            Some(&r) => base + r,
            None => base.checked_sub(m)? + self.residues[self.residues.len() - 1],
        };
        (cand >= self.lo).then_some(cand)
    }
}

/// Number of `x` in `[lo, hi]` with `x mod m == r`.
pub(crate) fn class_count(lo: i128, hi: i128, m: i128, r: i128) -> u128 {
    if lo > hi {
        return 0;
    }
    let first = int_ceildiv(lo - r, m);
    let last = Integer::div_floor(&(hi - r), &m);
    if last < first {
        0
    } else {
        (last - first) as u128 + 1
    }
}

/// A maximal run of one residue class: members `first, first + period, ..., last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub first: i128,
    pub last: i128,
}

impl DimSet {
    /// The empty set.
    pub fn empty() -> DimSet {
        DimSet::default()
    }

    /// All integers in `[lo, hi]` (empty when `lo > hi`).
    pub fn interval(lo: i128, hi: i128) -> DimSet {
        if lo > hi {
            return DimSet::empty();
        }
        DimSet {
            segments: vec![Segment {
                lo,
                hi,
                modulus: 1,
                residues: vec![0],
            }],
        }
    }

    /// The members of an arithmetic progression that lie in `[lo, hi]`.
    pub fn progression(lo: i128, hi: i128, modulus: i128, residue: i128) -> DimSet {
        assert!(modulus >= 1, "modulus must be positive");
        let r = residue.mod_floor(&modulus);
        let seg = Segment {
            lo,
            hi,
            modulus,
            residues: vec![r],
        };
        match (seg.next_at_least(lo), seg.prev_at_most(hi)) {
            (Some(a), Some(b)) if a <= b => canonical(vec![Segment {
                lo: a,
                hi: b,
                ..seg
            }]),
            _ => DimSet::empty(),
        }
    }

    /// Builds a set from runs of residue classes modulo `period` (as the periodic engine
    /// produces them). Runs may overlap and come in any order.
    pub(crate) fn from_runs(period: i128, runs: &[(i128, Run)]) -> Result<DimSet, Error> {
        let mut events: Vec<(i128, i128, i32)> = Vec::with_capacity(runs.len() * 2);
        for &(res, run) in runs {
            if run.first > run.last {
                continue;
            }
            events.push((run.first.saturating_sub(period - 1), res, 1));
            events.push((run.last.saturating_add(period), res, -1));
        }
        // Past the thread's deadline it stops with the reason: a period of 64,000 with 63,999
        // runs took 60-100 ms past a 100 ms budget (tests/hostile.rs).
        sweep(period, events, |c| c[0] > 0, 1, true)
    }

    /// The union of sorted, disjoint, non-adjacent runs of consecutive values (period 1), as
    /// [`crate::engine::enumerate`] finds them. Same result as [`DimSet::from_runs`] with period
    /// 1, without the sweep.
    pub(crate) fn from_sorted_runs(runs: &[Run]) -> DimSet {
        debug_assert!(runs.windows(2).all(|w| w[0].last + 1 < w[1].first));
        let raw = runs
            .iter()
            .filter(|r| r.first <= r.last)
            .map(|r| Segment {
                lo: r.first,
                hi: r.last,
                modulus: 1,
                residues: vec![0],
            })
            .collect();
        canonical(raw)
    }

    /// The set of the given values (any order, duplicates allowed). Runs of three or more values
    /// with a constant step become one progression segment.
    pub fn from_values(values: impl IntoIterator<Item = i128>) -> DimSet {
        let mut v: Vec<i128> = values.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        let mut raw: Vec<Segment> = Vec::new();
        let mut i = 0;
        while i < v.len() {
            let mut j = i;
            if i + 1 < v.len() {
                let step = v[i + 1] - v[i];
                while j + 1 < v.len() && v[j + 1] - v[j] == step {
                    j += 1;
                }
                if step == 1 || j - i >= 2 {
                    raw.push(Segment {
                        lo: v[i],
                        hi: v[j],
                        modulus: step,
                        residues: vec![v[i].mod_floor(&step)],
                    });
                    i = j + 1;
                    continue;
                }
            }
            raw.push(Segment {
                lo: v[i],
                hi: v[i],
                modulus: 1,
                residues: vec![0],
            });
            i += 1;
        }
        canonical(raw)
    }

    /// Builds a set from segments that may be unsorted, overlapping or non-canonical.
    ///
    /// Every set this crate produces is accepted back, whatever its moduli: segments that do not
    /// overlap are only canonicalized (cost in the number of residues, never in a modulus).
    /// Overlapping segments are combined as set operations combine them (bounded by the
    /// budget: [`Error::Exhausted`] past it). A segment with `modulus < 1` is an
    /// [`Error::Arith`] (division by zero); one with no residue or with `lo > hi` is empty.
    pub fn from_segments(segments: Vec<Segment>) -> Result<DimSet, Error> {
        let mut segs = Vec::with_capacity(segments.len());
        for s in segments {
            if s.modulus < 1 {
                return Err(crate::num::ArithError::DivisionByZero.into());
            }
            if s.residues.is_empty() || s.lo > s.hi {
                continue;
            }
            let mut residues: Vec<i128> =
                s.residues.iter().map(|r| r.mod_floor(&s.modulus)).collect();
            residues.sort_unstable();
            residues.dedup();
            segs.push(Segment { residues, ..s });
        }
        // One operand whose segments may overlap: `combine` clusters them, and sweeps only
        // those that overlap.
        combine(&[&DimSet { segments: segs }], |c| c[0] > 0)
    }

    /// `{k*x + c : x ∈ self}`: the sizes a derived size `k*s + c` takes when `s` ranges over this
    /// set. Exact and without enumeration: residue `r` modulo `m` on `[lo, hi]` becomes residue
    /// `k*r + c` modulo `|k|*m` on the image of `[lo, hi]`. An overflow is an error.
    pub fn affine_image(&self, k: i128, c: i128) -> Result<DimSet, Error> {
        use crate::num::ArithError;
        let over = || Error::from(ArithError::Overflow);
        let map = |x: i128| {
            k.checked_mul(x)
                .and_then(|y| y.checked_add(c))
                .ok_or_else(over)
        };
        if k == 0 {
            return Ok(if self.is_empty() {
                DimSet::empty()
            } else {
                DimSet::interval(c, c)
            });
        }
        // Residue `r` modulo `m` on `[lo, hi]` is residue `k*r + c` modulo `|k|*m` on the image:
        // one segment per segment, and the images of disjoint segments are disjoint.
        let mut pieces = Vec::with_capacity(self.segments.len());
        for seg in &self.segments {
            let (a, b) = (map(seg.lo)?, map(seg.hi)?);
            let m = k
                .checked_abs()
                .and_then(|k| k.checked_mul(seg.modulus))
                .ok_or_else(over)?;
            let residues = seg
                .residues
                .iter()
                .map(|&r| map(r))
                .collect::<Result<_, _>>()?;
            pieces.push(Segment {
                lo: a.min(b),
                hi: a.max(b),
                modulus: m,
                residues,
            });
        }
        DimSet::from_segments(pieces)
    }

    /// `{x // k : x ∈ self}` for `k >= 1` (Python's floor division): the sizes a defined size
    /// `s // k` takes when `s` ranges over this set (`mask = image // 4`). Exact and without
    /// enumeration: on a segment of modulus `m`, the values of one class modulo `L = lcm(m, k)`
    /// are `first + L*t`, whose quotients are `first // k + (L/k)*t`, one progression of
    /// modulus `L/k`; the image is their union. More than `PERIOD_LIMIT` (65,536) classes in a segment
    /// is [`Error::PeriodTooLarge`].
    ///
    /// ```
    /// use dimguard_solver::DimSet;
    ///
    /// // Sizes 0, 5, 6, 7 (mod 8) from 13 to 1000, quartered: every integer from 3 to 250.
    /// let h = DimSet::from_segments(vec![dimguard_solver::Segment {
    ///     lo: 13, hi: 1000, modulus: 8, residues: vec![0, 5, 6, 7],
    /// }]).unwrap();
    /// let q = h.floor_image(4).unwrap();
    /// assert!(q.contains(3) && q.contains(4) && q.contains(249) && !q.contains(2));
    /// assert_eq!(q, DimSet::interval(3, 250));
    /// ```
    pub fn floor_image(&self, k: i128) -> Result<DimSet, Error> {
        if k < 1 {
            return Err(crate::num::ArithError::DivisionByZero.into());
        }
        let mut pieces = Vec::new();
        for seg in &self.segments {
            let l = lcm(seg.modulus, k).map_err(|_| Error::PeriodTooLarge {
                needed: i128::MAX,
                limit: PERIOD_LIMIT,
            })?;
            let per = l / seg.modulus;
            let classes = per.saturating_mul(seg.residues.len() as i128);
            if classes > PERIOD_LIMIT {
                return Err(Error::PeriodTooLarge {
                    needed: classes,
                    limit: PERIOD_LIMIT,
                });
            }
            for &r in &seg.residues {
                for j in 0..per {
                    let class = Segment {
                        lo: seg.lo,
                        hi: seg.hi,
                        modulus: l,
                        residues: vec![r + j * seg.modulus],
                    };
                    let (Some(first), Some(last)) =
                        (class.next_at_least(seg.lo), class.prev_at_most(seg.hi))
                    else {
                        continue;
                    };
                    if first > last {
                        continue;
                    }
                    let (a, b) = (
                        Integer::div_floor(&first, &k),
                        Integer::div_floor(&last, &k),
                    );
                    let step = l / k;
                    pieces.push(Segment {
                        lo: a,
                        hi: b,
                        modulus: step,
                        residues: vec![a.mod_floor(&step)],
                    });
                }
            }
        }
        DimSet::from_segments(pieces)
    }

    /// `{x : k*x + c ∈ self}`: what a derived size `k*s + c` accepting this set says about `s`.
    /// Exact and without enumeration: in each segment, residue `r` modulo `m` becomes the
    /// solutions of `k*x ≡ r - c (mod m)`, one class modulo `m / gcd(k, m)` or none. `k = 0` is an
    /// error (the answer would be everything or nothing).
    pub fn affine_preimage(&self, k: i128, c: i128) -> Result<DimSet, Error> {
        use crate::num::ArithError;
        if k == 0 {
            return Err(ArithError::DivisionByZero.into());
        }
        let over = || Error::from(ArithError::Overflow);
        // floor and ceil of a / k for either sign of k.
        let floor = |a: i128| Integer::div_floor(&a, &k);
        let ceil = |a: i128| -Integer::div_floor(&-a, &k);
        let mut pieces = Vec::with_capacity(self.segments.len());
        for seg in &self.segments {
            let (a, b) = (
                seg.lo.checked_sub(c).ok_or_else(over)?,
                seg.hi.checked_sub(c).ok_or_else(over)?,
            );
            let (lo, hi) = if k > 0 {
                (ceil(a), floor(b))
            } else {
                (ceil(b), floor(a))
            };
            let m = seg.modulus;
            let g = k.gcd(&m);
            let m2 = m / g;
            // k/g is invertible modulo m/g.
            let inv = (k / g).mod_floor(&m2).extended_gcd(&m2).x.mod_floor(&m2);
            let mut residues = Vec::new();
            for &r in &seg.residues {
                let t = (r - c.mod_floor(&m)).mod_floor(&m);
                if t % g == 0 {
                    let x = (t / g).checked_mul(inv).ok_or_else(over)?;
                    residues.push(x.mod_floor(&m2));
                }
            }
            pieces.push(Segment {
                lo,
                hi,
                modulus: m2,
                residues,
            });
        }
        DimSet::from_segments(pieces)
    }

    /// The segments, sorted and disjoint.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Number of members.
    pub fn count(&self) -> u128 {
        self.segments.iter().map(Segment::count).sum()
    }

    /// Smallest member.
    pub fn min(&self) -> Option<i128> {
        self.segments.first().map(|s| s.lo)
    }

    /// Largest member.
    pub fn max(&self) -> Option<i128> {
        self.segments.last().map(|s| s.hi)
    }

    /// Whether `x` is a member.
    pub fn contains(&self, x: i128) -> bool {
        let i = self.segments.partition_point(|s| s.hi < x);
        self.segments.get(i).is_some_and(|s| s.contains(x))
    }

    /// The smallest member `>= x`.
    pub fn next_at_least(&self, x: i128) -> Option<i128> {
        let i = self.segments.partition_point(|s| s.hi < x);
        self.segments[i..].iter().find_map(|s| s.next_at_least(x))
    }

    /// The largest member `<= x`.
    pub fn prev_at_most(&self, x: i128) -> Option<i128> {
        let i = self.segments.partition_point(|s| s.lo <= x);
        self.segments[..i]
            .iter()
            .rev()
            .find_map(|s| s.prev_at_most(x))
    }

    /// Members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = i128> + '_ {
        self.segments.iter().flat_map(|s| {
            let mut next = Some(s.lo);
            std::iter::from_fn(move || {
                let cur = next?;
                next = cur.checked_add(1).and_then(|n| s.next_at_least(n));
                Some(cur)
            })
        })
    }

    /// The least common multiple of the segments' moduli (1 for an empty set).
    pub fn period(&self) -> i128 {
        self.segments
            .iter()
            .fold(1, |acc, s| lcm(acc, s.modulus).unwrap_or(i128::MAX))
    }

    /// `self ∩ other`.
    pub fn intersect(&self, other: &DimSet) -> Result<DimSet, Error> {
        // Intersecting with a plain interval (a range) is the common case: trim, no sweep.
        for (a, b) in [(self, other), (other, self)] {
            if let [s] = b.segments.as_slice() {
                if s.modulus == 1 {
                    return Ok(a.clip(s.lo, s.hi));
                }
            }
        }
        // Two single periodic segments (one guard's set each): residues modulo the lcm directly.
        if let ([x], [y]) = (self.segments.as_slice(), other.segments.as_slice()) {
            let l = lcm(x.modulus, y.modulus).unwrap_or(i128::MAX);
            if l <= 4096 {
                let (lo, hi) = (x.lo.max(y.lo), x.hi.min(y.hi));
                let residues: Vec<i128> = (0..l)
                    .filter(|r| {
                        x.residues.binary_search(&(r % x.modulus)).is_ok()
                            && y.residues.binary_search(&(r % y.modulus)).is_ok()
                    })
                    .collect();
                if lo > hi || residues.is_empty() {
                    return Ok(DimSet::empty());
                }
                return Ok(canonical(vec![Segment {
                    lo,
                    hi,
                    modulus: l,
                    residues,
                }]));
            }
        }
        combine(&[self, other], |c| c[0] > 0 && c[1] > 0)
    }

    /// The members within `[lo, hi]`.
    pub fn clip(&self, lo: i128, hi: i128) -> DimSet {
        let segs = self
            .segments
            .iter()
            .filter(|s| s.hi >= lo && s.lo <= hi)
            .filter_map(|s| {
                let a = s.next_at_least(lo)?;
                let b = s.prev_at_most(hi)?;
                (a <= b).then(|| Segment {
                    lo: a,
                    hi: b,
                    ..s.clone()
                })
            })
            .collect();
        // A cut end may now continue its neighbour's pattern ({4} ∪ [6, 78] clipped to [4, 6]
        // is the progression {4, 6}): canonical, so equal sets print alike.
        canonical(segs)
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &DimSet) -> Result<DimSet, Error> {
        // With a plain interval that spans the other operand, the interval: no sweep (a union
        // of many periodic sets, a joint set's projection, is an interval after a few).
        for (a, b) in [(self, other), (other, self)] {
            if let ([s], Some(lo), Some(hi)) = (a.segments.as_slice(), b.min(), b.max()) {
                if s.modulus == 1 && s.lo <= lo && hi <= s.hi {
                    return Ok(a.clone());
                }
            }
        }
        combine(&[self, other], |c| c[0] > 0 || c[1] > 0)
    }

    /// `self \ other`.
    pub fn difference(&self, other: &DimSet) -> Result<DimSet, Error> {
        combine(&[self, other], |c| c[0] > 0 && c[1] == 0)
    }

    /// The integers of `[lo, hi]` that are not members.
    pub fn complement_within(&self, lo: i128, hi: i128) -> Result<DimSet, Error> {
        DimSet::interval(lo, hi).difference(self)
    }

    /// Whether the two sets have the same members. `==` compares representations, which are not
    /// unique, so it may call two equal sets different:
    ///
    /// ```
    /// use dimguard_solver::DimSet;
    /// let blocks = DimSet::from_values((121..=512).filter(|h| matches!(h % 64, 0 | 57..=63)));
    /// let periodic = DimSet::progression(121, 512, 64, 57)
    ///     .union(&DimSet::progression(121, 512, 64, 58)).unwrap();
    /// let periodic = (59..=64).try_fold(periodic, |s, r| s.union(&DimSet::progression(121, 512, 64, r))).unwrap();
    /// assert!(blocks.same_members(&periodic));
    /// assert!(!blocks.same_members(&DimSet::interval(121, 128)));
    /// ```
    /// A set operation that fails (past the budget) answers false.
    pub fn same_members(&self, other: &DimSet) -> bool {
        self.count() == other.count() && self.is_subset(other).unwrap_or(false)
    }

    /// Whether every member of `self` is a member of `other`.
    pub fn is_subset(&self, other: &DimSet) -> Result<bool, Error> {
        Ok(self.difference(other)?.is_empty())
    }

    /// The set as one arithmetic progression, when it is one.
    pub fn as_progression(&self) -> Option<Progression> {
        match self.segments.as_slice() {
            [s] if s.residues.len() == 1 => Some(Progression {
                lo: s.lo,
                hi: s.hi,
                modulus: s.modulus,
                residue: s.residues[0],
            }),
            _ => None,
        }
    }
}

impl Progression {
    /// Number of members.
    pub fn count(&self) -> u128 {
        class_count(self.lo, self.hi, self.modulus, self.residue)
    }

    /// Whether `x` is a member.
    pub fn contains(&self, x: i128) -> bool {
        x >= self.lo && x <= self.hi && x.mod_floor(&self.modulus) == self.residue
    }

    /// The progression as a set.
    pub fn to_set(&self) -> DimSet {
        DimSet::progression(self.lo, self.hi, self.modulus, self.residue)
    }
}

/// Boolean combination of sets: `keep(counts)` decides membership of a residue class from how
/// many runs of each operand cover it (`keep` of all zeros must be false).
///
/// The segments of all operands are split into clusters that overlap; a cluster of one segment
/// is kept or dropped whole, and only a cluster of several is swept, with the common modulus of
/// its own segments. The sweep costs the classes it lifts to that modulus (each residue of a
/// segment becomes at most `modulus / m` classes, and never more than its members), bounded by
/// the budget: sets with large moduli combine exactly. An operand's segments may overlap each
/// other and come in any order ([`DimSet::from_segments`] relies on it).
fn combine(sets: &[&DimSet], keep: impl Fn(&[u32]) -> bool) -> Result<DimSet, Error> {
    let n = sets.len();
    let mut all: Vec<(usize, &Segment)> = sets
        .iter()
        .enumerate()
        .flat_map(|(k, s)| s.segments.iter().map(move |g| (k, g)))
        .collect();
    all.sort_by_key(|(_, g)| g.lo);
    let mut raw: Vec<Segment> = Vec::new();
    let mut work: u128 = 0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i + 1;
        let mut reach = all[i].1.hi;
        while j < all.len() && all[j].1.lo <= reach {
            reach = reach.max(all[j].1.hi);
            j += 1;
        }
        match &all[i..j] {
            [(k, g)] => {
                let mut c = vec![0; n];
                c[*k] = 1;
                if keep(&c) {
                    raw.push((*g).clone());
                }
            }
            cluster => raw.extend(sweep_cluster(cluster, n, &keep, &mut work)?.segments),
        }
        i = j;
    }
    Ok(canonical(raw))
}

/// [`combine`] on one cluster of overlapping segments (`(operand, segment)`), lifted to the
/// least common multiple of their moduli. `work` counts the runs swept so far by the operation,
/// bounded by the budget before anything is built.
fn sweep_cluster(
    cluster: &[(usize, &Segment)],
    n: usize,
    keep: &impl Fn(&[u32]) -> bool,
    work: &mut u128,
) -> Result<DimSet, Error> {
    // The common modulus may be large: what the sweep costs is the number of classes it lifts
    // (bounded below), not the modulus. Only past 128 bits are the members combined one by one.
    let mut l: i128 = 1;
    for (_, seg) in cluster {
        let Ok(m) = lcm(l, seg.modulus) else {
            return members_of_cluster(cluster, n, keep, work).ok_or(Error::PeriodTooLarge {
                needed: i128::MAX,
                limit: i128::MAX,
            });
        };
        l = m;
    }
    // Every residue of a segment becomes up to `l / modulus` classes modulo `l` (those with a
    // member in the segment), each a run with two events: the work and memory of the sweep.
    let before = *work;
    for (_, seg) in cluster {
        let lift = (l / seg.modulus) as u128;
        for &r in &seg.residues {
            *work += lift.min(class_count(seg.lo, seg.hi, seg.modulus, r));
        }
    }
    if *work > work_limit() {
        return Err(Error::Exhausted(crate::budget::too_many_pieces()));
    }
    // Every class modulo `l` of a residue is active on the whole segment: its positions in
    // `lo..=hi` are exactly its members there. So all of a segment's classes share two event
    // positions, and the sweep has at most two per segment (no ragged run ends that split one
    // pattern into thousands of small pieces for `canonical` to merge back).
    let mut events = Vec::with_capacity(2 * (*work - before) as usize);
    // The deadline, every 2^16 events built (a million-class cluster takes tens of ms).
    let mut check_at = 0;
    for &(k, seg) in cluster {
        let (start, end) = (seg.lo, seg.hi.saturating_add(1));
        let class = |events: &mut Vec<(i128, i128, i32)>, res: i128| {
            // Encode the operand in the residue key: key = res * n + k.
            let key = res * n as i128 + k as i128;
            events.push((start, key, 1));
            events.push((end, key, -1));
        };
        let lift = (l / seg.modulus) as u128;
        for &r in &seg.residues {
            if events.len() >= check_at {
                crate::budget::check()?;
                check_at = events.len() + (1 << 16);
            }
            if class_count(seg.lo, seg.hi, seg.modulus, r) < lift {
                // Fewer members than classes: the segment is shorter than `l`, so each member is
                // alone in its class modulo `l`. (Stepping by the modulus: a segment with a copy
                // of its residues per residue made this quadratic in them, 200 ms past a 100 ms
                // budget on a fuzzer input.)
                let mut x = seg.lo.checked_add((r - seg.lo).rem_euclid(seg.modulus));
                while let Some(v) = x.filter(|&v| v <= seg.hi) {
                    class(&mut events, v.mod_floor(&l));
                    x = v.checked_add(seg.modulus);
                }
            } else {
                // At least `l / modulus` consecutive members: one in every class `≡ r`.
                let mut res = r;
                while res < l {
                    class(&mut events, res);
                    res += seg.modulus;
                }
            }
        }
    }
    sweep(l, events, keep, n, true)
}

/// Largest number of residue-class runs one set operation may sweep (each costs about 100
/// bytes while it is swept): 16 per piece of the budget's piece bound, and at least 2^20.
fn work_limit() -> u128 {
    (16 * crate::budget::pieces() as u128).max(1 << 20)
}

/// [`combine`] on a cluster whose common modulus does not fit in 128 bits, member by member:
/// `None` when it has more than [`PERIOD_LIMIT`] members (or the work bound is reached).
fn members_of_cluster(
    cluster: &[(usize, &Segment)],
    n: usize,
    keep: &impl Fn(&[u32]) -> bool,
    work: &mut u128,
) -> Option<DimSet> {
    let total: u128 = cluster.iter().map(|(_, g)| g.count()).sum();
    *work += total;
    if total > PERIOD_LIMIT as u128 || *work > work_limit() {
        return None;
    }
    let mut tagged: Vec<(i128, usize)> = Vec::with_capacity(total as usize);
    for &(k, g) in cluster {
        let one = DimSet {
            segments: vec![g.clone()],
        };
        tagged.extend(one.iter().map(|x| (x, k)));
    }
    tagged.sort_unstable();
    let mut kept = Vec::new();
    for same in tagged.chunk_by(|a, b| a.0 == b.0) {
        let mut c = vec![0; n];
        for &(_, k) in same {
            c[k] += 1;
        }
        if keep(&c) {
            kept.push(same[0].0);
        }
    }
    Some(DimSet::from_values(kept))
}

/// The sweep shared by [`combine`] and [`DimSet::from_runs`]. `events` are
/// `(position, key, +1/-1)` with `key = residue * n + operand`; a class is a member of the
/// result on a piece when `keep` accepts its operands' cover counts there.
///
/// It does not consult the deadline: a set operation either answers exactly or fails for a
/// reason of its own (period, work), and callers that run many of them check the deadline
/// between them. (A deadline failure here would reach every caller that treats a failed set
/// operation as "no answer", where an empty set can be a wrong one.)
fn sweep(
    l: i128,
    mut events: Vec<(i128, i128, i32)>,
    keep: impl Fn(&[u32]) -> bool,
    n: usize,
    deadline: bool,
) -> Result<DimSet, Error> {
    // Past the deadline of the thread's budget (when `deadline`), stop with the reason: a
    // sweep of a million classes takes tens of milliseconds.
    let expired = || {
        if deadline {
            crate::budget::check()
        } else {
            Ok(())
        }
    };
    // Near the deadline, sorted in runs of 2^16 with the deadline checked between them, then
    // merged (the merge sort finds the runs): the longest step that cannot stop at the deadline
    // is then the merge, a few passes, where one sort of two million events ran 100 ms past a
    // 100 ms budget (fuzzer seed 1795476574, execution 707990). Otherwise one sort, 6% faster.
    let near = crate::budget::remaining().is_some_and(|r| r < std::time::Duration::from_secs(2));
    if deadline && near && events.len() > 1 << 16 {
        for chunk in events.chunks_mut(1 << 16) {
            expired()?;
            chunk.sort_unstable();
        }
        expired()?;
        events.sort();
    } else {
        events.sort_unstable();
    }
    expired()?;
    let ni = n as i128;
    let mut counts: BTreeMap<i128, Vec<u32>> = BTreeMap::new();
    let mut active: std::collections::BTreeSet<i128> = Default::default();
    let mut raw: Vec<Segment> = Vec::new();
    let mut i = 0;
    let mut checked = 0;
    while i < events.len() {
        if i - checked >= 4096 {
            checked = i;
            expired()?;
        }
        let pos = events[i].0;
        while i < events.len() && events[i].0 == pos {
            let (_, key, d) = events[i];
            let (res, k) = (Integer::div_floor(&key, &ni), key.mod_floor(&ni) as usize);
            let c = counts.entry(res).or_insert_with(|| vec![0; n]);
            c[k] = (c[k] as i64 + d as i64) as u32;
            if keep(c) {
                active.insert(res);
            } else {
                active.remove(&res);
            }
            i += 1;
        }
        let Some(&(next, _, _)) = events.get(i) else {
            break;
        };
        if active.is_empty() || next <= pos {
            continue;
        }
        let (u, v) = (pos, next - 1);
        if v - u + 1 >= l {
            raw.push(Segment {
                lo: u,
                hi: v,
                modulus: l,
                residues: active.iter().copied().collect(),
            });
        } else {
            // A short piece: list its members' classes directly, walking the positions or the
            // active classes, whichever are fewer (each class has at most one position in a
            // piece shorter than `l`; `l` may be huge).
            let len = v - u + 1;
            let mut res: Vec<i128> = if len <= active.len() as i128 {
                (u..=v)
                    .map(|x| x.mod_floor(&l))
                    .filter(|r| active.contains(r))
                    .collect()
            } else {
                active
                    .iter()
                    .copied()
                    .filter(|&c| (c - u).mod_floor(&l) < len)
                    .map(|c| c.mod_floor(&l))
                    .collect()
            };
            if !res.is_empty() {
                res.sort_unstable();
                raw.push(Segment {
                    lo: u,
                    hi: v,
                    modulus: l,
                    residues: res,
                });
            }
        }
    }
    Ok(canonical(raw))
}

/// Tightens, reduces and merges raw pieces (sorted, disjoint, residues sorted).
fn canonical(raw: Vec<Segment>) -> DimSet {
    let mut out: Vec<Segment> = Vec::with_capacity(raw.len());
    for seg in raw {
        let Some(seg) = tighten(seg) else { continue };
        let seg = reduce(seg);
        out.push(seg);
        // Merge backwards while the last two pieces form one pattern.
        while out.len() >= 2 {
            let b = &out[out.len() - 1];
            let a = &out[out.len() - 2];
            match merge(a, b) {
                Some(m) => {
                    out.pop();
                    out.pop();
                    out.push(m);
                }
                None => break,
            }
        }
    }
    DimSet { segments: out }
}

fn tighten(seg: Segment) -> Option<Segment> {
    let lo = seg.next_at_least(seg.lo)?;
    let hi = seg.prev_at_most(seg.hi)?;
    if lo > hi {
        return None;
    }
    Some(Segment { lo, hi, ..seg })
}

/// Smallest modulus describing the same members; plain interval when the members are
/// consecutive.
fn reduce(seg: Segment) -> Segment {
    let count = seg.count();
    if count == (seg.hi - seg.lo) as u128 + 1 {
        return Segment {
            modulus: 1,
            residues: vec![0],
            ..seg
        };
    }
    // One residue class: no smaller modulus repeats it and its members are `modulus` apart, so
    // neither search below can find anything (and they are the hot path of enumeration).
    if seg.residues.len() == 1 {
        return seg;
    }
    // The shifts `d` with `residues + d = residues (mod m)` form a subgroup of the residues
    // modulo `m`: the multiples of its least element `p`, which divides `m`. The residues are then
    // a union of classes modulo `p` of `m / p` residues each, so `m / p` divides their number:
    // the candidates are the divisors `q` of that number (not of `m`, which may be huge), and the
    // least period is `m / q` for the largest `q` that works.
    let m = seg.modulus;
    let n = seg.residues.len() as i128;
    let mut qs: Vec<i128> = (1..=n)
        .take_while(|q| q * q <= n)
        .filter(|q| n % q == 0)
        .collect();
    let big: Vec<i128> = qs.iter().rev().map(|q| n / q).collect();
    qs.extend(big);
    qs.dedup();
    for &q in qs.iter().rev() {
        if q == 1 {
            break;
        }
        if m % q != 0 {
            continue;
        }
        let d = m / q;
        // `(r + d) mod m` without overflow for any modulus.
        let shift = |r: i128| if r >= m - d { r - (m - d) } else { r + d };
        let periodic = seg
            .residues
            .iter()
            .all(|&r| seg.residues.binary_search(&shift(r)).is_ok());
        if periodic {
            let mut res: Vec<i128> = seg.residues.iter().map(|r| r % d).collect();
            res.sort_unstable();
            res.dedup();
            return Segment {
                modulus: d,
                residues: res,
                ..seg
            };
        }
    }
    // Members that form a progression with a step smaller than the modulus (short pieces).
    if count <= 64 {
        let members: Vec<i128> = DimSet {
            segments: vec![seg.clone()],
        }
        .iter()
        .collect();
        if members.len() >= 2 {
            let step = members[1] - members[0];
            if members.windows(2).all(|w| w[1] - w[0] == step) && step < m {
                return Segment {
                    lo: seg.lo,
                    hi: seg.hi,
                    modulus: step,
                    residues: vec![seg.lo.mod_floor(&step)],
                };
            }
        }
    }
    seg
}

/// Merges `a` and `b` (a before b) into one segment when one of their patterns describes all
/// members of both and nothing else in between.
fn merge(a: &Segment, b: &Segment) -> Option<Segment> {
    // Candidate patterns: b's, a's, and the progression through a's last and b's first member
    // (which joins single values into one progression).
    let step = b.lo - a.hi;
    let gap = Segment {
        lo: a.hi,
        hi: b.lo,
        modulus: step,
        residues: vec![a.hi.mod_floor(&step)],
    };
    for pat in [b, a, &gap] {
        let cand = Segment {
            lo: a.lo,
            hi: b.hi,
            modulus: pat.modulus,
            residues: pat.residues.clone(),
        };
        // Members must match exactly: equal counts and every member of a and b in the pattern.
        if cand.count() != a.count() + b.count() {
            continue;
        }
        let fits = [a, b].iter().all(|part| {
            (part.modulus == pat.modulus && part.residues == pat.residues)
                || (part.count() <= 64
                    && DimSet {
                        segments: vec![(*part).clone()],
                    }
                    .iter()
                    .all(|x| cand.contains(x)))
        });
        if fits {
            return Some(reduce(cand));
        }
    }
    None
}

#[cfg(test)]
pub(crate) fn arb_dimset(
    starts: std::ops::Range<i128>,
    width: i128,
    moduli: i128,
    segments: std::ops::Range<usize>,
) -> impl proptest::strategy::Strategy<Value = DimSet> {
    use proptest::prelude::*;
    prop::collection::vec(
        (
            starts,
            0..width,
            1..moduli,
            prop::collection::vec(0..moduli - 1, 1..5),
        ),
        segments,
    )
    .prop_map(|v| {
        let segs = v
            .into_iter()
            .map(|(lo, w, m, rs)| Segment {
                lo,
                hi: lo + w,
                modulus: m,
                residues: rs,
            })
            .collect();
        DimSet::from_segments(segs).expect("small moduli")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute(s: &DimSet, lo: i128, hi: i128) -> Vec<i128> {
        (lo..=hi).filter(|&x| s.contains(x)).collect()
    }

    fn arb_set() -> impl Strategy<Value = DimSet> {
        arb_dimset(-60..60, 40, 9, 0..4)
    }

    #[test]
    fn raft_pattern_is_one_segment() {
        let runs: Vec<(i128, Run)> = [
            (7, 135, 2159),
            (0, 136, 2160),
            (5, 141, 2157),
            (6, 142, 2158),
        ]
        .iter()
        .map(|&(r, a, b)| (r, Run { first: a, last: b }))
        .collect();
        let s = DimSet::from_runs(8, &runs).unwrap();
        assert_eq!(s.segments().len(), 1, "{s:?}");
        assert_eq!(
            s.segments()[0],
            Segment {
                lo: 135,
                hi: 2160,
                modulus: 8,
                residues: vec![0, 5, 6, 7]
            }
        );
        assert_eq!(s.count(), 1014);
    }

    #[test]
    fn from_values_is_exact_and_canonical() {
        let s = DimSet::from_values([2120, 136, 200, 200, 264]);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![136, 200, 264, 2120]);
        let s = DimSet::from_values((0..32).map(|k| 136 + 64 * k));
        assert_eq!(s.segments().len(), 1);
    }

    #[test]
    fn single_values_join_into_a_progression() {
        let s = (0..32)
            .map(|k| DimSet::interval(136 + 64 * k, 136 + 64 * k))
            .try_fold(DimSet::empty(), |acc, x| acc.union(&x))
            .unwrap();
        assert_eq!(
            s.segments(),
            &[Segment {
                lo: 136,
                hi: 2120,
                modulus: 64,
                residues: vec![8]
            }]
        );
    }

    #[test]
    fn a_clip_is_canonical() {
        // Fuzzer execution 530734 (seed 1795442607): `h != 5` over 4..78, clipped to 4..6.
        let s = DimSet::interval(4, 78)
            .difference(&DimSet::interval(5, 5))
            .unwrap()
            .clip(4, 6);
        assert_eq!(s, DimSet::progression(4, 6, 2, 0));
        assert_eq!(s.segments().len(), 1);
    }

    #[test]
    fn huge_ranges_cost_nothing() {
        let s = DimSet::progression(2, 1 << 62, 64, 8);
        assert_eq!(s.count(), ((1u128 << 62) - 8) / 64 + 1);
        let t = DimSet::progression(0, 1 << 62, 2, 0);
        let i = s.intersect(&t).unwrap();
        assert_eq!(i, s);
        let c = s.complement_within(2, 1 << 62).unwrap();
        assert_eq!(c.count() + s.count(), (1u128 << 62) - 1);
    }

    #[test]
    fn large_common_periods_are_exact_and_the_limit_is_data() {
        // Fuzzer execution 899010 (seed 1795445089): unions of progressions with large steps
        // failed on the period limit, and the joint search's fallback listed members instead
        // (1.1 GiB, 5 s). The sweep costs the classes it lifts, not the common period.
        let a = DimSet::progression(0, 1 << 40, 65_521, 0);
        let b = DimSet::progression(0, 1 << 40, 65_519, 0);
        let i = a.intersect(&b).unwrap();
        let l = 65_521 * 65_519;
        assert_eq!(i, DimSet::progression(0, 1 << 40, l, 0));
        let u = a.union(&b).unwrap();
        assert_eq!(u.count(), a.count() + b.count() - i.count());
        for x in (0..1 << 40)
            .step_by(65_519 * 1013)
            .chain((0..1 << 40).step_by(65_521 * 997))
        {
            for y in x - 1..=x + 1 {
                let want = (0..=1 << 40).contains(&y) && (y % 65_519 == 0 || y % 65_521 == 0);
                assert_eq!(u.contains(y), want, "{y}");
            }
        }
        // A common modulus past 128 bits with millions of members: refused, as data.
        let p = (1i128 << 100) + 1;
        let q = (1i128 << 100) + 3;
        let (a, b) = (
            DimSet::progression(0, 1 << 126, p, 0),
            DimSet::progression(0, 1 << 126, q, 0),
        );
        assert!(matches!(a.intersect(&b), Err(Error::PeriodTooLarge { .. })));
        // Few members: combined member by member, exactly.
        let a = DimSet::progression(0, 1 << 30, 65_521, 0);
        let b = DimSet::progression(0, 1 << 30, 65_519, 0);
        let i = a.intersect(&b).unwrap();
        assert_eq!(i.iter().collect::<Vec<_>>(), [0]);
        let u = a.union(&b).unwrap();
        assert_eq!(u.count(), a.count() + b.count() - 1);
        let d = a.difference(&b).unwrap();
        assert_eq!(
            d.iter().collect::<Vec<_>>(),
            a.iter().skip(1).collect::<Vec<_>>()
        );
    }

    #[test]
    fn sets_with_periods_past_the_limit_are_read_back() {
        // Fuzzer execution 897387 (seed 1795436842): a report printed a set with modulus 286,440,
        // which `from_segments` refused (every modulus went through the common-period sweep).
        let step = 286_440;
        let s = DimSet::from_values((0..40).map(|k| 7 + step * k).chain([3, 5]));
        assert!(s.segments().iter().any(|g| g.modulus == step), "{s:?}");
        assert_eq!(DimSet::from_segments(s.segments().to_vec()).unwrap(), s);
        // Several residues of a huge modulus, reduced in time bounded by the residue count.
        let m = 3 << 100;
        let seg = Segment {
            lo: 0,
            hi: 5 << 101,
            modulus: m,
            residues: vec![2 << 100, 0, 1 << 100],
        };
        let t = DimSet::from_segments(vec![seg]).unwrap();
        assert_eq!(t, DimSet::progression(0, 5 << 101, 1 << 100, 0));
        let odd = Segment {
            lo: -(1 << 120),
            hi: 1 << 120,
            modulus: i128::MAX,
            residues: vec![1, i128::MAX - 1],
        };
        // Within ±2^120 its members are 1 and i128::MAX - 1 - i128::MAX = -1.
        let two = DimSet::from_segments(vec![odd]).unwrap();
        assert_eq!(two.iter().collect::<Vec<_>>(), [-1, 1]);
        // Images under a large multiplier are built directly, not swept.
        let img = s.affine_image(1 << 40, 3).unwrap();
        assert_eq!(img.count(), s.count());
        assert!(s.iter().all(|x| img.contains((x << 40) + 3)));
        // A modulus below 1 is an error, not a silently dropped segment.
        let bad = Segment {
            lo: 0,
            hi: 9,
            modulus: 0,
            residues: vec![0],
        };
        assert!(DimSet::from_segments(vec![bad]).is_err());
    }

    proptest! {
        /// The image under `x // k` (and, through it, `ceil(x / k)` and `a*x + b` then `// k`)
        /// against the quotients of every member (the sets lie in -60..60).
        #[test]
        fn floor_image_matches_brute_force(a in arb_set(), k in 1i128..13, m in -3i128..4, c in -5i128..6) {
            let members = brute(&a, -200, 200);
            let q = a.floor_image(k).unwrap();
            let want: std::collections::BTreeSet<i128> = members.iter().map(|x| Integer::div_floor(x, &k)).collect();
            for y in -250..=250 {
                prop_assert_eq!(q.contains(y), want.contains(&y), "{} // {} at {}", 0, k, y);
            }
            prop_assert_eq!(q.count() as usize, want.len());
            if m != 0 {
                let e = a.affine_image(m, c).unwrap().floor_image(k).unwrap();
                let want: std::collections::BTreeSet<i128> =
                    members.iter().map(|x| Integer::div_floor(&(m * x + c), &k)).collect();
                for y in -1000..=1000 {
                    prop_assert_eq!(e.contains(y), want.contains(&y), "({}*x + {}) // {} at {}", m, c, k, y);
                }
            }
        }

        #[test]
        fn ops_match_brute_force(a in arb_set(), b in arb_set()) {
            let (lo, hi) = (-120, 120);
            let ba = brute(&a, lo, hi);
            let bb = brute(&b, lo, hi);
            let i = a.intersect(&b).unwrap();
            let via_sweep = combine(&[&a, &b], |c| c[0] > 0 && c[1] > 0).unwrap();
            for x in lo..=hi {
                prop_assert_eq!(i.contains(x), via_sweep.contains(x));
            }
            let u = a.union(&b).unwrap();
            let d = a.difference(&b).unwrap();
            let c = a.complement_within(-50, 50).unwrap();
            for x in lo..=hi {
                let (ina, inb) = (ba.contains(&x), bb.contains(&x));
                prop_assert_eq!(i.contains(x), ina && inb, "∩ at {}", x);
                prop_assert_eq!(u.contains(x), ina || inb, "∪ at {}", x);
                prop_assert_eq!(d.contains(x), ina && !inb, "\\ at {}", x);
                prop_assert_eq!(c.contains(x), (-50..=50).contains(&x) && !ina, "complement at {}", x);
            }
            prop_assert_eq!(u.count() as usize, brute(&u, lo, hi).len());
            let clipped = a.clip(-30, 40);
            let via_sweep = combine(&[&a, &DimSet::interval(-30, 40)], |c| c[0] > 0 && c[1] > 0).unwrap();
            for x in lo..=hi {
                prop_assert_eq!(clipped.contains(x), via_sweep.contains(x));
            }
            // Canonical: every result reads back as itself (a clip once left {4} and {6} as
            // two pieces where reading them back gives the progression {4, 6}).
            for r in [&i, &u, &d, &c, &clipped, &a.clip(-5, 5), &b.clip(0, 17)] {
                prop_assert_eq!(&DimSet::from_segments(r.segments().to_vec()).unwrap(), r);
            }
            let members: Vec<i128> = u.iter().collect();
            prop_assert_eq!(&members, &brute(&u, lo, hi));
            for x in lo..=hi {
                prop_assert_eq!(u.next_at_least(x), members.iter().copied().find(|&m| m >= x));
                prop_assert_eq!(u.prev_at_most(x), members.iter().rev().copied().find(|&m| m <= x));
            }
            prop_assert_eq!(u.min(), members.first().copied());
            prop_assert_eq!(u.max(), members.last().copied());
            // Canonical form: sorted, disjoint, tight.
            for w in u.segments().windows(2) {
                prop_assert!(w[0].hi < w[1].lo);
            }
            for s in u.segments() {
                prop_assert!(s.contains(s.lo) && s.contains(s.hi));
            }
        }

        #[test]
        fn affine_image_matches_brute_force(a in arb_set(), k in -7i128..8, c in -20i128..20) {
            // Built segment by segment: no common period, so never `PeriodTooLarge`.
            let image = a.affine_image(k, c).unwrap();
            let brute: std::collections::BTreeSet<i128> = a.iter().map(|x| k * x + c).collect();
            prop_assert_eq!(image.iter().collect::<Vec<_>>(), brute.into_iter().collect::<Vec<_>>());
            if k != 0 {
                // The preimage of the image is the set again.
                let back = image.affine_preimage(k, c).unwrap();
                prop_assert_eq!(back.iter().collect::<Vec<_>>(), a.iter().collect::<Vec<_>>());
            }
        }

        #[test]
        fn affine_preimage_matches_brute_force(a in arb_set(), k in -7i128..8, c in -20i128..20) {
            prop_assume!(k != 0);
            let p = a.affine_preimage(k, c).unwrap();
            for x in -200..=200 {
                prop_assert_eq!(p.contains(x), a.contains(k * x + c), "x={} k={} c={}", x, k, c);
            }
        }

        #[test]
        fn from_segments_reads_back_every_set_with_any_moduli(
            parts in proptest::collection::vec(
                (0i128..4, 1i128..2_000_000, 1i128..6, proptest::collection::vec(0i128..1 << 40, 1..4)),
                1..6,
            ),
            values in proptest::collection::vec(0i128..1 << 30, 0..30),
            k in 1i128..1 << 20,
            shuffle in any::<u64>(),
        ) {
            // Sets as the library builds them: disjoint progressions and patterns with moduli far
            // past `PERIOD_LIMIT`, scattered values, their images under a large multiplier.
            let mut segs = Vec::new();
            let mut at = 0i128;
            for (gap, modulus, periods, residues) in parts {
                let lo = at + gap;
                let hi = lo + modulus * periods;
                segs.push(Segment { lo, hi, modulus, residues });
                at = hi + 1;
            }
            let a = DimSet::from_segments(segs.clone()).unwrap();
            let b = DimSet::from_values(values.iter().map(|v| v + at + 1));
            for set in [a.clone(), b.clone(), b.affine_image(k, 1).unwrap(), a.affine_image(k, -5).unwrap()] {
                prop_assert_eq!(DimSet::from_segments(set.segments().to_vec()).unwrap(), set.clone());
                // Any order of the segments reads back the same set.
                let mut shuffled = set.segments().to_vec();
                let n = shuffled.len().max(1);
                shuffled.rotate_left((shuffle as usize) % n);
                shuffled.reverse();
                prop_assert_eq!(DimSet::from_segments(shuffled).unwrap(), set.clone());
                for w in set.segments().windows(2) {
                    prop_assert!(w[0].hi < w[1].lo);
                }
            }
            // Members are exact: the raw segments' members, probed around each one's ends (a
            // probe past one end may fall in the next segment: segments can be adjacent).
            let raw_member = |x: i128| {
                segs.iter().any(|s| {
                    x >= s.lo && x <= s.hi && s.residues.iter().any(|r| r % s.modulus == x.mod_floor(&s.modulus))
                })
            };
            for s in &segs {
                for x in (s.lo - 3..s.lo + 40).chain(s.hi - 40..s.hi + 3) {
                    prop_assert_eq!(a.contains(x), raw_member(x), "x={}", x);
                }
            }
            for &v in &values {
                prop_assert!(b.contains(v + at + 1));
                prop_assert_eq!(b.count() as usize, values.iter().collect::<std::collections::BTreeSet<_>>().len());
            }
        }

        #[test]
        fn ops_with_large_moduli_match_brute_force(
            va in proptest::collection::vec(0i128..3_000_000, 0..40),
            vb in proptest::collection::vec(0i128..3_000_000, 0..40),
            steps in proptest::collection::vec((0i128..3_000_000, 1i128..200_000, 3i128..40), 0..3),
            small in arb_set(),
        ) {
            // Scattered values (progressions with moduli far past `PERIOD_LIMIT`), long
            // progressions, and a small-modulus pattern: every operation must be exact or say
            // `PeriodTooLarge`, never wrong.
            let mut a = DimSet::from_values(va.iter().copied());
            for &(lo, m, k) in &steps {
                a = a.union(&DimSet::progression(lo, lo + m * k, m, lo)).unwrap();
            }
            let b = DimSet::from_values(vb.iter().copied())
                .union(&small.affine_image(1, 1_000_000).unwrap())
                .unwrap();
            let probes: std::collections::BTreeSet<i128> = a
                .iter()
                .chain(b.iter())
                .flat_map(|x| [x - 1, x, x + 1])
                .collect();
            type Op = (&'static str, Result<DimSet, Error>, fn(bool, bool) -> bool);
            let ops: [Op; 3] = [
                ("∩", a.intersect(&b), |x, y| x && y),
                ("∪", a.union(&b), |x, y| x || y),
                ("\\", a.difference(&b), |x, y| x && !y),
            ];
            for (name, r, f) in ops {
                let r = match r {
                    Err(Error::PeriodTooLarge { .. }) => continue,
                    other => other.unwrap(),
                };
                for &x in &probes {
                    prop_assert_eq!(r.contains(x), f(a.contains(x), b.contains(x)), "{} at {}", name, x);
                }
                let want = probes.iter().filter(|&&x| f(a.contains(x), b.contains(x))).count();
                prop_assert_eq!(r.count() as usize, want, "{}", name);
            }
        }

        #[test]
        fn from_segments_of_overlapping_segments_matches_brute_force(
            raw in proptest::collection::vec(
                (-60i128..60, 0i128..40, 1i128..9, proptest::collection::vec(-20i128..20, 1..4)),
                0..6,
            ),
        ) {
            let segs: Vec<Segment> = raw
                .into_iter()
                .map(|(lo, w, modulus, residues)| Segment { lo, hi: lo + w, modulus, residues })
                .collect();
            let set = DimSet::from_segments(segs.clone()).unwrap();
            for x in -70..=110 {
                let member = segs.iter().any(|s| {
                    x >= s.lo && x <= s.hi && s.residues.iter().any(|r| r.mod_floor(&s.modulus) == x.mod_floor(&s.modulus))
                });
                prop_assert_eq!(set.contains(x), member, "x={}", x);
            }
        }

        #[test]
        fn sorted_runs_match_the_sweep(gaps in proptest::collection::vec((2i128..9, 0i128..6), 0..40)) {
            // Runs separated by at least one missing value, as enumeration produces them.
            let mut runs = Vec::new();
            let mut at = -100;
            for (gap, len) in gaps {
                at += gap;
                runs.push(Run { first: at, last: at + len });
                at += len;
            }
            let direct = DimSet::from_sorted_runs(&runs);
            let tagged: Vec<(i128, Run)> = runs.iter().map(|&r| (0, r)).collect();
            let swept = DimSet::from_runs(1, &tagged).unwrap();
            prop_assert_eq!(&direct, &swept);
            for x in -110..=at + 10 {
                let member = runs.iter().any(|r| (r.first..=r.last).contains(&x));
                prop_assert_eq!(direct.contains(x), member, "at {}", x);
            }
        }
    }
}
