//! The tuple-set tree ([`Tree`]) and the joint set a search returns ([`JointSet`]): exact
//! set operations on tuples of sizes, each level's sides the periodic sets of [`DimSet`].

use crate::error::Error;
use crate::types::DimSet;
use std::collections::{HashMap, HashSet};

/// The set of tuples (one value per level) that pass every guard.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
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
    ///
    /// Level by level over the distinct subtrees: subtrees repeat under different parents (the
    /// divisibility method's classes share a few continuations), and each is visited once
    /// (three sizes, `m = 2520`: hundreds of paths, dozens of distinct subtrees).
    pub fn projection(&self, level: usize) -> Exact<DimSet> {
        let mut at: Vec<&Tree> = vec![self];
        for _ in 0..level {
            let mut seen: HashSet<&Tree> = HashSet::new();
            let mut next: Vec<&Tree> = Vec::new();
            for t in at {
                let Tree::Node(g) = t else {
                    continue;
                };
                crate::budget::check()?;
                next.extend(g.iter().map(|(_, c)| c).filter(|c| seen.insert(*c)));
            }
            at = next;
        }
        union_all(at.into_iter().flat_map(|t| match t {
            Tree::Leaf(s) => vec![Ok(s.clone())],
            Tree::Node(g) => g.iter().map(|(s, _)| Ok(s.clone())).collect(),
        }))
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

    /// The tuples of the box `sides` that are not members, or an error ([`Exact`]). A
    /// subtree that stands under several parents is complemented once.
    pub fn complement(&self, sides: &[DimSet]) -> Exact<Tree> {
        self.complement_in(sides, &mut HashMap::new())
    }

    fn complement_in<'a>(
        &'a self,
        sides: &[DimSet],
        done: &mut HashMap<(usize, &'a Tree), Tree>,
    ) -> Exact<Tree> {
        if let Some(t) = done.get(&(sides.len(), self)) {
            return Ok(t.clone());
        }
        let t = self.complement_of(sides, done)?;
        done.insert((sides.len(), self), t.clone());
        Ok(t)
    }

    fn complement_of<'a>(
        &'a self,
        sides: &[DimSet],
        done: &mut HashMap<(usize, &'a Tree), Tree>,
    ) -> Exact<Tree> {
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
                    let comp = c.complement_in(rest, done)?;
                    if !s.is_empty() && !comp.is_empty() {
                        push_group(&mut out, s, comp)?;
                    }
                }
                Tree::Node(out)
            }
            _ => Tree::empty(sides.len()),
        })
    }

    /// Whether every tuple of the box `sides` is a member (the [`Tree::complement`] is
    /// empty), stopping at the first subtree that leaves a tuple out; an error ([`Exact`]).
    pub fn covers(&self, sides: &[DimSet]) -> Exact<bool> {
        match (self, sides) {
            (Tree::Leaf(s), [d]) => Ok(minus(d, s)?.is_empty()),
            (Tree::Node(g), [d, rest @ ..]) => {
                let covered = union_all(g.iter().map(|(s, _)| Ok(s.clone())))?;
                if !minus(d, &covered)?.is_empty() {
                    return Ok(rest.iter().any(DimSet::is_empty));
                }
                for (s, c) in g {
                    crate::budget::check()?;
                    if !inter(s, d)?.is_empty() && !c.covers(rest)? {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
            // As the complement: no tuple outside a tree of other levels.
            _ => Ok(true),
        }
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

pub(super) fn inter(a: &DimSet, b: &DimSet) -> Exact<DimSet> {
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
pub(super) fn minus(a: &DimSet, b: &DimSet) -> Exact<DimSet> {
    listed_if_needed(a.difference(b), a.count(), || {
        a.iter().filter(|x| !b.contains(*x))
    })
}

pub(super) fn union(a: &DimSet, b: &DimSet) -> Exact<DimSet> {
    listed_if_needed(a.union(b), a.count().saturating_add(b.count()), || {
        a.iter().chain(b.iter())
    })
}

/// The union of `parts`; an error past the deadline of the thread's [`crate::budget`] (the
/// budget records it, so the command reports its answer as partial).
/// Each distinct part is united once (a tree's sets repeat under different parents).
pub(super) fn union_all(parts: impl Iterator<Item = Exact<DimSet>>) -> Exact<DimSet> {
    let mut acc = DimSet::empty();
    let mut seen: HashSet<DimSet> = HashSet::new();
    for s in parts {
        crate::budget::check()?;
        let s = s?;
        if seen.contains(&s) {
            continue;
        }
        acc = union(&acc, &s)?;
        seen.insert(s);
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
pub(super) fn push_group(out: &mut Vec<(DimSet, Tree)>, s: DimSet, c: Tree) -> Exact<()> {
    if let Some(slot) = out.iter_mut().find(|(_, oc)| *oc == c) {
        slot.0 = union(&slot.0, &s)?;
    } else {
        out.push((s, c));
    }
    Ok(())
}

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
    /// Why (one of the search's limits, the command's budget, a guard outside every method; with
    /// what Z3 said past it).
    pub reason: crate::report::Undecided,
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
    /// guards the same values (`Reuse`).
    pub reused: u64,
}

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

    /// Whether some tuple of the domains' box is outside the joint set (within the decided
    /// region): the counts compared, and where both saturate at `u128::MAX` (three sizes to
    /// 2^63) whether the tree covers the box ([`Tree::covers`], stopping at the first tuple
    /// left out); an error there counts as excluding (never a set called unconstrained that
    /// was not shown so).
    pub fn excludes_some(&self) -> bool {
        match (self.count(), self.box_count()) {
            (c, b) if c < b => true,
            (c, _) if c < u128::MAX => false,
            _ => self.tree.covers(&self.domains).map_or(true, |c| !c),
        }
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
        self.for_all_at(l, &self.tree.complement(&self.domains)?)
    }

    /// [`JointSet::for_all`] of every size, in level order (the complement built once).
    pub fn for_all_levels(&self) -> Exact<Vec<DimSet>> {
        let comp = self.tree.complement(&self.domains)?;
        (0..self.sizes.len())
            .map(|l| self.for_all_at(l, &comp))
            .collect()
    }

    /// [`JointSet::for_all`] of level `l`, with `comp` the tree's complement in the domains.
    fn for_all_at(&self, l: usize, comp: &Tree) -> Exact<DimSet> {
        let bad = comp.projection(l)?;
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

/// The tree of a union of disjoint boxes (one side per level, `levels` levels), or an error
/// ([`Exact`]).
pub(super) fn from_boxes(boxes: &[Vec<DimSet>], levels: usize) -> Exact<Tree> {
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
