//! The `diagnose` command: any text (an error message, a log, a trace, a draft report) read into a
//! [`Message`], turned into the analysis stage's problem, and the whole diagnosis: per dimension,
//! the exact feasible set, ranked sound suggestions, what each guard requires and removes, a check
//! of torch's own suggested fixes, and a paste-ready `dynamic_shapes` block.
//!
//! One flow ([`diagnose_staged`]), each step a child module: [`read_with`] (`input`) →
//! `problem` → [`analyze`] → `size` (each size's entry, once) → `report` (→ `datadep`) →
//! `partial` → `explain` → `certify` → `paste`.
//!
//! The report's types are in [`report`](dimguard_solver::report); the Python it prints comes from
//! [`python`](dimguard_solver::python).

mod certify;
mod datadep;
mod explain;
mod input;
mod partial;
mod paste;
mod problem;
mod report;
mod size;

pub use certify::certify;
use dimguard_prove::certify::Mode;
use dimguard_readers::{Message, Sheet};
use dimguard_solver::analyze::analyze;
pub use dimguard_solver::analyze::Options;
use dimguard_solver::joint;
use dimguard_solver::report::Report;
use dimguard_solver::Error;
pub use input::{read, read_with, traced, Examples};
pub use paste::{Format, Paste};
pub use problem::relation_guard;

/// [`diagnose_with_spec`] with the default paste block, merged into `spec` when given.
pub fn diagnose_text_merged(
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

/// The command: reads a message (or a `TORCH_TRACE`; [`read_with`]), diagnoses it
/// ([`diagnose_staged`], preferring the traced sizes), certifies the answers with Z3 per `z3`
/// (`None`: enumeration only), and writes the paste block once, from the certified answers, as
/// `paste` says: the user's spec with the diagnosis merged in (returned beside the report), the
/// user's `ShapesSpec` (torch 2.15: its names and ranges also name the data-dependent
/// expressions' sizes) with the assumptions added, or the requested [`Format`].
pub fn diagnose_with_spec(
    text: &str,
    examples: &Examples,
    z3: Option<Mode>,
    z3_timeout_ms: u32,
    paste: &Paste,
) -> Result<(Report, Option<Sheet>), Error> {
    let (msg, opts) = read_with(text, examples, paste)?;
    // Z3 decides linked groups the joint search cannot, and certifies the answers before the
    // paste block is written from them.
    let prover = dimguard_prove::box_prover(z3_timeout_ms);
    let certify = |r: &mut Report, m: &Message| {
        if let Some(mode) = z3 {
            certify(r, m, mode, z3_timeout_ms);
        }
    };
    let stage = Stage {
        prover: z3.map(|_| &prover as _),
        certify: Some(&certify),
        paste: paste.clone(),
    };
    Ok(diagnose_staged(&msg, &opts, &stage))
}

/// Reads any input ([`read`]: an error message, a log, a draft_export report, a run-time
/// failure, a structured trace) and diagnoses it.
///
/// ```
/// use dimguard::commands::diagnose::{diagnose_text, Options};
///
/// let text = "Constraints violated (_2)!\n  - Not all values of _2 = L['image1'].size()[2] in the \
///     specified range 135 <= _2 <= 2160 satisfy the generated guard \
///     Eq(Mod(((L['image1'].size()[2] - 1)//4) - 1, 2), 0).";
/// let report = diagnose_text(text, &Options::default()).unwrap();
/// let d = &report.dims[0];
/// assert_eq!(d.answer.accepted.as_ref().unwrap().count, 1014); // h mod 8 in {0, 5, 6, 7}
/// let best = &d.answer.suggestions[0]; // one residue class: the largest single Dim
/// assert_eq!((best.modulus, best.count), (8, 254));
/// assert!(report.dynamic_shapes.contains("dynamic_shapes = {\"image1\": {2: _2}}"));
///
/// // No single Dim holds every accepted size; four specs (`diagnose --cover 4`) hold them all.
/// let c = dimguard::solver::cover(&report, &[], 4);
/// assert_eq!((c.covered, c.valid, c.one_dim), (1014, 1014, 254));
/// assert_eq!(c.pieces.len(), 4);
/// assert!(c.pieces[0].code.contains("dynamic_shapes = {\"image1\": {2: _2}}"));
/// ```
pub fn diagnose_text(text: &str, opts: &Options) -> Result<Report, Error> {
    let mut opts = opts.clone();
    let mut msg = read(text, &mut opts)?;
    dimguard_readers::forms::apply_ranges(&mut msg, &[])?;
    Ok(diagnose(&msg, &opts))
}

/// Diagnoses a message already read.
pub fn diagnose(msg: &Message, opts: &Options) -> Report {
    diagnose_with(msg, opts, None)
}

/// [`diagnose`], with a validity oracle (Z3, `dimguard-prove::box_prover`) asked about guards
/// over several sizes before they are called undecided (a group too wide for the joint search,
/// a guard outside its methods).
pub fn diagnose_with(msg: &Message, opts: &Options, prover: Option<joint::Prover>) -> Report {
    let stage = Stage {
        prover,
        ..Stage::default()
    };
    diagnose_staged(msg, opts, &stage).0
}

/// A check run over a finished report (Z3's certification): it may withhold a suggestion.
pub type Certifier<'a> = &'a dyn Fn(&mut Report, &Message);

/// What a diagnosis uses beyond its [`Options`]: a prover for the groups the joint search leaves
/// undecided, a certifier run over the finished answers (Z3, `dimguard-prove::certify`), and
/// the form of the paste block, which is written last, from the certified answers.
#[derive(Default)]
pub struct Stage<'a> {
    /// Asked about guards over several sizes before they are called undecided.
    pub prover: Option<joint::Prover<'a>>,
    /// Checks every answer independently; may withhold a suggestion (then never pasted).
    pub certify: Option<Certifier<'a>>,
    /// The paste block's form and the user's spec it is written into.
    pub paste: Paste,
}

/// [`diagnose_with`], certified and pasted as `stage` says: the report, and the user's spec
/// with the diagnosis merged in when [`Paste::merge`] is given. The one flow of a diagnosis,
/// each step a call: the message's guards as the analysis stage's problem, grouped by
/// [`analyze`], which solves every size (a size alone guard by guard), each size's entry built
/// once from its guards' decisions and its group's answer, the report assembled from them (a partial text's
/// answers said to be necessary only, a run-time failure explained), certified, and the paste
/// block written last.
pub fn diagnose_staged(msg: &Message, opts: &Options, stage: &Stage) -> (Report, Option<Sheet>) {
    let sized = problem::size_guards(msg);
    let problem = problem::problem(msg, opts, &sized);
    // Every size is solved here, once: a size alone guard by guard, as its entry's lines
    // need (`Problem::by_guard`).
    let mut analysis = analyze(&problem, &problem::budget(opts), stage.prover, &|_| true);
    // Each size alone's decided sets move into its entry's lines (held twice, 10,000 guards'
    // sets went past a 128 MiB memory budget).
    let dims = size::entries(msg, opts, stage.prover, (&sized, &mut analysis));
    let mut report = report::report(msg, opts, &sized, &analysis, dims);
    partial::necessary_only(&mut report, msg);
    explain::complete(&mut report, msg, opts);
    if let Some(certify) = stage.certify {
        certify(&mut report, msg);
    }
    let (code, merged) = paste::block(msg, &report, &analysis, &stage.paste);
    report.dynamic_shapes = code;
    (report, merged)
}
