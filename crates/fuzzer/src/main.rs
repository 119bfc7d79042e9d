//! `dimguard-fuzzer`: a fuzzing harness on stable Rust.
//!
//! Each execution draws one input from a seed — a structured message (proptest strategies for
//! guards in both syntaxes, ranges, equalities, fixes), a mutated real message (`tests/data`,
//! the seed corpus), a message with a `dynamic_shapes` spec for `verify`, or a mutated real
//! exported program — and drives the library entry points in-process under the same budgets the
//! CLI uses. An execution fails the run when it
//!
//! * panics,
//! * spends more CPU time in the library than its time budget plus an overrun allowance (the
//!   budget must bound the work, with the partial answer as data),
//! * runs past its time budget plus a grace period in CPU time, or ten times that in wall-clock
//!   time (a watchdog thread aborts a real hang),
//! * allocates past the memory limit (a counting global allocator aborts, printing the input),
//! * holds more memory in one execution than its memory budget (`--mem-budget-mb`, given to the
//!   library as `Budget::memory`) plus an allowance of a quarter of it: the budget must bound
//!   the memory, with the partial answer as data (an OVER MEMORY finding),
//! * or answers differently from the brute-force oracle: the exact evaluator run value by value
//!   over every range small enough (feasible sets, suggestions, `verify` verdicts and
//!   counterexamples, `check`'s accepted sets).
//!
//! ```text
//! cargo run --release -p dimguard-fuzzer -- --execs 1000000 --seed 1
//! ```
//!
//! Findings are written to `--findings DIR` (default `target/fuzz-findings`), one file per input,
//! with the execution number that reproduces it (`--seed S --from N --execs 1`).

mod alloc;
mod cpu;
mod gen;
mod oracle;

use dimguard_solver::budget::{self, Budget};
use gen::{Input, Source};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// Options from the command line.
#[derive(Debug, Clone)]
struct Opts {
    execs: u64,
    from: u64,
    seed: u64,
    time_ms: u64,
    grace_ms: u64,
    overrun_ms: Option<u64>,
    mem_mb: usize,
    mem_budget_mb: usize,
    findings: PathBuf,
    root: PathBuf,
    progress: u64,
    slow_ms: u64,
    print: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: dimguard-fuzzer [--execs N] [--seed S] [--from N] [--time-ms T] [--overrun-ms D] [--grace-ms G] [--mem-mb M] [--mem-budget-mb B] [--findings DIR] [--root REPO] [--progress N] [--slow-ms N] [--print]\n\
         Runs N executions (default 10000) of seed S (default: the current time) under a per-execution\n\
         time budget of T ms (default 500) and a memory limit of M MiB (default 1024). An execution whose\n\
         library calls take more than T + D ms of CPU time is a finding (D default max(T, 100)); one past\n\
         T + G ms of CPU time (or 10 times that of wall-clock time) is a hang and stops the run (G default\n\
         5000). Exits 1 when anything was found. --print writes the inputs instead of running them."
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        execs: 10_000,
        from: 0,
        seed: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_secs()),
        time_ms: 500,
        grace_ms: 5000,
        overrun_ms: None,
        mem_mb: 1024,
        mem_budget_mb: 256,
        findings: PathBuf::from("target/fuzz-findings"),
        root: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."),
        progress: 0,
        slow_ms: 0,
        print: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = || args.get(i + 1).cloned().unwrap_or_else(|| usage());
        let num = |s: String| {
            s.replace('_', "")
                .parse::<u64>()
                .unwrap_or_else(|_| usage())
        };
        match args[i].as_str() {
            "--execs" => o.execs = num(val()),
            "--from" => o.from = num(val()),
            "--seed" => o.seed = num(val()),
            "--time-ms" => o.time_ms = num(val()),
            "--grace-ms" => o.grace_ms = num(val()),
            "--overrun-ms" => o.overrun_ms = Some(num(val())),
            "--mem-mb" => o.mem_mb = num(val()) as usize,
            "--mem-budget-mb" => o.mem_budget_mb = num(val()) as usize,
            "--progress" => o.progress = num(val()),
            "--slow-ms" => o.slow_ms = num(val()),
            "--print" => {
                o.print = true;
                i += 1;
                continue;
            }
            "--findings" => o.findings = PathBuf::from(val()),
            "--root" => o.root = PathBuf::from(val()),
            _ => usage(),
        }
        i += 2;
    }
    o
}

/// The real inputs mutations start from.
struct Seeds {
    messages: Vec<String>,
    programs: Vec<(String, serde_json::Value)>,
}

fn read_dir(dir: &Path, ext: &str) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().to_string_lossy().ends_with(ext))
        .filter_map(|e| {
            Some((
                e.path().display().to_string(),
                std::fs::read(e.path()).ok()?,
            ))
        })
        .collect();
    out.sort();
    out
}

