//! Symbolic shape functions: one rule per ATen operator, computing output sizes from input sizes
//! as exact expressions in the program's input symbols.
//!
//! [`infer`] is a short dispatch on the operator's name (`aten.conv2d`, `aten.add_`,
//! `_operator.add`, ..., overload ignored) to one module per operator family:
//!
//! | module | operators |
//! |---|---|
//! | `symint` | SymInt arithmetic, `sym_size`, `arange`, `linspace` |
//! | `pointwise` | shape-preserving operators, broadcasting binary operators |
//! | `window` | convolution, pooling, upsampling, `pixel_shuffle`, `grid_sampler` |
//! | `layout` | `view` .. `split`: reshaping, permuting, slicing, joining, splitting |
//! | `reduce` | reductions, `linear` and matrix products |
//!
//! An operator without a rule gives `Ok(None)`: the propagation keeps its recorded sizes and
//! lists it as unchecked. Every argument is read through a checked accessor (`args.rs`): an
//! argument that cannot be right (a rank-2 convolution weight) is a [`ShapeError`] naming the
//! node, never a panic. Guards a rule relies on (broadcast and `cat` sizes must agree) are
//! returned with the result.

mod args;
mod layout;
mod pointwise;
mod reduce;
mod symint;
mod window;

use crate::program::Node;
use args::Args;
use dimguard_solver::{CmpOp, Expr};
use std::collections::BTreeMap;

/// Known values while propagating.
pub struct Env<'a> {
    /// Tensor name -> sizes.
    pub tensors: &'a BTreeMap<String, Vec<Expr>>,
    /// SymInt name -> value.
    pub symints: &'a BTreeMap<String, Expr>,
}

/// The result of a shape function.
#[derive(Debug, Clone, Default)]
pub struct Inferred {
    /// Sizes of each output tensor, in output order (`None` for non-tensor outputs).
    pub tensors: Vec<Option<Vec<Expr>>>,
    /// Values of SymInt outputs, by name.
    pub symints: Vec<(String, Expr)>,
    /// Conditions the operator requires (equal sizes under broadcasting or `cat`).
    pub guards: Vec<Expr>,
    /// Sizes of tensors returned in a list (`chunk`, `split`, `meshgrid`), in list order.
    pub listed: Vec<Vec<Expr>>,
}

impl Inferred {
    /// One output tensor.
    fn one(shape: Vec<Expr>) -> Inferred {
        Inferred {
            tensors: vec![Some(shape)],
            ..Inferred::default()
        }
    }
}

/// A node whose arguments cannot be right for its operator: the program is malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node `{node}` ({target}): {message}")]
pub struct ShapeError {
    /// The node's name.
    pub node: String,
    /// The operator.
    pub target: String,
    /// What is wrong.
    pub message: String,
}

/// A shape rule: the outputs from the arguments (`None`: unchecked, or malformed when the
/// arguments recorded why).
type Rule = fn(&Args) -> Option<Inferred>;

/// The operator's short name: `torch.ops.aten.conv2d.default` -> `conv2d`.
pub fn op_name(target: &str) -> &str {
    let t = target.strip_prefix("torch.ops.").unwrap_or(target);
    let mut parts = t.split('.');
    match (parts.next(), parts.next()) {
        (Some("aten"), Some(op)) => op,
        (Some("_operator"), Some(op)) => op,
        (Some(ns), Some(op)) if ns != "aten" => op,
        _ => t,
    }
}

/// Computes the outputs of `node`: `Ok(None)` when the operator has no shape function here (or
/// its sizes are not known), an error naming the node when its arguments cannot be right.
pub fn infer(node: &Node, env: &Env) -> Result<Option<Inferred>, ShapeError> {
    let op = op_name(&node.target).trim_end_matches('_');
    let is_operator = node.target.starts_with("_operator.");
    let rule = is_operator
        .then(|| symint::operator_rule(op))
        .flatten()
        .or_else(|| symint::rule(op))
        .or_else(|| pointwise::rule(op))
        .or_else(|| window::rule(op))
        .or_else(|| layout::rule(op))
        .or_else(|| reduce::rule(op));
    let Some(rule) = rule else {
        return Ok(None);
    };
    let args = Args::new(node, env, op);
    let out = rule(&args);
    match args.into_malformed() {
        Some(message) => Err(ShapeError {
            node: node.name.clone().unwrap_or_default(),
            target: node.target.clone(),
            message,
        }),
        None => Ok(out),
    }
}

/// Python-style index normalization.
fn norm_dim(d: i128, rank: usize) -> Option<usize> {
    let r = rank as i128;
    let d = if d < 0 { d + r } else { d };
    (0..r).contains(&d).then_some(d as usize)
}

/// Broadcast two shapes; returns the shape and the equalities it needs.
fn broadcast(a: &[Expr], c: &[Expr], guards: &mut Vec<Expr>) -> Vec<Expr> {
    let n = a.len().max(c.len());
    let one = Expr::int(1);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let x = (i + a.len()).checked_sub(n).map(|j| &a[j]);
        let y = (i + c.len()).checked_sub(n).map(|j| &c[j]);
        out.push(match (x, y) {
            (Some(x), None) => x.clone(),
            (None, Some(y)) => y.clone(),
            (Some(x), Some(y)) if *x == one => y.clone(),
            (Some(x), Some(y)) if *y == one || x == y => x.clone(),
            (Some(x), Some(y)) => {
                guards.push(Expr::Cmp(
                    CmpOp::Eq,
                    Box::new(x.clone()),
                    Box::new(y.clone()),
                ));
                x.clone()
            }
            (None, None) => one.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests;
