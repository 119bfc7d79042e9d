//! The real texts of the shared corpus, as published: `../shared/corpus/real_texts.jsonl` (90,
//! parts a and b) and `real_texts_c.jsonl` (40, part c) beside a worktree, or `shared/corpus/`
//! inside a checkout that carries it: one JSON record per text (`id`, `source`, `kind`,
//! `message`, ...). A checkout without them fails the tests that read them, saying where the
//! corpus should be: they are never skipped.

#![allow(dead_code)]

use serde_json::Value;
use std::path::Path;

fn read(file: &str, n: usize) -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = [
        format!("../shared/corpus/{file}"),
        format!("shared/corpus/{file}"),
    ]
    .iter()
    .map(|p| root.join(p))
    .find(|p| p.is_file())
    .unwrap_or_else(|| root.join(format!("../shared/corpus/{file}")));
    let text = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (the shared corpus is needed)", p.display()));
    let v: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect();
    assert_eq!(v.len(), n, "{file} holds {n} texts");
    v
}

/// Every record of parts a and b, in the file's order.
pub fn records() -> Vec<Value> {
    read("real_texts.jsonl", 90)
}

/// Every record of part c, in the file's order.
pub fn records_c() -> Vec<Value> {
    read("real_texts_c.jsonl", 40)
}

/// All 130 records: parts a and b, then c.
pub fn all_records() -> Vec<Value> {
    let mut v = records();
    v.extend(records_c());
    v
}
