//! Reading a spec: `Dim` lines and a `dynamic_shapes` dict (or a `ShapesSpec`) into the one
//! model, [`Sheet`].

use super::model::{Entry, Named, Root, Sheet, Value};
use super::shapes;
use super::text::{is_ident, matching, split_top};
use crate::forms::fixes::{dim_label, fix_kind, read_fix};
use crate::message::FixKind;
use crate::phrase::Phrase;
use dimguard_solver::python::py_name;
use dimguard_solver::{Error, ParseError};
use std::collections::{BTreeMap, HashSet};

/// Why a spec line defining a dimension cannot be used, if it cannot.
fn definition_error(kind: &FixKind, roots: &HashSet<&str>, code: &str) -> Option<String> {
    match kind {
        FixKind::Dim {
            min: Some(lo),
            max: Some(hi),
        } if lo > hi => Some(format!("this Dim admits no size: min={lo} > max={hi}")),
        FixKind::Derived { root, coef, .. } if *coef <= 0 => Some(format!(
            "a derived dim needs a positive multiplier of its root `{root}` (here {coef}); torch.export rejects it"
        )),
        FixKind::Derived { root, .. } if !roots.contains(root.as_str()) => Some(format!(
            "`{root}` is not defined as a Dim (define it first: `{root} = Dim('{root}', min=.., max=..)`)"
        )),
        FixKind::Other if code.has("Dim") && bounded_hint(code).is_none() => Some(
            "not a Dim dimguard understands: expected `Dim('h', min=LO, max=HI)`, `M*_h + R`, an int, `Dim.AUTO(min=.., max=..)`, `Dim.DYNAMIC(min=.., max=..)` or `Dim.STATIC`".into(),
        ),
        _ => None,
    }
}

/// Reads a spec (`Dim` lines and a `dynamic_shapes` dict, or a `ShapesSpec`) into the one
/// model, [`Sheet`].
///
/// Lines that define nothing (imports, other Python) are kept in `unrecognized`, with dict
/// items that name nothing defined; a line that defines a dimension wrongly — a `Dim` with
/// `min > max`, a derived dim with a multiplier that is not positive or an undefined root, an
/// unclosed bracket — is an [`Error::Spec`] naming the spec line, with a caret and the reason.
/// A `ShapesSpec` is read as the same spec written with `Dim`s
/// ([`shapes::ShapesSpec::to_dims`]), its assumptions over one variable narrowing that
/// variable's root.
pub fn read(text: &str) -> Result<Sheet, Error> {
    if shapes::is_shapes_spec(text) {
        let s = shapes::ShapesSpec::read(text)?;
        let mut sheet = read(&s.to_dims())?;
        s.restrict(&mut sheet);
        return Ok(sheet);
    }
    let mut sheet = Sheet::default();
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
            Some(f) => defs.push((*no, f.name, f.text, f.kind)),
            None => sheet.unrecognized.push(line.to_string()),
        }
    }
    // A name bound twice is the last binding, as in Python.
    let mut seen: HashSet<String> = Default::default();
    defs.reverse();
    defs.retain(|(_, name, _, _)| seen.insert(name.clone()));
    defs.reverse();
    // A size derived from a derived size (`_r = 3*__r + 2; h = 16*_r`, which torch composes
    // to `48*__r + 32`) is read from the base root.
    let derived_of: BTreeMap<String, (String, i128, i128)> = defs
        .iter()
        .filter_map(|(_, n, _, k)| match k {
            FixKind::Derived { root, coef, offset } => {
                Some((n.clone(), (root.clone(), *coef, *offset)))
            }
            _ => None,
        })
        .collect();
    for (_, name, _, kind) in defs.iter_mut() {
        let FixKind::Derived { root, coef, offset } = kind else {
            continue;
        };
        let mut steps = 0;
        while let Some((r2, c2, o2)) = derived_of.get(root.as_str()) {
            // A cycle (`a = 2*b; b = 2*a`) or an overflow stays as written: an error below.
            let composed = coef
                .checked_mul(*c2)
                .zip(coef.checked_mul(*o2).and_then(|v| v.checked_add(*offset)));
            let Some((c, o)) = composed.filter(|_| steps < 16 && r2 != name) else {
                break;
            };
            steps += 1;
            (*root, *coef, *offset) = (r2.clone(), c, o);
        }
    }
    // A root: a Dim, or an int (`w = 7; h = 4*w - 6` is Python too: `h` is 22).
    let roots: HashSet<&str> = defs
        .iter()
        .filter(|(_, _, _, k)| matches!(k, FixKind::Dim { .. } | FixKind::Const(_)))
        .map(|(_, n, _, _)| n.as_str())
        .collect();
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
    let consts: BTreeMap<String, i128> = defs
        .iter()
        .filter_map(|(_, n, _, k)| match k {
            FixKind::Const(v) => Some((n.clone(), *v)),
            _ => None,
        })
        .collect();
    for (_, name, text, kind) in &defs {
        if let FixKind::Dim { min, max } = kind {
            sheet.roots.push(Root {
                label: dim_label(text).filter(|l| l != name),
                ..Root::new(name, *min, *max)
            });
            continue;
        }
        match value_of(kind, name, &consts).or_else(|| bounded_hint(text)) {
            Some(value) => sheet.names.push(Named {
                name: name.clone(),
                value,
            }),
            None => sheet.unrecognized.push(format!("{name} = {text}")),
        }
    }
    if let Some(d) = dict {
        read_dict(&d, &mut sheet, &consts);
        sheet.dict = true;
    }
    Ok(sheet)
}

