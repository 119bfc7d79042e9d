//! Concrete evaluation and printing of [`Expr`].
//!
//! Evaluation is the *oracle*: it follows Python's semantics value by value, with no cleverness.
//! The periodic engine (`engine.rs`) is tested against it, and every suggestion is re-checked
//! with it when the suggestion is small enough to enumerate.

use crate::num::{self, ArithError, Q};
use crate::types::{Atom, CmpOp, Expr, RoundKind};
use num_traits::{Signed, Zero};
use std::collections::BTreeSet;
use std::fmt;

/// The value of an expression at a point.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An exact number.
    Num(Q),
    /// `+oo` (`true`) or `-oo`.
    Inf(bool),
    /// A truth value.
    Bool(bool),
}

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

type EvalResult = Result<Value, EvalError>;

impl Value {
    fn num(self) -> Result<Q, EvalError> {
        match self {
            Value::Num(v) => Ok(v),
            Value::Inf(_) => Err(EvalError::Undefined("infinite operand")),
            Value::Bool(_) => Err(EvalError::Type("boolean used as a number")),
        }
    }

    /// Python truthiness (`if value:`).
    pub fn truth(self) -> Result<bool, EvalError> {
        match self {
            Value::Bool(b) => Ok(b),
            // Python truthiness of a number, as in `if x % 2:`.
            Value::Num(v) => Ok(!v.is_zero()),
            Value::Inf(_) => Ok(true),
        }
    }

