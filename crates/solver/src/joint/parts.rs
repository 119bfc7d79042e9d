//! A group split into independent parts before it is solved.
//!
//! torch links sizes that are independent through guards that hold everywhere except on a
//! corner: `max(1, c_3//8)*max(1, c_2//8) != 1` (a feature map of one pixel), `x0 % (x0*h4*w4)
//! != 0` (a batch that is the whole tensor). Such a guard joins H and W in one group although
//! every value of H that works does so with every value of W that works. [`solve_parts`] solves
//! the group as independent parts first: every guard over several roots is set aside, the roots
//! split into the components the others link, and each part is solved alone; a guard set aside
//! is then decided over the parts' answers ([`holds_on_parts`]): when it holds on every tuple of
//! the product of their sets, it is implied (the group's joint set is the product of the
//! parts'); when it is not shown to, its parts are merged and solved again. Nothing is assumed:
//! a guard that joins no sizes is one shown true on every tuple the parts accept.
//!
//! How a guard over the parts' answers is decided: `terms.rs`.

use super::grouping::{root_range, Group};
use super::solve::solve_group_with;
use super::solved::{Prover, Solved};
use super::terms::{holds_on_parts, monomial, product, Terms, LEAST_PROBES};
use crate::engine::Limits;
use crate::linked::Budget;
use crate::num::Q;
use crate::types::{CmpOp, DimSet, Expr};
use std::collections::{BTreeMap, BTreeSet};

