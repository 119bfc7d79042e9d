//! The report as the page reads it ([`Page`] and its parts), built from the CLI's reports or
//! read back from a report's JSON ([`Page::from_json`]). Each size is the command's own entry
//! ([`PageDim`]): a `verify` report is told by its `unrecognized` key; a `diagnose` or `check`
//! entry by its keys (`status`, `input`), since hand-made and Python reports mix them.

use crate::solver::report::{
    CheckDim, CheckReport, Command, CoverReport, CoverSide, DataDependent, DimReport, Feasible,
    Form, GuardUse, JointCheck, JointReport, LineReport, LinkedGroup, LinkedSides, Partial, Report,
    RuntimeCheck, VerifyDim, VerifyReport,
};
use serde::Deserialize;
use serde_json::value::RawValue;

/// A report as the page draws it: the fields of a `diagnose`, `check`, `verify` or
/// `dimguard.export` report, in the contract's types (each report fills the fields it has).
#[derive(Debug, Default)]
pub struct Page {
    /// `diagnose`: the input form read.
    pub form: Option<Form>,
    /// `check`: the PyTorch version that wrote the program.
    pub torch_version: Option<String>,
    /// One entry per size.
    pub dims: Vec<PageDim>,
    /// The joint sets of linked sizes (`check`'s `joint`; `diagnose`'s and `verify`'s
    /// `joint_sets`).
    pub joint: Vec<JointReport>,
    /// `diagnose`: groups of a root and sizes derived from it.
    pub linked: Vec<LinkedGroup>,
    /// `diagnose`: data-dependent expressions.
    pub data_dependent: Vec<DataDependent>,
    /// `diagnose`: the guards grouped by the line of code they come from.
    pub lines: Vec<LineReport>,
    /// What became of each guard.
    pub guards: Vec<GuardUse>,
    /// `verify`: the verdict for the spec (its sizes are [`PageDim::Verify`]).
    pub verdict: Option<PageVerdict>,
    /// Several specs that cover every valid size (`diagnose --cover N`, `dimguard.Dispatch`).
    pub cover: Option<PageCover>,
    /// `check`: run-time asserts and implied limits.
    pub runtime: Vec<RuntimeCheck>,
    /// `dimguard.export`: its rounds (`None`: not an export report).
    pub rounds: Option<Vec<Round>>,
    /// The paste-able spec (`dynamic_shapes` of diagnose and check, `spec` of an export).
    pub spec: Option<String>,
    /// `diagnose` of a torch.compile text (a recompile): the spec is torch.compile's advice
    /// (`mark_dynamic`), pasted before the compiled call, not an export's.
    pub compiled: bool,
    /// `diagnose` of a text that holds only some of the export's guards: what it holds and
    /// what to paste instead (its sizes are undecided over the sets its guards leave).
    pub partial: Option<Partial>,
}

/// One size of a [`Page`].
#[derive(Debug)]
pub enum PageDim {
    /// `check` (and `dimguard.export`'s audit): an input dimension of a program.
    Check(Box<CheckDim>),
    /// `diagnose`: a named size.
    Diagnose(Box<DimReport>),
    /// `verify`: a size the spec covers, with its verdict.
    Verify(Box<VerifyDim>),
    /// Any other size with a set to draw (`dimguard.Dispatch`'s pages: per program and
    /// dimension, the sizes it accepts).
    Drawn(DrawnDim),
}

/// `verify`'s verdict for the whole spec (the per-size verdicts are its [`PageDim::Verify`]
/// entries).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PageVerdict {
    /// True only when no value the spec admits fails a guard; null when undecided.
    pub sound: Option<bool>,
    /// Guards over several sizes, decided over the product of the spec's sets.
    pub joint: Vec<JointCheck>,
    /// Spec lines that were not understood.
    pub unrecognized: Vec<String>,
}

impl From<&VerifyReport> for PageVerdict {
    fn from(r: &VerifyReport) -> PageVerdict {
        PageVerdict {
            sound: r.sound,
            joint: r.joint.clone(),
            unrecognized: r.unrecognized.clone(),
        }
    }
}

