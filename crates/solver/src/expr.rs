//! Concrete evaluation and printing of [`Expr`].
//!
//! Evaluation is the *oracle*: it follows Python's semantics value by value, with no cleverness.
//! The periodic engine (`engine.rs`) is tested against it, and every suggestion is re-checked
//! with it when the suggestion is small enough to enumerate.

use crate::num::{self, ArithError, ArithResult, Q};
use crate::types::{Atom, CmpOp, Expr, RoundKind};
use num_bigint::BigInt;
use num_integer::Integer;
use num_rational::Ratio;
use num_traits::{Signed, ToPrimitive, Zero};
use std::collections::BTreeSet;
use std::fmt;

/// The value of an expression at a point, over the exact number type `N`.
#[derive(Debug, Clone, PartialEq)]
pub enum Val<N> {
    /// An exact number.
    Num(N),
    /// `+oo` (`true`) or `-oo`.
    Inf(bool),
    /// A truth value.
    Bool(bool),
}

/// The value of an expression at a point, as a 128-bit rational.
pub type Value = Val<Q>;

/// Why an expression has no value at a point.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// Overflow or division by zero.
    #[error(transparent)]
    Arith(#[from] ArithError),
    /// A size the environment does not give a value for.
    #[error("no value for `{0}`")]
    Unbound(String),
    /// A boolean used as a number, or the reverse.
    #[error("type error: {0}")]
    Type(&'static str),
    /// `oo - oo`, `0 * oo`, a non-integer power, ...
    #[error("undefined: {0}")]
    Undefined(&'static str),
}

/// Largest intermediate value (numerator plus denominator bits) the exact evaluator computes
/// with: Python's integers are unbounded, so a value past 128 bits is recomputed with big
/// integers up to this size; beyond it evaluation stops with [`ArithError::Overflow`] (an
/// honest "cannot decide", never a guessed truth value).
pub const MAX_BITS: u64 = 1 << 16;

/// The exact numbers the evaluator computes with: 128-bit rationals first (fast), big rationals
/// when a value outgrows them.
trait Exact: Clone + Ord + Sized {
    fn from_q(q: &Q) -> Self;
    fn plus(&self, o: &Self) -> ArithResult<Self>;
    fn times(&self, o: &Self) -> ArithResult<Self>;
    fn over(&self, o: &Self) -> ArithResult<Self>;
    fn fdiv(&self, o: &Self) -> ArithResult<Self>;
    fn fmod(&self, o: &Self) -> ArithResult<Self>;
    fn absv(&self) -> ArithResult<Self>;
    fn rounded(&self, k: RoundKind) -> ArithResult<Self>;
    fn power(&self, e: &Self) -> Result<Self, EvalError>;
    fn big(&self) -> BigQ;
    fn zero(&self) -> bool;
    fn positive(&self) -> bool;
}

impl Exact for Q {
    fn from_q(q: &Q) -> Q {
        *q
    }
    fn plus(&self, o: &Q) -> ArithResult<Q> {
        num::add(self, o)
    }
    fn times(&self, o: &Q) -> ArithResult<Q> {
        num::mul(self, o)
    }
    fn over(&self, o: &Q) -> ArithResult<Q> {
        num::div(self, o)
    }
    fn fdiv(&self, o: &Q) -> ArithResult<Q> {
        num::floordiv(self, o)
    }
    fn fmod(&self, o: &Q) -> ArithResult<Q> {
        num::pymod(self, o)
    }
    fn absv(&self) -> ArithResult<Q> {
        if self.is_negative() {
            num::neg(self)
        } else {
            Ok(*self)
        }
    }
    fn rounded(&self, k: RoundKind) -> ArithResult<Q> {
        Ok(num::q(k.apply(self)))
    }
    fn power(&self, e: &Q) -> Result<Q, EvalError> {
        pow_values(self, e)
    }
    fn big(&self) -> BigQ {
        BigQ::from_q(self)
    }
    fn zero(&self) -> bool {
        Zero::is_zero(self)
    }
    fn positive(&self) -> bool {
        Signed::is_positive(self)
    }
}

/// A big rational.
type BigQ = Ratio<BigInt>;

fn fits(v: BigQ) -> ArithResult<BigQ> {
    if v.numer().bits() + v.denom().bits() > MAX_BITS {
        Err(ArithError::Overflow)
    } else {
        Ok(v)
    }
}

/// Integer results skip `Ratio`'s gcd normalization (a binary gcd against 1 costs quadratic
/// time in the bits of a big integer).
fn both_int(a: &BigQ, b: &BigQ) -> bool {
    a.is_integer() && b.is_integer()
}

impl Exact for BigQ {
    fn from_q(q: &Q) -> BigQ {
        BigQ::new_raw(BigInt::from(*q.numer()), BigInt::from(*q.denom()))
    }
    fn plus(&self, o: &BigQ) -> ArithResult<BigQ> {
        if both_int(self, o) {
            return fits(BigQ::from_integer(self.numer() + o.numer()));
        }
        fits(self + o)
    }
    fn times(&self, o: &BigQ) -> ArithResult<BigQ> {
        if both_int(self, o) {
            return fits(BigQ::from_integer(self.numer() * o.numer()));
        }
        fits(self * o)
    }
    fn over(&self, o: &BigQ) -> ArithResult<BigQ> {
        if Zero::is_zero(o) {
            return Err(ArithError::DivisionByZero);
        }
        fits(self / o)
    }
    fn fdiv(&self, o: &BigQ) -> ArithResult<BigQ> {
        if both_int(self, o) {
            if Zero::is_zero(o.numer()) {
                return Err(ArithError::DivisionByZero);
            }
            return Ok(BigQ::from_integer(self.numer().div_floor(o.numer())));
        }
        Ok(self.over(o)?.floor())
    }
    fn fmod(&self, o: &BigQ) -> ArithResult<BigQ> {
        if both_int(self, o) {
            if Zero::is_zero(o.numer()) {
                return Err(ArithError::DivisionByZero);
            }
            return Ok(BigQ::from_integer(self.numer().mod_floor(o.numer())));
        }
        let fq = self.fdiv(o)?;
        fits(self - o * fq)
    }
    fn absv(&self) -> ArithResult<BigQ> {
        Ok(Signed::abs(self))
    }
    fn rounded(&self, k: RoundKind) -> ArithResult<BigQ> {
        Ok(match k {
            RoundKind::Floor => self.floor(),
            RoundKind::Ceil => self.ceil(),
            RoundKind::Trunc => self.trunc(),
            RoundKind::HalfEven => {
                let f = self.floor();
                let half = BigQ::new(BigInt::from(1), BigInt::from(2));
                match (self - &f).cmp(&half) {
                    std::cmp::Ordering::Less => f,
                    std::cmp::Ordering::Greater => f + BigInt::from(1),
                    std::cmp::Ordering::Equal if f.numer().is_even() => f,
                    std::cmp::Ordering::Equal => f + BigInt::from(1),
                }
            }
        })
    }
    fn power(&self, e: &BigQ) -> Result<BigQ, EvalError> {
        if !e.is_integer() {
            return Err(EvalError::Undefined("non-integer power"));
        }
        if Zero::is_zero(self) && e.is_negative() {
            return Err(ArithError::DivisionByZero.into());
        }
        let trivial = Zero::is_zero(self) || Signed::abs(self) == BigQ::from_integer(1.into());
        let bits = self.numer().bits() + self.denom().bits();
        let mag = e.numer().magnitude();
        if !trivial && mag.bits() > 32 {
            return Err(ArithError::Overflow.into());
        }
        let m = u32::try_from(mag).unwrap_or(u32::MAX);
        if !trivial && bits.saturating_mul(m as u64) > MAX_BITS {
            return Err(ArithError::Overflow.into());
        }
        let p = if self.is_integer() {
            BigQ::from_integer(num_traits::pow(self.numer().clone(), m as usize))
        } else {
            num_traits::pow(self.clone(), m as usize)
        };
        Ok(if e.is_negative() { p.recip() } else { p })
    }
    fn big(&self) -> BigQ {
        self.clone()
    }
    fn zero(&self) -> bool {
        Zero::is_zero(self)
    }
    fn positive(&self) -> bool {
        Signed::is_positive(self)
    }
}

// The methods are private; the bound only names the evaluator's number types.
#[allow(private_bounds)]
impl<N: Exact> Val<N> {
    /// The value as a number. Python's `bool` is an `int`: `True` is 1 and `False` is 0 in
    /// arithmetic (`-(a != b)`, `(c) + 0`, `abs(c)`).
    fn num(self) -> Result<N, EvalError> {
        match self {
            Val::Num(v) => Ok(v),
            Val::Inf(_) => Err(EvalError::Undefined("infinite operand")),
            Val::Bool(b) => Ok(N::from_q(&num::q(b as i128))),
        }
    }

    /// Python truthiness (`if value:`).
    pub fn truth(self) -> Result<bool, EvalError> {
        match self {
            Val::Bool(b) => Ok(b),
            // Python truthiness of a number, as in `if x % 2:`.
            Val::Num(v) => Ok(!v.zero()),
            Val::Inf(_) => Ok(true),
        }
    }

    /// Total order on numbers and infinities.
    fn cmp_key(&self) -> (i8, Option<N>) {
        match self {
            Val::Num(v) => (0, Some(v.clone())),
            Val::Inf(true) => (1, None),
            Val::Inf(false) => (-1, None),
            Val::Bool(b) => (0, Some(N::from_q(&num::q(*b as i128)))),
        }
    }
}

impl CmpOp {
    /// Applies the comparison to an ordering.
    pub fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            CmpOp::Eq => ord == Equal,
            CmpOp::Ne => ord != Equal,
            CmpOp::Lt => ord == Less,
            CmpOp::Le => ord != Greater,
            CmpOp::Gt => ord == Greater,
            CmpOp::Ge => ord != Less,
        }
    }

    /// Python operator text.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "==",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

impl RoundKind {
    /// Rounds an exact rational.
    pub fn apply(self, v: &Q) -> i128 {
        match self {
            RoundKind::Floor => num::floor(v),
            RoundKind::Ceil => num::ceil(v),
            RoundKind::Trunc => num::trunc(v),
            RoundKind::HalfEven => num::round_half_even(v),
        }
    }

    fn python(self) -> &'static str {
        match self {
            RoundKind::Floor => "math.floor",
            RoundKind::Ceil => "math.ceil",
            RoundKind::Trunc => "math.trunc",
            RoundKind::HalfEven => "round",
        }
    }
}

