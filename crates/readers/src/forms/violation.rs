//! Reading a pasted PyTorch dynamic-shape error (a `ConstraintViolationError` / `UserError`).
//!
//! Input is whatever a user pastes: a whole traceback, a log with prefixes, a message whose lines
//! a terminal wrapped, with or without final periods. [`read`] finds the bullet items of a
//! `ConstraintViolationError` / `UserError` in either printing era and extracts, per dimension,
//! its name, source, requested range, guards and specializations, plus relations between
//! dimensions and torch's own "Suggested fixes" block.
//!
//! Recognized sentences (PyTorch prints each as a `  - ` bullet):
//!
//! * `Not all values of NAME = SOURCE in the specified range LO <= NAME <= HI satisfy the
//!   generated guard GUARD.` (either bound may be missing: a missing lower bound means 2, a
//!   missing upper bound means unbounded)
//! * `Not all values of ... are valid because NAME was inferred to be a constant (V).`
//! * `Not all values of ... are valid because NAME was inferred to be equal to EXPR.`
//! * `You marked NAME as dynamic but your code specialized it to be a constant (V).`
//! * `The values of A = SRC and B = SRC must always be equal.`
//! * `The values of A = SRC must always be related to the values of B = SRC by A = EXPR.`
//! * `solving the guards generated for NAME resulted in a specialized value of V.` and
//!   `NAME must be specialized to V because the guards generated for it are too complex.`
//!   (under "Specializations unexpectedly required")

use super::fixes::read_fix;
use crate::forms::clean;
use crate::message::{DimEntry, Guard, Message, Relation, DEFAULT_MIN, SIZE_MAX};
use crate::phrase::Phrase;
use dimguard_solver::report::Form;
use dimguard_solver::syntax::parse_guard;
use dimguard_solver::Expr;
use dimguard_solver::{Error, ParseError};

/// Reads a message. Errors when the text contains nothing dimguard recognizes, or when a guard
/// cannot be parsed (with the position inside the guard).
pub fn read(text: &str) -> Result<Message, Error> {
    read_lines(&clean::lines(text))
}
/// [`read`] over lines already cleaned by [`clean::lines`].
pub fn read_lines(cleaned: &[clean::Line]) -> Result<Message, Error> {
    let lines = clean_lines(cleaned);
    let mut msg = Message::empty(Form::ConstraintViolation);
    read_data_dependent(&lines, &mut msg)?;
    let (items, fix_lines) = items(&lines);
    let mut index = Index::default();
    for item in &items {
        read_item(item, &mut msg, &mut index)?;
    }
    msg.dedup_guards();
    for line in fix_lines {
        if let Some(f) = read_fix(&line) {
            msg.fixes.push(f);
        }
    }
    if msg.dims.is_empty() && msg.data_dependent.is_empty() && msg.notes.is_empty() {
        return Err(Error::Message(
            "no dynamic-shape constraint found: expected lines such as \"Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 64 satisfy the generated guard ...\" \
             (paste the whole ConstraintViolationError / UserError text from torch.export)"
                .into(),
        ));
    }
    Ok(msg)
}
/// torch's conflicts between a spec and tracing (`ValueError: Found the following conflicts
/// between user-specified ranges and inferred ranges from model tracing:`): `- Received
/// user-specified dim hint Dim.DYNAMIC(min=None, max=None), but tracing inferred a static shape
/// of 30 for dimension inputs['x'].shape[1].` is that size specialized to 30, over the hint's
/// range widened to hold 30 (the text states the answer; no default range may exclude it).
pub fn static_hints(lines: &[clean::Line]) -> Option<Message> {
    const KEY: &str = "but tracing inferred a static shape of ";
    let mut msg = Message::empty(Form::ConstraintViolation);
    for l in lines {
        let t = &l.text;
        let Some(i) = t.phrase(KEY) else { continue };
        let rest = &t[i + KEY.len()..];
        let Some((v, src)) = rest.split_once(" for dimension ") else {
            continue;
        };
        let Ok(v) = v.trim().parse::<i128>() else {
            continue;
        };
        let src = src.trim().trim_end_matches('.').trim().to_string();
        let bound = |k: &str| -> Option<i128> {
            let j = t[..i].phrase(k)?;
            t[j + k.len()..]
                .split([',', ')'])
                .next()?
                .trim()
                .parse()
                .ok()
        };
        let lo = bound("min=").unwrap_or(DEFAULT_MIN).min(v).max(0);
        let hi = bound("max=").unwrap_or(SIZE_MAX).max(v);
        let name = super::logs::size_name(&src);
        let d = msg.dim_mut(&name, Some(src.clone()));
        d.specialized = Some(v);
        d.range = Some((lo, hi));
        msg.notes.push(format!(
            "line {}: tracing made {src} static at {v} although the spec asked for it to be dynamic: the program accepts {v} only there. Use {v} (or Dim.STATIC) for it, or change the model code that fixes it (a branch on the size, a constant it is compared with)",
            l.no
        ));
    }
    (!msg.dims.is_empty()).then_some(msg)
}

