//! The command-line tool: argument parsing, one function per subcommand, and the one error type
//! ([`Failure`]) every subcommand returns, mapped to exit codes in `main`. Binary-private: the
//! library API is the workspace's crates.

mod error;
mod input;
mod render;

use clap::{Parser, Subcommand};
pub use error::{emit, Failure};
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
    /// Time budget of the whole command, in seconds. Past it, what is left is reported
    /// undecided with the reason (a partial answer, said so in the text and in JSON's `budget`).
    /// 20 s by default: what a user at a terminal waits for (most answers take well under a
    /// second; raise it for a partial answer you want completed).
    #[arg(long, global = true, default_value_t = 20.0, value_name = "SECONDS")]
    time_budget: f64,
    /// Print progress on stderr (what the command is doing, how far, how much of the time
    /// budget is spent) every two seconds once it runs past two seconds. On by default when
    /// stderr is a terminal and the output is not JSON.
    #[arg(long, global = true)]
    progress: bool,
    /// Output budget in bytes. No computed set may have more pieces than this budget can print
    /// (so memory stays bounded); past it, text is cut with a note and JSON drops `segments`
    /// lists (counts, min and max stay), saying so in `budget`.
    #[arg(long, global = true, default_value_t = 16 << 20, value_name = "BYTES")]
    output_budget: usize,
    /// Memory budget: bytes the process may hold (`1G`, `512M` or a number). Past it, the work
    /// that grows sets and enumerations stops and what is left is reported undecided with the
    /// reason, as for the time budget.
    #[arg(long, global = true, default_value = "1G", value_name = "BYTES", value_parser = parse_memory)]
    memory_budget: usize,
}

fn parse_memory(s: &str) -> Result<usize, Failure> {
    match dimguard::solver::budget::parse_bytes(s) {
        Some(n) if n >= 16 << 20 => Ok(n),
        Some(_) => Err(bad_input("the memory budget must be at least 16M")),
        None => Err(bad_input(format!(
            "`{s}` is not a byte count (a number, or one with K, M or G: `512M`, `2G`)"
        ))),
    }
}

impl Cli {
    /// Whether the command prints JSON (errors then also go to stdout as a JSON object).
    pub fn json(&self) -> bool {
        match &self.command {
            Command::Diagnose { json, .. }
            | Command::Check { json, .. }
            | Command::Verify { json, .. } => *json,
            Command::Profile { format, .. } => format == "json",
            Command::NormBench { .. } => false,
        }
    }
}

/// The budget the command runs under, and what the output may hold.
#[derive(Clone, Copy)]
struct Limits {
    time: f64,
    output: usize,
    memory: usize,
}

static LIMITS: std::sync::OnceLock<Limits> = std::sync::OnceLock::new();

