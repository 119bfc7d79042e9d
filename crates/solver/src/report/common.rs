//! The types every command's report shares: how a guard or set was decided ([`Certificate`],
//! [`Proof`], [`GuardMethod`], [`GuardFate`], [`GuardUse`], [`Undecided`]), the contract's
//! `feasible` form of a set ([`Feasible`]), a suggestion, and counts in words.

use crate::error::Error;
use crate::num::ArithError;
use crate::types::DimSet;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::Duration;

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
        /// Which limit (with what Z3 said past it).
        limit: Box<Undecided>,
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
    /// The joint search over linked sizes stopped at one of its own limits.
    Search(SearchLimit),
    // The reasons the graph, the commands and the readers once carried as strings.
    /// A size of a group the stage did not solve.
    NotSolved,
    /// `check`: an input's claimed sizes are not an arithmetic progression of one symbol.
    NotProgression,
    /// A run-time assert of a program whose condition the program does not record.
    ConditionNotRecorded,
    /// A `sym_constrain_range` of a program whose size the program does not record.
    SizeNotRecorded,
    /// A run-time assert of a tensor's value (`_assert_async`), which no size decides.
    TensorValue,
    /// An implied limit: the length of the table an operator indexes is not recorded.
    TableLength {
        /// The indexing operator.
        op: String,
    },
    /// An implied limit: the index values are computed from sizes through an operator dimguard
    /// does not follow.
    NotFollowed {
        /// The operator, in words (`arange with a step`).
        via: String,
    },
    /// A run-time condition of a program names values that are no input size (computed from
    /// data).
    DataValues(Vec<String>),
    /// A size a run-time condition of the program depends on, which the condition leaves
    /// undecided: what passes everything else is undecided, never accepted.
    Runtime {
        /// An assert or an implied limit.
        kind: RuntimeKind,
        /// The node that checks (or needs) it.
        node: String,
        /// Why the condition is undecided.
        why: Box<Undecided>,
    },
    /// `check`: a size of a group with a defined size, whose values with some partner are not
    /// computed: no value passes with every value of the others, every combination is decided
    /// by the joint answer, and the size is undecided, never rejected.
    DefinedBy {
        /// For the defined size itself, its relation in the report's names; `None` for a size
        /// linked to it.
        relation: Option<String>,
    },
}

/// An answer, or why it is undecided.
pub type Decided<T> = Result<T, Undecided>;

impl From<Error> for Undecided {
    /// A failed set operation: a budget's own reason, else the error.
    fn from(e: Error) -> Undecided {
        match e {
            Error::Exhausted(b) => Undecided::Exhausted(b),
            other => Undecided::Exact(other),
        }
    }
}

/// Where the joint search over linked sizes stopped, one of its own limits (the search's
/// `Budget`, and the wide search's caps); the decided part is exact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchLimit {
    /// Its time ran out (the budget's, or the wide search's own cap when shorter).
    Time(Duration),
    /// The joint set needs more than this many pieces.
    Pieces(usize),
    /// The plan's estimate of guard evaluations is above the most the search starts.
    Work {
        /// The estimate.
        estimate: Evaluations,
        /// The most the search starts.
        limit: Evaluations,
    },
    /// The wide search needed more than this many boxes.
    Boxes(usize),
    /// A box of the wide search has too many pieces.
    BoxPieces,
    /// A guard is outside the rules of the bounds over boxes.
    OutsideBounds,
}

impl fmt::Display for SearchLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SearchLimit::Time(t) => {
                write!(f, "the time budget of {:.1} s ran out", t.as_secs_f64())
            }
            SearchLimit::Pieces(n) => write!(f, "the joint set needs more than {n} pieces"),
            SearchLimit::Work { estimate, limit } => write!(
                f,
                "enumerating them needs about {:.1e} guard evaluations, more than the {:.0e} dimguard starts",
                estimate.0, limit.0
            ),
            SearchLimit::Boxes(n) => write!(f, "more than {n} boxes of sizes were needed"),
            SearchLimit::BoxPieces => f.write_str("a box has too many pieces"),
            SearchLimit::OutsideBounds => f.write_str("a guard is outside the bounds' rules"),
        }
    }
}

/// A number of guard evaluations as the joint search's plan estimates it (a float); two are
/// equal when their bits are.
#[derive(Debug, Clone, Copy)]
pub struct Evaluations(pub f64);

impl PartialEq for Evaluations {
    fn eq(&self, other: &Evaluations) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Evaluations {}

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
            Undecided::Search(limit) => write!(f, "{limit}"),
            Undecided::NotSolved => f.write_str("not solved"),
            Undecided::NotProgression => f.write_str(
                "the claimed sizes are not an arithmetic progression of one symbol",
            ),
            Undecided::ConditionNotRecorded => {
                f.write_str("its condition is not recorded in the program")
            }
            Undecided::SizeNotRecorded => f.write_str("its size is not recorded in the program"),
            Undecided::TensorValue => {
                f.write_str("it asserts a tensor's value, which the sizes do not decide")
            }
            Undecided::TableLength { op } => {
                write!(f, "the length of the table `{op}` indexes is not recorded")
            }
            Undecided::NotFollowed { via } => write!(
                f,
                "its index values are computed from sizes through `{via}`, which dimguard does not follow"
            ),
            Undecided::DataValues(names) => write!(
                f,
                "it names {}, which is no input size (a value computed from data)",
                names.join(", ")
            ),
            Undecided::Runtime { kind, node, why } => write!(
                f,
                "the graph's {} at `{node}` is undecided: {why}",
                kind.label()
            ),
            Undecided::DefinedBy { relation: Some(r) } => write!(
                f,
                "defined by the others ({r}): no value passes with every value of the others, and every combination is decided by the joint answer (see linked); its values with some partner, the values of the definition over the others' accepted combinations, are not a periodic set and are not computed"
            ),
            Undecided::DefinedBy { relation: None } => f.write_str(
                "linked to a size the others define: no value passes with every value of the others, and every combination is decided by the joint answer (see linked); its values with some partner are not computed",
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

/// A count of values or combinations for people: the number, or "more than 3.4e38" when it
/// saturated at `u128::MAX` (ranges of sizes with no bound, multiplied).
pub fn count_text(n: u128) -> String {
    if n == u128::MAX {
        "more than 3.4e38".to_string()
    } else {
        n.to_string()
    }
}

/// What kind of condition a [`RuntimeCheck`](super::RuntimeCheck) is (`kind` in the JSON).
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
