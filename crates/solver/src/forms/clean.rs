//! Text as it really arrives: log prefixes, quote markers, Markdown backticks, colour codes.
//!
//! Every reader sees the same cleaned lines, each with the 1-based number of the line it came
//! from, so places in reports point into what the user pasted.

/// One cleaned line and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// 1-based line number in the input.
    pub no: usize,
    /// The text without prefixes, quote markers, colour codes and trailing backticks.
    pub text: String,
}

/// Cleans every line of `text` (see the module docs); line numbers are kept. A hard-wrapped
/// line (a terminal, an e-mail or a narrow comment breaks a long line at a space and indents the
/// rest) is joined back: an indented line continues the one before it when that one is not
/// complete on its own (see [`continues`]). The joined line keeps the number of its first part.
///
/// Linear in the size of `text`: what [`continues`] asks of the line so far is kept as it grows
/// (`Open`), never recomputed over the joined text, and each line is cleaned once.
pub fn lines(text: &str) -> Vec<Line> {
    let quoted = quote_style(text);
    let mut out: Vec<Line> = Vec::new();
    let mut open: Option<Open> = None;
    for (i, l) in text.lines().enumerate() {
        let raw = unquote(l, quoted);
        if let Some(o) = open.as_mut() {
            if o.continued_by(&raw) {
                o.join(&raw);
                continue;
            }
        }
        if let Some(o) = open.take() {
            out.push(o.finish());
        }
        open = Some(Open::new(i + 1, raw));
    }
    out.extend(open.map(Open::finish));
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
            cut_prefix: cut_glog_prefix(t),
        }
    }
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
            "+", "-", "*", "/", "%", "=", "<", ">", ",", " and", " or", " not",
        ]
        .iter()
        .any(|op| t.ends_with(op));
        // The last line of a traceback (`RuntimeError: Expected input ... but`) continued by an
        // indented line that is not a bullet of its own (`  - Not all values ...`).
        let bullet = {
            let c = line.trim_start();
            c.starts_with("- ") || c.starts_with("* ")
        };
        self.depth > 0
            || dangling
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
        Line {
            no: self.no,
            text: clean(&self.text),
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
    glog_prefix(s).is_some() || logging_prefix(s).is_some()
}

/// `RuntimeError: ...`, `torch._dynamo.exc.UserError: ...`: a dotted name whose last part is
/// a class name, then `: `. Looks only at the name (the scan stops at the first other character).
fn is_exception(t: &str) -> bool {
    let end = t
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '.'))
        .unwrap_or(t.len());
    if !t[end..].starts_with(": ") {
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
        && !l.contains("] ")
}

/// A quote marker that prefixes the pasted block: `> ` (Markdown, e-mail) or `# ` (a code
/// comment). Detected when it starts most non-empty lines, so a lone `# 3` comment is left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Angle,
    Hash,
}

fn quote_style(text: &str) -> Quote {
    let lines: Vec<&str> = text.lines().map(str::trim_start).collect();
    let nonempty = lines.iter().filter(|l| !l.is_empty()).count();
    if nonempty == 0 {
        return Quote::None;
    }
    let count = |p: char| {
        lines
            .iter()
            .filter(|l| l.starts_with(p) && !l.starts_with("##"))
            .count()
    };
    // At least half of the lines, or every line with a guard-looking word.
    if count('>') * 2 >= nonempty {
        Quote::Angle
    } else if count('#') * 2 >= nonempty {
        Quote::Hash
    } else {
        Quote::None
    }
}

/// The line without colour codes and quote markers.
fn unquote(line: &str, quote: Quote) -> String {
    let line = strip_ansi(line.trim_end_matches(['\r', '\n']));
    let mut l: &str = &line;
    // Quote markers first (`> I1123 ... ] [0/0] eval ...`), possibly nested (`> > `).
    loop {
        let t = l.trim_start();
        let next = match quote {
            Quote::Angle => t.strip_prefix('>'),
            Quote::Hash if !t.starts_with("##") => t.strip_prefix('#'),
            _ => None,
        };
        match next {
            Some(rest) => l = rest.strip_prefix(' ').unwrap_or(rest),
            None => break,
        }
    }
    l.to_string()
}

/// The line without test and log prefixes and closing backticks.
fn clean(l: &str) -> String {
    let l = strip_test_prefix(strip_log_prefix(strip_test_prefix(l)));
    strip_backticks(l).to_string()
}

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
            for d in chars.by_ref() {
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
    let rest = glog_prefix(t).or_else(|| logging_prefix(t));
    match rest {
        Some(r) => strip_frame_id(r),
        None => l,
    }
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
    let end = rest.find("] ").map(|i| i + 2).or_else(|| {
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
    Some(match rest.strip_prefix('[') {
        Some(r) => match r.split_once("] ") {
            Some((level, tail)) if level.chars().all(|c| c.is_ascii_uppercase()) => tail,
            _ => rest,
        },
        None => rest,
    })
}

/// `[0/0] `, `[4/0_1] `, `[__compiled_fn] ` and similar frame ids after a log prefix.
fn strip_frame_id(l: &str) -> &str {
    if let Some(r) = l.strip_prefix('[') {
        if let Some((id, tail)) = r.split_once("] ") {
            if !id.is_empty()
                && id
                    .chars()
                    .all(|c| c.is_ascii_digit() || c == '/' || c == '_')
            {
                return tail;
            }
        }
    }
    l
}

/// pytest's `E   ` and torchrun's `[rank0]: `.
fn strip_test_prefix(l: &str) -> &str {
    let mut l = l;
    if let Some(rest) = l.strip_prefix("E ") {
        if rest.starts_with(' ') || rest.is_empty() {
            l = rest;
        }
    }
    if l.starts_with("[rank") {
        if let Some(i) = l.find("]:") {
            l = l[i + 2..].strip_prefix(' ').unwrap_or(&l[i + 2..]);
        }
    }
    l
}

/// A guard copied from Markdown keeps a backtick (or a fence) at the end: remove backticks
/// that close the line, and a lone opening one at its start.
fn strip_backticks(l: &str) -> &str {
    let t = l.trim_end();
    if t.trim_start().starts_with("```") {
        return "";
    }
    let t = t.trim_end_matches('`').trim_end();
    let lead = t.len() - t.trim_start().len();
    match t[lead..].strip_prefix('`') {
        Some(rest) if !rest.contains('`') => rest,
        _ => t,
    }
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
        assert_eq!(one("E   - Not all values"), "  - Not all values");
    }
}
