//! The reader of last resort: every balanced condition over size atoms, anywhere in a text.
//!
//! When no reader recognizes the text's form (a guard quoted in prose, a line of a form dimguard
//! has no reader for), the text may still hold a size expression. [`read`] finds each one by
//! the grammar of guards, not by a line format: around every size atom (`s3`, `u0`,
//! `L['x'].size()[2]`, `x.shape[2]`, `x.size(2)`, `x.size()[2]`) it tries the word starts to its
//! left and keeps the longest text that parses as a condition over size atoms only. Each one is
//! filed like a log's guard: under its size, among the joint guards, or (an unbacked `u0`)
//! among the data-dependent ones, and the words around it say what it was.
//!
//! Linear in the text: every parse is charged to a work budget proportional to the text's
//! length, and the search stops when it is spent (saying so in a note).

use super::clean::Line;
use super::clean::RawGuard;
use super::logs::{place_guards, size_name};
use crate::message::Message;
use crate::phrase::Phrase;
use dimguard_solver::report::Form;
use dimguard_solver::syntax::parse_expr;
use dimguard_solver::{is_size_symbol, is_unbacked, Expr};

/// At most this many word starts to the left of an atom are tried.
const STARTS: usize = 12;
/// At most this many ends (the parse error's place, then word ends before it) per start.
const ENDS: usize = 8;
/// An expression is looked for in at most this many bytes after its first atom.
const WINDOW: usize = 8192;

