//! The workspace's modules form layers: no module imports, directly or through others, a module
//! that imports it back — in any crate, and in the Python package. Read from the sources
//! (comment lines and test modules left out), so that a new `use` or `import` that closes a
//! circle fails here, naming the circle.
//!
//! An edge is every path a module names: `crate::a::b` and `super::b` to the module they reach,
//! and a parent's use of its own child (`child::f`, `pub use child::T`): a `mod.rs` that
//! dispatches to its children while a child imports the dispatcher back is a circle like any
//! other (the children's shared types belong in a leaf child). In Python, every `import` of the
//! package's own modules counts, those inside functions too: a deferred import hides a circle
//! from the interpreter, not from the design.
//!
//! The solver crate is also read by wings (the layers of `lib.rs`'s module map): a module
//! imports only modules of its own wing or of wings before it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Code with comment lines and the trailing test module removed.
fn code_of(text: &str) -> String {
    text.split("#[cfg(test)]\nmod tests")
        .next()
        .unwrap_or("")
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every module of a crate's `src` (`analyze::size`, `forms`, ...) with its code.
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
                "lib" | "main" | "tests" => continue,
                "mod" => prefix.trim_end_matches("::").to_string(),
                _ => format!("{prefix}{stem}"),
            };
            let text = std::fs::read_to_string(&p).expect("readable");
            out.insert(name, code_of(&text));
        }
    }
}

/// The module a path names: the longest known module prefix, else (a module the crate root
/// re-exports, `crate::types` for `core::types`) the one module of that name.
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Paths after `key` in `code` (`crate::joint::Group` -> `joint::Group`), and inside
/// `use crate::{a, b::c}` groups. `key` must start a path (no identifier or `::` before it).
fn paths_after(code: &str, key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = code[at..].find(key) {
        let start = at + i;
        at = start + key.len();
        let before = code[..start].chars().next_back();
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue;
        }
        let rest = &code[at..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let item: String = item
                    .trim()
                    .chars()
                    .take_while(|c| is_ident(*c) || *c == ':')
                    .collect();
                if !item.is_empty() {
                    out.push(item);
                }
            }
            continue;
        }
        let p: String = rest
            .chars()
            .take_while(|c| is_ident(*c) || *c == ':')
            .collect();
        out.push(p.trim_end_matches(':').to_string());
    }
    out
}

/// The import graph of one crate's modules, parent-to-child uses included.
fn rust_graph(known: &BTreeMap<String, String>) -> Graph {
    let mut out = Graph::new();
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
        // The module's own children that its code uses (`child::f`, `self::child`).
        let depth = m.matches("::").count() + 1;
        for child in known.keys().filter(|k| {
            !m.is_empty() && k.starts_with(&format!("{m}::")) && k.matches("::").count() == depth
        }) {
            let leaf = child.rsplit("::").next().unwrap();
            if !paths_after(code, &format!("{leaf}::")).is_empty()
                || code.contains(&format!("self::{leaf}"))
            {
                to.insert(child.clone());
            }
        }
        to.remove(m);
        out.insert(m.clone(), to);
    }
    out
}

/// Every crate of the workspace: its name and its `src` directory.
fn crates() -> Vec<(String, PathBuf)> {
    let mut out = vec![("dimguard".to_string(), root().join("src"))];
    let mut dirs: Vec<_> = std::fs::read_dir(root().join("crates"))
        .expect("crates/ is readable")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("src").is_dir())
        .collect();
    dirs.sort();
    for d in dirs {
        out.push((
            d.file_name().unwrap().to_string_lossy().to_string(),
            d.join("src"),
        ));
    }
    out
}

