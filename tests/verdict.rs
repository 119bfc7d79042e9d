//! `verdict` (whether a program accepts given shapes) against the program's real runs: every
//! torch 2.15 program of `tests/data/pt2` that was run by its tools/ script, at every recorded
//! shape. Never a wrong accept, never a wrong reject; undecided only where a condition reads a
//! value computed from data. The accepted sets of the same report are held to the verdicts too.

use dimguard::commands::check::check;
use dimguard::graph::load;
use dimguard::graph::verdict::{verdict, Facts};
use dimguard::solver::report::{CheckReport, ShapeEntry};
use dimguard::solver::DimSet;
use std::collections::{BTreeMap, BTreeSet};

mod common;
use common::{data_json, data_path};

fn int(v: &serde_json::Value) -> i128 {
    v.as_i64().unwrap() as i128
}

/// The names of the `.pt2` programs in tests/data/pt2 that have a record of runs with `suffix`.
fn with_record(suffix: &str) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(data_path("pt2/"))
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let stem = name.strip_suffix(suffix)?.to_string();
            data_path(&format!("pt2/{stem}.pt2"))
                .exists()
                .then_some(stem)
        })
        .collect();
    out.sort();
    out
}

/// Programs with one dynamic size, run at every size of its claimed range (`.truth.json`):
/// the verdict at each size, the other sizes at the program's fixed values.
#[test]
fn verdicts_agree_with_every_run_of_the_one_size_programs() {
    let names = with_record(".truth.json");
    assert!(names.len() >= 10, "found only {names:?}");
    for name in names {
        let p = load(&data_path(&format!("pt2/{name}.pt2"))).unwrap();
        let r = check(&p, false).unwrap();
        let facts = Facts::from(&r);
        let t = data_json(&format!("pt2/{name}.truth.json"));
        let (lo, hi) = (int(&t["claimed"][0]), int(&t["claimed"][1]));
        let runs: BTreeSet<i128> = t["accepted"].as_array().unwrap().iter().map(int).collect();
        let dynamic: Vec<(usize, usize)> = facts
            .inputs
            .iter()
            .enumerate()
            .flat_map(|(i, input)| {
                (0..input.shape.len())
                    .filter(move |&k| matches!(input.shape[k], ShapeEntry::Symbolic(_)))
                    .map(move |k| (i, k))
            })
            .collect();
        let [at] = dynamic[..] else {
            panic!("{name}: one dynamic size expected, got {dynamic:?}")
        };
        let mut undecided = 0;
        for v in lo..=hi {
            let shapes: BTreeMap<String, Vec<i128>> = facts
                .inputs
                .iter()
                .enumerate()
                .map(|(i, input)| {
                    let shape = input
                        .shape
                        .iter()
                        .enumerate()
                        .map(|(k, e)| match e {
                            ShapeEntry::Fixed(n) if (i, k) != at => i128::from(*n),
                            _ => v,
                        })
                        .collect();
                    (input.input.clone(), shape)
                })
                .collect();
            let got = verdict(&facts, &shapes);
            match got.accepted {
                Some(a) => assert_eq!(
                    a,
                    runs.contains(&v),
                    "{name} at {v}: verdict {got:?}, the program {}",
                    if runs.contains(&v) { "runs" } else { "raises" }
                ),
                None => {
                    if undecided == 0 {
                        eprintln!("{name} at {v}: undecided: {:?}", got.reason);
                    }
                    undecided += 1
                }
            }
        }
        // Undecided only where a run-time condition names a value computed from data.
        let from_data = r.runtime.iter().any(|c| c.on_inputs.is_none());
        assert!(
            undecided == 0 || from_data,
            "{name}: {undecided} sizes undecided with every condition over the input sizes"
        );
    }
}

/// The shapes of one recorded run, by input name.
fn shapes_of(inputs: &[&String], shapes: &serde_json::Value) -> BTreeMap<String, Vec<i128>> {
    inputs
        .iter()
        .zip(shapes.as_array().unwrap())
        .map(|(n, s)| {
            (
                n.to_string(),
                s.as_array().unwrap().iter().map(int).collect(),
            )
        })
        .collect()
}

