//! Bounds of a guard's terms over a box of sizes (interval arithmetic).
//!
//! For every size in a box `lo_i <= x_i <= hi_i` (a bound may be infinite), [`Bounds::of`] gives
//! an interval holding every value a term takes, and [`truth`] whether a guard holds at every
//! point, fails at every point, or neither ([`Tri`]). Each rule is exact on the hull of its
//! operands: sums, products (the four corners), floor division by a divisor of one sign (monotone
//! in each operand on such a box), `%` by a positive divisor, `min`, `max`, `abs`, whole powers,
//! conditions. What has no rule here (true division, rounding of rationals, a divisor whose
//! interval holds 0) is "any value": never a wrong bound, only an undecided guard. Infinite
//! bounds and values past 128 bits are carried as infinities, so a bound is never wrapped.
//!
//! This is what lets the joint engine (`linked.rs`) decide a box of sizes without enumerating
//! it: products of monotone floor terms such as `(1 + (h-1)//2)*(1 + (w-1)//2) != 1` hold on
//! every box past a small corner.

use crate::types::{CmpOp, DimSet, Expr};
use std::collections::BTreeMap;

/// A bound: a finite value or an infinity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum B {
    /// Minus infinity.
    NegInf,
    /// A value.
    Fin(i128),
    /// Plus infinity.
    PosInf,
}

/// An interval `[lo, hi]` (never empty: `lo <= hi`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Least value.
    pub lo: B,
    /// Greatest value.
    pub hi: B,
}

/// A guard over a box: true at every point, false at every point, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tri {
    /// Holds at every point of the box.
    True,
    /// Fails at every point of the box (a guard that raises fails).
    False,
    /// Not decided by the bounds.
    Unknown,
}

impl Tri {
    fn not(self) -> Tri {
        match self {
            Tri::True => Tri::False,
            Tri::False => Tri::True,
            Tri::Unknown => Tri::Unknown,
        }
    }
}

const ANY: Bounds = Bounds {
    lo: B::NegInf,
    hi: B::PosInf,
};

fn fin(x: Option<i128>, sign_pos: bool) -> B {
    match x {
        Some(v) => B::Fin(v),
        None if sign_pos => B::PosInf,
        None => B::NegInf,
    }
}

fn sign(b: B) -> i8 {
    match b {
        B::NegInf => -1,
        B::PosInf => 1,
        B::Fin(v) => v.signum() as i8,
    }
}

fn add(a: B, b: B) -> Option<B> {
    Some(match (a, b) {
        (B::Fin(x), B::Fin(y)) => {
            let s = x.checked_add(y);
            fin(s, x > 0)
        }
        (B::NegInf, B::PosInf) | (B::PosInf, B::NegInf) => return None,
        (B::NegInf, _) | (_, B::NegInf) => B::NegInf,
        _ => B::PosInf,
    })
}

fn mul(a: B, b: B) -> B {
    match (a, b) {
        (B::Fin(x), B::Fin(y)) => fin(x.checked_mul(y), (x > 0) == (y > 0)),
        _ => match sign(a) * sign(b) {
            0 => B::Fin(0),
            1 => B::PosInf,
            _ => B::NegInf,
        },
    }
}

/// `floor(a / d)` for `d >= 1` (finite or infinite).
fn fdiv_pos(a: B, d: B) -> B {
    match (a, d) {
        (B::Fin(x), B::Fin(y)) => B::Fin(x.div_euclid(y)),
        (B::Fin(x), B::PosInf) => B::Fin(if x >= 0 { 0 } else { -1 }),
        (B::PosInf, _) => B::PosInf,
        (B::NegInf, _) => B::NegInf,
        (_, _) => B::Fin(0),
    }
}

/// The hull of corner values. An infinity only ever bounds on its own side (`+oo` an upper
/// bound, `-oo` a lower one): a lower bound past 128 bits is not kept (any value), so an
/// infinity never turns into a wrong finite bound further up.
fn hull(v: &[B]) -> Bounds {
    let b = Bounds {
        lo: *v.iter().min().unwrap_or(&B::NegInf),
        hi: *v.iter().max().unwrap_or(&B::PosInf),
    };
    sane(b)
}

fn sane(b: Bounds) -> Bounds {
    if b.lo == B::PosInf || b.hi == B::NegInf {
        ANY
    } else {
        b
    }
}

impl Bounds {
    /// The single value `v`.
    pub fn point(v: i128) -> Bounds {
        Bounds {
            lo: B::Fin(v),
            hi: B::Fin(v),
        }
    }

