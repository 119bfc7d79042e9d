//! Work budgets: a deadline and a bound on the size of any set one answer may hold.
//!
//! A command runs its work inside [`enter`]; the engine, the joint solver and the prover consult
//! the budget of the current thread. Past the deadline, work still to do is reported undecided
//! with [`Exhausted::reason`] — a partial answer, as data — and [`exhausted`] tells the caller
//! which budget ran out so it can say so once at the top of the report. A set with more pieces
//! than [`Budget::pieces`] is never built: memory stays bounded by the budget, not by the width
//! of a range.
//!
//! Without [`enter`], there is no deadline and the piece bound is [`DEFAULT_PIECES`].

use std::cell::Cell;
use std::time::{Duration, Instant};

/// The piece bound when no budget was entered.
pub const DEFAULT_PIECES: usize = 20_000;

/// The limits one command works within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Wall-clock time allowed; `None` for no limit.
    pub time: Option<Duration>,
    /// Largest number of segments (or runs) a single computed set may have.
    pub pieces: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            time: None,
            pieces: DEFAULT_PIECES,
        }
    }
}

/// Which budget ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exhausted {
    /// The deadline passed; the allowed time is given.
    Time(Duration),
    /// A step stopped at its share of the time left ([`share_spent`]), before the deadline,
    /// leaving the rest to the work on its result.
    Share {
        /// The step (`"the joint search"`).
        step: &'static str,
        /// Its share of the time left when it started, in percent.
        percent: u8,
        /// The whole time budget.
        time: Duration,
    },
    /// A set would have held more than this many pieces.
    Pieces(usize),
}

impl Exhausted {
    /// Short machine-readable name: `"time"` (the deadline passed, or a step used its share of
    /// the time) or `"pieces"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Exhausted::Time(_) | Exhausted::Share { .. } => "time",
            Exhausted::Pieces(_) => "pieces",
        }
    }

    /// Why an answer is missing, in words a user can act on.
    pub fn reason(&self) -> String {
        match self {
            Exhausted::Time(t) => format!(
                "the time budget of {} ran out before this was decided (raise it with --time-budget, or dimguard.set_budget in Python)",
                human_duration(*t)
            ),
            Exhausted::Share {
                step,
                percent,
                time,
            } => format!(
                "{step} stopped at its share ({percent}% of the time left) of the time budget of {}, leaving the rest to report what it found (raise the budget with --time-budget, or dimguard.set_budget in Python)",
                human_duration(*time)
            ),
            Exhausted::Pieces(n) => format!(
                "the exact set has more than {n} pieces, more than the output budget allows (raise it with --output-budget, or dimguard.set_budget in Python)"
            ),
        }
    }
}

fn human_duration(t: Duration) -> String {
    let ms = t.as_millis();
    if ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else {
        format!("{ms} ms")
    }
}

#[derive(Debug, Clone, Copy)]
struct State {
    budget: Budget,
    deadline: Option<Instant>,
    exhausted: Option<Exhausted>,
}

thread_local! {
    static STATE: Cell<Option<State>> = const { Cell::new(None) };
}

/// Restores the previous budget when dropped.
#[must_use = "the budget applies until this guard is dropped"]
pub struct Scope {
    previous: Option<State>,
}

impl Drop for Scope {
    fn drop(&mut self) {
        STATE.with(|s| s.set(self.previous));
    }
}

/// Runs the rest of the scope under `budget` (its clock starts now).
pub fn enter(budget: Budget) -> Scope {
    let state = State {
        budget,
        deadline: budget.time.map(|t| Instant::now() + t),
        exhausted: None,
    };
    Scope {
        previous: STATE.with(|s| s.replace(Some(state))),
    }
}

fn with<T>(f: impl FnOnce(&mut Option<State>) -> T) -> T {
    STATE.with(|s| {
        let mut v = s.get();
        let out = f(&mut v);
        s.set(v);
        out
    })
}

/// The largest number of pieces one set may have.
pub fn pieces() -> usize {
    with(|s| s.map_or(DEFAULT_PIECES, |s| s.budget.pieces))
}

/// Whether the deadline has passed (recording it when it has).
pub fn expired() -> Option<Exhausted> {
    if Instant::now() < with(|s| s.as_ref().and_then(|st| st.deadline))? {
        return None;
    }
    reach_deadline()
}

