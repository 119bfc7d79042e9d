//! Reading a `dynamic_shapes` spec as users write it, into the set of sizes it admits per
//! dimension.
//!
//! ```python
//! _h = Dim('_h', min=17, max=270)
//! h = 8*_h
//! w = Dim('w', min=135, max=3840)
//! dynamic_shapes = {"image1": {2: h, 3: w}, "image2": {2: h, 3: w}}
//! ```
//!
//! Assignments define names (plain `Dim`, derived `m*_h + r`, an int, `Dim.AUTO`, `Dim.STATIC`);
//! an optional `dynamic_shapes = {...}` dict maps inputs' dimensions (`L['x'].size()[2]`) to
//! names or inline values.

pub mod shapes;

use crate::error::{Error, ParseError};
use crate::forms::fixes::{dim_label, fix_kind, read_fix};
use crate::merge::{Entry, Root, Sheet, Value};
use crate::message::{FixKind, DEFAULT_MIN, SIZE_MAX};
use crate::types::DimSet;
use std::collections::BTreeMap;

/// What a spec says about one name.
#[derive(Debug, Clone, PartialEq)]
pub struct SpecDim {
    /// The name (`h`), or the source when given inline in the dict.
    pub name: String,
    /// The spec's text for it.
    pub code: String,
    /// The sizes it admits; `None` for `Dim.STATIC` (the traced size, unknown here).
    pub admitted: Option<DimSet>,
    /// For a derived dim (`h = 8*_h + 1`, `w = h`): its root, multiplier and offset, and the
    /// root's own range. Two dims derived from one root are tied (`8*_h` and `8*_h + 1` move
    /// together); `admitted` alone does not say so.
    pub derived: Option<Derived>,
}

/// A derived dim's relation to its root: `coef * root + offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    /// The root `Dim`'s name.
    pub root: String,
    /// The multiplier (positive).
    pub coef: i128,
    /// The offset.
    pub offset: i128,
    /// The root's range, `min..=max`.
    pub root_range: (i128, i128),
}

/// A parsed spec.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Spec {
    /// Named dims in order of definition (roots of derived dims excluded).
    pub dims: Vec<SpecDim>,
    /// Size sources from the `dynamic_shapes` dict, mapped to names in `dims`.
    pub sources: BTreeMap<String, String>,
    /// Lines that were not understood.
    pub unrecognized: Vec<String>,
    /// Whether the spec has a `dynamic_shapes` dict: a size with an input's source is then
    /// found by that source only (a dimension the dict leaves out, or gives `None`, is static
    /// in torch, whatever its name).
    pub dict: bool,
}

impl Spec {
    /// The spec entry for a dimension, by name or by source.
    pub fn lookup(&self, name: &str, source: Option<&str>) -> Option<&SpecDim> {
        let at = source.and_then(crate::python::source_input);
        let mapped = source
            .and_then(|s| self.sources.get(s))
            .or_else(|| {
                // The same input's dimension written another way (`L['kwargs']['x']`).
                let at = at.as_ref()?;
                self.sources
                    .iter()
                    .find(|(s, _)| crate::python::source_input(s).as_ref() == Some(at))
                    .map(|(_, n)| n)
            })
            .and_then(|n| self.dims.iter().find(|d| &d.name == n));
        if mapped.is_some() || (self.dict && at.is_some()) {
            return mapped;
        }
        self.dims
            .iter()
            .find(|d| d.name == name || Some(d.name.as_str()) == source)
    }
}

fn admitted(kind: &FixKind, roots: &BTreeMap<String, (i128, i128)>) -> Option<Option<DimSet>> {
    Some(match kind {
        FixKind::Dim { min, max } => {
            Some(DimSet::interval(min.unwrap_or(0), max.unwrap_or(SIZE_MAX)))
        }
        FixKind::Const(v) => Some(DimSet::interval(*v, *v)),
        FixKind::Auto => Some(DimSet::interval(DEFAULT_MIN, SIZE_MAX)),
        FixKind::Static => None,
        FixKind::Derived { root, coef, offset } if *coef > 0 => {
            let (kmin, kmax) = *roots.get(root)?;
            let kmax = kmax.min((SIZE_MAX - offset) / coef);
            Some(DimSet::progression(
                coef * kmin + offset,
                coef * kmax + offset,
                *coef,
                *offset,
            ))
        }
        FixKind::Derived { .. } | FixKind::Other => return None,
    })
}