/// Reads the size expressions of `lines`; `None` when there is none.
pub fn read(lines: &[Line]) -> Option<Message> {
    let total: usize = lines.iter().map(|l| l.text.len()).sum();
    let mut budget = Budget {
        left: 16 * total + (1 << 20),
        spent: false,
    };
    let mut found: Vec<(usize, String, Expr, &'static str)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for line in lines {
        for (text, expr) in expressions(&size_calls(&line.text), &mut budget) {
            // `eval size_oblivious(Eq(...)) == False [statically known]`, `Eq(s59, s80)=False`:
            // the text says the condition is false, so what holds is its negation.
            // `+ x1.size()[2] == 96`: a diff's marker left inside a line joined from a wrap is
            // no unary plus of torch's (it prints none before a condition).
            let (text, expr) = match text.strip_prefix('+').map(str::trim_start) {
                Some(t) => match dimguard_solver::syntax::parse_guard(t) {
                    Ok(e) => (t.to_string(), e),
                    Err(_) => (text, expr),
                },
                None => (text, expr),
            };
            let (text, expr) = if said_false(&line.text, &text) {
                (format!("Not({text})"), Expr::Not(Box::new(expr)))
            } else {
                (text, expr)
            };
            // `x0.size()[0] == 8 and x1.size()[2] == 96 and ...` (torch 2.1's specializations):
            // a conjunction of conditions each on one size is a guard per size.
            let parts: Vec<(String, Expr)> = match &expr {
                Expr::And(ps)
                    if ps.iter().all(|p| p.atoms().len() == 1) && expr.atoms().len() > 1 =>
                {
                    ps.iter().map(|p| (p.to_string(), p.clone())).collect()
                }
                _ => vec![(text, expr)],
            };
            for (text, expr) in parts {
                if seen.insert(text.clone()) {
                    found.push((line.no, text, expr, kind(&line.text)));
                }
            }
        }
        if budget.spent {
            break;
        }
    }
    let unbounded = missing_bounds(lines);
    if found.is_empty() && unbounded.is_empty() {
        return None;
    }
    let mut msg = Message::empty(Form::Guards);
    msg.missing_bounds = unbounded
        .iter()
        .map(
            |(no, source, symbol, lo)| dimguard_solver::report::MissingBound {
                line: *no,
                source: source.clone(),
                symbol: symbol.clone(),
                min: *lo,
                program: None,
            },
        )
        .collect();
    for (no, source, symbol, lo) in &unbounded {
        let d = msg.dim_mut(&size_name(source), Some(source.clone()));
        d.symbol = Some(symbol.clone());
        d.range = Some((*lo, crate::message::SIZE_MAX));
        // The text's own conditions on the symbol bound the size: they are read over it.
        let bounding: Vec<String> = found
            .iter_mut()
            .filter(|(_, _, e, _)| e.atoms().iter().any(|a| a.to_string() == *symbol))
            .map(|(n, text, e, _)| {
                *e = e.substitute(symbol, &Expr::sym(source));
                *text = replace_word(text, symbol, source);
                format!("line {n}: {text}")
            })
            .collect();
        msg.notes.push(if bounding.is_empty() {
            format!(
                "line {no}: Torch-TensorRT found no upper bound for {source} ({symbol}) and will guess one; nothing in the text bounds it, so no sound bound follows from it (give the exported program as --program MODEL.pt2 for the bound it implies): set the largest size you will run as torch._dynamo.mark_dynamic(..., max=HI) or Dim(..., max=HI), and give it here as --range {}=LO..HI",
                size_name(source)
            )
        } else {
            format!(
                "line {no}: Torch-TensorRT found no upper bound for {source} ({symbol}) and will guess one; the text's own conditions on {symbol} bound it ({}): the largest size of the set below is a sound max=HI for torch._dynamo.mark_dynamic(..., max=HI) or Dim(..., max=HI)",
                bounding.join("; ")
            )
        });
    }
    let mut raws = Vec::new();
    let mut symbols: Vec<String> = Vec::new();
    for (no, text, expr, what) in &found {
        for a in expr.atoms() {
            let a = a.to_string();
            if is_source(&a) {
                msg.dim_mut(&size_name(&a), Some(a.clone()));
            } else if !is_unbacked(&a) {
                let d = msg.dim_mut(&a, None);
                d.symbol = Some(a.clone());
                if !symbols.contains(&a) {
                    symbols.push(a.clone());
                }
            }
        }
        msg.notes.push(format!(
            "line {no}: read the {what} {text} found in the text (no torch message form dimguard knows is around it)"
        ));
        raws.push(RawGuard {
            line: *no,
            text: text.clone(),
            provenance: None,
        });
    }
    place_guards(
        &mut msg,
        raws,
        &|a: &str| is_source(a).then(|| a.to_string()),
        &is_unbacked,
    );
    if !symbols.is_empty() {
        msg.notes.push(format!(
            "the text never says which input sizes {} are: the answer is over torch's symbols; give their ranges as --range {}=LO..HI, or your dynamic_shapes / ShapesSpec as --spec",
            symbols.join(", "),
            symbols[0]
        ));
    }
    if budget.spent {
        msg.notes.push(
            "the text is too large to search for every size expression: the search stopped at its work budget, so later expressions were not read".to_string(),
        );
    }
    if msg.dims.is_empty() && msg.joint.is_empty() && !msg.data_dependent.is_empty() {
        msg.form = Form::DataDependent;
    }
    Some(msg)
}