/// Solves `grp` as independent parts when the guards over several of its roots that would join
/// the parts hold on every tuple of the parts' answers: each part with its group (its members,
/// roots, guards and relations; the guards it implies in [`Group::held`] of the part holding
/// their first size) and its solution. One part (the group itself, solved as before) when no
/// split holds. `all` are the guards [`super::group`] was given (a relation's sizes are read
/// from it).
pub fn solve_parts(
    grp: &Group,
    all: &[Expr],
    ranges: &BTreeMap<String, (i128, i128)>,
    budget: &Budget,
    prover: Option<Prover>,
    listed: &dyn Fn(&str) -> bool,
) -> Vec<(Group, Solved)> {
    let whole = || vec![(grp.clone(), solve_group_with(grp, ranges, budget, prover))];
    let roots_of = |g: &Expr| -> BTreeSet<String> {
        g.atoms()
            .iter()
            .filter_map(|a| grp.members.iter().find(|m| m.name == **a))
            .map(|m| m.root.clone())
            .collect()
    };
    // A guard naming a size the problem does not list (a text's guard over a partner it gives
    // no dimension) keeps its sizes together: the size it is listed under answers from it.
    let linking: Vec<usize> = (0..grp.guards.len())
        .filter(|&i| roots_of(&grp.guards[i]).len() > 1)
        .filter(|&i| grp.guards[i].atoms().iter().all(|a| listed(a)))
        .collect();
    if grp.roots.len() < 2 || linking.is_empty() {
        return whole();
    }
    let mut cut: BTreeSet<usize> = linking.iter().copied().collect();
    let mut solved: BTreeMap<Vec<String>, (Group, Solved)> = BTreeMap::new();
    // Guards written as one condition per size ([`separate`]): each root's conditions, with
    // the guard they come from, solved in its part.
    let mut own: BTreeMap<String, Vec<(Expr, usize)>> = BTreeMap::new();
    let mut separated: BTreeSet<usize> = BTreeSet::new();
    loop {
        let comps = components(grp, &cut, &roots_of);
        if comps.len() < 2 || crate::budget::expired().is_some() {
            return whole();
        }
        for c in &comps {
            if !solved.contains_key(c) {
                let mut part = part_of(grp, c, &cut, all, &roots_of);
                for r in c {
                    for (g, i) in own.get(r).into_iter().flatten() {
                        part.guards.push(g.clone());
                        part.origin.push(grp.origin[*i]);
                    }
                }
                let s = solve_group_with(&part, ranges, budget, prover);
                solved.insert(c.clone(), (part, s));
            }
        }
        // Each root's values in some tuple its part accepts (all of its range where the part
        // is undecided: more values only make a guard harder to show).
        let mut sets: BTreeMap<String, DimSet> = BTreeMap::new();
        for c in &comps {
            let (part, s) = &solved[c];
            for r in c {
                let set = values_of(part, s, r).unwrap_or_else(|| {
                    let (lo, hi) = root_range(part, r, ranges);
                    DimSet::interval(lo, hi)
                });
                sets.insert(r.clone(), set);
            }
        }
        // A guard that fails on the upper half of every set too links its sizes for real (a
        // tie `F(a) == G(b)`): those parts merge first. A guard that holds there fails only on
        // a corner, which the merged parts' answers may exclude: it is asked again after them.
        // Once the real links join every root, the group is solved whole.
        let upper: BTreeMap<String, DimSet> = sets
            .iter()
            .map(|(n, s)| {
                let (lo, hi) = (s.min().unwrap_or(0), s.max().unwrap_or(0));
                (n.clone(), s.clip(lo + (hi - lo) / 2, hi))
            })
            .collect();
        let (mut on_all, mut on_upper) = (Terms::default(), Terms::default());
        let (mut failing, mut links) = (Vec::new(), BTreeSet::new());
        let mut split = false;
        for &i in cut.difference(&separated) {
            let g = &grp.guards[i];
            if holds_on_parts(g, &sets, &budget.limits, &mut on_all) {
                continue;
            }
            if let Some(conds) = separate(g, &sets, &budget.limits) {
                // The guard is one condition per size over the parts' sets: each solved in
                // its size's part, which is solved again.
                for (r, c) in conds {
                    solved.retain(|k, _| !k.contains(&r));
                    own.entry(r).or_default().push((c, i));
                }
                separated.insert(i);
                split = true;
                break;
            }
            failing.push(i);
            if !holds_on_parts(g, &upper, &budget.limits, &mut on_upper) {
                links.insert(i);
                let rest: BTreeSet<usize> = cut.difference(&links).copied().collect();
                if components(grp, &rest, &roots_of).len() < 2 {
                    return whole();
                }
            }
        }
        if split {
            continue;
        }
        let failing: Vec<usize> = if links.is_empty() {
            failing
        } else {
            links.into_iter().collect()
        };
        if failing.is_empty() {
            let mut out: Vec<(Group, Solved)> = comps.iter().map(|c| solved[c].clone()).collect();
            for &i in cut.difference(&separated) {
                let first = roots_of(&grp.guards[i]);
                if let Some(k) = comps
                    .iter()
                    .position(|c| c.iter().any(|r| first.contains(r)))
                {
                    out[k].0.held.push(grp.origin[i]);
                }
            }
            return out;
        }
        for i in failing {
            cut.remove(&i);
        }
    }
}

