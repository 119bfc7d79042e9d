//! The report contract: every type `dimguard` serializes with `--json`, in one place.
//!
//! Programs drive `dimguard` through this JSON (the contract is `docs/CONTRACT.md`). The
//! contract's fields keep their names and meaning; every other field is additional. The types
//! are plain data: [`diagnose`](crate::diagnose) fills a [`Report`], `dimguard-graph`'s `check`
//! a [`CheckReport`], `dimguard-prove`'s `verify` a [`VerifyReport`].
//!
//! ```
//! use dimguard_solver::report::{Certificate, Feasible};
//! use dimguard_solver::DimSet;
//!
//! // The contract's `feasible` form of a set: count, min, max and the exact segments.
//! let f = Feasible::from(&DimSet::progression(136, 2120, 64, 8));
//! assert_eq!((f.count, f.min, f.max), (32, Some(136), Some(2120)));
//! assert_eq!(
//!     serde_json::to_string(&f.segments).unwrap(),
//!     r#"[{"lo":136,"hi":2120,"modulus":64,"residues":[8]}]"#
//! );
//! // Certificates serialize as the contract's strings.
//! assert_eq!(serde_json::to_string(&Certificate::Z3).unwrap(), r#""z3""#);
//! ```

use crate::error::Error;
use crate::num::ArithError;
use crate::types::{DimSet, Expr, Progression};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// How the soundness of an answer is known (the contract's `certificate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Certificate {
    /// Z3 proved it over the whole set (or verified a counterexample).
    Z3,
    /// Every value was evaluated against every guard.
    Enumeration,
    /// Not independently checked.
    None,
}

impl Certificate {
    /// The contract's string: `"z3"`, `"enumeration"` or `"none"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Certificate::Z3 => "z3",
            Certificate::Enumeration => "enumeration",
            Certificate::None => "none",
        }
    }
}

impl fmt::Display for Certificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How an exact set was computed (a suggestion's `proof`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proof {
    /// The periodic method: exact over the whole range in closed form.
    Periodic,
    /// Every value of the range was evaluated.
    Enumeration,
}

/// How one guard was solved (a guard's `method`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardMethod {
    /// The periodic method.
    Periodic,
    /// Value by value.
    Enumeration,
    /// Not decided within the limits.
    Undecided,
    /// Outside the engine's methods over this range; Z3 decided it (every value passes, or the
    /// values past the first 65,536, which were enumerated).
    Z3,
    /// A guard over several sizes, decided with the others by the joint engine (see the
    /// report's `joint_sets`); it has no set of this size's values alone.
    Joint,
}

impl fmt::Display for GuardMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GuardMethod::Periodic => "periodic",
            GuardMethod::Enumeration => "enumeration",
            GuardMethod::Undecided => "undecided",
            GuardMethod::Z3 => "z3",
            GuardMethod::Joint => "joint",
        })
    }
}

/// Why the periodic method does not apply to a guard (then the guard is evaluated value by value,
/// or, over a range too wide for that, left undecided).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotPeriodic {
    /// The guard is not quasi-affine in the size (a size-dependent divisor, a product of sizes).
    NotQuasiAffine(&'static str),
    /// Exact arithmetic failed (an overflow).
    Arith(ArithError),
    /// A value is undefined on part of the range (`oo - oo`, a boolean used as a number).
    Undefined(&'static str),
    /// The guard needs a period of at least this much, above the limit.
    PeriodLimit(i128),
    /// The guard splits into too many affine pieces.
    Pieces,
    /// A work budget ran out before the periodic method finished.
    Exhausted(crate::budget::Exhausted),
}

impl fmt::Display for NotPeriodic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotPeriodic::NotQuasiAffine(what) => {
                write!(f, "the guard is not quasi-affine ({what})")
            }
            NotPeriodic::Arith(e) => write!(f, "exact evaluation failed ({e})"),
            NotPeriodic::Undefined(what) => {
                write!(f, "the guard is undefined on part of the range ({what})")
            }
            NotPeriodic::PeriodLimit(p) => {
                write!(
                    f,
                    "the guard needs a period of at least {p}, above the limit"
                )
            }
            NotPeriodic::Pieces => f.write_str("the guard splits into too many affine pieces"),
            NotPeriodic::Exhausted(e) => f.write_str(&e.reason()),
        }
    }
}

/// Why a question was left undecided: a limit, never a guess. `Display` says it in words a user
/// can act on (the reports carry that text).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undecided {
    /// A one-size question about a guard that also names another size.
    OtherSize(String),
    /// An exact set operation failed (overflow, or a period above the limit).
    Exact(Error),
    /// The periodic method does not apply and the range is too wide to evaluate value by value.
    TooManyValues {
        /// Why the periodic method does not apply.
        because: NotPeriodic,
        /// Values in the range.
        values: u128,
        /// The most values evaluated one by one.
        limit: u128,
    },
    /// The joint search over linked sizes stopped before deciding every combination (its time
    /// budget or its memory cap); the decided part is exact.
    Budget {
        /// The linked sizes.
        sizes: Vec<String>,
        /// Which limit.
        limit: String,
        /// Combinations left undecided.
        combinations: u128,
    },
    /// The joint set of linked sizes is exact, but the values of one size that pass with every
    /// value of the others (its own answer) have no closed form within the budget.
    PerSize {
        /// The linked sizes.
        sizes: Vec<String>,
        /// The set operation that failed.
        error: Box<Error>,
    },
    /// One size of the group is defined by the others (`n == (h//16)*(w//16)`): every
    /// combination of the group is decided (`n` passes exactly at that value, within its own
    /// set, and the others pass the group with `n` written so), but each size's own set is not
    /// computed.
    Defined {
        /// The linked sizes.
        sizes: Vec<String>,
        /// The defined size.
        dim: String,
        /// Its definition over the others, as the guards write it.
        expr: String,
    },
    /// Outside every exact method, and Z3 did not prove that every value passes.
    NotProved {
        /// Why the exact methods do not apply.
        because: Box<Undecided>,
        /// What Z3 said: a failing value, or why it could not decide.
        z3: String,
    },
    /// A size the guard mentions has an undecided guard of its own.
    Depends(String),
    /// A work budget of the command ran out (`--time-budget`, `--output-budget`): the answer is
    /// partial.
    Exhausted(crate::budget::Exhausted),
    /// Evaluating the guard at a value needs an integer past [`crate::expr::MAX_BITS`] bits:
    /// Python would compute it, dimguard does not guess.
    Overflow {
        /// The value of the size.
        at: i128,
        /// The bound on intermediate values, in bits.
        bits: u64,
    },
}

