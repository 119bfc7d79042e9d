//! `torch.export.draft_export` reports (`print(ep._report)`): numbered sections
//!
//! ```text
//! 1. Guard Added.
//!     Specifically, this guard was added: Eq(Mod(s21*s5*s89, 2560), 0), where {'s5': "L['t'].size()[0]", ...}.
//!     This occurred at the following stacktrace:
//!         File /work/model.py, lineno 12, in forward
//!             f = a + F.interpolate(b, scale_factor=2.0):
//!     And the following framework stacktrace:
//!         File .../torch/_subclasses/fake_impls.py, lineno 2435, in infer_size
//!     ...
//!     dynamic_shapes = {'x': {2: DimHint(AUTO, min=32, max=512)}}
//! ```
//!
//! The symbol map gives each symbol's source, the stacks give the provenance (user frames, then
//! torch's), and the suggested `dynamic_shapes` gives the ranges.

use super::clean::Line;
use super::clean::RawGuard;
use super::logs::place_guards;
use crate::message::Message;
use crate::phrase::Phrase;
use dimguard_solver::provenance::{attribute, is_library, Frame, Provenance};
use dimguard_solver::report::Form;
use std::collections::BTreeMap;

const KEY: &str = "Specifically, this guard was added: ";
/// A data-dependent error of the report.
const UNABLE: &str = "we were unable to evaluate the value of";

/// Whether the lines hold a draft_export report with guards or data-dependent errors (a report
/// of only `Data dependent error.` entries is one too).
pub fn is_draft(lines: &[Line]) -> bool {
    lines.iter().any(|l| l.text.has(KEY) || l.text.has(UNABLE))
}

/// Reads a draft_export report.
pub fn read(lines: &[Line]) -> Message {
    let mut msg = Message::empty(Form::DraftExport);
    let mut sources: BTreeMap<String, String> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut ranges: Vec<(String, (i128, i128))> = Vec::new();
    let mut guards: Vec<RawGuard> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(expr) = item_guard(&lines[i..], &mut order, &mut sources) else {
            i += 1;
            continue;
        };
        let (provenance, next) = stacks(lines, i + 1);
        guards.push(RawGuard {
            line: lines[i].no,
            text: expr.to_string(),
            provenance,
        });
        i = next;
    }
    for l in lines {
        if let Some(at) = l.text.phrase("dynamic_shapes = {") {
            ranges.extend(hint_ranges(&l.text[at + "dynamic_shapes = ".len()..]));
        }
    }
    for sym in &order {
        let src = sources[sym].clone();
        let range = ranges.iter().find(|(s, _)| *s == src).map(|(_, r)| *r);
        let name = super::logs::size_name(&src);
        let d = msg.dim_mut(&name, Some(src));
        d.symbol = Some(sym.clone());
        d.range = d.range.or(range);
    }
    let source_of = |a: &str| sources.get(a).cloned();
    place_guards(&mut msg, guards, &source_of, &dimguard_solver::is_unbacked);
    if let Some(why) = excerpt(lines) {
        msg.partial = Some(crate::message::Partial {
            holds: format!("an excerpt of a draft_export report ({why}): the items it leaves out hold guards of the export that are not in it"),
            instead: "paste the whole report (`print(ep._report)`), from its `WARNING: N issue(s) found` header to its last item".into(),
        });
    }
    msg
}

/// The guard of the item starting at `lines[0]`: an added guard (the symbols its `where {...}`
/// maps recorded in `order` and `sources`), or a data-dependent expression; `None` when the
/// line starts no item.
fn item_guard<'a>(
    lines: &'a [Line],
    order: &mut Vec<String>,
    sources: &mut BTreeMap<String, String>,
) -> Option<&'a str> {
    let t = lines[0].text.trim();
    if let Some(at) = t.phrase(KEY) {
        let rest = &t[at + KEY.len()..];
        let (expr, map) = match rest.split_once(", where {") {
            Some((e, m)) => (e.trim(), m),
            None => (rest.trim_end_matches('.').trim(), ""),
        };
        for (sym, src) in symbol_map(map) {
            if !order.contains(&sym) {
                order.push(sym.clone());
            }
            sources.entry(sym).or_insert(src);
        }
        return Some(expr);
    }
    // `3. Data dependent error.` / `When exporting, we were unable to evaluate the value of
    // `u2 < 0`.` (the backticks are gone): a data-dependent expression.
    let at = t.phrase(UNABLE)?;
    let expr = t[at + UNABLE.len()..].trim();
    // Wrapped right after the words (`... the value of` / `    u2 < 0.`).
    let expr = match (expr.is_empty(), lines.get(1)) {
        (true, Some(next)) => next.text.trim(),
        _ => expr,
    };
    Some(expr.trim_end_matches('.').trim())
}

