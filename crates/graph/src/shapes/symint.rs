//! SymInt arithmetic (`_operator.add`, ...), `sym_size`, and sizes made from integers
//! (`arange`, `linspace`).

use super::args::{Args, Inferred, Rule};
use crate::program::Node;
use dimguard_solver::{CmpOp, Expr, RoundKind};
use serde_json::Value;

pub(super) fn operator_rule(op: &str) -> Option<Rule> {
    match op {
        "add" | "sub" | "mul" | "floordiv" | "mod" | "neg" => Some(arith as Rule),
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "and" | "or" | "not" | "truth" => {
            Some(logic as Rule)
        }
        _ => None,
    }
}

pub(super) fn rule(op: &str) -> Option<Rule> {
    Some(match op {
        "sym_size" => sym_size,
        "linspace" | "logspace" => linspace,
        "arange" => arange,
        "sym_min" | "sym_max" => min_max,
        "sym_not" => logic,
        // Assertions produce nothing to check.
        "_assert_tensor_metadata"
        | "_assert_scalar"
        | "_assert_async"
        | "sym_constrain_range"
        | "sym_constrain_range_for_size" => |_| Some(Inferred::default()),
        // A 0-dimensional tensor holding a scalar.
        "scalar_tensor" => |_| Some(Inferred::one(vec![])),
        _ => return None,
    })
}

fn output_name(node: &Node) -> Option<String> {
    let o = node.outputs.first()?;
    o.get("as_sym_int")
        .or_else(|| o.get("as_sym_bool"))
        .and_then(|s| s.get("as_name"))
        .and_then(Value::as_str)
        .map(String::from)
}

/// A SymInt or SymBool argument's value: a constant, or a value computed before (SymBools are
/// kept beside SymInts, as boolean expressions).
fn scalar(a: &Args, v: &Value) -> Option<Expr> {
    if let Some(b) = v.get("as_bool").and_then(Value::as_bool) {
        return Some(Expr::Bool(b));
    }
    if let Some(n) = v.get("as_int").and_then(Value::as_i64) {
        return Some(Expr::int(n as i128));
    }
    let named = v.get("as_sym_int").or_else(|| v.get("as_sym_bool"))?;
    a.symint_value(named)
}

/// Comparisons and logic on SymInts (`_operator.ge`, `_operator.and_`, `torch.sym_not`): the
/// conditions torch asserts at run time (`aten._assert_scalar`).
fn logic(a: &Args) -> Option<Inferred> {
    let x = scalar(a, &a.node.inputs.first()?.arg)?;
    let y = a.node.inputs.get(1).and_then(|i| scalar(a, &i.arg));
    let cmp = |op| Some(Expr::Cmp(op, Box::new(x.clone()), Box::new(y.clone()?)));
    let v = match a.op {
        "eq" => cmp(CmpOp::Eq),
        "ne" => cmp(CmpOp::Ne),
        "lt" => cmp(CmpOp::Lt),
        "le" => cmp(CmpOp::Le),
        "gt" => cmp(CmpOp::Gt),
        "ge" => cmp(CmpOp::Ge),
        "and" => Some(Expr::And(vec![x.clone(), y.clone()?])),
        "or" => Some(Expr::Or(vec![x.clone(), y.clone()?])),
        "not" | "sym_not" => Some(Expr::Not(Box::new(x.clone()))),
        "truth" => Some(x.clone()),
        _ => None,
    }?;
    symint(a.node, v)
}

/// `torch.sym_min` / `torch.sym_max` of two SymInts.
fn min_max(a: &Args) -> Option<Inferred> {
    let x = scalar(a, &a.node.inputs.first()?.arg)?;
    let y = scalar(a, &a.node.inputs.get(1)?.arg)?;
    symint(
        a.node,
        match a.op {
            "sym_min" => Expr::Min(vec![x, y]),
            _ => Expr::Max(vec![x, y]),
        },
    )
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
