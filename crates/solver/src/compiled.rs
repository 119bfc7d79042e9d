//! Fast value-by-value evaluation of a guard in one size, for enumeration.
//!
//! A guard is compiled to straight-line code over `i128`. Every numeric sub-expression becomes
//! an integer numerator over a *constant* positive denominator (`0.5*x` is `x / 2`), so float
//! literals and true division by constants cost nothing extra. Any overflow, division by zero or
//! construct the compiler does not cover makes [`Compiled::truth`] return `None`, and the caller
//! falls back to the exact evaluator ([`Expr::truth_at`]), so the two always agree.

use crate::num::{self, Q};
use crate::types::{CmpOp, DimSet, Expr, RoundKind};
use num_integer::Integer;

/// How many values a set may hold for dimguard to re-check it value by value.
pub const RECHECK_LIMIT: u128 = 10_000_000;

/// The independent value-by-value re-check of an answer: whether every guard holds at every member
/// of `set` (with `var` the size). `None` when `set` has more than [`RECHECK_LIMIT`] values, or
/// the time budget ran out first (not checked; never a guess).
///
/// ```
/// use dimguard_solver::compiled::recheck;
/// use dimguard_solver::{parse_guard, DimSet};
///
/// let g = parse_guard("Eq(Mod(s0, 8), 0)").unwrap();
/// assert_eq!(recheck(&[&g], "s0", &DimSet::progression(8, 800, 8, 0)), Some(true));
/// assert_eq!(recheck(&[&g], "s0", &DimSet::interval(8, 9)), Some(false));
/// ```
pub fn recheck(guards: &[&Expr], var: &str, set: &DimSet) -> Option<bool> {
    if set.count() > RECHECK_LIMIT {
        return None;
    }
    let fast: Vec<Option<Compiled>> = guards.iter().map(|g| Compiled::new(g, var)).collect();
    // Compiled guards cost nanoseconds a value; the exact evaluator up to a millisecond (big
    // powers), so then the deadline is checked at every value.
    let every = if fast.iter().all(Option::is_some) {
        1024
    } else {
        1
    };
    for (i, x) in set.iter().enumerate() {
        // Past the time budget the re-check stops: not checked (`None`), never a guess.
        if i % every == every - 1 && crate::budget::expired().is_some() {
            return None;
        }
        let pass = guards
            .iter()
            .zip(&fast)
            .all(|(g, c)| Compiled::holds(c.as_ref(), g, var, x));
        if !pass {
            return Some(false);
        }
    }
    Some(true)
}

#[derive(Debug, Clone, Copy)]
enum Op {
    X,
    Const(i128),
    /// `a * k` (constant k).
    Scale(i128),
    Add,
    Mul,
    /// floor/ceil/trunc/round of the top of the stack divided by a constant `d > 0`.
    Round(RoundKind, i128),
    /// Runtime floor division / modulo of two integers.
    FloorDiv,
    Mod,
    Min,
    Max,
    Abs,
    Cmp(CmpOp),
    And,
    Or,
    Not,
    /// `c ? a : b` with the stack holding c, a, b.
    Select,
}

/// A guard compiled for fast evaluation at integer points.
#[derive(Debug, Clone)]
pub struct Compiled {
    code: Vec<Op>,
}

/// Numerator code with a constant positive denominator.
struct Frac {
    den: i128,
}

struct Builder<'a> {
    var: &'a str,
    code: Vec<Op>,
}

impl Compiled {
    /// The guard's truth at `x`: the fast path when it decides, else the exact evaluator.
    /// A value where the guard raises or overflows does not hold (as [`Expr::holds_at`]).
    pub fn holds(this: Option<&Compiled>, guard: &Expr, var: &str, x: i128) -> bool {
        matches!(Compiled::truth_or_eval(this, guard, var, x), Ok(true))
    }

    /// The guard's truth at `x`, or why it has none (see [`Expr::truth_at`]): the fast path
    /// when it decides, else the exact evaluator.
    pub fn truth_or_eval(
        this: Option<&Compiled>,
        guard: &Expr,
        var: &str,
        x: i128,
    ) -> Result<bool, crate::expr::EvalError> {
        match this.and_then(|c| c.truth(x)) {
            Some(t) => Ok(t),
            None => guard.truth_at(var, x),
        }
    }

    /// Compiles `guard` in the size `var`; `None` when it uses a construct not covered here.
    pub fn new(guard: &Expr, var: &str) -> Option<Compiled> {
        let mut b = Builder {
            var,
            code: Vec::new(),
        };
        b.cond(guard)?;
        Some(Compiled { code: b.code })
    }