    /// Total order on numbers and infinities.
    fn cmp_key(&self) -> Result<(i8, Q), EvalError> {
        match self {
            Value::Num(v) => Ok((0, *v)),
            Value::Inf(true) => Ok((1, Q::zero())),
            Value::Inf(false) => Ok((-1, Q::zero())),
            Value::Bool(b) => Ok((0, num::q(*b as i128))),
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

    /// Evaluates with `env` giving each size's value.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<i128>) -> EvalResult {
        Ok(match self {
            Expr::Const(c) => Value::Num(*c),
            Expr::Inf(s) => Value::Inf(*s),
            Expr::Bool(b) => Value::Bool(*b),
            Expr::Sym(a) => Value::Num(num::q(
                env(a).ok_or_else(|| EvalError::Unbound(a.to_string()))?,
            )),
            Expr::Add(v) => {
                let mut acc = Value::Num(Q::zero());
                for e in v {
                    acc = add_values(acc, e.eval(env)?)?;
                }
                acc
            }
            Expr::Mul(v) => {
                let mut acc = Value::Num(num::q(1));
                for e in v {
                    acc = mul_values(acc, e.eval(env)?)?;
                }
                acc
            }
            Expr::Pow(a, b) => {
                let base = a.eval(env)?.num()?;
                let exp = b.eval(env)?.num()?;
                Value::Num(pow_values(&base, &exp)?)
            }
            Expr::TrueDiv(a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                match (x, y) {
                    (Value::Inf(s), Value::Num(d)) if !d.is_zero() => {
                        Value::Inf(s == d.is_positive())
                    }
                    (x, y) => Value::Num(num::div(&x.num()?, &y.num()?)?),
                }
            }
            Expr::FloorDiv(a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                match (x, y) {
                    (Value::Inf(s), Value::Num(d)) if !d.is_zero() => {
                        Value::Inf(s == d.is_positive())
                    }
                    (x, y) => Value::Num(num::floordiv(&x.num()?, &y.num()?)?),
                }
            }
            Expr::Mod(a, b) => Value::Num(num::pymod(&a.eval(env)?.num()?, &b.eval(env)?.num()?)?),
            Expr::Round(k, a) => match a.eval(env)? {
                Value::Inf(s) => Value::Inf(s),
                v => Value::Num(num::q(k.apply(&v.num()?))),
            },
            Expr::Min(v) | Expr::Max(v) => {
                let want_max = matches!(self, Expr::Max(_));
                let mut best: Option<Value> = None;
                for e in v {
                    let x = e.eval(env)?;
                    best = Some(match best {
                        None => x,
                        Some(b) => {
                            let ord = x.cmp_key()?.cmp(&b.cmp_key()?);
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
            Expr::Abs(a) => match a.eval(env)? {
                Value::Inf(_) => Value::Inf(true),
                v => Value::Num(v.num()?.abs()),
            },
            Expr::Cmp(op, a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                Value::Bool(op.holds(x.cmp_key()?.cmp(&y.cmp_key()?)))
            }
            Expr::And(v) => {
                for e in v {
                    if !e.eval(env)?.truth()? {
                        return Ok(Value::Bool(false));
                    }
                }
                Value::Bool(true)
            }
            Expr::Or(v) => {
                for e in v {
                    if e.eval(env)?.truth()? {
                        return Ok(Value::Bool(true));
                    }
                }
                Value::Bool(false)
            }
            Expr::Not(a) => Value::Bool(!a.eval(env)?.truth()?),
            Expr::Ite(c, a, b) => {
                if c.eval(env)?.truth()? {
                    a.eval(env)?
                } else {
                    b.eval(env)?
                }
            }
        })
    }

    /// Evaluates a guard at `x` for the single size `var`. A guard that raises (division by zero)
    /// or overflows counts as failing: the run-time check would not let the value through.
    pub fn holds_at(&self, var: &str, x: i128) -> bool {
        matches!(self.truth_at(var, x), Ok(true))
    }

    /// The truth of a guard at `x` for the single size `var`, or why it has none. Python's
    /// integers are unbounded; here an intermediate value beyond 128 bits is an
    /// [`ArithError::Overflow`], never a wrapped value.
    pub fn truth_at(&self, var: &str, x: i128) -> Result<bool, EvalError> {
        let env = |a: &str| (a == var).then_some(x);
        self.eval(&env).and_then(Value::truth)
    }
}

fn add_values(a: Value, b: Value) -> EvalResult {
    match (a, b) {
        (Value::Inf(s), Value::Inf(t)) if s != t => Err(EvalError::Undefined("oo - oo")),
        (Value::Inf(s), _) | (_, Value::Inf(s)) => Ok(Value::Inf(s)),
        (a, b) => Ok(Value::Num(num::add(&a.num()?, &b.num()?)?)),
    }
}

fn mul_values(a: Value, b: Value) -> EvalResult {
    match (a, b) {
        (Value::Inf(s), Value::Inf(t)) => Ok(Value::Inf(s == t)),
        (Value::Inf(s), Value::Num(c)) | (Value::Num(c), Value::Inf(s)) => {
            if c.is_zero() {
                Err(EvalError::Undefined("0 * oo"))
            } else {
                Ok(Value::Inf(s == c.is_positive()))
            }
        }
        (a, b) => Ok(Value::Num(num::mul(&a.num()?, &b.num()?)?)),
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
            if torch {
                // torch.sym_min takes two arguments: nest.
                for e in &v[..v.len() - 1] {
                    write!(f, "torch.sym_{name}({}, ", p(e))?;
                }
                write!(f, "{}", p(&v[v.len() - 1]))?;
                write!(f, "{}", ")".repeat(v.len() - 1))
            } else {
                write!(f, "{name}(")?;
                for (i, e) in v.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{}", p(e))?;
                }
                write!(f, ")")
            }
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
            Expr::And(v) if torch => join(f, " & ", v, true),
            Expr::Or(v) if torch => join(f, " | ", v, true),
            Expr::Not(a) if torch => write!(f, "torch.sym_not({})", p(a)),
            Expr::Ite(c, a, b) if torch => write!(f, "torch.sym_ite({}, {}, {})", p(c), p(a), p(b)),
            Expr::And(v) => join(f, " and ", v, false),
            Expr::Or(v) => join(f, " or ", v, false),
            Expr::Not(a) => write!(f, "(not {})", p(a)),
            Expr::Ite(c, a, b) => write!(f, "({} if {} else {})", p(a), p(c), p(b)),
        }
    }
}
