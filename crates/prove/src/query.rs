//! Z3's decisions: whether every size of a set (or every point of a box) passes some guards,
//! with counterexamples re-checked by the exact evaluator, and Z3's `unknown` and time-outs as
//! data. The crate root re-exports them; `dimguard`'s commands (`diagnose`'s certification,
//! `verify`) build on them.

use crate::encode::Encoder;
use dimguard_solver::joint::BoxAnswer;
use dimguard_solver::Compiled;
use dimguard_solver::{DimSet, Expr};
use std::sync::{Arc, Mutex};
use z3::ast::{Bool, Int};
use z3::{Optimize, Params, SatResult, Solver};

/// Z3's answer about a set of sizes and some guards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every member satisfies every guard: Z3 proved it (`unsat`).
    Proved,
    /// These members fail a guard (re-checked value by value), smallest first.
    Refuted(Vec<i128>),
    /// Z3 could not decide (time-out, non-linear arithmetic, a construct without encoding).
    Unknown(String),
}

/// The Z3 library's own version string (`"Z3 5.3.2.0"`), read from the library at run time.
pub fn z3_version() -> &'static str {
    z3::full_version()
}

fn member(x: &Int, set: &DimSet) -> Bool {
    let segs: Vec<Bool> = set
        .segments()
        .iter()
        .map(|s| {
            let mut parts = vec![x.ge(Int::from_i128(s.lo)), x.le(Int::from_i128(s.hi))];
            if s.modulus > 1 {
                let m = Int::from_i128(s.modulus);
                let res: Vec<Bool> = s
                    .residues
                    .iter()
                    .map(|r| x.modulo(&m).eq(Int::from_i128(*r)))
                    .collect();
                parts.push(Bool::or(&res));
            }
            Bool::and(&parts)
        })
        .collect();
    Bool::or(&segs)
}

/// Z3 parameters: the query's timeout, never past the command's time budget.
/// Z3's time-out for one query: `timeout_ms`, or what is left of the command's time budget when
/// that is shorter.
struct TimeOut {
    params: Params,
    /// The budget's deadline set the time-out: Z3 giving up is the deadline.
    at_deadline: bool,
}

impl TimeOut {
    fn new(timeout_ms: u32) -> TimeOut {
        let left = dimguard_solver::budget::remaining().map_or(u32::MAX, |r| {
            u32::try_from(r.as_millis()).unwrap_or(u32::MAX)
        });
        let mut params = Params::new();
        params.set_u32("timeout", timeout_ms.min(left).max(1));
        TimeOut {
            params,
            at_deadline: left <= timeout_ms,
        }
    }

    /// After Z3 answered `unknown`: when the deadline set its time-out, the command's budget is
    /// spent (Z3's clock may stop a moment before ours says so), and what was found is partial.
    fn gave_up(&self) {
        if self.at_deadline {
            dimguard_solver::budget::reach_deadline();
        }
    }
}

/// Z3's answer about a box of several sizes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JointVerdict {
    /// Every point of the box satisfies every guard.
    Proved,
    /// A point of the box (one value per size, in the order given) that fails a guard,
    /// re-checked with the exact evaluator.
    Refuted(Vec<i128>),
    /// Not decided.
    Unknown(String),
}

/// Whether every point of the product of `sets` (one set per named size) satisfies every guard.
/// Runs on a Z3 worker ([`crate::worker::bounded`]): it answers by the command's deadline.
pub fn check_box(guards: &[&Expr], sets: &[(&str, &DimSet)], timeout_ms: u32) -> JointVerdict {
    if sets.iter().any(|(_, s)| s.is_empty()) {
        return JointVerdict::Proved;
    }
    if let Some(e) = dimguard_solver::budget::expired() {
        return JointVerdict::Unknown(e.reason());
    }
    let guards: Vec<Expr> = guards.iter().map(|g| (*g).clone()).collect();
    let sets: Vec<(String, DimSet)> = sets
        .iter()
        .map(|(n, s)| (n.to_string(), (*s).clone()))
        .collect();
    crate::worker::bounded(move || {
        let guards: Vec<&Expr> = guards.iter().collect();
        let sets: Vec<(&str, &DimSet)> = sets.iter().map(|(n, s)| (n.as_str(), s)).collect();
        check_box_here(&guards, &sets, timeout_ms)
    })
    .unwrap_or_else(|why| JointVerdict::Unknown(why.to_string()))
}