/// The Python package's modules (`export`, `_results`, `__init__`) and their imports of each
/// other, deferred ones included.
fn python_graph() -> Graph {
    let dir = root().join("python/dimguard");
    let mut names = BTreeSet::new();
    let mut texts = BTreeMap::new();
    for e in std::fs::read_dir(&dir).expect("python/dimguard is readable") {
        let p = e.expect("entry").path();
        // A compiled module (`_native.abi3.so`, its `_native.pyi`) is a leaf of the package.
        let file = p.file_name().unwrap().to_string_lossy().to_string();
        if file.ends_with(".so") || file.ends_with(".pyi") || file.ends_with(".pyd") {
            names.insert(file.split('.').next().unwrap().to_string());
        }
        if p.extension().is_some_and(|x| x == "py") {
            let stem = p.file_stem().unwrap().to_string_lossy().to_string();
            texts.insert(stem.clone(), std::fs::read_to_string(&p).expect("readable"));
            names.insert(stem);
        }
    }
    let mut out = Graph::new();
    for (m, text) in &texts {
        let mut to = BTreeSet::new();
        for line in text.lines().map(str::trim) {
            if line.starts_with('#') {
                continue;
            }
            // `from .x import a`, `from dimguard.x import a`, `from . import x, y`,
            // `import dimguard.x`.
            let (module, items) = if let Some(rest) = line.strip_prefix("from ") {
                let Some((src, items)) = rest.split_once(" import ") else {
                    continue;
                };
                (src.trim(), items)
            } else if let Some(rest) = line.strip_prefix("import ") {
                (rest.split_whitespace().next().unwrap_or(""), "")
            } else {
                continue;
            };
            let local = module
                .strip_prefix("dimguard")
                .or_else(|| module.strip_prefix('.').map(|r| r.trim_start_matches('.')))
                .map(|r| r.trim_start_matches('.'));
            let Some(local) = local else { continue };
            if !local.is_empty() {
                let first = local.split('.').next().unwrap();
                if names.contains(first) {
                    to.insert(first.to_string());
                }
                continue;
            }
            // `from . import x`: the module x, or a name of the package's `__init__`.
            for item in items.trim_matches(|c| c == '(' || c == ')').split(',') {
                let item = item.split_whitespace().next().unwrap_or("");
                if item.is_empty() {
                    continue;
                }
                if names.contains(item) {
                    to.insert(item.to_string());
                } else {
                    to.insert("__init__".to_string());
                }
            }
        }
        to.remove(m);
        out.insert(m.clone(), to);
    }
    out
}

/// Strongly connected components of more than one module (Tarjan).
fn circles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
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

/// Each circle as its edges inside it: `a -> b; b -> a`.
fn shown(g: &Graph, found: &[Vec<String>]) -> Vec<String> {
    found
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
        .collect()
}

#[test]
fn the_readers_see_every_module_and_its_imports() {
    let mut known = BTreeMap::new();
    modules(&root().join("crates/solver/src"), "", &mut known);
    for m in ["analyze", "joint", "forms::logs", "forms::trace", "types"] {
        assert!(known.contains_key(m), "module {m} not found");
    }
    let g = rust_graph(&known);
    assert!(g["analyze"].contains("joint"), "{:?}", g["analyze"]);
    // A parent's use of its child is an edge: forms::read dispatches to its readers.
    assert!(g["forms"].contains("forms::logs"), "{:?}", g["forms"]);
    assert!(
        g["forms::logs"].contains("forms::clean"),
        "{:?}",
        g["forms::logs"]
    );
    // Python: deferred imports count.
    let py = python_graph();
    assert!(py["__init__"].contains("export"), "{:?}", py["__init__"]);
    assert!(py["export"].contains("_results"), "{:?}", py["export"]);
    // A circle built by hand is found.
    let mut toy = Graph::new();
    toy.insert("a".into(), ["b".to_string()].into());
    toy.insert("b".into(), ["c".to_string()].into());
    toy.insert("c".into(), ["a".to_string()].into());
    toy.insert("d".into(), ["a".to_string()].into());
    assert_eq!(circles(&toy), vec![vec!["a", "b", "c"]]);
    // A path inside another (`my_crate::x`) is not `crate::x`.
    assert!(paths_after("use dimguard_crate::x;", "crate::").is_empty());
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut wrong = Vec::new();
    for (name, src) in crates() {
        let mut known = BTreeMap::new();
        modules(&src, "", &mut known);
        let g = rust_graph(&known);
        for c in shown(&g, &circles(&g)) {
            wrong.push(format!("crate {name}: {c}"));
        }
    }
    let py = python_graph();
    for c in shown(&py, &circles(&py)) {
        wrong.push(format!("python/dimguard: {c}"));
    }
    assert!(wrong.is_empty(), "import circles:\n{}", wrong.join("\n"));
}

/// The solver's wings (`lib.rs`'s module map), lowest first: a module imports only modules of
/// its own wing or of wings before it.
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
    ("read", &["message", "forms"]),
    ("spec", &["spec"]),
    ("analyze", &["analyze"]),
    ("front end", &["diagnose"]),
];

fn wing(module: &str) -> Option<usize> {
    let top = module.split("::").next()?;
    WINGS.iter().position(|(_, ms)| ms.contains(&top))
}

#[test]
fn every_solver_module_has_a_wing_and_imports_no_later_wing() {
    let mut known = BTreeMap::new();
    modules(&root().join("crates/solver/src"), "", &mut known);
    let g = rust_graph(&known);
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
