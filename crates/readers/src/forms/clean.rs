//! Text as it really arrives: log prefixes, quote markers, Markdown backticks, colour codes.
//!
//! Every reader sees the same cleaned lines, each with the 1-based number of the line it came
//! from, so places in reports point into what the user pasted. A guard a reader finds in them is
//! a `RawGuard` until it is parsed and filed under its size.

use crate::phrase::Phrase;
use dimguard_solver::provenance::Provenance;

/// A guard as a reader found it, before it is parsed and filed under its size.
#[derive(Debug, Clone)]
pub(crate) struct RawGuard {
    /// 1-based line.
    pub line: usize,
    /// The guard as printed.
    pub text: String,
    /// Where it came from.
    pub provenance: Option<Provenance>,
}

/// An integer bound as printed: `512`, `int_oo`/`oo` (none), `-int_oo`.
pub(crate) fn int_bound(s: &str) -> Option<i128> {
    s.trim().parse::<i128>().ok()
}

/// One cleaned line and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number in the input.
    pub no: usize,
    /// The text without prefixes, quote markers, colour codes and trailing backticks.
    pub text: String,
    /// The frame id a torch log prefix gives the line (`0/1` from `[0/1]`, `4/0_1`), if any:
    /// which compiled frame a guard list or a recompile reason belongs to.
    pub frame: Option<String>,
}

/// Cleans every line of `text` (see the module docs); line numbers are kept. A hard-wrapped
/// line (a terminal, an e-mail or a narrow comment breaks a long line at a space and indents the
/// rest) is joined back: an indented line continues the one before it when that one is not
/// complete on its own (see [`continues`]). The joined line keeps the number of its first part.
///
/// Linear in the size of `text`: what [`continues`] asks of the line so far is kept as it grows
/// (`Open`), never recomputed over the joined text, and each line is cleaned once.
pub fn lines(text: &str) -> Vec<Line> {
    // Colour codes and HTML entities first: they may hide a quote marker (`&gt; `).
    let text = unescape_html(&strip_ansi(text));
    let text = text.as_str();
    let quoted = quote_styles(text);
    let mut out: Vec<Line> = Vec::new();
    let mut open: Option<Open> = None;
    for (i, l) in text.lines().enumerate() {
        let raw = unwrap_backticks(unquote(l, &quoted));
        if let Some(o) = open.as_mut() {
            // A wrapped line keeps the test runner's prefix (`E       rest`, `[rank3]:     rest`).
            let body = strip_test_prefix(&raw);
            if o.continued_by(body) {
                o.join(body);
                continue;
            }
        }
        if let Some(o) = open.take() {
            out.push(o.finish());
        }
        open = Some(Open::new(i + 1, raw));
    }
    out.extend(open.map(Open::finish));
    // Markers that only show once the lines are joined and their prefixes gone (a quoted text
    // logged again and wrapped inside its prefixes): undone on the cleaned lines.
    let texts: Vec<&str> = out.iter().map(|l| l.text.as_str()).collect();
    if let Some(q @ (Quote::Angle | Quote::Hash)) = quote_style(&texts) {
        for l in &mut out {
            let rest = strip_markers(&l.text, q);
            if rest.len() != l.text.len() {
                l.text = rest.to_string();
            }
        }
    }
    out
}

/// Whether `line` (quote markers removed) is the wrapped rest of `prev`: it is indented, and
/// `prev` is incomplete — brackets left open, an operator with no right-hand side, a log prefix
/// cut before its `] `, an exception's message continued by a line that is not a bullet, or a
/// log line
/// followed by an indented line without a prefix of its own (log messages are one line each).
pub fn continues(prev: &str, line: &str) -> bool {
    Open::new(1, prev.to_string()).continued_by(line)
}

/// How long the start of a line may be for its prefixes (test, log, exception) to be looked
/// for again after a join: every prefix torch and its runners print is far shorter.
const HEAD: usize = 512;

/// A line being read, possibly joined from several wrapped lines, with what [`continues`] asks
/// of it: kept up to date as parts are appended, so joining is linear in the text.
struct Open {
    no: usize,
    text: String,
    /// Brackets left open (from the start of the line, after a test prefix).
    depth: i64,
    /// What the start of the line says (recomputed while it is short, see [`HEAD`]).
    head: Head,
}

