//! Guards read in a normal form before the joint solve, so that identities the program's code
//! made (window padding: `Pw = 7*(Pw//7)`, `16*b*Pw*Ph == 784*b*(Pw//7)*(Ph//7)`) are seen as
//! such instead of left to interval bounds, which cannot see that two terms move together.
//!
//! Over a box of sizes (each size in its accepted set: its own guards already hold), each guard
//! is rewritten into one that holds at exactly the same tuples of the box:
//!
//! * torch's own equalities with a constant (`Pw//(Pw//7) == 7`) are substituted
//!   ([`substitute_equalities`]);
//! * a one-size term `E` that every value of its size makes a multiple of `k` (the periodic
//!   engine decides `E % k == 0` over the size's accepted set) is written `k*(E//k)` wherever it
//!   is not already divided by `k`;
//! * sums and products are expanded into a polynomial over the opaque terms (floor divisions,
//!   remainders, `min`, `max`, sizes): `A // B` and `A % B` with `A` a constant multiple of `B`
//!   and `B >= 1` over the box become that constant and `0` (`A % (c*A)` is `A`, `A % (A*M)`
//!   is `A*min(1, M - 1)`); `A // k` and `A % k` with `A = k*P + r` (integer `P`,
//!   `0 <= r < k`) become `P` and `r`; a `max`/`min` whose one argument bounds every other over
//!   the box becomes it; a comparison whose two sides differ by a constant is decided, and a
//!   factor common to its terms that is at least 1 over the box is divided out;
//! * a guard left over one size narrows that size's values, and the rest is rewritten again
//!   over the narrowed box (one-size terms proportional there, `w//4 == 7*(Pw//7)` once no
//!   padding is left, written as multiples of one another).
//!
//! Every rewrite is an identity over the box (checked by brute force in the tests against the
//! guards as torch printed them), and a rewrite that cannot be shown to be one is not made.

use super::equalities::{replace, replace_all, substitute_equalities};
use crate::bounds::{Bounds, B};
use crate::engine::{solve, Limits};
use crate::num::{self, Q};
use crate::types::{CmpOp, DimSet, Expr};
use num_traits::{One, Signed, Zero};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, HashSet};

/// A monomial: the ids of its opaque terms (in [`Terms`]), sorted, with repetition.
type Mono = Vec<u32>;

/// A polynomial over opaque terms.
type Poly = BTreeMap<Mono, Q>;

/// Most monomials a polynomial may hold (past it the term stays as it is).
const MAX_TERMS: usize = 256;

