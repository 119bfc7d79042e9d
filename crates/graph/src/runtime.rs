//! Conditions a program checks, or needs, while it runs: beside the guards (checked when the
//! program is called), torch puts *run-time asserts* in the graph (`aten._assert_scalar` over
//! SymInt arithmetic, `sym_constrain_range`, `_assert_async`; with torch 2.15's `ShapesSpec`
//! every condition torch could not decide at export becomes one), and some operators fail on
//! sizes no check mentions: an index made by `arange(seq)` into a table of fixed length
//! (`embedding(wpe[128, d], arange(seq))` raises `IndexError` at every `seq > 128`).
//!
//! [`find`] reads both as conditions over the program's symbols (`u0`, `s27`), each with the
//! node that checks or needs it and its stack trace. What cannot be read as a condition (an
//! index computed from sizes through an operator not followed here, an assert on a tensor's
//! value) is returned as such, with the reason: `check` reports it undecided, never passing.

use crate::graph::{ProgramGraph, Requirement, SymbolRanges};
use crate::program::{sym_int_name, tensor_name, Node, Program};
use dimguard_solver::parse_expr;
use dimguard_solver::report::{Decided, RuntimeKind, Undecided};
use dimguard_solver::{CmpOp, Expr, RoundKind};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// A condition found in the graph.
#[derive(Debug, Clone)]
pub struct Found {
    /// A run-time assert or an implied limit.
    pub kind: RuntimeKind,
    /// The node that checks (or needs) it.
    pub node: String,
    /// Its operator.
    pub target: String,
    /// The condition over the program's symbols, or why it cannot be read as one. Data, not an
    /// error: an unreadable condition is reported (its reason becomes the check's `reason`) and
    /// the rest of the program is still checked.
    pub condition: Decided<Expr>,
    /// The program symbols it depends on.
    pub symbols: BTreeSet<String>,
    /// The node's stack trace.
    pub stack_trace: Option<String>,
    /// For an assert torch placed at the start of the graph (no user frame): the first
    /// operator whose shape rule fails where the assert does.
    pub needed_by: Option<Requirement>,
}

/// Every run-time assert and implied limit of the program, in program order.
pub fn find(p: &Program, pg: &ProgramGraph, ranges: &SymbolRanges) -> Vec<Found> {
    let g = &p.graph_module.graph;
    let mut out = Vec::new();
    let mut index = Indices::default();
    for node in &g.nodes {
        let op = crate::shapes::op_name(&node.target).trim_end_matches('_');
        let name = node.name.clone().unwrap_or_else(|| node.target.clone());
        let trace = node
            .metadata
            .get("stack_trace")
            .and_then(Value::as_str)
            .map(String::from);
        let mut push = |kind, condition: Decided<Expr>, symbols: BTreeSet<String>| {
            let symbols = match &condition {
                Ok(e) => e.atoms().iter().map(|a| a.to_string()).collect(),
                Err(_) => symbols,
            };
            out.push(Found {
                kind,
                node: name.clone(),
                target: node.target.clone(),
                condition,
                symbols,
                stack_trace: trace.clone(),
                needed_by: None,
            })
        };
        match op {
            "_assert_scalar" => {
                let arg = node.inputs.first().map(|a| &a.arg);
                if arg.and_then(|a| a.get("as_bool")).and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                let c = arg
                    .and_then(|a| scalar(p, pg, a))
                    .or_else(|| message_expr(node))
                    .ok_or(Undecided::ConditionNotRecorded);
                // Unread, it may depend on any size.
                push(
                    RuntimeKind::RuntimeAssert,
                    c,
                    ranges.keys().cloned().collect(),
                );
            }
            "sym_constrain_range" | "sym_constrain_range_for_size" => {
                let arg = |n: &str, pos: usize| node.arg(n, pos);
                let size = arg("size", 0).and_then(|v| scalar(p, pg, v));
                let min = arg("min", 1)
                    .and_then(|v| v.get("as_int"))
                    .and_then(Value::as_i64)
                    .or((op == "sym_constrain_range_for_size").then_some(0));
                let max = arg("max", 2)
                    .and_then(|v| v.get("as_int"))
                    .and_then(Value::as_i64);
                let c = size
                    .map(|s| {
                        let mut parts = Vec::new();
                        if let Some(lo) = min {
                            parts.push(cmp(CmpOp::Ge, s.clone(), Expr::int(lo as i128)));
                        }
                        if let Some(hi) = max {
                            parts.push(cmp(CmpOp::Le, s, Expr::int(hi as i128)));
                        }
                        and(parts)
                    })
                    .ok_or(Undecided::SizeNotRecorded);
                push(RuntimeKind::RuntimeAssert, c, BTreeSet::new());
            }
            "_assert_async" => {
                let t = node.inputs.first().and_then(|a| tensor_name(&a.arg));
                let c = t
                    .and_then(|t| producer(p, t))
                    .filter(|n| crate::shapes::op_name(&n.target) == "scalar_tensor")
                    .and_then(|n| n.inputs.first())
                    .and_then(|a| scalar(p, pg, &a.arg))
                    .map(|v| {
                        if v.is_bool() {
                            v
                        } else {
                            cmp(CmpOp::Ne, v, Expr::int(0))
                        }
                    })
                    .ok_or(Undecided::TensorValue);
                push(RuntimeKind::RuntimeAssert, c, BTreeSet::new());
            }
            _ => {}
        }
        for (condition, symbols) in index.visit(node, op, pg, p, ranges) {
            push(RuntimeKind::ImpliedLimit, condition, symbols);
        }
    }
    decide_unbacked(p, &index.known, ranges, &mut out);
    for f in &mut out {
        if f.kind == RuntimeKind::RuntimeAssert && !user_frame(f.stack_trace.as_deref()) {
            if let Ok(c) = &f.condition {
                f.needed_by = needed_by(c, &pg.requires, ranges);
            }
        }
    }
    out
}

/// Whether a stack trace names a line outside torch (the user's code).
fn user_frame(trace: Option<&str>) -> bool {
    trace.is_some_and(|t| {
        t.lines()
            .any(|l| l.trim_start().starts_with("File") && !l.contains("torch/"))
    })
}

/// The first operator whose shape rule needs exactly `cond`: a condition on one symbol, true at
/// the same values as `cond` over the symbol's range (every value, at most 100,000 tried), and
/// false at one of them. An assert that is no operator's need (a `ShapesSpec` assumption, a
/// `torch._check`) has none.
fn needed_by(cond: &Expr, requires: &[Requirement], ranges: &SymbolRanges) -> Option<Requirement> {
    let atoms = cond.atoms();
    let [s] = atoms.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let (lo, hi) = ranges.get(&s.to_string()).copied()?;
    let truth = |e: &Expr, v: i128| {
        !matches!(
            e.eval(&|n| (n == &**s).then_some(v)),
            Ok(dimguard_solver::expr::Value::Bool(false))
        )
    };
    let values: Vec<i128> = (lo..=hi.min(lo + 100_000)).collect();
    let want: Vec<bool> = values.iter().map(|&v| truth(cond, v)).collect();
    // The first value where it fails: only operators failing there are candidates.
    let first = values
        .iter()
        .zip(&want)
        .find(|(_, &w)| !w)
        .map(|(&v, _)| v)?;
    requires
        .iter()
        .filter(|r| r.condition.atoms().iter().all(|a| a == s))
        .filter(|r| !truth(&r.condition, first))
        .find(|r| {
            values
                .iter()
                .zip(&want)
                .all(|(&v, &w)| truth(&r.condition, v) == w)
        })
        .cloned()
}

fn cmp(op: CmpOp, a: Expr, b: Expr) -> Expr {
    Expr::Cmp(op, Box::new(a), Box::new(b))
}

fn and(mut parts: Vec<Expr>) -> Expr {
    parts.retain(|p| *p != Expr::Bool(true));
    if parts.contains(&Expr::Bool(false)) {
        return Expr::Bool(false);
    }
    match parts.len() {
        0 => Expr::Bool(true),
        1 => parts.remove(0),
        _ => Expr::And(parts),
    }
}

