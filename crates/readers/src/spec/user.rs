//! The user's own spec pasted beside the error, as issues hold it:
//!
//! ```python
//! batch = Dim("batch", min=1, max=32)
//! ep = torch.export.export(model, (x, y), dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
//! ```
//!
//! or torch 2.15's `h = ShapeVar('h', min=64, max=512)` with `TensorSpec([batch, 3, h, w])`.
//! Those lines are read by the one spec reader ([`crate::spec::read`]); a size the text reads
//! without a range of its own then takes the user's range, and the user's name where the text
//! gave it none (a name made from its source, `x_0`). torch's own "Suggested fixes" block is not
//! the user's spec and is left out.

use super::model::Value;
use super::read::read;
use crate::forms::clean::{self, Line};
use crate::message::{Message, DEFAULT_MIN, SIZE_MAX};
use crate::phrase::Phrase;

/// Binds the sizes of `msg` (read from `text` by [`crate::forms::read`]) to the user's spec
/// lines in `text`, when there are any (see the module docs). It lives in the spec wing, above
/// the readers, because it reads those lines with the one spec reader ([`crate::spec::read`]).
pub fn bind_user_spec(text: &str, msg: &mut Message) {
    // A spec binds only through its `dynamic_shapes=` dict (see `spec_lines`): a text without
    // one is not cleaned a second time.
    if !text.has("dynamic_shapes") {
        return;
    }
    bind(&clean::lines(text), msg);
}

/// [`bind_user_spec`] over cleaned lines.
fn bind(lines: &[Line], msg: &mut Message) {
    let Some((first, code)) = spec_lines(lines) else {
        return;
    };
    let Ok(sheet) = read(&code) else {
        return;
    };
    for e in &sheet.entries {
        let (lo, hi, root) = match &e.value {
            Value::Dim {
                root,
                coef: 1,
                offset: 0,
                ..
            } => {
                let Some(r) = sheet.roots.iter().find(|r| r.name == *root) else {
                    continue;
                };
                (r.min, r.max, Some(r.name.clone()))
            }
            Value::Auto { min, max } => (*min, *max, None),
            _ => continue,
        };
        let at = (e.input.clone(), e.index);
        let taken: Vec<String> = msg.dims.iter().map(|d| d.name.clone()).collect();
        let Some(d) = msg.dims.iter_mut().find(|d| {
            d.source
                .as_deref()
                .and_then(dimguard_solver::python::input_dim)
                == Some(at.clone())
        }) else {
            continue;
        };
        if d.range.is_some() {
            continue;
        }
        let range = (lo.unwrap_or(DEFAULT_MIN), hi.unwrap_or(SIZE_MAX));
        d.range = Some(range);
        let source = d.source.clone().unwrap_or_default();
        let old = d.name.clone();
        let made = old == crate::forms::logs::size_name(&source) || old == source;
        let renamed = match root {
            Some(r) if made && !taken.contains(&r) => {
                d.name = r.clone();
                Some(r)
            }
            _ => None,
        };
        if let Some(new) = &renamed {
            crate::forms::rename(msg, &old, new);
        }
        msg.notes.push(format!(
            "line {first}: {} = {source} is in your spec ({}[{}]): its range {}..{} is yours{}",
            renamed.as_deref().unwrap_or(&old),
            e.input,
            e.index,
            range.0,
            range.1,
            if renamed.is_some() {
                ", and its name"
            } else {
                ""
            }
        ));
    }
}

/// The spec lines of the text (definitions of `Dim`s and `ShapeVar`s, the `dynamic_shapes`
/// argument cut out of its call), with the first one's line number; `None` when it has none.
fn spec_lines(lines: &[Line]) -> Option<(usize, String)> {
    let mut out: Vec<String> = Vec::new();
    let mut first = None;
    let mut fixes = false;
    for l in lines {
        let t = l.text.trim();
        // torch's suggested fixes: the indented block after their heading.
        if t.starts_with("Suggested fixes") {
            fixes = true;
            continue;
        }
        if fixes && (l.text.starts_with([' ', '\t']) || t.is_empty()) {
            continue;
        }
        fixes = false;
        let code = if let Some(i) = t.phrase("dynamic_shapes") {
            dict_argument(&t[i..])
        } else {
            definition(t)
        };
        if let Some(c) = code {
            first.get_or_insert(l.no);
            out.push(c);
        }
    }
    let first = first?;
    // A dict without a definition binds nothing; definitions without a dict bind nothing.
    let text = out.join("\n");
    (text.has("dynamic_shapes") && out.len() > 1).then_some((first, text))
}

/// `batch = Dim("batch", min=1, max=32)`, `h = ShapeVar('h', min=64)`, `torch.export.Dim`.
fn definition(t: &str) -> Option<String> {
    let (name, rhs) = t.split_once('=')?;
    let name = name.trim();
    let rhs = rhs.trim();
    let rhs = rhs
        .strip_prefix("torch.export.")
        .or_else(|| rhs.strip_prefix("export."))
        .unwrap_or(rhs);
    let ok = !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && ["Dim(", "Dim.", "ShapeVar(", "IntVar("]
            .iter()
            .any(|k| rhs.starts_with(k));
    ok.then(|| format!("{name} = {rhs}"))
}

/// `dynamic_shapes={"x": {0: batch}})` → `dynamic_shapes = {"x": {0: batch}}` (the balanced
/// value after the `=`).
fn dict_argument(t: &str) -> Option<String> {
    let rest = t.strip_prefix("dynamic_shapes")?.trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let mut depth = 0i64;
    for (i, c) in rest.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(format!("dynamic_shapes = {}", &rest[..=i]));
                }
                if depth < 0 {
                    return None;
                }
            }
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::clean;

    #[test]
    fn the_dict_is_cut_out_of_its_call() {
        assert_eq!(
            dict_argument("dynamic_shapes={\"x\": {0: batch}}, strict=False)").as_deref(),
            Some("dynamic_shapes = {\"x\": {0: batch}}")
        );
        assert_eq!(dict_argument("dynamic_shapes = {\"x\": {0: b"), None);
        assert_eq!(
            definition("batch = torch.export.Dim(\"batch\", min=1, max=32)").as_deref(),
            Some("batch = Dim(\"batch\", min=1, max=32)")
        );
        assert_eq!(definition("y = model(x)"), None);
    }

    #[test]
    fn torchs_suggested_fixes_are_not_the_users_spec() {
        let text = "Suggested fixes:\n  batch = Dim('batch', max=8)\n  dynamic_shapes = {'x': {0: batch}}\n";
        assert_eq!(spec_lines(&clean::lines(text)), None);
        let text = "batch = Dim('batch', min=1, max=32)\nep = export(m, (x,), dynamic_shapes={'x': {0: batch}})\n";
        assert_eq!(
            spec_lines(&clean::lines(text)),
            Some((
                1,
                "batch = Dim('batch', min=1, max=32)\ndynamic_shapes = {'x': {0: batch}}".into()
            ))
        );
    }
}
