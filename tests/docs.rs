//! The README and `docs/*.md` stay true: every shown command output is what the command prints
//! today, every relative link resolves, and every page under `docs/` is linked from the README.
//!
//! The convention, in the Markdown files:
//!
//! * A ```` ```console ```` block is run. Its lines that start with `$ ` are commands (a line ending
//!   in ` \` continues on the next); the lines after a command, up to the next command or the end of
//!   the block, are its output. Each command runs under `bash -c` in the repository root with the
//!   built `dimguard` first on `PATH` and `NO_COLOR=1`; its standard output is compared (standard
//!   error only where the command redirects it, `2>&1`), so an excerpt is written as a pipe
//!   (`| head -n 12`, `| sed -n '/^Paste/,$p'`).
//! * Both sides are normalised before the comparison: trailing spaces and blank lines, the
//!   repository's absolute path, times (`12 ms`, `0.4 s`) and dimguard's version.
//! * A ```` ```text ```` block is output that is *not* run here, and says why on the line just above
//!   its fence: `<!-- not run: needs torch 2.15 -->` (a torch session, a GPU, a text of the shared
//!   corpus). An unmarked ```` ```text ```` block fails the test: turn it into a `console` block or
//!   mark it.
//!
//! When a command's output changed on purpose, rewrite every stale output in place and review it:
//!
//! ```sh
//! DIMGUARD_BLESS_DOCS=1 cargo test --test docs
//! git diff README.md docs
//! ```

mod common;

use common::root;
use regex::Regex;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const BLESS: &str = "DIMGUARD_BLESS_DOCS";
const BLESS_COMMAND: &str = "DIMGUARD_BLESS_DOCS=1 cargo test --test docs";
/// No command of the docs may take longer (they run on small files; the whole test takes seconds).
const COMMAND_LIMIT: Duration = Duration::from_secs(60);

/// README.md and every `docs/*.md`, as paths relative to the root.
fn pages() -> Vec<String> {
    let mut docs: Vec<String> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md"))
        .map(|n| format!("docs/{n}"))
        .collect();
    docs.sort();
    let mut all = vec!["README.md".to_string()];
    all.extend(docs);
    all
}

fn read(page: &str) -> String {
    std::fs::read_to_string(root().join(page)).unwrap_or_else(|e| panic!("{page}: {e}"))
}

// ---------------------------------------------------------------------------------------------
// Parsing: fences, console blocks, commands

/// A fenced block: the line of its opening fence (0-based), its indent, its info string and the
/// lines between the fences (indent removed).
struct Fence {
    open: usize,
    close: usize,
    indent: usize,
    info: String,
    body: Vec<String>,
}