/// A SymInt / SymBool argument's value: a constant; torch's own expression of the value
/// (`sym_bool_values` / `sym_int_values`, sympy `srepr`); else the value propagated through
/// the graph's SymInt arithmetic.
fn scalar(p: &Program, pg: &ProgramGraph, v: &Value) -> Option<Expr> {
    if let Some(b) = v.get("as_bool").and_then(Value::as_bool) {
        return Some(Expr::Bool(b));
    }
    if let Some(n) = v.get("as_int").and_then(Value::as_i64) {
        return Some(Expr::int(n as i128));
    }
    let g = &p.graph_module.graph;
    let (name, table) = match sym_int_name(v) {
        Some(n) => (n, &g.sym_int_values),
        None => (
            v.get("as_sym_bool")?.get("as_name")?.as_str()?,
            &g.sym_bool_values,
        ),
    };
    // torch's expression may name a size it specialized afterwards (Longformer's seq `s70`
    // under `Dim.AUTO`, fixed at 64: no input's size and no range of the program name it):
    // the value the graph computes then, from the sizes the program does have.
    let known = input_symbols(p);
    let stale = |e: &Expr| {
        e.atoms().iter().any(|a| {
            let a = a.to_string();
            !read_from_data(&a) && !known.contains(&a) && !p.range_constraints.contains_key(&a)
        })
    };
    let recorded = table
        .get(name)
        .and_then(|e| e.get("as_expr")?.get("expr_str")?.as_str())
        .and_then(|t| parse_expr(t).ok());
    match recorded {
        Some(e) if stale(&e) => pg
            .symints
            .get(name)
            .cloned()
            .or_else(|| chain_value(p, name, 0))
            .or(Some(e)),
        Some(e) => Some(e),
        None => pg
            .symints
            .get(name)
            .cloned()
            .or_else(|| chain_value(p, name, 0)),
    }
}

/// The value the graph computes for the SymInt / SymBool `name`, followed through its
/// `_operator` arithmetic and comparisons down to the user inputs' recorded sizes and to values
/// read from tensors made of sizes ([`size_value`]); `None` where the chain meets anything else
/// (a value read from the input's data stays a symbol of the message, undecided).
fn chain_value(p: &Program, name: &str, depth: u32) -> Option<Expr> {
    if depth > BOUNDS_DEPTH {
        return None;
    }
    let g = &p.graph_module.graph;
    let named = |o: &Value| {
        ["as_sym_int", "as_sym_bool"]
            .iter()
            .find_map(|k| o.get(*k)?.get("as_name")?.as_str())
            .map(String::from)
    };
    let node = g
        .nodes
        .iter()
        .find(|n| n.outputs.iter().any(|o| named(o).as_deref() == Some(name)))?;
    let val = |v: &Value| -> Option<Expr> {
        if let Some(b) = v.get("as_bool").and_then(Value::as_bool) {
            return Some(Expr::Bool(b));
        }
        if let Some(k) = v.get("as_int").and_then(Value::as_i64) {
            return Some(Expr::int(k as i128));
        }
        chain_value(p, &named(v)?, depth + 1)
    };
    let x = || val(&node.inputs.first()?.arg);
    let y = || val(&node.inputs.get(1)?.arg);
    let op = crate::shapes::op_name(&node.target).trim_end_matches('_');
    let cmp2 = |op| Some(Expr::Cmp(op, Box::new(x()?), Box::new(y()?)));
    match op {
        "sym_size" => {
            let input = node.inputs.first().and_then(|a| tensor_name(&a.arg))?;
            if !p.user_inputs().iter().any(|u| u == input) {
                return None;
            }
            let dim = node.inputs.get(1)?.arg.get("as_int")?.as_i64()?;
            let size = g
                .tensor_values
                .get(input)?
                .sizes
                .get(usize::try_from(dim).ok()?)?;
            match size.get("as_int").and_then(Value::as_i64) {
                Some(k) => Some(Expr::int(k as i128)),
                None => parse_expr(size.get("as_expr")?.get("expr_str")?.as_str()?).ok(),
            }
        }
        "item" | "_local_scalar_dense" => {
            size_value(p, node.inputs.first().and_then(|a| tensor_name(&a.arg))?, 0)
        }
        "add" => Some(Expr::Add(vec![x()?, y()?])),
        "sub" => Some(Expr::Add(vec![x()?, Expr::Mul(vec![Expr::int(-1), y()?])])),
        "mul" => Some(Expr::Mul(vec![x()?, y()?])),
        "floordiv" => Some(Expr::FloorDiv(Box::new(x()?), Box::new(y()?))),
        "mod" => Some(Expr::Mod(Box::new(x()?), Box::new(y()?))),
        "eq" => cmp2(CmpOp::Eq),
        "ne" => cmp2(CmpOp::Ne),
        "lt" => cmp2(CmpOp::Lt),
        "le" => cmp2(CmpOp::Le),
        "gt" => cmp2(CmpOp::Gt),
        "ge" => cmp2(CmpOp::Ge),
        "and" => Some(Expr::And(vec![x()?, y()?])),
        "or" => Some(Expr::Or(vec![x()?, y()?])),
        "not" | "sym_not" => Some(Expr::Not(Box::new(x()?))),
        _ => None,
    }
}

/// The expression in `_assert_scalar`'s message: `Runtime assertion failed for expression
/// Eq(u0, Min(128, u0)) on node 'eq'`.
fn message_expr(node: &Node) -> Option<Expr> {
    let msg = node
        .inputs
        .iter()
        .find_map(|a| a.arg.get("as_string").and_then(Value::as_str))?;
    let rest = msg.split_once("for expression ")?.1;
    let text = rest.rsplit_once(" on node ").map_or(rest, |(e, _)| e);
    parse_expr(text).ok()
}

/// The node whose output is the tensor `name`.
fn producer<'a>(p: &'a Program, name: &str) -> Option<&'a Node> {
    p.graph_module
        .graph
        .nodes
        .iter()
        .find(|n| n.outputs.iter().any(|o| tensor_name(o) == Some(name)))
}

/// The values of an index tensor made from sizes: every value lies in `lo..=hi` and there are
/// `count` of them along the `arange` (none when `count <= 0`).
#[derive(Debug, Clone)]
struct Span {
    lo: Expr,
    hi: Expr,
    count: Expr,
}

/// What is known of a tensor's values: exactly an `arange` span (reshaped, expanded or shifted
/// by a constant), or computed from sizes through an operator not followed (named).
#[derive(Debug, Clone)]
enum Values {
    Span(Span),
    Derived(String, BTreeSet<String>),
}

/// Index tensors made from sizes, followed through the graph.
#[derive(Default)]
struct Indices {
    known: BTreeMap<String, Values>,
}

/// Operators that keep a tensor's values (and only rearrange, repeat or convert them).
const KEEPS_VALUES: [&str; 17] = [
    "unsqueeze",
    "view",
    "reshape",
    "_unsafe_view",
    "expand",
    "clone",
    "contiguous",
    "_to_copy",
    "to",
    "alias",
    "detach",
    "lift_fresh_copy",
    "permute",
    "transpose",
    "t",
    "flatten",
    "squeeze",
];

impl Indices {
    /// Follows index values through `node`; returns the limits its indexing implies: an
    /// `arange` starts a span ([`Indices::arange`]); an index consumer's index must lie inside
    /// its table ([`Indices::consumed`]); what is known of the inputs' values passes to the
    /// outputs ([`Indices::propagate`]).
    fn visit(
        &mut self,
        node: &Node,
        op: &str,
        pg: &ProgramGraph,
        p: &Program,
        ranges: &SymbolRanges,
    ) -> Vec<(Decided<Expr>, BTreeSet<String>)> {
        let at = At {
            node,
            op,
            pg,
            p,
            ranges,
            outs: node
                .outputs
                .iter()
                .filter_map(tensor_name)
                .map(String::from)
                .collect(),
        };
        if op == "arange" {
            self.arange(&at);
            return Vec::new();
        }
        let found = self.consumed(&at);
        self.propagate(&at);
        found
    }

    /// An `arange` over sizes: a span of its values (`start..end`), or with a step, values
    /// derived from its sizes.
    fn arange(&mut self, at: &At) {
        let has_start = at.node.inputs.iter().any(|a| a.name == "start");
        let (start, end) = if has_start {
            (at.int("start", 0), at.int("end", 1))
        } else {
            (Some(Expr::int(0)), at.int("end", 0))
        };
        let step = if has_start {
            at.arg("step", 2)
                .map_or(Some(1), |v| v.get("as_int").and_then(Value::as_i64))
        } else {
            Some(1)
        };
        let (Some(start), Some(end)) = (start, end) else {
            return;
        };
        if start.atoms().is_empty() && end.atoms().is_empty() {
            return;
        }
        let v = match step {
            Some(1) => Values::Span(Span {
                hi: end.clone() + Expr::int(-1),
                count: end + Expr::int(-1) * start.clone(),
                lo: start,
            }),
            _ => Values::Derived(
                "arange with a step".into(),
                start
                    .atoms()
                    .iter()
                    .chain(end.atoms().iter())
                    .map(|a| a.to_string())
                    .collect(),
            ),
        };
        for o in &at.outs {
            self.known.insert(o.clone(), v.clone());
        }
    }