/// What the start of a line says.
#[derive(Clone, Copy)]
struct Head {
    /// Nothing but blanks.
    empty: bool,
    /// A log prefix.
    prefix: bool,
    /// An exception line (`RuntimeError: ...`).
    exception: bool,
    /// A glog prefix cut before its `] `.
    cut_prefix: bool,
}

impl Head {
    fn of(prev: &str) -> Head {
        let t = strip_test_prefix(prev).trim_start();
        Head {
            empty: prev.trim().is_empty(),
            prefix: has_prefix(t),
            exception: is_exception(t),
            cut_prefix: cut_inside_prefixes(t),
        }
    }
}

/// Whether the message of a line is still to come: a log prefix cut before its end, possibly
/// inside other prefixes (a log line logged again, wrapped inside the inner prefix:
/// `I1123 ... 6064] [2024-01-10 15:43:41,488] torch._dynamo.eval_frame:`), or prefixes with
/// nothing after them (the wrap fell just after a prefix, and the rest, indented, starts with
/// the inner prefix). Each layer is looked at before the next is undone, at most [`NESTED`].
fn cut_inside_prefixes(t: &str) -> bool {
    let mut t = t;
    let mut undone = false;
    for _ in 0..NESTED {
        t = strip_test_prefix(t).trim_start();
        if cut_glog_prefix(t) || cut_logging_prefix(t) {
            return true;
        }
        let next = strip_log_prefix(t);
        if next.len() == t.len() {
            break;
        }
        undone = true;
        t = next;
    }
    undone && t.trim().is_empty()
}

impl Open {
    fn new(no: usize, text: String) -> Open {
        let head = Head::of(&text);
        let depth = bracket_depth(strip_test_prefix(&text));
        Open {
            no,
            text,
            depth,
            head,
        }
    }

    /// Whether `line` continues this one (see [`continues`]).
    fn continued_by(&self, line: &str) -> bool {
        if !line.starts_with([' ', '\t']) || line.trim().is_empty() || self.head.empty {
            return false;
        }
        let t = self.text.trim_end();
        // An expression cut after an operator (`... == 2 + 2 *`) is not complete either.
        let dangling = [
            "+", "-", "*", "/", "%", "=", "<", ">", ",", "|", "&", " and", " or", " not", " where",
        ]
        .iter()
        .any(|op| t.ends_with(op));
        // The rest of a wrapped expression that starts with an operator (`    != 1`).
        let operand = {
            let c = line.trim_start();
            [
                "==", "!=", "<", ">", "+ ", "* ", "/", "% ", "| ", "& ", "and ", "or ", ")",
            ]
            .iter()
            .any(|op| c.starts_with(op))
        };
        // The last line of a traceback (`RuntimeError: Expected input ... but`) continued by an
        // indented line that is not a bullet of its own (`  - Not all values ...`).
        let bullet = {
            let c = line.trim_start();
            c.starts_with("- ") || c.starts_with("* ")
        };
        // Prose hard-wrapped with a four-space indent (`Dynamic input x (shape: ...)` /
        // `    has no max bound for dim 0, ...`): the line before is not indented and does not
        // end a sentence or open a block.
        let prose = {
            let indent = line.len() - line.trim_start_matches(' ').len();
            let body = strip_test_prefix(&self.text);
            indent == 4
                && !body.starts_with([' ', '\t'])
                && !body.trim_start().starts_with("```")
                && !bullet
                && (body
                    .trim_end()
                    .ends_with(|c: char| c.is_ascii_alphanumeric() || c == ')' || c == ',')
                    // `<class '...GuardOnDataDependentSymNode'>:`, its message wrapped.
                    || body.trim_end().ends_with(">:"))
        };
        self.depth > 0
            || dangling
            || prose
            || operand
            || (self.head.exception && !bullet)
            || self.head.cut_prefix
            || (self.head.prefix && !has_prefix(line.trim_start()))
    }

