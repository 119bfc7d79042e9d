//! Guards over several sizes.
//!
//! PyTorch never raises on a guard over two or more sizes: it becomes a run-time check. This
//! module splits the sizes into independent groups (sizes linked by some guard), substitutes
//! linear equalities (`b == a`, `b == 2*a + 1`: one `Dim` for equal sizes, a derived dim for a
//! relation with a positive integer coefficient — the only kind `torch.export.Dim` accepts), and
//! solves each group exactly:
//!
//! * each root's own guards by the periodic engine (`engine.rs`), with the members' ranges turned
//!   into the root's range; a guard outside its methods is asked to a validity oracle (Z3) before
//!   it is called undecided ([`solve_group_with`]);
//! * the guards linking several roots by the joint engine (`linked.rs`): the exact set of tuples
//!   that pass, within a time budget; what it could not decide is returned as data.
//!
//! Every guard ends with a [`Fate`]: solved, proved by Z3, or undecided with its reason.
//!
//! The submodules, by concept: `grouping` (sizes into groups, linear equalities substituted),
//! `solved` (a group's outcome as data), `defined` (the elimination `x == E(others)`), `solve`
//! (the group solve), `choice` (the joint set as the reports carry it, and the spec choice it
//! offers), `sets` (building that report), `parts` (a group split into independent parts,
//! joined only by guards that hold on every tuple of the parts' answers), `equation` (a group
//! linked by one equation of products across sizes, solved without enumeration), `divisibility`
//! (sizes linked by a product's divisibility, `Eq(Mod(x*y, 2560), 0)`, solved without
//! enumeration).

mod choice;
mod decide;
mod defined;
mod divisibility;
mod equation;
mod grouping;
mod parts;
mod sets;
mod solve;
mod solved;
mod terms;

pub use choice::{paired_alias, tied_alias, Choice, Linked, SideCheck, Unchecked, SIDE_RECHECK};
pub use decide::{decide, Decision, HEAD};
pub use defined::Products;
pub use grouping::{group, linear_relation, root_range, Group, Member};
pub use parts::solve_parts;
pub use sets::linked;
pub use solve::{solve_group, solve_group_with, BOX_RECHECK};
pub use solved::{BoxAnswer, Defined, Equation, Fate, Paired, Prover, Solved, Term};
pub use terms::{holds_on_parts, Terms};