/// A size with a name, its range and its accepted set (what [`PageDim::Drawn`] reads).
#[derive(Debug, Deserialize)]
pub struct DrawnDim {
    /// What the strip is called.
    pub name: String,
    /// The input dimension, when known.
    #[serde(default)]
    pub source: Option<String>,
    /// The range drawn.
    #[serde(default)]
    pub range: Option<[i128; 2]>,
    /// The accepted values (`None`: not decided).
    #[serde(default)]
    pub feasible: Option<Feasible>,
}

/// A cover as the page lists it: `diagnose --cover N`'s [`CoverReport`], or the programs of a
/// `dimguard.Dispatch` (each with a label and the sizes it accepts).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PageCover {
    /// The cover in a sentence.
    pub summary: String,
    /// Sizes the cover leaves as the single spec has them.
    pub left_out: Vec<String>,
    /// Further notes.
    pub notes: Vec<String>,
    /// One spec each.
    pub pieces: Vec<PagePiece>,
}

/// One spec of a [`PageCover`].
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct PagePiece {
    /// What the spec is (a `Dispatch` program), when no sides say it.
    pub label: Option<String>,
    /// The progression each size takes.
    pub sides: Vec<CoverSide>,
    /// How many sizes (or tuples) it holds, when known.
    pub count: Option<u128>,
    /// The spec's code.
    pub code: String,
}

/// One round of `dimguard.export` (the Python package writes it).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Round {
    /// Its number, from 1.
    pub round: u32,
    /// `exported`, `constraint_violation`, `solver_crash` or `error`.
    pub outcome: String,
    /// torch's error, first line.
    pub error: Option<String>,
    /// What the round changed, and why.
    pub notes: Vec<String>,
    /// The round's spec as Python.
    pub spec: Option<String>,
    /// The guards the round recorded, by source line.
    pub lines: Vec<LineReport>,
}

/// A report's JSON as read: the fields whose entries take one of several shapes are kept as
/// text until their shape is known.
#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPage {
    form: Option<Form>,
    // The command's mark: a key its report always writes (`form` above for `diagnose`).
    propagation: Option<serde::de::IgnoredAny>,
    unrecognized: Option<serde::de::IgnoredAny>,
    partial: Option<Partial>,
    torch_version: Option<String>,
    dims: Vec<Box<RawValue>>,
    joint: Vec<Box<RawValue>>,
    joint_sets: Vec<JointReport>,
    linked: Vec<LinkedGroup>,
    data_dependent: Vec<DataDependent>,
    lines: Vec<LineReport>,
    guards: Vec<GuardUse>,
    cover: Option<PageCover>,
    runtime: Option<Box<RawValue>>,
    rounds: Option<Vec<Round>>,
    dynamic_shapes: Option<String>,
    spec: Option<SpecField>,
}

/// A report's `spec`: the final spec's code (`dimguard.export`), or the spec sheet a diagnosis
/// was merged into (the Python package's `diagnose`), with its code.
#[derive(Deserialize)]
#[serde(untagged)]
enum SpecField {
    Code(String),
    Sheet { code: Option<String> },
}

/// The key that tells a joint set (`boxes`) from the other entries a `joint` list holds.
#[derive(Deserialize)]
struct JointKeys {
    boxes: Option<serde::de::IgnoredAny>,
}

/// The keys that tell which shape an entry of `dims` has, in a report no command wrote (a
/// `dimguard.export` report holds its audit's `check` entries; a `dimguard.Dispatch` page,
/// named sets).
#[derive(Deserialize)]
struct DimKeys {
    input: Option<serde::de::IgnoredAny>,
    status: Option<serde::de::IgnoredAny>,
}

impl RawPage {
    /// The command that wrote the report, from the key its report always writes: `form`
    /// (`diagnose`), `propagation` (`check`), `unrecognized` (`verify`); `None` for a report of
    /// the Python package's own.
    fn command(&self) -> Option<Command> {
        if self.form.is_some() {
            Some(Command::Diagnose)
        } else if self.propagation.is_some() {
            Some(Command::Check)
        } else if self.unrecognized.is_some() {
            Some(Command::Verify)
        } else {
            None
        }
    }
}