fn derived(kind: &FixKind, roots: &BTreeMap<String, (i128, i128)>) -> Option<Derived> {
    match kind {
        FixKind::Derived { root, coef, offset } => Some(Derived {
            root: root.clone(),
            coef: *coef,
            offset: *offset,
            root_range: *roots.get(root)?,
        }),
        _ => None,
    }
}

/// Why a spec line defining a dimension cannot be used, if it cannot.
fn definition_error(
    kind: &FixKind,
    roots: &BTreeMap<String, (i128, i128)>,
    code: &str,
) -> Option<String> {
    match kind {
        FixKind::Dim {
            min: Some(lo),
            max: Some(hi),
        } if lo > hi => Some(format!("this Dim admits no size: min={lo} > max={hi}")),
        FixKind::Derived { root, coef, .. } if *coef <= 0 => Some(format!(
            "a derived dim needs a positive multiplier of its root `{root}` (here {coef}); torch.export rejects it"
        )),
        FixKind::Derived { root, .. } if !roots.contains_key(root) => Some(format!(
            "`{root}` is not defined as a Dim (define it first: `{root} = Dim('{root}', min=.., max=..)`)"
        )),
        FixKind::Other if code.contains("Dim") => Some(
            "not a Dim dimguard understands: expected `Dim('h', min=LO, max=HI)`, `M*_h + R`, an int, `Dim.AUTO` or `Dim.STATIC`".into(),
        ),
        _ => None,
    }
}