impl fmt::Display for Undecided {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Undecided::OtherSize(other) => write!(
                f,
                "the guard also depends on `{other}`; a single size cannot decide it"
            ),
            Undecided::Exact(e) => write!(f, "{e}"),
            Undecided::TooManyValues {
                because,
                values,
                limit,
            } => write!(
                f,
                "{because}; the range holds {values} values, more than the {limit} dimguard evaluates one by one"
            ),
            Undecided::Budget {
                sizes,
                limit,
                combinations,
            } => write!(
                f,
                "the guards linking {} were decided for part of the sizes only: {limit} ({} combinations left undecided)",
                sizes.join(", "),
                count_text(*combinations)
            ),
            Undecided::PerSize { sizes, error } => write!(
                f,
                "the joint set of {} is exact (see linked), but the values of each size that pass with every value of the others were not found: {error}",
                sizes.join(", ")
            ),
            Undecided::Defined { sizes, dim, expr } => write!(
                f,
                "the joint set of {} is exact (see linked: `{dim}` = {expr}), but the values of each size that pass with every value of the others are not computed (its values with some partner, where known, are under with_some_partner)",
                sizes.join(", ")
            ),
            Undecided::NotProved { because, z3 } => write!(f, "{because}; {z3}"),
            Undecided::Depends(size) => write!(
                f,
                "`{size}` has an undecided guard of its own, so the guards linking it are not decided"
            ),
            Undecided::Exhausted(e) => f.write_str(&e.reason()),
            Undecided::Overflow { at, bits } => write!(
                f,
                "overflow: at {at} an intermediate value of the guard exceeds {bits} bits"
            ),
        }
    }
}

impl Undecided {
    /// Whether exact 128-bit arithmetic overflowed on the way.
    pub fn is_overflow(&self) -> bool {
        matches!(
            self,
            Undecided::Exact(Error::Arith(ArithError::Overflow))
                | Undecided::Overflow { .. }
                | Undecided::TooManyValues {
                    because: NotPeriodic::Arith(ArithError::Overflow),
                    ..
                }
        )
    }
}

// ---- `dimguard diagnose --json` ----

/// The diagnosis of one message.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    /// One entry per dimension, in the order the message first names them.
    pub dims: Vec<DimReport>,
    /// Dimension names that must always be equal.
    pub equalities: Vec<[String; 2]>,
    /// Relations `name = expr` between dimensions, as printed.
    pub relations: Vec<RelationReport>,
    /// Python to paste: every dimension's best sound spec, and the `dynamic_shapes` dict when
    /// every dimension's input is known.
    pub dynamic_shapes: String,
    /// Dimensions linked by "must always be equal" / "must always be related" lines, solved
    /// together: one `Dim` for the root, derived dims for the others.
    pub linked: Vec<LinkedGroup>,
    /// Guards on data-dependent (unbacked) sizes, with the `torch._check` lines that decide them.
    pub data_dependent: Vec<DataDependent>,
    /// Bullet lines that were not understood.
    pub unrecognized: Vec<String>,
    /// The guards grouped by the line of the user's code they come from (inputs that say where
    /// guards come from: structured traces), with what each line requires of each size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<LineReport>,
    /// The form the input was read as (`"constraint_violation"`, `"torch_logs"`,
    /// `"draft_export"`, `"guard_failed"`, `"input_check"`, `"solver_crash"`, `"torch_trace"`,
    /// `"data_dependent"`, `"program"` for a printed `ExportedProgram`, `"guards"` for size
    /// conditions found in any other text).
    pub form: Form,
    /// Guard-looking lines that could not be read, with their line and the reason.
    pub unreadable: Vec<Unreadable>,
    /// What the reader assumed or skipped (a default range, suppressed guards).
    pub notes: Vec<String>,
    /// Guards over several sizes, and what today's joint solver says about them.
    pub joint: Vec<JointGuard>,
    /// For a run-time failure: which sizes pass, and why the size that ran fails.
    pub runtime: Option<RuntimeReport>,
    /// Every group of independent sizes linked by guards, solved jointly: the exact set of
    /// tuples that pass, the largest sound box, real failing tuples (`check`'s `joint` shape).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joint_sets: Vec<JointReport>,
    /// Every guard of the text and what became of it (`check`'s `guards` shape; `sizes` are
    /// dimension names).
    pub guards: Vec<GuardUse>,
    /// Sizes Torch-TensorRT found no upper bound for (`Dynamic input x (shape:
    /// torch.Size([u0, 4])) has no max bound for dim 0`), each with the bound the program gives
    /// where `diagnose --program` read one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing_bounds: Vec<MissingBound>,
}

/// A size Torch-TensorRT found no upper bound for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MissingBound {
    /// The text's line.
    pub line: usize,
    /// The size as the text names it (`dynamic_rows.shape[0]`).
    pub source: String,
    /// Its symbol in the text (`u0`), or the source where the text gives none.
    pub symbol: String,
    /// The lower bound Torch-TensorRT holds (`min(0)`).
    pub min: i128,
    /// What the exported program (`--program`) says of the symbol; absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<ProgramBound>,
}

/// The bound an exported program implies for a symbol: the range torch recorded for it in
/// `range_constraints` (after the program's own `torch._check`s and guards, which torch folds
/// into it; the run-time asserts the program keeps raise outside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramBound {
    /// The program read.
    pub path: String,
    /// The range torch recorded, `[lo, hi]` (`null`: no bound on that side); absent when the
    /// program has no range for the symbol.
    pub range: Option<[Option<i128>; 2]>,
    /// The sound max bound: every size the program accepts is at most this (null: the program
    /// implies none).
    pub max: Option<i128>,
}

/// The guards one line of the user's code added, and what they remove.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LineReport {
    /// The file (as recorded).
    pub file: String,
    /// The line.
    pub line: u32,
    /// The function.
    pub function: String,
    /// The source line, when recorded.
    pub code: Option<String>,
    /// Whether the line is the user's own code (false: only a torch frame was known).
    pub user: bool,
    /// The torch operators that recorded the guards (`infer_size`, `slice_forward`).
    pub ops: Vec<String>,
    /// The guards, as recorded.
    pub guards: Vec<String>,
    /// What the line's guards together require of each size they mention alone.
    pub dims: Vec<LineDim>,
    /// Guards of this line over several sizes, as recorded.
    pub links: Vec<String>,
}

/// What one line's guards require of one size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LineDim {
    /// The dimension.
    pub name: String,
    /// In plain terms, over the dimension's range.
    pub requires: String,
    /// How many values of the range the line's guards remove (null when undecided).
    pub removes: Option<u128>,
    /// How many values the range holds.
    pub of: u128,
}

