//! The `Defined` elimination `x == E(others)`: finding the definition, the defined size's
//! values with some partner ([`Defined::some`], [`Products`]), and whether `E` varies.

use super::grouping::Group;
use super::solved::Defined;
use crate::expr::Value;
use crate::linked::JointSet;
use crate::types::{CmpOp, DimSet, Expr};
use num_traits::Signed;

/// The first linking guard `x == E` (either side) of `grp` with `x` a root no other member is
/// derived from, `E` over other sizes only: `(guard index, x, E)`.
pub(super) fn definition(grp: &Group) -> Option<(usize, String, Expr)> {
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
    /// This definition and those of its reduced groups (a reduced group may define one more
    /// size: `mask_3 = image_3 // 4`, then `mask_2 = image_2 // 4`), outermost first; the
    /// innermost reduced group's joint set is over the rest.
    pub fn chain(&self) -> Vec<&Defined> {
        let mut defs = vec![self];
        let mut r = &self.solved;
        while let Some(inner) = &r.defined {
            defs.push(inner);
            r = &inner.solved;
        }
        defs
    }

    /// The value of the defined size `dim` of [`Self::chain`] at the tuple `t` of `sizes` (the
    /// innermost reduced group's sizes), every inner definition evaluated first; `None` when
    /// `dim` is none of them or the value is not an integer within 128 bits.
    pub fn value_at(&self, dim: &str, sizes: &[String], t: &[i128]) -> Option<i128> {
        let defs = self.chain();
        let i = defs.iter().position(|d| d.dim == dim)?;
        chain_values(&defs, sizes, t)?[i]
    }

    /// The values of the size `root` that pass with some value of the others, from `j`, the
    /// innermost reduced group's joint set; every size of [`Self::chain`] is at its definition
    /// and within its own set. Not computed when `j` is undecided.
    ///
    /// For a size of `j`: computed exactly where every definition is nondecreasing and
    /// nonnegative in every size over the boxes (sums, products, `//` by positive constants,
    /// `Max`, `Min` of sizes and nonnegative constants) and every defined size's own set is one
    /// interval `lo..hi`. In a box, each side is first cut to where the definitions of that one
    /// size lie in their ranges (an interval: bisection). Where every definition at the least
    /// corner is at least its `lo`, a value `v` of `root` has a partner exactly when every
    /// definition at `v` and the others' least values is at most its `hi` (a prefix, by
    /// bisection). Where one definition of several sizes starts below its `lo` (a defining
    /// size's range starts below the definition's least value), the others of one size each,
    /// and it moves by steps of 0 or 1 in each other size over interval sides, it takes every
    /// value between its value at `v` with the others least and at `v` with the others
    /// greatest: `v` passes when the first is at most `hi` and the second at least `lo`. Else an
    /// error: not computed.
    ///
    /// For a defined size whose definition has one size of `j` (`mask = image // 4`,
    /// `n = 2*ceil(h/8) + 1`): the image of that size's values with some partner under the
    /// definition (`image`: affine maps and floor division by positive constants, each exact
    /// on periodic sets), within its own set. A definition of several sizes is not computed
    /// here (`(h//16)*(w//16)` with both factors at least 2 takes the composite numbers, no
    /// periodic set: [`Products`]).
    pub fn some(&self, j: &JointSet, root: &str) -> Result<DimSet, crate::Error> {
        let not = |why: &str| {
            crate::Error::NotComputed(format!("{root}'s values with some partner: {why}"))
        };
        if j.undecided.is_some() {
            return Err(not("the reduced group is undecided"));
        }
        let defs = self.chain();
        if let Some(d) = defs.iter().find(|d| d.dim == root) {
            let atoms = d.expr.atoms();
            let [var] = atoms.iter().collect::<Vec<_>>()[..] else {
                return Err(not("its definition has several sizes"));
            };
            let level = j
                .level(var)
                .ok_or_else(|| not("its definition's size is not in the reduced group"))?;
            // With one definition its own set is the only other condition, and the image is
            // cut to it; with several, `var`'s values that pass with every one of them.
            let values = if defs.len() == 1 {
                j.tree.projection(level)?
            } else {
                self.some(j, var)?
            };
            return image(&d.expr, var, &values)?.intersect(&d.own);
        }
        let level = j
            .sizes
            .iter()
            .position(|s| s == root)
            .ok_or_else(|| not("not a size of the reduced group"))?;
        let mut bounds = Vec::with_capacity(defs.len());
        for d in &defs {
            if d.own.is_empty() {
                // No value of a defined size passes: no tuple does.
                return Ok(DimSet::empty());
            }
            match (d.own.min(), d.own.max()) {
                (Some(lo), Some(hi)) if DimSet::interval(lo, hi) == d.own => bounds.push((lo, hi)),
                _ => return Err(not("a defined size's own set is not one interval")),
            }
            if !nondecreasing(&d.expr) {
                return Err(not("a definition is not nondecreasing in every size"));
            }
        }
        let (boxes, complete) = j.tree.boxes(DEFINED_BOXES);
        if !complete {
            return Err(not("too many boxes"));
        }
        // Each definition's sizes, when they are all sizes of `j` (an outer definition may
        // read an inner defined size).
        let atoms: Vec<Option<Vec<usize>>> = defs
            .iter()
            .map(|d| d.expr.atoms().iter().map(|a| j.level(a)).collect())
            .collect();
        let walk = BoxWalk {
            defs: &defs,
            sizes: &j.sizes,
            atoms,
            bounds,
            level,
            root,
        };
        let mut out = DimSet::empty();
        for b in &boxes {
            if let Some(values) = walk.values(b)? {
                out = out.union(&values)?;
            }
        }
        Ok(out)
    }
}