impl Expr {
    /// An integer constant.
    pub fn int(n: i128) -> Expr {
        Expr::Const(num::q(n))
    }

    /// A size.
    pub fn sym(name: &str) -> Expr {
        Expr::Sym(Atom::from(name))
    }

    /// Whether this expression is boolean-valued (a condition).
    pub fn is_bool(&self) -> bool {
        match self {
            Expr::Bool(_) | Expr::Cmp(..) | Expr::And(_) | Expr::Or(_) | Expr::Not(_) => true,
            Expr::Ite(_, a, b) => a.is_bool() && b.is_bool(),
            _ => false,
        }
    }

    /// Every size the expression mentions, sorted.
    pub fn atoms(&self) -> BTreeSet<Atom> {
        let mut out = BTreeSet::new();
        self.visit(&mut |e| {
            if let Expr::Sym(a) = e {
                out.insert(a.clone());
            }
        });
        out
    }

    /// Calls `f` on every sub-expression, parents first.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Const(_) | Expr::Inf(_) | Expr::Bool(_) | Expr::Sym(_) => {}
            Expr::Add(v)
            | Expr::Mul(v)
            | Expr::Min(v)
            | Expr::Max(v)
            | Expr::And(v)
            | Expr::Or(v) => v.iter().for_each(|e| e.visit(f)),
            Expr::Pow(a, b)
            | Expr::TrueDiv(a, b)
            | Expr::FloorDiv(a, b)
            | Expr::Mod(a, b)
            | Expr::Cmp(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Round(_, a) | Expr::Abs(a) | Expr::Not(a) => a.visit(f),
            Expr::Ite(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
        }
    }

