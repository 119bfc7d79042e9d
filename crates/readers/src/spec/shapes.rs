//! torch 2.15's `ShapesSpec` as users write it, read as text:
//!
//! ```python
//! B = ShapeVar("B", min=1, max=8)
//! H = ShapeVar("H", min=96, max=1024)
//! dynamic_shapes = ShapesSpec({"x": TensorSpec([B, 3, H, 2*H])}, assumptions=[H % 2 == 0])
//! ```
//!
//! `ShapeVar` / `IntVar` definitions (any alias: `VAR("h", ...)`), every `"input":
//! TensorSpec([...])` (inside a dict, `ParamsSpec({...})` or `ShapesSpec({...})`), and the
//! `assumptions=[...]` list. [`ShapesSpec::to_dims`] writes it as the `Dim` spec the rest of
//! [`crate::spec`] reads (one spec model); [`ShapesSpec::code`] prints it back with assumptions
//! added, every input and dimension kept.

use super::model::Sheet;
use super::text::{is_ident, matching};
use crate::message::{Message, SIZE_MAX};
use crate::phrase::Phrase;
use dimguard_solver::parse::{self, Node};
use dimguard_solver::python::input_dim;
use dimguard_solver::syntax::{parse_expr, parse_guard};
use dimguard_solver::Error;

/// A `ShapeVar` / `IntVar`.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    /// The Python variable (`H`).
    pub name: String,
    /// Its label (`ShapeVar("height")`), when given.
    pub label: Option<String>,
    /// `min=` (a `ShapeVar`'s default is 0).
    pub min: Option<i128>,
    /// `max=`.
    pub max: Option<i128>,
}

impl Var {
    /// The sizes it admits.
    pub fn range(&self) -> (i128, i128) {
        (self.min.unwrap_or(0).max(0), self.max.unwrap_or(SIZE_MAX))
    }
}

/// A parsed `ShapesSpec`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ShapesSpec {
    /// The text as given.
    pub text: String,
    /// Its variables, in order of definition.
    pub vars: Vec<Var>,
    /// Each input and its slots as written (`B`, `3`, `2*H`, `None`, `STATIC`).
    pub inputs: Vec<(String, Vec<String>)>,
    /// The assumptions as written.
    pub assumptions: Vec<String>,
}

/// Whether a spec text is a `ShapesSpec` rather than `Dim` lines.
pub fn is_shapes_spec(text: &str) -> bool {
    ["ShapesSpec(", "TensorSpec(", "ParamsSpec(", "ShapeVar("]
        .iter()
        .any(|k| text.has(k))
}