/// [`Defined::some`] for a size `root` of the reduced group, box by box: the definitions
/// (`defs`, outermost first), the reduced group's sizes, each definition's sizes among them
/// (`atoms`, when they all are), each defined size's own set (one interval, `bounds`), and
/// `root`'s level.
struct BoxWalk<'a> {
    defs: &'a [&'a Defined],
    sizes: &'a [String],
    atoms: Vec<Option<Vec<usize>>>,
    bounds: Vec<(i128, i128)>,
    level: usize,
    root: &'a str,
}

impl BoxWalk<'_> {
    /// Not computed, and why.
    fn not(&self, why: &str) -> crate::Error {
        crate::Error::NotComputed(format!("{}'s values with some partner: {why}", self.root))
    }

    /// Each definition's value at the tuple `t` ([`chain_values`]).
    fn values_at(&self, t: &[i128]) -> Result<Vec<Option<i128>>, crate::Error> {
        chain_values(self.defs, self.sizes, t)
            .ok_or_else(|| self.not("a definition does not evaluate to an integer"))
    }

    /// Whether every definition at `v` and the others' `least` values is at most its `hi`.
    fn fits(&self, least: &[i128], v: i128) -> Result<bool, crate::Error> {
        let mut t = least.to_vec();
        t[self.level] = v;
        Ok(self
            .values_at(&t)?
            .iter()
            .zip(&self.bounds)
            .all(|(x, (_, hi))| x.is_some_and(|e| e <= *hi)))
    }

    /// `root`'s values in the box `b` that have a partner there: from the least value where
    /// every definition can reach its range, up to the largest with every definition at most
    /// its `hi` (both by bisection). `None` when none.
    fn values(&self, b: &[DimSet]) -> Result<Option<DimSet>, crate::Error> {
        let level = self.level;
        // A definition of one size is within its range exactly on an interval of that
        // size's values (it is nondecreasing): the box's side is cut to it first.
        let mut b = b.to_vec();
        for (d, (at, (lo, hi))) in self.defs.iter().zip(self.atoms.iter().zip(&self.bounds)) {
            if let Some([u]) = at.as_deref() {
                b[*u] = within(&d.expr, &self.sizes[*u], &b[*u], *lo, *hi)
                    .ok_or_else(|| self.not("a definition does not evaluate to an integer"))?;
            }
        }
        let least: Option<Vec<i128>> = b.iter().map(DimSet::min).collect();
        let (Some(least), Some(top)) = (least, b[level].max()) else {
            return Ok(None);
        };
        if least.iter().any(|&v| v < 0) {
            return Err(self.not("a size below 0"));
        }
        // The definitions below their range at the least corner: none (then every `v` whose
        // values there are at most their `hi` passes), or one of several sizes that moves
        // by steps of at most 1 in each other size over interval sides (then, from the
        // others' least to their greatest values, it takes every value between: `v` passes
        // when it is at most `hi` at the least and at least `lo` at the greatest).
        let below: Vec<usize> = self
            .values_at(&least)?
            .iter()
            .zip(&self.bounds)
            .enumerate()
            .filter(|(_, (x, (lo, _)))| x.is_some_and(|e| e < *lo))
            .map(|(i, _)| i)
            .collect();
        let from = match below[..] {
            [] => least[level],
            [i] => match self.reaching(&b, i, least[level], top)? {
                Some(from) => from,
                None => return Ok(None),
            },
            _ => return Err(self.not("several definitions are below their sizes' ranges")),
        };
        if !self.fits(&least, from)? {
            return Ok(None);
        }
        // The largest `v` in from..=top with every definition at most its `hi`.
        let (mut good, mut bad) = (from, top.saturating_add(1));
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if self.fits(&least, mid)? {
                good = mid;
            } else {
                bad = mid;
            }
        }
        Ok(Some(b[level].clip(from, good)))
    }

    /// For the one definition `i` below its range at the box's least corner: the least value
    /// of `root` in `first..=top` at which it reaches its `lo` with the others at their
    /// greatest values (by bisection), when it moves by steps of at most 1 in each other size
    /// over interval sides and every other definition is of one size. `None` when even `top`
    /// does not reach it.
    fn reaching(
        &self,
        b: &[DimSet],
        i: usize,
        first: i128,
        top: i128,
    ) -> Result<Option<i128>, crate::Error> {
        let level = self.level;
        let others = self.atoms[i].as_ref().filter(|at| {
            at.iter().filter(|&&u| u != level).all(|&u| {
                let side = &b[u];
                side.min().zip(side.max()).is_some_and(|(lo, hi)| {
                    DimSet::interval(lo, hi) == *side
                        && unit_steps(&self.defs[i].expr, &self.sizes[u])
                })
            })
        });
        // Every other definition is of one size: within its range all over the
        // box (cut above), whichever partners the walk takes.
        let alone = self
            .atoms
            .iter()
            .enumerate()
            .all(|(k, at)| k == i || matches!(at.as_deref(), Some([_])));
        if others.is_none() || !alone {
            return Err(self.not("a definition is below its size's range"));
        }
        let greatest: Option<Vec<i128>> = b.iter().map(DimSet::max).collect();
        let greatest = greatest.ok_or_else(|| self.not("an empty side"))?;
        let lo = self.bounds[i].0;
        // Whether the definition at `v` and the others' greatest values reaches `lo`.
        let reaches = |v: i128| -> Result<bool, crate::Error> {
            let mut t = greatest.clone();
            t[level] = v;
            // Past 128 bits: above every range.
            Ok(self.values_at(&t)?[i].is_none_or(|e| e >= lo))
        };
        if !reaches(top)? {
            return Ok(None);
        }
        let (mut bad, mut good) = (first - 1, top);
        while good - bad > 1 {
            let mid = bad + (good - bad) / 2;
            if reaches(mid)? {
                good = mid;
            } else {
                bad = mid;
            }
        }
        Ok(Some(good))
    }
}