/// The fenced blocks of a page (an unclosed fence runs to the end of the page).
fn fences(lines: &[&str]) -> Vec<Fence> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        if let Some(rest) = trimmed.strip_prefix("```") {
            let ticks = 3 + rest.chars().take_while(|&c| c == '`').count();
            let info = trimmed[ticks..].trim().to_string();
            let mut j = i + 1;
            let mut body = Vec::new();
            while j < lines.len() {
                let t = lines[j].trim_start();
                if t.starts_with(&"`".repeat(ticks)) && t.trim_matches('`').trim().is_empty() {
                    break;
                }
                let l = lines[j];
                let cut = l.len() - l.trim_start().len();
                body.push(l[cut.min(indent)..].to_string());
                j += 1;
            }
            out.push(Fence {
                open: i,
                close: j,
                indent,
                info,
                body,
            });
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// One command of a console block and the output shown after it.
#[derive(Clone, Debug, PartialEq)]
struct Shown {
    /// The page's line of the command's first line (0-based).
    line: usize,
    command: String,
    /// The page's lines of the shown output: `first..end` (what a bless replaces).
    first: usize,
    end: usize,
    output: Vec<String>,
}

/// The commands of a console block, with their shown outputs.
fn commands(fence: &Fence) -> Vec<Shown> {
    let mut out: Vec<Shown> = Vec::new();
    let mut k = 0;
    while k < fence.body.len() {
        let line = &fence.body[k];
        if let Some(cmd) = line.strip_prefix("$ ") {
            let start = k;
            let mut command = cmd.to_string();
            while command.ends_with('\\') && k + 1 < fence.body.len() {
                command.pop();
                k += 1;
                command.push('\n');
                command.push_str(&fence.body[k]);
            }
            let first = k + 1;
            let mut end = first;
            while end < fence.body.len() && !fence.body[end].starts_with("$ ") {
                end += 1;
            }
            out.push(Shown {
                line: fence.open + 1 + start,
                command,
                first: fence.open + 1 + first,
                end: fence.open + 1 + end,
                output: fence.body[first..end].to_vec(),
            });
            k = end;
        } else {
            k += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Running and normalising

struct Ran {
    stdout: String,
    stderr: String,
    status: String,
}

/// Runs a command of the docs in the repository root, with the built binary first on `PATH`.
fn run(command: &str) -> Ran {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_dimguard"));
    let path = std::env::join_paths(std::iter::once(bin.parent().unwrap().to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(root())
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    // Read both pipes on threads so that a long output cannot block the child.
    let mut so = child.stdout.take().unwrap();
    let mut se = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut so, &mut b).ok();
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        std::io::Read::read_to_end(&mut se, &mut b).ok();
        b
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break format!("{s}");
        }
        if started.elapsed() > COMMAND_LIMIT {
            child.kill().ok();
            child.wait().ok();
            break format!("killed after {} s", COMMAND_LIMIT.as_secs());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Ran {
        stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into_owned(),
        status,
    }
}

/// Runs the commands on a few threads, each taking the next command not yet started; the results
/// in the commands' order.
fn run_all(commands: &[String]) -> Vec<Ran> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 4);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let k = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(command) = commands.get(k) else {
                    break;
                };
                let ran = run(command);
                done.lock().unwrap().push((k, ran));
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|(k, _)| *k);
    done.into_iter().map(|(_, r)| r).collect()
}

/// What the comparison ignores: trailing spaces and blank lines, the repository's path, times and
/// dimguard's version.
fn normalise(lines: &[String]) -> Vec<String> {
    static TIME: OnceLock<Regex> = OnceLock::new();
    static VERSION: OnceLock<Regex> = OnceLock::new();
    let time =
        TIME.get_or_init(|| Regex::new(r"\b\d+(?:[.,]\d+)*\s?(?:ns|µs|us|ms|s|min)\b").unwrap());
    let version =
        VERSION.get_or_init(|| Regex::new(r"\bdimguard(-\w+)? v?\d+\.\d+\.\d+\b").unwrap());
    let root = root().to_string_lossy().into_owned();
    let mut out: Vec<String> = lines
        .iter()
        .map(|l| {
            let l = l.replace(&format!("{root}/"), "").replace(&root, ".");
            let l = time.replace_all(&l, "<time>");
            let l = version.replace_all(&l, "dimguard$1 <version>");
            l.trim_end().to_string()
        })
        .collect();
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    while out.first().is_some_and(|l| l.is_empty()) {
        out.remove(0);
    }
    out
}

/// A line diff of `expected` against `actual` (`-` shown, `+` printed now), the common lines
/// around each change kept to two.
fn diff(expected: &[String], actual: &[String]) -> String {
    let (n, m) = (expected.len(), actual.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if expected[i] == actual[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let mut ops: Vec<(char, &str)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < n || j < m {
        if i < n && j < m && expected[i] == actual[j] {
            ops.push((' ', &expected[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            ops.push(('-', &expected[i]));
            i += 1;
        } else {
            ops.push(('+', &actual[j]));
            j += 1;
        }
    }
    let near = |k: usize| {
        ops[k.saturating_sub(2)..(k + 3).min(ops.len())]
            .iter()
            .any(|(c, _)| *c != ' ')
    };
    let mut out = String::new();
    let mut skipped = false;
    for (k, (c, l)) in ops.iter().enumerate() {
        if near(k) {
            out.push_str(&format!("    {c} {l}\n"));
            skipped = false;
        } else if !skipped {
            out.push_str("      ...\n");
            skipped = true;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The shown outputs

/// Every console block's commands run, outputs compared (or rewritten under `DIMGUARD_BLESS_DOCS`).
#[test]
fn shown_outputs_are_what_the_commands_print() {
    let bless = std::env::var_os(BLESS).is_some();
    let mut failures = Vec::new();
    // Every page's commands, run together on a few threads (each is small; CI has 2 cores).
    let pages: Vec<(String, String)> = pages()
        .into_iter()
        .map(|p| {
            let text = read(&p);
            (p, text)
        })
        .collect();
    let all: Vec<String> = pages
        .iter()
        .flat_map(|(_, text)| {
            let lines: Vec<&str> = text.lines().collect();
            fences(&lines)
                .iter()
                .filter(|f| f.info == "console")
                .flat_map(commands)
                .map(|c| c.command)
                .collect::<Vec<_>>()
        })
        .collect();
    let mut ran = run_all(&all).into_iter();
    let total = all.len();
    for (page, text) in pages {
        let lines: Vec<&str> = text.lines().collect();
        let blocks = fences(&lines);
        let shown: Vec<(usize, Shown)> = blocks
            .iter()
            .filter(|f| f.info == "console")
            .flat_map(|f| commands(f).into_iter().map(move |c| (f.indent, c)))
            .collect();
        for f in blocks.iter().filter(|f| f.info == "console") {
            if commands(f).is_empty() {
                failures.push(format!(
                    "{page}:{}: a console block with no `$ ` command line",
                    f.open + 1
                ));
            }
        }
        let results: Vec<Ran> = ran.by_ref().take(shown.len()).collect();
        let mut rewrites: Vec<(usize, usize, Vec<String>)> = Vec::new();
        for ((indent, s), ran) in shown.iter().zip(results) {
            let actual: Vec<String> = ran.stdout.lines().map(str::to_string).collect();
            let (want, got) = (normalise(&s.output), normalise(&actual));
            if got.is_empty() {
                // Never blessed: a failing command, or an excerpt whose pattern no longer matches.
                failures.push(format!(
                    "{page}:{}: `$ {}` ({}) prints nothing; its standard error:\n{}",
                    s.line + 1,
                    s.command,
                    ran.status,
                    ran.stderr
                        .lines()
                        .take(20)
                        .map(|l| format!("    {l}\n"))
                        .collect::<String>()
                ));
                continue;
            }
            if want == got {
                continue;
            }
            if bless {
                if let Some(bad) = actual
                    .iter()
                    .find(|l| l.starts_with("$ ") || l.trim_start().starts_with("```"))
                {
                    failures.push(format!(
                        "{page}:{}: `{}` prints a line the console convention cannot hold ({bad:?}): \
                         show that output another way",
                        s.line + 1,
                        s.command
                    ));
                    continue;
                }
                let pad = " ".repeat(*indent);
                let mut new: Vec<String> = normalise_for_bless(&actual)
                    .into_iter()
                    .map(|l| if l.is_empty() { l } else { format!("{pad}{l}") })
                    .collect();
                // A blank line separates this output from the next command of the block.
                if lines
                    .get(s.end)
                    .is_some_and(|l| l.trim_start().starts_with("$ "))
                {
                    new.push(String::new());
                }
                rewrites.push((s.first, s.end, new));
                continue;
            }
            let stderr = if ran.stderr.trim().is_empty() {
                String::new()
            } else {
                format!(
                    "  its standard error:\n{}",
                    ran.stderr
                        .lines()
                        .take(20)
                        .map(|l| format!("    {l}\n"))
                        .collect::<String>()
                )
            };
            failures.push(format!(
                "{page}:{}: `$ {}` ({}) prints other than shown (- shown, + printed now):\n{}{stderr}",
                s.line + 1,
                s.command,
                ran.status,
                diff(&want, &got)
            ));
        }
        if bless && !rewrites.is_empty() {
            let mut new_lines: Vec<String> = Vec::new();
            let mut at = 0;
            for (first, end, output) in &rewrites {
                new_lines.extend(lines[at..*first].iter().map(|l| l.to_string()));
                new_lines.extend(output.iter().cloned());
                at = *end;
            }
            new_lines.extend(lines[at..].iter().map(|l| l.to_string()));
            let mut new_text = new_lines.join("\n");
            if text.ends_with('\n') {
                new_text.push('\n');
            }
            // The rewritten page must parse to the same commands, each with its new output.
            let re_lines: Vec<&str> = new_text.lines().collect();
            let before: Vec<String> = shown.iter().map(|(_, s)| s.command.clone()).collect();
            let after: Vec<String> = fences(&re_lines)
                .iter()
                .filter(|f| f.info == "console")
                .flat_map(commands)
                .map(|s| s.command)
                .collect();
            assert_eq!(before, after, "{page}: blessing would change its commands");
            std::fs::write(root().join(&page), new_text).unwrap();
            eprintln!("{page}: rewrote {} shown output(s)", rewrites.len());
        }
    }
    assert!(total > 0, "no console block in README.md or docs/*.md");
    assert!(
        failures.is_empty(),
        "{} shown output(s) differ from what the commands print (or they print nothing):\n\n{}\nIf the new output is right, \
         rewrite the docs with `{BLESS_COMMAND}` and review `git diff README.md docs`.",
        failures.len(),
        failures.join("\n")
    );
}

/// What a bless writes: the output as printed, trailing spaces and blank lines dropped.
fn normalise_for_bless(actual: &[String]) -> Vec<String> {
    let mut out: Vec<String> = actual.iter().map(|l| l.trim_end().to_string()).collect();
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// A ```text block is output that is not run; it must say why on the line above its fence.
#[test]
fn unrun_outputs_say_why() {
    let mut failures = Vec::new();
    for page in pages() {
        let text = read(&page);
        let lines: Vec<&str> = text.lines().collect();
        for f in fences(&lines) {
            if f.info != "text" {
                continue;
            }
            let above = f.open.checked_sub(1).map(|i| lines[i].trim()).unwrap_or("");
            if !(above.starts_with("<!-- not run:") && above.ends_with("-->")) {
                failures.push(format!("{page}:{}", f.open + 1));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} ```text block(s) with no `<!-- not run: REASON -->` line above the fence: make each a \
         ```console block (`$ dimguard ...` and its output; then `{BLESS_COMMAND}`), or say why it \
         cannot run here:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

// ---------------------------------------------------------------------------------------------
// Links

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's headings (outside fences), repeated ones numbered as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let lines: Vec<&str> = text.lines().collect();
    let mut in_fence = vec![false; lines.len()];
    for f in fences(&lines) {
        for flag in &mut in_fence[f.open..=f.close.min(lines.len() - 1)] {
            *flag = true;
        }
    }
    let mut seen = BTreeSet::new();
    for (i, l) in lines.iter().enumerate() {
        if in_fence[i] || !l.starts_with('#') {
            continue;
        }
        let h = l.trim_start_matches('#');
        if !h.starts_with(' ') {
            continue;
        }
        let base = slug(h);
        let mut s = base.clone();
        let mut k = 1;
        while seen.contains(&s) {
            s = format!("{base}-{k}");
            k += 1;
        }
        seen.insert(s);
    }
    seen
}

/// The link targets of a page outside code (fences and inline code): `[text](target)`, reference
/// definitions and HTML `href`/`src`, with their lines.
fn links(text: &str) -> Vec<(usize, String)> {
    static INLINE: OnceLock<Regex> = OnceLock::new();
    static CODE: OnceLock<Regex> = OnceLock::new();
    static REFDEF: OnceLock<Regex> = OnceLock::new();
    static HTML: OnceLock<Regex> = OnceLock::new();
    let inline =
        INLINE.get_or_init(|| Regex::new(r#"\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)"#).unwrap());
    let code = CODE.get_or_init(|| Regex::new(r"`+[^`]*`+").unwrap());
    let refdef = REFDEF.get_or_init(|| Regex::new(r"^\s*\[[^\]]+\]:\s*(\S+)").unwrap());
    let html = HTML.get_or_init(|| Regex::new(r#"(?:href|src)="([^"]+)""#).unwrap());
    let lines: Vec<&str> = text.lines().collect();
    let mut in_fence = vec![false; lines.len()];
    for f in fences(&lines) {
        for flag in &mut in_fence[f.open..=f.close.min(lines.len() - 1)] {
            *flag = true;
        }
    }
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if in_fence[i] {
            continue;
        }
        let l = code.replace_all(l, "");
        for re in [inline, refdef, html] {
            for c in re.captures_iter(&l) {
                out.push((i, c[1].to_string()));
            }
        }
    }
    out
}

/// Where a relative link of `page` leads: the file (relative to the root, normalised) and anchor.
fn resolve(page: &str, target: &str) -> (PathBuf, Option<String>) {
    let (file, anchor) = match target.split_once('#') {
        Some((f, a)) => (f, Some(a.to_string())),
        None => (target, None),
    };
    if file.is_empty() {
        return (PathBuf::from(page), anchor);
    }
    let base = Path::new(page).parent().unwrap_or(Path::new(""));
    let mut parts: Vec<String> = Vec::new();
    for c in base.join(file).components() {
        match c {
            std::path::Component::ParentDir => {
                parts.pop();
            }
            std::path::Component::CurDir => {}
            c => parts.push(c.as_os_str().to_string_lossy().into_owned()),
        }
    }
    (parts.iter().collect(), anchor)
}

fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:")
}

#[test]
fn relative_links_resolve() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        for (line, target) in links(&read(&page)) {
            if is_external(&target) {
                continue;
            }
            checked += 1;
            let (file, anchor) = resolve(&page, &target);
            let path = root().join(&file);
            if !path.exists() {
                failures.push(format!(
                    "{page}:{}: {target}: no file {}",
                    line + 1,
                    file.display()
                ));
                continue;
            }
            if let Some(a) = anchor {
                if path.extension().is_some_and(|e| e == "md") {
                    let known = anchors(&std::fs::read_to_string(&path).unwrap());
                    if !known.contains(&a) {
                        failures.push(format!(
                            "{page}:{}: {target}: no heading of {} has the anchor #{a}",
                            line + 1,
                            file.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(
        checked > 0,
        "no relative link found: the link reader is broken"
    );
    assert!(
        failures.is_empty(),
        "{} broken link(s):\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[test]
fn every_doc_is_linked_from_the_readme() {
    let linked: BTreeSet<PathBuf> = links(&read("README.md"))
        .into_iter()
        .filter(|(_, t)| !is_external(t))
        .map(|(_, t)| resolve("README.md", &t).0)
        .collect();
    let missing: Vec<String> = pages()
        .into_iter()
        .skip(1)
        .filter(|p| !linked.contains(&PathBuf::from(p)))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md links none of: {} (add each to its Documentation list)",
        missing.join(", ")
    );
}

// ---------------------------------------------------------------------------------------------
// The test's own pieces

#[test]
fn the_convention_reads_commands_outputs_and_links() {
    let page =
        "intro\n```console\n$ dimguard a \\\n  --b\nout 1\n\nout 2\n\n$ echo x | dimguard c\n```\n\
                ## A `heading`, here!\n[x](docs/X.md#a-heading-here) `[y](not/a/link)`\n";
    let lines: Vec<&str> = page.lines().collect();
    let f = fences(&lines);
    assert_eq!(f.len(), 1);
    let c = commands(&f[0]);
    assert_eq!(c.len(), 2);
    assert_eq!(c[0].command, "dimguard a \n  --b");
    assert_eq!(c[0].output, vec!["out 1", "", "out 2", ""]);
    assert_eq!((c[0].first, c[0].end), (4, 8));
    assert_eq!(c[1].command, "echo x | dimguard c");
    assert!(c[1].output.is_empty());
    assert!(anchors(page).contains("a-heading-here"));
    let l = links(page);
    assert_eq!(l, vec![(11, "docs/X.md#a-heading-here".to_string())]);
    assert_eq!(
        resolve("docs/A.md", "../README.md#x"),
        (PathBuf::from("README.md"), Some("x".to_string()))
    );
    let n = normalise(&[
        format!("{}/tests/x.pt2 in 12 ms, 0.4 s ", root().display()),
        "dimguard 0.1.0, 3 sizes".into(),
        String::new(),
    ]);
    assert_eq!(
        n,
        vec![
            "tests/x.pt2 in <time>, <time>",
            "dimguard <version>, 3 sizes"
        ]
    );
    let d = diff(&["a".into(), "b".into()], &["a".into(), "c".into()]);
    assert!(d.contains("- b") && d.contains("+ c"), "{d}");
}
