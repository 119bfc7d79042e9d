//! # dimguard
//!
//! Exact answers for PyTorch dynamic shapes. This facade re-exports the workspace's crates; the
//! `dimguard` binary is the command-line tool (`dimguard diagnose`; its code is binary-private).
//!
//! * [`solver`] — guard parsing, exact feasible sets, sound and maximal `Dim` suggestions.
//! * [`prove`] — Z3 certificates and counterexamples.
//! * [`graph`] — `.pt2` archives: operator graph, shape propagation, `check`.
//! * [`trt`] — TensorRT optimization profiles.
//! * [`html`] — the self-contained HTML page of a report.
//! * [`api`], [`profiles`] — the pipelines behind the commands, shared with the Python package.
//! * `norm` (feature `cuda`, on by default) — normalization layers and their GPU kernels.

pub mod api;
/// The `--html` page of any report (diagnose, check, `dimguard.export`), drawn from its JSON
/// (used by the binary and the Python package).
pub mod html;
/// Profiles from a program, a message or `--dim`s (used by `dimguard profile` and the Python
/// package).
pub mod profiles;

pub use dimguard_graph as graph;
#[cfg(feature = "cuda")]
pub use dimguard_norm as norm;
pub use dimguard_prove as prove;
pub use dimguard_solver as solver;
pub use dimguard_trt as trt;
