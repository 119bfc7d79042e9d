//! [`Expr`]'s algebra: building sums, products and floor divisions (constants folded),
//! substituting a size, and reading an expression as an affine form.
//!
//! Every operation here is checked against [`Expr::eval`] by property tests: the built or
//! rewritten expression has the value the operation says it has, at every point.
//!
//! ```
//! use dimguard_solver::{q, Expr};
//!
//! let h = Expr::sym("s0");
//! // (s0 + (-1)) // 4 + 1: the output size of a stride-4 window.
//! let out = (h.clone() + Expr::int(-1)).floordiv(4) + Expr::int(1);
//! assert_eq!(out.to_string(), "(((s0 + (-1)) // 4) + 1)");
//! // Constants fold; multiplying by 1 or adding 0 changes nothing.
//! assert_eq!(Expr::int(2) * Expr::int(3), Expr::int(6));
//! assert_eq!(h.clone() * Expr::int(1), h);
//! // 8*s0 + 3 as an affine form, and after substituting s0 = 2*s1.
//! let e = Expr::int(8) * h.clone() + Expr::int(3);
//! let (coefs, c) = e.affine().unwrap();
//! assert_eq!((coefs["s0"], c), (q(8), q(3)));
//! let f = e.substitute("s0", &(Expr::int(2) * Expr::sym("s1")));
//! assert_eq!(f.affine().unwrap().0["s1"], q(16));
//! ```

use crate::num::{self, Q};
use crate::types::Expr;
use num_traits::{One, Zero};
use std::collections::BTreeMap;

/// An affine form `sum(coef * size) + constant`: sizes by name (zero coefficients dropped).
pub type Affine = (BTreeMap<String, Q>, Q);

impl std::ops::Add for Expr {
    type Output = Expr;

    /// `self + other`, with two constants folded (unless the sum overflows) and a zero dropped.
    fn add(self, other: Expr) -> Expr {
        fold(self, other, num::add, Q::zero(), Expr::Add)
    }
}

impl std::ops::Mul for Expr {
    type Output = Expr;

    /// `self * other`, with two constants folded (unless the product overflows) and a one
    /// dropped.
    fn mul(self, other: Expr) -> Expr {
        fold(self, other, num::mul, Q::one(), Expr::Mul)
    }
}

/// `a op b` for a commutative `op` with `identity`: constants folded, the identity dropped.
fn fold(
    a: Expr,
    b: Expr,
    op: fn(&Q, &Q) -> num::ArithResult<Q>,
    identity: Q,
    node: fn(Vec<Expr>) -> Expr,
) -> Expr {
    match (&a, &b) {
        (Expr::Const(x), Expr::Const(y)) => op(x, y)
            .map(Expr::Const)
            .unwrap_or_else(|_| node(vec![a, b])),
        (_, Expr::Const(y)) if *y == identity => a,
        (Expr::Const(x), _) if *x == identity => b,
        _ => node(vec![a, b]),
    }
}

impl Expr {
    /// `self // d` (Python's floor division), folded for an integer constant; `// 1` is dropped.
    /// A zero divisor stays symbolic, so evaluating the result reports the division by zero
    /// instead of a made-up value.
    pub fn floordiv(self, d: i128) -> Expr {
        let folded = match &self {
            Expr::Const(x) if x.is_integer() => num::int_floordiv(*x.numer(), d).ok(),
            _ => None,
        };
        match folded {
            Some(v) => Expr::int(v),
            _ if d == 1 => self,
            None => Expr::FloorDiv(Box::new(self), Box::new(Expr::int(d))),
        }
    }

    /// Replaces every occurrence of the size `name` by `with`.
    pub fn substitute(&self, name: &str, with: &Expr) -> Expr {
        match self {
            Expr::Sym(a) if &**a == name => with.clone(),
            _ => self.map_children(&|x| x.substitute(name, with)),
        }
    }

