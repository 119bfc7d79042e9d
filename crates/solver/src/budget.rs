//! Work budgets: a deadline and a bound on the size of any set one answer may hold.
//!
//! A command runs its work inside [`enter`]; the engine, the joint solver and the prover consult
//! the budget of the current thread. Past the deadline, work still to do is reported undecided
//! with [`Exhausted::reason`] — a partial answer, as data — and [`exhausted`] tells the caller
//! which budget ran out so it can say so once at the top of the report. A set with more pieces
//! than [`Budget::pieces`] is never built: memory stays bounded by the budget, not by the width
//! of a range.
//!
//! Memory: a program that installs [`Counting`] as its global allocator (the CLI and the
//! Python extension do) has every byte it holds counted; past [`Budget::memory`] bytes,
//! [`expired`] and [`check`] report [`Exhausted::Memory`] at the same points where they watch
//! the deadline (every set operation, enumeration step and joint-search step), so the work that
//! grows sets stops there and the answer is partial, as for time. Without the allocator the
//! memory term is not enforced.
//!
//! Without [`enter`], there is no deadline and the piece bound is [`DEFAULT_PIECES`].

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The piece bound when no budget was entered.
pub const DEFAULT_PIECES: usize = 20_000;

/// The default memory budget: 1 GiB, well under a laptop's memory.
pub const DEFAULT_MEMORY: usize = 1 << 30;

static HELD: AtomicUsize = AtomicUsize::new(0);
static COUNTING: AtomicBool = AtomicBool::new(false);

/// A global allocator that counts the bytes the process holds (the system allocator
/// underneath), for the memory term of the budget:
/// `#[global_allocator] static A: dimguard_solver::budget::Counting = dimguard_solver::budget::Counting;`
pub struct Counting;

// SAFETY: every call is forwarded to the system allocator unchanged; only a counter is updated.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            HELD.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            HELD.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            HELD.fetch_add(new_size, Ordering::Relaxed);
            HELD.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

impl Counting {
    /// Turns the memory term on: call once at start where [`Counting`] is the global allocator
    /// (or where another allocator reports to [`Counting::allocated`] and [`Counting::freed`]).
    pub fn activate() {
        COUNTING.store(true, Ordering::Relaxed);
    }

    /// Counts `bytes` allocated, for a global allocator of its own that forwards its counts
    /// here (the fuzzer's).
    pub fn allocated(bytes: usize) {
        HELD.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts `bytes` freed (see [`Counting::allocated`]).
    pub fn freed(bytes: usize) {
        HELD.fetch_sub(bytes, Ordering::Relaxed);
    }
}

static STEP: std::sync::Mutex<Option<(String, u64, u64)>> = std::sync::Mutex::new(None);

/// Says what the work is doing: `step` (`"solving dimension h"`), `done` of `total` items (a
/// total of 0: no count). A command's progress line (the CLI prints it on stderr once the
/// command runs past about two seconds) reads it with [`current_step`].
pub fn progress(step: impl Into<String>, done: u64, total: u64) {
    if let Ok(mut s) = STEP.lock() {
        *s = Some((step.into(), done, total));
    }
}

/// The last [`progress`]: (step, done, total).
pub fn current_step() -> Option<(String, u64, u64)> {
    STEP.lock().ok().and_then(|s| s.clone())
}

/// Bytes the process holds, when [`Counting`] is installed and active.
pub fn memory_held() -> Option<usize> {
    COUNTING
        .load(Ordering::Relaxed)
        .then(|| HELD.load(Ordering::Relaxed))
}

/// The limits one command works within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Wall-clock time allowed; `None` for no limit.
    pub time: Option<Duration>,
    /// Largest number of segments (or runs) a single computed set may have.
    pub pieces: usize,
    /// Bytes the process may hold while the work runs (enforced where [`Counting`] is the
    /// global allocator).
    pub memory: usize,
}

