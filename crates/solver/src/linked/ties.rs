//! Sizes tied by `F(a) == G(b)` with `F`, `G` non-decreasing floor-affine maps (`(h1 - 1)//4 ==
//! (h2 - 1)//4`: two images whose stride-4 stems must agree; `1 + (a-1)//4 == 2 + 2*((c-1)//8)`:
//! a stride-4 map against a stride-8 map upsampled x2). The pairs that pass are "b, shifted, in
//! the block of a" (and, through different strides, `a` at the places `G` reaches): a union of
//! diagonal blocks, one per value of `F`, which no finite union of boxes holds over
//! `2..2^63-1`. Here they are counted, sampled and checked in closed form ([`Tie`]), and a group
//! whose other guards read each tied size `b` only through floor terms constant on its blocks is
//! solved without `b` ([`solve_tied`]): its answer is the reduced joint set with each tied size
//! in its own set and in the block of its partner. Several sizes may be tied to one (three
//! inputs of a pyramid); the ties of a set of sizes are oriented towards one centre.

use super::largest::LargestBox;
use super::search::solve_joint;
use super::tree::{inter, union, Exact};
use super::{Budget, JointSet};
use crate::bounds::holds_on_segments;
use crate::compiled::fdiv;
use crate::error::Error;
use crate::expr::Val;
use crate::types::{CmpOp, DimSet, Expr, Progression};
use std::collections::BTreeMap;