/// Reads a spec.
///
/// Lines that define nothing (imports, other Python) are kept in `unrecognized`; a line that
/// defines a dimension wrongly — a `Dim` with `min > max`, a derived dim with a multiplier that
/// is not positive or an undefined root, an unclosed bracket — is an [`Error::Spec`] naming the
/// spec line, with a caret and the reason.
pub fn read(text: &str) -> Result<Spec, Error> {
    if shapes::is_shapes_spec(text) {
        let s = shapes::ShapesSpec::read(text)?;
        let mut spec = read(&s.to_dims())?;
        s.restrict(&mut spec);
        return Ok(spec);
    }
    let mut spec = Spec::default();
    let mut roots: BTreeMap<String, (i128, i128)> = BTreeMap::new();
    let mut defs: Vec<(usize, String, String, FixKind)> = Vec::new();
    let joined = join_brackets(text)?;
    let mut dict: Option<String> = None;
    for (no, raw) in &joined {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with("from ") || line.starts_with("import ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("dynamic_shapes") {
            dict = Some(rest.trim_start().trim_start_matches('=').trim().to_string());
            continue;
        }
        match read_fix(line) {
            Some(f) => {
                // A root: a Dim, or an int (`w = 7; h = 4*w - 6` is Python too: `h` is 22).
                match f.kind {
                    FixKind::Dim { min, max } => {
                        roots.insert(f.name.clone(), (min.unwrap_or(0), max.unwrap_or(SIZE_MAX)));
                    }
                    FixKind::Const(v) => {
                        roots.insert(f.name.clone(), (v, v));
                    }
                    _ => {}
                }
                defs.push((*no, f.name, f.text, f.kind));
            }
            None => spec.unrecognized.push(line.to_string()),
        }
    }
    // A name bound twice is the last binding, as in Python.
    let mut seen: std::collections::HashSet<String> = Default::default();
    defs.reverse();
    defs.retain(|(_, name, _, _)| seen.insert(name.clone()));
    defs.reverse();
    // Roots used only by derived dims are not dims themselves.
    let used_as_root: std::collections::HashSet<String> = defs
        .iter()
        .filter_map(|(_, _, _, k)| {
            if let FixKind::Derived { root, .. } = k {
                Some(root.clone())
            } else {
                None
            }
        })
        .collect();
    // A size derived from a derived size (`_r = 3*__r + 2; h = 16*_r`, which torch composes
    // to `48*__r + 32`) is read from the base root; the lines between are kept for its code.
    let derived_of: BTreeMap<String, (String, i128, i128, String)> = defs
        .iter()
        .filter_map(|(_, n, t, k)| match k {
            FixKind::Derived { root, coef, offset } => {
                Some((n.clone(), (root.clone(), *coef, *offset, t.clone())))
            }
            _ => None,
        })
        .collect();
    let mut chains: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, name, _, kind) in defs.iter_mut() {
        let FixKind::Derived { root, coef, offset } = kind else {
            continue;
        };
        let mut lines: Vec<String> = Vec::new();
        while let Some((r2, c2, o2, t2)) = derived_of.get(root.as_str()) {
            // A cycle (`a = 2*b; b = 2*a`) or an overflow stays as written: an error below.
            let composed = coef
                .checked_mul(*c2)
                .zip(coef.checked_mul(*o2).and_then(|v| v.checked_add(*offset)));
            let Some((c, o)) = composed.filter(|_| lines.len() < 16 && r2 != name) else {
                break;
            };
            lines.insert(0, format!("{root} = {t2}"));
            (*root, *coef, *offset) = (r2.clone(), c, o);
        }
        if !lines.is_empty() {
            chains.insert(name.clone(), lines);
        }
    }
    let bound: std::collections::HashSet<&str> = defs
        .iter()
        .filter(|(_, _, _, k)| matches!(k, FixKind::Dim { .. } | FixKind::Const(_)))
        .map(|(_, n, _, _)| n.as_str())
        .collect();
    roots.retain(|r, _| bound.contains(r.as_str()));
    for (no, name, code, kind) in &defs {
        if let Some(reason) = definition_error(kind, &roots, code) {
            let raw = &joined.iter().find(|(n, _)| n == no).expect("own line").1;
            let at = raw.find(code.as_str()).unwrap_or(0);
            return Err(Error::Spec {
                line: *no,
                error: Box::new(ParseError::new(
                    format!("cannot use the definition of `{name}`: {reason}"),
                    raw,
                    at,
                    code.len(),
                )),
            });
        }
    }
    // Each root's definition as written (the first line binding it), found once.
    let mut root_texts: std::collections::HashMap<String, String> = Default::default();
    for (_, l) in &joined {
        for l in l.lines() {
            if let Some((n, r)) = l.split_once(" = ") {
                root_texts
                    .entry(n.trim().to_string())
                    .or_insert_with(|| r.trim().to_string());
            }
        }
    }
    // ...unless the dict names the root itself (`y_2 = h` beside `"x": {2: h}`).
    let entries = dict.as_deref().map(dict_entries);
    let in_dict_names: std::collections::HashSet<&str> =
        entries.iter().flatten().map(|(_, v)| v.as_str()).collect();
    let in_dict = |name: &str| in_dict_names.contains(name);
    for (_, name, text, kind) in defs {
        if used_as_root.contains(&name) && !in_dict(&name) {
            continue;
        }
        match admitted(&kind, &roots) {
            Some(adm) => {
                let code = match &kind {
                    FixKind::Derived { root, .. } => {
                        let between: String = chains
                            .get(&name)
                            .into_iter()
                            .flatten()
                            .map(|l| format!("{l}\n"))
                            .collect();
                        format!(
                            "{root} = {}\n{between}{name} = {text}",
                            root_texts.get(root.as_str()).cloned().unwrap_or_default()
                        )
                    }
                    _ => format!("{name} = {text}"),
                };
                spec.dims.push(SpecDim {
                    name,
                    code,
                    admitted: adm,
                    derived: derived(&kind, &roots),
                })
            }
            None => spec.unrecognized.push(format!("{name} = {text}")),
        }
    }
    if let Some(entries) = entries {
        read_dict(entries, &mut spec, &roots);
        spec.dict = true;
    }
    Ok(spec)
}

/// Reads a spec as data ([`Sheet`]): its root `Dim`s and, from the `dynamic_shapes` dict, one
/// entry per `(input, index)`. Errors name the line that is not understood.
pub fn sheet(text: &str) -> Result<Sheet, Error> {
    if shapes::is_shapes_spec(text) {
        let s = shapes::ShapesSpec::read(text)?;
        return sheet(&s.to_dims());
    }
    sheet_of_dims(text).map_err(Error::Sheet)
}

