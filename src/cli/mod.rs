//! The command-line tool: argument parsing, one function per subcommand, and the one error type
//! ([`Failure`]) every subcommand returns, mapped to exit codes in `main`. Binary-private: the
//! library API is the workspace's crates.

mod error;
mod html;
mod input;
mod render;

use clap::{Parser, Subcommand};
use dimguard::solver::diagnose::{self, Options};
pub use error::Failure;
use error::{input as bad_input, io, solver};
use input::{parse_examples, read_input};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

/// Exact answers for PyTorch dynamic shapes.
#[derive(Parser)]
#[command(
    name = "dimguard",
    version,
    about,
    long_about = None,
    after_help = "JSON output (--json) follows the contract in docs/CONTRACT.md. Exit codes: 0 understood (even when no size works), 1 a file could not be read or written, 2 the input was not understood, 3 profile --select found no profile, 70 internal error."
)]
pub struct Cli {
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
        /// File with the error text (a whole traceback is fine), or a structured trace
        /// (`TORCH_TRACE=DIR`: the directory or one of its files); `-` or nothing reads stdin.
        file: Option<PathBuf>,
        /// Print JSON (the contract: docs/CONTRACT.md) instead of the human report.
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
        /// The range of a size the text gives none for (a `Guard failed`, a solver crash), or to
        /// override the text's: NAME=LO..HI, NAME a dimension's name, torch symbol (`s53`) or
        /// source. Repeatable.
        #[arg(long, value_name = "NAME=LO..HI")]
        range: Vec<String>,
        /// Also write the report as one self-contained HTML page (plots of the accepted sizes,
        /// guards by source line, the spec with a copy button).
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Read an exported program (.pt2 or its model.json): which input sizes it really accepts
    /// versus what it claims, a corrected spec, and shape-propagation findings.
    Check {
        /// The `.pt2` archive or `model.json`.
        model: PathBuf,
        /// Print JSON (the contract: docs/CONTRACT.md).
        #[arg(long)]
        json: bool,
        /// Write the operator graph as Graphviz DOT, edges labeled with symbolic shapes.
        #[arg(long, value_name = "FILE")]
        dot: Option<PathBuf>,
        /// Also list every symbolic intermediate size with its exact values.
        #[arg(long)]
        sizes: bool,
        /// Also write the report as one self-contained HTML page.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
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
    },
    /// Benchmark the GPU normalization kernels (needs an NVIDIA GPU): time and share of the
    /// device's copy bandwidth for each layer, shape, type and parameter kind, timed through CUDA
    /// graphs (docs/NORM.md, docs/PERFORMANCE.md).
    NormBench {
        /// Runs captured per CUDA graph.
        #[arg(long, default_value_t = 20)]
        iters: usize,
        /// Timed graph replays per cell (the median is reported).
        #[arg(long, default_value_t = 15)]
        samples: usize,
        /// Also write one JSON line per cell here (the input of
        /// tools/device/norm_bench_torch.py, which times PyTorch eager and torch.compile).
        #[arg(long, value_name = "FILE")]
        json: Option<PathBuf>,
    },
    /// Check a dynamic_shapes spec against guards: sound (with a Z3 proof) or counterexamples, and
    /// the maximal sound spec.
    Verify {
        /// An error message, or a file with one guard per line.
        guards: PathBuf,
        /// Python as written for dynamic_shapes: `_h = Dim('_h', min=17, max=270)`, `h = 8*_h`,
        /// optionally `dynamic_shapes = {...}`. `-` reads it from standard input.
        spec: PathBuf,
        /// Print JSON (the contract: docs/CONTRACT.md).
        #[arg(long)]
        json: bool,
        /// Time limit for one Z3 query, in milliseconds.
        #[arg(long, default_value_t = dimguard::prove::certify::TIMEOUT_MS)]
        z3_timeout_ms: u32,
    },
}

/// Runs the command line.
pub fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::NormBench {
            iters,
            samples,
            json,
        } => dimguard::norm::bench::print_table(iters, samples, json.as_deref())
            .map_err(|e| bad_input(format!("{e} (norm-bench needs an NVIDIA GPU)"))),
        Command::Profile {
            source,
            dim,
            example,
            format,
            profiles,
            select,
        } => profile(source.as_ref(), &dim, &example, &format, profiles, &select),
        Command::Check {
            model,
            json,
            dot,
            sizes,
            html,
        } => check(&model, json, dot.as_ref(), sizes, html.as_ref()),
        Command::Verify {
            guards,
            spec,
            json,
            z3_timeout_ms,
        } => verify(&guards, &spec, json, z3_timeout_ms),
        Command::Diagnose {
            file,
            json,
            example,
            z3,
            z3_timeout_ms,
            range,
            html,
        } => {
            let text = read_input(file.as_ref())?;
            let mut opts = Options {
                examples: parse_examples(&example)?,
                ..Options::default()
            };
            let ranges = range
                .iter()
                .map(|r| dimguard::solver::forms::parse_range_arg(r))
                .collect::<Result<Vec<_>, String>>()
                .map_err(Failure::Input)?;
            let mut msg = diagnose::read(&text, &mut opts).map_err(|e| solver(&e))?;
            dimguard::solver::forms::apply_ranges(&mut msg, &ranges).map_err(|e| solver(&e))?;
            let mut report = diagnose::diagnose(&msg, &opts);
            let mode = match z3 {
                Z3Mode::Auto => Some(dimguard::prove::Mode::Auto),
                Z3Mode::Always => Some(dimguard::prove::Mode::Always),
                Z3Mode::Never => None,
            };
            if let Some(mode) = mode {
                dimguard::prove::certify(&mut report, &msg, mode, z3_timeout_ms);
            }
            let input = file.unwrap_or_else(|| PathBuf::from("standard input"));
            write_html(&report, html.as_ref(), &input)?;
            print_report(&report, json, render::human);
            Ok(())
        }
    }
}

