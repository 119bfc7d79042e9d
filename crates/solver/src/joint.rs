//! Guards over several sizes.
//!
//! PyTorch never raises on a guard over two or more sizes: it becomes a run-time check. This
//! module splits the sizes into independent groups (sizes linked by some guard), substitutes
//! linear equalities (`b == a`, `b == 2*a + 1`: one `Dim` for equal sizes, a derived dim for a
//! relation with a positive integer coefficient — the only kind `torch.export.Dim` accepts), and
//! solves each group exactly:
//!
//! * each root's own guards by the periodic engine (`engine.rs`), with the members' ranges turned
//!   into the root's range; a guard outside its methods is asked to a validity oracle (Z3) before
//!   it is called undecided ([`solve_group_with`]);
//! * the guards linking several roots by the joint engine (`linked.rs`): the exact set of tuples
//!   that pass, within a time budget; what it could not decide is returned as data.
//!
//! Every guard ends with a [`Fate`]: solved, proved by Z3, or undecided with its reason.

use crate::engine::{solve, Limits, Method, Outcome};
use crate::expr::Value;
use crate::linked::{
    box_through, largest_box, normalize, normalize_one, solve_joint, solve_tied, Budget, JointSet,
    LargestBox, Tie, TiedSet, TiedSpec, Tree, TupleCheck,
};
use crate::num::{self, Q};
use crate::report::{
    BoxReport, Certificate, Feasible, GuardFate, JointReport, JointSearch, JointUndecided, Proof,
    SharedReport, TieReport, TiedReport, Undecided,
};
use crate::suggest::rank;
use crate::suggest::unchecked_suggestion;
use crate::types::{CmpOp, DimSet, Expr, Progression};
use num_traits::{Signed, Zero};
use std::collections::BTreeMap;

/// `name = coef * root + offset`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    /// The size.
    pub name: String,
    /// The root size it is expressed in (itself for a root).
    pub root: String,
    /// Positive multiplier.
    pub coef: i128,
    /// Offset.
    pub offset: i128,
}

/// A group of sizes linked by guards.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Every size of the group, roots included (`coef` 1, `offset` 0).
    pub members: Vec<Member>,
    /// Roots (independent sizes) in first-seen order.
    pub roots: Vec<String>,
    /// Guards rewritten over the roots.
    pub guards: Vec<Expr>,
    /// For each guard, its index in the guards passed to [`group`].
    pub origin: Vec<usize>,
    /// Indices (in the guards passed to [`group`]) of the linear equalities substituted away.
    pub relations: Vec<usize>,
}

impl Member {
    /// The member's values for the root's values `set` (`coef * x + offset`).
    pub fn image(&self, set: &DimSet) -> Result<DimSet, crate::Error> {
        set.affine_image(self.coef, self.offset)
    }

    /// The member's progression for the root's progression `p`: what a derived `Dim` admits.
    pub fn side(&self, p: &Progression) -> Progression {
        Progression {
            lo: self.coef * p.lo + self.offset,
            hi: self.coef * p.hi + self.offset,
            modulus: self.coef * p.modulus,
            residue: (self.coef * p.residue + self.offset).rem_euclid(self.coef * p.modulus),
        }
    }
}

/// What happened to one guard of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Solved exactly: [`GuardFate::Periodic`], [`GuardFate::Enumeration`] (one size) or
    /// [`GuardFate::Joint`] (several sizes).
    Solved(GuardFate),
    /// Not solvable in closed form over its range, but Z3 proved that every value passes.
    Proved,
    /// Not decided, with the reason (and Z3's answer when it was asked).
    Undecided(Undecided),
}

impl Fate {
    /// The reports' `fate` and, for an undecided guard, the reason.
    pub fn label(&self) -> (GuardFate, Option<String>) {
        match self {
            Fate::Solved(how) => (*how, None),
            Fate::Proved => (GuardFate::Z3, None),
            Fate::Undecided(why) => (GuardFate::Undecided, Some(why.to_string())),
        }
    }
}

/// Z3's answer to "does every point of this box pass these guards?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoxAnswer {
    /// Every point passes (proved).
    Holds,
    /// This point (one value per size, in the order asked) fails, re-checked exactly.
    Fails(Vec<i128>),
    /// Not decided (time-out, a construct without encoding).
    Unknown(String),
}

/// A validity oracle for boxes of sizes; the CLI passes Z3 (`dimguard-prove::check_box`), the
/// solver crate does not depend on it.
pub type Prover<'a> = &'a dyn Fn(&[&Expr], &[(&str, &DimSet)]) -> BoxAnswer;

/// The outcome for a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved {
    /// Per root, the values proven to pass: for several roots, those that pass with **every**
    /// value of the other roots (any product of `Dim`s inside them is sound).
    pub accepted: BTreeMap<String, DimSet>,
    /// For several roots: how many points of the product of the roots' one-size sets pass every
    /// linking guard, and the size of that product.
    pub joint_count: Option<(u128, u128)>,
    /// Why something is undecided.
    pub undecided: Option<Undecided>,
    /// Per root, the values neither proven to pass nor to fail (empty when all is decided).
    pub unsure: BTreeMap<String, DimSet>,
    /// For several roots: the exact joint set (see `linked.rs`).
    pub joint: Option<JointSet>,
    /// What happened to each guard of the group (parallel to [`Group::guards`]).
    pub fates: Vec<Fate>,
    /// When the joint search left tuples undecided and guards tie sizes (`F(a) == F(b)`): the
    /// joint set decided in closed form ([`solve_tied`]), which is then the group's answer
    /// (`accepted` comes from it, nothing is undecided); `joint` stays the search's own
    /// (undecided) result.
    pub tied: Option<TiedSet>,
    /// When a linking guard defines one size by the others (`n == (h//16)*(w//16)`) and the
    /// group was solved with that size eliminated: the definition and the reduced group's
    /// solution, which then decide every tuple ([`Solved::contains`]). `joint` and `tied` are
    /// then `None`. No value of a size passes with every value of the others (the partners
    /// break the definition: `accepted` empty, decided); a degenerate group where they cannot
    /// (the defined size's own set one value, `E` constant) keeps that size unsure
    /// ([`Undecided::Defined`]).
    pub defined: Option<Box<Defined>>,
}

/// A size of a group defined by a linking guard `x == E(others)` (`x` bare, not in `E`; torch's
/// `tokens_1 == (image_2 // 16)*(image_3 // 16)` for a reshape of patches into tokens), and the
/// group solved without it. A tuple passes every guard of the group exactly when `x == E` holds
/// at it (Python's evaluation: a division by zero fails), `x` lies in its own set ([`Self::own`]:
/// its range and its one-size guards), and the others pass the reduced group, whose guards are
/// the group's others with `E` written for `x`. Exact: where `x == E`, every guard takes the
/// same value with `E` written for `x`.
#[derive(Debug, Clone, PartialEq)]
pub struct Defined {
    /// The defined size (a root of the group no other member is derived from).
    pub dim: String,
    /// Its definition over the other roots.
    pub expr: Expr,
    /// The defining guard's index in [`Group::guards`].
    pub guard: usize,
    /// The defined size's own set: its range and its one-size guards, decided.
    pub own: DimSet,
    /// The group without the defined size: the other guards with [`Self::expr`] written for it.
    pub group: Group,
    /// The reduced group's solution.
    pub solved: Solved,
}

impl Solved {
    /// Whether the group's answer accepts a tuple of its sizes (`value` gives each member's
    /// value): `Some(true)` or `Some(false)` when the answer decides it, `None` when the tuple
    /// lies where the answer is undecided. Members derived from one root must agree on it.
    pub fn contains(&self, grp: &Group, value: &dyn Fn(&str) -> Option<i128>) -> Option<bool> {
        if let Some(d) = &self.defined {
            match grp.guards.get(d.guard)?.truth(value) {
                Ok(true) => {}
                Ok(false) => return Some(false),
                Err(crate::expr::EvalError::Arith(crate::num::ArithError::Overflow)) => {
                    return None
                }
                Err(crate::expr::EvalError::Arith(_)) => return Some(false),
                Err(_) => return None,
            }
            if !d.own.contains(value(&d.dim)?) {
                return Some(false);
            }
            return d.solved.contains(&d.group, value);
        }
        let mut roots: BTreeMap<&str, i128> = BTreeMap::new();
        for m in &grp.members {
            let v = value(&m.name)?.checked_sub(m.offset)?;
            if v % m.coef != 0 {
                return Some(false);
            }
            let r = v / m.coef;
            if *roots.entry(&m.root).or_insert(r) != r {
                return Some(false);
            }
        }
        for (root, set) in &self.unsure {
            if roots.get(root.as_str()).is_some_and(|&r| set.contains(r)) {
                return None;
            }
        }
        let at = |n: &str| roots.get(n).copied();
        if let Some(t) = &self.tied {
            let tuple: Option<Vec<i128>> = t.sizes().iter().map(|n| at(n)).collect();
            return Some(t.contains(&tuple?));
        }
        match &self.joint {
            Some(j) => {
                let tuple: Option<Vec<i128>> = j.sizes.iter().map(|n| at(n)).collect();
                let tuple = tuple?;
                if j.tree.contains(&tuple) {
                    return Some(true);
                }
                let inside = j.domains.iter().zip(&tuple).all(|(d, &x)| d.contains(x));
                if j.undecided.is_some() && inside {
                    return None;
                }
                Some(false)
            }
            None => {
                if self.undecided.is_some() {
                    return None;
                }
                Some(grp.roots.iter().all(|r| {
                    at(r).is_some_and(|x| self.accepted.get(r).is_some_and(|s| s.contains(x)))
                }))
            }
        }
    }
}

/// For `lhs == rhs` linear in exactly two sizes, `(dependent, root, coef, offset)` with
/// `dependent = coef * root + offset`, `coef` a positive integer and `offset` an integer.
pub fn linear_relation(g: &Expr) -> Option<(String, String, i128, i128)> {
    let Expr::Cmp(CmpOp::Eq, l, r) = g else {
        return None;
    };
    let (lm, lc) = l.affine()?;
    let (rm, rc) = r.affine()?;
    let mut coefs = lm;
    for (a, q) in rm {
        let e = coefs.entry(a).or_insert_with(Q::zero);
        *e = num::sub(e, &q).ok()?;
    }
    coefs.retain(|_, q| !q.is_zero());
    let c0 = num::sub(&lc, &rc).ok()?;
    if coefs.len() != 2 {
        return None;
    }
    let v: Vec<(String, Q)> = coefs.into_iter().collect();
    // c_a*a + c_b*b + c0 = 0  =>  b = (-c_a/c_b) a + (-c0/c_b); try both orientations and
    // prefer the root with the smaller values (a positive integer coefficient > 1 first).
    let mut best = None;
    for (i, j) in [(0, 1), (1, 0)] {
        let (ref a, ca) = v[i];
        let (ref b, cb) = v[j];
        let k = num::div(&num::neg(&ca).ok()?, &cb).ok()?;
        let off = num::div(&num::neg(&c0).ok()?, &cb).ok()?;
        if k.is_integer() && k.is_positive() && off.is_integer() {
            let cand = (b.clone(), a.clone(), *k.numer(), *off.numer());
            if best
                .as_ref()
                .is_none_or(|(_, _, bk, _): &(String, String, i128, i128)| cand.2 > *bk)
            {
                best = Some(cand);
            }
        }
    }
    best
}