/// `g` as one condition per size, equivalent to it at every tuple of the sets: an equality of
/// two products `cl * prod_r p_r == cr * prod_r q_r`, each factor a term of one size (a size
/// missing on a side has 1 there), where on each size's set `p_r` and `q_r` are positive and
/// `p_r >= c_r * q_r` with `c_r` the least ratio `p_r / q_r` (among the set's first values,
/// then shown on all of it), and `cl * prod_r c_r == cr` (or the same with `<=` and the greatest
/// ratios). One strict inequality makes one side strictly larger, so the products are equal
/// exactly when `p_r == c_r * q_r` for every size: `ceil(h/2)*ceil(w/2) == (h//2)*(w//2)`
/// (ratios at least 1: both even), `3*w*h*b == 12*b*(w//2)*(h//2)` (ratios at least 2),
/// `3*(w // (w//2))*(h // (h//2)) == 12` (quotients at least 2). Each inequality is decided over
/// the size's set by the periodic engine. `None` when not of that form or not shown.
fn separate(
    g: &Expr,
    sets: &BTreeMap<String, DimSet>,
    limits: &Limits,
) -> Option<Vec<(String, Expr)>> {
    let Expr::Cmp(CmpOp::Eq, l, r) = g else {
        return None;
    };
    let ((cl, fl), (cr, fr)) = (monomial(l), monomial(r));
    let zero = Q::from_integer(0);
    if cl <= zero || cr <= zero {
        return None;
    }
    // Each size's factors on each side.
    let mut by: BTreeMap<String, (Vec<Expr>, Vec<Expr>)> = BTreeMap::new();
    for (side, fs) in [(0, fl), (1, fr)] {
        for f in fs {
            let atoms = f.atoms();
            let [a] = atoms.iter().collect::<Vec<_>>()[..] else {
                return None;
            };
            let e = by.entry(a.to_string()).or_default();
            if side == 0 { &mut e.0 } else { &mut e.1 }.push(f);
        }
    }
    if by.len() < 2 {
        return None;
    }
    let one = Q::from_integer(1);
    let cmp =
        |op: CmpOp, x: &Expr, y: &Expr| Expr::Cmp(op, Box::new(x.clone()), Box::new(y.clone()));
    let all = |c: &Expr, var: &str, set: &DimSet| {
        let d = super::decide::decide(c, var, set, limits, None);
        d.set.is_some_and(|s| s.count() == set.count())
    };
    // Per size: its products and its least and greatest ratio, each shown a bound.
    let mut sides = Vec::new();
    for (var, (a, b)) in by {
        let set = sets.get(&var).filter(|s| !s.is_empty())?;
        let (p, q) = (product(one, a), product(one, b));
        let value = |t: &Expr, x: i128| t.int_at(&|n| (n == var).then_some(x));
        let ratios: Vec<Q> = set
            .iter()
            .take(LEAST_PROBES)
            .filter_map(|x| Some((value(&p, x)?, value(&q, x)?)))
            .filter(|(_, d)| *d > 0)
            .map(|(n, d)| Q::new(n, d))
            .collect();
        let (lo, hi) = (*ratios.iter().min()?, *ratios.iter().max()?);
        let positive = all(&cmp(CmpOp::Ge, &p, &Expr::int(1)), &var, set)
            && all(&cmp(CmpOp::Ge, &q, &Expr::int(1)), &var, set);
        if !positive {
            return None;
        }
        sides.push((var, set, p, q, lo, hi));
    }
    for least in [true, false] {
        let mut c = cl;
        for (_, _, _, _, lo, hi) in &sides {
            c = crate::num::mul(&c, if least { lo } else { hi }).ok()?;
        }
        if c != cr {
            continue;
        }
        let bound = |(var, set, p, q, lo, hi): &(String, &DimSet, Expr, Expr, Q, Q)| {
            let (op, k) = if least {
                (CmpOp::Ge, lo)
            } else {
                (CmpOp::Le, hi)
            };
            all(&cmp(op, p, &(Expr::Const(*k) * q.clone())), var, set)
        };
        if sides.iter().all(bound) {
            return Some(
                sides
                    .iter()
                    .map(|(var, _, p, q, lo, hi)| {
                        let k = if least { lo } else { hi };
                        (
                            var.clone(),
                            cmp(CmpOp::Eq, p, &(Expr::Const(*k) * q.clone())),
                        )
                    })
                    .collect(),
            );
        }
    }
    None
}

/// The roots of `grp` split into the components its guards outside `cut` link, each in the
/// group's root order, the components in the order of their first root.
fn components(
    grp: &Group,
    cut: &BTreeSet<usize>,
    roots_of: &dyn Fn(&Expr) -> BTreeSet<String>,
) -> Vec<Vec<String>> {
    let mut comp: BTreeMap<String, usize> = grp
        .roots
        .iter()
        .enumerate()
        .map(|(i, r)| (r.clone(), i))
        .collect();
    for (i, g) in grp.guards.iter().enumerate() {
        if cut.contains(&i) {
            continue;
        }
        let rs: Vec<String> = roots_of(g).into_iter().collect();
        for w in rs.windows(2) {
            let (a, b) = (comp[&w[0]], comp[&w[1]]);
            if a != b {
                for v in comp.values_mut() {
                    if *v == b {
                        *v = a;
                    }
                }
            }
        }
    }
    let mut out: Vec<(usize, Vec<String>)> = Vec::new();
    for r in &grp.roots {
        let c = comp[r];
        match out.iter_mut().find(|(k, _)| *k == c) {
            Some((_, v)) => v.push(r.clone()),
            None => out.push((c, vec![r.clone()])),
        }
    }
    out.into_iter().map(|(_, v)| v).collect()
}

