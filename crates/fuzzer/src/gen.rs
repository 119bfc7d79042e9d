//! Input generators: structured (proptest strategies for guards, ranges, messages, specs) and
//! mutational (bytes of the real fixture messages, values of the real fixture programs).
//!
//! Every input is a pure function of one 32-byte seed, so a finding is reproduced by its
//! execution number and the run's seed.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

/// One execution's input.
pub enum Input {
    /// A message for `diagnose`.
    Message(String),
    /// A message and a spec for `verify`.
    Verify(String, String),
    /// A program's JSON for `check`.
    Program(Vec<u8>),
}

impl Input {
    pub fn describe(&self) -> String {
        match self {
            Input::Message(m) => m.clone(),
            Input::Verify(m, s) => format!("{m}\n--- spec ---\n{s}"),
            Input::Program(p) => String::from_utf8_lossy(p).into_owned(),
        }
    }
}

/// A guard expression, printed in either syntax PyTorch uses. Python's semantics apply to every
/// combination (a comparison in arithmetic is 0 or 1).
#[derive(Debug, Clone)]
pub enum G {
    /// The dimension's size.
    X,
    /// Another dimension's size (a guard over two sizes).
    Y,
    /// An integer literal.
    Int(i128),
    /// A literal as written (`1e3`, `0.5`, a 40-digit number).
    Lit(&'static str),
    /// `a OP b` for `+ - * // % / **`.
    Bin(&'static str, Box<G>, Box<G>),
    /// `-a`.
    Neg(Box<G>),
    /// A function call (`max`, `min`, `abs`, `math.floor`, `LShift`, ...).
    Call(&'static str, Vec<G>),
    /// `a CMP b`.
    Cmp(&'static str, Box<G>, Box<G>),
    /// `a and b` / `a or b`.
    Logic(&'static str, Box<G>, Box<G>),
    /// `not a`.
    Not(Box<G>),
    /// `a if c else b`.
    Ite(Box<G>, Box<G>, Box<G>),
}

/// Which syntax to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// `((((-1) + L['x'].size()[2]) // 2) % 2) != 0` (PyTorch 2.4+).
    GuardCode,
    /// `Ne(Mod((L['x'].size()[2] - 1)//2, 2), 0)` (older PyTorch).
    Sympy,
}

impl G {
    /// The guard as PyTorch would print it, with `x` and `y` the two sizes' sources.
    pub fn print(&self, s: Syntax, x: &str, y: &str) -> String {
        let p = |g: &G| g.print(s, x, y);
        match self {
            G::X => x.to_string(),
            G::Y => y.to_string(),
            G::Int(n) if *n < 0 => format!("({n})"),
            G::Int(n) => n.to_string(),
            G::Lit(t) => t.to_string(),
            G::Bin("%", a, b) if s == Syntax::Sympy => format!("Mod({}, {})", p(a), p(b)),
            G::Bin(op, a, b) => format!("({} {op} {})", p(a), p(b)),
            G::Neg(a) => format!("(-{})", p(a)),
            G::Call(f, args) => {
                let name = match (s, *f) {
                    (Syntax::Sympy, "max") => "Max",
                    (Syntax::Sympy, "min") => "Min",
                    (Syntax::Sympy, "abs") => "Abs",
                    (Syntax::Sympy, "math.floor") => "floor",
                    (Syntax::Sympy, "math.ceil") => "ceiling",
                    (_, f) => f,
                };
                let a: Vec<String> = args.iter().map(p).collect();
                format!("{name}({})", a.join(", "))
            }
            G::Cmp(op, a, b) if s == Syntax::Sympy => {
                let f = match *op {
                    "==" => "Eq",
                    "!=" => "Ne",
                    "<" => "Lt",
                    "<=" => "Le",
                    ">" => "Gt",
                    _ => "Ge",
                };
                format!("{f}({}, {})", p(a), p(b))
            }
            G::Cmp(op, a, b) => format!("({} {op} {})", p(a), p(b)),
            G::Logic(op, a, b) if s == Syntax::Sympy => {
                let f = if *op == "and" { "And" } else { "Or" };
                format!("{f}({}, {})", p(a), p(b))
            }
            G::Logic(op, a, b) => format!("({} {op} {})", p(a), p(b)),
            G::Not(a) if s == Syntax::Sympy => format!("Not({})", p(a)),
            G::Not(a) => format!("(not {})", p(a)),
            G::Ite(c, a, b) if s == Syntax::Sympy => {
                format!("Piecewise(({}, {}), ({}, True))", p(a), p(c), p(b))
            }
            G::Ite(c, a, b) => format!("({} if {} else {})", p(a), p(c), p(b)),
        }
    }
}

fn leaf(two_sizes: bool) -> impl Strategy<Value = G> {
    let y = if two_sizes { 1 } else { 0 };
    prop_oneof![
        6 => Just(G::X),
        y => Just(G::Y),
        5 => (-12i128..40).prop_map(G::Int),
        1 => prop::sample::select(vec![
            0i128,
            1,
            2,
            64,
            1000,
            i64::MAX as i128,
            1i128 << 62,
            -(1i128 << 40),
        ])
        .prop_map(G::Int),
        1 => prop::sample::select(vec![
            "0.5",
            "1e3",
            "2.0",
            "0.25",
            "1e-05",
            "10000000000000000000000000000000000000000",
        ])
        .prop_map(G::Lit),
    ]
}

/// Guard expressions: arithmetic, comparisons and connectives mixed freely.
pub fn guard(two_sizes: bool) -> impl Strategy<Value = G> {
    leaf(two_sizes).prop_recursive(5, 40, 3, |inner| {
        let b = |g: G| Box::new(g);
        prop_oneof![
            4 => (prop::sample::select(vec!["+", "-", "*"]), inner.clone(), inner.clone())
                .prop_map(move |(op, x, y)| G::Bin(op, b(x), b(y))),
            4 => (prop::sample::select(vec!["//", "%"]), inner.clone(), 1i128..17)
                .prop_map(move |(op, x, c)| G::Bin(op, b(x), b(G::Int(c)))),
            1 => (prop::sample::select(vec!["//", "%", "/"]), inner.clone(), inner.clone())
                .prop_map(move |(op, x, y)| G::Bin(op, b(x), b(y))),
            1 => (inner.clone(), prop_oneof![0u32..4, 30u32..70])
                .prop_map(move |(x, k)| G::Bin("**", b(x), b(G::Int(k as i128)))),
            1 => inner.clone().prop_map(move |x| G::Neg(b(x))),
            2 => (prop::sample::select(vec!["max", "min"]), inner.clone(), inner.clone())
                .prop_map(|(f, x, y)| G::Call(f, vec![x, y])),
            1 => inner.clone().prop_map(|x| G::Call("abs", vec![x])),
            1 => (prop::sample::select(vec!["math.floor", "math.ceil", "round", "math.trunc"]), inner.clone(), 1i128..9)
                .prop_map(move |(f, x, d)| G::Call(f, vec![G::Bin("/", b(x), b(G::Int(d)))])),
            1 => (prop::sample::select(vec!["LShift", "RShift"]), inner.clone(), -3i128..5)
                .prop_map(|(f, x, k)| G::Call(f, vec![x, G::Int(k)])),
            4 => (prop::sample::select(vec!["==", "!=", "<", "<=", ">", ">="]), inner.clone(), inner.clone())
                .prop_map(move |(op, x, y)| G::Cmp(op, b(x), b(y))),
            2 => (prop::sample::select(vec!["and", "or"]), inner.clone(), inner.clone())
                .prop_map(move |(op, x, y)| G::Logic(op, b(x), b(y))),
            1 => inner.clone().prop_map(move |x| G::Not(b(x))),
            1 => (inner.clone(), inner.clone(), inner)
                .prop_map(move |(c, x, y)| G::Ite(b(c), b(x), b(y))),
        ]
    })
}

/// A requested range `(lo, hi)`: mostly small enough for the oracle, sometimes huge.
pub fn range() -> impl Strategy<Value = (i128, i128)> {
    prop_oneof![
        80 => (0i128..300, 0i128..400).prop_map(|(lo, w)| (lo, lo + w)),
        10 => (0i128..300, 400i128..3000).prop_map(|(lo, w)| (lo, lo + w)),
        // Wide enough to enumerate for a while (the time budget cuts it), but rare: they cost
        // the most per execution.
        1 => (2i128..1000, 3000i128..300_000).prop_map(|(lo, w)| (lo, lo + w)),
        20 => (0i128..1000).prop_map(|lo| (lo, i64::MAX as i128)),
        10 => (0i128..1000, 40u32..62).prop_map(|(lo, e)| (lo, 1i128 << e)),
    ]
}

/// The seed-driven source of one execution's choices.
pub struct Source {
    runner: TestRunner,
}

impl Source {
    /// The generator of execution `exec` of a run seeded with `seed`.
    pub fn new(seed: u64, exec: u64) -> Source {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        bytes[8..16].copy_from_slice(&exec.to_le_bytes());
        bytes[16..24].copy_from_slice(&0x9e37_79b9_7f4a_7c15u64.to_le_bytes());
        let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
        Source {
            runner: TestRunner::new_with_rng(Config::default(), rng),
        }
    }

    /// A value of a strategy.
    pub fn draw<S: Strategy>(&mut self, s: S) -> S::Value {
        s.new_tree(&mut self.runner)
            .expect("generators never reject")
            .current()
    }

    /// A number below `n` (`n >= 1`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.runner.rng().next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `1 / n`.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }
}

/// One dimension of a generated message.
#[derive(Debug, Clone)]
pub struct GenDim {
    /// `d0`, `d1`, ...
    pub name: String,
    /// `L['x0'].size()[2]`.
    pub source: String,
    /// The requested range.
    pub range: (i128, i128),
}

/// A structured message: one to three dimensions with their guards, sometimes an equality, a
/// specialization or torch's suggested fixes.
pub fn message(src: &mut Source) -> (String, Vec<GenDim>) {
    let syntax = if src.one_in(3) {
        Syntax::Sympy
    } else {
        Syntax::GuardCode
    };
    let n = 1 + src.below(3);
    let mut dims = Vec::new();
    let mut text = String::from("torch._dynamo.exc.UserError: Constraints violated (d0)! For more information, run with TORCH_LOGS=\"+dynamic\".\n");
    for i in 0..n {
        let name = format!("d{i}");
        let source = format!("L['x{i}'].size()[{}]", 2 + src.below(2));
        let other = format!("L['x{}'].size()[2]", (i + 1) % n);
        let range = src.draw(range());
        for _ in 0..1 + src.below(3) {
            let two = n > 1 && src.one_in(6);
            let g = src.draw(guard(two)).print(syntax, &source, &other);
            text.push_str(&format!(
                "  - Not all values of {name} = {source} in the specified range {} <= {name} <= {} satisfy the generated guard {g}.\n",
                range.0, range.1
            ));
        }
        dims.push(GenDim {
            name,
            source,
            range,
        });
    }
    if n > 1 && src.one_in(5) {
        text.push_str(&format!(
            "  - The values of d1 = {} and d0 = {} must always be equal.\n",
            dims[1].source, dims[0].source
        ));
    }
    if src.one_in(8) {
        text.push_str(&format!(
            "  - You marked d0 as dynamic but your code specialized it to be a constant ({}). If you're using mark_dynamic, either remove it or use maybe_mark_dynamic.\n",
            src.below(500)
        ));
    }
    if src.one_in(3) {
        text.push_str("Suggested fixes:\n");
        for d in &dims {
            text.push_str(&format!(
                "  {} = Dim('{}', min={}, max={})\n",
                d.name,
                d.name,
                d.range.0,
                d.range.1.min(4096)
            ));
        }
    }
    (text, dims)
}

/// A `dynamic_shapes` spec for generated dimensions: plain or derived `Dim`s, sometimes broken.
pub fn spec(src: &mut Source, dims: &[GenDim]) -> String {
    let mut out = String::from("from torch.export import Dim\n");
    for d in dims {
        let lo = d.range.0 + src.below(20) as i128;
        let hi = lo + src.below(3000) as i128;
        match src.below(4) {
            0 => {
                let m = 1 + src.below(9) as i128;
                let r = src.below(m as usize) as i128;
                out.push_str(&format!(
                    "_{0} = Dim('_{0}', min={1}, max={2})\n{0} = {m}*_{0} + {r}\n",
                    d.name,
                    lo / m,
                    hi / m
                ));
            }
            1 if src.one_in(4) => {
                // Hostile: a multiplier that is not positive, or min > max, or a lost bracket.
                out.push_str(match src.below(3) {
                    0 => "_h = Dim('_h', min=2, max=9)\nh = -8*_h\n",
                    1 => "h = Dim('h', min=100, max=5)\n",
                    _ => "h = Dim('h', min=2, max=9\n",
                });
            }
            _ => out.push_str(&format!("{0} = Dim('{0}', min={lo}, max={hi})\n", d.name)),
        }
    }
    if src.one_in(2) {
        let items: Vec<String> = dims
            .iter()
            .map(|d| {
                let (input, idx) = d.source[3..]
                    .split_once("'].size()[")
                    .unwrap_or(("x", "2]"));
                format!("'{input}': {{{}: {}}}", idx.trim_end_matches(']'), d.name)
            })
            .collect();
        out.push_str(&format!("dynamic_shapes = {{{}}}\n", items.join(", ")));
    }
    out
}

/// Pieces inserted by text mutation: syntax, extremes, and the characters pastes carry.
const PIECES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "//",
    "%",
    "**",
    "-",
    "+",
    "*",
    "/",
    "==",
    "<=",
    "<",
    "and",
    "or",
    "not",
    "Mod(",
    "Eq(",
    "Piecewise((",
    "True",
    ", ",
    "L['x'].size()[2]",
    "9223372036854775807",
    "99999999999999999999999999999999999999999",
    "0.5",
    "1e3",
    "oo",
    "-oo",
    "Min(",
    "max(",
    "math.trunc(",
    "LShift(",
    "\0",
    "\t",
    "名",
    "🙂",
    "\n",
    "# ",
    "`",
    "\r\n",
    "  - ",
    "0",
    "1",
    "1e999",
    " if ",
    " else ",
    "~",
    "&",
    "|",
    " in the specified range ",
    " satisfy the generated guard ",
    " must always be equal.",
    "Suggested fixes:\n",
];

/// A byte-level mutation of a text: cuts, insertions from [`PIECES`], duplicated lines, numbers
/// replaced by extremes.
pub fn mutate_text(src: &mut Source, text: &str) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for _ in 0..1 + src.below(4) {
        let at = src.below(chars.len() + 1);
        match src.below(5) {
            0 => {
                let end = (at + src.below(30)).min(chars.len());
                chars.drain(at..end);
            }
            1 | 2 => {
                let p = PIECES[src.below(PIECES.len())];
                chars.splice(at..at, p.chars());
            }
            3 => {
                // Replace the number at or after `at` by an extreme.
                if let Some(start) = (at..chars.len()).find(|&i| chars[i].is_ascii_digit()) {
                    let end = (start..chars.len())
                        .find(|&i| !chars[i].is_ascii_digit())
                        .unwrap_or(chars.len());
                    let v = [
                        "0",
                        "1",
                        "2",
                        "5",
                        "9223372036854775807",
                        "4611686018427387904",
                        "20000000",
                    ][src.below(7)];
                    chars.splice(start..end, v.chars());
                }
            }
            _ => {
                // Duplicate a line.
                let s: String = chars.iter().collect();
                let lines: Vec<&str> = s.lines().collect();
                if !lines.is_empty() {
                    let l = lines[src.below(lines.len())].to_string();
                    chars.splice(at..at, format!("{l}\n").chars());
                }
            }
        }
    }
    chars.into_iter().collect()
}

/// A value-level mutation of a program's JSON: numbers become extremes, entries are dropped or
/// duplicated, operator names swapped, ranges emptied.
pub fn mutate_json(src: &mut Source, v: &mut Value) {
    for _ in 0..1 + src.below(4) {
        let mut paths = Vec::new();
        collect_paths(v, &mut Vec::new(), &mut paths);
        if paths.is_empty() {
            return;
        }
        let path = &paths[src.below(paths.len())];
        let Some(slot) = walk(v, path) else { continue };
        match (src.below(6), &*slot) {
            (0 | 1, Value::Number(_)) => {
                *slot = serde_json::json!(
                    [0, 1, -1, 2, 3, i64::MAX, i64::MIN, 1i64 << 62][src.below(8)]
                );
            }
            (2, Value::Array(a)) if !a.is_empty() => {
                let i = src.below(a.len());
                if let Value::Array(a) = slot {
                    a.remove(i);
                }
            }
            (3, Value::Array(a)) if !a.is_empty() => {
                let i = src.below(a.len());
                if let Value::Array(a) = slot {
                    let dup = a[i].clone();
                    a.push(dup);
                }
            }
            (4, Value::String(s)) if s.starts_with("torch.ops.aten.") => {
                let ops = [
                    "torch.ops.aten.conv2d.default",
                    "torch.ops.aten.linear.default",
                    "torch.ops.aten.max_pool2d.default",
                    "torch.ops.aten.cat.default",
                    "torch.ops.aten.view.default",
                    "torch.ops.aten.upsample_bilinear2d.vec",
                    "torch.ops.aten.add.Tensor",
                ];
                *slot = Value::String(ops[src.below(ops.len())].into());
            }
            (5, Value::Object(o)) if o.contains_key("min_val") => {
                *slot = serde_json::json!({"min_val": 100, "max_val": 5});
            }
            (_, Value::Object(o)) if !o.is_empty() => {
                let k = o.keys().nth(src.below(o.len())).cloned();
                if let (Some(k), Value::Object(o)) = (k, slot) {
                    o.remove(&k);
                }
            }
            _ => {}
        }
    }
}

fn collect_paths(v: &Value, cur: &mut Vec<PathStep>, out: &mut Vec<Vec<PathStep>>) {
    out.push(cur.clone());
    match v {
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                cur.push(PathStep::Index(i));
                collect_paths(x, cur, out);
                cur.pop();
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                cur.push(PathStep::Key(k.clone()));
                collect_paths(x, cur, out);
                cur.pop();
            }
        }
        _ => {}
    }
}

#[derive(Debug, Clone)]
enum PathStep {
    Index(usize),
    Key(String),
}

fn walk<'a>(v: &'a mut Value, path: &[PathStep]) -> Option<&'a mut Value> {
    let mut cur = v;
    for step in path {
        cur = match step {
            PathStep::Index(i) => cur.get_mut(*i)?,
            PathStep::Key(k) => cur.get_mut(k.as_str())?,
        };
    }
    Some(cur)
}