/// Splits `sizes` (and the sizes the guards mention) into groups, substituting linear
/// equalities.
pub fn group(guards: &[Expr], sizes: &[String]) -> Vec<Group> {
    let mut order: Vec<String> = sizes.to_vec();
    for g in guards {
        for a in g.atoms() {
            if !order.iter().any(|s| **s == *a) {
                order.push(a.to_string());
            }
        }
    }
    // Substitute relations one at a time (each removes one size).
    let mut rest: Vec<Expr> = guards.to_vec();
    let mut origin: Vec<usize> = (0..guards.len()).collect();
    let mut relations: Vec<(usize, String)> = Vec::new();
    let mut members: BTreeMap<String, Member> = order
        .iter()
        .map(|s| {
            (
                s.clone(),
                Member {
                    name: s.clone(),
                    root: s.clone(),
                    coef: 1,
                    offset: 0,
                },
            )
        })
        .collect();
    while let Some((idx, (dep, root, k, off))) = rest
        .iter()
        .enumerate()
        .find_map(|(i, g)| linear_relation(g).map(|r| (i, r)))
    {
        rest.remove(idx);
        relations.push((origin.remove(idx), root.clone()));
        let with = Expr::Add(vec![
            Expr::Mul(vec![Expr::int(k), Expr::sym(&root)]),
            Expr::int(off),
        ]);
        rest = rest.iter().map(|g| g.substitute(&dep, &with)).collect();
        // Every size expressed in `dep` is now expressed in `root`.
        for m in members.values_mut() {
            if m.root == dep {
                m.root = root.clone();
                m.offset += m.coef * off;
                m.coef *= k;
            }
        }
    }
    // Union-find over roots linked by the remaining guards.
    let roots_of: Vec<String> = order.iter().map(|s| members[s].root.clone()).collect();
    let mut parent: BTreeMap<String, String> =
        roots_of.iter().map(|r| (r.clone(), r.clone())).collect();
    fn find(p: &mut BTreeMap<String, String>, x: &str) -> String {
        let up = p[x].clone();
        if up == x {
            return up;
        }
        let r = find(p, &up);
        p.insert(x.to_string(), r.clone());
        r
    }
    for g in &rest {
        let atoms: Vec<String> = g.atoms().iter().map(|a| a.to_string()).collect();
        for w in atoms.windows(2) {
            let (a, b) = (find(&mut parent, &w[0]), find(&mut parent, &w[1]));
            if a != b {
                parent.insert(b, a);
            }
        }
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for s in &order {
        let r = members[s].root.clone();
        let top = find(&mut parent, &r);
        let gi = *index.entry(top).or_insert_with(|| {
            groups.push(Group {
                members: vec![],
                roots: vec![],
                guards: vec![],
                origin: vec![],
                relations: vec![],
            });
            groups.len() - 1
        });
        let grp = &mut groups[gi];
        if !grp.roots.contains(&r) {
            grp.roots.push(r);
        }
        grp.members.push(members[s].clone());
    }
    for (g, o) in rest.into_iter().zip(origin) {
        let Some(a) = g.atoms().into_iter().next() else {
            continue;
        };
        let top = find(&mut parent, &a);
        if let Some(&gi) = index.get(&top) {
            groups[gi].guards.push(g);
            groups[gi].origin.push(o);
        }
    }
    for (i, root) in relations {
        let r = members.get(&root).map_or(root.clone(), |m| m.root.clone());
        let top = find(&mut parent, &r);
        if let Some(&gi) = index.get(&top) {
            groups[gi].relations.push(i);
        }
    }
    groups
}

/// The root's range implied by the members' ranges (`lo <= coef*root + offset <= hi`).
pub fn root_range(
    grp: &Group,
    root: &str,
    ranges: &BTreeMap<String, (i128, i128)>,
) -> (i128, i128) {
    let mut lo = i128::MIN / 4;
    let mut hi = i128::MAX / 4;
    for m in grp.members.iter().filter(|m| m.root == root) {
        if let Some(&(a, b)) = ranges.get(&m.name) {
            lo = lo.max(num::int_ceildiv(a - m.offset, m.coef));
            hi = hi.min(num::int_floordiv(b - m.offset, m.coef).unwrap_or(hi));
        }
    }
    (lo, hi)
}

/// Values at the start of a range enumerated exactly when Z3 refutes a guard over the whole
/// range: Z3 is then asked about the values past them.
pub const HEAD: i128 = 1 << 16;

/// One guard over one size, decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The values of the set asked about that pass (`None`: undecided).
    pub set: Option<DimSet>,
    /// How it was decided.
    pub fate: Fate,
    /// The period, when the periodic method solved it.
    pub period: Option<i128>,
}

/// Decides one guard over one size `var` within `set`: by the engine (periodic method or
/// enumeration); else, with a validity oracle (Z3), "does every value of `set` pass?" — a proof
/// keeps `set`; a failure over a range too wide to enumerate enumerates the first [`HEAD`] values
/// exactly and asks about the rest; else undecided, with the engine's reason and Z3's answer.
pub fn decide(
    g: &Expr,
    var: &str,
    set: &DimSet,
    limits: &Limits,
    prover: Option<Prover>,
) -> Decision {
    // Outside the engine's methods as written (`Pw % (Pw//7) == 0`): in normal form over
    // `set` (the same values pass), before Z3 is asked.
    let outcome = match solve(g, var, set, limits) {
        Outcome::Undecided { reason } => {
            let normal = normalize_one(g, var, set, limits);
            match solve(&normal, var, set, limits) {
                solved @ Outcome::Solved { .. } if normal != *g => solved,
                _ => Outcome::Undecided { reason },
            }
        }
        solved => solved,
    };
    let reason = match outcome {
        Outcome::Solved { set: s, method } => {
            let (fate, period) = match method {
                Method::Periodic { period } => (GuardFate::Periodic, Some(period)),
                Method::Enumeration { .. } => (GuardFate::Enumeration, None),
            };
            return Decision {
                set: Some(s),
                fate: Fate::Solved(fate),
                period,
            };
        }
        Outcome::Undecided { reason } => reason,
    };
    let answer = prover.map(|p| p(&[g], &[(var, set)]));
    // Failing somewhere over a range too wide to enumerate: enumerate the first values exactly
    // and ask Z3 about the rest.
    let split = match (&answer, prover, set.min()) {
        (Some(BoxAnswer::Fails(_)), Some(p), Some(lo)) => {
            let cut = lo.saturating_add(HEAD);
            let head = set.clip(lo, cut);
            let tail = set.clip(cut.saturating_add(1), i128::MAX);
            match solve(g, var, &head, limits) {
                Outcome::Solved { set: h, .. } if p(&[g], &[(var, &tail)]) == BoxAnswer::Holds => {
                    h.union(&tail).ok()
                }
                _ => None,
            }
        }
        _ => None,
    };
    let proved = |s: DimSet| Decision {
        set: Some(s),
        fate: Fate::Proved,
        period: None,
    };
    match (answer, split) {
        (Some(BoxAnswer::Holds), _) => proved(set.clone()),
        (_, Some(s)) => proved(s),
        (other, None) => {
            let z3 = match other {
                Some(BoxAnswer::Fails(x)) => Some(format!(
                    "Z3 found {}, so it is not true for every value",
                    match x.as_slice() {
                        [v] => format!("the failing value {v}"),
                        _ => format!("the failing combination {x:?}"),
                    }
                )),
                Some(BoxAnswer::Unknown(z)) => Some(format!("Z3: {z}")),
                _ => None,
            };
            let why = match z3 {
                Some(z3) => Undecided::NotProved {
                    because: Box::new(reason),
                    z3,
                },
                None => reason,
            };
            Decision {
                set: None,
                fate: Fate::Undecided(why),
                period: None,
            }
        }
    }
}

/// Solves a group exactly within the members' ranges.
pub fn solve_group(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    limits: &Limits,
) -> Solved {
    let budget = Budget {
        limits: *limits,
        ..Budget::default()
    };
    solve_group_with(grp, ranges, &budget, None)
}

/// [`solve_group`] within `budget`, with a validity oracle (Z3) asked before a guard is called
/// undecided: a guard outside the engine's methods is sent as "does every value of the range
/// pass?"; a proof keeps the range, a failing value is re-checked and the guard stays
/// undecided with it in the reason.
pub fn solve_group_with(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
) -> Solved {
    // A size defined by the others in a group with a range too wide to enumerate: eliminated
    // first (a search over it is slow or hopeless: the graph of a function over an unbounded
    // range is no finite union of boxes); in a group of narrow ranges, only when the search
    // leaves it undecided (the search's answer has each size's own set).
    let def = definition(grp);
    let wide = def.is_some()
        && grp.roots.iter().any(|r| {
            let (lo, hi) = root_range(grp, r, ranges);
            DimSet::interval(lo, hi).count() > ENUMERABLE
        });
    if wide {
        if let Some(s) = solve_defined(grp, ranges, budget, prover) {
            return s;
        }
    }
    if def.is_none() || wide {
        return solve_group_plain(grp, ranges, budget, prover);
    }
    // Narrow ranges: the search first, within a work cap (its answer has each size's own set);
    // past the cap, the elimination; then the search within the whole budget.
    let quick = Budget {
        work: budget.work.min(DEFINED_FIRST_WORK),
        ..*budget
    };
    let out = solve_group_plain(grp, ranges, &quick, prover);
    if out.undecided.is_none() {
        return out;
    }
    if let Some(s) = solve_defined(grp, ranges, budget, prover) {
        return s;
    }
    solve_group_plain(grp, ranges, budget, prover)
}

/// The largest estimated number of guard evaluations a search of a group with a defined size
/// ([`Defined`]) over narrow ranges may start with before the defined size is eliminated.
const DEFINED_FIRST_WORK: f64 = 2e6;

/// The first linking guard `x == E` (either side) of `grp` with `x` a root no other member is
/// derived from, `E` over other sizes only: `(guard index, x, E)`.
fn definition(grp: &Group) -> Option<(usize, String, Expr)> {
    grp.guards.iter().enumerate().find_map(|(i, g)| {
        let Expr::Cmp(CmpOp::Eq, a, b) = g else {
            return None;
        };
        [(a, b), (b, a)].into_iter().find_map(|(l, r)| {
            let Expr::Sym(x) = l.as_ref() else {
                return None;
            };
            let atoms = r.atoms();
            let alone = grp.members.iter().filter(|m| *m.root == **x).count() == 1
                && grp.roots.iter().any(|root| **root == **x);
            (alone && !atoms.is_empty() && !atoms.contains(x))
                .then(|| (i, x.to_string(), (**r).clone()))
        })
    })
}

/// Boxes of the reduced joint set [`Defined::some`] reads at most.
const DEFINED_BOXES: usize = 10_000;