/// `F(a) == G(b)` for two non-decreasing floor-affine maps, in one normal form: `a` and `b + s`
/// lie in the same block `[q*d - c, q*d - c + d - 1]` of length `d` (`d == 1`: `a == b - s`),
/// and `a` passes the guard `extra` when there is one. The same map on both sides (`(h1 - 1)//4
/// == (h2 - 1)//4`, two stride-4 stems) is `s == 0` and no `extra`; maps through different strides
/// (`1 + (a-1)//4 == 2 + 2*((c-1)//8)`: a stride-4 map against a stride-8 map upsampled x2) are
/// `(a + 3)//8 == (c + 7)//8` with `s == 4`, and `extra` says that `a`'s stride-4 size is even.
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
    /// The shift of `b`: `b + s` lies in `a`'s block.
    pub s: i128,
    /// A guard over `a` alone the tie also states (`F(a)` must be a value `G` takes).
    pub extra: Option<Expr>,
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
    /// The tie a guard states, when it is `F(a) == G(b)` with two non-decreasing floor-affine
    /// maps of two different sizes whose steps nest (`G`'s multiplier a multiple of `F`'s, `G`'s
    /// block that many of `F`'s, or the other way round).
    pub fn of(g: &Expr) -> Option<Tie> {
        let Expr::Cmp(CmpOp::Eq, l, r) = g else {
            return None;
        };
        let (fl, fr) = (FloorAffine::of(l)?, FloorAffine::of(r)?);
        if fl.x == fr.x {
            return None;
        }
        Tie::between(&fl, &fr).or_else(|| Tie::between(&fr, &fl))
    }

    /// `F(x) == G(y)` with `G`'s multiplier `r` times `F`'s: `F(x) - e1` must be a multiple of
    /// `k1*r` apart from `G`'s offset (the `extra` guard on `x` when `r > 1`), and then
    /// `(x + c1 - m*d1) // (d1*r) == (y + c2) // d2` with `m = (e2 - e1)/k1`, a tie when
    /// `d2 == d1*r`.
    fn between(f: &FloorAffine, g: &FloorAffine) -> Option<Tie> {
        if g.k % f.k != 0 || (g.e - f.e) % f.k != 0 {
            return None;
        }
        let r = g.k / f.k;
        let m = (g.e - f.e) / f.k;
        let big = f.d.checked_mul(r)?;
        if big != g.d {
            return None;
        }
        let cx = f.c.checked_sub(m.checked_mul(f.d)?)?;
        let extra = (r > 1).then(|| {
            // ((x + c1)//d1 - m) % r == 0
            let q = Expr::FloorDiv(
                Box::new(Expr::Add(vec![Expr::sym(&f.x), Expr::int(f.c)])),
                Box::new(Expr::int(f.d)),
            );
            Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::Mod(
                    Box::new(if m == 0 {
                        q
                    } else {
                        Expr::Add(vec![q, Expr::int(-m)])
                    }),
                    Box::new(Expr::int(r)),
                )),
                Box::new(Expr::int(0)),
            )
        });
        Some(Tie {
            a: f.x.clone(),
            b: g.x.clone(),
            c: cx.rem_euclid(big),
            d: big,
            s: g.c.checked_sub(cx)?,
            extra,
        })
    }

    /// The same tie with its sizes swapped (`b` kept, `a` tied), when it has no `extra` guard.
    pub fn flipped(&self) -> Option<Tie> {
        if self.extra.is_some() {
            return None;
        }
        Some(Tie {
            a: self.b.clone(),
            b: self.a.clone(),
            c: self.c.checked_add(self.s)?.rem_euclid(self.d),
            d: self.d,
            s: self.s.checked_neg()?,
            extra: None,
        })
    }

    /// Two ties that tie one size `y` to two others through the same block length (`self`:
    /// `y + s1` in the block of `x1`; `other`: `y + s2` in the block of `x2`), read as the tie
    /// between `x1` and `x2` that they imply together: when the blocks they put `y` in are the
    /// same blocks (`s1 + c1 ≡ s2 + c2 (mod d)`), `x2`'s block is `x1`'s shifted by whole
    /// blocks, so `(x1 + c1)//d == (x2 + s + c1)//d`. A skip concatenation of `a`'s stride-4 map
    /// upsampled x2 with `b`'s and `c`'s stride-2 maps ties `a` to `b` and to `c` with an
    /// `extra` guard on each of `b`, `c`: `a` tied to `b`, and `c` to `b` by this tie. The
    /// `extra` guard of `other` is not in the result (the caller keeps it on `x2`). `None` when
    /// the ties do not share their tied size or their blocks differ.
    pub fn through_tied(&self, other: &Tie) -> Option<Tie> {
        if self.b != other.b || self.d != other.d || self.a == other.a {
            return None;
        }
        let (one, two) = (self.s.checked_add(self.c)?, other.s.checked_add(other.c)?);
        let gap = two.checked_sub(one)?;
        if gap.rem_euclid(self.d) != 0 {
            return None;
        }
        // (x2 + c2)//d == (y + s2 + c2)//d == (y + s1 + c1)//d + gap/d == (x1 + c1)//d + gap/d.
        let s = other.c.checked_sub(gap)?.checked_sub(self.c)?;
        Some(Tie {
            a: self.a.clone(),
            b: other.a.clone(),
            c: self.c,
            d: self.d,
            s,
            extra: None,
        })
    }

    /// The values of `b` that pass with `a` (ignoring `extra`): `a`'s block shifted by `-s`.
    pub fn b_block(&self, a: i128) -> (i128, i128) {
        let (lo, hi) = self.block(a);
        (lo.saturating_sub(self.s), hi.saturating_sub(self.s))
    }

    /// Whether `a` passes the tie's `extra` guard (true without one).
    pub fn extra_holds(&self, a: i128) -> bool {
        self.extra.as_ref().is_none_or(|e| {
            let env = |x: &str| (x == self.a).then_some(a);
            e.truth(&env) == Ok(true)
        })
    }

    /// `b`'s terms read through the tie: a floor-affine term of `b` whose blocks are unions of
    /// the tie's blocks (`k*((b + c')//(d*r)) + e` with `c' ≡ s + c (mod d)`) is a function of
    /// `a`'s block, written over `a`; every other node is rewritten in its children.
    pub fn rewrite(&self, e: &Expr) -> Expr {
        if e.atoms().iter().any(|x| **x == *self.b) && !e.is_bool() {
            if let Some(f) = FloorAffine::of(e).filter(|f| f.x == self.b) {
                let c_full = f.c; // in 0..f.d
                let base = self.s + self.c;
                if f.d % self.d == 0 && (c_full - base).rem_euclid(self.d) == 0 {
                    // (b + c')//(d r) == ((b + s + c)//d + j)//r with c' = s + c + j*d.
                    let j = (c_full - base).div_euclid(self.d);
                    let r = f.d / self.d;
                    let qa = Expr::FloorDiv(
                        Box::new(Expr::Add(vec![Expr::sym(&self.a), Expr::int(self.c)])),
                        Box::new(Expr::int(self.d)),
                    );
                    let inner = Expr::FloorDiv(
                        Box::new(Expr::Add(vec![qa, Expr::int(j)])),
                        Box::new(Expr::int(r)),
                    );
                    return Expr::Add(vec![Expr::Mul(vec![Expr::int(f.k), inner]), Expr::int(f.e)]);
                }
            }
        }
        e.map_children(&|x| self.rewrite(x))
    }

    /// The block of `x`: the values `y` with `F(y) == F(x)`.
    pub fn block(&self, x: i128) -> (i128, i128) {
        let q = x.saturating_add(self.c).div_euclid(self.d);
        let lo = q.saturating_mul(self.d).saturating_sub(self.c);
        (lo, lo.saturating_add(self.d - 1))
    }

    /// Whether `(a, b)` passes the tie.
    pub fn holds(&self, a: i128, b: i128) -> bool {
        self.block(a) == self.block(b.saturating_add(self.s)) && self.extra_holds(a)
    }

    /// The values of `b` that pass with some value of `a` in `s` (the tie's `extra` aside): `y`
    /// with `y + s` in the block of some `x` of `s`. Exact, by
    /// set operations: `y`'s block starts at `g(y) = d*((y + c)//d) - c`, which must be some
    /// `x - j` (`x` in `s`, `0 <= j < d`), so the answer is the block starts of `s - j`
    /// (`j` in `0..d`) widened by `0..d` (at most [`DILATE_BLOCK`] values per block, else an
    /// error).
    pub fn dilate(&self, s: &DimSet) -> Exact<DimSet> {
        self.dilate_a(s)?
            .affine_image(1, self.s.checked_neg().unwrap_or(0))
    }

    /// The values whose block meets `s`, in `a`'s space (no shift).
    fn dilate_a(&self, s: &DimSet) -> Exact<DimSet> {
        if self.d == 1 || s.is_empty() {
            return Ok(s.clone());
        }
        let (Some(lo), Some(hi)) = (s.min(), s.max()) else {
            return Ok(DimSet::empty());
        };
        if self.d > DILATE_BLOCK {
            return Err(Error::PeriodTooLarge {
                needed: self.d,
                limit: DILATE_BLOCK,
            });
        }
        // Block starts: congruent to -c mod d, within the blocks of lo and hi.
        let (first, last) = (self.block(lo).0, self.block(hi).0);
        let starts = DimSet::progression(first, last, self.d, (-self.c).rem_euclid(self.d));
        let mut shifted = DimSet::empty();
        for j in 0..self.d {
            shifted = union(&shifted, &s.affine_image(1, -j)?)?;
        }
        let hit = inter(&shifted, &starts)?;
        let mut out = DimSet::empty();
        for j in 0..self.d {
            out = union(&out, &hit.affine_image(1, j)?)?;
        }
        Ok(out)
    }

    /// Number of pairs of the box `as x bs` (intervals, inclusive) that pass, without
    /// enumeration: full blocks count `d^2` each, the few cut by the box's edges exactly
    /// (saturating at `u128::MAX`).
    pub fn count(&self, (a0, a1): (i128, i128), (b0, b1): (i128, i128)) -> u128 {
        let (b0, b1) = (b0.saturating_add(self.s), b1.saturating_add(self.s));
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

/// Longest block [`Tie::dilate`] widens a set by (one set operation per value of a block).
pub const DILATE_BLOCK: i128 = 4096;

/// Most values of a tied partner [`TiedSet::for_all`] evaluates a tie's `extra` guard at.
const EXTRA_ENUMERATION: u128 = 1 << 16;

/// Values of `a` [`count_star`] evaluates one by one (near the sets' ends, and one period of
/// each stretch between them); past it the count is not given.
const STAR_WORK: u128 = 1 << 20;

/// Number of tuples `(a, b1, .., bn)` with `a` in `side` and each `bi` in its tie's domain and
/// in `a`'s block of that tie: the sum over `a` of the product of the sizes of `bi`'s domain
/// within `a`'s blocks. Between the ends of the sets' segments (shifted into `a`'s space) that
/// summand is periodic (period: the blocks' lengths and the segments' moduli, all met), so each
/// stretch costs one period and its ends, whatever its width (saturating; `None` past
/// [`STAR_WORK`] evaluations).
fn count_star(side: &DimSet, ties: &[&(Tie, DimSet)]) -> Option<u128> {
    let (Some(smin), Some(smax)) = (side.min(), side.max()) else {
        return Some(0);
    };
    let g = |x: i128| -> u128 {
        if !side.contains(x) {
            return 0;
        }
        ties.iter().fold(1u128, |n, (t, dom)| {
            let (blo, bhi) = t.b_block(x);
            n.saturating_mul(dom.clip(blo, bhi).count())
        })
    };
    // The period and the width of the zone near a breakpoint enumerated one by one.
    let mut period: i128 = 1;
    let mut zone: i128 = 1;
    let mut breaks: Vec<i128> = Vec::new();
    let lcm = |a: i128, b: i128| -> Option<i128> {
        let l = num_integer::lcm(a, b);
        (l <= STAR_WORK as i128).then_some(l)
    };
    for seg in side.segments() {
        period = lcm(period, seg.modulus)?;
        breaks.extend([seg.lo, seg.hi.saturating_add(1)]);
    }
    for (t, dom) in ties {
        period = lcm(period, t.d)?;
        zone = zone.max(t.d.saturating_mul(2));
        for seg in dom.segments() {
            period = lcm(period, seg.modulus)?;
            breaks.extend([
                seg.lo.saturating_add(t.s),
                seg.hi.saturating_add(1).saturating_add(t.s),
            ]);
        }
    }
    breaks.retain(|&b| b > smin && b <= smax);
    breaks.extend([smin, smax.saturating_add(1)]);
    breaks.sort_unstable();
    breaks.dedup();
    let mut work: u128 = 0;
    let mut total: u128 = 0;
    for w in breaks.windows(2) {
        // [u, v): near both ends one by one, the middle by whole periods.
        let (u, v) = (w[0], w[1] - 1);
        let width = (v - u + 1) as u128;
        if width <= (2 * zone + 2 * period) as u128 {
            work = work.saturating_add(width);
            if work > STAR_WORK {
                return None;
            }
            total = (u..=v).fold(total, |n, x| n.saturating_add(g(x)));
            continue;
        }
        let (m0, m1) = (u + zone, v - zone);
        let per: u128 = (m0..m0 + period).fold(0u128, |n, x| n.saturating_add(g(x)));
        let mid = (m1 - m0 + 1) as u128;
        let (full, rem) = (mid / period as u128, (mid % period as u128) as i128);
        work = work.saturating_add((2 * zone + period + rem) as u128);
        if work > STAR_WORK {
            return None;
        }
        let edges = (u..m0)
            .chain(m1 + 1..=v)
            .chain(m0 + (full as i128) * period..m0 + (full as i128) * period + rem)
            .fold(0u128, |n, x| n.saturating_add(g(x)));
        total = total
            .saturating_add(per.saturating_mul(full))
            .saturating_add(edges);
    }
    Some(total)
}

/// A spec for a tied joint set ([`TiedSet::spec`]): one `Dim` per size of the reduced set (its
/// side of a sound box) and each tied size written from its partner's (`b = a + delta`, in the
/// partner's block at every value the side admits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TiedSpec {
    /// Per size of the reduced set (in its level order), its side.
    pub sides: Vec<Progression>,
    /// Per tie (parallel to [`TiedSet::ties`]): the tied size is its partner plus this.
    pub deltas: Vec<i128>,
    /// Tuples the spec admits (saturating).
    pub count: u128,
}