/// Dimensions solved together.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LinkedGroup {
    /// The root dimension (its own `Dim`).
    pub root: String,
    /// Every other dimension as an expression of the root (`dy = dx + 1`).
    pub members: Vec<[String; 2]>,
    /// The root's values for which every member's guards hold (null when undecided).
    pub feasible: Option<Feasible>,
    /// Code: the root's best `Dim`, then the derived dims.
    pub code: Option<String>,
    /// How the code's soundness is known: `"enumeration"`, `"z3"` or `"none"`.
    pub certificate: Certificate,
    /// Why undecided.
    pub undecided: Option<String>,
    /// The size the root stands for.
    #[serde(skip)]
    pub root_var: String,
    /// Every guard of the group, over the root.
    #[serde(skip)]
    pub guards: Vec<Expr>,
    /// The root's progression in `code`.
    #[serde(skip)]
    pub progression: Option<Progression>,
}

/// A guard torch could not decide because it depends on data (`u0` from `.item()`, `nonzero`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DataDependent {
    /// The guard as printed.
    pub guard: String,
    /// The unbacked sizes it mentions.
    pub sizes: Vec<String>,
    /// Where it holds, for a guard on one size (over the sizes 0..2^63-1).
    pub holds: Option<String>,
    /// `torch._check` lines: assert the guard, or its negation, before the code that branches.
    /// For an integer expression (`Could not extract specialized integer`), the first fixes its
    /// value (`torch._check(u0 + 1 == V)`) and the second is empty.
    pub torch_check: [String; 2],
    /// The input size the expression's one symbol stands for (`x.shape[2]`), when known (from
    /// the text, `--spec` or `--range`).
    pub source: Option<String>,
    /// Every unbacked symbol the expression names, with its input size, name and range.
    pub symbols: Vec<UnbackedSize>,
    /// The range the expression is decided over (its one symbol's): the exported range.
    pub range: Option<[i128; 2]>,
    /// The exact sizes of `range` at which the expression is true (the contract's set form;
    /// null when undecided or over several sizes).
    pub when_true: Option<Feasible>,
    /// The exact sizes of `range` at which it is false.
    pub when_false: Option<Feasible>,
    /// `true` or `false` when that branch holds at every size of the range: assuming it then
    /// removes nothing (null when both branches occur, or undecided).
    pub always: Option<bool>,
    /// How `always` / the sets are known: `"enumeration"` (every size of the range evaluated),
    /// `"z3"` (Z3 proved the `always` branch over the range), or `"none"` (the exact periodic
    /// method alone).
    pub certificate: Certificate,
    /// The traced example's size (`--example`), when given.
    pub example: Option<i128>,
    /// The branch the traced example takes.
    pub example_branch: Option<bool>,
    /// The branch to assume, in the user's names, as a `ShapesSpec` assumption: the branch that
    /// holds over the whole range when there is one, else the example's (null when neither is
    /// known).
    pub assumption: Option<String>,
    /// How many sizes of the range the assumption removes.
    pub removes: Option<u128>,
    /// Where the expression comes from (the user's call, torch's frame).
    pub provenance: Option<crate::provenance::Provenance>,
    /// Why the sets are not given.
    pub undecided: Option<String>,
}

/// An unbacked symbol of a data-dependent expression and the input size it stands for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnbackedSize {
    /// `u1`.
    pub symbol: String,
    /// The input size as the text (or spec) writes it: `x.shape[2]`.
    pub source: Option<String>,
    /// The name it is written with in assumptions (the user's `ShapeVar` name when known).
    pub name: String,
    /// Its range.
    pub range: Option<[i128; 2]>,
}

/// A relation between two dimensions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RelationReport {
    /// The dependent dimension.
    pub name: String,
    /// The dimension it is expressed in.
    pub other: String,
    /// The right-hand side.
    pub expr: String,
}

/// What the diagnosis found for one dimension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Some values of the range fail a guard.
    Constrained,
    /// Every value of the range satisfies every guard: torch could not prove it.
    Spurious,
    /// No value of the range satisfies the guards.
    Unsatisfiable,
    /// The code specialized the dimension to a constant.
    Specialized,
    /// A guard could not be decided within the limits.
    Undecided,
    /// The message names the dimension but lists no guard for it.
    Unconstrained,
    /// Guards link it to other sizes and reject some combinations of their values: which of
    /// its values pass depends on the others (see `joint_sets`); its spec is its side of the
    /// group's largest sound box (`box_side`).
    Linked,
}

/// One dimension's diagnosis.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DimReport {
    /// Debug name.
    pub name: String,
    /// Source such as `L['x'].size()[2]`.
    pub source: Option<String>,
    /// The requested range `[lo, hi]` (omitted bounds: 2 and 9223372036854775807).
    pub range: Option<[i128; 2]>,
    /// Summary.
    pub status: Status,
    /// The exact set of values in `range` that satisfy every guard (null when undecided).
    pub feasible: Option<Feasible>,
    /// Ranked single-`Dim` progressions inside `feasible`; the first is maximal.
    pub suggestions: Vec<Suggestion>,
    /// `"proven"`, or `"steps<=N"` when only steps up to N were searched.
    pub maximality: String,
    /// What each guard requires.
    pub guards: Vec<GuardReport>,
    /// The constant the code specialized the dimension to.
    pub specialized: Option<i128>,
    /// "holds 254 of 1014 valid values".
    pub coverage: Option<String>,
    /// How to pad inputs to a valid size.
    pub padding: Option<Padding>,
    /// torch's own suggested fix for this dimension, checked.
    pub torch_fix: Option<FixCheck>,
    /// Why the dimension is undecided.
    pub undecided: Option<String>,
    /// What to do, in sentences.
    pub advice: Vec<String>,
    /// The dimensions linked to this one by guards over several sizes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked_with: Vec<String>,
    /// For a dimension linked to others: what the joint set says of it. Read back apart (as a
    /// [`LinkedSides`] from the same object): serde cannot read 128-bit integers in a struct
    /// with a flattened field.
    #[serde(flatten, skip_deserializing)]
    pub sides: LinkedSides,
}

impl DimReport {
    /// Whether this is an unbacked size (`u0`, made in the model by `.item()`, `nonzero`, ...)
    /// that no input dimension stands for: no `Dim` applies to it (a spec bounds inputs), only
    /// a `torch._check` where the model makes it ([`crate::python::unbacked_checks`], the
    /// `code` of its suggestions).
    pub fn is_unbacked(&self) -> bool {
        crate::types::is_unbacked(&self.name)
            && self.source.as_deref().is_none_or(crate::types::is_unbacked)
    }
}