impl Defined {
    /// The values of the other root `root` that pass with some value of the others (the
    /// defined size at its expression), from `j`, the reduced group's joint set. Computed
    /// exactly where the expression is nondecreasing and nonnegative in every size over the
    /// boxes (sums, products, `//` by positive constants, `Max`, `Min` of sizes and nonnegative
    /// constants) and the defined size's own set is one interval `lo..hi` containing the
    /// expression at each box's least corner: in a box, a value `v` of `root` then has a
    /// partner exactly when the expression at `v` and the others' least values is at most `hi`
    /// (that tuple passes; every other is larger), a prefix of its side found by bisection.
    /// Else an error: not computed (the defined size's own set, the image of the expression, is
    /// never computed here: `(h//16)*(w//16)` with both factors at least 2 takes the composite
    /// numbers, no periodic set).
    pub fn some(&self, j: &JointSet, root: &str) -> Result<DimSet, crate::Error> {
        let not = |why: &str| {
            crate::Error::NotComputed(format!("{root}'s values with some partner: {why}"))
        };
        let level = j
            .sizes
            .iter()
            .position(|s| s == root)
            .ok_or_else(|| not("not a size of the reduced group"))?;
        if j.undecided.is_some() {
            return Err(not("the reduced group is undecided"));
        }
        let (lo, hi) = match (self.own.min(), self.own.max()) {
            (Some(lo), Some(hi)) if DimSet::interval(lo, hi) == self.own => (lo, hi),
            _ => return Err(not("the defined size's own set is not one interval")),
        };
        if !nondecreasing(&self.expr) {
            return Err(not("the definition is not nondecreasing in every size"));
        }
        let (boxes, complete) = j.tree.boxes(DEFINED_BOXES);
        if !complete {
            return Err(not("too many boxes"));
        }
        let mut out = DimSet::empty();
        for b in &boxes {
            let least: Option<Vec<i128>> = b.iter().map(DimSet::min).collect();
            let (Some(least), Some(top)) = (least, b[level].max()) else {
                continue;
            };
            if least.iter().any(|&v| v < 0) {
                return Err(not("a size below 0"));
            }
            // The expression at `v` and the others' least values: `None` past 128 bits (above
            // `hi`), an error where it raises or is not an integer.
            let at = |v: i128| -> Result<Option<i128>, crate::Error> {
                let env = |a: &str| {
                    let i = j.sizes.iter().position(|s| s == a)?;
                    Some(if i == level { v } else { least[i] })
                };
                match self.expr.eval(&env) {
                    Ok(Value::Num(q)) if q.is_integer() => Ok(Some(*q.numer())),
                    Err(crate::expr::EvalError::Arith(crate::num::ArithError::Overflow)) => {
                        Ok(None)
                    }
                    _ => Err(not("the definition does not evaluate to an integer")),
                }
            };
            match at(least[level])? {
                Some(e) if e < lo => {
                    return Err(not("the definition is below the defined size's range"))
                }
                Some(e) if e <= hi => {}
                _ => continue,
            }
            // The largest `v` in least..=top with the expression at most `hi`.
            let (mut good, mut bad) = (least[level], top.saturating_add(1));
            while bad - good > 1 {
                let mid = good + (bad - good) / 2;
                if at(mid)?.is_some_and(|e| e <= hi) {
                    good = mid;
                } else {
                    bad = mid;
                }
            }
            out = out.union(&b[level].clip(least[level], good))?;
        }
        Ok(out)
    }
}

/// The values a defined size takes with some partner when its definition is a product of two
/// floor terms of two sizes (`(h//16)*(w//16)`, `h*w`): per box of the reduced set, the range
/// of each factor (every value of it is taken: a side of one interval, `//` by a positive
/// constant), within the defined size's own set (one interval). Membership is decided exactly
/// by `n`'s divisors ([`Products::contains`]); no periodic set holds it (with both factors
/// from 2 and no upper bound that binds, the composite numbers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Products {
    /// The two factors (over the sizes' sources, as the guards write them).
    pub factors: [Expr; 2],
    /// Per box of the reduced set, each factor's range.
    pub ranges: Vec<[(i128, i128); 2]>,
    /// The defined size's own set (one interval).
    pub within: (i128, i128),
}

impl Products {
    /// Whether `n` passes with some partner: within the own set and `p*q` for factor values of
    /// one box.
    pub fn contains(&self, n: i128) -> bool {
        (self.within.0..=self.within.1).contains(&n)
            && self
                .ranges
                .iter()
                .any(|[p, q]| crate::factor::is_product(n, *p, *q))
    }

    /// With one box whose upper bounds never bind within the own set, the least factors
    /// `(p, q)`: every `n` of the own set with a divisor `p' >= p` whose cofactor is `>= q`.
    pub fn unbounded_above(&self) -> Option<(i128, i128)> {
        let [[p, q]] = self.ranges.as_slice() else {
            return None;
        };
        let hi = self.within.1;
        let binds = |top: i128, other_lo: i128| other_lo <= 0 || top < hi / other_lo;
        (!binds(p.1, q.0) && !binds(q.1, p.0)).then_some((p.0, q.0))
    }

    /// The set in words, `factor` naming each factor.
    pub fn text(&self, factor: &dyn Fn(&Expr) -> String) -> String {
        let (a, b) = (factor(&self.factors[0]), factor(&self.factors[1]));
        let within = format!("{}..{}", self.within.0, self.within.1);
        // Both factors from 2 (one box): every composite `n` up to twice the smaller factor's
        // greatest value is in (its least prime factor `s` and `n / s <= n / 2`).
        if let [[p, q]] = self.ranges.as_slice() {
            let m = p.1.min(q.1);
            if p.0 == 2 && q.0 == 2 && m >= 2 && self.within.0 <= 4 {
                let all = m.saturating_mul(2);
                return if all >= self.within.1 {
                    format!(
                        "the products {a} * {b} with both factors at least 2, within {within}: the composite numbers from 4 (not periodic: membership decided by factoring)"
                    )
                } else {
                    format!(
                        "the products {a} * {b} with {a} in {}..{} and {b} in {}..{}, within {within}: every composite number from 4 to {all}, and above it those with such a factor pair (not periodic: membership decided by factoring)",
                        p.0, p.1, q.0, q.1
                    )
                };
            }
        }
        match self.unbounded_above() {
            Some((p, q)) => format!(
                "the products {a} * {b} with {a} >= {p} and {b} >= {q}, within {within} (not periodic: membership decided by factoring)"
            ),
            None => {
                let boxes: Vec<String> = self
                    .ranges
                    .iter()
                    .take(4)
                    .map(|[p, q]| format!("{a} in {}..{} and {b} in {}..{}", p.0, p.1, q.0, q.1))
                    .collect();
                format!(
                    "the products {a} * {b} with {}{}, within {within} (not periodic: membership decided by factoring)",
                    boxes.join(", or "),
                    if self.ranges.len() > 4 { ", or ..." } else { "" }
                )
            }
        }
    }
}

/// Boxes of the reduced set [`Defined::products`] reads at most.
const PRODUCT_BOXES: usize = 64;

impl Defined {
    /// The defined size's values with some partner as [`Products`], when its definition has that
    /// form and the reduced set lists its boxes (at most [`PRODUCT_BOXES`]), each side of the
    /// factors' sizes one interval of nonnegative sizes.
    pub fn products(&self, j: &JointSet) -> Option<Products> {
        if j.undecided.is_some() {
            return None;
        }
        let within = (self.own.min()?, self.own.max()?);
        if DimSet::interval(within.0, within.1) != self.own {
            return None;
        }
        let Expr::Mul(v) = &self.expr else {
            return None;
        };
        let [f0, f1] = v.as_slice() else {
            return None;
        };
        // Each factor: a size, or a size `//` a positive constant.
        let term = |f: &Expr| -> Option<(String, i128)> {
            match f {
                Expr::Sym(s) => Some((s.to_string(), 1)),
                Expr::FloorDiv(a, b) => match (a.as_ref(), b.as_ref()) {
                    (Expr::Sym(s), Expr::Const(k)) if k.is_integer() && k.is_positive() => {
                        Some((s.to_string(), *k.numer()))
                    }
                    _ => None,
                },
                _ => None,
            }
        };
        let (t0, t1) = (term(f0)?, term(f1)?);
        if t0.0 == t1.0 {
            return None;
        }
        let (l0, l1) = (j.level(&t0.0)?, j.level(&t1.0)?);
        let (boxes, complete) = j.tree.boxes(PRODUCT_BOXES);
        if !complete {
            return None;
        }
        let mut ranges = Vec::new();
        for b in &boxes {
            if b.iter().any(DimSet::is_empty) {
                continue;
            }
            let range = |l: usize, k: i128| -> Option<(i128, i128)> {
                let (lo, hi) = (b[l].min()?, b[l].max()?);
                (lo >= 0 && DimSet::interval(lo, hi) == b[l]).then(|| (lo / k, hi / k))
            };
            ranges.push([range(l0, t0.1)?, range(l1, t1.1)?]);
        }
        Some(Products {
            factors: [f0.clone(), f1.clone()],
            ranges,
            within,
        })
    }
}

/// Whether `e` is nondecreasing in every size and nonnegative wherever every size is: sizes,
/// nonnegative constants, and sums, products, `Max`, `Min` of such, `//` by a positive constant.
fn nondecreasing(e: &Expr) -> bool {
    match e {
        Expr::Sym(_) => true,
        Expr::Const(c) => !c.is_negative(),
        Expr::Add(v) | Expr::Mul(v) | Expr::Max(v) | Expr::Min(v) => v.iter().all(nondecreasing),
        Expr::FloorDiv(a, b) => {
            nondecreasing(a) && matches!(b.as_ref(), Expr::Const(c) if c.is_positive())
        }
        _ => false,
    }
}