impl TiedSpec {
    /// The side of the size `name` of `t`, and for a tied size the partner it is written from
    /// and the offset (`b = a + delta`).
    pub fn side(&self, t: &TiedSet, name: &str) -> Option<(Progression, Option<(String, i128)>)> {
        if let Some(l) = t.reduced.level(name) {
            return Some((*self.sides.get(l)?, None));
        }
        let i = t.ties.iter().position(|(x, _)| x.b == name)?;
        let (tie, _) = &t.ties[i];
        let p = *self.sides.get(t.reduced.level(&tie.a)?)?;
        let delta = self.deltas[i];
        let shifted = Progression {
            lo: p.lo + delta,
            hi: p.hi + delta,
            modulus: p.modulus,
            residue: (p.residue + delta).rem_euclid(p.modulus),
        };
        Some((shifted, Some((tie.a.clone(), delta))))
    }

    /// Up to about `n` tuples the spec admits (in [`TiedSet::sizes`] order): every corner of
    /// the reduced sides and tuples spread evenly over them, each tied size at its partner plus
    /// its delta.
    pub fn sample(&self, t: &TiedSet, n: usize) -> Vec<Vec<i128>> {
        let k = self.sides.len();
        let mut reduced: Vec<Vec<i128>> = Vec::new();
        for mask in 0..(1u32 << k.min(12)) {
            let c: Vec<i128> = self
                .sides
                .iter()
                .enumerate()
                .map(|(l, p)| if mask >> l & 1 == 1 { p.hi } else { p.lo })
                .collect();
            if !reduced.contains(&c) {
                reduced.push(c);
            }
        }
        let per = (n.max(1) as f64)
            .powf(1.0 / k.max(1) as f64)
            .floor()
            .max(2.0) as u128;
        for i in 0..(per.saturating_pow(k as u32)).min(n as u128) {
            let mut rest = i;
            let c: Vec<i128> = self
                .sides
                .iter()
                .map(|p| {
                    let j = rest % per;
                    rest /= per;
                    let cnt = p.count().max(1);
                    // Spread over the side: the j-th of `per` points, near its start.
                    let step = (cnt / per).max(1);
                    let idx = (j * step + j).min(cnt - 1);
                    p.lo + idx as i128 * p.modulus
                })
                .collect();
            if !reduced.contains(&c) {
                reduced.push(c);
            }
        }
        reduced
            .into_iter()
            .filter_map(|mut c| {
                for (i, (tie, _)) in t.ties.iter().enumerate() {
                    let a = c[t.reduced.level(&tie.a)?];
                    c.push(a + self.deltas[i]);
                }
                Some(c)
            })
            .collect()
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
    pub ties: Vec<(Tie, DimSet)>,
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
                let mine: Vec<&(Tie, DimSet)> =
                    self.ties.iter().filter(|(t, _)| t.a == *name).collect();
                let factor = if mine.is_empty() {
                    side.count()
                } else {
                    count_star(side, &mine)?
                };
                n = n.saturating_mul(factor);
            }
            total = total.saturating_add(n);
        }
        Some(total)
    }

    /// Whether a tuple (in [`TiedSet::sizes`] order) is in the set: its first sizes in the
    /// reduced set, each tied size in its range and passing its tie with its partner.
    pub fn contains(&self, t: &[i128]) -> bool {
        let k = self.reduced.sizes.len();
        t.len() == k + self.ties.len()
            && self.reduced.tree.contains(&t[..k])
            && self.ties.iter().enumerate().all(|(i, (tie, dom))| {
                let b = t[k + i];
                dom.contains(b)
                    && self
                        .reduced
                        .level(&tie.a)
                        .is_some_and(|l| tie.holds(t[l], b))
            })
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
                for (i, (tie, dom)) in self.ties.iter().enumerate() {
                    let Some(l) = self.reduced.level(&tie.a) else {
                        return out;
                    };
                    let (blo, bhi) = tie.b_block(t[l]);
                    let diagonal = t[l].saturating_sub(tie.s);
                    let want = if far && i == 0 {
                        if diagonal == bhi {
                            blo
                        } else {
                            bhi
                        }
                    } else {
                        diagonal
                    };
                    // The member of the tied size's set in the block nearest the one wanted.
                    let inside = dom.clip(blo, bhi);
                    let Some(v) = inside.next_at_least(want).or_else(|| inside.max()) else {
                        continue;
                    };
                    full.push(v);
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
            for (i, (tie, dom)) in self.ties.iter().enumerate() {
                let Some(l) = self.reduced.level(&tie.a) else {
                    continue;
                };
                let (blo, bhi) = tie.b_block(t[l]);
                // The tied size's nearest own values past the block, either side.
                let below = blo
                    .checked_sub(1)
                    .and_then(|x| dom.min().filter(|&m| m <= x).map(|m| dom.clip(m, x)))
                    .and_then(|s| s.max());
                let above = bhi.checked_add(1).and_then(|x| dom.next_at_least(x));
                if let Some(y) = above.or(below) {
                    let mut bad = t.clone();
                    bad[k + i] = y;
                    if !out.contains(&bad) && out.len() < n {
                        out.push(bad);
                    }
                }
            }
        }
        out
    }

    /// Values of `name` that pass with some value of the others: the reduced set's projection,
    /// or, for a tied size, the blocks its partner's projection meets, within its range.
    pub fn projection(&self, name: &str) -> Exact<DimSet> {
        if self.reduced.level(name).is_some() {
            return self.reduced.projection(name);
        }
        let Some((t, dom)) = self.ties.iter().find(|(t, _)| t.b == name) else {
            return Ok(DimSet::empty());
        };
        inter(&t.dilate(&self.reduced.projection(&t.a)?)?, dom)
    }

    /// Values of `name` that pass with **every** value of the others (each over `domain(size)`,
    /// its accepted set before the joint solve): a tie that fails for some pair of its sizes'
    /// domains leaves nothing for the sizes outside it, and for its own sizes only values whose
    /// block holds the whole domain of the other.
    pub fn for_all(&self, name: &str, domain: &dyn Fn(&str) -> Option<DimSet>) -> Exact<DimSet> {
        // The block holding every value of a set, when there is one.
        // (in `a`'s space: a set of `b` is read shifted by `s`)
        let one_block = |t: &Tie, s: &DimSet| -> Option<(i128, i128)> {
            let (lo, hi) = (s.min()?, s.max()?);
            (t.block(lo) == t.block(hi)).then(|| t.block(lo))
        };
        let dom = |n: &str| domain(n).unwrap_or_default();
        let b_as_a = |t: &Tie| dom(&t.b).affine_image(1, t.s).unwrap_or_default();
        // Every value of `a` passes the tie's `extra` guard (exact: `a` is enumerated, at most
        // EXTRA_ENUMERATION values, else an error).
        let every_extra = |t: &Tie| -> Exact<bool> {
            let d = dom(&t.a);
            if t.extra.is_none() {
                return Ok(true);
            }
            if d.count() > EXTRA_ENUMERATION {
                return Err(Error::PeriodTooLarge {
                    needed: d.count().min(i128::MAX as u128) as i128,
                    limit: EXTRA_ENUMERATION as i128,
                });
            }
            let all = d.iter().all(|x| t.extra_holds(x));
            Ok(all)
        };
        let total = |t: &Tie| -> Exact<bool> {
            let u = dom(&t.a).union(&b_as_a(t))?;
            if u.is_empty() {
                return Ok(true);
            }
            Ok(one_block(t, &u).is_some() && every_extra(t)?)
        };
        // Every other tie must hold for every pair.
        for (t, _) in &self.ties {
            if t.a != name && t.b != name && !total(t)? {
                return Ok(DimSet::empty());
            }
        }
        if let Some((t, _)) = self.ties.iter().find(|(t, _)| t.b == name) {
            // Every tuple of the others must pass: the reduced set is their whole box.
            if self.reduced.count() != self.reduced.box_count() || self.reduced.undecided.is_some()
            {
                return Ok(DimSet::empty());
            }
            return Ok(match one_block(t, &dom(&t.a)) {
                Some((lo, hi)) if every_extra(t)? => {
                    dom(name).clip(lo.saturating_sub(t.s), hi.saturating_sub(t.s))
                }
                _ => DimSet::empty(),
            });
        }
        let mut out = self.reduced.for_all(name)?;
        for (t, _) in self.ties.iter().filter(|(t, _)| t.a == name) {
            out = match one_block(t, &b_as_a(t)) {
                Some((lo, hi)) => out.clip(lo, hi),
                None => DimSet::empty(),
            };
        }
        Ok(out)
    }

    /// The joint set as disjoint boxes over [`TiedSet::sizes`]: per box of the reduced set, one
    /// box per block of each tie (the partner's side and the tied size's range, each cut to the
    /// block), the first blocks of each tie first; at most `limit`, and whether that is all.
    pub fn boxes(&self, limit: usize) -> (Vec<Vec<DimSet>>, bool) {
        let (reduced, mut complete) = self.reduced.tree.boxes(limit.max(1));
        let n = self.ties.len().max(1) as f64;
        // Blocks listed per tie, so that their product stays within the limit.
        let per = ((limit.max(1) as f64).powf(1.0 / n).floor() as usize).max(1);
        let mut out = Vec::new();
        for b in reduced {
            // Per tie: its blocks (a's side and b's range cut to each), the first `per`.
            let mut choices: Vec<Vec<(DimSet, DimSet)>> = Vec::new();
            for (t, dom) in &self.ties {
                let Some(l) = self.reduced.level(&t.a) else {
                    return (out, false);
                };
                let side = &b[l];
                let mut blocks = Vec::new();
                let mut at = side.min();
                // Scanning stops after a bounded number of empty blocks.
                let mut misses = 0;
                while let Some(x) = at {
                    if blocks.len() == per || misses > 4096 {
                        complete = false;
                        break;
                    }
                    let (blo, bhi) = t.block(x);
                    let (bblo, bbhi) = t.b_block(x);
                    let bside = dom.clip(bblo, bbhi);
                    let aside = side.clip(blo, bhi);
                    if bside.is_empty() || aside.is_empty() {
                        misses += 1;
                    } else {
                        blocks.push((aside, bside));
                    }
                    at = bhi.checked_add(1).and_then(|y| side.next_at_least(y));
                }
                choices.push(blocks);
            }
            let total: usize = choices.iter().map(Vec::len).product();
            for k in 0..total {
                if out.len() >= limit {
                    return (out, false);
                }
                let mut row = b.clone();
                let mut tied = Vec::new();
                let mut rest = k;
                for (i, (t, _)) in self.ties.iter().enumerate() {
                    let (aside, bside) = &choices[i][rest % choices[i].len()];
                    rest /= choices[i].len();
                    if let Some(l) = self.reduced.level(&t.a) {
                        // Several ties of one size: the blocks of each, met.
                        row[l] = inter(&row[l], aside).unwrap_or_default();
                    }
                    tied.push(bside.clone());
                }
                if row.iter().any(DimSet::is_empty) {
                    continue;
                }
                row.extend(tied);
                out.push(row);
            }
        }
        (out, complete)
    }

    /// A spec over the sizes (see [`TiedSpec`]) from a sound box of the reduced set (`lb`, in
    /// its level order): each tied size written as its partner (`b = a`), or, when the traced
    /// sizes (`traced`, by size) differ inside one block, as its partner plus their difference,
    /// its partner's side then kept to the traced value's place in its block. Each side is cut
    /// so that the tied size stays within its own range. `None` when a side becomes empty.
    pub fn spec(&self, lb: &LargestBox, traced: &dyn Fn(&str) -> Option<i128>) -> Option<TiedSpec> {
        let mut sides = lb.sides.clone();
        let mut deltas = Vec::new();
        for (t, dom) in &self.ties {
            let (lo, hi) = (dom.min()?, dom.max()?);
            let l = self.reduced.level(&t.a)?;
            let p = sides[l];
            let (ta, tb) = (traced(&t.a), traced(&t.b));
            // `b = a - s` is in `a`'s block at every `a`; another traced offset keeps `a` to its
            // place in the block.
            let delta = match (ta, tb) {
                (Some(a), Some(b)) if t.holds(a, b) && p.contains(a) => b - a,
                _ => -t.s,
            };
            let mut q = p;
            if delta != -t.s {
                // Every value at `a`'s place in its block: x ≡ a (mod lcm(modulus, d)).
                let a = ta?;
                let m = num_integer::lcm(p.modulus, t.d);
                q = Progression {
                    lo: p.lo + (a - p.lo).rem_euclid(m),
                    hi: p.hi - (p.hi - a).rem_euclid(m),
                    modulus: m,
                    residue: a.rem_euclid(m),
                };
            }
            // `a + delta` within the tied size's range.
            let (from, to) = (lo.saturating_sub(delta), hi.saturating_sub(delta));
            let first = q.lo.max(from);
            let first = first + (q.residue - first).rem_euclid(q.modulus);
            let last = q.hi.min(to);
            let last = last - (last - q.residue).rem_euclid(q.modulus);
            if first > last {
                return None;
            }
            let mut q = Progression {
                lo: first,
                hi: last,
                ..q
            };
            // `a + delta` in the tied size's own set (not always an interval): else the largest
            // progression of the values it allows, holding the traced value when one does.
            let allowed = inter(&q.to_set(), &dom.affine_image(1, -delta).ok()?).ok()?;
            if allowed.count() != q.count() {
                let ranked = crate::suggest::rank(&allowed, ta, 8).progressions;
                q = *ranked
                    .iter()
                    .find(|r| ta.is_some_and(|a| r.contains(a)))
                    .or_else(|| ranked.first())?;
            }
            sides[l] = q;
            deltas.push(delta);
        }
        let count = sides.iter().fold(1u128, |a, p| a.saturating_mul(p.count()));
        Some(TiedSpec {
            sides,
            deltas,
            count,
        })
    }

    /// The ties whose diagonal is inside the set: with `b` written as `a` (one shared `Dim`),
    /// every value of `a` the reduced set accepts lies in `b`'s domain, so the spec keeps both
    /// sizes dynamic and admits no failing pair.
    pub fn shared(&self) -> Vec<&Tie> {
        self.ties
            .iter()
            .filter(|(t, dom)| {
                t.s == 0
                    && self
                        .reduced
                        .projection(&t.a)
                        .is_ok_and(|p| p.is_subset(dom).unwrap_or(false))
            })
            .map(|(t, _)| t)
            .collect()
    }
}