/// Whether the report's sets accept a shape: each unlinked size in its accepted set, each linked
/// group's tuple in one of its boxes (only where the group's boxes are complete).
fn sets_accept(r: &CheckReport, shapes: &BTreeMap<String, Vec<i128>>) -> Option<bool> {
    let value = |source: &str| {
        r.dims
            .iter()
            .find(|d| d.source == source)
            .map(|d| shapes[&d.input][d.index])
    };
    let mut linked = BTreeSet::new();
    for j in &r.joint {
        if !j.boxes_complete || j.undecided.is_some() {
            return None;
        }
        let point: Vec<i128> = j.sources.iter().map(|s| value(s).unwrap()).collect();
        let inside = j.boxes.iter().any(|b| {
            b.iter().zip(&point).all(|(side, v)| {
                DimSet::from_segments(side.segments.clone())
                    .unwrap()
                    .contains(*v)
            })
        });
        if !inside {
            return Some(false);
        }
        linked.extend(j.sources.iter().cloned());
        // A size the others define: the tuple passes only at its definition, inside its own
        // set (the contract's `joint[].defined`).
        for x in &j.defined {
            let at = format!("{} == ({})", x.source, x.expr);
            let at = dimguard::solver::parse_guard(&at).expect("a defined size's relation parses");
            let own = DimSet::from_segments(x.accepted.segments.clone()).unwrap();
            let holds = at.truth(&|a: &str| value(a)).expect("decided at the tuple");
            if !holds || !own.contains(value(&x.source).unwrap()) {
                return Some(false);
            }
            linked.insert(x.source.clone());
        }
    }
    for d in &r.dims {
        if linked.contains(&d.source) {
            continue;
        }
        if d.answer.undecided.is_some() {
            return None;
        }
        let a = DimSet::from_segments(d.answer.accepted.as_ref()?.segments.clone()).unwrap();
        if !a.contains(shapes[&d.input][d.index]) {
            return Some(false);
        }
    }
    Some(true)
}

/// Multi-input, linked programs run at shapes near the corner and larger (`.runs.json`): the
/// verdict equals every run, and the report's own sets agree with the verdict.
#[test]
fn verdicts_agree_with_every_run_of_the_linked_programs() {
    let mut seen = 0;
    for name in with_record(".runs.json") {
        let t = data_json(&format!("pt2/{name}.runs.json"));
        // `inputs`: input name -> its dynamic dimensions; each run's shapes in the program's
        // input order.
        let Some(inputs) = t["inputs"].as_object() else {
            continue; // another layout (two_stem_offset: read by tests/profile.rs)
        };
        let p = load(&data_path(&format!("pt2/{name}.pt2"))).unwrap();
        let r = check(&p, false).unwrap();
        let facts = Facts::from(&r);
        let inputs: Vec<&String> = facts
            .inputs
            .iter()
            .map(|i| &i.input)
            .filter(|n| inputs.contains_key(*n))
            .collect();
        for run in t["runs"].as_array().unwrap() {
            let shapes = shapes_of(&inputs, &run[0]);
            let runs = run[1].as_bool().unwrap();
            let got = verdict(&facts, &shapes);
            assert_eq!(got.accepted, Some(runs), "{name} at {shapes:?}: {got:?}");
            // The sets answer inside the claimed ranges (torch lets a size of 0 or 1 through a
            // claimed minimum of 2; the verdict says so, the sets do not count it).
            let claimed = r.dims.iter().all(|d| {
                let v = shapes[&d.input][d.index];
                d.claimed.min.is_none_or(|m| v >= m) && d.claimed.max.is_none_or(|m| v <= m)
            });
            if let Some(by_sets) = sets_accept(&r, &shapes).filter(|_| claimed) {
                assert_eq!(
                    by_sets, runs,
                    "{name} at {shapes:?}: the sets say {by_sets}"
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 200, "only {seen} recorded runs");
}

/// The facts survive the JSON round trip (what the Python package hands to `verdict`).
#[test]
fn facts_read_back_from_the_check_json() {
    let p = load(&data_path("pt2/two_stem_unbounded.pt2")).unwrap();
    let r = check(&p, false).unwrap();
    let text = serde_json::to_string(&r).unwrap();
    let facts: Facts = serde_json::from_str(&text).unwrap();
    assert_eq!(facts.inputs, r.inputs);
    assert_eq!(facts.symbols, r.symbols);
    assert_eq!(facts.guards.len(), r.guards.len());
    assert!(!facts.inputs.is_empty());
}