/// The part of `grp` over the roots `roots`: their members, the guards outside `cut` over them
/// (a guard of no size goes with the group's first root), the relations among them.
fn part_of(
    grp: &Group,
    roots: &[String],
    cut: &BTreeSet<usize>,
    all: &[Expr],
    roots_of: &dyn Fn(&Expr) -> BTreeSet<String>,
) -> Group {
    let mine = |rs: &BTreeSet<String>| {
        if rs.is_empty() {
            roots.contains(&grp.roots[0])
        } else {
            rs.iter().all(|r| roots.contains(r))
        }
    };
    let mut part = Group {
        members: grp
            .members
            .iter()
            .filter(|m| roots.contains(&m.root))
            .cloned()
            .collect(),
        roots: roots.to_vec(),
        guards: vec![],
        origin: vec![],
        relations: vec![],
        held: vec![],
    };
    for (i, g) in grp.guards.iter().enumerate() {
        if !cut.contains(&i) && mine(&roots_of(g)) {
            part.guards.push(g.clone());
            part.origin.push(grp.origin[i]);
        }
    }
    for &o in &grp.relations {
        let rs = all.get(o).map(roots_of).unwrap_or_default();
        if !rs.is_empty() && mine(&rs) {
            part.relations.push(o);
        }
    }
    part
}

