//! The vocabulary of each guard syntax PyTorch prints, and the lowering of parsed text to
//! [`Expr`].
//!
//! | syntax | printed by | example |
//! |---|---|---|
//! | sympy `str` | PyTorch <= 2.5 messages | `Eq(Mod(((L['x'].size()[2] - 1)//4) - 1, 2), 0)` |
//! | guard code | PyTorch >= 2.6 messages, `guards_code` in `.pt2` | `((((-1) + L['x'].size()[2]) // 2) % 2) != 0` |
//! | sympy `srepr` | `as_expr` in `.pt2` archives | `Mul(Integer(8), Symbol('s24', positive=True, integer=True))` |
//!
//! All three are Python expressions, parsed by `parse.rs`; they differ only in their function
//! names, which this file lists per syntax ([`SYMPY_FUNCTIONS`], [`GUARD_CODE_FUNCTIONS`],
//! [`SREPR_FUNCTIONS`]). The names do not clash, so one text may mix them and no syntax has to
//! be declared. `docs/GUARDS.md` gives the semantics of every entry.

use crate::error::ParseError;
use crate::num::{self, Q};
use crate::parse::{self, BinOp, Node, Spanned, UnOp};
use crate::types::{CmpOp, Expr, RoundKind};
use num_traits::{One, Zero};

/// Functions in sympy's `str` printing (PyTorch <= 2.5 messages) and PyTorch's sympy classes.
pub const SYMPY_FUNCTIONS: &[&str] = &[
    "Eq",
    "Ne",
    "Lt",
    "Le",
    "Gt",
    "Ge",
    "Mod",
    "PythonMod",
    "FloorDiv",
    "CleanDiv",
    "CeilDiv",
    "IntTrueDiv",
    "FloatTrueDiv",
    "TrueDiv",
    "CeilToInt",
    "FloorToInt",
    "TruncToInt",
    "RoundToInt",
    "TruncToFloat",
    "ToFloat",
    "Identity",
    "floor",
    "ceiling",
    "Max",
    "Min",
    "Abs",
    "Piecewise",
    "Where",
    "ModularIndexing",
    "PowByNatural",
    "FloatPow",
    "Pow",
    "OpaqueUnaryFn_sqrt",
    "LShift",
    "RShift",
    "And",
    "Or",
    "Not",
    "IntInfinity",
    "NegativeIntInfinity",
];

/// Functions in guard code (PyTorch >= 2.6 messages and `guards_code`).
pub const GUARD_CODE_FUNCTIONS: &[&str] = &[
    "min",
    "max",
    "abs",
    "int",
    "float",
    "round",
    "math.trunc",
    "math.floor",
    "math.ceil",
    "math.sqrt",
    "torch.sym_float",
    "torch.sym_int",
    "torch.sym_max",
    "torch.sym_min",
    "torch.sym_ite",
    "torch.sym_not",
];

/// Constructors in sympy's `srepr` (the `as_expr` strings of `.pt2` archives).
pub const SREPR_FUNCTIONS: &[&str] = &[
    "Symbol",
    "Integer",
    "Rational",
    "Float",
    "Add",
    "Mul",
    "Pow",
    "Equality",
    "Unequality",
    "StrictLessThan",
    "LessThan",
    "StrictGreaterThan",
    "GreaterThan",
    "BooleanTrue",
    "BooleanFalse",
    "Infinity",
    "NegativeInfinity",
    "Half",
    "One",
    "Zero",
    "NegativeOne",
];

/// The integer value of keyword argument `key` of a call parsed from `src` (`min=96` in
/// `Dim('h', min=96)` or `ShapeVar("H", min=96)`); None when it is absent or not an integer
/// constant. The one reader of a `Dim`/`ShapeVar` bound written in Python.
pub fn int_kwarg(src: &str, kwargs: &[(String, crate::parse::Spanned)], key: &str) -> Option<i128> {
    let (_, v) = kwargs.iter().find(|(n, _)| n == key)?;
    match parse_expr(src.get(v.span.0..v.span.1)?) {
        Ok(Expr::Const(c)) if c.is_integer() => Some(*c.numer()),
        _ => None,
    }
}

/// Parses an integer-valued or boolean expression in any of the syntaxes.
pub fn parse_expr(text: &str) -> Result<Expr, ParseError> {
    let node = parse::parse(text)?;
    Lower { src: text }.lower(&node)
}

