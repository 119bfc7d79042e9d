//! Every piece of Python dimguard prints: identifiers, `Dim` definitions, derived dims, the
//! `dynamic_shapes` dict, `torch._check` lines and padding formulas. Reports hold the strings;
//! this module is the only place that writes them.
//!
//! ```
//! use dimguard_solver::python::{derived, dim_code, dynamic_shapes_dict};
//! use dimguard_solver::Progression;
//!
//! // A step-64 progression is a derived dim of a hidden root.
//! let p = Progression { lo: 136, hi: 2120, modulus: 64, residue: 8 };
//! assert_eq!(dim_code("dim_2", &p), "_dim_2 = Dim('_dim_2', min=2, max=33)\ndim_2 = 64*_dim_2 + 8");
//! // Derived dims are written with their signs: never `1*h + 3` or `2*h + -1`.
//! assert_eq!(derived("h", 1, 3), "h + 3");
//! assert_eq!(derived("h", 2, -1), "2*h - 1");
//! assert_eq!(
//!     dynamic_shapes_dict([("image1", vec![(2, "h".to_string()), (3, "w".to_string())])]),
//!     "dynamic_shapes = {\"image1\": {2: h, 3: w}}"
//! );
//! ```

use crate::num::{q, Q};
use crate::types::Progression;
use crate::types::SIZE_MAX;

/// The import every printed spec starts with.
pub const IMPORT: &str = "from torch.export import Dim";

/// The import a torch.compile block (a recompile's advice) starts with.
pub const COMPILE_IMPORT: &str = "import torch";

/// `torch._dynamo.mark_dynamic(x, 0, min=2, max=8)`: dimension `index` of `tensor` kept dynamic
/// by torch.compile over `min..=max`; a bound that is `None` is left to torch's default.
pub fn mark_dynamic(tensor: &str, index: usize, min: Option<i128>, max: Option<i128>) -> String {
    let mut args = vec![tensor.to_string(), index.to_string()];
    args.extend(min.map(|v| format!("min={v}")));
    args.extend(max.map(|v| format!("max={v}")));
    format!("torch._dynamo.mark_dynamic({})", args.join(", "))
}

/// A valid Python identifier from a dimension's debug name.
pub fn py_name(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    while s.contains("__") && !name.starts_with("__") {
        s = s.replace("__", "_");
    }
    let s = s.trim_end_matches('_').to_string();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        format!("d_{s}")
    } else {
        s
    }
}

/// Python that defines `name` as the progression, to paste before `dynamic_shapes`.
///
/// `Dim('h', min=.., max=..)` for a step of 1, `_h = Dim('_h', ...)` and `h = m*_h + r` for a
/// larger step (the root from 2 at least, which torch never specializes: `r` is the residue, or
/// below it by a multiple of `m` when the least size is under `2*m`), and a plain integer for a
/// single value. A maximum of [`SIZE_MAX`] is left out (unbounded).
pub fn dim_code(name: &str, p: &Progression) -> String {
    let name = py_name(name);
    if p.count() == 1 {
        return format!("{name} = {}", p.lo);
    }
    let max = |v: i128, unbounded: bool| {
        if unbounded {
            String::new()
        } else {
            format!(", max={v}")
        }
    };
    let unbounded = p.hi > SIZE_MAX - p.modulus;
    if p.modulus == 1 {
        return format!(
            "{name} = Dim('{name}', min={}{})",
            p.lo,
            max(p.hi, unbounded)
        );
    }
    let root = format!("_{name}");
    // The root starts at 2 at least: torch specializes a root traced at 0 or 1 ("You marked
    // 32*_w + 16 as dynamic but your code specialized it to be a constant (48)", pytorch#176349),
    // so the same sizes are written `32*_w - 16` with `_w` from 2, whatever size is traced.
    let kmin = (p.lo - p.residue) / p.modulus;
    let shift = (2 - kmin).max(0);
    let (kmin, kmax) = (kmin + shift, (p.hi - p.residue) / p.modulus + shift);
    format!(
        "{root} = Dim('{root}', min={kmin}{})\n{name} = {}",
        max(kmax, unbounded),
        derived(&root, p.modulus, p.residue - shift * p.modulus)
    )
}

