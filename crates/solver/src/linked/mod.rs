//! Joint accepted sets of linked sizes.
//!
//! When guards link several sizes (`((1 + (h-1)//4) * (1 + (w-1)//4)) == 3136`), no size has an
//! accepted set of its own: what passes is a set of *tuples*. This module computes that set
//! exactly, as a [`JointSet`], and the largest box inside it ([`largest_box`]): one progression
//! per size — what a `dynamic_shapes` spec can express — such that every tuple of the box passes
//! every guard.
//!
//! # Representation
//!
//! A [`Tree`] over the sizes in a chosen order: at each level, the values of that level's size
//! are grouped by the sub-tree they lead to (values with identical continuations share one
//! [`DimSet`](crate::DimSet)); the last level is a [`DimSet`](crate::DimSet) of the last size. Every path is a box whose sides
//! are the periodic sets the one-size engine produces, so the joint set is a union of disjoint
//! boxes ([`Tree::boxes`]), with an exact [`Tree::count`], projections ([`Tree::projection`])
//! and membership ([`Tree::contains`]).
//!
//! # Search
//!
//! * **Plan**: every guard is evaluated at a few pseudo-random points of the box to estimate how
//!   much it rejects; the order of the sizes is the one with the least estimated work (sizes
//!   whose guards reject most, together, first; the widest size last), and the guards that
//!   become decidable at a level are tried most-rejecting first.
//! * **Shared sub-expressions**: all guards are compiled into one hash-consed graph over `i128`;
//!   a node is computed once per value of the deepest size it depends on (`1 + (h-1)//4` once
//!   per `h`, not once per `(h, w, batch)`).
//! * **Early rejection**: a partial tuple is dropped at the first level where a guard over its
//!   sizes fails.
//! * **Last level**: a narrow domain is enumerated; a wide one is solved by the periodic engine
//!   (`engine.rs`) per combination of the others, so its width costs nothing.
//! * **Budget** ([`Budget`]): a deadline and a cap on stored pieces. Past either, the search stops
//!   and the region it did not examine is returned as data ([`JointSet::undecided`]), never
//!   guessed; memory never depends on the width of a range (ranges are iterated, never
//!   collected).
//!
//! # Layout
//!
//! | file | concept |
//! |---|---|
//! | `equalities.rs` | equalities with a constant substituted into the other guards before solving |
//! | `normal.rs` | guards in a normal form (torch's equalities substituted, multiples written out, polynomials expanded) before solving |
//! | `ties.rs` | sizes tied by `F(a) == G(b)` (floor maps through the same or nested strides, with offsets; several sizes tied to one; tied sizes with any own set), in closed form |
//! | `tree.rs` | the tuple-set [`Tree`], its set operations, the [`JointSet`] a search returns |
//! | `machine.rs` | the guards, compiled once (`compiled`), evaluated with per-level memoization |
//! | `search.rs` | the plan and the exact search ([`solve_joint`]) |
//! | `wide.rs` | boxes too wide to enumerate, decided by bounds (`bounds`) |
//! | `summary.rs` | the joint set in one sentence ([`JointSet::summary`]) |
//! | `largest.rs` | the largest box ([`largest_box`]) and the box through a point ([`box_through`]) |

use crate::engine::Limits;
use std::time::Duration;

/// Work limits of a joint solve.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Wall-clock time the search may take; past it the rest is reported undecided.
    pub time: Duration,
    /// Largest number of value groups the joint set may hold before the search stops.
    pub pieces: usize,
    /// A last-level domain with at most this many values is enumerated per combination of the
    /// others; a wider one is solved by the periodic engine.
    pub inner_enumeration: u128,
    /// Limits of the one-size engine.
    pub limits: Limits,
    /// Largest number of sub-problems the largest-box search examines.
    pub box_work: usize,
    /// Largest estimated number of guard evaluations a search may start with; a plan above it
    /// is not started (the whole box is reported undecided at once, for Z3 to try).
    pub work: f64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            time: Duration::from_secs(10),
            pieces: 2_000_000,
            inner_enumeration: 4096,
            limits: Limits::default(),
            box_work: 200_000,
            work: 2e9,
        }
    }
}

mod equalities;
mod largest;
mod machine;
mod normal;
mod search;
mod summary;
#[cfg(test)]
mod tests;
mod ties;
mod tree;
mod wide;

pub use crate::report::count_text;
pub use equalities::substitute_equalities;
pub use largest::{box_through, largest_box, LargestBox};
pub use normal::{normalize, normalize_one};
pub use search::{solve_joint, TupleCheck};
pub use summary::{brief, tuples};
pub use ties::{solve_tied, Tie, TiedSet, TiedSpec, DILATE_BLOCK};
pub use tree::{Exact, JointSet, Stats, Tree, Undecided};