/// `Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).  (Size-like
/// symbols: u0)`: the expression, once per distinct text.
fn read_data_dependent(lines: &[String], msg: &mut Message) -> Result<(), Error> {
    // `Could not extract specialized integer from data-dependent expression u1`: torch needed
    // the value itself (an integer expression, read as one).
    const KEYS: [&str; 2] = [
        "Could not guard on data-dependent expression ",
        "Could not extract specialized integer from data-dependent expression ",
    ];
    let mut seen: std::collections::HashSet<String> =
        msg.data_dependent.iter().map(|g| g.text.clone()).collect();
    for (no, line) in lines.iter().enumerate() {
        let Some((i, key)) = KEYS
            .iter()
            .filter_map(|k| line.phrase(k).map(|i| (i, *k)))
            .min()
        else {
            continue;
        };
        let rest = &line[i + key.len()..];
        let end = rest.phrase(" (unhinted").unwrap_or(rest.len());
        let text = rest[..end].trim().trim_end_matches('.').trim();
        if text.is_empty() || seen.contains(text) {
            continue;
        }
        // Inside a sentence (`... expression Eq(u0, 0) while tracing`): the longest leading run
        // of words that parses.
        // The whole text first; then the prefixes ending at a word boundary at or before where
        // the whole text stopped parsing, longest first, at most `TRIES` of them (linear time).
        const TRIES: usize = 32;
        let whole = parse_guard(text.trim_end_matches(['.', ',', ';']));
        let parsed = match whole {
            Ok(e) => Some((text.to_string(), e)),
            Err(ref first) => {
                let stop = first.offset.min(text.len());
                text.char_indices()
                    .filter(|&(i, c)| c == ' ' && i <= stop)
                    .map(|(i, _)| i)
                    .collect::<Vec<_>>()
                    .into_iter()
                    .rev()
                    .take(TRIES)
                    .find_map(|end| {
                        let t = &text[..end];
                        parse_guard(t.trim_end_matches(['.', ',', ';']))
                            .ok()
                            .map(|e| (t.to_string(), e))
                    })
            }
        };
        let (text, expr) = match parsed {
            Some((t, e)) => (t.trim_end_matches(['.', ',', ';']).to_string(), e),
            None => {
                return Err(Error::Guard {
                    dim: "data-dependent".into(),
                    line: no + 1,
                    error: Box::new(parse_guard(text).expect_err("no prefix parses")),
                })
            }
        };
        if !seen.insert(text.clone()) {
            continue;
        }
        msg.data_dependent.push(Guard {
            text,
            expr,
            provenance: None,
        });
        // `(unhinted: E)`: the same expression with the backed sizes as symbols (`s0` where the
        // hinted form has 22). When it differs, it is the one that holds at every size: read it
        // too.
        if let Some(u) = unhinted(rest) {
            if seen.insert(u.to_string()) {
                if let Ok(expr) = parse_guard(u) {
                    msg.data_dependent.push(Guard {
                        text: u.to_string(),
                        expr,
                        provenance: None,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The expression of `... (unhinted: E).` with its brackets balanced.
fn unhinted(rest: &str) -> Option<&str> {
    const KEY: &str = "(unhinted: ";
    let i = rest.phrase(KEY)? + KEY.len();
    let mut depth = 0i64;
    for (j, c) in rest[i..].char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' if depth == 0 => return Some(rest[i..i + j].trim()),
            ')' | ']' => depth -= 1,
            _ => {}
        }
    }
    None
}
/// Splits lines where PyTorch glued a new sentence to the end of a guard (`... != 1.Specializations
/// unexpectedly required (h)!`). Prefixes and quote markers are already gone ([`clean::lines`]).
fn clean_lines(lines: &[clean::Line]) -> Vec<String> {
    let mut out = Vec::with_capacity(lines.len());
    for line in lines {
        let mut rest = line.text.as_str();
        while let Some(i) = glued_sentence(rest) {
            out.push(rest[..i].to_string());
            rest = &rest[i..];
        }
        out.push(rest.to_string());
    }
    out
}
/// Where a header sentence starts in the middle of a line: right after a period, or (torch 2.15's
/// "Specializations unexpectedly required") right after the guard it was glued to.
fn glued_sentence(line: &str) -> Option<usize> {
    [
        "Specializations unexpectedly required",
        "Constraints violated (",
        "Suggested fixes:",
    ]
    .iter()
    .filter_map(|s| {
        let i = line.phrase(s)?;
        let before = line[..i].trim_end();
        // torch 2.15 glues "Specializations unexpectedly required" straight onto the last guard
        // (`... <= 255Specializations unexpectedly required (batch)!`), with no period.
        let glued = s.starts_with("Specializations") && !before.ends_with(['(', '`', '"']);
        (i > 0 && !before.is_empty() && (glued || before.ends_with(['.', '!']))).then_some(i)
    })
    .min()
}
/// An item: the 1-based line it starts on, and its lines (the first without the bullet).
type Item = (usize, Vec<String>);
const FOOTERS: [&str; 6] = [
    "The error above occurred",
    "Traceback (most recent call last)",
    "For more information about this error",
    "from user code:",
    "Set TORCH_LOGS",
    "torch._dynamo.exc.",
];
/// Splits the text into bullet items and the lines of the "Suggested fixes" block.
fn items(lines: &[String]) -> (Vec<Item>, Vec<String>) {
    let mut items: Vec<Item> = Vec::new();
    let mut fixes = Vec::new();
    let mut open = false;
    let mut in_fixes = false;
    for (no, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.is_empty() {
            open = false;
            in_fixes = false;
            continue;
        }
        if t.starts_with("Suggested fixes") {
            in_fixes = true;
            open = false;
            continue;
        }
        if FOOTERS.iter().any(|f| t.starts_with(f))
            || t.starts_with("File \"")
            || is_exception_line(t)
        {
            open = false;
            in_fixes = false;
            continue;
        }
        if in_fixes {
            if line.starts_with(' ') || line.starts_with('\t') || t.has(" = ") {
                fixes.push(t.to_string());
                continue;
            }
            in_fixes = false;
        }
        let bullet = t
            .strip_prefix("- ")
            .or_else(|| strip_numbered(t))
            .or_else(|| starts_sentence(t).then_some(t));
        match bullet {
            Some(body) => {
                // "Constraints violated (h)! ... - Not all values ..." on one line.
                items.push((no + 1, vec![body.to_string()]));
                open = true;
            }
            None if open => items.last_mut().expect("open item").1.push(t.to_string()),
            None => {
                // A header such as "Constraints violated (...)!" may carry a sentence after it.
                if let Some(i) = find_sentence(t) {
                    items.push((no + 1, vec![t[i..].to_string()]));
                    open = true;
                }
            }
        }
    }
    (items, fixes)
}
/// `torch.fx...GuardOnDataDependentSymNode: ...`, `RuntimeError: ...`: a new exception, which
/// ends the bullet before it.
fn is_exception_line(t: &str) -> bool {
    let Some((head, _)) = t.split_once(": ") else {
        return false;
    };
    !head.contains(' ')
        && ["Error", "Exception", "SymNode", "Warning"]
            .iter()
            .any(|s| head.ends_with(s))
        && !t.has("Constraints violated")
}
/// `1. text` (warning-only violations are numbered).
fn strip_numbered(t: &str) -> Option<&str> {
    let d = t.find(|c: char| !c.is_ascii_digit())?;
    if d == 0 {
        return None;
    }
    t[d..].strip_prefix(". ")
}
const SENTENCES: [&str; 6] = [
    "Not all values of ",
    "You marked ",
    "The values of ",
    "solving the guards generated for ",
    "Specializations unexpectedly required",
    "Constraints violated",
];
fn starts_sentence(t: &str) -> bool {
    // A sentence wrapped right after its first words (`Not all values of` alone on its line).
    SENTENCES
        .iter()
        .any(|s| t.starts_with(s) || t == s.trim_end())
        || t.has(" must be specialized to ")
}
fn find_sentence(t: &str) -> Option<usize> {
    SENTENCES[..4].iter().filter_map(|s| t.phrase(s)).min()
}
/// Joins an item's lines: with spaces (wrapped at word boundaries) or, when that does not
/// parse, without (wrapped inside a token).
fn joined(item: &Item, sep: &str) -> String {
    item.1.join(sep)
}
/// Where each dimension read so far is in `Message::dims`, by name: reading is linear in the
/// number of items, however many dimensions the text names.
type Index = std::collections::HashMap<String, usize>;
fn read_item(item: &Item, msg: &mut Message, index: &mut Index) -> Result<(), Error> {
    let text = joined(item, " ");
    if text.starts_with("Constraints violated")
        || text.starts_with("Specializations unexpectedly required")
    {
        // A header whose sentence follows it, wrapped over indented lines (`Constraints violated
        // (a)! The values of` / `a = L['a'].size()[1] and` / `b = ... must always be equal.`).
        return match find_sentence(&text) {
            Some(i) => read_item(&(item.0, vec![text[i..].to_string()]), msg, index),
            None => Ok(()),
        };
    }
    if let Some(rest) = text.strip_prefix("Not all values of ") {
        return read_not_all_values(item, rest, msg, index);
    }
    if let Some(g) = text
        .strip_prefix("... satisfy the generated guard ")
        .or_else(|| text.strip_prefix("\u{2026} satisfy the generated guard "))
    {
        // A shortened bullet (`- ... satisfy the generated guard G.`): another guard of the
        // dimension of the bullet before it.
        if let Some(d) = msg.dims.last_mut() {
            let g = strip_period(g);
            let expr = parse_guard(g).map_err(|e| Error::Guard {
                dim: d.name.clone(),
                line: item.0,
                error: Box::new(e),
            })?;
            d.guards.push(Guard {
                text: g.to_string(),
                expr,
                provenance: None,
            });
            return Ok(());
        }
    }
    if let Some(rest) = text.strip_prefix("You marked ") {
        // NAME as dynamic but your code specialized it to be a constant (V).
        if let Some((name, tail)) = rest.split_once(" as dynamic") {
            let v = paren_int(tail);
            // torch names a size marked dynamic by its source when no Dim names it
            // (`You marked L['x'].size()[1] as dynamic`, a `Dim.DYNAMIC`).
            let name = name.trim();
            let source = (name.has(".size()[") || name.has(".shape[")).then(|| name.to_string());
            dim_at(msg, index, name, source).specialized = v;
            return Ok(());
        }
    }
    if let Some(rest) = text.strip_prefix("The values of ") {
        let rest = rest.trim_end_matches('.');
        if let Some((a, b)) = rest.split_once(" and ") {
            if let Some(b) = b.strip_suffix(" must always be equal") {
                let (an, asrc) = name_source(a);
                let (bn, bsrc) = name_source(b);
                dim_at(msg, index, &an, asrc);
                dim_at(msg, index, &bn, bsrc);
                msg.equalities.push((an, bn));
                return Ok(());
            }
        }
        if let Some((a, rest)) = rest.split_once(" must always be related to the values of ") {
            if let Some((b, rel)) = rest.split_once(" by ") {
                let (an, asrc) = name_source(a);
                let (bn, bsrc) = name_source(b);
                dim_at(msg, index, &an, asrc);
                dim_at(msg, index, &bn, bsrc);
                let expr = rel
                    .split_once(" = ")
                    .map_or(rel, |(_, e)| e)
                    .trim()
                    .to_string();
                msg.relations.push(Relation {
                    name: an,
                    other: bn,
                    expr,
                });
                return Ok(());
            }
        }
    }
    if let Some(rest) = text.strip_prefix("solving the guards generated for ") {
        if let Some((name, tail)) = rest.split_once(" resulted in a specialized value of ") {
            let v = tail.trim_end_matches('.').trim().parse().ok();
            let (name, source) = name_source(name);
            let d = dim_at(msg, index, &name, source);
            d.specialized = v;
            d.forced = true;
            return Ok(());
        }
    }
    if let Some((name, tail)) = text.split_once(" must be specialized to ") {
        let v = tail
            .split_whitespace()
            .next()
            .and_then(|s| s.trim_end_matches('.').parse().ok());
        dim_at(msg, index, name.trim(), None).specialized = v;
        return Ok(());
    }
    msg.unrecognized.push(text);
    Ok(())
}
fn read_not_all_values(
    item: &Item,
    rest: &str,
    msg: &mut Message,
    index: &mut Index,
) -> Result<(), Error> {
    // RelaxedUnspecConstraint(L['x'].size()[0]) are valid because ...
    let (name, source, range_and_tail) = if let Some(r) =
        rest.strip_prefix("RelaxedUnspecConstraint(")
    {
        let (src, tail) = r.split_once(") ").unwrap_or((r, ""));
        (src.to_string(), Some(src.to_string()), format!(" {tail}"))
    } else {
        let Some((head, tail)) = rest.split_once(" in the specified range") else {
            msg.unrecognized.push(format!("Not all values of {rest}"));
            return Ok(());
        };
        let (n, s) = name_source(head);
        if s.as_deref() == Some("") || n.is_empty() || n.ends_with('=') {
            // `x1 =  in the specified range`: a size without its source (it reached Z3 as an
            // empty name and panicked before).
            let input = format!("Not all values of {} ", head.trim_end());
            let name = n.trim_end_matches('=').trim().to_string();
            return Err(Error::Source {
                dim: name.clone(),
                line: item.0,
                error: Box::new(
                    ParseError::new(
                        format!("no source for `{name}` after `=`"),
                        &input,
                        input.len() - 1,
                        1,
                    )
                    .with_help(
                        "torch prints `NAME = SOURCE` here (`h = L['x'].size()[2]`): paste the message as torch printed it",
                    ),
                ),
            });
        }
        (n, s, tail.to_string())
    };
    if let Some((range_text, guard_text)) =
        range_and_tail.split_once(" satisfy the generated guard ")
    {
        let range = parse_range(range_text, &name).map_err(|e| range_error(&name, item, e))?;
        let guard_text = strip_period(guard_text);
        let expr = match parse_guard(guard_text) {
            Ok(e) => e,
            Err(first) => retry_unwrapped(item).ok_or_else(|| Error::Guard {
                dim: name.clone(),
                line: item.0,
                error: Box::new(first),
            })?,
        };
        let d = dim_at(msg, index, &name, source);
        d.range = d.range.or(Some(range));
        // Repeated guards are removed once reading is done ([`Message::dedup_guards`]).
        d.guards.push(Guard {
            text: guard_text.to_string(),
            expr,
            provenance: None,
        });
        return Ok(());
    }
    if let Some((range_text, why)) = range_and_tail.split_once(" are valid because ") {
        let range = if range_text.trim().is_empty() {
            None
        } else {
            Some(parse_range(range_text, &name).map_err(|e| range_error(&name, item, e))?)
        };
        let cut =
            !why.has(" was inferred to be a constant") && !why.has(" was inferred to be equal to ");
        if cut {
            // `... are valid because L['...`: the text stops before it says why.
            msg.notes.push(format!(
                "the text is cut: `Not all values of {name} ... are valid because {}` stops before it says why (a constant torch inferred, or an expression it equals), so nothing is known of {name}'s accepted sizes from it. Paste the whole line, to the end of the error and its `Suggested fixes:`",
                why.trim()
            ));
            msg.partial = Some(crate::message::Partial {
                holds: "what comes before its cut: a line stops mid-sentence (`... are valid because L['...`), and the lines after it (more guards, the suggested fixes) are not in it".into(),
                instead: "paste the whole error, from `Constraints violated` to the end of its `Suggested fixes:`".into(),
            });
            return Ok(());
        }
        let d = dim_at(msg, index, &name, source);
        d.range = d.range.or(range);
        if let Some(tail) = why
            .split_once(" was inferred to be a constant")
            .map(|x| x.1)
        {
            d.specialized = paren_int(tail);
            // `in the specified range batch <= 10 ... a constant (1)`: the lower bound is not
            // stated, and the default one (2) would exclude the size torch states.
            let lower_stated = !range_text.trim().starts_with(name.as_str());
            if let (Some(v), Some((lo, hi))) = (d.specialized, d.range) {
                if v < lo && !lower_stated {
                    d.range = Some((v.max(0), hi));
                }
            }
        } else if let Some((_, e)) = why.split_once(" was inferred to be equal to ") {
            d.inferred_equal = Some(strip_period(e).to_string());
        }
        return Ok(());
    }
    msg.unrecognized.push(format!("Not all values of {rest}"));
    Ok(())
}
fn range_error(dim: &str, item: &Item, error: ParseError) -> Error {
    Error::Range {
        dim: dim.to_string(),
        line: item.0,
        error: Box::new(error),
    }
}
/// The guard re-read from the item's lines joined without spaces (for a wrap inside a token).
fn retry_unwrapped(item: &Item) -> Option<Expr> {
    if item.1.len() < 2 {
        return None;
    }
    let text = joined(item, "");
    let (_, g) = text.split_once(" satisfy the generated guard ")?;
    parse_guard(strip_period(g)).ok()
}
fn strip_period(s: &str) -> &str {
    let s = s.trim();
    s.strip_suffix('.').unwrap_or(s).trim_end()
}
fn paren_int(s: &str) -> Option<i128> {
    let open = s.find('(')?;
    let close = s[open..].find(')')? + open;
    s[open + 1..close].trim().parse().ok()
}
/// `height = L['x'].size()[2]` → (`height`, `L['x'].size()[2]`).
fn name_source(s: &str) -> (String, Option<String>) {
    match s.split_once(" = ") {
        Some((n, src)) => (n.trim().to_string(), Some(src.trim().to_string())),
        None => (s.trim().to_string(), None),
    }
}
/// ` 135 <= h <= 2160`, ` h <= 2160`, ` 135 <= h` or nothing; `<` is strict (`100 < h < 1000`
/// is 101..999), a bound may be a float literal (`1e3`) and is rounded inward, `oo`/`int_oo` is
/// no bound. Anything else — another name, a bound past int64, an empty range — is an error
/// with a caret, never a silently different range.
fn parse_range(text: &str, name: &str) -> Result<(i128, i128), ParseError> {
    const LEAD: &str = "in the specified range ";
    let input = format!("{LEAD}{}", text.trim());
    let body = &input[LEAD.len()..];
    let err = |msg: String, at: usize, len: usize| {
        ParseError::new(msg, &input, LEAD.len() + at, len).with_help(format!(
            "PyTorch prints ranges as `LO <= {name} <= HI`; either bound may be omitted"
        ))
    };
    // Split into operands and the comparison operators between them, keeping offsets.
    let mut parts: Vec<(usize, &str)> = Vec::new();
    let mut ops: Vec<bool> = Vec::new(); // strict?
    let mut start = 0;
    let mut i = 0;
    let bytes = body.as_bytes();
    while i < bytes.len() {
        match bytes[i] {
            b'<' => {
                parts.push((start, &body[start..i]));
                let strict = bytes.get(i + 1) != Some(&b'=');
                ops.push(strict);
                i += if strict { 1 } else { 2 };
                start = i;
            }
            b'>' | b'=' | b'!' => {
                return Err(err(
                    format!("unexpected `{}` in a range", bytes[i] as char),
                    i,
                    1,
                ))
            }
            _ => i += 1,
        }
    }
    parts.push((start, &body[start..]));
    let trimmed: Vec<(usize, &str)> = parts
        .iter()
        .map(|&(at, p)| (at + (p.len() - p.trim_start().len()), p.trim()))
        .collect();
    if body.trim().is_empty() {
        return Ok((DEFAULT_MIN, SIZE_MAX));
    }
    let Some(pos) = trimmed.iter().position(|(_, p)| *p == name) else {
        let (at, p) = trimmed
            .iter()
            .find(|(_, p)| p.parse::<f64>().is_err())
            .copied()
            .unwrap_or((0, body));
        return Err(err(
            format!("the range does not mention `{name}` (found `{p}`)"),
            at,
            p.len().max(1),
        ));
    };
    if trimmed.len() > 3 || pos > 1 {
        return Err(err("a range has at most two bounds".into(), 0, body.len()));
    }
    let bound = |k: usize, lower: bool| -> Result<i128, ParseError> {
        let (at, t) = trimmed[k];
        let strict = ops[if lower { k } else { k - 1 }];
        if matches!(t, "oo" | "int_oo" | "inf" | "math.inf") && !lower {
            return Ok(SIZE_MAX);
        }
        if matches!(t, "-oo" | "-int_oo" | "-inf" | "-math.inf") && lower {
            return Ok(0);
        }
        let value = match t.parse::<i128>() {
            Ok(v) => Some(dimguard_solver::num::q(v)),
            Err(_) if t.bytes().all(|b| b.is_ascii_digit()) && !t.is_empty() => {
                return Err(err(
                    format!(
                        "the bound `{}…` ({} digits) is past the largest size, {SIZE_MAX}",
                        &t[..12.min(t.len())],
                        t.len()
                    ),
                    at,
                    t.len(),
                ))
            }
            Err(_) => dimguard_solver::num::float_literal(t),
        };
        let Some(v) = value else {
            return Err(err(format!("`{t}` is not a number"), at, t.len().max(1)));
        };
        let b = match (lower, strict) {
            (true, false) => dimguard_solver::num::ceil(&v),
            (true, true) => dimguard_solver::num::floor(&v) + 1,
            (false, false) => dimguard_solver::num::floor(&v),
            (false, true) => dimguard_solver::num::ceil(&v) - 1,
        };
        if b > SIZE_MAX {
            return Err(err(
                format!("the bound {t} is past the largest size, {SIZE_MAX}"),
                at,
                t.len(),
            ));
        }
        Ok(b)
    };
    let lo = if pos == 1 {
        bound(0, true)?
    } else {
        DEFAULT_MIN
    };
    let hi = if pos + 1 < trimmed.len() {
        bound(pos + 1, false)?
    } else {
        SIZE_MAX
    };
    if lo > hi {
        return Err(err(
            format!("the range admits no size ({lo} > {hi})"),
            0,
            body.len(),
        ));
    }
    Ok((lo, hi))
}
/// [`dim_mut`] through `index` (kept up to date).
fn dim_at<'a>(
    msg: &'a mut Message,
    index: &mut Index,
    name: &str,
    source: Option<String>,
) -> &'a mut DimEntry {
    let i = match index.get(name) {
        Some(&i) => i,
        None => {
            msg.dims.push(DimEntry::new(name));
            index.insert(name.to_string(), msg.dims.len() - 1);
            msg.dims.len() - 1
        }
    };
    let d = &mut msg.dims[i];
    if d.source.is_none() {
        d.source = source;
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::FixKind;

    const RAFT: &str = "torch._dynamo.exc.UserError: Constraints violated (_2, _3)! For more information, run with TORCH_LOGS=\"+dynamic\".\n  - Not all values of _2 = L['image1'].size()[2] in the specified range 135 <= _2 <= 2160 satisfy the generated guard Eq(Mod(((L['image1'].size()[2] - 1)//4) - 1, 2), 0).\n";

    #[test]
    fn reads_the_seed_message() {
        let m = read(RAFT).unwrap();
        assert_eq!(m.dims.len(), 1);
        let d = &m.dims[0];
        assert_eq!(d.name, "_2");
        assert_eq!(d.source.as_deref(), Some("L['image1'].size()[2]"));
        assert_eq!(d.range, Some((135, 2160)));
        assert_eq!(d.guards.len(), 1);
    }

    #[test]
    fn wrapped_lines_and_missing_periods() {
        let wrapped = "  - Not all values of h = L['x'].size()[2] in the specified range\n    100 <= h <= 1000 satisfy the generated guard ((((-1) +\n    L['x'].size()[2]) // 2) % 2) != 0\n";
        let m = read(wrapped).unwrap();
        assert_eq!(m.dims[0].range, Some((100, 1000)));
        assert_eq!(
            m.dims[0].guards[0].text,
            "((((-1) + L['x'].size()[2]) // 2) % 2) != 0"
        );
        // Wrapped inside a token.
        let mid = "  - Not all values of h = L['x'].size()[2] in the specified range 100 <= h <= 1000 satisfy the generated guard ((((-1) + L['x'].si\nze()[2]) // 2) % 2) != 0.";
        let m = read(mid).unwrap();
        assert_eq!(m.dims[0].guards.len(), 1);
    }

    #[test]
    fn omitted_bounds() {
        assert_eq!(parse_range(" h <= 64", "h"), Ok((2, 64)));
        assert_eq!(parse_range(" 8 <= h", "h"), Ok((8, SIZE_MAX)));
        assert_eq!(parse_range("", "h"), Ok((2, SIZE_MAX)));
        assert_eq!(parse_range(" 100 < h < 1000", "h"), Ok((101, 999)));
        assert_eq!(parse_range(" 100 <= h <= 1e3", "h"), Ok((100, 1000)));
        assert_eq!(parse_range(" 2.5 <= h <= 7.9", "h"), Ok((3, 7)));
        assert_eq!(parse_range(" 2 <= h <= int_oo", "h"), Ok((2, SIZE_MAX)));
        for (bad, what) in [
            (" 100 <= w <= 1000", "does not mention `h`"),
            (" 5 <= h <= 3", "admits no size"),
            (
                " 100 <= h <= 1000000000000000000000000000000000000000000000",
                "past the largest size",
            ),
            (" 100 <= h <= 1e30", "past the largest size"),
            (" 100 <= h <= ten", "`ten` is not a number"),
            (" 100 >= h", "unexpected `>`"),
        ] {
            let e = parse_range(bad, "h").unwrap_err();
            assert!(e.message.contains(what), "{bad}: {e}");
            assert!(e.to_string().contains('^'), "{e}");
        }
    }

    #[test]
    fn specializations_relations_and_fixes() {
        let text = "Constraints violated (batch, dy)!\n  - You marked batch as dynamic but your code specialized it to be a constant (1). If you're using mark_dynamic ...\n  - The values of dy = L['y'].size()[0] must always be related to the values of dx = L['x'].size()[0] by dy = dx + 1.\n  - The values of a = L['a'].size()[0] and b = L['b'].size()[0] must always be equal.\n  - Not all values of RelaxedUnspecConstraint(L['args'][0][0].size()[0]) are valid because L['args'][0][0].size()[0] was inferred to be a constant (2).\nSpecializations unexpectedly required (T)! For more information\n  - solving the guards generated for L['z'].size()[0] resulted in a specialized value of 10.\n  - dim0_x must be specialized to 3 because the guards generated for it are too complex.\nSuggested fixes:\n  batch = 1\n  _dy = Dim('_dy', min=3, max=100)\n  dy = 4*_dy + 1\n  dim0_x = None  # 3\n  other = dx\n";
        let m = read(text).unwrap();
        let names: Vec<&str> = m.dims.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "batch",
                "dy",
                "dx",
                "a",
                "b",
                "L['args'][0][0].size()[0]",
                "L['z'].size()[0]",
                "dim0_x"
            ]
        );
        assert_eq!(m.dims[0].specialized, Some(1));
        assert_eq!(m.dims[5].specialized, Some(2));
        assert_eq!(m.dims[6].specialized, Some(10));
        assert_eq!(m.dims[7].specialized, Some(3));
        assert_eq!(
            m.relations,
            vec![Relation {
                name: "dy".into(),
                other: "dx".into(),
                expr: "dx + 1".into()
            }]
        );
        assert_eq!(m.equalities, vec![("a".into(), "b".into())]);
        assert_eq!(m.fixes[0].kind, FixKind::Const(1));
        assert_eq!(
            m.fixes[1].kind,
            FixKind::Dim {
                min: Some(3),
                max: Some(100)
            }
        );
        assert_eq!(
            m.fixes[2].kind,
            FixKind::Derived {
                root: "_dy".into(),
                coef: 4,
                offset: 1
            }
        );
        assert_eq!(m.fixes[3].kind, FixKind::Const(3));
        assert_eq!(
            m.fixes[4].kind,
            FixKind::Derived {
                root: "dx".into(),
                coef: 1,
                offset: 0
            }
        );
    }

    #[test]
    fn glued_sentences_are_split() {
        // PyTorch 2.11 prints the specialization header right after a guard's period.
        let text = "  - Not all values of h = L['x'].size()[2] in the specified range 100 <= h <= 1000 satisfy the generated guard (L['x'].size()[2] // 4) != 1.Specializations unexpectedly required (h)! For more information\n  - solving the guards generated for h = L['x'].size()[2] resulted in a specialized value of 224.\n";
        let m = read(text).unwrap();
        assert_eq!(m.dims.len(), 1);
        assert_eq!(m.dims[0].guards[0].text, "(L['x'].size()[2] // 4) != 1");
        assert_eq!(m.dims[0].specialized, Some(224));
        assert!(m.dims[0].forced);
    }

    #[test]
    fn data_dependent_guards() {
        let text = "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(-Min(7312, Max(0, u0)) + Min(7312, Max(0, u0, u0 + u1)), 0) (unhinted: Eq(-Min(7312, Max(0, u0)) + Min(7312, Max(0, u0, u0 + u1)), 0)).  (Size-like symbols: u0, u1)\n";
        let m = read(text).unwrap();
        assert_eq!(m.data_dependent.len(), 1);
        assert_eq!(m.data_dependent[0].expr.atoms().len(), 2);
        assert!(m.dims.is_empty());
    }

    #[test]
    fn prefixes_and_noise() {
        let text = format!(
            "Traceback (most recent call last):\n  File \"x.py\", line 3\nE   {}",
            RAFT.replace('\n', "\nE   ")
        );
        let m = read(&text).unwrap();
        assert_eq!(m.dims[0].range, Some((135, 2160)));
        assert!(read("hello world").is_err());
        assert!(read("").is_err());
    }

    #[test]
    fn bad_guard_is_a_positioned_error() {
        let text = "  - Not all values of h = x.size()[2] in the specified range 2 <= h <= 9 satisfy the generated guard Foo(x.size()[2]) == 1.";
        match read(text) {
            Err(Error::Guard { dim, line, error }) => {
                assert_eq!((dim.as_str(), line), ("h", 1));
                assert!(error.message.has("`Foo`"));
                assert_eq!(error.input, "Foo(x.size()[2]) == 1");
            }
            other => panic!("{other:?}"),
        }
    }
}
