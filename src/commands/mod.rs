//! The four commands, side by side, one file each. Every command has one shape: read its input
//! (a reader of `dimguard-readers`, or a program of `dimguard-graph`) → build the
//! [`Problem`](dimguard_solver::analyze::Problem) → [`analyze`](dimguard_solver::analyze) →
//! one entry per size → the contract's report.
//!
//! | command | file | input → report |
//! |---|---|---|
//! | `diagnose` | [`diagnose`] | any text form → [`Report`](dimguard_solver::report::Report) |
//! | `check` | [`check`] | a `.pt2` program → [`CheckReport`](dimguard_solver::report::CheckReport) |
//! | `verify` | [`verify`] | guards and a spec → [`VerifyReport`](dimguard_solver::report::VerifyReport) |
//! | `profile` | [`profile`] | a `check` or `diagnose` report → TensorRT profiles |
//!
//! [`crate::api`] is their index: the functions the binary and the Python package call.

pub mod check;
pub mod diagnose;
pub mod profile;
pub mod verify;
