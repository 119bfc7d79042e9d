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
//! This crate is the math. The readers of torch's texts and of users' specs are
//! `dimguard-readers`; the commands (`diagnose`, `check`, `verify`, `profile`) are the
//! `dimguard` facade's `commands`, each of which builds an [`analyze::Problem`] from its input
//! and renders the [`analyze::Analysis`] this crate's one stage, [`analyze`], returns.
//!
//! Module map, by wing. A module imports only modules of its own wing or the wings above it in
//! this table (`tests/layers.rs` fails on any import circle or import of a later wing).
//!
//! | wing | module | concept |
//! |---|---|---|
//! | core | [`num`], `types`, [`expr`], `algebra`, `compiled`, `set`, `bounds`, [`budget`], `error`, `factor` | exact arithmetic with Python's floor semantics; [`Expr`], [`DimSet`], [`Progression`]; evaluation and the one compiler of `Expr` to `i128` code; set algebra; interval bounds over boxes; time and memory budgets; divisors of 64-bit integers |
//! | guards | [`parse`], [`syntax`] | the Python grammar with spans; each guard syntax's vocabulary |
//! | contract | [`report`], [`python`], [`provenance`] | the JSON contract's types; every piece of Python dimguard prints; the user line of a guard |
//! | solve | [`engine`], [`linked`], [`joint`], `suggest`, `cover` | one guard in one size; joint sets of tuples; groups of linked sizes; maximal progressions; several specs covering every valid size |
//! | analyze | [`analyze`] | the stage (`Problem` → `Analysis`); each size's answer, built once for every command ([`analyze::size_answer`], [`analyze::claimed_answer`], [`analyze::own_set`], [`analyze::group_line`]) |
//!
//! Modules in links are public namespaces; the others are private, and what other crates need
//! of them is re-exported at the root, grouped by wing below (`DimSet`, `parse_guard`, ...).
//!
//! Where a new thing goes: a new per-size answer is a field of [`report::SizeAnswer`], computed
//! once in `analyze/size.rs`, and drawn by the one per-size function of each renderer; a new
//! input form is a reader in `dimguard-readers`.

// The modules, private unless named below as a namespace of the public face.
mod algebra;
mod bounds;
mod compiled;
mod cover;
mod error;
mod factor;
mod set;
mod suggest;
mod types;

// The public face, by wing (as the module map). Namespaces where a wing has many items or
// names that would clash at the root; the rest re-exported at the root.

// core: exact arithmetic, expressions, sets, budgets, errors.
pub mod budget;
pub mod expr;
pub mod num;
pub use bounds::{shown_true, value_range};
pub use compiled::{recheck, Compiled, RECHECK_LIMIT};
pub use error::{Error, ParseError};
pub use expr::{EvalError, Value};
pub use num::{f64_exact, float_literal, q, ArithError, Q};
pub use types::{
    is_backed, is_size_symbol, is_unbacked, Atom, CmpOp, DimSet, Expr, Progression, RoundKind,
    Segment, DEFAULT_MIN, SIZE_MAX,
};

// guards: the guard syntaxes (the grammar with spans, and each syntax's vocabulary).
pub mod parse;
pub mod syntax;
pub use syntax::{parse_expr, parse_guard};

// contract: the JSON contract's types, the Python dimguard prints, where a guard comes from.
pub mod provenance;
pub mod python;
pub mod report;
pub use provenance::{describe_op, short_file, Frame, Provenance};

// solve: one guard in one size, joint sets, linked groups, progressions, covers.
pub mod engine;
pub mod joint;
pub mod linked;
pub use cover::{cover, largest_combinations};
pub use engine::{solve, Limits, Method, Outcome};
pub use suggest::{
    cover as progression_cover, max_padding, rank, unchecked_suggestion, Maximality, Ranking,
};

// analyze: the stage.
pub mod analyze;
