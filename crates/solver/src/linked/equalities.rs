//! Equalities with a constant that the guards state themselves (`Pw // (Pw // 7) == 7`, which
//! torch records once per size and then uses to simplify the guards it records after): every other
//! guard is read with that expression replaced by the constant before it is solved.

use crate::types::{CmpOp, Expr};
use std::collections::HashMap;

/// The guards of `guards` with every sub-expression `E` that some guard equates to a constant
/// (`E == c`, `c == E`) replaced by that constant, in the guards that are not such equalities
/// themselves (those are kept as they are, so each equality still applies). Exact for the
/// conjunction of `guards`: a tuple that passes `E == c` gives `E` the value `c` in every guard,
/// and a tuple that fails it (or where `E` raises) fails the conjunction either way.
///
/// ```
/// use dimguard_solver::linked::substitute_equalities;
/// use dimguard_solver::parse_guard;
///
/// let g = |s: &str| parse_guard(s).unwrap();
/// let out = substitute_equalities(&[g("(w // (w // 7)) == 7"), g("h * (w // (w // 7)) > 49")]);
/// assert_eq!(out[0], g("(w // (w // 7)) == 7"));
/// assert_eq!(out[1], g("h * 7 > 49"));
/// ```
pub fn substitute_equalities(guards: &[Expr]) -> Vec<Expr> {
    let mut rules: HashMap<Expr, Expr> = HashMap::new();
    for (from, to) in guards.iter().filter_map(rule) {
        // Two constants for one expression: no tuple passes both, and either one is exact.
        rules.entry(from.clone()).or_insert_with(|| to.clone());
    }
    if rules.is_empty() {
        return guards.to_vec();
    }
    guards
        .iter()
        .map(|g| {
            if rule(g).is_some() {
                return g.clone();
            }
            replace_all(g, &rules)
        })
        .collect()
}

/// `(E, c)` for a guard `E == c` or `c == E` with `c` a constant and `E` not.
fn rule(g: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Cmp(CmpOp::Eq, a, b) = g else {
        return None;
    };
    let konst = |e: &Expr| matches!(e, Expr::Const(_));
    match (konst(a), konst(b)) {
        (false, true) if !a.atoms().is_empty() => Some((a, b)),
        (true, false) if !b.atoms().is_empty() => Some((b, a)),
        _ => None,
    }
}

/// `e` with every occurrence of the sub-expression `from` replaced by `to`.
pub(super) fn replace(e: &Expr, from: &Expr, to: &Expr) -> Expr {
    if e == from {
        return to.clone();
    }
    e.map_children(&|x| replace(x, from, to))
}

/// `e` with every occurrence of a key of `rules` replaced by its value, outermost first, in one
/// pass (a replacement is not read again).
pub(super) fn replace_all(e: &Expr, rules: &HashMap<Expr, Expr>) -> Expr {
    if let Some(to) = rules.get(e) {
        return to.clone();
    }
    e.map_children(&|x| replace_all(x, rules))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse_guard;
    use proptest::prelude::*;

    fn holds_all(gs: &[Expr], x: i128, y: i128) -> bool {
        let env = |a: &str| match a {
            "x" => Some(x),
            "y" => Some(y),
            _ => None,
        };
        gs.iter().all(|g| matches!(g.truth(&env), Ok(true)))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// The rewritten guards accept exactly the tuples the original ones do (brute force over
        /// a small box), for equalities that hold somewhere, nowhere, or raise.
        #[test]
        fn substitution_keeps_the_accepted_tuples(
            k in 1i128..9, c in 0i128..10, m in 2i128..7, d in -2i128..3, flip in any::<bool>(),
        ) {
            let e = format!("(x // (x // {k} + {d}))");
            let fact = if flip { format!("{c} == {e}") } else { format!("{e} == {c}") };
            let gs: Vec<Expr> = [
                fact,
                format!("({e} * y) % {m} == 0"),
                format!("y + {e} > {c} or x < 5"),
                format!("{e} == {c}"),
            ]
            .iter()
            .map(|s| parse_guard(s).unwrap())
            .collect();
            let out = substitute_equalities(&gs);
            for x in -20..40 {
                for y in -5..15 {
                    prop_assert_eq!(holds_all(&gs, x, y), holds_all(&out, x, y), "at ({}, {})", x, y);
                }
            }
        }
    }

    #[test]
    fn an_equality_is_kept_and_used_elsewhere() {
        let g = |s: &str| parse_guard(s).unwrap();
        let out = substitute_equalities(&[g("7 == (x // (x // 7))"), g("(x // (x // 7)) < y")]);
        assert_eq!(out[0], g("7 == (x // (x // 7))"));
        assert_eq!(out[1], g("7 < y"));
    }
}