    /// The guard's truth at `x`, or `None` when the fast path cannot decide (overflow, division
    /// by zero): then use [`Expr::truth_at`].
    #[inline]
    pub fn truth(&self, x: i128) -> Option<bool> {
        let mut st: [i128; 64] = [0; 64];
        let mut sp = 0usize;
        for op in &self.code {
            match *op {
                Op::X => {
                    *st.get_mut(sp)? = x;
                    sp += 1;
                }
                Op::Const(c) => {
                    *st.get_mut(sp)? = c;
                    sp += 1;
                }
                Op::Scale(k) => st[sp - 1] = st[sp - 1].checked_mul(k)?,
                Op::Round(kind, d) => {
                    let v = st[sp - 1];
                    st[sp - 1] = round_div(kind, v, d)?;
                }
                Op::Abs => st[sp - 1] = st[sp - 1].checked_abs()?,
                Op::Not => st[sp - 1] = (st[sp - 1] == 0) as i128,
                Op::Select => {
                    sp -= 2;
                    st[sp - 1] = if st[sp - 1] != 0 { st[sp] } else { st[sp + 1] };
                }
                _ => {
                    sp -= 1;
                    let (a, b) = (st[sp - 1], st[sp]);
                    st[sp - 1] = match *op {
                        Op::Add => a.checked_add(b)?,
                        Op::Mul => a.checked_mul(b)?,
                        Op::FloorDiv => fdiv(a, b)?,
                        Op::Mod => fmod(a, b)?,
                        Op::Min => a.min(b),
                        Op::Max => a.max(b),
                        Op::Cmp(c) => c.holds(a.cmp(&b)) as i128,
                        Op::And => (a != 0 && b != 0) as i128,
                        Op::Or => (a != 0 || b != 0) as i128,
                        _ => unreachable!("unary ops handled above"),
                    };
                }
            }
        }
        Some(st[0] != 0)
    }
}

/// Floor division and modulo, on 64-bit hardware division when the operands fit.
fn fdiv(a: i128, b: i128) -> Option<i128> {
    if b == 0 {
        return None;
    }
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(x), Ok(y)) if !(x == i64::MIN && y == -1) => Some(Integer::div_floor(&x, &y) as i128),
        _ => num::int_floordiv(a, b).ok(),
    }
}

fn fmod(a: i128, b: i128) -> Option<i128> {
    if b == 0 {
        return None;
    }
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(x), Ok(y)) if y != -1 => Some(Integer::mod_floor(&x, &y) as i128),
        _ => num::int_mod(a, b).ok(),
    }
}

fn round_div(kind: RoundKind, v: i128, d: i128) -> Option<i128> {
    if d == 1 {
        return Some(v);
    }
    Some(match kind {
        RoundKind::Floor => fdiv(v, d)?,
        RoundKind::Ceil => num::int_ceildiv(v, d),
        RoundKind::Trunc => v / d,
        RoundKind::HalfEven => num::round_half_even(&Q::new(v, d)),
    })
}

