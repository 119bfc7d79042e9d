//! Sound, maximal `torch.export.Dim` suggestions.
//!
//! A single `Dim` expresses an arithmetic progression: a plain `Dim('h', min, max)` (step 1) or a
//! derived `m*_h + r`. Given the exact feasible set `F`, [`rank`] finds the progressions contained
//! in `F` with the most members.
//!
//! # Search
//!
//! For a step `m` and residue `r`, the longest run of consecutive terms `x, x+m, x+2m, ...`
//! inside `F` is computed segment by segment: on a segment with modulus `M` and residues `R`,
//! membership of the terms is periodic with period `M / gcd(m, M)`, so each segment contributes a
//! full run, or a prefix, a suffix and interior runs read off one period; runs continue across
//! neighbouring segments. The cost is independent of the width of `F`.
//!
//! Steps are tried from the divisors of `F`'s period up, and a step `m` is skipped when an upper
//! bound on its runs (terms that fit in `F`'s span, and at most `M/gcd(m, M) - 1` per segment
//! whose pattern has no complete class modulo `gcd(m, M)`) cannot reach the best count found.
//! Every step up to `(max F - min F) / (best - 1)` is accounted for, so the first suggestion is
//! maximal over all progressions. When that bound exceeds [`STEP_LIMIT`], the search stops there
//! and says so ([`Maximality::AmongSteps`]). Sets of at most [`SMALL_SET`] members are searched
//! exhaustively instead.

use crate::types::{DimSet, Progression, Segment};
use num_integer::Integer;

/// Sets with at most this many members are searched over every pair of members.
pub const SMALL_SET: u128 = 16;
/// Largest step the structured search examines.
pub const STEP_LIMIT: i128 = 1 << 14;

/// How strong the maximality claim of the first suggestion is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Maximality {
    /// No progression inside the set has more members.
    Proven,
    /// No progression with a step up to `max_step` has more members; larger steps were not
    /// examined.
    AmongSteps {
        /// Largest step examined.
        max_step: i128,
    },
}

/// Ranked progressions inside a set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ranking {
    /// Best first. The first has the most members of any progression inside the set (see
    /// `maximality`); with an example, it contains the example when some largest one does.
    pub progressions: Vec<Progression>,
    /// The claim for the first entry.
    pub maximality: Maximality,
}

/// Ranks the progressions inside `f`: the largest first, then the best run of every other
/// residue class of the winning step, then the longest plain interval. At most `limit` entries.
pub fn rank(f: &DimSet, example: Option<i128>, limit: usize) -> Ranking {
    rank_with(f, example, limit, SMALL_SET)
}

fn rank_with(f: &DimSet, example: Option<i128>, limit: usize, small_set: u128) -> Ranking {
    let mut found: Vec<Progression> = Vec::new();
    let maximality = if f.count() <= small_set {
        exhaustive(f, &mut found);
        Maximality::Proven
    } else {
        structured(f, example, &mut found)
    };
    // The largest progression through the example: among equally large ones it comes first
    // (each step's search keeps one longest run per class, which may not be the example's), and
    // when every largest one leaves the example out it is listed too (torch refuses a spec that
    // excludes the traced size, so `dimguard.export` traces elsewhere or takes this one).
    let through = example
        .filter(|e| f.contains(*e))
        .and_then(|e| best_through(f, e));
    found.extend(through);
    if found.is_empty() {
        // The search was cut by the time budget before its first step: each residue class of
        // each segment is still a progression inside the set (ranked, claimed maximal by
        // nothing).
        for s in f.segments() {
            for r in &s.residues {
                let first = s.lo + (r - s.lo).rem_euclid(s.modulus);
                if first <= s.hi {
                    let last = first + (s.hi - first) / s.modulus * s.modulus;
                    found.push(normalized(first, last, s.modulus));
                }
            }
        }
    }
    let key = |p: &Progression| {
        let holds = example.is_some_and(|e| p.contains(e));
        (std::cmp::Reverse(p.count()), !holds, p.modulus, p.lo)
    };
    found.sort_by_cached_key(key);
    found.dedup();
    let Some(best) = found.first().copied() else {
        return Ranking {
            progressions: vec![],
            maximality,
        };
    };
    let mut out = vec![best];
    if let Some(t) = through.filter(|t| t.count() < best.count()) {
        out.push(t);
    }
    // The other residue classes of the winning step, then the longest interval.
    let mut others: Vec<Progression> = found
        .iter()
        .filter(|p| p.modulus == best.modulus && p.residue != best.residue && p.count() > 1)
        .copied()
        .collect();
    others.sort_by_cached_key(key);
    let mut seen_res = vec![best.residue];
    for p in others {
        if !seen_res.contains(&p.residue) {
            seen_res.push(p.residue);
            out.push(p);
        }
    }
    if let Some(iv) = found.iter().find(|p| p.modulus == 1 && p.count() > 1) {
        if !out.contains(iv) {
            out.push(*iv);
        }
    }
    // The example's progression (second) may also be one of the others: listed once.
    let mut listed: Vec<Progression> = Vec::with_capacity(out.len());
    out.retain(|p| {
        let fresh = !listed.contains(p);
        listed.push(*p);
        fresh
    });
    out.truncate(limit.max(1));
    Ranking {
        progressions: out,
        maximality,
    }
}

