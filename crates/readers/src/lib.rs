//! # dimguard-readers
//!
//! Readers of torch's texts and of users' specs. Every form a dynamic-shape problem reaches a
//! user in — an export error, its `TORCH_LOGS` log, a `TORCH_TRACE`, a `draft_export` report, a
//! solver crash, a `Guard failed` at run time, a `torch.compile` recompile log, pasted notebook
//! output — is read by one reader in [`forms`] into one model, a [`Message`]: the sizes, their
//! ranges and the guards over them. A user's `dynamic_shapes` (plain `Dim`s) or torch 2.15
//! `ShapesSpec` is read by [`spec`] into a [`Sheet`], into which a diagnosis can be merged.
//!
//! The math lives in `dimguard-solver`: this crate builds its [`Expr`](dimguard_solver::Expr)s
//! and [`DimSet`](dimguard_solver::DimSet)s and nothing in the solver depends on it. The
//! commands (`diagnose`, `check`, `verify`, `profile`) live in the `dimguard` facade.
//!
//! ```
//! let text = "Constraints violated (L['x'].size()[1])! \
//!             - Not all values of L['x'].size()[1] in the specified range satisfy the generated guard \
//!             Eq(Mod(L['x'].size()[1], 8), 0).";
//! let msg = dimguard_readers::forms::read(text).unwrap();
//! assert_eq!(msg.dims.len(), 1);
//! ```

mod message;

pub mod forms;
pub mod phrase;
pub mod spec;

pub use message::{DimEntry, Fix, FixKind, Guard, Info, Message, Relation, Runtime, Unbacked};
pub use spec::{merge, Entry, Root, Sheet, Value as SheetValue};