    /// Every size renamed by `name` at once (`L['x'].size()[2]` -> `x_2`): the expression in
    /// the names a report prints.
    pub fn renamed(&self, name: &dyn Fn(&str) -> String) -> Expr {
        match self {
            Expr::Sym(a) => Expr::sym(&name(a)),
            _ => self.map_children(&|x| x.renamed(name)),
        }
    }

    /// The same node with `f` applied to each direct child (a leaf is returned as it is): the
    /// one tree walk that rewrites build on ([`Expr::substitute`], replacing a sub-expression).
    pub fn map_children(&self, f: &dyn Fn(&Expr) -> Expr) -> Expr {
        let bx = |x: &Expr| Box::new(f(x));
        let all = |v: &[Expr]| v.iter().map(f).collect();
        match self {
            Expr::Const(_) | Expr::Inf(_) | Expr::Bool(_) | Expr::Sym(_) => self.clone(),
            Expr::Add(v) => Expr::Add(all(v)),
            Expr::Mul(v) => Expr::Mul(all(v)),
            Expr::Min(v) => Expr::Min(all(v)),
            Expr::Max(v) => Expr::Max(all(v)),
            Expr::And(v) => Expr::And(all(v)),
            Expr::Or(v) => Expr::Or(all(v)),
            Expr::Pow(a, b) => Expr::Pow(bx(a), bx(b)),
            Expr::TrueDiv(a, b) => Expr::TrueDiv(bx(a), bx(b)),
            Expr::FloorDiv(a, b) => Expr::FloorDiv(bx(a), bx(b)),
            Expr::Mod(a, b) => Expr::Mod(bx(a), bx(b)),
            Expr::Cmp(op, a, b) => Expr::Cmp(*op, bx(a), bx(b)),
            Expr::Round(k, a) => Expr::Round(*k, bx(a)),
            Expr::Abs(a) => Expr::Abs(bx(a)),
            Expr::Not(a) => Expr::Not(bx(a)),
            Expr::Ite(c, a, b) => Expr::Ite(bx(c), bx(a), bx(b)),
        }
    }

    /// The expression as `sum(coef * size) + constant`, when it is affine structurally (sums
    /// and products of constants and sizes, at most one non-constant factor per product);
    /// `None` otherwise or on overflow.
    pub fn affine(&self) -> Option<Affine> {
        match self {
            Expr::Const(c) => Some((BTreeMap::new(), *c)),
            Expr::Sym(a) => Some((BTreeMap::from([(a.to_string(), Q::one())]), Q::zero())),
            Expr::Add(v) => {
                let mut coefs: BTreeMap<String, Q> = BTreeMap::new();
                let mut c = Q::zero();
                for t in v {
                    let (m, k) = t.affine()?;
                    c = num::add(&c, &k).ok()?;
                    for (a, q) in m {
                        let e = coefs.entry(a).or_insert_with(Q::zero);
                        *e = num::add(e, &q).ok()?;
                    }
                }
                coefs.retain(|_, q| !q.is_zero());
                Some((coefs, c))
            }
            Expr::Mul(v) => {
                let mut acc: Affine = (BTreeMap::new(), Q::one());
                for t in v {
                    let (m, k) = t.affine()?;
                    match (acc.0.is_empty(), m.is_empty()) {
                        (true, true) => acc.1 = num::mul(&acc.1, &k).ok()?,
                        (true, false) => {
                            let s = acc.1;
                            acc = (scale(m, &s)?, num::mul(&k, &s).ok()?);
                        }
                        (false, true) => {
                            acc.0 = scale(acc.0, &k)?;
                            acc.1 = num::mul(&acc.1, &k).ok()?;
                        }
                        (false, false) => return None,
                    }
                }
                acc.0.retain(|_, q| !q.is_zero());
                Some(acc)
            }
            _ => None,
        }
    }
}

