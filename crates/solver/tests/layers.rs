//! The solver's modules form layers: no module imports, directly or through others, a module
//! that imports it back. Read from the sources (comment lines and test modules left out), so
//! that a new `use` that closes a circle fails here, naming the circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Every module of `src` (`analyze::size`, `forms`, ...) with its source, comments and test
/// modules removed.
fn modules(dir: &Path, prefix: &str, out: &mut BTreeMap<String, String>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("src is readable")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        let stem = p.file_stem().unwrap().to_string_lossy().to_string();
        if p.is_dir() {
            let name = format!("{prefix}{stem}");
            modules(&p, &format!("{name}::"), out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            let name = match stem.as_str() {
                "lib" | "tests" => continue,
                "mod" => prefix.trim_end_matches("::").to_string(),
                _ => format!("{prefix}{stem}"),
            };
            let text = std::fs::read_to_string(&p).expect("readable");
            let code = text
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or("")
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            out.insert(name, code);
        }
    }
}

/// The module a path after `crate::` names: the longest known module prefix, else (a module
/// the crate root re-exports, `crate::types` for `core::types`) the one module of that name.
fn target(path: &str, known: &BTreeMap<String, String>) -> Option<String> {
    let parts: Vec<&str> = path.split("::").collect();
    let direct = (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| known.contains_key(m));
    direct.or_else(|| {
        let first = parts.first()?;
        let mut named = known
            .keys()
            .filter(|k| k.rsplit("::").next() == Some(first));
        let one = named.next()?;
        named.next().is_none().then(|| one.clone())
    })
}

/// Identifier-ish paths after `key` in `code` (`crate::joint::Group` -> `joint::Group`), and
/// inside `use crate::{a, b::c}` groups.
fn paths_after(code: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(key) {
        rest = &rest[i + key.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let item: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                    .collect();
                if !item.is_empty() {
                    out.push(item);
                }
            }
            continue;
        }
        let p: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        out.push(p.trim_end_matches(':').to_string());
    }
    out
}

fn edges(known: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (m, code) in known {
        let parent = m.rsplit_once("::").map_or("", |(p, _)| p);
        let mut to = BTreeSet::new();
        for p in paths_after(code, "crate::") {
            to.extend(target(&p, known));
        }
        for p in paths_after(code, "super::") {
            let full = if parent.is_empty() {
                p
            } else {
                format!("{parent}::{p}")
            };
            to.extend(target(&full, known));
        }
        // A module's own children and itself are not edges of the layering.
        to.retain(|t| t != m && !t.starts_with(&format!("{m}::")));
        out.insert(m.clone(), to);
    }
    out
}

/// The solver's modules and the edges between them.
fn graph() -> (BTreeMap<String, String>, BTreeMap<String, BTreeSet<String>>) {
    let mut known = BTreeMap::new();
    modules(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        "",
        &mut known,
    );
    let g = edges(&known);
    (known, g)
}

/// Strongly connected components of more than one module (Tarjan).
fn circles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let i = t.index.len();
        t.index.insert(v, i);
        t.low.insert(v, i);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                c.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                c.sort();
                t.out.push(c);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: vec![],
        on: BTreeSet::new(),
        out: vec![],
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn the_reader_sees_every_module_and_its_imports() {
    let (known, g) = graph();
    for m in ["analyze", "analyze::size", "joint", "forms::logs", "types"] {
        assert!(known.contains_key(m), "module {m} not found");
    }
    assert!(g["analyze"].contains("joint"), "{:?}", g["analyze"]);
    assert!(
        g["analyze::size"].contains("analyze"),
        "{:?}",
        g["analyze::size"]
    );
    // A circle built by hand is found.
    let mut toy: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    toy.insert("a".into(), ["b".to_string()].into());
    toy.insert("b".into(), ["c".to_string()].into());
    toy.insert("c".into(), ["a".to_string()].into());
    toy.insert("d".into(), ["a".to_string()].into());
    assert_eq!(circles(&toy), vec![vec!["a", "b", "c"]]);
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let (_, g) = graph();
    let found = circles(&g);
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let inside: Vec<String> = c
                .iter()
                .map(|m| {
                    let to: Vec<&str> = g[m]
                        .iter()
                        .filter(|t| c.contains(t))
                        .map(String::as_str)
                        .collect();
                    format!("{m} -> {}", to.join(", "))
                })
                .collect();
            inside.join("; ")
        })
        .collect();
    assert!(found.is_empty(), "import circles:\n{}", shown.join("\n"));
}

/// The wings of `lib.rs`'s module map, lowest first: a module imports only modules of its own
/// wing or of wings before it.
const WINGS: &[(&str, &[&str])] = &[
    (
        "core",
        &[
            "num", "types", "expr", "algebra", "compiled", "set", "bounds", "budget", "error",
            "factor",
        ],
    ),
    ("guards", &["parse", "syntax"]),
    ("contract", &["report", "python", "provenance"]),
    ("solve", &["engine", "linked", "joint", "suggest", "cover"]),
    ("read", &["message", "forms", "trace"]),
    ("spec", &["spec", "merge"]),
    ("analyze", &["analyze"]),
    ("front end", &["diagnose"]),
];

fn wing(module: &str) -> Option<usize> {
    let top = module.split("::").next()?;
    WINGS.iter().position(|(_, ms)| ms.contains(&top))
}

#[test]
fn every_module_has_a_wing_and_imports_no_later_wing() {
    let (_, g) = graph();
    let mut wrong = Vec::new();
    for (m, to) in &g {
        let Some(w) = wing(m) else {
            wrong.push(format!(
                "{m} is in no wing (add it to WINGS and lib.rs's map)"
            ));
            continue;
        };
        for t in to {
            if wing(t).is_some_and(|tw| tw > w) {
                wrong.push(format!(
                    "{m} ({}) imports {t} ({})",
                    WINGS[w].0,
                    WINGS[wing(t).unwrap()].0
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
