//! Reading a PyTorch structured trace (`TORCH_TRACE=/tmp/dir python script.py`).
//!
//! A trace file holds one JSON envelope per line after a glog prefix
//! (`V1123 10:31:10.870000 14036 torch/fx/experimental/symbolic_shapes.py:6075] {...}`); a record
//! with a payload continues on the following lines, each starting with a tab. dimguard reads:
//!
//! * `{"str": [path, id]}` — the interned file names the stack frames refer to by `id`;
//! * `create_symbol` — a backed size: symbol (`s53`), traced value, range (`"[96, 1024]"`, with
//!   `int_oo` for unbounded) and source (`L['x'].size()[2]`);
//! * `create_unbacked_symbol` — a data-dependent size (`u0`);
//! * `guard_added` / `guard_added_fast` — a guard in sympy syntax over the symbols, with the
//!   stack that recorded it (`stack`, and in strict export dynamo's `user_stack`);
//! * `symbolic_shape_specialization` — a size fixed to a constant, with its reason;
//! * `guard_on_data_dependent_error` — a guard on data-dependent sizes torch could not decide;
//! * the `torch_version` artifact.
//!
//! Everything else (graphs, compile times, inductor output) is skipped. The envelopes are read
//! with serde rather than through the `tlparse` crate: see `docs/TRACE.md` for the comparison.
//!
//! A file may hold several exports (a script that exports twice): a `create_symbol` for a symbol
//! already created starts a new one, and the last is read ([`Trace::exports`] says how many there
//! were).

use crate::message::{DimEntry, Guard, Message, Relation, SIZE_MAX};
use crate::phrase::Phrase;
use dimguard_solver::joint;
use dimguard_solver::provenance::{self, Frame, Provenance};
use dimguard_solver::report::Form;
use dimguard_solver::syntax::parse_guard;
use dimguard_solver::Error;
use dimguard_solver::Expr;
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// Everything read from a trace.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace {
    /// Backed sizes, in creation order.
    pub symbols: Vec<Symbol>,
    /// Data-dependent sizes (`u0`).
    pub unbacked: Vec<String>,
    /// Guards over backed sizes, in the order recorded, without repeats.
    pub guards: Vec<TraceGuard>,
    /// Sizes fixed to a constant.
    pub specializations: Vec<Specialization>,
    /// Guards on data-dependent sizes that torch could not decide.
    pub data_dependent: Vec<TraceGuard>,
    /// `pytorch_version` of the `torch_version` artifact.
    pub torch_version: Option<String>,
    /// How many exports the trace held (the last is read).
    pub exports: usize,
    /// Records that could not be read (line number, why), kept for the report.
    pub skipped: Vec<(usize, String)>,
}

/// A backed size.
#[derive(Debug, Clone, PartialEq)]
pub struct Symbol {
    /// The sympy symbol (`s53`).
    pub symbol: String,
    /// Where it comes from (`L['x'].size()[2]`).
    pub source: Option<String>,
    /// The traced value.
    pub example: Option<i128>,
    /// The value range (`[lo, hi]`; `int_oo` becomes [`SIZE_MAX`]).
    pub range: (i128, i128),
}

/// A guard with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceGuard {
    /// The guard as recorded (sympy syntax over symbols).
    pub text: String,
    /// Parsed.
    pub expr: Expr,
    /// The innermost user frame of its stack.
    pub provenance: Option<Provenance>,
}

/// A size fixed to a constant.
#[derive(Debug, Clone, PartialEq)]
pub struct Specialization {
    /// The symbol.
    pub symbol: String,
    /// The constant.
    pub value: i128,
    /// torch's reason (`range_refined_to_singleton`, ...).
    pub reason: Option<String>,
    /// Where it was fixed.
    pub provenance: Option<Provenance>,
}

#[derive(Deserialize)]
struct RawFrame {
    line: Option<u32>,
    name: Option<String>,
    filename: Option<i64>,
    loc: Option<String>,
}

