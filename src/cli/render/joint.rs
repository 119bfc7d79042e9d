//! Joint sets of linked sizes in words, shared by `diagnose`, `check` and `verify`.

use super::style::{progression, row, segments_text, Style};
use dimguard::solver::linked::count_text;
use dimguard::solver::report::{Feasible, JointReport};
use dimguard::solver::DimSet;
use std::fmt::Write;

/// A set in a few words: `224..227`, `64..512 step 32`, or its first segments.
pub(super) fn set_words(s: &DimSet) -> String {
    match s.as_progression() {
        Some(p) => progression(p.lo, p.hi, p.modulus),
        None => segments_text(&Feasible::from(s)),
    }
}

/// Every joint set (`check`'s `joint`, `diagnose`'s and `verify`'s `joint_sets`): the answer in
/// a sentence, the accepted combinations, the largest sound box, real failing tuples.
/// `side(source)`: a size's side of the sound box through the traced sizes, when the spec uses
/// one.
pub(super) fn joint_sets(
    out: &mut String,
    joints: &[JointReport],
    side: &dyn Fn(&str) -> Option<String>,
    st: &Style,
) {
    for j in joints {
        out.push('\n');
        let _ = writeln!(out, "{} {}", st.bold("linked:"), j.dims.join(", "));
        row(out, "answer", &j.summary, st);
        // With a size the others define, the count is of the others' tuples; with equations, of
        // the boxes' tuples: an upper bound (`accepted_text` says so).
        row(
            out,
            "accepts",
            &format!(
                "{} of the {} claimed combinations ({} box{}{})",
                j.accepted_text(),
                count_text(j.claimed),
                j.boxes.len(),
                if j.boxes.len() == 1 { "" } else { "es" },
                if j.boxes_complete { "" } else { " or more" }
            ),
            st,
        );
        box_rows(out, j, side, st);
        if !j.equal.is_empty() {
            let pairs: Vec<String> = j.equal.iter().map(|[b, a]| format!("{b} = {a}")).collect();
            row(
                out,
                "equal",
                &format!(
                    "{} in every accepted combination (the program fails otherwise); the answer above is over the others, and the spec writes each as its partner",
                    pairs.join(", ")
                ),
                st,
            );
        }
        link_rows(out, j, st);
        example_rows(out, j, st);
        if let Some(u) = &j.undecided {
            row(
                out,
                "undecided",
                &st.yellow(&format!(
                    "{} combination{}: {}",
                    count_text(u.count),
                    if u.count == 1 { "" } else { "s" },
                    u.reason
                )),
                st,
            );
        }
    }
}

/// The boxes of one joint set: the largest sound box, and the box through the traced sizes
/// when every size has a side there (`side`, as [`joint_sets`]).
fn box_rows(out: &mut String, j: &JointReport, side: &dyn Fn(&str) -> Option<String>, st: &Style) {
    if let Some(b) = &j.largest_box {
        let sides: Vec<String> = b
            .sides
            .iter()
            .zip(&j.dims)
            .map(|(s, n)| format!("{n} {}", progression(s.lo, s.hi, s.modulus)))
            .collect();
        row(
            out,
            "largest box",
            &format!(
                "{} ({} combination{}{})",
                sides.join(", "),
                count_text(b.count),
                if b.count == 1 { "" } else { "s" },
                if b.maximal { ", maximal" } else { "" }
            ),
            st,
        );
    }
    let through: Vec<String> = j
        .dims
        .iter()
        .zip(&j.sources)
        .filter_map(|(n, src)| side(src).map(|t| format!("{n} {t}")))
        .collect();
    if through.len() == j.dims.len() {
        row(
            out,
            "spec box",
            &format!(
                "{} (holds the traced sizes; the corrected spec uses it)",
                through.join(", ")
            ),
            st,
        );
    }
}

/// What the link of one joint set excludes, when its boxes are exact: nothing (every
/// combination of accepted values passes), or per size it leaves free the size's values, then
/// the grid of the other sizes (each box once, at most 8).
fn link_rows(out: &mut String, j: &JointReport, st: &Style) {
    let (Some(boxes), Some(free)) = (j.exact_boxes(), j.free_sides()) else {
        return;
    };
    if free.iter().all(|f| *f) && !j.equal.is_empty() {
        row(
            out,
            "link",
            "with those equal, every combination of the others' accepted values passes",
            st,
        );
    } else if free.iter().all(|f| *f) {
        // One box: the link excludes nothing only when that box is the product of the sizes'
        // own sets (else it cuts each size to its side, though no size against another).
        if let Some(link) = j.one_box_link() {
            row(out, "link", link, st);
        }
    } else {
        for (k, n) in j.dims.iter().enumerate().filter(|(k, _)| free[*k]) {
            let others: Vec<&str> = j
                .dims
                .iter()
                .enumerate()
                .filter(|(o, _)| *o != k)
                .map(|(_, o)| o.as_str())
                .collect();
            row(
                out,
                "free",
                &format!(
                    "{n}: every {n} in {} passes with every accepted ({}); the link excludes none of its values",
                    set_words(&boxes[0][k]),
                    others.join(", ")
                ),
                st,
            );
        }
        // The grid of the other sizes, each box once (at most 8).
        let keep: Vec<usize> = (0..j.dims.len()).filter(|k| !free[*k]).collect();
        let mut grid: Vec<String> = Vec::new();
        for b in &boxes {
            let t = keep
                .iter()
                .map(|&k| format!("{} {}", j.dims[k], set_words(&b[k])))
                .collect::<Vec<_>>()
                .join(" × ");
            if !grid.contains(&t) {
                grid.push(t);
            }
        }
        if grid.len() <= 8 {
            row(out, "boxes", &grid.join("\n"), st);
        }
    }
}

/// Concrete tuples of one joint set and outside it (the failing ones re-checked against every
/// guard). The tuples name their order (the summary may list the sizes otherwise); a size the
/// others define comes last in the examples.
fn example_rows(out: &mut String, j: &JointReport, st: &Style) {
    let names: Vec<&str> = j
        .dims
        .iter()
        .map(String::as_str)
        .chain(j.defined.iter().map(|d| d.dim.as_str()))
        .collect();
    let order = format!("({})", names.join(", "));
    let tuples = |ts: &[Vec<i128>]| -> String {
        let ex: Vec<String> = ts
            .iter()
            .map(|t| {
                let v: Vec<String> = t.iter().map(|x| x.to_string()).collect();
                format!("({})", v.join(", "))
            })
            .collect();
        format!("{order} e.g. {}", ex.join(", "))
    };
    if !j.accepted_examples.is_empty() {
        row(out, "pass", &st.green(&tuples(&j.accepted_examples)), st);
    }
    if !j.rejected_examples.is_empty() {
        row(out, "fail", &st.red(&tuples(&j.rejected_examples)), st);
    }
}
