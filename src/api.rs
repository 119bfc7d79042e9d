//! The pipelines behind the commands, for the binary and the Python package alike: read, solve,
//! certify. Each returns the contract's report types.

use crate::commands::diagnose::{self, Options, Paste, Stage};
use crate::prove::{self, Mode};
use crate::solver::python::source_input;
use crate::solver::report::Report;
use crate::solver::Error;

pub use crate::commands::check::{check_dispatch, check_program, check_program_graph};
use crate::readers::Sheet;

/// Traced sizes for a diagnosis.
#[derive(Debug, Clone, Default)]
pub struct Examples {
    /// `(None, n)` for every dimension, `(Some(name), n)` for one dimension by its name.
    pub by_name: Vec<(Option<String>, i128)>,
    /// Full traced shapes by input name: a dimension whose source is `L['x'].size()[2]` takes
    /// `shapes["x"][2]`.
    pub shapes: Vec<(String, Vec<i128>)>,
    /// `NAME -> (lo, hi)`: the range of a dimension a message does not state (`--range`).
    pub ranges: Vec<(String, (i128, i128))>,
}

/// The traced size of each of the report's dimensions that `examples` gives (by name, for every
/// dimension, or through an input's traced shape), for [`dimguard_solver::cover`].
pub fn traced(report: &Report, examples: &Examples) -> Vec<(String, i128)> {
    let mut out = Vec::new();
    for d in &report.dims {
        let by_name = examples
            .by_name
            .iter()
            .rev()
            .find(|(n, _)| n.as_deref().is_none_or(|n| n == d.name))
            .map(|(_, v)| *v);
        let by_shape = || {
            let (input, i) = d.source.as_deref().and_then(source_input)?;
            let (_, shape) = examples.shapes.iter().find(|(n, _)| *n == input)?;
            shape.get(i).copied()
        };
        if let Some(v) = by_name.or_else(by_shape) {
            out.push((d.name.clone(), v));
        }
    }
    out
}

/// [`diagnose_with_spec`] with the default paste block, merged into `spec` when given.
pub fn diagnose_text(
    text: &str,
    examples: &Examples,
    z3: Option<Mode>,
    z3_timeout_ms: u32,
    spec: Option<&Sheet>,
) -> Result<(Report, Option<Sheet>), Error> {
    let paste = Paste {
        merge: spec.cloned(),
        ..Paste::default()
    };
    diagnose_with_spec(text, examples, z3, z3_timeout_ms, &paste)
}

/// Reads a message (or a `TORCH_TRACE`), diagnoses it (preferring the traced sizes), certifies
/// the answers with Z3 per `z3` (`None`: enumeration only), and writes the paste block once,
/// from the certified answers, as `paste` says: the user's spec with the diagnosis merged in
/// (returned beside the report), the user's `ShapesSpec` (torch 2.15: its names and ranges
/// also name the data-dependent expressions' sizes) with the assumptions added, or the
/// requested [`Format`](diagnose::Format).
pub fn diagnose_with_spec(
    text: &str,
    examples: &Examples,
    z3: Option<Mode>,
    z3_timeout_ms: u32,
    paste: &Paste,
) -> Result<(Report, Option<Sheet>), Error> {
    let mut opts = Options {
        examples: examples.by_name.clone(),
        ..Options::default()
    };
    let mut msg = diagnose::read(text, &mut opts)?;
    if let Some(s) = &paste.shapes {
        crate::readers::spec::shapes::apply_spec(&mut msg, s);
    }
    crate::readers::forms::apply_ranges(&mut msg, &examples.ranges)?;
    let mut named = std::mem::take(&mut opts.examples);
    // The traced size of each unbacked size, from its input's shape.
    for u in &msg.datadep.unbacked {
        let traced = u
            .source
            .as_deref()
            .and_then(dimguard_solver::python::input_dim)
            .and_then(|(input, i)| {
                let (_, shape) = examples.shapes.iter().find(|(n, _)| *n == input)?;
                shape.get(i).copied()
            });
        if let Some(v) = traced {
            named.push((Some(u.symbol.clone()), v));
        }
    }
    for d in &msg.dims {
        let traced = d
            .source
            .as_deref()
            .and_then(source_input)
            .and_then(|(input, i)| {
                let (_, shape) = examples.shapes.iter().find(|(n, _)| *n == input)?;
                shape.get(i).copied()
            });
        if let Some(v) = traced {
            named.push((Some(d.name.clone()), v));
        }
    }
    opts.examples = named;
    // Z3 decides linked groups the joint search cannot, and certifies the answers before the
    // paste block is written from them.
    let prover = prove::box_prover(z3_timeout_ms);
    let certify = |r: &mut Report, m: &crate::readers::Message| {
        if let Some(mode) = z3 {
            diagnose::certify(r, m, mode, z3_timeout_ms);
        }
    };
    let stage = Stage {
        prover: z3.map(|_| &prover as _),
        certify: Some(&certify),
        paste: paste.clone(),
    };
    Ok(diagnose::diagnose_staged(&msg, &opts, &stage))
}