/// One entry of `dims` of `command`'s report (`None`: a named set).
fn page_dim(text: &str, command: Option<Command>) -> (serde_json::Result<PageDim>, &'static str) {
    match command {
        Some(Command::Check) => (
            serde_json::from_str(text).map(|c| PageDim::Check(Box::new(c))),
            "check dimension",
        ),
        Some(Command::Diagnose) => (
            serde_json::from_str(text).map(|d| PageDim::Diagnose(Box::new(d))),
            "diagnosed size",
        ),
        Some(Command::Verify) => (
            serde_json::from_str(text).map(|v| PageDim::Verify(Box::new(v))),
            "verified size",
        ),
        None => (serde_json::from_str(text).map(PageDim::Drawn), "named set"),
    }
}

/// A report's JSON that the page cannot read.
#[derive(Debug, thiserror::Error)]
pub enum PageError {
    /// Not JSON, or a field of the wrong type.
    #[error("report: {0}")]
    Json(#[from] serde_json::Error),
    /// An entry of `dims` or `joint` that does not read as the shape the contract gives it.
    #[error("report: {field}[{index}] is no {what}: {errors}")]
    Entry {
        /// `dims` or `joint`.
        field: &'static str,
        /// Its position.
        index: usize,
        /// The shape (or shapes) tried.
        what: &'static str,
        /// Why it did not fit.
        errors: String,
    },
}

impl Page {
    /// A report's JSON (any of `diagnose`, `check`, `verify`, `dimguard.export`), read into
    /// the contract's types. Integers past 64 bits (the counts of unbounded linked sizes) stay
    /// exact.
    pub fn from_json(text: &str) -> Result<Page, PageError> {
        let raw: RawPage = serde_json::from_str(text)?;
        let command = raw.command();
        let mut dims = Vec::with_capacity(raw.dims.len());
        for (index, d) in raw.dims.iter().enumerate() {
            // A report no command wrote: its entries' keys say, `input` (check), `status`
            // (diagnose), else a name and a set.
            // (A `diagnose` or `check` report's entries are still told by their keys: hand-made
            // and Python reports carry `form` beside named sets.)
            let command = match command {
                Some(Command::Verify) => Some(Command::Verify),
                _ => {
                    let keys: DimKeys = serde_json::from_str(d.get())?;
                    if keys.input.is_some() {
                        Some(Command::Check)
                    } else if keys.status.is_some() {
                        Some(Command::Diagnose)
                    } else {
                        None
                    }
                }
            };
            let (read, what) = page_dim(d.get(), command);
            dims.push(read.map_err(|e| PageError::Entry {
                field: "dims",
                index,
                what,
                errors: e.to_string(),
            })?);
        }
        // `check`'s joint sets; `diagnose`'s single joint guards and `verify`'s joint checks
        // (no `boxes`) are not drawn here (diagnose's joint sets come in `joint_sets`).
        let mut joint = Vec::new();
        for (index, j) in raw.joint.iter().enumerate() {
            let keys: JointKeys = serde_json::from_str(j.get())?;
            if keys.boxes.is_none() {
                continue;
            }
            joint.push(serde_json::from_str(j.get()).map_err(|e| PageError::Entry {
                field: "joint",
                index,
                what: "joint set",
                errors: e.to_string(),
            })?);
        }
        joint.extend(raw.joint_sets);
        // `check`'s run-time checks (a list); `diagnose`'s `runtime` (one object) is not drawn.
        let runtime = match &raw.runtime {
            Some(r) if r.get().trim_start().starts_with('[') => serde_json::from_str(r.get())?,
            _ => Vec::new(),
        };
        // `diagnose`'s `runtime` of a recompile says so.
        let compiled = raw.runtime.as_ref().is_some_and(|r| {
            serde_json::from_str::<serde_json::Value>(r.get())
                .is_ok_and(|v| v["recompile"].as_bool() == Some(true))
        });
        let verdict = match command {
            Some(Command::Verify) => Some(serde_json::from_str(text)?),
            _ => None,
        };
        Ok(Page {
            compiled,
            verdict,
            partial: raw.partial,
            form: raw.form,
            torch_version: raw.torch_version,
            dims,
            joint,
            linked: raw.linked,
            data_dependent: raw.data_dependent,
            lines: raw.lines,
            guards: raw.guards,
            cover: raw.cover,
            runtime,
            rounds: raw.rounds,
            spec: raw
                .dynamic_shapes
                .filter(|d| !d.is_empty())
                .or(match raw.spec {
                    Some(SpecField::Code(c)) => Some(c),
                    Some(SpecField::Sheet { code }) => code,
                    None => None,
                }),
        })
    }

