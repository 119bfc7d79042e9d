//! `dimguard verify --json`: the [`VerifyReport`] of a spec, per dimension and per joint set.

use super::common::{Certificate, GuardUse};
use super::joint_sets::JointReport;
use super::size::{Command, Entry, EntryKind};
use serde::{Deserialize, Serialize};

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

/// The verdict for one dimension: `verify`'s fields beside its answer.
pub type VerifyDim = Entry<Verified>;

/// `verify`'s own fields of a size's [`Entry`] (contract fields first; its answer's keys print
/// after the last).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Verified {
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
    // Then the answer's keys: `accepted` (the admitted values that pass every guard, when
    // known), `suggestions`, `linked_with`, the joint set's sides (`tied_to`: when the spec
    // writes this size from another, `b_2 = a_2`, that tie and the values of this size that
    // pass with some value of its partner), `nearest_accepted`.
}

impl EntryKind for Verified {
    const COMMAND: Command = Command::Verify;
    const ANSWER_BEFORE: Option<&'static str> = None;
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
