//! Two sizes tied by `F(a) == F(b)` with `F` a non-decreasing floor-affine map
//! (`(h1 - 1)//4 == (h2 - 1)//4`: two images whose stride-4 stems must agree). The pairs that pass
//! are "a and b in the same block of F": a union of diagonal blocks, one per value of `F`, which
//! no finite union of boxes holds over `2..2^63-1`. Here they are counted, sampled and checked in
//! closed form ([`Tie`]), and a group whose other guards read `b` only through `F(b)` is solved
//! without `b` ([`solve_tied`]): its answer is the reduced joint set with each tied size in the
//! block of its partner.

use super::equalities::replace;
use super::search::solve_joint;
use super::{Budget, JointSet};
use crate::compiled::fdiv;
use crate::expr::Val;
use crate::types::{CmpOp, DimSet, Expr};

/// `F(a) == F(b)` where `F(x) = k * ((x + c) // d) + e`, `k > 0`, `d > 0`: `a` and `b` lie in the
/// same block `[q*d - c, q*d - c + d - 1]` (`d == 1`: `a == b`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tie {
    /// The first size (kept in the reduced problem).
    pub a: String,
    /// The second size (tied to the first).
    pub b: String,
    /// The shift `c` of `(x + c) // d`, in `0..d`.
    pub c: i128,
    /// The block length `d`.
    pub d: i128,
    /// The guard's side in `a` (`F(a)` as the guard writes it).
    pub fa: Expr,
    /// The guard's side in `b`.
    pub fb: Expr,
}

/// `F` in normal form: `k * ((x + c) // d) + e` over the size `x`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FloorAffine {
    x: String,
    k: i128,
    c: i128,
    d: i128,
    e: i128,
}

impl FloorAffine {
    fn of(e: &Expr) -> Option<FloorAffine> {
        // An integer constant, also written as an expression (`s - 1` reads `s + (-1)*1`).
        let int = |e: &Expr| match e {
            Expr::Const(c) if c.is_integer() => Some(*c.numer()),
            e if e.atoms().is_empty() && !e.is_bool() => match e.eval(&|_| None) {
                Ok(Val::Num(q)) if q.is_integer() => Some(*q.numer()),
                _ => None,
            },
            _ => None,
        };
        let f = match e {
            Expr::Sym(x) => FloorAffine {
                x: x.to_string(),
                k: 1,
                c: 0,
                d: 1,
                e: 0,
            },
            Expr::Add(v) => {
                let mut f: Option<FloorAffine> = None;
                let mut s = 0i128;
                for t in v {
                    match int(t) {
                        Some(n) => s = s.checked_add(n)?,
                        None if f.is_none() => f = Some(FloorAffine::of(t)?),
                        None => return None,
                    }
                }
                let mut f = f?;
                f.e = f.e.checked_add(s)?;
                f
            }
            Expr::Mul(v) => {
                let mut f: Option<FloorAffine> = None;
                let mut p = 1i128;
                for t in v {
                    match int(t) {
                        Some(n) => p = p.checked_mul(n)?,
                        None if f.is_none() => f = Some(FloorAffine::of(t)?),
                        None => return None,
                    }
                }
                let mut f = f?;
                if p <= 0 {
                    return None;
                }
                f.k = f.k.checked_mul(p)?;
                f.e = f.e.checked_mul(p)?;
                f
            }
            Expr::FloorDiv(t, p) => {
                let p = int(p).filter(|&p| p > 0)?;
                let f = FloorAffine::of(t)?;
                if f.k == 1 {
                    // (q + e) // p with q = (x + c) // d is (x + c + e*d) // (d*p).
                    FloorAffine {
                        c: f.c.checked_add(f.e.checked_mul(f.d)?)?,
                        d: f.d.checked_mul(p)?,
                        k: 1,
                        e: 0,
                        x: f.x,
                    }
                } else if f.k % p == 0 {
                    // (k*q + e) // p with p | k is (k/p)*q + e // p.
                    FloorAffine {
                        k: f.k / p,
                        e: fdiv(f.e, p).ok()?,
                        ..f
                    }
                } else {
                    return None;
                }
            }
            _ => return None,
        };
        // (x + c) // d with c in 0..d: the rest of c goes to e.
        let (qc, rc) = (f.c.div_euclid(f.d), f.c.rem_euclid(f.d));
        Some(FloorAffine {
            e: f.e.checked_add(f.k.checked_mul(qc)?)?,
            c: rc,
            ..f
        })
    }
}

