//! Z3 queries on worker threads, so that a query returns at the command's deadline.
//!
//! Z3's `timeout` parameter is polled, not enforced: inside non-linear arithmetic (its
//! polynomial manager) a query was measured running 150 ms past a 200 ms budget (fuzzer seed 1,
//! execution 14502). [`bounded`] runs the whole query — encoding, solving, minimizing — on a
//! worker thread and waits for it until the deadline of the calling thread's
//! [`dimguard_solver::budget`] plus [`GRACE`]; past it the caller gets the budget's reason (the
//! budget is recorded as exhausted, so the answer is reported partial) and the worker finishes
//! its query alone, bounded by its own Z3 timeout (set to the time that was left) and by the
//! deadline checks between its queries, then ends. A panic in a query is resumed on the caller.
//!
//! Each calling thread has its own worker, so its queries run one after another in one Z3
//! context, as they would on the calling thread (Z3's models depend on the context's history:
//! the same input gives the same counterexample). A worker left running past a deadline is
//! replaced by a new one and ends when its query does. Without a deadline the caller simply
//! waits. If a thread cannot be started, the query runs on the calling thread.

use dimguard_solver::budget;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// How long past the deadline the caller waits for Z3's own timeout to end a query.
pub const GRACE: Duration = Duration::from_millis(15);

/// A query; what it returns delivers the answer, once the worker is free again.
type Job = Box<dyn FnOnce() -> Box<dyn FnOnce()> + Send>;

struct Worker {
    jobs: Sender<Job>,
    busy: Arc<AtomicBool>,
}

thread_local! {
    static MINE: RefCell<Option<Worker>> = const { RefCell::new(None) };
}

fn start() -> Option<Worker> {
    let (jobs, rx) = channel::<Job>();
    let busy = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&busy);
    std::thread::Builder::new()
        .name("dimguard-z3".into())
        // As the CLI's, the Python module's and the fuzzer's threads: deeply nested guards
        // recurse (encoding, Z3, dropping the expressions).
        .stack_size(256 << 20)
        .spawn(move || {
            // Ends when its caller drops the sender (it moved on to a new worker, or exited).
            while let Ok(job) = rx.recv() {
                let deliver = job();
                // Free before the answer arrives, so the caller's next query comes here.
                flag.store(false, Ordering::Release);
                deliver();
            }
        })
        .ok()?;
    Some(Worker { jobs, busy })
}

/// Hands `job` to the calling thread's worker (a new one if it has none or it is still busy
/// with a query left behind); on the calling thread if no thread can start.
fn submit(job: Job) {
    let job = MINE.with(|m| {
        let mut m = m.borrow_mut();
        if m.as_ref().is_none_or(|w| w.busy.load(Ordering::Acquire)) {
            *m = start();
        }
        let Some(w) = m.as_ref() else {
            return Some(job);
        };
        w.busy.store(true, Ordering::Release);
        match w.jobs.send(job) {
            Ok(()) => None,
            Err(e) => {
                *m = None;
                Some(e.0)
            }
        }
    });
    if let Some(job) = job {
        job()();
    }
}

/// Why a Z3 worker gave no answer ([`bounded`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    /// The deadline (plus [`GRACE`]) passed first; with the budget's reason when it has one.
    #[error("{0}")]
    Deadline(String),
    /// The worker thread ended without sending an answer.
    #[error("Z3's worker thread ended without an answer")]
    WorkerGone,
}

/// Runs `query` on a Z3 worker under the calling thread's budget and returns its answer, or
/// why there is none: the deadline (plus [`GRACE`]) passed first, or the worker ended. A panic
/// of the query is resumed on the calling thread.
pub fn bounded<T: Send + 'static>(
    query: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Unanswered> {
    let carried = budget::carry();
    let wait = budget::remaining().map(|r| r + GRACE);
    let (tx, rx) = channel();
    submit(Box::new(move || {
        // A panic is carried back to the caller and resumed there, as if the query had run on
        // the calling thread (the CLI reports it as an internal error, the fuzzer as a finding).
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _b = budget::adopt(carried);
            let out = query();
            (out, budget::exhausted())
        }));
        // The caller may have stopped waiting: nobody to tell.
        Box::new(move || {
            let _ = tx.send(answer);
        })
    }));
    let got = match wait {
        Some(w) => rx
            .recv_timeout(w)
            .map_err(|e| e == RecvTimeoutError::Timeout),
        None => rx.recv().map_err(|_| false),
    };
    match got {
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Ok(Ok((out, ran_out))) => {
            if let Some(e) = ran_out {
                budget::record(e);
            }
            // Z3's own time-out ends a query at the deadline without the worker noticing.
            budget::expired();
            Ok(out)
        }
        Err(true) => Err(Unanswered::Deadline(budget::expired().map_or_else(
            || "Z3 did not answer before the deadline".to_string(),
            |e| e.reason(),
        ))),
        Err(false) => Err(Unanswered::WorkerGone),
    }
}