/// What the joint set of a group says of one of its sizes (`diagnose`'s `dims[]` and `check`'s
/// `dims[]` carry these keys in place, each only when present).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkedSides {
    /// The values that pass every guard with **some** value of the others (the size's own
    /// answer, `feasible` or `accepted`, holds those that pass with every value of the others'
    /// accepted sets, so that any product of suggestions is sound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub with_some_partner: Option<Feasible>,
    /// Its side of the group's largest sound box (`joint_sets[]`, `check`'s `joint[]`), the
    /// spec the `dynamic_shapes` block uses (sound together with the other sides).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub box_side: Option<Suggestion>,
    /// For one of two sizes that work when equal, when one shared `Dim` admits more pairs than
    /// the largest box (`shared`): its spec under that `Dim` (the second size's `code` writes it
    /// as the first); the `dynamic_shapes` block uses it instead of `box_side`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_side: Option<Suggestion>,
    /// When the traced sizes are known (`--example`, a trace) and the largest sound box leaves
    /// them out: its side of a sound box through them, which the `dynamic_shapes` block uses
    /// (torch refuses a spec that excludes its example inputs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example_box_side: Option<Suggestion>,
    /// `check`'s `dims[]`, for a linked size whose group lists every box of its joint set:
    /// whether the link excludes none of its values (the joint set is its side times the
    /// others': each of its values that passes, passes with every accepted combination of theirs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_excludes_none: Option<bool>,
    /// For a size tied to another (equal to it, derived from it, or in its block): the partner,
    /// the tie, and the size's values that pass with some value of the partner (the partner's
    /// set mapped through the tie).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tied_to: Option<TiedTo>,
    /// For a size the others define (`joint[].defined`) whose values with some partner are the
    /// products of two factors (`(image_3 // 16)*(image_2 // 16)`): that set, exact, in a form
    /// of its own (no periodic set holds it; `with_some_partner` stays absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defined_values: Option<DefinedValues>,
}

/// The values a defined size takes with some partner, as products of two factors
/// ([`LinkedSides::defined_values`]): `n` is in the set exactly when it lies in `within` and
/// `n = p*q` with `p`, `q` in the ranges of one entry of `ranges`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DefinedValues {
    /// `products`.
    pub form: String,
    /// The definition over the sizes' names.
    pub relation: String,
    /// The two factors, over the sizes' names (`image_3 // 16`).
    pub factors: [String; 2],
    /// Per box of the others, each factor's least and greatest value.
    pub ranges: Vec<[[i128; 2]; 2]>,
    /// The defined size's own set (least, greatest).
    pub within: [i128; 2],
    /// The set in words (`the composite numbers from 4`).
    pub text: String,
    /// Its least members.
    pub examples: Vec<i128>,
    /// The least values of `within` outside it (they fail with every partner).
    pub excluded_examples: Vec<i128>,
}

/// A size tied to another size: it passes exactly with the partner values the tie allows, so its
/// answer is its partner's, mapped through the tie ("equal to a_2: 465 of 929").
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TiedTo {
    /// The partner, as the report names sizes (`a_2` in `diagnose` and `verify`, `a[2]` in
    /// `check`).
    pub partner: String,
    /// The partner's source (`L['a'].size()[2]`).
    pub source: String,
    /// The tie in words: `equal to a_2`, `equal to 2*a_2 + 1`, `in the block of 4 values
    /// holding a_2`.
    pub relation: String,
    /// Whether the size always equals its partner (`relation` is `equal to <partner>`).
    pub equal: bool,
    /// The size's values (in its own range) that pass with some value of the partner: the
    /// partner's set through the tie (null when the partner's set is undecided).
    pub accepted: Option<Feasible>,
}

/// The contract's `feasible` form (read back by the `--html` page: [`Feasible::set`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Feasible {
    /// Number of values.
    pub count: u128,
    /// Smallest value (null when empty).
    pub min: Option<i128>,
    /// Largest value (null when empty).
    pub max: Option<i128>,
    /// Disjoint, sorted segments.
    pub segments: Vec<crate::types::Segment>,
}

impl Feasible {
    /// The exact set this form stands for (an error when its segments break [`DimSet`]'s
    /// invariants: a hand-edited report).
    pub fn set(&self) -> Result<DimSet, crate::Error> {
        DimSet::from_segments(self.segments.clone())
    }
}

impl From<&DimSet> for Feasible {
    fn from(s: &DimSet) -> Feasible {
        Feasible {
            count: s.count(),
            min: s.min(),
            max: s.max(),
            segments: s.segments().to_vec(),
        }
    }
}

/// One suggestion (contract form plus extras).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Suggestion {
    /// First value.
    pub lo: i128,
    /// Last value.
    pub hi: i128,
    /// Step.
    pub modulus: i128,
    /// `lo % modulus`.
    pub residue: i128,
    /// Number of values.
    pub count: u128,
    /// Python defining the dimension.
    pub code: String,
    /// `"enumeration"` when every value was re-checked against every guard, `"none"` when the
    /// suggestion is too large to re-check (it is still exact by the periodic method: `proof`).
    pub certificate: Certificate,
    /// How the feasible set the suggestion lies in was computed: `"periodic"` or `"enumeration"`.
    pub proof: Proof,
    /// Why Z3 did not certify it, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate_note: Option<String>,
}

impl Suggestion {
    /// The progression it admits.
    pub fn progression(&self) -> crate::types::Progression {
        crate::types::Progression {
            lo: self.lo,
            hi: self.hi,
            modulus: self.modulus,
            residue: self.residue,
        }
    }
}

/// What one guard requires.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuardReport {
    /// As printed.
    pub text: String,
    /// In plain terms, over the range ("h ≡ 8 (mod 64)", "h >= 192").
    pub requires: String,
    /// How many values of the range it removes.
    pub removes: Option<u128>,
    /// Whether the other guards already imply it (two guards that require the same values are
    /// both redundant: each is implied by the other).
    pub redundant: bool,
    /// Whether the text and the page fold it into one line: the guards of its size that are not
    /// folded keep exactly the size's accepted values, so it removes nothing beyond them. Those
    /// listed are the guards no other implies, then, in order, implied ones that narrow what the
    /// listed ones keep. Present (true) only when folded; never when a guard of the size is
    /// undecided or decided jointly.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub folded: bool,
    /// `"periodic"`, `"enumeration"`, `"z3"` or `"undecided"`.
    pub method: GuardMethod,
    /// The period used by the periodic method.
    pub period: Option<i128>,
    /// Where the guard comes from in the user's code (COORD.md's shape), when the input says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::provenance::Provenance>,
    /// The exact set of the range's values that pass this guard (null when undecided).
    #[serde(skip)]
    pub set: Option<DimSet>,
}

// ---- where guards come from, and the forms of input ----

/// The form of an input text (the contract's `form`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Form {
    /// A `ConstraintViolationError` / `UserError` from `torch.export`.
    ConstraintViolation,
    /// `TORCH_LOGS="+dynamic"` output.
    TorchLogs,
    /// A `draft_export` report.
    DraftExport,
    /// `Guard failed: ...` from running an exported program.
    GuardFailed,
    /// torch's input check of an exported program (`Expected input at ...`).
    InputCheck,
    /// PyTorch 2.15's solver crash (`Expected op to be '==', got < for ...`).
    SolverCrash,
    /// A `TORCH_TRACE` file.
    TorchTrace,
    /// One guard per line.
    Guards,
    /// An exported program.
    Program,
    /// A data-dependent failure (`GuardOnDataDependentSymNode: Could not guard on
    /// data-dependent expression ...`; torch 2.15's `ShapesSpec` exports stop with it).
    DataDependent,
}