fn seeds(root: &Path) -> Seeds {
    let mut messages: Vec<String> = Vec::new();
    for dir in [
        root.join("crates/fuzzer/corpus"),
        root.join("tests/data/messages"),
        PathBuf::from("/work/shared/fixtures/messages"),
    ] {
        for (_, b) in read_dir(&dir, ".txt") {
            messages.push(String::from_utf8_lossy(&b).into_owned());
        }
    }
    let mut programs = Vec::new();
    for (name, b) in read_dir(&root.join("tests/data/pt2"), ".json") {
        if let Ok(v) = serde_json::from_slice::<serde_json::Value>(&b) {
            programs.push((name, v));
        }
    }
    // Small programs first: most mutations go to them (they are fast to check).
    programs.sort_by_cached_key(|(_, v)| v.to_string().len());
    Seeds { messages, programs }
}

/// The kinds of execution, in the order they rotate.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Structured,
    Mutated,
    Verify,
    Program,
}

/// Milliseconds since the run started at which the current execution began (0: idle).
static EXEC_START: AtomicU64 = AtomicU64::new(0);
/// The worker thread's CPU time (microseconds) when the current execution began.
static EXEC_CPU_START: AtomicU64 = AtomicU64::new(0);
/// The worker thread's CPU clock ([`cpu::Clock::id`]); `i64::MIN` until the worker starts.
static WORKER_CLOCK: AtomicI64 = AtomicI64::new(i64::MIN);

fn main() {
    let opts = parse_opts();
    let seeds = seeds(&opts.root);
    if seeds.messages.is_empty() {
        eprintln!(
            "dimguard-fuzzer: no seed messages under {} (pass --root REPO)",
            opts.root.display()
        );
        std::process::exit(2);
    }
    // Panics are findings: keep their messages for the report, not on stderr.
    std::panic::set_hook(Box::new(|info| {
        alloc::note(&format!("{info}"));
    }));
    alloc::set_limit(opts.mem_mb << 20);
    dimguard_solver::budget::Counting::activate();
    let t0 = Instant::now();
    let hang = Duration::from_millis(opts.time_ms + opts.grace_ms);
    std::thread::spawn(move || watchdog(t0, hang));
    // Deeply nested guards recurse; the CLI gives its work the same roomy stack.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || {
            WORKER_CLOCK.store(cpu::Clock::current().id(), Ordering::Relaxed);
            run(&opts, &seeds, t0)
        })
        .expect("worker thread");
    let found = worker.join().unwrap_or(1);
    std::process::exit(if found > 0 { 1 } else { 0 });
}

/// Aborts the run when the current execution has used more than `hang` of CPU time, or ten
/// times that of wall-clock time (a thread blocked forever uses no CPU). CPU time keeps the
/// verdict independent of the machine's load.
fn watchdog(t0: Instant, hang: Duration) {
    let hang_us = hang.as_micros() as u64;
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let start = EXEC_START.load(Ordering::Relaxed);
        let clock = WORKER_CLOCK.load(Ordering::Relaxed);
        if start == 0 || clock == i64::MIN {
            continue;
        }
        let cpu_start = EXEC_CPU_START.load(Ordering::Relaxed);
        let cpu = (cpu::Clock::from_id(clock).now().as_micros() as u64).saturating_sub(cpu_start);
        // Still the same execution (the worker may have moved on while the clock was read).
        if EXEC_START.load(Ordering::Relaxed) != start {
            continue;
        }
        let wall = (t0.elapsed().as_millis() as u64).saturating_sub(start);
        if cpu > hang_us || wall * 1000 > 10 * hang_us {
            alloc::abort_with(&format!(
                "HANG: an execution used {} ms of CPU time ({} ms of wall-clock time), past the budget plus grace of {} ms",
                cpu / 1000,
                wall,
                hang.as_millis()
            ));
        }
    }
}