impl Tie {
    /// The tie a guard states, when it is `F(a) == F(b)` with the same non-decreasing
    /// floor-affine `F` on both sides and two different sizes.
    pub fn of(g: &Expr) -> Option<Tie> {
        let Expr::Cmp(CmpOp::Eq, l, r) = g else {
            return None;
        };
        let (fl, fr) = (FloorAffine::of(l)?, FloorAffine::of(r)?);
        if fl.x == fr.x || (fl.k, fl.c, fl.d, fl.e) != (fr.k, fr.c, fr.d, fr.e) {
            return None;
        }
        Some(Tie {
            a: fl.x,
            b: fr.x,
            c: fl.c,
            d: fl.d,
            fa: (**l).clone(),
            fb: (**r).clone(),
        })
    }

    /// The block of `x`: the values `y` with `F(y) == F(x)`.
    pub fn block(&self, x: i128) -> (i128, i128) {
        let q = x.saturating_add(self.c).div_euclid(self.d);
        let lo = q.saturating_mul(self.d).saturating_sub(self.c);
        (lo, lo.saturating_add(self.d - 1))
    }

    /// Whether `(a, b)` passes the tie.
    pub fn holds(&self, a: i128, b: i128) -> bool {
        self.block(a) == self.block(b)
    }

    /// Number of pairs of the box `as x bs` (intervals, inclusive) that pass, without
    /// enumeration: full blocks count `d^2` each, the few cut by the box's edges exactly
    /// (saturating at `u128::MAX`).
    pub fn count(&self, (a0, a1): (i128, i128), (b0, b1): (i128, i128)) -> u128 {
        if a0 > a1 || b0 > b1 {
            return 0;
        }
        let q = |x: i128| x.saturating_add(self.c).div_euclid(self.d);
        let (qlo, qhi) = (q(a0).max(q(b0)), q(a1).min(q(b1)));
        if qlo > qhi {
            return 0;
        }
        let in_block = |qq: i128, lo: i128, hi: i128| -> u128 {
            let blo = qq * self.d - self.c;
            let bhi = blo + self.d - 1;
            (hi.min(bhi) - lo.max(blo) + 1).max(0) as u128
        };
        let mut edges: Vec<i128> = [qlo, qhi, q(a0), q(a1), q(b0), q(b1)]
            .into_iter()
            .filter(|&x| (qlo..=qhi).contains(&x))
            .collect();
        edges.sort_unstable();
        edges.dedup();
        let mut total: u128 = 0;
        for &qq in &edges {
            total = total.saturating_add(in_block(qq, a0, a1) * in_block(qq, b0, b1));
        }
        let inner = (qhi - qlo + 1) as u128 - edges.len() as u128;
        let d2 = (self.d as u128).saturating_mul(self.d as u128);
        total.saturating_add(inner.saturating_mul(d2))
    }
}

/// A joint set with tied sizes: the joint set of the other sizes ([`TiedSet::reduced`]) and,
/// for each tie, the tied size in its partner's block (within its own domain).
#[derive(Debug, Clone, PartialEq)]
pub struct TiedSet {
    /// The joint set of the sizes that are not tied to another, over the guards read with each
    /// tied size's `F(b)` replaced by its partner's `F(a)`.
    pub reduced: JointSet,
    /// The ties, each with the tied size's domain (an interval).
    pub ties: Vec<(Tie, (i128, i128))>,
}

impl TiedSet {
    /// Number of tuples that pass (saturating at `u128::MAX`), or `None` when a side of the
    /// reduced set's boxes is not an interval or not every box is listed.
    pub fn count(&self) -> Option<u128> {
        let (boxes, complete) = self.reduced.tree.boxes(10_000);
        if !complete {
            return None;
        }
        let mut total: u128 = 0;
        for b in boxes {
            let mut n: u128 = 1;
            for (l, side) in b.iter().enumerate() {
                let name = &self.reduced.sizes[l];
                // At most one tie per size ([`solve_tied`]).
                let factor = match self.ties.iter().find(|(t, _)| t.a == *name) {
                    Some((t, dom)) => t.count(interval(side)?, *dom),
                    None => side.count(),
                };
                n = n.saturating_mul(factor);
            }
            total = total.saturating_add(n);
        }
        Some(total)
    }