    /// Number of nodes.
    pub fn size(&self) -> usize {
        let mut n = 0;
        self.visit(&mut |_| n += 1);
        n
    }

    /// The value at `env` when it is an integer; `None` where evaluating raises, overflows,
    /// needs a size `env` does not give, or gives a fraction or a truth value.
    pub fn int_at(&self, env: &dyn Fn(&str) -> Option<i128>) -> Option<i128> {
        match self.eval(env) {
            Ok(Val::Num(q)) if q.is_integer() => Some(*q.numer()),
            _ => None,
        }
    }

    /// Evaluates with `env` giving each size's value. An intermediate value past 128 bits is
    /// recomputed exactly with big integers; the result is an [`ArithError::Overflow`] only when
    /// the *result* does not fit, or an intermediate value exceeds [`MAX_BITS`].
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i128>) -> Result<Value, EvalError> {
        match eval_in::<Q>(self, env) {
            Err(EvalError::Arith(ArithError::Overflow)) => match eval_in::<BigQ>(self, env)? {
                Val::Num(v) => {
                    let (n, d) = (v.numer().to_i128(), v.denom().to_i128());
                    match (n, d) {
                        (Some(n), Some(d)) => Ok(Val::Num(Q::new(n, d))),
                        _ => Err(ArithError::Overflow.into()),
                    }
                }
                Val::Inf(s) => Ok(Val::Inf(s)),
                Val::Bool(b) => Ok(Val::Bool(b)),
            },
            r => r,
        }
    }

    /// The truth of a guard with `env` giving each size's value, or why it has none: a division
    /// by zero (Python raises: the guard fails), or an [`ArithError::Overflow`] past
    /// [`MAX_BITS`] (undecidable here; never counted as a failure or a pass).
    pub fn truth(&self, env: &dyn Fn(&str) -> Option<i128>) -> Result<bool, EvalError> {
        match eval_in::<Q>(self, env).and_then(Val::truth) {
            Err(EvalError::Arith(ArithError::Overflow)) => {
                eval_in::<BigQ>(self, env).and_then(Val::truth)
            }
            r => r,
        }
    }

    /// Evaluates a guard at `x` for the single size `var`. A guard that raises (division by zero)
    /// or overflows counts as failing: the run-time check would not let the value through.
    /// Where overflow must not count as failing, use [`Expr::truth_at`].
    pub fn holds_at(&self, var: &str, x: i128) -> bool {
        matches!(self.truth_at(var, x), Ok(true))
    }

    /// The truth of a guard at `x` for the single size `var`, or why it has none (see
    /// [`Expr::truth`]).
    pub fn truth_at(&self, var: &str, x: i128) -> Result<bool, EvalError> {
        self.truth(&|a: &str| (a == var).then_some(x))
    }
}

