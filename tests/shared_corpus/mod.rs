//! The 90 real texts of the shared corpus, as published (`../shared/corpus/real_texts.jsonl`
//! beside a worktree, or `shared/corpus/` inside a checkout that carries it): one JSON record
//! per text (`id`, `source`, `kind`, `message`, ...). A checkout without it fails the tests
//! that read it, saying where the corpus should be: they are never skipped.

use serde_json::Value;
use std::path::Path;

/// Every record, in the file's order.
pub fn records() -> Vec<Value> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let p = [
        "../shared/corpus/real_texts.jsonl",
        "shared/corpus/real_texts.jsonl",
    ]
    .iter()
    .map(|p| root.join(p))
    .find(|p| p.is_file())
    .unwrap_or_else(|| root.join("../shared/corpus/real_texts.jsonl"));
    let text = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (the shared corpus is needed)", p.display()));
    let v: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON record"))
        .collect();
    assert_eq!(v.len(), 90, "the corpus holds 90 texts");
    v
}