/// `values.size(0)` (a size as user code writes it) → `values.size()[0]`, the source form the
/// guard grammar reads.
fn size_calls(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.has(".size(") {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 8);
    let mut rest = line;
    while let Some(i) = rest.phrase(".size(") {
        let after = &rest[i + ".size(".len()..];
        let digits = after.bytes().take_while(u8::is_ascii_digit).count();
        out.push_str(&rest[..i]);
        if digits > 0 && after[digits..].starts_with(')') {
            out.push_str(&format!(".size()[{}]", &after[..digits]));
            rest = &after[digits + 1..];
        } else {
            out.push_str(".size(");
            rest = after;
        }
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

/// Whether `line` says the condition `text` it holds is false: `text` followed (after closing
/// parentheses) by `== False` or `=False`.
fn said_false(line: &str, text: &str) -> bool {
    line.match_indices(text).any(|(i, _)| {
        let rest = line[i + text.len()..].trim_start_matches([')', ' ']);
        rest.starts_with("== False") || rest.starts_with("=False")
    })
}

/// `text` with every whole-word `word` (not inside a longer name: `u0` but not `u01`) replaced.
fn replace_word(text: &str, word: &str, by: &str) -> String {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.phrase(word) {
        let before = rest[..i].chars().next_back();
        let after = rest[i + word.len()..].chars().next();
        out.push_str(&rest[..i]);
        if before.is_some_and(part) || after.is_some_and(part) {
            out.push_str(word);
        } else {
            out.push_str(by);
        }
        rest = &rest[i + word.len()..];
    }
    out.push_str(rest);
    out
}

/// Torch-TensorRT's `Dynamic input NAME (shape: torch.Size([u0, 4])) has no max bound for dim
/// 0, attempting to use a sane default (max: min(0) * 2^12)`: (line, `NAME.shape[0]`, `u0`, the
/// lower bound it states or 0).
fn missing_bounds(lines: &[Line]) -> Vec<(usize, String, String, i128)> {
    const KEY: &str = " has no max bound for dim ";
    let mut out = Vec::new();
    for l in lines {
        let t = &l.text;
        let Some(i) = t.phrase(KEY) else { continue };
        let head = &t[..i];
        let Some(k) = head.phrase("Dynamic input ") else {
            continue;
        };
        let head = &head[k + "Dynamic input ".len()..];
        let (name, shape) = head.split_once(" (shape: ").unwrap_or((head, ""));
        let dim: Option<usize> = t[i + KEY.len()..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|d| d.parse().ok());
        let Some(dim) = dim else { continue };
        let symbol = shape
            .strip_prefix("torch.Size([")
            .and_then(|r| r.split(']').next())
            .and_then(|r| r.split(',').nth(dim))
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|| format!("{name}.shape[{dim}]"));
        // `(max: min(0) * 2^12)`: the lower bound torch holds.
        let lo = t
            .phrase("min(")
            .and_then(|j| t[j + 4..].split(')').next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        out.push((l.no, format!("{}.shape[{dim}]", name.trim()), symbol, lo));
    }
    out
}

struct Budget {
    left: usize,
    spent: bool,
}

impl Budget {
    /// Charges a parse of `n` bytes; false (and spent) when the budget is gone.
    fn take(&mut self, n: usize) -> bool {
        if self.left < n {
            self.spent = true;
            return false;
        }
        self.left -= n;
        true
    }
}

/// What the words around an expression say it is.
fn kind(line: &str) -> &'static str {
    let l = line.to_ascii_lowercase();
    if l.has("data-dependent") || l.has("data dependent") || l.has("unbacked") {
        "data-dependent expression"
    } else if l.has("recompil") || l.has("guard failure") {
        "recompile guard"
    } else if l.has("assert") {
        "run-time assert"
    } else if l.has("ignored guard") {
        "ignored guard"
    } else if l.has("guard") {
        "guard"
    } else if l.has("eval") {
        "evaluated expression"
    } else {
        "size condition"
    }
}

/// The conditions over size atoms in one line, left to right, none overlapping.
fn expressions(line: &str, budget: &mut Budget) -> Vec<(String, Expr)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some((a, a_end)) = next_atom(line, from) {
        let mut best: Option<(usize, usize, Expr)> = None;
        // Word starts to the left of the atom, farthest first (the longest expression wins),
        // but not before the end of the previous expression.
        let starts = word_starts(line, from, a);
        for &s in &starts {
            let end_cap = (a + WINDOW).min(line.len());
            let end_cap = floor_char(line, end_cap);
            if let Some((e, expr)) = parse_at(line, s, end_cap, budget) {
                if e > a {
                    best = Some((s, e, expr));
                    break;
                }
            }
            if budget.spent {
                return out;
            }
        }
        match best {
            Some((s, e, expr)) => {
                out.push((line[s..e].trim().to_string(), expr));
                from = e;
            }
            None => from = a_end,
        }
    }
    out
}