/// The joint set of `names` over `domains` under `guards` (as [`solve_joint`]) when some guards
/// tie two sizes ([`Tie`]) and every other guard reads a tied size `b` only through floor terms
/// constant on its blocks ([`Tie::rewrite`]) or holds on every box of the sizes' own segments:
/// those are read over the partner `a` instead, `b` leaves the problem, `a`'s domain keeps the
/// values whose block meets `b`'s own set (and that pass the tie's `extra` guard), and the rest
/// is solved by [`solve_joint`] (so over `2..2^63-1` as fast as the reduced problem is). `None`
/// when no guard is such a tie or a tied size is read otherwise.
pub fn solve_tied(
    names: &[String],
    domains: &[DimSet],
    guards: &[Expr],
    budget: &Budget,
) -> Option<TiedSet> {
    let (found, mut rest) = distinct_ties(names, domains, guards);
    let mut ties = orient_ties(found, names, domains, budget, &mut rest)?;
    if ties.is_empty() {
        return None;
    }
    tie_through_rest(&mut ties, &mut rest, names, domains);
    let (mut reduced_guards, pending) = rewrite_rest(&ties, rest);
    if !pending.is_empty() {
        settle_periodic(&mut ties, &pending, names, domains)?;
    }
    let (rnames, rdomains) = reduce_domains(&ties, names, domains, budget, &mut reduced_guards)?;
    // Read over the partners' blocks, a guard may now hold on every box of the narrowed sets.
    reduced_guards.retain(|g| !holds_on_segments(g, &rnames, &rdomains));
    let reduced = solve_joint(&rnames, &rdomains, &reduced_guards, budget);
    Some(TiedSet { reduced, ties })
}