/// Parses a guard: a boolean expression. An integer expression `e` is read as Python truthiness,
/// `e != 0`.
pub fn parse_guard(text: &str) -> Result<Expr, ParseError> {
    let e = parse_expr(text)?;
    Ok(if e.is_bool() {
        e
    } else {
        Expr::Cmp(CmpOp::Ne, Box::new(e), Box::new(Expr::int(0)))
    })
}

struct Lower<'a> {
    src: &'a str,
}

fn b(e: Expr) -> Box<Expr> {
    Box::new(e)
}

impl Lower<'_> {
    fn err(&self, msg: impl Into<String>, span: parse::Span) -> ParseError {
        ParseError::new(msg, self.src, span.0, span.1.saturating_sub(span.0))
    }

    fn lower(&self, n: &Spanned) -> Result<Expr, ParseError> {
        Ok(match &n.node {
            Node::Int(v) => Expr::int(*v),
            Node::Float(t) => Expr::Const(num::float_literal(t).ok_or_else(|| {
                self.err(
                    format!("float literal `{t}` has no exact value dimguard can use"),
                    n.span,
                )
            })?),
            Node::Str(_) => return Err(self.err("a string is not a size or a number here", n.span)),
            Node::Name(name) => self.name(name, n)?,
            Node::Source(s) => Expr::sym(s),
            Node::Paren(inner) => self.lower(inner)?,
            Node::Tuple(_) => {
                return Err(self.err(
                    "a tuple is only allowed as an argument of Piecewise",
                    n.span,
                ))
            }
            Node::Unary(op, a) => {
                let x = self.lower(a)?;
                match op {
                    UnOp::Pos => x,
                    UnOp::Neg => match x {
                        Expr::Const(c) => {
                            Expr::Const(num::neg(&c).map_err(|e| self.err(e.to_string(), n.span))?)
                        }
                        Expr::Inf(s) => Expr::Inf(!s),
                        x => Expr::Mul(vec![Expr::int(-1), x]),
                    },
                    UnOp::Invert => {
                        if x.is_bool() {
                            Expr::Not(b(x))
                        } else {
                            return Err(self
                                .err("bitwise `~` on a size is not supported", n.span)
                                .with_help(
                                    "`~` is only understood as sympy's printing of Not(...)",
                                ));
                        }
                    }
                }
            }
            Node::Binary(op, l, r) => {
                let (x, y) = (self.lower(l)?, self.lower(r)?);
                match op {
                    BinOp::Add => Expr::Add(vec![x, y]),
                    BinOp::Sub => Expr::Add(vec![x, Expr::Mul(vec![Expr::int(-1), y])]),
                    BinOp::Mul => Expr::Mul(vec![x, y]),
                    BinOp::TrueDiv => Expr::TrueDiv(b(x), b(y)),
                    BinOp::FloorDiv => Expr::FloorDiv(b(x), b(y)),
                    BinOp::Mod => Expr::Mod(b(x), b(y)),
                    BinOp::Pow => Expr::Pow(b(x), b(y)),
                    BinOp::BitAnd | BinOp::BitOr if x.is_bool() && y.is_bool() => {
                        if *op == BinOp::BitAnd {
                            Expr::And(vec![x, y])
                        } else {
                            Expr::Or(vec![x, y])
                        }
                    }
                    _ => {
                        return Err(self
                            .err("bitwise operators on sizes are not supported", n.span)
                            .with_help(
                                "`&` and `|` are understood between conditions (sympy's And/Or)",
                            ))
                    }
                }
            }
            Node::Compare(operands, ops) => {
                let vals: Vec<Expr> = operands
                    .iter()
                    .map(|o| self.lower(o))
                    .collect::<Result<_, _>>()?;
                let mut parts: Vec<Expr> = ops
                    .iter()
                    .enumerate()
                    .map(|(i, op)| Expr::Cmp(*op, b(vals[i].clone()), b(vals[i + 1].clone())))
                    .collect();
                if parts.len() == 1 {
                    parts.pop().expect("one comparison")
                } else {
                    Expr::And(parts)
                }
            }
            Node::BoolOp(is_and, items) => {
                let v = items
                    .iter()
                    .map(|i| self.lower(i))
                    .collect::<Result<_, _>>()?;
                if *is_and {
                    Expr::And(v)
                } else {
                    Expr::Or(v)
                }
            }
            Node::Not(a) => Expr::Not(b(self.lower(a)?)),
            Node::IfElse(c, t, e) => {
                Expr::Ite(b(self.lower(c)?), b(self.lower(t)?), b(self.lower(e)?))
            }
            Node::Call {
                func,
                func_span,
                args,
                kwargs,
            } => self.call(func, *func_span, args, kwargs, n.span)?,
        })
    }

    fn name(&self, name: &str, n: &Spanned) -> Result<Expr, ParseError> {
        Ok(match name {
            "oo" | "int_oo" => Expr::Inf(true),
            "True" | "true" => Expr::Bool(true),
            "False" | "false" => Expr::Bool(false),
            "zoo" | "nan" | "None" | "pi" | "E" => {
                return Err(self.err(format!("`{name}` has no integer value"), n.span));
            }
            _ if SYMPY_FUNCTIONS.contains(&name)
                || GUARD_CODE_FUNCTIONS.contains(&name)
                || SREPR_FUNCTIONS.contains(&name) =>
            {
                return Err(self.err(format!("function `{name}` used without arguments"), n.span));
            }
            _ if name.contains('.') => {
                return Err(self
                    .err(
                        format!("`{name}` is not a size dimguard recognizes"),
                        n.span,
                    )
                    .with_help("sizes look like L['x'].size()[2], x.size()[2] or s0"));
            }
            _ => Expr::sym(name),
        })
    }

    fn call(
        &self,
        func: &str,
        func_span: parse::Span,
        args: &[Spanned],
        kwargs: &[(String, Spanned)],
        span: parse::Span,
    ) -> Result<Expr, ParseError> {
        // Keyword arguments only appear in srepr constructors (assumptions, precision).
        if !kwargs.is_empty() && !matches!(func, "Symbol" | "Float" | "Integer" | "Rational") {
            let (k, v) = &kwargs[0];
            let at = (v.span.0.saturating_sub(k.len() + 1), v.span.1);
            return Err(self.err(format!("unexpected keyword argument `{k}` to `{func}`"), at));
        }
        let call = Call {
            lowering: self,
            func,
            args,
            span,
        };
        if let Some(e) = call.operator()? {
            return Ok(e);
        }
        if let Some(e) = call.constructor()? {
            return Ok(e);
        }
        Err(self
            .err(format!("unsupported function `{func}`"), func_span)
            .with_help(unsupported_help(func)))
    }

    fn piecewise(&self, args: &[Spanned], span: parse::Span) -> Result<Expr, ParseError> {
        let mut pairs = Vec::new();
        for a in args {
            match &a.node {
                Node::Tuple(items) if items.len() == 2 => {
                    pairs.push((self.lower(&items[0])?, self.lower(&items[1])?, a.span));
                }
                _ => return Err(self.err("Piecewise takes (value, condition) pairs", a.span)),
            }
        }
        let Some((last_val, last_cond, last_span)) = pairs.pop() else {
            return Err(self.err("Piecewise needs at least one (value, condition) pair", span));
        };
        if last_cond != Expr::Bool(true) {
            return Err(self
                .err(
                    "Piecewise without a final (value, True) branch is undefined on some values",
                    last_span,
                )
                .with_help(
                    "PyTorch always ends Piecewise with a True branch; the text may be truncated",
                ));
        }
        Ok(pairs
            .into_iter()
            .rev()
            .fold(last_val, |acc, (v, c, _)| Expr::Ite(b(c), b(v), b(acc))))
    }
}