/// Progress lines on stderr while a command runs past two seconds; stops when dropped.
struct Progress {
    done: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Progress {
    fn start(budget_s: f64) -> Progress {
        use std::sync::atomic::Ordering;
        let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = done.clone();
        dimguard::solver::budget::progress("reading the input", 0, 0);
        let t0 = std::time::Instant::now();
        std::thread::spawn(move || {
            let mut next = std::time::Duration::from_secs(2);
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if t0.elapsed() < next || flag.load(Ordering::Relaxed) {
                    continue;
                }
                next += std::time::Duration::from_secs(2);
                let Some((step, k, n)) = dimguard::solver::budget::current_step() else {
                    continue;
                };
                let how_far = if n > 0 {
                    format!(" ({} of {n})", k + 1)
                } else {
                    String::new()
                };
                eprintln!(
                    "dimguard: {step}{how_far}; {:.0} s of the {budget_s} s time budget",
                    t0.elapsed().as_secs_f64()
                );
            }
        });
        Progress { done }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::Relaxed);
    }
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
        /// Your own `dynamic_shapes` Python (`h = Dim('h', min=.., max=..)` lines and the
        /// `dynamic_shapes = {...}` dict): the printed block is then your spec with the diagnosed
        /// dimensions narrowed, every other input and dimension kept, shared Dims still shared.
        #[arg(long, value_name = "FILE")]
        spec: Option<PathBuf>,
        /// Also print up to N specs that together accept every valid size (one `Dim` holds one
        /// progression; the valid sizes are often a union of them): one export, or one
        /// TensorRT profile, per spec. JSON: `cover`.
        #[arg(long, value_name = "N")]
        cover: Option<usize>,
        /// The paste block's form: `dim` (`Dim`s and a `dynamic_shapes` dict) or `shapesspec`
        /// (torch 2.15's `ShapesSpec` with `assumptions=[...]`). Default: `shapesspec` when the
        /// text is a ShapesSpec failure or `--spec` is a ShapesSpec, else `dim`.
        #[arg(long, value_name = "dim|shapesspec")]
        format: Option<String>,
        /// The exported program (`.pt2` or its model.json) behind a Torch-TensorRT "has no max
        /// bound" error: each size the text names without a max bound gets the bound the
        /// program implies (its recorded range for that symbol), or is said to have none.
        #[arg(long, value_name = "MODEL")]
        program: Option<PathBuf>,
    },
    /// Read an exported program (.pt2 or its model.json): which input sizes it really accepts
    /// versus what it claims, a corrected spec, and shape-propagation findings. An ONNX file
    /// written by `dimguard.onnx.export`: the sizes it accepts, from the report stored in it.
    Check {
        /// The `.pt2` archive, `model.json`, a `dimguard.Dispatch` archive or an `.onnx` file.
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
        /// Instead of the report, say whether the program accepts inputs of these shapes
        /// (NAME:2x3x224x230, one per input, repeatable): accepted, rejected (the condition that
        /// fails) or undecided (why), from every condition the program checks.
        #[arg(long, value_name = "NAME:SHAPE")]
        at: Vec<String>,
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
        /// With a message: your own `dynamic_shapes` Python, so every input given with --example
        /// is covered (a second image sharing the first one's Dims, which the message never names).
        #[arg(long, value_name = "FILE")]
        spec: Option<PathBuf>,
        /// Instead of buckets, one profile per piece of a cover: up to N profiles, each holding
        /// one progression of accepted sizes per dynamic dimension (as `diagnose --cover N`),
        /// together serving as many accepted sizes as N progressions can; `--select` sends a
        /// shape to the profile whose piece holds it.
        #[arg(long, value_name = "N", conflicts_with = "profiles")]
        cover: Option<usize>,
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
        /// Also write the report as one self-contained HTML page.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
}

/// `dimguard norm-bench`: the GPU normalization benchmark (docs/NORM.md).
#[cfg(feature = "cuda")]
fn norm_bench(iters: usize, samples: usize, json: Option<&std::path::Path>) -> Result<(), Failure> {
    dimguard::norm::bench::print_table(iters, samples, json)
        .map_err(|e| bad_input(format!("{e} (norm-bench needs an NVIDIA GPU)")))
}

/// Without the `cuda` feature the binary has no GPU code: say how to get it.
#[cfg(not(feature = "cuda"))]
fn norm_bench(_: usize, _: usize, _: Option<&std::path::Path>) -> Result<(), Failure> {
    Err(bad_input(
        "this dimguard was built without the `cuda` feature, so it has no GPU kernels \
         (norm-bench needs an NVIDIA GPU and a build with `--features cuda`, the default)",
    ))
}

/// The budgets `--time-budget`, `--output-budget` and `--memory-budget` give, checked.
fn limits(cli: &Cli) -> Result<Limits, Failure> {
    if !(cli.time_budget > 0.0 && cli.time_budget.is_finite()) {
        return Err(bad_input(
            "--time-budget must be a positive number of seconds",
        ));
    }
    if cli.output_budget < 4096 {
        return Err(bad_input("--output-budget must be at least 4096 bytes"));
    }
    Ok(Limits {
        time: cli.time_budget,
        output: cli.output_budget,
        memory: cli.memory_budget,
    })
}

