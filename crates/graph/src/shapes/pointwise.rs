//! Pointwise operators: those that keep their input's shape, and binary operators that
//! broadcast.

use super::args::{broadcast, Args, Inferred, Rule};
use crate::program::tensor_name;
use dimguard_solver::Expr;

/// Operators whose first output has the input's shape.
const SAME_SHAPE: &[&str] = &[
    "relu",
    "hardswish",
    "hardsigmoid",
    "sigmoid",
    "tanh",
    "gelu",
    "silu",
    "dropout",
    "clone",
    "contiguous",
    "_to_copy",
    "to",
    "alias",
    "detach",
    "exp",
    "log",
    "sqrt",
    "rsqrt",
    "abs",
    "clamp",
    "hardtanh",
    "leaky_relu",
    "elu",
    "softmax",
    "_softmax",
    "log_softmax",
    "batch_norm",
    "instance_norm",
    "layer_norm",
    "group_norm",
    "_native_batch_norm_legit_no_training",
    "native_layer_norm",
    "native_group_norm",
    "native_batch_norm",
    "relu6",
    "mish",
    "erf",
    "reciprocal",
    "square",
    "copy",
    "fill",
    "zero",
    "cos",
    "sin",
    "lift_fresh_copy",
];

/// Elementwise operators over several tensors, broadcast.
const BROADCAST: &[&str] = &[
    "mul",
    "div",
    "maximum",
    "minimum",
    "pow",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "bitwise_and",
    "logical_and",
    "where",
    "add",
    "sub",
    "rsub",
    "remainder",
];

pub(super) fn rule(op: &str) -> Option<Rule> {
    if SAME_SHAPE.contains(&op) {
        Some(same_shape)
    } else if BROADCAST.contains(&op) {
        Some(broadcasting)
    } else {
        None
    }
}

fn same_shape(a: &Args) -> Option<Inferred> {
    let t = a.tensor("input", 0).or_else(|| a.tensor("self", 0))?;
    Some(Inferred {
        tensors: (0..a.node.outputs.len())
            .map(|i| (i == 0).then(|| t.to_vec()))
            .collect(),
        ..Inferred::default()
    })
}

fn broadcasting(a: &Args) -> Option<Inferred> {
    let mut out = Inferred::default();
    let mut shape: Option<Vec<Expr>> = None;
    for arg in &a.node.inputs {
        if let Some(t) = tensor_name(&arg.arg).and_then(|n| a.env.tensors.get(n)) {
            shape = Some(match shape {
                None => t.clone(),
                Some(s) => broadcast(&s, t, &mut out.guards),
            });
        }
    }
    out.tensors = vec![Some(shape?)];
    Some(out)
}
