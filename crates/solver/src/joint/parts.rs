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
//! A guard over the parts' answers is decided in three steps, each exact over the parts' sets:
//! the terms of one size that take the same values on its set are written as one (`h8 ==
//! h4 // 2` wherever H passes its own guards: the periodic engine decides each pair), products
//! common to both sides of a comparison are cancelled (`4*b*h8*w8 == 4*b*(h4//2)*(w4//2)`), `a %
//! (a*k)` is `a*(1 % k)` for positive `a`, `k`; then interval bounds ([`crate::bounds`]) over the
//! hulls of the sets' segments decide what is left.

use super::grouping::{root_range, Group};
use super::solve::solve_group_with;
use super::solved::{Prover, Solved};
use crate::bounds::{holds_on_segments, Bounds, B};
use crate::engine::Limits;
use crate::linked::Budget;
use crate::num::Q;
use crate::types::{CmpOp, DimSet, Expr};
use std::collections::{BTreeMap, BTreeSet};

/// The terms of each size [`holds_on_parts`] has met over one family of sets: the first of each
/// class of terms equal at every value of the size's set.
#[derive(Debug, Default)]
pub struct Terms(BTreeMap<String, Vec<Expr>>);

/// Terms of one size kept as distinct representatives while a guard's terms are written as one
/// ([`holds_on_parts`]); a term past them is kept as written.
const REPRESENTATIVES: usize = 24;

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
    loop {
        let comps = components(grp, &cut, &roots_of);
        if comps.len() < 2 || crate::budget::expired().is_some() {
            return whole();
        }
        for c in &comps {
            if !solved.contains_key(c) {
                let part = part_of(grp, c, &cut, all, &roots_of);
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
        for &i in &cut {
            let g = &grp.guards[i];
            if holds_on_parts(g, &sets, &budget.limits, &mut on_all) {
                continue;
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
        let failing: Vec<usize> = if links.is_empty() {
            failing
        } else {
            links.into_iter().collect()
        };
        if failing.is_empty() {
            let mut out: Vec<(Group, Solved)> = comps.iter().map(|c| solved[c].clone()).collect();
            for &i in &cut {
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

/// Whether `g` holds at every tuple of the sets (each size in `sets[size]`), shown exactly: the
/// terms of one size equal on its set written as one, common factors of a comparison's sides
/// cancelled, `a % (a*k)` read as `a*(1 % k)`, then interval bounds over the sets' segments.
/// `false` when not shown.
/// `terms` keeps the terms of each size met so far (the same sets: one per set of sets), so that
/// the guards of a group compare each term once.
pub fn holds_on_parts(
    g: &Expr,
    sets: &BTreeMap<String, DimSet>,
    limits: &Limits,
    terms: &mut Terms,
) -> bool {
    let atoms = g.atoms();
    // A size with no accepted value leaves no tuple: "holds on every tuple" would hold
    // vacuously and free the others of a group that accepts nothing. Solved jointly instead.
    if atoms
        .iter()
        .any(|a| sets.get(&**a).is_none_or(DimSet::is_empty))
    {
        return false;
    }
    let unified = unify(g, sets, limits, &mut terms.0);
    let env: BTreeMap<&str, Bounds> = sets
        .iter()
        .filter_map(|(n, s)| Some((n.as_str(), Bounds::range(s.min()?, s.max()?))))
        .collect();
    let simple = simplify(&unified, &env);
    let names: Vec<String> = sets.keys().cloned().collect();
    let all: Vec<DimSet> = sets.values().cloned().collect();
    if simple.atoms().is_empty() {
        return simple == Expr::Bool(true);
    }
    holds_on_segments(&simple, &names, &all)
}

/// `e` with every largest term of one size replaced by the first term of that size seen before
/// that takes the same value at every value of its set (`reps`: the terms seen, per size).
fn unify(
    e: &Expr,
    sets: &BTreeMap<String, DimSet>,
    limits: &Limits,
    reps: &mut BTreeMap<String, Vec<Expr>>,
) -> Expr {
    let atoms = e.atoms();
    if atoms.len() == 1 && !e.is_bool() && !matches!(e, Expr::Sym(_) | Expr::Const(_)) {
        let var = atoms.iter().next().expect("one atom").to_string();
        let set = &sets[&var];
        let seen = reps.entry(var.clone()).or_default();
        if seen.contains(e) {
            return e.clone();
        }
        for r in seen.iter() {
            let same = Expr::Cmp(CmpOp::Eq, Box::new(e.clone()), Box::new(r.clone()));
            let d = super::solve::decide(&same, &var, set, limits, None);
            if d.set.is_some_and(|s| s.count() == set.count()) {
                return r.clone();
            }
        }
        if seen.len() < REPRESENTATIVES {
            seen.push(e.clone());
        }
        return e.clone();
    }
    if atoms.len() < 2 {
        return e.clone();
    }
    // Children one by one, in order, so that a term met first is the representative.
    let cell = std::cell::RefCell::new(std::mem::take(reps));
    let out = e.map_children(&|c| unify(c, sets, limits, &mut cell.borrow_mut()));
    *reps = cell.into_inner();
    out
}

/// A product as a constant and its other factors (nested products flattened, sorted by their
/// text).
fn monomial(e: &Expr) -> (Q, Vec<Expr>) {
    fn walk(t: &Expr, coef: &mut Q, factors: &mut Vec<Expr>) {
        match t {
            Expr::Mul(v) => v.iter().for_each(|x| walk(x, coef, factors)),
            Expr::Const(c) => match crate::num::mul(coef, c) {
                Ok(p) => *coef = p,
                Err(_) => factors.push(t.clone()),
            },
            other => factors.push(other.clone()),
        }
    }
    let mut coef = Q::from_integer(1);
    let mut factors = Vec::new();
    walk(e, &mut coef, &mut factors);
    factors.sort_by_key(|f| f.to_string());
    (coef, factors)
}

/// The product of a constant and factors.
fn product(coef: Q, factors: Vec<Expr>) -> Expr {
    let mut v = vec![Expr::Const(coef)];
    v.extend(factors);
    v.into_iter().reduce(|a, b| a * b).unwrap_or(Expr::int(1))
}

/// `b` with `a`'s factors taken out when `a`'s factors are among `b`'s: the rest.
fn without(a: &[Expr], b: &[Expr]) -> Option<Vec<Expr>> {
    let mut rest = b.to_vec();
    for f in a {
        let i = rest.iter().position(|x| x == f)?;
        rest.remove(i);
    }
    Some(rest)
}

/// Whether every factor is at least 1 over `env`.
fn positive(factors: &[Expr], env: &BTreeMap<&str, Bounds>) -> bool {
    factors.iter().all(|f| Bounds::of(f, env).lo >= B::Fin(1))
}

/// `e` rewritten bottom-up by rules exact wherever `env` holds: `a % (a*k)` is `a*(1 % k)` for
/// `a, k >= 1`; a comparison's common positive factors are cancelled.
fn simplify(e: &Expr, env: &BTreeMap<&str, Bounds>) -> Expr {
    let e = e.map_children(&|c| simplify(c, env));
    match &e {
        Expr::Mod(a, d) => {
            let (ca, fa) = monomial(a);
            let (cd, fd) = monomial(d);
            let one = Q::from_integer(1);
            if ca != one || cd < one || !cd.is_integer() || !positive(&fa, env) || fa.is_empty() {
                return e;
            }
            match without(&fa, &fd) {
                Some(rest) if positive(&rest, env) => {
                    let k = product(cd, rest);
                    Expr::Mul(vec![
                        (**a).clone(),
                        Expr::Mod(Box::new(Expr::int(1)), Box::new(k)),
                    ])
                }
                _ => e,
            }
        }
        Expr::Cmp(op, l, r) if !l.is_bool() && !r.is_bool() => {
            let (cl, fl) = monomial(l);
            let (cr, fr) = monomial(r);
            let mut common = Vec::new();
            let mut rest_r = fr.clone();
            let mut rest_l = Vec::new();
            for f in fl {
                match rest_r.iter().position(|x| *x == f) {
                    Some(i) => {
                        rest_r.remove(i);
                        common.push(f);
                    }
                    None => rest_l.push(f),
                }
            }
            if common.is_empty() || !positive(&common, env) {
                return e;
            }
            let (l, r) = (product(cl, rest_l), product(cr, rest_r));
            if l.atoms().is_empty() && r.atoms().is_empty() {
                let v = crate::bounds::truth(&Expr::Cmp(*op, Box::new(l), Box::new(r)), env);
                return match v {
                    crate::bounds::Tri::True => Expr::Bool(true),
                    crate::bounds::Tri::False => Expr::Bool(false),
                    crate::bounds::Tri::Unknown => e,
                };
            }
            Expr::Cmp(*op, Box::new(l), Box::new(r))
        }
        _ => e,
    }
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
