//! `dimguard check --json`: the [`CheckReport`] of a program's propagation, per size a
//! [`CheckDim`], its inputs, symbols, run-time checks and verdicts.

use super::common::{Feasible, GuardFate, GuardUse, RuntimeKind};
use super::joint_sets::JointReport;
use super::size::{Command, Entry, EntryKind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

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

/// One input dimension: `check`'s fields beside its answer.
pub type CheckDim = Entry<Checked>;

/// `check`'s own fields of a size's [`Entry`] (its answer's keys, `accepted` first, print
/// between `claimed` and `source`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checked {
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
    // Here the answer's keys: `accepted` (the claimed sizes that pass every guard; empty, with
    // `undecided` holding the values, when undecided), `suggestions` (sound single-`Dim` specs
    // inside `accepted`, best first), `linked_with` (guards linking this size with others:
    // `accepted` then assumes the other sizes range over their own accepted sets), `undecided`,
    // the joint set's sides, `nearest_accepted`.
    /// The source in guards (`L['x'].size()[2]`).
    pub source: String,
    /// Claimed sizes that fail a guard (they raise `Guard failed` at run time), first few.
    pub rejected_examples: Vec<i128>,
    /// `(input, index)` of the dimension this one always equals, when a guard ties them.
    #[serde(skip)]
    pub same_as: Option<(String, usize)>,
    /// The traced size.
    #[serde(skip)]
    pub example: Option<i128>,
}

impl EntryKind for Checked {
    const COMMAND: Command = Command::Check;
    const ANSWER_BEFORE: Option<&'static str> = Some("source");
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