/// Disjoint progressions covering as much of `f` as `n` of them can, chosen greedily: each is
/// the largest progression inside what the previous ones left (the first of [`rank`] on the
/// rest, so the example's run is preferred among equally large ones). Fewer than `n` when they
/// already cover `f`. Each is one `Dim` (plain or derived): `n` exports, or `n` TensorRT
/// profiles, that together accept every size they list.
///
/// ```
/// use dimguard_solver::{progression_cover, DimSet};
/// // Four residue classes mod 8 (RAFT's guard over 135..2160): no one Dim holds them.
/// let f = DimSet::from_values((135..=2160).filter(|h| [0, 5, 6, 7].contains(&(h % 8))));
/// let pieces = progression_cover(&f, Some(520), 8);
/// assert_eq!(pieces.len(), 4);
/// assert_eq!(pieces.iter().map(|p| p.count()).sum::<u128>(), f.count());
/// assert!(pieces[0].contains(520));
/// ```
pub fn cover(f: &DimSet, example: Option<i128>, n: usize) -> Vec<Progression> {
    let mut left = f.clone();
    let mut out: Vec<Progression> = Vec::new();
    while out.len() < n && !left.is_empty() {
        let example = example.filter(|e| left.contains(*e));
        let Some(best) = rank(&left, example, 1).progressions.first().copied() else {
            break;
        };
        match left.difference(&best.to_set()) {
            Ok(rest) => left = rest,
            Err(_) => break,
        }
        out.push(best);
    }
    out
}

/// The progression `lo..=hi` step `m`, written with step 1 when it holds one value.
pub(crate) fn normalized(lo: i128, hi: i128, m: i128) -> Progression {
    if lo == hi {
        Progression {
            lo,
            hi,
            modulus: 1,
            residue: 0,
        }
    } else {
        Progression {
            lo,
            hi,
            modulus: m,
            residue: lo.mod_floor(&m),
        }
    }
}

/// Every maximal run of every step, for small sets.
fn exhaustive(f: &DimSet, out: &mut Vec<Progression>) {
    let v: Vec<i128> = f.iter().collect();
    if v.len() == 1 {
        out.push(normalized(v[0], v[0], 1));
    }
    // Longest run per (step, residue): keep the best per key.
    let mut best: std::collections::HashMap<(i128, i128), Progression> = Default::default();
    for i in 0..v.len() {
        for j in i + 1..v.len() {
            let step = v[j] - v[i];
            if v[i].checked_sub(step).is_some_and(|p| f.contains(p)) {
                continue; // not the start of its run
            }
            let mut last = v[j];
            while let Some(n) = last.checked_add(step).filter(|n| f.contains(*n)) {
                last = n;
            }
            let p = normalized(v[i], last, step);
            let e = best.entry((step, v[i].mod_floor(&step))).or_insert(p);
            if p.count() > e.count() {
                *e = p;
            }
        }
    }
    out.extend(best.into_values());
}

/// Per-segment summary of the terms of one class.
struct SegRun {
    first: i128,
    last: i128,
    full: bool,
    prefix: u128,
    suffix: u128,
    /// Best interior run: (count, first term).
    interior: (u128, i128),
}