impl Form {
    /// The contract's name of the form.
    pub fn name(self) -> &'static str {
        match self {
            Form::ConstraintViolation => "constraint_violation",
            Form::TorchLogs => "torch_logs",
            Form::DraftExport => "draft_export",
            Form::GuardFailed => "guard_failed",
            Form::InputCheck => "input_check",
            Form::SolverCrash => "solver_crash",
            Form::TorchTrace => "torch_trace",
            Form::Guards => "guards",
            Form::Program => "program",
            Form::DataDependent => "data_dependent",
        }
    }
}

/// A guard-looking line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unreadable {
    /// 1-based line in the input.
    pub line: usize,
    /// The text of the guard (or the line).
    pub text: String,
    /// Why it was not read.
    pub reason: String,
}

/// A guard over several sizes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JointGuard {
    /// As printed.
    pub text: String,
    /// The sizes it links (dimension names).
    pub sizes: Vec<String>,
    /// Where it came from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provenance: Option<crate::provenance::Provenance>,
    /// Per independent size of its group: the values that pass for every value of the others
    /// (so any product of `Dim`s inside these sets is sound).
    pub accepted: Vec<(String, Feasible)>,
    /// How many points of the product of the sizes' ranges pass, of how many.
    pub joint_count: Option<[u128; 2]>,
    /// Why today's solver did not decide the group.
    pub undecided: Option<String>,
    /// Where the guard is solved (`linked` group), or what was done.
    pub note: String,
}

/// A run-time failure explained.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuntimeReport {
    /// `guard_failed` or `input_check`.
    pub kind: Form,
    /// The failing condition as printed.
    pub guard: String,
    /// The sizes it was evaluated at (the user's run), when known.
    pub at: Vec<(String, i128)>,
    /// Whether the condition holds there (false: the reason the call raised).
    pub passes: Option<bool>,
    /// For a comparison: the two sides' values there.
    pub sides: Option<[String; 2]>,
    /// For one size: the nearest sizes below and above that pass every guard in the text.
    pub nearest: [Option<i128>; 2],
    /// What it means and what to do, in sentences.
    pub explanation: Vec<String>,
    /// A guard of a graph torch.compile made (a recompile reason), not of an exported program:
    /// `dynamic_shapes` is then torch.compile's advice (`mark_dynamic`), not a `Dim` spec.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub recompile: bool,
}

/// Padding advice for one dimension.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Padding {
    /// Python giving the next size the first suggestion admits, for an input size `x`.
    pub formula: String,
    /// The most padding any size of the range needs under the first suggestion.
    pub max_for_suggestion: i128,
    /// The most padding any size of the range needs to reach some feasible size.
    pub max_for_feasible: Option<i128>,
}

/// A check of one of torch's suggested fixes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FixCheck {
    /// The fix as torch printed it (several lines for derived dims).
    pub code: String,
    /// Sound: no admitted value fails.
    pub sound: bool,
    /// Values the fix admits.
    pub admitted: u128,
    /// Admitted values that fail a guard.
    pub failing: u128,
    /// The first few failing values.
    pub counterexamples: Vec<i128>,
    /// `"z3"` when Z3 independently confirmed the verdict (a proof of soundness, or a verified
    /// counterexample), `"enumeration"` when every admitted value was evaluated, else `"none"`.
    pub certificate: Certificate,
    /// The admitted set (for independent checks).
    #[serde(skip)]
    pub admitted_set: DimSet,
    /// The range the fix was judged over: the range the user asked for (or torch's default
    /// when the text gives none, see `range_is_default`). Values the fix admits outside it are
    /// not counted in `admitted` or `failing`: the user never asked for them.
    pub judged_over: Option<[i128; 2]>,
    /// True when `judged_over` is torch's default range (2..2^63-1), as the text gives none.
    pub range_is_default: bool,
    /// Values the fix admits outside `judged_over` (not judged).
    pub outside_range: u128,
}
// ---- `dimguard verify --json` ----

/// The verdict for a spec.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyReport {
    /// True only when no value any dimension's spec admits fails a guard; null when undecided.
    pub sound: Option<bool>,
    /// Per dimension the spec covers.
    pub dims: Vec<VerifyDim>,
    /// Guards over several sizes, decided over the product of the spec's sets.
    pub joint: Vec<JointCheck>,
    /// Spec lines that were not understood.
    pub unrecognized: Vec<String>,
    /// Every group of sizes linked by guards, solved jointly over the spec's sets: the exact set
    /// of tuples that pass, the largest sound box, real failing tuples (`check`'s `joint`
    /// shape).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joint_sets: Vec<JointReport>,
    /// Every guard and what became of it (`check`'s `guards` shape).
    pub guards: Vec<GuardUse>,
}

/// The verdict for one dimension (contract fields first).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyDim {
    /// The dimension's name in the guards.
    pub name: String,
    /// Sound for this dimension (null when undecided).
    pub sound: Option<bool>,
    /// Values the spec admits.
    pub admitted: u128,
    /// Admitted values that fail a guard (null when undecided).
    pub failing: Option<u128>,
    /// Real failing values, smallest first (at most five).
    pub counterexamples: Vec<i128>,
    /// `"z3"`, `"enumeration"` or `"none"`.
    pub certificate: Certificate,
    /// The size's source.
    pub source: Option<String>,
    /// The spec's text for this dimension.
    pub spec: String,
    /// The largest sound single-`Dim` spec within the admitted range.
    pub maximal_spec: Option<String>,
    /// Why it is undecided, or what Z3 said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// When the spec writes this size from another (`b_2 = a_2`): that tie, and the values of
    /// this size that pass with some value of its partner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tied_to: Option<TiedTo>,
}

/// A guard over several sizes, checked over the product of what the spec admits for each.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JointCheck {
    /// The guard as written.
    pub guard: String,
    /// True when every combination passes; null when undecided.
    pub sound: Option<bool>,
    /// A failing combination (size -> value), re-checked.
    pub counterexample: Option<std::collections::BTreeMap<String, i128>>,
    /// `"z3"` or `"none"`.
    pub certificate: Certificate,
    /// Why undecided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
// ---- `dimguard check --json` ----

/// Findings of the propagation.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Propagation {
    /// Operators whose outputs were computed and compared.
    pub checked: usize,
    /// Operator targets without a shape function (recorded sizes kept).
    pub unchecked: Vec<String>,
    /// Outputs whose computed sizes differ from the recorded ones, with a witness.
    pub disagreements: Vec<Disagreement>,
    /// Outputs that had no recorded sizes and were filled in.
    pub filled: Vec<String>,
    /// Conditions operators need (broadcast and `cat` equalities), in guard-code syntax.
    pub guards: Vec<String>,
    /// Outputs whose computed sizes differ from the recorded ones only at inputs the guards
    /// reject: equal as functions on the accepted inputs (not disagreements), with how that was
    /// established.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equal_on_accepted: Vec<EqualOnAccepted>,
}

