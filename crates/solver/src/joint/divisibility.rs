//! Sizes linked by divisibility of a product (`Eq(Mod(s21*s5*s89, 2560), 0)`: a flattened
//! tensor split into blocks), solved exactly without enumeration ([`joint`]).
//!
//! For `m = prod p^e`, `m | c * x1^k1 * ... * xn^kn` exactly when `M = m / gcd(c, m)` divides
//! `prod gcd(xi, M)^ki`: a prime's exponent in `gcd(xi, M)` is its exponent in `xi` capped at
//! `e`, and a capped exponent reaches `e` only when the uncapped one does. So each size's values
//! split into the classes `C_g = {x : gcd(x, K) = g}` (`g | K`), each a periodic set (the
//! multiples of `g` without the multiples of `g*p` for each prime `p` of `K/g`), and the joint
//! set is a tree over the sizes in order: a value of class `g` at a level leaves `K / gcd(K,
//! g^k)` for the next levels to divide, starting from `K = M`; at the last level the classes
//! that leave 1 pass. Classes with the same continuation share one node. Equalities over the
//! same product are one, modulo the least common multiple; other such guards (`!=` as the
//! complement) are intersected. Each size's own set (its one-size guards solved)
//! is its domain.

use crate::linked::{JointSet, Tree};
use crate::types::{CmpOp, DimSet, Expr};
use num_integer::{gcd, lcm};
use std::collections::HashMap;

/// Largest modulus read (its divisors are listed: [`crate::factor`]).
const MODULUS_MAX: i128 = 1 << 40;

/// Most value groups a tree may hold before the method gives up (the search then answers).
const GROUPS_MAX: usize = 20_000;

/// A guard `c * prod x^k % m == 0` (or `!= 0`) over roots: the modulus left after the constant
/// (`m / gcd(c, m)`), each root's exponent, and whether it is an equality.
#[derive(Debug, Clone, PartialEq)]
struct Divides {
    modulus: i128,
    powers: Vec<(String, u32)>,
    eq: bool,
}

/// `g` read as [`Divides`] when every size it names is one of `roots`.
fn read(g: &Expr, roots: &[String]) -> Option<Divides> {
    let Expr::Cmp(op @ (CmpOp::Eq | CmpOp::Ne), a, b) = g else {
        return None;
    };
    let zero = |e: &Expr| matches!(e, Expr::Const(q) if *q == crate::num::q(0));
    let m = match (&**a, &**b) {
        (m @ Expr::Mod(..), z) | (z, m @ Expr::Mod(..)) if zero(z) => m,
        _ => return None,
    };
    let Expr::Mod(p, m) = m else {
        return None;
    };
    let integer = |e: &Expr| match e {
        Expr::Const(q) if q.is_integer() => Some(q.to_integer()),
        _ => None,
    };
    let m = integer(m)?.checked_abs()?;
    if m == 0 || m > MODULUS_MAX {
        return None;
    }
    let mut factors: Vec<&Expr> = Vec::new();
    let mut todo: Vec<&Expr> = vec![&**p];
    while let Some(e) = todo.pop() {
        match e {
            Expr::Mul(v) => todo.extend(v),
            other => factors.push(other),
        }
    }
    let mut c: i128 = 1;
    let mut powers: Vec<(String, u32)> = Vec::new();
    for f in factors {
        let (base, k) = match f {
            Expr::Pow(b, e) => (&**b, u32::try_from(integer(e)?).ok().filter(|k| *k >= 1)?),
            other => (other, 1),
        };
        match base {
            Expr::Const(_) if k == 1 => c = (c % m) * (integer(base)?.rem_euclid(m)) % m,
            Expr::Sym(a) if roots.iter().any(|r| **r == **a) => {
                match powers.iter_mut().find(|(r, _)| **r == **a) {
                    Some(slot) => slot.1 = slot.1.checked_add(k)?,
                    None => powers.push((a.to_string(), k)),
                }
            }
            _ => return None,
        }
    }
    if powers.is_empty() {
        return None;
    }
    Some(Divides {
        modulus: m / gcd(c, m),
        powers,
        eq: *op == CmpOp::Eq,
    })
}

/// The prime factors of `n` (>= 1), each once.
fn primes(n: i128) -> Vec<i128> {
    let mut ps: Vec<i128> = crate::factor::factor(n as u64)
        .into_iter()
        .map(i128::from)
        .collect();
    ps.dedup();
    ps
}

/// The divisors of `n` (>= 1), increasing.
fn divisors(n: i128) -> Vec<i128> {
    crate::factor::divisors(n as u64)
        .into_iter()
        .map(i128::from)
        .collect()
}