fn seg_run(s: &Segment, m: i128, r: i128) -> Option<SegRun> {
    // First and last term of the class in [lo, hi].
    let first = s.lo + (r - s.lo).mod_floor(&m);
    let last = s.hi - (s.hi - r).mod_floor(&m);
    if first > last {
        return None;
    }
    let n = ((last - first) / m) as u128 + 1;
    let t = (s.modulus / m.gcd(&s.modulus)) as u128;
    let span = n.min(2 * t) as usize;
    let bit = |j: u128| {
        s.residues
            .binary_search(&((first + m * (j % t) as i128).mod_floor(&s.modulus)))
            .is_ok()
    };
    let full = (0..n.min(t)).all(bit);
    if full {
        return Some(SegRun {
            first,
            last,
            full,
            prefix: n,
            suffix: n,
            interior: (n, first),
        });
    }
    let prefix = (0..n).take_while(|&j| bit(j)).count() as u128;
    let suffix = (0..n).rev().take_while(|&j| bit(j)).count() as u128;
    // Interior runs: one scan of up to two periods sees every run shape.
    let (mut best, mut cur, mut start) = ((0u128, first), 0u128, 0u128);
    for j in 0..span as u128 {
        if bit(j) {
            if cur == 0 {
                start = j;
            }
            cur += 1;
            if cur > best.0 {
                best = (cur, first + m * start as i128);
            }
        } else {
            cur = 0;
        }
    }
    Some(SegRun {
        first,
        last,
        full,
        prefix,
        suffix,
        interior: best,
    })
}

/// The longest run of the class `r mod m` inside `f`: (count, first term).
fn longest_run(f: &DimSet, m: i128, r: i128) -> Option<(u128, i128)> {
    let mut best: Option<(u128, i128)> = None;
    let mut consider = |c: u128, start: i128| {
        if c > 0 && best.is_none_or(|b| c > b.0) {
            best = Some((c, start));
        }
    };
    // The run that is open at the end of the previous segment: (count, start, last term).
    let mut open: Option<(u128, i128, i128)> = None;
    for s in f.segments() {
        let Some(sr) = seg_run(s, m, r) else { continue };
        let continues = open.is_some_and(|(_, _, last)| last.checked_add(m) == Some(sr.first));
        if !continues {
            if let Some((c, st, _)) = open.take() {
                consider(c, st);
            }
        }
        if sr.full {
            open = Some(match open.filter(|_| continues) {
                Some((c, st, _)) => (c + sr.prefix, st, sr.last),
                None => (sr.prefix, sr.first, sr.last),
            });
            continue;
        }
        if let Some((c, st, _)) = open.take().filter(|_| continues) {
            consider(c + sr.prefix, st);
        }
        consider(sr.prefix, sr.first);
        consider(sr.interior.0, sr.interior.1);
        if sr.suffix > 0 {
            let st = sr.last - m * (sr.suffix as i128 - 1);
            open = Some((sr.suffix, st, sr.last));
        }
    }
    if let Some((c, st, _)) = open {
        consider(c, st);
    }
    best
}

/// Upper bound on the run length of any class of step `m`.
///
/// Along the class, a segment with modulus `M` and residues `R` repeats with period
/// `M / g`, `g = gcd(m, M)`, visiting one coset `c + gZ` of residues. A run that does not cover a
/// whole coset inside `R` visits distinct residues of one coset, all in `R`: it has at most
/// `max_c |R ∩ (c + gZ)|` terms in that segment.
fn upper_bound(f: &DimSet, m: i128) -> u128 {
    let (lo, hi) = (f.min().unwrap_or(0), f.max().unwrap_or(0));
    let span_bound = ((hi - lo) / m) as u128 + 1;
    let mut total: u128 = 0;
    let mut per_coset: Vec<u128> = Vec::new();
    for s in f.segments() {
        let g = m.gcd(&s.modulus);
        let terms = ((s.hi - s.lo) / m) as u128 + 1;
        per_coset.clear();
        per_coset.resize(g as usize, 0);
        for r in &s.residues {
            per_coset[(r % g) as usize] += 1;
        }
        let coset_size = (s.modulus / g) as u128;
        let best = per_coset.iter().copied().max().unwrap_or(0);
        total += if best == coset_size {
            terms
        } else {
            terms.min(best)
        };
    }
    total.min(span_bound)
}