    /// Index consumers (`embedding`, `index_select`, `gather`, `index`): the index's values
    /// must lie inside the table's length ([`Indices::inside_table`]).
    fn consumed(&self, at: &At) -> Vec<(Decided<Expr>, BTreeSet<String>)> {
        let mut found = Vec::new();
        let first = at.arg("self", 0).and_then(tensor_name);
        let table = |t: Option<&str>, dim: usize| -> Option<Expr> {
            at.pg.sizes.get(t?)?.get(dim).cloned()
        };
        match at.op {
            "embedding" => {
                let w = at.arg("weight", 0).and_then(tensor_name);
                let i = at.arg("indices", 1).and_then(tensor_name);
                found.extend(self.inside_table(at, i, table(w, 0), false));
            }
            "index_select" | "gather" => {
                let dim = at
                    .arg("dim", 1)
                    .and_then(|v| v.get("as_int"))
                    .and_then(Value::as_i64);
                let rank = first.and_then(|t| at.pg.sizes.get(t)).map_or(0, Vec::len) as i64;
                let dim = dim.map(|d| if d < 0 { d + rank } else { d });
                let i = at.arg("index", 2).and_then(tensor_name);
                let len = dim
                    .filter(|d| (0..rank).contains(d))
                    .and_then(|d| table(first, d as usize));
                found.extend(self.inside_table(at, i, len, false));
            }
            "index" => {
                let list = at
                    .arg("indices", 1)
                    .and_then(|v| v.get("as_optional_tensors").or_else(|| v.get("as_tensors")))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                for (k, entry) in list.iter().enumerate() {
                    let i = tensor_name(entry)
                        .or_else(|| entry.get("name").and_then(Value::as_str))
                        .map(String::from);
                    found.extend(self.inside_table(at, i.as_deref(), table(first, k), true));
                }
            }
            _ => {}
        }
        found
    }

    /// The limit an index tensor `index` into a table of length `len` implies (`negative`:
    /// negative indices count from the end): a condition over the sizes, none where it always
    /// holds, or undecided with the reason.
    fn inside_table(
        &self,
        at: &At,
        index: Option<&str>,
        len: Option<Expr>,
        negative: bool,
    ) -> Option<(Decided<Expr>, BTreeSet<String>)> {
        let values = index.and_then(|i| self.known.get(i))?;
        if index.is_some_and(|i| is_bool(at.p, i)) {
            return None;
        }
        match (values, len) {
            (Values::Span(s), Some(n)) => {
                let c = inside(s, &n, negative, at.ranges);
                // An index that always lies inside (`arange(n)` into a length-`n` dim).
                (c != Expr::Bool(true)).then(|| (Ok(c), BTreeSet::new()))
            }
            (Values::Span(s), None) => Some((
                Err(Undecided::TableLength {
                    op: at.op.to_string(),
                }),
                s.count.atoms().iter().map(|a| a.to_string()).collect(),
            )),
            // Bounded through the operators that made it and inside the table at its
            // shortest: the limit holds at every size.
            (Values::Derived(..), Some(n))
                if shortest(&n, at.ranges).is_some_and(|len| {
                    bounds(
                        at.p,
                        &self.known,
                        at.ranges,
                        index.unwrap_or_default(),
                        &BTreeMap::new(),
                        0,
                    )
                    .is_some_and(|iv| {
                        iv.lo >= if negative { -len } else { 0.0 } && iv.hi <= len - 1.0
                    })
                }) =>
            {
                None
            }
            (Values::Derived(via, syms), _) => Some((
                Err(Undecided::NotFollowed { via: via.clone() }),
                syms.clone(),
            )),
        }
    }

    /// What is known of the values of the node's inputs, passed to its outputs: a span kept
    /// (an operator of [`KEEPS_VALUES`]), shifted or scaled by a constant, or the outer sum or
    /// difference of two spans ([`Indices::outer`]); else values derived from the sizes, named
    /// by the first operator not followed.
    fn propagate(&mut self, at: &At) {
        let tracked: Vec<&Values> = at
            .node
            .inputs
            .iter()
            .flat_map(|a| referenced(&a.arg))
            .filter_map(|n| self.known.get(&n))
            .collect();
        if tracked.is_empty() || at.outs.is_empty() {
            return;
        }
        let op = at.op;
        let first = at.arg("self", 0).and_then(tensor_name);
        let from_self = first.and_then(|t| self.known.get(t));
        let shift = |s: &Span, k: Expr| Span {
            lo: s.lo.clone() + k.clone(),
            hi: s.hi.clone() + k,
            count: s.count.clone(),
        };
        let other = at
            .arg("other", 1)
            .and_then(|v| v.get("as_int").and_then(Value::as_i64));
        let outer = self.outer(at, first);
        let v = match (from_self, op) {
            _ if outer.is_some() => Values::Span(outer.expect("checked")),
            (Some(Values::Span(s)), o) if KEEPS_VALUES.contains(&o) => Values::Span(s.clone()),
            (Some(Values::Span(s)), "add") if other.is_some() && tracked.len() == 1 => {
                Values::Span(shift(s, Expr::int(other.unwrap_or(0) as i128)))
            }
            (Some(Values::Span(s)), "mul")
                if other.is_some_and(|k| k > 0) && tracked.len() == 1 =>
            {
                let k = Expr::int(other.unwrap_or(1) as i128);
                Values::Span(Span {
                    lo: s.lo.clone() * k.clone(),
                    hi: s.hi.clone() * k,
                    count: s.count.clone(),
                })
            }
            (Some(Values::Span(s)), "sub") if other.is_some() && tracked.len() == 1 => {
                Values::Span(shift(s, Expr::int(-(other.unwrap_or(0) as i128))))
            }
            _ => derived(&tracked, op),
        };
        for o in &at.outs {
            self.known.insert(o.clone(), v.clone());
        }
    }

    /// `a ± b` of two index spans whose every pair of elements meets (an outer sum or
    /// difference, `r[:, None] - r[None, :]`): the result spans the sums or differences of
    /// the ends, and is empty when either is.
    fn outer(&self, at: &At, first: Option<&str>) -> Option<Span> {
        let other_t = at.arg("other", 1).and_then(tensor_name);
        let (x, y) = first.zip(other_t)?;
        if !matches!(at.op, "add" | "sub") || at.arg("alpha", 2).is_some() {
            return None;
        }
        let (Some(Values::Span(a)), Some(Values::Span(b))) = (self.known.get(x), self.known.get(y))
        else {
            return None;
        };
        if !meets_every_pair(at.pg, x, y, at.outs.first(), at.ranges) {
            return None;
        }
        Some(match at.op {
            "add" => Span {
                lo: a.lo.clone() + b.lo.clone(),
                hi: a.hi.clone() + b.hi.clone(),
                count: a.count.clone() * b.count.clone(),
            },
            _ => Span {
                lo: a.lo.clone() + Expr::int(-1) * b.hi.clone(),
                hi: a.hi.clone() + Expr::int(-1) * b.lo.clone(),
                count: a.count.clone() * b.count.clone(),
            },
        })
    }
}

/// Values computed from tracked values through an operator not followed: derived from every
/// size they depend on, named by the first operator not followed (else `op`).
fn derived(tracked: &[&Values], op: &str) -> Values {
    let mut syms = BTreeSet::new();
    let via = tracked
        .iter()
        .find_map(|t| match t {
            Values::Derived(via, _) => Some(via.clone()),
            Values::Span(_) => None,
        })
        .unwrap_or_else(|| op.to_string());
    for t in tracked {
        match t {
            Values::Span(s) => syms.extend(s.count.atoms().iter().map(|a| a.to_string())),
            Values::Derived(_, s) => syms.extend(s.iter().cloned()),
        }
    }
    Values::Derived(via, syms)
}

