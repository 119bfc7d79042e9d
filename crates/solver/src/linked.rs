//! Joint accepted sets of linked sizes.
//!
//! When guards link several sizes (`((1 + (h-1)//4) * (1 + (w-1)//4)) == 3136`), no size has an
//! accepted set of its own: what passes is a set of *tuples*. This module computes that set
//! exactly, as a [`JointSet`], and the largest box inside it ([`largest_box`]): one progression
//! per size — what a `dynamic_shapes` spec can express — such that every tuple of the box passes
//! every guard.
//!
//! # Representation
//!
//! A [`Tree`] over the sizes in a chosen order: at each level, the values of that level's size
//! are grouped by the sub-tree they lead to (values with identical continuations share one
//! [`DimSet`]); the last level is a [`DimSet`] of the last size. Every path is a box whose sides
//! are the periodic sets the one-size engine produces, so the joint set is a union of disjoint
//! boxes ([`Tree::boxes`]), with an exact [`Tree::count`], projections ([`Tree::projection`])
//! and membership ([`Tree::contains`]).
//!
//! # Search
//!
//! * **Plan**: every guard is evaluated at a few pseudo-random points of the box to estimate how
//!   much it rejects; the order of the sizes is the one with the least estimated work (sizes
//!   whose guards reject most, together, first; the widest size last), and the guards that
//!   become decidable at a level are tried most-rejecting first.
//! * **Shared sub-expressions**: all guards are compiled into one hash-consed graph over `i128`;
//!   a node is computed once per value of the deepest size it depends on (`1 + (h-1)//4` once
//!   per `h`, not once per `(h, w, batch)`).
//! * **Early rejection**: a partial tuple is dropped at the first level where a guard over its
//!   sizes fails.
//! * **Last level**: a narrow domain is enumerated; a wide one is solved by the periodic engine
//!   (`engine.rs`) per combination of the others, so its width costs nothing.
//! * **Budget** ([`Budget`]): a deadline and a cap on stored pieces. Past either, the search stops
//!   and the region it did not examine is returned as data ([`JointSet::undecided`]), never
//!   guessed; memory never depends on the width of a range (ranges are iterated, never
//!   collected).

use crate::engine::{solve, Limits, Outcome};
use crate::error::Error;
use crate::expr::Value;
use crate::suggest::{normalized, rank, Maximality};
use crate::types::{CmpOp, DimSet, Expr, Progression, Segment};
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Work limits of a joint solve.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Wall-clock time the search may take; past it the rest is reported undecided.
    pub time: Duration,
    /// Largest number of value groups the joint set may hold before the search stops.
    pub pieces: usize,
    /// A last-level domain with at most this many values is enumerated per combination of the
    /// others; a wider one is solved by the periodic engine.
    pub inner_enumeration: u128,
    /// Limits of the one-size engine.
    pub limits: Limits,
    /// Largest number of sub-problems the largest-box search examines.
    pub box_work: usize,
    /// Largest estimated number of guard evaluations a search may start with; a plan above it
    /// is not started (the whole box is reported undecided at once, for Z3 to try).
    pub work: f64,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            time: Duration::from_secs(10),
            pieces: 2_000_000,
            inner_enumeration: 4096,
            limits: Limits::default(),
            box_work: 200_000,
            work: 2e9,
        }
    }
}

/// The set of tuples (one value per level) that pass every guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tree {
    /// The last level: values of the last size.
    Leaf(DimSet),
    /// Values of this level's size, grouped by identical continuation; the sets are disjoint
    /// and no continuation is empty.
    Node(Vec<(DimSet, Tree)>),
}

impl Tree {
    /// The empty set with `levels` levels.
    pub fn empty(levels: usize) -> Tree {
        if levels <= 1 {
            Tree::Leaf(DimSet::empty())
        } else {
            Tree::Node(vec![])
        }
    }

    /// The whole box `sides[0] x sides[1] x ...`.
    pub fn full(sides: &[DimSet]) -> Tree {
        match sides {
            [] => Tree::Leaf(DimSet::empty()),
            [last] => Tree::Leaf(last.clone()),
            [first, rest @ ..] => {
                let child = Tree::full(rest);
                if first.is_empty() || child.is_empty() {
                    Tree::Node(vec![])
                } else {
                    Tree::Node(vec![(first.clone(), child)])
                }
            }
        }
    }

    /// Whether no tuple is a member.
    pub fn is_empty(&self) -> bool {
        match self {
            Tree::Leaf(s) => s.is_empty(),
            Tree::Node(g) => g.is_empty(),
        }
    }

    /// Number of tuples (saturating at `u128::MAX`).
    pub fn count(&self) -> u128 {
        match self {
            Tree::Leaf(s) => s.count(),
            Tree::Node(g) => g.iter().fold(0u128, |acc, (s, c)| {
                acc.saturating_add(s.count().saturating_mul(c.count()))
            }),
        }
    }

    /// Whether `tuple` (one value per level) is a member.
    pub fn contains(&self, tuple: &[i128]) -> bool {
        match (self, tuple) {
            (Tree::Leaf(s), [x]) => s.contains(*x),
            (Tree::Node(g), [x, rest @ ..]) => g
                .iter()
                .find(|(s, _)| s.contains(*x))
                .is_some_and(|(_, c)| c.contains(rest)),
            _ => false,
        }
    }

    /// The values of level `level` that occur in some member tuple; an error when the union
    /// has no closed form within the budget ([`Exact`]).
    pub fn projection(&self, level: usize) -> Exact<DimSet> {
        match self {
            Tree::Leaf(s) => Ok(if level == 0 {
                s.clone()
            } else {
                DimSet::empty()
            }),
            Tree::Node(g) => {
                let parts = g.iter().map(|(s, c)| {
                    if level == 0 {
                        Ok(s.clone())
                    } else {
                        c.projection(level - 1)
                    }
                });
                union_all(parts)
            }
        }
    }

    /// The tree as a union of disjoint boxes (one side per level), at most `limit` of them;
    /// the flag says whether every box is listed.
    pub fn boxes(&self, limit: usize) -> (Vec<Vec<DimSet>>, bool) {
        let mut out = Vec::new();
        let complete = self.boxes_into(&mut Vec::new(), &mut out, limit);
        (out, complete)
    }

    fn boxes_into(
        &self,
        prefix: &mut Vec<DimSet>,
        out: &mut Vec<Vec<DimSet>>,
        limit: usize,
    ) -> bool {
        match self {
            Tree::Leaf(s) => {
                if s.is_empty() {
                    return true;
                }
                if out.len() >= limit {
                    return false;
                }
                let mut b = prefix.clone();
                b.push(s.clone());
                out.push(b);
                true
            }
            Tree::Node(g) => {
                for (s, c) in g {
                    prefix.push(s.clone());
                    let ok = c.boxes_into(prefix, out, limit);
                    prefix.pop();
                    if !ok {
                        return false;
                    }
                }
                true
            }
        }
    }

    /// The tuples of both trees (same levels), or an error ([`Exact`]).
    pub fn intersect(&self, other: &Tree) -> Exact<Tree> {
        Ok(match (self, other) {
            (Tree::Leaf(a), Tree::Leaf(b)) => Tree::Leaf(inter(a, b)?),
            (Tree::Node(ga), Tree::Node(gb)) => {
                let mut out: Vec<(DimSet, Tree)> = Vec::new();
                for (sa, ca) in ga {
                    for (sb, cb) in gb {
                        crate::budget::check()?;
                        let s = inter(sa, sb)?;
                        if s.is_empty() {
                            continue;
                        }
                        let c = ca.intersect(cb)?;
                        if !c.is_empty() {
                            push_group(&mut out, s, c)?;
                        }
                    }
                }
                Tree::Node(out)
            }
            _ => Tree::empty(2),
        })
    }

    /// The tuples of the box `sides` that are not members, or an error ([`Exact`]).
    pub fn complement(&self, sides: &[DimSet]) -> Exact<Tree> {
        Ok(match (self, sides) {
            (Tree::Leaf(s), [d]) => Tree::Leaf(minus(d, s)?),
            (Tree::Node(g), [d, rest @ ..]) => {
                let mut out: Vec<(DimSet, Tree)> = Vec::new();
                let covered = union_all(g.iter().map(|(s, _)| Ok(s.clone())))?;
                let free = minus(d, &covered)?;
                if !free.is_empty() {
                    let full = Tree::full(rest);
                    if !full.is_empty() {
                        out.push((free, full));
                    }
                }
                for (s, c) in g {
                    crate::budget::check()?;
                    let s = inter(s, d)?;
                    let comp = c.complement(rest)?;
                    if !s.is_empty() && !comp.is_empty() {
                        push_group(&mut out, s, comp)?;
                    }
                }
                Tree::Node(out)
            }
            _ => Tree::empty(sides.len()),
        })
    }

    /// One member tuple, the smallest in level order.
    pub fn first(&self) -> Option<Vec<i128>> {
        match self {
            Tree::Leaf(s) => s.min().map(|x| vec![x]),
            Tree::Node(g) => g
                .iter()
                .filter_map(|(s, c)| Some((s.min()?, c)))
                .min_by_key(|(x, _)| *x)
                .and_then(|(x, c)| {
                    let mut t = vec![x];
                    t.extend(c.first()?);
                    Some(t)
                }),
        }
    }

    /// Up to `n` member tuples, in level order.
    pub fn examples(&self, n: usize) -> Vec<Vec<i128>> {
        let mut out = Vec::new();
        self.examples_into(&mut Vec::new(), &mut out, n);
        out.sort();
        out
    }

    fn examples_into(&self, prefix: &mut Vec<i128>, out: &mut Vec<Vec<i128>>, n: usize) {
        match self {
            Tree::Leaf(s) => {
                for x in s.iter().take(n.saturating_sub(out.len())) {
                    let mut t = prefix.clone();
                    t.push(x);
                    out.push(t);
                }
            }
            Tree::Node(g) => {
                for (s, c) in g {
                    for x in s.iter().take(n) {
                        if out.len() >= n {
                            return;
                        }
                        prefix.push(x);
                        c.examples_into(prefix, out, n);
                        prefix.pop();
                    }
                }
            }
        }
    }
}

/// The result of an operation on joint sets: exact, or an error when a set operation has no
/// closed form within the budget (a period past the limit and more members than can be listed,
/// or the deadline passed). Never a truncated or guessed set: the caller reports the sizes
/// involved as undecided.
pub type Exact<T> = Result<T, Error>;

fn inter(a: &DimSet, b: &DimSet) -> Exact<DimSet> {
    // The common period may be too large for a closed form: then value by value over the
    // smaller set.
    let (small, big) = if a.count() <= b.count() {
        (a, b)
    } else {
        (b, a)
    };
    listed_if_needed(a.intersect(b), small.count(), || {
        small.iter().filter(|x| big.contains(*x))
    })
}

/// `a \ b`, or an error ([`Exact`]).
fn minus(a: &DimSet, b: &DimSet) -> Exact<DimSet> {
    listed_if_needed(a.difference(b), a.count(), || {
        a.iter().filter(|x| !b.contains(*x))
    })
}

fn union(a: &DimSet, b: &DimSet) -> Exact<DimSet> {
    listed_if_needed(a.union(b), a.count().saturating_add(b.count()), || {
        a.iter().chain(b.iter())
    })
}

/// The union of `parts`; an error past the deadline of the thread's [`crate::budget`] (the
/// budget records it, so the command reports its answer as partial).
fn union_all(parts: impl Iterator<Item = Exact<DimSet>>) -> Exact<DimSet> {
    let mut acc = DimSet::empty();
    for s in parts {
        crate::budget::check()?;
        acc = union(&acc, &s?)?;
    }
    Ok(acc)
}

/// Most members a set operation lists one by one when no closed form is possible.
const LISTED_MAX: u128 = 1 << 16;

/// `closed` when the set operation had a closed form. Otherwise, when the operands have at most
/// [`LISTED_MAX`] members in all (`operands`), the set of the members `values` yields, listed
/// one by one (stopping with an error past the deadline of the thread's [`crate::budget`]);
/// else `closed`'s error: never a truncated set.
fn listed_if_needed<I: Iterator<Item = i128>>(
    closed: Result<DimSet, Error>,
    operands: u128,
    values: impl FnOnce() -> I,
) -> Exact<DimSet> {
    match closed {
        Err(e) if operands <= LISTED_MAX && !matches!(e, Error::Exhausted(_)) => {
            let mut out = Vec::new();
            for (i, v) in values().enumerate() {
                if i % 4096 == 4095 {
                    crate::budget::check()?;
                }
                out.push(v);
            }
            Ok(DimSet::from_values(out))
        }
        r => r,
    }
}

/// Adds `s -> c` to a group list, merging with an identical continuation.
fn push_group(out: &mut Vec<(DimSet, Tree)>, s: DimSet, c: Tree) -> Exact<()> {
    if let Some(slot) = out.iter_mut().find(|(_, oc)| *oc == c) {
        slot.0 = union(&slot.0, &s)?;
    } else {
        out.push((s, c));
    }
    Ok(())
}

