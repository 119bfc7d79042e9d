//! A guard over several sizes decided over given sets of them ([`holds_on_parts`]): the terms of
//! one size that take the same values on its set written as one (`h8 == h4 // 2` wherever H
//! passes its own guards: the periodic engine decides each pair), products common to both sides
//! of a comparison cancelled (`4*b*h8*w8 == 4*b*(h4//2)*(w4//2)`), `a % (a*k)` read as
//! `a*(1 % k)` for positive `a`, `k`; then interval bounds ([`crate::bounds`]) over the hulls of
//! the sets' segments decide what is left. Used by [`super::solve_parts`] (a guard set aside,
//! over the parts' answers) and by `equation.rs` (the guards beside an equation).

use super::decide::decide;
use crate::bounds::{holds_on_segments, Bounds, B};
use crate::engine::Limits;
use crate::num::Q;
use crate::types::{CmpOp, DimSet, Expr};
use std::collections::BTreeMap;
/// The terms of each size [`holds_on_parts`] has met over one family of sets: the first of each
/// class of terms equal at every value of the size's set.
#[derive(Debug, Default)]
pub struct Terms {
    /// Per size, the representatives met so far.
    reps: BTreeMap<String, Vec<Expr>>,
    /// Per size, each term met and what it is written as: `c` (no representative) or `c*r`.
    written: BTreeMap<String, Vec<(Expr, Written)>>,
}

/// A term written as a constant times a representative of its size, or a constant.
type Written = (Q, Option<Expr>);

fn written_expr((c, r): &Written) -> Expr {
    match r {
        None => Expr::Const(*c),
        Some(r) if *c == Q::from_integer(1) => r.clone(),
        Some(r) => Expr::Const(*c) * r.clone(),
    }
}

/// Terms of one size kept as distinct representatives while a guard's terms are written as one
/// ([`holds_on_parts`]); a term past them is kept as written.
const REPRESENTATIVES: usize = 24;

/// Values of a size's set probed for a term's least and greatest value (here and in
/// [`super::solve_parts`]'s ratios).
pub(super) const LEAST_PROBES: usize = 64;
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
    unify(g, sets, limits, terms);
    let unified = unify(g, sets, limits, terms);
    let env: BTreeMap<&str, Bounds> = sets
        .iter()
        .filter_map(|(n, s)| Some((n.as_str(), Bounds::range(s.min()?, s.max()?))))
        .collect();
    let simple = simplify(&unified, &env);
    let names: Vec<String> = sets.keys().cloned().collect();
    let all: Vec<DimSet> = sets.values().cloned().collect();
    let left = simple.atoms();
    if left.is_empty() {
        return simple.truth(&|_| None) == Ok(true);
    }
    if let [var] = left.iter().collect::<Vec<_>>()[..] {
        // One size left (the others' terms constant on their sets): the engine decides it.
        let set = &sets[&**var];
        let d = decide(&simple, var, set, limits, None);
        if d.set.is_some_and(|s| s.count() == set.count()) {
            return true;
        }
    }
    holds_on_segments(&simple, &names, &all) || holds_by_term_bounds(&simple, sets, limits)
}