/// `coef*root + offset` as Python: `h`, `h + 3`, `2*h - 1`, `8*h`.
pub fn derived(root: &str, coef: i128, offset: i128) -> String {
    linear(q(coef), root, offset)
}

/// `k*x + c` with a rational `k` (`x`, `8*x + 1`, `1/2*x - 3`).
pub fn linear(k: Q, x: &str, c: i128) -> String {
    let term = if k == q(1) {
        x.to_string()
    } else {
        format!("{k}*{x}")
    };
    match c {
        0 => term,
        c if c > 0 => format!("{term} + {c}"),
        c => format!("{term} - {}", c.unsigned_abs()),
    }
}

/// `name = expr` (a derived or related dim).
pub fn assign(name: &str, expr: &str) -> String {
    format!("{} = {expr}", py_name(name))
}

/// `name` written from another size's `Dim` `root`: `name = root  # must always be equal` for
/// an equal size, else `name = coef*root + offset`.
pub fn alias(name: &str, root: &str, coef: i128, offset: i128) -> String {
    if (coef, offset) == (1, 0) {
        equal(name, root)
    } else {
        assign(name, &derived(&py_name(root), coef, offset))
    }
}

/// `b = a  # must always be equal`.
pub fn equal(b: &str, a: &str) -> String {
    format!("{} = {}  # must always be equal", py_name(b), py_name(a))
}

/// `b = a  # one Dim for both ...`: a size the spec writes as its partner by choice (one `Dim`
/// shared by two sizes the guards do not force equal, where more pairs pass on the diagonal
/// than in any box), never "must always be equal".
pub fn shared(b: &str, a: &str) -> String {
    let (b, a) = (py_name(b), py_name(a));
    format!("{b} = {a}  # one Dim for both: more pairs pass with {b} == {a} than in any box (see linked)")
}

/// `name = Dim.AUTO`, for a dimension whose every size in `lo..hi` passes.
pub fn dim_auto(name: &str, lo: i128, hi: i128) -> String {
    format!(
        "{} = Dim.AUTO  # every size in {lo}..{hi} passes; see advice",
        py_name(name)
    )
}

/// `name = Dim('name', min=.., max=..)` (`Dim('label', ..)` with a label of its own), bounds
/// left out when not given.
pub fn root_dim(name: &str, label: Option<&str>, min: Option<i128>, max: Option<i128>) -> String {
    let mut args = format!("'{}'", label.unwrap_or(name));
    if let Some(m) = min {
        args.push_str(&format!(", min={m}"));
    }
    if let Some(m) = max {
        args.push_str(&format!(", max={m}"));
    }
    format!("{name} = Dim({args})")
}

/// The line of a size the others define (`tokens_1 = ((image_3 // 16)*(image_2 // 16))`):
/// torch derives it from them, so it is a `Dim.AUTO` over the definition's range (`max` left
/// out at [`crate::SIZE_MAX`]), with the relation in a comment.
pub fn defined_line(name: &str, min: Option<i128>, max: Option<i128>, relation: &str) -> String {
    let max = max.filter(|&m| m < crate::types::SIZE_MAX);
    format!(
        "{} = {}  # {relation}: torch derives it from the sizes it is defined by",
        py_name(name),
        auto_hint(min, max)
    )
}

/// `Dim.AUTO`, or `Dim.AUTO(min=.., max=..)` with the bounds given.
pub fn auto_hint(min: Option<i128>, max: Option<i128>) -> String {
    let args: Vec<String> = [("min", min), ("max", max)]
        .iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k}={v}")))
        .collect();
    if args.is_empty() {
        "Dim.AUTO".into()
    } else {
        format!("Dim.AUTO({})", args.join(", "))
    }
}

/// `Dim.DYNAMIC(min=.., max=..)`: a size torch keeps dynamic over the range and checks at run
/// time where its solver cannot decide a guard (where it refuses a `Dim`).
pub fn dynamic_hint(min: Option<i128>, max: Option<i128>) -> String {
    auto_hint(min, max).replacen("Dim.AUTO", "Dim.DYNAMIC", 1)
}

/// `Dim.STATIC`.
pub const STATIC: &str = "Dim.STATIC";

