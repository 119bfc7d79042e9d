//! SymInt arithmetic (`_operator.add`, ...), `sym_size`, and sizes made from integers
//! (`arange`, `linspace`).

use super::{Args, Inferred, Rule};
use crate::program::Node;
use dimguard_solver::types::{Expr, RoundKind};
use serde_json::Value;

pub(super) fn operator_rule(op: &str) -> Option<Rule> {
    matches!(op, "add" | "sub" | "mul" | "floordiv" | "mod" | "neg").then_some(arith as Rule)
}

pub(super) fn rule(op: &str) -> Option<Rule> {
    Some(match op {
        "sym_size" => sym_size,
        "linspace" | "logspace" => linspace,
        "arange" => arange,
        // Assertions produce nothing to check.
        "_assert_tensor_metadata" | "_assert_scalar" | "sym_constrain_range_for_size" => {
            |_| Some(Inferred::default())
        }
        _ => return None,
    })
}

fn output_name(node: &Node) -> Option<String> {
    let o = node.outputs.first()?;
    o.get("as_sym_int")
        .and_then(|s| s.get("as_name"))
        .and_then(Value::as_str)
        .map(String::from)
}

fn symint(node: &Node, v: Expr) -> Option<Inferred> {
    Some(Inferred {
        symints: vec![(output_name(node)?, v)],
        ..Inferred::default()
    })
}

fn sym_size(a: &Args) -> Option<Inferred> {
    let t = a.input(0)?;
    let d = a.index(a.const_int("dim", 1)?, t.len(), "dim")?;
    symint(a.node, t[d].clone())
}

fn arith(a: &Args) -> Option<Inferred> {
    let first = &a.node.inputs.first()?.arg;
    let x = a
        .symint_value(first.get("as_sym_int").unwrap_or(first))
        .or_else(|| a.int("", 0))?;
    let y = a
        .node
        .inputs
        .get(1)
        .and_then(|i| a.symint_value(i.arg.get("as_sym_int").unwrap_or(&i.arg)));
    let v = match (a.op, y) {
        ("add", Some(y)) => x + y,
        ("sub", Some(y)) => x + Expr::int(-1) * y,
        ("mul", Some(y)) => x * y,
        ("floordiv", Some(y)) => Expr::FloorDiv(Box::new(x), Box::new(y)),
        ("mod", Some(y)) => Expr::Mod(Box::new(x), Box::new(y)),
        ("neg", None) => Expr::int(-1) * x,
        _ => return None,
    };
    symint(a.node, v)
}

fn linspace(a: &Args) -> Option<Inferred> {
    Some(Inferred::one(vec![a.int("steps", 2)?]))
}

fn arange(a: &Args) -> Option<Inferred> {
    let (start, end) = match (a.int("start", 0), a.int("end", 1)) {
        (Some(s), Some(e)) if a.node.inputs.iter().any(|i| i.name == "start") => (s, e),
        _ => (Expr::int(0), a.int("end", 0)?),
    };
    let step = a.const_int("step", 2).unwrap_or(1);
    Some(Inferred::one(vec![ceil_div(
        end + Expr::int(-1) * start,
        step,
    )]))
}

/// `ceil(n / d)` for a constant `d`.
pub(super) fn ceil_div(n: Expr, d: i128) -> Expr {
    Expr::Round(
        RoundKind::Ceil,
        Box::new(Expr::TrueDiv(Box::new(n), Box::new(Expr::int(d)))),
    )
}
