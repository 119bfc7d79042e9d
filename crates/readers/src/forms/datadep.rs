//! Data-dependent failures: what torch could not decide about unbacked sizes (`u0`, `u1`).
//!
//! torch 2.15's `ShapesSpec` makes every dynamic input size unbacked, so a branch on a size
//! stops the export with `GuardOnDataDependentSymNode: Could not guard on data-dependent
//! expression ...`. The expression itself is read by `message` (and by the log reader);
//! this module reads what says which input size each `u` symbol stands for, and where the
//! expression comes from:
//!
//! * `(These suggested fixes were derived by replacing `u1` with x.shape[2] in ...)` and the
//!   `torch._check(... x.shape[2] ...)` lines above it: the symbol's input size;
//! * `Size-like symbols: u1`;
//! * `Caused by: (_meta_registrations.py:5162 in pooling_output_shape_pad_lr)`: the torch frame;
//! * `The following call raised this error:` with the user's `File "...", line N, in fn` and
//!   its code;
//! * `The ShapesSpec/ParamsSpec dynamic-shapes API is in use`: the export used a `ShapesSpec`;
//! * `TORCH_LOGS="+dynamic"` lines: `create_unbacked_symint u1 [-int_oo, int_oo]
//!   L['x'].size()[2]` (the source) and the spec's own bounds, `runtime_assert u1 >= 96 [guard
//!   added] (... in _fakify_one_leaf)` (the range; these are not data-dependent guards).
//!
//! What the input does not say comes from `--spec` (a `ShapesSpec` names each input's sizes) or
//! `--range` by symbol, source or name ([`crate::forms::apply_ranges`]).

use crate::forms::clean;
use crate::message::Message;
pub use crate::message::{Info, Unbacked};
use crate::phrase::Phrase;
use dimguard_solver::is_unbacked;
use dimguard_solver::provenance::{Frame, Provenance};
use dimguard_solver::python::input_dim;

impl Info {
    /// The entry for `symbol`, made if missing.
    pub fn symbol_mut(&mut self, symbol: &str) -> &mut Unbacked {
        let i = match self.unbacked.iter().position(|u| u.symbol == symbol) {
            Some(i) => i,
            None => {
                self.unbacked.push(Unbacked {
                    symbol: symbol.to_string(),
                    source: None,
                    name: None,
                    range: None,
                    size_like: false,
                });
                self.unbacked.len() - 1
            }
        };
        &mut self.unbacked[i]
    }

    /// The entry for `symbol`.
    pub fn symbol(&self, symbol: &str) -> Option<&Unbacked> {
        self.unbacked.iter().find(|u| u.symbol == symbol)
    }

    /// The entry a `--range` key names: a symbol, a name, or a source in any spelling
    /// (`x.shape[2]`, `L['x'].size()[2]`).
    pub fn find_mut(&mut self, key: &str) -> Option<&mut Unbacked> {
        let at = input_dim(key);
        self.unbacked.iter_mut().find(|u| {
            u.symbol == key
                || u.name.as_deref() == Some(key)
                || (at.is_some() && u.source.as_deref().and_then(input_dim) == at)
        })
    }
}

impl Unbacked {
    /// The name the size is written with in assumptions and reports: the user's name, else
    /// one made from its source (`x.shape[2]` → `x_2`), else the symbol.
    pub fn label(&self) -> String {
        if let Some(n) = &self.name {
            return n.clone();
        }
        match self.source.as_deref().and_then(input_dim) {
            Some((input, k)) => dimguard_solver::python::py_name(&format!("{input}_{k}")),
            None => self.symbol.clone(),
        }
    }
}

