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
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Largest size: PyTorch sizes are int64.
pub const SIZE_MAX: i128 = i64::MAX as i128;
/// Lower bound PyTorch omits from a printed range (its default minimum for dynamic sizes).
pub const DEFAULT_MIN: i128 = 2;

/// A symbolic size: the text PyTorch printed for it, whitespace removed.
///
/// `L['x'].size()[2]`, `L['args'][0].size()[1]`, `x.size()[2]`, `s0` (backed symbol),
/// `u0` (unbacked symbol).
pub type Atom = Arc<str>;

/// Whether `name` is a symbol PyTorch made for a size (`s3`, `u0`): `s` or `u` and one or more
/// decimal digits. Sources (`L['x'].size()[2]`) and user names (`batch`) are not.
///
/// ```
/// use dimguard_solver::{is_backed, is_size_symbol, is_unbacked};
///
/// assert!(is_size_symbol("s3") && is_size_symbol("u0"));
/// assert!(!is_size_symbol("s") && !is_size_symbol("x.size()[0]") && !is_size_symbol("upper"));
/// assert!(is_unbacked("u17") && !is_unbacked("s17") && !is_unbacked("u"));
/// assert!(is_backed("s53") && !is_backed("u0"));
/// ```
pub fn is_size_symbol(name: &str) -> bool {
    name.len() > 1 && name.starts_with(['s', 'u']) && name[1..].bytes().all(|b| b.is_ascii_digit())
}

/// Whether `name` is an unbacked symbol (`u0`, `u17`): a size the model makes at run time
/// (`.item()`, `nonzero`, ...), with no traced value and no input dimension behind it.
pub fn is_unbacked(name: &str) -> bool {
    name.starts_with('u') && is_size_symbol(name)
}

/// Whether `name` is a backed symbol (`s0`, `s53`): a size traced from an input dimension.
pub fn is_backed(name: &str) -> bool {
    name.starts_with('s') && is_size_symbol(name)
}

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
///
/// Every guard syntax PyTorch prints parses to the same `Expr`; evaluation is the oracle:
///
/// ```
/// use dimguard_solver::parse_guard;
///
/// // sympy style and guard-code style, one meaning.
/// let a = parse_guard("Eq(Mod(((L['x'].size()[2] - 1)//4) - 1, 2), 0)").unwrap();
/// let b = parse_guard("((((-1) + L['x'].size()[2]) // 4) - 1) % 2 == 0").unwrap();
/// for h in 135..=2160 {
///     assert_eq!(a.holds_at("L['x'].size()[2]", h), b.holds_at("L['x'].size()[2]", h));
/// }
/// assert!(a.holds_at("L['x'].size()[2]", 136)); // (135 // 4) - 1 = 32, even
/// assert!(!a.holds_at("L['x'].size()[2]", 140)); // (139 // 4) - 1 = 33, odd
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
///
/// Sets of any width cost what their pattern costs, not what their count is:
///
/// ```
/// use dimguard_solver::DimSet;
///
/// let mult8 = DimSet::progression(8, 1 << 62, 8, 0); // 8, 16, ..., 2^62
/// let odd_blocks = DimSet::progression(0, 1 << 62, 16, 8); // 8, 24, 40, ...
/// let both = mult8.intersect(&odd_blocks).unwrap();
/// assert_eq!(both, odd_blocks.intersect(&DimSet::interval(8, 1 << 62)).unwrap());
/// assert_eq!(both.count(), (1u128 << 58));
/// assert!(both.contains(24) && !both.contains(32));
/// // What a derived size 2*s + 1 takes when s ranges over {8, 24, ...}:
/// assert_eq!(both.affine_image(2, 1).unwrap().min(), Some(17));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct DimSet {
    pub(crate) segments: Vec<Segment>,
}

/// An arithmetic progression `{ x : lo <= x <= hi, x % modulus == residue }`; `lo` and `hi`
/// are members. A single `torch.export.Dim` expresses exactly these sets.
///
/// ```
/// use dimguard_solver::{python::dim_code, Progression};
///
/// let p = Progression { lo: 136, hi: 2120, modulus: 64, residue: 8 };
/// assert_eq!(p.count(), 32);
/// assert_eq!(dim_code("h", &p), "_h = Dim('_h', min=2, max=33)\nh = 64*_h + 8");
/// ```
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