fn structured(f: &DimSet, example: Option<i128>, out: &mut Vec<Progression>) -> Maximality {
    let (lo, hi) = (f.min().expect("non-empty"), f.max().expect("non-empty"));
    let p = f.period();
    let mut best: u128 = 1;
    let mut tried: std::collections::HashSet<i128> = Default::default();
    // Examines step `m`; false when the time budget ran out before every residue was.
    let mut try_step = |m: i128, best: &mut u128, out: &mut Vec<Progression>| -> bool {
        if !tried.insert(m) {
            return true;
        }
        // Bounding a step costs a pass over every residue of every segment: thousands of steps
        // pruned by their bound alone took 150 ms past the deadline (fuzzer seed 1795453827,
        // execution 629534), so the deadline is checked at each step too.
        if crate::budget::expired().is_some() {
            return false;
        }
        let ub = upper_bound(f, m);
        if ub < *best || (ub == *best && example.is_none() && m != 1) {
            return true;
        }
        // One residue costs a pass over every segment: on a set of thousands of segments, 64 of
        // them took 60 ms past the deadline, so the deadline is checked at each one (a clock
        // read, small beside the pass).
        let many = f.segments().len() >= 64;
        for r in 0..m {
            if (many || r % 64 == 63) && crate::budget::expired().is_some() {
                return false;
            }
            if let Some((c, st)) = longest_run(f, m, r) {
                let last = st + m * (c as i128 - 1);
                out.push(normalized(st, last, m));
                *best = (*best).max(c);
            }
        }
        true
    };
    // Divisors of the period first: they hold the long runs of periodic sets.
    let mut divs: Vec<i128> = (1..=p.min(STEP_LIMIT)).filter(|d| p % d == 0).collect();
    divs.sort_unstable_by(|a, b| b.cmp(a));
    for m in divs {
        if !try_step(m, &mut best, out) {
            // Past the time budget: the steps examined are not a prefix; claim nothing.
            return Maximality::AmongSteps { max_step: 0 };
        }
    }
    let bound = |best: u128| {
        if best <= 1 {
            hi - lo
        } else {
            (hi - lo) / (best as i128 - 1)
        }
    };
    let mut m = 1;
    while m <= bound(best) {
        if m > STEP_LIMIT {
            return Maximality::AmongSteps {
                max_step: STEP_LIMIT,
            };
        }
        // Past the time budget the search stops; the claim says how far it got.
        if !try_step(m, &mut best, out) {
            return Maximality::AmongSteps { max_step: m - 1 };
        }
        m += 1;
    }
    Maximality::Proven
}

/// The largest progression inside `f` that holds `e` (a member of `f`), over every step up to
/// [`STEP_LIMIT`] that could beat the best found (a progression of `c` terms and step `m` spans
/// `m*(c-1)`); the smallest step wins ties. None past the time budget.
fn best_through(f: &DimSet, e: i128) -> Option<Progression> {
    let (lo, hi) = (f.min()?, f.max()?);
    let mut best = Progression {
        lo: e,
        hi: e,
        modulus: 1,
        residue: 0,
    };
    let mut m: i128 = 1;
    while m <= STEP_LIMIT && (best.count() <= 1 || m <= (hi - lo) / (best.count() as i128 - 1)) {
        if crate::budget::expired().is_some() {
            return None;
        }
        let up = run_end(f, e, m);
        let down = run_end(f, e, -m);
        let c = ((up - down) / m) as u128 + 1;
        if c > best.count() {
            best = normalized(down, up, m);
        }
        m += 1;
    }
    Some(best)
}

