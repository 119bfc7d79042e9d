//! torch.compile's recompile texts read as what they are: one failed guard per cached graph, and
//! a call runs if any graph of its function accepts it, so each size's set is the union of the
//! entries' sets.
//!
//! * `tests/data/recompiles/`: real recompile logs of torch 2.15 on CPU
//!   (`tools/make_recompile_fixtures.py`: static sizes, automatic dynamic, `mark_dynamic` with a
//!   range, branches on a size, divisibility under `dynamic=True`, two functions, a float
//!   argument, 0/1 specialization, `recompile_limit`, `fullgraph`), each with its truth taken from
//!   torch: the sizes at which a call with `error_on_recompile=True` runs, and each cache entry's
//!   guards probed alone. The set read must hold every size torch accepts, and no other size
//!   where the text determines it;
//! * a generator of recompile texts (1 to 8 entries per function, one or two functions, static
//!   and dynamic size guards, non-size guards, with and without log prefixes), checked against
//!   the union of the entries' guards evaluated value by value (not the reader's path).

mod common;

use common::{root, run};
use dimguard::commands::diagnose::{diagnose, Options};
use dimguard::readers::{forms, Message};
use dimguard::solver::report::Report;
use dimguard::solver::DimSet;
use proptest::prelude::*;
use serde_json::Value;
use std::path::PathBuf;

/// The real logs: `tests/data/recompiles/` and the logs of models new to them in
/// `tests/data/new_texts/recompiles/` (`tools/make_new_texts.py`, made the same way).
fn dirs() -> [PathBuf; 2] {
    let root = root();
    [
        root.join("tests/data/recompiles"),
        root.join("tests/data/new_texts/recompiles"),
    ]
}

/// Every real log, as (its folder, its name).
fn logs() -> Vec<(PathBuf, String)> {
    let mut out: Vec<(PathBuf, String)> = dirs()
        .into_iter()
        .flat_map(|d| {
            std::fs::read_dir(&d)
                .unwrap()
                .filter_map(|e| {
                    let n = e.ok()?.file_name().into_string().ok()?;
                    n.strip_suffix(".json").map(str::to_string)
                })
                .map(|n| (d.clone(), n))
                .collect::<Vec<_>>()
        })
        .collect();
    out.sort();
    out
}

fn read(text: &str) -> Message {
    let mut m = forms::read(text).unwrap_or_else(|e| panic!("refused: {e}\n{text}"));
    forms::apply_ranges(&mut m, &[]).unwrap();
    m
}

/// The accepted set read for the size whose source is `source` (`x.size()[1]`, or
/// `f.x.size()[1]` where the text holds two functions).
fn accepted(r: &Report, source: &str) -> Option<DimSet> {
    let d = r
        .dims
        .iter()
        .find(|d| d.source.as_deref() == Some(source))?;
    DimSet::from_segments(d.answer.accepted.as_ref()?.segments.clone()).ok()
}

fn ints(v: &Value) -> Vec<i128> {
    v.as_array()
        .unwrap()
        .iter()
        .filter_map(|x| x.as_i64().map(i128::from))
        .collect()
}

