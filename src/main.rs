//! The `dimguard` command-line tool (the code is in `cli/`).

mod cli;

use clap::Parser;
use std::process::ExitCode;

/// Every byte the process holds is counted, for the memory term of the budget
/// (`--memory-budget`).
#[global_allocator]
static ALLOC: dimguard::solver::budget::Counting = dimguard::solver::budget::Counting;

fn main() -> ExitCode {
    dimguard::solver::budget::Counting::activate();
    let args = cli::Cli::parse();
    let json = args.json();
    // Deeply nested guards recurse; give the work a roomy stack.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || cli::run(args));
    match worker.map(|h| h.join()) {
        Ok(Ok(Ok(()))) => ExitCode::SUCCESS,
        Ok(Ok(Err(cli::Failure::Closed))) => ExitCode::SUCCESS,
        Ok(Ok(Err(failure))) => {
            eprintln!("dimguard: {failure}");
            if json {
                // Best effort: stdout may be the thing that failed.
                let _ = cli::emit(&format!("{}\n", failure.json()));
            }
            failure.exit_code()
        }
        _ => {
            eprintln!("dimguard: internal error (please report the input that caused it)");
            ExitCode::from(70)
        }
    }
}