fn scale(m: BTreeMap<String, Q>, s: &Q) -> Option<BTreeMap<String, Q>> {
    m.into_iter()
        .map(|(a, q)| Some((a, num::mul(&q, s).ok()?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::expr::Value;
    use crate::num::{self, q, Q};
    use crate::types::{CmpOp, Expr};
    use proptest::prelude::*;

    const SIZES: [&str; 2] = ["s0", "s1"];

    /// Small integer expressions over two sizes, with the operators shape functions build.
    fn arb_expr() -> impl Strategy<Value = Expr> {
        let leaf = prop_oneof![
            (-6i128..7).prop_map(Expr::int),
            (0usize..2).prop_map(|i| Expr::sym(SIZES[i])),
        ];
        leaf.prop_recursive(3, 16, 2, |inner| {
            prop_oneof![
                (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Add(vec![a, b])),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Mul(vec![a, b])),
                (inner.clone(), -4i128..5)
                    .prop_map(|(a, d)| Expr::FloorDiv(Box::new(a), Box::new(Expr::int(d)))),
                (inner.clone(), inner.clone()).prop_map(|(a, b)| Expr::Max(vec![a, b])),
                (inner.clone(), inner).prop_map(|(a, b)| Expr::Ite(
                    Box::new(Expr::Cmp(
                        CmpOp::Lt,
                        Box::new(a.clone()),
                        Box::new(b.clone())
                    )),
                    Box::new(a),
                    Box::new(b)
                )),
            ]
        })
    }

    fn at(e: &Expr, x: i128, y: i128) -> Option<Q> {
        let env = |n: &str| match n {
            "s0" => Some(x),
            "s1" => Some(y),
            _ => None,
        };
        match e.eval(&env) {
            Ok(Value::Num(v)) => Some(v),
            _ => None,
        }
    }

    proptest! {
        #[test]
        fn add_and_mul_match_eval(a in arb_expr(), b in arb_expr(), x in -20i128..20, y in -20i128..20) {
            let (va, vb) = (at(&a, x, y), at(&b, x, y));
            let sum = at(&(a.clone() + b.clone()), x, y);
            let prod = at(&(a * b), x, y);
            if let (Some(va), Some(vb)) = (va, vb) {
                prop_assert_eq!(sum, num::add(&va, &vb).ok());
                prop_assert_eq!(prod, num::mul(&va, &vb).ok());
            }
        }

        #[test]
        fn floordiv_matches_eval(a in arb_expr(), d in -5i128..6, x in -20i128..20, y in -20i128..20) {
            let got = at(&a.clone().floordiv(d), x, y);
            let want = at(&a, x, y).and_then(|v| num::floordiv(&v, &q(d)).ok());
            prop_assert_eq!(got, want);
        }

        #[test]
        fn substitute_matches_eval(a in arb_expr(), w in arb_expr(), x in -20i128..20, y in -20i128..20) {
            // s0 := w(s0, s1), evaluated at (x, y), is a evaluated at (w(x, y), y).
            let got = at(&a.substitute("s0", &w), x, y);
            if let Some(wv) = at(&w, x, y).filter(|v| v.is_integer()) {
                prop_assert_eq!(got, at(&a, *wv.numer(), y));
            }
        }

        #[test]
        fn affine_matches_eval(a in arb_expr(), x in -20i128..20, y in -20i128..20) {
            if let Some((coefs, c)) = a.affine() {
                prop_assert!(coefs.values().all(|k| *k != q(0)));
                let mut v = c;
                for (s, k) in &coefs {
                    let val = if s == "s0" { x } else { y };
                    v += k * q(val);
                }
                prop_assert_eq!(Some(v), at(&a, x, y));
            }
        }
    }

    #[test]
    fn affine_covers_sums_and_scaled_sizes() {
        let e = Expr::Add(vec![
            Expr::Mul(vec![Expr::int(4), Expr::sym("s0")]),
            Expr::Mul(vec![Expr::int(-4), Expr::sym("s0")]),
            Expr::sym("s1"),
            Expr::int(3),
        ]);
        let (coefs, c) = e.affine().unwrap();
        assert_eq!(coefs.len(), 1);
        assert_eq!((coefs["s1"], c), (q(1), q(3)));
        assert!(Expr::Mul(vec![Expr::sym("s0"), Expr::sym("s1")])
            .affine()
            .is_none());
    }
}