/// `linking` (the guards over several sizes of a group) in normal form over the box of
/// `domains` (one per size of `names`); `own` are the group's other guards (over one size,
/// already applied to the domains), whose equalities with a constant are substituted too.
/// Returns the guards (parallel to `linking`: a guard decided over the whole box becomes `True`
/// or `False`) and the narrowed box: the rewritten guards hold at exactly the tuples of the
/// narrowed box the original ones do, and every tuple of `domains` outside it fails an
/// original guard.
pub fn normalize(
    linking: &[Expr],
    own: &[Expr],
    names: &[String],
    domains: &[DimSet],
    limits: &Limits,
) -> (Vec<Expr>, Vec<DimSet>) {
    let mut all: Vec<Expr> = own.to_vec();
    all.extend(linking.iter().cloned());
    let substituted = substitute_equalities(&all);
    let mut out: Vec<Expr> = substituted[own.len()..].to_vec();
    let mut doms = domains.to_vec();
    for _ in 0..ROUNDS {
        out = rewrite(&out, names, &doms, limits);
        // A guard left over one size restricts that size's values (the joint set is the same).
        let mut changed = false;
        for g in &out {
            let atoms = g.atoms();
            let [x] = atoms.iter().collect::<Vec<_>>()[..] else {
                continue;
            };
            let Some(i) = names.iter().position(|n| *n == x.to_string()) else {
                continue;
            };
            if let Some(set) = solve(g, x, &doms[i], limits).set() {
                if *set != doms[i] {
                    doms[i] = set.clone();
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    (out, doms)
}

/// One guard over the size `var` in normal form over the values `set` (one round of
/// [`normalize`]'s rewriting: `Pw % (Pw//7) == 0` with every `Pw` a multiple of 7 becomes
/// `True`): it holds at exactly the values of `set` the original one does.
pub fn normalize_one(g: &Expr, var: &str, set: &DimSet, limits: &Limits) -> Expr {
    rewrite(
        std::slice::from_ref(g),
        &[var.to_string()],
        std::slice::from_ref(set),
        limits,
    )
    .pop()
    .unwrap_or_else(|| g.clone())
}

/// Rounds of [`normalize`]: rewriting, then the guards left over one size applied.
const ROUNDS: usize = 4;

/// One round of [`normalize`]'s rewriting over the box of `domains`.
fn rewrite(guards: &[Expr], names: &[String], domains: &[DimSet], limits: &Limits) -> Vec<Expr> {
    let mut out = guards.to_vec();
    let domain = |x: &str| names.iter().position(|n| n == x).map(|i| &domains[i]);
    // One-size terms each size's values make a multiple of k (each term and k tried once:
    // torch's guards repeat their terms many times over).
    let mut tried: HashSet<(Expr, i128)> = HashSet::new();
    let mut multiples: HashSet<(Expr, i128)> = HashSet::new();
    for g in &out {
        collect_divisions(g, &mut |e, k| {
            if matches!(e, Expr::Sym(_)) || !tried.insert((e.clone(), k)) {
                return;
            }
            let atoms = e.atoms();
            let [x] = atoms.iter().collect::<Vec<_>>()[..] else {
                return;
            };
            let Some(d) = domain(x) else { return };
            let test = Expr::Cmp(
                CmpOp::Eq,
                Box::new(Expr::Mod(Box::new(e.clone()), Box::new(Expr::int(k)))),
                Box::new(Expr::int(0)),
            );
            if solve(&test, x, d, limits).set() == Some(d) {
                multiples.insert((e.clone(), k));
            }
        });
    }
    if !multiples.is_empty() {
        // Each term written as a multiple of its largest k (a multiple of every other).
        let mut largest: HashMap<Expr, i128> = HashMap::new();
        for (e, k) in &multiples {
            let j = largest.entry(e.clone()).or_insert(*k);
            *j = (*j).max(*k);
        }
        out = out
            .iter()
            .map(|g| as_multiple(g, &multiples, &largest))
            .collect();
    }
    let ctx = Ctx::new(names, domains, limits);
    out = out.iter().map(|g| with_conditions(g, &ctx)).collect();
    // One-size terms proportional over their size's values (`w//4 == 7*(Pw//7)` once `w`'s
    // values need no padding): the larger written as a multiple of the smaller.
    let mut terms: Vec<Expr> = Vec::new();
    for g in &out {
        collect_terms(g, &mut terms);
    }
    // Each term's size and value at that size's smallest value, once.
    let at_min: Vec<Option<(String, i128)>> = terms
        .iter()
        .map(|t| {
            let atoms = t.atoms();
            let [x] = atoms.iter().collect::<Vec<_>>()[..] else {
                return None;
            };
            let x0 = domain(x)?.min()?;
            match t.eval(&|_| Some(x0)) {
                Ok(crate::expr::Value::Num(q)) if q.is_integer() => {
                    Some((x.to_string(), *q.numer()))
                }
                _ => None,
            }
        })
        .collect();
    let mut rules: Vec<(Expr, Expr)> = Vec::new();
    for (i, a) in terms.iter().enumerate() {
        for (j, b) in terms.iter().enumerate().skip(i + 1) {
            let (Some((x, va)), Some((y, vb))) = (&at_min[i], &at_min[j]) else {
                continue;
            };
            if x != y {
                continue;
            }
            let Some(d) = domain(x) else { continue };
            let (small, big, c) = match (*va, *vb) {
                (va, vb) if va > 0 && vb % va == 0 => (a, b, vb / va),
                (va, vb) if vb > 0 && va % vb == 0 => (b, a, va / vb),
                _ => continue,
            };
            if rules.iter().any(|(f, _)| f == big || f == small) {
                continue;
            }
            let test = Expr::Cmp(
                CmpOp::Eq,
                Box::new(big.clone()),
                Box::new(Expr::Mul(vec![Expr::int(c), small.clone()])),
            );
            if solve(&test, x, d, limits).set() == Some(d) {
                rules.push((big.clone(), Expr::Mul(vec![Expr::int(c), small.clone()])));
            }
        }
    }
    if rules.is_empty() {
        return out;
    }
    // The rules in one pass over each guard, outermost first; each rule's target with the later
    // rules applied to it (a rule's `small` may be a later rule's `big`; no rule's `small` is
    // an earlier rule's `big`, so this ends).
    let mut table: HashMap<Expr, Expr> = HashMap::new();
    for (i, (from, to)) in rules.iter().enumerate() {
        let to = rules[i + 1..]
            .iter()
            .fold(to.clone(), |acc, (f, t)| replace(&acc, f, t));
        table.insert(from.clone(), to);
    }
    out.iter()
        .map(|g| with_conditions(&replace_all(g, &table), &ctx))
        .collect()
}

/// The opaque one-size terms of `e` that are no size itself (floor divisions, remainders...).
fn collect_terms(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::FloorDiv(..) | Expr::Mod(..) | Expr::Min(_) | Expr::Max(_) | Expr::Abs(_)
            if e.atoms().len() == 1 =>
        {
            if !out.contains(e) {
                out.push(e.clone());
            }
        }
        _ => {
            for c in children(e) {
                collect_terms(c, out);
            }
        }
    }
}

/// Calls `f(E, k)` for every `E // k` with `k > 1` a constant.
fn collect_divisions(e: &Expr, f: &mut dyn FnMut(&Expr, i128)) {
    if let Expr::FloorDiv(a, b) = e {
        if let Some(k) = int(b).filter(|&k| k > 1) {
            f(a, k);
        }
    }
    for c in children(e) {
        collect_divisions(c, f);
    }
}

fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Add(v) | Expr::Mul(v) | Expr::Min(v) | Expr::Max(v) | Expr::And(v) | Expr::Or(v) => {
            v.iter().collect()
        }
        Expr::Pow(a, b)
        | Expr::TrueDiv(a, b)
        | Expr::FloorDiv(a, b)
        | Expr::Mod(a, b)
        | Expr::Cmp(_, a, b) => vec![a, b],
        Expr::Round(_, a) | Expr::Abs(a) | Expr::Not(a) => vec![a],
        Expr::Ite(a, b, c) => vec![a, b, c],
        _ => vec![],
    }
}

/// `g` with every term `E` of `largest` not already divided by one of its `k` (`multiples`)
/// written `k*(E//k)`, `k` its largest: outermost first, in one pass.
fn as_multiple(g: &Expr, multiples: &HashSet<(Expr, i128)>, largest: &HashMap<Expr, i128>) -> Expr {
    if let Expr::FloorDiv(a, b) = g {
        if let Some(k) = int(b) {
            if largest.contains_key(&**a) && multiples.contains(&((**a).clone(), k)) {
                return g.clone();
            }
        }
    }
    if let Some(&k) = largest.get(g) {
        return Expr::Mul(vec![
            Expr::int(k),
            Expr::FloorDiv(Box::new(g.clone()), Box::new(Expr::int(k))),
        ]);
    }
    g.map_children(&|c| as_multiple(c, multiples, largest))
}

fn int(e: &Expr) -> Option<i128> {
    match e {
        Expr::Const(c) if c.is_integer() => Some(*c.numer()),
        _ => None,
    }
}

/// The opaque terms of one rewrite's polynomials, interned: a term's id is its place in `list`,
/// found by structural hash and equality. (Keyed by their text before, which rebuilt the text
/// of every term at every level of a guard's nesting: a Swin-T's 519 linking guards, nested
/// 20 deep, took 10 s.)
#[derive(Default)]
struct Terms {
    ids: HashMap<Expr, u32>,
    list: Vec<Expr>,
}

impl Terms {
    /// The id of `e`, interned on first sight.
    fn id(&mut self, e: &Expr) -> u32 {
        if let Some(&i) = self.ids.get(e) {
            return i;
        }
        let i = u32::try_from(self.list.len()).expect("fewer than 2^32 terms");
        self.list.push(e.clone());
        self.ids.insert(e.clone(), i);
        i
    }
}

impl std::ops::Index<u32> for Terms {
    type Output = Expr;
    fn index(&self, i: u32) -> &Expr {
        &self.list[i as usize]
    }
}

/// The polynomial of an integer-valued term, its opaque terms interned in `atoms`; `None` for
/// a term outside it (a rational, a condition, too many monomials).
fn poly(e: &Expr, atoms: &mut Terms) -> Option<Poly> {
    match e {
        Expr::Const(c) if c.is_integer() => {
            let mut p = Poly::new();
            if !c.is_zero() {
                p.insert(vec![], *c);
            }
            Some(p)
        }
        Expr::Add(v) => {
            let mut acc = Poly::new();
            for t in v {
                acc = add(&acc, &poly(t, atoms)?, false)?;
            }
            Some(acc)
        }
        Expr::Mul(v) => {
            let mut acc: Poly = [(vec![], Q::one())].into_iter().collect();
            for t in v {
                acc = mul(&acc, &poly(t, atoms)?)?;
            }
            Some(acc)
        }
        Expr::Sym(_)
        | Expr::FloorDiv(..)
        | Expr::Mod(..)
        | Expr::Min(_)
        | Expr::Max(_)
        | Expr::Abs(_) => Some([(vec![atoms.id(e)], Q::one())].into_iter().collect()),
        _ => None,
    }
}

fn add(a: &Poly, b: &Poly, negate: bool) -> Option<Poly> {
    let mut out = a.clone();
    for (m, c) in b {
        let c = if negate { num::neg(c).ok()? } else { *c };
        let e = out.entry(m.clone()).or_insert_with(Q::zero);
        *e = num::add(e, &c).ok()?;
        if e.is_zero() {
            out.remove(m);
        }
    }
    (out.len() <= MAX_TERMS).then_some(out)
}

fn mul(a: &Poly, b: &Poly) -> Option<Poly> {
    let mut out = Poly::new();
    for (ma, ca) in a {
        for (mb, cb) in b {
            let mut m: Mono = ma.iter().chain(mb).cloned().collect();
            m.sort();
            let c = num::mul(ca, cb).ok()?;
            let e = out.entry(m.clone()).or_insert_with(Q::zero);
            *e = num::add(e, &c).ok()?;
            if e.is_zero() {
                out.remove(&m);
            }
            if out.len() > MAX_TERMS {
                return None;
            }
        }
    }
    Some(out)
}

/// The expression of a polynomial (terms in a fixed order).
fn expr(p: &Poly, atoms: &Terms) -> Expr {
    let terms: Vec<Expr> = p
        .iter()
        .map(|(m, c)| {
            let mut f: Vec<Expr> = Vec::new();
            if !c.is_one() || m.is_empty() {
                f.push(Expr::Const(*c));
            }
            f.extend(m.iter().map(|&k| atoms[k].clone()));
            if f.len() == 1 {
                f.pop().expect("one factor")
            } else {
                Expr::Mul(f)
            }
        })
        .collect();
    match terms.len() {
        0 => Expr::int(0),
        1 => terms.into_iter().next().expect("one term"),
        _ => Expr::Add(terms),
    }
}

/// The constant `c` with `a == c*b` as polynomials, when there is one.
fn ratio(a: &Poly, b: &Poly) -> Option<Q> {
    let (m, cb) = b.iter().next()?;
    let c = num::div(a.get(m)?, cb).ok()?;
    (a.len() == b.len()
        && b.iter().all(|(m, x)| {
            a.get(m)
                .and_then(|y| num::mul(&c, x).ok().map(|cx| cx == *y))
                == Some(true)
        }))
    .then_some(c)
}

/// `(M, c)` with `b == a * c*M` for one monomial `M` (not constant) and `c >= 1` an integer.
/// `a`'s last monomial times `M` is one of `b`'s (multiplying by a monomial maps distinct
/// monomials to distinct ones, so nothing cancels): each of `b`'s that holds it is tried.
fn monomial_factor(a: &Poly, b: &Poly) -> Option<(Mono, Q)> {
    let (ma, ca) = a.iter().next_back()?;
    b.iter().find_map(|(mb, cb)| {
        // M: the atoms of this monomial of b beyond a's last (as multisets).
        let mut rest = mb.clone();
        for x in ma {
            let i = rest.iter().position(|y| y == x)?;
            rest.remove(i);
        }
        if rest.is_empty() {
            return None;
        }
        let c = num::div(cb, ca).ok()?;
        if !c.is_integer() || *c.numer() < 1 {
            return None;
        }
        let m: Poly = [(rest.clone(), c)].into_iter().collect();
        (mul(a, &m)? == *b).then_some((rest, c))
    })
}

fn lower(b: Bounds) -> Option<i128> {
    match b.lo {
        B::Fin(v) => Some(v),
        B::PosInf => Some(i128::MAX),
        B::NegInf => None,
    }
}

/// The box a guard is rewritten over: each size's bounds, and its values (for the engine).
struct Ctx<'a> {
    env: BTreeMap<&'a str, Bounds>,
    names: &'a [String],
    domains: &'a [DimSet],
    limits: &'a Limits,
    /// Divisors a rewrite assumed at least 1 where they may be 0 (the original raises there,
    /// so the guard fails): conjoined to a comparison guard ([`with_conditions`]).
    side: RefCell<Vec<Expr>>,
    /// The opaque terms of the polynomials.
    terms: RefCell<Terms>,
    /// Each term simplified so far, with the divisor conditions its simplification assumed:
    /// torch's guards repeat their subterms many times over (a Swin-T guard of 15,689
    /// characters holds a few dozen distinct ones).
    memo: RefCell<HashMap<Expr, (Expr, Vec<Expr>)>>,
    /// [`Ctx::at_least`]'s answers so far.
    known: RefCell<HashMap<(Expr, i128), bool>>,
}

