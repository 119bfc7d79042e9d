//! A printed `ExportedProgram` (`print(ep)`): the inputs' shapes in the forward signature
//! (`def forward(self, x: "f32[s17 + 2, 3]", y: "f32[s17, 3]")`) and the `Range constraints:`
//! map (`{s17 + 2: VR[4, 102], s17: VR[2, 100]}`, older torch `ValueRanges(lower=2, upper=100,
//! is_bool=False)`).
//!
//! Each dynamic size becomes a dimension over its input (`L['x'].size()[0]`): a plain symbol's first
//! size is the root, a later size with the same symbol must equal it, a size `A*s + B` is
//! derived from the root (a relation), and the symbol's range is the root's. Static sizes are
//! listed in a note. The analysis then gives the sets and the spec that re-creates the program's
//! dims (derived `Dim`s included).

use super::clean::Line;
use super::logs::size_name;
use crate::message::{Message, Relation};
use crate::phrase::Phrase;
use dimguard_solver::is_size_symbol;
use dimguard_solver::report::Form;
use dimguard_solver::syntax::parse_expr;
use std::collections::HashMap;

/// Whether the lines hold a printed program's forward signature.
pub fn is_printed(lines: &[Line]) -> bool {
    lines.iter().any(|l| signature(&l.text).is_some())
}

/// The parameters of `def forward(self, x: "f32[s17 + 2, 3]", ...)`.
fn signature(t: &str) -> Option<&str> {
    let i = t.phrase("def forward(self")?;
    let rest = &t[i + "def forward(self".len()..];
    let rest = rest.strip_prefix(',').unwrap_or(rest);
    let end = rest.rfind(')')?;
    let params = &rest[..end];
    params.has(": \"").then_some(params)
}

/// Reads a printed program.
pub fn read(lines: &[Line]) -> Message {
    let mut msg = Message::empty(Form::Program);
    let mut ranges: HashMap<String, (i128, i128)> = HashMap::new();
    for l in lines {
        if let Some(i) = l.text.phrase("Range constraints:") {
            for (k, r) in range_constraints(&l.text[i + "Range constraints:".len()..]) {
                ranges.insert(k, r);
            }
        }
    }
    // The root dimension of each symbol (its first plain size).
    let mut roots: HashMap<String, String> = HashMap::new();
    let mut pending: Vec<(String, String, String)> = Vec::new();
    let mut statics: Vec<String> = Vec::new();
    let Some(params) = lines.iter().find_map(|l| signature(&l.text)) else {
        return msg;
    };
    for param in split_top(params, ',') {
        let Some((name, ty)) = param.split_once(':') else {
            continue;
        };
        let name = name.trim();
        let ty = ty.trim().trim_matches('"');
        let (Some(open), Some(close)) = (ty.find('['), ty.rfind(']')) else {
            continue;
        };
        for (i, dim) in split_top(&ty[open + 1..close], ',').iter().enumerate() {
            let dim = dim.trim();
            if dim.is_empty() {
                continue;
            }
            let source = format!("L['{name}'].size()[{i}]");
            if dim.parse::<i128>().is_ok() {
                statics.push(format!("{source} = {dim}"));
                continue;
            }
            let dname = size_name(&source);
            if is_size_symbol(dim) {
                match roots.get(dim) {
                    Some(root) => {
                        msg.dim_mut(&dname, Some(source));
                        msg.equalities.push((root.clone(), dname));
                    }
                    None => {
                        let d = msg.dim_mut(&dname, Some(source));
                        d.symbol = Some(dim.to_string());
                        d.range = ranges.get(dim).copied();
                        roots.insert(dim.to_string(), dname);
                    }
                }
            } else {
                pending.push((dname, source, dim.to_string()));
            }
        }
    }
    // Derived sizes (`s17 + 2`, `2*s3`), once every root is known.
    for (dname, source, expr) in pending {
        let atoms: Vec<String> = parse_expr(&expr)
            .map(|e| e.atoms().iter().map(|a| a.to_string()).collect())
            .unwrap_or_default();
        let root = match atoms.as_slice() {
            [a] => roots.get(a).cloned(),
            _ => None,
        };
        let d = msg.dim_mut(&dname, Some(source.clone()));
        d.range = ranges.get(&expr).copied();
        match (root, atoms.as_slice()) {
            (Some(root), [a]) => {
                let rhs = rename(&expr, a, &root);
                msg.relations.push(Relation {
                    name: dname,
                    other: root,
                    expr: rhs,
                });
            }
            _ => msg.notes.push(format!(
                "{source} is {expr} in the program: not a size derived from one input size, so it is listed without a relation"
            )),
        }
    }
    msg.notes.push(
        "a printed program shows its sizes and ranges, not its guards: the sets below are the ranges it claims; the guards `ep.module()` checks when it runs are not in the text. For the exact accepted sets save it (torch.export.save) and run `dimguard check model.pt2`".to_string(),
    );
    if !statics.is_empty() {
        msg.notes.push(format!(
            "static in the program (each must be exactly this size): {}",
            statics.join(", ")
        ));
    }
    let open: Vec<&str> = roots
        .keys()
        .filter(|s| !ranges.contains_key(*s))
        .map(String::as_str)
        .collect();
    if !open.is_empty() && !ranges.is_empty() {
        msg.notes.push(format!(
            "the printed range constraints give no range for {}",
            open.join(", ")
        ));
    }
    msg
}