/// The value of each definition of `defs` (outermost first, as [`Defined::chain`]) at the tuple
/// `t` of `sizes` (the innermost reduced group's), evaluated innermost first (an outer
/// definition may read an inner defined size): `Some(None)` for one past 128 bits (above any
/// range), `None` where one raises, is not an integer, or reads a size past 128 bits.
pub(super) fn chain_values(
    defs: &[&Defined],
    sizes: &[String],
    t: &[i128],
) -> Option<Vec<Option<i128>>> {
    let mut known: Vec<(&str, Option<i128>)> = sizes
        .iter()
        .map(String::as_str)
        .zip(t.iter().map(|&v| Some(v)))
        .collect();
    for d in defs.iter().rev() {
        if d.expr
            .atoms()
            .iter()
            .any(|a| known.iter().any(|(n, v)| *n == &**a && v.is_none()))
        {
            return None;
        }
        let env = |a: &str| known.iter().find(|(n, _)| *n == a).and_then(|(_, v)| *v);
        let v = match d.expr.eval(&env) {
            Ok(Value::Num(q)) if q.is_integer() => Some(*q.numer()),
            Err(crate::expr::EvalError::Arith(crate::num::ArithError::Overflow)) => None,
            _ => return None,
        };
        known.push((&d.dim, v));
    }
    let mut out: Vec<Option<i128>> = known[sizes.len()..].iter().map(|(_, v)| *v).collect();
    out.reverse();
    Some(out)
}

