//! `dimguard diagnose --json`: the [`Report`] of one message, per dimension a [`DimReport`],
//! where guards come from and the forms of input.

use super::common::{Certificate, Feasible, GuardMethod, GuardUse};
use super::joint_sets::JointReport;
use super::size::{Command, Entry, EntryKind};
use crate::types::{DimSet, Expr, Progression};
use serde::{Deserialize, Serialize};

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
    /// Present when the text holds only some of the export's guards (a solver crash, a cut
    /// text, an excerpt of a draft_export report): what it holds and what to paste instead.
    /// Every size it names is then undecided over the set its guards leave (`undecided_values`:
    /// every accepted size is in it, not every size there is accepted), with no suggestion and
    /// no `Dim` in `dynamic_shapes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<Partial>,
}

/// What a text that holds only some of the export's guards holds, and what to paste instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Partial {
    /// What the text holds, in words ("one of the export's guards: the one torch's solver
    /// crashed on ...").
    pub holds: String,
    /// What to paste instead to get every guard (the whole error, the `TORCH_LOGS` log).
    pub instead: String,
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

/// One dimension's diagnosis: `diagnose`'s fields beside its answer.
pub type DimReport = Entry<Diagnosed>;

/// `diagnose`'s own fields of a size's [`Entry`] (its answer's keys, `feasible` first, print
/// between `status` and `maximality`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Diagnosed {
    /// Debug name.
    pub name: String,
    /// Source such as `L['x'].size()[2]`.
    pub source: Option<String>,
    /// The requested range `[lo, hi]` (omitted bounds: 2 and 9223372036854775807).
    pub range: Option<[i128; 2]>,
    /// Summary.
    pub status: Status,
    // Here the answer's keys: `feasible` (the exact set of values in `range` that satisfy
    // every guard, null when undecided), `suggestions` (ranked single-`Dim` progressions inside
    // `feasible`; the first is maximal), `linked_with`, the joint set's sides,
    // `nearest_accepted`.
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
}

impl EntryKind for Diagnosed {
    const COMMAND: Command = Command::Diagnose;
    const ANSWER_BEFORE: Option<&'static str> = Some("maximality");
}

impl Diagnosed {
    /// Whether this is an unbacked size (`u0`, made in the model by `.item()`, `nonzero`, ...)
    /// that no input dimension stands for: no `Dim` applies to it (a spec bounds inputs), only
    /// a `torch._check` where the model makes it ([`crate::python::unbacked_checks`], the
    /// `code` of its suggestions).
    pub fn is_unbacked(&self) -> bool {
        crate::types::is_unbacked(&self.name)
            && self.source.as_deref().is_none_or(crate::types::is_unbacked)
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