    /// The sizes of a full tuple: the reduced set's, then each tied size.
    pub fn sizes(&self) -> Vec<String> {
        let mut out = self.reduced.sizes.clone();
        out.extend(self.ties.iter().map(|(t, _)| t.b.clone()));
        out
    }

    /// Up to `n` tuples that pass (in [`TiedSet::sizes`] order): a reduced tuple with each tied
    /// size at its partner's value when the domain allows, else the nearest value of the block,
    /// and, for the first tie, the other end of the block (off the diagonal).
    pub fn accepted_examples(&self, n: usize) -> Vec<Vec<i128>> {
        let mut out = Vec::new();
        for t in self.reduced.tree.examples(n) {
            for far in [false, true] {
                let mut full = t.clone();
                for (i, (tie, (lo, hi))) in self.ties.iter().enumerate() {
                    let Some(l) = self.reduced.level(&tie.a) else {
                        return out;
                    };
                    let (blo, bhi) = tie.block(t[l]);
                    let want = if far && i == 0 {
                        if t[l] == bhi {
                            blo
                        } else {
                            bhi
                        }
                    } else {
                        t[l]
                    };
                    full.push(want.clamp(blo.max(*lo), bhi.min(*hi)));
                }
                if !out.contains(&full) && out.len() < n {
                    out.push(full);
                }
            }
        }
        out
    }

    /// Up to `n` tuples that fail only a tie (in [`TiedSet::sizes`] order): an accepted tuple
    /// with a tied size moved just past its partner's block, inside its own domain.
    pub fn rejected_examples(&self, n: usize) -> Vec<Vec<i128>> {
        let k = self.reduced.sizes.len();
        let mut out = Vec::new();
        for t in self.accepted_examples(n) {
            for (i, (tie, (lo, hi))) in self.ties.iter().enumerate() {
                let Some(l) = self.reduced.level(&tie.a) else {
                    continue;
                };
                let (blo, bhi) = tie.block(t[l]);
                for y in [bhi.checked_add(1), blo.checked_sub(1)]
                    .into_iter()
                    .flatten()
                {
                    if (*lo..=*hi).contains(&y) {
                        let mut bad = t.clone();
                        bad[k + i] = y;
                        if !out.contains(&bad) && out.len() < n {
                            out.push(bad);
                        }
                        break;
                    }
                }
            }
        }
        out
    }

    /// The ties whose diagonal is inside the set: with `b` written as `a` (one shared `Dim`),
    /// every value of `a` the reduced set accepts lies in `b`'s domain, so the spec keeps both
    /// sizes dynamic and admits no failing pair.
    pub fn shared(&self) -> Vec<&Tie> {
        self.ties
            .iter()
            .filter(|(t, (lo, hi))| {
                self.reduced.projection(&t.a).is_ok_and(|p| {
                    p.min().is_some_and(|m| m >= *lo) && p.max().is_some_and(|m| m <= *hi)
                })
            })
            .map(|(t, _)| t)
            .collect()
    }
}

/// `Some((lo, hi))` when `s` is one interval of consecutive values.
fn interval(s: &DimSet) -> Option<(i128, i128)> {
    let (lo, hi) = (s.min()?, s.max()?);
    (s.count() == (hi - lo + 1) as u128).then_some((lo, hi))
}