/// `grp` solved with its defined size ([`definition`]) eliminated ([`Defined`]), when the
/// defined size's own guards are decided and the reduced group decides every tuple; `None`
/// otherwise (the caller keeps its own answer).
fn solve_defined(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
) -> Option<Solved> {
    let (gi, x, e) = definition(grp)?;
    let mut fates = vec![Fate::Solved(GuardFate::Joint); grp.guards.len()];
    let (lo, hi) = root_range(grp, &x, ranges);
    let mut own = DimSet::interval(lo, hi);
    let mut reduced = Group {
        members: grp
            .members
            .iter()
            .filter(|m| m.root != x)
            .cloned()
            .collect(),
        roots: grp.roots.iter().filter(|r| **r != x).cloned().collect(),
        guards: vec![],
        origin: vec![],
        relations: grp.relations.clone(),
    };
    let mut from: Vec<usize> = Vec::new();
    for (i, g) in grp.guards.iter().enumerate() {
        if i == gi {
            continue;
        }
        let atoms = g.atoms();
        if atoms.len() == 1 && atoms.iter().all(|a| **a == *x) {
            let d = decide(g, &x, &own, &budget.limits, prover);
            own = d.set?;
            fates[i] = d.fate;
            continue;
        }
        reduced.guards.push(g.substitute(&x, &e));
        reduced.origin.push(grp.origin[i]);
        from.push(i);
    }
    let solved = solve_group_with(&reduced, ranges, budget, prover);
    if !matches!(solved.undecided, None | Some(Undecided::Defined { .. })) {
        return None;
    }
    for (k, &i) in from.iter().enumerate() {
        fates[i] = solved.fates[k].clone();
    }
    let why = Undecided::Defined {
        sizes: grp.roots.clone(),
        dim: x.clone(),
        expr: e.to_string(),
    };
    let mut accepted = BTreeMap::new();
    let mut unsure = BTreeMap::new();
    // The others' own sets (their one-size guards decided in the reduced group).
    let domains: Vec<(String, DimSet)> = grp
        .roots
        .iter()
        .filter(|r| **r != x)
        .map(|r| {
            let reduced_own = solved
                .joint
                .as_ref()
                .and_then(|j| Some(j.domains[j.sizes.iter().position(|s| s == r)?].clone()));
            let d = reduced_own.unwrap_or_else(|| {
                let (lo, hi) = root_range(grp, r, ranges);
                DimSet::interval(lo, hi)
            });
            (r.clone(), d)
        })
        .collect();
    // The values that pass with every value of the others, decided: none, wherever the
    // partners can break the definition. An other size's value fails with some partner when
    // the defined size's own set has two values (at most one equals `E`); the defined size's
    // value fails with some partner when `E` takes two values (or raises) over the others' own
    // sets. Else (a degenerate group) undecided, as before.
    let others_nonempty = domains.iter().all(|(_, d)| !d.is_empty());
    let x_breaks = own.count() >= 2 && others_nonempty;
    let e_breaks = others_nonempty && definition_varies(&e, &domains);
    for r in &grp.roots {
        accepted.insert(r.clone(), DimSet::empty());
        let (decided, domain) = match domains.iter().find(|(n, _)| n == r) {
            Some((_, d)) => (x_breaks, d.clone()),
            None => (e_breaks, own.clone()),
        };
        if !decided {
            unsure.insert(r.clone(), domain);
        }
    }
    Some(Solved {
        accepted,
        joint_count: None,
        undecided: (!unsure.is_empty()).then_some(why),
        unsure,
        joint: None,
        fates,
        tied: None,
        defined: Some(Box::new(Defined {
            dim: x,
            expr: e,
            guard: gi,
            own,
            group: reduced,
            solved,
        })),
    })
}

/// Whether the definition `e` takes two different values, or raises, at tuples of `domains`
/// (each size's own set): the least tuple, and each size moved to its second and its greatest
/// value. Then no value of the defined size passes with every partner.
fn definition_varies(e: &Expr, domains: &[(String, DimSet)]) -> bool {
    let least: Option<Vec<i128>> = domains.iter().map(|(_, d)| d.min()).collect();
    let Some(least) = least else {
        return false;
    };
    let at = |t: &[i128]| -> Option<Option<i128>> {
        let env = |a: &str| domains.iter().position(|(n, _)| n == a).map(|i| t[i]);
        match e.eval(&env) {
            Ok(Value::Num(q)) if q.is_integer() => Some(Some(*q.numer())),
            // Overflow: Python would compute it; no answer here.
            Err(crate::expr::EvalError::Arith(crate::num::ArithError::Overflow)) => None,
            // Raises (a division by zero) or not an integer: the tuple fails every value.
            Ok(_) | Err(crate::expr::EvalError::Arith(_)) => Some(None),
            Err(_) => None,
        }
    };
    let Some(base) = at(&least) else {
        return false;
    };
    if base.is_none() {
        return true;
    }
    let differs = |t: &[i128]| match at(t) {
        Some(Some(y)) => Some(y) != base,
        Some(None) => true,
        None => false,
    };
    for (i, (_, d)) in domains.iter().enumerate() {
        for v in d.iter().skip(1).take(1).chain(d.max()) {
            let mut t = least.clone();
            t[i] = v;
            if differs(&t) {
                return true;
            }
        }
    }
    // Every size at once at its least value from 2^k (a product of floors is 0 at the least
    // corner and along each side alone).
    for k in 1..63 {
        let t: Vec<i128> = domains
            .iter()
            .zip(&least)
            .map(|((_, d), &lo)| {
                d.max()
                    .and_then(|hi| d.clip(1 << k, hi).min())
                    .unwrap_or(lo)
            })
            .collect();
        if differs(&t) {
            return true;
        }
    }
    false
}

/// [`solve_group_with`] without eliminating a defined size.
fn solve_group_plain(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
) -> Solved {
    let limits = &budget.limits;
    let mut out = Solved {
        accepted: BTreeMap::new(),
        joint_count: None,
        undecided: None,
        unsure: BTreeMap::new(),
        joint: None,
        fates: vec![Fate::Solved(GuardFate::Joint); grp.guards.len()],
        tied: None,
        defined: None,
    };
    let mut linking: Vec<Expr> = Vec::new();
    let mut linking_idx: Vec<usize> = Vec::new();
    for (i, g) in grp.guards.iter().enumerate() {
        if g.atoms().len() > 1 {
            linking.push(g.clone());
            linking_idx.push(i);
        }
    }
    for root in &grp.roots {
        let (lo, hi) = root_range(grp, root, ranges);
        let mut set = DimSet::interval(lo, hi);
        let mut unsure = DimSet::empty();
        for (i, g) in grp.guards.iter().enumerate() {
            let atoms = g.atoms();
            if atoms.len() > 1
                || atoms.iter().any(|a| **a != **root)
                || (atoms.is_empty() && *root != grp.roots[0])
            {
                continue;
            }
            let d = decide(g, root, &set, limits, prover);
            match d.set {
                Some(s) => set = s,
                None => {
                    if let Fate::Undecided(why) = &d.fate {
                        out.undecided.get_or_insert_with(|| why.clone());
                    }
                    unsure = set.clone();
                }
            }
            out.fates[i] = d.fate;
        }
        if unsure.is_empty() {
            out.accepted.insert(root.clone(), set);
        } else {
            // No value is proven to pass the undecided guard: all of `set` is unsure.
            out.accepted.insert(root.clone(), DimSet::empty());
            out.unsure.insert(root.clone(), unsure);
        }
    }
    if linking.is_empty() {
        return out;
    }
    if !out.unsure.is_empty() {
        let culprit = out.unsure.keys().next().cloned().unwrap_or_default();
        // Nothing is proven for any root of the group while one of them is unsure.
        for r in &grp.roots {
            if let Some(a) = out.accepted.get_mut(r) {
                if !a.is_empty() {
                    out.unsure.insert(r.clone(), std::mem::take(a));
                }
            }
        }
        for &i in &linking_idx {
            out.fates[i] = Fate::Undecided(Undecided::Depends(culprit.clone()));
        }
        return out;
    }
    let domains: Vec<DimSet> = grp.roots.iter().map(|r| out.accepted[r].clone()).collect();
    let own_domains = domains;
    // A linking guard that holds on every box of the sizes' own segments (interval bounds:
    // products, min, max, abs of monotone floor terms against constants) constrains nothing:
    // it is decided for every tuple before the search.
    let printed: Vec<Expr> = linking
        .into_iter()
        .filter(|g| !crate::bounds::holds_on_segments(g, &grp.roots, &own_domains))
        .collect();
    // The guards as printed first: most groups are decided so, and the normal form of hundreds
    // of long guards costs more than the search (a Swin-T's 418 linking guards: 0.8 s as
    // printed, 14 s through the normal form).
    // Guards that tie sizes (`F(a) == G(b)`): a search that would evaluate more than
    // TIE_FIRST_WORK guards is not started before the closed form is tried ([`solve_tied`]:
    // it costs what the problem without the tied sizes costs, whatever the ranges).
    let has_tie = printed.iter().any(|g| Tie::of(g).is_some());
    let quick = Budget {
        work: budget.work.min(TIE_FIRST_WORK),
        ..*budget
    };
    let mut js = solve_joint(
        &grp.roots,
        &own_domains,
        &printed,
        if has_tie { &quick } else { budget },
    );
    if has_tie && js.undecided.is_some() {
        out.tied = solve_tied(&grp.roots, &own_domains, &printed, budget)
            .filter(|t| t.reduced.undecided.is_none() && t.count().is_some());
        if out.tied.is_none() {
            js = solve_joint(&grp.roots, &own_domains, &printed, budget);
        }
    }
    let (linking, domains) = if js.undecided.is_none() || out.tied.is_some() {
        (printed.clone(), own_domains.clone())
    } else {
        // The linking guards in normal form over the sizes' accepted sets (identities of the
        // program's code seen as such): each holds at exactly the tuples the original one
        // does, and every tuple outside the narrowed box (`domains`) fails a guard: a guard
        // left over one size narrowed it.
        let own: Vec<Expr> = grp
            .guards
            .iter()
            .filter(|g| g.atoms().len() == 1)
            .cloned()
            .collect();
        // Only the guards over a size too wide to enumerate: the others the search enumerates
        // as printed (a Swin-T's batch, claimed to 2^63-1, is in 160 of its 519 linking guards,
        // H and W in 116..227 in all of them).
        let wide = |g: &Expr| {
            g.atoms().iter().any(|a| {
                grp.roots
                    .iter()
                    .position(|r| **r == **a)
                    .is_some_and(|i| own_domains[i].count() > ENUMERABLE)
            })
        };
        let (to_normal, as_printed): (Vec<Expr>, Vec<Expr>) = if printed.iter().any(wide) {
            printed.iter().cloned().partition(|g| wide(g))
        } else {
            (printed.clone(), Vec::new())
        };
        let (mut linking, domains) = normalize(&to_normal, &own, &grp.roots, &own_domains, limits);
        linking.extend(as_printed);
        js = solve_joint(&grp.roots, &domains, &linking, budget);
        (linking, domains)
    };
    if js.undecided.is_some() && !has_tie {
        // Sizes tied by `F(a) == F(b)` over ranges no enumeration covers: in closed form.
        // Over the guards as printed (the ties' own normal form reads them) and the sizes'
        // own accepted sets.
        out.tied = solve_tied(&grp.roots, &own_domains, &printed, budget)
            .filter(|t| t.reduced.undecided.is_none() && t.count().is_some());
    }
    if let (Some(u), Some(p), None) = (&js.undecided, prover, &out.tied) {
        // Past the budget: Z3 may still prove that every combination passes.
        let refs: Vec<&Expr> = linking.iter().collect();
        let sets: Vec<(&str, &DimSet)> =
            grp.roots.iter().map(|r| r.as_str()).zip(&domains).collect();
        match p(&refs, &sets) {
            BoxAnswer::Holds => {
                js.tree = Tree::full(&js.domains);
                js.undecided = None;
                for &i in &linking_idx {
                    out.fates[i] = Fate::Proved;
                }
            }
            BoxAnswer::Fails(pt) => {
                let why = format!("{}; Z3 found the failing combination {pt:?}", u.reason);
                js.undecided.as_mut().expect("undecided").reason = why;
            }
            BoxAnswer::Unknown(z) => {
                // Z3 ran out of the same budget: said once.
                let why = if z == u.reason {
                    z
                } else {
                    format!("{}; Z3: {z}", u.reason)
                };
                js.undecided.as_mut().expect("undecided").reason = why;
            }
        }
    }
    // The joint set over the sizes' own accepted sets (what `for_all` and the failing
    // examples are relative to): the tuples outside the narrowed box fail.
    for (l, name) in js.sizes.iter().enumerate() {
        if let Some(i) = grp.roots.iter().position(|r| r == name) {
            js.domains[l] = own_domains[i].clone();
        }
    }
    if let Some(t) = &out.tied {
        // The closed form is the answer: every tuple decided. Each size's values that pass with
        // every value of the others, from the tied set (over the sizes' own accepted sets).
        let own: BTreeMap<&str, &DimSet> = grp
            .roots
            .iter()
            .map(String::as_str)
            .zip(&own_domains)
            .collect();
        let domain = |n: &str| own.get(n).map(|d| (*d).clone());
        let mut sets = Vec::new();
        for r in &grp.roots {
            match t.for_all(r, &domain) {
                Ok(set) => sets.push(set),
                Err(_) => break,
            }
        }
        if sets.len() == grp.roots.len() {
            for (r, set) in grp.roots.iter().zip(sets) {
                out.accepted.insert(r.clone(), set);
            }
            out.joint_count = Some((t.count().unwrap_or(u128::MAX), js.box_count()));
            out.joint = Some(js);
            return out;
        }
        out.tied = None;
    }
    out.joint_count = Some((js.count(), js.box_count()));
    if let Some(u) = &js.undecided {
        let why = Undecided::Budget {
            sizes: grp.roots.clone(),
            limit: u.reason.clone(),
            combinations: u.count,
        };
        out.undecided = Some(why.clone());
        for &i in &linking_idx {
            out.fates[i] = Fate::Undecided(why.clone());
        }
        for (l, name) in js.sizes.iter().enumerate() {
            let unsure = if l == 0 {
                u.sides[0].clone()
            } else {
                js.domains[l].clone()
            };
            out.unsure.insert(name.clone(), unsure);
        }
    }
    let for_all: Result<Vec<DimSet>, crate::error::Error> =
        grp.roots.iter().map(|r| js.for_all(r)).collect();
    match for_all {
        Ok(sets) => {
            for (r, set) in grp.roots.iter().zip(sets) {
                out.accepted.insert(r.clone(), set);
            }
        }
        Err(e) => {
            // A projection of the joint set has no closed form within the budget: the joint
            // set stays exact, but no size's own answer is shown, so each is undecided.
            let why = Undecided::PerSize {
                sizes: grp.roots.clone(),
                error: Box::new(e),
            };
            out.undecided.get_or_insert_with(|| why.clone());
            for &i in &linking_idx {
                if !matches!(out.fates[i], Fate::Undecided(_)) {
                    out.fates[i] = Fate::Undecided(why.clone());
                }
            }
            for (r, d) in grp.roots.iter().zip(&js.domains) {
                out.accepted.insert(r.clone(), DimSet::empty());
                out.unsure.insert(r.clone(), d.clone());
            }
        }
    }
    out.joint = Some(js);
    out
}