/// A call being lowered ([`Lower::call`]): the function's name, its arguments and its span,
/// with the checks and conversions the functions' arguments share.
struct Call<'l, 's> {
    lowering: &'l Lower<'s>,
    func: &'l str,
    args: &'l [Spanned],
    span: parse::Span,
}

impl Call<'_, '_> {
    /// An error unless `ok`: the function takes `want` arguments.
    fn arity(&self, want: &str, ok: bool) -> Result<(), ParseError> {
        if ok {
            Ok(())
        } else {
            Err(self.lowering.err(
                format!(
                    "`{}` takes {want} argument(s), got {}",
                    self.func,
                    self.args.len()
                ),
                self.span,
            ))
        }
    }

    fn all(&self) -> Result<Vec<Expr>, ParseError> {
        self.args.iter().map(|a| self.lowering.lower(a)).collect()
    }

    fn one(&self) -> Result<Expr, ParseError> {
        self.arity("1", self.args.len() == 1)?;
        self.lowering.lower(&self.args[0])
    }

    fn two(&self) -> Result<(Expr, Expr), ParseError> {
        self.arity("2", self.args.len() == 2)?;
        Ok((
            self.lowering.lower(&self.args[0])?,
            self.lowering.lower(&self.args[1])?,
        ))
    }

