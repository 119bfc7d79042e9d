//! Symbolic shape functions: one per ATen operator, computing output sizes from input sizes as
//! exact expressions in the program's input symbols.
//!
//! [`infer`] dispatches on the operator's name (`aten.conv2d`, `aten.add_`, `_operator.add`, ...,
//! overload ignored). An operator without a shape function returns `None`: the propagation keeps
//! its recorded sizes and lists it as unchecked. Guards a shape function relies on (broadcast and
//! `cat` sizes must agree) are returned with the result.

use crate::program::{sym_int_name, tensor_name};
use dimguard_solver::num::{self, Q};
use dimguard_solver::types::{CmpOp, Expr, RoundKind};
use serde_json::Value;
use std::collections::BTreeMap;
use std::ops::{Add, Mul};

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

fn b(e: Expr) -> Box<Expr> {
    Box::new(e)
}

fn int(n: i128) -> Expr {
    Expr::int(n)
}

struct Args<'a> {
    node: &'a crate::program::Node,
    env: &'a Env<'a>,
}

impl Args<'_> {
    fn get(&self, name: &str, pos: usize) -> Option<&Value> {
        self.node
            .inputs
            .iter()
            .find(|a| a.name == name)
            .or_else(|| self.node.inputs.get(pos))
            .map(|a| &a.arg)
            .filter(|v| v.get("as_none").is_none())
    }
    fn tensor(&self, name: &str, pos: usize) -> Option<&Vec<Expr>> {
        self.env.tensors.get(tensor_name(self.get(name, pos)?)?)
    }
    fn ints(&self, name: &str, pos: usize) -> Option<Vec<Expr>> {
        let v = self.get(name, pos)?;
        if let Some(a) = v.get("as_ints").and_then(Value::as_array) {
            return a
                .iter()
                .map(|x| x.as_i64().map(|n| int(n as i128)))
                .collect();
        }
        if let Some(a) = v.get("as_sym_ints").and_then(Value::as_array) {
            return a.iter().map(|x| self.symint_value(x)).collect();
        }
        self.int(name, pos).map(|e| vec![e])
    }
    fn symint_value(&self, x: &Value) -> Option<Expr> {
        if let Some(n) = x.get("as_int").and_then(Value::as_i64) {
            return Some(int(n as i128));
        }
        let name = x.get("as_name").and_then(Value::as_str)?;
        self.env.symints.get(name).cloned()
    }
    fn int(&self, name: &str, pos: usize) -> Option<Expr> {
        let v = self.get(name, pos)?;
        if let Some(n) = v.get("as_int").and_then(Value::as_i64) {
            return Some(int(n as i128));
        }
        if let Some(n) = sym_int_name(v) {
            return self.env.symints.get(n).cloned();
        }
        v.get("as_sym_int").and_then(|s| self.symint_value(s))
    }
    fn const_int(&self, name: &str, pos: usize) -> Option<i128> {
        match self.int(name, pos)? {
            Expr::Const(c) if c.is_integer() => Some(*c.numer()),
            _ => None,
        }
    }
    fn float(&self, v: &Value) -> Option<Q> {
        v.as_f64()
            .and_then(num::f64_exact)
            .or_else(|| v.as_i64().map(|n| num::q(n as i128)))
    }
    fn bool(&self, name: &str, pos: usize) -> Option<bool> {
        self.get(name, pos)?.get("as_bool")?.as_bool()
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
    let one = int(1);
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
                guards.push(Expr::Cmp(CmpOp::Eq, b(x.clone()), b(y.clone())));
                x.clone()
            }
            (None, None) => one.clone(),
        });
    }
    out
}

/// `floor((in + 2p - d(k-1) - 1 + extra) / s) + 1`.
fn window(input: &Expr, k: i128, s: i128, p: i128, d: i128, ceil_mode: bool) -> Expr {
    let num_ = Expr::add(input.clone(), int(2 * p - d * (k - 1) - 1));
    if !ceil_mode {
        return Expr::add(Expr::floordiv(num_, s), int(1));
    }
    // PyTorch's pooling_output_shape: ceil, then drop the last window if it starts in padding.
    let out = Expr::add(Expr::floordiv(Expr::add(num_, int(s - 1)), s), int(1));
    let starts_in_pad = Expr::Cmp(
        CmpOp::Ge,
        b(Expr::mul(int(s), Expr::add(out.clone(), int(-1)))),
        b(Expr::add(input.clone(), int(p))),
    );
    Expr::Ite(b(starts_in_pad), b(Expr::add(out.clone(), int(-1))), b(out))
}