/// [`sheet`] of a spec written with `Dim`s: what is not understood, quoted.
fn sheet_of_dims(text: &str) -> Result<Sheet, String> {
    let joined = join_brackets(text).map_err(|e| e.to_string())?;
    let mut out = Sheet::default();
    let mut named: BTreeMap<String, Value> = BTreeMap::new();
    let mut dict: Option<String> = None;
    let value_of = |kind: FixKind, name: &str, text: &str, out: &mut Sheet| -> Option<Value> {
        Some(match kind {
            FixKind::Dim { min, max } => {
                out.roots.push(Root {
                    name: name.to_string(),
                    label: dim_label(text).filter(|l| l != name),
                    min,
                    max,
                });
                Value::Dim {
                    root: name.to_string(),
                    coef: 1,
                    offset: 0,
                    name: None,
                }
            }
            FixKind::Const(v) => Value::Int { value: v },
            FixKind::Auto => Value::Auto {
                min: None,
                max: None,
            },
            FixKind::Static => Value::Static,
            FixKind::Derived { root, coef, offset } if coef > 0 => Value::Dim {
                root,
                coef,
                offset,
                name: Some(name.to_string()),
            },
            FixKind::Derived { .. } | FixKind::Other => return None,
        })
    };
    for (_, raw) in &joined {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with("from ") || line.starts_with("import ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("dynamic_shapes") {
            dict = Some(rest.trim_start().trim_start_matches('=').trim().to_string());
            continue;
        }
        let fix = read_fix(line).ok_or_else(|| format!("not a spec line: `{line}`"))?;
        let v = value_of(fix.kind, &fix.name, &fix.text, &mut out).ok_or_else(|| {
            format!("`{line}`: expected Dim(...), m*root + r, an int, Dim.AUTO or Dim.STATIC")
        })?;
        // A Dim's own name refers to its root; a derived dim to its expression.
        named.insert(fix.name, v);
    }
    let dict = dict.ok_or("the spec has no `dynamic_shapes = {...}` dict naming the inputs")?;
    let t = dict.trim();
    let body = t
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .ok_or_else(|| {
            format!("`dynamic_shapes = {t}`: expected a dict {{\"input\": {{index: dim}}}}")
        })?;
    for item in split_top(body) {
        let (key, val) = item
            .split_once(':')
            .ok_or_else(|| format!("`{}`: expected \"input\": {{...}}", item.trim()))?;
        let input = key.trim().trim_matches(['"', '\'']).to_string();
        let val = val.trim();
        let (open, close) = match val.chars().next() {
            Some('{') => ('{', '}'),
            Some('(') => ('(', ')'),
            Some('[') => ('[', ']'),
            _ if val == "None" => continue,
            _ => {
                return Err(format!(
                    "`{input}`: expected {{index: dim}} or a tuple, got `{val}`"
                ))
            }
        };
        let len =
            matching(val, open, close).ok_or_else(|| format!("`{input}`: unbalanced `{open}`"))?;
        for (i, it) in split_top(&val[1..len]).iter().enumerate() {
            let (idx, v) = if open == '{' {
                let (k, v) = it
                    .split_once(':')
                    .ok_or_else(|| format!("`{}`: expected index: dim", it.trim()))?;
                let k = k
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("`{}`: the index must be an integer", k.trim()))?;
                (k, v.trim())
            } else {
                (i, it.trim())
            };
            if v.is_empty() || v == "None" {
                continue;
            }
            let value = match named.get(v) {
                Some(value) => value.clone(),
                None => {
                    let kind = fix_kind(v).ok_or_else(|| {
                        format!("`{input}`[{idx}] = `{v}`: not a name defined above nor a Dim")
                    })?;
                    let name = crate::python::py_name(&format!("{input}_{idx}"));
                    value_of(kind, &name, v, &mut out)
                        .ok_or_else(|| format!("`{input}`[{idx}] = `{v}`: not understood"))?
                }
            };
            out.entries.push(Entry {
                input: input.clone(),
                index: idx,
                value,
            });
        }
    }
    Ok(out)
}

/// Joins lines inside brackets so a multi-line dict reads as one line; each joined line keeps
/// the 1-based number of the line it starts on. An unclosed or unopened bracket is an error at
/// its line and column.
fn join_brackets(text: &str) -> Result<Vec<(usize, String)>, Error> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut cur = String::new();
    let mut start = 1;
    let mut open: Vec<(usize, usize, char)> = Vec::new(); // line, byte column, bracket
    for (i, line) in text.lines().enumerate() {
        let no = i + 1;
        if open.is_empty() {
            start = no;
        } else {
            cur.push(' ');
        }
        // A comment ends the line's code (also inside a multi-line dict).
        let line = line.split('#').next().unwrap_or("");
        for (col, ch) in line.char_indices() {
            match ch {
                '{' | '(' | '[' => open.push((no, col, ch)),
                '}' | ')' | ']' => {
                    let want = match ch {
                        '}' => '{',
                        ')' => '(',
                        _ => '[',
                    };
                    if open.pop().map(|o| o.2) != Some(want) {
                        return Err(bracket_error(no, line, col, format!("unmatched `{ch}`")));
                    }
                }
                _ => {}
            }
        }
        cur.push_str(line);
        if open.is_empty() {
            out.push((start, std::mem::take(&mut cur)));
        }
    }
    if let Some((no, col, ch)) = open.pop() {
        let line = text.lines().nth(no - 1).unwrap_or("");
        return Err(bracket_error(
            no,
            line,
            col,
            format!("`{ch}` is never closed"),
        ));
    }
    Ok(out)
}