/// `Dim.AUTO(min=.., max=..)` or `Dim.DYNAMIC(min=.., max=..)` (what `check` prints for a size
/// whose guards torch cannot decide over a `Dim`'s range): the hint's bounds.
fn bounded_hint(code: &str) -> Option<Value> {
    let node = dimguard_solver::parse::parse(code).ok()?;
    let dimguard_solver::parse::Node::Call { func, kwargs, .. } = &node.node else {
        return None;
    };
    let hint = ["Dim.AUTO", "Dim.DYNAMIC"]
        .iter()
        .any(|h| func == h || func.ends_with(&format!(".{h}")));
    hint.then(|| Value::Auto {
        min: dimguard_solver::syntax::int_kwarg(code, kwargs, "min"),
        max: dimguard_solver::syntax::int_kwarg(code, kwargs, "max"),
    })
}

/// What a definition that is no root `Dim` says: a derived dim of a root (of an int: that
/// int's image), an int, `Dim.AUTO`, `Dim.STATIC`.
fn value_of(kind: &FixKind, name: &str, consts: &BTreeMap<String, i128>) -> Option<Value> {
    Some(match kind {
        FixKind::Derived { root, coef, offset } => match consts.get(root) {
            Some(c) => Value::Int {
                value: coef.checked_mul(*c)?.checked_add(*offset)?,
            },
            None => Value::Dim {
                root: root.clone(),
                coef: *coef,
                offset: *offset,
                name: Some(name.to_string()),
            },
        },
        FixKind::Const(v) => Value::Int { value: *v },
        FixKind::Auto => Value::Auto {
            min: None,
            max: None,
        },
        FixKind::Static => Value::Static,
        FixKind::Dim { .. } | FixKind::Other => return None,
    })
}