impl<'a> Ctx<'a> {
    fn new(names: &'a [String], domains: &'a [DimSet], limits: &'a Limits) -> Self {
        let env = names
            .iter()
            .zip(domains)
            .filter_map(|(n, d)| Some((n.as_str(), Bounds::range(d.min()?, d.max()?))))
            .collect();
        Ctx {
            env,
            names,
            domains,
            limits,
            side: RefCell::default(),
            terms: RefCell::default(),
            memo: RefCell::default(),
            known: RefCell::default(),
        }
    }
}

impl Ctx<'_> {
    /// Whether `e >= k` at every point of the box: by bounds, else (a term over one size) by
    /// the engine over that size's values.
    fn at_least(&self, e: &Expr, k: i128) -> bool {
        let key = (e.clone(), k);
        if let Some(&b) = self.known.borrow().get(&key) {
            return b;
        }
        let b = self.at_least_uncached(e, k);
        self.known.borrow_mut().insert(key, b);
        b
    }

    fn at_least_uncached(&self, e: &Expr, k: i128) -> bool {
        if lower(Bounds::of(e, &self.env)).is_some_and(|lo| lo >= k) {
            return true;
        }
        let atoms = e.atoms();
        let [x] = atoms.iter().collect::<Vec<_>>()[..] else {
            return false;
        };
        let Some(i) = self.names.iter().position(|n| *n == x.to_string()) else {
            return false;
        };
        let d = &self.domains[i];
        let test = Expr::Cmp(CmpOp::Ge, Box::new(e.clone()), Box::new(Expr::int(k)));
        solve(&test, &self.names[i], d, self.limits).set() == Some(d)
    }
}

