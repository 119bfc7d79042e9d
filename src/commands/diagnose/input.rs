//! What a diagnosis reads: the text ([`read`]: any form of guard text, or a structured trace),
//! the traced sizes it is given (`--example`, an input's traced shape), the ranges `--range`
//! gives and the user's `ShapesSpec`.

use super::paste::Paste;
use dimguard_readers::Message;
use dimguard_solver::analyze::Options;
use dimguard_solver::python::source_input;
use dimguard_solver::report::Report;
use dimguard_solver::Error;

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

impl Examples {
    /// The traced size at `(input, i)`, from the input's traced shape.
    fn at(&self, (input, i): (String, usize)) -> Option<i128> {
        let (_, shape) = self.shapes.iter().find(|(n, _)| *n == input)?;
        shape.get(i).copied()
    }
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
        let by_shape = || examples.at(d.source.as_deref().and_then(source_input)?);
        if let Some(v) = by_name.or_else(by_shape) {
            out.push((d.name.clone(), v));
        }
    }
    out
}

/// The traced size of each unbacked size and each dimension of `msg` whose input's traced shape
/// `examples` gives, by name, after `named` (the sizes already given by name).
fn by_shape(
    msg: &Message,
    examples: &Examples,
    mut named: Vec<(Option<String>, i128)>,
) -> Vec<(Option<String>, i128)> {
    // The traced size of each unbacked size, from its input's shape.
    for u in &msg.datadep.unbacked {
        let traced = u
            .source
            .as_deref()
            .and_then(dimguard_solver::python::input_dim)
            .and_then(|at| examples.at(at));
        if let Some(v) = traced {
            named.push((Some(u.symbol.clone()), v));
        }
    }
    for d in &msg.dims {
        let traced = d
            .source
            .as_deref()
            .and_then(source_input)
            .and_then(|at| examples.at(at));
        if let Some(v) = traced {
            named.push((Some(d.name.clone()), v));
        }
    }
    named
}

/// Reads an input text: a structured trace (`TORCH_TRACE`; its traced sizes are added to
/// `opts.examples` before the ones given, which win) or any other form of guard text
/// ([`dimguard_readers::forms::read`]: an error message, a log, a draft_export report, a run-time failure).
/// The message's `form` says which.
pub fn read(text: &str, opts: &mut Options) -> Result<Message, Error> {
    let mut msg = dimguard_readers::forms::read(text)?;
    if msg.form == dimguard_solver::report::Form::TorchTrace {
        let mut examples = std::mem::take(&mut msg.examples);
        examples.append(&mut opts.examples);
        opts.examples = examples;
    } else {
        dimguard_readers::spec::bind_user_spec(text, &mut msg);
    }
    Ok(msg)
}

/// Reads a text ([`read`]) with its traced sizes, the ranges `--range` gives and the user's
/// `ShapesSpec` applied: the message and the options it is diagnosed with.
pub fn read_with(
    text: &str,
    examples: &Examples,
    paste: &Paste,
) -> Result<(Message, Options), Error> {
    let mut opts = Options {
        examples: examples.by_name.clone(),
        ..Options::default()
    };
    let mut msg = read(text, &mut opts)?;
    if let Some(s) = &paste.shapes {
        dimguard_readers::spec::shapes::apply_spec(&mut msg, s);
    }
    dimguard_readers::forms::apply_ranges(&mut msg, &examples.ranges)?;
    let named = std::mem::take(&mut opts.examples);
    opts.examples = by_shape(&msg, examples, named);
    Ok((msg, opts))
}