/// A node visited by [`Indices::visit`], with what its steps read.
struct At<'a> {
    node: &'a Node,
    op: &'a str,
    pg: &'a ProgramGraph,
    p: &'a Program,
    ranges: &'a SymbolRanges,
    /// The node's output tensors.
    outs: Vec<String>,
}

impl At<'_> {
    /// The argument `n` (else the one at `pos`), unless `None`.
    fn arg(&self, n: &str, pos: usize) -> Option<&Value> {
        self.node.arg(n, pos)
    }

    /// An integer argument: a constant, or a size the graph computes.
    fn int(&self, n: &str, pos: usize) -> Option<Expr> {
        let v = self.arg(n, pos)?;
        if let Some(k) = v.get("as_int").and_then(Value::as_i64) {
            return Some(Expr::int(k as i128));
        }
        sym_int_name(v).and_then(|s| self.pg.symints.get(s).cloned())
    }
}

/// Whether `out = x ± y` holds every pair of an element of `x` and one of `y`: its element
/// count is the product of theirs (tried at the claimed ranges' ends and 20 points between, for
/// sizes of one symbol).
fn meets_every_pair(
    pg: &ProgramGraph,
    x: &str,
    y: &str,
    out: Option<&String>,
    ranges: &SymbolRanges,
) -> bool {
    let numel = |t: &str| -> Option<Expr> {
        let s = pg.sizes.get(t)?;
        Some(s.iter().cloned().fold(Expr::int(1), |a, b| a * b))
    };
    let (Some(a), Some(b), Some(o)) = (numel(x), numel(y), out.and_then(|o| numel(o))) else {
        return false;
    };
    let prod = a * b;
    let atoms: BTreeSet<String> = prod
        .atoms()
        .iter()
        .chain(o.atoms().iter())
        .map(|s| s.to_string())
        .collect();
    let [s] = &atoms.iter().collect::<Vec<_>>()[..] else {
        return atoms.is_empty() && prod.eval(&|_| None).ok() == o.eval(&|_| None).ok();
    };
    let Some(&(lo, hi)) = ranges.get(*s) else {
        return false;
    };
    let hi = hi.min(lo + 1_000_000);
    (0..=21).all(|k| {
        let v = lo + (hi - lo) * k / 21;
        let env = |n: &str| (n == s.as_str()).then_some(v);
        matches!((prod.eval(&env), o.eval(&env)), (Ok(p), Ok(q)) if p == q)
    })
}

/// `count <= 0 or (lo >= 0 and hi <= n - 1)` (`lo >= -n` where negative indices wrap),
/// without the parts the claimed ranges decide: `seq <= 128` for `arange(seq)` over a
/// 128-row table when `seq >= 1`.
fn inside(s: &Span, n: &Expr, negative: bool, ranges: &SymbolRanges) -> Expr {
    let lower = if negative {
        Expr::int(-1) * n.clone()
    } else {
        Expr::int(0)
    };
    let mut parts = Vec::new();
    let lo_ok = cmp(CmpOp::Ge, s.lo.clone(), lower);
    if !always(&lo_ok, ranges) {
        parts.push(lo_ok);
    }
    let hi_ok = match (&s.hi, n) {
        // `end - 1 <= n - 1` read as `end <= n`.
        (Expr::Add(xs), _) if xs.contains(&Expr::int(-1)) && xs.len() == 2 => {
            let end = xs.iter().find(|x| **x != Expr::int(-1)).cloned();
            cmp(CmpOp::Le, end.unwrap_or(s.hi.clone()), n.clone())
        }
        _ => cmp(CmpOp::Le, s.hi.clone(), n.clone() + Expr::int(-1)),
    };
    parts.push(hi_ok);
    let inside = and(parts.into_iter().map(tidy).collect());
    if inside == Expr::Bool(true) {
        return inside;
    }
    let empty = cmp(CmpOp::Le, s.count.clone(), Expr::int(0));
    if never(&empty, ranges) {
        inside
    } else {
        Expr::Or(vec![empty, inside])
    }
}

/// `l op r` with both sides affine in one symbol, written `k*s op c` (`s27 <= 64`, not
/// `((s27 + (-1)) + 63) <= 126`); anything else as it is.
fn tidy(c: Expr) -> Expr {
    let Expr::Cmp(op, l, r) = &c else { return c };
    let (Some((lc, l0)), Some((rc, r0))) = (l.affine(), r.affine()) else {
        return c;
    };
    let mut coefs = lc;
    for (s, k) in rc {
        let e = coefs
            .entry(s)
            .or_insert_with(|| dimguard_solver::Q::from_integer(0));
        *e -= k;
    }
    coefs.retain(|_, k| *k.numer() != 0);
    let c0 = r0 - l0;
    if coefs.is_empty() {
        // `0 op c0`: decided (`s70 <= s70` is true).
        return match Expr::Cmp(*op, Box::new(Expr::int(0)), Box::new(Expr::Const(c0)))
            .eval(&|_| None)
        {
            Ok(dimguard_solver::expr::Value::Bool(b)) => Expr::Bool(b),
            _ => c,
        };
    }
    let [(s, k)] = &coefs.iter().collect::<Vec<_>>()[..] else {
        return c;
    };
    if !(k.is_integer() && c0.is_integer()) {
        return c;
    }
    let (k, c0) = (*k.numer(), *c0.numer());
    let side = if k == 1 {
        Expr::sym(s)
    } else {
        Expr::int(k) * Expr::sym(s)
    };
    Expr::Cmp(*op, Box::new(side), Box::new(Expr::int(c0)))
}

/// A condition on at most one symbol that holds at every value of its range (tried value by
/// value up to 100,000 values; `false` when not shown).
fn always(c: &Expr, ranges: &SymbolRanges) -> bool {
    each(c, ranges, true)
}

/// A condition on at most one symbol false at every value of its range.
fn never(c: &Expr, ranges: &SymbolRanges) -> bool {
    each(c, ranges, false)
}

fn each(c: &Expr, ranges: &SymbolRanges, want: bool) -> bool {
    let atoms = c.atoms();
    let vals: Vec<(String, i128)> = match atoms.iter().collect::<Vec<_>>()[..] {
        [] => vec![(String::new(), 0)],
        [s] => match ranges.get(&s.to_string()) {
            Some(&(lo, hi)) if hi - lo <= 100_000 => {
                (lo..=hi).map(|v| (s.to_string(), v)).collect()
            }
            _ => return false,
        },
        _ => return false,
    };
    vals.iter().all(|(s, v)| {
        matches!(
            c.eval(&|n| (n == s).then_some(*v)),
            Ok(dimguard_solver::expr::Value::Bool(b)) if b == want
        )
    })
}

/// Whether the tensor `name` holds booleans (a mask, not indices): dtype 12 in torch's
/// serialized `ScalarType`.
fn is_bool(p: &Program, name: &str) -> bool {
    p.graph_module
        .graph
        .tensor_values
        .get(name)
        .and_then(|m| m.dtype)
        == Some(12)
}

/// Tensor names an argument refers to.
fn referenced(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = tensor_name(v).map(String::from).into_iter().collect();
    for key in ["as_tensors", "as_optional_tensors"] {
        if let Some(ts) = v.get(key).and_then(Value::as_array) {
            out.extend(
                ts.iter()
                    .filter_map(|t| {
                        tensor_name(t).or_else(|| t.get("name").and_then(Value::as_str))
                    })
                    .map(String::from),
            );
        }
    }
    out
}

/// Bounds on every value of a tensor: each element lies in `lo..=hi` (ends may be infinite).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Iv {
    lo: f64,
    hi: f64,
}

impl Iv {
    fn point(v: f64) -> Iv {
        Iv { lo: v, hi: v }
    }
    fn union(self, o: Iv) -> Iv {
        Iv {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
        }
    }
}

/// Torch's serialized dtype codes: 1..=5 integers, 12 bool, 6, 7, 8, 13 floats (with each one's
/// relative rounding error, widened generously).
fn dtype_of(p: &Program, name: &str) -> Option<i64> {
    p.graph_module
        .graph
        .tensor_values
        .get(name)
        .and_then(|m| m.dtype)
}

fn float_eps(dtype: Option<i64>) -> Option<f64> {
    match dtype {
        Some(1..=5) | Some(12) => None,
        Some(8) => Some(1e-12),
        Some(7) => Some(1e-6),
        _ => Some(1e-2),
    }
}

/// Deepest chain of operators followed back from an index.
const BOUNDS_DEPTH: u32 = 64;