/// Whether a text looks like a structured trace: some line holds a record dimguard reads.
pub fn looks_like_trace(text: &str) -> bool {
    text.lines().take(2000).any(|l| {
        let body = l
            .strip_prefix("{\"")
            .or_else(|| l.phrase("] {\"").map(|i| &l[i + 4..]));
        body.is_some_and(|b| RECORDS.iter().any(|k| b.starts_with(&format!("{k}\""))))
    })
}

/// The records [`read`] uses.
const RECORDS: [&str; 9] = [
    "str",
    "artifact",
    "create_symbol",
    "create_unbacked_symbol",
    "guard_added",
    "guard_added_fast",
    "guard_on_data_dependent_error",
    "symbolic_shape_specialization",
    "propagate_real_tensors",
];

/// Reads a trace (the text of one file, or several files joined: every file of a `TORCH_TRACE`
/// directory). Errors when the text holds no record of a size or guard.
pub fn read(text: &str) -> Result<Trace, Error> {
    let mut r = TraceReader::default();
    for (no, line) in text.lines().enumerate() {
        r.line(no + 1, line)?;
    }
    r.finish()
}

/// [`read`]'s state: the trace so far, the interned strings, sets beside the trace's lists (so
/// that reading is linear in the number of records), and the `torch_version` payload.
#[derive(Default)]
struct TraceReader {
    t: Trace,
    strs: HashMap<i64, String>,
    seen_guards: std::collections::HashSet<String>,
    seen_symbols: std::collections::HashSet<String>,
    seen_unbacked: std::collections::HashSet<String>,
    /// Whether a record of a size or guard was read.
    any: bool,
    /// Whether the payload lines read now are the `torch_version` artifact's.
    payload_of_version: bool,
    version_payload: String,
}

