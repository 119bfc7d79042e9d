//! # dimguard
//!
//! Exact answers for PyTorch dynamic shapes. This facade re-exports the workspace's crates; the
//! `dimguard` binary is the command-line tool (`dimguard diagnose`; its code is binary-private).
//!
//! * [`commands`] — `diagnose`, `check`, `verify` and `profile`, one file each, one shape.
//! * [`solver`] — the math: guard parsing, exact feasible sets, joint sets, sound and maximal
//!   `Dim` suggestions, the analysis stage.
//! * [`readers`] — torch's texts (every form) and users' specs, read into a `Message` and a
//!   `Sheet`.
//! * [`prove`] — Z3 certificates and counterexamples.
//! * [`graph`] — `.pt2` archives: operator graph, shape propagation, `check`.
//! * [`trt`] — TensorRT optimization profiles.
//! * [`html`] — the self-contained HTML page of a report.
//! * [`api`] — the index of the commands, shared with the Python package.
//! * `norm` (feature `cuda`, on by default) — normalization layers and their GPU kernels.

pub mod api;
pub mod commands;
/// The `--html` page of any report (diagnose, check, `dimguard.export`), drawn from its JSON
/// (used by the binary and the Python package).
pub mod html;

pub use dimguard_graph as graph;
#[cfg(feature = "cuda")]
pub use dimguard_norm as norm;
pub use dimguard_prove as prove;
pub use dimguard_readers as readers;
pub use dimguard_solver as solver;
pub use dimguard_trt as trt;
