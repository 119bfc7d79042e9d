//! The exact one-dimension engine: the set of sizes `x` in a domain for which a guard holds.
//!
//! # The periodic method
//!
//! A guard built from `+ - *` by constants, floor division and modulo by constants, rational
//! multiples with floor/ceil/trunc/round, min/max/abs, comparisons and boolean connectives is
//! *quasi-affine*. For such a guard there is a period `P` such that on each residue class
//! `x = P*k + r`, every sub-expression is piecewise affine in `k`: `a*k + b` with a rational `b`
//! and, where a floor is taken, an integer `a`. The engine evaluates the guard symbolically for
//! each residue `r` over the whole `k`-interval of the domain, splitting the interval only where
//! a `min`, `max`, `abs`, `trunc`, conditional or comparison changes its outcome. A comparison of
//! two affine pieces holds on a sub-interval computed in closed form. The result is a list of
//! runs per residue, turned into a [`DimSet`].
//!
//! The period is found on the fly: a floor of `a*k + b` with a fractional `a` needs `P` times
//! `denominator(a)`, so the engine restarts with that larger `P`. Cost: `P` times the size of the
//! guard times the number of breakpoints — independent of the width of the domain.
//!
//! # Fallback
//!
//! Guards outside that class (a divisor or modulus that depends on `x`, products of sizes,
//! powers of sizes) are decided by evaluating the guard at every member of the domain, when the
//! domain has at most [`Limits::enumeration`] members, and reported [`Outcome::Undecided`]
//! beyond that — never guessed.

use crate::budget;
use crate::compiled::Compiled;
use crate::expr::{pow_values, EvalError};
use crate::num::{self, ArithError, Q};
use crate::report::{NotPeriodic, Undecided};
use crate::set::Run;
use crate::types::{CmpOp, DimSet, Expr, RoundKind};
use num_integer::Integer;
use num_traits::{Signed, Zero};
use smallvec::{smallvec, SmallVec};
use std::cell::RefCell;
use std::cmp::Ordering;

/// Work limits. Exceeding one is reported as data ([`Outcome::Undecided`] or a fallback), not
/// as an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest period the periodic method may use.
    pub period: i128,
    /// Largest number of affine pieces on one residue class.
    pub pieces: usize,
    /// Largest domain decided by evaluating every member.
    pub enumeration: u128,
    /// Choose the cheaper exact method: on a domain of `n` values, a guard whose period exceeds
    /// `max(64, n / 16)` is evaluated value by value instead (both methods are exact).
    pub cost_based: bool,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            period: crate::set::PERIOD_LIMIT,
            pieces: 100_000,
            enumeration: 20_000_000,
            cost_based: true,
        }
    }
}

/// How a set was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    /// Closed form over residue classes modulo `period`.
    Periodic {
        /// The period used.
        period: i128,
    },
    /// The guard was evaluated at each of `values` members of the domain.
    Enumeration {
        /// How many values were evaluated.
        values: u128,
        /// Why the periodic method did not apply.
        because: NotPeriodic,
    },
}

/// Result of solving a guard on a domain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The exact set of domain members that satisfy the guard.
    Solved {
        /// The exact set.
        set: DimSet,
        /// How it was computed.
        method: Method,
    },
    /// Neither method applies within the limits.
    Undecided {
        /// Why (its `Display` is in words a user can act on).
        reason: Undecided,
    },
}

impl Outcome {
    /// The set, when decided.
    pub fn set(&self) -> Option<&DimSet> {
        match self {
            Outcome::Solved { set, .. } => Some(set),
            Outcome::Undecided { .. } => None,
        }
    }
}

/// The exact set of `x` in `domain` for which `guard` holds, with `x` the size named `var`.
///
/// A guard that raises at a value (a division by zero) does not hold there: the run-time check
/// would reject that size.
pub fn solve(guard: &Expr, var: &str, domain: &DimSet, limits: &Limits) -> Outcome {
    if let Some(e) = budget::expired() {
        return Outcome::Undecided {
            reason: Undecided::Exhausted(e),
        };
    }
    if let Some(other) = guard.atoms().into_iter().find(|a| &**a != var) {
        return Outcome::Undecided {
            reason: Undecided::OtherSize(other.to_string()),
        };
    }
    let (Some(lo), Some(hi)) = (domain.min(), domain.max()) else {
        return Outcome::Solved {
            set: DimSet::empty(),
            method: Method::Periodic { period: 1 },
        };
    };
    let n = domain.count();
    let mut periodic_limits = *limits;
    if limits.cost_based && n <= limits.enumeration {
        // The periodic method pays a rational piece evaluation per residue; compiled enumeration a
        // few integer operations per value: past n/16 residues enumeration is the cheaper exact way.
        let cap = i128::try_from(n / 16).unwrap_or(i128::MAX).max(64);
        periodic_limits.period = limits.period.min(cap);
    }
    let attempt =
        quasi_affine(guard, var).and_then(|()| periodic(guard, var, lo, hi, &periodic_limits));
    let because = match attempt {
        Ok((set, period)) => {
            return match set.intersect(domain) {
                Ok(set) if set.segments().len() > budget::pieces() => Outcome::Undecided {
                    reason: Undecided::Exhausted(budget::too_many_pieces()),
                },
                Ok(set) => Outcome::Solved {
                    set,
                    method: Method::Periodic { period },
                },
                Err(crate::Error::Exhausted(e)) => Outcome::Undecided {
                    reason: Undecided::Exhausted(e),
                },
                Err(e) => Outcome::Undecided {
                    reason: Undecided::Exact(e),
                },
            }
        }
        Err(Fail::Budget(e)) => {
            return Outcome::Undecided {
                reason: Undecided::Exhausted(e),
            }
        }
        Err(f) => f.reason(),
    };
    if n > limits.enumeration {
        return Outcome::Undecided {
            reason: Undecided::TooManyValues {
                because,
                values: n,
                limit: limits.enumeration,
            },
        };
    }
    match enumerate(guard, var, domain) {
        Ok(set) => Outcome::Solved {
            set,
            method: Method::Enumeration { values: n, because },
        },
        Err(reason) => Outcome::Undecided { reason },
    }
}

