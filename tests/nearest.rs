//! `nearest_accepted` (issue 35): for a traced size its answer rejects, the nearest accepted
//! sizes below and above. The family: every dimension of the 90 real texts of the shared corpus
//! and of every shared message fixture whose guards each name that size alone, traced at
//! rejected sizes (the first in its range, one near the middle, the last). The oracle evaluates
//! the dimension's guards, as printed, value by value outward from the traced size (never the
//! solver's sets): the first value each way that passes every guard inside the range must be
//! the answer's `below` and `above`, and a size that passes must get no entry. The text and the
//! page print the entry.

use common::root;
use dimguard::commands::diagnose::{diagnose_text, Options};
use dimguard::solver::{parse_guard, Expr};
use std::path::PathBuf;

mod common;
mod shared_corpus;

/// The texts: the corpus's messages and the shared message fixtures.
fn texts() -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = shared_corpus::records()
        .iter()
        .map(|v| {
            (
                v["id"].as_str().unwrap().to_string(),
                v["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let fixtures = root().join("../shared/fixtures/messages");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap_or_else(|e| panic!("{}: {e}", fixtures.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    for f in files {
        out.push((
            f.file_name().unwrap().to_string_lossy().into_owned(),
            std::fs::read_to_string(&f).unwrap(),
        ));
    }
    out
}

/// Whether `x` passes every guard (each over one size).
fn passes(guards: &[Expr], x: i128) -> Option<bool> {
    guards
        .iter()
        .try_fold(true, |ok, g| Some(ok && g.truth(&|_| Some(x)).ok()?))
}

/// The first value from `from` stepping by `step` inside `[lo, hi]` that passes, looking at most
/// `limit` values; `Err` when none was found within the limit (not decided here).
fn first_passing(
    guards: &[Expr],
    from: i128,
    step: i128,
    lo: i128,
    hi: i128,
) -> Result<Option<i128>, ()> {
    const LIMIT: usize = 200_000;
    let mut x = from;
    for _ in 0..LIMIT {
        if x < lo || x > hi {
            return Ok(None);
        }
        match passes(guards, x) {
            Some(true) => return Ok(Some(x)),
            Some(false) => {}
            None => return Err(()),
        }
        x += step;
    }
    Err(())
}

#[test]
fn nearest_accepted_is_the_nearest_passing_size_each_way() {
    let (mut checked, mut passing, mut texts_used) = (0, 0, 0);
    for (id, text) in texts() {
        let Ok(report) = diagnose_text(&text, &Options::default()) else {
            continue;
        };
        let mut used = false;
        for d in &report.dims {
            let (Some([lo, hi]), Some(f)) = (d.range, &d.answer.accepted) else {
                continue;
            };
            if !d.answer.linked_with.is_empty() || d.guards.is_empty() || f.count == 0 {
                continue;
            }
            let Ok(guards) = d
                .guards
                .iter()
                .map(|g| parse_guard(&g.text))
                .collect::<Result<Vec<Expr>, _>>()
            else {
                continue;
            };
            if guards.iter().any(|g| g.atoms().len() != 1) {
                continue;
            }
            let hi = hi.min(lo + 1_000_000);
            let mid = lo + (hi - lo) / 2;
            let mut probes: Vec<i128> = [lo, lo + 1, lo + 3, mid, mid + 1, mid + 2, hi]
                .into_iter()
                .filter(|&n| n <= hi)
                .collect();
            probes.dedup();
            for n in probes {
                let Some(ok) = passes(&guards, n) else {
                    continue;
                };
                let opts = Options {
                    examples: vec![(Some(d.name.clone()), n)],
                    ..Options::default()
                };
                let r = diagnose_text(&text, &opts).expect("read once, read again");
                let e = r.dims.iter().find(|x| x.name == d.name).unwrap();
                let got = e.answer.nearest_accepted;
                if ok {
                    assert_eq!(
                        got, None,
                        "{id} {}: {n} passes, yet called rejected",
                        d.name
                    );
                    passing += 1;
                    continue;
                }
                let (Ok(below), Ok(above)) = (
                    first_passing(&guards, n - 1, -1, lo, hi),
                    first_passing(&guards, n + 1, 1, lo, d.range.unwrap()[1]),
                ) else {
                    continue;
                };
                let got = got.unwrap_or_else(|| panic!("{id} {}: {n} fails, no nearest", d.name));
                assert_eq!(got.size, n);
                assert_eq!(got.below, below, "{id} {}: below {n}", d.name);
                if above.is_some() || d.range.unwrap()[1] == hi {
                    assert_eq!(got.above, above, "{id} {}: above {n}", d.name);
                }
                checked += 1;
                used = true;
                // The text (the first few, through the binary) and the page say it.
                if checked <= 5 {
                    let file = std::env::temp_dir().join(format!("dimguard-nearest-{id}"));
                    std::fs::write(&file, &text).unwrap();
                    let example = format!("{}={n}", d.name);
                    let (_, t, _) = common::run(
                        &["diagnose", "--example", &example, file.to_str().unwrap()],
                        None,
                    );
                    let _ = std::fs::remove_file(&file);
                    assert!(
                        t.contains(&format!("{} = {n} is rejected; nearest accepted", d.name)),
                        "{id}: the text prints it:\n{t}"
                    );
                }
                let page =
                    dimguard::html::render_json(&serde_json::to_string(&r).unwrap(), "nearest")
                        .unwrap();
                assert!(
                    page.contains(&format!("The traced size {n} is rejected")),
                    "{id}: the page"
                );
            }
        }
        texts_used += usize::from(used);
    }
    eprintln!("{checked} rejected sizes checked over {texts_used} texts; {passing} passing sizes got none");
    assert!(checked >= 30, "only {checked} rejected sizes were checked");
    assert!(passing >= 10, "only {passing} accepted sizes were checked");
}