/// `g` simplified ([`simplify`]); a rewrite that assumed a divisor at least 1 where it may be
/// 0 is kept only for a comparison (no `and`, `or`, `not` or condition inside, so a raise
/// fails the whole guard), with the divisor's condition conjoined: where the divisor is 0 the
/// original raises and fails, and so does the rewritten guard.
fn with_conditions(g: &Expr, ctx: &Ctx) -> Expr {
    ctx.side.borrow_mut().clear();
    let out = simplify(g, ctx);
    let mut side: Vec<Expr> = Vec::new();
    for c in std::mem::take(&mut *ctx.side.borrow_mut()) {
        if !side.contains(&c) {
            side.push(c);
        }
    }
    if side.is_empty() {
        return out;
    }
    if !matches!(g, Expr::Cmp(..)) || has_connective(g) {
        return g.clone();
    }
    let mut all: Vec<Expr> = side.iter().map(|c| simplify(c, ctx)).collect();
    ctx.side.borrow_mut().clear();
    if out != Expr::Bool(true) {
        all.push(out);
    }
    match all.len() {
        1 => all.pop().expect("one"),
        _ => Expr::And(all),
    }
}

fn has_connective(e: &Expr) -> bool {
    matches!(e, Expr::And(_) | Expr::Or(_) | Expr::Not(_) | Expr::Ite(..))
        || children(e).into_iter().any(has_connective)
}

