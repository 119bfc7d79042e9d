//! Texts no corpus holds: what torch 2.15 printed (CPU) for small models written for
//! `tests/data/new_texts/` by `tools/make_new_texts.py` — constraint violations with suggested
//! fixes, a `TORCH_LOGS=+dynamic` log, specializations (`specialized it to be a constant`,
//! `Dim.DYNAMIC` inferred static), data-dependent errors, a `draft_export` report, a printed
//! `ExportedProgram` and a printed `range_constraints` — each with its truth from torch itself:
//! the sizes at which the program exported with `Dim.AUTO` (or the printed program) runs, the
//! sizes torch ties, the expression it could not guard on. (Its recompile logs are checked by
//! `tests/recompiles.rs`.)
//!
//! Each text is read as `diagnose` reads it and its answer is held to the truth at every probed
//! size inside the range the reading gives (the text's own range, or torch's default).

mod common;

use dimguard::commands::diagnose::{diagnose, Options};
use dimguard::readers::forms;
use dimguard::readers::Message;
use dimguard::solver::report::{DimReport, Report, Status};
use dimguard::solver::DimSet;
use serde_json::Value;
use std::path::PathBuf;

fn dir() -> PathBuf {
    common::root().join("tests/data/new_texts")
}

fn read(text: &str) -> Result<Message, String> {
    let mut m = forms::read(text).map_err(|e| e.to_string())?;
    dimguard::readers::spec::bind_user_spec(text, &mut m);
    forms::apply_ranges(&mut m, &[]).map_err(|e| e.to_string())?;
    Ok(m)
}

fn squash(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// The ways a text may name the size `x.size()[1]`.
fn names_of(source: &str) -> Vec<String> {
    let (x, rest) = source.split_once('.').unwrap();
    let i = rest.trim_start_matches("size()[").trim_end_matches(']');
    [
        source.to_string(),
        format!("L['{x}'].{rest}"),
        format!("{x}.shape[{i}]"),
        format!("L['{x}'].shape[{i}]"),
    ]
    .iter()
    .map(|s| squash(s))
    .collect()
}

/// The size the truth's `s` names: by its source, else by torch's symbol for it (a text that
/// names no input, `{8*s56: VR[8, 512], s56: VR[2, 64]}`), else the one size of a text that
/// names neither (`You marked n as dynamic ...`: the Dim's name only).
fn find<'a>(r: &'a Report, m: &Message, s: &Value, text: &str, one: bool) -> Option<&'a DimReport> {
    let names = names_of(s["source"].as_str().unwrap());
    if let Some(d) = r.dims.iter().find(|d| {
        d.source
            .as_deref()
            .is_some_and(|x| names.contains(&squash(x)))
    }) {
        return Some(d);
    }
    if let Some(sym) = s["symbol"].as_str() {
        let by_symbol = r.dims.iter().find(|d| {
            squash(&d.name) == squash(sym)
                || m.dims.iter().any(|e| {
                    e.name == d.name && e.symbol.as_deref().map(squash) == Some(squash(sym))
                })
        });
        if by_symbol.is_some() {
            return by_symbol;
        }
    }
    let named = names.iter().any(|n| squash(text).contains(n.as_str()));
    (one && !named && r.dims.len() == 1).then(|| &r.dims[0])
}

/// What `d` accepts: its set, its one value where specialized, its range where unconstrained.
fn set_of(d: &DimReport) -> Option<DimSet> {
    if let Some(v) = d.specialized {
        return Some(DimSet::interval(v, v));
    }
    match (&d.answer.accepted, d.status, d.range) {
        (Some(f), _, _) => DimSet::from_segments(f.segments.clone()).ok(),
        (None, Status::Unconstrained, r) => {
            let [lo, hi] = r.unwrap_or([2, dimguard::solver::SIZE_MAX]);
            Some(DimSet::interval(lo, hi))
        }
        _ => None,
    }
}