/// The values of root `r` in some tuple the solved part accepts, when decided.
fn values_of(part: &Group, s: &Solved, r: &str) -> Option<DimSet> {
    if s.undecided.is_some() || !s.unsure.is_empty() {
        return None;
    }
    if part.roots.len() == 1 {
        return s.accepted.get(r).cloned();
    }
    if s.defined.is_some() {
        return None;
    }
    if let Some(t) = &s.tied {
        return t.projection(r).ok();
    }
    let j = s.joint.as_ref()?;
    if j.undecided.is_some() {
        return None;
    }
    j.projection(r).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;

    fn g(s: &str) -> Expr {
        parse_guard(s).unwrap()
    }

    fn at_least(v: &[(&str, i128)]) -> BTreeMap<String, DimSet> {
        v.iter()
            .map(|(n, lo)| (n.to_string(), DimSet::interval(*lo, 1 << 40)))
            .collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// Decomposable groups (issue 41): two axes `h`, `w` (`h` with a partner `h2` tied to
        /// it through floors, or not) and a batch `b`, each with periodic guards of its
        /// own, joined only by corner guards (`max(1, h//k)*max(1, w//k) != 1`, `b % (b*..)
        /// != 0`, `1 < h4*w4`); against brute force over the box: a tuple passes every guard
        /// exactly when every part accepts its sizes, and where the axes' own guards leave the
        /// corner out, the axes are solved apart.
        #[test]
        fn decomposed_groups_match_brute_force(
            k in 2i128..6, m in 2i128..5, r in 0i128..5, lo in 2i128..14, tie in proptest::bool::ANY,
            past in proptest::bool::ANY, hi in 16i128..28,
        ) {
            let own_lo = if past { (2 * k).max(lo) } else { lo };
            let mut guards = vec![
                g(&format!("h >= {own_lo}")),
                g(&format!("w >= {own_lo}")),
                g(&format!("h % {m} != {}", r % m)),
                g(&format!("(w + 1) % {m} != {}", r % m)),
                g(&format!("max(1, h//{k})*max(1, w//{k}) != 1")),
                g(&format!("b % (b*(1 + (h-1)//{k})*(1 + (w-1)//{k})) != 0")),
                g(&format!("1 < (1 + (h-1)//{k})*(1 + (w-1)//{k})")),
            ];
            if tie {
                guards.push(g(&format!("(h2 - 1)//{k} == (h - 1)//{k}")));
            }
            let names: Vec<String> = if tie {
                ["b", "h", "w", "h2"].iter().map(|s| s.to_string()).collect()
            } else {
                ["b", "h", "w"].iter().map(|s| s.to_string()).collect()
            };
            let ranges: BTreeMap<String, (i128, i128)> =
                names.iter().map(|n| (n.clone(), if n == "b" { (1, 3) } else { (1, hi) })).collect();
            let groups = crate::joint::group(&guards, &names);
            let mut parts = Vec::new();
            for grp in &groups {
                parts.extend(solve_parts(grp, &guards, &ranges, &Budget::default(), None, &|_| true));
            }
            let n = names.len();
            let top = |l: usize| ranges[&names[l]].1;
            let mut t = vec![1i128; n];
            loop {
                let at = |a: &str| names.iter().position(|x| x == a).map(|i| t[i]);
                let truth = guards.iter().all(|g| g.truth(&at) == Ok(true));
                let said = parts.iter().all(|(grp, s)| s.contains(grp, &at) == Some(true));
                proptest::prop_assert_eq!(truth, said, "at {:?}", t);
                let mut l = 0;
                while l < n {
                    t[l] += 1;
                    if t[l] <= top(l) { break; }
                    t[l] = 1;
                    l += 1;
                }
                if l == n { break; }
            }
            if past {
                // The corner lies below every value the axes' own guards leave: h and w apart.
                let with_both = parts.iter().filter(|(p, _)| {
                    p.members.iter().any(|x| x.name == "h") && p.members.iter().any(|x| x.name == "w")
                });
                proptest::prop_assert_eq!(with_both.count(), 0, "{:?}", parts.iter().map(|p| &p.0.roots).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn corner_guards_hold_past_their_corner() {
        let l = Limits::default();
        let sets = at_least(&[("h", 16), ("w", 16), ("b", 2)]);
        assert!(holds_on_parts(
            &g("max(1, h//8)*max(1, w//8) != 1"),
            &sets,
            &l,
            &mut Terms::default()
        ));
        assert!(holds_on_parts(
            &g("b % (b*(1 + (h-1)//4)*(1 + (w-1)//4)) != 0"),
            &sets,
            &l,
            &mut Terms::default()
        ));
        assert!(holds_on_parts(
            &g("((h-1)//4) % ((w-1)//4 * ((h-1)//4)) != 0"),
            &sets,
            &l,
            &mut Terms::default()
        ));
        // Terms of one size equal on its set are one: h//8 == (h//4)//2 everywhere.
        assert!(holds_on_parts(
            &g("4*b*(w//8)*(h//8) == 4*b*((w//4)//2)*((h//4)//2)"),
            &sets,
            &l,
            &mut Terms::default()
        ));
        let wide = at_least(&[("h", 32), ("w", 32)]);
        assert!(holds_on_parts(
            &g("(w//16)*(h//16) != (h//16)"),
            &wide,
            &l,
            &mut Terms::default()
        ));
        // Not where the corner is reachable (w in 16..31: w//16 == 1).
        assert!(!holds_on_parts(
            &g("(w//16)*(h//16) != (h//16)"),
            &sets,
            &l,
            &mut Terms::default()
        ));
        let low = at_least(&[("h", 2), ("w", 2), ("b", 1)]);
        assert!(!holds_on_parts(
            &g("max(1, h//8)*max(1, w//8) != 1"),
            &low,
            &l,
            &mut Terms::default()
        ));
        assert!(!holds_on_parts(
            &g("b % (b*(1 + (h-1)//4)*(1 + (w-1)//4)) != 0"),
            &low,
            &l,
            &mut Terms::default()
        ));
        assert!(!holds_on_parts(
            &g("h*w <= 256"),
            &sets,
            &l,
            &mut Terms::default()
        ));
        assert!(!holds_on_parts(
            &g("h // 8 == w // 8"),
            &sets,
            &l,
            &mut Terms::default()
        ));
    }
}