/// `d op 0` decided, when the difference `d` is a constant.
fn constant_comparison(d: &Poly, op: CmpOp) -> Option<Expr> {
    if !d.keys().all(Vec::is_empty) {
        return None;
    }
    let c = d.get(&vec![]).copied().unwrap_or_else(Q::zero);
    Some(Expr::Bool(op.holds(c.cmp(&Q::zero()))))
}

/// `e` simplified bottom-up over the box of `ctx` (each distinct term once: the divisor
/// conditions a memoized answer assumed are assumed again).
fn simplify(e: &Expr, ctx: &Ctx) -> Expr {
    if let Some((out, side)) = ctx.memo.borrow().get(e) {
        ctx.side.borrow_mut().extend(side.iter().cloned());
        return out.clone();
    }
    let before = ctx.side.borrow().len();
    let out = simplify_node(e.map_children(&|c| simplify(c, ctx)), ctx);
    let side = ctx.side.borrow()[before..].to_vec();
    ctx.memo.borrow_mut().insert(e.clone(), (out.clone(), side));
    out
}

/// `e` (its children simplified) simplified at its root.
fn simplify_node(e: Expr, ctx: &Ctx) -> Expr {
    let atoms = &mut *ctx.terms.borrow_mut();
    match &e {
        Expr::FloorDiv(a, b) | Expr::Mod(a, b) => {
            let is_div = matches!(e, Expr::FloorDiv(..));
            simplify_division(a, b, is_div, ctx, atoms).unwrap_or(e)
        }
        Expr::Or(v) if v.contains(&Expr::Bool(true)) => Expr::Bool(true),
        Expr::And(v) if v.contains(&Expr::Bool(false)) => Expr::Bool(false),
        Expr::Or(v) | Expr::And(v) => {
            let is_or = matches!(e, Expr::Or(_));
            let rest: Vec<Expr> = v
                .iter()
                .filter(|x| **x != Expr::Bool(!is_or))
                .cloned()
                .collect();
            match rest.len() {
                0 => Expr::Bool(!is_or),
                1 => rest.into_iter().next().expect("one"),
                _ if is_or => Expr::Or(rest),
                _ => Expr::And(rest),
            }
        }
        Expr::Not(x) => match **x {
            Expr::Bool(b) => Expr::Bool(!b),
            _ => e,
        },
        Expr::Max(v) | Expr::Min(v) => {
            let is_max = matches!(e, Expr::Max(_));
            extremum_winner(v, is_max, ctx).unwrap_or(e)
        }
        Expr::Cmp(op, l, r) => simplify_comparison(*op, l, r, ctx, atoms).unwrap_or(e),
        _ => e,
    }
}

