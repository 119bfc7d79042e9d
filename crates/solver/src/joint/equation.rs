//! A group linked by one equation of products across sizes (`(x3//16)*(x2//16) ==
//! (y2//16)*(y3//16)`: two images that must give the same number of tokens), solved exactly
//! without enumeration ([`Equation`]).
//!
//! Each side is a product of terms, each term nondecreasing in one size (the size, `//` or `*`
//! by positive constants, constants added) and positive over that size's own set. Every other
//! guard linking the sizes must hold on every tuple of the product of their own sets (corner
//! guards such as `(w//16)*(h//16) != h//16`, shown by [`holds_on_parts`]). The joint set is
//! then exactly that product cut by the equation: a tuple passes when each size lies in its own
//! set and the equation holds at it. No value of a size passes with every partner (a term of
//! the other side that takes two values breaks the equation), and a size's values with some
//! partner are decided from the images of the terms: each side's image is a set of products,
//! and a value passes when its term's value times the rest of its side can meet the other
//! side's products. A matching of the terms with common values (one term of each side taking
//! the same value, every other pair able to as well) decides most values at once; the rest
//! (few values) are decided by factoring. Anything else is not computed (the group keeps the
//! joint search's answer).

use super::choice::Linked;
use super::decide::decide;
use super::defined::{image, nondecreasing, within};
use super::grouping::{root_range, Group};
use super::solved::{Equation, Fate, Paired, Prover, Solved, Term};
use super::terms::{holds_on_parts, Terms};
use crate::linked::{Budget, JointSet, Tree};
use crate::report::{EquationReport, Feasible, GuardFate, JointReport, JointSearch};
use crate::types::{CmpOp, DimSet, Expr};
use std::collections::BTreeMap;

/// Uncovered values of a term decided one by one by factoring, at most.
const FACTORED: u128 = 4096;

/// A factor of a side: its size and the term over it.
type Factor = (String, Expr);

/// The terms of one side of an equation: the product's factors, each over one root of `grp`
/// (bare: no member derived from it), and the constant factor.
fn side(e: &Expr, grp: &Group) -> Option<(Vec<Factor>, crate::num::Q)> {
    let factors: Vec<&Expr> = match e {
        Expr::Mul(v) => v.iter().collect(),
        other => vec![other],
    };
    let mut c = crate::num::q(1);
    let mut out = Vec::new();
    for f in factors {
        if let Expr::Const(k) = f {
            c *= *k;
            continue;
        }
        let atoms = f.atoms();
        let [a] = atoms.iter().collect::<Vec<_>>()[..] else {
            return None;
        };
        let bare = grp.roots.iter().any(|r| **r == **a)
            && grp.members.iter().filter(|m| m.root == **a).count() == 1;
        if !bare || !nondecreasing(f) {
            return None;
        }
        out.push((a.to_string(), f.clone()));
    }
    Some((out, c))
}

/// The first linking guard of `grp` that is an equation of products over every root, each root
/// in one term: `(index, left terms, right terms)`.
fn find(grp: &Group) -> Option<(usize, Vec<Factor>, Vec<Factor>)> {
    grp.guards.iter().enumerate().find_map(|(i, g)| {
        let Expr::Cmp(CmpOp::Eq, a, b) = g else {
            return None;
        };
        let (l, cl) = side(a, grp)?;
        let (r, cr) = side(b, grp)?;
        let mut roots: Vec<&String> = l.iter().chain(&r).map(|(x, _)| x).collect();
        roots.sort();
        let n = roots.len();
        roots.dedup();
        let every = grp.roots.iter().all(|x| roots.contains(&x));
        // A product on some side (a tie `F(a) == G(b)` is the closed form of ties' own).
        let product = l.len() >= 2 || r.len() >= 2;
        (cl == cr && roots.len() == n && every && product && !l.is_empty() && !r.is_empty())
            .then_some((i, l, r))
    })
}

