//! # dimguard
//!
//! Exact answers for PyTorch dynamic shapes. This facade re-exports the workspace's crates; the
//! `dimguard` binary is the command-line tool (`dimguard diagnose`).
//!
//! * [`solver`] — guard parsing, exact feasible sets, sound and maximal `Dim` suggestions.

pub use dimguard_solver as solver;

pub mod render;