fn check_box_here(guards: &[&Expr], sets: &[(&str, &DimSet)], timeout_ms: u32) -> JointVerdict {
    let mut enc = Encoder::new();
    let xs: Vec<Int> = sets.iter().map(|(n, _)| enc.var(n)).collect();
    let mut holds = Vec::new();
    for g in guards {
        match enc.holds(g) {
            Ok(b) => holds.push(b),
            Err(e) => return JointVerdict::Unknown(e.to_string()),
        }
    }
    let solver = Solver::new();
    for (x, (_, s)) in xs.iter().zip(sets) {
        solver.assert(member(x, s));
    }
    solver.assert(Bool::and(&holds).not());
    for _ in 0..16 {
        if let Some(e) = dimguard_solver::budget::expired() {
            return JointVerdict::Unknown(e.reason());
        }
        let limit = TimeOut::new(timeout_ms);
        solver.set_params(&limit.params);
        match solver.check() {
            SatResult::Unsat => return JointVerdict::Proved,
            SatResult::Unknown => {
                limit.gave_up();
                return JointVerdict::Unknown(format!(
                    "Z3: {}",
                    solver
                        .get_reason_unknown()
                        .unwrap_or_else(|| "unknown".into())
                ));
            }
            SatResult::Sat => {}
        }
        let Some(model) = solver.get_model() else {
            break;
        };
        let point: Option<Vec<i128>> = xs
            .iter()
            .map(|x| model.eval(x, true).and_then(|v| v.as_i128()))
            .collect();
        let Some(point) = point else { break };
        let env = |a: &str| sets.iter().position(|(n, _)| *n == a).map(|i| point[i]);
        let fails = guards.iter().any(|g| !matches!(g.truth(&env), Ok(true)));
        if fails {
            return JointVerdict::Refuted(point);
        }
        // Not a real failure (a short-circuited division): exclude the point and look again.
        let same: Vec<Bool> = xs
            .iter()
            .zip(&point)
            .map(|(x, v)| x.eq(Int::from_i128(*v)))
            .collect();
        solver.assert(Bool::and(&same).not());
    }
    JointVerdict::Unknown(
        "Z3 found only points where a division is guarded by a short-circuit".into(),
    )
}

/// Z3 as the solver's validity oracle ([`dimguard_solver::joint::Prover`]): "does every point of
/// this box pass these guards?", asked before a guard outside the engine's methods is called
/// undecided. A failing point is re-checked with the exact evaluator before it is returned.
pub fn box_prover(timeout_ms: u32) -> impl Fn(&[&Expr], &[(&str, &DimSet)]) -> BoxAnswer {
    move |guards, sets| match check_box(guards, sets, timeout_ms) {
        JointVerdict::Proved => BoxAnswer::Holds,
        JointVerdict::Refuted(p) => BoxAnswer::Fails(p),
        JointVerdict::Unknown(why) => BoxAnswer::Unknown(why),
    }
}

/// Whether every member of `set` (a set of values of the size `var`) satisfies every guard.
///
/// With `want > 0`, a refutation lists up to `want` failing members, smallest first.
///
/// ```
/// use dimguard_prove::{check_set, Verdict};
/// use dimguard_solver::{parse_guard, DimSet};
///
/// let g = parse_guard("Eq(Mod(((s0 - 1)//4) - 1, 2), 0)").unwrap();
/// // Every 64*k + 8 up to 2^62 passes: a proof over 2^56 values.
/// let sound = DimSet::progression(8, 1 << 62, 64, 8);
/// assert_eq!(check_set(&[&g], "s0", &sound, 0, 5_000), Verdict::Proved);
/// // Multiples of 4 do not: Z3 finds the real failing sizes, smallest first.
/// let unsound = DimSet::progression(8, 1 << 62, 4, 0);
/// assert_eq!(check_set(&[&g], "s0", &unsound, 2, 5_000), Verdict::Refuted(vec![12, 20]));
/// ```
///
/// Runs on a Z3 worker ([`crate::worker::bounded`]): it answers by the command's deadline.
pub fn check_set(
    guards: &[&Expr],
    var: &str,
    set: &DimSet,
    want: usize,
    timeout_ms: u32,
) -> Verdict {
    if set.is_empty() {
        return Verdict::Proved;
    }
    if let Some(e) = dimguard_solver::budget::expired() {
        return Verdict::Unknown(e.reason());
    }
    let guards: Vec<Expr> = guards.iter().map(|g| (*g).clone()).collect();
    let (var, set) = (var.to_string(), set.clone());
    // The failing values found so far: past the deadline, those already re-checked are kept.
    let found = Arc::new(Mutex::new(Vec::new()));
    let so_far = Arc::clone(&found);
    crate::worker::bounded(move || {
        let guards: Vec<&Expr> = guards.iter().collect();
        check_set_here(&guards, &var, &set, want, timeout_ms, &so_far)
    })
    .unwrap_or_else(|why| {
        let found = found.lock().map(|f| f.clone()).unwrap_or_default();
        if found.is_empty() {
            Verdict::Unknown(why.to_string())
        } else {
            Verdict::Refuted(found)
        }
    })
}

