//! Reading an operator's arguments: every read is checked. A missing argument or an unknown size
//! is `None` (the operator is left unchecked); an argument that cannot be right for the operator
//! (a weight of too low a rank, too few strides) is recorded as malformed and reported as a
//! [`ShapeError`](super::ShapeError) naming the node. What every rule reads ([`Env`], [`Args`])
//! and returns ([`Inferred`]) lives here, with the helpers rules share, so the operator modules
//! import this leaf and never the dispatcher above them.

use crate::program::{sym_int_name, tensor_name, Node};
use dimguard_solver::{f64_exact, q, Q};
use dimguard_solver::{CmpOp, Expr};
use serde_json::Value;
use std::cell::RefCell;
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
    pub(crate) fn one(shape: Vec<Expr>) -> Inferred {
        Inferred {
            tensors: vec![Some(shape)],
            ..Inferred::default()
        }
    }
}

/// A shape rule: the outputs from the arguments (`None`: unchecked, or malformed when the
/// arguments recorded why).
pub(crate) type Rule = fn(&Args) -> Option<Inferred>;

/// Python-style index normalization.
pub(crate) fn norm_dim(d: i128, rank: usize) -> Option<usize> {
    let r = rank as i128;
    let d = if d < 0 { d + r } else { d };
    (0..r).contains(&d).then_some(d as usize)
}

/// Broadcast two shapes; returns the shape and the equalities it needs.
pub(crate) fn broadcast(a: &[Expr], c: &[Expr], guards: &mut Vec<Expr>) -> Vec<Expr> {
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

/// One node's arguments, with the sizes known so far.
pub(crate) struct Args<'a> {
    /// The node.
    pub node: &'a Node,
    /// Known sizes.
    pub env: &'a Env<'a>,
    /// The operator's short name (`conv2d`, `add`), trailing `_` removed.
    pub op: &'a str,
    malformed: RefCell<Option<String>>,
}