/// Recorded and computed sizes equal on every accepted input tested.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EqualOnAccepted {
    /// The node.
    pub node: String,
    /// The output tensor.
    pub tensor: String,
    /// `"every accepted input"` (all were evaluated) or `"N sampled accepted inputs"`.
    pub method: String,
    /// Symbol values (rejected by the guards) where the two differ.
    pub rejected_witness: BTreeMap<String, i128>,
}

/// A computed size that differs from the recorded one.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Disagreement {
    /// The node.
    pub node: String,
    /// The operator.
    pub target: String,
    /// The output tensor.
    pub tensor: String,
    /// Recorded sizes.
    pub recorded: Vec<String>,
    /// Computed sizes.
    pub computed: Vec<String>,
    /// Symbol values at which they differ.
    pub witness: BTreeMap<String, i128>,
    /// Where the node came from.
    pub stack_trace: Option<String>,
}
/// The report of `dimguard check` (contract fields first in each entry).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckReport {
    /// One entry per dynamic dimension of every user input, in input order.
    pub dims: Vec<CheckDim>,
    /// Guards from `guards_code`, each with how it was used.
    pub guards: Vec<GuardUse>,
    /// Shape propagation findings.
    pub propagation: Propagation,
    /// Every symbolic intermediate size with its exact range (when asked for).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sizes: Vec<SizeRange>,
    /// Paste-ready corrected `dynamic_shapes`.
    pub dynamic_shapes: String,
    /// The PyTorch that wrote the program.
    pub torch_version: Option<String>,
    /// Every group of sizes linked by guards: the exact set of tuples that pass, the largest
    /// sound box, real failing tuples.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joint: Vec<JointReport>,
    /// Conditions checked while the program runs, beside the guards (checked when it is
    /// called): torch's run-time asserts and limits the graph implies without any check. Every
    /// one is part of `accepted`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime: Vec<RuntimeCheck>,
    /// Every tensor input as the program takes it: each dimension fixed at a value or the
    /// program's symbolic expression for it (sizes sharing a symbol must be equal; a derived
    /// size must equal its expression). With `symbols` and the guards, what decides whether a
    /// given shape is accepted (`dimguard_graph::verdict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inputs: Vec<ProgramInput>,
    /// The program's `range_constraints`: per input symbol, and per derived size's expression
    /// (`32*s0 - 16`), as torch checks them on every call (a minimum of 2 or less is not
    /// checked: torch lets 0 and 1 through).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<SymbolRange>,
}

/// One tensor input of a program: its shape as the program records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramInput {
    /// The input's name.
    pub input: String,
    /// Per dimension: a fixed size (a JSON number) or the program's expression (`"s0"`,
    /// `"2*s1"`).
    pub shape: Vec<ShapeEntry>,
    /// Per dimension, the name the guards give it (`L['x'].size()[2]`).
    pub sources: Vec<String>,
}

/// One dimension of a [`ProgramInput`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ShapeEntry {
    /// The program only runs at this size.
    Fixed(i64),
    /// The program's symbolic expression for the size.
    Symbolic(String),
}

/// The range the program records for one symbol (`range_constraints`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SymbolRange {
    /// The symbol (`s0`, `u1`), or a derived size's expression (`32*s0 - 16`).
    pub symbol: String,
    /// Its least value.
    pub min: i128,
    /// Its greatest value; absent when unbounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<i128>,
}

/// Whether a program accepts inputs of given shapes: its own exact answer, from the conditions it
/// checks (`dimguard_graph::verdict`; `accepts` in Python). `accepted` is `null` when the shapes
/// alone cannot decide it (a condition on a value computed from data, a guard that could not be
/// read, an input left out), with the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// `true`: runs every check the program makes; `false`: raises; `null`: undecided.
    pub accepted: Option<bool>,
    /// Why it is rejected (the first condition that fails, in the inputs' names) or undecided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What kind of condition a [`RuntimeCheck`] is (`kind` in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeKind {
    /// A run-time assert in the graph (`aten._assert_scalar`, `sym_constrain_range`,
    /// `_assert_async`): the program raises mid-run where it is false.
    RuntimeAssert,
    /// A limit no check states: an operator fails where it is false (an index from
    /// `arange(seq)` into a table of fixed length raises `IndexError`).
    ImpliedLimit,
}

impl RuntimeKind {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::RuntimeAssert => "runtime_assert",
            RuntimeKind::ImpliedLimit => "implied_limit",
        }
    }

    /// In words: `run-time assert` or `implied limit`.
    pub fn label(self) -> &'static str {
        match self {
            RuntimeKind::RuntimeAssert => "run-time assert",
            RuntimeKind::ImpliedLimit => "implied limit",
        }
    }
}

/// A condition on the input sizes that the program checks (or needs) while it runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RuntimeCheck {
    /// A run-time assert or an implied limit.
    pub kind: RuntimeKind,
    /// The graph node that checks it (or that needs it).
    pub node: String,
    /// Its operator (`torch.ops.aten._assert_scalar.default`, `torch.ops.aten.embedding.default`).
    pub target: String,
    /// The condition in the program's own symbols (`Eq(u0, Min(128, u0))`, `s27 <= 128`).
    pub condition: String,
    /// The condition over the input sizes (`L['ids'].size()[1] <= 128`), when every symbol is
    /// one; absent when the condition names a value that is no input size.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_inputs: Option<String>,
    /// The input sizes it mentions.
    pub sizes: Vec<String>,
    /// What became of it (as for guards).
    pub fate: GuardFate,
    /// Why it is undecided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For a condition on one size: how many claimed sizes it rejects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rejects: Option<u128>,
    /// For a condition on one size: a few claimed sizes it rejects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected_examples: Vec<i128>,
    /// The node's stack trace (the user's line), when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack_trace: Option<String>,
    /// For a run-time assert torch placed at the start of the graph: the operator whose sizes
    /// need the condition (it is where the model's code asks for it), with its stack trace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub needed_by: Option<NeededBy>,
}

/// The operator that needs a run-time assert's condition.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NeededBy {
    /// The node.
    pub node: String,
    /// Its operator.
    pub target: String,
    /// Its stack trace, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack_trace: Option<String>,
}

/// Values neither proven to pass nor to fail, with the reason (beside `accepted`, which then
/// holds only the values proven to pass).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UndecidedSet {
    /// How many values.
    pub count: u128,
    /// Why, in words.
    pub reason: String,
    /// The values, in the `feasible` segment form.
    pub segments: Vec<crate::types::Segment>,
}