fn run(opts: &Opts, seeds: &Seeds, t0: Instant) -> u64 {
    std::fs::create_dir_all(&opts.findings).ok();
    let mut found = 0u64;
    let mut counts = [0u64; 4];
    let mut times = [Duration::ZERO; 4];
    let mut slowest = (Duration::ZERO, 0u64);
    let mut most_cpu = (Duration::ZERO, 0u64);
    let clock = cpu::Clock::current();
    let overrun =
        Duration::from_millis(opts.time_ms + opts.overrun_ms.unwrap_or(opts.time_ms.max(100)));
    let mut peak_mem = 0usize;
    let end = opts.from + opts.execs;
    for exec in opts.from..end {
        let mut src = Source::new(opts.seed, exec);
        // The seed corpus and the fixtures go first, unmutated, then the rotation.
        let (kind, input) = if (exec as usize) < seeds.messages.len() {
            (
                Kind::Mutated,
                Input::Message(seeds.messages[exec as usize].clone()),
            )
        } else {
            draw(&mut src, seeds, exec)
        };
        counts[kind as usize] += 1;
        if opts.print {
            println!("{}", input.describe());
            continue;
        }
        alloc::set_current(&format!(
            "exec {exec} (reproduce: --seed {} --from {exec} --execs 1)\n{}",
            opts.seed,
            input.describe()
        ));
        alloc::reset_peak();
        let live_before = alloc::live();
        cpu::take_library();
        EXEC_CPU_START.store(clock.now().as_micros() as u64, Ordering::Relaxed);
        EXEC_START.store(t0.elapsed().as_millis().max(1) as u64, Ordering::Relaxed);
        let started = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _b = budget::enter(Budget {
                time: Some(Duration::from_millis(opts.time_ms)),
                memory: live_before + (opts.mem_budget_mb << 20),
                ..Budget::default()
            });
            oracle::check(&input, opts.time_ms as u32)
        }));
        let took = started.elapsed();
        let library = cpu::take_library();
        times[kind as usize] += took;
        EXEC_START.store(0, Ordering::Relaxed);
        if library > most_cpu.0 {
            most_cpu = (library, exec);
        }
        peak_mem = peak_mem.max(alloc::peak());
        if opts.slow_ms > 0 && took.as_millis() as u64 >= opts.slow_ms {
            eprintln!(
                "slow: exec {exec} ({kind:?}) took {} ms ({} ms of CPU time in the library)",
                took.as_millis(),
                library.as_millis()
            );
        }
        if took > slowest.0 {
            slowest = (took, exec);
        }
        let finding = match outcome {
            Ok(Ok(())) => None,
            Ok(Err(wrong)) => Some(format!("WRONG ANSWER: {wrong}")),
            Err(_) => Some(format!("PANIC: {}", alloc::take_note())),
        };
        let held = alloc::peak().saturating_sub(live_before);
        let allowed = (opts.mem_budget_mb << 20) + (opts.mem_budget_mb << 18);
        let finding = finding.or_else(|| {
            (held > allowed).then(|| {
                format!(
                    "OVER MEMORY: the execution held {} MiB at its peak, past the memory budget of {} MiB plus a quarter",
                    held >> 20,
                    opts.mem_budget_mb
                )
            })
        });
        let finding = finding.or_else(|| {
            (library > overrun).then(|| {
                format!(
                    "OVER BUDGET: the library used {} ms of CPU time ({} ms of wall-clock time), past the time budget of {} ms plus {} ms",
                    library.as_millis(),
                    took.as_millis(),
                    opts.time_ms,
                    (overrun - Duration::from_millis(opts.time_ms)).as_millis()
                )
            })
        });
        if let Some(f) = finding {
            found += 1;
            let file = opts
                .findings
                .join(format!("seed{}-exec{exec}.txt", opts.seed));
            let body = format!(
                "{f}\nreproduce: cargo run --release -p dimguard-fuzzer -- --seed {} --from {exec} --execs 1\n--- input ({kind:?}) ---\n{}",
                opts.seed,
                input.describe()
            );
            std::fs::write(&file, &body).ok();
            eprintln!("finding at exec {exec}: {f} ({})", file.display());
        }
        if opts.progress > 0 && (exec + 1 - opts.from) % opts.progress == 0 {
            eprintln!(
                "{} executions, {found} findings, {:.0} s",
                exec + 1 - opts.from,
                t0.elapsed().as_secs_f64()
            );
        }
    }
    let ms = |i: usize| times[i].as_secs_f64() * 1000.0 / counts[i].max(1) as f64;
    println!(
        "dimguard-fuzzer: seed {}, executions {} (structured {} at {:.2} ms, mutated {} at {:.2} ms, verify {} at {:.2} ms, program {} at {:.2} ms), findings {found}, time {:.1} s, slowest execution {} ms (#{}), most library CPU time {} ms (#{}), peak memory of one execution {} MiB",
        opts.seed,
        opts.execs,
        counts[0],
        ms(0),
        counts[1],
        ms(1),
        counts[2],
        ms(2),
        counts[3],
        ms(3),
        t0.elapsed().as_secs_f64(),
        slowest.0.as_millis(),
        slowest.1,
        most_cpu.0.as_millis(),
        most_cpu.1,
        peak_mem >> 20
    );
    found
}

fn draw(src: &mut Source, seeds: &Seeds, exec: u64) -> (Kind, Input) {
    match exec % 100 {
        0 if !seeds.programs.is_empty() => {
            // Small programs nine times in ten.
            let n = seeds.programs.len();
            let i = if src.one_in(10) {
                src.below(n)
            } else {
                src.below(n.min(2))
            };
            let mut v = seeds.programs[i].1.clone();
            gen::mutate_json(src, &mut v);
            (
                Kind::Program,
                Input::Program(serde_json::to_vec(&v).unwrap_or_default()),
            )
        }
        1 | 2 => {
            let (m, dims) = gen::message(src);
            let s = gen::spec(src, &dims);
            (Kind::Verify, Input::Verify(m, s))
        }
        n if n % 2 == 0 => {
            let (m, _) = gen::message(src);
            (Kind::Structured, Input::Message(m))
        }
        _ => {
            let base = &seeds.messages[src.below(seeds.messages.len())];
            (Kind::Mutated, Input::Message(gen::mutate_text(src, base)))
        }
    }
}