/// A comment line about a dimension: `# name: text`.
pub fn dim_comment(name: &str, text: &str) -> String {
    format!("# {}: {text}", py_name(name))
}

/// One entry of a printed `dynamic_shapes` dict: its index, its value as Python, and a comment.
pub type DictItem = (usize, String, Option<String>);

/// A paste-ready spec: the `Dim` import, one definition per dimension, comments, and the
/// `dynamic_shapes` dict last. The one builder of every paste block (`diagnose`'s, `check`'s
/// corrected spec, a merged or re-printed user spec, a cover's pieces): lines go in with
/// [`SpecBlock::code`], each size's dict entry with [`SpecBlock::entry`], and
/// [`SpecBlock::finish`] writes the dict once, after every line.
///
/// ```
/// use dimguard_solver::python::SpecBlock;
///
/// let mut b = SpecBlock::new();
/// b.code("w = Dim('w', min=2)");
/// b.entry("x", 3, "w", None);
/// b.code("h = Dim('h', min=2)");
/// b.entry("x", 2, "h", None);
/// assert!(b.finish().ends_with("dynamic_shapes = {\"x\": {2: h, 3: w}}"));
/// ```
#[derive(Debug, Clone)]
pub struct SpecBlock {
    lines: Vec<String>,
    /// Each input's dict entries, inputs in the order first named; `None` until an entry (or
    /// [`SpecBlock::with_dict`]) asks for the dict.
    dict: Option<Vec<(String, Vec<DictItem>)>>,
}

impl Default for SpecBlock {
    fn default() -> Self {
        SpecBlock::new()
    }
}

impl SpecBlock {
    /// A block that starts with [`IMPORT`] and a blank line.
    pub fn new() -> SpecBlock {
        SpecBlock::with_import(IMPORT)
    }

    /// A block that starts with `import` ([`IMPORT`], [`COMPILE_IMPORT`]) and a blank line.
    pub fn with_import(import: &str) -> SpecBlock {
        SpecBlock {
            lines: vec![import.to_string(), String::new()],
            dict: None,
        }
    }

    /// Appends Python (one or more lines).
    pub fn code(&mut self, code: &str) {
        self.lines.extend(code.lines().map(String::from));
    }

    /// Appends a `# text` comment line.
    pub fn comment(&mut self, text: &str) {
        self.lines.push(format!("# {text}"));
    }

    /// Appends a blank line.
    pub fn blank(&mut self) {
        self.lines.push(String::new());
    }

    /// Adds `index: value` to `input`'s entry of the `dynamic_shapes` dict, with a comment at
    /// the end of its line when given. Inputs keep the order they are first named in; each
    /// input's indices are written in order; an entry given twice is written once.
    pub fn entry(
        &mut self,
        input: &str,
        index: usize,
        value: impl Into<String>,
        comment: Option<String>,
    ) {
        let inputs = self.dict.get_or_insert_with(Vec::new);
        let item = (index, value.into(), comment);
        match inputs.iter_mut().find(|(i, _)| i == input) {
            Some((_, items)) => items.push(item),
            None => inputs.push((input.to_string(), vec![item])),
        }
    }

    /// Writes the dict even when no size gets an entry (`dynamic_shapes = {}`).
    pub fn with_dict(&mut self) {
        self.dict.get_or_insert_with(Vec::new);
    }

    /// The block's text: the lines, each definition after the definitions it reads (a tied
    /// size written from a partner of a later input, `a_2 = b_2`, moves after `b_2`'s line;
    /// otherwise in the order given), then a blank line and the dict, when any entry was
    /// given ([`dynamic_shapes_dict`]; one entry a line when any entry has a comment).
    pub fn finish(mut self) -> String {
        if let Some(mut inputs) = self.dict.take() {
            for (_, items) in &mut inputs {
                items.sort_by_key(|(k, ..)| *k);
                items.dedup();
            }
            self.blank();
            self.lines.push(dict_text(inputs));
        }
        defined_before_use(self.lines).join("\n")
    }
}