    /// Appends the wrapped rest `raw`.
    fn join(&mut self, raw: &str) {
        let rest = raw.trim_start();
        let keep = self.text.trim_end().len();
        self.text.truncate(keep);
        self.text.push(' ');
        self.text.push_str(rest);
        self.depth += bracket_depth(rest);
        if self.text.len() <= HEAD {
            self.head = Head::of(&self.text);
        }
    }

    fn finish(self) -> Line {
        let body = strip_prefixes(&self.text);
        let frame = frame_id(&self.text[..self.text.len() - body.len()]);
        Line {
            no: self.no,
            text: strip_backticks(body),
            frame,
        }
    }
}

/// Brackets opened minus brackets closed.
fn bracket_depth(s: &str) -> i64 {
    s.bytes().fold(0i64, |n, c| match c {
        b'(' | b'[' | b'{' => n + 1,
        b')' | b']' | b'}' => n - 1,
        _ => n,
    })
}

fn has_prefix(s: &str) -> bool {
    glog_prefix(s).is_some()
        || logging_prefix(s).is_some()
        || python_logging_prefix(s).is_some()
        || cut_location_prefix(s).is_some()
}

/// `RuntimeError: ...`, `torch._dynamo.exc.UserError: ...`: a dotted name whose last part is
/// a class name, then `: `. Looks only at the name (the scan stops at the first other character).
fn is_exception(t: &str) -> bool {
    let end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(t.len());
    // `...GuardOnDataDependentSymNode:` at the end of a line: the message was wrapped onto
    // the next one.
    if !t[end..].starts_with(": ") && t[end..].trim_end() != ":" {
        return false;
    }
    let head = &t[..end];
    let class = head.rsplit('.').next().unwrap_or(head);
    class.starts_with(|c: char| c.is_ascii_uppercase())
}

/// The start of a glog prefix without its end: `I1123 07:53:01.463000 6430` (the wrap fell
/// inside the prefix).
fn cut_glog_prefix(l: &str) -> bool {
    let b = l.as_bytes();
    b.len() >= 6
        && matches!(b[0], b'I' | b'W' | b'E' | b'V' | b'D' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' '
        && glog_prefix(l).is_none()
        && !l.has("] ")
}

/// The start of a `logging` prefix without its message (the wrap fell inside the prefix):
/// `[2023-07-19`, `[2023-07-19 04:14:11,688]`, `... torch.fx.experimental.symbolic_shapes:`,
/// `... [INFO] 0.0:`.
fn cut_logging_prefix(l: &str) -> bool {
    let b = l.as_bytes();
    if !(b.len() >= 6 && b[0] == b'[' && b[1..5].iter().all(u8::is_ascii_digit) && b[5] == b'-') {
        return false;
    }
    match logging_prefix(l) {
        None => true,
        Some(rest) => {
            let r = rest.trim();
            r.is_empty() || (!r.contains(' ') && r.ends_with([':', ']']))
        }
    }
}

/// A marking of the whole pasted block, undone line by line: a quote marker (`> ` from
/// Markdown or e-mail, `# ` from a code comment), a unified diff's first column, a Markdown
/// table's bars. Detected when it marks at least half of the non-empty lines (so a lone `# 3`
/// comment is left alone); markings nest (a diff of a commented block, a quote of a table), at
/// most [`NESTED`] of them, each undone in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    Angle,
    Hash,
    /// A unified diff's added lines (`+I1123 ...`, `+  - Not all values ...`).
    Diff,
    /// A Markdown table (`| `eval Eq(s0, 4)` |`).
    Table,
}

/// The markings of `text`, outermost first. Linear: each layer is one pass over the lines.
fn quote_styles(text: &str) -> Vec<Quote> {
    // Most texts carry no marking: their lines are looked at in place, never copied.
    let Some(first) = quote_style(&text.lines().collect::<Vec<&str>>()) else {
        return Vec::new();
    };
    let mut lines: Vec<String> = text.lines().map(|l| unquote_one(l, first)).collect();
    let mut out = vec![first];
    for _ in 1..NESTED {
        let Some(q) = quote_style(&lines) else { break };
        out.push(q);
        for l in &mut lines {
            *l = unquote_one(l, q);
        }
    }
    out
}

