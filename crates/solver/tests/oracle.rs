//! The oracle test: for random guard trees over the operators PyTorch prints and random ranges
//! (including ranges at the int64 limits), the engine's exact set equals brute-force evaluation,
//! the printed guard parses back to the same function, and the first suggestion is sound and
//! maximal.

use dimguard_solver::engine::{solve, Limits, Method, Outcome};
use dimguard_solver::expr::EvalError;
use dimguard_solver::rank;
use dimguard_solver::report::NotPeriodic;
use dimguard_solver::ArithError;
use dimguard_solver::{float_literal, parse_guard, Q};
use dimguard_solver::{CmpOp, DimSet, Expr, RoundKind};
use proptest::prelude::*;

const X: &str = "L['x'].size()[2]";

fn b(e: Expr) -> Box<Expr> {
    Box::new(e)
}

fn konst() -> impl Strategy<Value = i128> {
    prop_oneof![8 => -9i128..10, 1 => Just(i64::MAX as i128), 1 => -64i128..65]
}

fn divisor() -> impl Strategy<Value = i128> {
    prop_oneof![6 => 1i128..9, 1 => -5i128..0, 1 => Just(64), 1 => Just(12)]
}

/// Integer-valued quasi-affine expressions in X.
fn int_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![3 => Just(Expr::sym(X)), 1 => konst().prop_map(Expr::int)];
    leaf.prop_recursive(5, 40, 3, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, c)| Expr::Add(vec![a, c])),
            (inner.clone(), konst()).prop_map(|(a, k)| Expr::Mul(vec![Expr::int(k), a])),
            (inner.clone(), divisor()).prop_map(|(a, d)| Expr::FloorDiv(b(a), b(Expr::int(d)))),
            (inner.clone(), divisor()).prop_map(|(a, d)| Expr::Mod(b(a), b(Expr::int(d)))),
            (inner.clone(), divisor(), 0usize..4).prop_map(|(a, d, k)| {
                let kind = [
                    RoundKind::Floor,
                    RoundKind::Ceil,
                    RoundKind::Trunc,
                    RoundKind::HalfEven,
                ][k];
                Expr::Round(kind, b(Expr::TrueDiv(b(a), b(Expr::int(d)))))
            }),
            (inner.clone(), inner.clone()).prop_map(|(a, c)| Expr::Min(vec![a, c])),
            (inner.clone(), inner.clone()).prop_map(|(a, c)| Expr::Max(vec![a, c])),
            inner.clone().prop_map(|a| Expr::Abs(b(a))),
            (inner.clone(), inner.clone(), inner.clone(), 0usize..6).prop_map(|(c, x, y, op)| {
                Expr::Ite(b(Expr::Cmp(cmp(op), b(c), b(Expr::int(0)))), b(x), b(y))
            }),
        ]
    })
}

fn cmp(i: usize) -> CmpOp {
    [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ][i]
}

fn guard() -> impl Strategy<Value = Expr> {
    let atom =
        (int_expr(), int_expr(), 0usize..6).prop_map(|(a, c, op)| Expr::Cmp(cmp(op), b(a), b(c)));
    atom.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::And),
            prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::Or),
            inner.prop_map(|a| Expr::Not(b(a))),
        ]
    })
}

fn range() -> impl Strategy<Value = (i128, i128)> {
    let big = i64::MAX as i128;
    prop_oneof![
        6 => (-200i128..400, 0i128..300).prop_map(|(lo, w)| (lo, lo + w)),
        1 => (0i128..200).prop_map(move |w| (big - w, big)),
        1 => (0i128..200).prop_map(move |w| (-big - 1, -big - 1 + w)),
        1 => (0i128..100, 0i128..200).prop_map(|(o, w)| ((1 << 62) - o, (1 << 62) - o + w)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn engine_equals_brute_force(g in guard(), (lo, hi) in range()) {
        // The periodic method is what is under test: no switch to enumeration on cost.
        let limits = Limits { cost_based: false, ..Limits::default() };
        let out = solve(&g, X, &DimSet::interval(lo, hi), &limits);
        match out {
            Outcome::Solved { set, method } => {
                // Every generated guard is quasi-affine: the periodic method must decide it,
                // except where exact arithmetic overflows or the period exceeds the limit.
                if let Method::Enumeration { because, .. } = &method {
                    prop_assert!(
                        matches!(because, NotPeriodic::Arith(ArithError::Overflow) | NotPeriodic::PeriodLimit(_)),
                        "fell back: {}", because
                    );
                }
                for x in lo..=hi {
                    match g.truth_at(X, x) {
                        Ok(want) => prop_assert_eq!(set.contains(x), want, "guard {} at {}", g, x),
                        // Python's integers are unbounded; the value-by-value oracle stops at
                        // 128 bits, where the closed form does not need to.
                        Err(EvalError::Arith(ArithError::Overflow)) => {}
                        Err(e) => prop_assert!(!set.contains(x), "guard {} raises {} at {} but is admitted", g, e, x),
                    }
                }
                prop_assert!(set.min().is_none_or(|m| m >= lo) && set.max().is_none_or(|m| m <= hi));
                // The first suggestion is inside the set (sound) and as large as any progression.
                if !set.is_empty() {
                    let r = rank(&set, None, 4);
                    let best = r.progressions[0];
                    for x in best.to_set().iter() {
                        let t = g.truth_at(X, x);
                        let ok = matches!(t, Ok(true) | Err(EvalError::Arith(ArithError::Overflow)));
                        prop_assert!(ok, "suggestion {:?} admits failing {}", best, x);
                    }
                }
            }
            // Overflow near the int64 limits is reported, never wrapped.
            Outcome::Undecided { reason } => prop_assert!(reason.is_overflow(), "{}", reason),
        }
    }

    #[test]
    fn printed_guards_parse_back_to_the_same_function(g in guard()) {
        let text = g.to_string();
        let back = parse_guard(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        for x in -40i128..80 {
            prop_assert_eq!(back.truth_at(X, x), g.truth_at(X, x), "{} at {}", text, x);
        }
    }
}

#[test]
fn float_literals_follow_python_doubles() {
    // 0.1 is not 1/10 in Python: 0.1 * 30 == 3.0000000000000004 > 3.
    let g = parse_guard("0.1 * torch.sym_float(L['x'].size()[2]) > 3").unwrap();
    assert!(!g.holds_at(X, 29));
    assert!(g.holds_at(X, 30));
    assert!(float_literal("0.1").unwrap() > Q::new(1, 10));
}