/// `a // b` (`is_div`) or `a % b` simplified over the box of `ctx`, `None` when no rule applies:
/// a constant multiple of a divisor `>= 1`, a divisor `c >= 2` times the dividend, a divisor
/// that is the dividend times a monomial `>= 1`, and `k*P + r` with `0 <= r < k` over a
/// constant `k`.
fn simplify_division(
    a: &Expr,
    b: &Expr,
    is_div: bool,
    ctx: &Ctx,
    atoms: &mut Terms,
) -> Option<Expr> {
    let (Some(pa), Some(pb)) = (poly(a, atoms), poly(b, atoms)) else {
        return None;
    };
    // A constant multiple of a divisor >= 1.
    if let Some(c) = ratio(&pa, &pb).filter(|c| c.is_integer()) {
        let positive = ctx.at_least(b, 1);
        if positive || ctx.at_least(b, 0) {
            if !positive {
                ctx.side.borrow_mut().push(Expr::Cmp(
                    CmpOp::Ge,
                    Box::new(b.clone()),
                    Box::new(Expr::int(1)),
                ));
            }
            return Some(if is_div { Expr::Const(c) } else { Expr::int(0) });
        }
    }
    // A divisor that is c >= 2 times the dividend (dividend >= 0): A % (c*A) is A,
    // A // (c*A) is 0.
    if ratio(&pb, &pa).is_some_and(|c| c.is_integer() && *c.numer() >= 2)
        && ctx.at_least(b, 1)
        && ctx.at_least(a, 0)
    {
        return Some(if is_div { Expr::int(0) } else { a.clone() });
    }
    // A divisor that is the dividend times a monomial M >= 1 (dividend >= 0):
    // A % (A*M) is A when M >= 2 and 0 when M == 1, written A*min(1, M - 1);
    // A // (A*M) (A >= 1) is 1 when M == 1 and 0 after, written max(0, 2 - M).
    if let Some((m, c)) = monomial_factor(&pa, &pb) {
        let mut mp: Poly = [(m, c)].into_iter().collect();
        let me = expr(&mp, atoms);
        if ctx.at_least(b, 1) && ctx.at_least(&me, 1) {
            if !is_div && ctx.at_least(a, 0) {
                mp.insert(vec![], Q::from(-1));
                return Some(Expr::Mul(vec![
                    a.clone(),
                    Expr::Min(vec![Expr::int(1), expr(&mp, atoms)]),
                ]));
            }
            if is_div && ctx.at_least(a, 1) {
                let neg = mp
                    .iter()
                    .map(|(k, v)| (k.clone(), num::neg(v).unwrap_or(*v)))
                    .chain([(vec![], Q::from(2))])
                    .collect();
                return Some(Expr::Max(vec![Expr::int(0), expr(&neg, atoms)]));
            }
        }
    }
    // k*P + r with 0 <= r < k.
    let k = int(b).filter(|&k| k > 1)?;
    let r = pa.get(&vec![]).copied().unwrap_or_else(Q::zero);
    let divisible = pa
        .iter()
        .all(|(m, c)| m.is_empty() || (c.is_integer() && c.numer() % k == 0));
    if !(divisible && r.is_integer() && !r.is_negative() && *r.numer() < k) {
        return None;
    }
    if !is_div {
        return Some(Expr::Const(r));
    }
    let mut p = pa.clone();
    p.remove(&vec![]);
    for c in p.values_mut() {
        *c = Q::from(c.numer() / k);
    }
    Some(expr(&p, atoms))
}