impl<'a> Args<'a> {
    pub(crate) fn new(node: &'a Node, env: &'a Env<'a>, op: &'a str) -> Args<'a> {
        Args {
            node,
            env,
            op,
            malformed: RefCell::new(None),
        }
    }

    /// Why the arguments cannot be right, when a read found out.
    pub(crate) fn into_malformed(self) -> Option<String> {
        self.malformed.into_inner()
    }

    /// Records why the arguments cannot be right (the first reason is kept); `None`.
    pub(crate) fn malformed<T>(&self, why: String) -> Option<T> {
        self.malformed.borrow_mut().get_or_insert(why);
        None
    }

    /// The argument `name`, else the one at position `pos`; `None` when absent or `None`.
    pub(crate) fn get(&self, name: &str, pos: usize) -> Option<&'a Value> {
        self.node.arg(name, pos)
    }

    /// The sizes of the tensor argument `name` / `pos`.
    pub(crate) fn tensor(&self, name: &str, pos: usize) -> Option<&'a [Expr]> {
        self.env
            .tensors
            .get(tensor_name(self.get(name, pos)?)?)
            .map(Vec::as_slice)
    }

    /// The sizes of the operator's main tensor (`self`, else `input`, else the first argument),
    /// which must have at least `rank` dimensions.
    pub(crate) fn input(&self, rank: usize) -> Option<&'a [Expr]> {
        let t = self.tensor("self", 0).or_else(|| self.tensor("input", 0))?;
        self.rank(t, rank, "self")
    }

    /// The sizes of a tensor argument that must have at least `rank` dimensions.
    pub(crate) fn tensor_of_rank(&self, name: &str, pos: usize, rank: usize) -> Option<&'a [Expr]> {
        let t = self.tensor(name, pos)?;
        self.rank(t, rank, name)
    }

    /// `shape` when it has at least `rank` dimensions; else malformed (`what` names it).
    pub(crate) fn rank<'s>(
        &self,
        shape: &'s [Expr],
        rank: usize,
        what: &str,
    ) -> Option<&'s [Expr]> {
        if shape.len() >= rank {
            Some(shape)
        } else {
            self.malformed(format!(
                "`{what}` has {} dimension(s), but {} needs at least {rank}",
                shape.len(),
                self.op
            ))
        }
    }

    /// Dimension `i` of `shape` (`what` names it); malformed when the rank is too low.
    pub(crate) fn dim(&self, shape: &[Expr], i: usize, what: &str) -> Option<Expr> {
        Some(self.rank(shape, i + 1, what)?[i].clone())
    }

    /// A list of integers (`as_ints`, `as_sym_ints`, or one integer).
    pub(crate) fn ints(&self, name: &str, pos: usize) -> Option<Vec<Expr>> {
        let v = self.get(name, pos)?;
        if let Some(a) = v.get("as_ints").and_then(Value::as_array) {
            return a
                .iter()
                .map(|x| x.as_i64().map(|n| Expr::int(n as i128)))
                .collect();
        }
        if let Some(a) = v.get("as_sym_ints").and_then(Value::as_array) {
            return a.iter().map(|x| self.symint_value(x)).collect();
        }
        self.int(name, pos).map(|e| vec![e])
    }

    /// `n` constant integers from the list argument `name` / `pos`: absent means `default`
    /// everywhere, one value is repeated; fewer than `n` values is malformed.
    pub(crate) fn int_list(
        &self,
        name: &str,
        pos: usize,
        n: usize,
        default: i128,
    ) -> Option<Vec<i128>> {
        let v: Vec<i128> = self
            .ints(name, pos)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|e| match e {
                Expr::Const(c) if c.is_integer() => Some(*c.numer()),
                _ => None,
            })
            .collect();
        match v.len() {
            0 => Some(vec![default; n]),
            1 => Some(vec![v[0]; n]),
            k if k < n => self.malformed(format!(
                "`{name}` has {k} values, but {} needs {n}",
                self.op
            )),
            _ => Some(v),
        }
    }

    /// A SymInt argument's value (`as_int` or `as_name`).
    pub(crate) fn symint_value(&self, x: &Value) -> Option<Expr> {
        if let Some(n) = x.get("as_int").and_then(Value::as_i64) {
            return Some(Expr::int(n as i128));
        }
        let name = x.get("as_name").and_then(Value::as_str)?;
        self.env.symints.get(name).cloned()
    }

    /// An integer argument (constant or symbolic).
    pub(crate) fn int(&self, name: &str, pos: usize) -> Option<Expr> {
        let v = self.get(name, pos)?;
        if let Some(n) = v.get("as_int").and_then(Value::as_i64) {
            return Some(Expr::int(n as i128));
        }
        if let Some(n) = sym_int_name(v) {
            return self.env.symints.get(n).cloned();
        }
        v.get("as_sym_int").and_then(|s| self.symint_value(s))
    }

    /// A constant integer argument.
    pub(crate) fn const_int(&self, name: &str, pos: usize) -> Option<i128> {
        match self.int(name, pos)? {
            Expr::Const(c) if c.is_integer() => Some(*c.numer()),
            _ => None,
        }
    }

    /// A number in a list of floats, exactly.
    pub(crate) fn float(&self, v: &Value) -> Option<Q> {
        v.as_f64()
            .and_then(f64_exact)
            .or_else(|| v.as_i64().map(|n| q(n as i128)))
    }

    /// A boolean argument.
    pub(crate) fn bool(&self, name: &str, pos: usize) -> Option<bool> {
        self.get(name, pos)?.get("as_bool")?.as_bool()
    }

    /// The sizes of every tensor in the list argument `name` / `pos` (those known).
    pub(crate) fn tensor_list(&self, name: &str, pos: usize) -> Option<Vec<&'a [Expr]>> {
        let names = self.get(name, pos)?.get("as_tensors")?.as_array()?;
        Some(
            names
                .iter()
                .filter_map(|n| n.get("name")?.as_str())
                .filter_map(|n| self.env.tensors.get(n).map(Vec::as_slice))
                .collect(),
        )
    }

    /// A normalized dimension index (Python style: negative counts from the end) into a shape
    /// of `rank` dimensions; out of range is malformed.
    pub(crate) fn index(&self, d: i128, rank: usize, what: &str) -> Option<usize> {
        match norm_dim(d, rank) {
            Some(i) => Some(i),
            None => self.malformed(format!(
                "`{what}` is {d}, out of range for a tensor of {rank} dimension(s)"
            )),
        }
    }
}
