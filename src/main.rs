//! The `dimguard` command-line tool.

use clap::{Parser, Subcommand};
use dimguard::render;
use dimguard::solver::Error;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

/// Exact answers for PyTorch dynamic shapes.
#[derive(Parser)]
#[command(name = "dimguard", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// When Z3 certifies answers.
#[derive(Clone, Copy, clap::ValueEnum)]
enum Z3Mode {
    /// Only answers too large to re-check value by value.
    Auto,
    /// Every suggestion and torch fix.
    Always,
    /// Never (certificates from enumeration only).
    Never,
}

#[derive(Subcommand)]
enum Command {
    /// Read a torch.export dynamic-shape error and print the exact valid sizes and sound Dim specs.
    Diagnose {
        /// File with the error text (a whole traceback is fine); `-` or nothing reads stdin.
        file: Option<PathBuf>,
        /// Print JSON (see CONTRACT.md) instead of the human report.
        #[arg(long)]
        json: bool,
        /// The size the model was traced with: `N` for every dimension, or `NAME=N`. Among equally
        /// large suggestions, one containing it is preferred. Repeatable.
        #[arg(long, value_name = "N|NAME=N")]
        example: Vec<String>,
        /// Which answers Z3 certifies: `auto` (those too large to re-check value by value),
        /// `always`, or `never`.
        #[arg(long, value_enum, default_value_t = Z3Mode::Auto)]
        z3: Z3Mode,
        /// Time limit for one Z3 query, in milliseconds.
        #[arg(long, default_value_t = dimguard::prove::certify::TIMEOUT_MS)]
        z3_timeout_ms: u32,
        /// Your own `dynamic_shapes` Python (`h = Dim('h', min=.., max=..)` lines and the
        /// `dynamic_shapes = {...}` dict): the printed block is then your spec with the diagnosed
        /// dimensions narrowed, every other input and dimension kept, shared Dims still shared.
        #[arg(long, value_name = "FILE")]
        spec: Option<PathBuf>,
    },
    /// Read an exported program (.pt2 or its model.json): which input sizes it really accepts
    /// versus what it claims, a corrected spec, and shape-propagation findings.
    Check {
        /// The `.pt2` archive or `model.json`.
        model: PathBuf,
        /// Print JSON (see CONTRACT.md).
        #[arg(long)]
        json: bool,
        /// Write the operator graph as Graphviz DOT, edges labeled with symbolic shapes.
        #[arg(long, value_name = "FILE")]
        dot: Option<PathBuf>,
        /// Also list every symbolic intermediate size with its exact values.
        #[arg(long)]
        sizes: bool,
    },
    /// TensorRT optimization profiles whose every min/opt/max shape the program accepts.
    Profile {
        /// A `.pt2` archive / `model.json`, or an error message (then give --example for each
        /// input named in it). Optional with --dim.
        source: Option<PathBuf>,
        /// A dynamic dimension by hand: INPUT:INDEX=LO..HI (with --example for the input).
        #[arg(long, value_name = "INPUT:INDEX=LO..HI")]
        dim: Vec<String>,
        /// The traced shape of an input, NAME:1x3x520x960: its rank, static sizes and the opt.
        #[arg(long, value_name = "NAME:SHAPE")]
        example: Vec<String>,
        /// Output format.
        #[arg(long, default_value = "trtexec", value_parser = ["trtexec", "polygraphy", "torch-tensorrt", "json"])]
        format: String,
        /// Buckets per dynamic dimension (disjoint pieces of an accepted set always get their own).
        #[arg(long, default_value_t = 1)]
        profiles: usize,
        /// Instead of printing profiles, say which profile serves this shape (NAME:SHAPE,
        /// repeatable), or why none does and what to do.
        #[arg(long, value_name = "NAME:SHAPE")]
        select: Vec<String>,
        /// With a message: your own `dynamic_shapes` Python, so inputs the message does not name
        /// (a second image sharing the first one's Dims) are covered too.
        #[arg(long, value_name = "FILE")]
        spec: Option<PathBuf>,
    },
    /// Benchmark the GPU normalization kernels (needs an NVIDIA GPU): time, GB/s and share of the
    /// device's copy bandwidth for each layer, shape and type.
    NormBench {
        /// Timed runs per cell.
        #[arg(long, default_value_t = 20)]
        iters: usize,
    },
    /// Check a dynamic_shapes spec against guards: sound (with a Z3 proof) or counterexamples, and
    /// the maximal sound spec.
    Verify {
        /// An error message, or a file with one guard per line.
        guards: PathBuf,
        /// Python as written for dynamic_shapes: `_h = Dim('_h', min=17, max=270)`, `h = 8*_h`,
        /// optionally `dynamic_shapes = {...}`. `-` reads it from standard input.
        spec: PathBuf,
        /// Print JSON (see CONTRACT.md).
        #[arg(long)]
        json: bool,
        /// Time limit for one Z3 query, in milliseconds.
        #[arg(long, default_value_t = dimguard::prove::certify::TIMEOUT_MS)]
        z3_timeout_ms: u32,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Deeply nested guards recurse; give the work a roomy stack.
    let worker = std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(move || run(cli));
    match worker.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            eprintln!("dimguard: internal error (please report the input that caused it)");
            ExitCode::from(70)
        }
    }
}