    fn three(&self) -> Result<[Expr; 3], ParseError> {
        self.arity("3", self.args.len() == 3)?;
        let v = self.all()?;
        Ok(v.try_into().expect("three arguments"))
    }

    fn cmp(&self, op: CmpOp) -> Result<Expr, ParseError> {
        let (x, y) = self.two()?;
        Ok(Expr::Cmp(op, b(x), b(y)))
    }

    fn nonempty(&self) -> Result<Vec<Expr>, ParseError> {
        self.arity("at least 1", !self.args.is_empty())?;
        self.all()
    }

    /// The call as an operator of torch's guards (sympy str, srepr, guard code): comparisons,
    /// integer division, rounding, conversions, min, max, abs, powers, logic and selection.
    /// `None` when the function is none of these.
    fn operator(&self) -> Result<Option<Expr>, ParseError> {
        Ok(Some(match self.func {
            // Comparisons (sympy str and srepr).
            "Eq" | "Equality" => self.cmp(CmpOp::Eq)?,
            "Ne" | "Unequality" => self.cmp(CmpOp::Ne)?,
            "Lt" | "StrictLessThan" => self.cmp(CmpOp::Lt)?,
            "Le" | "LessThan" => self.cmp(CmpOp::Le)?,
            "Gt" | "StrictGreaterThan" => self.cmp(CmpOp::Gt)?,
            "Ge" | "GreaterThan" => self.cmp(CmpOp::Ge)?,
            // Integer division family.
            "Mod" | "PythonMod" => {
                let (x, y) = self.two()?;
                Expr::Mod(b(x), b(y))
            }
            "FloorDiv" | "CleanDiv" => {
                let (x, y) = self.two()?;
                Expr::FloorDiv(b(x), b(y))
            }
            "CeilDiv" => {
                // ceil(a / b) == -((-a) // b)
                let (x, y) = self.two()?;
                let neg = |e: Expr| Expr::Mul(vec![Expr::int(-1), e]);
                neg(Expr::FloorDiv(b(neg(x)), b(y)))
            }
            "ModularIndexing" => {
                let [x, d, m] = self.three()?;
                Expr::Mod(b(Expr::FloorDiv(b(x), b(d))), b(m))
            }
            "IntTrueDiv" | "FloatTrueDiv" | "TrueDiv" => {
                let (x, y) = self.two()?;
                Expr::TrueDiv(b(x), b(y))
            }
            "LShift" | "RShift" => {
                let (x, y) = self.two()?;
                shift(self.func == "LShift", x, y)
            }
            // Rounding.
            "FloorToInt" | "floor" | "math.floor" => Expr::Round(RoundKind::Floor, b(self.one()?)),
            "CeilToInt" | "ceiling" | "math.ceil" => Expr::Round(RoundKind::Ceil, b(self.one()?)),
            "TruncToInt" | "TruncToFloat" | "math.trunc" | "int" | "torch.sym_int" => {
                Expr::Round(RoundKind::Trunc, b(self.one()?))
            }
            "RoundToInt" => Expr::Round(RoundKind::HalfEven, b(self.one()?)),
            "round" => {
                self.arity("1", self.args.len() == 1)
                    .map_err(|e| e.with_help("round(x, ndigits) is not supported on sizes"))?;
                Expr::Round(RoundKind::HalfEven, b(self.one()?))
            }
            // Identity conversions: float arithmetic on sizes is exact below 2**53.
            "ToFloat" | "Identity" | "float" | "torch.sym_float" => self.one()?,
            // Min, max, abs.
            "Max" | "max" | "torch.sym_max" => Expr::Max(self.nonempty()?),
            "Min" | "min" | "torch.sym_min" => Expr::Min(self.nonempty()?),
            "Abs" | "abs" => Expr::Abs(b(self.one()?)),
            // Powers.
            "Pow" | "PowByNatural" | "FloatPow" => {
                let (x, y) = self.two()?;
                Expr::Pow(b(x), b(y))
            }
            // A square root, float-valued: exact under a rounding or compared with an integer
            // (`expr.rs`'s `Root`), undefined elsewhere.
            "OpaqueUnaryFn_sqrt" | "math.sqrt" => {
                Expr::Pow(b(self.one()?), b(Expr::Const(Q::new(1, 2))))
            }
            // Logic and selection.
            "And" => Expr::And(self.nonempty()?),
            "Or" => Expr::Or(self.nonempty()?),
            "Not" | "torch.sym_not" => Expr::Not(b(self.one()?)),
            "Where" | "torch.sym_ite" => {
                let [c, x, y] = self.three()?;
                Expr::Ite(b(c), b(x), b(y))
            }
            "Piecewise" => self.lowering.piecewise(self.args, self.span)?,
            _ => return Ok(None),
        }))
    }

