//! What the solver's family tests share.

use dimguard_solver::joint::{group, solve_parts, Group, Solved};
use dimguard_solver::linked::Budget;
use dimguard_solver::Expr;
use std::collections::BTreeMap;

/// Every group of `guards` over `names` (each within its range of `ranges`) solved as
/// independent parts ([`solve_parts`], no Z3, the default budget).
pub fn solve_all(
    guards: &[Expr],
    names: &[String],
    ranges: &BTreeMap<String, (i128, i128)>,
) -> Vec<(Group, Solved)> {
    let mut parts = Vec::new();
    for grp in group(guards, names) {
        parts.extend(solve_parts(
            &grp,
            guards,
            ranges,
            &Budget::default(),
            None,
            &|_| true,
        ));
    }
    parts
}