fn check_set_here(
    guards: &[&Expr],
    var: &str,
    set: &DimSet,
    want: usize,
    timeout_ms: u32,
    so_far: &Mutex<Vec<i128>>,
) -> Verdict {
    let mut enc = Encoder::new();
    let x = enc.var(var);
    let mut holds = Vec::new();
    for g in guards {
        match enc.holds(g) {
            Ok(b) => holds.push(b),
            Err(e) => return Verdict::Unknown(e.to_string()),
        }
    }
    let all = Bool::and(&holds);
    let solver = Solver::new();
    let limit = TimeOut::new(timeout_ms);
    solver.set_params(&limit.params);
    solver.assert(member(&x, set));
    solver.assert(all.not());
    match solver.check() {
        SatResult::Unsat => return Verdict::Proved,
        SatResult::Unknown => {
            limit.gave_up();
            return Verdict::Unknown(format!(
                "Z3: {}",
                solver
                    .get_reason_unknown()
                    .unwrap_or_else(|| "unknown".into())
            ));
        }
        SatResult::Sat => {}
    }
    // Smallest failing members: minimize x, then look above each one found.
    let fast: Vec<Option<Compiled>> = guards.iter().map(|g| Compiled::new(g, var)).collect();
    let really_fails = |v: i128| {
        guards
            .iter()
            .zip(&fast)
            .any(|(g, c)| !Compiled::holds(c.as_ref(), g, var, v))
    };
    let opt = Optimize::new();
    opt.assert(member(&x, set));
    opt.assert(all.not());
    opt.minimize(&x);
    let mut found = Vec::new();
    for _ in 0..(want.max(1) * 8) {
        if found.len() >= want.max(1) {
            break;
        }
        // Each query gets what is left of the command's time budget, not a fresh timeout.
        if dimguard_solver::budget::expired().is_some() {
            break;
        }
        let limit = TimeOut::new(timeout_ms);
        opt.set_params(&limit.params);
        let v = match opt.check(&[]) {
            SatResult::Sat => opt
                .get_model()
                .and_then(|m| m.eval(&x, true))
                .and_then(|v| v.as_i128()),
            SatResult::Unsat => None,
            SatResult::Unknown => {
                limit.gave_up();
                None
            }
        };
        // Without a minimum (time-out), fall back to the plain model.
        let Some(v) = v.or_else(|| {
            solver
                .get_model()
                .and_then(|m| m.eval(&x, true))
                .and_then(|v| v.as_i128())
        }) else {
            break;
        };
        if really_fails(v) {
            found.push(v);
            if let Ok(mut f) = so_far.lock() {
                f.push(v);
            }
        }
        opt.assert(x.gt(Int::from_i128(v)));
        solver.assert(x.gt(Int::from_i128(v)));
    }
    if found.is_empty() {
        Verdict::Unknown(
            "Z3 found only values where a division is guarded by a short-circuit".into(),
        )
    } else {
        Verdict::Refuted(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dimguard_solver::parse_guard;
    use proptest::prelude::*;

    #[test]
    fn links_the_z3_the_bindings_were_made_for() {
        // The library in memory, not the headers the bindings were generated from.
        assert!(z3_version().contains("5.3.2"), "{}", z3_version());
    }

    #[test]
    fn joint_boxes() {
        let g = parse_guard("h * w % 4 == 0").unwrap();
        let evens = DimSet::progression(2, 1 << 40, 2, 0);
        assert_eq!(
            check_box(&[&g], &[("h", &evens), ("w", &evens)], 10_000),
            JointVerdict::Proved
        );
        let all = DimSet::interval(2, 100);
        match check_box(&[&g], &[("h", &evens), ("w", &all)], 10_000) {
            JointVerdict::Refuted(p) => assert!((p[0] * p[1]) % 4 != 0 && p[0] % 2 == 0, "{p:?}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_size_dependent_modulus_is_proved_before_it_is_called_undecided() {
        use dimguard_solver::joint::{group, solve_group_with, Fate};
        use dimguard_solver::linked::Budget;
        use std::collections::BTreeMap;
        // Window attention exported with Dim.AUTO: a = h//4 padded to a multiple of 7.
        let a = "((h // 4) + ((7 + (-1)*((h // 4) % 7)) % 7))";
        let guards = vec![
            parse_guard(&format!("({a} % ({a} // 7)) == 0")).unwrap(),
            parse_guard("h >= 28").unwrap(),
            parse_guard("h ** 2 <= 10000").unwrap(),
        ];
        let groups = group(&guards, &["h".to_string()]);
        let ranges = BTreeMap::from([("h".to_string(), (4, 1i128 << 62))]);
        let prover = box_prover(10_000);
        let s = solve_group_with(&groups[0], &ranges, &Budget::default(), Some(&prover));
        assert_eq!(groups[0].guards, guards);
        let fate = |i: usize| s.fates[i].clone();
        // The padded modulus is read in normal form (`a` a multiple of 7 is `7*(a//7)`, so
        // `a % (a//7)` is 0): decided by the periodic engine before Z3 is asked.
        assert_eq!(
            fate(0),
            Fate::Solved(dimguard_solver::report::GuardFate::Periodic),
            "{:?}",
            s.fates
        );
        assert_eq!(
            fate(1),
            Fate::Solved(dimguard_solver::report::GuardFate::Periodic)
        );
        // h**2 <= 10000 fails for h = 101 and every larger h: Z3 says so, the guard stays
        // undecided with a real failing value, and nothing is claimed accepted.
        match fate(2) {
            Fate::Undecided(why) => assert!(why.to_string().contains("Z3 found"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(s.accepted["h"].is_empty());
        assert_eq!(s.unsure["h"].min(), Some(28));
    }

    #[test]
    fn raft_torch_fix_is_refuted_and_ours_proved_on_2_to_2_62() {
        let g = parse_guard("((((-1) + x) // 8) % 8) == 1").unwrap();
        let fix = DimSet::progression(136, 2160, 8, 0);
        assert_eq!(
            check_set(&[&g], "x", &fix, 3, 10_000),
            Verdict::Refuted(vec![136, 152, 160])
        );
        let ours = DimSet::progression(9, 1 << 62, 64, 9);
        assert_eq!(check_set(&[&g], "x", &ours, 3, 10_000), Verdict::Proved);
    }

    /// Z3's Euclidean `div`/`mod` against Python's floor semantics, on random values including
    /// negative operands: fails if the encoding (or the library) disagrees with the evaluator.
    fn z3_value(e: &Expr, vals: &[(&str, i128)]) -> Option<bool> {
        let mut enc = Encoder::new();
        let b = enc.holds(e).ok()?;
        let s = Solver::new();
        for (n, v) in vals {
            s.assert(enc.var(n).eq(Int::from_i128(*v)));
        }
        s.assert(&b);
        Some(s.check() == SatResult::Sat)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn floor_semantics_agree_with_the_evaluator(a in -50i128..50, b in -9i128..10, k in 0usize..6) {
            let texts = [
                "x // y == (x // y)",
                "x % y >= 0",
                "x % y == x - y * (x // y)",
                "math.trunc(x / y) * y <= abs(x)",
                "round(x / y) % 2 == 0",
                "math.ceil(x / y) > x // y",
            ];
            let e = parse_guard(texts[k]).unwrap();
            let env = |n: &str| match n { "x" => Some(a), "y" => Some(b), _ => None };
            let want = e.eval(&env).map(|v| v == dimguard_solver::expr::Value::Bool(true));
            let got = z3_value(&e, &[("x", a), ("y", b)]).unwrap();
            // Division by zero: Python raises, the guard does not hold.
            prop_assert_eq!(got, want.unwrap_or(false), "{} at x={}, y={}", texts[k], a, b);
        }
    }
}

#[cfg(test)]
mod deadline {
    use super::*;
    use crate::worker;
    use dimguard_solver::budget::{self, Budget};
    use dimguard_solver::parse_guard;
    use std::time::{Duration, Instant};

    #[test]
    fn a_query_answers_by_the_deadline_with_what_it_found() {
        // Fuzzer seed 1, execution 14502 (`verify`): minimizing the failing values of a cubic
        // guard, Z3 ran 110-170 ms past budgets of 300 and 500 ms on the calling thread.
        let g = parse_guard("(x ** 3) % 11").unwrap();
        let set = DimSet::progression(5 * 59 + 2, 5 * 167 + 2, 5, 2);
        for ms in [100, 300, 500] {
            let _b = budget::enter(Budget {
                time: Some(Duration::from_millis(ms)),
                ..Budget::default()
            });
            let t = Instant::now();
            let v = check_set(&[&g], "x", &set, 5, 10_000);
            let took = t.elapsed();
            assert!(
                took < Duration::from_millis(ms + 60) + worker::GRACE,
                "{took:?} under a budget of {ms} ms"
            );
            // Whatever was found before the deadline is real: the values fail the guard.
            match &v {
                Verdict::Refuted(xs) => {
                    assert!(xs.iter().all(|&x| set.contains(x) && (x * x * x) % 11 == 0));
                    assert!(xs.windows(2).all(|w| w[0] < w[1]));
                }
                Verdict::Unknown(why) => assert!(why.contains("time budget"), "{why}"),
                Verdict::Proved => panic!("proved a guard that fails at 297"),
            }
            // Partial, and said so: an answer short of the five smallest failing values comes
            // with the time budget marked spent. (Not keyed on the clock: a query that completes
            // a moment before its deadline may be measured a moment after it on a loaded machine.)
            let complete: Vec<i128> = (297..=837)
                .step_by(5)
                .filter(|x| (x * x * x) % 11 == 0)
                .take(5)
                .collect();
            if !matches!(&v, Verdict::Refuted(xs) if *xs == complete) {
                assert_eq!(
                    budget::exhausted().map(|e| e.kind()),
                    Some("time"),
                    "{v:?} after {took:?} under a budget of {ms} ms"
                );
            }
        }
    }

    #[test]
    fn a_panic_in_a_query_reaches_the_caller_and_the_worker_goes_on() {
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let caught = std::panic::catch_unwind(|| worker::bounded(|| -> u8 { panic!("boom") }));
        std::panic::set_hook(hook);
        let payload = caught.expect_err("the panic is resumed on the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
        assert_eq!(worker::bounded(|| 7), Ok(7));
    }

    #[test]
    fn a_worker_left_behind_does_not_spoil_the_next_query() {
        let hard = parse_guard("(x ** 3) % 11").unwrap();
        let set = DimSet::progression(5 * 59 + 2, 5 * 167 + 2, 5, 2);
        {
            let _b = budget::enter(Budget {
                time: Some(Duration::from_millis(30)),
                ..Budget::default()
            });
            let _ = check_set(&[&hard], "x", &set, 5, 10_000);
        }
        // At once, while that worker may still be finishing: a fresh worker (or the same one,
        // after its own time-out) answers, with no deadline and with one.
        let g = parse_guard("x % 4 == 0").unwrap();
        let fours = DimSet::progression(8, 1 << 62, 4, 0);
        assert_eq!(check_set(&[&g], "x", &fours, 1, 10_000), Verdict::Proved);
        let _b = budget::enter(Budget {
            time: Some(Duration::from_secs(20)),
            ..Budget::default()
        });
        let evens = DimSet::progression(8, 1 << 62, 2, 0);
        assert_eq!(
            check_set(&[&g], "x", &evens, 1, 10_000),
            Verdict::Refuted(vec![10])
        );
        assert!(budget::exhausted().is_none());
    }
}