    /// The call as an srepr constructor (`Add`, `Mul`, `Symbol`, number literals) or one of
    /// sympy's constants. `None` when the function is none of these.
    fn constructor(&self) -> Result<Option<Expr>, ParseError> {
        let (args, span) = (self.args, self.span);
        let err = |msg: &str| Err(self.lowering.err(msg, span));
        Ok(Some(match self.func {
            "Add" => Expr::Add(self.nonempty()?),
            "Mul" => Expr::Mul(self.nonempty()?),
            "Symbol" => match args {
                [Spanned {
                    node: Node::Str(s), ..
                }] => Expr::sym(s),
                _ => return err("Symbol takes the symbol's name as a quoted string"),
            },
            "Integer" => {
                let e = self.one()?;
                match e {
                    Expr::Const(c) if c.is_integer() => e,
                    _ => return err("Integer takes an integer literal"),
                }
            }
            "Rational" => {
                let (x, y) = self.two()?;
                match (x, y) {
                    (Expr::Const(p), Expr::Const(q)) if !q.is_zero() => Expr::Const(
                        num::div(&p, &q).map_err(|e| self.lowering.err(e.to_string(), span))?,
                    ),
                    _ => return err("Rational takes two integer literals"),
                }
            }
            "Float" => match args.first().map(|a| &a.node) {
                Some(Node::Str(s)) | Some(Node::Float(s)) => {
                    Expr::Const(num::float_literal(s).ok_or_else(|| {
                        self.lowering
                            .err(format!("`{s}` is not a finite float"), span)
                    })?)
                }
                Some(Node::Int(v)) => Expr::int(*v),
                _ => return err("Float takes a number or a quoted number"),
            },
            "IntInfinity" | "Infinity" => {
                self.arity("0", args.is_empty())?;
                Expr::Inf(true)
            }
            "NegativeIntInfinity" | "NegativeInfinity" => {
                self.arity("0", args.is_empty())?;
                Expr::Inf(false)
            }
            "BooleanTrue" => Expr::Bool(true),
            "BooleanFalse" => Expr::Bool(false),
            "Half" => Expr::Const(Q::new(1, 2)),
            "One" => Expr::Const(Q::one()),
            "Zero" => Expr::Const(Q::zero()),
            "NegativeOne" => Expr::int(-1),
            _ => return Ok(None),
        }))
    }
}

fn unsupported_help(func: &str) -> String {
    if func.starts_with("OpaqueUnaryFn")
        || func.contains("sqrt")
        || func.contains("log")
        || func.contains("exp")
    {
        "transcendental functions have no exact integer semantics; dimguard cannot decide this guard".into()
    } else if func.starts_with("BitwiseFn") {
        "bitwise functions on sizes are not supported".into()
    } else {
        format!(
            "dimguard understands sympy functions ({}), guard-code functions ({}) and srepr constructors; see docs/GUARDS.md",
            SYMPY_FUNCTIONS[..8].join(", ") + ", ...",
            GUARD_CODE_FUNCTIONS[..6].join(", ") + ", ..."
        )
    }
}

