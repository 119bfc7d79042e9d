//! Covering every valid size with several specs (`diagnose --cover N`).
//!
//! One `Dim` holds one progression; a dimension's valid sizes are often a union of them (four
//! residue classes mod 8 for RAFT's guard). [`cover`] splits each independent dimension's exact
//! feasible set into disjoint progressions ([`crate::suggest::cover`], greedy, largest first)
//! and combines them across dimensions into at most `n` specs, largest first: each spec is one
//! export (or one TensorRT profile), and together they accept every size they list. Dimensions
//! linked to others by guards, undecided or specialized are left as the diagnosis prints them,
//! and said so.

use crate::python::{dim_code, source_input, SpecBlock};
use crate::report::{CoverPiece, CoverReport, CoverSide, Report, Status};
use crate::types::Progression;

/// At most `n` specs covering the report's independent dimensions, largest first
/// (`examples`: traced sizes by dimension name, preferred among equally large pieces).
///
/// A diagnosis' report goes in (the `dimguard` facade's `commands::diagnose::diagnose_text`
/// shows one covered by four specs where no single `Dim` holds every accepted size).
pub fn cover(report: &Report, examples: &[(String, i128)], n: usize) -> CoverReport {
    let n = n.max(1);
    let mut left_out = Vec::new();
    // Per dimension: its name, source, and its disjoint pieces.
    let mut axes: Vec<(&str, Option<&str>, Vec<Progression>)> = Vec::new();
    let mut valid: u128 = 1;
    let mut one_dim: u128 = 1;
    let mut in_range: u128 = 1;
    for d in &report.dims {
        if !d.answer.linked_with.is_empty() {
            left_out.push(format!(
                "{}: linked with {} (its joint set: see `joint_sets`)",
                d.name,
                d.answer.linked_with.join(", ")
            ));
            continue;
        }
        if d.status == Status::Specialized {
            continue;
        }
        let Some(f) = d.answer.accepted.as_ref() else {
            left_out.push(format!("{}: undecided", d.name));
            continue;
        };
        let Ok(set) = crate::DimSet::from_segments(f.segments.clone()) else {
            left_out.push(format!("{}: its set was cut by the output budget", d.name));
            continue;
        };
        if set.count() != f.count {
            left_out.push(format!("{}: its set was cut by the output budget", d.name));
            continue;
        }
        let example = examples
            .iter()
            .find(|(name, _)| *name == d.name)
            .map(|(_, v)| *v);
        let pieces = crate::suggest::cover(&set, example, n);
        if pieces.is_empty() {
            left_out.push(format!("{}: no valid size", d.name));
            continue;
        }
        valid = valid.saturating_mul(set.count());
        in_range =
            in_range.saturating_mul(d.range.map_or(0, |[lo, hi]| (hi - lo + 1).max(0) as u128));
        one_dim = one_dim.saturating_mul(d.answer.suggestions.first().map_or(0, |s| s.count));
        axes.push((d.name.as_str(), d.source.as_deref(), pieces));
    }
    // Disjoint boxes: a combination's count is the product of its pieces'.
    let counts: Vec<Vec<u128>> = axes
        .iter()
        .map(|(_, _, pieces)| pieces.iter().map(|p| p.count()).collect())
        .collect();
    let combos = largest_combinations(&counts, n);
    let pieces: Vec<CoverPiece> = if axes.is_empty() {
        vec![]
    } else {
        combos
            .iter()
            .map(|(count, combo)| piece(&axes, combo, *count))
            .collect()
    };
    let covered: u128 = pieces.iter().map(|p| p.count).sum();
    let summary = if axes.is_empty() {
        "no independent dynamic dimension to cover".to_string()
    } else {
        format!(
            "{covered} of {valid} valid sizes ({in_range} in the range) in {} spec{}; one Dim: {one_dim}",
            pieces.len(),
            if pieces.len() == 1 { "" } else { "s" }
        )
    };
    CoverReport {
        dims: axes.iter().map(|(name, _, _)| name.to_string()).collect(),
        pieces,
        covered,
        valid,
        in_range,
        one_dim,
        summary,
        left_out,
    }
}

/// The `n` largest combinations of one piece per axis (`counts[axis][piece]`), largest first,
/// as `(product of the pieces' counts, the piece of each axis)`; ties in index order. Keeping
/// only the `n` largest prefixes after each axis is exact: a prefix outside them has `n` prefixes
/// at least as large, each of which extends with the same piece to a combination at least as
/// large. `diagnose --cover` and `profile --cover` both choose their pieces here.
///
/// ```
/// use dimguard_solver::largest_combinations;
/// let c = largest_combinations(&[vec![5, 3], vec![4, 1]], 3);
/// assert_eq!(c, vec![(20, vec![0, 0]), (12, vec![1, 0]), (5, vec![0, 1])]);
/// ```
pub fn largest_combinations(counts: &[Vec<u128>], n: usize) -> Vec<(u128, Vec<usize>)> {
    let mut combos: Vec<(u128, Vec<usize>)> = vec![(1, vec![])];
    for axis in counts {
        let mut next = Vec::with_capacity(combos.len() * axis.len());
        for (count, combo) in &combos {
            for (i, c) in axis.iter().enumerate() {
                let mut v = combo.clone();
                v.push(i);
                next.push((count.saturating_mul(*c), v));
            }
        }
        next.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        next.truncate(n);
        combos = next;
    }
    combos
}

fn piece(
    axes: &[(&str, Option<&str>, Vec<Progression>)],
    combo: &[usize],
    count: u128,
) -> CoverPiece {
    let mut block = SpecBlock::new();
    let mut sides = Vec::new();
    let mut entries: Vec<(String, usize, String)> = Vec::new();
    let mut all_named = true;
    for ((name, source, pieces), &i) in axes.iter().zip(combo) {
        let p = pieces[i];
        block.code(&dim_code(name, &p));
        sides.push(CoverSide {
            name: name.to_string(),
            lo: p.lo,
            hi: p.hi,
            modulus: p.modulus,
            residue: p.residue,
            count: p.count(),
        });
        match source.and_then(source_input) {
            Some((input, index)) => entries.push((input, index, crate::python::py_name(name))),
            None => all_named = false,
        }
    }
    if all_named {
        for (input, index, py) in entries {
            block.entry(&input, index, py, None);
        }
    }
    CoverPiece {
        sides,
        count,
        code: block.finish(),
    }
}