impl TraceReader {
    /// One line of the text (`no` from 1): a payload line, or a record with or without the
    /// glog prefix (as `dimguard.export` captures them), read by its kind (its one key besides
    /// the context: `frame_id`, `attempt`, ...).
    fn line(&mut self, no: usize, line: &str) -> Result<(), Error> {
        if let Some(p) = line.strip_prefix('\t') {
            if self.payload_of_version {
                self.version_payload.push_str(p);
            }
            return Ok(());
        }
        self.payload_of_version = false;
        let start = if line.starts_with('{') {
            Some(0)
        } else {
            line.phrase("] {").map(|i| i + 2)
        };
        let Some(start) = start else {
            return Ok(());
        };
        let rec: Value = match serde_json::from_str(&line[start..]) {
            Ok(v) => v,
            Err(e) => {
                self.t.skipped.push((no, format!("not JSON: {e}")));
                return Ok(());
            }
        };
        let Some((key, body)) = RECORDS.iter().find_map(|k| rec.get(*k).map(|b| (*k, b))) else {
            return Ok(());
        };
        match key {
            "str" => {
                if let Some([s, id]) = body.as_array().map(Vec::as_slice) {
                    if let (Some(s), Some(id)) = (s.as_str(), id.as_i64()) {
                        self.strs.insert(id, s.to_string());
                    }
                }
            }
            "artifact" => {
                self.payload_of_version = body.get("name").and_then(Value::as_str)
                    == Some("torch_version")
                    && rec.get("has_payload").is_some();
            }
            "create_symbol" => self.symbol(no, body),
            "create_unbacked_symbol" => {
                self.any = true;
                let s = str_field(body, "symbol");
                if self.seen_unbacked.insert(s.clone()) {
                    self.t.unbacked.push(s);
                }
            }
            "guard_added" | "guard_added_fast" | "guard_on_data_dependent_error" => {
                self.guard(no, key, body)?
            }
            "symbolic_shape_specialization" => {
                self.any = true;
                if let Some(value) = int_field(body, "value") {
                    self.t.specializations.push(Specialization {
                        symbol: str_field(body, "symbol"),
                        value,
                        reason: body
                            .get("reason")
                            .and_then(Value::as_str)
                            .map(str::to_string),
                        provenance: provenance_of(body, &self.strs),
                    });
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A `create_symbol` record: a backed size with its range (a range that does not read is
    /// skipped, with why). The same symbol again starts a new export: what was read is
    /// dropped, but the torch version and the count of exports.
    fn symbol(&mut self, no: usize, body: &Value) {
        self.any = true;
        let symbol = str_field(body, "symbol");
        if !self.seen_symbols.insert(symbol.clone()) {
            let version = self.t.torch_version.take();
            let exports = self.t.exports;
            self.t = Trace {
                torch_version: version,
                exports,
                ..Trace::default()
            };
            self.seen_guards.clear();
            self.seen_symbols.clear();
            self.seen_symbols.insert(symbol.clone());
            self.seen_unbacked.clear();
        }
        let t = &mut self.t;
        if t.symbols.is_empty() && t.guards.is_empty() {
            t.exports += 1;
        }
        let range = match body.get("vr").and_then(Value::as_str).map(parse_vr) {
            Some(Ok(r)) => r,
            Some(Err(e)) => {
                t.skipped.push((no, format!("create_symbol {symbol}: {e}")));
                return;
            }
            None => (2, SIZE_MAX),
        };
        t.symbols.push(Symbol {
            symbol,
            source: body
                .get("source")
                .and_then(Value::as_str)
                .map(str::to_string),
            example: int_field(body, "val"),
            range,
        });
    }

    /// A guard record (`key`): each guard text once, a guard over backed sizes or a
    /// data-dependent one (recorded so, or over an unbacked size). A guard that does not parse
    /// is an error at its line.
    fn guard(&mut self, no: usize, key: &str, body: &Value) -> Result<(), Error> {
        self.any = true;
        let text = str_field(body, "expr");
        if text.is_empty() || !self.seen_guards.insert(text.clone()) {
            return Ok(());
        }
        let expr = parse_guard(&text).map_err(|e| Error::Guard {
            dim: "trace".into(),
            line: no,
            error: Box::new(e),
        })?;
        let g = TraceGuard {
            text,
            expr,
            provenance: provenance_of(body, &self.strs),
        };
        let data_dependent = key == "guard_on_data_dependent_error"
            || g.expr.atoms().iter().any(|a| {
                let a = a.to_string();
                self.seen_unbacked.contains(&a) || dimguard_solver::is_unbacked(&a)
            });
        if data_dependent {
            self.t.data_dependent.push(g);
        } else {
            self.t.guards.push(g);
        }
        Ok(())
    }

    /// The trace read, with the torch version from its artifact; an error when the text held
    /// no record of a size or guard.
    fn finish(mut self) -> Result<Trace, Error> {
        if !self.version_payload.is_empty() {
            if let Ok(v) = serde_json::from_str::<Value>(&self.version_payload) {
                self.t.torch_version = v
                    .get("pytorch_version")
                    .and_then(Value::as_str)
                    .map(str::to_string);
            }
        }
        if !self.any {
            return Err(Error::Message(
                "the trace holds no size or guard record (create_symbol, guard_added): was it written \
                 by a run that exported or compiled a model with dynamic shapes? (TORCH_TRACE=/tmp/dir \
                 python script.py writes one file per process into /tmp/dir)"
                    .into(),
            ));
        }
        Ok(self.t)
    }
}

/// An integer field, printed as a string (`"256"`) or a number.
fn int_field(v: &Value, k: &str) -> Option<i128> {
    let f = v.get(k)?;
    f.as_str()
        .and_then(|s| s.trim().parse().ok())
        .or_else(|| f.as_i64().map(i128::from))
}

fn str_field(v: &Value, k: &str) -> String {
    v.get(k)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// `"[96, 1024]"`, `"[2, int_oo]"`.
fn parse_vr(s: &str) -> Result<(i128, i128), Error> {
    let bad = |problem: String| Error::ValueRange {
        text: s.to_string(),
        problem,
    };
    let inner = s.trim().trim_start_matches('[').trim_end_matches(']');
    let (a, b) = inner
        .split_once(',')
        .ok_or_else(|| bad("is not `[lo, hi]`".into()))?;
    let bound = |x: &str, hi: bool| -> Result<i128, Error> {
        match x.trim() {
            "int_oo" | "oo" => Ok(if hi { SIZE_MAX } else { -SIZE_MAX }),
            "-int_oo" | "-oo" => Ok(if hi { SIZE_MAX } else { 0 }),
            v => v
                .parse::<i128>()
                .map(|v| v.clamp(0, SIZE_MAX))
                .map_err(|_| bad(format!("has a bound `{v}` that is not an integer"))),
        }
    };
    let (lo, hi) = (bound(a, false)?, bound(b, true)?);
    if lo > hi {
        return Err(bad("is empty (lo > hi)".into()));
    }
    Ok((lo, hi))
}

fn frames(v: Option<&Value>, strs: &HashMap<i64, String>) -> Vec<Frame> {
    let Some(arr) = v.and_then(Value::as_array) else {
        return vec![];
    };
    arr.iter()
        .filter_map(|f| serde_json::from_value::<RawFrame>(f.clone()).ok())
        .map(|f| Frame {
            file: f
                .filename
                .and_then(|id| strs.get(&id).cloned())
                .unwrap_or_else(|| format!("<file {}>", f.filename.unwrap_or(-1))),
            line: f.line.unwrap_or(0),
            function: f.name.unwrap_or_default(),
            code: f.loc,
        })
        .collect()
}

fn provenance_of(body: &Value, strs: &HashMap<i64, String>) -> Option<Provenance> {
    provenance::attribute(
        &frames(body.get("stack"), strs),
        &frames(body.get("user_stack"), strs),
    )
}

/// A readable dimension name from a source: `L['x'].size()[2]` becomes `x_2`,
/// `L['flat_args'][0].size()[2]` becomes `flat_args_0_2`.
pub fn name_from_source(source: &str) -> Option<String> {
    let parts: Vec<&str> = source
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|p| !p.is_empty() && !matches!(*p, "L" | "size" | "shape" | "stride"))
        .collect();
    let name = parts.join("_");
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

impl Trace {
    /// The symbol's dimension name.
    fn names(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut used: std::collections::HashSet<String> = Default::default();
        for s in &self.symbols {
            let mut n = s
                .source
                .as_deref()
                .and_then(name_from_source)
                .unwrap_or_else(|| s.symbol.clone());
            if used.contains(&n) {
                n = format!("{n}_{}", s.symbol);
            }
            used.insert(n.clone());
            out.insert(s.symbol.clone(), n);
        }
        out
    }

    /// The traced size of every dimension, by name (for `Options::examples`).
    pub fn examples(&self) -> Vec<(Option<String>, i128)> {
        let names = self.names();
        self.symbols
            .iter()
            .filter_map(|s| Some((Some(names.get(&s.symbol)?.clone()), s.example?)))
            .collect()
    }

    /// The trace as a [`Message`]: one dimension per backed size (named from its source, with its
    /// range and specialization), each guard over one size attached to it with its provenance,
    /// guards over several sizes in [`Message::joint`] (a linear equality also in `equalities` /
    /// `relations`), as the log reader files them.
    pub fn to_message(&self) -> Message {
        let names = self.names();
        let var = |s: &Symbol| s.source.clone().unwrap_or_else(|| names[&s.symbol].clone());
        // Symbols by name (the first of each), so that each guard costs its own atoms only.
        let mut pos: HashMap<&str, usize> = HashMap::new();
        for (i, s) in self.symbols.iter().enumerate() {
            pos.entry(s.symbol.as_str()).or_insert(i);
        }
        let mut specialized: HashMap<&str, i128> = HashMap::new();
        for p in &self.specializations {
            specialized.entry(p.symbol.as_str()).or_insert(p.value);
        }
        let mut msg = Message {
            dims: self
                .symbols
                .iter()
                .map(|s| DimEntry {
                    name: names[&s.symbol].clone(),
                    source: s.source.clone(),
                    range: Some(s.range),
                    guards: vec![],
                    specialized: specialized.get(s.symbol.as_str()).copied(),
                    inferred_equal: None,
                    forced: false,
                    specialized_reason: None,
                    symbol: Some(s.symbol.clone()),
                    every_guard: true,
                })
                .collect(),
            equalities: vec![],
            relations: vec![],
            fixes: vec![],
            data_dependent: self
                .data_dependent
                .iter()
                .map(|g| Guard {
                    text: g.text.clone(),
                    expr: g.expr.clone(),
                    provenance: g.provenance.clone(),
                })
                .collect(),
            unrecognized: self
                .skipped
                .iter()
                .map(|(no, why)| format!("trace line {no}: {why}"))
                .collect(),
            joint: vec![],
            form: Form::TorchTrace,
            notes: vec![],
            unreadable: vec![],
            runtime: None,
            datadep: Default::default(),
            missing_bounds: vec![],
            examples: self.examples(),
            partial: None,
        };
        // Guards over the sizes' sources (as torch's messages print them).
        let over_sources = |e: &Expr| {
            e.atoms()
                .iter()
                .fold(e.clone(), |acc, a| match pos.get(a.to_string().as_str()) {
                    Some(&i) => {
                        acc.substitute(&self.symbols[i].symbol, &Expr::sym(&var(&self.symbols[i])))
                    }
                    None => acc,
                })
        };
        for g in &self.guards {
            let atoms: Vec<String> = g.expr.atoms().iter().map(|a| a.to_string()).collect();
            let mut idx: Vec<usize> = atoms
                .iter()
                .filter_map(|a| pos.get(a.as_str()).copied())
                .collect();
            idx.dedup();
            let guard = Guard {
                text: g.text.clone(),
                expr: over_sources(&g.expr),
                provenance: g.provenance.clone(),
            };
            match idx.as_slice() {
                [] => {}
                [i] => msg.dims[*i].guards.push(guard),
                _ => {
                    if let Some((dep, root, coef, off)) = joint::linear_relation(&g.expr) {
                        let (mut dep, mut root) = (names[&dep].clone(), names[&root].clone());
                        let mut off = off;
                        if coef == 1 && off < 0 {
                            // `b = a + 1` reads better than `a = b - 1`.
                            std::mem::swap(&mut dep, &mut root);
                            off = -off;
                        }
                        if (coef, off) == (1, 0) {
                            msg.equalities.push((root.clone(), dep.clone()));
                        } else {
                            let rhs = match (coef, off) {
                                (1, o) if o > 0 => format!("{root} + {o}"),
                                (1, o) => format!("{root} - {}", -o),
                                (k, 0) => format!("{k}*{root}"),
                                (k, o) if o > 0 => format!("{k}*{root} + {o}"),
                                (k, o) => format!("{k}*{root} - {}", -o),
                            };
                            msg.relations.push(Relation {
                                name: dep,
                                other: root,
                                expr: rhs,
                            });
                        }
                    }
                    // Only in the joint guards, as the log reader files it (`forms::logs`):
                    // filed under each size too, each size's own solve tried it and ran out of
                    // time on guards the joint search decides (issue 23's cross-form test).
                    msg.joint.push(guard);
                }
            }
        }
        msg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PREFIX: &str = "V1123 10:31:10.870000 14036 torch/_logging/structured.py:28] ";

    fn rec(json: &str) -> String {
        format!("{PREFIX}{json}\n")
    }

    fn small() -> String {
        [
            rec(r#"{"str": ["/home/me/model.py", 0]}"#),
            rec(r#"{"str": ["/venv/lib/python3.11/site-packages/torch/_subclasses/fake_impls.py", 1]}"#),
            rec(r#"{"create_symbol": {"symbol": "s5", "val": "256", "vr": "[96, 1024]", "source": "L['x'].size()[2]", "stack": []}}"#),
            rec(r#"{"create_symbol": {"symbol": "s6", "val": "64", "vr": "[2, int_oo]", "source": "L['y'].size()[1]", "stack": []}}"#),
            rec(r#"{"guard_added_fast": {"expr": "Eq(Mod(s5, 8), 0)", "stack": [{"line": 26, "name": "forward", "filename": 0, "loc": "f = fa + up"}, {"line": 2435, "name": "infer_size", "filename": 1, "loc": "torch._check("}]}}"#),
            rec(r#"{"guard_added_fast": {"expr": "Eq(Mod(s5, 8), 0)", "stack": []}}"#),
            rec(r#"{"guard_added": {"expr": "Eq(s6, 2*s5 + 1)", "stack": [{"line": 30, "name": "forward", "filename": 0, "loc": "g = torch.cat(...)"}]}}"#),
            rec(r#"{"artifact": {"name": "torch_version", "encoding": "json"}, "has_payload": "abc"}"#),
            "\t{\n\t\"pytorch_version\": \"2.15.0\"\n\t}\n".into(),
        ]
        .concat()
    }

    #[test]
    fn reads_symbols_guards_and_frames() {
        let t = read(&small()).unwrap();
        assert_eq!(t.exports, 1);
        assert_eq!(t.torch_version.as_deref(), Some("2.15.0"));
        assert_eq!(t.symbols.len(), 2);
        assert_eq!(t.symbols[0].range, (96, 1024));
        assert_eq!(t.symbols[1].range, (2, SIZE_MAX));
        assert_eq!(t.symbols[0].example, Some(256));
        assert_eq!(t.guards.len(), 2, "the repeated guard is read once");
        let p = t.guards[0].provenance.as_ref().unwrap();
        assert_eq!((p.file.as_str(), p.line), ("/home/me/model.py", 26));
        assert_eq!(p.op.as_deref(), Some("infer_size"));
        let m = t.to_message();
        assert_eq!(m.dims[0].name, "x_2");
        assert_eq!(m.dims[0].guards.len(), 1);
        assert!(
            m.dims[1].guards.is_empty(),
            "a linear relation is solved as one"
        );
        assert_eq!(
            m.dims[0].guards[0]
                .expr
                .atoms()
                .iter()
                .next()
                .unwrap()
                .to_string(),
            "L['x'].size()[2]"
        );
        assert_eq!(m.relations.len(), 1);
        assert_eq!(m.relations[0].name, "y_1");
        assert_eq!(m.relations[0].expr, "2*x_2 + 1");
        assert_eq!(m.joint.len(), 1);
        assert_eq!(t.examples()[0], (Some("x_2".into()), 256));
    }

    #[test]
    fn a_guard_over_two_sizes_is_filed_as_the_log_files_it() {
        // Two stems that must agree (issue 23's cross-form test): the guard names both sizes and
        // is no linear relation. As a trace and as a `TORCH_LOGS` log, the same message: the
        // guard in the joint guards only, no size with a guard of its own.
        let guard = "Eq((((s5 - 1)//4)) + 1, (((s6 - 1)//4)) + 1)";
        let trace = [
            rec(r#"{"create_symbol": {"symbol": "s5", "val": "64", "vr": "[32, 256]", "source": "L['a'].size()[2]", "stack": []}}"#),
            rec(r#"{"create_symbol": {"symbol": "s6", "val": "64", "vr": "[32, 256]", "source": "L['b'].size()[2]", "stack": []}}"#),
            rec(&format!(r#"{{"guard_added_fast": {{"expr": "{guard}", "stack": []}}}}"#)),
        ]
        .concat();
        let log = format!(
            "I1123 10:34:54.290000 1 torch/fx/experimental/symbolic_shapes.py:6064] [0/0] create_symbol s5 = 64 for L['a'].size()[2] [32, 256] (x.py:1 in f)\n\
             I1123 10:34:54.290000 1 torch/fx/experimental/symbolic_shapes.py:6064] [0/0] create_symbol s6 = 64 for L['b'].size()[2] [32, 256] (x.py:1 in f)\n\
             I1123 10:34:54.327000 1 torch/fx/experimental/symbolic_shapes.py:8661] [0/0] eval {guard} [guard added] (x.py:2 in f)\n"
        );
        let from_log = crate::forms::read(&log).unwrap();
        assert_eq!(from_log.form, crate::forms::Form::TorchLogs);
        for m in [read(&trace).unwrap().to_message(), from_log] {
            assert_eq!(m.dims.len(), 2);
            assert!(m.dims.iter().all(|d| d.guards.is_empty()), "{:?}", m.form);
            assert_eq!(m.joint.len(), 1);
            assert_eq!(m.joint[0].text, guard);
            assert!(m.equalities.is_empty() && m.relations.is_empty());
        }
    }

    #[test]
    fn a_second_export_replaces_the_first() {
        let text = format!(
            "{}{}",
            small(),
            rec(
                r#"{"create_symbol": {"symbol": "s5", "val": "9", "vr": "[3, 9]", "source": "L['z'].size()[0]"}}"#
            )
        );
        let t = read(&text).unwrap();
        assert_eq!(t.exports, 2);
        assert_eq!(t.symbols.len(), 1);
        assert_eq!(t.symbols[0].range, (3, 9));
        assert!(t.guards.is_empty());
    }

    #[test]
    fn errors_and_detection() {
        assert!(looks_like_trace(&small()));
        assert!(!looks_like_trace("Constraints violated (h)!"));
        let e = read(&rec(r#"{"describe_source": {"id": 0}}"#)).unwrap_err();
        assert!(e.to_string().has("no size or guard record"), "{e}");
        let bad = rec(r#"{"guard_added": {"expr": "Eq(s5,, 1)", "stack": []}}"#);
        assert!(matches!(read(&bad), Err(Error::Guard { line: 1, .. })));
        let t = read(&format!(
            "{}{}",
            rec(r#"{"create_symbol": {"symbol": "s1", "vr": "[5, 2]"}}"#),
            rec(r#"{"create_unbacked_symbol": {"symbol": "u0", "vr": "[-int_oo, int_oo]"}}"#)
        ))
        .unwrap();
        assert!(t.symbols.is_empty());
        assert_eq!(t.skipped.len(), 1);
        assert_eq!(parse_vr("[-int_oo, int_oo]"), Ok((0, SIZE_MAX)));
    }

    #[test]
    fn an_error_message_lists_only_failing_guards() {
        // A trace lists every guard (a size without guards accepts its whole range: tested with
        // the diagnosis in tests/trace.rs); an error message lists only failing guards: there,
        // no guard claims nothing.
        let m = crate::forms::violation::read(
            "  - You marked h as dynamic but your code specialized it to be a constant (16).",
        );
        assert!(m.map_or(true, |m| m.dims.iter().all(|d| !d.every_guard)));
    }

    #[test]
    fn names() {
        assert_eq!(name_from_source("L['x'].size()[2]").as_deref(), Some("x_2"));
        assert_eq!(
            name_from_source("L['flat_args'][0].size()[2]").as_deref(),
            Some("flat_args_0_2")
        );
        assert_eq!(name_from_source("[]"), None);
    }
}