/// Reads what the text says about its unbacked sizes into `msg.datadep`, the provenance of its
/// data-dependent expressions, and drops the spec's own bounds from the data-dependent guards
/// of a log (they are the range, not a failure).
pub(crate) fn read(lines: &[clean::Line], msg: &mut Message) {
    let mut caused: Option<(String, u32, String)> = None;
    let mut user: Option<Frame> = None;
    let mut bounds: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.text.trim();
        if t.has("The ShapesSpec/ParamsSpec dynamic-shapes API is in use") {
            msg.datadep.shapes_spec = true;
        }
        if let Some(rest) = after(t, "Size-like symbols:") {
            for s in rest.trim_end_matches(')').split(',') {
                let s = s.trim();
                if is_unbacked(s) {
                    msg.datadep.symbol_mut(s).size_like = true;
                }
            }
        }
        if let Some(rest) = after(t, "Caused by: (") {
            caused = frame_in_parens(rest.trim_end_matches(')'));
        }
        if t.starts_with("The following call raised this error") {
            // The frame is on the next lines (a few, so that reading stays linear).
            let next = &lines[i + 1..lines.len().min(i + 6)];
            user = next
                .iter()
                .map(|l| l.text.trim())
                .find(|l| !l.is_empty())
                .and_then(file_line)
                .map(|mut f| {
                    f.code = next
                        .iter()
                        .skip_while(|l| !l.text.trim().starts_with("File \""))
                        .nth(1)
                        .map(|l| l.text.trim().to_string())
                        .filter(|c| !c.is_empty() && !c.starts_with("To fix"));
                    f
                });
        }
        if t.has("These suggested fixes were derived by replacing") {
            // The sentence may be wrapped: join it up to its closing parenthesis.
            let mut s = t.to_string();
            for l in lines[i + 1..].iter().take(64) {
                if s.trim_end().ends_with(".)") || l.text.trim().is_empty() {
                    break;
                }
                s.push(' ');
                s.push_str(l.text.trim());
            }
            replaced(&s, msg);
        }
        if let Some(rest) = after(t, "create_unbacked_symint ") {
            // `u1 [-int_oo, int_oo] L['x'].size()[2]` (a `(file:line in fn)` is no source).
            let mut parts = rest.splitn(2, ' ');
            let sym = parts.next().unwrap_or("");
            let tail = parts.next().unwrap_or("");
            if is_unbacked(sym) {
                let src = tail
                    .split_once(']')
                    .map(|(_, s)| s.trim())
                    .filter(|s| !s.is_empty() && !s.starts_with('('));
                let u = msg.datadep.symbol_mut(sym);
                if let Some(src) = src {
                    u.source.get_or_insert_with(|| src.to_string());
                }
            }
        }
        if let Some(rest) = after(t, "runtime_assert ") {
            // The spec's bounds: `u1 >= 96 [guard added] (_export/non_strict_utils.py:498 in
            // _fakify_one_leaf)`.
            if t.has("_fakify_one_leaf") {
                if let Some((g, _)) = rest.split_once(" [guard added]") {
                    spec_bound(g.trim(), msg);
                    bounds.push(g.trim().to_string());
                }
            }
        }
    }
    msg.data_dependent.retain(|g| !bounds.contains(&g.text));
    if lines
        .iter()
        .any(|l| l.text.has("insert one of the following checks"))
    {
        // torch's suggested `torch._check(...)` lines (numbered, so read as bullets): they are
        // the expression over the input's sizes, read above.
        msg.unrecognized
            .retain(|u| !u.trim_start().starts_with("torch._check("));
    }
    let caused_frame = caused.as_ref().map(|(file, line, function)| Frame {
        file: file.clone(),
        line: *line,
        function: function.clone(),
        code: None,
    });
    let provenance = match (&user, &caused_frame) {
        (Some(u), _) => Some(Provenance {
            file: u.file.clone(),
            line: u.line,
            function: u.function.clone(),
            code: u.code.clone(),
            op: caused.as_ref().map(|c| c.2.clone()),
            user: true,
            stack: std::iter::once(u.clone())
                .chain(caused_frame.clone())
                .collect(),
        }),
        (None, Some(c)) => Some(Provenance {
            file: c.file.clone(),
            line: c.line,
            function: c.function.clone(),
            code: None,
            op: Some(c.function.clone()),
            user: !dimguard_solver::provenance::is_library(&c.file),
            stack: vec![c.clone()],
        }),
        (None, None) => None,
    };
    if let Some(p) = provenance {
        // The exception's frames are those of its one expression (the first, in a log that
        // ends with it: the one that stopped the export).
        if let Some(g) = msg
            .data_dependent
            .iter_mut()
            .rev()
            .find(|g| g.provenance.is_none())
        {
            g.provenance = Some(p);
        }
    }
    for g in &msg.data_dependent {
        for a in g.expr.atoms() {
            if is_unbacked(&a) {
                msg.datadep.symbol_mut(&a);
            }
        }
    }
}

/// A structured trace's data-dependent guards recorded while torch wired a `ShapesSpec`'s own
/// bounds (`u1 >= 96` under `_fakify_one_leaf`): they are the sizes' ranges, not failures.
pub(crate) fn trace_bounds(msg: &mut Message) {
    let mut bounds = Vec::new();
    for g in &msg.data_dependent {
        let wired = g.provenance.as_ref().is_some_and(|p| {
            p.stack.iter().any(|f| f.function == "_fakify_one_leaf")
                || p.function == "_fakify_one_leaf"
        });
        if wired {
            bounds.push(g.text.clone());
        }
    }
    for b in &bounds {
        spec_bound(b, msg);
    }
    msg.data_dependent.retain(|g| !bounds.contains(&g.text));
    if !bounds.is_empty() {
        msg.datadep.shapes_spec = true;
        if msg.data_dependent.is_empty() && msg.dims.is_empty() {
            let sizes: Vec<String> = msg
                .datadep
                .unbacked
                .iter()
                .filter_map(|u| u.range.map(|(a, b)| format!("{} in {a}..{b}", u.symbol)))
                .collect();
            msg.notes.push(format!(
                "this trace holds a ShapesSpec's sizes ({}) but no data-dependent failure (torch 2.15 does not record it in TORCH_TRACE): paste the exception text, or the output of the export run with TORCH_LOGS=\"+dynamic\"",
                sizes.join(", ")
            ));
        }
    }
}