/// Why the lines are an excerpt of a draft_export report, when they say so: its items are
/// numbered from 1 without a gap (a second report starts again at 1), and the header says how
/// many there are (`WARNING: 9 issue(s) found during export`).
fn excerpt(lines: &[Line]) -> Option<String> {
    let numbers: Vec<u64> = lines
        .iter()
        .map(|l| l.text.trim())
        .filter(|t| is_section_header(t))
        .filter_map(|t| t.split('.').next()?.parse().ok())
        .collect();
    let mut prev = 0;
    for &n in &numbers {
        if n != 1 && n != prev + 1 {
            return Some(if prev == 0 {
                format!("its first item is number {n}")
            } else {
                format!("item {prev} is followed by item {n}")
            });
        }
        prev = n;
    }
    let stated: Vec<u64> = lines
        .iter()
        .filter_map(|l| {
            let (head, _) = l.text.split_once(" issue(s) found")?;
            head.rsplit(' ').next()?.parse().ok()
        })
        .collect();
    match stated.as_slice() {
        [n] if (numbers.len() as u64) < *n => Some(format!(
            "its header says {n} issues, and it holds {} items",
            numbers.len()
        )),
        _ => None,
    }
}

/// `'s5': "L['t'].size()[0]", 's21': "..."}` → pairs.
fn symbol_map(s: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(a) = rest.find('\'') {
        let after = &rest[a + 1..];
        let Some(b) = after.find('\'') else { break };
        let sym = &after[..b];
        let after = after[b + 1..].trim_start();
        let Some(after) = after.strip_prefix(':') else {
            break;
        };
        let after = after.trim_start();
        let Some(after) = after.strip_prefix('"') else {
            break;
        };
        let Some(c) = after.find('"') else { break };
        out.push((sym.to_string(), after[..c].to_string()));
        rest = &after[c + 1..];
    }
    out
}

/// The user stack and the framework stack after a guard line, up to the next section. Returns
/// the provenance and the index of the first line after the section.
fn stacks(lines: &[Line], from: usize) -> (Option<Provenance>, usize) {
    let mut user: Vec<Frame> = Vec::new();
    let mut framework: Vec<Frame> = Vec::new();
    let mut code: Option<String> = None;
    let mut in_framework = false;
    let mut in_frames = false;
    let mut i = from;
    while i < lines.len() {
        let t = lines[i].text.trim();
        if t.has(KEY) || is_section_header(t) {
            break;
        }
        // Older reports print "This occured at" and end the frame line with a colon.
        if t.starts_with("This occurred at the following stacktrace")
            || t.starts_with("This occured at the following stacktrace")
        {
            in_frames = true;
        } else if t.starts_with("And the following framework stacktrace") {
            in_frames = true;
            in_framework = true;
        } else if t.starts_with("Locals:")
            || t.starts_with("Symbols:")
            || t.starts_with("Because of this")
        {
            in_frames = false;
        } else if in_frames {
            if let Some(f) = draft_frame(t) {
                if in_framework {
                    framework.push(f);
                } else {
                    user.push(f);
                    code = None;
                }
            } else if !t.is_empty() && !in_framework && code.is_none() && !user.is_empty() {
                // The source line under the innermost user frame (torch appends a colon).
                code = Some(t.strip_suffix(':').unwrap_or(t).trim().to_string());
            }
        }
        i += 1;
    }
    // The code belongs to the innermost user frame only.
    // The printed source line belongs to the innermost frame of the user stack.
    if let Some(last) = user.last_mut() {
        if !is_library(&last.file) {
            last.code = code;
        }
    }
    let mut stack = user;
    stack.extend(framework);
    (attribute(&stack, &[]), i)
}

/// `2. Guard Added.`, `3. Data dependent error.`
fn is_section_header(t: &str) -> bool {
    let d = t.chars().take_while(char::is_ascii_digit).count();
    d > 0 && t[d..].starts_with(". ") && t.ends_with('.')
}

/// `File /path/model.py, lineno 12, in forward`
fn draft_frame(t: &str) -> Option<Frame> {
    let rest = t.strip_prefix("File ")?;
    let (file, rest) = rest.split_once(", lineno ")?;
    let (line, function) = rest.split_once(", in ")?;
    Some(Frame {
        file: file.trim().to_string(),
        line: line.trim().parse().ok()?,
        function: function.trim().trim_end_matches(':').to_string(),
        code: None,
    })
}