    /// `[lo, hi]`, a bound past `±2^100` read as infinite.
    pub fn range(lo: i128, hi: i128) -> Bounds {
        let big = 1i128 << 100;
        Bounds {
            lo: if lo <= -big { B::NegInf } else { B::Fin(lo) },
            hi: if hi >= big { B::PosInf } else { B::Fin(hi) },
        }
    }

    /// The interval of every value `e` takes when each size `x` ranges over `env[x]` (a size
    /// not in `env` takes any value); `None` for a condition.
    pub fn of(e: &Expr, env: &BTreeMap<&str, Bounds>) -> Bounds {
        match e {
            Expr::Const(c) if c.is_integer() => Bounds::point(*c.numer()),
            Expr::Sym(a) => env.get(&**a).copied().unwrap_or(ANY),
            Expr::Add(v) => {
                let mut acc = Bounds::point(0);
                for t in v {
                    let b = Bounds::of(t, env);
                    acc = match (add(acc.lo, b.lo), add(acc.hi, b.hi)) {
                        (Some(lo), Some(hi)) => sane(Bounds { lo, hi }),
                        _ => return ANY,
                    };
                }
                acc
            }
            Expr::Mul(v) => {
                let mut acc = Bounds::point(1);
                for t in v {
                    let b = Bounds::of(t, env);
                    acc = hull(&[
                        mul(acc.lo, b.lo),
                        mul(acc.lo, b.hi),
                        mul(acc.hi, b.lo),
                        mul(acc.hi, b.hi),
                    ]);
                }
                acc
            }
            Expr::FloorDiv(a, d) => {
                let (a, d) = (Bounds::of(a, env), Bounds::of(d, env));
                if d.lo >= B::Fin(1) {
                    hull(&[
                        fdiv_pos(a.lo, d.lo),
                        fdiv_pos(a.lo, d.hi),
                        fdiv_pos(a.hi, d.lo),
                        fdiv_pos(a.hi, d.hi),
                    ])
                } else if d.hi <= B::Fin(-1) {
                    // a // d == (-a) // (-d)
                    let na = neg(a);
                    let nd = neg(d);
                    hull(&[
                        fdiv_pos(na.lo, nd.lo),
                        fdiv_pos(na.lo, nd.hi),
                        fdiv_pos(na.hi, nd.lo),
                        fdiv_pos(na.hi, nd.hi),
                    ])
                } else {
                    ANY
                }
            }
            Expr::Mod(a, d) => {
                let (a, d) = (Bounds::of(a, env), Bounds::of(d, env));
                if d.lo < B::Fin(1) {
                    return ANY;
                }
                // One divisor m and a within one period: a shifted; a within [0, d.lo): a.
                if let (B::Fin(x), B::Fin(y), B::Fin(m), B::Fin(m2)) = (a.lo, a.hi, d.lo, d.hi) {
                    if m == m2 && x.div_euclid(m) == y.div_euclid(m) {
                        let k = x.div_euclid(m) * m;
                        return Bounds {
                            lo: B::Fin(x - k),
                            hi: B::Fin(y - k),
                        };
                    }
                    if x >= 0 && y < m {
                        return a;
                    }
                }
                let top = match d.hi {
                    B::Fin(m) => B::Fin(m - 1),
                    _ => B::PosInf,
                };
                let top = if a.lo >= B::Fin(0) {
                    top.min(a.hi)
                } else {
                    top
                };
                Bounds {
                    lo: B::Fin(0),
                    hi: top,
                }
            }
            Expr::Min(v) | Expr::Max(v) if !v.is_empty() => {
                let bs: Vec<Bounds> = v.iter().map(|t| Bounds::of(t, env)).collect();
                let min = matches!(e, Expr::Min(_));
                let pick = |f: fn(&Bounds) -> B| {
                    let it = bs.iter().map(f);
                    if min { it.min() } else { it.max() }.unwrap_or(B::NegInf)
                };
                Bounds {
                    lo: pick(|b| b.lo),
                    hi: pick(|b| b.hi),
                }
            }
            Expr::Abs(a) => {
                let a = Bounds::of(a, env);
                if a.lo >= B::Fin(0) {
                    a
                } else if a.hi <= B::Fin(0) {
                    neg(a)
                } else {
                    let n = neg(a);
                    Bounds {
                        lo: B::Fin(0),
                        hi: n.hi.max(a.hi),
                    }
                }
            }
            Expr::Pow(b, p) => match (Bounds::of(b, env), &**p) {
                (b, Expr::Const(k)) if k.is_integer() && *k.numer() >= 0 && b.lo >= B::Fin(0) => {
                    let k = *k.numer();
                    let pw = |x: B| -> B {
                        let mut acc = B::Fin(1);
                        for _ in 0..k.min(128) {
                            acc = mul(acc, x);
                        }
                        acc
                    };
                    Bounds {
                        lo: pw(b.lo),
                        hi: pw(b.hi),
                    }
                }
                _ => ANY,
            },
            Expr::Ite(c, a, b) => match truth(c, env) {
                Tri::True => Bounds::of(a, env),
                Tri::False => Bounds::of(b, env),
                Tri::Unknown => {
                    let (a, b) = (Bounds::of(a, env), Bounds::of(b, env));
                    Bounds {
                        lo: a.lo.min(b.lo),
                        hi: a.hi.max(b.hi),
                    }
                }
            },
            _ => ANY,
        }
    }
}

