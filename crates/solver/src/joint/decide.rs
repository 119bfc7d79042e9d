//! One guard over one size decided ([`decide`]): by the engine (the periodic method or
//! enumeration), else with a validity oracle (Z3).

use super::solved::{BoxAnswer, Fate, Prover};
use crate::engine::{solve, Limits, Method, Outcome};
use crate::linked::normalize_one;
use crate::report::{GuardFate, Undecided};
use crate::types::DimSet;
use crate::types::Expr;
/// Values at the start of a range enumerated exactly when Z3 refutes a guard over the whole
/// range: Z3 is then asked about the values past them.
pub const HEAD: i128 = 1 << 16;

/// One guard over one size, decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The values of the set asked about that pass (`None`: undecided).
    pub set: Option<DimSet>,
    /// How it was decided.
    pub fate: Fate,
    /// The period, when the periodic method solved it.
    pub period: Option<i128>,
}

/// Decides one guard over one size `var` within `set`: by the engine (periodic method or
/// enumeration); else, with a validity oracle (Z3), "does every value of `set` pass?" — a proof
/// keeps `set`; a failure over a range too wide to enumerate enumerates the first [`HEAD`] values
/// exactly and asks about the rest; else undecided, with the engine's reason and Z3's answer.
pub fn decide(
    g: &Expr,
    var: &str,
    set: &DimSet,
    limits: &Limits,
    prover: Option<Prover>,
) -> Decision {
    // Outside the engine's methods as written (`Pw % (Pw//7) == 0`): in normal form over
    // `set` (the same values pass), before Z3 is asked.
    let outcome = match solve(g, var, set, limits) {
        // Past the budget nothing else is tried (a normal form per guard cost 70 ms past a
        // one-second deadline over 10,000 guards): the guard stays undecided, saying why.
        undecided @ Outcome::Undecided { .. } if crate::budget::expired().is_some() => undecided,
        Outcome::Undecided { reason } => {
            let normal = normalize_one(g, var, set, limits);
            match solve(&normal, var, set, limits) {
                solved @ Outcome::Solved { .. } if normal != *g => solved,
                _ => Outcome::Undecided { reason },
            }
        }
        solved => solved,
    };
    let reason = match outcome {
        Outcome::Solved { set: s, method } => {
            let (fate, period) = match method {
                Method::Periodic { period } => (GuardFate::Periodic, Some(period)),
                Method::Enumeration { .. } => (GuardFate::Enumeration, None),
            };
            return Decision {
                set: Some(s),
                fate: Fate::Solved(fate),
                period,
            };
        }
        Outcome::Undecided { reason } => reason,
    };
    let answer = prover
        .filter(|_| crate::budget::expired().is_none())
        .map(|p| p(&[g], &[(var, set)]));
    // Failing somewhere over a range too wide to enumerate: enumerate the first values exactly
    // and ask Z3 about the rest.
    let split = match (&answer, prover, set.min()) {
        (Some(BoxAnswer::Fails(_)), Some(p), Some(lo)) => {
            let cut = lo.saturating_add(HEAD);
            let head = set.clip(lo, cut);
            let tail = set.clip(cut.saturating_add(1), i128::MAX);
            match solve(g, var, &head, limits) {
                Outcome::Solved { set: h, .. } if p(&[g], &[(var, &tail)]) == BoxAnswer::Holds => {
                    h.union(&tail).ok()
                }
                _ => None,
            }
        }
        _ => None,
    };
    let proved = |s: DimSet| Decision {
        set: Some(s),
        fate: Fate::Proved,
        period: None,
    };
    match (answer, split) {
        (Some(BoxAnswer::Holds), _) => proved(set.clone()),
        (_, Some(s)) => proved(s),
        (other, None) => {
            let z3 = match other {
                Some(BoxAnswer::Fails(x)) => Some(format!(
                    "Z3 found {}, so it is not true for every value",
                    match x.as_slice() {
                        [v] => format!("the failing value {v}"),
                        _ => format!("the failing combination {x:?}"),
                    }
                )),
                Some(BoxAnswer::Unknown(z)) => Some(format!("Z3: {z}")),
                _ => None,
            };
            let why = match z3 {
                Some(z3) => Undecided::NotProved {
                    because: Box::new(reason),
                    z3,
                },
                None => reason,
            };
            Decision {
                set: None,
                fate: Fate::Undecided(why),
                period: None,
            }
        }
    }
}
