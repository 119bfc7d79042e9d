//! The solver's data types, in one place.
//!
//! * [`Expr`] — one expression type for every guard syntax PyTorch prints. Integer and boolean
//!   terms share the type (sympy's `Piecewise` mixes them); every integer operation has Python's
//!   exact semantics (see `docs/GUARDS.md`).
//! * [`DimSet`] / [`Segment`] — an exact set of sizes: a sorted union of pieces
//!   `{ x : lo <= x <= hi and x mod modulus in residues }`. This is the `feasible` form of the
//!   JSON contract.
//! * [`Progression`] — one arithmetic progression `{ x : lo <= x <= hi, x % modulus == residue }`:
//!   exactly what a single `torch.export.Dim` (plain or derived) can express.

use crate::num::Q;
use serde::Serialize;
use std::sync::Arc;

/// A symbolic size: the text PyTorch printed for it, whitespace removed.
///
/// `L['x'].size()[2]`, `L['args'][0].size()[1]`, `x.size()[2]`, `s0` (backed symbol),
/// `u0` (unbacked symbol).
pub type Atom = Arc<str>;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `==`, `Eq`
    Eq,
    /// `!=`, `Ne`
    Ne,
    /// `<`, `Lt`, `StrictLessThan`
    Lt,
    /// `<=`, `Le`, `LessThan`
    Le,
    /// `>`, `Gt`, `StrictGreaterThan`
    Gt,
    /// `>=`, `Ge`, `GreaterThan`
    Ge,
}

/// How a rational is turned into an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RoundKind {
    /// `math.floor`, `FloorToInt`
    Floor,
    /// `math.ceil`, `CeilToInt`
    Ceil,
    /// `math.trunc`, `int()`, `TruncToInt`, `torch.sym_int`
    Trunc,
    /// `round()`, `RoundToInt`: to nearest, ties to even
    HalfEven,
}

/// A guard or size expression with exact semantics.
///
/// Values are exact rationals ([`Q`]); a guard evaluates to a boolean. Division and modulo are
/// Python's floor operations; `TrueDiv` is exact rational division (PyTorch's float arithmetic
/// on sizes below 2^53 is exact, see `docs/GUARDS.md`).
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// An exact constant (integer literals, `Rational(1, 2)`, float literals such as `0.5`).
    Const(Q),
    /// `oo` / `int_oo` (`true`) or `-oo` (`false`).
    Inf(bool),
    /// `True` / `False`.
    Bool(bool),
    /// A symbolic size.
    Sym(Atom),
    /// Sum of terms.
    Add(Vec<Expr>),
    /// Product of factors.
    Mul(Vec<Expr>),
    /// `a ** b` (`Pow`, `PowByNatural`, `FloatPow`).
    Pow(Box<Expr>, Box<Expr>),
    /// Exact division `a / b` (`IntTrueDiv`, `FloatTrueDiv`).
    TrueDiv(Box<Expr>, Box<Expr>),
    /// Floor division `a // b` (`FloorDiv`, `CleanDiv`).
    FloorDiv(Box<Expr>, Box<Expr>),
    /// Floor modulo `a % b` (`Mod`, `PythonMod`).
    Mod(Box<Expr>, Box<Expr>),
    /// `floor`, `ceil`, `trunc` or `round` of a rational.
    Round(RoundKind, Box<Expr>),
    /// `Min(...)`, `min(...)`.
    Min(Vec<Expr>),
    /// `Max(...)`, `max(...)`.
    Max(Vec<Expr>),
    /// `Abs(x)`, `abs(x)`.
    Abs(Box<Expr>),
    /// A comparison.
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    /// Conjunction.
    And(Vec<Expr>),
    /// Disjunction.
    Or(Vec<Expr>),
    /// Negation.
    Not(Box<Expr>),
    /// `cond ? then : else` (`Piecewise`, `Where`, `torch.sym_ite`, `a if c else b`).
    Ite(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// One piece of a [`DimSet`]: `{ x : lo <= x <= hi and x mod modulus in residues }`.
///
/// Invariants kept by every constructor in `set.rs`: `lo` and `hi` are members, `modulus >= 1`,
/// `residues` is sorted, non-empty and within `0..modulus`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Segment {
    /// Smallest member.
    pub lo: i128,
    /// Largest member.
    pub hi: i128,
    /// Period of the residue pattern.
    pub modulus: i128,
    /// Residues (Python `%`) that are members.
    pub residues: Vec<i128>,
}

/// An exact, finite set of integers: sorted, disjoint [`Segment`]s.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DimSet {
    pub(crate) segments: Vec<Segment>,
}

/// An arithmetic progression `{ x : lo <= x <= hi, x % modulus == residue }`; `lo` and `hi`
/// are members. A single `torch.export.Dim` expresses exactly these sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub struct Progression {
    /// First member.
    pub lo: i128,
    /// Last member.
    pub hi: i128,
    /// Step (1 for a plain interval).
    pub modulus: i128,
    /// `lo % modulus`.
    pub residue: i128,
}
