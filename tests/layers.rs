//! The workspace's modules form layers: no module imports, directly or through others, a module
//! that imports it back — in any crate, and in the Python package. Read from the sources
//! (comment lines and test modules left out), so that a new `use` or `import` that closes a
//! circle fails here, naming the circle.
//!
//! An edge is every path a module names: `crate::a::b` and `super::b` to the module they reach,
//! and a parent's use of its own child (`child::f`, `pub use child::T`): a `mod.rs` that
//! dispatches to its children while a child imports the dispatcher back is a circle like any
//! other (the children's shared types belong in a leaf child). The crate root (`lib.rs`,
//! `main.rs`) is such a parent, named `crate`: a path through a name it brings in
//! (`crate::Error`, re-exported from `error`; `dimguard_solver::Error`, the crate naming itself)
//! reaches the module the name comes from, and a name it defines itself reaches the root. In
//! Python, every `import` of the package's own modules counts, those inside functions too: a
//! deferred import hides a circle from the interpreter, not from the design.
//!
//! The solver crate is also read by wings (the layers of `lib.rs`'s module map): a module
//! imports only modules of its own wing or of wings before it.

mod common;

use common::root;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

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

/// What a crate root's `use` lines (its re-exports, `pub use error::{Error, ParseError}`, and
/// its private imports) bring into `crate::`: each name (`Error`, or the alias after `as`) with
/// the path it stands for (`error::Error`). Paths into other crates (`dimguard_graph as graph`)
/// are left out: a module that names them names no module of this crate.
fn root_names(root_code: &str, known: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for stmt in root_code.split(';') {
        // The statement's `use` tree, after its visibility (`pub`, `pub(crate)`).
        let Some(at) = stmt.find("use ") else {
            continue;
        };
        let head = stmt[..at].trim();
        if !(head.is_empty() || head.starts_with("pub") || head.ends_with('}')) {
            continue;
        }
        let (items, _) = use_tree(stmt[at + 4..].trim_start());
        for (path, name) in items {
            let path = path
                .strip_prefix("crate::")
                .or_else(|| path.strip_prefix("self::"))
                .unwrap_or(&path)
                .to_string();
            let first = path.split("::").next().unwrap_or("");
            if known.contains_key(first) {
                out.insert(name, path);
            }
        }
    }
    for item in root_items(root_code) {
        out.entry(item).or_insert_with(|| ROOT.to_string());
    }
    out
}

/// The name the crate root goes by in the graph: the root (`lib.rs`) is a module like any
/// other, whose `use` lines are its edges and whose own items (`prove`'s `check_set`) are what
/// `crate::check_set` reaches.
const ROOT: &str = "crate";