/// Bounds on every value of the tensor `name`, followed back from the `arange` spans and
/// constants it is computed from through elementwise arithmetic (`add`, `sub`, `mul`, `div`,
/// `abs`, `neg`, `log`, `min`/`max`, `clamp`, comparisons, dtype conversions as torch truncates
/// them) and operators that only rearrange values. `where(x < c, a, b)` bounds `a` with `x < c`
/// and `b` with `x >= c`, where `a` and `b` are elementwise in `x` (the T5 encoder's
/// relative-position buckets: `where(|d| < 8, |d|, min(8 + trunc(log(|d| / 8) ...), 15))` lies in
/// `0..=15` only through that). Float arithmetic is widened by its dtype's rounding error, so
/// the bounds hold for what torch computes. `None` where an operator is not followed or a value
/// may be NaN or overflow: the caller then keeps the limit undecided.
fn bounds(
    p: &Program,
    known: &BTreeMap<String, Values>,
    ranges: &SymbolRanges,
    name: &str,
    env: &BTreeMap<String, Iv>,
    depth: u32,
) -> Option<Iv> {
    if let Some(iv) = env.get(name) {
        return Some(*iv);
    }
    if depth > BOUNDS_DEPTH {
        return None;
    }
    if let Some(Values::Span(s)) = known.get(name) {
        let (lo, _) = value_range(&s.lo, ranges)?;
        let (_, hi) = value_range(&s.hi, ranges)?;
        return Some(Iv { lo, hi });
    }
    let node = producer(p, name)?;
    let op = crate::shapes::op_name(&node.target).trim_end_matches('_');
    let of = Bounded {
        p,
        known,
        ranges,
        node,
        op,
        env,
        depth,
    };
    let exact = of.exact()?;
    if exact.lo.is_nan() || exact.hi.is_nan() {
        return None;
    }
    in_dtype(exact, dtype_of(p, name), op)
}

/// The values of `e` over the claimed ranges, as an interval of floats.
fn value_range(e: &Expr, ranges: &SymbolRanges) -> Option<(f64, f64)> {
    let r: BTreeMap<&str, (i128, i128)> = ranges.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    dimguard_solver::value_range(e, &r).map(|(lo, hi)| (lo as f64, hi as f64))
}

/// A number argument: an integer, a float or a bool.
fn number(v: &Value) -> Option<f64> {
    v.get("as_int")
        .and_then(Value::as_i64)
        .map(|k| k as f64)
        .or_else(|| v.get("as_float").and_then(Value::as_f64))
        .or_else(|| {
            v.get("as_bool")
                .and_then(Value::as_bool)
                .map(|b| b as i64 as f64)
        })
}

/// The expression torch recorded for the SymInt `s` (`sym_int_values`), read.
fn recorded_expr(p: &Program, s: &str) -> Option<Expr> {
    let t = p
        .graph_module
        .graph
        .sym_int_values
        .get(s)?
        .get("as_expr")?
        .get("expr_str")?
        .as_str()?;
    parse_expr(t).ok()
}

/// Bounds computed as the values are, in the result's dtype: an integer result of float
/// values truncated toward zero (none when infinite or overflowing), a bool 1 where nonzero,
/// float arithmetic and conversions widened by the dtype's rounding error.
fn in_dtype(exact: Iv, dtype: Option<i64>, op: &str) -> Option<Iv> {
    Some(match dtype {
        // An integer result of float values: torch truncates toward zero; an infinite or
        // overflowing value has none.
        Some(1..=5) => {
            if !(exact.lo.is_finite() && exact.hi.is_finite())
                || exact.lo.abs() >= 9.2e18
                || exact.hi.abs() >= 9.2e18
            {
                return None;
            }
            Iv {
                lo: exact.lo.trunc(),
                hi: exact.hi.trunc(),
            }
        }
        // A bool: 1 where nonzero.
        Some(12) => Iv {
            lo: if exact.lo <= 0.0 && exact.hi >= 0.0 {
                0.0
            } else {
                1.0
            },
            hi: if exact.lo != 0.0 || exact.hi != 0.0 {
                1.0
            } else {
                0.0
            },
        },
        // Only arithmetic and conversions round; selecting, filling or comparing values is
        // exact (a mask of zeros stays 0, not "just above").
        d => match float_eps(d).filter(|_| {
            matches!(
                op,
                "add" | "sub" | "mul" | "div" | "log" | "to" | "_to_copy" | "type_as"
            )
        }) {
            Some(eps) => Iv {
                lo: exact.lo - exact.lo.abs() * eps - 1e-30,
                hi: exact.hi + exact.hi.abs() * eps + 1e-30,
            },
            None => exact,
        },
    })
}

/// The node that computes a tensor [`bounds`] follows back, with what its steps read.
struct Bounded<'a> {
    p: &'a Program,
    known: &'a BTreeMap<String, Values>,
    ranges: &'a SymbolRanges,
    node: &'a Node,
    op: &'a str,
    /// Bounds of tensors narrowed by a `where` branch (elementwise).
    env: &'a BTreeMap<String, Iv>,
    depth: u32,
}