/// Evaluates `guard` at every member of `domain`.
///
/// A value where the guard raises (a division by zero) does not pass. Errors — with the reason to
/// report as undecided — when a value overflows even big-integer evaluation ([`crate::expr::MAX_BITS`]),
/// when the set would have more pieces than the budget allows, or when the time budget runs out.
pub fn enumerate(guard: &Expr, var: &str, domain: &DimSet) -> Result<DimSet, Undecided> {
    let fast = Compiled::new(guard, var);
    let max_runs = budget::pieces();
    let mut runs: Vec<Run> = Vec::new();
    let mut open: Option<Run> = None;
    let mut seen: u32 = 0;
    // A compiled guard costs nanoseconds a value: the deadline every 64 values. One the exact
    // evaluator runs can cost a millisecond a value (`(x ** 69) ** 30`): every value.
    let every: u32 = if fast.is_some() { 64 } else { 1 };
    let mut visit = |x: i128| -> Result<(), Undecided> {
        seen = seen.wrapping_add(1);
        if seen % every == 0 {
            if let Some(e) = budget::expired() {
                return Err(Undecided::Exhausted(e));
            }
        }
        let holds = match Compiled::truth_or_eval(fast.as_ref(), guard, var, x) {
            Ok(t) => t,
            Err(EvalError::Arith(ArithError::Overflow)) => {
                return Err(Undecided::Overflow {
                    at: x,
                    bits: crate::expr::MAX_BITS,
                })
            }
            // Python raises: the run-time check rejects the value.
            Err(_) => false,
        };
        if holds {
            match open.as_mut() {
                Some(r) if r.last + 1 == x => r.last = x,
                _ => {
                    if let Some(r) = open.take() {
                        if runs.len() >= max_runs {
                            return Err(Undecided::Exhausted(budget::too_many_pieces()));
                        }
                        runs.push(r);
                    }
                    open = Some(Run { first: x, last: x });
                }
            }
        }
        Ok(())
    };
    for seg in domain.segments() {
        if seg.modulus == 1 {
            // The common case, an interval: no residue bookkeeping per value.
            (seg.lo..=seg.hi).try_for_each(&mut visit)?;
        } else {
            DimSet::from_segments(vec![seg.clone()])
                .unwrap_or_default()
                .iter()
                .try_for_each(&mut visit)?;
        }
    }
    if let Some(r) = open {
        runs.push(r);
    }
    Ok(DimSet::from_sorted_runs(&runs))
}

/// A structural check, before any evaluation: true divisors and exponents must not depend on the
/// size. A floor divisor or modulus that does is evaluated piece by piece (its quotient is
/// piecewise constant, [`Ctx::by_quotient`]), and so is a product of size-dependent factors
/// (affine where all but one are constant); past those, the evaluation itself says why not.
fn quasi_affine(e: &Expr, var: &str) -> Result<(), Fail> {
    let dep = |x: &Expr| x.atoms().iter().any(|a| &**a == var);
    let mut bad: Option<&'static str> = None;
    e.visit(&mut |x| {
        if bad.is_some() {
            return;
        }
        bad = match x {
            Expr::TrueDiv(_, b) if dep(b) => Some("a division by the size"),
            Expr::Pow(_, b) if dep(b) => Some("an exponent that depends on the size"),
            // A product of two size-dependent terms is affine where all but one of them are
            // constant (`(x//2)*(x // (x//2))`: the quotient is): decided piece by piece.
            _ => None,
        };
    });
    bad.map_or(Ok(()), |w| Err(Fail::NotQuasiAffine(w)))
}