fn bracket_error(line: usize, text: &str, col: usize, message: String) -> Error {
    Error::Spec {
        line,
        error: Box::new(
            ParseError::new(message, text, col, 1).with_help("check the brackets of this line"),
        ),
    }
}

/// `{"x": {2: h, 3: Dim('w', min=2)}, "y": (None, h)}`
/// The dict's entries as `(source, value)`: `{"x": {2: h}}` → `("L['x'].size()[2]", "h")`
/// (positional tuples and lists by index; `None` and empty values left out).
fn dict_entries(text: &str) -> Vec<(String, String)> {
    let t = text.trim();
    let body = t
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .unwrap_or(t);
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(q) = rest.find(['"', '\'']) {
        let quote = rest.as_bytes()[q] as char;
        let after = &rest[q + 1..];
        let Some(end) = after.find(quote) else { break };
        let input = &after[..end];
        let tail = after[end + 1..]
            .trim_start()
            .trim_start_matches(':')
            .trim_start();
        let (open, close) = match tail.chars().next() {
            Some('{') => ('{', '}'),
            Some('(') => ('(', ')'),
            Some('[') => ('[', ']'),
            _ => break,
        };
        let Some(len) = matching(tail, open, close) else {
            break;
        };
        let inner = &tail[1..len];
        for (i, item) in split_top(inner).iter().enumerate() {
            let (idx, value) = if open == '{' {
                match item.split_once(':') {
                    Some((k, v)) => (k.trim().parse::<usize>().ok(), v.trim()),
                    None => (None, ""),
                }
            } else {
                (Some(i), item.trim())
            };
            let Some(idx) = idx else { continue };
            if value.is_empty() || value == "None" {
                continue;
            }
            out.push((format!("L['{input}'].size()[{idx}]"), value.to_string()));
        }
        rest = &tail[len + 1..];
    }
    out
}

fn read_dict(
    entries: Vec<(String, String)>,
    spec: &mut Spec,
    roots: &BTreeMap<String, (i128, i128)>,
) {
    for (source, value) in entries {
        if spec.dims.iter().any(|d| d.name == value) || is_ident(&value) {
            spec.sources.insert(source, value);
        } else if let Some(kind) = fix_kind(&value) {
            if let Some(adm) = admitted(&kind, roots) {
                spec.dims.push(SpecDim {
                    name: source.clone(),
                    code: value,
                    admitted: adm,
                    derived: derived(&kind, roots),
                });
                spec.sources.insert(source.clone(), source);
            }
        }
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn matching(s: &str, open: char, close: char) -> Option<usize> {
    let mut depth = 0;
    for (i, c) in s.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return Some(i);
            }
        }
    }
    None
}