/// Range-constraint maps printed alone (`{s0: ValueRanges(lower=2, upper=2, is_bool=False), s0 +
/// 1: ...}`, `{s1: VR[2, 10]}`: `ep.range_constraints` without the program): each size symbol a
/// size with its range (where several maps give one, the sizes in all of them, with a note
/// that they differ); a derived key (`s0 + 1`) is said in a note. `None` when the text holds none.
pub fn read_ranges(lines: &[Line]) -> Option<Message> {
    let mut seen: Vec<(String, Vec<(i128, i128)>)> = Vec::new();
    for l in lines {
        let t = &l.text;
        if !(t.has("ValueRanges(") || t.has(": VR[")) {
            continue;
        }
        let Some(i) = t.find('{') else { continue };
        for (k, r) in range_constraints(&t[i..]) {
            match seen.iter_mut().find(|(x, _)| *x == k) {
                Some((_, v)) => v.push(r),
                None => seen.push((k, vec![r])),
            }
        }
    }
    if seen.is_empty() {
        return None;
    }
    let mut msg = Message::empty(Form::Program);
    for (k, rs) in &seen {
        let lo = rs.iter().map(|r| r.0).max().unwrap_or(0);
        let hi = rs.iter().map(|r| r.1).min().unwrap_or(0);
        let all: Vec<String> = rs.iter().map(|(a, b)| format!("[{a}, {b}]")).collect();
        if rs.windows(2).any(|w| w[0] != w[1]) {
            msg.notes.push(format!(
                "the text gives {k} different ranges ({}): read as the sizes in all of them",
                all.join(", ")
            ));
        }
        // A size derived from one symbol the map also ranges (`8*s56: VR[8, 512]` beside
        // `s56: VR[2, 64]`): an input's size, tied to the symbol (its values are the image of
        // the symbol's range, inside its own).
        let derived_from = parse_expr(k).ok().and_then(|e| {
            let atoms: Vec<String> = e.atoms().iter().map(|a| a.to_string()).collect();
            match atoms.as_slice() {
                [a] if is_size_symbol(a) && seen.iter().any(|(x, _)| x == a) => Some(a.clone()),
                _ => None,
            }
        });
        if is_size_symbol(k) && lo <= hi {
            let d = msg.dim_mut(k, None);
            d.symbol = Some(k.clone());
            d.range = Some((lo, hi));
        } else if let (Some(root), true) = (derived_from, lo <= hi) {
            let d = msg.dim_mut(k, None);
            d.symbol = Some(k.clone());
            d.range = Some((lo, hi));
            msg.relations.push(Relation {
                name: k.clone(),
                other: root,
                expr: k.clone(),
            });
        } else {
            msg.notes.push(format!(
                "{k} (an expression of the sizes, not a size) has the range {}",
                all.join(", ")
            ));
        }
    }
    msg.notes.push(
        "the text holds only range constraints (what the exported program claims of each size symbol), no guards and no input sources: the sets are those ranges. For the exact accepted sets save the program (torch.export.save) and run `dimguard check model.pt2`".to_string(),
    );
    Some(msg)
}