fn neg(a: Bounds) -> Bounds {
    let n = |b: B| match b {
        B::NegInf => B::PosInf,
        B::PosInf => B::NegInf,
        B::Fin(v) => fin(v.checked_neg(), true),
    };
    sane(Bounds {
        lo: n(a.hi),
        hi: n(a.lo),
    })
}

/// Finite bounds `(lo, hi)` on every value the term `e` takes when each symbol ranges over
/// `ranges` (inclusive): `lo` is at most, `hi` at least, every value (exact where each rule is
/// exact, see the module); `None` when a bound is infinite or no rule applies.
pub fn value_range(e: &Expr, ranges: &BTreeMap<&str, (i128, i128)>) -> Option<(i128, i128)> {
    let env = ranges
        .iter()
        .map(|(k, &(lo, hi))| (*k, Bounds::range(lo, hi)))
        .collect();
    match Bounds::of(e, &env) {
        Bounds {
            lo: B::Fin(lo),
            hi: B::Fin(hi),
        } => Some((lo, hi)),
        _ => None,
    }
}

/// Whether interval bounds show the condition `e` true at every point of the box `ranges`
/// (inclusive). torch decides the guards of a `Dim`'s range the same way (value ranges), so a
/// guard true at every size that this cannot show is one torch refuses a `Dim` for.
pub fn shown_true(e: &Expr, ranges: &BTreeMap<&str, (i128, i128)>) -> bool {
    let env = ranges
        .iter()
        .map(|(k, &(lo, hi))| (*k, Bounds::range(lo, hi)))
        .collect();
    matches!(truth(e, &env), Tri::True)
}

/// Whether the condition `e` holds at every point of the box `env`, fails at every point, or
/// neither (see the module's rules; anything without one is [`Tri::Unknown`]).
pub fn truth(e: &Expr, env: &BTreeMap<&str, Bounds>) -> Tri {
    match e {
        Expr::Bool(b) => {
            if *b {
                Tri::True
            } else {
                Tri::False
            }
        }
        Expr::Not(a) => truth(a, env).not(),
        Expr::And(v) => {
            let mut all = Tri::True;
            for t in v {
                match truth(t, env) {
                    Tri::False => return Tri::False,
                    Tri::Unknown => all = Tri::Unknown,
                    Tri::True => {}
                }
            }
            all
        }
        Expr::Or(v) => {
            let mut any = Tri::False;
            for t in v {
                match truth(t, env) {
                    Tri::True => return Tri::True,
                    Tri::Unknown => any = Tri::Unknown,
                    Tri::False => {}
                }
            }
            any
        }
        Expr::Cmp(op, l, r) if !l.is_bool() && !r.is_bool() => {
            let (a, b) = (Bounds::of(l, env), Bounds::of(r, env));
            // An infinite bound is not a value a term takes: only finite facts decide.
            let lt = matches!((a.hi, b.lo), (B::Fin(x), B::Fin(y)) if x < y);
            let le = matches!((a.hi, b.lo), (B::Fin(x), B::Fin(y)) if x <= y);
            let gt = matches!((a.lo, b.hi), (B::Fin(x), B::Fin(y)) if x > y);
            let ge = matches!((a.lo, b.hi), (B::Fin(x), B::Fin(y)) if x >= y);
            let eq = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo && matches!(a.lo, B::Fin(_));
            let tri = |yes: bool, no: bool| {
                if yes {
                    Tri::True
                } else if no {
                    Tri::False
                } else {
                    Tri::Unknown
                }
            };
            match op {
                CmpOp::Eq => tri(eq, lt || gt),
                CmpOp::Ne => tri(lt || gt, eq),
                CmpOp::Lt => tri(lt, ge),
                CmpOp::Le => tri(le, gt),
                CmpOp::Gt => tri(gt, le),
                CmpOp::Ge => tri(ge, lt),
            }
        }
        Expr::Ite(c, a, b) => match truth(c, env) {
            Tri::True => truth(a, env),
            Tri::False => truth(b, env),
            Tri::Unknown => match (truth(a, env), truth(b, env)) {
                (x, y) if x == y => x,
                _ => Tri::Unknown,
            },
        },
        _ => Tri::Unknown,
    }
}