impl UndecidedSet {
    /// The undecided values `set`, with the reason.
    pub fn new(set: &DimSet, reason: impl Into<String>) -> UndecidedSet {
        UndecidedSet {
            count: set.count(),
            reason: reason.into(),
            segments: set.segments().to_vec(),
        }
    }
}

/// A group of sizes linked by guards, solved jointly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JointReport {
    /// The sizes' names (`x_2`), in the order of every tuple below.
    pub dims: Vec<String>,
    /// Their sources in guards.
    pub sources: Vec<String>,
    /// Tuples of the claimed box.
    pub claimed: u128,
    /// Tuples that pass every guard (of the decided part, when `undecided` is present).
    pub accepted: u128,
    /// The accepted tuples as a union of disjoint boxes: one `feasible` set per size.
    pub boxes: Vec<Vec<Feasible>>,
    /// Whether `boxes` lists every box (at most 100 are listed).
    pub boxes_complete: bool,
    /// The box of one progression per size with the most tuples: a sound `dynamic_shapes` spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_box: Option<BoxReport>,
    /// For two sizes that work when equal: one `Dim` for both (the second written as the first),
    /// when that admits more pairs than the largest box. A spec can say it; a box cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedReport>,
    /// A few accepted tuples.
    pub accepted_examples: Vec<Vec<i128>>,
    /// A few claimed tuples that fail a guard (each re-checked: it really fails).
    pub rejected_examples: Vec<Vec<i128>>,
    /// The part the search did not decide (its budget ran out), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<JointUndecided>,
    /// The answer in one sentence.
    pub summary: String,
    /// How the search went.
    pub search: JointSearch,
    /// The joint set in closed form when guards tie sizes (`(h1-1)//4 == (h2-1)//4`: a union of
    /// diagonal blocks no finite list of boxes holds), decided without enumeration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tied: Option<TiedReport>,
    /// Sizes equal in every accepted tuple though the program gives them symbols of their own
    /// (`[b, a]`: `b` equals `a`; two inputs that must agree): solved with `b` written as `a`,
    /// so `dims`, `boxes` and the largest box are over the others, and `claimed` still counts
    /// `b`'s own claimed values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equal: Vec<[String; 2]>,
    /// Sizes the others define (`tokens_1 == (image_2 // 16)*(image_3 // 16)`): the group is
    /// solved with each written as its expression, so `dims`, `boxes` are over the others; a
    /// tuple passes when the others lie in one box and each defined size equals its expression
    /// at them, within its own set. `accepted` then counts the tuples of the others' boxes (at
    /// most one accepted tuple each: an upper bound), there is no largest box, and the examples
    /// hold each defined size's value after the others'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defined: Vec<DefinedReport>,
}

/// A size of a linked group defined by the others ([`JointReport::defined`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DefinedReport {
    /// The size's name (`tokens_1`).
    pub dim: String,
    /// Its source in guards.
    pub source: String,
    /// Its value, over the other sizes' sources, as the guards write it (`dimguard`'s guard
    /// syntax: `((L['image'].size()[3] // 16)*(L['image'].size()[2] // 16))`).
    pub expr: String,
    /// The same over the sizes' names (`((image_3 // 16)*(image_2 // 16))`).
    pub relation: String,
    /// Its own set (its range and its one-size guards): a tuple whose value of the expression
    /// lies outside it fails.
    pub accepted: Feasible,
}

/// A joint set with tied sizes ([`crate::linked::TiedSet`]), in closed form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TiedReport {
    /// The sizes' names, in the order of every tuple below.
    pub dims: Vec<String>,
    /// Their sources in guards.
    pub sources: Vec<String>,
    /// Tuples that pass every guard (saturating at `u128::MAX`: "more than 3.4e38").
    pub accepted: u128,
    /// Each tie: the tied size lies in the block of its partner.
    pub ties: Vec<TieReport>,
    /// The joint set of the sizes no tie binds (the first `boxes[i].len()` of `dims`), as a
    /// union of disjoint boxes; a tuple passes when its first sizes lie in one box and every tie
    /// holds.
    pub boxes: Vec<Vec<Feasible>>,
    /// A few accepted tuples (each re-checked against every guard).
    pub accepted_examples: Vec<Vec<i128>>,
    /// A few tuples that fail (each re-checked: it really fails).
    pub rejected_examples: Vec<Vec<i128>>,
    /// The answer in one sentence.
    pub summary: String,
}

/// Two sizes tied by `F(a) == F(b)`, `F(x) = k*((x + offset)//block) + e` non-decreasing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TieReport {
    /// The partner and the tied size (names).
    pub dims: [String; 2],
    /// Block length: `b` passes with `a` when both lie in one block `[q*block - offset,
    /// q*block - offset + block - 1]`.
    pub block: i128,
    /// The blocks' offset.
    pub offset: i128,
    /// The tied size's shift: `b + shift` lies in `a`'s block (0 when both sizes go through the
    /// same map; ties through different strides have others, e.g. `(a + 3)//8 == (c + 7)//8` is
    /// block 8, offset 3, shift 4).
    #[serde(default)]
    pub shift: i128,
    /// The tied size's own accepted range (inclusive): the least and greatest value of `own`.
    pub range: [i128; 2],
    /// The tied size's own accepted set (what its own guards allow; not always an interval:
    /// a skip connection inside the tied input makes it periodic). A tuple passes the tie when
    /// the tied size is in this set and in its partner's block.
    #[serde(default)]
    pub own: Option<Feasible>,
    /// Whether one `Dim` for both (the tied size written as its partner) is sound: every value the
    /// partner accepts lies in the tied size's own range.
    pub shared_dim: bool,
}

/// The undecided part of a joint set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JointUndecided {
    /// Tuples not decided.
    pub count: u128,
    /// Why.
    pub reason: String,
}

/// One `Dim` shared by the two sizes of a group: the values `v` for which `(v, v)` passes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SharedReport {
    /// Pairs it admits (one per value).
    pub count: u128,
    /// The two sizes, the second written as the first.
    pub dims: [String; 2],
    /// The shared progression (with the first size's `Dim` code; certificate `enumeration` when
    /// every pair `(v, v)` of it was re-checked with the exact evaluator).
    pub side: Suggestion,
}

/// The largest sound box of a group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoxReport {
    /// Tuples in the box.
    pub count: u128,
    /// True when no box of progressions inside the joint set has more tuples.
    pub maximal: bool,
    /// One progression per size, in `dims` order (with its `Dim` code).
    pub sides: Vec<Suggestion>,
}

/// Work done by the joint search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JointSearch {
    /// Partial and whole tuples evaluated.
    pub points: u64,
    /// Last-level sets solved by the periodic engine.
    pub periodic_solves: u64,
    /// Nodes of the shared expression graph (common sub-expressions counted once).
    pub shared_nodes: usize,
}