/// The joint set of `roots` over their own sets `domains` (level order: `roots`') when every
/// guard of `guards` is a divisibility of a product ([`read`]); `None` otherwise, or when a
/// step has no closed form or the tree would pass [`GROUPS_MAX`] groups.
pub(super) fn joint(roots: &[String], domains: &[DimSet], guards: &[Expr]) -> Option<JointSet> {
    if guards.is_empty() || roots.len() < 2 || domains.iter().any(DimSet::is_empty) {
        return None;
    }
    let mut all: Vec<Divides> = Vec::new();
    for g in guards {
        let mut d = read(g, roots)?;
        d.powers.sort();
        // Equalities over the same product: one, modulo the least common multiple.
        match all
            .iter_mut()
            .find(|o| o.eq && d.eq && o.powers == d.powers)
        {
            Some(o) => {
                // Both at most MODULUS_MAX (2^40): the lcm fits in i128.
                o.modulus = lcm(o.modulus, d.modulus);
                if o.modulus > MODULUS_MAX {
                    return None;
                }
            }
            None => all.push(d),
        }
    }
    let mut tree: Option<Tree> = None;
    for d in &all {
        let k: Vec<u32> = roots
            .iter()
            .map(|r| d.powers.iter().find(|(x, _)| x == r).map_or(0, |p| p.1))
            .collect();
        let mut b = Builder {
            domains,
            powers: &k,
            memo: HashMap::new(),
            groups: 0,
        };
        let mut t = b.build(0, d.modulus)?;
        if !d.eq {
            t = t.complement(domains).ok()?;
        }
        tree = Some(match tree {
            None => t,
            Some(acc) => acc.intersect(&t).ok()?,
        });
    }
    Some(JointSet {
        sizes: roots.to_vec(),
        domains: domains.to_vec(),
        tree: tree?,
        undecided: None,
        stats: Default::default(),
    })
}

/// The tree of one guard, built level by level (memoized per level and modulus left).
struct Builder<'a> {
    domains: &'a [DimSet],
    powers: &'a [u32],
    memo: HashMap<(usize, i128), Tree>,
    groups: usize,
}

impl Builder<'_> {
    /// The tuples of levels `level..` whose product (each value to its level's power) is a
    /// multiple of `k`.
    fn build(&mut self, level: usize, k: i128) -> Option<Tree> {
        if let Some(t) = self.memo.get(&(level, k)) {
            return Some(t.clone());
        }
        let last = level + 1 == self.domains.len();
        let d = &self.domains[level];
        let power = self.powers[level];
        let mut groups: Vec<(DimSet, Tree)> = Vec::new();
        let mut leaf = DimSet::empty();
        let classes = if power == 0 || k == 1 {
            // Every value leaves `k` as it is.
            vec![(d.clone(), k)]
        } else {
            let ps = primes(k);
            let mut out = Vec::new();
            for g in divisors(k) {
                let set = class(d, k, g, &ps)?;
                if set.is_empty() {
                    continue;
                }
                // `k / gcd(k, g^power)`.
                let mut gp: i128 = 1;
                for _ in 0..power {
                    let next = gcd(k, gp * g);
                    if next == gp {
                        break;
                    }
                    gp = next;
                }
                out.push((set, k / gp));
            }
            out
        };
        for (set, left) in classes {
            crate::budget::check().ok()?;
            if last {
                if left == 1 {
                    leaf = leaf.union(&set).ok()?;
                }
                continue;
            }
            let child = self.build(level + 1, left)?;
            if child.is_empty() {
                continue;
            }
            match groups.iter_mut().find(|(_, c)| *c == child) {
                Some(slot) => slot.0 = slot.0.union(&set).ok()?,
                None => {
                    self.groups += 1;
                    if self.groups > GROUPS_MAX {
                        return None;
                    }
                    groups.push((set, child));
                }
            }
        }
        let t = if last {
            Tree::Leaf(leaf)
        } else {
            Tree::Node(groups)
        };
        self.memo.insert((level, k), t.clone());
        Some(t)
    }
}

/// The values of `d` whose gcd with `k` is `g` (`g | k`; `primes` those of `k`): multiples of
/// `g` that are no multiple of `g*p` for a prime `p` of `k/g`.
fn class(d: &DimSet, k: i128, g: i128, primes: &[i128]) -> Option<DimSet> {
    let (lo, hi) = (d.min()?, d.max()?);
    let mut s = d.intersect(&DimSet::progression(lo, hi, g, 0)).ok()?;
    for &p in primes {
        if (k / g) % p == 0 && !s.is_empty() {
            s = s.difference(&DimSet::progression(lo, hi, g * p, 0)).ok()?;
        }
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;

    #[test]
    fn reads_the_forms() {
        let roots: Vec<String> = ["x", "y"].iter().map(|s| s.to_string()).collect();
        let mut d = read(&parse_guard("Eq(Mod(6*x*y**2, 2560), 0)").unwrap(), &roots).unwrap();
        assert_eq!(d.modulus, 1280);
        d.powers.sort();
        assert_eq!(d.powers, vec![("x".into(), 1), ("y".into(), 2)]);
        assert!(read(&parse_guard("Eq(Mod(x*y + 1, 2560), 0)").unwrap(), &roots).is_none());
        let ne = read(&parse_guard("(x*y) % 12 != 0").unwrap(), &roots).unwrap();
        assert!(!ne.eq);
    }
}