impl Bounded<'_> {
    fn arg(&self, n: &str, pos: usize) -> Option<&Value> {
        self.node.arg(n, pos)
    }

    /// Bounds of the tensor `t` one step further back, under `env`.
    fn tensor(&self, t: &str, env: &BTreeMap<String, Iv>) -> Option<Iv> {
        bounds(self.p, self.known, self.ranges, t, env, self.depth + 1)
    }

    /// An operand: a tensor (bounded, elementwise: `env` kept), a size (its values over the
    /// claimed ranges: `div(s70, 8, rounding_mode='trunc')`) or a number.
    fn operand(&self, n: &str, pos: usize) -> Option<Iv> {
        let v = self.arg(n, pos)?;
        match (tensor_name(v), sym_int_name(v)) {
            (Some(t), _) => self.tensor(t, self.env),
            (None, Some(s)) => {
                let (lo, hi) = value_range(&recorded_expr(self.p, s)?, self.ranges)?;
                Some(Iv { lo, hi })
            }
            (None, None) => number(v).map(Iv::point),
        }
    }

    /// A tensor whose elements move (views, transposes): bounded without `env`.
    fn moved(&self, n: &str, pos: usize) -> Option<Iv> {
        let t = self.arg(n, pos).and_then(tensor_name)?;
        self.tensor(t, &BTreeMap::new())
    }

    /// The bounds of the node's exact result (before its dtype rounds it).
    fn exact(&self) -> Option<Iv> {
        let op = self.op;
        let tensors = self
            .node
            .inputs
            .iter()
            .filter(|a| tensor_name(&a.arg).is_some())
            .count();
        Some(match op {
            "clone" | "contiguous" | "alias" | "detach" | "lift_fresh_copy" => {
                self.operand("self", 0)?
            }
            "unsqueeze" | "view" | "reshape" | "_unsafe_view" | "expand" | "permute"
            | "transpose" | "t" | "flatten" | "squeeze" | "slice" | "select" => {
                self.moved("self", 0)?
            }
            "to" | "_to_copy" | "type_as" => self.operand("self", 0)?,
            "full_like" | "full" | "scalar_tensor" => {
                let v = if op == "scalar_tensor" {
                    self.arg("s", 0)
                } else {
                    self.arg("fill_value", 1)
                };
                Iv::point(number(v?)?)
            }
            "ones_like" | "ones" | "new_ones" => Iv::point(1.0),
            "zeros_like" | "zeros" | "new_zeros" => Iv::point(0.0),
            "gt" | "lt" | "ge" | "le" | "eq" | "ne" => self.compare(),
            "logical_not" | "logical_and" | "logical_or" | "__and" | "__or" | "bitwise_and"
            | "bitwise_or" => Iv { lo: 0.0, hi: 1.0 },
            "masked_fill" => self.masked_fill()?,
            // Some of its input's values.
            "index" => self.moved("self", 0)?,
            "neg" | "abs" | "log" => self.unary()?,
            "add" | "sub" | "mul" | "div" => self.arithmetic()?,
            "min" | "minimum" | "max" | "maximum" if tensors == 2 => {
                let a = self.operand("self", 0)?;
                let b = self.operand("other", 1)?;
                if op.starts_with("min") {
                    Iv {
                        lo: a.lo.min(b.lo),
                        hi: a.hi.min(b.hi),
                    }
                } else {
                    Iv {
                        lo: a.lo.max(b.lo),
                        hi: a.hi.max(b.hi),
                    }
                }
            }
            // A reduction's values are some of its input's.
            "min" | "max" | "amin" | "amax" | "any" | "all" if tensors == 1 => {
                self.moved("self", 0)?
            }
            "clamp" => {
                let a = self.operand("self", 0)?;
                let lo = self
                    .arg("min", 1)
                    .and_then(number)
                    .unwrap_or(f64::NEG_INFINITY);
                let hi = self.arg("max", 2).and_then(number).unwrap_or(f64::INFINITY);
                Iv {
                    lo: a.lo.max(lo).min(hi),
                    hi: a.hi.min(hi).max(lo),
                }
            }
            "where" => self.select()?,
            _ => return None,
        })
    }

    /// A comparison: decided where the operands' bounds do not overlap (`ones == 2` is false
    /// everywhere), else 0 or 1.
    fn compare(&self) -> Iv {
        let both = self.operand("self", 0).zip(self.operand("other", 1));
        let decided = both.and_then(|(a, b)| {
            let point = a.lo == a.hi && b.lo == b.hi && a.lo == b.lo;
            let apart = a.hi < b.lo || b.hi < a.lo;
            let (always, never) = match self.op {
                "gt" => (a.lo > b.hi, a.hi <= b.lo),
                "lt" => (a.hi < b.lo, a.lo >= b.hi),
                "ge" => (a.lo >= b.hi, a.hi < b.lo),
                "le" => (a.hi <= b.lo, a.lo > b.hi),
                "eq" => (point, apart),
                _ => (apart, point),
            };
            if always {
                Some(Iv::point(1.0))
            } else if never {
                Some(Iv::point(0.0))
            } else {
                None
            }
        });
        decided.unwrap_or(Iv { lo: 0.0, hi: 1.0 })
    }

    /// `x` where the mask is false, the fill value where it is true.
    fn masked_fill(&self) -> Option<Iv> {
        let x = self.operand("self", 0)?;
        let mask = self.operand("mask", 1).unwrap_or(Iv { lo: 0.0, hi: 1.0 });
        let v = self.operand("value", 2)?;
        Some(if mask.hi == 0.0 {
            x
        } else if mask.lo == 1.0 {
            v
        } else {
            x.union(v)
        })
    }

    /// `neg`, `abs`, `log` (of values never negative).
    fn unary(&self) -> Option<Iv> {
        let a = self.operand("self", 0)?;
        Some(match self.op {
            "neg" => Iv {
                lo: -a.hi,
                hi: -a.lo,
            },
            "abs" if a.lo >= 0.0 => a,
            "abs" if a.hi <= 0.0 => Iv {
                lo: -a.hi,
                hi: -a.lo,
            },
            "abs" => Iv {
                lo: 0.0,
                hi: a.hi.max(-a.lo),
            },
            _ if a.lo < 0.0 => return None,
            _ => Iv {
                lo: a.lo.ln(),
                hi: a.hi.ln(),
            },
        })
    }

    /// `add`, `sub` (with `alpha`), `mul`, and `div` by a constant (rounded as asked).
    fn arithmetic(&self) -> Option<Iv> {
        let a = self.operand("self", 0)?;
        let mut b = self.operand("other", 1)?;
        Some(match self.op {
            "add" | "sub" => {
                if let Some(k) = self.arg("alpha", 2).and_then(number) {
                    b = scale(b, k)?;
                }
                if self.op == "add" {
                    Iv {
                        lo: a.lo + b.lo,
                        hi: a.hi + b.hi,
                    }
                } else {
                    Iv {
                        lo: a.lo - b.hi,
                        hi: a.hi - b.lo,
                    }
                }
            }
            "mul" => {
                let ps = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi];
                if ps.iter().any(|v| v.is_nan()) {
                    return None;
                }
                Iv {
                    lo: ps.iter().copied().fold(f64::INFINITY, f64::min),
                    hi: ps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                }
            }
            _ => {
                // Only by a constant: a divisor's interval holding 0 has no bound.
                if b.lo != b.hi || b.lo == 0.0 {
                    return None;
                }
                let q = scale(a, 1.0 / b.lo)?;
                match self
                    .arg("rounding_mode", 2)
                    .and_then(|v| v.get("as_string")?.as_str())
                {
                    None => q,
                    Some("floor") => Iv {
                        lo: q.lo.floor(),
                        hi: q.hi.floor(),
                    },
                    Some("trunc") => Iv {
                        lo: q.lo.trunc(),
                        hi: q.hi.trunc(),
                    },
                    Some(_) => return None,
                }
            }
        })
    }

    /// `where(x op c, a, b)` for a tensor `x` and a number `c`: each branch bounded on its
    /// side of `c` (a branch never taken adds no value); else both branches whole.
    fn select(&self) -> Option<Iv> {
        let cond = self.arg("condition", 0).and_then(tensor_name)?;
        let split = producer(self.p, cond).and_then(|c| {
            let cop = crate::shapes::op_name(&c.target);
            let x = c.inputs.first().and_then(|a| tensor_name(&a.arg))?;
            let k = c.inputs.get(1).and_then(|a| number(&a.arg))?;
            let xb = self.tensor(x, self.env)?;
            let int = matches!(dtype_of(self.p, x), Some(1..=5));
            let below = |strict: bool| Iv {
                lo: xb.lo,
                hi: xb.hi.min(if strict && int { k.ceil() - 1.0 } else { k }),
            };
            let above = |strict: bool| Iv {
                lo: xb.lo.max(if strict && int { k.floor() + 1.0 } else { k }),
                hi: xb.hi,
            };
            let (t, f) = match cop {
                "lt" => (below(true), above(false)),
                "le" => (below(false), above(true)),
                "gt" => (above(true), below(false)),
                "ge" => (above(false), below(true)),
                _ => return None,
            };
            Some((x.to_string(), t, f))
        });
        let branch = |n: &str, pos: usize, narrowed: Option<(&str, Iv)>| -> Option<Option<Iv>> {
            let v = self.arg(n, pos)?;
            let Some(t) = tensor_name(v) else {
                return number(v).map(|k| Some(Iv::point(k)));
            };
            let mut e = self.env.clone();
            if let Some((x, iv)) = narrowed {
                // A branch never taken adds no value.
                if iv.lo > iv.hi {
                    return Some(None);
                }
                e.insert(x.to_string(), iv);
            }
            self.tensor(t, &e).map(Some)
        };
        let (a, b) = match &split {
            Some((x, t, f)) => (
                branch("self", 1, Some((x, *t)))?,
                branch("other", 2, Some((x, *f)))?,
            ),
            None => (branch("self", 1, None)?, branch("other", 2, None)?),
        };
        match (a, b) {
            (Some(a), Some(b)) => Some(a.union(b)),
            (Some(v), None) | (None, Some(v)) => Some(v),
            (None, None) => None,
        }
    }
}

/// `k * a`.
fn scale(a: Iv, k: f64) -> Option<Iv> {
    let (x, y) = (a.lo * k, a.hi * k);
    if x.is_nan() || y.is_nan() {
        return None;
    }
    Some(Iv {
        lo: x.min(y),
        hi: x.max(y),
    })
}

/// The least value of a table's length over the claimed ranges.
fn shortest(n: &Expr, ranges: &SymbolRanges) -> Option<f64> {
    value_range(n, ranges).map(|(lo, _)| lo)
}

/// Most values of a value read from data tried one by one.
const UNBACKED_VALUES: f64 = 10_000.0;

