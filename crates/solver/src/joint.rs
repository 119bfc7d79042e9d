//! Guards over several sizes.
//!
//! PyTorch never raises on a guard over two or more sizes: it becomes a run-time check. This
//! module splits the sizes into independent groups (sizes linked by some guard), substitutes
//! linear equalities (`b == a`, `b == 2*a + 1`: one `Dim` for equal sizes, a derived dim for a
//! relation with a positive integer coefficient — the only kind `torch.export.Dim` accepts), and
//! solves each group exactly:
//!
//! * one root left: the guards become one-size guards of the root, solved by the periodic engine
//!   (`engine.rs`), with the members' ranges turned into the root's range;
//! * several roots: each root's own guards are solved exactly first; then, for each combination of
//!   the values of all roots but the largest (at most [`JOINT_LIMIT`] combinations), the linking
//!   guards become guards in the largest root alone, solved by the periodic engine: the cost does
//!   not depend on the largest root's width (`h` in [2, 64] against `w` in [2, 2^62] is cheap).
//!   Beyond the limit the group is reported undecided (Z3 proofs in `dimguard-prove` cover
//!   wider boxes).
//!
//! For several roots, a root's *accepted* set is the values that pass every linking guard for
//! **every** value of the other roots' accepted sets: any product of `Dim`s chosen inside the
//! accepted sets is then sound.

use crate::engine::{solve, Limits, Outcome};
use crate::num::{self, Q};
use crate::report::Undecided;
use crate::types::{CmpOp, DimSet, Expr};
use num_traits::{Signed, Zero};
use std::collections::{BTreeMap, BTreeSet};

/// Largest product of accepted sets decided by enumeration.
pub const JOINT_LIMIT: u128 = 10_000_000;

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
}

/// The outcome for a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved {
    /// Accepted set per root (see the module docs for several roots).
    pub accepted: BTreeMap<String, DimSet>,
    /// For several roots: how many points of the product of the roots' one-size sets pass every
    /// linking guard, and the size of that product.
    pub joint_count: Option<(u128, u128)>,
    /// Why something is undecided.
    pub undecided: Option<Undecided>,
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
            });
            groups.len() - 1
        });
        let grp = &mut groups[gi];
        if !grp.roots.contains(&r) {
            grp.roots.push(r);
        }
        grp.members.push(members[s].clone());
    }
    for g in rest {
        let Some(a) = g.atoms().into_iter().next() else {
            continue;
        };
        let top = find(&mut parent, &a);
        if let Some(&gi) = index.get(&top) {
            groups[gi].guards.push(g);
        }
    }
    groups
}

/// The root's range implied by the members' ranges (`lo <= coef*root + offset <= hi`).
fn root_range(grp: &Group, root: &str, ranges: &BTreeMap<String, (i128, i128)>) -> (i128, i128) {
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

/// Solves a group exactly within the members' ranges.
pub fn solve_group(
    grp: &Group,
    ranges: &BTreeMap<String, (i128, i128)>,
    limits: &Limits,
) -> Solved {
    let mut out = Solved {
        accepted: BTreeMap::new(),
        joint_count: None,
        undecided: None,
    };
    let (single, linking): (Vec<&Expr>, Vec<&Expr>) =
        grp.guards.iter().partition(|g| g.atoms().len() <= 1);
    for root in &grp.roots {
        let (lo, hi) = root_range(grp, root, ranges);
        let mut set = DimSet::interval(lo, hi);
        for g in single
            .iter()
            .filter(|g| g.atoms().iter().all(|a| **a == **root))
        {
            match solve(g, root, &set, limits) {
                Outcome::Solved { set: s, .. } => set = set.intersect(&s).unwrap_or(s),
                Outcome::Undecided { reason } => {
                    out.undecided.get_or_insert(reason);
                }
            }
        }
        out.accepted.insert(root.clone(), set);
    }
    if linking.is_empty() || out.undecided.is_some() {
        return out;
    }
    let sets: Vec<(&String, &DimSet)> = grp.roots.iter().map(|r| (r, &out.accepted[r])).collect();
    let total: u128 = sets
        .iter()
        .map(|(_, s)| s.count())
        .try_fold(1u128, |a, c| a.checked_mul(c))
        .unwrap_or(u128::MAX);
    // The root with the most values is solved by the one-size engine for each point of the
    // others (cost independent of its width); the others are enumerated.
    let inner = (0..sets.len())
        .max_by_key(|&i| sets[i].1.count())
        .expect("a root");
    let outer_points: u128 = total / sets[inner].1.count().max(1);
    if outer_points > JOINT_LIMIT {
        out.undecided = Some(Undecided::TooManyCombinations {
            sizes: grp.roots.clone(),
            combinations: outer_points,
            limit: JOINT_LIMIT,
        });
        return out;
    }
    let inner_name = sets[inner].0.clone();
    let inner_set = sets[inner].1.clone();
    let outer: Vec<usize> = (0..sets.len()).filter(|&i| i != inner).collect();
    let values: Vec<Vec<i128>> = outer.iter().map(|&i| sets[i].1.iter().collect()).collect();
    let mut ok_outer: Vec<BTreeSet<i128>> =
        values.iter().map(|v| v.iter().copied().collect()).collect();
    let mut inner_acc = inner_set.clone();
    let mut passing: u128 = 0;
    let mut idx = vec![0usize; outer.len()];
    let nonempty = values.iter().all(|v| !v.is_empty()) && !inner_set.is_empty();
    if nonempty {
        loop {
            // The linking guards with the outer roots fixed: guards in the inner root alone.
            let mut pass = inner_set.clone();
            for g in &linking {
                let mut h = (*g).clone();
                for (k, &o) in outer.iter().enumerate() {
                    h = h.substitute(&grp.roots[o], &Expr::int(values[k][idx[k]]));
                }
                match solve(&h, &inner_name, &pass, limits) {
                    Outcome::Solved { set, .. } => pass = pass.intersect(&set).unwrap_or(set),
                    Outcome::Undecided { reason } => {
                        out.undecided = Some(reason);
                        return out;
                    }
                }
            }
            passing += pass.count();
            if pass.count() != inner_set.count() {
                for (k, ok) in ok_outer.iter_mut().enumerate() {
                    ok.remove(&values[k][idx[k]]);
                }
            }
            inner_acc = inner_acc.intersect(&pass).unwrap_or(pass);
            // Next outer point (odometer).
            let mut k = 0;
            while k < idx.len() {
                idx[k] += 1;
                if idx[k] < values[k].len() {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
            if k == idx.len() {
                break;
            }
        }
    }
    out.joint_count = Some((passing, total));
    out.accepted.insert(inner_name, inner_acc);
    for (k, &o) in outer.iter().enumerate() {
        let set = DimSet::from_values(ok_outer[k].iter().copied());
        out.accepted.insert(grp.roots[o].clone(), set);
    }
    out
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