/// The report of a joint set with tied sizes: its examples re-checked against every guard of
/// the group (a failing "accepted" or passing "rejected" tuple is dropped, never shown).
fn tied_report(
    t: &TiedSet,
    grp: &Group,
    name: &dyn Fn(&str) -> String,
    label: &dyn Fn(&str) -> String,
) -> Option<TiedReport> {
    let sources = t.sizes();
    let passes = |tuple: &[i128]| {
        let env = |a: &str| sources.iter().position(|s| s == a).map(|i| tuple[i]);
        grp.guards
            .iter()
            .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
    };
    let accepted = t.count()?;
    let shared: Vec<&str> = t.shared().iter().map(|x| x.b.as_str()).collect();
    let ties: Vec<TieReport> = t
        .ties
        .iter()
        .map(|(x, own)| TieReport {
            dims: [name(&x.a), name(&x.b)],
            block: x.d,
            offset: x.c,
            shift: x.s,
            range: [own.min().unwrap_or(0), own.max().unwrap_or(-1)],
            own: Some(Feasible::from(own)),
            shared_dim: shared.contains(&x.b.as_str()),
        })
        .collect();
    let words: Vec<String> = t
        .ties
        .iter()
        .map(|(x, _)| {
            let b = if x.s == 0 {
                label(&x.b)
            } else {
                crate::python::linear(crate::num::q(1), &label(&x.b), x.s)
            };
            let mut same = if x.d == 1 {
                format!("{b} equals {}", label(&x.a))
            } else {
                format!(
                    "{b} lies in the block of {} values holding {} (blocks start at {} mod {})",
                    x.d,
                    label(&x.a),
                    (-x.c).rem_euclid(x.d),
                    x.d
                )
            };
            if let Some(e) = &x.extra {
                same = format!(
                    "{same}, where {}",
                    e.substitute(&x.a, &Expr::sym(&label(&x.a)))
                );
            }
            if shared.contains(&x.b.as_str()) {
                format!("{same}; one Dim for both is sound")
            } else {
                same
            }
        })
        .collect();
    let (boxes, complete) = t.reduced.tree.boxes(100);
    if !complete {
        return None;
    }
    Some(TiedReport {
        boxes: boxes
            .iter()
            .map(|b| b.iter().map(Feasible::from).collect())
            .collect(),
        dims: sources.iter().map(|s| name(s)).collect(),
        sources: sources.clone(),
        accepted,
        accepted_examples: t
            .accepted_examples(5)
            .into_iter()
            .filter(|x| passes(x))
            .collect(),
        rejected_examples: t
            .rejected_examples(5)
            .into_iter()
            .filter(|x| !passes(x))
            .collect(),
        summary: format!(
            "decided in closed form: {} tuples pass; {}",
            crate::report::count_text(accepted),
            words.join("; ")
        ),
        ties,
    })
}

/// Tuples of a largest box above which it is re-checked at a sample only.
pub const BOX_RECHECK: u128 = 256;

/// Guard evaluations the re-check of a largest box may spend (the exact evaluator costs
/// microseconds per evaluation on guards of thousands of characters): past it, fewer tuples.
const BOX_RECHECK_WORK: u128 = 40_000;

/// The tuples of a box (one progression per side) its re-check evaluates: all of them when
/// there are at most [`BOX_RECHECK`] and the work allows, else every corner and tuples spread
/// evenly over the box, at most as many as the work allows (at least 16).
fn box_sample(sides: &[Progression], count: u128, guards: usize) -> Vec<Vec<i128>> {
    let per = (BOX_RECHECK_WORK / (guards.max(1) as u128)).max(16);
    let n = BOX_RECHECK.min(per);
    let nth = |mut k: u128| -> Vec<i128> {
        let mut t = vec![0; sides.len()];
        for (l, p) in sides.iter().enumerate().rev() {
            let c = p.count().max(1);
            t[l] = p.lo + (k % c) as i128 * p.modulus;
            k /= c;
        }
        t
    };
    if count <= n {
        return (0..count).map(nth).collect();
    }
    let mut out: Vec<Vec<i128>> = Vec::new();
    for mask in 0..(1u32 << sides.len().min(16)) {
        let t: Vec<i128> = sides
            .iter()
            .enumerate()
            .map(|(l, p)| if mask >> l & 1 == 1 { p.hi } else { p.lo })
            .collect();
        if !out.contains(&t) {
            out.push(t);
        }
    }
    let step = count / n;
    for k in 0..n {
        let t = nth(k * step + step / 2);
        if !out.contains(&t) {
            out.push(t);
        }
    }
    out
}

/// Most values a size may take for the joint search to enumerate it as its guards are printed,
/// without their normal form ([`normalize`]).
const ENUMERABLE: u128 = 1 << 16;

/// A group's joint set as the reports carry it (`check`'s `joint`, `diagnose`'s and `verify`'s
/// `joint_sets`), and its largest sound box.
#[derive(Debug, Clone)]
pub struct Linked {
    /// The report entry.
    pub report: JointReport,
    /// The largest box of one progression per root, in the joint set's level order.
    pub largest: Option<LargestBox>,
    /// For two sizes: one progression both take at once, when it admits more than the box.
    pub shared: Option<Progression>,
    /// The joint set (in root names).
    pub joint: JointSet,
    /// The group's answer in closed form when guards tie sizes ([`Solved::tied`]), with the
    /// largest box of its reduced set.
    pub tied: Option<(TiedSet, Option<LargestBox>)>,
    /// A size the others define ([`Solved::defined`]): `joint` is then the reduced group's,
    /// over the others, and no size has a box, a shared side or a set of its own here.
    pub defined: Option<Box<Defined>>,
}

/// The spec a linked group takes, chosen once for the whole group ([`Linked::choice`]): every
/// member's line (named or not) comes from the same answer, so the lines are sound together.
/// One member under a shared `Dim` and another on its side of a box would not be: for
/// `|x - y| <= 1` and `x + y <= 21` traced at (10, 11), `x` in 2..10 (the shared `Dim`) and `y`
/// in 9..11 (the box through the traced sizes) admit (2, 11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// One `Dim` both roots take at once (over the roots), when it admits more than the largest
    /// box and holds the traced sizes.
    Shared(Progression),
    /// A sound box through the traced sizes (one side per root, in level order), when the
    /// largest box leaves them out: torch refuses a spec that excludes its example inputs.
    Example(Vec<Progression>),
    /// The largest sound box (one side per root, in level order).
    Largest(Vec<Progression>),
    /// For a tied group ([`Linked::tied`]): a sound box of the sizes no tie binds, each tied
    /// size written from its partner (`b = a`, or `a` plus the traced difference inside one
    /// block), re-checked at its corners and at tuples spread over it.
    Tied(TiedSpec),
}

impl Linked {
    /// The group's [`Choice`]: one shared `Dim` when there is one and it holds every traced size
    /// (`traced`, by size) at one value of the roots, else the box through the traced sizes when
    /// the largest box leaves them out (`example`, [`Linked::example_box`]), else the largest
    /// box; `None` when no box passes.
    pub fn choice(
        &self,
        grp: &Group,
        traced: &dyn Fn(&str) -> Option<i128>,
        example: Option<&LargestBox>,
    ) -> Option<Choice> {
        if let Some((t, lb)) = &self.tied {
            return tied_choice(t, lb.as_ref(), grp, traced).map(Choice::Tied);
        }
        if let Some(p) = &self.shared {
            // Each traced member's root value: the shared Dim holds them when they are one
            // value of `p` (the roots are equal under it).
            let roots: Option<Vec<i128>> = grp
                .members
                .iter()
                .filter_map(|m| {
                    let v = traced(&m.name)? - m.offset;
                    Some((v % m.coef == 0).then(|| v / m.coef))
                })
                .collect();
            if roots.is_some_and(|r| r.iter().all(|&v| p.contains(v) && v == r[0])) {
                return Some(Choice::Shared(*p));
            }
        }
        if let Some(b) = example {
            return Some(Choice::Example(b.sides.clone()));
        }
        self.largest
            .as_ref()
            .map(|b| Choice::Largest(b.sides.clone()))
    }

    /// For a group of two sizes whose diagonal beats the largest box: `member`'s spec under one
    /// shared `Dim`: the shared progression (mapped to the member), and for every member but
    /// the first root the first root, which it is written from (`member.coef * first +
    /// member.offset`, [`crate::python::alias`]).
    pub fn shared_side(&self, member: &Member) -> Option<(Progression, Option<&str>)> {
        let p = self.shared.as_ref()?;
        let l = self.joint.level(&member.root)?;
        let alias = (l == 1 || member.name != member.root).then(|| self.joint.sizes[0].as_str());
        Some((member.side(p), alias))
    }

