//! The joint search: plan an order of the sizes, enumerate the narrow ones with early rejection
//! and shared sub-expressions ([`super::machine`]), solve the last one per combination of the
//! others (periodically when it is wide), within a [`Budget`].

use super::machine::{Machine, Read};
use super::wide::solve_wide;
use super::{Budget, Exact, JointSet, Stats, Tree, Undecided};
use crate::compiled::{Fail, Graph};
use crate::engine::{solve, Outcome};
use crate::expr::Value;
use crate::report::{Evaluations, SearchLimit, Undecided as Why};
use crate::types::{DimSet, Expr, Segment};
use std::collections::HashMap;
use std::time::Instant;

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

/// Most segments and key values [`Reuse`] holds (a few tens of MB at most); past it, sets are
/// solved without being kept.
const REUSE_MAX: usize = 1 << 18;

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

/// Whether the guard `expr` (compiled at `node`, when it compiles) holds at the machine's
/// values (a guard that raises does not).
fn truth(m: &mut Machine, node: Option<u32>, expr: &Expr, names: &[String]) -> bool {
    tri(m, node, expr, names) == Some(true)
}

/// The guard `expr` at the machine's values: the graph where it decides, else the exact
/// evaluator; `None` where it raises (or the evaluator cannot say).
fn tri(m: &mut Machine, node: Option<u32>, expr: &Expr, names: &[String]) -> Option<bool> {
    if let Some(n) = node {
        match m.eval(n) {
            Ok(v) => return Some(v != 0),
            Err(Fail::Raises) => return None,
            Err(Fail::Overflow) => {}
        }
    }
    let vars = &m.vars;
    let env = |a: &str| names.iter().position(|n| n == a).map(|i| vars[i]);
    expr.eval(&env).and_then(Value::truth).ok()
}

/// Every guard of a group evaluated at tuples of its sizes (the re-checks of a joint answer:
/// its largest box, its examples): the guards compiled once into one graph that shares their
/// repeated sub-expressions (a Swin-T guard of 15,689 characters holds a few dozen distinct
/// ones), the exact evaluator for a guard outside it or where it overflows.
pub struct TupleCheck<'e> {
    names: Vec<String>,
    graph: Graph,
    guards: Vec<(&'e Expr, Option<u32>)>,
}