/// The joint set of `names` over `domains` under `guards` (as [`solve_joint`]) when some guards
/// tie two sizes ([`Tie`]), each tied size has an interval domain, and every other guard reads a
/// tied size `b` only through its `F(b)`: those are read with `F(a)` instead, `b` leaves the
/// problem, `a`'s domain keeps the values whose block meets `b`'s domain, and the rest is solved
/// by [`solve_joint`] (so over `2..2^63-1` as fast as the reduced problem is). `None` when no
/// guard is such a tie or a tied size is read otherwise.
pub fn solve_tied(
    names: &[String],
    domains: &[DimSet],
    guards: &[Expr],
    budget: &Budget,
) -> Option<TiedSet> {
    let mut ties: Vec<(Tie, (i128, i128))> = Vec::new();
    let mut rest: Vec<Expr> = Vec::new();
    let same = |t: &Tie, u: &Tie| {
        (t.c, t.d) == (u.c, u.d) && ((t.a == u.a && t.b == u.b) || (t.a == u.b && t.b == u.a))
    };
    for g in guards {
        match Tie::of(g) {
            // The same tie again (a form that lists a guard twice, or the other way round).
            Some(t) if ties.iter().any(|(u, _)| same(&t, u)) => {}
            Some(t)
                if names.contains(&t.a)
                    && names.contains(&t.b)
                    && !ties
                        .iter()
                        .any(|(u, _)| [&u.a, &u.b].contains(&&t.b) || u.b == t.a || u.a == t.a) =>
            {
                let dom = &domains[names.iter().position(|n| *n == t.b)?];
                ties.push((t, interval(dom)?));
            }
            _ => rest.push(g.clone()),
        }
    }
    if ties.is_empty() {
        return None;
    }
    let mut reduced_guards = Vec::new();
    for g in rest {
        let mut h = g;
        for (t, _) in &ties {
            h = replace(&h, &t.fb, &t.fa);
        }
        if ties
            .iter()
            .any(|(t, _)| h.atoms().iter().any(|a| **a == *t.b))
        {
            return None;
        }
        // `F(a) == F(a)` (a tie read through another): true, `F` never raises.
        if let Expr::Cmp(CmpOp::Eq | CmpOp::Le | CmpOp::Ge, x, y) = &h {
            if x == y && FloorAffine::of(x).is_some() {
                continue;
            }
        }
        reduced_guards.push(h);
    }
    let mut rnames = Vec::new();
    let mut rdomains = Vec::new();
    for (n, d) in names.iter().zip(domains) {
        if ties.iter().any(|(t, _)| t.b == *n) {
            continue;
        }
        let mut d = d.clone();
        for (t, (lo, hi)) in ties.iter().filter(|(t, _)| t.a == *n) {
            // Values of `a` whose block meets `b`'s domain.
            let (from, to) = (t.block(*lo).0, t.block(*hi).1);
            d = d.clip(from, to);
        }
        rnames.push(n.clone());
        rdomains.push(d);
    }
    let reduced = solve_joint(&rnames, &rdomains, &reduced_guards, budget);
    Some(TiedSet { reduced, ties })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;
    use proptest::prelude::*;

    fn g(s: &str) -> Expr {
        parse_guard(s).unwrap()
    }

    #[test]
    fn a_stride_4_stem_is_a_tie() {
        let t = Tie::of(&g("(1 + (((-1) + a) // 4)) == (1 + (((-1) + b) // 4))")).unwrap();
        assert_eq!((t.a.as_str(), t.b.as_str(), t.c, t.d), ("a", "b", 3, 4));
        assert_eq!(t.block(5), (5, 8));
        assert!(t.holds(5, 8) && !t.holds(4, 5));
        // Different maps, or one size: not a tie.
        assert!(Tie::of(&g("(a // 4) == (b // 2)")).is_none());
        assert!(Tie::of(&g("(a // 4) == (a // 4)")).is_none());
        assert!(Tie::of(&g("(a // 4) == (-1 * b) // 4")).is_none());
        // The same guard as a TORCH_LOGS log prints it.
        let e = g("Eq((((s63 - 1)//4)) + 1, (((s85 - 1)//4)) + 1)");
        let t = Tie::of(&e).unwrap();
        assert_eq!((t.a.as_str(), t.b.as_str(), t.c, t.d), ("s63", "s85", 3, 4));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Normal forms of nested floor-affine maps and the closed-form count, against brute force.
        #[test]
        fn ties_and_counts_match_brute_force(
            k in 1i128..4, c1 in -6i128..6, d1 in 1i128..5, d2 in 1i128..4, e in -5i128..5,
            a0 in -10i128..30, wa in 0i128..40, b0 in -10i128..30, wb in 0i128..40,
        ) {
            let f = |x: &str| format!("{k} * ((({x} + {c1}) // {d1} + {e}) // {d2}) + 3");
            let guard = g(&format!("{} == {}", f("a"), f("b")));
            let env = |a: i128, b: i128| move |s: &str| match s { "a" => Some(a), "b" => Some(b), _ => None };
            match Tie::of(&guard) {
                Some(t) => {
                    let (a1, b1) = (a0 + wa, b0 + wb);
                    let mut n = 0u128;
                    for a in a0..=a1 {
                        for b in b0..=b1 {
                            let truth = guard.truth(&env(a, b)) == Ok(true);
                            prop_assert_eq!(truth, t.holds(a, b), "({}, {})", a, b);
                            n += truth as u128;
                        }
                    }
                    prop_assert_eq!(n, t.count((a0, a1), (b0, b1)));
                }
                // k > 1 with d2 not dividing k is outside the normal form.
                None => prop_assert!(k % d2 != 0 && d2 > 1),
            }
        }
    }

    /// The two-stem program's guards over small boxes and at large sizes: the tied answer's
    /// count is brute force's, its examples pass and fail as said.
    #[test]
    fn two_stems_are_decided_in_closed_form() {
        let f = |x: &str| format!("(1 + (((-1) + {x}) // 4))");
        let guards: Vec<Expr> = [
            format!("{} != 1", f("h1")),
            format!("{} != 1", f("w1")),
            format!("{} == {}", f("w1"), f("w2")),
            format!("{} == {}", f("h1"), f("h2")),
            format!("({} * {}) != 1", f("w1"), f("h1")),
        ]
        .iter()
        .map(|s| g(s))
        .collect();
        let names: Vec<String> = ["h1", "h2", "w1", "w2"].map(String::from).to_vec();
        let passes = |t: &[i128], order: &[String]| {
            let env = |s: &str| order.iter().position(|n| n == s).map(|i| t[i]);
            guards.iter().all(|g| g.truth(&env) == Ok(true))
        };
        for (lo, hi) in [
            (2i128, 13i128),
            (1 << 20, (1 << 20) + 9),
            (1 << 40, (1 << 40) + 6),
        ] {
            let doms = vec![DimSet::interval(lo, hi); 4];
            let ts = solve_tied(&names, &doms, &guards, &Budget::default()).unwrap();
            assert!(ts.reduced.undecided.is_none());
            let order = ts.sizes();
            let mut n = 0u128;
            for a in lo..=hi {
                for b in lo..=hi {
                    for c in lo..=hi {
                        for d in lo..=hi {
                            n += passes(&[a, b, c, d], &names) as u128;
                        }
                    }
                }
            }
            assert_eq!(ts.count(), Some(n), "{lo}..{hi}");
            for t in ts.accepted_examples(6) {
                assert!(passes(&t, &order), "{t:?} passes");
            }
            let bad = ts.rejected_examples(6);
            assert!(!bad.is_empty());
            for t in bad {
                assert!(!passes(&t, &order), "{t:?} fails");
            }
        }
        // Over 2..2^63-1, each size's own guard applied (5..2^63-1, as the pipeline does):
        // decided at once, the diagonal a shared Dim.
        let top = i64::MAX as i128;
        let doms = vec![DimSet::interval(5, top); 4];
        let ts = solve_tied(&names, &doms, &guards, &Budget::default()).unwrap();
        assert!(ts.reduced.undecided.is_none(), "{:?}", ts.reduced);
        assert_eq!(ts.shared().len(), 2);
        // The same guards as TORCH_LOGS and TORCH_TRACE print them.
        let sympy: Vec<Expr> = [
            "Eq((((s63 - 1)//4)) + 1, (((s85 - 1)//4)) + 1)",
            "Eq((((s83 - 1)//4)) + 1, (((s4 - 1)//4)) + 1)",
            "Ne(((((s63 - 1)//4)) + 1)*((((s83 - 1)//4)) + 1), 1)",
        ]
        .iter()
        .map(|s| g(s))
        .collect();
        let snames: Vec<String> = ["s83", "s4", "s63", "s85"].map(String::from).to_vec();
        let st = solve_tied(&snames, &doms, &sympy, &Budget::default()).unwrap();
        assert!(st.reduced.undecided.is_none(), "{:?}", st.reduced);
        assert_eq!(st.count(), Some(u128::MAX));
        // More tuples than a u128 holds: said as such.
        assert_eq!(ts.count(), Some(u128::MAX));
        // One tie over 5..2^63-1: full blocks 5..8, 9..12, ... and the last cut to 3 values.
        let t = &ts.ties[0].0;
        assert_eq!(t.count((5, top), (5, top)), 4 * (top - 7) as u128 + 9);
    }
}