/// Runs the command line.
pub fn run(cli: Cli) -> Result<(), Failure> {
    let limits = limits(&cli)?;
    let _ = LIMITS.set(limits);
    let _progress = (cli.progress
        || (!cli.json() && std::io::IsTerminal::is_terminal(&std::io::stderr())))
    .then(|| Progress::start(limits.time));
    let _budget = dimguard::solver::budget::enter(dimguard::solver::budget::Budget {
        time: Some(std::time::Duration::from_secs_f64(limits.time)),
        // A piece prints as about 80 bytes of JSON.
        pieces: (limits.output / 80).max(1000),
        memory: limits.memory,
    });
    match cli.command {
        Command::NormBench {
            iters,
            samples,
            json,
        } => norm_bench(iters, samples, json.as_deref()),
        Command::Profile {
            source,
            dim,
            example,
            format,
            profiles,
            select,
            spec,
            cover,
        } => {
            if cover == Some(0) {
                return Err(bad_input("--cover must be at least 1"));
            }
            let sheet = spec.as_ref().map(read_spec).transpose()?;
            profile(
                source.as_ref(),
                &dim,
                &example,
                &format,
                Buckets { k: profiles, cover },
                &select,
                sheet.as_ref(),
            )
        }
        Command::Check {
            model,
            json,
            dot,
            sizes,
            html,
            at,
        } => check(&model, json, dot.as_ref(), sizes, html.as_ref(), &at),
        Command::Verify {
            guards,
            spec,
            json,
            z3_timeout_ms,
            html,
        } => verify(&guards, &spec, json, z3_timeout_ms, html.as_ref()),
        Command::Diagnose {
            file,
            json,
            example,
            z3,
            z3_timeout_ms,
            range,
            html,
            spec,
            cover,
            format,
            program,
        } => {
            if cover == Some(0) {
                return Err(bad_input("--cover must be at least 1"));
            }
            let text = read_input(file.as_ref())?;
            let paste = paste_options(spec.as_ref(), format.as_deref())?;
            let ranges = range
                .iter()
                .map(|r| dimguard::readers::forms::parse_range_arg(r))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| Failure::Input(e.to_string()))?;
            let examples = dimguard::api::Examples {
                by_name: parse_examples(&example)?,
                shapes: Vec::new(),
                ranges,
            };
            let mode = match z3 {
                Z3Mode::Auto => Some(dimguard::prove::Mode::Auto),
                Z3Mode::Always => Some(dimguard::prove::Mode::Always),
                Z3Mode::Never => None,
            };
            let (mut report, _) =
                dimguard::api::diagnose_with_spec(&text, &examples, mode, z3_timeout_ms, &paste)
                    .map_err(|e| solver(&e))?;
            if let Some(model) = &program {
                program_bounds(&mut report, model)?;
            }
            let input = file.unwrap_or_else(|| PathBuf::from("standard input"));
            let traced = dimguard::api::traced(&report, &examples);
            let covered = render::Covered {
                cover: cover.map(|n| dimguard::solver::cover(&report, &traced, n)),
                report,
            };
            write_html(
                || dimguard::html::Page::diagnosis(&covered.report, covered.cover.as_ref()),
                html.as_ref(),
                &input,
            )?;
            print_report(&covered, json, render::covered)
        }
    }
}

/// What `diagnose` pastes the spec into: `--spec` read as a torch 2.15 `ShapesSpec` or as a
/// `dynamic_shapes` sheet to merge the suggestions into, and `--format` (`dim`, `shapesspec`,
/// or chosen from the text).
fn paste_options(
    spec: Option<&PathBuf>,
    format: Option<&str>,
) -> Result<dimguard::commands::diagnose::Paste, Failure> {
    let spec_text = spec.map(|p| read_input(Some(p))).transpose()?;
    let shapes = match &spec_text {
        Some(t) if dimguard::readers::spec::shapes::is_shapes_spec(t) => Some(
            dimguard::readers::spec::shapes::ShapesSpec::read(t).map_err(|e| {
                bad_input(format!("--spec {}: {e}", spec.expect("given").display()))
            })?,
        ),
        _ => None,
    };
    let sheet = match (spec, &shapes) {
        (Some(p), None) => Some(read_spec(p)?),
        _ => None,
    };
    let format = match format {
        None => dimguard::commands::diagnose::Format::Auto,
        Some("dim") => dimguard::commands::diagnose::Format::Dim,
        Some("shapesspec") => dimguard::commands::diagnose::Format::ShapesSpec,
        Some(other) => {
            return Err(bad_input(format!(
                "--format {other}: expected `dim` or `shapesspec`"
            )))
        }
    };
    Ok(dimguard::commands::diagnose::Paste {
        format,
        merge: sheet,
        shapes,
    })
}

/// `diagnose --program`: the bound the program at `model` gives each size Torch-TensorRT found
/// no max bound for (or a note that the program was not needed).
fn program_bounds(
    report: &mut dimguard::solver::report::Report,
    model: &Path,
) -> Result<(), Failure> {
    let label = model.display().to_string();
    let p = dimguard::graph::program::load(model).map_err(bad_input)?;
    if report.missing_bounds.is_empty() {
        report.notes.push(format!(
            "--program {label}: the text names no size Torch-TensorRT found no max bound for, so the program was not needed"
        ));
    }
    for mb in &mut report.missing_bounds {
        mb.program = Some(p.missing_bound(&mb.symbol, &label));
    }
    Ok(())
}

