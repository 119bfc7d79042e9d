//! A size's own set in the joint solver (`joint::solve_group`: the guards over one size, which
//! `check` solves for a size nothing links) when the command's time budget runs out part way,
//! cut at every point of the work (`budget::enter_cut`: the deadline is reached at the n-th
//! consultation, the same on every run and machine). For random guards over one size the
//! oracle is brute-force evaluation of every guard at every value of the range; at every cut:
//!
//! * the guards are decided in order up to the cut, each as the uncut run decides it, and every
//!   guard after the first undecided one is undecided with the budget as its reason (the own
//!   set stops at the deadline, it never decides on past it);
//! * the group's reason is the budget's whenever a guard is undecided;
//! * nothing accepted fails a guard, and every value that passes every guard is accepted or
//!   undecided, never rejected.

use dimguard_solver::budget::{self, Exhausted};
use dimguard_solver::joint::{group, solve_group, Fate, Solved};
use dimguard_solver::report::{NotPeriodic, Undecided};
use dimguard_solver::{parse_guard, DimSet, Expr, Limits, Value};
use proptest::prelude::*;
use std::collections::BTreeMap;

const X: &str = "x";

/// One guard over `x`, as torch prints them.
fn guard() -> impl Strategy<Value = String> {
    prop_oneof![
        (2i128..17, 0i128..17).prop_map(|(m, r)| format!("Eq(Mod(x, {m}), {})", r % m)),
        (2i128..17, 0i128..17).prop_map(|(m, r)| format!("Ne(Mod(x, {m}), {})", r % m)),
        (0i128..3000).prop_map(|k| format!("x >= {k}")),
        (0i128..3000).prop_map(|k| format!("x <= {k}")),
        (2i128..9, 2i128..9, 0i128..9)
            .prop_map(|(d, m, r)| format!("Ne(Mod((x//{d}), {m}), {})", r % m)),
        (1i128..5, -50i128..50, 0i128..4000).prop_map(|(a, c, k)| format!("Ne({a}*x + {c}, {k})")),
    ]
}

/// The group of the guards' one size, solved within `cut` consultations of the deadline (or
/// uncut), and how many consultations the run made.
fn run(guards: &[Expr], range: (i128, i128), cut: Option<u64>) -> (Solved, u64) {
    let _scope = budget::enter_test(cut);
    let groups = group(guards, &[X.to_string()]);
    assert_eq!(groups.len(), 1, "one size, one group");
    let ranges = BTreeMap::from([(X.to_string(), range)]);
    let s = solve_group(&groups[0], &ranges, &Limits::default());
    (s, budget::checks_made())
}

/// Whether `u` says the time budget ran out (through the engine, or the own set's stop).
fn by_budget(u: &Undecided) -> bool {
    match u {
        Undecided::Exhausted(Exhausted::Time(_)) => true,
        Undecided::TooManyValues {
            because: NotPeriodic::Exhausted(Exhausted::Time(_)),
            ..
        } => true,
        Undecided::NotProved { because, .. } => by_budget(because),
        _ => false,
    }
}

/// The values of `range` that pass every guard, evaluated one by one.
fn brute(guards: &[Expr], (lo, hi): (i128, i128)) -> DimSet {
    let pass: Vec<i128> = (lo..=hi)
        .filter(|&v| {
            guards
                .iter()
                .all(|g| matches!(g.eval(&|_| Some(v)), Ok(Value::Bool(true))))
        })
        .collect();
    DimSet::from_values(pass)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn own_set_stops_at_the_deadline_and_rejects_nothing_it_did_not_decide(
        texts in prop::collection::vec(guard(), 1..8),
        lo in 0i128..200,
        width in 0i128..3000,
    ) {
        let guards: Vec<Expr> = texts.iter().map(|t| parse_guard(t).unwrap()).collect();
        let range = (lo, lo + width);
        let truth = brute(&guards, range);
        let (full, n) = run(&guards, range, None);
        prop_assert!(full.undecided.is_none(), "{:?}", full.undecided);
        prop_assert!(full.accepted[X].same_members(&truth), "{:?}", full.accepted[X]);
        for cut in 0..=n {
            let (s, _) = run(&guards, range, Some(cut));
            let accepted = s.accepted.get(X).cloned().unwrap_or_default();
            let unsure = s.unsure.get(X).cloned().unwrap_or_default();
            // Sound: nothing accepted fails; nothing that passes is rejected.
            prop_assert!(accepted.difference(&truth).unwrap().is_empty(), "cut {}", cut);
            let kept = accepted.union(&unsure).unwrap();
            prop_assert!(truth.difference(&kept).unwrap().is_empty(), "cut {}", cut);
            // Decided in order up to the cut, then every guard undecided by the budget.
            let first = s.fates.iter().position(|f| matches!(f, Fate::Undecided(_)));
            for (i, (f, u)) in s.fates.iter().zip(&full.fates).enumerate() {
                match first {
                    Some(k) if i >= k => prop_assert!(
                        matches!(f, Fate::Undecided(why) if by_budget(why)),
                        "cut {}: guard {} ({}) after the deadline: {:?}", cut, i, texts[i], f
                    ),
                    _ => prop_assert_eq!(f, u, "cut {}: guard {}", cut, i),
                }
            }
            match first {
                Some(_) => prop_assert!(
                    s.undecided.as_ref().is_some_and(by_budget),
                    "cut {}: {:?}", cut, s.undecided
                ),
                None => {
                    prop_assert!(s.undecided.is_none(), "cut {}", cut);
                    prop_assert!(accepted.same_members(&truth), "cut {}", cut);
                }
            }
        }
        // Cut before any work: no guard is decided.
        let (s, _) = run(&guards, range, Some(0));
        prop_assert!(s.fates.iter().all(|f| matches!(f, Fate::Undecided(_))), "{:?}", s.fates);
    }
}
