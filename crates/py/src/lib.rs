//! `dimguard._native`: the Python extension module of the `dimguard` package.
//!
//! Thin: each function runs one of the facade's pipelines ([`dimguard::api`]) on a worker thread
//! with a roomy stack (deeply nested guards recurse), without the GIL, and returns the contract's
//! JSON as a string; the pure-Python package turns it into result objects. Errors become
//! `ValueError` with dimguard's own message (what, where, what to do); a panic becomes a
//! `RuntimeError` asking for a report, never a crash of the interpreter.

use dimguard::api::{self, Examples};
use dimguard::prove::Mode;
use dimguard::readers::Sheet;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Runs `work` on a thread with a 256 MiB stack, without the GIL.
/// The budget every call works within: `(seconds, output bytes)`, set by `set_budget`. The same
/// defaults as the CLI's `--time-budget` and `--output-budget`.
static BUDGET: std::sync::Mutex<(f64, usize, usize)> =
    std::sync::Mutex::new((20.0, 16 << 20, dimguard::solver::budget::DEFAULT_MEMORY));

/// Every byte the extension's work holds is counted, for the memory term of the budget.
#[global_allocator]
static ALLOC: dimguard::solver::budget::Counting = dimguard::solver::budget::Counting;

/// Why a call of the extension failed: raised as `ValueError` with this message.
#[derive(Debug, thiserror::Error)]
enum CallError {
    /// The solver refused an input (a message, a guard, a spec).
    #[error(transparent)]
    Solver(#[from] dimguard::solver::Error),
    /// A guard or size expression that does not parse.
    #[error(transparent)]
    Parse(#[from] dimguard::solver::ParseError),
    /// A program that could not be read or checked.
    #[error(transparent)]
    Graph(#[from] dimguard::graph::Error),
    /// Profiles that could not be built.
    #[error(transparent)]
    Profiles(#[from] dimguard::commands::profile::Error),
    /// Nothing to verify: the guards or the spec do not read, or they do not meet.
    #[error(transparent)]
    Verify(#[from] dimguard::commands::verify::InputError),
    /// A report's JSON that the page cannot draw.
    #[error(transparent)]
    Page(#[from] dimguard::html::PageError),
    /// An argument in JSON (`what` names it) that does not read.
    #[error("{what}: {source}")]
    Json {
        /// The argument.
        what: &'static str,
        /// Why.
        source: serde_json::Error,
    },
    /// A report that does not print as JSON.
    #[error("serializing the report: {0}")]
    Report(serde_json::Error),
    /// A `ShapesSpec` that does not read.
    #[error("shapes_spec: {0}")]
    ShapesSpec(dimguard::solver::Error),
}

/// `text`, an argument in JSON named `what`, read.
fn from_json<T: serde::de::DeserializeOwned>(
    what: &'static str,
    text: &str,
) -> Result<T, CallError> {
    serde_json::from_str(text).map_err(|source| CallError::Json { what, source })
}

fn run<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> Result<T, CallError> + Send + 'static,
) -> PyResult<T> {
    let (time, output, memory) = *BUDGET.lock().unwrap_or_else(|e| e.into_inner());
    dimguard::solver::budget::Counting::activate();
    let budget = dimguard::solver::budget::Budget {
        time: Some(std::time::Duration::from_secs_f64(time)),
        // A piece prints as about 80 bytes of JSON (as in the CLI).
        pieces: (output / 80).max(1000),
        memory,
    };
    let out = py.detach(move || {
        std::thread::Builder::new()
            .stack_size(256 << 20)
            .spawn(move || {
                let _scope = dimguard::solver::budget::enter(budget);
                work()
            })
            .map_err(|e| format!("cannot start a worker thread: {e}"))
            .map(|h| h.join())
    });
    match out {
        Ok(Ok(Ok(v))) => Ok(v),
        Ok(Ok(Err(e))) => Err(PyValueError::new_err(e.to_string())),
        Ok(Err(_)) => Err(PyRuntimeError::new_err(
            "dimguard: internal error (please report the input that caused it)",
        )),
        Err(msg) => Err(PyRuntimeError::new_err(msg)),
    }
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String, CallError> {
    serde_json::to_string(v).map_err(CallError::Report)
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, CallError> {
    serde_json::to_value(v).map_err(CallError::Report)
}

/// `object` (a serialized JSON object) with `extra` keys appended: a key it already has is
/// given again, and JSON readers keep the last. Spliced as text because a report may hold counts
/// beyond 64 bits (`joint_count` of two unbounded sizes), which `serde_json::Value` cannot.
fn with_keys(mut object: String, extra: &[(&str, String)]) -> String {
    if extra.is_empty() || !object.ends_with('}') {
        return object;
    }
    object.pop();
    for (k, v) in extra {
        if !object.ends_with('{') {
            object.push(',');
        }
        object.push_str(&format!("{k:?}:{v}"));
    }
    object.push('}');
    object
}

/// The `z3` argument read.
fn mode(z3: &str) -> PyResult<Option<Mode>> {
    match z3 {
        "auto" => Ok(Some(Mode::Auto)),
        "always" => Ok(Some(Mode::Always)),
        "never" => Ok(None),
        other => Err(PyValueError::new_err(format!(
            "z3 must be \"auto\", \"always\" or \"never\", got {other:?}"
        ))),
    }
}

/// Diagnoses an error text; returns the report's JSON. `shapes` maps input names to their traced
/// shapes; `spec` is a spec sheet's JSON to merge the answer into (then the report carries the
/// merged sheet as `"spec"`); `ranges` gives `NAME -> (lo, hi)` for dims whose range the text
/// does not state (`--range`); `shapes_spec` is the text of a torch 2.15 `ShapesSpec` the
/// export used (its names and ranges for data-dependent expressions; the report's
/// `dynamic_shapes` is then that spec with the assumptions added).
#[pyfunction]
// Python keyword arguments, one per CLI flag.
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (text, examples=Vec::new(), shapes=Vec::new(), spec=None, z3="auto", z3_timeout_ms=dimguard::prove::certify::TIMEOUT_MS, ranges=Vec::new(), shapes_spec=None, cover=None))]
fn diagnose(
    py: Python<'_>,
    text: String,
    examples: Vec<(Option<String>, i64)>,
    shapes: Vec<(String, Vec<i64>)>,
    spec: Option<String>,
    z3: &str,
    z3_timeout_ms: u32,
    ranges: Vec<(String, (i64, i64))>,
    shapes_spec: Option<String>,
    cover: Option<usize>,
) -> PyResult<String> {
    let z3 = mode(z3)?;
    if cover == Some(0) {
        return Err(PyValueError::new_err("cover must be at least 1"));
    }
    run(py, move || {
        let shapes_spec = shapes_spec
            .map(|t| dimguard::readers::spec::shapes::ShapesSpec::read(&t))
            .transpose()
            .map_err(CallError::ShapesSpec)?;
        let sheet: Option<Sheet> = spec.map(|s| from_json("spec", &s)).transpose()?;
        let examples = Examples {
            by_name: examples
                .into_iter()
                .map(|(n, v)| (n, i128::from(v)))
                .collect(),
            shapes: shapes
                .into_iter()
                .map(|(n, s)| (n, s.into_iter().map(i128::from).collect()))
                .collect(),
            ranges: ranges
                .into_iter()
                .map(|(n, (lo, hi))| (n, (i128::from(lo), i128::from(hi))))
                .collect(),
        };
        let paste = dimguard::commands::diagnose::Paste {
            merge: sheet,
            shapes: shapes_spec,
            ..Default::default()
        };
        let (report, merged) =
            api::diagnose_with_spec(&text, &examples, z3, z3_timeout_ms, &paste)?;
        let mut extra = Vec::new();
        if let Some(n) = cover {
            let c = dimguard::solver::cover(&report, &api::traced(&report, &examples), n);
            extra.push(("cover", to_json(&c)?));
        }
        if let Some(m) = merged {
            let mut spec = to_value(&m)?;
            spec["code"] = m.code().into();
            extra.push(("spec", to_json(&spec)?));
        }
        Ok(with_keys(to_json(&report)?, &extra))
    })
}

/// Reads a spec written in Python (`h = Dim(...)` lines and `dynamic_shapes = {...}`) into a
/// sheet's JSON.
#[pyfunction]
fn read_spec(py: Python<'_>, text: String) -> PyResult<String> {
    run(py, move || {
        let sheet = dimguard::readers::spec::sheet(&text)?;
        to_json(&sheet)
    })
}

/// The Python code of a sheet (given as JSON).
#[pyfunction]
fn spec_code(py: Python<'_>, sheet: String) -> PyResult<String> {
    run(py, move || {
        let sheet: Sheet = from_json("sheet", &sheet)?;
        Ok(sheet.code())
    })
}

/// Narrows entries of a sheet (JSON) to progressions: `items` is JSON
/// `[{"input": "x", "index": 2, "name": "h", "lo": .., "hi": .., "modulus": .., "residue": ..}]`.
/// Returns the sheet's JSON with `notes` saying what changed and `code` the Python to paste.
#[pyfunction]
fn narrow(py: Python<'_>, sheet: String, items: String) -> PyResult<String> {
    #[derive(serde::Deserialize)]
    struct Item {
        input: String,
        index: usize,
        name: String,
        lo: i128,
        hi: i128,
        modulus: i128,
        residue: i128,
    }
    run(py, move || {
        let mut sheet: Sheet = from_json("sheet", &sheet)?;
        let items: Vec<Item> = from_json("items", &items)?;
        sheet.notes.clear();
        for it in items {
            let p = dimguard::solver::Progression {
                lo: it.lo,
                hi: it.hi,
                modulus: it.modulus,
                residue: it.residue,
            };
            sheet.narrow_to(&it.input, it.index, &it.name, &p);
        }
        let mut v = to_value(&sheet)?;
        v["code"] = sheet.code().into();
        to_json(&v)
    })
}

/// Checks `spec` (Python) against `guards` (a message or guard lines); the report's JSON.
#[pyfunction]
#[pyo3(signature = (guards, spec, z3_timeout_ms=dimguard::prove::certify::TIMEOUT_MS))]
fn verify(py: Python<'_>, guards: String, spec: String, z3_timeout_ms: u32) -> PyResult<String> {
    run(py, move || {
        let report = dimguard::commands::verify::verify(&guards, &spec, z3_timeout_ms)?;
        to_json(&report)
    })
}

/// Checks a program given as the bytes of a `.pt2` archive or of its `model.json`; a
/// `dimguard.Dispatch` archive gives the dispatch report (each program, and the union); an ONNX
/// file written by `dimguard.onnx.export` the report stored in it (`onnx` beside the check's
/// fields).
#[pyfunction]
#[pyo3(signature = (data, label="<program>", sizes=false))]
fn check(py: Python<'_>, data: Vec<u8>, label: &str, sizes: bool) -> PyResult<String> {
    let label = label.to_string();
    run(py, move || {
        if dimguard::graph::onnx::is_onnx(&data, &label) {
            return to_json(&dimguard::graph::onnx::check(&data, &label)?);
        }
        if let Some(programs) = dimguard::graph::program::dispatch_programs(&data, &label)? {
            let report = api::check_dispatch(programs, &label, sizes)?;
            return to_json(&report);
        }
        let program = dimguard::graph::load_bytes(data, &label)?;
        let report = api::check_program(&program, sizes)?;
        to_json(&report)
    })
}

/// Whether a program accepts inputs of given shapes: `facts` is a check report's JSON (its
/// `inputs`, `symbols`, `guards` and `runtime` are read), `shapes` a JSON object of input name
/// -> shape. Returns the contract's `Verdict` (`accepted`: true, false or null, and `reason`).
#[pyfunction]
fn verdict(py: Python<'_>, facts: String, shapes: String) -> PyResult<String> {
    run(py, move || {
        let facts: dimguard::graph::verdict::Facts = from_json("check report", &facts)?;
        let shapes: std::collections::BTreeMap<String, Vec<i128>> = from_json("shapes", &shapes)?;
        to_json(&dimguard::graph::verdict(&facts, &shapes))
    })
}

/// A program's facts (a check report's JSON: `inputs`, `symbols`, `guards`, `runtime`) read
/// once, for many verdicts: `dimguard.onnx.Session` checks every call's shapes with it, on the
/// calling thread (a verdict evaluates the program's conditions at one point: no budget, no
/// deep recursion).
#[pyclass(frozen)]
struct Verdicts {
    facts: dimguard::graph::verdict::Facts,
}

#[pymethods]
impl Verdicts {
    #[new]
    fn new(facts: &str) -> PyResult<Self> {
        let facts = from_json("check report", facts)
            .map_err(|e: CallError| PyValueError::new_err(e.to_string()))?;
        Ok(Verdicts { facts })
    }

    /// `(accepted, reason)` at these shapes (input name -> shape): the contract's `Verdict`.
    fn verdict(&self, shapes: Vec<(String, Vec<i64>)>) -> (Option<bool>, Option<String>) {
        let shapes = shapes
            .into_iter()
            .map(|(n, s)| (n, s.into_iter().map(i128::from).collect()))
            .collect();
        let v = dimguard::graph::verdict(&self.facts, &shapes);
        (v.accepted, v.reason)
    }
}

/// TensorRT profiles: `source` is a message's text or a program's bytes (`path` names it);
/// `dims` are `INPUT:INDEX=LO..HI`, `examples` `NAME:1x3x520x960`. Returns the profiles in
/// `format` (`trtexec`, `polygraphy`, `torch-tensorrt`, `json`); `spec` (a sheet's JSON) covers
/// inputs a message does not name.
#[pyfunction]
// Python keyword arguments, one per CLI flag.
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (source=None, path=None, dims=Vec::new(), examples=Vec::new(), format="json", profiles=1, spec=None, cover=None))]
fn profile(
    py: Python<'_>,
    source: Option<Vec<u8>>,
    path: Option<std::path::PathBuf>,
    dims: Vec<String>,
    examples: Vec<String>,
    format: &str,
    profiles: usize,
    spec: Option<String>,
    cover: Option<usize>,
) -> PyResult<String> {
    let format = format.to_string();
    run(py, move || {
        let sheet: Option<Sheet> = spec.map(|s| from_json("spec", &s)).transpose()?;
        let text = source.map(|b| String::from_utf8_lossy(&b).into_owned());
        let inputs = dimguard::commands::profile::inputs(
            text.as_deref(),
            path.as_deref(),
            &dims,
            &examples,
            sheet.as_ref(),
        )?;
        let set = dimguard::commands::profile::build(&inputs, profiles, cover)?;
        Ok(dimguard::commands::profile::render(&set, &format, &inputs))
    })
}

/// Sets the budget of every later call: `time` seconds of work (past it the answer is partial
/// and says so, as data), `output` bytes for any one set's printed form and `memory` bytes the
/// work may hold.
#[pyfunction]
#[pyo3(signature = (time, output, memory = dimguard::solver::budget::DEFAULT_MEMORY))]
fn set_budget(time: f64, output: usize, memory: usize) -> PyResult<()> {
    if !(time.is_finite() && time > 0.0) {
        return Err(PyValueError::new_err(
            "time must be a positive number of seconds",
        ));
    }
    if output < 4096 {
        return Err(PyValueError::new_err("output must be at least 4096 bytes"));
    }
    if memory < 16 << 20 {
        return Err(PyValueError::new_err("memory must be at least 16 MiB"));
    }
    *BUDGET.lock().unwrap_or_else(|e| e.into_inner()) = (time, output, memory);
    Ok(())
}

/// The Z3 version linked in.
/// The self-contained HTML page of a report's JSON (diagnose, check or `dimguard.export`).
#[pyfunction]
fn html(py: Python<'_>, report: String, title: String) -> PyResult<String> {
    run(py, move || {
        Ok(dimguard::html::render_json(&report, &title)?)
    })
}

#[pyfunction]
fn z3_version() -> &'static str {
    dimguard::prove::z3_version()
}

/// The extension module.
/// A guard or size expression (torch's printing: `Mod(x, 2)`, `((x - 3)//2)`) as readable
/// Python over symbolic sizes (`(x - 3) // 2`), the form of `ShapesSpec` assumptions.
#[pyfunction]
fn readable(py: Python<'_>, text: String) -> PyResult<String> {
    run(py, move || {
        let e = dimguard::solver::parse_guard(&text)
            .or_else(|_| dimguard::solver::parse_expr(&text))?;
        Ok(e.torch_python())
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(diagnose, m)?)?;
    m.add_function(wrap_pyfunction!(read_spec, m)?)?;
    m.add_function(wrap_pyfunction!(spec_code, m)?)?;
    m.add_function(wrap_pyfunction!(narrow, m)?)?;
    m.add_function(wrap_pyfunction!(verify, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(verdict, m)?)?;
    m.add_class::<Verdicts>()?;
    m.add_function(wrap_pyfunction!(profile, m)?)?;
    m.add_function(wrap_pyfunction!(z3_version, m)?)?;
    m.add_function(wrap_pyfunction!(set_budget, m)?)?;
    m.add_function(wrap_pyfunction!(html, m)?)?;
    m.add_function(wrap_pyfunction!(readable, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