fn check(
    model: &Path,
    json: bool,
    dot: Option<&PathBuf>,
    sizes: bool,
    html: Option<&PathBuf>,
    at: &[String],
) -> Result<(), Failure> {
    let label = model.display().to_string();
    let bytes =
        std::fs::read(model).map_err(|e| io(format!("cannot read {}: {e}", model.display())))?;
    if dimguard::graph::onnx::is_onnx(&bytes, &label) {
        if dot.is_some() || sizes {
            return Err(bad_input(
                "--dot and --sizes read a torch program's graph; an ONNX file is checked from the report dimguard.onnx.export stored in it",
            ));
        }
        let report = dimguard::graph::onnx::check(&bytes, &label).map_err(bad_input)?;
        if !at.is_empty() {
            let shapes = at_shapes(at, &report.onnx.inputs)?;
            let facts = dimguard::graph::verdict::Facts::from(&report.check);
            let v = dimguard::graph::verdict(&facts, &shapes);
            return print_report(&v, json, render::verdict);
        }
        write_html(|| dimguard::html::Page::check(&report.check), html, model)?;
        return print_report(&report, json, render::onnx);
    }
    if let Some(programs) =
        dimguard::graph::program::dispatch_programs(&bytes, &label).map_err(bad_input)?
    {
        if dot.is_some() || html.is_some() {
            return Err(bad_input(
                "--dot and --html draw one program: check a dispatch archive's programs one at a time",
            ));
        }
        let report = dimguard::api::check_dispatch(programs, &label, sizes).map_err(bad_input)?;
        return print_report(&report, json, render::dispatch);
    }
    let program = dimguard::graph::load_bytes(bytes, &label).map_err(bad_input)?;
    // One graph for the drawing and the check. Z3 decides linked groups too wide to
    // enumerate (products of unbounded sizes).
    let g = dimguard::graph::ProgramGraph::build(&program).map_err(bad_input)?;
    if let Some(path) = dot {
        std::fs::write(path, g.dot())
            .map_err(|e| io(format!("cannot write {}: {e}", path.display())))?;
    }
    if !at.is_empty() {
        // The program's conditions evaluated at the shapes: no set is solved.
        let shapes = at_shapes(at, &[])?;
        let facts = dimguard::commands::check::facts(&program, &g).map_err(bad_input)?;
        let v = dimguard::graph::verdict(&facts, &shapes);
        return print_report(&v, json, render::verdict);
    }
    let report = dimguard::api::check_program_graph(&program, &g, sizes).map_err(bad_input)?;
    write_html(|| dimguard::html::Page::check(&report), html, model)?;
    print_report(&report, json, render::check)
}

/// `--at NAME:SHAPE` arguments by input name; an ONNX file's input name is taken to the program's
/// input it stands for (`inputs`).
fn at_shapes(
    at: &[String],
    inputs: &[dimguard::solver::report::OnnxInputShape],
) -> Result<std::collections::BTreeMap<String, Vec<i128>>, Failure> {
    let mut shapes = std::collections::BTreeMap::new();
    for s in at {
        let (name, shape) = dimguard::commands::profile::parse_shape(s).map_err(bad_input)?;
        let name = inputs
            .iter()
            .find(|i| i.name == name)
            .map_or(name, |i| i.input.clone());
        shapes.insert(name, shape);
    }
    Ok(shapes)
}

/// How `profile` splits accepted sets: `k` buckets per dimension, or a cover of `N` pieces.
struct Buckets {
    k: usize,
    cover: Option<usize>,
}

fn profile(
    source: Option<&PathBuf>,
    dims: &[String],
    examples: &[String],
    format: &str,
    buckets: Buckets,
    select: &[String],
    spec: Option<&dimguard::readers::Sheet>,
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
    let inputs = dimguard::commands::profile::inputs(
        text.as_deref(),
        source.map(|p| p.as_path()),
        dims,
        examples,
        spec,
    )
    .map_err(bad_input)?;
    let set =
        dimguard::commands::profile::build(&inputs, buckets.k, buckets.cover).map_err(bad_input)?;
    if select.is_empty() {
        if matches!(format, "trtexec" | "polygraphy") {
            for n in dimguard::commands::profile::notes(&inputs) {
                eprintln!("dimguard: note: {n}");
            }
        }
        return emit(&dimguard::commands::profile::render(&set, format, &inputs));
    }
    let shapes = select
        .iter()
        .map(|s| dimguard::commands::profile::parse_shape(s))
        .collect::<Result<Vec<(String, Vec<i128>)>, _>>()
        .map_err(bad_input)?;
    let refs: Vec<(&str, Vec<i128>)> = shapes
        .iter()
        .map(|(n, v)| (n.as_str(), v.clone()))
        .collect();
    let i = dimguard::commands::profile::select(&set, &inputs, &refs)
        .map_err(|e| Failure::NoProfile(e.to_string()))?;
    emit(&format!("profile {i}\n"))
}