fn split_top(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_derived_plain_static_and_dict() {
        let s = read(
            "from torch.export import Dim\n_h = Dim('_h', min=17, max=270)\nh = 8*_h\nw = Dim('w', min=135, max=3840)\nb = 1\n\
             dynamic_shapes = {\n  \"image1\": {0: b, 2: h, 3: w},\n  'image2': (None, None, h, Dim('w2', min=2, max=9)),\n}\n",
        )
        .unwrap();
        let names: Vec<&str> = s.dims.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["h", "w", "b", "L['image2'].size()[3]"]);
        let h = &s.dims[0];
        assert_eq!(h.admitted, Some(DimSet::progression(136, 2160, 8, 0)));
        assert_eq!(h.code, "_h = Dim('_h', min=17, max=270)\nh = 8*_h");
        assert_eq!(
            s.sources.get("L['image1'].size()[2]").map(String::as_str),
            Some("h")
        );
        assert_eq!(
            s.sources.get("L['image2'].size()[2]").map(String::as_str),
            Some("h")
        );
        assert_eq!(
            s.lookup("dim_2", Some("L['image1'].size()[3]"))
                .unwrap()
                .name,
            "w"
        );
        assert_eq!(s.dims[2].admitted, Some(DimSet::interval(1, 1)));
        let s = read("h = Dim.AUTO\nw = Dim.STATIC\n").unwrap();
        assert_eq!(s.dims[0].admitted, Some(DimSet::interval(2, SIZE_MAX)));
        assert_eq!(s.dims[1].admitted, None);
    }

    #[test]
    fn a_size_derived_from_an_int_is_that_int() {
        // Python: `w = 7; h = 4*w - 6` makes `h` 22 (static in torch). dimguard prints such
        // lines for a root whose sound side is one value; before, reading them back failed
        // with "`w` is not defined as a Dim".
        let s = read("w = 7\nh = 4*w - 6\n").unwrap();
        let h = s.dims.iter().find(|d| d.name == "h").unwrap();
        assert_eq!(h.admitted, Some(DimSet::interval(22, 22)));
        assert_eq!(h.derived.as_ref().map(|d| d.root_range), Some((7, 7)));
        // An undefined root is still an error.
        assert!(read("h = 4*v - 6\n").is_err());
    }

    #[test]
    fn a_size_derived_from_a_derived_size_is_composed() {
        // torch composes `_r = 3*__r + 2; h = 16*_r` to `48*__r + 32`; dimguard prints such
        // chains for a root whose sound side is a progression. Before, "`_r` is not defined
        // as a Dim".
        let s = read("__r = Dim('__r', min=0, max=20)\n_r = 3*__r + 2\nh = 16*_r\n").unwrap();
        let h = s.dims.iter().find(|d| d.name == "h").unwrap();
        assert_eq!(h.admitted, Some(DimSet::progression(32, 992, 48, 32)));
        let d = h.derived.as_ref().unwrap();
        assert_eq!((d.root.as_str(), d.coef, d.offset), ("__r", 48, 32));
        assert_eq!(
            h.code,
            "__r = Dim('__r', min=0, max=20)\n_r = 3*__r + 2\nh = 16*_r"
        );
        assert!(
            s.dims.iter().all(|d| d.name != "_r"),
            "only a step of the chain"
        );
        // A cycle is an error, not a hang.
        assert!(read("a = 2*b\nb = 2*a\n").is_err());
    }

    #[test]
    fn a_dim_keeps_the_name_the_user_gave_it() {
        // `b = Dim('batch')`: the variable is `b`, the Dim's own name `batch`; both printed
        // back as written, also for a Dim written inside the dict.
        let sheet = sheet(
            "b = Dim(\"batch\", min=1, max=64)\nh = Dim('h', max=512)\n\
             dynamic_shapes = {\"x\": {0: b, 2: h, 3: Dim('width', min=8)}}\n",
        )
        .unwrap();
        let labels: Vec<(&str, Option<&str>)> = sheet
            .roots
            .iter()
            .map(|r| (r.name.as_str(), r.label.as_deref()))
            .collect();
        assert_eq!(
            labels,
            [("b", Some("batch")), ("h", None), ("x_3", Some("width"))]
        );
        let code = sheet.code();
        for line in [
            "b = Dim('batch', min=1, max=64)",
            "h = Dim('h', max=512)",
            "x_3 = Dim('width', min=8)",
        ] {
            assert!(code.contains(line), "{line} not in\n{code}");
        }
        // A label that is not an identifier is not carried.
        assert_eq!(dim_label("Dim('a b')"), None);
        assert_eq!(dim_label("Dim(\"w\", min=2)"), Some("w".into()));
    }

    #[test]
    fn bad_definitions_name_the_line_and_reason() {
        for (text, line, what) in [
            (
                "_h = Dim('_h', min=2, max=9)\nh = -8*_h\n",
                2,
                "positive multiplier",
            ),
            (
                "_h = Dim('_h', min=2, max=9)\nh = 0*_h\n",
                2,
                "positive multiplier",
            ),
            (
                "# spec\nh = Dim('h', min=100, max=5)\n",
                2,
                "min=100 > max=5",
            ),
            ("h = 8*_g\n", 1, "`_g` is not defined"),
            (
                "w = Dim('w', min=2, max=9)\nh = Dim('h', min=2, max=9\nx = 1\n",
                2,
                "never closed",
            ),
            ("h = Dim('h', min=2, max=9))\n", 1, "unmatched `)`"),
        ] {
            match read(text) {
                Err(Error::Spec { line: l, error }) => {
                    assert_eq!(l, line, "{text}");
                    assert!(error.message.contains(what), "{text}: {error}");
                    assert!(error.to_string().contains('^'), "{error}");
                }
                other => panic!("{text}: expected a spec error, got {other:?}"),
            }
        }
    }
}