#[test]
fn real_recompile_logs_give_the_union_torch_accepts() {
    let names = logs();
    assert!(names.len() >= 15, "{names:?}");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (dir, name) in &names {
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap(),
        )
        .unwrap();
        let text = std::fs::read_to_string(dir.join(format!("{name}.log.txt"))).unwrap();
        let m = read(&text);
        let rt = m.runtime.as_ref().expect("a recompile");
        assert!(rt.recompile, "{name}");
        let r = diagnose(&m, &Options::default());
        // torch.compile advice, never a torch.export paste block.
        let block = r.dynamic_shapes.as_str();
        if block.contains("dynamic_shapes") || block.contains("torch.export") {
            failures.push(format!(
                "{name}: an export block for a torch.compile text:\n{block}"
            ));
        }
        for d in &r.dims {
            failures.extend(export_words(&d.name, d));
        }
        let sizes = truth["sizes"].as_array().unwrap();
        let functions: std::collections::BTreeSet<&str> = sizes
            .iter()
            .map(|s| s["function"].as_str().unwrap())
            .collect();
        for s in sizes {
            let source = s["source"].as_str().unwrap();
            let f = s["function"].as_str().unwrap();
            if !source.contains(".size()[") {
                // A non-size argument: named as such, never a size.
                let arg = source;
                if r.dims.iter().any(|d| {
                    d.source
                        .as_deref()
                        .is_some_and(|x| x.contains(arg) && !x.contains(".size()"))
                }) {
                    failures.push(format!("{name}: the argument {arg} read as a size"));
                }
                if !m.notes.iter().any(|n| n.contains("not a tensor size")) {
                    failures.push(format!(
                        "{name}: the non-size guard on {arg} is not named as such: {:?}",
                        m.notes
                    ));
                }
                continue;
            }
            let src = if functions.len() > 1 {
                format!("{f}.{source}")
            } else {
                source.to_string()
            };
            // A `+dynamic` log names the size as torch's symbol table does (`L['x'].size()[0]`).
            let in_l = src
                .split_once('.')
                .map(|(x, rest)| format!("L['{x}'].{rest}"))
                .unwrap_or_default();
            let Some(set) = accepted(&r, &src).or_else(|| accepted(&r, &in_l)) else {
                // A size the text never names (a float argument's recompiles only) is left.
                if text.contains(&format!("'{}'", &source[..source.find('.').unwrap()]))
                    || text.contains(&format!("{}.size()", &source[..source.find('.').unwrap()]))
                {
                    failures.push(format!(
                        "{name}: no set for {src}: {:?}",
                        r.dims
                            .iter()
                            .map(|d| (&d.source, &d.undecided))
                            .collect::<Vec<_>>()
                    ));
                }
                continue;
            };
            let probes = ints(&s["probes"]);
            let ok = ints(&s["accepted"]);
            // Every size torch accepts is read as accepted.
            let missed: Vec<i128> = ok.iter().copied().filter(|&v| !set.contains(v)).collect();
            if !missed.is_empty() {
                failures.push(format!(
                    "{name}: {src}: torch accepts {missed:?}, read as rejected"
                ));
            }
            // No other size, 0 and 1 included (a dynamic entry holds its size to 2.. without
            // saying so, an entry compiled for 1 accepts 1).
            let extra: Vec<i128> = probes
                .iter()
                .copied()
                .filter(|&v| set.contains(v) && !ok.contains(&v))
                .collect();
            if !extra.is_empty() {
                failures.push(format!(
                    "{name}: {src}: read as accepted, torch rejects {extra:?}"
                ));
            }
            // The size that ran is shown against the entries.
            if let Some(e) = r.runtime.as_ref() {
                if !e.explanation.iter().any(|l| l.contains("entries accept")) {
                    failures.push(format!("{name}: no entry line: {:?}", e.explanation));
                }
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 12, "{checked} sizes checked");
}

/// Export's words in a recompile size's advice or suggestions (a torch.compile text gets
/// `mark_dynamic`, `dynamic=True` and `recompile_limit`, never a `Dim`).
fn export_words(name: &str, d: &dimguard::solver::report::DimReport) -> Vec<String> {
    const EXPORT: [&str; 5] = [
        "Dim(",
        "Dim.AUTO",
        "Dim.STATIC",
        "torch.export",
        "dynamic_shapes",
    ];
    let mut out = Vec::new();
    for a in &d.advice {
        if EXPORT.iter().any(|w| a.contains(w)) || a.contains("export ") {
            out.push(format!(
                "{name}: export advice for a torch.compile text: {a}"
            ));
        }
    }
    for s in &d.answer.suggestions {
        let code = s.code.as_str();
        if EXPORT.iter().any(|w| code.contains(w))
            || !(code.contains("torch._dynamo.mark_dynamic(") || code.starts_with('#'))
        {
            out.push(format!(
                "{name}: a suggestion not in torch.compile's terms: {code}"
            ));
        }
    }
    out
}

/// The CLI's text and HTML for every real log: torch.compile's words only.
#[test]
fn real_recompile_logs_get_torch_compile_advice_in_text_and_html() {
    let html =
        std::env::temp_dir().join(format!("dimguard-recompiles-{}.html", std::process::id()));
    let mut failures = Vec::new();
    let mut n = 0;
    for (dir, name) in logs() {
        let p = dir.join(format!("{name}.log.txt"));
        let (_, text, _) = run(
            &[
                "diagnose",
                p.to_str().unwrap(),
                "--html",
                html.to_str().unwrap(),
            ],
            None,
        );
        let page = std::fs::read_to_string(&html).unwrap_or_default();
        for (what, s) in [("text", &text), ("html", &page)] {
            for w in [
                "Dim(",
                "Dim.AUTO",
                "Dim.STATIC",
                "dynamic_shapes =",
                "best Dim",
                "export call",
            ] {
                if s.contains(w) {
                    failures.push(format!("{}: {what} says `{w}`", p.display()));
                }
            }
        }
        // (A text whose entries failed on non-size guards only reads no size to mark.)
        if !text.contains("mark_dynamic") && !text.contains(" 0 dimensions ") {
            failures.push(format!("{}: no mark_dynamic advice:\n{text}", p.display()));
        }
        n += 1;
    }
    let _ = std::fs::remove_file(&html);
    assert!(n >= 15, "{n}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// One generated cache entry: a guard over the size `x.size()[0]` of function `f` (or none: a
/// non-size guard only).
#[derive(Debug, Clone)]
enum Entry {
    Static(i128),
    Range(i128, i128),
    Lower(i128),
    Mod(i128, i128),
    NonSize(String),
}

impl Entry {
    fn line(&self, tensor: &str, actual: i128) -> String {
        let s = format!("{tensor}.size()[0]");
        match self {
            Entry::Static(v) => {
                format!("tensor '{tensor}' size mismatch at index 0. expected {v}, actual {actual}")
            }
            Entry::Range(a, b) => format!("{a} <= {s} <= {b}  #   # m.py:3 in f"),
            Entry::Lower(a) => format!("{a} <= {s}"),
            Entry::Mod(m, r) => format!("({s} % {m}) == {r}  #   # m.py:4 in f"),
            Entry::NonSize(g) => format!("{g}                  #   # m.py:5 in f"),
        }
    }
    /// Whether the entry accepts `x`, as torch's cache entry does: a static entry its size, a
    /// dynamic one (a symbolic size, which torch never lets be 0 or 1) `2..` where its guard
    /// holds.
    fn holds(&self, x: i128) -> Option<bool> {
        Some(match self {
            Entry::Static(v) => x == *v,
            Entry::Range(a, b) => 2 <= x && *a <= x && x <= *b,
            Entry::Lower(a) => 2 <= x && *a <= x,
            Entry::Mod(m, r) => 2 <= x && x % m == *r,
            Entry::NonSize(_) => return None,
        })
    }
}

fn entry() -> impl Strategy<Value = Entry> {
    prop_oneof![
        4 => (1i128..300).prop_map(Entry::Static),
        2 => (0i128..100, 0i128..200).prop_map(|(a, w)| Entry::Range(a, a + w)),
        1 => (0i128..100).prop_map(Entry::Lower),
        1 => (2i128..9).prop_flat_map(|m| (Just(m), 0..m)).prop_map(|(m, r)| Entry::Mod(m, r)),
        1 => prop_oneof![
            Just("c == 0.5".to_string()),
            Just("L['end'] == 10".to_string()),
            Just("___check_obj_id(L['self'].mode, 140221)".to_string()),
        ].prop_map(Entry::NonSize),
    ]
}

fn prefix(style: usize, frame: &str) -> String {
    match style {
        0 => String::new(),
        1 => format!("V1128 18:55:35.807000 11920 torch/_dynamo/guards.py:6374] [{frame}] [__recompiles] "),
        2 => "[2023-11-06 14:54:54,691] torch._dynamo.guards.__recompiles: [DEBUG] ".to_string(),
        _ => format!("[rank2]:V0616 10:01:38.800000 595063 torch/_dynamo/guards.py:3006] [{frame}] [__recompiles] "),
    }
}

/// A recompile text for each function's entries, newest first as torch prints them.
fn text(funcs: &[(String, Vec<Entry>, i128)], style: usize, ids: bool) -> String {
    let mut out = String::new();
    for (k, (f, entries, actual)) in funcs.iter().enumerate() {
        let n = entries.len();
        let p = prefix(style, &format!("{k}/{n}"));
        out.push_str(&format!("{p}Recompiling function {f} in m.py:{}\n", 3 + k));
        out.push_str(&format!(
            "{p}    triggered by the following guard failure(s):\n"
        ));
        for (i, e) in entries.iter().enumerate().rev() {
            let id = if ids {
                format!("{k}/{i}: ")
            } else {
                String::new()
            };
            out.push_str(&format!("{p}    - {id}{}\n", e.line("x", *actual)));
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn generated_recompile_texts_read_as_the_union_of_their_entries(
        funcs in proptest::collection::vec(
            (proptest::collection::vec(entry(), 1..=8), 0i128..400),
            1..=2,
        ),
        style in 0usize..4,
        ids in any::<bool>(),
    ) {
        // Without ids, two functions are told apart by their `Recompiling function` lines only.
        let funcs: Vec<(String, Vec<Entry>, i128)> = funcs
            .into_iter()
            .enumerate()
            .map(|(k, (e, a))| (["f", "g"][k].to_string(), e, a))
            .collect();
        let t = text(&funcs, style, ids);
        let m = read(&t);
        let r = diagnose(&m, &Options::default());
        for (f, entries, _) in &funcs {
            let src = if funcs.len() > 1 { format!("{f}.x.size()[0]") } else { "x.size()[0]".to_string() };
            let bounded = entries.iter().all(|e| !matches!(e, Entry::NonSize(_)));
            let set = accepted(&r, &src);
            if !bounded {
                // An entry that failed on a non-size guard bounds no size: nothing is rejected.
                if let Some(s) = &set {
                    prop_assert!((0..500).all(|v| s.contains(v)), "{t}");
                }
                continue;
            }
            let set = set.ok_or_else(|| TestCaseError::fail(format!("no set for {src}:\n{t}")))?;
            for v in 0..500 {
                let want = entries.iter().any(|e| e.holds(v) == Some(true));
                prop_assert_eq!(set.contains(v), want, "{} at {}:\n{}", src, v, t);
            }
        }
        // Non-size guards are named, never sizes.
        for d in &r.dims {
            let s = d.source.clone().unwrap_or_default();
            prop_assert!(s.contains(".size()["), "{} read as a size:\n{}", s, t);
        }
        let block = r.dynamic_shapes.clone();
        prop_assert!(!block.contains("dynamic_shapes"), "{}", block);
        for d in &r.dims {
            let bad = export_words(&d.name, d);
            prop_assert!(bad.is_empty(), "{:?}\n{}", bad, t);
        }
    }
}