/// One input dimension.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckDim {
    /// User input name.
    pub input: String,
    /// Dimension index.
    pub index: usize,
    /// The symbol it is expressed in.
    pub symbol: String,
    /// Its size expression (`8*s24`).
    pub expr: String,
    /// What `range_constraints` claims.
    pub claimed: Claimed,
    /// The claimed sizes that pass every guard (null when undecided).
    pub accepted: Option<Feasible>,
    /// Sound single-`Dim` specs inside `accepted`, best first.
    pub suggestions: Vec<Suggestion>,
    /// The source in guards (`L['x'].size()[2]`).
    pub source: String,
    /// Claimed sizes that fail a guard (they raise `Guard failed` at run time), first few.
    pub rejected_examples: Vec<i128>,
    /// Guards linking this size with others, if any: `accepted` then assumes the other sizes
    /// range over their own accepted sets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked_with: Vec<String>,
    /// Values neither proven to pass nor to fail (then `accepted` holds the values proven to
    /// pass, possibly none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<UndecidedSet>,
    /// For a size linked to others: what the joint set says of it. Read back apart (as a
    /// [`LinkedSides`] from the same object): serde cannot read 128-bit integers in a struct
    /// with a flattened field.
    #[serde(flatten, skip_deserializing)]
    pub sides: LinkedSides,
    /// `(input, index)` of the dimension this one always equals, when a guard ties them.
    #[serde(skip)]
    pub same_as: Option<(String, usize)>,
    /// The traced size.
    #[serde(skip)]
    pub example: Option<i128>,
}

/// Claimed sizes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Claimed {
    /// Number of sizes.
    pub count: u128,
    /// Smallest.
    pub min: Option<i128>,
    /// Largest.
    pub max: Option<i128>,
}

/// A guard of `guards_code`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GuardUse {
    /// As written.
    pub guard: String,
    /// The sizes it mentions.
    pub sizes: Vec<String>,
    /// Parse error, if any (the guard is then ignored and the report says so).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What became of it.
    pub fate: GuardFate,
    /// Why it is undecided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What became of one guard (`fate` in the JSON, written in lower case: `"periodic"`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GuardFate {
    /// Solved exactly over one size by the periodic engine.
    Periodic,
    /// Solved exactly over one size by enumerating its range.
    Enumeration,
    /// Solved exactly over several sizes by the joint search.
    Joint,
    /// A linear equality between sizes, substituted.
    Relation,
    /// Not solvable in closed form, but Z3 proved it true for every value.
    Z3,
    /// Not decided (the report says why).
    Undecided,
    /// Not parsed (the report carries the error).
    Unparsed,
    /// `diagnose`: a guard of a size the code fixed to a constant (not solved: the size is
    /// static).
    Specialized,
    /// `diagnose`: a guard on a data-dependent (unbacked) size, decided by a `torch._check`
    /// (`data_dependent` entries).
    #[serde(rename = "data_dependent")]
    DataDependent,
}

impl GuardFate {
    /// The JSON spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            GuardFate::Periodic => "periodic",
            GuardFate::Enumeration => "enumeration",
            GuardFate::Joint => "joint",
            GuardFate::Relation => "relation",
            GuardFate::Z3 => "z3",
            GuardFate::Undecided => "undecided",
            GuardFate::Unparsed => "unparsed",
            GuardFate::Specialized => "specialized",
            GuardFate::DataDependent => "data_dependent",
        }
    }
}

/// An intermediate size and its exact values.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeRange {
    /// Tensor name.
    pub tensor: String,
    /// Dimension index.
    pub index: usize,
    /// The size expression.
    pub expr: String,
    /// Its exact values over the inputs' accepted sizes (null when too many to enumerate).
    pub values: Option<Feasible>,
    /// The value at the traced example.
    pub example: Option<i128>,
}

/// `diagnose --cover N`: several specs that together accept every valid size
/// ([`crate::cover::cover`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverReport {
    /// The dimensions covered (independent, decided, dynamic), by name.
    pub dims: Vec<String>,
    /// The specs, largest first; pairwise disjoint.
    pub pieces: Vec<CoverPiece>,
    /// Tuples of sizes the specs accept together.
    pub covered: u128,
    /// Valid tuples of sizes (the product of the dimensions' feasible counts).
    pub valid: u128,
    /// Tuples in the dimensions' ranges, valid or not.
    pub in_range: u128,
    /// Tuples the first suggestions (one `Dim` per dimension) accept.
    pub one_dim: u128,
    /// `"1014 of 1014 valid sizes (2026 in the range) in 4 specs; one Dim: 254"`.
    pub summary: String,
    /// Dimensions the cover leaves as the diagnosis prints them, and why (linked, undecided).
    pub left_out: Vec<String>,
}

/// One spec of a cover: a progression per dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverPiece {
    /// One progression per covered dimension, in [`CoverReport::dims`] order.
    pub sides: Vec<CoverSide>,
    /// Tuples it accepts (the product of its sides' counts).
    pub count: u128,
    /// Python to paste: the `Dim`s and the `dynamic_shapes` dict.
    pub code: String,
}

/// One dimension's progression in a [`CoverPiece`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverSide {
    /// Dimension name.
    pub name: String,
    /// First value.
    pub lo: i128,
    /// Last value.
    pub hi: i128,
    /// Step.
    pub modulus: i128,
    /// `lo % modulus`.
    pub residue: i128,
    /// Number of values.
    pub count: u128,
}

/// `dimguard check` of a `dimguard.Dispatch` archive: each program's check, and per input size
/// the sizes some program accepts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DispatchReport {
    /// Each program of the archive, in the manifest's order.
    pub programs: Vec<DispatchProgram>,
    /// Per dynamic input size of any program: the union of the programs' accepted sets.
    pub union: Vec<UnionDim>,
    /// `"3 programs; x[2]: 205 sizes accepted by some program (96..300)"`.
    pub summary: String,
}

/// One program of a [`DispatchReport`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DispatchProgram {
    /// Its entry in the archive (`programs/0.pt2`).
    pub file: String,
    /// What `check` says of it.
    pub check: CheckReport,
}

/// One input size of a [`DispatchReport`]: the sizes some program accepts.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UnionDim {
    /// Input name.
    pub input: String,
    /// Dimension.
    pub index: usize,
    /// The union of the accepted sets of the programs where it is dynamic (null when one of them
    /// left it undecided: the union is then not known exactly).
    pub accepted: Option<Feasible>,
    /// The programs in which it is dynamic (indices into `programs`); in the others it is fixed
    /// at their traced size.
    pub dynamic_in: Vec<usize>,
}

/// A count of values or combinations for people: the number, or "more than 3.4e38" when it
/// saturated at `u128::MAX` (ranges of sizes with no bound, multiplied).
pub fn count_text(n: u128) -> String {
    if n == u128::MAX {
        "more than 3.4e38".to_string()
    } else {
        n.to_string()
    }
}
