//! CPU time of one thread, readable from another: the measure of "how long an execution took"
//! that does not depend on how loaded the machine is (a run at `nice -n 19` on a busy machine
//! can wait seconds for a core; its CPU time is what the code itself cost).

use std::cell::Cell;
use std::time::Duration;

/// A thread's CPU clock.
#[derive(Debug, Clone, Copy)]
pub struct Clock(libc::clockid_t);

impl Clock {
    /// The calling thread's clock.
    pub fn current() -> Clock {
        let mut id: libc::clockid_t = 0;
        // SAFETY: `pthread_self` is always valid for the calling thread and `id` is a valid
        // out-pointer.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        Clock(if rc == 0 {
            id
        } else {
            libc::CLOCK_THREAD_CPUTIME_ID
        })
    }

    /// The whole process's clock: every thread, the library's Z3 workers included.
    pub fn process() -> Clock {
        Clock(libc::CLOCK_PROCESS_CPUTIME_ID)
    }

    /// The raw id, to hand to another thread.
    pub fn id(self) -> i64 {
        self.0 as i64
    }

    /// The clock of a raw id from [`Clock::id`].
    pub fn from_id(id: i64) -> Clock {
        Clock(id as libc::clockid_t)
    }

    /// CPU time the thread has used so far.
    pub fn now(self) -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer; an invalid id only makes the call fail.
        if unsafe { libc::clock_gettime(self.0, &mut ts) } != 0 {
            return Duration::ZERO;
        }
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }
}

thread_local! {
    static LIBRARY: Cell<Duration> = const { Cell::new(Duration::ZERO) };
}

/// Runs `f` (a call into the library under test) and adds the CPU time used meanwhile to the
/// calling thread's library total: the budget bounds the library's work, not the oracle's. The
/// process's clock, not the thread's: Z3 queries run on worker threads (`dimguard_prove::worker`),
/// and one left running past the deadline is counted while it finishes.
pub fn library<T>(f: impl FnOnce() -> T) -> T {
    let clock = Clock::process();
    let t = clock.now();
    let out = f();
    let used = clock.now().saturating_sub(t);
    LIBRARY.with(|c| c.set(c.get() + used));
    out
}

/// The library CPU time of the calling thread since the last call, and reset it.
pub fn take_library() -> Duration {
    LIBRARY.with(|c| c.replace(Duration::ZERO))
}
