//! # dimguard-graph
//!
//! Reads `torch.export` archives (`.pt2`, or their `models/model.json`), builds the operator graph
//! on petgraph, propagates symbolic sizes through it with one shape function per ATen operator,
//! and gives the facts `check` (the `dimguard` facade's `commands::check`) turns into which input
//! sizes the program really accepts.
//!
//! | module | concept |
//! |---|---|
//! | [`program`] | the archive and its serde types (its errors: [`Error`], [`shapes::ShapeError`]) |
//! | [`shapes`] | shape rules: a short dispatch and one module per operator family |
//! | [`graph`] | the petgraph graph, propagation, comparison with recorded sizes, DOT |
//! | [`onnx`] | an ONNX file's inputs and the report `dimguard.onnx.export` stored in it (a protobuf reader) |
//! | [`runtime`] | run-time asserts in the graph and limits it implies without a check |
//! | [`verdict`](mod@verdict) | whether the program accepts given shapes, from the conditions it checks |

mod error;
pub mod graph;
pub mod onnx;
pub mod program;
pub mod runtime;
pub mod shapes;
pub mod verdict;

pub use dimguard_solver::report::CheckReport;
pub use graph::ProgramGraph;
pub use program::{load, load_bytes, Error, Program};
pub use verdict::verdict;