impl Default for Budget {
    fn default() -> Budget {
        Budget {
            time: None,
            pieces: DEFAULT_PIECES,
            memory: DEFAULT_MEMORY,
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
    /// The process held more than this many bytes.
    Memory(usize),
}

impl Exhausted {
    /// Short machine-readable name: `"time"` (the deadline passed, or a step used its share of
    /// the time), `"pieces"` or `"memory"`.
    pub fn kind(&self) -> &'static str {
        match self {
            Exhausted::Time(_) | Exhausted::Share { .. } => "time",
            Exhausted::Pieces(_) => "pieces",
            Exhausted::Memory(_) => "memory",
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
            Exhausted::Memory(n) => format!(
                "the memory budget of {} ran out before this was decided (raise it with --memory-budget, or dimguard.set_budget(memory=...) in Python)",
                human_bytes(*n)
            ),
        }
    }
}

/// `1 GiB`, `512 MiB`, `1000 bytes`.
pub fn human_bytes(n: usize) -> String {
    if n >= 1 << 30 && n % (1 << 30) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// Parses a byte count: `1073741824`, `1G`/`1GiB`, `512M`/`512MiB`, `64K`.
pub fn parse_bytes(s: &str) -> Option<usize> {
    let t = s.trim();
    let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: usize = t[..digits].parse().ok()?;
    let shift = match t[digits..].trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        _ => return None,
    };
    n.checked_mul(1usize << shift)
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
    /// [`enter_cut`]: how many more calls of [`expired`] find time left (then the time budget
    /// is spent, as if its deadline had passed at that point of the work).
    checks_left: Option<u64>,
    /// How many times [`expired`] was called in this scope ([`checks_made`]).
    checks: u64,
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
        checks_left: None,
        checks: 0,
    };
    Scope {
        previous: STATE.with(|s| s.replace(Some(state))),
    }
}

/// Runs the rest of the scope under `budget` (which must have a time budget), whose time runs
/// out at the `checks + 1`th consultation of the deadline ([`expired`], [`check`]) instead of
/// on the clock (the deadline stays, as a backstop): a cut at a chosen point of the work, the
/// same on every run and every machine. For tests of what a command says when its time budget
/// runs out part way ([`checks_made`] counts the consultations of an uncut run).
pub fn enter_cut(budget: Budget, checks: u64) -> Scope {
    let scope = enter(budget);
    with(|s| {
        if let Some(st) = s.as_mut() {
            st.checks_left = Some(checks);
        }
    });
    scope
}

/// The scope of one run in a test of budget cuts: a time budget of an hour (a backstop no such
/// run reaches, so only the cut decides where the time runs out), cut at the `n + 1`th
/// consultation of the deadline when `cut` is `Some(n)` ([`enter_cut`]), else uncut
/// ([`enter`]). After the run, [`checks_made`] says how many consultations it made: the cut
/// points of that run are `0..=checks_made()`.
pub fn enter_test(cut: Option<u64>) -> Scope {
    let b = Budget {
        time: Some(Duration::from_secs(3600)),
        ..Budget::default()
    };
    match cut {
        Some(n) => enter_cut(b, n),
        None => enter(b),
    }
}

/// How many times this thread consulted the deadline ([`expired`]) in the current scope.
pub fn checks_made() -> u64 {
    with(|s| s.map_or(0, |s| s.checks))
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

/// Whether the deadline has passed or the memory budget is spent (recording it when so).
pub fn expired() -> Option<Exhausted> {
    if let Some(e) = over_memory() {
        return Some(e);
    }
    let cut = with(|s| {
        let st = s.as_mut()?;
        st.checks += 1;
        let left = st.checks_left.as_mut()?;
        if *left == 0 {
            return Some(true);
        }
        *left -= 1;
        Some(false)
    });
    if cut == Some(true) {
        return reach_deadline();
    }
    if Instant::now() < with(|s| s.as_ref().and_then(|st| st.deadline))? {
        return None;
    }
    reach_deadline()
}

/// The memory budget, when the process holds more than it (recorded).
fn over_memory() -> Option<Exhausted> {
    let held = memory_held()?;
    with(|s| {
        let st = s.as_mut()?;
        if held <= st.budget.memory {
            return None;
        }
        let e = Exhausted::Memory(st.budget.memory);
        st.exhausted.get_or_insert(e);
        Some(e)
    })
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

/// [`expired`] as an error, for work that stops with `?` (which turns it into
/// [`crate::Error::Exhausted`] where the work returns the crate's error).
pub fn check() -> Result<(), Exhausted> {
    expired().map_or(Ok(()), Err)
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

/// Time left before the deadline (`None` without one; none left once a cut ([`enter_cut`])
/// was reached).
pub fn remaining() -> Option<Duration> {
    with(|s| {
        let st = s.as_ref()?;
        let d = st.deadline?;
        if st.checks_left == Some(0) {
            return Some(Duration::ZERO);
        }
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
                ..Budget::default()
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

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("1G"), Some(1 << 30));
        assert_eq!(parse_bytes("512MiB"), Some(512 << 20));
        assert_eq!(parse_bytes("4096"), Some(4096));
        assert_eq!(parse_bytes("1T"), None);
        assert_eq!(human_bytes(1 << 30), "1 GiB");
    }
}