    /// The values of `member` that pass with some value of the others (from the tied set when
    /// the group is tied).
    pub fn some(&self, member: &Member) -> Result<DimSet, crate::Error> {
        if let Some(d) = &self.defined {
            return member.image(&d.some(&self.joint, &member.root)?);
        }
        let p = match &self.tied {
            Some((t, _)) => t.projection(&member.root)?,
            None => self.joint.projection(&member.root)?,
        };
        member.image(&p)
    }

    /// `member`'s side under a tied choice ([`Choice::Tied`]), and for a tied root the root
    /// it is written from and the offset.
    pub fn tied_side(
        &self,
        choice: Option<&Choice>,
        member: &Member,
    ) -> Option<(Progression, Option<(String, i128)>)> {
        let (Some((t, _)), Some(Choice::Tied(spec))) = (&self.tied, choice) else {
            return None;
        };
        let (p, from) = spec.side(t, &member.root)?;
        Some((member.side(&p), from.filter(|_| member.name == member.root)))
    }

    /// The side of the largest box for `member` (a root or a size derived from one).
    pub fn side(&self, member: &Member) -> Option<Progression> {
        let b = self.largest.as_ref()?;
        let l = self.joint.level(&member.root)?;
        Some(member.side(&b.sides[l]))
    }

    /// When the largest box leaves out `point` (one value per root, in the joint set's level
    /// order: the traced sizes), a sound box through it ([`box_through`]); `None` when the
    /// largest box holds the point or the point is not in the joint set. Torch refuses a spec
    /// that excludes its example inputs, so this is the box a spec for that export must use.
    pub fn example_box(&self, point: &[i128]) -> Option<LargestBox> {
        if self.tied.is_some() || self.defined.is_some() {
            // The tied choice finds its own box through the traced sizes; a group with a
            // defined size has no box.
            return None;
        }
        let holds = |b: &LargestBox| b.sides.iter().zip(point).all(|(s, &x)| s.contains(x));
        if self.largest.as_ref().is_some_and(holds) {
            return None;
        }
        box_through(&self.joint.tree, point)
    }

    /// The traced tuple of the group in the joint set's level order: each root's value from a
    /// member whose traced size `traced` knows (`None` when some root has none).
    pub fn point(&self, grp: &Group, traced: &dyn Fn(&str) -> Option<i128>) -> Option<Vec<i128>> {
        self.joint
            .sizes
            .iter()
            .map(|root| {
                grp.members
                    .iter()
                    .filter(|m| &m.root == root)
                    .find_map(|m| {
                        let v = traced(&m.name)? - m.offset;
                        (v % m.coef == 0).then(|| v / m.coef)
                    })
            })
            .collect()
    }

    /// Checks, independently of the search, that `set` (values of the root at `level`) goes
    /// with the rest of the joint set: for each box of the tree, every tuple of that box with
    /// `set` as its side at `level` passes every guard of the group (`guards`, over the roots).
    /// Evaluated tuple by tuple with the exact evaluator when there are at most
    /// [`SIDE_RECHECK`]; else each box is asked to `prover` (Z3); else not checked, with why.
    pub fn check_side(
        &self,
        guards: &[Expr],
        level: usize,
        set: &DimSet,
        prover: Option<Prover>,
    ) -> SideCheck {
        let j = &self.joint;
        let (boxes, complete) = j.tree.boxes(SIDE_BOXES);
        if !complete {
            return SideCheck::Unchecked(format!(
                "the joint set has more than {SIDE_BOXES} boxes; exact by the joint search"
            ));
        }
        let boxes: Vec<Vec<DimSet>> = boxes
            .into_iter()
            .map(|mut b| {
                b[level] = set.clone();
                b
            })
            .collect();
        let count = boxes.iter().fold(0u128, |a, b| {
            a.saturating_add(b.iter().fold(1u128, |c, s| c.saturating_mul(s.count())))
        });
        let holds = |t: &[i128]| {
            let env = |a: &str| j.sizes.iter().position(|s| s == a).map(|i| t[i]);
            guards
                .iter()
                .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
        };
        if count <= SIDE_RECHECK {
            for b in &boxes {
                for t in crate::linked::tuples(b) {
                    if let Some(e) = crate::budget::expired() {
                        return SideCheck::Unchecked(e.reason());
                    }
                    if !holds(&t) {
                        return SideCheck::Fails(t);
                    }
                }
            }
            return SideCheck::Enumerated;
        }
        let Some(p) = prover else {
            return SideCheck::Unchecked(format!(
                "{} combinations with the other sizes: exact by the joint search, too many to re-check one by one",
                crate::linked::count_text(count)
            ));
        };
        let refs: Vec<&Expr> = guards.iter().collect();
        for b in &boxes {
            let sets: Vec<(&str, &DimSet)> = j.sizes.iter().map(|s| s.as_str()).zip(b).collect();
            match p(&refs, &sets) {
                BoxAnswer::Holds => {}
                BoxAnswer::Fails(t) => return SideCheck::Fails(t),
                BoxAnswer::Unknown(z) => {
                    return SideCheck::Unchecked(format!("exact by the joint search; Z3: {z}"))
                }
            }
        }
        SideCheck::Proved
    }

    /// Whether the linking guards reject some combination of the roots' own accepted values
    /// (or the search left some undecided): then no size of the group can take a `Dim` of its
    /// own, only its side of the largest box.
    pub fn restricts(&self) -> bool {
        // A size the others define: every value of each size fails with some partner.
        self.defined.is_some()
            || self.joint.undecided.is_some()
            || self.joint.count() < self.joint.box_count()
    }
}

/// Guard evaluations a search of a group with tied sizes may start with before the closed form
/// of the ties is tried ([`solve_group_with`]).
const TIE_FIRST_WORK: f64 = 1e5;

/// Boxes of a joint set [`Linked::check_side`] checks one by one.
const SIDE_BOXES: usize = 16;

/// Tuples [`Linked::check_side`] evaluates one by one.
pub const SIDE_RECHECK: u128 = 4096;

/// How [`Linked::check_side`] checked a size's set against the rest of the joint set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideCheck {
    /// Every tuple was evaluated with the exact evaluator, and passes.
    Enumerated,
    /// Z3 proved that every tuple passes.
    Proved,
    /// This tuple (in the joint set's level order) fails a guard.
    Fails(Vec<i128>),
    /// Not checked independently of the joint search, with why.
    Unchecked(String),
}

/// The report of a solved group's joint set: its boxes, the largest sound box (re-checked tuple
/// by tuple with the exact evaluator, independently of the search), accepted examples, real
/// failing tuples (each re-checked), the summary sentence. `name` gives a root's dimension name,
/// `label` the name the summary uses, `claimed` how many values a root was claimed to take.
/// `None` for a group of one root.
pub fn linked(
    solved: &Solved,
    grp: &Group,
    budget: &Budget,
    name: &dyn Fn(&str) -> String,
    label: &dyn Fn(&str) -> String,
    claimed: &dyn Fn(&str) -> u128,
) -> Option<Linked> {
    if let Some(d) = &solved.defined {
        return defined_linked(d, grp, budget, name, label, claimed);
    }
    let j = solved.joint.as_ref().filter(|_| grp.roots.len() > 1)?;
    if let Some(t) = &solved.tied {
        return tied_linked(t, j, grp, budget, name, label, claimed);
    }
    let lb = largest_box(&j.tree, budget);
    let dims: Vec<String> = j.sizes.iter().map(|s| name(s)).collect();
    let claimed_count = j
        .sizes
        .iter()
        .map(|s| claimed(s))
        .fold(1u128, |a, c| a.saturating_mul(c));
    let (boxes, complete) = j.tree.boxes(100);
    let check = TupleCheck::new(&j.sizes, &grp.guards);
    let holds = |t: &[i128]| check.holds(t);
    let largest_box = lb.as_ref().map(|b| {
        let mut sides: Vec<_> = b
            .sides
            .iter()
            .zip(&dims)
            .map(|(p, n)| unchecked_suggestion(n, p, Proof::Periodic))
            .collect();
        let tuples = box_sample(&b.sides, b.count, grp.guards.len());
        // Past the deadline of the command's budget the re-check stops where it is.
        let mut checked = 0;
        let mut ok = true;
        for t in &tuples {
            if crate::budget::expired().is_some() {
                break;
            }
            if !holds(t) {
                ok = false;
                break;
            }
            checked += 1;
        }
        let all = checked as u128 == b.count;
        for s in sides.iter_mut() {
            s.certificate = if ok && all {
                Certificate::Enumeration
            } else {
                Certificate::None
            };
            if ok && !all {
                s.certificate_note = Some(format!(
                    "re-checked at {checked} of its {} tuples; exact by the joint search",
                    b.count
                ));
            }
        }
        BoxReport {
            count: b.count,
            maximal: b.maximal,
            sides,
        }
    });
    // Two sizes that must be equal (two images through one broadcast): one shared Dim admits
    // the diagonal, which no box can. Offered when it beats the largest box.
    let shared =
        diagonal(j, &holds).filter(|(p, _)| p.count() > lb.as_ref().map_or(0, |b| b.count));
    let shared_report = shared.as_ref().map(|(p, all)| {
        let mut side = unchecked_suggestion(&dims[0], p, Proof::Periodic);
        if *all {
            side.certificate = Certificate::Enumeration;
        }
        SharedReport {
            count: p.count(),
            dims: [dims[0].clone(), dims[1].clone()],
            side,
        }
    });
    let rejected: Vec<Vec<i128>> = j
        .rejected_examples(5)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| !holds(t))
        .collect();
    let mut labels: Vec<(String, String)> = j.sizes.iter().map(|s| (s.clone(), label(s))).collect();
    labels.sort_by(|a, b| a.1.cmp(&b.1));
    let report = JointReport {
        dims,
        sources: j.sizes.clone(),
        claimed: claimed_count,
        accepted: j.count(),
        boxes: boxes
            .iter()
            .map(|b| b.iter().map(Feasible::from).collect())
            .collect(),
        // Never complete while part of the joint set is undecided: the boxes are the decided
        // part, and a tuple outside them is not known to fail.
        boxes_complete: complete && j.undecided.is_none(),
        largest_box,
        shared: shared_report.clone(),
        accepted_examples: j.tree.examples(5),
        rejected_examples: rejected,
        undecided: j.undecided.as_ref().map(|u| JointUndecided {
            count: u.count,
            reason: u.reason.clone(),
        }),
        summary: match &shared_report {
            Some(s) => format!(
                "{}; one Dim for both ({} = {}) admits {} pairs, {}..{}{}",
                j.summary(&labels),
                s.dims[1],
                s.dims[0],
                s.count,
                s.side.lo,
                s.side.hi,
                if s.side.modulus > 1 {
                    format!(" ≡ {} (mod {})", s.side.residue, s.side.modulus)
                } else {
                    String::new()
                }
            ),
            None => j.summary(&labels),
        },
        search: JointSearch {
            points: j.stats.points,
            periodic_solves: j.stats.periodic_solves,
            shared_nodes: j.stats.shared_nodes,
        },
        tied: solved
            .tied
            .as_ref()
            .and_then(|t| tied_report(t, grp, name, label)),
        equal: vec![],
        defined: vec![],
    };
    Some(Linked {
        report,
        largest: lb,
        shared: shared.map(|(p, _)| p),
        joint: j.clone(),
        tied: None,
        defined: None,
    })
}

