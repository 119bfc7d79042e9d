//! The readable Python printer (`Expr::torch_python`: ShapesSpec assumptions, `torch._check`
//! lines) keeps every expression's meaning: random expressions over two sizes, printed with the
//! fewest parentheses and read back, take the same value at every point of a small grid.

use dimguard_solver::q;
use dimguard_solver::{parse_expr, parse_guard, CmpOp, Expr};
use proptest::prelude::*;

fn int_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        (-9i128..10).prop_map(|c| Expr::Const(q(c))),
        Just(Expr::sym("h")),
        Just(Expr::sym("w")),
    ];
    leaf.prop_recursive(5, 48, 3, |inner| {
        let nonzero =
            (1i128..9, any::<bool>()).prop_map(|(c, neg)| Expr::Const(q(if neg { -c } else { c })));
        prop_oneof![
            1 => prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::Add),
            1 => prop::collection::vec(inner.clone(), 2..3).prop_map(Expr::Mul),
            3 => (inner.clone(), prop_oneof![nonzero.clone(), inner.clone()])
                .prop_map(|(a, b)| Expr::FloorDiv(Box::new(a), Box::new(b))),
            2 => (inner.clone(), prop_oneof![nonzero, inner.clone()])
                .prop_map(|(a, b)| Expr::Mod(Box::new(a), Box::new(b))),
            1 => prop::collection::vec(inner.clone(), 2..4).prop_map(Expr::Min),
            1 => prop::collection::vec(inner.clone(), 2..3).prop_map(Expr::Max),
            1 => inner.prop_map(|a| Expr::Mul(vec![Expr::Const(q(-1)), a])),
        ]
    })
}

fn bool_expr() -> impl Strategy<Value = Expr> {
    let op = prop_oneof![
        Just(CmpOp::Eq),
        Just(CmpOp::Ne),
        Just(CmpOp::Lt),
        Just(CmpOp::Le),
        Just(CmpOp::Gt),
        Just(CmpOp::Ge),
    ];
    let cmp =
        (op, int_expr(), int_expr()).prop_map(|(o, a, b)| Expr::Cmp(o, Box::new(a), Box::new(b)));
    cmp.prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..3).prop_map(Expr::And),
            prop::collection::vec(inner.clone(), 2..3).prop_map(Expr::Or),
            inner.prop_map(|a| Expr::Not(Box::new(a))),
        ]
    })
}

fn same_everywhere(e: &Expr, back: &Expr, text: &str) -> Result<(), TestCaseError> {
    for h in -3i128..12 {
        for w in [-2i128, 1, 5, 17] {
            let env = |a: &str| match a {
                "h" => Some(h),
                "w" => Some(w),
                _ => None,
            };
            let (x, y) = (e.eval(&env).ok(), back.eval(&env).ok());
            prop_assert_eq!(x, y, "{} at h={}, w={}", text, h, w);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn integer_expressions_read_back_the_same(e in int_expr()) {
        let text = e.torch_python();
        let back = parse_expr(&text).map_err(|err| TestCaseError::fail(format!("{text}: {err}")))?;
        same_everywhere(&e, &back, &text)?;
    }

    #[test]
    fn conditions_read_back_the_same(e in bool_expr()) {
        let text = e.torch_python();
        let back = parse_guard(&text).map_err(|err| TestCaseError::fail(format!("{text}: {err}")))?;
        same_everywhere(&e, &back, &text)?;
    }
}
