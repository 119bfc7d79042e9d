//! Guards as Z3 formulas, with Python's semantics.
//!
//! Z3's integer `div`/`mod` are Euclidean (the remainder is never negative); Python's `//` and
//! `%` are floor operations (the remainder has the divisor's sign). They agree only for positive
//! divisors, so a floor division is encoded as `ite(b > 0, div(a, b), div(-a, -b))` and the
//! modulo as `a - b * (a // b)`. Rationals (`0.5*x`, `x / 3`) are Z3 reals; `floor` is `to_int`.
//! Every divisor must be non-zero for a guard to hold (Python raises otherwise): those conditions
//! are collected beside the formula. They are collected on every branch, so a guard whose
//! division is protected by a short-circuit (`x == 0 or 5 // x > 1`) may look failing where it
//! is not; counterexamples are therefore re-checked with dimguard's exact evaluator before they
//! are reported, and a proof (`unsat`) is unaffected.

use dimguard_solver::Q;
use dimguard_solver::{CmpOp, Expr, RoundKind};
use std::collections::BTreeMap;
use z3::ast::{Bool, Int, Real};

/// Why a guard has no Z3 encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A construct Z3 cannot express here (infinities, non-integer or huge powers).
    #[error("no Z3 encoding for {0}")]
    Unsupported(&'static str),
}

/// A Z3 term of the sort the expression has.
#[derive(Clone)]
pub enum Term {
    /// An integer.
    I(Int),
    /// A rational.
    R(Real),
    /// A truth value.
    B(Bool),
}

/// Encodes expressions over named integer sizes.
#[derive(Default)]
pub struct Encoder {
    vars: BTreeMap<String, Int>,
    /// Z3 constant names in use.
    used: std::collections::BTreeSet<String>,
    /// Conditions for the guard to be defined (divisors non-zero).
    pub defined: Vec<Bool>,
}

fn q_real(q: &Q) -> Real {
    Real::from_rational_str(&q.numer().to_string(), &q.denom().to_string())
        .expect("a valid rational")
}

fn real(t: &Term) -> Result<Real, EncodeError> {
    match t {
        Term::I(i) => Ok(i.to_real()),
        Term::R(r) => Ok(r.clone()),
        Term::B(b) => Ok(bool_int(b).to_real()),
    }
}

/// Python's `bool` is an `int`: `True` is 1 and `False` is 0 in arithmetic.
fn bool_int(b: &Bool) -> Int {
    b.ite(&Int::from_i64(1), &Int::from_i64(0))
}

fn floor_int(r: &Real) -> Int {
    r.to_int()
}

impl Encoder {
    /// A new encoder.
    pub fn new() -> Encoder {
        Encoder::default()
    }

    /// The Z3 integer standing for the size `name`.
    ///
    /// Z3 symbols are C strings, and a size's text may hold any character (a NUL byte from a
    /// corrupted paste included) or none (Z3 refuses an empty symbol): such a size gets a fresh
    /// name (`v0`, `v1`, ...), and a later
    /// size whose text is a name already taken gets a fresh one too, so two sizes never share
    /// a Z3 constant. The map keeps the text.
    pub fn var(&mut self, name: &str) -> Int {
        if let Some(v) = self.vars.get(name) {
            return v.clone();
        }
        let z3_name = if name.is_empty() || name.contains('\0') || self.used.contains(name) {
            (0..)
                .map(|k| format!("v{k}"))
                .find(|n| !self.used.contains(n) && !self.vars.contains_key(n))
                .expect("a fresh name")
        } else {
            name.to_string()
        };
        self.used.insert(z3_name.clone());
        let v = Int::new_const(z3_name);
        self.vars.insert(name.to_string(), v.clone());
        v
    }

    /// The guard as a formula that holds exactly when Python's evaluation is `True` (with the
    /// divisor conditions conjoined).
    pub fn holds(&mut self, guard: &Expr) -> Result<Bool, EncodeError> {
        let start = self.defined.len();
        let b = self.boolean(guard)?;
        let mut parts: Vec<Bool> = self.defined[start..].to_vec();
        parts.push(b);
        Ok(Bool::and(&parts))
    }

