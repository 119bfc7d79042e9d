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
pub use args::{Env, Inferred};

pub use crate::error::ShapeError;

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

#[cfg(test)]
mod tests;
