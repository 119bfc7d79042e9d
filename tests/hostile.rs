//! Regression tests for every hostile-input case of issue 13: each answer is checked against
//! Python's semantics value by value (the brute-force oracle), never against a pinned string.

use dimguard::solver::budget::{self, Budget};
use dimguard::solver::diagnose::{diagnose_text, Options};
use dimguard::solver::{parse_guard, solve, DimSet, Limits, Outcome};
use std::time::{Duration, Instant};

const X: &str = "L['x'].size()[2]";

fn msg(range: &str, guard: &str) -> String {
    format!("  - Not all values of h = {X} in the specified range {range} satisfy the generated guard {guard}.\n")
}

/// The feasible values of the single dimension of a one-guard message, enumerated.
fn feasible(range: &str, guard: &str) -> Vec<i128> {
    let r = diagnose_text(&msg(range, guard), &Options::default()).unwrap();
    let f = r.dims[0]
        .feasible
        .as_ref()
        .unwrap_or_else(|| panic!("{guard}: undecided: {:?}", r.dims[0].undecided));
    let set = DimSet::from_segments(f.segments.clone()).unwrap();
    set.iter().collect()
}

#[test]
fn numbers_past_128_bits_are_exact() {
    // 6**50 > 2**128: Python says every value passes.
    assert_eq!(feasible("2 <= h <= 10", &format!("{X} ** 50 > 0")), (2..=10).collect::<Vec<_>>());
    // A big intermediate that cancels: (x**60 - x**60 + x) == x holds everywhere.
    assert_eq!(
        feasible("2 <= h <= 10", &format!("{X}**60 // {X}**59 == {X}")),
        (2..=10).collect::<Vec<_>>()
    );
    // A comparison that really depends on the big values: x**40 > 10**40 holds for x > 10.
    assert_eq!(
        feasible("2 <= h <= 20", &format!("{X} ** 40 > 10 ** 40")),
        (11..=20).collect::<Vec<_>>()
    );
}

#[test]
fn overflow_past_the_big_integer_bound_is_undecided_not_failing() {
    let g = parse_guard(&format!("2 ** (1000000 * {X}) > 0")).unwrap();
    match solve(&g, X, &DimSet::interval(2, 10), &Limits::default()) {
        Outcome::Undecided { reason } => assert!(reason.contains("overflow"), "{reason}"),
        other => panic!("expected undecided, got {other:?}"),
    }
}

#[test]
fn booleans_are_integers_in_arithmetic() {
    // Python: -(1 % x != 0) == -1 (truthy) for every x >= 2.
    let all: Vec<i128> = (2..=10).collect();
    assert_eq!(feasible("2 <= h <= 10", &format!("-(1 % {X} != 0)")), all);
    assert_eq!(feasible("2 <= h <= 10", &format!("({X} % 2 == 0) + 0")), vec![2, 4, 6, 8, 10]);
    assert_eq!(feasible("2 <= h <= 10", &format!("({X} % 3 == 0)*2 == 2")), vec![3, 6, 9]);
    assert_eq!(feasible("2 <= h <= 10", &format!("abs({X} > 5)")), vec![6, 7, 8, 9, 10]);
    // The value-by-value path (a product of sizes forces enumeration) agrees.
    assert_eq!(
        feasible("2 <= h <= 10", &format!("({X} * {X} > 20) + ({X} % 2 == 0) == 2")),
        vec![6, 8, 10]
    );
}

#[test]
fn negative_shifts_raise_so_the_guard_fails() {
    assert_eq!(feasible("2 <= h <= 10", &format!("LShift({X}, -5) > 0")), Vec::<i128>::new());
    assert_eq!(feasible("2 <= h <= 10", &format!("RShift({X}, -1) >= 0")), Vec::<i128>::new());
    // A shift count that depends on the size raises only where it is negative.
    assert_eq!(
        feasible("2 <= h <= 10", &format!("LShift(1, {X} - 5) >= 1")),
        (5..=10).collect::<Vec<_>>()
    );
    // Over a range too wide to enumerate the answer is still exact (the periodic engine knows
    // where evaluation raises).
    let r = diagnose_text(
        &msg("2 <= h <= 4611686018427387904", &format!("LShift({X}, -5) > 0")),
        &Options::default(),
    )
    .unwrap();
    assert_eq!(r.dims[0].feasible.as_ref().map(|f| f.count), Some(0));
}

#[test]
fn division_by_a_constant_zero_fails_only_where_it_is_evaluated() {
    // Short-circuit: `x < 5 or x // 0 > 1` holds where x < 5 and raises elsewhere.
    assert_eq!(
        feasible("2 <= h <= 4611686018427387904", &format!("{X} < 5 or {X} // 0 > 1")),
        vec![2, 3, 4]
    );
}

#[test]
fn a_time_budget_makes_the_answer_partial_not_late() {
    let _b = budget::enter(Budget {
        time: Some(Duration::from_millis(300)),
        ..Budget::default()
    });
    let t = Instant::now();
    // 20,000,000 values of a non-periodic guard.
    let r = diagnose_text(
        &msg("2 <= h <= 20000000", &format!("({X}*{X})//1000 % 7 == 0 and {X} ** 3 % 11 != 4")),
        &Options::default(),
    )
    .unwrap();
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let why = r.dims[0].undecided.clone().unwrap_or_default();
    assert!(why.contains("time budget"), "{why}");
    assert_eq!(budget::exhausted().map(|e| e.kind()), Some("time"));
}

#[test]
fn a_set_past_the_piece_budget_is_undecided_and_memory_stays_bounded() {
    let _b = budget::enter(Budget {
        pieces: 1000,
        ..Budget::default()
    });
    let r = diagnose_text(
        &msg("2 <= h <= 2000000", &format!("({X}*{X})//1000 % 2 == 0")),
        &Options::default(),
    )
    .unwrap();
    let why = r.dims[0].undecided.clone().unwrap_or_default();
    assert!(why.contains("more than 1000 pieces"), "{why}");
    assert_eq!(budget::exhausted().map(|e| e.kind()), Some("pieces"));
}