    fn boolean(&mut self, e: &Expr) -> Result<Bool, EncodeError> {
        match self.term(e)? {
            Term::B(b) => Ok(b),
            Term::I(i) => Ok(i.ne(Int::from_i64(0))),
            Term::R(r) => Ok(r.ne(Real::from_rational(0, 1))),
        }
    }

    /// A numeric term; a boolean becomes 0 or 1, as in Python (`-(a != b)`, `(c) + 0`).
    fn int_or_real(&mut self, e: &Expr) -> Result<Term, EncodeError> {
        match self.term(e)? {
            Term::B(b) => Ok(Term::I(bool_int(&b))),
            t => Ok(t),
        }
    }

    /// Encodes any expression.
    pub fn term(&mut self, e: &Expr) -> Result<Term, EncodeError> {
        Ok(match e {
            Expr::Const(c) if c.is_integer() => Term::I(Int::from_i128(*c.numer())),
            Expr::Const(c) => Term::R(q_real(c)),
            Expr::Inf(_) => return Err(EncodeError::Unsupported("infinity")),
            Expr::Bool(b) => Term::B(Bool::from_bool(*b)),
            Expr::Sym(a) => Term::I(self.var(a)),
            Expr::Add(v) | Expr::Mul(v) => {
                let is_add = matches!(e, Expr::Add(_));
                let ts: Vec<Term> = v
                    .iter()
                    .map(|x| self.int_or_real(x))
                    .collect::<Result<_, _>>()?;
                if ts.iter().all(|t| matches!(t, Term::I(_))) {
                    let is: Vec<Int> = ts
                        .into_iter()
                        .map(|t| {
                            if let Term::I(i) = t {
                                i
                            } else {
                                unreachable!()
                            }
                        })
                        .collect();
                    Term::I(if is_add { Int::add(&is) } else { Int::mul(&is) })
                } else {
                    let rs: Vec<Real> = ts.iter().map(real).collect::<Result<_, _>>()?;
                    Term::R(if is_add {
                        Real::add(&rs)
                    } else {
                        Real::mul(&rs)
                    })
                }
            }
            Expr::Pow(a, b) => {
                let n = match &**b {
                    Expr::Const(c) if c.is_integer() && (0..=16).contains(c.numer()) => {
                        *c.numer() as usize
                    }
                    _ => {
                        return Err(EncodeError::Unsupported(
                            "a power whose exponent is not a small constant",
                        ))
                    }
                };
                let base = self.int_or_real(a)?;
                match base {
                    Term::I(i) => Term::I(if n == 0 {
                        Int::from_i64(1)
                    } else {
                        Int::mul(&vec![i; n])
                    }),
                    Term::R(r) => Term::R(if n == 0 {
                        Real::from_rational(1, 1)
                    } else {
                        Real::mul(&vec![r; n])
                    }),
                    Term::B(_) => unreachable!(),
                }
            }
            Expr::TrueDiv(a, b) => {
                let (x, y) = (real(&self.int_or_real(a)?)?, real(&self.int_or_real(b)?)?);
                self.defined.push(y.ne(Real::from_rational(0, 1)));
                Term::R(x / y)
            }
            Expr::FloorDiv(a, b) | Expr::Mod(a, b) => {
                let is_mod = matches!(e, Expr::Mod(..));
                let (x, y) = (self.int_or_real(a)?, self.int_or_real(b)?);
                match (x, y) {
                    (Term::I(x), Term::I(y)) => {
                        self.defined.push(y.ne(Int::from_i64(0)));
                        let zero = Int::from_i64(0);
                        // Euclidean division by a positive divisor is floor division.
                        let q = y.gt(&zero).ite(&x.div(&y), &(-x.clone()).div(-y.clone()));
                        Term::I(if is_mod { x - y * q } else { q })
                    }
                    (x, y) => {
                        let (x, y) = (real(&x)?, real(&y)?);
                        self.defined.push(y.ne(Real::from_rational(0, 1)));
                        let q = floor_int(&(x.clone() / y.clone())).to_real();
                        Term::R(if is_mod { x - y * q } else { q })
                    }
                }
            }
            Expr::Round(kind, a) => match self.int_or_real(a)? {
                Term::I(i) => Term::I(i),
                Term::R(r) => Term::I(round(*kind, &r)),
                Term::B(_) => unreachable!(),
            },
            Expr::Min(v) | Expr::Max(v) => {
                let is_max = matches!(e, Expr::Max(_));
                let mut acc = self.int_or_real(&v[0])?;
                for x in &v[1..] {
                    let y = self.int_or_real(x)?;
                    acc = match (acc, y) {
                        (Term::I(a), Term::I(b)) => {
                            let pick_b = if is_max { b.gt(&a) } else { b.lt(&a) };
                            Term::I(pick_b.ite(&b, &a))
                        }
                        (a, b) => {
                            let (a, b) = (real(&a)?, real(&b)?);
                            let pick_b = if is_max { b.gt(&a) } else { b.lt(&a) };
                            Term::R(pick_b.ite(&b, &a))
                        }
                    };
                }
                acc
            }
            Expr::Abs(a) => match self.int_or_real(a)? {
                Term::I(i) => Term::I(i.lt(Int::from_i64(0)).ite(&(-i.clone()), &i)),
                Term::R(r) => Term::R(r.lt(Real::from_rational(0, 1)).ite(&(-r.clone()), &r)),
                Term::B(_) => unreachable!(),
            },
            Expr::Cmp(op, a, b) => {
                let (x, y) = (self.int_or_real(a)?, self.int_or_real(b)?);
                Term::B(match (x, y) {
                    (Term::I(x), Term::I(y)) => cmp_int(*op, &x, &y),
                    (x, y) => cmp_real(*op, &real(&x)?, &real(&y)?),
                })
            }
            Expr::And(v) | Expr::Or(v) => {
                let bs: Vec<Bool> = v
                    .iter()
                    .map(|x| self.boolean(x))
                    .collect::<Result<_, _>>()?;
                Term::B(if matches!(e, Expr::And(_)) {
                    Bool::and(&bs)
                } else {
                    Bool::or(&bs)
                })
            }
            Expr::Not(a) => Term::B(self.boolean(a)?.not()),
            Expr::Ite(c, a, b) => {
                let c = self.boolean(c)?;
                match (self.term(a)?, self.term(b)?) {
                    (Term::B(x), Term::B(y)) => Term::B(c.ite(&x, &y)),
                    (Term::I(x), Term::I(y)) => Term::I(c.ite(&x, &y)),
                    (x, y) => Term::R(c.ite(&real(&x)?, &real(&y)?)),
                }
            }
        })
    }
}