fn list_or(a: Option<Vec<Expr>>, n: usize, default: i128) -> Vec<i128> {
    let v: Vec<i128> = a
        .unwrap_or_default()
        .into_iter()
        .filter_map(|e| match e {
            Expr::Const(c) if c.is_integer() => Some(*c.numer()),
            _ => None,
        })
        .collect();
    match v.len() {
        0 => vec![default; n],
        1 => vec![v[0]; n],
        _ => v,
    }
}

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

/// Computes the outputs of `node`; `None` when the operator has no shape function here.
pub fn infer(node: &crate::program::Node, env: &Env) -> Option<Inferred> {
    let a = Args { node, env };
    let mut out = Inferred::default();
    let op = op_name(&node.target).trim_end_matches('_');
    let is_operator = node.target.starts_with("_operator.");
    let one_tensor = |s: Vec<Expr>| vec![Some(s)];
    match op {
        // SymInt arithmetic and sym_size.
        "sym_size" => {
            let t = a.tensor("self", 0).or_else(|| a.tensor("input", 0))?;
            let d = norm_dim(a.const_int("dim", 1)?, t.len())?;
            out.symints.push((symint_output(node)?, t[d].clone()));
        }
        "add" | "sub" | "mul" | "floordiv" | "mod" | "neg" if is_operator => {
            let x = a
                .symint_value(
                    node.inputs
                        .first()
                        .map(|i| &i.arg)?
                        .get("as_sym_int")
                        .unwrap_or(&node.inputs[0].arg),
                )
                .or_else(|| a.int("", 0))?;
            let y = node
                .inputs
                .get(1)
                .and_then(|i| a.symint_value(i.arg.get("as_sym_int").unwrap_or(&i.arg)));
            let v = match (op, y) {
                ("add", Some(y)) => Expr::add(x, y),
                ("sub", Some(y)) => Expr::add(x, Expr::mul(int(-1), y)),
                ("mul", Some(y)) => Expr::mul(x, y),
                ("floordiv", Some(y)) => Expr::FloorDiv(b(x), b(y)),
                ("mod", Some(y)) => Expr::Mod(b(x), b(y)),
                ("neg", None) => Expr::mul(int(-1), x),
                _ => return None,
            };
            out.symints.push((symint_output(node)?, v));
        }
        // Shape-preserving operators.
        "relu"
        | "hardswish"
        | "hardsigmoid"
        | "sigmoid"
        | "tanh"
        | "gelu"
        | "silu"
        | "dropout"
        | "clone"
        | "contiguous"
        | "_to_copy"
        | "to"
        | "alias"
        | "detach"
        | "exp"
        | "log"
        | "sqrt"
        | "rsqrt"
        | "abs"
        | "clamp"
        | "hardtanh"
        | "leaky_relu"
        | "elu"
        | "softmax"
        | "_softmax"
        | "log_softmax"
        | "batch_norm"
        | "instance_norm"
        | "layer_norm"
        | "group_norm"
        | "_native_batch_norm_legit_no_training"
        | "native_layer_norm"
        | "native_group_norm"
        | "native_batch_norm"
        | "relu6"
        | "mish"
        | "erf"
        | "reciprocal"
        | "square"
        | "copy"
        | "fill"
        | "zero"
        | "cos"
        | "sin"
        | "lift_fresh_copy" => {
            let t = a
                .tensor("input", 0)
                .or_else(|| a.tensor("self", 0))?
                .clone();
            out.tensors = node
                .outputs
                .iter()
                .enumerate()
                .map(|(i, _)| (i == 0).then(|| t.clone()))
                .collect();
        }
        // Elementwise binary with broadcasting.
        "mul" | "div" | "maximum" | "minimum" | "pow" | "eq" | "ne" | "lt" | "le" | "gt" | "ge"
        | "bitwise_and" | "logical_and" | "where" | "add" | "sub" | "rsub" | "remainder" => {
            let mut shape: Option<Vec<Expr>> = None;
            for arg in &node.inputs {
                if let Some(t) = tensor_name(&arg.arg).and_then(|n| env.tensors.get(n)) {
                    shape = Some(match shape {
                        None => t.clone(),
                        Some(s) => broadcast(&s, t, &mut out.guards),
                    });
                }
            }
            out.tensors = one_tensor(shape?);
        }
        "conv2d" | "conv1d" | "conv3d" | "convolution" | "_convolution" => {
            let x = a.tensor("input", 0)?;
            let w = a.tensor("weight", 1)?;
            let n = x.len().checked_sub(2)?;
            let stride = list_or(a.ints("stride", 3), n, 1);
            let dil = list_or(a.ints("dilation", 5), n, 1);
            let transposed = op.contains("convolution") && a.bool("transposed", 6).unwrap_or(false);
            if transposed {
                return None;
            }
            let pad = match a.get("padding", 4) {
                Some(v) if v.get("as_string").is_some() => {
                    if v["as_string"] == "same" {
                        let mut s = x.clone();
                        s[1] = w[0].clone();
                        out.tensors = one_tensor(s);
                        return Some(out);
                    }
                    vec![0; n]
                }
                _ => list_or(a.ints("padding", 4), n, 0),
            };
            let mut s = vec![x[0].clone(), w[0].clone()];
            for i in 0..n {
                let k = match &w[2 + i] {
                    Expr::Const(c) if c.is_integer() => *c.numer(),
                    _ => return None,
                };
                s.push(window(&x[2 + i], k, stride[i], pad[i], dil[i], false));
            }
            out.tensors = one_tensor(s);
        }
        "max_pool2d" | "avg_pool2d" | "max_pool2d_with_indices" | "max_pool1d" | "avg_pool1d" => {
            let x = a.tensor("self", 0).or_else(|| a.tensor("input", 0))?;
            let n = if op.ends_with("1d") { 1 } else { 2 };
            let k = list_or(a.ints("kernel_size", 1), n, 1);
            let st = a.ints("stride", 2).filter(|v| !v.is_empty());
            let stride = if st.is_none() {
                k.clone()
            } else {
                list_or(st, n, 1)
            };
            let pad = list_or(a.ints("padding", 3), n, 0);
            let dil = if op.starts_with("max") {
                list_or(a.ints("dilation", 4), n, 1)
            } else {
                vec![1; n]
            };
            let ceil_pos = if op.starts_with("max") { 5 } else { 4 };
            let ceil = a.bool("ceil_mode", ceil_pos).unwrap_or(false);
            let r = x.len();
            let mut s = x[..r - n].to_vec();
            for i in 0..n {
                s.push(window(&x[r - n + i], k[i], stride[i], pad[i], dil[i], ceil));
            }
            out.tensors = node.outputs.iter().map(|_| Some(s.clone())).collect();
        }
        "adaptive_avg_pool2d"
        | "adaptive_max_pool2d"
        | "_adaptive_avg_pool2d"
        | "adaptive_avg_pool1d" => {
            let x = a.tensor("self", 0).or_else(|| a.tensor("input", 0))?;
            let o = a.ints("output_size", 1)?;
            let mut s = x[..x.len() - o.len()].to_vec();
            s.extend(o);
            out.tensors = node.outputs.iter().map(|_| Some(s.clone())).collect();
        }
        "linear" => {
            let x = a.tensor("input", 0)?;
            let w = a.tensor("weight", 1)?;
            let mut s = x[..x.len() - 1].to_vec();
            s.push(w[0].clone());
            out.tensors = one_tensor(s);
        }
        "mm" | "matmul" | "bmm" | "addmm" => {
            let (x, y) = if op == "addmm" {
                (a.tensor("mat1", 1)?, a.tensor("mat2", 2)?)
            } else {
                (
                    a.tensor("self", 0)?,
                    a.tensor("mat2", 1).or_else(|| a.tensor("other", 1))?,
                )
            };
            if x.len() < 2 || y.len() < 2 {
                return None;
            }
            let batch = broadcast(&x[..x.len() - 2], &y[..y.len() - 2], &mut out.guards);
            let mut s = batch;
            s.push(x[x.len() - 2].clone());
            s.push(y[y.len() - 1].clone());
            out.tensors = one_tensor(s);
        }
        "sum" | "mean" | "amax" | "amin" => {
            let x = a.tensor("self", 0)?;
            let dims = a.ints("dim", 1).unwrap_or_default();
            let keep = a.bool("keepdim", 2).unwrap_or(false);
            let dims: Vec<usize> = if dims.is_empty() {
                (0..x.len()).collect()
            } else {
                dims.iter()
                    .map(|d| match d {
                        Expr::Const(c) => norm_dim(*c.numer(), x.len()),
                        _ => None,
                    })
                    .collect::<Option<_>>()?
            };
            let s: Vec<Expr> = x
                .iter()
                .enumerate()
                .filter_map(|(i, e)| {
                    if dims.contains(&i) {
                        keep.then(|| int(1))
                    } else {
                        Some(e.clone())
                    }
                })
                .collect();
            out.tensors = one_tensor(s);
        }
        "flatten" => {
            let x = a.tensor("input", 0).or_else(|| a.tensor("self", 0))?;
            if x.is_empty() {
                out.tensors = one_tensor(vec![int(1)]);
                return Some(out);
            }
            let st = norm_dim(a.const_int("start_dim", 1).unwrap_or(0), x.len())?;
            let en = norm_dim(a.const_int("end_dim", 2).unwrap_or(-1), x.len())?;
            let mut s = x[..st].to_vec();
            s.push(x[st..=en].iter().cloned().reduce(Expr::mul)?);
            s.extend(x[en + 1..].iter().cloned());
            out.tensors = one_tensor(s);
        }
        "view" | "reshape" | "_unsafe_view" | "expand" => {
            let x = a.tensor("self", 0)?;
            let target = a.ints("size", 1).or_else(|| a.ints("shape", 1))?;
            let numel = x.iter().cloned().reduce(Expr::mul).unwrap_or(int(1));
            let known = target
                .iter()
                .filter(|e| **e != int(-1))
                .cloned()
                .reduce(Expr::mul)
                .unwrap_or(int(1));
            let s: Vec<Expr> = target
                .iter()
                .enumerate()
                .map(|(i, e)| {
                    if *e == int(-1) {
                        if op == "expand" {
                            x[i + x.len() - target.len()].clone()
                        } else {
                            Expr::FloorDiv(b(numel.clone()), b(known.clone()))
                        }
                    } else {
                        e.clone()
                    }
                })
                .collect();
            out.tensors = one_tensor(s);
        }
        "permute" => {
            let x = a.tensor("self", 0)?;
            let dims = a.ints("dims", 1)?;
            let s = dims
                .iter()
                .map(|d| match d {
                    Expr::Const(c) => norm_dim(*c.numer(), x.len()).map(|i| x[i].clone()),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            out.tensors = one_tensor(s);
        }
        "transpose" => {
            let x = a.tensor("self", 0)?;
            let d0 = norm_dim(a.const_int("dim0", 1)?, x.len())?;
            let d1 = norm_dim(a.const_int("dim1", 2)?, x.len())?;
            let mut s = x.clone();
            s.swap(d0, d1);
            out.tensors = one_tensor(s);
        }
        "t" => {
            let x = a.tensor("self", 0)?;
            out.tensors = one_tensor(x.iter().rev().cloned().collect());
        }
        "unsqueeze" => {
            let x = a.tensor("self", 0)?;
            let d = norm_dim(a.const_int("dim", 1)?, x.len() + 1)?;
            let mut s = x.clone();
            s.insert(d, int(1));
            out.tensors = one_tensor(s);
        }
        "squeeze" => {
            let x = a.tensor("self", 0)?;
            let dims = a.ints("dim", 1);
            let s = match dims {
                Some(d) => {
                    let ds: Vec<usize> = d
                        .iter()
                        .filter_map(|e| match e {
                            Expr::Const(c) => norm_dim(*c.numer(), x.len()),
                            _ => None,
                        })
                        .collect();
                    x.iter()
                        .enumerate()
                        .filter(|(i, e)| !(ds.contains(i) && **e == int(1)))
                        .map(|(_, e)| e.clone())
                        .collect()
                }
                None => x.iter().filter(|e| **e != int(1)).cloned().collect(),
            };
            out.tensors = one_tensor(s);
        }
        "slice" => {
            let x = a.tensor("self", 0)?;
            let d = norm_dim(a.const_int("dim", 1).unwrap_or(0), x.len())?;
            let size = x[d].clone();
            let step = a.const_int("step", 4).unwrap_or(1);
            let clamp = |e: Option<Expr>, default: Expr| -> Expr {
                match e {
                    None => default,
                    Some(e) => {
                        // Negative indices count from the end; then clamp to [0, size].
                        let wrapped = Expr::Ite(
                            b(Expr::Cmp(CmpOp::Lt, b(e.clone()), b(int(0)))),
                            b(Expr::add(e.clone(), size.clone())),
                            b(e),
                        );
                        Expr::Min(vec![Expr::Max(vec![wrapped, int(0)]), size.clone()])
                    }
                }
            };
            let start = clamp(a.int("start", 2), int(0));
            let end = clamp(a.int("end", 3), size.clone());
            let len = Expr::Max(vec![Expr::add(end, Expr::mul(int(-1), start)), int(0)]);
            let mut s = x.clone();
            s[d] = Expr::Round(RoundKind::Ceil, b(Expr::TrueDiv(b(len), b(int(step)))));
            out.tensors = one_tensor(s);
        }
        "cat" | "concat" => {
            let names = a.get("tensors", 0)?.get("as_tensors")?.as_array()?;
            let shapes: Vec<&Vec<Expr>> = names
                .iter()
                .filter_map(|n| n.get("name")?.as_str())
                .filter_map(|n| env.tensors.get(n))
                .collect();
            let first = shapes.iter().find(|s| !s.is_empty())?;
            let d = norm_dim(a.const_int("dim", 1).unwrap_or(0), first.len())?;
            let mut s = (*first).clone();
            s[d] = shapes
                .iter()
                .filter(|x| !x.is_empty())
                .map(|x| x[d].clone())
                .reduce(Expr::add)?;
            for other in shapes.iter().skip(1).filter(|x| !x.is_empty()) {
                for (i, (p, q)) in first.iter().zip(other.iter()).enumerate() {
                    if i != d && p != q {
                        out.guards
                            .push(Expr::Cmp(CmpOp::Eq, b(p.clone()), b(q.clone())));
                    }
                }
            }
            out.tensors = one_tensor(s);
        }
        "stack" => {
            let names = a.get("tensors", 0)?.get("as_tensors")?.as_array()?;
            let first = env.tensors.get(names.first()?.get("name")?.as_str()?)?;
            let d = norm_dim(a.const_int("dim", 1).unwrap_or(0), first.len() + 1)?;
            let mut s = first.clone();
            s.insert(d, int(names.len() as i128));
            out.tensors = one_tensor(s);
        }
        "pixel_shuffle" | "pixel_unshuffle" => {
            let x = a.tensor("self", 0)?;
            let r = a
                .const_int("upscale_factor", 1)
                .or_else(|| a.const_int("downscale_factor", 1))?;
            let n = x.len();
            let mut s = x.clone();
            if op == "pixel_shuffle" {
                s[n - 3] = Expr::floordiv(x[n - 3].clone(), r * r);
                s[n - 2] = Expr::mul(int(r), x[n - 2].clone());
                s[n - 1] = Expr::mul(int(r), x[n - 1].clone());
            } else {
                s[n - 3] = Expr::mul(int(r * r), x[n - 3].clone());
                s[n - 2] = Expr::floordiv(x[n - 2].clone(), r);
                s[n - 1] = Expr::floordiv(x[n - 1].clone(), r);
            }
            out.tensors = one_tensor(s);
        }
        "upsample_nearest2d"
        | "upsample_bilinear2d"
        | "upsample_nearest1d"
        | "upsample_bicubic2d"
        | "_upsample_nearest_exact2d" => {
            let x = a.tensor("input", 0).or_else(|| a.tensor("self", 0))?;
            let n = if op.ends_with("1d") { 1 } else { 2 };
            let r = x.len();
            let mut s = x[..r - n].to_vec();
            if let Some(o) = a.ints("output_size", 1).filter(|o| o.len() == n) {
                s.extend(o);
            } else {
                let sc = node
                    .inputs
                    .iter()
                    .find(|i| i.name == "scale_factors")?
                    .arg
                    .get("as_floats")?
                    .as_array()?
                    .clone();
                for i in 0..n {
                    let f = a.float(sc.get(i).or(sc.first())?)?;
                    s.push(Expr::Round(
                        RoundKind::Floor,
                        b(Expr::Mul(vec![x[r - n + i].clone(), Expr::Const(f)])),
                    ));
                }
            }
            out.tensors = one_tensor(s);
        }
        "grid_sampler" | "grid_sampler_2d" => {
            let x = a.tensor("input", 0)?;
            let g = a.tensor("grid", 1)?;
            out.tensors = one_tensor(vec![x[0].clone(), x[1].clone(), g[1].clone(), g[2].clone()]);
        }
        "_assert_tensor_metadata" | "_assert_scalar" | "sym_constrain_range_for_size" => {}
        "chunk" | "split" | "split_with_sizes" => {
            let x = a.tensor("self", 0)?;
            let d = norm_dim(a.const_int("dim", 2).unwrap_or(0), x.len())?;
            let n = x[d].clone();
            let count = node.outputs.first()?.get("as_tensors")?.as_array()?.len();
            let parts: Vec<Expr> = match op {
                "split_with_sizes" => a.ints("split_sizes", 1)?,
                _ => {
                    let size = if op == "chunk" {
                        let chunks = a.const_int("chunks", 1)?;
                        Expr::Round(
                            RoundKind::Ceil,
                            b(Expr::TrueDiv(b(n.clone()), b(int(chunks)))),
                        )
                    } else {
                        a.int("split_size", 1)?
                    };
                    // Equal parts, the last one holding the rest.
                    let mut v = vec![size.clone(); count.saturating_sub(1)];
                    v.push(Expr::add(
                        n.clone(),
                        Expr::mul(int(-(count as i128 - 1)), size),
                    ));
                    v
                }
            };
            out.listed = parts
                .into_iter()
                .map(|p| {
                    let mut s = x.clone();
                    s[d] = p;
                    s
                })
                .collect();
        }
        "meshgrid" => {
            let names = a.get("tensors", 0)?.get("as_tensors")?.as_array()?;
            let lens: Vec<Expr> = names
                .iter()
                .map(|n| {
                    env.tensors
                        .get(n.get("name")?.as_str()?)
                        .and_then(|s| s.first().cloned())
                })
                .collect::<Option<_>>()?;
            let mut shape = lens.clone();
            let xy = node.inputs.iter().any(|i| {
                i.name == "indexing" && i.arg.get("as_string").and_then(Value::as_str) == Some("xy")
            });
            if xy && shape.len() >= 2 {
                shape.swap(0, 1);
            }
            out.listed = vec![shape; lens.len()];
        }
        "repeat" => {
            let x = a.tensor("self", 0)?;
            let reps = a.ints("repeats", 1)?;
            let pad = reps.len().checked_sub(x.len())?;
            let s = reps
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    if i < pad {
                        r.clone()
                    } else {
                        Expr::mul(x[i - pad].clone(), r.clone())
                    }
                })
                .collect();
            out.tensors = one_tensor(s);
        }
        "linspace" | "logspace" => {
            out.tensors = one_tensor(vec![a.int("steps", 2)?]);
        }
        "arange" => {
            let (start, end) = match (a.int("start", 0), a.int("end", 1)) {
                (Some(s), Some(e)) if node.inputs.iter().any(|i| i.name == "start") => (s, e),
                _ => (int(0), a.int("end", 0)?),
            };
            let step = a.const_int("step", 2).unwrap_or(1);
            let len = Expr::add(end, Expr::mul(int(-1), start));
            out.tensors = one_tensor(vec![Expr::Round(
                RoundKind::Ceil,
                b(Expr::TrueDiv(b(len), b(int(step)))),
            )]);
        }
        _ => return None,
    }
    Some(out)
}