/// Boxes of segments [`holds_on_segments`] examines at most.
const SEGMENT_BOXES: usize = 4096;

/// Whether `g` holds at every tuple of the sizes' sets (`names` and their `sets`), shown by
/// interval bounds on each box of their segments' hulls (at most [`SEGMENT_BOXES`] boxes;
/// `false` when not shown: the guard is then searched as usual).
pub fn holds_on_segments(g: &Expr, names: &[String], sets: &[DimSet]) -> bool {
    let atoms = g.atoms();
    let used: Vec<(&str, Vec<(i128, i128)>)> = names
        .iter()
        .zip(sets)
        .filter(|(n, _)| atoms.iter().any(|a| **a == ***n))
        .map(|(n, s)| {
            (
                n.as_str(),
                s.segments().iter().map(|seg| (seg.lo, seg.hi)).collect(),
            )
        })
        .collect();
    if used.len() != atoms.len() || used.iter().any(|(_, v)| v.is_empty()) {
        return false;
    }
    let total = used
        .iter()
        .try_fold(1usize, |n, (_, v)| n.checked_mul(v.len()));
    if total.is_none_or(|t| t > SEGMENT_BOXES) {
        return false;
    }
    let mut pick = vec![0usize; used.len()];
    loop {
        let env: BTreeMap<&str, Bounds> = used
            .iter()
            .zip(&pick)
            .map(|((n, v), &i)| (*n, Bounds::range(v[i].0, v[i].1)))
            .collect();
        if truth(g, &env) != Tri::True {
            return false;
        }
        let mut l = 0;
        loop {
            if l == used.len() {
                return true;
            }
            pick[l] += 1;
            if pick[l] < used[l].1.len() {
                break;
            }
            pick[l] = 0;
            l += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;
    use proptest::prelude::*;

    /// A random term over `h` and `w` of the shapes torch writes.
    fn term(k: u8, a: i128, b: i128) -> String {
        let t = [
            format!("(h // {a})"),
            format!("(1 + ((h - 1) // {a}))*(1 + ((w - 1) // {b}))"),
            format!("(h // {a})*max(1, w // {b})"),
            format!("(h + w) % {a}"),
            format!("min(h, w) // {b} - {a}"),
            format!("abs(h - {a}*w)"),
            format!("(h * w) // (1 + (w // {b}))"),
            format!("((h // {a}) % (1 + (w // {b})))"),
            format!("(h - {a})**2 - w"),
        ];
        t[k as usize % t.len()].clone()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// What the bounds decide over a box holds at every point of it (evaluated exactly).
        #[test]
        fn a_decided_box_agrees_with_every_point(
            k in 0u8..9, a in 1i128..9, b in 1i128..9, c in -20i128..60, op in 0usize..6,
            hl in 0i128..40, hw in 0i128..12, wl in 0i128..40, ww in 0i128..12,
        ) {
            let ops = ["==", "!=", "<", "<=", ">", ">="];
            let guard = format!("{} {} {c}", term(k, a, b), ops[op]);
            let g = parse_guard(&guard).unwrap();
            let env = BTreeMap::from([
                ("h", Bounds::range(hl, hl + hw)),
                ("w", Bounds::range(wl, wl + ww)),
            ]);
            let t = truth(&g, &env);
            if t != Tri::Unknown {
                for h in hl..=hl + hw {
                    for w in wl..=wl + ww {
                        let at = |s: &str| match s { "h" => Some(h), "w" => Some(w), _ => None };
                        let v = g.truth(&at);
                        match t {
                            Tri::True => prop_assert_eq!(v, Ok(true), "{} at {:?}", guard, (h, w)),
                            _ => prop_assert!(!matches!(v, Ok(true)), "{} at {:?}", guard, (h, w)),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_tail_past_the_corner_is_decided() {
        let g = parse_guard("((1 + (((-1) + w) // 2))*(1 + (((-1) + h) // 2))) != 1").unwrap();
        let big = i64::MAX as i128;
        let env = BTreeMap::from([("h", Bounds::range(3, big)), ("w", Bounds::range(2, big))]);
        assert_eq!(truth(&g, &env), Tri::True);
        let env = BTreeMap::from([("h", Bounds::range(2, 2)), ("w", Bounds::range(2, 2))]);
        assert_eq!(truth(&g, &env), Tri::False);
        let env = BTreeMap::from([("h", Bounds::range(2, big)), ("w", Bounds::range(2, big))]);
        assert_eq!(truth(&g, &env), Tri::Unknown);
    }
}