/// The result of a joint solve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JointSet {
    /// The sizes, in the tree's level order.
    pub sizes: Vec<String>,
    /// Every size's domain (its own one-size guards already applied), in level order.
    pub domains: Vec<DimSet>,
    /// The tuples that pass every guard, within the decided region.
    pub tree: Tree,
    /// The region the search did not decide, when it stopped early.
    pub undecided: Option<Undecided>,
    /// How the search went.
    pub stats: Stats,
}

/// A region left undecided, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undecided {
    /// Why (budget, a guard outside every method).
    pub reason: String,
    /// The undecided tuples: `sides[0]` is the first level's values not examined; the other
    /// levels are whole.
    pub sides: Vec<DimSet>,
    /// How many tuples.
    pub count: u128,
}

/// Search statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Partial and whole tuples evaluated.
    pub points: u64,
    /// Last-level sets solved by the periodic engine.
    pub periodic_solves: u64,
    /// Nodes of the shared expression graph.
    pub shared_nodes: usize,
    /// Guards evaluated by the exact evaluator (outside the `i128` graph).
    pub exact_guards: usize,
    /// Last-level sets taken from an earlier combination of the other sizes that gave its
    /// guards the same values ([`Reuse`]).
    pub reused: u64,
}

/// The last level's sets by what its guards read from the other sizes: the values of the
/// nodes of earlier levels they use ([`Machine::frontier`]), and the sizes a guard outside the
/// `i128` graph mentions. Two combinations with the same values have the same set: under
/// `h*w <= N` over (b, h, w), every (b, h) pair with one product `b*h`; under `(h//16)*(w//16)`,
/// sixteen values of h.
struct Reuse {
    reads: Vec<Read>,
    vars: Vec<usize>,
    sets: HashMap<Vec<i128>, DimSet>,
    /// Segments and key values held in `sets`, in all.
    held: usize,
}

/// One value the last level reads from the earlier ones ([`Machine::frontier`]).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Read {
    /// A node's value.
    Node(u32),
    /// The sum (product, ...) of several nodes' values, all operands of one node of the last
    /// level.
    Fold(Fold, Vec<u32>),
}

/// How a [`Read::Fold`] combines its nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Fold {
    Sum,
    Product,
    Min,
    Max,
}

/// Most segments and key values [`Reuse`] holds (a few tens of MB at most); past it, sets are
/// solved without being kept.
const REUSE_MAX: usize = 1 << 18;

impl JointSet {
    /// Number of tuples that pass (within the decided region).
    pub fn count(&self) -> u128 {
        self.tree.count()
    }

    /// Number of tuples of the whole box of domains.
    pub fn box_count(&self) -> u128 {
        self.domains
            .iter()
            .fold(1u128, |a, d| a.saturating_mul(d.count()))
    }

    /// Level of a size.
    pub fn level(&self, name: &str) -> Option<usize> {
        self.sizes.iter().position(|s| s == name)
    }

    /// Values of `name` that pass with some value of the others (empty for an unknown name),
    /// or an error ([`Exact`]).
    pub fn projection(&self, name: &str) -> Exact<DimSet> {
        self.level(name)
            .map_or(Ok(DimSet::empty()), |l| self.tree.projection(l))
    }

    /// Values of `name` that pass with **every** value of the others' domains, and with at
    /// least one (an empty domain of another size makes nothing pass, not everything), or an
    /// error ([`Exact`]): never a set that claims a value it has not shown.
    pub fn for_all(&self, name: &str) -> Exact<DimSet> {
        let Some(l) = self.level(name) else {
            return Ok(DimSet::empty());
        };
        let bad = self.tree.complement(&self.domains)?.projection(l)?;
        let mut out = minus(&self.domains[l], &bad)?;
        if let Some(u) = &self.undecided {
            let unsure = if l == 0 {
                u.sides[0].clone()
            } else if u.count > 0 {
                self.domains[l].clone()
            } else {
                DimSet::empty()
            };
            out = minus(&out, &unsure)?;
        }
        inter(&out, &self.tree.projection(l)?)
    }

    /// Up to `n` tuples of the domains' box that fail some guard (really: each is outside the
    /// decided joint set and inside the decided region), or an error ([`Exact`]).
    pub fn rejected_examples(&self, n: usize) -> Exact<Vec<Vec<i128>>> {
        let mut comp = self.tree.complement(&self.domains)?;
        if let Some(u) = &self.undecided {
            let region = Tree::full(&u.sides);
            comp = comp.intersect(&region.complement(&self.domains)?)?;
        }
        Ok(comp.examples(n))
    }
}

// ---------------------------------------------------------------------------------------------
// The shared expression graph.

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Op {
    Var(usize),
    Const(i128),
    Add(Vec<u32>),
    Mul(Vec<u32>),
    FloorDiv(u32, u32),
    Mod(u32, u32),
    Min(Vec<u32>),
    Max(Vec<u32>),
    Abs(u32),
    Ite(u32, u32, u32),
    Cmp(CmpOp, u32, u32),
    And(Vec<u32>),
    Or(Vec<u32>),
    Not(u32),
    Bool(bool),
}