fn round(kind: RoundKind, r: &Real) -> Int {
    let zero = Real::from_rational(0, 1);
    match kind {
        RoundKind::Floor => floor_int(r),
        RoundKind::Ceil => -floor_int(&(-r.clone())),
        RoundKind::Trunc => r.ge(&zero).ite(&floor_int(r), &(-floor_int(&(-r.clone())))),
        RoundKind::HalfEven => {
            let f = floor_int(r);
            let frac = r.clone() - f.to_real();
            let half = Real::from_rational(1, 2);
            let even = f.modulo(Int::from_i64(2)).eq(Int::from_i64(0));
            let tie = even.ite(&f, &(f.clone() + Int::from_i64(1)));
            frac.lt(&half).ite(
                &f,
                &frac.gt(&half).ite(&(f.clone() + Int::from_i64(1)), &tie),
            )
        }
    }
}

fn cmp_int(op: CmpOp, x: &Int, y: &Int) -> Bool {
    match op {
        CmpOp::Eq => x.eq(y),
        CmpOp::Ne => x.ne(y),
        CmpOp::Lt => x.lt(y),
        CmpOp::Le => x.le(y),
        CmpOp::Gt => x.gt(y),
        CmpOp::Ge => x.ge(y),
    }
}

fn cmp_real(op: CmpOp, x: &Real, y: &Real) -> Bool {
    match op {
        CmpOp::Eq => x.eq(y),
        CmpOp::Ne => x.ne(y),
        CmpOp::Lt => x.lt(y),
        CmpOp::Le => x.le(y),
        CmpOp::Gt => x.gt(y),
        CmpOp::Ge => x.ge(y),
    }
}