/// The dict's text: on one line, or one entry a line when any entry has a comment.
fn dict_text(inputs: Vec<(String, Vec<DictItem>)>) -> String {
    if inputs
        .iter()
        .all(|(_, d)| d.iter().all(|(.., c)| c.is_none()))
    {
        return dynamic_shapes_dict(
            inputs
                .into_iter()
                .map(|(i, d)| (i, d.into_iter().map(|(k, v, _)| (k, v)).collect())),
        );
    }
    let mut lines = vec!["dynamic_shapes = {".to_string()];
    for (input, dims) in inputs {
        lines.push(format!("    \"{input}\": {{"));
        for (k, v, c) in dims {
            let comment = c.map_or_else(String::new, |c| format!("  # {}", one_line(&c)));
            lines.push(format!("        {k}: {v},{comment}"));
        }
        lines.push("    },".into());
    }
    lines.push("}".into());
    lines.join("\n")
}

/// The name a line `name = ...` defines.
fn defines(line: &str) -> Option<&str> {
    let (lhs, _) = line.split_once(" = ")?;
    let ident = |t: &str| {
        t.chars()
            .next()
            .is_some_and(|c| c.is_alphabetic() || c == '_')
            && t.chars().all(|c| c.is_alphanumeric() || c == '_')
    };
    ident(lhs).then_some(lhs)
}

/// The identifiers a line's right-hand side reads (its comment aside).
fn reads(line: &str) -> Vec<&str> {
    if line.trim_start().starts_with('#') {
        return Vec::new();
    }
    let rhs = line.split_once(" = ").map_or(line, |(_, r)| r);
    let rhs = rhs.split_once('#').map_or(rhs, |(code, _)| code);
    rhs.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .collect()
}

/// `lines` stably reordered so that each definition comes after the definitions of the block
/// it reads; lines in a cycle (never printed) keep their place at the end.
fn defined_before_use(lines: Vec<String>) -> Vec<String> {
    use std::collections::BTreeSet;
    let names: BTreeSet<String> = lines
        .iter()
        .filter_map(|l| defines(l).map(String::from))
        .collect();
    let mut done: BTreeSet<String> = BTreeSet::new();
    let ready = |l: &str, done: &BTreeSet<String>| {
        let me = defines(l);
        reads(l)
            .iter()
            .all(|t| Some(*t) == me || !names.contains(*t) || done.contains(*t))
    };
    let mut out = Vec::with_capacity(lines.len());
    let mut waiting: Vec<String> = Vec::new();
    for l in lines {
        if !ready(&l, &done) {
            waiting.push(l);
            continue;
        }
        if let Some(n) = defines(&l) {
            done.insert(n.to_string());
        }
        out.push(l);
        // Lines that waited for this one.
        while let Some(i) = waiting.iter().position(|w| ready(w, &done)) {
            let w = waiting.remove(i);
            if let Some(n) = defines(&w) {
                done.insert(n.to_string());
            }
            out.push(w);
        }
    }
    out.extend(waiting);
    out
}

/// `text` on one line (a comment must not end early and leave code behind it).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `dynamic_shapes = {"x": {0: b, 2: h}, ...}`, inputs and indices in the order given.
pub fn dynamic_shapes_dict<I, S>(inputs: I) -> String
where
    I: IntoIterator<Item = (S, Vec<(usize, String)>)>,
    S: AsRef<str>,
{
    let body: Vec<String> = inputs
        .into_iter()
        .map(|(input, dims)| {
            let e: Vec<String> = dims.iter().map(|(k, n)| format!("{k}: {n}")).collect();
            format!("\"{}\": {{{}}}", input.as_ref(), e.join(", "))
        })
        .collect();
    format!("dynamic_shapes = {{{}}}", body.join(", "))
}

/// The two `torch._check` lines that decide a data-dependent guard (written as Python in
/// `guard`): assert it, or assert its negation.
pub fn torch_check(guard: &str) -> [String; 2] {
    [
        format!("torch._check({guard})"),
        format!("torch._check(torch.sym_not({guard}))"),
    ]
}

/// The `torch._check` lines that hold an unbacked size `name` to the progression `p` (its
/// bounds, and its step where it has one): what the model states where it makes the size,
/// in place of the `Dim` an input size gets. A size-like symbol's own lower bound (0) and
/// torch's largest size need no line.
pub fn unbacked_checks(name: &str, p: &Progression) -> Vec<String> {
    if p.lo == p.hi {
        return vec![format!("torch._check({name} == {})", p.lo)];
    }
    let mut out = Vec::new();
    if p.lo > 0 {
        out.push(format!("torch._check({name} >= {})", p.lo));
    }
    if p.hi < SIZE_MAX {
        out.push(format!("torch._check({name} <= {})", p.hi));
    }
    if p.modulus > 1 {
        out.push(format!(
            "torch._check({name} % {} == {})",
            p.modulus, p.residue
        ));
    }
    out
}