/// Why the periodic method stopped.
#[derive(Debug, Clone, PartialEq)]
enum Fail {
    /// The period must be multiplied by this factor.
    Period(i128),
    /// The guard is not quasi-affine.
    NotQuasiAffine(&'static str),
    /// Overflow or a division by zero.
    Arith(ArithError),
    /// A value is undefined (`oo - oo`, a boolean used as a number).
    Undefined(&'static str),
    /// The period would exceed the limit.
    PeriodLimit(i128),
    /// Too many affine pieces.
    Pieces,
    /// A work budget ran out.
    Budget(budget::Exhausted),
}

impl From<ArithError> for Fail {
    fn from(e: ArithError) -> Fail {
        Fail::Arith(e)
    }
}

impl Fail {
    /// The reason reported to users (a period request never escapes the periodic method).
    fn reason(&self) -> NotPeriodic {
        match *self {
            Fail::Period(p) | Fail::PeriodLimit(p) => NotPeriodic::PeriodLimit(p),
            Fail::NotQuasiAffine(what) => NotPeriodic::NotQuasiAffine(what),
            Fail::Arith(e) => NotPeriodic::Arith(e),
            Fail::Undefined(what) => NotPeriodic::Undefined(what),
            Fail::Pieces => NotPeriodic::Pieces,
            Fail::Budget(e) => NotPeriodic::Exhausted(e),
        }
    }
}

/// A value on a `k`-interval: `a*k + b`, or an infinity.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Pv {
    Lin(Q, Q),
    Inf(bool),
}

/// A `k`-interval and the value on it.
type Piece = (i128, i128, Pv);
/// Pieces covering an interval in order; most values are one piece, kept inline.
type Pieces = SmallVec<[Piece; 2]>;
/// Sorted, disjoint closed `k`-intervals.
type Ivs = Vec<(i128, i128)>;

fn periodic(
    guard: &Expr,
    var: &str,
    lo: i128,
    hi: i128,
    limits: &Limits,
) -> Result<(DimSet, i128), Fail> {
    let mut p: i128 = 1;
    loop {
        match residue_runs(guard, var, lo, hi, p, limits) {
            Ok(runs) => {
                return match DimSet::from_runs(p, &runs) {
                    Ok(set) => Ok((set, p)),
                    Err(crate::Error::Exhausted(e)) => Err(Fail::Budget(e)),
                    Err(_) => Err(Fail::Pieces),
                }
            }
            // A floor of a fractional slope: restart with a period that makes it integral.
            Err(Fail::Period(q)) => {
                p = p.checked_mul(q).ok_or(Fail::PeriodLimit(i128::MAX))?;
                if p > limits.period {
                    return Err(Fail::PeriodLimit(p));
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// One pass of the periodic method with period `p`: the runs of every residue class.
fn residue_runs(
    guard: &Expr,
    var: &str,
    lo: i128,
    hi: i128,
    p: i128,
    limits: &Limits,
) -> Result<Vec<(i128, Run)>, Fail> {
    let mut runs: Vec<(i128, Run)> = Vec::new();
    for r in 0..p {
        if r % 64 == 63 {
            if let Some(e) = budget::expired() {
                return Err(Fail::Budget(e));
            }
        }
        let klo = num::int_ceildiv(lo - r, p);
        let khi = Integer::div_floor(&(hi - r), &p);
        if klo > khi {
            continue;
        }
        let ctx = Ctx {
            var,
            p,
            r,
            limits,
            raised: RefCell::new(Vec::new()),
        };
        let holds = ctx.truth(guard, &[(klo, khi)])?;
        // Where any evaluated part raised (Python's ZeroDivisionError), the guard fails.
        let raised = normalize(ctx.raised.take());
        for (a, b) in subtract(&holds, &raised) {
            let first = p
                .checked_mul(a)
                .and_then(|v| v.checked_add(r))
                .ok_or(ArithError::Overflow)?;
            let last = p
                .checked_mul(b)
                .and_then(|v| v.checked_add(r))
                .ok_or(ArithError::Overflow)?;
            runs.push((r, Run { first, last }));
        }
    }
    Ok(runs)
}

struct Ctx<'a> {
    var: &'a str,
    p: i128,
    r: i128,
    limits: &'a Limits,
    /// `k`-intervals where an evaluated sub-expression raised (a constant zero divisor): the
    /// guard fails there whatever the rest evaluates to. Evaluation goes on with a placeholder.
    raised: RefCell<Ivs>,
}

fn lin_int(n: i128) -> Pv {
    Pv::Lin(Q::zero(), num::q(n))
}

impl Ctx<'_> {
    /// Records that evaluation raises on `[lo, hi]`; the placeholder value 0 lets the rest of
    /// the guard be evaluated (its outcome there no longer matters).
    fn raise(&self, lo: i128, hi: i128) -> Pieces {
        self.raised.borrow_mut().push((lo, hi));
        smallvec![(lo, hi, lin_int(0))]
    }

    fn check(&self, v: Pieces) -> Result<Pieces, Fail> {
        if v.len() > self.limits.pieces {
            Err(Fail::Pieces)
        } else {
            Ok(coalesce(v))
        }
    }

    /// The value of `e` on `[lo, hi]`, as pieces covering the interval in order.
    fn val(&self, e: &Expr, lo: i128, hi: i128) -> Result<Pieces, Fail> {
        let whole = |v: Pv| Ok(smallvec![(lo, hi, v)]);
        match e {
            Expr::Const(c) => whole(Pv::Lin(Q::zero(), *c)),
            Expr::Inf(s) => whole(Pv::Inf(*s)),
            Expr::Sym(a) => {
                debug_assert_eq!(&**a, self.var);
                whole(Pv::Lin(num::q(self.p), num::q(self.r)))
            }
            Expr::Bool(_) | Expr::Cmp(..) | Expr::And(_) | Expr::Or(_) | Expr::Not(_) => {
                // Python treats a boolean as 0/1 in arithmetic.
                let t = self.truth(e, &[(lo, hi)])?;
                Ok(split_by(&t, lo, hi)
                    .into_iter()
                    .map(|(a, b, inside)| (a, b, lin_int(inside as i128)))
                    .collect())
            }
            Expr::Add(v) => self.fold(v, lo, hi, |x, y| match (x, y) {
                (Pv::Inf(s), Pv::Inf(t)) if s != t => Err(Fail::Undefined("oo - oo")),
                (Pv::Inf(s), _) | (_, Pv::Inf(s)) => Ok(Pv::Inf(s)),
                (Pv::Lin(a, b), Pv::Lin(c, d)) => Ok(Pv::Lin(num::add(&a, &c)?, num::add(&b, &d)?)),
            }),
            Expr::Mul(v) => self.fold(v, lo, hi, mul_pv),
            Expr::Pow(a, b) => self.pow(a, b, lo, hi),
            Expr::TrueDiv(a, b) => self.true_div(a, b, lo, hi),
            Expr::FloorDiv(a, b) => self.floor_div(a, b, lo, hi),
            Expr::Mod(a, b) => self.modulo(a, b, lo, hi),
            Expr::Round(kind, a) => self.round(*kind, a, lo, hi),
            Expr::Min(v) | Expr::Max(v) => self.extremum(v, matches!(e, Expr::Max(_)), lo, hi),
            Expr::Abs(a) => self.abs(a, lo, hi),
            Expr::Ite(c, a, b) => {
                let t = self.truth(c, &[(lo, hi)])?;
                let mut out = Pieces::new();
                for (l, h, inside) in split_by(&t, lo, hi) {
                    out.extend(self.val(if inside { a } else { b }, l, h)?);
                }
                self.check(out)
            }
        }
    }

    /// `a ** b` on `[lo, hi]`: a constant power of a constant, or the size itself (exponent 1)
    /// or 1 (exponent 0); a power of the size is outside the quasi-affine method.
    fn pow(&self, a: &Expr, b: &Expr, lo: i128, hi: i128) -> Result<Pieces, Fail> {
        let (base, exp) = (self.val(a, lo, hi)?, self.val(b, lo, hi)?);
        self.zip(base, exp, |x, y| match (x, y) {
            (Pv::Lin(a0, b0), Pv::Lin(a1, b1)) if a1.is_zero() => {
                if a0.is_zero() {
                    let v = pow_values(&b0, &b1).map_err(|_| Fail::Undefined("power"))?;
                    Ok(Pv::Lin(Q::zero(), v))
                } else if b1 == num::q(1) {
                    Ok(Pv::Lin(a0, b0))
                } else if b1.is_zero() {
                    Ok(lin_int(1))
                } else {
                    Err(Fail::NotQuasiAffine("a power of the size"))
                }
            }
            (Pv::Lin(..), Pv::Lin(..)) => {
                Err(Fail::NotQuasiAffine("an exponent that depends on the size"))
            }
            _ => Err(Fail::Undefined("infinite power")),
        })
    }

    /// `a / b` on `[lo, hi]`, by a constant divisor (raising where it is zero).
    fn true_div(&self, a: &Expr, b: &Expr, lo: i128, hi: i128) -> Result<Pieces, Fail> {
        let (x, y) = (self.val(a, lo, hi)?, self.val(b, lo, hi)?);
        self.zip_split(x, y, |lo, hi, x, y| {
            let d = const_of(y, "a division by the size")?;
            if d.is_zero() {
                return Ok(self.raise(lo, hi));
            }
            Ok(smallvec![(
                lo,
                hi,
                match x {
                    Pv::Inf(s) => Pv::Inf(s == d.is_positive()),
                    Pv::Lin(a, b) => Pv::Lin(num::div(&a, &d)?, num::div(&b, &d)?),
                }
            )])
        })
    }

    /// `a // b` on `[lo, hi]`: by a constant divisor, rounded down piece by piece (raising where
    /// it is zero), or by a divisor that depends on the size through its quotient
    /// ([`Ctx::by_quotient`]).
    fn floor_div(&self, a: &Expr, b: &Expr, lo: i128, hi: i128) -> Result<Pieces, Fail> {
        let (x, y) = (self.val(a, lo, hi)?, self.val(b, lo, hi)?);
        self.zip_split(x, y, |lo, hi, x, y| {
            if varies(y) {
                return self.by_quotient(x, y, lo, hi, "a floor division by the size", |_, q| {
                    Ok(lin_int(q))
                });
            }
            let d = const_of(y, "a floor division by the size")?;
            if d.is_zero() {
                return Ok(self.raise(lo, hi));
            }
            match x {
                Pv::Inf(s) if !d.is_zero() => {
                    Ok(smallvec![(lo, hi, Pv::Inf(s == d.is_positive()))])
                }
                Pv::Inf(_) => Err(Fail::Arith(ArithError::DivisionByZero)),
                Pv::Lin(a, b) => {
                    let q = Pv::Lin(num::div(&a, &d)?, num::div(&b, &d)?);
                    Ok(smallvec![(lo, hi, round_pv(RoundKind::Floor, q, lo, hi)?)])
                }
            }
        })
    }

    /// `a % b` on `[lo, hi]` as `a - b * (a // b)`: by a constant divisor (raising where it is
    /// zero), or by one that depends on the size through its quotient ([`Ctx::by_quotient`]).
    fn modulo(&self, a: &Expr, b: &Expr, lo: i128, hi: i128) -> Result<Pieces, Fail> {
        let (x, y) = (self.val(a, lo, hi)?, self.val(b, lo, hi)?);
        self.zip_split(x, y, |lo, hi, x, y| {
            if varies(y) {
                // x % d == x - q*d where the quotient q is constant.
                return self.by_quotient(
                    x,
                    y,
                    lo,
                    hi,
                    "a modulus that depends on the size",
                    |(a, b, c, d), q| {
                        let q = num::q(q);
                        Ok(Pv::Lin(
                            num::sub(&a, &num::mul(&q, &c)?)?,
                            num::sub(&b, &num::mul(&q, &d)?)?,
                        ))
                    },
                );
            }
            let d = const_of(y, "a modulus that depends on the size")?;
            if d.is_zero() {
                return Ok(self.raise(lo, hi));
            }
            match x {
                Pv::Inf(_) => Err(Fail::Undefined("oo % d")),
                Pv::Lin(a, b) => {
                    // x % d == x - d * floor(x / d)
                    let q = Pv::Lin(num::div(&a, &d)?, num::div(&b, &d)?);
                    let Pv::Lin(fa, fb) = round_pv(RoundKind::Floor, q, lo, hi)? else {
                        unreachable!()
                    };
                    Ok(smallvec![(
                        lo,
                        hi,
                        Pv::Lin(
                            num::sub(&a, &num::mul(&d, &fa)?)?,
                            num::sub(&b, &num::mul(&d, &fb)?)?,
                        ),
                    )])
                }
            }
        })
    }

    /// `a` rounded by `kind` on `[lo, hi]` (toward zero: up where it is negative, down
    /// elsewhere).
    fn round(&self, kind: RoundKind, a: &Expr, lo: i128, hi: i128) -> Result<Pieces, Fail> {
        let x = self.val(a, lo, hi)?;
        let mut out = Pieces::new();
        for (l, h, v) in x {
            if kind == RoundKind::Trunc {
                // Toward zero: ceil on the negative part, floor elsewhere.
                for (sl, sh, ord) in sign_pieces(v, l, h)? {
                    let k = if ord == Ordering::Less {
                        RoundKind::Ceil
                    } else {
                        RoundKind::Floor
                    };
                    out.push((sl, sh, round_pv(k, v, sl, sh)?));
                }
            } else {
                out.push((l, h, round_pv(kind, v, l, h)?));
            }
        }
        self.check(out)
    }

    /// `max(v)` (`is_max`) or `min(v)` on `[lo, hi]`, folded pairwise where each side wins.
    fn extremum(&self, v: &[Expr], is_max: bool, lo: i128, hi: i128) -> Result<Pieces, Fail> {
        let want = if is_max {
            Ordering::Greater
        } else {
            Ordering::Less
        };
        let mut acc = self.val(&v[0], lo, hi)?;
        for item in &v[1..] {
            let y = self.val(item, lo, hi)?;
            acc = self.zip_split(acc, y, |l, h, x, y| {
                Ok(order_pieces(x, y, l, h)?
                    .into_iter()
                    .map(|(a, b, ord)| (a, b, if ord == want { x } else { y }))
                    .collect())
            })?;
        }
        Ok(acc)
    }

    /// `abs(a)` on `[lo, hi]`: negated where `a` is negative.
    fn abs(&self, a: &Expr, lo: i128, hi: i128) -> Result<Pieces, Fail> {
        let x = self.val(a, lo, hi)?;
        let mut out = Pieces::new();
        for (l, h, v) in x {
            match v {
                Pv::Inf(_) => out.push((l, h, Pv::Inf(true))),
                Pv::Lin(a, b) => {
                    for (sl, sh, ord) in sign_pieces(v, l, h)? {
                        let val = if ord == Ordering::Less {
                            Pv::Lin(num::neg(&a)?, num::neg(&b)?)
                        } else {
                            v
                        };
                        out.push((sl, sh, val));
                    }
                }
            }
        }
        self.check(out)
    }

    /// `f(x, q)` on `[lo, hi]` where `q = floor(x / d)` for a divisor `d` that depends on the
    /// size (`x // (x // 2)`, `x % (x // k)`). Where `d` keeps one sign, `x / d` is a ratio of
    /// two affine functions of `k`, monotone, so its floor is piecewise constant: it equals `q`
    /// exactly where `x - q*d` and `x - (q+1)*d` have the signs that say so, each in closed form
    /// (a run of `k` per value). Where `d` is zero, evaluation raises. A quotient that takes
    /// more than [`QUOTIENT_VALUES`] values on one piece is outside the method (`what` says why).
    /// `f` gets `x`'s and `d`'s coefficients `(a, b, c, d)` (`a*k + b`, `c*k + d`) and `q`.
    fn by_quotient(
        &self,
        x: Pv,
        d: Pv,
        lo: i128,
        hi: i128,
        what: &'static str,
        f: impl Fn((Q, Q, Q, Q), i128) -> Result<Pv, Fail>,
    ) -> Result<Pieces, Fail> {
        let (Pv::Lin(a, b), Pv::Lin(c, e)) = (x, d) else {
            return Err(Fail::Undefined("a quotient of oo"));
        };
        let at = |s: Q, t: Q, k: i128| -> Result<Q, Fail> {
            Ok(num::add(&num::mul(&s, &num::q(k))?, &t)?)
        };
        let mut out = Pieces::new();
        for (sl, sh, sign) in sign_pieces(d, lo, hi)? {
            if sign == Ordering::Equal {
                out.extend(self.raise(sl, sh));
                continue;
            }
            let end = |k: i128| -> Result<i128, Fail> {
                Ok(num::floor(&num::div(&at(a, b, k)?, &at(c, e, k)?)?))
            };
            let (q0, q1) = (end(sl)?, end(sh)?);
            let (qmin, qmax) = (q0.min(q1), q0.max(q1));
            if qmax - qmin >= QUOTIENT_VALUES {
                return Err(Fail::NotQuasiAffine(what));
            }
            let mut covered = 0i128;
            for q in qmin..=qmax {
                // x - q*d, as a value of k.
                let rest = |q: i128| -> Result<Pv, Fail> {
                    let q = num::q(q);
                    Ok(Pv::Lin(
                        num::sub(&a, &num::mul(&q, &c)?)?,
                        num::sub(&b, &num::mul(&q, &e)?)?,
                    ))
                };
                // floor(x/d) == q  <=>  q <= x/d < q+1; multiplied by d, the signs flip for d < 0.
                let (at_least, below) = if sign == Ordering::Greater {
                    (Ordering::Less, Ordering::Less)
                } else {
                    (Ordering::Greater, Ordering::Greater)
                };
                let keep = |v: Pv, drop: Ordering, want: Option<Ordering>| -> Result<Ivs, Fail> {
                    Ok(order_pieces(v, lin_int(0), sl, sh)?
                        .into_iter()
                        .filter(|p| p.2 != drop && want.is_none_or(|w| p.2 == w))
                        .map(|p| (p.0, p.1))
                        .collect())
                };
                // q*d <= x (d > 0): x - q*d is not negative; x < (q+1)*d: x - (q+1)*d is.
                let lower = keep(rest(q)?, at_least, None)?;
                let upper = keep(rest(q + 1)?, Ordering::Equal, Some(below))?;
                let both = subtract(&lower, &subtract(&lower, &upper));
                for (l, h) in both {
                    covered += h - l + 1;
                    out.push((l, h, f((a, b, c, e), q)?));
                }
            }
            if covered != sh - sl + 1 {
                // Never expected (the runs of the values partition the piece): not guessed.
                return Err(Fail::NotQuasiAffine(what));
            }
        }
        out.sort_by_key(|p| p.0);
        self.check(out)
    }

    fn fold(
        &self,
        items: &[Expr],
        lo: i128,
        hi: i128,
        f: impl Fn(Pv, Pv) -> Result<Pv, Fail> + Copy,
    ) -> Result<Pieces, Fail> {
        let mut acc = self.val(&items[0], lo, hi)?;
        for item in &items[1..] {
            let y = self.val(item, lo, hi)?;
            acc = self.zip(acc, y, f)?;
        }
        Ok(acc)
    }

    fn zip(
        &self,
        x: Pieces,
        y: Pieces,
        f: impl Fn(Pv, Pv) -> Result<Pv, Fail>,
    ) -> Result<Pieces, Fail> {
        self.zip_split(x, y, |l, h, a, b| Ok(smallvec![(l, h, f(a, b)?)]))
    }

    /// Walks two piece lists over the same interval together.
    fn zip_split(
        &self,
        x: Pieces,
        y: Pieces,
        f: impl Fn(i128, i128, Pv, Pv) -> Result<Pieces, Fail>,
    ) -> Result<Pieces, Fail> {
        let (mut i, mut j) = (0, 0);
        let mut out = Pieces::new();
        while i < x.len() && j < y.len() {
            let lo = x[i].0.max(y[j].0);
            let hi = x[i].1.min(y[j].1);
            if lo <= hi {
                out.extend(f(lo, hi, x[i].2, y[j].2)?);
            }
            if x[i].1 <= y[j].1 {
                i += 1;
            } else {
                j += 1;
            }
            if out.len() > self.limits.pieces {
                return Err(Fail::Pieces);
            }
        }
        self.check(out)
    }

    /// The sub-intervals of `ivs` where condition `e` holds.
    fn truth(&self, e: &Expr, ivs: &[(i128, i128)]) -> Result<Ivs, Fail> {
        if ivs.is_empty() {
            return Ok(vec![]);
        }
        match e {
            Expr::Bool(b) => Ok(if *b { ivs.to_vec() } else { vec![] }),
            Expr::And(items) => {
                // Python short-circuits: later operands are only evaluated where earlier hold.
                let mut t = ivs.to_vec();
                for item in items {
                    t = self.truth(item, &t)?;
                }
                Ok(t)
            }
            Expr::Or(items) => {
                let mut rest = ivs.to_vec();
                let mut yes = Vec::new();
                for item in items {
                    let t = self.truth(item, &rest)?;
                    rest = subtract(&rest, &t);
                    yes = union(&yes, &t);
                }
                Ok(yes)
            }
            Expr::Not(a) => Ok(subtract(ivs, &self.truth(a, ivs)?)),
            Expr::Ite(c, a, b) => {
                let tc = self.truth(c, ivs)?;
                let fc = subtract(ivs, &tc);
                Ok(union(&self.truth(a, &tc)?, &self.truth(b, &fc)?))
            }
            Expr::Cmp(op, a, b) => {
                let mut out = Vec::new();
                for &(lo, hi) in ivs {
                    let (x, y) = (self.val(a, lo, hi)?, self.val(b, lo, hi)?);
                    let ords = self.zip_split(x, y, |l, h, x, y| {
                        Ok(order_pieces(x, y, l, h)?
                            .into_iter()
                            .map(|(a, b, o)| (a, b, lin_int(op.holds(o) as i128)))
                            .collect())
                    })?;
                    out.extend(
                        ords.into_iter()
                            .filter(|p| p.2 == lin_int(1))
                            .map(|p| (p.0, p.1)),
                    );
                }
                Ok(normalize(out))
            }
            // Truthiness of a number: nonzero.
            other => self.truth(
                &Expr::Cmp(CmpOp::Ne, Box::new(other.clone()), Box::new(Expr::int(0))),
                ivs,
            ),
        }
    }
}

/// Values a quotient whose divisor depends on the size may take on one piece
/// ([`Ctx::by_quotient`]): `x // (x // k)` takes two or three.
const QUOTIENT_VALUES: i128 = 64;

/// Whether a value changes with `k` (a divisor that depends on the size).
fn varies(v: Pv) -> bool {
    matches!(v, Pv::Lin(a, _) if !a.is_zero())
}

fn const_of(v: Pv, what: &'static str) -> Result<Q, Fail> {
    match v {
        Pv::Lin(a, b) if a.is_zero() => Ok(b),
        Pv::Lin(..) => Err(Fail::NotQuasiAffine(what)),
        Pv::Inf(_) => Err(Fail::Undefined("division by oo")),
    }
}

fn mul_pv(x: Pv, y: Pv) -> Result<Pv, Fail> {
    match (x, y) {
        (Pv::Inf(s), Pv::Inf(t)) => Ok(Pv::Inf(s == t)),
        (Pv::Inf(s), Pv::Lin(a, b)) | (Pv::Lin(a, b), Pv::Inf(s)) => {
            if !a.is_zero() {
                Err(Fail::Undefined("oo times a size"))
            } else if b.is_zero() {
                Err(Fail::Undefined("0 * oo"))
            } else {
                Ok(Pv::Inf(s == b.is_positive()))
            }
        }
        (Pv::Lin(a, b), Pv::Lin(c, d)) => {
            if a.is_zero() {
                Ok(Pv::Lin(num::mul(&b, &c)?, num::mul(&b, &d)?))
            } else if c.is_zero() {
                Ok(Pv::Lin(num::mul(&a, &d)?, num::mul(&b, &d)?))
            } else {
                Err(Fail::NotQuasiAffine(
                    "a product of two size-dependent terms",
                ))
            }
        }
    }
}

/// `floor`/`ceil`/`round` of `a*k + b` on `[lo, hi]`: affine when `a` is an integer (even, for
/// round-half-even on a tie), otherwise the period must grow.
fn round_pv(kind: RoundKind, v: Pv, lo: i128, hi: i128) -> Result<Pv, Fail> {
    let Pv::Lin(a, b) = v else { return Ok(v) };
    if lo == hi {
        let x = num::add(&num::mul(&a, &num::q(lo))?, &b)?;
        return Ok(lin_int(kind.apply(&x)));
    }
    if !a.is_integer() {
        return Err(Fail::Period(*a.denom()));
    }
    if kind == RoundKind::HalfEven
        && b - num::q(num::floor(&b)) == Q::new(1, 2)
        && a.numer().is_odd()
    {
        return Err(Fail::Period(2));
    }
    // With an integer slope, rounding commutes with adding a*k. Trunc never gets here: it is
    // split by sign first and becomes ceil or floor on each side.
    debug_assert!(kind != RoundKind::Trunc);
    Ok(Pv::Lin(a, num::q(kind.apply(&b))))
}

/// Sub-intervals of `[lo, hi]` where `v` is negative, zero and positive.
fn sign_pieces(v: Pv, lo: i128, hi: i128) -> Result<Vec<(i128, i128, Ordering)>, Fail> {
    order_pieces(v, Pv::Lin(Q::zero(), Q::zero()), lo, hi)
}

/// Sub-intervals of `[lo, hi]` with the ordering of `x` against `y` on each.
fn order_pieces(x: Pv, y: Pv, lo: i128, hi: i128) -> Result<Vec<(i128, i128, Ordering)>, Fail> {
    let (a, b) = match (x, y) {
        (Pv::Inf(s), Pv::Inf(t)) => return Ok(vec![(lo, hi, s.cmp(&t))]),
        (Pv::Inf(s), _) => {
            return Ok(vec![(
                lo,
                hi,
                if s { Ordering::Greater } else { Ordering::Less },
            )])
        }
        (_, Pv::Inf(t)) => {
            return Ok(vec![(
                lo,
                hi,
                if t { Ordering::Less } else { Ordering::Greater },
            )])
        }
        (Pv::Lin(a, b), Pv::Lin(c, d)) => (num::sub(&a, &c)?, num::sub(&b, &d)?),
    };
    if a.is_zero() {
        return Ok(vec![(lo, hi, b.cmp(&Q::zero()))]);
    }
    // a*k + b crosses zero at t = -b / a.
    let t = num::div(&num::neg(&b)?, &a)?;
    let below_end = num::ceil(&t) - 1; // k <= below_end  <=>  k < t
    let above_start = num::floor(&t) + 1; // k >= above_start  <=>  k > t
    let (left, right) = if a.is_positive() {
        (Ordering::Less, Ordering::Greater)
    } else {
        (Ordering::Greater, Ordering::Less)
    };
    let mut out = Vec::with_capacity(3);
    let mut push = |l: i128, h: i128, o: Ordering| {
        let (l, h) = (l.max(lo), h.min(hi));
        if l <= h {
            out.push((l, h, o));
        }
    };
    push(lo, below_end, left);
    if t.is_integer() {
        push(*t.numer(), *t.numer(), Ordering::Equal);
    }
    push(above_start, hi, right);
    Ok(out)
}

/// Merges neighbouring pieces with equal values.
fn coalesce(v: Pieces) -> Pieces {
    let mut out: Pieces = Pieces::with_capacity(v.len());
    for p in v {
        match out.last_mut() {
            Some(last) if last.2 == p.2 && last.1.checked_add(1) == Some(p.0) => last.1 = p.1,
            _ => out.push(p),
        }
    }
    out
}

fn normalize(mut v: Ivs) -> Ivs {
    v.sort_unstable();
    let mut out: Ivs = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

fn union(a: &Ivs, b: &Ivs) -> Ivs {
    normalize(a.iter().chain(b.iter()).copied().collect())
}

/// `a \ b` for sorted disjoint interval lists.
fn subtract(a: &[(i128, i128)], b: &[(i128, i128)]) -> Ivs {
    let mut out = Vec::new();
    for &(mut lo, hi) in a {
        for &(bl, bh) in b {
            if bh < lo || bl > hi {
                continue;
            }
            if bl > lo {
                out.push((lo, bl - 1));
            }
            lo = bh.saturating_add(1);
            if lo > hi {
                break;
            }
        }
        if lo <= hi {
            out.push((lo, hi));
        }
    }
    out
}

/// `[lo, hi]` cut into pieces inside and outside the sorted intervals `t`.
fn split_by(t: &[(i128, i128)], lo: i128, hi: i128) -> Vec<(i128, i128, bool)> {
    let mut out = Vec::new();
    let mut cur = lo;
    for &(a, b) in t {
        let (a, b) = (a.max(lo), b.min(hi));
        if a > b {
            continue;
        }
        if a > cur {
            out.push((cur, a - 1, false));
        }
        out.push((a, b, true));
        cur = b.saturating_add(1);
    }
    if cur <= hi {
        out.push((cur, hi, false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;

    const X: &str = "L['x'].size()[2]";

    fn solve_text(g: &str, lo: i128, hi: i128) -> Outcome {
        let guard = parse_guard(g).unwrap();
        solve(&guard, X, &DimSet::interval(lo, hi), &Limits::default())
    }

    fn check_against_brute(g: &str, lo: i128, hi: i128) {
        let guard = parse_guard(g).unwrap();
        let out = solve(&guard, X, &DimSet::interval(lo, hi), &Limits::default());
        let set = out.set().expect("decided");
        for x in lo..=hi {
            assert_eq!(set.contains(x), guard.holds_at(X, x), "{g} at {x}");
        }
    }

    #[test]
    fn raft_seed_guard_is_mod_8() {
        let g = "Eq(Mod(((L['x'].size()[2] - 1)//4) - 1, 2), 0)";
        let out = solve_text(g, 135, 2160);
        let Outcome::Solved { set, method } = out else {
            panic!()
        };
        assert_eq!(method, Method::Periodic { period: 8 });
        assert_eq!(set.segments().len(), 1);
        assert_eq!(set.segments()[0].modulus, 8);
        assert_eq!(set.segments()[0].residues, vec![0, 5, 6, 7]);
        assert_eq!(set.count(), 1014);
        check_against_brute(g, 135, 2160);
    }

    #[test]
    fn width_does_not_matter() {
        let g = "Eq(Mod(((L['x'].size()[2] - 1)//4) - 1, 2), 0)";
        let Outcome::Solved { set, .. } = solve_text(g, 2, 1 << 62) else {
            panic!()
        };
        assert_eq!(set.segments().len(), 1);
        assert_eq!(set.max(), Some(1 << 62)); // 2^62 = 0 mod 8
                                              // Classes 5, 6, 7 hold 2^59 values each below 2^62; class 0 holds 8..=2^62.
        assert_eq!(set.count(), 4 * (1u128 << 59));
    }

    #[test]
    fn piecewise_linear_functions() {
        for g in [
            "min(L['x'].size()[2], 100) + max(2*L['x'].size()[2] - 50, 7) > 160",
            "abs(L['x'].size()[2] - 60) <= 20",
            "math.trunc(0.5*torch.sym_float(L['x'].size()[2] - 40)) == (L['x'].size()[2] - 40) // 2",
            "round(L['x'].size()[2] / 2) % 2 == 0",
            "math.ceil(L['x'].size()[2] / 3) * 3 - L['x'].size()[2] == 1",
            "(L['x'].size()[2] if L['x'].size()[2] > 50 else 100 - L['x'].size()[2]) % 7 != 3",
            "Min(9223372036854775807, L['x'].size()[2]) == L['x'].size()[2]",
            "L['x'].size()[2] < oo",
            "not (L['x'].size()[2] % 3 == 0 or L['x'].size()[2] % 5 == 0)",
        ] {
            check_against_brute(g, -100, 200);
        }
    }

    #[test]
    fn non_quasi_affine_guards_are_enumerated_or_undecided() {
        let g = "L['x'].size()[2] * L['x'].size()[2] > 400";
        let Outcome::Solved { method, .. } = solve_text(g, -50, 50) else {
            panic!()
        };
        assert!(matches!(method, Method::Enumeration { values: 101, .. }));
        check_against_brute(g, -50, 50);
        let out = solve_text("L['x'].size()[2] ** 2 % 7 == 1", 3, 1 << 40);
        assert!(matches!(out, Outcome::Undecided { .. }), "{out:?}");
    }

    /// A divisor or modulus that depends on the size (`x % (x//k)`, `x // (x//k)`, `1 % (96*(x
    /// // 4))`): the quotient is piecewise constant, each run in closed form, over any width.
    #[test]
    fn quotients_by_the_size_are_periodic() {
        for g in [
            "(1 % (96*(L['x'].size()[2] // 4))) != 0",
            "L['x'].size()[2] % (L['x'].size()[2] - 1) == 0",
            "(L['x'].size()[2] % (L['x'].size()[2] // 2)) == 0",
            "(L['x'].size()[2] // (L['x'].size()[2] // 2)) == 2",
            "(L['x'].size()[2] // (L['x'].size()[2] // 3)) != 3",
            "((L['x'].size()[2] + 5) % (2*L['x'].size()[2] // 3 - 4)) > 2",
            "(L['x'].size()[2] // (7 - L['x'].size()[2] // 5)) >= -1",
            "(L['x'].size()[2] // 2)*(L['x'].size()[2] // (L['x'].size()[2] // 2)) == L['x'].size()[2]",
        ] {
            check_against_brute(g, -60, 300);
            let out = solve_text(g, 60, 1 << 62);
            assert!(
                matches!(out, Outcome::Solved { method: Method::Periodic { .. }, .. }),
                "{g}: {out:?}"
            );
        }
        // Even sizes from 2: x % (x//2) == 0 (x = 3: 3 % 1 == 0 too).
        let Outcome::Solved { set, .. } = solve_text(
            "(L['x'].size()[2] % (L['x'].size()[2] // 2)) == 0",
            2,
            1 << 62,
        ) else {
            panic!()
        };
        assert_eq!(set.count(), (1u128 << 61) + 1);
    }

    #[test]
    fn guards_on_other_sizes_are_not_guessed() {
        let out = solve_text("L['x'].size()[2] == L['y'].size()[2]", 2, 10);
        assert!(matches!(out, Outcome::Undecided { .. }));
    }

    #[test]
    fn division_by_zero_fails_the_value() {
        let g = parse_guard("L['x'].size()[2] // 0 > 1").unwrap();
        let out = solve(&g, X, &DimSet::interval(0, 10), &Limits::default());
        assert_eq!(out.set().unwrap().count(), 0);
    }

    #[test]
    fn i64_extremes_do_not_overflow() {
        let big = i64::MAX as i128;
        check_against_brute(
            "(9223372036854775807 - L['x'].size()[2]) // 3 >= 5",
            big - 100,
            big,
        );
        check_against_brute("L['x'].size()[2] * 4 % 7 == 2", big - 100, big);
    }
}