/// `grp` solved as an [`Equation`] when it is one (see the module): every tuple decided, no
/// value of a size passing with every partner, each size's values with some partner computed;
/// `None` when the group is not of that form or a step is not computed.
pub(super) fn solve_equation(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
) -> Option<Solved> {
    if grp.members.len() != grp.roots.len() || grp.roots.len() < 2 {
        return None;
    }
    let (gi, left, right) = find(grp)?;
    let mut fates = vec![Fate::Solved(GuardFate::Joint); grp.guards.len()];
    // Each size's own set: its range and its one-size guards, decided.
    let mut own: BTreeMap<String, DimSet> = BTreeMap::new();
    for r in &grp.roots {
        let (lo, hi) = root_range(grp, r, ranges);
        let mut set = DimSet::interval(lo, hi);
        for (i, g) in grp.guards.iter().enumerate() {
            let atoms = g.atoms();
            if atoms.len() == 1 && atoms.iter().all(|a| **a == **r) {
                let d = decide(g, r, &set, &budget.limits, prover);
                set = d.set?;
                fates[i] = d.fate;
            }
        }
        if set.is_empty() {
            return None;
        }
        own.insert(r.clone(), set);
    }
    // Every other linking guard holds on the whole product of the own sets.
    let mut terms = Terms::default();
    for (i, g) in grp.guards.iter().enumerate() {
        if i != gi && g.atoms().len() > 1 && !holds_on_parts(g, &own, &budget.limits, &mut terms) {
            return None;
        }
    }
    let term = |(root, expr): (String, Expr)| -> Option<Term> {
        let image = image(&expr, &root, &own[&root]).ok()?;
        // Positive: a product then changes with every factor.
        (image.min()? >= 1).then_some(Term { root, expr, image })
    };
    let left: Option<Vec<Term>> = left.into_iter().map(term).collect();
    let right: Option<Vec<Term>> = right.into_iter().map(term).collect();
    let sides = [left?, right?];
    // No value passes with every partner: each side has a term that takes two values.
    if !sides.iter().all(|s| s.iter().any(|t| t.image.count() >= 2)) {
        return None;
    }
    let mut some = BTreeMap::new();
    for (k, s) in sides.iter().enumerate() {
        for (i, t) in s.iter().enumerate() {
            let set = some_values(&sides, k, i, &own[&t.root])?;
            some.insert(t.root.clone(), set);
        }
    }
    let sizes: Vec<String> = grp.roots.clone();
    let domains: Vec<DimSet> = sizes.iter().map(|r| own[r].clone()).collect();
    let joint = JointSet {
        sizes,
        tree: Tree::full(&domains),
        domains,
        undecided: None,
        stats: Default::default(),
    };
    Some(Solved {
        accepted: grp
            .roots
            .iter()
            .map(|r| (r.clone(), DimSet::empty()))
            .collect(),
        joint_count: None,
        undecided: None,
        unsure: BTreeMap::new(),
        joint: None,
        fates,
        tied: None,
        defined: None,
        equation: Some(Box::new(Equation {
            guard: gi,
            expr: grp.guards[gi].clone(),
            sides,
            joint,
            some,
        })),
    })
}

/// Whether the terms `a` and `b` (of the two sides) can be matched one to one, each pair taking
/// a common value.
fn matches(a: &[&Term], b: &[&Term]) -> bool {
    let Some((first, rest)) = a.split_first() else {
        return b.is_empty();
    };
    b.iter().enumerate().any(|(j, t)| {
        let meet = first.image.intersect(&t.image).is_ok_and(|s| !s.is_empty());
        let mut others = b.to_vec();
        others.remove(j);
        meet && matches(rest, &others)
    })
}