fn check_cmd(model: &std::path::Path, json: bool, dot: Option<&PathBuf>, sizes: bool) -> ExitCode {
    let program = match dimguard::graph::load(model) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("dimguard: {e}");
            return ExitCode::from(2);
        }
    };
    if let Some(path) = dot {
        match dimguard::graph::ProgramGraph::build(&program) {
            Ok(g) => {
                if let Err(e) = std::fs::write(path, g.dot()) {
                    eprintln!("dimguard: cannot write {}: {e}", path.display());
                    return ExitCode::from(1);
                }
            }
            Err(e) => {
                eprintln!("dimguard: {e}");
                return ExitCode::from(2);
            }
        }
    }
    match dimguard::api::check_program(&program, sizes) {
        Ok(report) => print_report(&report, json, render::check),
        Err(e) => {
            eprintln!("dimguard: {e}");
            ExitCode::from(2)
        }
    }
}

fn profile_cmd(
    source: Option<&PathBuf>,
    dims: &[String],
    examples: &[String],
    format: &str,
    k: usize,
    select: &[String],
    spec: Option<&PathBuf>,
) -> ExitCode {
    let sheet = match spec.map(read_spec).transpose() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dimguard: --spec {e}");
            return ExitCode::from(2);
        }
    };
    let text = match source {
        Some(p) => match std::fs::read(p) {
            Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
            Err(e) => {
                eprintln!("dimguard: cannot read {}: {e}", p.display());
                return ExitCode::from(1);
            }
        },
        None => None,
    };
    let specs = match dimguard::profile_cli::inputs(
        text.as_deref(),
        source.map(|p| p.as_path()),
        dims,
        examples,
        sheet.as_ref(),
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dimguard: {e}");
            return ExitCode::from(2);
        }
    };
    let set = match dimguard::trt::ProfileSet::build(&specs, k.clamp(1, 64)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("dimguard: {e}");
            return ExitCode::from(2);
        }
    };
    if !select.is_empty() {
        let shapes: Result<Vec<(String, Vec<i128>)>, String> = select
            .iter()
            .map(|s| dimguard::profile_cli::parse_shape(s))
            .collect();
        let shapes = match shapes {
            Ok(s) => s,
            Err(e) => {
                eprintln!("dimguard: {e}");
                return ExitCode::from(2);
            }
        };
        let refs: Vec<(&str, Vec<i128>)> = shapes
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect();
        return match set.select(&refs) {
            Ok(i) => {
                println!("profile {i}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("dimguard: {e}");
                ExitCode::from(3)
            }
        };
    }
    print!(
        "{}",
        dimguard::profile_cli::render(&set, format, source.map(|p| p.as_path()))
    );
    ExitCode::SUCCESS
}

fn norm_bench(iters: usize) -> ExitCode {
    match dimguard::trt::norm::bench::print_table(iters) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("dimguard: {e} (norm-bench needs an NVIDIA GPU)");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::NormBench { iters } => norm_bench(iters),
        Command::Profile {
            source,
            dim,
            example,
            format,
            profiles,
            select,
            spec,
        } => profile_cmd(
            source.as_ref(),
            &dim,
            &example,
            &format,
            profiles,
            &select,
            spec.as_ref(),
        ),
        Command::Check {
            model,
            json,
            dot,
            sizes,
        } => check_cmd(&model, json, dot.as_ref(), sizes),
        Command::Verify {
            guards,
            spec,
            json,
            z3_timeout_ms,
        } => verify_cmd(&guards, &spec, json, z3_timeout_ms),
        Command::Diagnose {
            file,
            json,
            example,
            z3,
            z3_timeout_ms,
            spec,
        } => {
            let text = match read_input(file.as_ref()) {
                Ok(t) => t,
                Err(e) => {
                    eprintln!("dimguard: {e}");
                    return ExitCode::from(1);
                }
            };
            let sheet = match spec.as_ref().map(read_spec).transpose() {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("dimguard: --spec {e}");
                    return ExitCode::from(2);
                }
            };
            let examples = match parse_examples(&example) {
                Ok(e) => e,
                Err(e) => {
                    eprintln!("dimguard: {e}");
                    return ExitCode::from(2);
                }
            };
            let examples = dimguard::api::Examples {
                by_name: examples,
                shapes: Vec::new(),
            };
            let mode = match z3 {
                Z3Mode::Auto => Some(dimguard::prove::Mode::Auto),
                Z3Mode::Always => Some(dimguard::prove::Mode::Always),
                Z3Mode::Never => None,
            };
            let result =
                dimguard::api::diagnose_text(&text, &examples, mode, z3_timeout_ms, sheet.as_ref())
                    .map(|(r, _)| r);
            match result {
                Ok(report) => print_report(&report, json, render::human),
                Err(e) => {
                    eprintln!("dimguard: {}", describe_error(&e));
                    ExitCode::from(2)
                }
            }
        }
    }
}

