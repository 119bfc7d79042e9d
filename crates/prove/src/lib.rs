//! # dimguard-prove
//!
//! Z3 for what Z3 is good at: a **certificate** that no size a suggestion admits fails a guard,
//! over the whole range however wide (`unsat` of "admitted and not all guards hold"), and
//! **counterexamples** — concrete failing sizes — for torch's own suggested fixes and for any spec
//! a user passes in. Every counterexample Z3 proposes is re-checked with dimguard's exact
//! evaluator before it is reported. Z3's `unknown` and time-outs are returned as data
//! ([`Verdict::Unknown`]), never as errors.
//!
//! The Z3 library is the one the `z3` crate's bindings are generated for: see
//! `third_party/z3/README.md`.
//!
//! ```
//! use dimguard_prove::{check_set, Verdict};
//! use dimguard_solver::{parse_guard, DimSet};
//!
//! let g = parse_guard("((((-1) + x) // 8) % 8) == 1").unwrap();
//! // torch's fix for this guard admits the multiples of 8; most of them fail.
//! let fix = DimSet::progression(136, 2160, 8, 0);
//! match check_set(&[&g], "x", &fix, 3, 5_000) {
//!     Verdict::Refuted(xs) => assert!(xs.iter().all(|&x| !g.holds_at("x", x))),
//!     other => panic!("{other:?}"),
//! }
//! // dimguard's suggestion is proved over [2, 2^62].
//! let ok = DimSet::progression(9, 1 << 62, 64, 9);
//! assert_eq!(check_set(&[&g], "x", &ok, 3, 5_000), Verdict::Proved);
//! ```

pub mod certify;
pub mod encode;
mod query;
pub mod worker;

pub use certify::{Mode, TIMEOUT_MS};
pub use query::{box_prover, check_box, check_set, z3_version, JointVerdict, Verdict};