/// The marking of most lines, if any.
fn quote_style<S: AsRef<str>>(lines: &[S]) -> Option<Quote> {
    // A quoted text may have been logged again: its markers follow a log or test prefix.
    // Each line's prefixes are undone once: both counts below look at the bodies.
    let all: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l.as_ref(), strip_prefixes(l.as_ref())))
        .collect();
    let bodies: Vec<&str> = all
        .iter()
        .map(|&(_, b)| b)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let nonempty = bodies.len();
    if nonempty == 0 {
        return None;
    }
    // Lines wrapped after the text was quoted are indented and carry no marker: they count
    // neither way.
    let marked = |l: &str, p: char| {
        let t = l.trim_start();
        t.starts_with(p) && !t.starts_with("##") && !t.starts_with(">=")
    };
    let count = |p: char| bodies.iter().filter(|l| marked(l, p)).count();
    let top = |p: char| {
        bodies
            .iter()
            .filter(|l| marked(l, p) || !l.starts_with([' ', '\t']))
            .count()
    };
    // A diff marks every line in its first column: most with `+` (a diff that adds the text).
    // (A diff logged again carries its `+` after the log prefix.)
    let plus = all
        .iter()
        .filter(|&&(l, body)| {
            let b = if l.starts_with('+') { l } else { body };
            // (`+++ b/file` is a diff's header; `++` a diff of a diff.)
            b.starts_with('+') && !b.starts_with("+++")
        })
        .count();
    let table = bodies
        .iter()
        .map(|l| l.trim())
        .filter(|l| l.len() >= 2 && l.starts_with('|') && l.ends_with('|'))
        .count();
    if count('>') > 0 && count('>') * 2 >= top('>') {
        Some(Quote::Angle)
    } else if count('#') > 0 && count('#') * 2 >= top('#') {
        Some(Quote::Hash)
    } else if plus * 2 >= nonempty && plus > 0 {
        Some(Quote::Diff)
    } else if table * 2 >= nonempty && table > 0 {
        Some(Quote::Table)
    } else {
        None
    }
}

/// The line without its markings (see [`Quote`]).
fn unquote(line: &str, quotes: &[Quote]) -> String {
    let mut l = line.trim_end_matches(['\r', '\n']).to_string();
    for &q in quotes {
        l = unquote_one(&l, q);
    }
    l
}

/// One marking undone.
fn unquote_one(l: &str, quote: Quote) -> String {
    match quote {
        Quote::Diff => {
            // `+` added, `-` removed, ` ` context: one column of marker (after a log prefix,
            // where the diff was logged again).
            if let Some(rest) = l.strip_prefix(['+', '-', ' ']) {
                return rest.to_string();
            }
            let body = strip_prefixes(l);
            let p = l.len() - body.len();
            match body.strip_prefix('+') {
                Some(rest) if p > 0 => format!("{}{rest}", &l[..p]),
                _ => l.to_string(),
            }
        }
        Quote::Table => table_row(l).unwrap_or_else(|| l.to_string()),
        Quote::Angle | Quote::Hash => {
            let rest = strip_markers(l, quote);
            if rest.len() != l.len() {
                return rest.to_string();
            }
            // Markers after a prefix (`I1123 ... ] # - Not all values ...`): the prefix is
            // kept for the line joining, the markers go.
            let body = strip_prefixes(l);
            let p = l.len() - body.len();
            let rest = strip_markers(body, quote);
            if p > 0 && rest.len() != body.len() {
                format!("{}{rest}", &l[..p])
            } else {
                l.to_string()
            }
        }
    }
}