fn check(
    model: &Path,
    json: bool,
    dot: Option<&PathBuf>,
    sizes: bool,
    html: Option<&PathBuf>,
) -> Result<(), Failure> {
    let program = dimguard::graph::load(model).map_err(bad_input)?;
    if let Some(path) = dot {
        let g = dimguard::graph::ProgramGraph::build(&program).map_err(bad_input)?;
        std::fs::write(path, g.dot())
            .map_err(|e| io(format!("cannot write {}: {e}", path.display())))?;
    }
    // Z3 decides linked groups too wide to enumerate (products of unbounded sizes).
    let z3 = dimguard::prove::box_prover(dimguard::prove::certify::TIMEOUT_MS);
    let report = dimguard::graph::check_with(&program, sizes, Some(&z3)).map_err(bad_input)?;
    write_html(&report, html, model)?;
    print_report(&report, json, render::check);
    Ok(())
}

fn profile(
    source: Option<&PathBuf>,
    dims: &[String],
    examples: &[String],
    format: &str,
    k: usize,
    select: &[String],
) -> Result<(), Failure> {
    let text = match source {
        Some(p) => Some(
            String::from_utf8_lossy(
                &std::fs::read(p).map_err(|e| io(format!("cannot read {}: {e}", p.display())))?,
            )
            .into_owned(),
        ),
        None => None,
    };
    let specs =
        dimguard::profile_cli::inputs(text.as_deref(), source.map(|p| p.as_path()), dims, examples)
            .map_err(bad_input)?;
    let set = dimguard::trt::ProfileSet::build(&specs, k.clamp(1, 64)).map_err(bad_input)?;
    if select.is_empty() {
        print!(
            "{}",
            dimguard::profile_cli::render(&set, format, source.map(|p| p.as_path()))
        );
        return Ok(());
    }
    let shapes = select
        .iter()
        .map(|s| dimguard::profile_cli::parse_shape(s))
        .collect::<Result<Vec<(String, Vec<i128>)>, String>>()
        .map_err(bad_input)?;
    let refs: Vec<(&str, Vec<i128>)> = shapes
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    let i = set
        .select(&refs)
        .map_err(|e| Failure::NoProfile(e.to_string()))?;
    println!("profile {i}");
    Ok(())
}

fn verify(guards: &PathBuf, spec: &PathBuf, json: bool, timeout: u32) -> Result<(), Failure> {
    let g = read_input(Some(guards))?;
    let s = read_input(Some(spec))?;
    let guard_set = dimguard::prove::verify::GuardSet::read(&g).map_err(|e| solver(&e))?;
    let spec = dimguard::solver::spec::read(&s);
    if spec.dims.is_empty() {
        return Err(bad_input(
            "the spec defines no dimension: expected lines such as `_h = Dim('_h', min=17, max=270)` and `h = 8*_h`",
        ));
    }
    let report = dimguard::prove::verify::verify(&guard_set, &spec, timeout);
    if report.dims.is_empty() {
        return Err(bad_input("no dimension of the spec matches a size in the guards (match by name, or map sources with dynamic_shapes = {...})"));
    }
    print_report(&report, json, render::verify);
    Ok(())
}

/// Writes `report` as an HTML page to `path`, when given; `input` names what was read.
fn write_html<R: serde::Serialize>(
    report: &R,
    path: Option<&PathBuf>,
    input: &Path,
) -> Result<(), Failure> {
    let Some(path) = path else { return Ok(()) };
    let value = serde_json::to_value(report).map_err(|e| io(format!("report to JSON: {e}")))?;
    let title = input.file_name().map_or_else(
        || input.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    std::fs::write(path, html::render(&value, &title))
        .map_err(|e| io(format!("cannot write {}: {e}", path.display())))
}

/// Prints a report as the contract's JSON or, for people, through `human` (in colour when stdout
/// is a terminal and `NO_COLOR` is unset).
fn print_report<R: serde::Serialize>(report: &R, json: bool, human: fn(&R, bool) -> String) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(report).expect("report serializes")
        );
    } else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        print!("{}", human(report, color));
    }
}