type EvalResult<N> = Result<Val<N>, EvalError>;

/// Python's evaluation over the number type `N`.
fn eval_in<N: Exact>(e: &Expr, env: &dyn Fn(&str) -> Option<i128>) -> EvalResult<N> {
    let ev = |x: &Expr| eval_in::<N>(x, env);
    Ok(match e {
        Expr::Const(c) => Val::Num(N::from_q(c)),
        Expr::Inf(s) => Val::Inf(*s),
        Expr::Bool(b) => Val::Bool(*b),
        Expr::Sym(a) => Val::Num(N::from_q(&num::q(
            env(a).ok_or_else(|| EvalError::Unbound(a.to_string()))?,
        ))),
        Expr::Add(v) => {
            let mut acc = Val::Num(N::from_q(&num::q(0)));
            for x in v {
                acc = add_values(acc, ev(x)?)?;
            }
            acc
        }
        Expr::Mul(v) => {
            let mut acc = Val::Num(N::from_q(&num::q(1)));
            for x in v {
                acc = mul_values(acc, ev(x)?)?;
            }
            acc
        }
        Expr::Pow(a, b) => {
            let base = ev(a)?.num()?;
            let exp = ev(b)?.num()?;
            Val::Num(base.power(&exp)?)
        }
        Expr::TrueDiv(a, b) | Expr::FloorDiv(a, b) => {
            let floor = matches!(e, Expr::FloorDiv(..));
            match (ev(a)?, ev(b)?) {
                (Val::Inf(s), Val::Num(d)) if !d.zero() => Val::Inf(s == d.positive()),
                (x, y) if floor => Val::Num(x.num()?.fdiv(&y.num()?)?),
                (x, y) => Val::Num(x.num()?.over(&y.num()?)?),
            }
        }
        Expr::Mod(a, b) => Val::Num(ev(a)?.num()?.fmod(&ev(b)?.num()?)?),
        Expr::Round(k, a) => match fractional_power(a) {
            Some((base, p, q)) => {
                Val::Num(N::from_q(&num::q(Root::of(ev(base)?, p, q)?.rounded(*k))))
            }
            None => match ev(a)? {
                Val::Inf(s) => Val::Inf(s),
                v => Val::Num(v.num()?.rounded(*k)?),
            },
        },
        Expr::Min(v) | Expr::Max(v) => {
            let want_max = matches!(e, Expr::Max(_));
            let mut best: Option<Val<N>> = None;
            for x in v {
                let x = ev(x)?;
                best = Some(match best {
                    None => x,
                    Some(b) => {
                        let ord = x.cmp_key().cmp(&b.cmp_key());
                        let take = if want_max { ord.is_gt() } else { ord.is_lt() };
                        if take {
                            x
                        } else {
                            b
                        }
                    }
                });
            }
            best.ok_or(EvalError::Undefined("min/max of nothing"))?
        }
        Expr::Abs(a) => match ev(a)? {
            Val::Inf(_) => Val::Inf(true),
            v => Val::Num(v.num()?.absv()?),
        },
        Expr::Cmp(op, a, b) => match (fractional_power(a), fractional_power(b)) {
            (Some((base, p, q)), None) => {
                Val::Bool(op.holds(Root::of(ev(base)?, p, q)?.cmp_with(ev(b)?)?))
            }
            (None, Some((base, p, q))) => {
                Val::Bool(op.holds(Root::of(ev(base)?, p, q)?.cmp_with(ev(a)?)?.reverse()))
            }
            _ => {
                let (x, y) = (ev(a)?, ev(b)?);
                Val::Bool(op.holds(x.cmp_key().cmp(&y.cmp_key())))
            }
        },
        Expr::And(v) => {
            for x in v {
                if !ev(x)?.truth()? {
                    return Ok(Val::Bool(false));
                }
            }
            Val::Bool(true)
        }
        Expr::Or(v) => {
            for x in v {
                if ev(x)?.truth()? {
                    return Ok(Val::Bool(true));
                }
            }
            Val::Bool(false)
        }
        Expr::Not(a) => Val::Bool(!ev(a)?.truth()?),
        Expr::Ite(c, a, b) => {
            if ev(c)?.truth()? {
                ev(a)?
            } else {
                ev(b)?
            }
        }
    })
}