/// [`linked`] for a group with a defined size ([`Solved::defined`]): the reduced group's joint
/// set over the others (boxes, examples completed with the defined size and re-checked against
/// every guard of the group), the definition ([`DefinedReport`]), no largest box. `None` when
/// the reduced group has no joint set of its own (one size, tied, or itself with a defined
/// size): its sizes then stay undecided, with the reason.
fn defined_linked(
    d: &Defined,
    grp: &Group,
    budget: &Budget,
    name: &dyn Fn(&str) -> String,
    label: &dyn Fn(&str) -> String,
    claimed: &dyn Fn(&str) -> u128,
) -> Option<Linked> {
    // Every size the others define (several: the reduced group had one of its own, issue 34
    // gap 4), outermost first; the innermost reduced group's joint set is over the rest.
    let mut defs: Vec<&Defined> = vec![d];
    let mut r = &d.solved;
    while let Some(inner) = &r.defined {
        defs.push(inner);
        r = &inner.solved;
    }
    if r.tied.is_some() || r.undecided.is_some() {
        return None;
    }
    // No guard links the rest (each is one size's): their joint set is the product of their
    // own sets.
    let product;
    let j = match &r.joint {
        Some(j) => j,
        None if r.unsure.is_empty() => {
            let rest = &defs.last()?.group.roots;
            let domains: Option<Vec<DimSet>> =
                rest.iter().map(|x| r.accepted.get(x).cloned()).collect();
            let domains = domains?;
            product = JointSet {
                sizes: rest.clone(),
                tree: crate::linked::Tree::full(&domains),
                domains,
                undecided: None,
                stats: Default::default(),
            };
            &product
        }
        None => return None,
    };
    let (boxes, complete) = j.tree.boxes(100);
    // A tuple of the rest completed with each defined size (innermost first: an outer
    // definition may read an inner defined size), in `sources` order.
    let with_defined = |t: &[i128]| -> Option<Vec<i128>> {
        let mut full = t.to_vec();
        let mut names: Vec<&str> = j.sizes.iter().map(String::as_str).collect();
        for x in defs.iter().rev() {
            let env = |a: &str| names.iter().position(|s| *s == a).map(|i| full[i]);
            let v = match x.expr.eval(&env) {
                Ok(Value::Num(q)) if q.is_integer() => *q.numer(),
                _ => return None,
            };
            full.push(v);
            names.push(&x.dim);
        }
        Some(full)
    };
    let mut sources = j.sizes.clone();
    sources.extend(defs.iter().rev().map(|x| x.dim.clone()));
    let passes = |t: &[i128]| {
        let env = |a: &str| sources.iter().position(|s| s == a).map(|i| t[i]);
        grp.guards.iter().all(|g| matches!(g.truth(&env), Ok(true)))
    };
    let accepted_examples: Vec<Vec<i128>> = j
        .tree
        .examples(20)
        .iter()
        .filter_map(|t| with_defined(t))
        .filter(|t| passes(t))
        .take(5)
        .collect();
    let rejected_examples: Vec<Vec<i128>> = j
        .tree
        .examples(5)
        .iter()
        .filter_map(|t| with_defined(t))
        .map(|mut t| {
            // The outermost defined size off its definition.
            *t.last_mut().expect("defined") += 1;
            t
        })
        .filter(|t| !passes(t))
        .collect();
    // A box only where one size is defined (the cap reads one definition).
    let lb = (defs.len() == 1)
        .then(|| defined_box(d, j, grp, budget))
        .flatten();
    let largest_box = lb.as_ref().map(|b| {
        let sides = b
            .sides
            .iter()
            .zip(&j.sizes)
            .map(|(p, s)| {
                let mut side = unchecked_suggestion(&name(s), p, Proof::Periodic);
                side.certificate_note = Some(format!(
                    "a box of the others, each tuple with {} at its definition; re-checked at its corners and tuples spread over it",
                    name(&d.dim)
                ));
                side
            })
            .collect();
        BoxReport {
            count: b.count,
            maximal: false,
            sides,
        }
    });
    let relation_of = |x: &Defined| {
        let mut relation = x.expr.clone();
        for a in x.expr.atoms() {
            relation = relation.substitute(&a, &Expr::sym(&name(&a)));
        }
        relation
    };
    let relation = relation_of(d);
    let mut labels: Vec<(String, String)> = j.sizes.iter().map(|s| (s.clone(), label(s))).collect();
    labels.sort_by(|a, b| a.1.cmp(&b.1));
    let report = JointReport {
        dims: j.sizes.iter().map(|s| name(s)).collect(),
        sources: j.sizes.clone(),
        claimed: grp
            .roots
            .iter()
            .map(|s| claimed(s))
            .fold(1u128, |a, c| a.saturating_mul(c)),
        accepted: j.count(),
        boxes: boxes
            .iter()
            .map(|b| b.iter().map(Feasible::from).collect())
            .collect(),
        boxes_complete: complete && j.undecided.is_none(),
        largest_box,
        shared: None,
        accepted_examples,
        rejected_examples,
        undecided: None,
        summary: format!(
            "{}; the others: {}",
            defs.iter()
                .map(|x| format!(
                    "{} = {} (within {})",
                    label(&x.dim),
                    if std::ptr::eq(*x, d) {
                        relation.clone()
                    } else {
                        relation_of(x)
                    },
                    crate::report::count_text(x.own.count())
                ))
                .collect::<Vec<_>>()
                .join("; "),
            j.summary(&labels)
        ),
        search: JointSearch {
            points: j.stats.points,
            periodic_solves: j.stats.periodic_solves,
            shared_nodes: j.stats.shared_nodes,
        },
        tied: None,
        equal: vec![],
        defined: defs
            .iter()
            .map(|x| crate::report::DefinedReport {
                dim: name(&x.dim),
                source: x.dim.clone(),
                expr: x.expr.to_string(),
                relation: relation_of(x).to_string(),
                accepted: Feasible::from(&x.own),
            })
            .collect(),
    };
    Some(Linked {
        report,
        largest: lb,
        shared: None,
        joint: j.clone(),
        tied: None,
        defined: Some(Box::new(d.clone())),
    })
}

/// A sound box of the others for a group with a defined size: every tuple of it passes every
/// guard of the group with the defined size at its definition. From the reduced set's largest
/// box, each side cut at one common cap, the largest at which the definition at the box's top
/// corner stays within the defined size's own set (one interval; the definition nondecreasing
/// and nonnegative, [`nondecreasing`], so every tuple of the box lies between the corners).
/// Re-checked with the exact evaluator at every corner and at tuples spread over the box; `None`
/// when anything fails (no box is printed then).
fn defined_box(d: &Defined, j: &JointSet, grp: &Group, budget: &Budget) -> Option<LargestBox> {
    let (lo, hi) = (d.own.min()?, d.own.max()?);
    if DimSet::interval(lo, hi) != d.own || !nondecreasing(&d.expr) {
        return None;
    }
    let lb = largest_box(&j.tree, budget)?;
    let eval = |t: &[i128]| -> Option<i128> {
        let env = |a: &str| j.sizes.iter().position(|s| s == a).map(|i| t[i]);
        match d.expr.eval(&env) {
            Ok(Value::Num(q)) if q.is_integer() => Some(*q.numer()),
            _ => None,
        }
    };
    let least: Vec<i128> = lb.sides.iter().map(|p| p.lo).collect();
    if least.iter().any(|&v| v < 0) || !eval(&least).is_some_and(|v| (lo..=hi).contains(&v)) {
        return None;
    }
    // Each side cut at `cap`: its greatest member at most `cap` (its least when above).
    let cut = |cap: i128| -> Vec<Progression> {
        lb.sides
            .iter()
            .map(|p| {
                let top = if cap >= p.hi {
                    p.hi
                } else if cap <= p.lo {
                    p.lo
                } else {
                    p.lo + (cap - p.lo) / p.modulus * p.modulus
                };
                Progression { hi: top, ..*p }
            })
            .collect()
    };
    let fits = |cap: i128| {
        let top: Vec<i128> = cut(cap).iter().map(|p| p.hi).collect();
        eval(&top).is_some_and(|v| v <= hi)
    };
    let (mut good, mut bad) = (
        least.iter().copied().min()?,
        lb.sides.iter().map(|p| p.hi).max()?.saturating_add(1),
    );
    if fits(bad - 1) {
        good = bad - 1;
    } else {
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if fits(mid) {
                good = mid;
            } else {
                bad = mid;
            }
        }
    }
    let sides = cut(good);
    let count = sides.iter().fold(1u128, |a, p| a.saturating_mul(p.count()));
    let passes = |t: &[i128]| {
        let Some(v) = eval(t) else { return false };
        if !d.own.contains(v) {
            return false;
        }
        let env = |a: &str| match j.sizes.iter().position(|s| s == a) {
            Some(i) => Some(t[i]),
            None => (a == d.dim).then_some(v),
        };
        grp.guards.iter().all(|g| matches!(g.truth(&env), Ok(true)))
    };
    box_sample(&sides, count, grp.guards.len())
        .iter()
        .all(|t| passes(t))
        .then_some(LargestBox {
            sides,
            count,
            maximal: false,
        })
}

/// [`linked`] for a group decided in closed form ([`Solved::tied`]): the report over the tied
/// set's sizes ([`TiedSet::sizes`]): its count, its first boxes (one per block, so never all
/// of them over an unbounded range), its re-checked examples, no largest box (the spec is the
/// tied choice, [`Choice::Tied`]), nothing undecided.
fn tied_linked(
    t: &TiedSet,
    j: &JointSet,
    grp: &Group,
    budget: &Budget,
    name: &dyn Fn(&str) -> String,
    label: &dyn Fn(&str) -> String,
    claimed: &dyn Fn(&str) -> u128,
) -> Option<Linked> {
    let tr = tied_report(t, grp, name, label)?;
    let sources = t.sizes();
    let (boxes, complete) = t.boxes(100);
    let report = JointReport {
        dims: sources.iter().map(|s| name(s)).collect(),
        sources: sources.clone(),
        claimed: sources
            .iter()
            .map(|s| claimed(s))
            .fold(1u128, |a, c| a.saturating_mul(c)),
        accepted: tr.accepted,
        boxes: boxes
            .iter()
            .map(|b| b.iter().map(Feasible::from).collect())
            .collect(),
        boxes_complete: complete,
        largest_box: None,
        shared: None,
        accepted_examples: tr.accepted_examples.clone(),
        rejected_examples: tr.rejected_examples.clone(),
        undecided: None,
        summary: tr.summary.clone(),
        search: JointSearch {
            points: j.stats.points,
            periodic_solves: j.stats.periodic_solves,
            shared_nodes: j.stats.shared_nodes,
        },
        tied: Some(tr),
        equal: vec![],
        defined: vec![],
    };
    Some(Linked {
        report,
        largest: None,
        shared: None,
        joint: j.clone(),
        tied: Some((t.clone(), largest_box(&t.reduced.tree, budget))),
        defined: None,
    })
}