/// Why the text's reading is wrong (empty: read right).
fn misreadings(name: &str, text: &str, truth: &Value) -> Vec<String> {
    let m = match read(text) {
        Ok(m) => m,
        Err(e) => return vec![format!("{name}: refused: {e}")],
    };
    let r = diagnose(&m, &Options::default());
    let mut out = Vec::new();
    let sizes = truth["sizes"].as_array().unwrap();
    for s in sizes {
        let src = s["source"].as_str().unwrap();
        let Some(d) = find(&r, &m, s, text, sizes.len() == 1) else {
            out.push(format!(
                "{name}: {src} not read ({:?})",
                r.dims
                    .iter()
                    .map(|d| (&d.name, &d.source))
                    .collect::<Vec<_>>()
            ));
            continue;
        };
        let Some(set) = set_of(d) else {
            out.push(format!("{name}: {src}: no set ({:?})", d.status));
            continue;
        };
        let [lo, hi] = d.range.unwrap_or([2, i128::MAX]);
        let ok: Vec<i128> = s["accepted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i128)
            .collect();
        let probes: Vec<i128> = s["probes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i128)
            .filter(|v| (lo..=hi).contains(v))
            .collect();
        if probes.is_empty() {
            out.push(format!(
                "{name}: {src}: no probed size in the range read {lo}..{hi}"
            ));
        }
        let wrong: Vec<i128> = probes
            .iter()
            .copied()
            .filter(|&v| set.contains(v) != ok.contains(&v))
            .collect();
        if !wrong.is_empty() {
            out.push(format!(
                "{name}: {src} read wrong at {:?} (range {lo}..{hi})",
                &wrong[..wrong.len().min(8)]
            ));
        }
    }
    for pair in truth["equal"].as_array().unwrap() {
        let (a, b) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
        let src = |n: &str| {
            r.dims
                .iter()
                .find(|d| d.name == n)
                .and_then(|d| d.source.clone())
                .map(|s| squash(&s))
        };
        let tied = r.equalities.iter().any(|[x, y]| {
            let (x, y) = (src(x), src(y));
            let (na, nb) = (names_of(a), names_of(b));
            x.is_some_and(|x| na.contains(&x) || nb.contains(&x))
                && y.is_some_and(|y| na.contains(&y) || nb.contains(&y))
        });
        if !tied {
            out.push(format!("{name}: {a} == {b} not read ({:?})", r.equalities));
        }
    }
    let read_dd: Vec<String> = r.data_dependent.iter().map(|g| squash(&g.guard)).collect();
    for e in truth["data_dependent"].as_array().unwrap() {
        let e = e.as_str().unwrap();
        if !read_dd.contains(&squash(e)) {
            out.push(format!("{name}: data-dependent {e} not read ({read_dd:?})"));
        }
    }
    out
}

#[test]
fn new_texts_read_as_torch_says() {
    let mut names: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().into_string().ok()?;
            n.strip_suffix(".json").map(str::to_string)
        })
        .collect();
    names.sort();
    assert!(names.len() >= 12, "{names:?}");
    let mut failures = Vec::new();
    let mut right = 0;
    for name in &names {
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(dir().join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        let text = std::fs::read_to_string(dir().join(format!("{name}.txt"))).unwrap();
        let bad = misreadings(name, &text, &truth);
        if bad.is_empty() {
            right += 1;
        }
        failures.extend(bad);
    }
    eprintln!("{right} of {} new texts read right", names.len());
    // torch's own solver crashed on the groups-of-four reshape (`Expected op to be '==', got <=
    // for 8/3 <= rows`) and printed one guard of several: the text cannot give the set (torch
    // accepts the multiples of 4 from 8), so the size must be undecided, never the fragment's
    // 3.. as an accepted set.
    let known = ["cve_groups_of_four"];
    for f in failures
        .iter()
        .filter(|f| f.starts_with("cve_groups_of_four:"))
    {
        assert!(f.ends_with("no set (Undecided)"), "{f}");
    }
    let unknown: Vec<&String> = failures
        .iter()
        .filter(|f| !known.iter().any(|k| f.starts_with(&format!("{k}:"))))
        .collect();
    assert!(
        unknown.is_empty(),
        "{} misread:\n{}",
        unknown.len(),
        unknown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    assert!(right + known.len() >= names.len(), "{right}");
}
