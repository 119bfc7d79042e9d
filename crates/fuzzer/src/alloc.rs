//! A counting global allocator: live bytes, the peak of the current execution, and a hard limit
//! past which the run aborts with the input that caused it (an over-budget allocation is a
//! finding, never a swap storm).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The allocator.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);
static ABORTING: AtomicBool = AtomicBool::new(false);
static CURRENT: Mutex<String> = Mutex::new(String::new());
static NOTE: Mutex<String> = Mutex::new(String::new());

fn grow(n: usize) {
    // The library's memory budget sees the same bytes.
    dimguard_solver::budget::Counting::allocated(n);
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    // A plain load/store, not `fetch_max` (a compare-and-swap loop on every allocation): the
    // harness allocates from one thread, so the peak is exact there.
    if now > PEAK.load(Ordering::Relaxed) {
        PEAK.store(now, Ordering::Relaxed);
    }
    if now > LIMIT.load(Ordering::Relaxed) && !ABORTING.swap(true, Ordering::Relaxed) {
        // Formatting below allocates: `ABORTING` is already set, so it is not checked again.
        abort_with(&format!(
            "OVER-BUDGET ALLOCATION: {} MiB live, past the limit of {} MiB",
            now >> 20,
            LIMIT.load(Ordering::Relaxed) >> 20
        ));
    }
}

// SAFETY: every call is forwarded to the system allocator unchanged; only counters are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        grow(l.size());
        System.alloc(l)
    }

    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        grow(l.size());
        System.alloc_zeroed(l)
    }

    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        dimguard_solver::budget::Counting::freed(l.size());
        System.dealloc(p, l)
    }

    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        if new > l.size() {
            grow(new - l.size());
        } else {
            LIVE.fetch_sub(l.size() - new, Ordering::Relaxed);
            dimguard_solver::budget::Counting::freed(l.size() - new);
        }
        System.realloc(p, l, new)
    }
}

/// Sets the limit on live bytes.
pub fn set_limit(bytes: usize) {
    LIMIT.store(bytes, Ordering::Relaxed);
}

/// Starts a new execution's peak.
pub fn reset_peak() {
    PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Live bytes now.
pub fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The peak of live bytes since [`reset_peak`].
pub fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Remembers the current input, to print if the run must abort.
pub fn set_current(input: &str) {
    if let Ok(mut c) = CURRENT.lock() {
        c.clear();
        c.push_str(input);
    }
}

/// Keeps a message (a panic's) for the finding.
pub fn note(msg: &str) {
    if let Ok(mut n) = NOTE.lock() {
        *n = msg.to_string();
    }
}

/// The kept message.
pub fn take_note() -> String {
    NOTE.lock()
        .map(|mut n| std::mem::take(&mut *n))
        .unwrap_or_default()
}

/// Prints `why` and the current input, then aborts the process (exit by signal: the run fails).
pub fn abort_with(why: &str) -> ! {
    ABORTING.store(true, Ordering::Relaxed);
    let input = CURRENT.try_lock().map(|c| c.clone()).unwrap_or_default();
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "dimguard-fuzzer: {why}\n--- input ---\n{input}\n--- end ---"
    );
    let _ = err.flush();
    std::process::abort()
}
