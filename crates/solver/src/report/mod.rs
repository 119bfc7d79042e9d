//! The report contract: every type `dimguard` serializes with `--json`, in one place.
//!
//! Programs drive `dimguard` through this JSON (the contract is `docs/CONTRACT.md`). The
//! contract's fields keep their names and meaning; every other field is additional. The types
//! are plain data: the `dimguard` facade's commands fill them: `diagnose` a [`Report`], `check`
//! a [`CheckReport`], `verify` a [`VerifyReport`].
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
//!
//! The submodules, by command: `common` (types every report shares), `size` (one size's entry and its answer, in
//! every command), `sides` and `joint_sets` (a size's side and a group's joint set), `diagnose`, `verify`, `check`, `dispatch` (and
//! TensorRT's cover).

mod check;
mod common;
mod diagnose;
mod dispatch;
mod joint_sets;
mod sides;
mod size;
mod verify;

pub use check::{
    CheckDim, CheckReport, Checked, Claimed, Disagreement, EqualOnAccepted, NeededBy, ProgramInput,
    Propagation, RuntimeCheck, ShapeEntry, SizeRange, SymbolRange, Verdict,
};
pub use common::{
    count_text, Certificate, Decided, Evaluations, Feasible, GuardFate, GuardMethod, GuardUse,
    NotPeriodic, Proof, RuntimeKind, SearchLimit, Suggestion, Undecided,
};
pub use diagnose::{
    DataDependent, Diagnosed, DimReport, FixCheck, Form, GuardReport, JointGuard, LineDim,
    LineReport, LinkedGroup, MissingBound, Padding, Partial, ProgramBound, RelationReport, Report,
    RuntimeReport, Status, UnbackedSize, Unreadable,
};
pub use dispatch::{
    CoverPiece, CoverReport, CoverSide, DispatchProgram, DispatchReport, OnnxFile, OnnxInputShape,
    OnnxReport, UnionDim,
};
pub use joint_sets::{
    BoxReport, DefinedReport, EquationReport, JointReport, JointSearch, JointUndecided,
    SharedReport, TieReport, TiedReport,
};
pub use sides::{DefinedValues, LinkedSides, TiedTo};
pub use size::{Command, Entry, EntryKind, Nearest, SizeAnswer, UndecidedSet};
pub use verify::{JointCheck, Verified, VerifyDim, VerifyReport};