fn add_values<N: Exact>(a: Val<N>, b: Val<N>) -> EvalResult<N> {
    match (a, b) {
        (Val::Inf(s), Val::Inf(t)) if s != t => Err(EvalError::Undefined("oo - oo")),
        (Val::Inf(s), _) | (_, Val::Inf(s)) => Ok(Val::Inf(s)),
        (a, b) => Ok(Val::Num(a.num()?.plus(&b.num()?)?)),
    }
}

fn mul_values<N: Exact>(a: Val<N>, b: Val<N>) -> EvalResult<N> {
    match (a, b) {
        (Val::Inf(s), Val::Inf(t)) => Ok(Val::Inf(s == t)),
        (Val::Inf(s), Val::Num(c)) | (Val::Num(c), Val::Inf(s)) => {
            if c.zero() {
                Err(EvalError::Undefined("0 * oo"))
            } else {
                Ok(Val::Inf(s == c.positive()))
            }
        }
        (a, b) => Ok(Val::Num(a.num()?.times(&b.num()?)?)),
    }
}

/// A power with a fractional exponent `p/q` (`x ** 0.5`, `x ** 1.5`, `sym_sqrt(x)`): its base,
/// `p` and `q`, for `0 < p <= 64` and `q` a power of two up to 64 (such an exponent is exact as a
/// Python float). Its value is irrational in general: the evaluator decides it only under a
/// rounding or in a comparison with an integer ([`Root`]).
fn fractional_power(e: &Expr) -> Option<(&Expr, u32, u32)> {
    let Expr::Pow(base, exp) = e else {
        return None;
    };
    let Expr::Const(c) = &**exp else {
        return None;
    };
    let (p, q) = (*c.numer(), *c.denom());
    let ok = q > 1 && q <= 64 && (q as u128).is_power_of_two() && (1..=64).contains(&p);
    ok.then_some((&**base, p as u32, q as u32))
}

/// Largest bit length of `y = base**p` whose root `y ** (1/q)` the evaluator decides. Below
/// it, an irrational root lies farther from every integer (`|y**(1/q) - n| >= 1 / (q *
/// y**((q-1)/q))`) than twice the unit in the last place of a float of its size, so Python's
/// float power (within one unit of the exact root; exact where the root is an integer, as
/// IEEE `sqrt` and glibc's `pow` are) rounds, and compares with an integer, as the exact root
/// does. Past it, floats may round across an integer: undefined, never guessed.
pub const ROOT_ARGUMENT_BITS: u64 = 48;

/// The exact root `y ** (1/q)` of an integer `y >= 0`: its floor and whether it is exact.
struct Root {
    y: BigInt,
    q: u32,
    floor: BigInt,
    exact: bool,
}