impl<'e> TupleCheck<'e> {
    /// The guards `guards` over the sizes `names` (a tuple gives their values in that order).
    pub fn new(names: &[String], guards: &'e [Expr]) -> TupleCheck<'e> {
        let mut graph = Graph::with_limit(usize::MAX);
        let guards = guards.iter().map(|e| (e, graph.cond(e, names))).collect();
        TupleCheck {
            names: names.to_vec(),
            graph,
            guards,
        }
    }

    /// Whether every guard holds at `t` (a guard that raises does not).
    pub fn holds(&self, t: &[i128]) -> bool {
        let ident: Vec<usize> = (0..self.names.len()).collect();
        let mut m = Machine::new(&self.graph, &ident);
        for (i, &v) in t.iter().enumerate() {
            m.set(i, i, v);
        }
        self.guards
            .iter()
            .all(|&(expr, node)| truth(&mut m, node, expr, &self.names))
    }

    /// How many tuples of the box `ranges` (one inclusive range per size, in the order of
    /// `names`) every guard holds at, and how many some guard fails at; a tuple where a guard
    /// raises before one fails counts in neither. The last size moves fastest, so a
    /// sub-expression of the earlier sizes is computed once per their values (HF Dinov2's
    /// `Eq((u1//14)*(u2//14), 256)` over 449 × 449 values: a few milliseconds).
    pub fn count(&self, ranges: &[(i128, i128)]) -> (u128, u128) {
        let (mut holds, mut fails) = (0u128, 0u128);
        if ranges.len() != self.names.len() || ranges.iter().any(|(a, b)| a > b) {
            return (0, 0);
        }
        let ident: Vec<usize> = (0..self.names.len()).collect();
        let mut m = Machine::new(&self.graph, &ident);
        let mut at: Vec<i128> = ranges.iter().map(|r| r.0).collect();
        for (i, &v) in at.iter().enumerate() {
            m.set(i, i, v);
        }
        loop {
            match self.tuple(&mut m) {
                Some(true) => holds += 1,
                Some(false) => fails += 1,
                None => {}
            }
            // The next tuple, the last size fastest.
            let Some(k) = (0..at.len()).rev().find(|&k| at[k] < ranges[k].1) else {
                return (holds, fails);
            };
            at[k] += 1;
            m.set(k, k, at[k]);
            for j in k + 1..at.len() {
                at[j] = ranges[j].0;
                m.set(j, j, at[j]);
            }
        }
    }

    /// The guards at the machine's tuple: `Some(false)` at the first that fails, `None` at
    /// one that raises before any fails, else `Some(true)`.
    fn tuple(&self, m: &mut Machine) -> Option<bool> {
        for &(expr, node) in &self.guards {
            match tri(m, node, expr, &self.names) {
                Some(true) => {}
                other => return other,
            }
        }
        Some(true)
    }
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
pub(super) struct Acc {
    pub(super) runs: Vec<(i128, i128)>,
    pub(super) values: u128,
}

impl Acc {
    pub(super) fn push(&mut self, x: i128) {
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
    pub(super) fn into_set(self) -> Exact<DimSet> {
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

/// The search over the levels; a stop is why it stopped (one of its limits, the command's
/// budget, a failed set operation, a last level the periodic engine left undecided).
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
    fn tick(&mut self) -> Result<(), Why> {
        self.stats.points += 1;
        if self.stats.points % 32 == 0 {
            if self.start.elapsed() > self.budget.time {
                return Err(Why::Search(SearchLimit::Time(self.budget.time)));
            }
            if let Some(e) = crate::budget::expired() {
                return Err(Why::Exhausted(e));
            }
            if self.share.is_some_and(|at| Instant::now() >= at) {
                if let Some(e) = crate::budget::share_spent("the joint search", SEARCH_SHARE) {
                    return Err(Why::Exhausted(e));
                }
            }
        }
        Ok(())
    }

    /// The whole tree, the first level by hand so that a stop keeps everything decided before
    /// it: the values of the first size are walked in order, and at a stop the rest of them
    /// (with every value of the others) is the undecided part. A failed set operation leaves
    /// the whole box undecided.
    fn top(&mut self) -> (Tree, Option<Undecided>) {
        let n = self.order.len();
        let level_domains = self.domains.clone();
        let mut undecided = None;
        if n == 1 {
            let tree = match self.inner() {
                Ok(set) => Tree::Leaf(set),
                Err(reason) => {
                    undecided = Some(Undecided {
                        reason,
                        count: level_domains[0].count(),
                        sides: level_domains.clone(),
                    });
                    Tree::Leaf(DimSet::empty())
                }
            };
            return (tree, undecided);
        }
        let var = self.order[0];
        let mut groups: Vec<(Acc, Tree)> = Vec::new();
        let dom = level_domains[0].clone();
        for v in dom.iter() {
            let step = self.tick().and_then(|()| {
                self.m.set(var, 0, v);
                if self.pass(0) {
                    self.level(1).map(Some)
                } else {
                    Ok(None)
                }
            });
            let outcome = match step {
                Ok(Some(child)) if !child.is_empty() => self.add_value(&mut groups, v, child),
                Ok(_) => Ok(()),
                Err(e) => Err(e),
            };
            if let Err(reason) = outcome {
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
        let tree = match grouped(groups) {
            Ok(t) => t,
            Err(e) => {
                // Nothing decided is kept past a failed set: the whole box is undecided.
                undecided = Some(Undecided {
                    reason: Why::from(e),
                    count: Tree::full(&level_domains).count(),
                    sides: level_domains.clone(),
                });
                Tree::empty(n)
            }
        };
        (tree, undecided)
    }

    fn pass(&mut self, level: usize) -> bool {
        for g in &self.at_level[level] {
            if !truth(&mut self.m, g.node, g.expr, self.names) {
                return false;
            }
        }
        true
    }

    fn level(&mut self, k: usize) -> Result<Tree, Why> {
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
        grouped(groups).map_err(Why::from)
    }

    fn add_value(
        &mut self,
        groups: &mut Vec<(Acc, Tree)>,
        v: i128,
        child: Tree,
    ) -> Result<(), Why> {
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
            return Err(Why::Search(SearchLimit::Pieces(self.budget.pieces)));
        }
        Ok(())
    }

    /// The last level's set, for the values the earlier levels hold now.
    fn inner(&mut self) -> Result<DimSet, Why> {
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

    fn solve_inner(&mut self) -> Result<DimSet, Why> {
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
            return acc.into_set().map_err(Why::from);
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
                Outcome::Undecided { reason } => return Err(reason),
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
pub(super) fn search(
    names: &[String],
    domains: &[DimSet],
    guards: &[Expr],
    budget: &Budget,
    wide: bool,
) -> JointSet {
    let start = Instant::now();
    let n = names.len();
    let mut graph = Graph::with_limit(usize::MAX);
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
    estimate_pass_rates(&graph, &mut gs, domains, names);
    let (order, cost) = plan(n, domains, &gs, budget);
    if cost > budget.work && wide {
        let exact = |n: &[String], d: &[DimSet], g: &[Expr], b: &Budget| search(n, d, g, b, false);
        if let Some(js) = solve_wide(names, domains, guards, budget, &exact) {
            return js;
        }
    }
    if cost > budget.work {
        let sides: Vec<DimSet> = order.iter().map(|&i| domains[i].clone()).collect();
        let count = Tree::full(&sides).count();
        let undecided = Some(Undecided {
            reason: Why::Search(SearchLimit::Work {
                estimate: Evaluations(cost),
                limit: Evaluations(budget.work),
            }),
            sides,
            count,
        });
        return done(order, Tree::empty(n), undecided, stats);
    }
    let (pos, at_level) = by_level(&gs, &order);
    let m = Machine::new(&graph, &pos);
    let reuse = Reuse::new(&m, &at_level[n - 1], &pos);
    let mut s = Search {
        names,
        order: order.clone(),
        domains: order.iter().map(|&i| domains[i].clone()).collect(),
        at_level,
        m,
        budget,
        start,
        share: crate::budget::share_of_remaining(SEARCH_SHARE),
        pieces: 0,
        stats,
        reuse,
    };
    let (tree, undecided) = s.top();
    let stats = s.stats;
    done(order, tree, undecided, stats)
}

/// Sets each guard's estimated pass rate from pseudo-random points of the box (a guard outside
/// the graph: one half), so that the search tries the most rejecting guards first.
fn estimate_pass_rates(graph: &Graph, gs: &mut [G], domains: &[DimSet], names: &[String]) {
    let n = domains.len();
    let ident: Vec<usize> = (0..n).collect();
    let mut m = Machine::new(graph, &ident);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    const SAMPLES: usize = 48;
    let mut passed = vec![0usize; gs.len()];
    for _ in 0..SAMPLES {
        for (i, d) in domains.iter().enumerate() {
            let v = rng.pick(d);
            m.set(i, i, v);
        }
        for (j, g) in gs.iter().enumerate() {
            if g.node.is_some() && truth(&mut m, g.node, g.expr, names) {
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

/// Each size's level in `order`, and the guards decided at each level (by the deepest size
/// they mention), most rejecting first (the shorter first among equals).
fn by_level<'a>(gs: &'a [G<'a>], order: &[usize]) -> (Vec<usize>, Vec<Vec<&'a G<'a>>>) {
    let n = order.len();
    let mut pos = vec![0usize; n];
    for (l, &i) in order.iter().enumerate() {
        pos[i] = l;
    }
    let mut at_level: Vec<Vec<&G>> = vec![Vec::new(); n];
    for g in gs {
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
    (pos, at_level)
}

impl Reuse {
    /// What the guards `last` of the last level read from the earlier levels (`pos`: each
    /// size's level), with no set kept yet.
    fn new(m: &Machine, last: &[&G], pos: &[usize]) -> Reuse {
        let n = pos.len();
        Reuse {
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
        }
    }
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

pub(super) fn permutations(v: &mut Vec<usize>, k: usize, f: &mut impl FnMut(&[usize])) {
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