/// The items the crate root defines itself (`fn check_set`, `pub enum Verdict`), modules
/// left out.
fn root_items(root_code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    // Items at the top level: lines that start at the first column.
    for line in root_code.lines() {
        let mut l = line;
        for vis in ["pub(crate) ", "pub(super) ", "pub "] {
            l = l.strip_prefix(vis).unwrap_or(l);
        }
        for kind in [
            "fn ", "struct ", "enum ", "const ", "static ", "type ", "trait ", "union ",
        ] {
            if let Some(rest) = l.strip_prefix(kind) {
                let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// The longest known module that starts `parts`.
fn longest_module(parts: &[&str], known: &BTreeMap<String, String>) -> Option<String> {
    (1..=parts.len())
        .rev()
        .map(|n| parts[..n].join("::"))
        .find(|m| known.contains_key(m))
}

/// The module a path from the crate root names: the longest known module prefix; else, when
/// its first name is one the crate root brings in (`crate::Error`, which `lib.rs` re-exports
/// from `error`), the module that name comes from; else (a module the crate root re-exports,
/// `crate::types` for `core::types`) the one module of that name.
fn target(
    path: &str,
    known: &BTreeMap<String, String>,
    reexports: &BTreeMap<String, String>,
) -> Option<String> {
    let parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
    let first = *parts.first()?;
    longest_module(&parts, known)
        .or_else(|| {
            let full = reexports.get(first)?;
            let mut through: Vec<&str> = full.split("::").collect();
            through.extend(&parts[1..]);
            longest_module(&through, known)
        })
        .or_else(|| {
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

/// A `use` tree read from the start of `s`, expanded into its paths, each with the name it
/// brings in: `a::{b, c::{d as e, self}}` -> (`a::b`, `b`), (`a::c::d`, `e`), (`a::c`, `c`).
/// Also reads a plain path in code (`joint::Group::new(`: `joint::Group::new`). Returns the
/// paths and the length of `s` read.
fn use_tree(s: &str) -> (Vec<(String, String)>, usize) {
    let prefix_len = s
        .char_indices()
        .find(|(_, c)| !(is_ident(*c) || *c == ':'))
        .map_or(s.len(), |(i, _)| i);
    let prefix = &s[..prefix_len];
    let rest = &s[prefix_len..];
    if rest.starts_with('{') && (prefix.is_empty() || prefix.ends_with("::")) {
        let mut out = Vec::new();
        let mut i = prefix_len + 1;
        loop {
            i += s[i..].len() - s[i..].trim_start().len();
            if i >= s.len() || s[i..].starts_with('}') {
                break;
            }
            let (items, used) = use_tree(&s[i..]);
            for (p, name) in items {
                let full = if p == "self" {
                    prefix.trim_end_matches(':').to_string()
                } else {
                    format!("{prefix}{p}")
                };
                out.push((full, name));
            }
            i += used.max(1);
            i += s[i..].len() - s[i..].trim_start().len();
            if s[i..].starts_with(',') {
                i += 1;
            }
        }
        return (out, (i + 1).min(s.len()));
    }
    let path = prefix.trim_end_matches(':').to_string();
    let mut used = prefix_len;
    let mut name = path.rsplit("::").next().unwrap_or("").to_string();
    // `path as alias`.
    let after = rest.trim_start();
    if let Some(alias) = after.strip_prefix("as ") {
        let alias = alias.trim_start();
        let a: String = alias.chars().take_while(|c| is_ident(*c)).collect();
        used = s.len() - alias.len() + a.len();
        name = a;
    }
    if path.is_empty() {
        return (vec![], used);
    }
    (vec![(path, name)], used)
}

/// Paths after `key` in `code` (`crate::joint::Group` -> `joint::Group`), and inside
/// `use crate::{a, b::{c, d}}` trees. `key` must start a path (no identifier or `::` before it).
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
        out.extend(use_tree(&code[at..]).0.into_iter().map(|(p, _)| p));
    }
    out
}

/// The import graph of one crate's modules, parent-to-child uses included. `reexports` are
/// the crate root's names (`root_names`); `crate_path` is how the crate names itself from
/// inside (`dimguard_solver::`), read as `crate::`.
fn rust_graph(
    known: &BTreeMap<String, String>,
    reexports: &BTreeMap<String, String>,
    crate_path: &str,
) -> Graph {
    let mut out = Graph::new();
    for (m, code) in known {
        let parent = m.rsplit_once("::").map_or("", |(p, _)| p);
        let mut to = BTreeSet::new();
        for key in ["crate::", crate_path] {
            for p in paths_after(code, key) {
                to.extend(target(&p, known, reexports));
            }
        }
        for p in paths_after(code, "super::") {
            let full = if parent.is_empty() {
                p
            } else {
                format!("{parent}::{p}")
            };
            to.extend(target(&full, known, reexports));
        }
        // The module's own children that its code uses (`child::f`, `self::child`); the root's
        // children are the top-level modules.
        let depth = m.matches("::").count() + 1;
        let is_child = |k: &String| {
            if m == ROOT {
                k != ROOT && !k.contains("::")
            } else {
                k.starts_with(&format!("{m}::")) && k.matches("::").count() == depth
            }
        };
        for child in known.keys().filter(|k| is_child(k)) {
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

/// The import graph of the crate whose sources are in `src` and which names itself
/// `crate_path` (`dimguard_solver::`): its modules, and the names its root brings in.
fn crate_graph(src: &Path, crate_path: &str) -> Graph {
    let mut known = BTreeMap::new();
    modules(src, "", &mut known);
    let root_file = ["lib.rs", "main.rs"]
        .iter()
        .map(|f| src.join(f))
        .find(|p| p.is_file());
    let root_code = root_file.map_or(String::new(), |p| {
        code_of(&std::fs::read_to_string(p).expect("readable"))
    });
    let reexports = root_names(&root_code, &known);
    known.insert(ROOT.to_string(), root_code);
    rust_graph(&known, &reexports, crate_path)
}

/// Every crate of the workspace: its name (`solver`) and its `src` directory.
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

/// How the crate `name` (`solver`, `dimguard`) names itself: `dimguard_solver::`.
fn crate_path(name: &str) -> String {
    if name == "dimguard" {
        "dimguard::".to_string()
    } else {
        format!("dimguard_{name}::")
    }
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
    for m in ["analyze", "joint", "joint::solve", "types"] {
        assert!(known.contains_key(m), "module {m} not found");
    }
    let g = crate_graph(&root().join("crates/solver/src"), "dimguard_solver::");
    assert_eq!(g.len(), known.len() + 1);
    assert!(g["analyze"].contains("joint"), "{:?}", g["analyze"]);
    // A parent's use of its child is an edge: forms::read dispatches to its readers.
    let r = crate_graph(&root().join("crates/readers/src"), "dimguard_readers::");
    assert!(r["forms"].contains("forms::logs"), "{:?}", r["forms"]);
    assert!(
        r["forms::logs"].contains("forms::clean"),
        "{:?}",
        r["forms::logs"]
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

/// Writes a crate's sources (file under `src`, text) into a fresh directory and returns `src`.
fn synthetic_crate(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let src = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("layers")
        .join(name)
        .join("src");
    let _ = std::fs::remove_dir_all(&src);
    for (file, text) in files {
        let p = src.join(file);
        std::fs::create_dir_all(p.parent().unwrap()).expect("tmp is writable");
        std::fs::write(p, text).expect("tmp is writable");
    }
    src
}

#[test]
fn a_circle_through_the_crate_roots_names_is_found() {
    // budget names the error through the root's re-export; error names budget's type the
    // same way: a circle no path to a module shows.
    let lib = "mod budget;\nmod error;\npub mod joint;\n\
               pub use budget::{check, Exhausted as Spent};\n\
               pub use error::{Error, ParseError};\n";
    let circle = [
        ("lib.rs", lib),
        (
            "budget.rs",
            "pub fn check() -> Result<(), crate::Error> { Ok(()) }\n",
        ),
        (
            "error.rs",
            "use crate::{\n    joint::{self, Group},\n    Spent,\n};\npub enum Error { Exhausted(Spent) }\n",
        ),
        ("joint/mod.rs", "pub struct Group;\n"),
    ];
    let src = synthetic_crate("circle", &circle);
    let g = crate_graph(&src, "dimguard_toy::");
    assert_eq!(g["budget"], ["error".to_string()].into());
    assert_eq!(
        g["error"],
        ["budget".to_string(), "joint".to_string()].into()
    );
    assert_eq!(
        shown(&g, &circles(&g)),
        vec!["budget -> error; error -> budget"]
    );
    // Read by paths to modules alone (no root names), the circle is not there.
    let mut known = BTreeMap::new();
    modules(&src, "", &mut known);
    assert!(circles(&rust_graph(&known, &BTreeMap::new(), "dimguard_toy::")).is_empty());
    // The fix: budget's check returns budget's own type; the error names it (through the
    // crate's own name, read as `crate::`): one way, no circle.
    let mut fixed = circle;
    fixed[1].1 = "pub struct Exhausted;\npub fn check() -> Result<(), Exhausted> { Ok(()) }\n";
    fixed[2].1 = "pub enum Error { Exhausted(dimguard_toy::Spent) }\npub struct ParseError;\n";
    let src = synthetic_crate("fixed", &fixed);
    let g = crate_graph(&src, "dimguard_toy::");
    assert!(g["budget"].is_empty(), "{:?}", g["budget"]);
    assert_eq!(g["error"], ["budget".to_string()].into());
    assert!(circles(&g).is_empty(), "{:?}", shown(&g, &circles(&g)));
    // A root that re-exports a child which uses what the root defines: a circle through the
    // root.
    let root = [
        (
            "lib.rs",
            "pub mod certify;\npub use certify::certify;\npub fn check_set() {}\n",
        ),
        ("certify.rs", "pub fn certify() { crate::check_set() }\n"),
    ];
    let g = crate_graph(&synthetic_crate("root", &root), "dimguard_toy::");
    assert_eq!(
        shown(&g, &circles(&g)),
        vec!["certify -> crate; crate -> certify"]
    );
}

#[test]
fn no_module_imports_a_module_that_imports_it_back() {
    let mut wrong = Vec::new();
    for (name, src) in crates() {
        let g = crate_graph(&src, &crate_path(&name));
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
    ("analyze", &["analyze"]),
];

fn wing(module: &str) -> Option<usize> {
    wing_in(WINGS, module)
}

fn wing_in(wings: &[(&str, &[&str])], module: &str) -> Option<usize> {
    let top = module.split("::").next()?;
    wings.iter().position(|(_, ms)| ms.contains(&top))
}

/// The facade's wings (`src/lib.rs`), lowest first: the commands, then their index (`api`),
/// then what draws or calls them (the page, the command line).
const FACADE_WINGS: &[(&str, &[&str])] = &[
    ("commands", &["commands"]),
    ("index", &["api"]),
    ("page", &["html"]),
    ("command line", &["cli", "main"]),
];

#[test]
fn every_facade_module_has_a_wing_and_imports_no_later_wing() {
    let g = crate_graph(&root().join("src"), "dimguard::");
    let mut wrong = Vec::new();
    for (m, to) in g.iter().filter(|(m, _)| *m != ROOT) {
        let Some(w) = wing_in(FACADE_WINGS, m) else {
            wrong.push(format!(
                "{m} is in no wing (add it to FACADE_WINGS and lib.rs)"
            ));
            continue;
        };
        for t in to {
            if wing_in(FACADE_WINGS, t).is_some_and(|tw| tw > w) {
                wrong.push(format!("{m} imports {t}, a later wing"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_solver_module_has_a_wing_and_imports_no_later_wing() {
    let g = crate_graph(&root().join("crates/solver/src"), "dimguard_solver::");
    let mut wrong = Vec::new();
    for (m, to) in g.iter().filter(|(m, _)| *m != ROOT) {
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