/// The longest condition over size atoms starting at `s` and ending at or before `cap`: the
/// whole text, else the text up to where parsing stopped, else up to the word ends before it.
fn parse_at(line: &str, s: usize, cap: usize, budget: &mut Budget) -> Option<(usize, Expr)> {
    let mut end = cap;
    let mut tries = 0;
    while end > s && tries < ENDS {
        let t = line[s..end].trim_end();
        let t = t.trim_end_matches(['.', ',', ';', ':', '!', '?', '"', '\'']);
        if t.is_empty() {
            return None;
        }
        if !budget.take(t.len()) {
            return None;
        }
        tries += 1;
        match parse_expr(t) {
            Ok(e) if accept(&e) => return Some((s + t.len(), e)),
            Ok(_) => {
                // Parsed, but not a condition over sizes: a shorter text will not be either
                // unless it ends before a word.
                end = last_space(line, s, s + t.len())?;
            }
            Err(err) => {
                let stop = floor_char(line, (s + err.offset).min(s + t.len()));
                end = if stop < s + t.len() && stop > s {
                    stop
                } else {
                    last_space(line, s, s + t.len())?
                };
            }
        }
    }
    None
}

/// The last space in `line[s..end]`, as an end.
fn last_space(line: &str, s: usize, end: usize) -> Option<usize> {
    line[s..end].rfind(' ').map(|i| s + i).filter(|&i| i > s)
}

