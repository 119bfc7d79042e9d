//! The root tests' one set of helpers: where the repository and its fixtures are, running the
//! `dimguard` binary, and reading the contract's sets against recorded program runs. Each test
//! file takes it with `mod common;` and uses part of it.
#![allow(dead_code)]

use serde_json::Value;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The repository root (the `dimguard` package's manifest directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A fixture under `tests/data` as a path argument: `data("pt2/x.pt2")`.
pub fn data(rel: &str) -> String {
    format!("{}/tests/data/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// A fixture under `tests/data` as a path: `data_path("pt2/x.pt2")`.
pub fn data_path(rel: &str) -> PathBuf {
    root().join("tests/data").join(rel)
}

/// A program fixture, `tests/data/pt2/NAME.model.json`.
pub fn program(name: &str) -> PathBuf {
    data_path(&format!("pt2/{name}.model.json"))
}

/// A fixture under `tests/data` read as JSON; a missing or malformed file fails the test,
/// naming it.
pub fn data_json(rel: &str) -> Value {
    serde_json::from_str(&text(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// The text of a fixture under `tests/data`; a missing file fails the test, naming it.
pub fn text(rel: &str) -> String {
    let p = root().join("tests/data").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A file of the shared data beside the repository (`../shared`): `shared("corpus/x.jsonl")`.
pub fn shared(rel: &str) -> String {
    format!("{}/../shared/{rel}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs the binary with `args` (writing `stdin` to it when given; else its input is empty),
/// colors off; returns (exit code, stdout, stderr).
pub fn run(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_dimguard"))
        .args(args)
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dimguard runs");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().expect("dimguard runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The binary's standard output; a run that does not exit 0 fails the test, with its stderr.
pub fn stdout(args: &[&str]) -> String {
    let (code, out, err) = run(args, None);
    assert_eq!(code, 0, "dimguard {args:?} exited with {code}: {err}");
    out
}

/// The binary's standard output read as JSON; a run that does not exit 0 fails the test.
pub fn json(args: &[&str]) -> Value {
    serde_json::from_str(&stdout(args)).expect("JSON")
}

/// Whether `x` is in a set of the contract's set form (`segments` of `lo`, `hi`, `modulus`,
/// `residues`).
pub fn member(set: &Value, x: i64) -> bool {
    set["segments"].as_array().unwrap().iter().any(|s| {
        let (lo, hi, m) = (
            s["lo"].as_i64().unwrap(),
            s["hi"].as_i64().unwrap(),
            s["modulus"].as_i64().unwrap(),
        );
        lo <= x
            && x <= hi
            && s["residues"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_i64() == Some(x.rem_euclid(m)))
    })
}

/// The value of the size `source` (`L['x'].size()[2]`) in a run's shapes (one per input, in the
/// order of `inputs`).
pub fn value_of(source: &str, inputs: &[String], shapes: &Value) -> i64 {
    let name = source.split('\'').nth(1).unwrap();
    let dim: usize = source
        .rsplit('[')
        .next()
        .unwrap()
        .trim_end_matches(']')
        .parse()
        .unwrap();
    let i = inputs.iter().position(|n| n == name).unwrap();
    shapes[i][dim].as_i64().unwrap()
}