/// `{e(x) : x ∈ set}` for `e` over the one size `var`, built of sums with constants, integer
/// multiples and floor divisions by positive constants (a ceiling is one: `-((-x) // k)`), each
/// exact on periodic sets ([`DimSet::affine_image`], [`DimSet::floor_image`]); any other form is
/// not computed.
pub fn image(e: &Expr, var: &str, set: &DimSet) -> Result<DimSet, crate::Error> {
    let not = || crate::Error::NotComputed(format!("the values of {e} over a set of {var}"));
    let int = |c: &Expr| match c {
        Expr::Const(q) if q.is_integer() => Some(*q.numer()),
        _ => None,
    };
    match e {
        Expr::Sym(a) if **a == *var => Ok(set.clone()),
        Expr::Add(v) => {
            let (consts, terms): (Vec<&Expr>, Vec<&Expr>) =
                v.iter().partition(|t| int(t).is_some());
            let [t] = terms[..] else { return Err(not()) };
            let c = consts
                .iter()
                .try_fold(0i128, |acc, t| acc.checked_add(int(t)?))
                .ok_or_else(not)?;
            image(t, var, set)?.affine_image(1, c)
        }
        Expr::Mul(v) => {
            let (consts, terms): (Vec<&Expr>, Vec<&Expr>) =
                v.iter().partition(|t| int(t).is_some());
            let [t] = terms[..] else { return Err(not()) };
            let k = consts
                .iter()
                .try_fold(1i128, |acc, t| acc.checked_mul(int(t)?))
                .ok_or_else(not)?;
            image(t, var, set)?.affine_image(k, 0)
        }
        Expr::FloorDiv(a, d) => match int(d) {
            Some(k) if k >= 1 => image(a, var, set)?.floor_image(k),
            _ => Err(not()),
        },
        _ => Err(not()),
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
    /// form and the reduced set lists its boxes (at most `PRODUCT_BOXES`), each side of the
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

/// Whether `e` is nondecreasing in every size (over nonnegative sizes): sizes, constants, and
/// sums, `Max`, `Min` of such, `//` by a positive constant, and products of factors that are
/// nondecreasing and nonnegative ([`nonnegative_nondecreasing`]). A constant of either sign
/// added outside a product keeps the order (`1 + ((a//20 - 3)//2)`: a conv stack's frames).
pub(super) fn nondecreasing(e: &Expr) -> bool {
    match e {
        Expr::Sym(_) | Expr::Const(_) => true,
        Expr::Add(v) | Expr::Max(v) | Expr::Min(v) => v.iter().all(nondecreasing),
        Expr::Mul(v) => v.iter().all(nonnegative_nondecreasing),
        Expr::FloorDiv(a, b) => {
            nondecreasing(a) && matches!(b.as_ref(), Expr::Const(c) if c.is_positive())
        }
        _ => false,
    }
}

/// Whether `e` is nondecreasing in every size and nonnegative wherever every size is: sizes,
/// nonnegative constants, and sums, products, `Max`, `Min` of such, `//` by a positive constant.
fn nonnegative_nondecreasing(e: &Expr) -> bool {
    match e {
        Expr::Sym(_) => true,
        Expr::Const(c) => !c.is_negative(),
        Expr::Add(v) | Expr::Mul(v) | Expr::Max(v) | Expr::Min(v) => {
            v.iter().all(nonnegative_nondecreasing)
        }
        Expr::FloorDiv(a, b) => {
            nonnegative_nondecreasing(a) && matches!(b.as_ref(), Expr::Const(c) if c.is_positive())
        }
        _ => false,
    }
}

/// Whether the definition `e` takes two different values, or raises, at tuples of `domains`
/// (each size's own set): the least tuple, and each size moved to its second and its greatest
/// value. Then no value of the defined size passes with every partner.
pub(super) fn definition_varies(e: &Expr, domains: &[(String, DimSet)]) -> bool {
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

/// The values of `side` (of the size `var`) at which `e` (nondecreasing, over `var` alone) lies
/// in `lo..=hi`: one interval of them, by bisection; `None` where `e` does not evaluate.
pub(super) fn within(e: &Expr, var: &str, side: &DimSet, lo: i128, hi: i128) -> Option<DimSet> {
    let (Some(a), Some(z)) = (side.min(), side.max()) else {
        return Some(DimSet::empty());
    };
    // Past 128 bits: above every range.
    let at = |v: i128| -> Option<Option<i128>> {
        match e.eval(&|x: &str| (x == var).then_some(v)) {
            Ok(Value::Num(q)) if q.is_integer() => Some(Some(*q.numer())),
            Err(crate::expr::EvalError::Arith(crate::num::ArithError::Overflow)) => Some(None),
            _ => None,
        }
    };
    // The least value in a..=z+1 at which `e` is at least `x` (`z + 1` when none).
    let first = |x: i128| -> Option<i128> {
        let (mut l, mut h) = (a, z.checked_add(1)?);
        while l < h {
            let mid = l + (h - l) / 2;
            if at(mid)?.is_none_or(|y| y >= x) {
                h = mid;
            } else {
                l = mid + 1;
            }
        }
        Some(l)
    };
    let (from, to) = (first(lo)?, first(hi.checked_add(1)?)?);
    Some(if from < to {
        side.clip(from, to - 1)
    } else {
        DimSet::empty()
    })
}

/// Whether `e` changes by 0 or 1 when the size `var` grows by 1 (everything else fixed): `var`
/// itself, sums with at most one term in `var` (that one so), `//` by a positive constant, `Max`
/// and `Min` of such; a term free of `var` does not change.
fn unit_steps(e: &Expr, var: &str) -> bool {
    let free = |t: &Expr| !t.atoms().iter().any(|a| **a == *var);
    match e {
        _ if free(e) => true,
        Expr::Sym(_) => true,
        Expr::Add(v) => {
            let mine: Vec<&Expr> = v.iter().filter(|t| !free(t)).collect();
            matches!(mine[..], [t] if unit_steps(t, var))
        }
        Expr::Max(v) | Expr::Min(v) => v.iter().all(|t| unit_steps(t, var)),
        Expr::FloorDiv(a, d) => {
            unit_steps(a, var) && matches!(d.as_ref(), Expr::Const(c) if c.is_positive())
        }
        _ => false,
    }
}