/// The spec line of a tied size `b` written from its partner `a` (`b = a`, or `b = a + delta`),
/// saying why it is not a plain equality: every size of `a`'s block of `block` values passes.
pub fn tied_alias(b: &str, a: &str, delta: i128, block: i128) -> String {
    use crate::python::{assign, linear, py_name};
    let rhs = linear(crate::num::q(1), &py_name(a), delta);
    let taken = if delta == 0 {
        "this spec takes the same size"
    } else {
        "this spec keeps the traced offset"
    };
    format!(
        "{}  # any size in {}'s block of {block} passes; {taken}",
        assign(b, &rhs),
        py_name(a)
    )
}

/// Tuples of a tied spec re-checked with the exact evaluator.
const TIED_RECHECK: usize = 256;

/// The tied choice ([`Choice::Tied`]): from the largest box of the reduced set, or the box
/// through the traced sizes when it leaves them out ([`box_through`]); every corner and tuples
/// spread over the spec re-checked against every guard of the group (a failing spec is
/// dropped, never printed).
fn tied_choice(
    t: &TiedSet,
    lb: Option<&LargestBox>,
    grp: &Group,
    traced: &dyn Fn(&str) -> Option<i128>,
) -> Option<TiedSpec> {
    // Each root's traced value, from a member whose traced size is known.
    let root = |r: &str| {
        grp.members.iter().filter(|m| m.root == r).find_map(|m| {
            let v = traced(&m.name)? - m.offset;
            (v % m.coef == 0).then(|| v / m.coef)
        })
    };
    let point: Option<Vec<i128>> = t.reduced.sizes.iter().map(|r| root(r)).collect();
    let holds = |b: &LargestBox, p: &[i128]| b.sides.iter().zip(p).all(|(s, &x)| s.contains(x));
    let bx = match (lb, &point) {
        (Some(b), Some(p)) if holds(b, p) => b.clone(),
        (_, Some(p)) => box_through(&t.reduced.tree, p)?,
        (Some(b), None) => b.clone(),
        (None, None) => return None,
    };
    let spec = t.spec(&bx, &root)?;
    let sizes = t.sizes();
    for tuple in spec.sample(t, TIED_RECHECK) {
        let env = |a: &str| sizes.iter().position(|s| s == a).map(|i| tuple[i]);
        if !grp
            .guards
            .iter()
            .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
        {
            return None;
        }
    }
    Some(spec)
}

/// Diagonals up to this many values are searched for a shared `Dim`.
const DIAGONAL_MAX: u128 = 1 << 20;

/// For a joint set of two sizes: the largest progression of values `v` with `(v, v)` in the set,
/// and whether every pair of it passed `holds` (the exact evaluator) as well.
fn diagonal(j: &JointSet, holds: &dyn Fn(&[i128]) -> bool) -> Option<(Progression, bool)> {
    if j.sizes.len() != 2 {
        return None;
    }
    let both = j.domains[0].intersect(&j.domains[1]).ok()?;
    if both.count() > DIAGONAL_MAX || both.count() < 2 {
        return None;
    }
    let on: Vec<i128> = both
        .iter()
        .take_while(|_| crate::budget::expired().is_none())
        .filter(|&v| j.tree.contains(&[v, v]))
        .collect();
    let p = *rank(&DimSet::from_values(on), None, 1)
        .progressions
        .first()?;
    let members = DimSet::progression(p.lo, p.hi, p.modulus, p.residue);
    let mut all = true;
    for v in members.iter() {
        if crate::budget::expired().is_some() {
            all = false;
            break;
        }
        if !holds(&[v, v]) {
            return None;
        }
    }
    Some((p, all))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;
    use proptest::prelude::*;

    fn g(s: &str) -> Expr {
        parse_guard(s).unwrap()
    }

    #[test]
    fn equal_sizes_share_a_root() {
        let guards = vec![
            g("L['image2'].size()[2] == L['image1'].size()[2]"),
            g("L['image1'].size()[2] % 8 == 0"),
            g("(L['image2'].size()[2] // 8) % 2 == 1"),
        ];
        let groups = group(&guards, &[]);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].roots.len(), 1);
        let ranges = BTreeMap::from([
            ("L['image1'].size()[2]".to_string(), (135, 2160)),
            ("L['image2'].size()[2]".to_string(), (135, 2160)),
        ]);
        let s = solve_group(&groups[0], &ranges, &Limits::default());
        let set = &s.accepted[&groups[0].roots[0]];
        assert!(set.iter().all(|x| x % 16 == 8));
        assert_eq!(set.count(), (2152 - 136) / 16 + 1);
    }

    #[test]
    fn relation_becomes_a_derived_dim() {
        let r = linear_relation(&g("dy == dx + 1")).unwrap();
        assert_eq!(r, ("dy".into(), "dx".into(), 1, 1));
        let r = linear_relation(&g("2*a + 1 == b")).unwrap();
        assert_eq!(r, ("b".into(), "a".into(), 2, 1));
        assert_eq!(linear_relation(&g("2*a == 3*b")), None);
        assert_eq!(linear_relation(&g("a*b == 3")), None);
    }

    #[test]
    fn one_wide_root_costs_nothing() {
        let guards = vec![g("(h + w) % 8 == 0")];
        let groups = group(&guards, &["h".into(), "w".into()]);
        let ranges = BTreeMap::from([("h".to_string(), (2, 9)), ("w".to_string(), (2, 1 << 62))]);
        let s = solve_group(&groups[0], &ranges, &Limits::default());
        // For every h, a w exists; no w works for every h in 2..9.
        assert!(s.accepted["w"].is_empty());
        assert!(s.accepted["h"].is_empty());
        let (pass, total) = s.joint_count.unwrap();
        assert_eq!(total, 8 * ((1u128 << 62) - 1));
        assert_eq!(
            pass,
            (2..=9)
                .map(|h| DimSet::progression(2, 1 << 62, 8, -h).count())
                .sum::<u128>()
        );
    }

    /// Two sizes defined by the others (two token inputs of one image at strides 16 and 8):
    /// both reported, and every tuple decided as the guards evaluated directly decide it
    /// (brute force near the small corner, the tokens on and off their products).
    #[test]
    fn several_defined_sizes_are_each_reported() {
        let guards: Vec<Expr> = [
            "n1 == (h // 16)*(w // 16)",
            "n2 == (h // 8)*(w // 8)",
            "(h // 16) != 1",
            "(w // 16) != 1",
        ]
        .iter()
        .map(|t| g(t))
        .collect();
        let names: Vec<String> = ["h", "w", "n1", "n2"].map(String::from).to_vec();
        let ranges: BTreeMap<String, (i128, i128)> = names
            .iter()
            .map(|n| (n.clone(), (2, (1i128 << 63) - 1)))
            .collect();
        let groups = group(&guards, &names);
        assert_eq!(groups.len(), 1);
        let grp = &groups[0];
        let s = solve_group(grp, &ranges, &Limits::default());
        assert!(s.undecided.is_none());
        let id = |x: &str| x.to_string();
        let l = linked(&s, grp, &Budget::default(), &id, &id, &|_| 1).expect("reported");
        let mut dims: Vec<&str> = l.report.defined.iter().map(|d| d.dim.as_str()).collect();
        dims.sort();
        assert_eq!(dims, ["n1", "n2"]);
        for t in &l.report.accepted_examples {
            assert_eq!(t.len(), 4, "{t:?}");
        }
        for h in 14..70i128 {
            for w in [15, 16, 31, 32, 47, 64] {
                let (p1, p2) = ((h / 16) * (w / 16), (h / 8) * (w / 8));
                for (n1, n2) in [(p1, p2), (p1 + 1, p2), (p1, p2 - 1)] {
                    let v = |x: &str| {
                        Some(match x {
                            "h" => h,
                            "w" => w,
                            "n1" => n1,
                            _ => n2,
                        })
                    };
                    let inside = [h, w, n1, n2].iter().all(|&x| x >= 2);
                    let truth = inside && guards.iter().all(|e| e.truth(&v) == Ok(true));
                    assert_eq!(s.contains(grp, &v), Some(truth), "{h} {w} {n1} {n2}");
                }
            }
        }
    }

    #[test]
    fn products_link_roots() {
        // resnet18 AUTO: ((1 + (w-1)//2) * (1 + (h-1)//2)) != 1 links h and w.
        let guards = vec![g("((1 + (((-1) + w) // 2))*(1 + (((-1) + h) // 2))) != 1")];
        let groups = group(&guards, &["h".into(), "w".into()]);
        assert_eq!(groups.len(), 1);
        let ranges = BTreeMap::from([("h".to_string(), (1, 20)), ("w".to_string(), (1, 20))]);
        let s = solve_group(&groups[0], &ranges, &Limits::default());
        // Only h, w in {1, 2} make both factors 1.
        assert_eq!(s.joint_count, Some((400 - 4, 400)));
        assert_eq!(s.accepted["h"].min(), Some(3));
        assert_eq!(s.accepted["w"].min(), Some(3));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// Random joint systems over two and three sizes against brute force on small boxes.
        #[test]
        fn joint_systems_match_brute_force(
            k in 1i128..4, off in -3i128..4, m1 in 2i128..6, r1 in 0i128..6, m2 in 2i128..6,
            prod in 0i128..40, three in any::<bool>(), lo in 1i128..5, w in 4i128..14,
        ) {
            let mut guards = vec![
                g(&format!("b == {k}*a + {off}")),
                g(&format!("(a + b) % {m1} != {}", r1 % m1)),
                g(&format!("a * c >= {prod}")),
            ];
            if three {
                guards.push(g(&format!("(c // 2) % {m2} != 0")));
            }
            let names = ["a", "b", "c"];
            let ranges: BTreeMap<String, (i128, i128)> = names.iter().map(|n| (n.to_string(), (lo, lo + w))).collect();
            let groups = group(&guards, &[]);
            prop_assert_eq!(groups.len(), 1);
            let s = solve_group(&groups[0], &ranges, &Limits::default());
            // Brute force over the box: a value of a root is accepted when it passes for every
            // value of the other roots that passes its own one-size guards.
            let holds = |a: i128, b: i128, c: i128| {
                let env = |n: &str| match n { "a" => Some(a), "b" => Some(b), "c" => Some(c), _ => None };
                guards.iter().all(|g| matches!(g.eval(&env), Ok(crate::expr::Value::Bool(true))))
            };
            let box_ = lo..=lo + w;
            let mut count = 0u128;
            let mut total = 0u128;
            for a in box_.clone() {
                let b = k * a + off;
                if !box_.contains(&b) { continue; }
                for c in box_.clone() {
                    // c's own guard (three) filters c's values before the product.
                    if three && (c / 2) % m2 == 0 { continue; }
                    // a's own one-size guard after substitution: (a + b) % m1 != r1.
                    if (a + b).rem_euclid(m1) == r1 % m1 { continue; }
                    total += 1;
                    if holds(a, b, c) { count += 1; }
                }
            }
            prop_assert_eq!(s.joint_count.map(|j| j.1), Some(total));
            prop_assert_eq!(s.joint_count.map(|j| j.0), Some(count));
        }
    }
}