    /// A diagnosis, with the specs of `--cover N` when asked for.
    pub fn diagnosis(report: &Report, cover: Option<&CoverReport>) -> Page {
        Page {
            form: Some(report.form),
            torch_version: None,
            dims: report
                .dims
                .iter()
                .map(|d| PageDim::Diagnose(Box::new(d.clone())))
                .collect(),
            joint: report.joint_sets.clone(),
            linked: report.linked.clone(),
            data_dependent: report.data_dependent.clone(),
            lines: report.lines.clone(),
            guards: report.guards.clone(),
            verdict: None,
            cover: cover.map(PageCover::from),
            runtime: Vec::new(),
            rounds: None,
            spec: Some(report.dynamic_shapes.clone()),
            compiled: report.runtime.as_ref().is_some_and(|r| r.recompile),
            partial: report.partial.clone(),
        }
    }

    /// A `check` report.
    pub fn check(report: &CheckReport) -> Page {
        Page {
            form: None,
            torch_version: report.torch_version.clone(),
            dims: report
                .dims
                .iter()
                .map(|d| PageDim::Check(Box::new(d.clone())))
                .collect(),
            joint: report.joint.clone(),
            linked: Vec::new(),
            data_dependent: Vec::new(),
            lines: Vec::new(),
            guards: report.guards.clone(),
            verdict: None,
            cover: None,
            runtime: report.runtime.clone(),
            rounds: None,
            spec: Some(report.dynamic_shapes.clone()),
            compiled: false,
            partial: None,
        }
    }

    /// A `verify` report.
    pub fn verify(report: &VerifyReport) -> Page {
        Page {
            dims: report
                .dims
                .iter()
                .map(|d| PageDim::Verify(Box::new(d.clone())))
                .collect(),
            joint: report.joint_sets.clone(),
            guards: report.guards.clone(),
            verdict: Some(PageVerdict::from(report)),
            ..Page::default()
        }
    }
}

impl From<&CoverReport> for PageCover {
    fn from(c: &CoverReport) -> PageCover {
        PageCover {
            summary: c.summary.clone(),
            left_out: c.left_out.clone(),
            notes: Vec::new(),
            pieces: c
                .pieces
                .iter()
                .map(|p| PagePiece {
                    label: None,
                    sides: p.sides.clone(),
                    count: Some(p.count),
                    code: p.code.clone(),
                })
                .collect(),
        }
    }
}

impl PageDim {
    /// The input dimension, when known.
    pub fn source(&self) -> Option<&str> {
        match self {
            PageDim::Check(c) => Some(&c.source),
            PageDim::Diagnose(d) => d.source.as_deref(),
            PageDim::Verify(v) => v.source.as_deref(),
            PageDim::Drawn(d) => d.source.as_deref(),
        }
    }

    /// Its name in `diagnose`'s (and `verify`'s) groups.
    pub(super) fn name(&self) -> Option<&str> {
        match self {
            PageDim::Check(_) => None,
            PageDim::Diagnose(d) => Some(&d.name),
            PageDim::Verify(v) => Some(&v.name),
            PageDim::Drawn(d) => Some(&d.name),
        }
    }

    pub(super) fn sides(&self) -> Option<&LinkedSides> {
        match self {
            PageDim::Check(c) => Some(&c.answer.sides),
            PageDim::Diagnose(d) => Some(&d.answer.sides),
            PageDim::Verify(v) => Some(&v.answer.sides),
            PageDim::Drawn(_) => None,
        }
    }

    /// The range its values are drawn over (without the set's bounds).
    pub(super) fn range(&self) -> Option<(i128, i128)> {
        match self {
            PageDim::Check(c) => Some((c.claimed.min?, c.claimed.max?)),
            PageDim::Diagnose(d) => d.range.map(|[a, b]| (a, b)),
            // The spec's admitted values are not in the report: the strip spans the set.
            PageDim::Verify(_) => None,
            PageDim::Drawn(d) => d.range.map(|[a, b]| (a, b)),
        }
    }
}