fn verify_cmd(guards: &PathBuf, spec: &PathBuf, json: bool, timeout: u32) -> ExitCode {
    let (g, s) = match (read_input(Some(guards)), read_input(Some(spec))) {
        (Ok(g), Ok(s)) => (g, s),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("dimguard: {e}");
            return ExitCode::from(1);
        }
    };
    let guard_set = match dimguard::prove::verify::GuardSet::read(&g) {
        Ok(gs) => gs,
        Err(e) => {
            eprintln!("dimguard: {}", describe_error(&e));
            return ExitCode::from(2);
        }
    };
    let spec = dimguard::solver::spec::read(&s);
    if spec.dims.is_empty() {
        eprintln!(
            "dimguard: the spec defines no dimension: expected lines such as `_h = Dim('_h', min=17, max=270)` and `h = 8*_h`"
        );
        return ExitCode::from(2);
    }
    let report = dimguard::prove::verify::verify(&guard_set, &spec, timeout);
    if report.dims.is_empty() {
        eprintln!("dimguard: no dimension of the spec matches a size in the guards (match by name, or map sources with dynamic_shapes = {{...}})");
        return ExitCode::from(2);
    }
    print_report(&report, json, render::verify)
}

/// Prints a report as the contract's JSON or, for people, through `human` (in colour when stdout
/// is a terminal and `NO_COLOR` is unset).
fn print_report<R: serde::Serialize>(
    report: &R,
    json: bool,
    human: fn(&R, bool) -> String,
) -> ExitCode {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).expect("report serializes")
        );
    } else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        print!("{}", human(report, color));
    }
    ExitCode::SUCCESS
}

fn read_input(file: Option<&PathBuf>) -> Result<String, String> {
    let mut buf = Vec::new();
    match file {
        Some(p) if p.as_os_str() != "-" => {
            buf = std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        }
        _ => {
            if std::io::stdin().is_terminal() {
                eprintln!(
                    "dimguard: reading the error message from standard input (end with Ctrl-D)"
                );
            }
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| format!("cannot read standard input: {e}"))?;
        }
    }
    // Pasted text may carry stray bytes; read what is valid and say so.
    match String::from_utf8(buf) {
        Ok(s) => Ok(s),
        Err(e) => {
            eprintln!(
                "dimguard: warning: the input is not valid UTF-8; invalid bytes were replaced"
            );
            Ok(String::from_utf8_lossy(e.as_bytes()).into_owned())
        }
    }
}

/// Reads `--spec FILE`: the user's `dynamic_shapes` Python.
fn read_spec(p: &PathBuf) -> Result<dimguard::solver::merge::Sheet, String> {
    let t = read_input(Some(p))?;
    dimguard::solver::spec::sheet(&t).map_err(|e| format!("{}: {e}", p.display()))
}

fn parse_examples(args: &[String]) -> Result<Vec<(Option<String>, i128)>, String> {
    args.iter()
        .map(|a| {
            let (name, n) = match a.split_once('=') {
                Some((k, v)) => (Some(k.trim().to_string()), v),
                None => (None, a.as_str()),
            };
            n.trim()
                .parse::<i128>()
                .map(|v| (name, v))
                .map_err(|_| format!("--example expects N or NAME=N with an integer N, got `{a}`"))
        })
        .collect()
}

fn describe_error(e: &Error) -> String {
    match e {
        Error::Message(_) => format!("{e}"),
        Error::Guard { .. } => format!(
            "{e}\n  = note: if this guard is valid PyTorch output, please report it; dimguard cannot solve what it cannot read"
        ),
        other => other.to_string(),
    }
}