/// The values of the size of term `i` of side `k` (over its own set `own`) that pass with some
/// value of the others.
fn some_values(sides: &[Vec<Term>; 2], k: usize, i: usize, own: &DimSet) -> Option<DimSet> {
    let (mine, other) = (&sides[k], &sides[1 - k]);
    let t = &mine[i];
    let rest: Vec<&Term> = mine
        .iter()
        .enumerate()
        .filter(|(j, _)| *j != i)
        .map(|(_, x)| x)
        .collect();
    // Values of the term taken by a matched term of the other side, every other pair matched.
    let mut covered = DimSet::empty();
    if mine.len() == other.len() {
        for (j, o) in other.iter().enumerate() {
            let others: Vec<&Term> = other
                .iter()
                .enumerate()
                .filter(|(x, _)| *x != j)
                .map(|(_, x)| x)
                .collect();
            if matches(&rest, &others) {
                covered = covered.union(&t.image.intersect(&o.image).ok()?).ok()?;
            }
        }
    }
    let open = t.image.difference(&covered).ok()?;
    if open.is_empty() {
        return Some(own.clone());
    }
    // Few values left, two terms a side, interval images: each value decided by factoring.
    if open.count() > FACTORED || mine.len() != 2 || other.len() != 2 {
        return None;
    }
    let interval = |s: &DimSet| -> Option<(i128, i128)> {
        let (lo, hi) = (s.min()?, s.max()?);
        (DimSet::interval(lo, hi) == *s).then_some((lo, hi))
    };
    let (h, g) = (interval(&other[0].image)?, interval(&other[1].image)?);
    let partner = &rest[0].image;
    if partner.count() > FACTORED {
        return None;
    }
    let mut out = own.clone();
    for p in open.iter() {
        let meets = partner.iter().any(|q| {
            p.checked_mul(q)
                .is_some_and(|n| crate::factor::is_product(n, h, g))
        });
        if !meets {
            out = out.difference(&within(&t.expr, &t.root, own, p, p)?).ok()?;
        }
    }
    Some(out)
}

impl Equation {
    /// Whether the tuple (`value` gives each size) passes: each size in its own set, the
    /// equation true (a division by zero fails); `None` where a value is missing or overflows.
    pub fn contains(&self, value: &dyn Fn(&str) -> Option<i128>) -> Option<bool> {
        for (r, d) in self.joint.sizes.iter().zip(&self.joint.domains) {
            if !d.contains(value(r)?) {
                return Some(false);
            }
        }
        match self.expr.truth(value) {
            Ok(b) => Some(b),
            Err(crate::expr::EvalError::Arith(crate::num::ArithError::Overflow)) => None,
            Err(crate::expr::EvalError::Arith(_)) => Some(false),
            Err(_) => None,
        }
    }

    /// For a spec that keeps every size varying: each term of the right side matched to one of
    /// the left with the same term (its size renamed) whose traced size is the same (`traced`,
    /// per size), so that writing the right size as its match keeps the traced example. Per
    /// size in [`Self::joint`]'s order: its side (within both sizes' own sets, holding the
    /// traced size) and the size it is written from. `None` when no such matching exists.
    pub fn paired(&self, traced: &dyn Fn(&str) -> Option<i128>) -> Option<Paired> {
        let [l, r] = &self.sides;
        if l.len() != r.len() {
            return None;
        }
        let same = |a: &Term, b: &Term| {
            a.expr
                .substitute(&a.root, &Expr::Sym(crate::types::Atom::from("·")))
                == b.expr
                    .substitute(&b.root, &Expr::Sym(crate::types::Atom::from("·")))
                && traced(&a.root).is_some()
                && traced(&a.root) == traced(&b.root)
        };
        let mut used = vec![false; l.len()];
        let mut from: BTreeMap<String, String> = BTreeMap::new();
        for b in r {
            let j = (0..l.len()).find(|&j| !used[j] && same(&l[j], b))?;
            used[j] = true;
            from.insert(b.root.clone(), l[j].root.clone());
        }
        let own = |x: &str| {
            let i = self.joint.level(x)?;
            Some(&self.joint.domains[i])
        };
        let mut sides = Vec::new();
        for x in &self.joint.sizes {
            let a = from.get(x).unwrap_or(x);
            let set = match from.iter().find(|(_, v)| *v == x) {
                Some((b, _)) => own(x)?.intersect(own(b)?).ok()?,
                None => own(a)?.intersect(own(x)?).ok()?,
            };
            let t = traced(a)?;
            let p = crate::suggest::rank(&set, Some(t), 4)
                .progressions
                .into_iter()
                .find(|p| p.contains(t))?;
            sides.push((p, from.get(x).cloned()));
        }
        Some(Paired { sides })
    }