/// The guards of [`solve_tied`] sorted: the distinct ties between two of `names`, each with the
/// guard that states it (a tie listed twice, or the other way round, once), and the other guards,
/// less those that hold on every box of the sizes' own segments (they constrain nothing:
/// `(1 + (b-1)//2)*(1 + (w-1)//2) != 1` once both are at least 3).
fn distinct_ties(
    names: &[String],
    domains: &[DimSet],
    guards: &[Expr],
) -> (Vec<(Tie, Expr)>, Vec<Expr>) {
    let mut rest: Vec<Expr> = Vec::new();
    let same = |t: &Tie, u: &Tie| {
        *t == *u || u.flipped().is_some_and(|f| f == *t) || t.flipped().is_some_and(|f| f == *u)
    };
    let mut found: Vec<(Tie, Expr)> = Vec::new();
    for g in guards {
        let Some(t) = Tie::of(g).filter(|t| names.contains(&t.a) && names.contains(&t.b)) else {
            if !holds_on_segments(g, names, domains) {
                rest.push(g.clone());
            }
            continue;
        };
        if !found.iter().any(|(u, _)| same(&t, u)) {
            found.push((t, g.clone()));
        }
    }
    (found, rest)
}

/// `t` read from `x`: itself when `x` is its kept size, flipped when `x` is its tied size, `None`
/// when `x` is neither (or the tie cannot be flipped).
fn toward(t: &Tie, x: &str) -> Option<Tie> {
    if t.a == x {
        Some(t.clone())
    } else if t.b == x {
        t.flipped()
    } else {
        None
    }
}

/// The sizes the first tie of `left` connects to, through the ties of `left` (a chain `a - b -
/// c` from `a - b` reaches `c`).
fn component(left: &[(Tie, Expr)]) -> Vec<String> {
    let mut comp: Vec<String> = vec![left[0].0.a.clone(), left[0].0.b.clone()];
    loop {
        let before = comp.len();
        for (t, _) in left {
            if comp.contains(&t.a) || comp.contains(&t.b) {
                for x in [&t.a, &t.b] {
                    if !comp.contains(x) {
                        comp.push(x.clone());
                    }
                }
            }
        }
        if comp.len() == before {
            return comp;
        }
    }
}

/// The ties `found` oriented so that each tied size is tied once, to a size that is not tied
/// itself, each with its tied size's own set: the ties of each set of sizes they connect are
/// oriented towards one centre (the size most of them can be written from: a chain `a - b - c`
/// is tied to `b`, three stems to the first); a tie the centre cannot take stays a guard of the
/// reduced problem (pushed to `rest`), read through the others. `None` when a component has no
/// centre among `names`.
fn orient_ties(
    found: Vec<(Tie, Expr)>,
    names: &[String],
    domains: &[DimSet],
    budget: &Budget,
    rest: &mut Vec<Expr>,
) -> Option<Vec<(Tie, DimSet)>> {
    let mut ties: Vec<(Tie, DimSet)> = Vec::new();
    let mut left: Vec<(Tie, Expr)> = found;
    while !left.is_empty() {
        let comp = component(&left);
        let (mine, others): (Vec<_>, Vec<_>) =
            left.into_iter().partition(|(t, _)| comp.contains(&t.a));
        left = others;
        // The centre: the size (in the order the names list them) most ties orient towards.
        let centre = names
            .iter()
            .filter(|n| comp.contains(n))
            .max_by_key(|n| {
                (
                    mine.iter().filter(|(t, _)| toward(t, n).is_some()).count(),
                    std::cmp::Reverse(names.iter().position(|m| m == *n)),
                )
            })?
            .clone();
        let mut unplaced = Vec::new();
        for (t, g) in mine {
            match toward(&t, &centre) {
                Some(o) if !ties.iter().any(|(u, _)| u.b == o.b) => {
                    let dom = &domains[names.iter().position(|n| *n == o.b)?];
                    ties.push((o, dom.clone()));
                }
                _ => unplaced.push((t, g)),
            }
        }
        for (t, g) in unplaced {
            match place_through_centre(&ties, &t, &centre, names, domains, budget) {
                Some(p) => ties.push(p),
                None => rest.push(g),
            }
        }
    }
    Some(ties)
}

/// A tie `t` the centre cannot take whose tied size the centre already holds (`a` tied to `b`
/// and to `c`, each with an `extra` guard on its kept size): read as the tie from the centre to
/// its other size, with that size's `extra` guard in its own set. `None` when it cannot be read
/// so (it then stays a guard).
fn place_through_centre(
    ties: &[(Tie, DimSet)],
    t: &Tie,
    centre: &str,
    names: &[String],
    domains: &[DimSet],
    budget: &Budget,
) -> Option<(Tie, DimSet)> {
    let o = ties
        .iter()
        .filter(|(o, _)| o.a == centre)
        .find_map(|(o, _)| o.through_tied(t))
        .filter(|o| !ties.iter().any(|(u, _)| u.b == o.b || u.a == o.b))?;
    let dom = &domains[names.iter().position(|n| *n == o.b)?];
    let dom = match &t.extra {
        None => dom.clone(),
        Some(e) => match crate::engine::solve(e, &o.b, dom, &budget.limits) {
            crate::engine::Outcome::Solved { set, .. } => set,
            crate::engine::Outcome::Undecided { .. } => return None,
        },
    };
    Some((o, dom))
}

/// Guards of `rest` over a tied size and a size no tie holds (`b//2 == c//2` with `b` tied to
/// `a` through blocks of 2): read through the ties, each is a tie from the centre to that size
/// (`a`'s block to `c`'s), moved from `rest` to `ties`, until none is left (a chain `a - b - c`
/// centred on `a`).
fn tie_through_rest(
    ties: &mut Vec<(Tie, DimSet)>,
    rest: &mut Vec<Expr>,
    names: &[String],
    domains: &[DimSet],
) {
    loop {
        let free = |x: &str| !ties.iter().any(|(t, _)| t.a == x || t.b == x);
        let found = rest.iter().enumerate().find_map(|(i, g)| {
            let mut h = g.clone();
            for (t, _) in ties.iter() {
                h = t.rewrite(&h);
            }
            let t = Tie::of(&h)?;
            let centre = |x: &str| ties.iter().any(|(u, _)| u.a == x);
            let o = if centre(&t.a) && free(&t.b) {
                t
            } else if centre(&t.b) && free(&t.a) {
                t.flipped()?
            } else {
                return None;
            };
            let dom = domains[names.iter().position(|n| *n == o.b)?].clone();
            Some((i, o, dom))
        });
        match found {
            Some((i, o, dom)) => {
                rest.remove(i);
                ties.push((o, dom));
            }
            None => break,
        }
    }
}

/// The guards of `rest` read through the ties, sorted: the guards of the reduced problem
/// (rewritten over the kept sizes; `F(a) == F(a)`, a tie read through another, dropped as true),
/// and the guards still reading a tied size (through its own steps finer than its tie's blocks:
/// `(a+1)//2` against `a`'s block of 4), as written, for [`settle_periodic`].
fn rewrite_rest(ties: &[(Tie, DimSet)], rest: Vec<Expr>) -> (Vec<Expr>, Vec<Expr>) {
    let mut reduced_guards = Vec::new();
    let mut pending = Vec::new();
    for g in rest {
        let mut h = g.clone();
        for (t, _) in ties {
            h = t.rewrite(&h);
        }
        if ties
            .iter()
            .any(|(t, _)| h.atoms().iter().any(|a| **a == *t.b))
        {
            pending.push(g);
            continue;
        }
        // `F(a) == F(a)` (a tie read through another): true, `F` never raises.
        if let Expr::Cmp(CmpOp::Eq | CmpOp::Le | CmpOp::Ge, x, y) = &h {
            if x == y || FloorAffine::of(x).is_some_and(|f| FloorAffine::of(y) == Some(f)) {
                continue;
            }
        }
        reduced_guards.push(h);
    }
    (reduced_guards, pending)
}

/// The sizes of the reduced problem (those no tie ties) and their domains: each kept size's
/// values whose block meets each tied partner's own set, narrowed by the tie's `extra` guard
/// where the periodic engine decides it (else that guard joins `reduced_guards`). `None` when a
/// set operation fails.
fn reduce_domains(
    ties: &[(Tie, DimSet)],
    names: &[String],
    domains: &[DimSet],
    budget: &Budget,
    reduced_guards: &mut Vec<Expr>,
) -> Option<(Vec<String>, Vec<DimSet>)> {
    let mut rnames = Vec::new();
    let mut rdomains = Vec::new();
    for (n, d) in names.iter().zip(domains) {
        if ties.iter().any(|(t, _)| t.b == *n) {
            continue;
        }
        let mut d = d.clone();
        for (t, dom) in ties.iter().filter(|(t, _)| t.a == *n) {
            // Values of `a` whose block meets `b`'s own set (shifted into `a`'s space).
            let meets = t.dilate_a(&dom.affine_image(1, t.s).ok()?).ok()?;
            d = inter(&d, &meets).ok()?;
            if let Some(e) = &t.extra {
                match crate::engine::solve(e, n, &d, &budget.limits) {
                    crate::engine::Outcome::Solved { set, .. } => d = set,
                    crate::engine::Outcome::Undecided { .. } => reduced_guards.push(e.clone()),
                }
            }
        }
        rnames.push(n.clone());
        rdomains.push(d);
    }
    Some((rnames, rdomains))
}

