//! `check` when its time budget runs out part way, cut at chosen points of the work
//! (`budget::enter_cut`: the deadline is reached at the n-th consultation, the same on every run
//! and machine, never by wall-clock luck). For each program (`tests/data/pt2/swin_t_auto.pt2`,
//! the composed programs of `tests/data/composed` and `../shared/programs/composed`) the uncut
//! answer is the oracle, and at cuts spread over the uncut run's consultations:
//!
//! * every size accepted under the cut is accepted uncut (an answer cut short never accepts
//!   more);
//! * every size the cut answer calls rejected (claimed, outside what passes and outside the
//!   undecided part: what the text prints as "fail" or "raise") is rejected uncut: a size whose
//!   answer the budget cut is undecided, with the budget as its reason, never rejected;
//! * a size of the uncut spec is never dropped from the cut one (a spec that leaves a size out
//!   fixes it to its traced value);
//! * a joint set the cut left partial says so (`undecided`), and one that does not claims the
//!   uncut joint set's count.

use dimguard::commands::check::check_program;
use dimguard::solver::budget::{self, Budget};
use dimguard::solver::report::{CheckDim, CheckReport};
use dimguard::solver::DimSet;
use std::time::Duration;

mod common;

/// A set of the report (its segments).
fn set(f: Option<&dimguard::solver::report::Feasible>) -> DimSet {
    f.map_or_else(DimSet::empty, |f| f.set().expect("a set the report wrote"))
}

/// The claimed sizes (an affine image of a root's range: a progression, from its least and
/// greatest value and its count).
fn claimed(d: &CheckDim) -> DimSet {
    let c = &d.claimed;
    let (Some(lo), Some(hi)) = (c.min, c.max) else {
        return DimSet::empty();
    };
    let step = if c.count > 1 {
        (hi - lo) / (c.count as i128 - 1)
    } else {
        1
    };
    let s = DimSet::progression(lo, hi, step.max(1), lo.rem_euclid(step.max(1)));
    assert_eq!(
        s.count(),
        c.count,
        "{}[{}]: claimed {c:?}",
        d.input,
        d.index
    );
    s
}

/// The claimed sizes the report calls rejected: outside what passes (with some partner when
/// linked, else the accepted set) and outside the undecided part.
fn rejected(d: &CheckDim) -> DimSet {
    let claimed = claimed(d);
    let passes = match &d.answer.sides.with_some_partner {
        Some(s) => set(Some(s))
            .union(&set(d.answer.accepted.as_ref()))
            .unwrap(),
        None => set(d.answer.accepted.as_ref()),
    };
    let unsure = d.answer.undecided.as_ref().map_or_else(DimSet::empty, |u| {
        DimSet::from_segments(u.segments.clone()).expect("undecided set")
    });
    claimed
        .difference(&passes)
        .unwrap()
        .difference(&unsure)
        .unwrap()
}

fn run(program: &dimguard::graph::Program, cut: Option<u64>) -> (CheckReport, u64) {
    let b = Budget {
        time: Some(Duration::from_secs(3600)),
        ..Budget::default()
    };
    let _scope = match cut {
        Some(n) => budget::enter_cut(b, n),
        None => budget::enter(b),
    };
    let r = check_program(program, false).expect("checked");
    (r, budget::checks_made())
}

/// The spec's entries: `{2: x_2, 3: x_3}` per input, as `(input, index)` pairs.
fn spec_entries(r: &CheckReport) -> Vec<String> {
    r.dims
        .iter()
        .filter(|d| r.dynamic_shapes.contains(&format!("{}: ", d.index)))
        .map(|d| format!("{}[{}]", d.input, d.index))
        .collect()
}

fn compare(name: &str, full: &CheckReport, cut: &CheckReport, n: u64) {
    let at = format!("{name}, cut at check {n}");
    for (u, c) in full.dims.iter().zip(&cut.dims) {
        let who = format!("{at}: {}[{}]", c.input, c.index);
        let (ua, ca) = (
            set(u.answer.accepted.as_ref()),
            set(c.answer.accepted.as_ref()),
        );
        assert!(
            ca.difference(&ua).unwrap().is_empty(),
            "{who}: accepts {ca:?} under the cut, uncut {ua:?}"
        );
        let (ur, cr) = (rejected(u), rejected(c));
        assert!(
            cr.difference(&ur).unwrap().is_empty(),
            "{who}: rejects {cr:?} under the cut, uncut only {ur:?} (undecided: {:?})",
            c.answer.undecided
        );
        for x in &c.rejected_examples {
            assert!(ur.contains(*x), "{who}: rejected example {x} passes uncut");
        }
    }
    let (fs, cs) = (spec_entries(full), spec_entries(cut));
    for e in &fs {
        assert!(
            cs.contains(e),
            "{at}: the spec drops {e}:\n{}\n{:#?}",
            cut.dynamic_shapes,
            cut.dims
                .iter()
                .find(|d| &format!("{}[{}]", d.input, d.index) == e)
        );
    }
    for j in &cut.joint {
        let Some(f) = full.joint.iter().find(|f| f.dims == j.dims) else {
            continue;
        };
        assert!(
            j.accepted <= f.accepted || j.undecided.is_some(),
            "{at}: joint {:?} accepts {} under the cut, {} uncut",
            j.dims,
            j.accepted,
            f.accepted
        );
        if j.undecided.is_none() && f.undecided.is_none() {
            assert_eq!(
                j.accepted, f.accepted,
                "{at}: joint {:?} claims a complete answer: {}",
                j.dims, j.summary
            );
        }
    }
}

/// The cuts of one program: spread over its uncut run, plus the first few checks.
fn family(name: &str, path: &str, fractions: &[f64]) {
    let program = dimguard::graph::load(path.as_ref()).expect("loads");
    let (full, total) = run(&program, Some(u64::MAX));
    assert!(
        full.dims.iter().all(|d| d.answer.undecided.is_none()),
        "{name}: undecided uncut"
    );
    let mut cuts: Vec<u64> = fractions
        .iter()
        .map(|f| (total as f64 * f) as u64)
        .collect();
    cuts.extend([0, 1, 5]);
    cuts.sort();
    cuts.dedup();
    for n in cuts {
        let (cut, _) = run(&program, Some(n));
        eprintln!("{name}: cut at {n} of {total}");
        compare(name, &full, &cut, n);
    }
}

const FRACTIONS: [f64; 7] = [0.05, 0.2, 0.4, 0.6, 0.8, 0.95, 0.99];

#[test]
fn swin_cut_by_the_budget_rejects_nothing_it_did_not_decide() {
    let fractions: Vec<f64> = (1..20).map(|k| k as f64 / 20.0).collect();
    family(
        "swin_t_auto",
        &common::data("pt2/swin_t_auto.pt2"),
        &fractions,
    );
}

#[test]
fn composed_programs_cut_by_the_budget_answer_within_the_uncut_answer() {
    let mut programs = vec![];
    for dir in [
        common::data("composed"),
        common::shared("programs/composed"),
    ] {
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{dir}: {e}"))
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().ends_with(".model.json"))
            .collect();
        files.sort();
        programs.extend(files);
    }
    assert!(programs.len() >= 14, "{programs:?}");
    for p in programs {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        family(&name, &p.to_string_lossy(), &FRACTIONS);
    }
}