/// Whether `g` holds with each largest term of one size read as any value between its least
/// and greatest value on the size's set (each shown a bound by the engine; probed among the
/// set's first and last values): interval bounds over independent terms, exact where each term
/// takes a bounded set of values (`(w // (w//3))*(h // (h//3)) <= 16`: each quotient 3 or 4).
fn holds_by_term_bounds(g: &Expr, sets: &BTreeMap<String, DimSet>, limits: &Limits) -> bool {
    let mut env: Vec<(String, Bounds)> = Vec::new();
    let mut failed = false;
    let opaque = replace_terms(g, &mut |t: &Expr, var: &str| {
        let set = &sets[var];
        let value = |x: i128| t.int_at(&|n| (n == var).then_some(x));
        let probes: Vec<i128> = set
            .iter()
            .take(LEAST_PROBES)
            .chain(set.max().into_iter().flat_map(|m| {
                let tail = set.clip(m.saturating_sub(4 * LEAST_PROBES as i128), m);
                tail.iter().collect::<Vec<_>>()
            }))
            .filter_map(value)
            .collect();
        let (Some(&lo), Some(&hi)) = (probes.iter().min(), probes.iter().max()) else {
            failed = true;
            return None;
        };
        let within = Expr::And(vec![
            Expr::Cmp(CmpOp::Ge, Box::new(t.clone()), Box::new(Expr::int(lo))),
            Expr::Cmp(CmpOp::Le, Box::new(t.clone()), Box::new(Expr::int(hi))),
        ]);
        let d = decide(&within, var, set, limits, None);
        if d.set.is_none_or(|s| s.count() != set.count()) {
            failed = true;
            return None;
        }
        let name = format!("#{}", env.len());
        env.push((name.clone(), Bounds::range(lo, hi)));
        Some(Expr::sym(&name))
    });
    if failed || env.is_empty() {
        return false;
    }
    let env: BTreeMap<&str, Bounds> = env.iter().map(|(n, b)| (n.as_str(), *b)).collect();
    crate::bounds::truth(&opaque, &env) == crate::bounds::Tri::True
}

/// `e` with each largest non-constant term of one size replaced by what `f` gives for it (the
/// term and its size), kept where `f` gives nothing.
fn replace_terms(e: &Expr, f: &mut dyn FnMut(&Expr, &str) -> Option<Expr>) -> Expr {
    let atoms = e.atoms();
    if atoms.len() == 1 && !e.is_bool() && !matches!(e, Expr::Const(_)) {
        let var = atoms.iter().next().expect("one atom").to_string();
        return f(e, &var).unwrap_or_else(|| e.clone());
    }
    if atoms.len() < 2 && !e.is_bool() {
        return e.clone();
    }
    let cell = std::cell::RefCell::new(f);
    e.map_children(&|c| replace_terms(c, &mut **cell.borrow_mut()))
}

/// `e` with every largest term of one size written as the simplest term that takes the same
/// value at every value of its set: a constant (`x // (x//2)` is 2 on even sizes), else an
/// integer multiple of a representative of that size met before (`w` is `2*(w//2)` on even
/// widths, `(1 + w)//2` is `w//2`): where a term met later divides a representative (`w//2`
/// after `w`), it becomes the representative and the terms written with the old one are
/// written with it ([`holds_on_parts`] writes a guard twice, so that its terms agree). Each
/// equality is decided over the size's set by the periodic engine
/// ([`super::solve::decide`]).
fn unify(e: &Expr, sets: &BTreeMap<String, DimSet>, limits: &Limits, terms: &mut Terms) -> Expr {
    let atoms = e.atoms();
    if atoms.len() == 1 && !e.is_bool() && !matches!(e, Expr::Const(_)) {
        let var = atoms.iter().next().expect("one atom").to_string();
        if let Some((_, w)) = terms
            .written
            .get(&var)
            .and_then(|v| v.iter().find(|(t, _)| t == e))
        {
            return written_expr(w);
        }
        let w = same_term(e, &var, &sets[&var], limits, terms);
        terms
            .written
            .entry(var)
            .or_default()
            .push((e.clone(), w.clone()));
        return written_expr(&w);
    }
    if atoms.len() < 2 {
        return e.clone();
    }
    // Children one by one, in order, so that a term met first is the representative.
    let cell = std::cell::RefCell::new(std::mem::take(terms));
    let out = e.map_children(&|c| unify(c, sets, limits, &mut cell.borrow_mut()));
    *terms = cell.into_inner();
    out
}

