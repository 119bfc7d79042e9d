//! Every paste block names only what it defines: over every text the tests hold (messages,
//! logs, traces, the cross-form inputs, the shared corpus of real texts) and every exported
//! program (its `check` block, and its guards read as text by `diagnose`), each name a
//! `dynamic_shapes` dict uses is defined on a line above it. A block that uses a name it never
//! defines raises `NameError` where the user pastes it.

mod common;

use common::root;
use dimguard::commands::check::check;
use dimguard::commands::diagnose::{diagnose_text, Options};
use dimguard::graph::load;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// The names a block's `dynamic_shapes = {...}` dict uses that no line above defines.
fn undefined(block: &str) -> Vec<String> {
    let mut defined: BTreeSet<String> = ["Dim", "None"].map(String::from).into();
    let mut missing = Vec::new();
    for line in block.lines() {
        let line = line.trim();
        if let Some(dict) = line.strip_prefix("dynamic_shapes = ") {
            // Values of `{i: value}` items: a bare name must be defined above.
            for item in dict.split([',', '{', '}', '(', ')', '[', ']']) {
                let Some((_, value)) = item.split_once(':') else {
                    continue;
                };
                let value = value.trim();
                if is_ident(value) && !defined.contains(value) {
                    missing.push(value.to_string());
                }
            }
        } else if let Some((name, _)) = line.split_once(" = ") {
            if is_ident(name.trim()) {
                defined.insert(name.trim().to_string());
            }
        }
    }
    missing
}

fn files(dir: &Path, ext: &[&str]) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.expect("entry").path()).collect())
        .unwrap_or_default();
    out.retain(|p| {
        let name = p.to_string_lossy();
        ext.iter().any(|e| name.ends_with(e)) && !name.contains(".expect.")
    });
    out.sort();
    out
}

#[test]
fn the_checker_finds_a_name_the_block_never_defines() {
    let bad = "a = Dim('a')\ndynamic_shapes = {\"x\": {0: a, 1: b}}";
    assert_eq!(undefined(bad), vec!["b".to_string()]);
    let good = "a = Dim('a')\nb = 2*a\ndynamic_shapes = {\"x\": {0: a, 1: b}, \"y\": (None, a)}";
    assert!(undefined(good).is_empty());
}

#[test]
fn every_diagnose_block_defines_the_names_its_dict_uses() {
    let mut texts: Vec<(String, String)> = Vec::new();
    let data = root().join("tests/data");
    for dir in ["messages", "traces", "forms"] {
        for p in files(&data.join(dir), &[".txt", ".log", ".json"]) {
            texts.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    for case in files(&data.join("crossform"), &[""]) {
        for p in files(&case, &[".txt", ".log", ".trace", ".json"]) {
            texts.push((
                p.display().to_string(),
                std::fs::read_to_string(&p).unwrap(),
            ));
        }
    }
    // Every exported program's guards, as a text a user would paste.
    for p in files(&data.join("pt2"), &[".pt2"]) {
        let program = load(&p).unwrap();
        texts.push((
            format!("{} (its guards)", p.display()),
            program.guards_code.join("\n"),
        ));
    }
    let corpus = root().join("../shared/corpus/real_texts.jsonl");
    let all = std::fs::read_to_string(&corpus).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (the shared corpus sits beside the repository)",
            corpus.display()
        )
    });
    for line in all.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let (Some(id), Some(t)) = (v["id"].as_str(), v["message"].as_str()) {
            texts.push((format!("corpus text {id}"), t.to_string()));
        }
    }
    assert!(texts.len() > 50, "too few texts: {}", texts.len());
    let mut wrong = Vec::new();
    let mut read = 0;
    for (name, text) in &texts {
        let Ok(report) = diagnose_text(text, &Options::default()) else {
            continue;
        };
        read += 1;
        let missing = undefined(&report.dynamic_shapes);
        if !missing.is_empty() {
            wrong.push(format!(
                "{name}: {missing:?} undefined in\n{}",
                report.dynamic_shapes
            ));
        }
    }
    assert!(read > 40, "only {read} texts read");
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}

#[test]
fn every_check_block_defines_the_names_its_dict_uses() {
    let mut wrong = Vec::new();
    let programs = files(&root().join("tests/data/pt2"), &[".pt2", ".model.json"]);
    assert!(programs.len() > 10);
    for p in &programs {
        let report = check(&load(p).unwrap(), false).unwrap();
        let missing = undefined(&report.dynamic_shapes);
        if !missing.is_empty() {
            wrong.push(format!(
                "{}: {missing:?} undefined in\n{}",
                p.display(),
                report.dynamic_shapes
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n\n"));
}