/// Longest period (of the ties' blocks, the guards' steps and the sets' moduli, all met)
/// [`settle_periodic`] enumerates one window of.
const SETTLE_PERIOD: i128 = 1 << 10;

/// Most tuples [`settle_periodic`] evaluates a guard at.
const SETTLE_WORK: u128 = 1 << 20;

/// The steps of a guard that shifting all of its sizes by a common multiple of them leaves
/// unchanged: a comparison of two floor-affine terms of equal slope (`(a+1)//2 == 2*((b+1)//4)`:
/// both sides grow by `P/2` when `a` and `b` grow by `P`, a multiple of 4). `None` otherwise.
fn diagonal_steps(g: &Expr) -> Option<(i128, i128)> {
    let Expr::Cmp(_, l, r) = g else {
        return None;
    };
    let (fl, fr) = (FloorAffine::of(l)?, FloorAffine::of(r)?);
    (fl.k.checked_mul(fr.d)? == fr.k.checked_mul(fl.d)?).then_some((fl.d, fr.d))
}

/// Guards over a centre and the sizes tied to it that the ties cannot rewrite (a tied size
/// read through steps finer than its tie's blocks), settled exactly: each is either true on
/// every tuple the ties and the sizes' own sets leave, or, over those tuples, a condition on one
/// tied size alone (its value decides the guard whatever its partners), which then narrows
/// that size's own set in `ties`. The tuples are invariant under shifting every size of the
/// component by a common period `P` (the ties' blocks, the guards' steps, the sets' moduli)
/// once past the sets' last segment starts, so one window of the centre's values, enumerated,
/// decides every value up to 2^63: below the window each value as found, past it by its residue
/// modulo `P`. `None` when a guard is of neither kind, or not of the shift-invariant form
/// ([`diagonal_steps`]), or the window is past [`SETTLE_PERIOD`] / [`SETTLE_WORK`].
fn settle_periodic(
    ties: &mut [(Tie, DimSet)],
    pending: &[Expr],
    names: &[String],
    domains: &[DimSet],
) -> Option<()> {
    let mut left: Vec<Expr> = pending.to_vec();
    while !left.is_empty() {
        let before = left.len();
        let mut keep = Vec::new();
        for g in left {
            if !settle_one(ties, &g, names, domains)? {
                keep.push(g);
            }
        }
        left = keep;
        if left.len() == before {
            return None;
        }
    }
    Some(())
}

/// [`settle_periodic`] for one guard: `Some(true)` when settled (dropped, or a tied size's set
/// narrowed), `Some(false)` when not yet (a later narrowing may settle it), `None` when it can
/// never be.
fn settle_one(
    ties: &mut [(Tie, DimSet)],
    g: &Expr,
    names: &[String],
    domains: &[DimSet],
) -> Option<bool> {
    let steps = diagonal_steps(g)?;
    let atoms: Vec<String> = g.atoms().iter().map(|a| a.to_string()).collect();
    // The centre: the kept size of the tie of a tied size the guard reads.
    let centre = atoms.iter().find_map(|x| {
        ties.iter()
            .find(|(t, _)| t.b == *x)
            .map(|(t, _)| t.a.clone())
    })?;
    let mine: Vec<usize> = (0..ties.len()).filter(|&i| ties[i].0.a == centre).collect();
    if atoms
        .iter()
        .any(|x| *x != centre && !mine.iter().any(|&i| ties[i].0.b == *x))
    {
        return None;
    }
    let centre_dom = &domains[names.iter().position(|n| *n == centre)?];
    let window = Window::of(ties, &mine, centre_dom, steps)?;
    // Each tied size the guard reads.
    let readers: Vec<usize> = mine
        .iter()
        .copied()
        .filter(|&i| atoms.contains(&ties[i].0.b))
        .collect();
    let mut tally = Tally::new(readers.len());
    for v in centre_dom.clip(centre_dom.min()?, window.top).iter() {
        tally.value(ties, g, &centre, v, &mine, &readers)?;
    }
    if tally.always {
        return Some(true);
    }
    // A tied size whose every value met decides the guard alone.
    for (j, &i) in readers.iter().enumerate() {
        let dom = &ties[i].1;
        if !window.met_all(&tally.seen[j]) || dom.min().is_none() || dom.max().is_none() {
            continue;
        }
        ties[i].1 = window.passing(dom, &tally.seen[j])?;
        return Some(true);
    }
    Some(false)
}

/// The centre values [`settle_one`] enumerates: the tuples are invariant under shifting every
/// size by `period` once past `last_lo` (the sets' last segment starts, one period, and the
/// ties' reach), so the values of `last_lo..=last_hi` (one more period) decide every value past
/// them by residue; `top` is the last centre value whose tuples reach into that period.
struct Window {
    period: i128,
    last_lo: i128,
    last_hi: i128,
    top: i128,
}

impl Window {
    /// The window of the centre's set `centre_dom` and the ties `mine` from it, for a guard of
    /// steps `steps` ([`diagonal_steps`]). `None` past [`SETTLE_PERIOD`] or on overflow.
    fn of(
        ties: &[(Tie, DimSet)],
        mine: &[usize],
        centre_dom: &DimSet,
        (d1, d2): (i128, i128),
    ) -> Option<Window> {
        let lcm = |a: i128, b: i128| -> Option<i128> {
            let l = num_integer::lcm(a, b);
            (l <= SETTLE_PERIOD).then_some(l)
        };
        let mut period = lcm(d1, d2)?;
        let mut start = centre_dom.min()?;
        let mut reach: i128 = 0;
        let mut sets: Vec<&DimSet> = vec![centre_dom];
        for &i in mine {
            let (t, dom) = &ties[i];
            period = lcm(period, t.d)?;
            reach = reach.max(t.d.checked_add(t.s.checked_abs()?)?);
            sets.push(dom);
        }
        for s in &sets {
            for seg in s.segments() {
                period = lcm(period, seg.modulus)?;
                start = start.max(seg.lo);
            }
        }
        // Past `start + period + reach` every tuple shifts down by `period` into a tuple.
        let last_lo = start.checked_add(period)?.checked_add(reach)?;
        let last_hi = last_lo.checked_add(period - 1)?;
        let top = last_hi.checked_add(reach)?;
        Some(Window {
            period,
            last_lo,
            last_hi,
            top,
        })
    }

    /// Whether every tuple through each value of a tied size up to `last_hi` either held or
    /// failed (`seen` as [`Tally::seen`]): the size's value then decides the guard alone.
    fn met_all(&self, seen: &BTreeMap<i128, (bool, bool)>) -> bool {
        seen.iter()
            .filter(|e| *e.0 <= self.last_hi)
            .all(|(_, (held, failed))| *held || *failed)
    }

    /// The values of `dom` (a set with a least and a greatest value) at which the guard held:
    /// below `last_lo` each value as found, from there on each residue modulo `period` that
    /// held in the last period.
    fn passing(&self, dom: &DimSet, seen: &BTreeMap<i128, (bool, bool)>) -> Option<DimSet> {
        let passes = |u: i128| seen.get(&u).is_some_and(|(held, _)| *held);
        let (dmin, dmax) = (dom.min()?, dom.max()?);
        let mut keep: Vec<i128> = dom
            .clip(dmin, self.last_lo - 1)
            .iter()
            .filter(|&u| passes(u))
            .collect();
        keep.sort_unstable();
        let mut out = DimSet::from_values(keep);
        for u in self.last_lo..=self.last_hi {
            if passes(u) {
                out = union(&out, &DimSet::progression(u, dmax, self.period, u)).ok()?;
            }
        }
        inter(dom, &out).ok()
    }
}