impl ShapesSpec {
    /// Reads a `ShapesSpec`; errors say which line breaks torch's rules.
    pub fn read(text: &str) -> Result<ShapesSpec, Error> {
        let code: String = text
            .lines()
            .map(|l| l.split('#').next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut s = ShapesSpec {
            text: text.to_string(),
            ..Default::default()
        };
        for stmt in statements(&code) {
            let Some((lhs, rhs)) = stmt.split_once('=') else {
                continue;
            };
            let (lhs, rhs) = (lhs.trim(), rhs.trim());
            if !is_ident(lhs) || rhs.starts_with('=') {
                continue;
            }
            if let Ok(node) = parse::parse(rhs) {
                if let Node::Call {
                    func, args, kwargs, ..
                } = &node.node
                {
                    let f = func.rsplit('.').next().unwrap_or(func);
                    if f.ends_with("Var") || f.ends_with("VAR") {
                        let kw = |k: &str| dimguard_solver::syntax::int_kwarg(rhs, kwargs, k);
                        let label = match args.first().map(|a| &a.node) {
                            Some(Node::Str(l)) => Some(l.clone()),
                            _ => None,
                        };
                        s.vars.retain(|v| v.name != lhs);
                        s.vars.push(Var {
                            name: lhs.to_string(),
                            label,
                            min: kw("min"),
                            max: kw("max"),
                        });
                    }
                }
            }
        }
        let mut rest = code.as_str();
        while let Some(i) = rest.phrase("TensorSpec(") {
            let before = rest[..i].trim_end();
            let after = &rest[i + "TensorSpec(".len()..];
            let input = before.strip_suffix(':').map(str::trim_end).and_then(|b| {
                let q = b.chars().last()?;
                if q != '"' && q != '\'' {
                    return None;
                }
                let inner = &b[..b.len() - 1];
                let start = inner.rfind(q)?;
                Some(inner[start + 1..].to_string())
            });
            let list = after.trim_start();
            let slots = list
                .strip_prefix('[')
                .or_else(|| list.strip_prefix('('))
                .and_then(|l| {
                    let close = if list.starts_with('[') { ']' } else { ')' };
                    let open = if close == ']' { '[' } else { '(' };
                    let n = matching(list, open, close)?;
                    Some(split_items(&l[..n - 1]))
                });
            match (input, slots) {
                (Some(input), Some(slots)) => s.inputs.push((input, slots)),
                _ => {
                    return Err(Error::Message(
                        "the ShapesSpec has a TensorSpec dimguard cannot place: write each input as `\"name\": TensorSpec([...])`".into(),
                    ))
                }
            }
            rest = after;
        }
        if let Some(i) = code.phrase("assumptions") {
            let after = code[i + "assumptions".len()..].trim_start();
            if let Some(list) = after.strip_prefix('=').map(str::trim_start) {
                if list.starts_with('[') {
                    let n = matching(list, '[', ']').ok_or_else(|| {
                        Error::Message("the ShapesSpec's assumptions list is not closed".into())
                    })?;
                    s.assumptions = split_items(&list[1..n]);
                }
            }
        }
        s.check()?;
        Ok(s)
    }

    /// torch's rules: every variable in a derived slot or an assumption must also be a bare
    /// slot somewhere.
    fn check(&self) -> Result<(), Error> {
        let bare = self.bare();
        let known = |a: &str| self.vars.iter().any(|v| v.name == a);
        let slot_vars = |t: &str| -> Vec<String> {
            parse_expr(t)
                .map(|e| e.atoms().iter().map(|a| a.to_string()).collect())
                .unwrap_or_default()
        };
        for (input, slots) in &self.inputs {
            for (k, t) in slots.iter().enumerate() {
                if bare.iter().any(|b| b == t) || is_static(t) {
                    continue;
                }
                for a in slot_vars(t) {
                    if known(&a) && !bare.contains(&a) {
                        return Err(Error::Message(format!(
                            "{input}'s dimension {k} is `{t}`, derived from `{a}`, but `{a}` is no bare slot of any TensorSpec: torch refuses this (\"Every IntVar used in a derived expression or assumption must also appear as a bare-IntVar slot\"). Make `{a}` a slot of its own, or state the relation as an assumption"
                        )));
                    }
                }
            }
        }
        for t in &self.assumptions {
            let e = parse_guard(t).map_err(|e| {
                Error::Message(format!("cannot read the assumption `{t}`: {}", e.message))
            })?;
            for a in e.atoms() {
                if !bare.iter().any(|b| *b == *a) {
                    return Err(Error::Message(format!(
                        "the assumption `{t}` uses `{a}`, which is no bare slot of any TensorSpec: torch refuses it (every IntVar in an assumption must be a bare slot)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The variables that are a whole slot somewhere.
    pub fn bare(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, slots) in &self.inputs {
            for t in slots {
                if self.vars.iter().any(|v| v.name == *t) && !out.contains(t) {
                    out.push(t.clone());
                }
            }
        }
        out
    }

    /// The variable at `input`'s dimension `k`, when that slot is bare.
    pub fn var_at(&self, input: &str, k: usize) -> Option<&Var> {
        let (_, slots) = self.inputs.iter().find(|(i, _)| i == input)?;
        let t = slots.get(k)?;
        self.vars.iter().find(|v| v.name == *t)
    }

    /// The same spec as `Dim` lines and a `dynamic_shapes` dict ([`crate::spec::read`] reads
    /// it): a variable is a `Dim` with its range, a derived slot its expression, an int a
    /// constant; `None` / `STATIC` slots are left out (static).
    pub fn to_dims(&self) -> String {
        let mut out = String::new();
        for v in &self.vars {
            let (lo, hi) = v.range();
            if hi == SIZE_MAX {
                out.push_str(&format!("{} = Dim('{}', min={lo})\n", v.name, v.name));
            } else {
                out.push_str(&format!(
                    "{} = Dim('{}', min={lo}, max={hi})\n",
                    v.name, v.name
                ));
            }
        }
        let dict: Vec<String> = self
            .inputs
            .iter()
            .map(|(input, slots)| {
                let entries: Vec<String> = slots
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| !is_static(t))
                    .map(|(k, t)| format!("{k}: {t}"))
                    .collect();
                format!("\"{input}\": {{{}}}", entries.join(", "))
            })
            .collect();
        out.push_str(&format!("dynamic_shapes = {{{}}}\n", dict.join(", ")));
        out
    }

    /// Narrows `sheet` (read from [`ShapesSpec::to_dims`]) by the assumptions over one bare
    /// variable: its root's sizes are those of its range where the assumption holds, and the
    /// slots derived from it (`2*H + 1`) follow. An assumption over several variables, or one
    /// the engine cannot decide, is kept in `unrecognized` (not applied).
    pub fn restrict(&self, sheet: &mut Sheet) {
        for t in &self.assumptions {
            let Ok(e) = parse_guard(t) else { continue };
            let atoms: Vec<String> = e.atoms().iter().map(|a| a.to_string()).collect();
            let [v] = atoms.as_slice() else {
                sheet
                    .unrecognized
                    .push(format!("assumption {t}: over several sizes, not applied"));
                continue;
            };
            let Some(root) = sheet.roots.iter_mut().find(|r| r.name == *v) else {
                continue;
            };
            if !root.assume(t) {
                sheet
                    .unrecognized
                    .push(format!("assumption {t}: undecided, not applied"));
            }
        }
    }

    /// The spec as given, with `extra` assumptions (code, and a comment above each) added to
    /// its `assumptions=[...]` (made when it has none). Every input and dimension is kept.
    pub fn code(&self, extra: &[(String, String)]) -> String {
        let new: Vec<&(String, String)> = extra
            .iter()
            .filter(|(c, _)| !self.assumptions.iter().any(|a| norm(a) == norm(c)))
            .collect();
        if new.is_empty() {
            return self.text.trim_end().to_string();
        }
        let item = |(code, comment): &(String, String)| {
            let mut s = String::new();
            for l in comment.lines() {
                s.push_str(&format!("        # {l}\n"));
            }
            s.push_str(&format!("        {code},\n"));
            s
        };
        let items: String = new.iter().map(|e| item(e)).collect();
        let text = self.text.trim_end();
        let text = if new.iter().any(|(c, _)| c.has("torch.")) && !text.has("import torch\n") {
            format!("import torch\n{text}")
        } else {
            text.to_string()
        };
        let text = text.as_str();
        if let Some(i) = text.phrase("assumptions") {
            let after = &text[i..];
            if let Some(open) = after.find('[') {
                if let Some(n) = matching(&after[open..], '[', ']') {
                    // The list rewritten one assumption a line: the user's as written, then ours.
                    let close = i + open + n;
                    let mut list = String::new();
                    let inner = &text[i + open + 1..close];
                    if inner.contains('\n') {
                        list.push_str(inner.trim_end().trim_end_matches(','));
                        list.push_str(",\n");
                    } else {
                        for a in &self.assumptions {
                            list.push_str(&format!("\n        {a},"));
                        }
                        list.push('\n');
                    }
                    if self.assumptions.is_empty() {
                        list = "\n".into();
                    }
                    return format!(
                        "{}{list}{items}    ]{}",
                        &text[..i + open + 1],
                        &text[close + 1..]
                    );
                }
            }
        }
        // No assumptions yet: add them to the ShapesSpec(...) call.
        if let Some(i) = text.rfind("ShapesSpec(") {
            if let Some(n) = matching(&text[i + "ShapesSpec".len()..], '(', ')') {
                let close = i + "ShapesSpec".len() + n;
                let inner = text[i + "ShapesSpec(".len()..close].trim_end();
                let inner = inner.strip_suffix(',').unwrap_or(inner);
                return format!(
                    "{}{inner},\n    assumptions=[\n{items}    ],\n){}",
                    &text[..i + "ShapesSpec(".len()],
                    &text[close + 1..]
                );
            }
        }
        format!("{text}\nassumptions = [\n{items}]")
    }
}

/// A static slot.
fn is_static(t: &str) -> bool {
    matches!(t, "None" | "STATIC") || t.parse::<i128>().is_ok()
}

fn norm(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Logical statements: lines joined while a bracket is open.
fn statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth: i32 = 0;
    for line in code.lines() {
        for c in line.chars() {
            match c {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                _ => {}
            }
        }
        cur.push(' ');
        cur.push_str(line.trim());
        if depth <= 0 {
            out.push(std::mem::take(&mut cur).trim().to_string());
            depth = 0;
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Splits at top-level commas (the spec reader's `split_top`); items
/// trimmed, empty ones dropped.
fn split_items(s: &str) -> Vec<String> {
    super::text::split_top(s)
        .into_iter()
        .map(|item| item.trim().to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

/// Takes the user's names and ranges from their `ShapesSpec` (`--spec`): each unbacked symbol
/// whose source is an input's bare `ShapeVar` slot gets the variable's name and (unless
/// `--range` gave one) its range. A symbol the text gives no source for is placed by torch's
/// numbering when the spec allows no doubt: torch makes one unbacked symbol per dynamic slot, in
/// order (`u0` the first), so when every dynamic slot is a bare variable, `uK` is the K-th.
pub fn apply_spec(msg: &mut Message, spec: &ShapesSpec) {
    msg.datadep.shapes_spec = true;
    let slots: Vec<(String, usize, String)> = spec
        .inputs
        .iter()
        .flat_map(|(input, slots)| {
            slots
                .iter()
                .enumerate()
                .filter(|(_, t)| {
                    !matches!(t.as_str(), "None" | "STATIC") && t.parse::<i128>().is_err()
                })
                .map(move |(k, t)| (input.clone(), k, t.clone()))
        })
        .collect();
    // torch numbers every bare dynamic slot, a variable used twice included (measured with
    // torch 2.15: `x: [B, N], y: [B, M]` gives u0, u1, u2, u3); a derived slot may not get one.
    let plain = slots
        .iter()
        .all(|(_, _, t)| spec.vars.iter().any(|v| v.name == *t));
    let mut placed: Vec<String> = Vec::new();
    for u in &mut msg.datadep.unbacked {
        if u.source.is_none() && plain {
            let k: usize = u.symbol[1..].parse().unwrap_or(usize::MAX);
            if let Some((input, i, _)) = slots.get(k) {
                u.source = Some(format!("{input}.shape[{i}]"));
                placed.push(format!("{} as {input}.shape[{i}]", u.symbol));
            }
        }
        let Some((input, k)) = u.source.as_deref().and_then(input_dim) else {
            continue;
        };
        if let Some(v) = spec.var_at(&input, k) {
            u.name = Some(v.name.clone());
            if u.range.is_none() {
                u.range = Some(v.range());
            }
        }
    }
    if !placed.is_empty() {
        msg.notes.push(format!(
            "the text does not say which input size each symbol is: read {} (torch numbers a ShapesSpec's dynamic slots in order)",
            placed.join(", ")
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = "from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec\nB = ShapeVar(\"B\", min=1, max=8)\nH = ShapeVar(\"H\", min=96, max=1024)\nW = ShapeVar(\"W\", min=96, max=1024)\ndynamic_shapes = ShapesSpec(\n    {\"x\": TensorSpec([B, 3, H, W])},  # the image\n)\n";

    #[test]
    fn reads_vars_inputs_and_assumptions() {
        let s = ShapesSpec::read(SPEC).unwrap();
        assert_eq!(s.vars.len(), 3);
        assert_eq!(s.vars[1].range(), (96, 1024));
        assert_eq!(
            s.inputs,
            vec![(
                "x".to_string(),
                vec!["B".into(), "3".into(), "H".into(), "W".into()]
            )]
        );
        assert_eq!(s.var_at("x", 2).unwrap().name, "H");
        let with = SPEC.replace("},  # the image\n)", "}, assumptions=[H % 2 == 0])");
        let s = ShapesSpec::read(&with).unwrap();
        assert_eq!(s.assumptions, vec!["H % 2 == 0".to_string()]);
    }

    #[test]
    fn torch_rules() {
        let derived = SPEC.replace("[B, 3, H, W]", "[B, 3, 32*H, W]");
        let e = ShapesSpec::read(&derived).unwrap_err().to_string();
        assert!(e.has("no bare slot"), "{e}");
        let both = SPEC.replace("[B, 3, H, W]", "[B, 3, H, W]}, {\"y\": TensorSpec([2*H])");
        assert!(ShapesSpec::read(&both).is_ok());
        let k = SPEC.replace("},  # the image\n)", "}, assumptions=[K > 1])");
        assert!(ShapesSpec::read(&k).unwrap_err().to_string().has("`K`"));
    }

    #[test]
    fn assumptions_narrow_the_variable_and_its_derived_slots() {
        let text = "H = ShapeVar(\"H\", min=8, max=64)\nds = ShapesSpec({\"x\": TensorSpec([1, H, 2*H + 1])}, assumptions=[H % 4 == 0])\n";
        let spec = crate::spec::read(text).unwrap();
        let want: Vec<i128> = (8..=64).filter(|h| h % 4 == 0).collect();
        let h = spec.lookup("", Some("L['x'].size()[1]")).unwrap();
        assert_eq!(h.name, "H");
        assert_eq!(
            h.admitted.as_ref().unwrap().iter().collect::<Vec<_>>(),
            want
        );
        assert_eq!(
            spec.definition(&h),
            "H = Dim('H', min=8, max=64)  # assumption: H % 4 == 0"
        );
        // Through JSON the assumption is kept, and solved again.
        let json: crate::spec::Sheet =
            serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(json, spec);
        assert_eq!(json.lookup("", Some("L['x'].size()[1]")), Some(h));
        let d = spec.lookup("", Some("L['x'].size()[2]")).unwrap();
        let got: Vec<i128> = d.admitted.as_ref().unwrap().iter().collect();
        assert_eq!(got, want.iter().map(|h| 2 * h + 1).collect::<Vec<_>>());
    }

    #[test]
    fn prints_with_assumptions_added() {
        let s = ShapesSpec::read(SPEC).unwrap();
        let code = s.code(&[("H % 2 == 0".into(), "why".into())]);
        assert!(
            code.has("assumptions=[\n        # why\n        H % 2 == 0,\n    ],\n)"),
            "{code}"
        );
        let again = ShapesSpec::read(&code).unwrap();
        assert_eq!(again.assumptions, vec!["H % 2 == 0".to_string()]);
        let code2 = again.code(&[("W % 2 == 0".into(), "".into())]);
        let third = ShapesSpec::read(&code2).unwrap();
        assert_eq!(third.assumptions.len(), 2, "{code2}");
        assert!(s
            .to_dims()
            .has("dynamic_shapes = {\"x\": {0: B, 2: H, 3: W}}"));
    }
}