/// The last term of `e, e+step, e+2*step, ...` (`step` may be negative) before the first one
/// outside `f`; `e` is in `f`. Inside one segment (modulus `M`) membership along the run repeats
/// every `M / gcd(step, M)` terms, so a segment costs at most that many membership tests.
fn run_end(f: &DimSet, e: i128, step: i128) -> i128 {
    let mut x = e;
    loop {
        let segs = f.segments();
        let Some(s) = segs
            .get(segs.partition_point(|s| s.hi < x))
            .filter(|s| s.lo <= x)
        else {
            return x;
        };
        let t = s.modulus / step.abs().gcd(&s.modulus);
        let has = |y: i128| {
            s.lo <= y && y <= s.hi && s.residues.binary_search(&y.mod_floor(&s.modulus)).is_ok()
        };
        let mut j = 0i128;
        while j < t && has(x + step) {
            x += step;
            j += 1;
        }
        if j == t {
            // Every class along the run is in the segment: the run reaches the segment's end.
            let room = if step > 0 { s.hi - x } else { x - s.lo };
            x += step * (room / step.abs());
        }
        let next = x + step;
        if !f.contains(next) {
            return x;
        }
        x = next;
    }
}

/// The most padding any size in `[from, max F]` needs to reach a member of `f`.
pub fn max_padding(f: &DimSet, from: i128) -> Option<i128> {
    let first = f.next_at_least(from)?;
    let mut worst = first - from;
    let mut prev: Option<i128> = None;
    for s in f.segments().iter().filter(|s| s.hi >= first) {
        let a = s
            .next_at_least(first.max(s.lo))
            .expect("segment bounds are members");
        if let Some(p) = prev {
            worst = worst.max(a - p - 1);
        }
        if s.hi - a >= 2 * s.modulus {
            // Every gap of the residue pattern occurs: the largest cyclic one.
            let res = &s.residues;
            let mut gap = res[0] + s.modulus - res[res.len() - 1] - 1;
            for w in res.windows(2) {
                gap = gap.max(w[1] - w[0] - 1);
            }
            worst = worst.max(gap);
        } else {
            let mut x = a;
            while let Some(n) = x.checked_add(1).and_then(|n| s.next_at_least(n)) {
                worst = worst.max(n - x - 1);
                x = n;
            }
        }
        prev = Some(s.hi);
    }
    Some(worst)
}