/// Reads `--spec FILE`: the user's own `dynamic_shapes` Python.
fn read_spec(path: &PathBuf) -> Result<dimguard::readers::Sheet, Failure> {
    let text = read_input(Some(path))?;
    dimguard::readers::spec::sheet(&text)
        .map_err(|e| bad_input(format!("--spec {}: {e}", path.display())))
}

fn verify(
    guards: &PathBuf,
    spec: &PathBuf,
    json: bool,
    timeout: u32,
    html: Option<&PathBuf>,
) -> Result<(), Failure> {
    use dimguard::commands::verify::InputError;
    let g = read_input(Some(guards))?;
    let s = read_input(Some(spec))?;
    let report = dimguard::commands::verify::verify(&g, &s, timeout).map_err(|e| match e {
        InputError::Read(e) => solver(&e),
        other => bad_input(other.to_string()),
    })?;
    write_html(|| dimguard::html::Page::verify(&report), html, guards)?;
    print_report(&report, json, render::verify)
}

/// Writes the page of a report (`page` makes it) to `path`, when given; `input` names what was
/// read.
fn write_html(
    page: impl FnOnce() -> dimguard::html::Page,
    path: Option<&PathBuf>,
    input: &Path,
) -> Result<(), Failure> {
    let Some(path) = path else { return Ok(()) };
    let title = input.file_name().map_or_else(
        || input.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    std::fs::write(path, dimguard::html::render(&page(), &title))
        .map_err(|e| io(format!("cannot write {}: {e}", path.display())))
}

/// Prints a report as the contract's JSON or, for people, through `human` (in colour when stdout
/// is a terminal and `NO_COLOR` is unset), within the output budget. JSON gains a `budget`
/// object: the limits, whether one ran out (`exhausted`: `{"kind", "reason"}` or null; the answer
/// is then partial) and whether `segments` lists were dropped to fit (`truncated`).
fn print_report<R: serde::Serialize>(
    report: &R,
    json: bool,
    human: fn(&R, bool) -> String,
) -> Result<(), Failure> {
    let limits = LIMITS.get().copied().unwrap_or(Limits {
        time: 20.0,
        output: 16 << 20,
        memory: dimguard::solver::budget::DEFAULT_MEMORY,
    });
    let exhausted = dimguard::solver::budget::exhausted();
    if json {
        let mut text =
            serde_json::to_string_pretty(report).map_err(|e| io(format!("report to JSON: {e}")))?;
        let mut truncated = false;
        if text.len() > limits.output {
            // Over budget: every `segments` list goes (through a map, so keys come out sorted).
            let mut value =
                serde_json::to_value(report).map_err(|e| io(format!("report to JSON: {e}")))?;
            drop_segments(&mut value);
            text = serde_json::to_string_pretty(&value).unwrap_or_default();
            truncated = true;
        }
        let budget = serde_json::json!({
            "time_s": limits.time,
            "output_bytes": limits.output,
            "memory_bytes": limits.memory,
            "exhausted": exhausted.map(|e| serde_json::json!({"kind": e.kind(), "reason": e.reason()})),
            "truncated": truncated,
        });
        // The report's own fields keep their order; `budget` is added last.
        if let Some(body) = text.strip_suffix("\n}") {
            let b = serde_json::to_string_pretty(&budget)
                .unwrap_or_default()
                .replace('\n', "\n  ");
            text = format!("{body},\n  \"budget\": {b}\n}}");
        }
        if text.len() > limits.output {
            return Err(bad_input(format!(
                "the JSON report needs {} bytes even without segment lists, more than the output budget of {} (raise it with --output-budget)",
                text.len(),
                limits.output
            )));
        }
        emit(&format!("{text}\n"))
    } else {
        let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
        let mut text = human(report, color);
        if let Some(e) = exhausted {
            text.push_str(&format!("\npartial: {}\n", e.reason()));
        }
        if text.len() > limits.output {
            let mut cut = limits.output;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push_str(&format!(
                "\n… output cut at the output budget of {} bytes (raise it with --output-budget, or use --json)\n",
                limits.output
            ));
        }
        emit(&text)
    }
}

/// Removes every `segments` list (sets keep `count`, `min` and `max`).
fn drop_segments(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.remove("segments");
            o.values_mut().for_each(drop_segments);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(drop_segments),
        _ => {}
    }
}