/// A Markdown table row (`| eval | `Eq(s0, 4)` |`): its cells (`\\|` is a `|` inside one)
/// joined by two spaces, so each cell's text reads as prose, a cell's own indentation kept
/// (the one space after the bar is the table's; backticks around a whole cell go too); a
/// separator row (`|---|:--:|`) is empty.
fn table_row(l: &str) -> Option<String> {
    let t = l.trim();
    let inner = t.strip_prefix('|')?.strip_suffix('|')?;
    if inner.ends_with('\\') {
        return None;
    }
    let mut cells: Vec<String> = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                chars.next();
                cells.last_mut().expect("a cell").push('|');
            }
            '|' => cells.push(String::new()),
            _ => cells.last_mut().expect("a cell").push(c),
        }
    }
    if cells.iter().all(|c| {
        let c = c.trim();
        !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':'))
    }) {
        return Some(String::new());
    }
    let cells: Vec<&str> = cells
        .iter()
        .map(|c| {
            let c = c.strip_prefix(' ').unwrap_or(c);
            let c = c.strip_suffix(' ').unwrap_or(c);
            // Every other backtick goes with the cleaning ([`strip_backticks`]).
            c.strip_prefix('`')
                .and_then(|x| x.strip_suffix('`'))
                .unwrap_or(c)
        })
        .collect();
    Some(cells.join("  "))
}

/// `> `/`# ` quote markers at the start of `l`, possibly nested (`> > `). A nested marker
/// follows the one before it after at most three spaces, as Markdown has it: further indented,
/// a `>` is the text's own (the rest of a line wrapped inside the quote, `>     > 9223...`).
fn strip_markers(mut l: &str, quote: Quote) -> &str {
    let mut first = true;
    loop {
        let t = l.trim_start();
        if !first && l.len() - t.len() > 3 {
            return l;
        }
        first = false;
        let next = match quote {
            // `>=` opens a comparison (the rest of a wrapped guard), never a quote.
            Quote::Angle if !t.starts_with(">=") => t.strip_prefix('>'),
            Quote::Hash if !t.starts_with("##") => t.strip_prefix('#'),
            _ => None,
        };
        match next {
            Some(rest) => l = rest.strip_prefix(' ').unwrap_or(rest),
            None => return l,
        }
    }
}