impl Op {
    /// The nodes this one reads.
    fn operands(&self) -> Vec<u32> {
        match self {
            Op::Var(_) | Op::Const(_) | Op::Bool(_) => vec![],
            Op::Add(v) | Op::Mul(v) | Op::Min(v) | Op::Max(v) | Op::And(v) | Op::Or(v) => v.clone(),
            Op::FloorDiv(a, b) | Op::Mod(a, b) | Op::Cmp(_, a, b) => vec![*a, *b],
            Op::Abs(a) | Op::Not(a) => vec![*a],
            Op::Ite(c, a, b) => vec![*c, *a, *b],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fail {
    /// Python raises (a division by zero): the guard fails.
    Raises,
    /// Beyond `i128`: decide with the exact evaluator.
    Overflow,
}

/// All guards of a group as one hash-consed graph.
#[derive(Debug, Default)]
struct Graph {
    ops: Vec<Op>,
    /// Bit mask of the sizes (by index in the group) a node depends on.
    mask: Vec<u64>,
    ids: HashMap<Op, u32>,
}

impl Graph {
    fn add(&mut self, op: Op) -> u32 {
        if let Some(&id) = self.ids.get(&op) {
            return id;
        }
        let mask = match &op {
            Op::Var(i) => 1u64 << i,
            _ => op
                .operands()
                .iter()
                .fold(0, |m, &c| m | self.mask[c as usize]),
        };
        let id = self.ops.len() as u32;
        self.ops.push(op.clone());
        self.mask.push(mask);
        self.ids.insert(op, id);
        id
    }

    fn num(&mut self, e: &Expr, vars: &[String]) -> Option<u32> {
        let list = |g: &mut Graph, v: &[Expr]| -> Option<Vec<u32>> {
            v.iter().map(|x| g.num(x, vars)).collect()
        };
        let op = match e {
            Expr::Const(c) if c.is_integer() => Op::Const(*c.numer()),
            Expr::Sym(a) => Op::Var(vars.iter().position(|v| **v == **a)?),
            Expr::Add(v) => Op::Add(list(self, v)?),
            Expr::Mul(v) => Op::Mul(list(self, v)?),
            Expr::Min(v) => Op::Min(list(self, v)?),
            Expr::Max(v) => Op::Max(list(self, v)?),
            Expr::FloorDiv(a, b) => Op::FloorDiv(self.num(a, vars)?, self.num(b, vars)?),
            Expr::Mod(a, b) => Op::Mod(self.num(a, vars)?, self.num(b, vars)?),
            Expr::Abs(a) => Op::Abs(self.num(a, vars)?),
            Expr::Ite(c, a, b) if !a.is_bool() && !b.is_bool() => {
                Op::Ite(self.cond(c, vars)?, self.num(a, vars)?, self.num(b, vars)?)
            }
            Expr::Pow(a, b) => match &**b {
                Expr::Const(k) if k.is_integer() && (0..=8).contains(k.numer()) => {
                    let base = self.num(a, vars)?;
                    let one = self.add(Op::Const(1));
                    Op::Mul(
                        std::iter::once(one)
                            .chain(std::iter::repeat_n(base, *k.numer() as usize))
                            .collect(),
                    )
                }
                _ => return None,
            },
            _ => return None,
        };
        Some(self.add(op))
    }

    fn cond(&mut self, e: &Expr, vars: &[String]) -> Option<u32> {
        let list = |g: &mut Graph, v: &[Expr]| -> Option<Vec<u32>> {
            v.iter().map(|x| g.cond(x, vars)).collect()
        };
        let op = match e {
            Expr::Bool(b) => Op::Bool(*b),
            Expr::Cmp(op, a, b) => Op::Cmp(*op, self.num(a, vars)?, self.num(b, vars)?),
            Expr::And(v) => Op::And(list(self, v)?),
            Expr::Or(v) => Op::Or(list(self, v)?),
            Expr::Not(a) => Op::Not(self.cond(a, vars)?),
            _ => return None,
        };
        Some(self.add(op))
    }
}

/// Evaluates graph nodes with per-level memoization.
struct Machine<'g> {
    g: &'g Graph,
    /// Level of each node under the chosen order.
    level: Vec<usize>,
    val: Vec<i128>,
    stamp: Vec<u64>,
    gen: Vec<u64>,
    counter: u64,
    /// Value of each size, by index in the group.
    vars: Vec<i128>,
}

fn fdiv(a: i128, b: i128) -> Result<i128, Fail> {
    if b == 0 {
        return Err(Fail::Raises);
    }
    let q = a.checked_div(b).ok_or(Fail::Overflow)?;
    Ok(if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

fn fmod(a: i128, b: i128) -> Result<i128, Fail> {
    if b == 0 {
        return Err(Fail::Raises);
    }
    let r = a.checked_rem(b).ok_or(Fail::Overflow)?;
    Ok(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

impl<'g> Machine<'g> {
    fn new(g: &'g Graph, pos: &[usize]) -> Machine<'g> {
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
    fn frontier(&self, roots: &[u32], level: usize) -> Vec<Read> {
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
    fn read(&mut self, r: &Read) -> Option<i128> {
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
    fn set(&mut self, var: usize, level: usize, v: i128) {
        self.vars[var] = v;
        self.counter += 1;
        self.gen[level] = self.counter;
    }

    fn eval(&mut self, n: u32) -> Result<i128, Fail> {
        let i = n as usize;
        match &self.g.ops[i] {
            Op::Const(c) => return Ok(*c),
            Op::Bool(b) => return Ok(*b as i128),
            Op::Var(v) => return Ok(self.vars[*v]),
            _ => {}
        }
        if self.stamp[i] == self.gen[self.level[i]] && self.stamp[i] != 0 {
            return Ok(self.val[i]);
        }
        let g = self.g;
        let v = match &g.ops[i] {
            Op::Add(v) => {
                let mut acc: i128 = 0;
                for &c in v {
                    acc = acc.checked_add(self.eval(c)?).ok_or(Fail::Overflow)?;
                }
                acc
            }
            Op::Mul(v) => {
                let mut acc: i128 = 1;
                for &c in v {
                    acc = acc.checked_mul(self.eval(c)?).ok_or(Fail::Overflow)?;
                }
                acc
            }
            Op::Min(v) | Op::Max(v) => {
                let want_max = matches!(g.ops[i], Op::Max(_));
                let mut best: Option<i128> = None;
                for &c in v {
                    let x = self.eval(c)?;
                    best = Some(match best {
                        None => x,
                        Some(b) if want_max => b.max(x),
                        Some(b) => b.min(x),
                    });
                }
                best.ok_or(Fail::Raises)?
            }
            Op::FloorDiv(a, b) => {
                let (a, b) = (self.eval(*a)?, self.eval(*b)?);
                fdiv(a, b)?
            }
            Op::Mod(a, b) => {
                let (a, b) = (self.eval(*a)?, self.eval(*b)?);
                fmod(a, b)?
            }
            Op::Abs(a) => self.eval(*a)?.checked_abs().ok_or(Fail::Overflow)?,
            Op::Ite(c, a, b) => {
                if self.eval(*c)? != 0 {
                    self.eval(*a)?
                } else {
                    self.eval(*b)?
                }
            }
            Op::Cmp(op, a, b) => {
                let (a, b) = (self.eval(*a)?, self.eval(*b)?);
                op.holds(a.cmp(&b)) as i128
            }
            Op::And(v) => {
                let mut r = 1;
                for &c in v {
                    if self.eval(c)? == 0 {
                        r = 0;
                        break;
                    }
                }
                r
            }
            Op::Or(v) => {
                let mut r = 0;
                for &c in v {
                    if self.eval(c)? != 0 {
                        r = 1;
                        break;
                    }
                }
                r
            }
            Op::Not(a) => (self.eval(*a)? == 0) as i128,
            Op::Const(_) | Op::Bool(_) | Op::Var(_) => unreachable!("handled above"),
        };
        self.val[i] = v;
        self.stamp[i] = self.gen[self.level[i]];
        Ok(v)
    }
}

/// One guard of the group.
struct G<'e> {
    expr: &'e Expr,
    /// Its root in the graph, when it compiles.
    node: Option<u32>,
    /// Sizes it mentions (mask over the group's sizes).
    mask: u64,
    /// Estimated fraction of the box that passes.
    pass: f64,
}

fn truth(m: &mut Machine, g: &G, names: &[String]) -> bool {
    if let Some(n) = g.node {
        match m.eval(n) {
            Ok(v) => return v != 0,
            Err(Fail::Raises) => return false,
            Err(Fail::Overflow) => {}
        }
    }
    let vars = &m.vars;
    let env = |a: &str| names.iter().position(|n| n == a).map(|i| vars[i]);
    matches!(g.expr.eval(&env).and_then(Value::truth), Ok(true))
}

/// A small deterministic generator (xorshift) for sampling.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A member of a non-empty set, roughly uniform.
    fn pick(&mut self, s: &DimSet) -> i128 {
        let (lo, hi) = (s.min().unwrap_or(0), s.max().unwrap_or(0));
        let span = (hi - lo) as u128 + 1;
        let r = ((self.next() as u128) << 64 | self.next() as u128) % span.max(1);
        let x = lo + r as i128;
        s.next_at_least(x).unwrap_or(lo)
    }
}

/// Accumulates increasing values into a set without collecting a range.
#[derive(Default)]
struct Acc {
    runs: Vec<(i128, i128)>,
    values: u128,
}

impl Acc {
    fn push(&mut self, x: i128) {
        self.values += 1;
        if let Some(last) = self.runs.last_mut() {
            if last.1 + 1 == x {
                last.1 = x;
                return;
            }
        }
        self.runs.push((x, x));
    }

    fn pieces(&self) -> usize {
        self.runs.len()
    }

    /// The accumulated values as a set, or an error: never fewer members than were pushed.
    /// The runs are increasing and disjoint, so building the set cannot fail today; an error
    /// from [`DimSet::from_segments`] (past the piece bound or the deadline) is returned, not
    /// swallowed into a smaller set.
    fn into_set(self) -> Exact<DimSet> {
        if self.values <= 1_000_000 {
            Ok(DimSet::from_values(
                self.runs.iter().flat_map(|&(a, b)| a..=b),
            ))
        } else {
            DimSet::from_segments(
                self.runs
                    .iter()
                    .map(|&(lo, hi)| Segment {
                        lo,
                        hi,
                        modulus: 1,
                        residues: vec![0],
                    })
                    .collect(),
            )
        }
    }
}

/// The groups of a level as the tree holds them, or an error ([`Acc::into_set`]).
fn grouped(groups: Vec<(Acc, Tree)>) -> Exact<Tree> {
    let mut out = Vec::with_capacity(groups.len());
    for (a, c) in groups {
        out.push((a.into_set()?, c));
    }
    Ok(Tree::Node(out))
}

enum Stop {
    Budget(String),
    Undecided(String),
}

impl From<Error> for Stop {
    /// A failed set operation stops the search: a budget's own reason, else the error's.
    fn from(e: Error) -> Stop {
        match e {
            Error::Exhausted(b) => Stop::Budget(b.reason()),
            other => Stop::Undecided(other.to_string()),
        }
    }
}

struct Search<'a, 'g> {
    names: &'a [String],
    /// Size index (in `names`) at each level.
    order: Vec<usize>,
    domains: Vec<DimSet>,
    /// Guards decided at each level (by the deepest size they mention), most rejecting first.
    at_level: Vec<Vec<&'a G<'a>>>,
    m: Machine<'g>,
    budget: &'a Budget,
    start: Instant,
    /// Where the search stops to leave the rest of the command's time budget to the work on its
    /// result ([`SEARCH_SHARE`]).
    share: Option<Instant>,
    pieces: usize,
    stats: Stats,
    reuse: Reuse,
}

/// The part of the command's remaining time the joint search may take: the boxes, projections
/// and report built from its tree cost up to half as long again (measured on fuzzer inputs).
const SEARCH_SHARE: f64 = 0.6;

impl Search<'_, '_> {
    /// Counts a point; every 32 points (a point can cost a millisecond: big powers go to the
    /// exact evaluator), stops past this search's own time limit or past the deadline of the
    /// thread's [`crate::budget`] (the command's `--time-budget`).
    fn tick(&mut self) -> Result<(), Stop> {
        self.stats.points += 1;
        if self.stats.points % 32 == 0 {
            if self.start.elapsed() > self.budget.time {
                return Err(Stop::Budget(format!(
                    "the time budget of {:.1} s ran out",
                    self.budget.time.as_secs_f64()
                )));
            }
            if let Some(e) = crate::budget::expired() {
                return Err(Stop::Budget(e.reason()));
            }
            if self.share.is_some_and(|at| Instant::now() >= at) {
                if let Some(e) = crate::budget::share_spent("the joint search", SEARCH_SHARE) {
                    return Err(Stop::Budget(e.reason()));
                }
            }
        }
        Ok(())
    }

    fn pass(&mut self, level: usize) -> bool {
        for g in &self.at_level[level] {
            if !truth(&mut self.m, g, self.names) {
                return false;
            }
        }
        true
    }

    fn level(&mut self, k: usize) -> Result<Tree, Stop> {
        let last = self.order.len() - 1;
        if k == last {
            return self.inner().map(Tree::Leaf);
        }
        let var = self.order[k];
        let mut groups: Vec<(Acc, Tree)> = Vec::new();
        let dom = self.domains[k].clone();
        for v in dom.iter() {
            self.tick()?;
            self.m.set(var, k, v);
            if !self.pass(k) {
                continue;
            }
            let child = self.level(k + 1)?;
            if child.is_empty() {
                continue;
            }
            self.add_value(&mut groups, v, child)?;
        }
        grouped(groups).map_err(Stop::from)
    }

    fn add_value(
        &mut self,
        groups: &mut Vec<(Acc, Tree)>,
        v: i128,
        child: Tree,
    ) -> Result<(), Stop> {
        // The last few groups are compared first (neighbouring values usually share one).
        if let Some(slot) = groups.iter_mut().rev().take(64).find(|(_, c)| *c == child) {
            let before = slot.0.pieces();
            slot.0.push(v);
            self.pieces += slot.0.pieces() - before;
        } else {
            let mut a = Acc::default();
            a.push(v);
            groups.push((a, child));
            self.pieces += 1;
        }
        if self.pieces > self.budget.pieces {
            return Err(Stop::Budget(format!(
                "the joint set needs more than {} pieces",
                self.budget.pieces
            )));
        }
        Ok(())
    }

    /// The last level's set, for the values the earlier levels hold now.
    fn inner(&mut self) -> Result<DimSet, Stop> {
        let k = self.order.len() - 1;
        if self.at_level[k].is_empty() {
            return Ok(self.domains[k].clone());
        }
        // Only with every value exact: a node that raises or overflows keys nothing.
        let key: Option<Vec<i128>> = {
            let Reuse { reads, vars, .. } = &self.reuse;
            let m = &mut self.m;
            let mut key: Option<Vec<i128>> = reads.iter().map(|r| m.read(r)).collect();
            if let Some(key) = &mut key {
                key.extend(vars.iter().map(|&v| m.vars[v]));
            }
            key
        };
        if let Some(set) = key.as_ref().and_then(|k| self.reuse.sets.get(k)) {
            self.stats.reused += 1;
            return Ok(set.clone());
        }
        let set = self.solve_inner()?;
        if let Some(key) = key {
            let size = set.segments().len() + key.len();
            if self.reuse.held + size <= REUSE_MAX {
                self.reuse.held += size;
                self.reuse.sets.insert(key, set.clone());
            }
        }
        Ok(set)
    }

    fn solve_inner(&mut self) -> Result<DimSet, Stop> {
        let k = self.order.len() - 1;
        let var = self.order[k];
        let dom = self.domains[k].clone();
        if dom.count() <= self.budget.inner_enumeration {
            let mut acc = Acc::default();
            for x in dom.iter() {
                self.tick()?;
                self.m.set(var, k, x);
                if self.pass(k) {
                    acc.push(x);
                }
            }
            return acc.into_set().map_err(Stop::from);
        }
        // Wide: the periodic engine per combination of the other sizes.
        self.tick()?;
        self.stats.periodic_solves += 1;
        let mut set = dom;
        let name = &self.names[var];
        for g in &self.at_level[k] {
            let mut h = g.expr.clone();
            for &o in &self.order[..k] {
                if g.mask & (1 << o) != 0 {
                    h = h.substitute(&self.names[o], &Expr::int(self.m.vars[o]));
                }
            }
            match solve(&h, name, &set, &self.budget.limits) {
                Outcome::Solved { set: s, .. } => set = s,
                Outcome::Undecided { reason } => return Err(Stop::Undecided(reason.to_string())),
            }
            if set.is_empty() {
                break;
            }
        }
        Ok(set)
    }
}

/// The exact joint set of `names` over `domains` (one per name, in the same order; the sizes'
/// own one-size guards already applied) under `guards`, within `budget`.
///
/// Every guard must mention only sizes in `names`.
pub fn solve_joint(
    names: &[String],
    domains: &[DimSet],
    guards: &[Expr],
    budget: &Budget,
) -> JointSet {
    search(names, domains, guards, budget, true)
}

/// [`solve_joint`]; with `wide`, a plan past the budget's work is tried by boxes
/// ([`solve_wide`]) before it is reported undecided.
fn search(
    names: &[String],
    domains: &[DimSet],
    guards: &[Expr],
    budget: &Budget,
    wide: bool,
) -> JointSet {
    let start = Instant::now();
    let n = names.len();
    let mut graph = Graph::default();
    let mut gs: Vec<G> = guards
        .iter()
        .map(|e| {
            let mask = e
                .atoms()
                .iter()
                .filter_map(|a| names.iter().position(|n| **n == **a))
                .fold(0u64, |m, i| m | 1 << i);
            G {
                expr: e,
                node: graph.cond(e, names),
                mask,
                pass: 1.0,
            }
        })
        .collect();
    let stats = Stats {
        shared_nodes: graph.ops.len(),
        exact_guards: gs.iter().filter(|g| g.node.is_none()).count(),
        ..Stats::default()
    };
    let done =
        |order: Vec<usize>, tree: Tree, undecided: Option<Undecided>, stats: Stats| JointSet {
            sizes: order.iter().map(|&i| names[i].clone()).collect(),
            domains: order.iter().map(|&i| domains[i].clone()).collect(),
            tree,
            undecided,
            stats,
        };
    if domains.iter().any(DimSet::is_empty) || n == 0 {
        return done((0..n).collect(), Tree::empty(n), None, stats);
    }
    // Estimate each guard's pass rate on pseudo-random points of the box.
    {
        let ident: Vec<usize> = (0..n).collect();
        let mut m = Machine::new(&graph, &ident);
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        const SAMPLES: usize = 48;
        let mut passed = vec![0usize; gs.len()];
        for _ in 0..SAMPLES {
            for (i, d) in domains.iter().enumerate() {
                let v = rng.pick(d);
                m.set(i, i, v);
            }
            for (j, g) in gs.iter().enumerate() {
                if g.node.is_some() && truth(&mut m, g, names) {
                    passed[j] += 1;
                }
            }
        }
        for (g, p) in gs.iter_mut().zip(passed) {
            g.pass = if g.node.is_some() {
                (p as f64 + 0.5) / (SAMPLES as f64 + 1.0)
            } else {
                0.5
            };
        }
    }
    let (order, cost) = plan(n, domains, &gs, budget);
    if cost > budget.work && wide {
        if let Some(js) = solve_wide(names, domains, guards, budget) {
            return js;
        }
    }
    if cost > budget.work {
        let sides: Vec<DimSet> = order.iter().map(|&i| domains[i].clone()).collect();
        let count = Tree::full(&sides).count();
        let undecided = Some(Undecided {
            reason: format!(
                "enumerating them needs about {cost:.1e} guard evaluations, more than the {:.0e} dimguard starts",
                budget.work
            ),
            sides,
            count,
        });
        return done(order, Tree::empty(n), undecided, stats);
    }
    let mut pos = vec![0usize; n];
    for (l, &i) in order.iter().enumerate() {
        pos[i] = l;
    }
    let mut at_level: Vec<Vec<&G>> = vec![Vec::new(); n];
    for g in &gs {
        let l = (0..n)
            .filter(|&i| g.mask & (1 << i) != 0)
            .map(|i| pos[i])
            .max()
            .unwrap_or(0);
        at_level[l].push(g);
    }
    for lv in at_level.iter_mut() {
        lv.sort_by(|a, b| {
            a.pass
                .partial_cmp(&b.pass)
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.expr.size().cmp(&b.expr.size()))
        });
    }
    let level_domains: Vec<DimSet> = order.iter().map(|&i| domains[i].clone()).collect();
    let m = Machine::new(&graph, &pos);
    let last = &at_level[n - 1];
    let reuse = Reuse {
        reads: m.frontier(
            &last.iter().filter_map(|g| g.node).collect::<Vec<_>>(),
            n - 1,
        ),
        vars: (0..n)
            .filter(|&i| pos[i] < n - 1)
            .filter(|&i| {
                last.iter()
                    .any(|g| g.node.is_none() && g.mask & (1 << i) != 0)
            })
            .collect(),
        sets: HashMap::new(),
        held: 0,
    };
    let mut s = Search {
        names,
        order: order.clone(),
        domains: level_domains.clone(),
        at_level,
        m,
        budget,
        start,
        share: crate::budget::share_of_remaining(SEARCH_SHARE),
        pieces: 0,
        stats,
        reuse,
    };
    // The first level by hand, so that a stop keeps everything decided before it.
    let mut undecided = None;
    let tree = if n == 1 {
        match s.inner() {
            Ok(set) => Tree::Leaf(set),
            Err(Stop::Budget(r) | Stop::Undecided(r)) => {
                undecided = Some(Undecided {
                    reason: r,
                    count: level_domains[0].count(),
                    sides: level_domains.clone(),
                });
                Tree::Leaf(DimSet::empty())
            }
        }
    } else {
        let var = order[0];
        let mut groups: Vec<(Acc, Tree)> = Vec::new();
        let dom = level_domains[0].clone();
        for v in dom.iter() {
            let step = s.tick().and_then(|()| {
                s.m.set(var, 0, v);
                if s.pass(0) {
                    s.level(1).map(Some)
                } else {
                    Ok(None)
                }
            });
            let outcome = match step {
                Ok(Some(child)) if !child.is_empty() => s.add_value(&mut groups, v, child),
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(Stop::Budget(reason) | Stop::Undecided(reason)) = outcome {
                let mut sides = level_domains.clone();
                sides[0] = dom.clip(v, i128::MAX);
                let count = Tree::full(&sides).count();
                undecided = Some(Undecided {
                    reason,
                    sides,
                    count,
                });
                break;
            }
        }
        if let Some(u) = &undecided {
            // Values of the stopped one are re-listed as undecided: drop them from the groups.
            let cut = u.sides[0].min().unwrap_or(i128::MAX);
            for (a, _) in groups.iter_mut() {
                a.runs.retain_mut(|r| {
                    r.1 = r.1.min(cut - 1);
                    r.0 <= r.1
                });
            }
            groups.retain(|(a, _)| !a.runs.is_empty());
        }
        match grouped(groups) {
            Ok(t) => t,
            Err(e) => {
                // Nothing decided is kept past a failed set: the whole box is undecided.
                undecided = Some(Undecided {
                    reason: match Stop::from(e) {
                        Stop::Budget(r) | Stop::Undecided(r) => r,
                    },
                    count: Tree::full(&level_domains).count(),
                    sides: level_domains.clone(),
                });
                Tree::empty(n)
            }
        }
    };
    let stats = s.stats;
    done(order, tree, undecided, stats)
}

/// Boxes [`solve_wide`] examines at most before what is left is reported undecided.
const WIDE_BOXES: usize = 2_000;

/// Boxes [`solve_wide`] examines before it gives up when none of them was decided.
const WIDE_HOPELESS: usize = 12;

/// Time [`solve_wide`] takes at most (less when the budget's time is shorter).
const WIDE_TIME: Duration = Duration::from_millis(1500);

/// A box whose exact search is estimated at most this many guard evaluations (the product of
/// its sides' counts but the widest, which the periodic engine solves) is searched exactly.
const WIDE_EXACT: u128 = 512;

/// The joint set of a box too wide to enumerate (sizes claimed up to `2^63 - 1`), decided by
/// bounds: each guard's interval over a box ([`crate::bounds`]) says it holds at every point
/// (dropped for the box), fails at every point (the box is empty), or neither. A box with
/// guards left is searched exactly when it is small enough ([`WIDE_EXACT`]: near the small
/// corner, or one wide size under the periodic engine), else split in two along its widest size
/// that a guard left mentions. Products of monotone floor terms (`(1 + (h-1)//2)*(1 + (w-1)//2)
/// != 1`, `(h//4)*max(1, w//4) > 1`) hold on every box past a small corner, so an answer over
/// `2..2^63-1` costs about what `96..1024` costs. Past [`WIDE_BOXES`] boxes or the budget's
/// time, the boxes left are reported undecided (the first size's values they hold, with every
/// value of the others); what was decided stays exact. `None` when nothing could be decided
/// (the caller reports the whole box undecided).
fn solve_wide(
    names: &[String],
    domains: &[DimSet],
    guards: &[Expr],
    budget: &Budget,
) -> Option<JointSet> {
    use crate::bounds::{truth, Bounds, Tri};
    let start = Instant::now();
    let n = names.len();
    if n > 64 {
        return None;
    }
    let mut stats = Stats::default();
    let mut decided: Vec<Vec<DimSet>> = Vec::new();
    let mut open: Vec<Vec<DimSet>> = Vec::new();
    let mut why: Option<String> = None;
    let all: Vec<usize> = (0..guards.len()).collect();
    let masks: Vec<u128> = guards
        .iter()
        .map(|g| {
            g.atoms()
                .iter()
                .filter_map(|a| names.iter().position(|nm| **nm == **a))
                .fold(0u128, |m, i| m | 1 << i)
        })
        .collect();
    let mut stack: Vec<(Vec<DimSet>, Vec<usize>)> = vec![(domains.to_vec(), all)];
    let mut examined = 0usize;
    while let Some((sides, live)) = stack.pop() {
        if sides.iter().any(DimSet::is_empty) {
            continue;
        }
        examined += 1;
        stats.points += 1;
        if examined > WIDE_HOPELESS && decided.is_empty() {
            // Nothing decided so far: bounds do not reach these guards.
            return None;
        }
        let out_of_time =
            start.elapsed() > budget.time.min(WIDE_TIME) || crate::budget::expired().is_some();
        if examined > WIDE_BOXES || out_of_time {
            why.get_or_insert_with(|| match crate::budget::expired() {
                Some(e) => e.reason(),
                None if out_of_time => format!(
                    "the time budget of {:.1} s ran out",
                    budget.time.min(WIDE_TIME).as_secs_f64()
                ),
                None => format!("more than {WIDE_BOXES} boxes of sizes were needed"),
            });
            open.push(sides);
            continue;
        }
        let env: std::collections::BTreeMap<&str, Bounds> = names
            .iter()
            .zip(&sides)
            .map(|(nm, s)| {
                (
                    nm.as_str(),
                    Bounds::range(s.min().unwrap_or(0), s.max().unwrap_or(0)),
                )
            })
            .collect();
        let mut left = Vec::new();
        let mut empty = false;
        for &g in &live {
            match truth(&guards[g], &env) {
                Tri::True => {}
                Tri::False => {
                    empty = true;
                    break;
                }
                Tri::Unknown => left.push(g),
            }
        }
        if empty {
            continue;
        }
        if left.is_empty() {
            decided.push(sides);
            continue;
        }
        let mentioned: Vec<usize> = (0..n)
            .filter(|&i| left.iter().any(|&g| masks[g] & (1 << i) != 0))
            .collect();
        let widest = mentioned
            .iter()
            .copied()
            .max_by_key(|&i| sides[i].count())
            .unwrap_or(0);
        let work = mentioned
            .iter()
            .filter(|&&i| i != widest)
            .fold(1u128, |a, &i| a.saturating_mul(sides[i].count()));
        // Split a size a guard left mentions at the middle of its values: the one whose halves
        // decide the most guards (the widest among equals).
        let bounds_of = |sides: &[DimSet]| -> std::collections::BTreeMap<&str, Bounds> {
            names
                .iter()
                .zip(sides)
                .map(|(nm, s)| {
                    (
                        nm.as_str(),
                        Bounds::range(s.min().unwrap_or(0), s.max().unwrap_or(0)),
                    )
                })
                .collect()
        };
        let halves = |i: usize, at: i128| -> (Vec<DimSet>, Vec<DimSet>) {
            let s = &sides[i];
            let mut a = sides.clone();
            a[i] = s.clip(i128::MIN, at - 1);
            let mut b = sides.clone();
            b[i] = s.clip(at, i128::MAX);
            (a, b)
        };
        let decided_in = |half: &[DimSet], among: &[usize]| -> Vec<usize> {
            let env = bounds_of(half);
            among
                .iter()
                .copied()
                .filter(|&g| truth(&guards[g], &env) != Tri::Unknown)
                .collect()
        };
        // For each size, the least `t` such that the box with this size in `t..` decides as many
        // guards as its last value alone (bounds are monotone in the box, so a binary search
        // finds it): a split there leaves a decided tail and the corner.
        let mut best: Option<(usize, u128, Vec<DimSet>, Vec<DimSet>)> = None;
        for &i in &mentioned {
            let s = &sides[i];
            let (Some(lo), Some(hi)) = (s.min(), s.max()) else {
                continue;
            };
            if lo == hi {
                continue;
            }
            // Only the guards its last value decides can be decided by a tail.
            let reach = decided_in(&halves(i, hi).1, &left);
            let target = reach.len();
            let tail = |t: i128| decided_in(&halves(i, t).1, &reach).len();
            let (a, b, score) = if target == 0 {
                let mid = lo + (hi - lo) / 2;
                let (a, b) = halves(i, mid + 1);
                (a, b, 0)
            } else {
                let (mut l, mut h) = (lo + 1, hi);
                while l < h {
                    let m = l + (h - l) / 2;
                    if tail(m) >= target {
                        h = m;
                    } else {
                        l = m + 1;
                    }
                }
                let (a, b) = halves(i, l);
                (a, b, target)
            };
            let key = (score, s.count());
            if best.as_ref().is_none_or(|(s0, c0, _, _)| key > (*s0, *c0)) {
                best = Some((score, s.count(), a, b));
            }
        }
        if work <= WIDE_EXACT
            && best
                .as_ref()
                .is_none_or(|(score, ..)| *score == 0 || work <= 16)
        {
            let sub: Vec<Expr> = left.iter().map(|&g| guards[g].clone()).collect();
            let js = search(names, &sides, &sub, budget, false);
            stats.periodic_solves += js.stats.periodic_solves;
            stats.points += js.stats.points;
            let (boxes, complete) = js.tree.boxes(WIDE_BOXES);
            if js.undecided.is_some() || !complete {
                why.get_or_insert_with(|| {
                    js.undecided
                        .as_ref()
                        .map_or("a box has too many pieces".to_string(), |u| {
                            u.reason.clone()
                        })
                });
                open.push(sides);
                continue;
            }
            for b in boxes {
                let mut out = sides.clone();
                for (l, side) in b.into_iter().enumerate() {
                    if let Some(i) = names.iter().position(|nm| *nm == js.sizes[l]) {
                        out[i] = side;
                    }
                }
                decided.push(out);
            }
            continue;
        }
        let Some((_, _, a, b)) = best else {
            why.get_or_insert_with(|| "a guard is outside the bounds' rules".to_string());
            open.push(sides);
            continue;
        };
        stack.push((b, left.clone()));
        stack.push((a, left));
    }
    if decided.is_empty() && !open.is_empty() {
        return None;
    }
    // The undecided region: the first size's values of the boxes left, with every value of
    // the others (what [`Undecided`] holds); decided boxes lose those values.
    let mut u0 = DimSet::empty();
    for b in &open {
        u0 = union(&u0, &b[0]).ok()?;
    }
    let mut kept = Vec::with_capacity(decided.len());
    for mut b in decided {
        if !u0.is_empty() {
            b[0] = minus(&b[0], &u0).ok()?;
        }
        if !b.iter().any(DimSet::is_empty) {
            kept.push(b);
        }
    }
    let tree = from_boxes(&kept, n).ok()?;
    let undecided = (!u0.is_empty()).then(|| {
        let mut sides = domains.to_vec();
        sides[0] = u0.clone();
        let count = Tree::full(&sides).count();
        Undecided {
            reason: why.clone().unwrap_or_default(),
            sides,
            count,
        }
    });
    Some(JointSet {
        sizes: names.to_vec(),
        domains: domains.to_vec(),
        tree,
        undecided,
        stats,
    })
}

/// The tree of a union of disjoint boxes (one side per level, `levels` levels), or an error
/// ([`Exact`]).
fn from_boxes(boxes: &[Vec<DimSet>], levels: usize) -> Exact<Tree> {
    let refs: Vec<&[DimSet]> = boxes.iter().map(|b| b.as_slice()).collect();
    from_box_refs(&refs, levels)
}

fn from_box_refs(boxes: &[&[DimSet]], levels: usize) -> Exact<Tree> {
    crate::budget::check()?;
    if levels <= 1 {
        return union_all(boxes.iter().map(|b| Ok(b[0].clone()))).map(Tree::Leaf);
    }
    // The first level's values, cut into pieces that each lie in the same boxes.
    let mut atoms: Vec<(DimSet, Vec<usize>)> = Vec::new();
    for (i, b) in boxes.iter().enumerate() {
        let mut rest = b[0].clone();
        let mut next = Vec::with_capacity(atoms.len() + 1);
        for (a, idx) in atoms {
            if rest.is_empty() {
                next.push((a, idx));
                continue;
            }
            let both = inter(&a, &rest)?;
            if both.is_empty() {
                next.push((a, idx));
                continue;
            }
            let only = minus(&a, &both)?;
            rest = minus(&rest, &both)?;
            let mut with = idx.clone();
            with.push(i);
            next.push((both, with));
            if !only.is_empty() {
                next.push((only, idx));
            }
        }
        if !rest.is_empty() {
            next.push((rest, vec![i]));
        }
        atoms = next;
    }
    let mut out: Vec<(DimSet, Tree)> = Vec::new();
    for (a, idx) in atoms {
        let tails: Vec<&[DimSet]> = idx.iter().map(|&i| &boxes[i][1..]).collect();
        let child = from_box_refs(&tails, levels - 1)?;
        if !child.is_empty() {
            push_group(&mut out, a, child)?;
        }
    }
    Ok(Tree::Node(out))
}

/// The order of the sizes with the least estimated work, and that work (guard evaluations).
fn plan(n: usize, domains: &[DimSet], gs: &[G], budget: &Budget) -> (Vec<usize>, f64) {
    let mut best: Option<(f64, Vec<usize>)> = None;
    let mut perm: Vec<usize> = (0..n).collect();
    let mut consider = |order: &[usize]| {
        let mut prefixes = 1.0f64;
        let mut cost = 0.0f64;
        let mut bound = 0u64;
        for (l, &i) in order.iter().enumerate() {
            bound |= 1 << i;
            let size = domains[i].count() as f64;
            let here: Vec<&G> = gs
                .iter()
                .filter(|g| g.mask & bound == g.mask && g.mask & (1 << i) != 0)
                .collect();
            let rate: f64 = here.iter().map(|g| g.pass).product();
            if l + 1 == order.len() {
                let enumerate = prefixes * size * (1.0 + here.len() as f64 * 0.2);
                let periodic = prefixes * here.len() as f64 * 400.0;
                cost += if domains[i].count() <= budget.inner_enumeration {
                    enumerate.min(periodic)
                } else {
                    periodic
                };
            } else {
                cost += prefixes * size * (1.0 + here.len() as f64 * 0.2);
                prefixes *= size * rate;
            }
        }
        if best.as_ref().is_none_or(|(c, _)| cost < *c) {
            best = Some((cost, order.to_vec()));
        }
    };
    if n <= 6 {
        permutations(&mut perm, 0, &mut consider);
    } else {
        // Many sizes: narrowest first, widest last.
        perm.sort_by_key(|&i| domains[i].count());
        consider(&perm);
    }
    best.map(|(c, o)| (o, c))
        .unwrap_or_else(|| ((0..n).collect(), f64::INFINITY))
}

fn permutations(v: &mut Vec<usize>, k: usize, f: &mut impl FnMut(&[usize])) {
    if k == v.len() {
        f(v);
        return;
    }
    for i in k..v.len() {
        v.swap(k, i);
        permutations(v, k + 1, f);
        v.swap(k, i);
    }
}

/// A count of values or combinations for people: the number, or "more than 3.4e38" when it
/// saturated at `u128::MAX` (ranges of sizes with no bound, multiplied).
pub fn count_text(n: u128) -> String {
    if n == u128::MAX {
        "more than 3.4e38".to_string()
    } else {
        n.to_string()
    }
}

/// A set in a few words: `1..32`, `64..512 step 32`, `7 values in 96..1024`.
pub fn brief(s: &DimSet) -> String {
    match (s.min(), s.max(), s.as_progression()) {
        (None, _, _) | (_, None, _) => "no value".to_string(),
        (Some(a), Some(b), _) if a == b => a.to_string(),
        (Some(a), Some(b), Some(p)) if p.modulus == 1 => format!("{a}..{b}"),
        (Some(a), Some(b), Some(p)) => format!("{a}..{b} step {}", p.modulus),
        (Some(a), Some(b), None) => format!("{} values in {a}..{b}", count_text(s.count())),
    }
}

impl JointSet {
    /// Levels whose values combine freely with the rest: every box of the joint set has that
    /// level's whole projection, of more than one value, as its side.
    pub fn free_levels(&self) -> Vec<bool> {
        self.free_sides().iter().map(Option::is_some).collect()
    }

    /// For each level, its projection when the level is free ([`JointSet::free_levels`]).
    fn free_sides(&self) -> Vec<Option<DimSet>> {
        let (boxes, complete) = self.tree.boxes(10_000);
        (0..self.sizes.len())
            .map(|l| {
                let proj = self.tree.projection(l).ok()?;
                (complete && proj.count() > 1 && boxes.iter().all(|b| b[l] == proj)).then_some(proj)
            })
            .collect()
    }

    /// The joint set in one sentence, with `labels` naming each size (by name) and sizes listed
    /// in the order of `labels`: "x[2] and x[3] are linked: this program accepts 1 (x[2], x[3])
    /// pair, 224x224, for x[0] in 1..32: export it static".
    pub fn summary(&self, labels: &[(String, String)]) -> String {
        let label = |l: usize| {
            labels
                .iter()
                .find(|(n, _)| *n == self.sizes[l])
                .map_or(self.sizes[l].clone(), |(_, t)| t.clone())
        };
        let rank_of = |l: usize| {
            labels
                .iter()
                .position(|(n, _)| *n == self.sizes[l])
                .unwrap_or(usize::MAX)
        };
        let free = self.free_sides();
        let side = |l: usize| free[l].clone().unwrap_or_default();
        let mut linked: Vec<usize> = (0..self.sizes.len())
            .filter(|&l| free[l].is_none())
            .collect();
        linked.sort_by_key(|&l| rank_of(l));
        let mut frees: Vec<usize> = (0..self.sizes.len())
            .filter(|&l| free[l].is_some())
            .collect();
        frees.sort_by_key(|&l| rank_of(l));
        let count = self.count();
        if count == 0 {
            let what = if self.undecided.is_some() {
                "no combination of the decided part"
            } else {
                "no combination"
            };
            return format!(
                "{} are linked: {what} of the claimed sizes passes every guard",
                join_and(&(0..self.sizes.len()).map(label).collect::<Vec<_>>())
            );
        }
        if linked.is_empty() {
            let names = join_and(&frees.iter().map(|&l| label(l)).collect::<Vec<_>>());
            let sides = frees
                .iter()
                .map(|&l| format!("{} in {}", label(l), brief(&side(l))))
                .collect::<Vec<_>>()
                .join(", ");
            return if count < self.box_count() && self.undecided.is_none() {
                // One box, narrower than the sizes' own answers.
                format!("{names} are linked: this program accepts every combination of {sides}, and no other")
            } else {
                format!("the guards linking {names} hold for every combination of their accepted values: {sides}")
            };
        }
        let free_count: u128 = frees.iter().map(|&l| side(l).count()).product();
        // A saturated count: the quotient is only a lower bound.
        let tuples = if count == u128::MAX && free_count <= 1 {
            u128::MAX
        } else {
            count / free_count.max(1)
        };
        let names: Vec<String> = linked.iter().map(|&l| label(l)).collect();
        let kind = match linked.len() {
            1 => "value",
            2 => "pair",
            3 => "triple",
            _ => "combination",
        };
        let plural = if tuples == 1 { "" } else { "s" };
        let tuple_names = if linked.len() == 1 {
            names[0].clone()
        } else {
            format!("({})", names.join(", "))
        };
        let for_free = if frees.is_empty() {
            String::new()
        } else {
            format!(
                ", for {}",
                frees
                    .iter()
                    .map(|&l| format!("{} in {}", label(l), brief(&side(l))))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        let at_least = if (self.undecided.is_some() || count == u128::MAX) && tuples != u128::MAX {
            "at least "
        } else {
            ""
        };
        let head = if linked.len() == 1 {
            format!(
                "{} is linked to {}",
                names[0],
                join_and(&frees.iter().map(|&l| label(l)).collect::<Vec<_>>())
            )
        } else {
            format!("{} are linked", join_and(&names))
        };
        if tuples <= 3 {
            // List them, in the labels' order.
            let sub = self.linked_tuples(&linked, 3);
            let listed: Vec<String> = sub
                .iter()
                .map(|t| {
                    t.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join("x")
                })
                .collect();
            let advice = if tuples == 1 {
                "export it static".to_string()
            } else {
                format!("export once per {kind}, or pad inputs to one of them")
            };
            format!(
                "{head}: this program accepts {at_least}{tuples} {tuple_names} {kind}{plural}, {}{for_free}: {advice}",
                listed.join(", ")
            )
        } else {
            format!(
                "{head}: this program accepts {at_least}{} {tuple_names} {kind}{plural}{for_free}",
                count_text(tuples)
            )
        }
    }

    /// Distinct tuples of the `levels` (in that order) occurring in the joint set, at most `n`.
    fn linked_tuples(&self, levels: &[usize], n: usize) -> Vec<Vec<i128>> {
        let mut out: Vec<Vec<i128>> = Vec::new();
        for t in self.tree.examples(10_000) {
            let sub: Vec<i128> = levels.iter().map(|&l| t[l]).collect();
            if !out.contains(&sub) {
                out.push(sub);
                if out.len() >= n {
                    break;
                }
            }
        }
        out.sort();
        out
    }
}

/// Every tuple of the box `sides` (one set per level), listed: for small boxes only.
pub fn tuples(sides: &[DimSet]) -> Vec<Vec<i128>> {
    let mut out = vec![vec![]];
    for d in sides {
        out = out
            .into_iter()
            .flat_map(|t| {
                d.iter().map(move |x| {
                    let mut t = t.clone();
                    t.push(x);
                    t
                })
            })
            .collect();
    }
    out
}

fn join_and(v: &[String]) -> String {
    match v {
        [] => String::new(),
        [a] => a.clone(),
        [a @ .., b] => format!("{} and {b}", a.join(", ")),
    }
}

// ---------------------------------------------------------------------------------------------
// The largest box.

/// The largest box inside a joint set: one progression per size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LargestBox {
    /// One side per size, in the joint set's level order.
    pub sides: Vec<Progression>,
    /// Number of tuples (the product of the sides' counts).
    pub count: u128,
    /// Whether no box of progressions inside the joint set has more tuples (false when the
    /// search ran out of its budget or a set was too large to search every step).
    pub maximal: bool,
}

/// A box through `point` (one value per level, in level order) inside `tree`: every tuple of it
/// is in the joint set, and it is maximal by inclusion: no side can take one more value (the
/// next of its progression at either end; for a side of one value, any other value) and stay
/// inside. Built side by side from the point: each side is the longest progression through the
/// point's value inside the values that fit with the sides chosen so far ([`fits`]); the sides
/// chosen later only narrow what fits, so no side can grow at the end. Every order of the
/// levels is tried (the first and reverse order past three levels) and the box with the most
/// tuples kept. `None` when the point is not in the tree. Not claimed largest (`maximal: false`):
/// it is the spec to use when the largest box leaves out the traced sizes (torch refuses a spec
/// that excludes its example inputs). A set operation with no closed form, or the deadline of
/// the thread's [`crate::budget`], leaves a side as it is (still sound; then maybe not maximal).
pub fn box_through(tree: &Tree, point: &[i128]) -> Option<LargestBox> {
    if point.is_empty() || !tree.contains(point) {
        return None;
    }
    let n = point.len();
    let mut orders: Vec<Vec<usize>> = Vec::new();
    if n <= 3 {
        permutations(&mut (0..n).collect(), 0, &mut |o: &[usize]| {
            orders.push(o.to_vec())
        });
    } else {
        orders.push((0..n).collect());
        orders.push((0..n).rev().collect());
    }
    let mut best: Option<LargestBox> = None;
    for order in orders {
        let mut sides: Vec<Progression> = point.iter().map(|&x| normalized(x, x, 1)).collect();
        for &l in &order {
            let sets: Vec<DimSet> = sides.iter().map(Progression::to_set).collect();
            if let Ok(p) = fits(tree, &sets, l).and_then(|s| side_through(&s, point[l])) {
                sides[l] = p;
            }
        }
        let count = sides.iter().fold(1u128, |c, p| c.saturating_mul(p.count()));
        if best.as_ref().is_none_or(|b| count > b.count) {
            best = Some(LargestBox {
                sides,
                count,
                maximal: false,
            });
        }
        if crate::budget::expired().is_some() {
            break;
        }
    }
    best
}

/// The values `v` such that the box `sides` (one set per level, the point's tuple among them)
/// with side `level` replaced by `{v}` lies inside `tree`, or an error ([`Exact`]).
fn fits(tree: &Tree, sides: &[DimSet], level: usize) -> Exact<DimSet> {
    crate::budget::check()?;
    match (tree, sides) {
        (Tree::Leaf(s), [_]) if level == 0 => Ok(s.clone()),
        (Tree::Node(groups), [_, rest @ ..]) if level == 0 => {
            let mut out = DimSet::empty();
            for (s, c) in groups {
                if holds_box(c, rest)? {
                    out = union(&out, s)?;
                }
            }
            Ok(out)
        }
        (Tree::Node(groups), [first, rest @ ..]) => {
            // Every value of this level's side must lead to a continuation where `v` fits.
            let mut covered = 0u128;
            let mut acc: Option<DimSet> = None;
            for (s, c) in groups {
                let part = inter(s, first)?;
                if part.is_empty() {
                    continue;
                }
                covered = covered.saturating_add(part.count());
                let f = fits(c, rest, level - 1)?;
                let next = match acc {
                    None => f,
                    Some(a) => inter(&a, &f)?,
                };
                if next.is_empty() {
                    return Ok(next);
                }
                acc = Some(next);
            }
            Ok(match acc {
                Some(a) if covered == first.count() => a,
                _ => DimSet::empty(),
            })
        }
        _ => Ok(DimSet::empty()),
    }
}

/// Whether every tuple of the box `sides` is in `tree`, or an error ([`Exact`]).
fn holds_box(tree: &Tree, sides: &[DimSet]) -> Exact<bool> {
    crate::budget::check()?;
    match (tree, sides) {
        (Tree::Leaf(s), [side]) => Ok(minus(side, s)?.is_empty()),
        (Tree::Node(groups), [first, rest @ ..]) => {
            let mut covered = 0u128;
            for (s, c) in groups {
                let part = inter(s, first)?;
                if part.is_empty() {
                    continue;
                }
                covered = covered.saturating_add(part.count());
                if !holds_box(c, rest)? {
                    return Ok(false);
                }
            }
            Ok(covered == first.count())
        }
        _ => Ok(false),
    }
}

/// The progression through `x` inside `set` with the most values: among the steps of the
/// largest progressions of `set`, step 1, and the distance to the nearest other member (so a
/// side of one value means `set` has no other), each run as far as `set` allows ([`run`]).
fn side_through(set: &DimSet, x: i128) -> Exact<Progression> {
    let mut steps: Vec<i128> = rank(set, Some(x), 16)
        .progressions
        .iter()
        .map(|p| p.modulus)
        .collect();
    steps.push(1);
    let near = [
        x.checked_add(1).and_then(|y| set.next_at_least(y)),
        x.checked_sub(1).and_then(|y| set.prev_at_most(y)),
    ];
    steps.extend(
        near.iter()
            .flatten()
            .filter_map(|y| y.checked_sub(x)?.checked_abs()),
    );
    steps.sort_unstable();
    steps.dedup();
    let mut best: Option<Progression> = None;
    for m in steps.into_iter().filter(|&m| m >= 1) {
        let p = run(set, x, m)?;
        if best.is_none_or(|b| p.count() > b.count()) {
            best = Some(p);
        }
    }
    Ok(best.unwrap_or(normalized(x, x, 1)))
}

/// The longest progression of step `m` through `x` (a member of `set`) inside `set`: up to
/// just before its first value past `x` that `set` misses, and down likewise.
fn run(set: &DimSet, x: i128, m: i128) -> Exact<Progression> {
    let r = x.rem_euclid(m);
    let (Some(min), Some(max)) = (set.min(), set.max()) else {
        return Ok(normalized(x, x, 1));
    };
    let hi = match x.checked_add(m) {
        Some(up) if up <= max => {
            let q = DimSet::progression(up, max, m, r);
            match minus(&q, set)?.min() {
                Some(miss) => miss - m,
                None => q.max().unwrap_or(x),
            }
        }
        _ => x,
    };
    let lo = match x.checked_sub(m) {
        Some(down) if down >= min => {
            let q = DimSet::progression(min, down, m, r);
            match minus(&q, set)?.max() {
                Some(miss) => miss + m,
                None => q.min().unwrap_or(x),
            }
        }
        _ => x,
    };
    Ok(normalized(lo, hi, m))
}

struct BoxSearch {
    work: usize,
    limit: usize,
    maximal: bool,
}

/// The box (one progression per level) inside `tree` with the most tuples.
pub fn largest_box(tree: &Tree, budget: &Budget) -> Option<LargestBox> {
    let mut bs = BoxSearch {
        work: 0,
        limit: budget.box_work,
        maximal: true,
    };
    let (count, sides) = bs.best(tree, 0)?;
    Some(LargestBox {
        sides,
        count,
        maximal: bs.maximal,
    })
}

impl BoxSearch {
    fn best(&mut self, tree: &Tree, floor: u128) -> Option<(u128, Vec<Progression>)> {
        self.work += 1;
        match tree {
            Tree::Leaf(s) => {
                let r = rank(s, None, 1);
                if r.maximality != Maximality::Proven {
                    self.maximal = false;
                }
                let p = *r.progressions.first()?;
                Some((p.count(), vec![p]))
            }
            Tree::Node(groups) => {
                let m = groups.len();
                let mut best: Option<(u128, Vec<Progression>)> = None;
                let mut floor = floor;
                // Subsets of groups: the progression lies in the union of their sets, and the
                // rest of the box in the intersection of their continuations.
                let exhaustive = m <= 12;
                // Past 12 groups only single groups and the chain of nested continuations
                // (`chain`) are tried: still every box when no two groups' continuations meet
                // (a box spanning groups needs a common continuation).
                if !exhaustive
                    && (m > 256
                        || (0..m).any(|i| {
                            // Past the deadline: not known, so not claimed maximal.
                            (i + 1..m).any(|j| {
                                crate::budget::expired().is_some()
                                    || groups[i]
                                        .1
                                        .intersect(&groups[j].1)
                                        .is_ok_and(|t| !t.is_empty())
                            })
                        }))
                {
                    self.maximal = false;
                }
                if !exhaustive {
                    self.chain(groups, &mut floor, &mut best);
                }
                // Values of groups i.. in all: with those of the groups chosen, a bound on the
                // first side of every box the subsets still to come from a stack entry give
                // (a sum of counts, never below the union's, so the bound prunes soundly).
                let mut after = vec![0u128; m + 1];
                for i in (0..m).rev() {
                    after[i] = after[i + 1].saturating_add(groups[i].0.count());
                }
                let mut stack: Vec<(usize, Vec<usize>, Tree)> = Vec::new();
                for (i, (_, c)) in groups.iter().enumerate() {
                    stack.push((i, vec![i], c.clone()));
                }
                while let Some((last, chosen, t)) = stack.pop() {
                    if self.out_of_work() {
                        break;
                    }
                    let rest = chosen.iter().fold(after[last + 1], |a, &i| {
                        a.saturating_add(groups[i].0.count())
                    });
                    let t_count = t.count();
                    if rest.saturating_mul(t_count) <= floor {
                        continue;
                    }
                    // A union with no closed form within the budget: that subset of groups is
                    // skipped (the box found stays sound, maybe not largest).
                    let Ok(union) = union_all(chosen.iter().map(|&i| Ok(groups[i].0.clone())))
                    else {
                        self.maximal = false;
                        continue;
                    };
                    self.consider(&union, &t, &mut floor, &mut best);
                    if exhaustive {
                        for (j, (_, cj)) in groups.iter().enumerate().skip(last + 1) {
                            let Ok(t2) = t.intersect(cj) else {
                                self.maximal = false;
                                continue;
                            };
                            if !t2.is_empty() {
                                let mut c2 = chosen.clone();
                                c2.push(j);
                                stack.push((j, c2, t2));
                            }
                        }
                    }
                }
                best
            }
        }
    }

    /// Past the work limit or the deadline: the search stops, and what it found is not claimed
    /// maximal.
    fn out_of_work(&mut self) -> bool {
        let out = self.work > self.limit || crate::budget::expired().is_some();
        if out {
            self.maximal = false;
        }
        out
    }

    /// The best box whose first side lies in `union` (values of groups whose continuations all
    /// hold `t`) and whose other sides lie in `t`; kept in `best` when it beats `floor`.
    fn consider(
        &mut self,
        union: &DimSet,
        t: &Tree,
        floor: &mut u128,
        best: &mut Option<(u128, Vec<Progression>)>,
    ) {
        let t_count = t.count();
        if union.count().saturating_mul(t_count) <= *floor {
            return;
        }
        let r = rank(union, None, 1);
        if r.maximality != Maximality::Proven {
            self.maximal = false;
        }
        let Some(p) = r.progressions.first().copied() else {
            return;
        };
        let need = *floor / p.count().max(1);
        let Some((c, sides)) = self.best(t, need) else {
            return;
        };
        let score = c.saturating_mul(p.count());
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            *floor = (*floor).max(score);
            let mut all = vec![p];
            all.extend(sides);
            *best = Some((score, all));
        }
    }

    /// Past 12 groups not every subset is tried; this chain adds the groups in decreasing order
    /// of their continuation's size, intersecting the continuations as it goes, and considers the
    /// box of every prefix. When the continuations are nested (a guard like `h * w <= N`: the
    /// smaller `h`, the more `w` pass) the largest box is among them; before the chain, a
    /// 2,047-pair box `h = 32` was all that 993 groups of `h * w <= 65536` gave, where
    /// `32..256 x 2..256` holds 57,375.
    fn chain(
        &mut self,
        groups: &[(DimSet, Tree)],
        floor: &mut u128,
        best: &mut Option<(u128, Vec<Progression>)>,
    ) {
        let counts: Vec<u128> = groups.iter().map(|(_, c)| c.count()).collect();
        let mut order: Vec<usize> = (0..groups.len()).collect();
        order.sort_by_key(|&i| (std::cmp::Reverse(counts[i]), groups[i].0.min()));
        // The union never holds more values than all groups together: with the continuation
        // only shrinking, a prefix whose bound cannot beat the floor ends the chain.
        let total = groups
            .iter()
            .fold(0u128, |a, (s, _)| a.saturating_add(s.count()));
        let mut values = DimSet::empty();
        let mut t: Option<Tree> = None;
        for &i in &order {
            self.work += 1;
            if self.out_of_work() {
                return;
            }
            let next = match &t {
                None => Ok(groups[i].1.clone()),
                Some(t) => t.intersect(&groups[i].1),
            };
            let (Ok(next), Ok(more)) = (next, union(&values, &groups[i].0)) else {
                self.maximal = false;
                return;
            };
            if next.is_empty() || total.saturating_mul(next.count()) <= *floor {
                return;
            }
            values = more;
            self.consider(&values, &next, floor, best);
            t = Some(next);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(60))]
        /// Periodic joint sets (steps above 1): the box through a point holds it, lies inside the
        /// set, and no side can take one more value.
        #[test]
        fn the_box_through_a_point_of_a_periodic_set_is_sound_and_maximal(a in 1i128..12, b in 1i128..12, k in 2i128..9, x in 1i128..40, y in 1i128..40) {
            let guards = vec![g(&format!("((x // {a}) * (y // {b})) % {k} == 0"))];
            let names = names(&["x", "y"]);
            let domains = vec![DimSet::interval(1, 40), DimSet::interval(1, 40)];
            let j = solve_joint(&names, &domains, &guards, &Budget::default());
            box_through_oracle(&j, &names, &guards, &domains, &reorder(&j, &names, &[x, y]))?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        /// Random guard systems over two and three sizes on small boxes, every point of the
        /// joint set: the box through it holds it, lies inside the set (brute force), and is
        /// maximal by inclusion: no side takes one more value (the next of its progression at
        /// either end; for a side of one value, any other value of its domain) and stays inside.
        #[test]
        fn the_box_through_a_point_is_sound_and_maximal(
            ks in proptest::collection::vec((0usize..11, 2i128..5, 0i128..5), 1..4),
            three in any::<bool>(),
            lo in 1i128..4, wa in 1i128..7, wb in 1i128..7, wc in 0i128..3,
        ) {
            let (n, gs, doms) = system(&ks, three, lo, [wa, wb, wc]);
            let js = solve_joint(&n, &doms, &gs, &Budget::default());
            prop_assert!(js.undecided.is_none());
            let level_doms: Vec<DimSet> = js.sizes.iter().map(|s| doms[n.iter().position(|x| x == s).unwrap()].clone()).collect();
            for point in tuples(&level_doms) {
                box_through_oracle(&js, &n, &gs, &doms, &point)?;
            }
        }
    }

    /// [`box_through`] at `point` (in level order) against brute force over the domains (in
    /// `names` order): a box exactly when the point passes; the box holds the point, lies inside
    /// the set, and no side can take one more value (the next of its progression at either end;
    /// for a side of one value, any other value of its domain) and stay inside.
    fn box_through_oracle(
        js: &JointSet,
        names: &[String],
        guards: &[Expr],
        domains: &[DimSet],
        point: &[i128],
    ) -> Result<(), TestCaseError> {
        let level_doms: Vec<DimSet> = js
            .sizes
            .iter()
            .map(|s| domains[names.iter().position(|x| x == s).unwrap()].clone())
            .collect();
        let inside = |t: &[i128]| {
            let named: Vec<i128> = names.iter().map(|s| t[js.level(s).unwrap()]).collect();
            t.iter().zip(&level_doms).all(|(x, d)| d.contains(*x))
                && holds_all(guards, names, &named)
        };
        let sound = |sides: &[DimSet]| tuples(sides).iter().all(|t| inside(t));
        let b = box_through(&js.tree, point);
        prop_assert_eq!(b.is_some(), inside(point));
        let Some(b) = b else { return Ok(()) };
        let sides: Vec<DimSet> = b.sides.iter().map(Progression::to_set).collect();
        prop_assert_eq!(b.count, sides.iter().map(DimSet::count).product::<u128>());
        for (s, x) in sides.iter().zip(point) {
            prop_assert!(s.contains(*x), "{:?} misses {:?}", b.sides, point);
        }
        prop_assert!(sound(&sides), "{:?} through {:?} fails", b.sides, point);
        for (l, p) in b.sides.iter().enumerate() {
            let more: Vec<i128> = if p.lo == p.hi {
                level_doms[l].iter().filter(|&y| y != p.lo).collect()
            } else {
                vec![p.lo - p.modulus, p.hi + p.modulus]
            };
            for y in more {
                let mut wider = sides.clone();
                wider[l] = wider[l].union(&DimSet::interval(y, y)).unwrap();
                prop_assert!(
                    !sound(&wider),
                    "{:?} through {:?}: side {} takes {} too",
                    b.sides,
                    point,
                    l,
                    y
                );
            }
        }
        Ok(())
    }

    #[test]
    fn the_box_through_a_traced_point_is_maximal() {
        // h*w <= 1024 traced at (50, 10): before, 49..51 x 2..20 (the tree's own group of h
        // values), inside 2..50 x 2..20; now a box no side of which can grow.
        let n = names(&["h", "w"]);
        let gs = vec![g("h * w <= 1024")];
        let dom = DimSet::interval(2, 64);
        let js = solve_joint(&n, &[dom.clone(), dom.clone()], &gs, &Budget::default());
        let point = reorder(&js, &n, &[50, 10]);
        let b = box_through(&js.tree, &point).unwrap();
        let side = |s: &str| b.sides[js.level(s).unwrap()];
        let (h, w) = (side("h"), side("w"));
        assert!(h.contains(50) && w.contains(10));
        assert_eq!((h.modulus, w.modulus), (1, 1));
        assert!(h.hi * w.hi <= 1024, "{h:?} {w:?}");
        // Neither side can grow: the corner past it fails (or leaves the range).
        assert!((h.hi + 1) * w.hi > 1024 || h.hi == 64);
        assert!(h.hi * (w.hi + 1) > 1024 || w.hi == 64);
        assert_eq!((h.lo, w.lo), (2, 2));
        assert!(b.count >= 49 * 19, "{b:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Guards that are down-closed in both sizes (lowering either keeps the pair accepted),
        /// over domains of up to 60 values: more than 12 groups, so not every subset of groups
        /// is tried. For such sets a box of intervals from the domains' minima is as large as any
        /// box of progressions, so the brute force over every interval box (soundness by a 2-D
        /// prefix sum of the rejected pairs) gives the largest count, which the search must reach.
        #[test]
        fn the_largest_box_of_a_down_closed_guard_is_found(
            form in 0usize..3, a in 1i128..5, b in 1i128..5, n in 20i128..1200, hi in 20i128..60,
        ) {
            let guard = match form {
                0 => format!("x * y <= {n}"),
                1 => format!("{a} * x + {b} * y <= {}", n / 8),
                _ => format!("(x // {a}) * (y // {b}) <= {}", n / 4),
            };
            let gs = vec![g(&guard)];
            let n2 = names(&["x", "y"]);
            let doms = [DimSet::interval(1, hi), DimSet::interval(1, hi)];
            let js = solve_joint(&n2, &doms, &gs, &Budget::default());
            prop_assert!(js.undecided.is_none());
            let (w, lo) = (hi as usize, 1i128);
            // rejected[i][j]: the pair (lo + i, lo + j) fails; prefix sums over it.
            let mut pre = vec![vec![0u32; w + 1]; w + 1];
            for i in 0..w {
                for j in 0..w {
                    let t = [lo + i as i128, lo + j as i128];
                    let bad = u32::from(!holds_all(&gs, &n2, &t));
                    pre[i + 1][j + 1] = bad + pre[i][j + 1] + pre[i + 1][j] - pre[i][j];
                }
            }
            let rejected = |i0: usize, i1: usize, j0: usize, j1: usize| {
                pre[i1][j1] + pre[i0][j0] - pre[i0][j1] - pre[i1][j0]
            };
            let mut best = 0u128;
            for i0 in 0..w {
                for i1 in i0 + 1..=w {
                    for j0 in 0..w {
                        for j1 in j0 + 1..=w {
                            if rejected(i0, i1, j0, j1) == 0 {
                                best = best.max(((i1 - i0) * (j1 - j0)) as u128);
                            }
                        }
                    }
                }
            }
            let b = largest_box(&js.tree, &Budget::default());
            prop_assert_eq!(b.is_none(), best == 0);
            if let Some(b) = b {
                let sides: Vec<DimSet> = b.sides.iter().map(|p| DimSet::progression(p.lo, p.hi, p.modulus, p.residue)).collect();
                for t in tuples(&sides) {
                    prop_assert!(js.tree.contains(&t), "box tuple {:?} fails {}", t, guard);
                }
                prop_assert_eq!(b.count, best, "{}: {:?}", guard, b.sides);
            }
        }
    }

    fn g(s: &str) -> Expr {
        parse_guard(s).unwrap()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn holds_all(guards: &[Expr], names: &[String], t: &[i128]) -> bool {
        let env = |a: &str| names.iter().position(|n| n == a).map(|i| t[i]);
        guards
            .iter()
            .all(|g| matches!(g.eval(&env).and_then(Value::truth), Ok(true)))
    }

    /// A tuple in `names` order, reordered to the joint set's levels.
    fn reorder(js: &JointSet, names: &[String], t: &[i128]) -> Vec<i128> {
        js.sizes
            .iter()
            .map(|s| t[names.iter().position(|n| n == s).unwrap()])
            .collect()
    }

    fn progressions(lo: i128, hi: i128) -> Vec<Progression> {
        let mut out = Vec::new();
        for a in lo..=hi {
            for step in 1..=(hi - lo).max(1) {
                for b in (a..=hi).step_by(step as usize) {
                    out.push(Progression {
                        lo: a,
                        hi: b,
                        modulus: step,
                        residue: a.rem_euclid(step),
                    });
                }
            }
        }
        out.sort_by_key(|p| (p.lo, p.hi, p.modulus));
        out.dedup_by_key(|p| (p.lo, p.hi, if p.lo == p.hi { 0 } else { p.modulus }));
        out
    }

    #[test]
    fn a_product_links_two_sizes() {
        // A 16x16-patch grid with a 14x14 position table.
        let n = names(&["h", "w"]);
        let gs = vec![g("((h - 16)//16 + 1) * ((w - 16)//16 + 1) == 196")];
        let dom = DimSet::interval(16, 1024);
        let js = solve_joint(&n, &[dom.clone(), dom.clone()], &gs, &Budget::default());
        assert!(js.undecided.is_none());
        // Grids (a, b) with a*b = 196, a, b <= 64: 4x49, 7x28, 14x14, 28x7, 49x4; 16*16 sizes each.
        assert_eq!(js.count(), 5 * 256);
        let h = js.projection("h").unwrap();
        assert!(h.contains(224) && h.contains(64) && !h.contains(16));
        assert!(js.for_all("h").unwrap().is_empty());
        let b = largest_box(&js.tree, &Budget::default()).unwrap();
        assert_eq!(b.count, 256);
        assert!(b.maximal);
        for t in js.rejected_examples(5).unwrap() {
            let t: Vec<i128> = n.iter().map(|s| t[js.level(s).unwrap()]).collect();
            assert!(!holds_all(&gs, &n, &t));
        }
    }

    #[test]
    fn a_projection_without_a_closed_form_is_an_error_not_a_guess() {
        // The multiples of 191..241 have no common period below 2^128 and 2^62 / 191 members:
        // their union is neither a closed form nor listable. Before, it was listed up to 2^22
        // members (a truncated set, and seconds of work); now it is an error the caller
        // reports as undecided.
        let n = names(&["x", "y"]);
        let gs = vec![g("x % y == 0")];
        let doms = [DimSet::interval(2, 1 << 62), DimSet::interval(191, 241)];
        let t = Instant::now();
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        assert!(js.undecided.is_none());
        assert_eq!(js.projection("y").unwrap(), doms[1]);
        // No y divides every x.
        assert!(js.for_all("y").unwrap().is_empty());
        assert!(js.projection("x").is_err());
        assert!(js.for_all("x").is_err());
        assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    }

    #[test]
    fn one_pair_for_every_batch_is_said_plainly() {
        // A conv-attention hybrid: 32x downsampling and a 7x7 position table.
        let n = names(&["b", "h", "w"]);
        let gs = vec![
            g("(h // 32) * (w // 32) == 49"),
            g("h // 32 != 49 and w // 32 != 49"),
        ];
        let doms = [
            DimSet::interval(1, 32),
            DimSet::progression(64, 2048, 32, 0),
            DimSet::progression(64, 2048, 32, 0),
        ];
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        let labels: Vec<(String, String)> = [("b", "x[0]"), ("h", "x[2]"), ("w", "x[3]")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(
            js.summary(&labels),
            "x[2] and x[3] are linked: this program accepts 1 (x[2], x[3]) pair, 224x224, for x[0] in 1..32: export it static"
        );
    }

    #[test]
    fn the_last_size_is_solved_once_per_value_of_what_its_guards_read() {
        // The last level's set depends on the other two sizes only through their product
        // (1,000-odd products for the 4,096 pairs, each solved once); the count against brute
        // force.
        let n = names(&["b", "h", "w"]);
        let gs = vec![g("b * h * w <= 4096"), g("h % 3 != 1")];
        let doms = [
            DimSet::interval(1, 64),
            DimSet::interval(1, 64),
            DimSet::interval(1, 256),
        ];
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        assert!(js.undecided.is_none(), "{:?}", js.undecided);
        let want = (1..=64i128)
            .flat_map(|b| (1..=64i128).flat_map(move |h| (1..=256i128).map(move |w| (b, h, w))))
            .filter(|&(b, h, w)| b * h * w <= 4096 && h % 3 != 1)
            .count();
        assert_eq!(js.count(), want as u128);
        assert!(js.stats.reused > 0, "{:?}", js.stats);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]
        /// One flat sum, product, minimum or maximum of all three sizes (as a parser may build
        /// `a*b*c`): the last size reads the other two through their sum (product, ...), and
        /// reuses sets across pairs with one value of it; every tuple against brute force.
        #[test]
        fn a_flat_operation_over_every_size_is_read_as_one_value(
            op in 0usize..4, k in 0i128..40, m in 2i128..5, w in 4i128..12,
        ) {
            let v = |x: &str| Expr::sym(x);
            let all = vec![v("a"), v("b"), v("c")];
            let (lhs, bound) = match op {
                0 => (Expr::Mul(all), 6 * k + 8),
                1 => (Expr::Add(all), k / 2 + 6),
                2 => (Expr::Min(all), k / 8 + 2),
                _ => (Expr::Max(all), k / 4 + 3),
            };
            let gs = vec![
                Expr::Cmp(CmpOp::Le, Box::new(lhs), Box::new(Expr::int(bound))),
                g(&format!("b % {m} != 1")),
            ];
            let n = names(&["a", "b", "c"]);
            let doms = [DimSet::interval(1, w), DimSet::interval(1, w), DimSet::interval(1, w)];
            let js = solve_joint(&n, &doms, &gs, &Budget::default());
            prop_assert!(js.undecided.is_none());
            let level_doms: Vec<DimSet> = js.sizes.iter().map(|s| doms[n.iter().position(|x| x == s).unwrap()].clone()).collect();
            for t in tuples(&level_doms) {
                let by_name: Vec<i128> = n.iter().map(|s| t[js.level(s).unwrap()]).collect();
                prop_assert_eq!(js.tree.contains(&t), holds_all(&gs, &n, &by_name), "{:?}", t);
            }
        }
    }

    #[test]
    fn a_wide_last_size_is_solved_periodically() {
        let n = names(&["h", "w"]);
        let gs = vec![g("(h + w) % 8 == 0"), g("h * w >= 40")];
        let doms = [DimSet::interval(2, 9), DimSet::interval(2, 1 << 62)];
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        assert!(js.undecided.is_none(), "{:?}", js.undecided);
        assert_eq!(js.sizes, names(&["h", "w"]));
        assert!(js.stats.periodic_solves > 0);
        let want: u128 = (2..=9i128)
            .map(|h| {
                let lo = (40 + h - 1) / h;
                DimSet::progression(lo.max(2), 1 << 62, 8, (8 - h % 8) % 8).count()
            })
            .sum();
        assert_eq!(js.count(), want);
    }

    /// Sizes claimed up to `2^63 - 1` (`Dim.AUTO`): the joint set of guards that hold past a
    /// small corner, decided by bounds over boxes; checked against the guards evaluated one
    /// tuple at a time near the corner and at sampled large sizes.
    fn unbounded_case(guards: &[&str], sizes: &[&str], lows: &[i128]) -> JointSet {
        let n = names(sizes);
        let gs: Vec<Expr> = guards.iter().map(|s| g(s)).collect();
        let doms: Vec<DimSet> = lows
            .iter()
            .map(|&lo| DimSet::interval(lo, i64::MAX as i128))
            .collect();
        let t = Instant::now();
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
        assert!(js.undecided.is_none(), "{:?}", js.undecided);
        // Exact on the box of the first 24 values of every size.
        let corner: Vec<DimSet> = lows
            .iter()
            .map(|&lo| DimSet::interval(lo, lo + 23))
            .collect();
        for t in tuples(&corner) {
            assert_eq!(
                js.tree.contains(&reorder(&js, &n, &t)),
                holds_all(&gs, &n, &t),
                "{t:?}"
            );
        }
        // Sound and exact at sampled large sizes, alone and next to the corner.
        let big = [
            1i128 << 20,
            (1 << 20) + 3,
            1 << 40,
            (1 << 40) + 1,
            i64::MAX as i128,
        ];
        for &x in &big {
            for (i, &lo) in lows.iter().enumerate() {
                for other in [lo, lo + 1, lo + 5, x] {
                    let mut t: Vec<i128> = lows.iter().map(|_| other).collect();
                    t[i] = x;
                    for (j, &l) in lows.iter().enumerate() {
                        t[j] = t[j].max(l);
                    }
                    assert_eq!(
                        js.tree.contains(&reorder(&js, &n, &t)),
                        holds_all(&gs, &n, &t),
                        "{t:?}"
                    );
                }
            }
        }
        js
    }

    #[test]
    fn products_of_monotone_floors_are_decided_over_unbounded_ranges() {
        // resnet-style stride-2 stems: only h = w = 2 makes both factors 1.
        let js = unbounded_case(
            &["((1 + (((-1) + w) // 2))*(1 + (((-1) + h) // 2))) != 1"],
            &["h", "w"],
            &[2, 2],
        );
        let side = (i64::MAX as u128) - 1;
        assert_eq!(js.count(), side * side - 1);
        assert!(!js.tree.contains(&[2, 2]));
        // A stride-4 stem and a clamped side: h//4 == 1 needs w >= 8.
        let js = unbounded_case(&["(h // 4)*max(1, w // 4) > 1"], &["h", "w"], &[2, 2]);
        assert!(js
            .tree
            .contains(&reorder(&js, &names(&["h", "w"]), &[4, 8])));
        assert!(!js
            .tree
            .contains(&reorder(&js, &names(&["h", "w"]), &[4, 7])));
        // Three sizes, a batch among them.
        unbounded_case(
            &[
                "b*(h // 16)*(w // 16) >= 2",
                "(h // 16) * w >= 40",
                "min(h, w) // 16 != 3",
            ],
            &["b", "h", "w"],
            &[1, 16, 16],
        );
    }

    #[test]
    fn the_budget_returns_a_partial_answer() {
        let n = names(&["h", "w"]);
        let gs = vec![g("(h * w) % 7 != 3")];
        let doms = [DimSet::interval(1, 1 << 40), DimSet::interval(1, 1 << 40)];
        let budget = Budget {
            time: Duration::from_millis(50),
            work: f64::INFINITY,
            ..Budget::default()
        };
        let t0 = Instant::now();
        let js = solve_joint(&n, &doms, &gs, &budget);
        assert!(t0.elapsed() < Duration::from_secs(5));
        let u = js.undecided.as_ref().expect("stopped");
        assert!(u.reason.contains("time budget"), "{}", u.reason);
        // Decided part and undecided region are disjoint and cover the box.
        let cut = u.sides[0].min().unwrap();
        assert!(js.tree.projection(0).unwrap().max().is_none_or(|m| m < cut));
        for t in js.tree.examples(50) {
            let t: Vec<i128> = n.iter().map(|s| t[js.level(s).unwrap()]).collect();
            assert!(holds_all(&gs, &n, &t));
        }
    }

    #[test]
    fn a_search_stopped_at_its_share_says_so() {
        // The joint search takes 60% of the time left, leaving the rest to the boxes and
        // projections built from its tree. Before, stopping there gave the reason "the time
        // budget of 1 s ran out", with 40% of it left.
        let _b = crate::budget::enter(crate::budget::Budget {
            time: Some(Duration::from_secs(1)),
            ..Default::default()
        });
        let n = names(&["h", "w"]);
        let gs = vec![g("(h * w) % 7 != 3")];
        let doms = [DimSet::interval(1, 1 << 40), DimSet::interval(1, 1 << 40)];
        let budget = Budget {
            work: f64::INFINITY,
            ..Budget::default()
        };
        let js = solve_joint(&n, &doms, &gs, &budget);
        let left = crate::budget::remaining().unwrap();
        let u = js.undecided.as_ref().expect("stopped");
        assert!(
            left > Duration::ZERO,
            "stopped at the deadline, not at the share"
        );
        assert_eq!(
            u.reason,
            "the joint search stopped at its share (60% of the time left) of the time budget of 1 s, leaving the rest to report what it found (raise the budget with --time-budget, or dimguard.set_budget in Python)"
        );
        let e = crate::budget::exhausted().expect("recorded");
        assert_eq!(e.kind(), "time");
        assert_eq!(e.reason(), u.reason);
        assert!(matches!(
            e,
            crate::budget::Exhausted::Share { percent: 60, .. }
        ));
    }

    #[test]
    fn a_set_that_cannot_be_built_is_an_error_not_a_smaller_set() {
        // A search's runs are increasing and disjoint, so building its set cannot fail; broken
        // on purpose (1.1M overlapping runs, past the sweep's work bound), the error comes back.
        // Before, `unwrap_or_default` made it the empty set: every member silently dropped.
        let a = Acc {
            runs: vec![(0, 1); 1_100_000],
            values: 2_200_000,
        };
        assert!(matches!(a.into_set(), Err(Error::Exhausted(_))));
        let mut ok = Acc::default();
        for x in (0..3_000_000).filter(|x| x % 3 != 1) {
            ok.push(x);
        }
        let set = ok.into_set().unwrap();
        assert_eq!(set.count(), 2_000_000);
        assert!(set.contains(2_999_999) && !set.contains(1));
    }

    #[test]
    fn a_hopeless_plan_is_not_started() {
        let n = names(&["h", "w"]);
        let gs = vec![g("(h * w) % 7 != 3")];
        let doms = [DimSet::interval(1, 1 << 40), DimSet::interval(1, 1 << 40)];
        let t0 = Instant::now();
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        assert!(t0.elapsed() < Duration::from_secs(1));
        let u = js.undecided.as_ref().expect("undecided");
        assert_eq!(u.count, 1u128 << 80);
        assert!(u.reason.contains("guard evaluations"), "{}", u.reason);
    }

    #[test]
    fn raising_guards_fail_and_overflow_is_exact() {
        let n = names(&["a", "b"]);
        let gs = vec![
            g("a % (b - 3) == 0 or b == 3"),
            g("a * b * 170141183460469231731687303715884105 > 0"),
        ];
        let doms = [DimSet::interval(1, 6), DimSet::interval(1, 6)];
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        for t in tuples(&doms) {
            let want = holds_all(&gs, &n, &t);
            assert_eq!(js.tree.contains(&reorder(&js, &n, &t)), want, "{t:?}");
        }
    }

    /// Guard templates over `a`, `b`, `c` (products, floor division, moduli that depend on sizes).
    fn template(k: usize, p: i128, q: i128) -> String {
        match k % 11 {
            0 => format!("(a * b) % {p} != {}", q % p),
            1 => format!("((a - 1)//{p} + 1) * ((b - 1)//{q} + 1) <= {}", p * q + 3),
            2 => format!("a % (b // {p} + 1) == 0"),
            3 => format!("(a + {q}*b) % {p} != 0"),
            4 => format!("a * b * c >= {}", p * q * 3),
            5 => format!("(c * a) // {p} != {q}"),
            6 => format!("b % ((a + c) // {p} + 1) != {}", q % 3),
            7 => format!("max(a, c) - b != {q}"),
            // Raises (a guard that fails) where b = q: no value of the last size is reused
            // from a combination whose divisor raised.
            9 => format!("(a * c) // (b - {q}) != {p}"),
            // Outside the i128 graph (a power above 8): the exact evaluator, keyed by the sizes.
            10 => format!("(a * b + c) ** 9 % {p} != 1"),
            _ => format!(
                "(a // {p}) * (b // {q}) == (b // {p}) * (a // {q}) or a + b > {}",
                p + q + 6
            ),
        }
    }

    /// A random guard system from [`template`]s over `a`, `b` (and `c` when `three`), with the
    /// sizes' domains `lo..=lo + w`.
    fn system(
        ks: &[(usize, i128, i128)],
        three: bool,
        lo: i128,
        w: [i128; 3],
    ) -> (Vec<String>, Vec<Expr>, Vec<DimSet>) {
        let n = if three {
            names(&["a", "b", "c"])
        } else {
            names(&["a", "b"])
        };
        let mut gs: Vec<Expr> = ks.iter().map(|&(k, p, q)| g(&template(k, p, q))).collect();
        if !three {
            gs.retain(|e| !e.atoms().iter().any(|a| &**a == "c"));
            if gs.is_empty() {
                gs.push(g("(a * b) % 3 != 1"));
            }
        }
        let doms: Vec<DimSet> = w[..n.len()]
            .iter()
            .map(|w| DimSet::interval(lo, lo + w))
            .collect();
        (n, gs, doms)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(120))]
        /// Random guard systems over two and three sizes against brute force on small boxes:
        /// joint set, projections, counts, rejected examples, and the largest box's soundness
        /// and maximality.
        #[test]
        fn joint_sets_match_brute_force(
            ks in proptest::collection::vec((0usize..11, 2i128..5, 0i128..5), 1..5),
            three in any::<bool>(),
            lo in 1i128..4, wa in 2i128..6, wb in 2i128..6, wc in 1i128..4,
            inner in prop_oneof![Just(0u128), Just(4096u128)],
        ) {
            let (n, gs, doms) = system(&ks, three, lo, [wa, wb, wc]);
            let budget = Budget { inner_enumeration: inner, ..Budget::default() };
            let js = solve_joint(&n, &doms, &gs, &budget);
            prop_assert!(js.undecided.is_none());
            let mut count = 0u128;
            let mut proj: Vec<std::collections::BTreeSet<i128>> = vec![Default::default(); n.len()];
            for t in tuples(&doms) {
                let want = holds_all(&gs, &n, &t);
                prop_assert_eq!(js.tree.contains(&reorder(&js, &n, &t)), want, "{:?}", t);
                if want {
                    count += 1;
                    for (i, x) in t.iter().enumerate() { proj[i].insert(*x); }
                }
            }
            prop_assert_eq!(js.count(), count);
            for (i, name) in n.iter().enumerate() {
                let p: Vec<i128> = js.projection(name).unwrap().iter().collect();
                prop_assert_eq!(p, proj[i].iter().copied().collect::<Vec<_>>());
                // for_all: passes with every value of the others.
                for x in doms[i].iter() {
                    let all = tuples(&doms).iter().filter(|t| t[i] == x).all(|t| holds_all(&gs, &n, t));
                    prop_assert_eq!(js.for_all(name).unwrap().contains(x), all);
                }
            }
            for t in js.rejected_examples(4).unwrap() {
                let t: Vec<i128> = n.iter().map(|s| t[js.level(s).unwrap()]).collect();
                prop_assert!(!holds_all(&gs, &n, &t));
            }
            // The largest box: sound, and no box of progressions has more tuples.
            let b = largest_box(&js.tree, &Budget::default());
            prop_assert_eq!(b.is_none(), count == 0);
            if let Some(b) = b {
                prop_assert!(b.maximal);
                let sides: Vec<DimSet> = b.sides.iter().map(|p| DimSet::progression(p.lo, p.hi, p.modulus, p.residue)).collect();
                prop_assert_eq!(b.count, sides.iter().map(DimSet::count).product::<u128>());
                for t in tuples(&sides) {
                    prop_assert!(js.tree.contains(&t), "box tuple {:?} fails", t);
                }
                // Brute force over every box of progressions (levels in the tree's order).
                let level_doms: Vec<DimSet> = js.sizes.iter().map(|s| doms[n.iter().position(|x| x == s).unwrap()].clone()).collect();
                let cands: Vec<Vec<Progression>> = level_doms.iter().map(|d| progressions(d.min().unwrap(), d.max().unwrap())).collect();
                let mut best = 0u128;
                let mut idx = vec![0usize; cands.len()];
                'outer: loop {
                    let sides: Vec<DimSet> = idx.iter().zip(&cands).map(|(&i, c)| { let p = c[i]; DimSet::progression(p.lo, p.hi, p.modulus, p.residue) }).collect();
                    let size: u128 = sides.iter().map(DimSet::count).product();
                    if size > best && tuples(&sides).iter().all(|t| js.tree.contains(t)) {
                        best = size;
                    }
                    let mut k = 0;
                    loop {
                        if k == idx.len() { break 'outer; }
                        idx[k] += 1;
                        if idx[k] < cands[k].len() { break; }
                        idx[k] = 0;
                        k += 1;
                    }
                }
                prop_assert_eq!(b.count, best);
            }
        }
    }
}