fn symint_output(node: &crate::program::Node) -> Option<String> {
    let o = node.outputs.first()?;
    o.get("as_sym_int")
        .and_then(|s| s.get("as_name"))
        .and_then(Value::as_str)
        .map(String::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_matches_pytorch_formula() {
        let x = Expr::sym("h");
        let e = window(&x, 3, 2, 1, 1, false);
        for h in 2..100 {
            let v = e.eval(&|_| Some(h)).unwrap();
            assert_eq!(
                v,
                dimguard_solver::expr::Value::Num(num::q((h + 2 - 3) / 2 + 1))
            );
        }
        // ceil_mode: ResNet-style max pool 3/2/1 with ceil.
        let e = window(&x, 3, 2, 0, 1, true);
        for h in 3..50i128 {
            let mut out = (h - 3 + 1).div_euclid(2) + 1;
            if (out - 1) * 2 >= h {
                out -= 1;
            }
            assert_eq!(
                e.eval(&|_| Some(h)).unwrap(),
                dimguard_solver::expr::Value::Num(num::q(out)),
                "h={h}"
            );
        }
    }

    #[test]
    fn a_zero_stride_is_an_error_not_a_size() {
        // Constant input: folding used to turn the division by zero into the size 1.
        let e = window(&Expr::int(32), 3, 0, 1, 1, false);
        assert!(e.eval(&|_| None).is_err(), "{e}");
        let e = window(&Expr::int(32), 3, 2, 1, 1, false);
        assert_eq!(
            e.eval(&|_| None).unwrap(),
            dimguard_solver::expr::Value::Num(num::q(16))
        );
    }

    fn node(
        target: &str,
        inputs: serde_json::Value,
        outputs: serde_json::Value,
    ) -> crate::program::Node {
        serde_json::from_value(
            serde_json::json!({"target": target, "inputs": inputs, "outputs": outputs}),
        )
        .unwrap()
    }

    fn run(
        n: &crate::program::Node,
        tensors: &[(&str, Vec<Expr>)],
        symints: &[(&str, Expr)],
    ) -> Inferred {
        let t: BTreeMap<String, Vec<Expr>> = tensors
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let s: BTreeMap<String, Expr> = symints
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        infer(
            n,
            &Env {
                tensors: &t,
                symints: &s,
            },
        )
        .expect("a shape function")
    }

    fn at(e: &Expr, h: i128) -> i128 {
        match e.eval(&|_| Some(h)).unwrap() {
            dimguard_solver::expr::Value::Num(q) => *q.numer(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn operators_outside_the_fixtures() {
        let h = Expr::sym("h");
        let x = vec![int(2), int(3), h.clone(), int(8)];
        let t = |n: &str| serde_json::json!({"as_tensor": {"name": n}});
        // stack, permute, transpose
        let n = node(
            "torch.ops.aten.stack.default",
            serde_json::json!([{"name": "tensors", "arg": {"as_tensors": [{"name": "x"}, {"name": "x"}]}}, {"name": "dim", "arg": {"as_int": 1}}]),
            serde_json::json!([t("o")]),
        );
        assert_eq!(
            run(&n, &[("x", x.clone())], &[]).tensors[0]
                .as_ref()
                .unwrap()[1],
            int(2)
        );
        let n = node(
            "torch.ops.aten.permute.default",
            serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "dims", "arg": {"as_ints": [0, 2, 3, 1]}}]),
            serde_json::json!([t("o")]),
        );
        assert_eq!(
            run(&n, &[("x", x.clone())], &[]).tensors[0]
                .as_ref()
                .unwrap(),
            &vec![int(2), h.clone(), int(8), int(3)]
        );
        let n = node(
            "torch.ops.aten.transpose.int",
            serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "dim0", "arg": {"as_int": -1}}, {"name": "dim1", "arg": {"as_int": 2}}]),
            serde_json::json!([t("o")]),
        );
        assert_eq!(
            run(&n, &[("x", x.clone())], &[]).tensors[0]
                .as_ref()
                .unwrap()[2],
            int(8)
        );
        // grid_sampler: output spatial size from the grid
        let n = node(
            "torch.ops.aten.grid_sampler.default",
            serde_json::json!([{"name": "input", "arg": t("x")}, {"name": "grid", "arg": t("g")}]),
            serde_json::json!([t("o")]),
        );
        let g = vec![int(2), h.clone(), int(5), int(2)];
        assert_eq!(
            run(&n, &[("x", x.clone()), ("g", g)], &[]).tensors[0]
                .as_ref()
                .unwrap(),
            &vec![int(2), int(3), h.clone(), int(5)]
        );
        // arange(h) and arange(1, h, 3)
        let n = node(
            "torch.ops.aten.arange.start_step",
            serde_json::json!([{"name": "start", "arg": {"as_int": 1}}, {"name": "end", "arg": {"as_sym_int": {"as_name": "s"}}}, {"name": "step", "arg": {"as_int": 3}}]),
            serde_json::json!([t("o")]),
        );
        let len = run(&n, &[], &[("s", h.clone())]).tensors[0]
            .as_ref()
            .unwrap()[0]
            .clone();
        for v in 1..40 {
            assert_eq!(
                at(&len, v),
                (1..v).step_by(3).count() as i128,
                "arange(1, {v}, 3)"
            );
        }
        // sym_size and _operator arithmetic
        let n = node(
            "torch.ops.aten.sym_size.int",
            serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "dim", "arg": {"as_int": 2}}]),
            serde_json::json!([{"as_sym_int": {"as_name": "s2"}}]),
        );
        assert_eq!(
            run(&n, &[("x", x.clone())], &[]).symints,
            vec![("s2".to_string(), h.clone())]
        );
        let n = node(
            "_operator.floordiv",
            serde_json::json!([{"name": "a", "arg": {"as_sym_int": {"as_name": "s2"}}}, {"name": "b", "arg": {"as_int": 4}}]),
            serde_json::json!([{"as_sym_int": {"as_name": "q"}}]),
        );
        let q = run(&n, &[], &[("s2", h.clone())]).symints[0].1.clone();
        assert_eq!(at(&q, 23), 5);
        // slice with a negative start, chunk into 3
        let n = node(
            "torch.ops.aten.slice.Tensor",
            serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "dim", "arg": {"as_int": 2}}, {"name": "start", "arg": {"as_int": -5}}, {"name": "end", "arg": {"as_int": 9223372036854775807i64}}]),
            serde_json::json!([t("o")]),
        );
        let len = run(&n, &[("x", x.clone())], &[]).tensors[0]
            .as_ref()
            .unwrap()[2]
            .clone();
        for v in 0..20 {
            assert_eq!(at(&len, v), v.min(5), "x[-5:] of {v}");
        }
        let n = node(
            "torch.ops.aten.chunk.default",
            serde_json::json!([{"name": "self", "arg": t("x")}, {"name": "chunks", "arg": {"as_int": 3}}, {"name": "dim", "arg": {"as_int": 2}}]),
            serde_json::json!([{"as_tensors": [{"name": "a"}, {"name": "b"}, {"name": "c"}]}]),
        );
        let parts = run(&n, &[("x", x)], &[]).listed;
        assert_eq!(at(&parts[0][2], 10), 4);
        assert_eq!(at(&parts[2][2], 10), 2);
    }

    #[test]
    fn broadcasting() {
        let mut g = vec![];
        let s = broadcast(
            &[Expr::sym("a"), int(1), int(10)],
            &[Expr::sym("b"), int(10)],
            &mut g,
        );
        assert_eq!(s, vec![Expr::sym("a"), Expr::sym("b"), int(10)]);
        assert!(g.is_empty());
        let s = broadcast(&[Expr::sym("a")], &[Expr::sym("b")], &mut g);
        assert_eq!(s, vec![Expr::sym("a")]);
        assert_eq!(g.len(), 1);
    }
}