/// `x << y` or `x >> y`: Python raises `ValueError: negative shift count` for `y < 0`, so the
/// guard fails there (lowered to a division by zero, which raises the same way).
fn shift(left: bool, x: Expr, y: Expr) -> Expr {
    let p = Expr::Pow(Box::new(Expr::int(2)), Box::new(y.clone()));
    let shifted = if left {
        Expr::Mul(vec![x, p])
    } else {
        Expr::FloorDiv(Box::new(x), Box::new(p))
    };
    let raises = || Expr::FloorDiv(Box::new(Expr::int(1)), Box::new(Expr::int(0)));
    match &y {
        Expr::Const(c) if *c.numer() >= 0 => shifted,
        Expr::Const(_) => raises(),
        _ => Expr::Ite(
            Box::new(Expr::Cmp(CmpOp::Ge, Box::new(y), Box::new(Expr::int(0)))),
            Box::new(shifted),
            Box::new(raises()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(e: &Expr, x: i128) -> bool {
        let var = e
            .atoms()
            .into_iter()
            .next()
            .map(|a| a.to_string())
            .unwrap_or_default();
        e.holds_at(&var, x)
    }

    #[test]
    fn both_eras_agree_on_the_raft_guard() {
        let old = parse_guard("Eq(Mod(((L['image1'].size()[2] - 1)//4) - 1, 2), 0)").unwrap();
        let new = parse_guard("((((-1) + L['image1'].size()[2]) // 4) - 1) % 2 == 0").unwrap();
        let srepr = parse_guard(
            "Equality(Mod(Add(FloorDiv(Add(Symbol('s0', positive=True, integer=True), Integer(-1)), Integer(4)), Integer(-1)), Integer(2)), Integer(0))",
        )
        .unwrap();
        for x in 0..200 {
            let want = matches!(x % 8, 0 | 5 | 6 | 7);
            assert_eq!(at(&old, x), want, "old {x}");
            assert_eq!(at(&new, x), want, "new {x}");
            assert_eq!(at(&srepr, x), want, "srepr {x}");
        }
    }

    #[test]
    fn guard_code_functions() {
        let g = parse_guard(
            "(1 + (((-1) + L['x'].size()[3]) // 2)) == math.trunc(0.5*torch.sym_float(L['x'].size()[3]))",
        )
        .unwrap();
        for x in 2..100 {
            assert_eq!(at(&g, x), x % 2 == 0, "{x}");
        }
        let g = parse_guard("min(x, 10) + max(x, 3) + abs(-x) >= torch.sym_max(x, 4)").unwrap();
        assert!(at(&g, 5));
    }

    #[test]
    fn sympy_functions() {
        let g = parse_guard("Piecewise((s0, Eq(Mod(s0, 2), 0)), (s0 + 1, True)) >= 10").unwrap();
        assert!(at(&g, 9) && at(&g, 10) && !at(&g, 8));
        let g = parse_guard("And(Ge(s0, 2), Le(s0, 10), Not(Eq(s0, 5)))").unwrap();
        assert!(at(&g, 2) && !at(&g, 5) && !at(&g, 11));
        let g = parse_guard("(s0 >= 2) & (s0 <= 10) | Eq(s0, 100)").unwrap();
        assert!(at(&g, 100) && at(&g, 3) && !at(&g, 50));
        let g = parse_guard("CeilToInt(IntTrueDiv(s0, 3)) == FloorDiv(s0 + 2, 3)").unwrap();
        assert!((0..100).all(|x| at(&g, x)));
        let g = parse_guard("s0 < oo").unwrap();
        assert!(at(&g, i64::MAX as i128));
        let g = parse_guard("Eq(Min(9223372036854775807, s0), s0)").unwrap();
        assert!(at(&g, 5));
        let g = parse_guard("RoundToInt(IntTrueDiv(s0, 2)) == 2").unwrap();
        // round() ties to even: 3/2 -> 2, 5/2 -> 2, 7/2 -> 4.
        assert!(at(&g, 3) && at(&g, 4) && at(&g, 5) && !at(&g, 6) && !at(&g, 7) && !at(&g, 1));
        let g = parse_guard("Where(s0 > 3, s0**2, 2*s0) > 20").unwrap();
        assert!(at(&g, 5) && !at(&g, 3));
        let g = parse_guard("Eq(Mul(Integer(8), Symbol('s24', integer=True)), 16) | Eq(Pow(Symbol('s24'), Integer(2)), 9)").unwrap();
        assert!(at(&g, 2) && at(&g, 3) && !at(&g, 4));
    }

    #[test]
    fn unsupported_functions_are_named_with_a_caret() {
        let e = parse_guard("OpaqueUnaryFn_log(L['x'].size()[2]) > 4").unwrap_err();
        assert!(e.message.contains("`OpaqueUnaryFn_log`"), "{e}");
        assert_eq!(e.offset, 0);
        assert_eq!(e.len, "OpaqueUnaryFn_log".len());
        let e = parse_guard("Mod(x)").unwrap_err();
        assert!(e.message.contains("takes 2 argument"), "{e}");
        let e = parse_guard("x & 3").unwrap_err();
        assert!(e.message.contains("bitwise"), "{e}");
    }
}