impl Builder<'_> {
    /// Brings two numerators to a common denominator: the first was emitted before `mark`, the
    /// second after it. Returns the common denominator.
    fn align(&mut self, mark: usize, da: i128, db: i128) -> Option<i128> {
        let l = num::lcm(da, db).ok()?;
        if l / da != 1 {
            self.code.insert(mark, Op::Scale(l / da));
        }
        if l / db != 1 {
            self.push(Op::Scale(l / db))?;
        }
        Some(l)
    }

    fn push(&mut self, op: Op) -> Option<()> {
        if self.code.len() > 4096 {
            return None;
        }
        self.code.push(op);
        Some(())
    }

    /// Emits code leaving a 0/1 on the stack.
    fn cond(&mut self, e: &Expr) -> Option<()> {
        match e {
            Expr::Bool(b) => self.push(Op::Const(*b as i128)),
            Expr::Cmp(op, a, b) => {
                // a/da cmp b/db  <=>  a*db cmp b*da (denominators are positive)
                let da = self.frac(a)?.den;
                let mark = self.code.len();
                let db = self.frac(b)?.den;
                self.align(mark, da, db)?;
                self.push(Op::Cmp(*op))
            }
            Expr::And(v) | Expr::Or(v) => {
                let op = if matches!(e, Expr::And(_)) {
                    Op::And
                } else {
                    Op::Or
                };
                self.cond(&v[0])?;
                for item in &v[1..] {
                    self.cond(item)?;
                    self.push(op)?;
                }
                Some(())
            }
            Expr::Not(a) => {
                self.cond(a)?;
                self.push(Op::Not)
            }
            Expr::Ite(c, a, b) if a.is_bool() && b.is_bool() => {
                self.cond(c)?;
                self.cond(a)?;
                self.cond(b)?;
                self.push(Op::Select)
            }
            other => {
                // Truthiness of a number.
                self.frac(other)?;
                self.push(Op::Const(0))?;
                self.push(Op::Cmp(CmpOp::Ne))
            }
        }
    }

    /// Emits code leaving the numerator; returns the constant denominator.
    fn frac(&mut self, e: &Expr) -> Option<Frac> {
        match e {
            Expr::Const(c) => {
                self.push(Op::Const(*c.numer()))?;
                Some(Frac { den: *c.denom() })
            }
            Expr::Sym(a) if &**a == self.var => {
                self.push(Op::X)?;
                Some(Frac { den: 1 })
            }
            Expr::Add(v) => {
                let mut den = self.frac(&v[0])?.den;
                for item in &v[1..] {
                    let mark = self.code.len();
                    let d2 = self.frac(item)?.den;
                    let l = self.align(mark, den, d2)?;
                    self.push(Op::Add)?;
                    den = l;
                }
                Some(Frac { den })
            }
            Expr::Mul(v) => {
                let mut den = self.frac(&v[0])?.den;
                for item in &v[1..] {
                    let d2 = self.frac(item)?.den;
                    den = den.checked_mul(d2)?;
                    self.push(Op::Mul)?;
                }
                Some(Frac { den })
            }
            Expr::TrueDiv(a, b) => match &**b {
                Expr::Const(c) if *c.numer() != 0 => {
                    let f = self.frac(a)?;
                    // (n / d) / (p / q) = (n * q * sign(p)) / (d * |p|)
                    let (p, q) = (*c.numer(), *c.denom());
                    self.push(Op::Scale(q.checked_mul(p.signum())?))?;
                    Some(Frac {
                        den: f.den.checked_mul(p.checked_abs()?)?,
                    })
                }
                _ => None,
            },
            Expr::Round(kind, a) => {
                let f = self.frac(a)?;
                self.push(Op::Round(*kind, f.den))?;
                Some(Frac { den: 1 })
            }
            Expr::FloorDiv(a, b) | Expr::Mod(a, b) => {
                let is_mod = matches!(e, Expr::Mod(..));
                // Both operands as integers over a common denominator; the quotient of the
                // numerators is the quotient of the values.
                let fa = self.frac(a)?;
                let mark = self.code.len();
                let fb = self.frac(b)?;
                let l = self.align(mark, fa.den, fb.den)?;
                self.push(if is_mod { Op::Mod } else { Op::FloorDiv })?;
                // (a % b) scaled by l: the remainder is in units of 1/l.
                Some(Frac {
                    den: if is_mod { l } else { 1 },
                })
            }
            Expr::Min(v) | Expr::Max(v) => {
                let op = if matches!(e, Expr::Min(_)) {
                    Op::Min
                } else {
                    Op::Max
                };
                let mut den = self.frac(&v[0])?.den;
                for item in &v[1..] {
                    let mark = self.code.len();
                    let d2 = self.frac(item)?.den;
                    let l = self.align(mark, den, d2)?;
                    self.push(op)?;
                    den = l;
                }
                Some(Frac { den })
            }
            Expr::Abs(a) => {
                let f = self.frac(a)?;
                self.push(Op::Abs)?;
                Some(f)
            }
            Expr::Pow(a, b) => match &**b {
                Expr::Const(c) if c.is_integer() && (0..=8).contains(c.numer()) => {
                    let n = *c.numer();
                    if n == 0 {
                        // The base is still evaluated (Python raises if it does): d/d == 1.
                        let d = self.frac(a)?.den;
                        self.push(Op::Scale(0))?;
                        self.push(Op::Const(d))?;
                        self.push(Op::Add)?;
                        return Some(Frac { den: d });
                    }
                    let mut den = 1i128;
                    for i in 0..n {
                        den = den.checked_mul(self.frac(a)?.den)?;
                        if i > 0 {
                            self.push(Op::Mul)?;
                        }
                    }
                    Some(Frac { den })
                }
                _ => None,
            },
            Expr::Ite(c, a, b) => {
                self.cond(c)?;
                let fa = self.frac(a)?;
                let mark = self.code.len();
                let fb = self.frac(b)?;
                let l = self.align(mark, fa.den, fb.den)?;
                self.push(Op::Select)?;
                Some(Frac { den: l })
            }
            // Python's bool is an int: a condition in arithmetic is 0 or 1.
            e if e.is_bool() => {
                self.cond(e)?;
                Some(Frac { den: 1 })
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;

    #[test]
    fn agrees_with_the_exact_evaluator() {
        let x = "x";
        for g in [
            "Eq(Mod(((x - 1)//4) - 1, 2), 0)",
            "(1 + (((-1) + x) // 2)) == math.trunc(0.5*torch.sym_float(x))",
            "round(x / 3) % 2 == 1 and min(x, 7) < max(3, x // 2)",
            "abs(x - 50) > 10 or not (x % 3 == 0)",
            "(x if x > 10 else 2*x) % 5 == 1",
            "x * x - 3 * x > 40",
            "x % (x - 1) == 0",
            "0.25 * x + 1.5 >= x // 3",
            "(x / 4) % 2 == 1.5",
            "-(1 % x != 0)",
            "(x % 3 == 0) * 2 + (x > 50) == 2",
            "((-10) % (x % 3)) ** 0",
            "(34 % (x // 15)) ** 0 and 1",
        ] {
            let e = parse_guard(g).unwrap();
            let c = Compiled::new(&e, x).unwrap_or_else(|| panic!("{g} compiles"));
            for v in -100..200 {
                if let Some(t) = c.truth(v) {
                    assert_eq!(Ok(t), e.truth_at(x, v), "{g} at {v}");
                }
            }
        }
    }
}