/// `&lt;`, `&gt;`, `&amp;`, `&quot;`, `&#39;`, `&#x27;`, `&nbsp;`: text copied from an HTML
/// page (a rendered issue, a mail archive) keeps them.
fn unescape_html(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    const ENTITIES: [(&str, char); 8] = [
        ("&lt;", '<'),
        ("&gt;", '>'),
        ("&amp;", '&'),
        ("&quot;", '"'),
        ("&#39;", '\''),
        ("&#x27;", '\''),
        ("&#34;", '"'),
        ("&nbsp;", ' '),
    ];
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        match ENTITIES.iter().find(|(e, _)| rest.starts_with(e)) {
            Some((e, c)) => {
                out.push(*c);
                rest = &rest[e.len()..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The first frame id (`[0/1]`, `[4/0_1]`) in a line's prefixes.
fn frame_id(prefixes: &str) -> Option<String> {
    prefixes.match_indices('[').find_map(|(i, _)| {
        let (id, _) = prefixes[i + 1..].split_once(']')?;
        (id.contains('/')
            && id.starts_with(|c: char| c.is_ascii_digit())
            && id
                .chars()
                .all(|c| c.is_ascii_digit() || c == '/' || c == '_'))
        .then(|| id.to_string())
    })
}

/// Test and log prefixes, however nested (`[rank0]:E0815 ... ] [0/0] `, a log line logged
/// again by a runner): at most [`NESTED`] layers.
fn strip_prefixes(l: &str) -> &str {
    let mut l = l;
    for _ in 0..NESTED {
        let next = strip_test_prefix(strip_log_prefix(strip_test_prefix(l)));
        if next.len() == l.len() {
            break;
        }
        l = next;
    }
    l
}

/// Most layers of prefixes undone.
const NESTED: usize = 4;

/// Removes ANSI colour escapes (`ESC [ ... m`), which draft_export prints around its banner.
fn strip_ansi(s: &str) -> String {
    if !s.contains('\u{1b}') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            // An escape cut short ends at its line.
            for d in chars.by_ref() {
                if d == '\n' {
                    out.push(d);
                    break;
                }
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Removes a logging prefix in either format PyTorch has used, and the frame id after it:
///
/// * glog style: `I1123 07:53:01.463000 6430 torch/fx/experimental/symbolic_shapes.py:6064] [0/0] `
/// * `logging` style: `[2024-01-10 15:44:32,290] [4/0] torch.fx.experimental.symbolic_shapes: [INFO] `
pub fn strip_log_prefix(l: &str) -> &str {
    let t = l.trim_start();
    // Every prefix below holds a `]` (glog, `logging`, a cut location) or a `:` (Python's
    // `logging`): most lines of a long text hold neither and are answered at once.
    if !t.bytes().any(|b| b == b']' || b == b':') {
        return l;
    }
    let rest = glog_prefix(t)
        .or_else(|| logging_prefix(t))
        .or_else(|| python_logging_prefix(t))
        .or_else(|| cut_location_prefix(t));
    match rest {
        Some(r) => strip_frame_id(r),
        None => l,
    }
}

/// Python `logging`'s default format: `INFO:torch.fx.experimental.symbolic_shapes:` (a level
/// in capitals, a dotted logger name, no spaces).
fn python_logging_prefix(l: &str) -> Option<&str> {
    let (level, rest) = l.split_once(':')?;
    if !LEVELS.contains(&level) {
        return None;
    }
    let (name, rest) = rest.split_once(':')?;
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.'))
    .then_some(rest.strip_prefix(' ').unwrap_or(rest))
}

const LEVELS: [&str; 7] = [
    "DEBUG", "INFO", "WARNING", "WARN", "ERROR", "CRITICAL", "FATAL",
];

/// A glog line cut before its date: only the location is left,
/// `torch/fx/experimental/symbolic_shapes.py:5956] ` (a path without spaces, ending in
/// `.py:LINE]`).
fn cut_location_prefix(l: &str) -> Option<&str> {
    // A line that is only the location (an empty message, or the wrap fell after it).
    let (loc, rest) = l
        .phrase("] ")
        .map(|i| (&l[..i], &l[i + 2..]))
        .or_else(|| Some((l.trim_end().strip_suffix(']')?, "")))?;
    let (path, line) = loc.rsplit_once(':')?;
    (path.ends_with(".py")
        && !path.contains(' ')
        && !line.is_empty()
        && line.chars().all(|c| c.is_ascii_digit()))
    .then_some(rest)
}

/// `I1123 07:53:01.463000 6430 path.py:6064] `
fn glog_prefix(l: &str) -> Option<&str> {
    let b = l.as_bytes();
    if b.len() < 8 || !matches!(b[0], b'I' | b'W' | b'E' | b'V' | b'D' | b'F') {
        return None;
    }
    if !b[1..5].iter().all(u8::is_ascii_digit) || b[5] != b' ' {
        return None;
    }
    let rest = &l[6..];
    let (time, rest) = rest.split_once(' ')?;
    if !time.contains(':') || !time.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let rest = rest.trim_start();
    let (pid, rest) = rest.split_once(' ')?;
    if !pid.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let end = rest.phrase("] ").map(|i| i + 2).or_else(|| {
        // A line that is only the prefix (an empty log message).
        rest.ends_with(']').then_some(rest.len())
    })?;
    let loc = &rest[..end];
    (!loc[..loc.len().saturating_sub(2)].contains(' ')).then_some(&rest[end..])
}

/// `[2024-01-10 15:44:32,290] [4/0] torch.fx.experimental.symbolic_shapes: [INFO] `
fn logging_prefix(l: &str) -> Option<&str> {
    let rest = l.strip_prefix('[')?;
    let (stamp, rest) = rest.split_once("] ")?;
    if !(stamp.len() >= 19 && stamp.as_bytes()[4] == b'-' && stamp.contains(':')) {
        return None;
    }
    let rest = strip_frame_id(rest);
    // `logger.name: [LEVEL] ` (the level may be absent)
    let rest = match rest.split_once(": ") {
        Some((name, tail)) if !name.contains(' ') && name.contains('.') => tail,
        _ => rest,
    };
    let rest = match rest.strip_prefix('[') {
        Some(r) => match r.split_once("] ") {
            Some((level, tail)) if level.chars().all(|c| c.is_ascii_uppercase()) => tail,
            _ => rest,
        },
        None => rest,
    };
    // torch 2.1 put the frame id after the level: `[INFO] 0.0: create_env`.
    Some(match rest.split_once(": ") {
        Some((id, tail))
            if !id.is_empty()
                && id.contains('.')
                && id.chars().all(|c| c.is_ascii_digit() || c == '.') =>
        {
            tail
        }
        _ => rest,
    })
}

/// `[0/0] `, `[4/0_1] `, `[__compiled_fn] ` and similar frame ids after a log prefix.
///
/// Also a logging artifact's tag after it (`[0/1] [__recompiles] `, `[__guards] `).
fn strip_frame_id(l: &str) -> &str {
    let mut l = l;
    for _ in 0..2 {
        let Some((id, tail)) = l.strip_prefix('[').and_then(|r| r.split_once("] ")) else {
            break;
        };
        let frame = !id.is_empty()
            && id
                .chars()
                .all(|c| c.is_ascii_digit() || c == '/' || c == '_');
        let artifact = id.len() > 2
            && id.starts_with("__")
            && id[2..]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !(frame || artifact) {
            break;
        }
        l = tail;
    }
    l
}

/// pytest's `E   ` and torchrun's `[rank0]: `.
fn strip_test_prefix(l: &str) -> &str {
    let mut l = l;
    // pytest prints `E   ` (three spaces) before each line of the failure.
    if let Some(rest) = l.strip_prefix("E   ") {
        l = rest;
    } else if let Some(rest) = l.strip_prefix("E ") {
        if rest.starts_with(' ') || rest.is_empty() {
            l = rest;
        }
    }
    if l.starts_with("[rank") {
        if let Some(i) = l.phrase("]:") {
            l = l[i + 2..].strip_prefix(' ').unwrap_or(&l[i + 2..]);
        }
    }
    l
}

/// Markdown code marks: a fence line is empty; every backtick is removed (no guard, log line
/// or fix torch prints holds one, and prose quotes guards in them: `` `Eq(u0, 0)` ``).
/// A line pasted whole in backticks (`` `I1123 ... eval Eq(s0, 4)` ``): its text, so that a log
/// or test prefix inside is seen as one (a fence, ```` ``` ````, is left to [`strip_backticks`]).
fn unwrap_backticks(l: String) -> String {
    let t = l.trim();
    if t.len() >= 2 && t.starts_with('`') && t.ends_with('`') && !t.starts_with("``") {
        let lead = &l[..l.len() - l.trim_start().len()];
        return format!("{lead}{}", &t[1..t.len() - 1]);
    }
    l
}

fn strip_backticks(l: &str) -> String {
    let t = l.trim_end();
    if t.trim_start().starts_with("```") || t.trim_start().starts_with("~~~") {
        return String::new();
    }
    if !t.contains('`') {
        return t.to_string();
    }
    t.replace('`', "").trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(s: &str) -> String {
        lines(s).remove(0).text
    }

    #[test]
    fn hard_wrapped_lines_are_joined_and_structure_is_kept() {
        // Cut inside brackets, after an operator, inside a log prefix, in an exception message.
        let cases = [
            ("Guard failed: Eq(Mod(x,\n    8), 0)", "Guard failed: Eq(Mod(x, 8), 0)"),
            ("Guard failed: x // 4 == 2 *\n    (x // 8)", "Guard failed: x // 4 == 2 * (x // 8)"),
            (
                "I1123 07:53:01.463000 6430\n    torch/fx/s.py:6064] [0/0] eval Eq(s0, 4) [guard added]",
                "eval Eq(s0, 4) [guard added]",
            ),
            (
                "RuntimeError: Expected input at *args[0].shape[2] to be <= 512, but\n    got 1000",
                "RuntimeError: Expected input at *args[0].shape[2] to be <= 512, but got 1000",
            ),
        ];
        for (wrapped, joined) in cases {
            let l = lines(wrapped);
            assert_eq!(l.len(), 1, "{wrapped:?}: {l:?}");
            assert_eq!(l[0].text, joined);
            assert_eq!(l[0].no, 1);
        }
        // Bullets after an exception line, indented spec lines after a heading, and indented
        // code in a traceback stay lines of their own.
        let text = "UserError: Constraints violated (h)!\n  - Not all values of h satisfy Eq(h, 4).\nSuggested fixes:\n  h = Dim('h')\n  File \"m.py\", line 3, in f\n    y = g(x)\n";
        assert_eq!(lines(text).len(), 6);
    }

    #[test]
    fn a_log_logged_again_and_wrapped_inside_both_prefixes() {
        // The wrap falls after the outer prefix and inside the inner one: the rest, indented,
        // starts with the inner prefix (a line of its own were it not indented).
        let text = "I1123 07:53:01.000005 6430\n    torch/fx/experimental/symbolic_shapes.py:6064]\n    [2024-01-10 15:43:41,488] torch._dynamo.eval_frame:\n    [INFO]     assert x.size()[0] == 1\nI1123 07:53:01.000006 6430\n    torch/fx/experimental/symbolic_shapes.py:6064]\n    [2024-01-10 15:43:41,488] torch._dynamo.eval_frame:\n    [INFO]     assert x.size()[1] == 3";
        let l = lines(text);
        assert_eq!(l.len(), 2, "{l:?}");
        assert_eq!(l[0].text, "    assert x.size()[0] == 1");
        assert_eq!(
            (l[1].no, l[1].text.as_str()),
            (5, "    assert x.size()[1] == 3")
        );
        // The same with the glog prefix cut before its date.
        let text = "torch/fx/experimental/symbolic_shapes.py:5956]\n    [2024-01-10 15:43:41,488] torch._dynamo.eval_frame:\n    [INFO] eval Eq(s0, 4)";
        assert_eq!(one(text), "eval Eq(s0, 4)");
    }

    #[test]
    fn glog_prefix_and_frame_id() {
        assert_eq!(
            one("I1123 07:53:01.463000 6430 torch/fx/experimental/symbolic_shapes.py:6064] [0/0] eval Eq(s0, 4) [guard added]"),
            "eval Eq(s0, 4) [guard added]"
        );
        assert_eq!(
            one("V1123 10:30:06.192000 13101 torch/fx/experimental/symbolic_shapes.py:6444] track_symint L['x'].size()[0] 1 None"),
            "track_symint L['x'].size()[0] 1 None"
        );
    }

    #[test]
    fn logging_prefix() {
        assert_eq!(
            one("[2024-01-10 15:44:32,290] [4/0] torch.fx.experimental.symbolic_shapes: [INFO] create_symbol s0 = 8 for L['x'].size()[0] [2, int_oo]"),
            "create_symbol s0 = 8 for L['x'].size()[0] [2, int_oo]"
        );
        assert_eq!(
            one("[2023-11-02 10:00:00,000] torch._dynamo.guards: [DEBUG] hello"),
            "hello"
        );
    }

    #[test]
    fn quotes_and_backticks() {
        let text = "> Not all values of h\n> satisfy the generated guard Eq(s0, 4).`\n";
        let l = lines(text);
        assert_eq!(l[0].text, "Not all values of h");
        assert_eq!(l[1].text, "satisfy the generated guard Eq(s0, 4).");
        let text = "# Guard failed: x.size()[0] // 5 != 1\n# more\n";
        assert_eq!(lines(text)[0].text, "Guard failed: x.size()[0] // 5 != 1");
        // The rest of a wrapped guard that starts with `>=` is no quote marker, even where it
        // is the only line that starts with `>` (the corpus's a30, wrapped at 100 columns).
        let text = "    - Not all values of y in the range satisfy the guard L['y'].size()[1]\n    >= 16.\n    Suggested fixes:\n";
        assert!(
            lines(text).iter().any(|l| l.text.has(">= 16")),
            "{:?}",
            lines(text)
        );
        // A lone comment inside a fix block is not a quote marker.
        let text = "a\nb\n  dim = None  # 3\nc\n";
        assert_eq!(lines(text)[2].text, "  dim = None  # 3");
        assert_eq!(one("`Eq(s0, 4)`"), "Eq(s0, 4)");
        assert_eq!(one("```python"), "");
        assert_eq!(one("\u{1b}[31mred\u{1b}[0m"), "red");
    }

    #[test]
    fn not_a_prefix() {
        assert_eq!(one("Inference ok"), "Inference ok");
        assert_eq!(one("[0/0] is fine"), "[0/0] is fine");
        assert_eq!(one("E   - Not all values"), "- Not all values");
        assert_eq!(one("E     - Not all values"), "  - Not all values");
    }
}