impl Root {
    /// `base ** (p/q)` for a base that is a non-negative integer of at most
    /// [`ROOT_ARGUMENT_BITS`] bits once raised to `p`.
    fn of<N: Exact>(base: Val<N>, p: u32, q: u32) -> Result<Root, EvalError> {
        let b = base.num()?.big();
        if !b.is_integer() {
            return Err(EvalError::Undefined("a fractional power of a fraction"));
        }
        if b.is_negative() {
            // Python's `(-4.0) ** 0.5` is a complex number: no size.
            return Err(EvalError::Undefined(
                "a fractional power of a negative number",
            ));
        }
        let n = b.numer();
        if n.bits().saturating_mul(p as u64) > ROOT_ARGUMENT_BITS + p as u64 {
            return Err(EvalError::Undefined(
                "a fractional power past 2^48, where floats round",
            ));
        }
        let y = num_traits::pow(n.clone(), p as usize);
        if y.bits() > ROOT_ARGUMENT_BITS {
            return Err(EvalError::Undefined(
                "a fractional power past 2^48, where floats round",
            ));
        }
        let floor = y.nth_root(q);
        let exact = num_traits::pow(floor.clone(), q as usize) == y;
        Ok(Root { y, q, floor, exact })
    }

    /// The root rounded as `k` rounds (it is non-negative, so `trunc` is `floor`; a tie of
    /// `round` cannot occur: `(2r+1)**q` is odd and `2**q * y` even).
    fn rounded(&self, k: RoundKind) -> i128 {
        let r = self.floor.to_i128().expect("a root below 2^48 fits");
        match k {
            RoundKind::Floor | RoundKind::Trunc => r,
            RoundKind::Ceil => r + i128::from(!self.exact),
            RoundKind::HalfEven => {
                let twice = num_traits::pow(BigInt::from(2 * r + 1), self.q as usize);
                let scaled = &self.y << self.q as usize;
                r + i128::from(scaled > twice)
            }
        }
    }

    /// The order of the root against another value: an infinity, or an integer (a comparison
    /// with a fraction is undefined: floats could order it either way).
    fn cmp_with<N: Exact>(&self, other: Val<N>) -> Result<std::cmp::Ordering, EvalError> {
        use std::cmp::Ordering;
        let c = match other {
            Val::Inf(s) => return Ok(if s { Ordering::Less } else { Ordering::Greater }),
            v => v.num()?.big(),
        };
        if !c.is_integer() {
            return Err(EvalError::Undefined(
                "a fractional power compared with a fraction",
            ));
        }
        let c = c.numer();
        if c.is_negative() {
            return Ok(Ordering::Greater);
        }
        if self.exact {
            return Ok(self.floor.cmp(c));
        }
        // floor < root < floor + 1.
        Ok(if *c <= self.floor {
            Ordering::Greater
        } else {
            Ordering::Less
        })
    }
}

/// `base ** exp` for an integer exponent; fractional exponents are undefined here.
pub(crate) fn pow_values(base: &Q, exp: &Q) -> Result<Q, EvalError> {
    if !exp.is_integer() {
        return Err(EvalError::Undefined("non-integer power"));
    }
    let e = *exp.numer();
    let mag = u32::try_from(e.unsigned_abs()).map_err(|_| ArithError::Overflow)?;
    if mag > 256 && base.abs() != num::q(1) && !base.is_zero() {
        return Err(ArithError::Overflow.into());
    }
    let p = num::pow(base, mag)?;
    if e < 0 {
        Ok(num::div(&num::q(1), &p)?)
    } else {
        Ok(p)
    }
}

/// Prints in PyTorch's guard-code syntax (valid Python with `math`/`torch` imported).
impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Python {
            e: self,
            torch: false,
        }
        .fmt(f)
    }
}

impl Expr {
    /// Python for model code: like the guard-code printing, but with `torch.sym_min`,
    /// `torch.sym_max`, `torch.sym_not`, `torch.sym_ite` and `&`/`|`, which keep symbolic sizes
    /// symbolic (Python's `min`, `not`, `and` would force a guard) — for `torch._check(...)`.
    pub fn torch_python(&self) -> String {
        Python {
            e: self,
            torch: true,
        }
        .to_string()
    }
}

struct Python<'a> {
    e: &'a Expr,
    torch: bool,
}