/// Python giving the next size the progression admits, for an input size `x`.
pub fn padding_formula(p: &Progression) -> String {
    if p.modulus == 1 {
        format!("max(x, {})", p.lo)
    } else {
        format!("x + ({} - x) % {}", p.residue, p.modulus)
    }
}

/// The input and dimension a size source names, in the spellings torch prints:
/// `x.shape[2]`, `x.size()[2]`, `x.size(2)`, `L['x'].size()[2]`, `L['kwargs']['x'].size()[2]`.
pub fn input_dim(src: &str) -> Option<(String, usize)> {
    let s: String = src.chars().filter(|c| !c.is_whitespace()).collect();
    if let Some(at) = source_input(&s) {
        return Some(at);
    }
    let (base, k) = if let Some((b, k)) = s.rsplit_once(".shape[") {
        (b, k.strip_suffix(']')?)
    } else if let Some((b, k)) = s.rsplit_once(".size()[") {
        (b, k.strip_suffix(']')?)
    } else if let Some((b, k)) = s.rsplit_once(".size(") {
        (b, k.strip_suffix(')')?)
    } else {
        return None;
    };
    let k: usize = k.parse().ok()?;
    let ok = base.starts_with(|c: char| c.is_alphabetic() || c == '_')
        && base.chars().all(|c| c.is_alphanumeric() || c == '_');
    ok.then(|| (base.to_string(), k))
}

/// The input and index a guard source names: `L['x'].size()[2]` → `("x", 2)`,
/// `L['kwargs']['ids'].size()[1]` → `("ids", 1)`.
pub fn source_input(src: &str) -> Option<(String, usize)> {
    let (base, dim) = src.rsplit_once(".size()[")?;
    let dim: usize = dim.strip_suffix(']')?.parse().ok()?;
    let base = base.strip_prefix("L['kwargs']").unwrap_or(base);
    let inner = base
        .strip_prefix("L['")
        .or_else(|| base.strip_prefix("['"))?;
    let name = inner.strip_suffix("']")?;
    (!name.contains('\'') && !name.contains('[')).then(|| (name.to_string(), dim))
}

/// The guard source of an input's dimension: `("x", 2)` → `L['x'].size()[2]`.
pub fn input_source(input: &str, index: usize) -> String {
    format!("L['{input}'].size()[{index}]")
}

/// The imports a printed `ShapesSpec` starts with.
pub const SHAPES_IMPORT: &str =
    "import torch\nfrom torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec";

/// The assumptions a diagnosis asks for, each as `(code, comment)`: the branch of each
/// data-dependent expression that holds over the whole range (it removes nothing), else the
/// branch the traced example takes (and how many sizes it removes). An expression with neither
/// gives no assumption: its comment says what to choose between.
pub fn assumptions(dd: &[crate::report::DataDependent]) -> (Vec<(String, String)>, Vec<String>) {
    let mut items: Vec<(String, String)> = Vec::new();
    let mut open: Vec<String> = Vec::new();
    for d in dd {
        let range = d
            .range
            .map(|[a, b]| {
                format!(
                    "{a}..{}",
                    if b == SIZE_MAX {
                        "unbounded".to_string()
                    } else {
                        b.to_string()
                    }
                )
            })
            .unwrap_or_default();
        let total = d.range.map(|[a, b]| (b - a + 1) as u128).unwrap_or(0);
        match (&d.assumption, d.removes) {
            (Some(code), Some(k)) => {
                let comment = match d.always {
                    Some(b) => format!(
                        "torch cannot decide `{}`; it is {b} at every size of {range}: this removes nothing",
                        d.guard
                    ),
                    None if d.range.is_none() => format!(
                        "`{}` is {}; the traced sizes take this branch: this removes {k} combinations",
                        d.guard,
                        d.holds.as_deref().unwrap_or("decided"),
                    ),
                    None => format!(
                        "`{}` is true at {} and false at {} of the {total} sizes of {range}; the traced size {} takes this branch: this removes {k}",
                        d.guard,
                        d.when_true.as_ref().map_or(0, |f| f.count),
                        d.when_false.as_ref().map_or(0, |f| f.count),
                        d.example.map_or_else(|| "?".into(), |x| x.to_string()),
                    ),
                };
                if !items.iter().any(|(c, _)| c == code) {
                    items.push((code.clone(), comment));
                }
            }
            _ => open.push(match &d.undecided {
                Some(u) => format!("`{}`: {u}", d.guard),
                None => format!(
                    "`{}` is true at {} and false at {} of the {total} sizes of {range}: give the traced size (--example) to choose the branch your model takes",
                    d.guard,
                    d.when_true.as_ref().map_or(0, |f| f.count),
                    d.when_false.as_ref().map_or(0, |f| f.count),
                ),
            }),
        }
    }
    (items, open)
}