/// The text after `key`, when the line holds it.
fn after<'a>(t: &'a str, key: &str) -> Option<&'a str> {
    t.phrase(key).map(|i| &t[i + key.len()..])
}

/// `_meta_registrations.py:5162 in pooling_output_shape_pad_lr`.
fn frame_in_parens(s: &str) -> Option<(String, u32, String)> {
    let (loc, function) = s.split_once(" in ")?;
    let (file, line) = loc.rsplit_once(':')?;
    Some((
        file.trim().to_string(),
        line.trim().parse().ok()?,
        function.trim().to_string(),
    ))
}

/// `File "/m/model.py", line 10, in forward`.
fn file_line(t: &str) -> Option<Frame> {
    let rest = t.strip_prefix("File \"")?;
    let (file, rest) = rest.split_once('"')?;
    let rest = rest.trim_start_matches(',').trim();
    let rest = rest.strip_prefix("line ")?;
    let (line, rest) = rest.split_once(',')?;
    let function = rest.trim().strip_prefix("in ")?.trim();
    Some(Frame {
        file: file.to_string(),
        line: line.trim().parse().ok()?,
        function: function.to_string(),
        code: None,
    })
}

/// `(These suggested fixes were derived by replacing `u1` with x.shape[2], `u2` with
/// y.shape[0] or z.shape[1] in EXPR and its negation.)`: each symbol's first source.
fn replaced(s: &str, msg: &mut Message) {
    // The cleaned lines have no backticks; a text read directly may still have them.
    let s = s.replace('`', "");
    let Some(rest) = after(&s, "replacing ") else {
        return;
    };
    let mut rest = rest;
    while let Some((sym, tail)) = rest.split_once(" with ") {
        let sym = sym.trim();
        if !is_unbacked(sym) {
            return;
        }
        // The sources run to the next `, u2 with` or to ` in `.
        let next = tail.match_indices(", ").map(|(i, _)| i).find(|&i| {
            let w = &tail[i + 2..];
            let word = w.find(' ').unwrap_or(w.len());
            is_unbacked(&w[..word]) && w[word..].starts_with(" with ")
        });
        let end = [next, tail.phrase(" in ")]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(tail.len());
        let first = tail[..end].split(" or ").next().unwrap_or("").trim();
        if is_unbacked(sym) && input_dim(first).is_some() {
            let u = msg.datadep.symbol_mut(sym);
            if u.source.is_none() {
                u.source = Some(first.to_string());
            }
        }
        rest = tail[end..].trim_start_matches(", ");
    }
}

/// A bound of the spec: `u1 >= 96`, `u1 <= 1024`.
fn spec_bound(g: &str, msg: &mut Message) {
    let mut parts = g.split_whitespace();
    let (Some(sym), Some(op), Some(v), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return;
    };
    let Ok(v) = v.parse::<i128>() else { return };
    if !is_unbacked(sym) {
        return;
    }
    let u = msg.datadep.symbol_mut(sym);
    let (lo, hi) = u.range.unwrap_or((0, crate::message::SIZE_MAX));
    u.range = match op {
        ">=" => Some((v, hi)),
        "<=" => Some((lo, v)),
        ">" => Some((v + 1, hi)),
        "<" => Some((lo, v - 1)),
        _ => u.range,
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_in_every_spelling() {
        for s in [
            "x.shape[2]",
            "x.size()[2]",
            "x.size(2)",
            "L['x'].size()[2]",
            "L['kwargs']['x'].size()[2]",
        ] {
            assert_eq!(input_dim(s), Some(("x".into(), 2)), "{s}");
        }
        assert_eq!(input_dim("u1"), None);
        assert_eq!(input_dim("f(x).shape[1]"), None);
    }

    #[test]
    fn replaced_symbols() {
        let mut m = Message::empty(dimguard_solver::report::Form::DataDependent);
        replaced("(These suggested fixes were derived by replacing `u1` with x.shape[2] or y.shape[2], `u2` with x.shape[3] in Eq(u1, u2) and its negation.)", &mut m);
        assert_eq!(
            m.datadep.symbol("u1").unwrap().source.as_deref(),
            Some("x.shape[2]")
        );
        assert_eq!(
            m.datadep.symbol("u2").unwrap().source.as_deref(),
            Some("x.shape[3]")
        );
    }

    #[test]
    fn frames() {
        let f = file_line("File \"/tmp/m.py\", line 10, in forward").unwrap();
        assert_eq!(
            (f.file.as_str(), f.line, f.function.as_str()),
            ("/tmp/m.py", 10, "forward")
        );
        assert_eq!(
            frame_in_parens("_meta_registrations.py:5162 in pooling_output_shape_pad_lr"),
            Some((
                "_meta_registrations.py".into(),
                5162,
                "pooling_output_shape_pad_lr".into()
            ))
        );
    }
}
