//! Golden outputs: what `dimguard` prints for every message and program fixture in `tests/data`,
//! pinned byte for byte (the JSON contract and the human report, printed Python included).
//!
//! A difference fails the test and shows the first differing line. When a change is meant to alter
//! the output (a printing bug fixed, a new field), regenerate the files and review the diff:
//!
//! ```sh
//! DIMGUARD_BLESS=1 cargo test --test golden
//! git diff tests/golden
//! ```

mod common;

use common::{root, stdout};
use std::path::{Path, PathBuf};

/// Compares `actual` with the golden file `name` (or writes it under `DIMGUARD_BLESS=1`); returns a
/// description of the difference, if any.
fn compare(name: &str, actual: &str) -> Option<String> {
    let path = root().join("tests/golden").join(name);
    if std::env::var_os("DIMGUARD_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return None;
    }
    let expected = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) => {
            return Some(format!(
                "{}: {e} (run `DIMGUARD_BLESS=1 cargo test --test golden` to create it)",
                path.display()
            ))
        }
    };
    if expected == actual {
        return None;
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    Some(format!(
        "{}: differs at line {}:\n  expected: {:?}\n  actual:   {:?}",
        path.display(),
        line + 1,
        expected.lines().nth(line).unwrap_or("<end of file>"),
        actual.lines().nth(line).unwrap_or("<end of file>"),
    ))
}

fn fixtures(dir: &str, suffix: &str) -> Vec<(String, PathBuf)> {
    let mut files: Vec<(String, PathBuf)> = std::fs::read_dir(root().join(dir))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.strip_suffix(suffix)?.to_string();
            Some((name, p))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no fixtures in {dir}");
    files
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("fixture paths are UTF-8")
}

fn check_all(cases: Vec<(String, String)>) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(name, actual)| compare(name, actual))
        .collect();
    assert!(
        failures.is_empty(),
        "{} golden output(s) changed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn diagnose_outputs_are_unchanged() {
    let mut cases = Vec::new();
    for (name, path) in fixtures("tests/data/messages", ".txt") {
        let file = path_str(&path);
        cases.push((
            format!("diagnose/{name}.json"),
            stdout(&["diagnose", "--json", file]),
        ));
        cases.push((format!("diagnose/{name}.txt"), stdout(&["diagnose", file])));
    }
    check_all(cases);
}

/// torch.compile's recompile logs (`tests/data/forms/recompile*.log.txt`, `tests/data/recompiles/`): the sets, the failed
/// guard and the torch.compile paste block (`mark_dynamic` with the accepted bounds).
#[test]
fn recompile_outputs_are_unchanged() {
    let mut cases = Vec::new();
    for (name, path) in fixtures("tests/data/forms", ".log.txt") {
        if !name.starts_with("recompile") {
            continue;
        }
        let file = path_str(&path);
        cases.push((
            format!("forms/{name}.json"),
            stdout(&["diagnose", "--json", file]),
        ));
        cases.push((format!("forms/{name}.txt"), stdout(&["diagnose", file])));
    }
    assert!(
        !cases.is_empty(),
        "no recompile fixtures in tests/data/forms"
    );
    // The real recompile logs of tools/make_recompile_fixtures.py: each entry's set against the
    // size that ran, and torch.compile's advice.
    for (name, path) in fixtures("tests/data/recompiles", ".log.txt") {
        let file = path_str(&path);
        cases.push((
            format!("recompiles/{name}.json"),
            stdout(&["diagnose", "--json", file]),
        ));
        cases.push((
            format!("recompiles/{name}.txt"),
            stdout(&["diagnose", file]),
        ));
    }
    check_all(cases);
}

#[test]
fn check_outputs_are_unchanged() {
    let mut cases = Vec::new();
    for (name, path) in fixtures("tests/data/pt2", ".model.json") {
        let file = path_str(&path);
        cases.push((
            format!("check/{name}.json"),
            stdout(&["check", "--json", "--sizes", file]),
        ));
        cases.push((format!("check/{name}.txt"), stdout(&["check", file])));
    }
    check_all(cases);
}

/// The shared fixtures are copies of files in `tests/data`; a golden file covers each of them.
#[test]
fn shared_fixtures_are_covered() {
    let shared = root().join("../shared/fixtures");
    if !shared.is_dir() {
        return; // a fresh clone has no shared fixtures; tests/data holds the same files
    }
    for sub in ["messages", "pt2"] {
        let Ok(entries) = std::fs::read_dir(shared.join(sub)) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            let local = root()
                .join("tests/data")
                .join(sub)
                .join(p.file_name().unwrap());
            assert_eq!(
                std::fs::read(&p).unwrap(),
                std::fs::read(&local).unwrap_or_default(),
                "{} has no identical copy in tests/data/{sub}",
                p.display()
            );
        }
    }
}