/// The term of `max(v)` (`is_max`) or `min(v)` that wins over the box of `ctx`, `None` when none
/// is known to: one term beside constants, at least (at most) each of them, or a term whose
/// bounds are past every other's.
fn extremum_winner(v: &[Expr], is_max: bool, ctx: &Ctx) -> Option<Expr> {
    // One term beside constants, at least (at most) each of them over the box.
    let consts: Vec<i128> = v.iter().filter_map(int).collect();
    if consts.len() + 1 == v.len() {
        if let Some(x) = v.iter().find(|x| int(x).is_none()) {
            let wins = if is_max {
                consts.iter().max().is_some_and(|&c| ctx.at_least(x, c))
            } else {
                consts.iter().min().is_some_and(|&c| {
                    let neg = Expr::Mul(vec![Expr::int(-1), x.clone()]);
                    ctx.at_least(&neg, -c)
                })
            };
            if wins {
                return Some(x.clone());
            }
        }
    }
    let b: Vec<Bounds> = v.iter().map(|x| Bounds::of(x, &ctx.env)).collect();
    v.iter().enumerate().find_map(|(i, x)| {
        let wins = b.iter().enumerate().all(|(j, o)| {
            j == i
                || if is_max {
                    b[i].lo >= o.hi
                } else {
                    b[i].hi <= o.lo
                }
        });
        wins.then(|| x.clone())
    })
}