/// Run-time asserts over values read from data (`u0 = any(mask > 0).item()`), decided from the
/// program's own bounds on those values ([`bounds`] of the tensor `item` reads), never from
/// the range torch records for them (that range *is* the assert): where every such value has
/// one possible value, it is put in the condition (left over the sizes); where the condition
/// names one such value alone, it is tried at each possible value. An assert that holds so
/// is dropped; the rest stay as they are (undecided when they name such a value).
fn decide_unbacked(
    p: &Program,
    known: &BTreeMap<String, Values>,
    ranges: &SymbolRanges,
    out: &mut Vec<Found>,
) {
    // A `ShapesSpec` program's input sizes are unbacked too (`u0`): those are no values read
    // from data.
    let inputs = input_symbols(p);
    let mut values: BTreeMap<String, Option<Read>> = BTreeMap::new();
    let mut value_of = |u: &str| -> Option<Read> {
        if let Some(v) = values.get(u) {
            return v.clone();
        }
        // Kept once found: another assert may reach the `item` where this one does not.
        let v = unbacked_bounds(p, known, ranges, u);
        if v.is_some() {
            values.insert(u.to_string(), v.clone());
        }
        v
    };
    let mut drop = Vec::new();
    for (k, f) in out.iter_mut().enumerate() {
        let Ok(c) = &f.condition else { continue };
        if f.kind != RuntimeKind::RuntimeAssert {
            continue;
        }
        let data: Vec<String> = c
            .atoms()
            .iter()
            .map(|a| a.to_string())
            .filter(|a| read_from_data(a) && !inputs.contains(a))
            .collect();
        if data.is_empty() {
            continue;
        }
        let reads: Vec<Option<Read>> = data.iter().map(|u| value_of(u)).collect();
        // Each value as an expression: exact over the sizes, or the one value of its bounds.
        let exact: Option<Vec<Expr>> = reads
            .iter()
            .map(|r| match r {
                Some(Read::Exact(e)) => Some(e.clone()),
                Some(Read::Within(iv)) if iv.lo == iv.hi => Some(Expr::int(iv.lo as i128)),
                _ => None,
            })
            .collect();
        let ivs: Vec<Option<Iv>> = reads
            .iter()
            .map(|r| match r {
                Some(Read::Within(iv)) => Some(*iv),
                _ => None,
            })
            .collect();
        let decided = if let Some(exact) = exact {
            let mut e = c.clone();
            for (u, v) in data.iter().zip(&exact) {
                e = e.substitute(u, v);
            }
            Some(e)
        } else if let ([u], [Some(iv)], true) = (&data[..], &ivs[..], c.atoms().len() == 1) {
            (iv.hi - iv.lo <= UNBACKED_VALUES)
                .then(|| {
                    (iv.lo as i128..=iv.hi as i128).all(|v| {
                        matches!(
                            c.eval(&|n| (n == u).then_some(v)),
                            Ok(dimguard_solver::expr::Value::Bool(true))
                        )
                    })
                })
                .and_then(|all| all.then_some(Expr::Bool(true)))
        } else {
            None
        };
        let Some(e) = decided else { continue };
        match e.eval(&|_| None) {
            Ok(dimguard_solver::expr::Value::Bool(true)) => drop.push(k),
            _ if e
                .atoms()
                .iter()
                .all(|a| !read_from_data(a.as_ref()) || inputs.contains(a.as_ref())) =>
            {
                f.symbols = e.atoms().iter().map(|a| a.to_string()).collect();
                f.condition = Ok(e);
            }
            _ => {}
        }
    }
    for k in drop.into_iter().rev() {
        out.remove(k);
    }
}

/// What the program says of a value read from data: exactly an expression over the input sizes
/// (`item` of `div(seq, 8, rounding_mode='trunc')`: `trunc(seq / 8)`), or bounds.
#[derive(Debug, Clone)]
enum Read {
    Exact(Expr),
    Within(Iv),
}

/// The program's bounds on the value read from data `u` (integers: `item` of an integer or
/// bool tensor, `Eq(u, 1)` for a bool), from the tensor it reads: exactly, where that tensor is
/// integer arithmetic on sizes alone ([`size_value`]). The `item` reading `u` is the
/// one whose recorded expression is `u`; where torch replaced it by what it proved (`u1` by 8:
/// the asserts still check it), the one `item` the asserts naming `u` alone are computed from
/// (their SymInt chains in the graph).
fn unbacked_bounds(
    p: &Program,
    known: &BTreeMap<String, Values>,
    ranges: &SymbolRanges,
    u: &str,
) -> Option<Read> {
    let g = &p.graph_module.graph;
    // The length of a `slice` torch could not compute while tracing (an end read from data):
    // exactly what the slice computes, whatever made the end.
    if let Some(e) = slice_length(p, u) {
        return Some(Read::Exact(e));
    }
    // Other operators make values from data too (sizes of `nonzero`, `unique`, ...).
    if g.nodes.iter().any(|n| {
        let op = crate::shapes::op_name(&n.target);
        matches!(
            op,
            "nonzero"
                | "unique"
                | "_unique2"
                | "masked_select"
                | "unique_consecutive"
                | "repeat_interleave"
        )
    }) {
        return None;
    }
    let items: Vec<&Node> = g
        .nodes
        .iter()
        .filter(|n| {
            matches!(
                crate::shapes::op_name(&n.target),
                "item" | "_local_scalar_dense"
            )
        })
        .collect();
    // What each `item` records: `u`, `Eq(u, 1)`, or a value torch put in its place.
    let read: Vec<Option<Expr>> = items
        .iter()
        .map(|node| {
            let o = node.outputs.first()?;
            let expr = |key: &str, table: &BTreeMap<String, Value>| -> Option<Expr> {
                let n = o.get(key)?.get("as_name")?.as_str()?;
                let v = table.get(n)?;
                if let Some(k) = v.get("as_int").and_then(Value::as_i64) {
                    return Some(Expr::int(k as i128));
                }
                parse_expr(v.get("as_expr")?.get("expr_str")?.as_str()?).ok()
            };
            expr("as_sym_int", &g.sym_int_values)
                .or_else(|| expr("as_sym_bool", &g.sym_bool_values))
        })
        .collect();
    let symbol_of = |e: &Expr| -> Option<String> {
        match e {
            Expr::Cmp(CmpOp::Eq, a, b) if **b == Expr::int(1) => Some(a.to_string()),
            Expr::Cmp(CmpOp::Eq, a, b) if **a == Expr::int(1) => Some(b.to_string()),
            _ if e.atoms().len() == 1
                && e.atoms().iter().next().map(|a| Expr::sym(a)) == Some(e.clone()) =>
            {
                Some(e.to_string())
            }
            _ => None,
        }
    };
    let named: Vec<Option<String>> = read
        .iter()
        .map(|e| e.as_ref().and_then(symbol_of).filter(|s| read_from_data(s)))
        .collect();
    let k = named
        .iter()
        .position(|n| n.as_deref() == Some(u))
        .or_else(|| {
            // Replaced by a value: the one `item` that the asserts naming `u` alone (in their
            // message, written before torch replaced it: `u3 >= 8` over `item_1`) are computed
            // from. An assert naming several values read from data says nothing of which is which.
            let inputs = input_symbols(p);
            let mut hit = BTreeSet::new();
            for n in g.nodes.iter() {
                if crate::shapes::op_name(&n.target) != "_assert_scalar" {
                    continue;
                }
                let Some(c) = message_expr(n) else { continue };
                let data: BTreeSet<String> = c
                    .atoms()
                    .iter()
                    .map(|a| a.to_string())
                    .filter(|a| read_from_data(a) && !inputs.contains(a))
                    .collect();
                if data.len() != 1 || !data.contains(u) {
                    continue;
                }
                let reached = sym_inputs(p, n.name.as_deref().unwrap_or_default());
                hit.extend(items.iter().enumerate().filter_map(|(k, n)| {
                    let o = n.outputs.first()?;
                    ["as_sym_int", "as_sym_bool"]
                        .iter()
                        .any(|key| {
                            o.get(*key)
                                .and_then(|v| v.get("as_name"))
                                .and_then(Value::as_str)
                                .is_some_and(|name| reached.contains(name))
                        })
                        .then_some(k)
                }));
            }
            match hit.into_iter().collect::<Vec<_>>()[..] {
                [k] if named[k].is_none() => Some(k),
                _ => None,
            }
        })?;
    let t = items[k].inputs.first().and_then(|a| tensor_name(&a.arg))?;
    if !matches!(dtype_of(p, t), Some(1..=5) | Some(12)) {
        return None;
    }
    if let Some(e) = size_value(p, t, 0) {
        return Some(Read::Exact(e));
    }
    let iv = bounds(p, known, ranges, t, &BTreeMap::new(), 0)?;
    let (lo, hi) = (iv.lo.ceil(), iv.hi.floor());
    (lo.is_finite() && hi.is_finite() && lo <= hi).then_some(Read::Within(Iv { lo, hi }))
}