/// Records that the deadline has been reached as another clock measured it, and returns the
/// reason to report; without a deadline, nothing. A solver's time-out set to [`remaining`] may
/// end its query a moment before [`expired`] would say the deadline passed: the answer is
/// partial all the same.
pub fn reach_deadline() -> Option<Exhausted> {
    with(|s| {
        let st = s.as_mut()?;
        st.deadline?;
        let e = Exhausted::Time(st.budget.time.unwrap_or_default());
        st.exhausted.get_or_insert(e);
        Some(e)
    })
}

/// [`expired`] as an error ([`crate::Error::Exhausted`]), for work that stops with `?`.
pub fn check() -> Result<(), crate::Error> {
    expired().map_or(Ok(()), |e| Err(crate::Error::Exhausted(e)))
}

/// The current thread's budget (its deadline, not a fresh clock), to run part of the work on
/// another thread with [`adopt`].
#[derive(Debug, Clone, Copy)]
pub struct Carried(Option<State>);

/// The current thread's budget, to carry to another thread.
pub fn carry() -> Carried {
    with(|s| Carried(*s))
}

/// Runs the rest of the scope under a budget carried from another thread ([`carry`]): the same
/// limits and the same deadline. What runs out here is reported by [`exhausted`] on this thread;
/// the caller passes it back with [`record`].
pub fn adopt(carried: Carried) -> Scope {
    let state = carried.0.map(|st| State {
        exhausted: None,
        ..st
    });
    Scope {
        previous: STATE.with(|s| s.replace(state)),
    }
}

/// The moment `fraction` (0..1) of the time left runs out: a step whose result others must
/// still process (the joint search, then its boxes and projections) stops there and leaves
/// them the rest. `None` without a deadline.
pub fn share_of_remaining(fraction: f64) -> Option<Instant> {
    let left = remaining()?;
    Some(Instant::now() + left.mul_f64(fraction.clamp(0.0, 1.0)))
}

/// Records that `step` stopped at its share `fraction` of the time left
/// ([`share_of_remaining`]), before the deadline, and returns it ([`Exhausted::Share`]): the
/// answer is partial because of the time budget, and its reason says so truly. `None` without a
/// time budget. Returned even when another budget ran out first (that one stays the one
/// reported).
pub fn share_spent(step: &'static str, fraction: f64) -> Option<Exhausted> {
    with(|s| {
        let st = s.as_mut()?;
        let e = Exhausted::Share {
            step,
            percent: (fraction.clamp(0.0, 1.0) * 100.0).round() as u8,
            time: st.budget.time?,
        };
        st.exhausted.get_or_insert(e);
        Some(e)
    })
}

/// Records that a budget ran out (on another thread, see [`adopt`]).
pub fn record(e: Exhausted) {
    with(|s| {
        if let Some(st) = s.as_mut() {
            st.exhausted.get_or_insert(e);
        }
    });
}

/// Records that a set exceeded the piece bound, and returns the reason to report.
pub fn too_many_pieces() -> Exhausted {
    let e = Exhausted::Pieces(pieces());
    with(|s| {
        if let Some(st) = s.as_mut() {
            st.exhausted.get_or_insert(e);
        }
    });
    e
}

/// Time left before the deadline (`None` without one).
pub fn remaining() -> Option<Duration> {
    with(|s| {
        let d = s.as_ref()?.deadline?;
        Some(d.saturating_duration_since(Instant::now()))
    })
}

/// The first budget that ran out in the current scope, if any: the answer is partial.
pub fn exhausted() -> Option<Exhausted> {
    with(|s| s.as_ref().and_then(|s| s.exhausted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore() {
        assert_eq!(pieces(), DEFAULT_PIECES);
        assert!(expired().is_none());
        {
            let _outer = enter(Budget {
                time: Some(Duration::ZERO),
                pieces: 10,
            });
            assert_eq!(pieces(), 10);
            assert_eq!(expired(), Some(Exhausted::Time(Duration::ZERO)));
            assert_eq!(exhausted().map(|e| e.kind()), Some("time"));
            {
                let _inner = enter(Budget::default());
                assert!(expired().is_none());
                assert!(exhausted().is_none());
            }
            assert_eq!(exhausted().map(|e| e.kind()), Some("time"));
        }
        assert!(exhausted().is_none());
        assert_eq!(pieces(), DEFAULT_PIECES);
    }
}
