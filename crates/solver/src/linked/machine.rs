//! Evaluation of the group's guards, compiled to one graph ([`crate::compiled::Graph`]), with
//! per-level memoization: a node is computed once per value of the deepest size it depends on
//! (`1 + (h-1)//4` once per `h`, not once per `(h, w, batch)`).

use crate::compiled::{Fail, Graph, Op};

/// One value the last level reads from the earlier ones ([`Machine::frontier`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Read {
    /// A node's value.
    Node(u32),
    /// The sum (product, ...) of several nodes' values, all operands of one node of the last
    /// level.
    Fold(Fold, Vec<u32>),
}

/// How a [`Read::Fold`] combines its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Fold {
    Sum,
    Product,
    Min,
    Max,
}

/// Evaluates graph nodes with per-level memoization.
pub(super) struct Machine<'g> {
    g: &'g Graph,
    /// Level of each node under the chosen order.
    level: Vec<usize>,
    val: Vec<i128>,
    stamp: Vec<u64>,
    gen: Vec<u64>,
    counter: u64,
    /// Value of each size, by index in the group.
    pub(super) vars: Vec<i128>,
}

impl<'g> Machine<'g> {
    pub(super) fn new(g: &'g Graph, pos: &[usize]) -> Machine<'g> {
        let levels = pos.len();
        let level = g
            .mask
            .iter()
            .map(|&m| {
                (0..levels)
                    .filter(|&i| m & (1 << i) != 0)
                    .map(|i| pos[i])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        Machine {
            g,
            level,
            val: vec![0; g.ops.len()],
            stamp: vec![0; g.ops.len()],
            gen: vec![0; levels.max(1)],
            counter: 0,
            vars: vec![0; levels],
        }
    }

    /// What the nodes of level `level` under `roots` read from earlier levels: with these
    /// values fixed, whatever is computed at `level` is too. A sum, product, minimum or maximum
    /// reads its earlier operands only through their sum (product, ...): one value, so that
    /// `b * h * w` over (b, h, w) reads `b * h`, not b and h.
    pub(super) fn frontier(&self, roots: &[u32], level: usize) -> Vec<Read> {
        let mut out = Vec::new();
        let mut seen = vec![false; self.g.ops.len()];
        let mut todo: Vec<u32> = roots.to_vec();
        let earlier = |n: u32| self.level[n as usize] < level && self.g.mask[n as usize] != 0;
        while let Some(n) = todo.pop() {
            let i = n as usize;
            if std::mem::replace(&mut seen[i], true) || self.g.mask[i] == 0 {
                continue;
            }
            if earlier(n) {
                out.push(Read::Node(n));
                continue;
            }
            let op = &self.g.ops[i];
            let operands = op.operands();
            let fold = match op {
                Op::Add(_) => Some(Fold::Sum),
                Op::Mul(_) => Some(Fold::Product),
                Op::Min(_) => Some(Fold::Min),
                Op::Max(_) => Some(Fold::Max),
                _ => None,
            };
            match fold {
                Some(f) if operands.iter().filter(|&&c| earlier(c)).count() > 1 => {
                    let (outer, inner): (Vec<u32>, Vec<u32>) =
                        operands.into_iter().partition(|&c| earlier(c));
                    out.push(Read::Fold(f, outer));
                    todo.extend(inner);
                }
                _ => todo.extend(operands),
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The value of one [`Read`] now; `None` when a node raises or a value leaves `i128`.
    pub(super) fn read(&mut self, r: &Read) -> Option<i128> {
        match r {
            Read::Node(n) => self.eval(*n).ok(),
            Read::Fold(f, ns) => {
                let mut acc: Option<i128> = None;
                for &n in ns {
                    let x = self.eval(n).ok()?;
                    acc = Some(match (acc, f) {
                        (None, _) => x,
                        (Some(a), Fold::Sum) => a.checked_add(x)?,
                        (Some(a), Fold::Product) => a.checked_mul(x)?,
                        (Some(a), Fold::Min) => a.min(x),
                        (Some(a), Fold::Max) => a.max(x),
                    });
                }
                acc
            }
        }
    }

    /// Sets size `var` (index in the group), at level `level`, to `v`.
    pub(super) fn set(&mut self, var: usize, level: usize, v: i128) {
        self.vars[var] = v;
        self.counter += 1;
        self.gen[level] = self.counter;
    }

    /// The value of node `n` for the sizes set now, computed once per value of the deepest
    /// size it depends on.
    pub(super) fn eval(&mut self, n: u32) -> Result<i128, Fail> {
        let i = n as usize;
        let g = self.g;
        match &g.ops[i] {
            Op::Const(c) => return Ok(*c),
            Op::Var(v) => return Ok(self.vars[*v]),
            _ => {}
        }
        if self.stamp[i] == self.gen[self.level[i]] && self.stamp[i] != 0 {
            return Ok(self.val[i]);
        }
        let v = g.ops[i].eval(|c| self.eval(c))?;
        self.val[i] = v;
        self.stamp[i] = self.gen[self.level[i]];
        Ok(v)
    }
}