/// Where `u` is the size torch recorded for a `slice`'s output along its dimension (an unbacked
/// size: its bounds were a value read from data, ItemOfSize's `x[:, : 8 * chunks]`), the length
/// the slice computes, as an expression over the program's values: its bounds as the graph
/// computes them ([`chain_value`], else torch's recorded expression), wrapped once when
/// negative and clamped to the dimension's size as `aten.slice` does, divided by the step
/// rounding up. `None` for a size no slice records, or a step that is not a number.
fn slice_length(p: &Program, u: &str) -> Option<Expr> {
    let g = &p.graph_module.graph;
    let int = |v: &Value| v.get("as_int").and_then(Value::as_i64).map(|k| k as i128);
    let size = |v: &Value| -> Option<Expr> {
        match int(v) {
            Some(k) => Some(Expr::int(k)),
            None => parse_expr(v.get("as_expr")?.get("expr_str")?.as_str()?).ok(),
        }
    };
    let value = |v: &Value| -> Option<Expr> {
        if let Some(k) = int(v) {
            return Some(Expr::int(k));
        }
        let s = sym_int_name(v)?;
        chain_value(p, s, 0).or_else(|| recorded_expr(p, s))
    };
    let want = Expr::sym(u);
    g.nodes.iter().find_map(|node| {
        if crate::shapes::op_name(&node.target) != "slice" {
            return None;
        }
        let out = node.outputs.first().and_then(tensor_name)?;
        let input = tensor_name(&node.inputs.first()?.arg)?;
        let sizes = &g.tensor_values.get(out)?.sizes;
        let rank = i128::try_from(sizes.len()).ok()?;
        let dim = node.arg("dim", 1).map_or(Some(0), int)?;
        let dim = usize::try_from(if dim < 0 { dim + rank } else { dim }).ok()?;
        if size(sizes.get(dim)?)? != want {
            return None;
        }
        let n = size(g.tensor_values.get(input)?.sizes.get(dim)?)?;
        let step = node
            .arg("step", 4)
            .map_or(Some(1), int)
            .filter(|k| *k >= 1)?;
        // A bound as `aten.slice` reads it: from the end when negative, then within 0..=n.
        let within = |b: Expr, lo: Expr| -> Expr {
            let negative = cmp(CmpOp::Lt, b.clone(), Expr::int(0));
            let wrapped = match negative.eval(&|_| None) {
                Ok(dimguard_solver::expr::Value::Bool(false)) => b,
                _ => Expr::Ite(
                    Box::new(negative),
                    Box::new(Expr::Add(vec![b.clone(), n.clone()])),
                    Box::new(b),
                ),
            };
            Expr::Max(vec![lo, Expr::Min(vec![wrapped, n.clone()])])
        };
        let start = match node.arg("start", 2) {
            Some(v) => within(value(v)?, Expr::int(0)),
            None => Expr::int(0),
        };
        let end = match node.arg("end", 3) {
            Some(v) => within(value(v)?, start.clone()),
            None => n.clone(),
        };
        let len = Expr::Add(vec![end, Expr::Mul(vec![Expr::int(-1), start])]);
        Some(if step == 1 {
            len
        } else {
            Expr::FloorDiv(
                Box::new(Expr::Add(vec![len, Expr::int(step - 1)])),
                Box::new(Expr::int(step)),
            )
        })
    })
}

/// The exact value of an integer scalar tensor computed from sizes alone, as an expression over
/// the program's size symbols: `scalar_tensor`, copies and dtype conversions to an integer
/// dtype, `add`/`sub`/`mul` by an integer, and `div` by a positive integer rounded (`trunc`,
/// `floor`). A size operand is its recorded expression; one torch recorded as a number is taken
/// only where it is `sym_size` of an input whose own recorded size there is that number (the
/// program holds every input it accepts to it). `None` for anything else.
fn size_value(p: &Program, name: &str, depth: u32) -> Option<Expr> {
    if depth > BOUNDS_DEPTH || !matches!(dtype_of(p, name), Some(1..=5)) {
        return None;
    }
    let g = &p.graph_module.graph;
    let node = producer(p, name)?;
    let op = crate::shapes::op_name(&node.target).trim_end_matches('_');
    let arg = |n: &str, pos: usize| node.arg(n, pos);
    let int = |v: &Value| v.get("as_int").and_then(Value::as_i64).map(|k| k as i128);
    let operand = |v: &Value| -> Option<Expr> {
        if let Some(t) = tensor_name(v) {
            return size_value(p, t, depth + 1);
        }
        if let Some(k) = int(v) {
            return Some(Expr::int(k));
        }
        let s = sym_int_name(v)?;
        if let Some(e) = recorded_expr(p, s) {
            return Some(e);
        }
        let k = int(g.sym_int_values.get(s)?)?;
        let size = g
            .nodes
            .iter()
            .find(|n| n.outputs.iter().any(|o| sym_int_name(o) == Some(s)))?;
        if crate::shapes::op_name(&size.target) != "sym_size" {
            return None;
        }
        let input = size.inputs.first().and_then(|a| tensor_name(&a.arg))?;
        if !p.user_inputs().iter().any(|u| u == input) {
            return None;
        }
        let dim = usize::try_from(size.inputs.get(1).and_then(|a| int(&a.arg))?).ok()?;
        let recorded = g.tensor_values.get(input)?.sizes.get(dim)?;
        (int(recorded) == Some(k)).then(|| Expr::int(k))
    };
    // No `alpha` other than 1.
    if node
        .inputs
        .iter()
        .any(|a| a.name == "alpha" && int(&a.arg) != Some(1))
    {
        return None;
    }
    match op {
        "scalar_tensor" | "clone" | "to" | "_to_copy" | "lift_fresh_copy" | "alias" | "detach" => {
            operand(arg("self", 0).or_else(|| arg("s", 0))?)
        }
        "add" | "sub" | "mul" => {
            let a = operand(arg("self", 0)?)?;
            let b = operand(arg("other", 1)?)?;
            Some(match op {
                "add" => Expr::Add(vec![a, b]),
                "sub" => Expr::Add(vec![a, Expr::Mul(vec![Expr::int(-1), b])]),
                _ => Expr::Mul(vec![a, b]),
            })
        }
        "div" => {
            let a = operand(arg("self", 0)?)?;
            let k = int(arg("other", 1)?).filter(|k| *k > 0)?;
            let kind = match arg("rounding_mode", 2)?.get("as_string")?.as_str()? {
                "trunc" => RoundKind::Trunc,
                "floor" => RoundKind::Floor,
                _ => return None,
            };
            Some(Expr::Round(
                kind,
                Box::new(Expr::TrueDiv(Box::new(a), Box::new(Expr::int(k)))),
            ))
        }
        _ => None,
    }
}

/// The symbols of the user inputs' recorded sizes.
fn input_symbols(p: &Program) -> BTreeSet<String> {
    let g = &p.graph_module.graph;
    p.user_inputs()
        .iter()
        .filter_map(|i| g.tensor_values.get(i))
        .flat_map(|m| m.sizes.iter())
        .filter_map(|v| parse_expr(v.get("as_expr")?.get("expr_str")?.as_str()?).ok())
        .flat_map(|e| {
            e.atoms()
                .into_iter()
                .map(|a| a.to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A symbol torch made for a value read from data (`u0`, `u12`: unbacked), not an input size
/// (its range in the program is torch's record of the asserts on it).
fn read_from_data(s: &str) -> bool {
    s.strip_prefix('u')
        .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
}

/// The SymInt / SymBool names the first argument of the node `name` is computed from, followed
/// back through the nodes that compute them.
fn sym_inputs(p: &Program, name: &str) -> BTreeSet<String> {
    let g = &p.graph_module.graph;
    let sym = |v: &Value| -> Option<String> {
        ["as_sym_int", "as_sym_bool"]
            .iter()
            .find_map(|k| v.get(*k)?.get("as_name")?.as_str().map(String::from))
    };
    let Some(node) = g.nodes.iter().find(|n| n.name.as_deref() == Some(name)) else {
        return BTreeSet::new();
    };
    let mut todo: Vec<String> = node
        .inputs
        .first()
        .and_then(|a| sym(&a.arg))
        .into_iter()
        .collect();
    let mut seen = BTreeSet::new();
    while let Some(s) = todo.pop() {
        if seen.len() > 256 || !seen.insert(s.clone()) {
            continue;
        }
        if let Some(n) = g.nodes.iter().find(|n| {
            n.outputs
                .iter()
                .any(|o| sym(o).as_deref() == Some(s.as_str()))
        }) {
            todo.extend(n.inputs.iter().filter_map(|a| sym(&a.arg)));
        }
    }
    seen
}