/// Reads a spec as data for a merge (`dimguard.export`, `--spec`): [`read`], then every line
/// must be understood and the spec must have a `dynamic_shapes` dict naming the inputs.
pub fn sheet(text: &str) -> Result<Sheet, Error> {
    let sheet = read(text)?;
    if !shapes::is_shapes_spec(text) {
        if let Some(line) = sheet.unrecognized.first() {
            return Err(Error::Sheet(format!(
                "not understood: `{line}` (expected Dim(...), m*root + r, an int, Dim.AUTO or Dim.STATIC, and a dynamic_shapes dict)"
            )));
        }
    }
    if !sheet.dict {
        return Err(Error::Sheet(
            "the spec has no `dynamic_shapes = {...}` dict naming the inputs".into(),
        ));
    }
    Ok(sheet)
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

/// The dict's items as `(input, index, value)`: `{"x": {2: h}, "y": (None, h)}` →
/// `("x", 2, "h")`, `("y", 1, "h")` (positional tuples and lists by index; `None` and empty
/// values left out), and what could not be read, quoted.
fn dict_items(text: &str) -> (Vec<(String, usize, String)>, Vec<String>) {
    let (mut out, mut bad) = (Vec::new(), Vec::new());
    let t = text.trim();
    let Some(body) = t.strip_prefix('{').and_then(|b| b.strip_suffix('}')) else {
        bad.push(format!(
            "dynamic_shapes = {t}: expected a dict {{\"input\": {{index: dim}}}}"
        ));
        return (out, bad);
    };
    for item in split_top(body) {
        let Some((key, val)) = item.split_once(':') else {
            bad.push(format!("`{}`: expected \"input\": {{...}}", item.trim()));
            continue;
        };
        let input = key.trim().trim_matches(['"', '\'']).to_string();
        let val = val.trim();
        let (open, close) = match val.chars().next() {
            Some('{') => ('{', '}'),
            Some('(') => ('(', ')'),
            Some('[') => ('[', ']'),
            _ if val == "None" => continue,
            _ => {
                bad.push(format!(
                    "`{input}`: expected {{index: dim}} or a tuple, got `{val}`"
                ));
                continue;
            }
        };
        let Some(len) = matching(val, open, close) else {
            bad.push(format!("`{input}`: unbalanced `{open}`"));
            continue;
        };
        for (i, it) in split_top(&val[1..len]).iter().enumerate() {
            let (idx, v) = if open == '{' {
                let Some((k, v)) = it.split_once(':') else {
                    bad.push(format!("`{}`: expected index: dim", it.trim()));
                    continue;
                };
                let Ok(k) = k.trim().parse::<usize>() else {
                    bad.push(format!("`{}`: the index must be an integer", k.trim()));
                    continue;
                };
                (k, v.trim())
            } else {
                (i, it.trim())
            };
            if !v.is_empty() && v != "None" {
                out.push((input.clone(), idx, v.to_string()));
            }
        }
    }
    (out, bad)
}

/// Reads the dict into `sheet`'s entries: a name defined above is that name's value; a value
/// written inline is read in place (a `Dim` becomes a root, a derived dim a name, both called
/// after the input's dimension: `x_3`). What names nothing is kept in `unrecognized`.
fn read_dict(text: &str, sheet: &mut Sheet, consts: &BTreeMap<String, i128>) {
    let (items, bad) = dict_items(text);
    sheet.unrecognized.extend(bad);
    for (input, index, v) in items {
        let (value, name) = if sheet.root(&v).is_some() {
            let value = Value::Dim {
                root: v,
                coef: 1,
                offset: 0,
                name: None,
            };
            (value, None)
        } else if let Some(n) = sheet.names.iter().find(|n| n.name == v) {
            match &n.value {
                Value::Dim { .. } => (n.value.clone(), None),
                other => (other.clone(), Some(v)),
            }
        } else {
            let Some(value) = inline(sheet, &input, index, &v, consts) else {
                sheet.unrecognized.push(format!(
                    "`{input}`[{index}] = `{v}`: not a name defined above nor a Dim"
                ));
                continue;
            };
            (value, None)
        };
        if sheet.entry(&input, index).is_none() {
            sheet.entries.push(Entry {
                input,
                index,
                value,
                name,
                comment: None,
            });
        }
    }
}

/// A value written inline in the dict (`Dim('w', min=2)`, `2*H + 1`, `224`, `Dim.AUTO`); a
/// `Dim` becomes a root and a derived dim a name, called after the input's dimension.
fn inline(
    sheet: &mut Sheet,
    input: &str,
    index: usize,
    v: &str,
    consts: &BTreeMap<String, i128>,
) -> Option<Value> {
    if is_ident(v) {
        return None;
    }
    let kind = fix_kind(v)?;
    let here = sheet.fresh(&py_name(&format!("{input}_{index}")));
    match &kind {
        FixKind::Dim { min, max } => {
            sheet.roots.push(Root {
                label: dim_label(v).filter(|l| *l != here),
                ..Root::new(&here, *min, *max)
            });
            Some(Value::Dim {
                root: here,
                coef: 1,
                offset: 0,
                name: None,
            })
        }
        FixKind::Derived { root, coef, .. }
            if *coef > 0 && (sheet.root(root).is_some() || consts.contains_key(root)) =>
        {
            let value = value_of(&kind, &here, consts)?;
            if let Value::Dim { .. } = value {
                sheet.names.push(Named {
                    name: here,
                    value: value.clone(),
                });
            }
            Some(value)
        }
        FixKind::Derived { .. } => None,
        k => value_of(k, &here, consts),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::Given;
    use dimguard_solver::{DimSet, SIZE_MAX};

    fn at(s: &Sheet, input: &str, index: usize) -> Given {
        s.lookup(
            "",
            Some(&dimguard_solver::python::input_source(input, index)),
        )
        .unwrap()
    }

    #[test]
    fn reads_derived_plain_static_and_dict() {
        let s = read(
            "from torch.export import Dim\n_h = Dim('_h', min=17, max=270)\nh = 8*_h\nw = Dim('w', min=135, max=3840)\nb = 1\n\
             dynamic_shapes = {\n  \"image1\": {0: b, 2: h, 3: w},\n  'image2': (None, None, h, Dim('w2', min=2, max=9)),\n}\n",
        )
        .unwrap();
        let h = at(&s, "image1", 2);
        assert_eq!(h.name, "h");
        assert_eq!(h.admitted, Some(DimSet::progression(136, 2160, 8, 0)));
        assert_eq!(h.derived(), Some(("_h", 8, 0)));
        assert_eq!(
            s.definition(&h),
            "_h = Dim('_h', min=17, max=270)\nh = 8*_h"
        );
        assert_eq!(at(&s, "image2", 2), h);
        assert_eq!(
            s.lookup("dim_2", Some("L['image1'].size()[3]"))
                .unwrap()
                .name,
            "w"
        );
        let b = at(&s, "image1", 0);
        assert_eq!(
            (b.name.as_str(), b.admitted),
            ("b", Some(DimSet::interval(1, 1)))
        );
        let w2 = at(&s, "image2", 3);
        assert_eq!(w2.name, "image2_3");
        assert_eq!(w2.admitted, Some(DimSet::interval(2, 9)));
        assert_eq!(s.root("image2_3").unwrap().label.as_deref(), Some("w2"));
        // A dimension the dict leaves out (or gives None) is static: found by no name.
        assert_eq!(s.lookup("h", Some("L['image2'].size()[1]")), None);
        let s = read("h = Dim.AUTO\nw = Dim.STATIC\n").unwrap();
        assert_eq!(
            s.lookup("h", None).unwrap().admitted,
            Some(DimSet::interval(2, SIZE_MAX))
        );
        assert_eq!(s.lookup("w", None).unwrap().admitted, None);
        assert!(!s.dict && s.entries.is_empty());
        // The bounded hints `check` prints where torch refuses a Dim.
        let s = read("h = Dim.DYNAMIC(min=48)\nw = torch.export.Dim.AUTO(min=4, max=9)\n").unwrap();
        assert_eq!(
            s.lookup("h", None).unwrap().admitted,
            Some(DimSet::interval(48, SIZE_MAX))
        );
        assert_eq!(
            s.lookup("w", None).unwrap().admitted,
            Some(DimSet::interval(4, 9))
        );
        assert!(s.unrecognized.is_empty(), "{:?}", s.unrecognized);
    }

    #[test]
    fn a_comment_on_an_entry_prints_one_entry_a_line_and_reads_back() {
        // As the Python loop writes a sheet: a Dim kept, a size made Dim.AUTO, one made static.
        let mut s: Sheet = serde_json::from_str(
            r#"{"roots": [{"name": "b", "min": 1, "max": 16}], "entries": [
                {"input": "x", "index": 0, "value": {"kind": "dim", "root": "b", "coef": 1, "offset": 0}},
                {"input": "x", "index": 2, "value": {"kind": "auto", "min": 64, "max": 512}},
                {"input": "x", "index": 3, "value": {"kind": "int", "value": 224}}]}"#,
        )
        .unwrap();
        let plain = s.code();
        assert!(plain.has("dynamic_shapes = {\"x\": {0: b, "), "{plain}");
        s.entries[1].comment = Some("h: torch specialized it\n(see report.narrowed)".into());
        s.entries[2].comment = Some("w # fixed at 224".into()); // a `#` inside a comment is harmless
        let code = s.code();
        assert!(
            code.has("        2: Dim.AUTO(min=64, max=512),  # h: torch specialized it (see report.narrowed)\n"),
            "{code}"
        );
        // The comments change nothing of what the code says.
        let (back, before) = (read(&code).unwrap(), read(&plain).unwrap());
        assert_eq!(back.entries, before.entries);
        assert_eq!(back.unrecognized, before.unrecognized);
        assert_eq!(back.roots.len(), 1);
    }

    #[test]
    fn what_is_not_understood_is_kept() {
        let s = read("import torch\nmodel = Net()\nh = Dim('h', min=2, max=9)\ndynamic_shapes = {'x': {0: h, 1: g}}\n").unwrap();
        assert_eq!(
            s.unrecognized,
            [
                "model = Net()",
                "`x`[1] = `g`: not a name defined above nor a Dim"
            ]
        );
        // As data for a merge, that is an error; without a dict too.
        let e = sheet("model = Net()\nh = Dim('h')\ndynamic_shapes = {'x': {0: h}}\n").unwrap_err();
        assert!(e.to_string().has("`model = Net()`"), "{e}");
        let e = sheet("h = Dim('h')\n").unwrap_err();
        assert!(e.to_string().has("no `dynamic_shapes"), "{e}");
    }

    #[test]
    fn a_size_derived_from_an_int_is_that_int() {
        // Python: `w = 7; h = 4*w - 6` makes `h` 22 (static in torch). dimguard prints such
        // lines for a root whose sound side is one value; before, reading them back failed
        // with "`w` is not defined as a Dim".
        let s = read("w = 7\nh = 4*w - 6\n").unwrap();
        let h = s.lookup("h", None).unwrap();
        assert_eq!(h.admitted, Some(DimSet::interval(22, 22)));
        // An undefined root is still an error.
        assert!(read("h = 4*v - 6\n").is_err());
    }

    #[test]
    fn a_size_derived_from_a_derived_size_is_composed() {
        // torch composes `_r = 3*__r + 2; h = 16*_r` to `48*__r + 32`; dimguard prints such
        // chains for a root whose sound side is a progression. Before, "`_r` is not defined
        // as a Dim".
        let s = read("__r = Dim('__r', min=0, max=20)\n_r = 3*__r + 2\nh = 16*_r\n").unwrap();
        let h = s.lookup("h", None).unwrap();
        assert_eq!(h.admitted, Some(DimSet::progression(32, 992, 48, 32)));
        assert_eq!(h.derived(), Some(("__r", 48, 32)));
        assert_eq!(
            s.definition(&h),
            "__r = Dim('__r', min=0, max=20)\nh = 48*__r + 32"
        );
        // A root only derived dims use is not a size by its own name.
        assert_eq!(s.lookup("__r", None), None);
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
            for r in [read(text), sheet(text)] {
                match r {
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

    /// One dimension of a random spec: its text in the dict, the lines that define it, and the
    /// sizes it admits by brute force (`None`: static; `Some(None)`: `Dim.AUTO`).
    type Case = (String, Vec<String>, Option<Option<Vec<i128>>>);

    fn case(j: usize, kind: u8, roots: &[(i128, i128)], a: i128, b: i128) -> Case {
        let i = (a as usize) % roots.len();
        let (lo, hi) = roots[i];
        let root = format!("r{i}");
        match kind {
            0 => (root, vec![], Some(Some((lo..=hi).collect()))),
            1 => {
                let (c, o) = (a % 5 + 1, b % 7);
                let def = format!("h{j} = {}", dimguard_solver::python::derived(&root, c, o));
                let set = (lo..=hi).map(|k| c * k + o).collect();
                (format!("h{j}"), vec![def], Some(Some(set)))
            }
            2 => ("Dim.AUTO".into(), vec![], Some(None)),
            3 => (
                format!("a{j}"),
                vec![format!("a{j} = Dim.AUTO")],
                Some(None),
            ),
            4 => (b.to_string(), vec![], Some(Some(vec![b]))),
            5 => (
                format!("b{j}"),
                vec![format!("b{j} = {b}")],
                Some(Some(vec![b])),
            ),
            6 => (format!("s{j}"), vec![format!("s{j} = Dim.STATIC")], None),
            7 => {
                let (lo, hi) = (a.min(b), a.max(b));
                let text = format!("Dim('w{j}', min={lo}, max={hi})");
                (text, vec![], Some(Some((lo..=hi).collect())))
            }
            _ => {
                // Derived from a constant: that constant's image.
                let def = format!("k{j} = {b}\nd{j} = 3*k{j} + 1");
                (format!("d{j}"), vec![def], Some(Some(vec![3 * b + 1])))
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// The sizes the one model admits for each dimension of a random spec (plain, derived,
        /// `Dim.AUTO`, int, static, inline `Dim`) are those brute force gives; and printing the
        /// model and reading it again gives the same model.
        #[test]
        fn admitted_sets_match_brute_force_and_the_printed_spec_reads_back(
            roots in proptest::collection::vec((0i128..30, 0i128..25), 1..3),
            dims in proptest::collection::vec((0u8..9, 0i128..40, 0i128..40), 1..6),
        ) {
            let roots: Vec<(i128, i128)> = roots.iter().map(|&(lo, s)| (lo, lo + s)).collect();
            let mut text = String::from("from torch.export import Dim\n");
            for (i, (lo, hi)) in roots.iter().enumerate() {
                text.push_str(&format!("r{i} = Dim('r{i}', min={lo}, max={hi})\n"));
            }
            let cases: Vec<Case> = dims
                .iter()
                .enumerate()
                .map(|(j, &(k, a, b))| case(j, k, &roots, a, b))
                .collect();
            for (_, defs, _) in &cases {
                for d in defs {
                    text.push_str(&format!("{d}\n"));
                }
            }
            let items: Vec<String> = cases
                .iter()
                .enumerate()
                .map(|(j, (v, _, _))| format!("{j}: {v}"))
                .collect();
            text.push_str(&format!("dynamic_shapes = {{\"x\": {{{}}}}}\n", items.join(", ")));
            let s = read(&text).unwrap();
            proptest::prop_assert!(s.unrecognized.is_empty(), "{:?}\n{}", s.unrecognized, text);
            for (j, (_, _, want)) in cases.iter().enumerate() {
                let got = at(&s, "x", j).admitted;
                match want {
                    None => proptest::prop_assert_eq!(got, None),
                    Some(None) => proptest::prop_assert_eq!(got, Some(DimSet::interval(2, SIZE_MAX))),
                    Some(Some(v)) => {
                        let got: Vec<i128> = got.expect("admitted").iter().collect();
                        proptest::prop_assert_eq!(&got, v, "x[{}] of\n{}", j, text);
                    }
                }
            }
            let printed = s.code();
            let again = read(&printed).unwrap();
            proptest::prop_assert_eq!(&again, &s, "{}\nprinted as\n{}", text, printed);
            proptest::prop_assert_eq!(again.code(), printed);
            // Through JSON (the Python package's form) too.
            let json = serde_json::to_string(&s).unwrap();
            proptest::prop_assert_eq!(serde_json::from_str::<Sheet>(&json).unwrap(), s);
        }
    }

    #[test]
    fn a_spec_without_dict_reads_back_by_name() {
        let text = "from torch.export import Dim\n_dim_2 = Dim('_dim_2', min=17, max=270)\ndim_2 = 8*_dim_2\nb = 3\nw = Dim.AUTO\n";
        let s = read(text).unwrap();
        let d = s.lookup("dim_2", Some("L['x'].size()[2]")).unwrap();
        assert_eq!(d.admitted, Some(DimSet::progression(136, 2160, 8, 0)));
        let printed = s.code();
        assert!(!printed.has("dynamic_shapes"), "{printed}");
        assert_eq!(read(&printed).unwrap(), s);
    }
}