impl fmt::Display for Python<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let torch = self.torch;
        if torch {
            let mut out = String::new();
            readable(self.e, 0, &mut out);
            return f.write_str(&out);
        }
        let p = |e: &Expr| -> String { Python { e, torch }.to_string() };
        let join = |f: &mut fmt::Formatter<'_>, sep: &str, v: &[Expr], wrap: bool| -> fmt::Result {
            write!(f, "(")?;
            for (i, e) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, "{sep}")?;
                }
                if wrap {
                    write!(f, "({})", p(e))?;
                } else {
                    write!(f, "{}", p(e))?;
                }
            }
            write!(f, ")")
        };
        let minmax = |f: &mut fmt::Formatter<'_>, name: &str, v: &[Expr]| -> fmt::Result {
            write!(f, "{name}(")?;
            for (i, e) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, ", ")?;
                }
                write!(f, "{}", p(e))?;
            }
            write!(f, ")")
        };
        match self.e {
            Expr::Const(c) if c.is_integer() => {
                if c.is_negative() {
                    write!(f, "({})", c.numer())
                } else {
                    write!(f, "{}", c.numer())
                }
            }
            Expr::Const(c) => write!(f, "({}/{})", c.numer(), c.denom()),
            Expr::Inf(true) => write!(f, "int_oo"),
            Expr::Inf(false) => write!(f, "(-int_oo)"),
            Expr::Bool(b) => write!(f, "{}", if *b { "True" } else { "False" }),
            Expr::Sym(a) => write!(f, "{a}"),
            Expr::Add(v) => join(f, " + ", v, false),
            Expr::Mul(v) => join(f, "*", v, false),
            Expr::Pow(a, b) => write!(f, "({}**{})", p(a), p(b)),
            Expr::TrueDiv(a, b) => write!(f, "({} / {})", p(a), p(b)),
            Expr::FloorDiv(a, b) => write!(f, "({} // {})", p(a), p(b)),
            Expr::Mod(a, b) => write!(f, "({} % {})", p(a), p(b)),
            Expr::Round(k, a) => write!(f, "{}({})", k.python(), p(a)),
            Expr::Min(v) => minmax(f, "min", v),
            Expr::Max(v) => minmax(f, "max", v),
            Expr::Abs(a) => write!(f, "abs({})", p(a)),
            Expr::Cmp(op, a, b) => write!(f, "{} {} {}", p(a), op.symbol(), p(b)),
            Expr::And(v) => join(f, " and ", v, false),
            Expr::Or(v) => join(f, " or ", v, false),
            Expr::Not(a) => write!(f, "(not {})", p(a)),
            Expr::Ite(c, a, b) => write!(f, "({} if {} else {})", p(a), p(c), p(b)),
        }
    }
}

/// Python operator precedence, loosest first, as [`readable`] uses it.
mod prec {
    pub const CMP: u8 = 3;
    pub const OR: u8 = 4;
    pub const AND: u8 = 5;
    pub const ADD: u8 = 6;
    pub const MUL: u8 = 7;
    pub const UNARY: u8 = 8;
    pub const POW: u8 = 9;
    pub const ATOM: u8 = 10;
}

/// A term of a sum that prints as `- term`: a negative constant, or a product whose leading
/// constant is negative; with the term's magnitude.
fn negated_term(e: &Expr) -> Option<Expr> {
    match e {
        Expr::Const(c) if c.is_negative() => Some(Expr::Const(-*c)),
        Expr::Mul(v) => match v.first() {
            Some(Expr::Const(c)) if c.is_negative() => {
                let k = -*c;
                let rest: Vec<Expr> = v[1..].to_vec();
                Some(if k == num::q(1) {
                    if rest.len() == 1 {
                        rest.into_iter().next().expect("one factor")
                    } else {
                        Expr::Mul(rest)
                    }
                } else {
                    Expr::Mul(std::iter::once(Expr::Const(k)).chain(rest).collect())
                })
            }
            _ => None,
        },
        _ => None,
    }
}

