//! Grouping guards: the sizes split into independent groups, linear equalities substituted
//! (one root per class of related sizes, each member `coef * root + offset`).

use crate::num::{self, Q};
use crate::types::{CmpOp, DimSet, Expr, Progression};
use num_traits::{Signed, Zero};
use std::collections::{BTreeMap, HashMap};

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
    /// Indices (in the guards passed to [`group`]) of guards over this group's sizes and
    /// another group's that hold on every tuple of the groups' answers (a corner such as
    /// `max(1, h//8)*max(1, w//8) != 1` past it): they join no sizes ([`super::solve_parts`]).
    pub held: Vec<usize>,
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
///
/// Sizes are numbered in first-seen order (the given sizes, then the guards' other sizes) and
/// joined by union-find over those numbers: a log of tens of thousands of sizes is grouped in
/// one pass, without a name looked up in a map per step.
pub fn group(guards: &[Expr], sizes: &[String]) -> Vec<Group> {
    let mut order: Vec<String> = sizes.to_vec();
    let mut id: HashMap<String, usize> = HashMap::with_capacity(order.len());
    for (i, s) in order.iter().enumerate() {
        id.entry(s.clone()).or_insert(i);
    }
    for g in guards {
        for a in g.atoms() {
            if !id.contains_key(&*a) {
                id.insert(a.to_string(), order.len());
                order.push(a.to_string());
            }
        }
    }
    // Substitute relations one at a time (each removes one size).
    let mut rest: Vec<Expr> = guards.to_vec();
    let mut origin: Vec<usize> = (0..guards.len()).collect();
    let mut relations: Vec<(usize, String)> = Vec::new();
    let mut members: Vec<Member> = order
        .iter()
        .map(|s| Member {
            name: s.clone(),
            root: s.clone(),
            coef: 1,
            offset: 0,
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
        for m in members.iter_mut().filter(|m| m.root == dep) {
            m.root = root.clone();
            m.offset += m.coef * off;
            m.coef *= k;
        }
    }
    // Union-find over the numbers of the roots linked by the remaining guards.
    let mut parent: Vec<usize> = (0..order.len()).collect();
    fn find(p: &mut [usize], x: usize) -> usize {
        let mut r = x;
        while p[r] != r {
            r = p[r];
        }
        let mut x = x;
        while p[x] != r {
            let up = p[x];
            p[x] = r;
            x = up;
        }
        r
    }
    let number = |name: &str| id.get(name).copied();
    for g in &rest {
        let atoms: Vec<usize> = g.atoms().iter().filter_map(|a| number(a)).collect();
        for w in atoms.windows(2) {
            let (a, b) = (find(&mut parent, w[0]), find(&mut parent, w[1]));
            if a != b {
                parent[b] = a;
            }
        }
    }
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<usize, usize> = HashMap::new();
    for m in &members {
        let Some(r) = number(&m.root) else { continue };
        let top = find(&mut parent, r);
        let gi = *index.entry(top).or_insert_with(|| {
            groups.push(Group {
                members: vec![],
                roots: vec![],
                guards: vec![],
                origin: vec![],
                relations: vec![],
                held: vec![],
            });
            groups.len() - 1
        });
        let grp = &mut groups[gi];
        if !grp.roots.contains(&m.root) {
            grp.roots.push(m.root.clone());
        }
        grp.members.push(m.clone());
    }
    for (g, o) in rest.into_iter().zip(origin) {
        let Some(a) = g.atoms().into_iter().next().and_then(|a| number(&a)) else {
            continue;
        };
        let top = find(&mut parent, a);
        if let Some(&gi) = index.get(&top) {
            groups[gi].guards.push(g);
            groups[gi].origin.push(o);
        }
    }
    for (i, root) in relations {
        let r = number(&root).map_or(root, |n| members[n].root.clone());
        let Some(r) = number(&r) else { continue };
        let top = find(&mut parent, r);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;

    fn g(s: &str) -> Expr {
        parse_guard(s).unwrap()
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
}