/// How the term `e` of size `var` is written over `set` ([`unify`]): a constant, an integer
/// multiple of a representative, or itself as a representative (while fewer than
/// [`REPRESENTATIVES`]), replacing a representative it divides.
fn same_term(e: &Expr, var: &str, set: &DimSet, limits: &Limits, terms: &mut Terms) -> Written {
    let one = Q::from_integer(1);
    let everywhere = |a: &Expr, b: &Expr| {
        let same = Expr::Cmp(CmpOp::Eq, Box::new(a.clone()), Box::new(b.clone()));
        let d = decide(&same, var, set, limits, None);
        d.set.is_some_and(|s| s.count() == set.count())
    };
    let Some(x0) = set.min() else {
        return (one, Some(e.clone()));
    };
    let at = |t: &Expr| t.int_at(&|a| (a == var).then_some(x0));
    let Some(v0) = at(e) else {
        return (one, Some(e.clone()));
    };
    if everywhere(e, &Expr::int(v0)) {
        return (Q::from_integer(v0), None);
    }
    let seen = terms.reps.entry(var.to_string()).or_default();
    for slot in seen.iter_mut() {
        let r = slot.clone();
        let Some(r0) = at(&r).filter(|r0| *r0 != 0) else {
            continue;
        };
        let c = Q::new(v0, r0);
        if c.is_integer() && everywhere(e, &(Expr::Const(c) * r.clone())) {
            return (c, Some(r));
        }
        if v0 == 0 {
            continue;
        }
        let n = Q::new(r0, v0);
        if n.is_integer() && everywhere(&r, &(Expr::Const(n) * e.clone())) {
            // `r == n*e`: `e` is the representative now.
            *slot = e.clone();
            for (_, w) in terms.written.entry(var.to_string()).or_default() {
                if w.1.as_ref() == Some(&r) {
                    *w = (w.0 * n, Some(e.clone()));
                }
            }
            return (one, Some(e.clone()));
        }
    }
    if seen.len() < REPRESENTATIVES {
        seen.push(e.clone());
    }
    (one, Some(e.clone()))
}

/// A product as a constant and its other factors (nested products flattened, sorted by their
/// text).
pub(super) fn monomial(e: &Expr) -> (Q, Vec<Expr>) {
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
pub(super) fn product(coef: Q, factors: Vec<Expr>) -> Expr {
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

/// Whether every value of `e` is an integer (no true division, integer constants).
fn integral(e: &Expr) -> bool {
    let mut ok = true;
    e.visit(&mut |t| match t {
        Expr::TrueDiv(..) => ok = false,
        Expr::Const(c) if !c.is_integer() => ok = false,
        _ => {}
    });
    ok
}

/// `(d*k) // d` and `(d*k) % d` for a positive divisor `d` whose factors are among the
/// dividend's and an integer `k` (the dividend's other factors, times an integer ratio of the
/// constants): `k` and 0. `None` when not of that form.
fn exact_quotient(a: &Expr, d: &Expr, env: &BTreeMap<&str, Bounds>) -> Option<Expr> {
    let (ca, fa) = monomial(a);
    let (cd, fd) = monomial(d);
    if fd.is_empty() || cd <= Q::from_integer(0) || !positive(&fd, env) {
        return None;
    }
    let rest = without(&fd, &fa)?;
    let k = crate::num::div(&ca, &cd).ok()?;
    (k.is_integer() && rest.iter().all(integral)).then(|| product(k, rest))
}

/// `e` rewritten bottom-up by rules exact wherever `env` holds: `a % (a*k)` is `a*(1 % k)` for
/// `a, k >= 1`; `(a*k) // a` is `k` and `(a*k) % a` is 0 for `a >= 1` and an integer `k`; a
/// comparison's common positive factors are cancelled.
fn simplify(e: &Expr, env: &BTreeMap<&str, Bounds>) -> Expr {
    let e = e.map_children(&|c| simplify(c, env));
    match &e {
        Expr::FloorDiv(a, d) => exact_quotient(a, d, env).unwrap_or(e),
        Expr::Mod(a, d) if exact_quotient(a, d, env).is_some() => Expr::int(0),
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
                return match Expr::Cmp(*op, Box::new(l), Box::new(r)).truth(&|_| None) {
                    Ok(v) => Expr::Bool(v),
                    Err(_) => e,
                };
            }
            Expr::Cmp(*op, Box::new(l), Box::new(r))
        }
        _ => e,
    }
}