/// Readable Python for model code and ShapesSpec assumptions over symbolic sizes: the fewest
/// parentheses Python's precedence allows, `x - 3` rather than `x + (-3)`, and `torch.sym_min`,
/// `torch.sym_max`, `torch.sym_not`, `torch.sym_ite`, `&`/`|` (each side parenthesized), which
/// keep symbolic sizes symbolic. Writes `e` into `out`, in parentheses when its precedence is
/// below `min`.
fn readable(e: &Expr, min: u8, out: &mut String) {
    let own = match e {
        Expr::Const(c) if c.is_negative() => prec::UNARY,
        Expr::Const(c) if !c.is_integer() => prec::ATOM,
        Expr::Const(_) | Expr::Inf(true) | Expr::Bool(_) | Expr::Sym(_) => prec::ATOM,
        Expr::Inf(false) => prec::UNARY,
        Expr::Add(_) => prec::ADD,
        Expr::Mul(v) => match v.first() {
            Some(Expr::Const(c)) if *c == num::q(-1) && v.len() == 2 => prec::UNARY,
            _ => prec::MUL,
        },
        Expr::TrueDiv(..) | Expr::FloorDiv(..) | Expr::Mod(..) => prec::MUL,
        Expr::Pow(..) => prec::POW,
        Expr::Cmp(..) => prec::CMP,
        Expr::And(_) => prec::AND,
        Expr::Or(_) => prec::OR,
        Expr::Round(..)
        | Expr::Min(_)
        | Expr::Max(_)
        | Expr::Abs(_)
        | Expr::Not(_)
        | Expr::Ite(..) => prec::ATOM,
    };
    let wrap = own < min;
    if wrap {
        out.push('(');
    }
    let call = |out: &mut String, name: &str, args: &[&Expr]| {
        out.push_str(name);
        out.push('(');
        for (i, a) in args.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            readable(a, 0, out);
        }
        out.push(')');
    };
    let binary = |out: &mut String, a: &Expr, op: &str, b: &Expr, p: u8| {
        readable(a, p, out);
        out.push_str(op);
        readable(b, p + 1, out);
    };
    match e {
        Expr::Const(c) if c.is_integer() => out.push_str(&c.numer().to_string()),
        Expr::Const(c) => out.push_str(&format!("({}/{})", c.numer(), c.denom())),
        Expr::Inf(true) => out.push_str("int_oo"),
        Expr::Inf(false) => out.push_str("-int_oo"),
        Expr::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
        Expr::Sym(a) => out.push_str(a),
        Expr::Add(v) => {
            // Positive terms first (`x - 1`, not `-1 + x`), then the rest with `-`.
            let (neg, pos): (Vec<&Expr>, Vec<&Expr>) =
                v.iter().partition(|t| negated_term(t).is_some());
            let mut first = true;
            for t in pos.iter().chain(neg.iter()) {
                match negated_term(t) {
                    Some(m) if !first => {
                        out.push_str(" - ");
                        readable(&m, prec::MUL, out);
                    }
                    _ => {
                        if !first {
                            out.push_str(" + ");
                        }
                        readable(t, if first { prec::ADD } else { prec::MUL }, out);
                    }
                }
                first = false;
            }
        }
        Expr::Mul(v) => {
            if let [Expr::Const(c), x] = &v[..] {
                if *c == num::q(-1) {
                    out.push('-');
                    readable(x, prec::UNARY, out);
                    if wrap {
                        out.push(')');
                    }
                    return;
                }
            }
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push('*');
                }
                readable(x, if i == 0 { prec::MUL } else { prec::MUL + 1 }, out);
            }
        }
        Expr::Pow(a, b) => {
            readable(a, prec::ATOM, out);
            out.push_str("**");
            readable(b, prec::POW, out);
        }
        Expr::TrueDiv(a, b) => binary(out, a, " / ", b, prec::MUL),
        Expr::FloorDiv(a, b) => binary(out, a, " // ", b, prec::MUL),
        Expr::Mod(a, b) => binary(out, a, " % ", b, prec::MUL),
        Expr::Round(k, a) => call(out, k.python(), &[a]),
        Expr::Min(v) | Expr::Max(v) => {
            // torch.sym_min takes two arguments: nest.
            let name = if matches!(e, Expr::Min(_)) {
                "torch.sym_min("
            } else {
                "torch.sym_max("
            };
            for x in &v[..v.len() - 1] {
                out.push_str(name);
                readable(x, 0, out);
                out.push_str(", ");
            }
            readable(&v[v.len() - 1], 0, out);
            out.push_str(&")".repeat(v.len() - 1));
        }
        Expr::Abs(a) => call(out, "abs", &[a]),
        Expr::Cmp(op, a, b) => {
            readable(a, prec::CMP + 1, out);
            out.push(' ');
            out.push_str(op.symbol());
            out.push(' ');
            readable(b, prec::CMP + 1, out);
        }
        Expr::And(v) | Expr::Or(v) => {
            let sep = if matches!(e, Expr::And(_)) {
                " & "
            } else {
                " | "
            };
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                // `&` and `|` bind tighter than comparisons: every side in parentheses.
                readable(x, prec::ATOM, out);
            }
        }
        Expr::Not(a) => call(out, "torch.sym_not", &[a]),
        Expr::Ite(c, a, b) => call(out, "torch.sym_ite", &[c, a, b]),
    }
    if wrap {
        out.push(')');
    }
}