/// A suggestion for `name` without dimguard's value-by-value re-check (`certificate: "none"`),
/// for callers that certify it themselves.
pub fn unchecked_suggestion(
    name: &str,
    p: &Progression,
    proof: crate::report::Proof,
) -> crate::report::Suggestion {
    crate::report::Suggestion {
        lo: p.lo,
        hi: p.hi,
        modulus: p.modulus,
        residue: p.residue,
        count: p.count(),
        code: crate::python::dim_code(name, p),
        certificate: crate::report::Certificate::None,
        proof,
        certificate_note: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The longest progression inside `f` by brute force over all starts and steps.
    fn brute_best(f: &DimSet) -> u128 {
        let v: Vec<i128> = f.iter().collect();
        let mut best = v.len().min(1) as u128;
        for (i, &a) in v.iter().enumerate() {
            for &b in &v[i + 1..] {
                let step = b - a;
                let mut c = 1;
                let mut x = a;
                while f.contains(x + step) {
                    x += step;
                    c += 1;
                }
                best = best.max(c);
            }
        }
        best
    }

    fn arb_set() -> impl Strategy<Value = DimSet> {
        crate::set::arb_dimset(0..600, 400, 13, 1..4)
    }

    #[test]
    fn raft_seed_best_is_one_residue_of_8() {
        let f = DimSet::from_segments(vec![Segment {
            lo: 135,
            hi: 2160,
            modulus: 8,
            residues: vec![0, 5, 6, 7],
        }])
        .unwrap();
        let r = rank(&f, None, 8);
        let best = r.progressions[0];
        assert_eq!(best.modulus, 8);
        assert_eq!(best.count(), 254);
        assert_eq!(r.maximality, Maximality::Proven);
        // With an example, the tie between residues 0 and 7 goes to the example's class.
        let r = rank(&f, Some(520), 8);
        assert_eq!(r.progressions[0].residue, 0);
        let r = rank(&f, Some(959), 8);
        assert_eq!(r.progressions[0].residue, 7);
        // Every other residue class is listed.
        let res: Vec<i128> = r
            .progressions
            .iter()
            .filter(|p| p.modulus == 8)
            .map(|p| p.residue)
            .collect();
        assert_eq!(res.len(), 4);
    }

    #[test]
    fn huge_sets_rank_fast_and_exactly() {
        let f = DimSet::from_segments(vec![Segment {
            lo: 2,
            hi: 1 << 62,
            modulus: 8,
            residues: vec![0, 5, 6, 7],
        }])
        .unwrap();
        let r = rank(&f, None, 4);
        assert_eq!(r.progressions[0].modulus, 8);
        assert_eq!(r.maximality, Maximality::Proven);
        let f = DimSet::progression(2, 1 << 62, 1024, 0);
        let r = rank(&f, None, 4);
        assert_eq!(r.progressions[0].count(), f.count());
    }

    #[test]
    fn padding() {
        let f = DimSet::from_segments(vec![Segment {
            lo: 135,
            hi: 2160,
            modulus: 8,
            residues: vec![0, 5, 6, 7],
        }])
        .unwrap();
        assert_eq!(max_padding(&f, 135), Some(4)); // 1 -> 5
        let f = DimSet::progression(136, 2120, 64, 8);
        assert_eq!(max_padding(&f, 135), Some(63));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// `cover`: inside `f`, pairwise disjoint, each as large as any progression inside what
        /// the previous ones left (brute force), and it covers `f` when the budget of pieces
        /// is not what stopped it.
        #[test]
        fn cover_is_disjoint_greedy_and_inside(f in arb_set(), ex in 0i128..1000, n in 1usize..6) {
            let pieces = cover(&f, Some(ex), n);
            let mut left = f.clone();
            for p in &pieces {
                let set = p.to_set();
                prop_assert!(set.is_subset(&left).unwrap(), "{:?} not inside what was left", p);
                prop_assert_eq!(p.count(), brute_best(&left));
                left = left.difference(&set).unwrap();
            }
            prop_assert!(pieces.len() <= n);
            if pieces.len() < n {
                prop_assert!(left.is_empty());
            }
        }

        #[test]
        fn first_suggestion_is_sound_and_maximal(f in arb_set(), ex in 0i128..1000) {
            prop_assume!(!f.is_empty());
            let want = brute_best(&f);
            // Both search strategies, with and without an example.
            for small in [0, SMALL_SET] {
                for example in [None, Some(ex)] {
                    let r = rank_with(&f, example, 8, small);
                    let best = r.progressions[0];
                    prop_assert_eq!(r.maximality, Maximality::Proven);
                    prop_assert_eq!(best.count(), want, "{:?} (small={})", best, small);
                    for p in &r.progressions {
                        // Member by member (a two-term progression may have a step whose lcm with
                        // the set's moduli exceeds what set operations take).
                        prop_assert!(p.to_set().iter().all(|x| f.contains(x)), "{:?} is not inside the set", p);
                    }
                }
            }
        }

        #[test]
        fn a_suggestion_holds_the_example_when_one_can(f in arb_set(), ex in 0i128..1000) {
            prop_assume!(f.contains(ex));
            // The longest progression through ex, by brute force.
            let v: Vec<i128> = f.iter().collect();
            let mut want = 1u128;
            for &b in &v {
                if b == ex { continue; }
                let step = (b - ex).abs();
                let (mut c, mut x) = (1u128, ex);
                while f.contains(x + step) { x += step; c += 1; }
                x = ex;
                while f.contains(x - step) { x -= step; c += 1; }
                want = want.max(c);
            }
            for small in [0, SMALL_SET] {
                let r = rank_with(&f, Some(ex), 8, small);
                let held: Vec<&Progression> = r.progressions.iter().filter(|p| p.contains(ex)).collect();
                prop_assert!(!held.is_empty(), "no suggestion holds {}: {:?}", ex, r.progressions);
                prop_assert_eq!(held[0].count(), want);
                // Among equally large ones, the first holds the example.
                if r.progressions[0].count() == want {
                    prop_assert!(r.progressions[0].contains(ex));
                }
            }
        }

        #[test]
        fn max_padding_matches_brute(f in arb_set(), from in 0i128..1000) {
            prop_assume!(!f.is_empty());
            let brute = (from..=f.max().unwrap()).map(|x| f.next_at_least(x).map(|n| n - x)).max().flatten();
            prop_assert_eq!(max_padding(&f, from), brute);
        }
    }
}