/// `l op r` simplified over the box of `ctx` as the sign of `l - r`: decided when the difference
/// is constant, else with the factors common to every term that are `>= 1` over the box and the
/// coefficients' common divisor divided out, positive terms on the left. `None` when a side is
/// not a polynomial.
fn simplify_comparison(
    op: CmpOp,
    l: &Expr,
    r: &Expr,
    ctx: &Ctx,
    atoms: &mut Terms,
) -> Option<Expr> {
    let (Some(pl), Some(pr)) = (poly(l, atoms), poly(r, atoms)) else {
        return None;
    };
    let mut d = add(&pl, &pr, true)?;
    if let Some(b) = constant_comparison(&d, op) {
        return Some(b);
    }
    // A factor common to every term that is >= 1 over the box, and the coefficients'
    // common divisor, divide out (the sign of the difference is theirs).
    if let Some(first) = d.keys().next().cloned() {
        let mut common = first;
        for m in d.keys() {
            common.retain(|x| m.contains(x));
        }
        common.dedup();
        common.retain(|&k| ctx.at_least(&atoms[k], 1));
        if !common.is_empty() {
            d = d
                .into_iter()
                .map(|(mut m, c)| {
                    for k in &common {
                        if let Some(i) = m.iter().position(|x| x == k) {
                            m.remove(i);
                        }
                    }
                    (m, c)
                })
                .collect();
        }
    }
    if d.values().all(|c| c.is_integer()) {
        let g = d
            .values()
            .fold(0i128, |g, c| num_integer::gcd(g, *c.numer()));
        if g > 1 {
            for c in d.values_mut() {
                *c = Q::from(c.numer() / g);
            }
        }
    }
    if let Some(b) = constant_comparison(&d, op) {
        return Some(b);
    }
    // Positive terms on the left, the others on the right.
    let (mut left, mut right) = (Poly::new(), Poly::new());
    for (m, c) in d {
        if c.is_negative() {
            right.insert(m, num::neg(&c).unwrap_or(c));
        } else {
            left.insert(m, c);
        }
    }
    Some(Expr::Cmp(
        op,
        Box::new(expr(&left, atoms)),
        Box::new(expr(&right, atoms)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;
    use proptest::prelude::*;

    fn holds(g: &Expr, x: i128, y: i128) -> bool {
        let env = |a: &str| match a {
            "x" => Some(x),
            "y" => Some(y),
            _ => None,
        };
        g.truth(&env) == Ok(true)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]
        /// Guards of window padding (`E = x//k1 + (k2 - (x//k1) % k2) % k2`, a multiple of `k2`)
        /// in normal form accept exactly the tuples of the box the original ones do, and every
        /// tuple outside the narrowed box fails an original guard; each one-size guard alone in
        /// normal form ([`normalize_one`]) holds at exactly the same values.
        #[test]
        fn normal_forms_keep_the_accepted_tuples(
            k1 in 1i128..5, k2 in 2i128..8, c in 1i128..60, k3 in 2i128..4,
            x0 in 1i128..40, wx in 0i128..60, y0 in 1i128..6, wy in 0i128..8, pick in 0usize..9,
        ) {
            let e = format!("((x // {k1}) + (({k2} + (-1)*((x // {k1}) % {k2})) % {k2}))");
            let q = format!("({e} // {k2})");
            let templates = [
                format!("({e} % {q}) == 0"),
                format!("({e} // {q}) == {k2}"),
                format!("16*y*{e} == {}*y*{q}", 16 * k2),
                format!("max(1, {e}) != {}", k2 * (c % 3 + 1)),
                format!("((y*{q}) % (y*{q}*{k3})) != 0"),
                format!("(y % (y*{q})) != 0"),
                format!("{k2}*{q}*y >= {c}"),
                format!("(x // {k1}) * y == {k2}*{q}*y"),
                format!("{q} * y != y"),
            ];
            let guards: Vec<Expr> = (0..3)
                .map(|i| parse_guard(&templates[(pick + 4 * i) % templates.len()]).unwrap())
                .collect();
            let (linking, own): (Vec<Expr>, Vec<Expr>) =
                guards.iter().cloned().partition(|g| g.atoms().len() > 1);
            let names = vec!["x".to_string(), "y".to_string()];
            let doms = vec![DimSet::interval(x0, x0 + wx), DimSet::interval(y0, y0 + wy)];
            // The one-size guards first, as the pipeline applies them.
            let mut own_doms = doms.clone();
            for g in &own {
                let one = normalize_one(g, "x", &own_doms[0], &Limits::default());
                for x in x0..=x0 + wx {
                    if own_doms[0].contains(x) {
                        prop_assert_eq!(holds(g, x, 0), holds(&one, x, 0), "{} at {}: {}", g, x, one);
                    }
                }
                let keep: Vec<i128> = own_doms[0].iter().filter(|&x| holds(g, x, 0)).collect();
                own_doms[0] = DimSet::from_values(keep);
            }
            let (normal, narrowed) =
                normalize(&linking, &own, &names, &own_doms, &Limits::default());
            for x in own_doms[0].iter() {
                for y in y0..=y0 + wy {
                    let before = linking.iter().all(|g| holds(g, x, y));
                    let inside = narrowed[0].contains(x) && narrowed[1].contains(y);
                    let after = inside && normal.iter().all(|g| holds(g, x, y));
                    prop_assert_eq!(before, after, "({}, {}): {:?} -> {:?}", x, y, linking, normal);
                }
            }
        }
    }

    #[test]
    fn window_identities_are_decided() {
        let g = |s: &str| parse_guard(s).unwrap();
        let e = "((x // 4) + ((7 + (-1)*((x // 4) % 7)) % 7))";
        let names = vec!["x".to_string(), "b".to_string()];
        let doms = vec![DimSet::interval(4, 1 << 62), DimSet::interval(2, 1 << 62)];
        let (out, _) = normalize(
            &[g(&format!("16*b*{e}*{e} == 784*b*({e} // 7)*({e} // 7)"))],
            &[],
            &names,
            &doms,
            &Limits::default(),
        );
        assert_eq!(out, vec![Expr::Bool(true)]);
        let one = normalize_one(
            &g(&format!("({e} % ({e} // 7)) == 0")),
            "x",
            &doms[0],
            &Limits::default(),
        );
        assert_eq!(one, Expr::Bool(true));
    }
}