/// `{'x': {2: DimHint(AUTO, min=32, max=512)}, 'y': {0: Dim('b', min=2, max=8)}}` → the ranges
/// per source `L['x'].size()[2]`.
fn hint_ranges(s: &str) -> Vec<(String, (i128, i128))> {
    let mut out = Vec::new();
    let mut input: Option<String> = None;
    let mut depth = 0;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b'\'' | b'"' if depth == 1 => {
                let q = b[i];
                let end = s[i + 1..].find(q as char).map(|e| i + 1 + e);
                if let Some(e) = end {
                    input = Some(s[i + 1..e].to_string());
                    i = e;
                }
            }
            c if depth == 2
                && c.is_ascii_digit()
                && (i == 0 || !b[i - 1].is_ascii_alphanumeric()) =>
            {
                let n: String = s[i..].chars().take_while(char::is_ascii_digit).collect();
                let after = s[i + n.len()..].trim_start();
                if let (Some(inp), Some(hint)) = (&input, after.strip_prefix(':')) {
                    let close = hint.find(')').map_or(hint.len(), |c| c + 1);
                    let call = &hint[..close];
                    let kw = |k: &str| {
                        call.split(k).nth(1).and_then(|v| {
                            let digits: String =
                                v.chars().take_while(char::is_ascii_digit).collect();
                            digits.parse::<i128>().ok()
                        })
                    };
                    if call.contains('(') {
                        let lo = kw("min=").unwrap_or(crate::message::DEFAULT_MIN);
                        let hi = kw("max=").unwrap_or(crate::message::SIZE_MAX);
                        out.push((format!("L['{inp}'].size()[{n}]"), (lo, hi)));
                    }
                }
                i += n.len();
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::clean;

    #[test]
    fn symbol_maps_and_hints() {
        let m =
            symbol_map("'s5': \"L['args'][0][0]['t'].size()[0]\", 's21': \"L['x'].size()[1]\"}.");
        assert_eq!(m.len(), 2);
        assert_eq!(m[0], ("s5".into(), "L['args'][0][0]['t'].size()[0]".into()));
        let r = hint_ranges("{'x': {2: DimHint(AUTO, min=32, max=512), 3: DimHint(AUTO)}, 'y': {0: Dim('b', max=8)}}");
        assert_eq!(
            r,
            vec![
                ("L['x'].size()[2]".into(), (32, 512)),
                ("L['x'].size()[3]".into(), (2, crate::message::SIZE_MAX)),
                ("L['y'].size()[0]".into(), (2, 8)),
            ]
        );
    }

    #[test]
    fn reads_a_section() {
        let text = "1. Guard Added.
    A guard was added during tracing, which might've resulted in some incorrect
    Specifically, this guard was added: Eq((((s53 - 1)//4)) + 1, 2*(((s53 - 1)//8)) + 2), where {'s53': \"L['x'].size()[2]\"}.
    This occurred at the following stacktrace: 
        File /venv/lib/python3.11/site-packages/torch/nn/modules/module.py, lineno 1787, in _wrapped_call_impl
        File /tmp/forms/t2.py, lineno 12, in forward
            f = a + F.interpolate(b, scale_factor=2.0, mode=\"nearest\"):
        
        Locals:
            a: ['Tensor(shape: torch.Size([1, 8, (((s53 - 1)//4)) + 1, 56]))']

    And the following framework stacktrace: 
        File /venv/lib/python3.11/site-packages/torch/_subclasses/fake_impls.py, lineno 2435, in infer_size
            torch._check(

    ```
    dynamic_shapes = {'x': {2: DimHint(AUTO, min=32, max=512)}}
    ```
";
        let m = read(&clean::lines(text));
        assert_eq!(m.dims.len(), 1);
        let d = &m.dims[0];
        assert_eq!(d.source.as_deref(), Some("L['x'].size()[2]"));
        assert_eq!(d.range, Some((32, 512)));
        let p = d.guards[0].provenance.as_ref().unwrap();
        assert!(p.user);
        assert_eq!(p.line, 12);
        assert_eq!(p.op.as_deref(), Some("infer_size"));
        assert_eq!(
            p.code.as_deref(),
            Some("f = a + F.interpolate(b, scale_factor=2.0, mode=\"nearest\")")
        );
    }
}