/// What one guard did at the tuples [`settle_one`] enumerates.
struct Tally {
    /// Whether it held at every tuple.
    always: bool,
    /// Per tied size the guard reads: each value met, and whether the guard held at every tuple
    /// through it / failed at every one.
    seen: Vec<BTreeMap<i128, (bool, bool)>>,
    /// Tuples evaluated so far (at most [`SETTLE_WORK`]).
    work: u128,
}

impl Tally {
    fn new(readers: usize) -> Tally {
        Tally {
            always: true,
            seen: vec![BTreeMap::new(); readers],
            work: 0,
        }
    }

    /// Evaluates `g` at every tuple through the centre's value `v`: each tied size of `mine`
    /// (ties from `centre`) at its values in `v`'s block and its own set, and records the truth
    /// per value of each tied size of `readers` (those `g` reads). No tuple when `v` fails a
    /// tie's `extra` guard or a tied size has no value there. `None` past [`SETTLE_WORK`].
    fn value(
        &mut self,
        ties: &[(Tie, DimSet)],
        g: &Expr,
        centre: &str,
        v: i128,
        mine: &[usize],
        readers: &[usize],
    ) -> Option<()> {
        if mine.iter().any(|&i| !ties[i].0.extra_holds(v)) {
            return Some(());
        }
        let mut values: Vec<Vec<i128>> = Vec::new();
        for &i in mine {
            let (t, dom) = &ties[i];
            let (blo, bhi) = t.b_block(v);
            values.push(dom.clip(blo, bhi).iter().collect());
        }
        if values.iter().any(|x| x.is_empty()) {
            return Some(());
        }
        // The tuples of the sizes the guard reads.
        let slots: Vec<usize> = readers
            .iter()
            .map(|r| mine.iter().position(|m| m == r).expect("a reader is mine"))
            .collect();
        let mut idx = vec![0usize; slots.len()];
        loop {
            self.work += 1;
            if self.work > SETTLE_WORK {
                return None;
            }
            let env = |x: &str| -> Option<i128> {
                if x == centre {
                    return Some(v);
                }
                slots
                    .iter()
                    .zip(&idx)
                    .find(|p| ties[mine[*p.0]].0.b == x)
                    .map(|p| values[*p.0][*p.1])
            };
            let ok = g.truth(&env) == Ok(true);
            self.always &= ok;
            for (j, (&s, &k)) in slots.iter().zip(&idx).enumerate() {
                let e = self.seen[j].entry(values[s][k]).or_insert((true, true));
                e.0 &= ok;
                e.1 &= !ok;
            }
            let mut l = 0;
            while l < idx.len() {
                idx[l] += 1;
                if idx[l] < values[slots[l]].len() {
                    break;
                }
                idx[l] = 0;
                l += 1;
            }
            if l == idx.len() {
                return Some(());
            }
        }
    }
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// Ties through different maps (`k1*((a + c1)//d1) + e1 == k2*((b + c2)//d2) + e2`:
        /// nested strides, offsets, an upsample factor) against brute force: which pairs pass, and
        /// the closed-form count of tuples with `b` in a periodic own set and two sizes tied to
        /// one (`count_star`).
        #[test]
        fn ties_through_different_maps_match_brute_force(
            c1 in -5i128..6, d1 in 1i128..5, r in 1i128..4, c2 in -9i128..9, e in -3i128..4,
            k in 1i128..3, up in any::<bool>(), a0 in -10i128..40, wa in 0i128..60,
            m in 1i128..5, res in 0i128..5, b0 in -10i128..40, wb in 0i128..60,
        ) {
            let d2 = d1 * r;
            // a's side: k*((a + c1)//d1) + e; b's: k*r*((b + c2)//d2) + e (upsampled r times).
            let fa = format!("{k}*((a + {c1}) // {d1}) + {e}");
            let fb = format!("{}*((b + {c2}) // {d2}) + {e}", k * r);
            let (l, rr) = if up { (fa, fb) } else { (fb, fa) };
            let guard = g(&format!("{l} == {rr}"));
            let t = Tie::of(&guard);
            prop_assert!(t.is_some(), "{}", guard);
            let t = t.unwrap();
            let env = |a: i128, b: i128| move |s: &str| match s { "a" => Some(a), "b" => Some(b), _ => None };
            let (a1, b1) = (a0 + wa, b0 + wb);
            // b's own set: b ≡ res (mod m) within its range; a tied to it, or the other way.
            let own_b = DimSet::progression(b0, b1, m, res % m);
            let side_a = DimSet::interval(a0, a1);
            let ta = t.a.clone();
            let mut n = 0u128;
            for a in a0..=a1 {
                for b in b0..=b1 {
                    let truth = guard.truth(&env(a, b)) == Ok(true);
                    let (x, y) = if ta == "a" { (a, b) } else { (b, a) };
                    prop_assert_eq!(truth, t.holds(x, y), "({}, {}) {:?}", a, b, t);
                    if truth && own_b.contains(b) {
                        n += 1;
                    }
                }
            }
            // The count with `a` kept: the tuples (a, b) with b in its own set.
            if ta == "a" {
                let tied = (t.clone(), own_b.clone());
                let side = DimSet::from_values(side_a.iter().filter(|&x| t.extra_holds(x)));
                prop_assert_eq!(count_star(&side, &[&tied]), Some(n));
                // Two sizes tied to `a` the same way: the square of each a's partners.
                let mut n2 = 0u128;
                for a in side.iter() {
                    let p = own_b.iter().filter(|&b| t.holds(a, b)).count() as u128;
                    n2 += p * p;
                }
                prop_assert_eq!(count_star(&side, &[&tied, &tied]), Some(n2));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(120))]
        /// A tie beside a guard linking its partner to a third size, over small boxes: the
        /// projections, the values that pass with every partner, the listed boxes and every
        /// tuple a spec admits (with the traced sizes anywhere in the set) against brute force.
        #[test]
        fn tied_answers_and_specs_match_brute_force(
            c in -3i128..4, d in 1i128..5, m in 2i128..5, r in 0i128..5,
            a0 in 2i128..12, wa in 0i128..10, b0 in 2i128..12, wb in 0i128..10,
            z0 in 2i128..6, wz in 0i128..4, pick in 0usize..1000,
        ) {
            let guards = vec![
                g(&format!("(a + {c}) // {d} == (b + {c}) // {d}")),
                g(&format!("(a + z) % {m} != {}", r % m)),
            ];
            let names: Vec<String> = ["a", "b", "z"].map(String::from).to_vec();
            let (a1, b1, z1) = (a0 + wa, b0 + wb, z0 + wz);
            let doms = vec![
                DimSet::interval(a0, a1),
                DimSet::interval(b0, b1),
                DimSet::interval(z0, z1),
            ];
            let Some(ts) = solve_tied(&names, &doms, &guards, &Budget::default()) else {
                return Err(TestCaseError::fail("no tie"));
            };
            let passes = |a: i128, b: i128, z: i128| {
                let env = |s: &str| match s { "a" => Some(a), "b" => Some(b), "z" => Some(z), _ => None };
                guards.iter().all(|g| g.truth(&env) == Ok(true))
            };
            let mut all = Vec::new();
            for a in a0..=a1 {
                for b in b0..=b1 {
                    for z in z0..=z1 {
                        if passes(a, b, z) {
                            all.push([a, b, z]);
                        }
                    }
                }
            }
            prop_assert_eq!(ts.count(), Some(all.len() as u128));
            // Projections and values passing with every partner.
            for (i, n) in names.iter().enumerate() {
                let some: Vec<i128> = (doms[i].min().unwrap()..=doms[i].max().unwrap())
                    .filter(|&x| all.iter().any(|t| t[i] == x))
                    .collect();
                let got: Vec<i128> = ts.projection(n).unwrap().iter().collect();
                prop_assert_eq!(&got, &some, "projection of {}", n);
                let every: Vec<i128> = (doms[i].min().unwrap()..=doms[i].max().unwrap())
                    .filter(|&x| {
                        let others = |k: usize| doms[k].min().unwrap()..=doms[k].max().unwrap();
                        let (j, k) = match i { 0 => (1, 2), 1 => (0, 2), _ => (0, 1) };
                        others(j).all(|y| others(k).all(|w| {
                            let mut t = [0; 3];
                            t[i] = x;
                            t[j] = y;
                            t[k] = w;
                            passes(t[0], t[1], t[2])
                        }))
                    })
                    .collect();
                let domain = |s: &str| names.iter().position(|x| x == s).map(|k| doms[k].clone());
                let got: Vec<i128> = ts.for_all(n, &domain).unwrap().iter().collect();
                prop_assert_eq!(&got, &every, "for every partner: {}", n);
            }
            // The listed boxes are the whole set, disjoint.
            let (boxes, complete) = ts.boxes(10_000);
            prop_assert!(complete);
            let order = ts.sizes();
            let idx = |n: &str| order.iter().position(|x| x == n).unwrap();
            let mut listed = 0u128;
            for bx in &boxes {
                for t in crate::linked::tuples(bx) {
                    prop_assert!(passes(t[idx("a")], t[idx("b")], t[idx("z")]), "{:?}", t);
                    listed += 1;
                }
            }
            prop_assert_eq!(listed, all.len() as u128);
            // A spec through an accepted tuple (the traced sizes) admits only accepted tuples,
            // and holds the traced tuple.
            if all.is_empty() {
                return Ok(());
            }
            let traced = all[pick % all.len()];
            let at = |s: &str| names.iter().position(|x| x == s).map(|k| traced[k]);
            let point: Vec<i128> = ts.reduced.sizes.iter().map(|s| at(s).unwrap()).collect();
            let bx = crate::linked::box_through(&ts.reduced.tree, &point).unwrap();
            if let Some(spec) = ts.spec(&bx, &at) {
                let sides: Vec<DimSet> = ts
                    .sizes()
                    .iter()
                    .map(|n| spec.side(&ts, n).unwrap().0.to_set())
                    .collect();
                let mut held = false;
                for t in crate::linked::tuples(&sides[..ts.reduced.sizes.len()]) {
                    let mut full = t.clone();
                    for (i, (tie, _)) in ts.ties.iter().enumerate() {
                        full.push(t[ts.reduced.level(&tie.a).unwrap()] + spec.deltas[i]);
                    }
                    prop_assert!(passes(full[idx("a")], full[idx("b")], full[idx("z")]), "{:?}", full);
                    held |= [full[idx("a")], full[idx("b")], full[idx("z")]] == traced;
                }
                prop_assert!(held, "the spec holds the traced {:?}", traced);
                prop_assert_eq!(spec.count, crate::linked::tuples(&sides[..ts.reduced.sizes.len()]).len() as u128);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        /// One size's coarse map upsampled against two others' finer maps (a skip
        /// concatenation: `r*((x + c)//(d*r)) + e == (y + cy)//d + ey`, and the same with `z`):
        /// two ties of `x` with an `extra` guard on each of `y` and `z`, read as `x` and `z` tied
        /// to `y`. The count, membership of every tuple, and each size's projection against
        /// brute force over small boxes.
        #[test]
        fn two_ties_of_one_size_through_different_strides_match_brute_force(
            d in 1i128..4, r in 2i128..4, c in -3i128..4, cy in -3i128..4, cz in -3i128..4,
            e in 0i128..3, x0 in 2i128..10, wx in 0i128..30, y0 in 2i128..10, wy in 0i128..30,
            z0 in 2i128..10, wz in 0i128..30,
        ) {
            let big = d * r;
            let guards = vec![
                g(&format!("{r}*((x + {c}) // {big}) + {e} == (y + {cy}) // {d} + {e}")),
                g(&format!("{r}*((x + {c}) // {big}) + {e} == (z + {cz}) // {d} + {e}")),
            ];
            let names: Vec<String> = ["x", "y", "z"].map(String::from).to_vec();
            let (x1, y1, z1) = (x0 + wx, y0 + wy, z0 + wz);
            let doms = vec![
                DimSet::interval(x0, x1),
                DimSet::interval(y0, y1),
                DimSet::interval(z0, z1),
            ];
            let Some(ts) = solve_tied(&names, &doms, &guards, &Budget::default()) else {
                return Err(TestCaseError::fail("no tie"));
            };
            prop_assert!(ts.reduced.undecided.is_none());
            // Both ties read in closed form (none left to the reduced search).
            prop_assert_eq!(ts.ties.len(), 2, "{:?}", ts.ties);
            let passes = |t: [i128; 3]| {
                let env = |s: &str| match s { "x" => Some(t[0]), "y" => Some(t[1]), "z" => Some(t[2]), _ => None };
                guards.iter().all(|g| g.truth(&env) == Ok(true))
            };
            let order = ts.sizes();
            let idx: Vec<usize> = order
                .iter()
                .map(|n| names.iter().position(|m| m == n).unwrap())
                .collect();
            let mut all = Vec::new();
            for x in x0..=x1 {
                for y in y0..=y1 {
                    for z in z0..=z1 {
                        let t = [x, y, z];
                        let ok = passes(t);
                        let mine: Vec<i128> = idx.iter().map(|&i| t[i]).collect();
                        prop_assert_eq!(ts.contains(&mine), ok, "{:?} in {:?}", t, ts.ties);
                        if ok {
                            all.push(t);
                        }
                    }
                }
            }
            prop_assert_eq!(ts.count(), Some(all.len() as u128));
            for (i, n) in names.iter().enumerate() {
                let some: Vec<i128> = (doms[i].min().unwrap()..=doms[i].max().unwrap())
                    .filter(|&v| all.iter().any(|t| t[i] == v))
                    .collect();
                let got: Vec<i128> = ts.projection(n).unwrap().iter().collect();
                prop_assert_eq!(&got, &some, "projection of {}", n);
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
        // The spec from the largest box of the reduced set: image2's sizes written as image1's,
        // every size from 5 on; each tuple it admits near 5, 2^20 and 2^40 passes (brute force).
        let lb = super::super::largest_box(&ts.reduced.tree, &Budget::default()).unwrap();
        let spec = ts.spec(&lb, &|_| None).unwrap();
        assert_eq!(spec.deltas, vec![0, 0]);
        assert!(spec
            .sides
            .iter()
            .all(|p| (p.lo, p.hi, p.modulus) == (5, top, 1)));
        let order = ts.sizes();
        for lo in [5i128, 1 << 20, 1 << 40] {
            for x in lo..lo + 12 {
                for y in lo..lo + 12 {
                    let mut t = vec![0; 4];
                    t[ts.reduced.level("h1").unwrap()] = x;
                    t[ts.reduced.level("w1").unwrap()] = y;
                    t[order.iter().position(|n| n == "h2").unwrap()] = x;
                    t[order.iter().position(|n| n == "w2").unwrap()] = y;
                    assert!(passes(&t, &order), "{t:?}");
                }
            }
        }
        // Traced sizes that differ inside one block (65 and 68): image2's height is image1's
        // plus 3, image1's kept to its place in the block (65 mod 4).
        let traced = |n: &str| match n {
            "h1" => Some(65),
            "h2" => Some(68),
            "w1" | "w2" => Some(97),
            _ => None,
        };
        let spec = ts.spec(&lb, &traced).unwrap();
        let (p, from) = spec.side(&ts, "h2").unwrap();
        assert_eq!(from, Some(("h1".to_string(), 3)));
        assert_eq!((p.lo, p.modulus, p.residue), (8, 4, 0));
        for k in [1i128, 2, 16, 1 << 20, 1 << 40] {
            let h1 = 4 * k + 1;
            let mut t = vec![0; 4];
            t[ts.reduced.level("h1").unwrap()] = h1;
            t[ts.reduced.level("w1").unwrap()] = 97;
            t[order.iter().position(|n| n == "h2").unwrap()] = h1 + 3;
            t[order.iter().position(|n| n == "w2").unwrap()] = 97;
            assert!(passes(&t, &order), "{t:?}");
        }
        // One tie over 5..2^63-1: full blocks 5..8, 9..12, ... and the last cut to 3 values.
        let t = &ts.ties[0].0;
        assert_eq!(t.count((5, top), (5, top)), 4 * (top - 7) as u128 + 9);
    }
}
