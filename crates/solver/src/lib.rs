//! # dimguard-solver
//!
//! Exact answers for PyTorch dynamic shapes. Given the guards `torch.export` prints (in any of
//! the syntaxes PyTorch has used), this crate computes the *exact* set of sizes each dimension
//! accepts, explains which guard removes what, and suggests `torch.export.Dim` specs that are
//! sound (admit no failing size) and maximal (as large as a single `Dim` can be).
//!
//! ```
//! use dimguard_solver::{parse_guard, solve, DimSet, Limits};
//!
//! let guard = parse_guard("Eq(Mod(((L['x'].size()[2] - 1)//4) - 1, 2), 0)").unwrap();
//! let out = solve(&guard, "L['x'].size()[2]", &DimSet::interval(135, 2160), &Limits::default());
//! let set = out.set().unwrap();
//! assert_eq!(set.count(), 1014); // h mod 8 in {0, 5, 6, 7}
//! assert_eq!(set.segments()[0].residues, vec![0, 5, 6, 7]);
//! ```
//!
//! Module map (a guard flows top to bottom):
//!
//! | module | concept |
//! |---|---|
//! | [`types`] | the data types: [`Expr`], [`DimSet`], [`Progression`] |
//! | `parse` / [`syntax`] | Python-expression parser; each guard syntax's vocabulary |
//! | [`message`] | reading a pasted PyTorch error message |
//! | [`trace`] / [`provenance`] | reading a `TORCH_TRACE` structured trace; the user line of a guard |
//! | [`engine`] | exact solution set of one guard (periodic method, enumeration fallback) |
//! | [`set`] | set algebra on [`DimSet`] |
//! | [`suggest`] | maximal sound progressions |
//! | [`cover`] | several specs that together accept every valid size (`diagnose --cover N`) |
//! | [`python`] | every piece of Python dimguard prints (`Dim` code, `dynamic_shapes`) |
//! | [`diagnose`] | the whole diagnosis of a message |
//! | [`report`] | the JSON contract's types (`Report`, `Certificate`, ...) |
//! | [`merge`] | a diagnosis merged into the user's own `dynamic_shapes` spec |

mod algebra;
pub mod analyze;
pub mod bounds;
pub mod budget;
pub mod compiled;
pub mod cover;
pub mod diagnose;
pub mod engine;
pub mod error;
pub mod expr;
pub mod forms;
pub mod joint;
pub mod linked;
pub mod merge;
pub mod message;
pub mod num;
mod parse;
pub mod provenance;
pub mod python;
pub mod report;
mod set;
pub mod spec;
pub mod suggest;
pub mod syntax;
mod trace;
pub mod types;

pub use engine::{solve, Limits, Method, Outcome};
pub use error::{Error, ParseError};
pub use syntax::{parse_expr, parse_guard};
pub use types::{Atom, CmpOp, DimSet, Expr, Progression, RoundKind, Segment};