/// The `ShapesSpec` block when the user's spec is not given: a `ShapeVar` for each size the
/// data-dependent expressions name, and the assumptions to add to the user's `ShapesSpec`.
pub fn shapes_spec_block(dd: &[crate::report::DataDependent]) -> String {
    let mut out = format!("{SHAPES_IMPORT}\n\n");
    let mut seen: Vec<String> = Vec::new();
    for s in dd.iter().flat_map(|d| &d.symbols) {
        if seen.contains(&s.name) {
            continue;
        }
        seen.push(s.name.clone());
        let (lo, hi) = s.range.map_or((0, SIZE_MAX), |[a, b]| (a, b));
        let max = if hi == SIZE_MAX {
            String::new()
        } else {
            format!(", max={hi}")
        };
        let src = s.source.as_ref().map_or_else(
            || format!("  # {}", s.symbol),
            |x| format!("  # {x} ({})", s.symbol),
        );
        out.push_str(&format!(
            "{} = ShapeVar(\"{}\", min={lo}{max}){src}\n",
            s.name, s.name
        ));
    }
    let (items, open) = assumptions(dd);
    out.push_str(
        "# Add to your ShapesSpec(..., assumptions=assumptions), each size written as above\n",
    );
    out.push_str("# (pass your ShapesSpec as --spec to get it back whole):\nassumptions = [\n");
    for (code, comment) in &items {
        for l in comment.lines() {
            out.push_str(&format!("    # {l}\n"));
        }
        out.push_str(&format!("    {code},\n"));
    }
    out.push(']');
    for o in &open {
        out.push_str(&format!("\n# {o}"));
    }
    out
}