/// `{s17 + 2: VR[4, 102], s17: VR[2, 100]}` or `{s0: ValueRanges(lower=2, upper=int_oo,
/// is_bool=False)}` → (key, range); `int_oo` is no bound.
fn range_constraints(t: &str) -> Vec<(String, (i128, i128))> {
    let t = t.trim();
    let inner = t
        .strip_prefix('{')
        .map(|r| r.rsplit_once('}').map_or(r, |(a, _)| a))
        .unwrap_or(t);
    let mut out = Vec::new();
    for entry in split_top(inner, ',') {
        let Some((k, v)) = rsplit_top_colon(&entry) else {
            continue;
        };
        let v = v.trim();
        let range = if let Some(r) = v.strip_prefix("VR") {
            super::logs::parse_range(r)
        } else if let Some(r) = v.strip_prefix("ValueRanges(") {
            let field = |f: &str| {
                r.split(',')
                    .find_map(|p| p.trim().strip_prefix(f))
                    .map(|x| x.trim_end_matches(')').trim().to_string())
            };
            match (field("lower="), field("upper=")) {
                (Some(lo), Some(hi)) => super::logs::parse_range(&format!("[{lo}, {hi}]")),
                _ => None,
            }
        } else {
            None
        };
        if let Some(r) = range {
            out.push((k.trim().to_string(), r));
        }
    }
    out
}

/// The last `:` outside brackets (keys are expressions, values `VR[..]`).
fn rsplit_top_colon(s: &str) -> Option<(String, String)> {
    let mut depth = 0i64;
    let mut at = None;
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            ':' if depth == 0 => at = Some(i),
            _ => {}
        }
    }
    let i = at?;
    Some((s[..i].to_string(), s[i + 1..].to_string()))
}

/// Splits at `sep` outside brackets.
fn split_top(s: &str, sep: char) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut depth = 0i64;
    for c in s.chars() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
        if c == sep && depth == 0 {
            out.push(String::new());
        } else {
            out.last_mut().expect("a part").push(c);
        }
    }
    out
}

/// `s17 + 2` with `s17` → `y_0` gives `y_0 + 2` (whole words only).
fn rename(expr: &str, sym: &str, to: &str) -> String {
    let mut out = String::new();
    let b = expr.as_bytes();
    let mut i = 0;
    while i < expr.len() {
        let word = |j: usize| j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_');
        if expr[i..].starts_with(sym) && (i == 0 || !word(i - 1)) && !word(i + sym.len()) {
            out.push_str(to);
            i += sym.len();
        } else {
            let c = expr[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::clean;

    #[test]
    fn a_printed_program_with_a_derived_size() {
        let text = "ExportedProgram:\n    class GraphModule(torch.nn.Module):\n        def forward(self, x: \"f32[s17 + 2, 3]\", y: \"f32[s17, 3]\"):\n            return (add,)\n\nRange constraints: {s17 + 2: VR[4, 102], s17: VR[2, 100]}\n";
        let lines = clean::lines(text);
        assert!(is_printed(&lines));
        let m = read(&lines);
        assert_eq!(m.form, Form::Program);
        let names: Vec<&str> = m.dims.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["y_0", "x_0"]);
        assert_eq!(m.dims[0].range, Some((2, 100)));
        assert_eq!(m.relations[0].expr, "y_0 + 2");
        assert!(m.notes.iter().any(|n| n.has("L['x'].size()[1] = 3")));
        let r = range_constraints("{s0: ValueRanges(lower=2, upper=int_oo, is_bool=False)}");
        assert_eq!(r[0].0, "s0");
        assert_eq!(r[0].1 .0, 2);
    }
}