    /// The joint set's report (see the module; `docs/CONTRACT.md`, `joint[].equations`).
    pub(super) fn linked(
        &self,
        grp: &Group,
        name: &dyn Fn(&str) -> String,
        label: &dyn Fn(&str) -> String,
        claimed: &dyn Fn(&str) -> u128,
    ) -> Linked {
        let j = &self.joint;
        let passes = |t: &[i128]| {
            let env = |a: &str| j.sizes.iter().position(|s| s == a).map(|i| t[i]);
            grp.guards.iter().all(|g| matches!(g.truth(&env), Ok(true)))
        };
        // Examples: each size at its least value, the others at their least values too, then
        // the left side's sizes raised one by one with a matched right size raised alike.
        let least: Vec<i128> = j.domains.iter().filter_map(DimSet::min).collect();
        let mut candidates = vec![least.clone()];
        for d in 1..4 {
            for l in 0..j.sizes.len() {
                let mut t = least.clone();
                if let Some(v) = j.domains[l].iter().nth(d * 16) {
                    t[l] = v;
                }
                candidates.push(t);
            }
            // Every size at one value (equal terms of one form meet).
            let common = j
                .domains
                .iter()
                .skip(1)
                .try_fold(j.domains[0].clone(), |a, d| a.intersect(d).ok());
            if let Some(v) = common.and_then(|c| c.iter().nth(d * 16)) {
                candidates.push(vec![v; j.sizes.len()]);
            }
        }
        let mut accepted_examples: Vec<Vec<i128>> = Vec::new();
        let mut rejected_examples: Vec<Vec<i128>> = Vec::new();
        for t in candidates {
            let ok = passes(&t) && self.contains(&|a| j.level(a).map(|i| t[i])) == Some(true);
            let list = if ok {
                &mut accepted_examples
            } else {
                &mut rejected_examples
            };
            if list.len() < 5 && !list.contains(&t) {
                list.push(t);
            }
        }
        let relation = self.expr.renamed(name).to_string();
        let mut labels: Vec<String> = j.sizes.iter().map(|s| label(s)).collect();
        labels.sort();
        let every = j
            .sizes
            .iter()
            .map(|s| format!("{} in {}", label(s), set_text(&self.some[s])))
            .collect::<Vec<_>>()
            .join(", ");
        let report = JointReport {
            dims: j.sizes.iter().map(|s| name(s)).collect(),
            sources: j.sizes.clone(),
            claimed: j.sizes.iter().map(|s| claimed(s)).fold(1u128, |a, c| a.saturating_mul(c)),
            // The tuples of the own sets' product: an upper bound (the equation cuts it).
            accepted: j.box_count(),
            boxes: vec![j.domains.iter().map(Feasible::from).collect()],
            boxes_complete: true,
            largest_box: None,
            shared: None,
            accepted_examples,
            rejected_examples,
            undecided: None,
            summary: format!(
                "{} are linked by {}: a tuple passes when each size is in its own set and the two products are equal; every value passes with some partner only ({every}), none with every partner",
                labels.join(", "),
                self.expr.renamed(label)
            ),
            search: JointSearch {
                points: 0,
                periodic_solves: 0,
                shared_nodes: 0,
            },
            tied: None,
            equal: vec![],
            defined: vec![],
            equations: vec![EquationReport {
                expr: self.expr.to_string(),
                relation,
            }],
            link_excludes_some: None,
        };
        Linked {
            report,
            largest: None,
            shared: None,
            joint: j.clone(),
            tied: None,
            defined: None,
            equation: Some(Box::new(self.clone())),
        }
    }
}

/// A set in a few words: `lo..hi` for an interval, else its count and bounds.
fn set_text(s: &DimSet) -> String {
    match (s.min(), s.max()) {
        (Some(lo), Some(hi)) if DimSet::interval(lo, hi) == *s => format!("{lo}..{hi}"),
        (Some(lo), Some(hi)) => format!("{} values of {lo}..{hi}", s.count()),
        _ => "no value".into(),
    }
}