/// The `ShapesSpec` form of a diagnosis of `Dim` guards (`--format shapesspec`): a `ShapeVar`
/// per dimension over its best suggestion's range, and a step other than 1 as an assumption
/// (`h % 64 == 8`: torch 2.15 refuses a derived slot such as `64*k + 8` unless `k` is a bare
/// slot too). A dimension without a suggestion is left out, with a comment.
pub fn shapes_spec_from_dims(dims: &[crate::report::DimReport]) -> String {
    let mut out = format!("{SHAPES_IMPORT}\n\n");
    let mut assumptions: Vec<String> = Vec::new();
    for d in dims {
        let name = py_name(&d.name);
        let src = d
            .source
            .as_ref()
            .map_or_else(String::new, |s| format!("  # {s}"));
        match d.answer.suggestions.first() {
            Some(p) => {
                let max = if p.hi == SIZE_MAX {
                    String::new()
                } else {
                    format!(", max={}", p.hi)
                };
                out.push_str(&format!(
                    "{name} = ShapeVar(\"{name}\", min={}{max}){src}\n",
                    p.lo
                ));
                if p.modulus > 1 {
                    assumptions.push(format!("{name} % {} == {}", p.modulus, p.residue));
                }
            }
            None => out.push_str(&format!(
                "# {name}: no size to admit ({src}){}\n",
                d.undecided
                    .as_deref()
                    .map(|u| format!(": {u}"))
                    .unwrap_or_default()
            )),
        }
    }
    out.push_str("# Write each size as above in your TensorSpecs, and pass assumptions=assumptions to ShapesSpec:\n");
    out.push_str("assumptions = [\n");
    for a in &assumptions {
        out.push_str(&format!("    {a},\n"));
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_definition_comes_after_the_ones_it_reads() {
        let mut b = SpecBlock::new();
        b.code("a_0 = Dim('a_0', min=2)");
        b.code("a_2 = b_2  # any size in b_2's block of 4 passes; this spec takes the same size");
        b.comment("b_2 = why");
        b.code("_b_2 = Dim('_b_2', min=2)");
        b.code("b_2 = 4*_b_2");
        b.code("c_2 = b_2 + 1");
        b.entry("a", 2, "a_2", None);
        b.entry("a", 0, "a_0", None);
        let text = b.finish();
        let at = |l: &str| text.lines().position(|x| x.starts_with(l)).unwrap();
        assert!(
            at("_b_2 =") < at("b_2 =") && at("b_2 =") < at("a_2 ="),
            "{text}"
        );
        assert!(
            at("a_0 =") < at("_b_2 =") && at("a_2 =") < at("c_2 ="),
            "{text}"
        );
        assert!(
            text.ends_with("dynamic_shapes = {\"a\": {0: a_0, 2: a_2}}"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 10, "{text}");
    }

    use super::*;

    #[test]
    fn code_for_each_shape() {
        let code = |name: &str, lo, hi, modulus, residue| {
            dim_code(
                name,
                &Progression {
                    lo,
                    hi,
                    modulus,
                    residue,
                },
            )
        };
        assert_eq!(
            code("dim_2", 136, 2120, 64, 8),
            "_dim_2 = Dim('_dim_2', min=2, max=33)\ndim_2 = 64*_dim_2 + 8"
        );
        assert_eq!(
            code("h", 100, 1000, 1, 0),
            "h = Dim('h', min=100, max=1000)"
        );
        assert_eq!(code("h", 224, 224, 1, 0), "h = 224");
        assert_eq!(
            code("w", 8, SIZE_MAX - 7, 8, 0),
            "_w = Dim('_w', min=2)\nw = 8*_w - 8"
        );
        // The root never starts at 0 or 1 (torch specializes it there): 48..496 step 32 is
        // 32*_w - 16 with _w from 2, not 32*_w + 16 from 1.
        assert_eq!(
            code("w", 48, 496, 32, 16),
            "_w = Dim('_w', min=2, max=16)\nw = 32*_w - 16"
        );
        assert_eq!(py_name("L['x'].size()[0]"), "L_x_size_0");
        assert_eq!(py_name("_2"), "_2");
    }

    #[test]
    fn derived_dims_carry_their_signs() {
        assert_eq!(derived("x", 1, 0), "x");
        assert_eq!(derived("x", 1, 3), "x + 3");
        assert_eq!(derived("x", 1, -1), "x - 1");
        assert_eq!(derived("x", 2, 0), "2*x");
        assert_eq!(derived("x", 2, -1), "2*x - 1");
        assert_eq!(derived("x", 4, 1), "4*x + 1");
        assert_eq!(
            derived("x", 1, i128::MIN),
            format!("x - {}", i128::MIN.unsigned_abs())
        );
        assert_eq!(linear(Q::new(1, 2), "s0", -3), "1/2*s0 - 3");
    }

    #[test]
    fn source_inputs() {
        assert_eq!(source_input("L['x'].size()[2]"), Some(("x".into(), 2)));
        assert_eq!(
            source_input("L['kwargs']['input_ids'].size()[1]"),
            Some(("input_ids".into(), 1))
        );
        assert_eq!(source_input("L['args'][0].size()[1]"), None);
        assert_eq!(source_input("s0"), None);
        assert_eq!(source_input(&input_source("x", 3)), Some(("x".into(), 3)));
    }

    #[test]
    fn dict_and_checks() {
        assert_eq!(
            dynamic_shapes_dict([("a", vec![(0, "b".into())]), ("c", vec![])]),
            "dynamic_shapes = {\"a\": {0: b}, \"c\": {}}"
        );
        assert_eq!(
            torch_check("u0 > 2"),
            [
                "torch._check(u0 > 2)",
                "torch._check(torch.sym_not(u0 > 2))"
            ]
        );
    }
}