fn floor_char(line: &str, mut i: usize) -> usize {
    while i > 0 && !line.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A condition whose every atom is a size, with at least one.
fn accept(e: &Expr) -> bool {
    let atoms = e.atoms();
    e.is_bool() && !atoms.is_empty() && atoms.iter().all(|a| is_size(a.as_ref()))
}

/// Word starts in `line[from..=a]`: `a` itself, and every place after a space, `(`, `"`, `'`,
/// `:` or `=` before it.
fn word_starts(line: &str, from: usize, a: usize) -> Vec<usize> {
    let b = line.as_bytes();
    let mut v: Vec<usize> = (from..a)
        .filter(|&i| {
            b[i] != b' '
                && line.is_char_boundary(i)
                && (i == 0 || matches!(b[i - 1], b' ' | b'(' | b'"' | b'\'' | b':' | b'=' | b'`'))
        })
        .collect();
    // Only the last `STARTS` matter; keep the vector short on long prose.
    if v.len() > STARTS {
        v.drain(..v.len() - STARTS);
    }
    v.push(a);
    v
}

/// The next size atom at or after `from`: (its start, its end).
fn next_atom(line: &str, from: usize) -> Option<(usize, usize)> {
    let b = line.as_bytes();
    let mut i = from;
    while i < b.len() {
        let prev_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if prev_ok {
            // `s12` / `u0`
            if matches!(b[i], b's' | b'u') {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_digit() {
                    j += 1;
                }
                if j > i + 1 && (j == b.len() || !(b[j].is_ascii_alphanumeric() || b[j] == b'_')) {
                    return Some((i, j));
                }
            }
            // `L['x'].size()[2]`, `x.shape[2]`, `x.size(2)`, `x.size()[2]`
            if b[i].is_ascii_alphabetic() || b[i] == b'_' {
                if let Some(j) = source_end(line, i) {
                    return Some((i, j));
                }
            }
        }
        i += 1;
    }
    None
}

/// Where a size source starting at `i` ends, if one does: a name with `['key']` / `[0]`
/// subscripts and `.attr`s, then `.size()[N]`, `.shape[N]` or `.size(N)`. Looks at most 256
/// bytes ahead.
fn source_end(line: &str, i: usize) -> Option<usize> {
    let rest = &line[i..floor_char(line, (i + 256).min(line.len()))];
    let b = rest.as_bytes();
    let mut j = 0;
    while j < b.len() {
        let c = b[j];
        if c.is_ascii_alphanumeric() || c == b'_' || c == b'.' {
            j += 1;
            continue;
        }
        if c == b'[' {
            let close = rest[j..].find(']')? + j;
            let inner = &rest[j + 1..close];
            let tail = &rest[..j];
            if tail.ends_with(".shape") || tail.ends_with(".size()") {
                if !inner.is_empty() && inner.bytes().all(|d| d.is_ascii_digit()) {
                    return Some(i + close + 1);
                }
                return None;
            }
            let ok = (inner.starts_with('\'') && inner.ends_with('\'') && inner.len() >= 2)
                || (!inner.is_empty() && inner.bytes().all(|d| d.is_ascii_digit()));
            if !ok {
                return None;
            }
            j = close + 1;
            continue;
        }
        if c == b'(' {
            let tail = &rest[..j];
            if tail.ends_with(".size") {
                let close = rest[j..].find(')')? + j;
                let inner = &rest[j + 1..close];
                if inner.is_empty() {
                    j = close + 1;
                    continue;
                }
                if inner.bytes().all(|d| d.is_ascii_digit()) {
                    return Some(i + close + 1);
                }
            }
            return None;
        }
        break;
    }
    None
}

/// `L['x'].size()[2]`, `x.shape[0]`, `x.size(1)`: a size written as its source.
fn is_source(a: &str) -> bool {
    source_end(a, 0) == Some(a.len())
}

fn is_size(a: &str) -> bool {
    is_source(a) || is_size_symbol(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::clean;

    fn exprs(t: &str) -> Vec<String> {
        let mut b = Budget {
            left: usize::MAX,
            spent: false,
        };
        expressions(t, &mut b).into_iter().map(|x| x.0).collect()
    }

    #[test]
    fn expressions_in_prose() {
        assert_eq!(
            exprs("the guard Eq(u0, 0) failed while tracing"),
            ["Eq(u0, 0)"]
        );
        assert_eq!(
            exprs("it says x.size()[0] == y.size()[0] # (unknown source)"),
            ["x.size()[0] == y.size()[0]"]
        );
        assert_eq!(
            exprs("Runtime assertion failed for expression u0 <= 2002 on node 'le_5'"),
            ["u0 <= 2002"]
        );
        assert_eq!(
            exprs("checks L['x'].size()[2] % 8 == 0, and then Ne(s3, 1)."),
            ["L['x'].size()[2] % 8 == 0", "Ne(s3, 1)"]
        );
        // A size alone is not a condition.
        assert!(exprs("the size s0 is 4").is_empty());
        assert!(exprs("u0 + 1").is_empty());
    }

    #[test]
    fn sources() {
        for s in [
            "L['x'].size()[2]",
            "x.shape[0]",
            "x.size(1)",
            "x.size()[0]",
            "L['args'][1]['input_ids'].size()[1]",
        ] {
            assert!(is_source(s), "{s}");
        }
        for s in ["x.size()", "L['x']", "shape[0]x"] {
            assert!(!is_source(s), "{s}");
        }
    }

    #[test]
    fn a_message_of_what_was_found() {
        let m = read(&clean::lines("we hit `Eq(s0*s1, 16)` somewhere\n")).unwrap();
        assert_eq!(m.form, Form::Guards);
        assert_eq!(m.joint.len(), 1);
        assert!(m.notes.iter().any(|n| n.has("--range s0=LO..HI")));
        let m = read(&clean::lines("hit u0 >= 4 here")).unwrap();
        assert_eq!(m.form, Form::DataDependent);
        assert!(read(&clean::lines("nothing here at all")).is_none());
        assert_eq!(
            replace_word("u0 <= u01 + u0", "u0", "x.shape[0]"),
            "x.shape[0] <= u01 + x.shape[0]"
        );
        // The text's own condition on the unbacked size bounds it.
        let m = read(&clean::lines("Dynamic input rows (shape: torch.Size([u0, 4])) has no max bound for dim 0, attempting to use a sane default (max: min(0) * 2^12).\nThe model holds u0 <= 4096.")).unwrap();
        assert_eq!(m.dims.len(), 1, "{m:?}");
        assert_eq!(m.dims[0].guards[0].text, "rows.shape[0] <= 4096");
        assert!(m.data_dependent.is_empty(), "{m:?}");
        let m = read(&clean::lines("Dynamic input rows (shape: torch.Size([u0, 4])) has no max bound for dim 0, attempting to use a sane default (max: min(0) * 2^12).")).unwrap();
        assert_eq!(m.dims[0].source.as_deref(), Some("rows.shape[0]"));
        assert_eq!(m.dims[0].symbol.as_deref(), Some("u0"));
        assert_eq!(m.dims[0].range, Some((0, crate::message::SIZE_MAX)));
    }
}
