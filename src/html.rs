//! `--html FILE`: one self-contained page (no server, no network: inline CSS, inline SVG, a few
//! lines of inline script for the copy button) drawn from a report, so it serves `diagnose`,
//! `check` and `dimguard.export` reports alike. The page reads the report's typed structs
//! ([`Page`]): the CLI builds it from the reports themselves, the Python package hands it a
//! report's JSON ([`Page::from_json`]), read back into the same types.
//!
//! The page shows, per size, a strip of the values of its range: every accepted value is one
//! mark (`<rect class="acc">`) coloured by its residue class, rejected values are pale (one bar
//! per row under the marks); for each group of linked sizes a 2-D plot of the accepted tuples
//! (one mark per tuple, `class="tup"`) with the largest sound box when the report carries one; the
//! guards grouped by the line of the user's code they come from, with the code (per round for
//! `dimguard.export` reports); and the paste-able spec with a copy button. Sets too large to draw
//! value by value (more than [`MAX_MARKS`] values) are drawn as one band per segment and say so.
//! Colours are the Okabe–Ito palette (distinguishable with colour-blindness), text contrast is at
//! least 4.5:1, every plot has a text alternative, and the button is reachable by keyboard.

use crate::solver::expr::Value;
use crate::solver::report::{
    count_text, CheckDim, CheckReport, CoverReport, CoverSide, DataDependent, DimReport, Feasible,
    Form, GuardFate, GuardReport, GuardUse, JointReport, LineReport, LinkedGroup, LinkedSides,
    Report, RuntimeCheck, Status, Suggestion, TiedTo,
};
use crate::solver::{parse_expr, DimSet};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fmt::Write;

/// The most values a strip or a 2-D plot draws one by one.
pub const MAX_MARKS: u128 = 20_000;

/// The most solved guards a folded list shows (the JSON report lists every one).
const MAX_GUARDS: usize = 100;

/// Okabe–Ito colours (without yellow, too pale on white), for residue classes.
const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

/// A report as the page draws it: the fields of a `diagnose`, `check` or `dimguard.export`
/// report, in the contract's types (each report fills the fields it has).
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
    /// Several specs that cover every valid size (`diagnose --cover N`, `dimguard.Dispatch`).
    pub cover: Option<PageCover>,
    /// `check`: run-time asserts and implied limits.
    pub runtime: Vec<RuntimeCheck>,
    /// `dimguard.export`: its rounds (`None`: not an export report).
    pub rounds: Option<Vec<Round>>,
    /// The paste-able spec (`dynamic_shapes` of diagnose and check, `spec` of an export).
    pub spec: Option<String>,
}

/// One size of a [`Page`].
#[derive(Debug)]
pub enum PageDim {
    /// `check` (and `dimguard.export`'s audit): an input dimension of a program.
    Check(Box<CheckDim>),
    /// `diagnose`: a named size.
    Diagnose(Box<DimReport>),
    /// Any other size with a set to draw (`dimguard.Dispatch`'s pages: per program and
    /// dimension, the sizes it accepts).
    Drawn(DrawnDim),
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

/// The keys that tell which shape an entry of `dims` has.
#[derive(Deserialize)]
struct DimKeys {
    input: Option<serde::de::IgnoredAny>,
    status: Option<serde::de::IgnoredAny>,
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
    /// A report's JSON (any of `diagnose`, `check`, `dimguard.export`), read into the
    /// contract's types. Integers past 64 bits (the counts of unbounded linked sizes) stay exact.
    pub fn from_json(text: &str) -> Result<Page, PageError> {
        let raw: RawPage = serde_json::from_str(text)?;
        let mut dims = Vec::with_capacity(raw.dims.len());
        for (index, d) in raw.dims.iter().enumerate() {
            // The shape is told by its keys: `input` (check), `status` (diagnose), else a name
            // and a set.
            let keys: DimKeys = serde_json::from_str(d.get())?;
            // `sides` (flattened in the JSON) is read apart from the rest.
            let sides = || serde_json::from_str::<LinkedSides>(d.get());
            let (read, what) = if keys.input.is_some() {
                let c = serde_json::from_str(d.get()).and_then(|c: CheckDim| {
                    Ok(PageDim::Check(Box::new(CheckDim {
                        sides: sides()?,
                        ..c
                    })))
                });
                (c, "check dimension")
            } else if keys.status.is_some() {
                let r = serde_json::from_str(d.get()).and_then(|r: DimReport| {
                    Ok(PageDim::Diagnose(Box::new(DimReport {
                        sides: sides()?,
                        ..r
                    })))
                });
                (r, "diagnosed size")
            } else {
                (
                    serde_json::from_str(d.get()).map(PageDim::Drawn),
                    "named set",
                )
            };
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
        Ok(Page {
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
            cover: cover.map(PageCover::from),
            runtime: Vec::new(),
            rounds: None,
            spec: Some(report.dynamic_shapes.clone()),
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
            cover: None,
            runtime: report.runtime.clone(),
            rounds: None,
            spec: Some(report.dynamic_shapes.clone()),
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

/// A report's JSON as a page ([`Page::from_json`], then [`render`]).
pub fn render_json(text: &str, title: &str) -> Result<String, PageError> {
    Ok(render(&Page::from_json(text)?, title))
}

/// Renders a report as a page. `title` names the input (a file name).
pub fn render(report: &Page, title: &str) -> String {
    let mut body = String::new();
    let dims = &report.dims;
    let _ = writeln!(
        body,
        "<header><h1>dimguard: {}</h1><p class=\"sub\">{}</p></header>",
        esc(title),
        esc(&summary(report))
    );
    body.push_str("<main>");
    let joints: Vec<Joint> = report.joint.iter().filter_map(Joint::read).collect();
    // Linked sizes: the joint answer first (each size's own strip cannot say it).
    body.push_str(&joint_section(report, &joints));
    if !dims.is_empty() {
        body.push_str(
            "<section aria-labelledby=\"h-sizes\"><h2 id=\"h-sizes\">Accepted sizes</h2>",
        );
        body.push_str(
            "<p class=\"note\">Each mark is one size of the range; coloured marks pass every guard \
             (for a linked size: with some value of the sizes it is linked to; one colour per \
             residue class), pale marks fail.</p>",
        );
        // Sizes a link leaves free (independent of the others in their joint set).
        let free: Vec<&str> = joints
            .iter()
            .flat_map(|j| {
                (0..j.names.len())
                    .filter(|k| j.independent[*k])
                    .filter_map(|k| j.v.sources.get(k).map(String::as_str))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (i, d) in dims.iter().enumerate() {
            let linked_free = d.source().is_some_and(|s| free.contains(&s));
            body.push_str(&strip(&d.strip(), i, linked_free));
        }
        body.push_str("</section>");
    }
    let dd: Vec<&DataDependent> = report
        .data_dependent
        .iter()
        .filter(|d| d.when_true.is_some())
        .collect();
    if !dd.is_empty() {
        body.push_str(
            "<section aria-labelledby=\"h-dd\"><h2 id=\"h-dd\">Data-dependent expressions</h2>",
        );
        body.push_str(
            "<p class=\"note\">Each mark is one size of the range; coloured marks are the sizes \
             the assumption keeps (the branch that holds everywhere, or the traced size's), pale \
             marks the sizes it removes.</p>",
        );
        for (i, d) in dd.iter().enumerate() {
            let kept = match d.always.or(d.example_branch) {
                Some(false) => d.when_false.as_ref(),
                _ => d.when_true.as_ref(),
            };
            let label = match &d.assumption {
                Some(a) => format!("{}: assume {a}", d.guard),
                None => format!("{} (where it is true)", d.guard),
            };
            let view = StripDim {
                label: match &d.source {
                    Some(s) => format!("{label} = {s}"),
                    None => label,
                },
                set: kept,
                range: d.range.map(|[a, b]| (a, b)),
                ..StripDim::default()
            };
            body.push_str(&strip(&view, dims.len() + i, false));
        }
        body.push_str("</section>");
    }
    if !report.lines.is_empty() {
        body.push_str(
            "<section aria-labelledby=\"h-lines\"><h2 id=\"h-lines\">Where the guards come from</h2>",
        );
        // Lines whose guards remove nothing (and link nothing) are folded into one line.
        let idle =
            |l: &LineReport| l.links.is_empty() && l.dims.iter().all(|d| d.removes == Some(0));
        for l in report.lines.iter().filter(|l| !idle(l)) {
            body.push_str(&line_card(l));
        }
        let folded: Vec<&LineReport> = report.lines.iter().filter(|l| idle(l)).collect();
        if !folded.is_empty() {
            let _ = write!(
                body,
                "<details><summary>{} more line{} recorded guards that remove no size</summary>{}</details>",
                folded.len(),
                if folded.len() == 1 { "" } else { "s" },
                folded.iter().map(|l| line_card(l)).collect::<String>()
            );
        }
        body.push_str("</section>");
    } else if report.rounds.is_none() {
        body.push_str(&guard_list(dims, &report.guards));
    }
    if let Some(c) = &report.cover {
        body.push_str(&cover_section(c));
    }
    if !report.runtime.is_empty() {
        body.push_str(&runtime_section(&report.runtime));
    }
    if let Some(rounds) = report.rounds.as_ref().filter(|r| !r.is_empty()) {
        body.push_str(&rounds_section(rounds));
    }
    if let Some(spec) = report.spec.as_deref().filter(|s| !s.is_empty()) {
        let _ = write!(
            body,
            "<section aria-labelledby=\"h-spec\"><h2 id=\"h-spec\">Paste in front of your export call</h2>\
             <pre id=\"spec\" tabindex=\"0\" aria-label=\"dynamic_shapes spec\"><code>{}</code></pre>\
             <button type=\"button\" id=\"copy\">Copy the spec</button> \
             <span id=\"copied\" role=\"status\" aria-live=\"polite\"></span></section>",
            esc(spec)
        );
    }
    body.push_str("</main>");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>dimguard: {}</title><style>{CSS}</style></head><body>{body}<script>{JS}</script></body></html>\n",
        esc(title)
    )
}

const CSS: &str = "body{font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;color:#1a1a1a;\
background:#fff;margin:0 auto;max-width:1000px;padding:1rem 1.5rem}h1{font-size:1.5rem;margin:.2rem 0}\
h2{font-size:1.2rem;border-bottom:1px solid #ccc;margin-top:2rem}h3{font-size:1.05rem;margin:1.2rem 0 .3rem}\
.sub,.note{color:#444}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13.5px}\
pre{background:#f4f4f4;padding:.7rem;overflow-x:auto;border:1px solid #ddd}\
.card{border:1px solid #ccc;border-left:4px solid #0072B2;padding:.5rem .9rem;margin:.8rem 0}\
.card.lib{border-left-color:#767676}.loc{font-weight:600}.ops{color:#444}\
.legend{display:flex;flex-wrap:wrap;gap:.8rem;margin:.2rem 0 .6rem;padding:0;list-style:none}\
.legend li{display:flex;align-items:center;gap:.3rem}.sw{display:inline-block;width:12px;height:12px;border:1px solid #333}\
svg{display:block;max-width:100%;height:auto}svg:focus,pre:focus,button:focus{outline:3px solid #D55E00;outline-offset:2px}\
.rej{fill:#e2e2e2}.axis{font-size:11px;fill:#333}.box{fill:none;stroke:#000;stroke-width:2;stroke-dasharray:6 3}\
button{font:inherit;padding:.35rem .9rem;border:1px solid #0b4f7c;background:#0072B2;color:#fff;border-radius:4px;cursor:pointer}\
button:hover{background:#005a8c}table{border-collapse:collapse}td,th{padding:.15rem .6rem;text-align:left;vertical-align:top}\
details{margin:.3rem 0}.bad{color:#a3290a}";

const JS: &str = "document.getElementById('copy')&&document.getElementById('copy').addEventListener('click',function(){\
var t=document.getElementById('spec').innerText,s=document.getElementById('copied');\
function done(ok){s.textContent=ok?'Copied.':'Select the text and copy it by hand.';}\
function fallback(){var r=document.createRange();r.selectNodeContents(document.getElementById('spec'));\
var sel=window.getSelection();sel.removeAllRanges();sel.addRange(r);var ok=false;try{ok=document.execCommand('copy');}catch(e){}done(ok);}\
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t).then(function(){done(true);},fallback);}else{fallback();}});";

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

fn summary(report: &Page) -> String {
    let n = report.dims.len();
    let mut parts = vec![format!("{n} size{}", if n == 1 { "" } else { "s" })];
    if let Some(f) = report.form {
        let what = match f {
            Form::TorchTrace => "a structured trace (TORCH_TRACE)",
            Form::TorchLogs => "TORCH_LOGS output",
            Form::ConstraintViolation => "a torch.export constraint error",
            Form::DraftExport => "a draft_export report",
            Form::GuardFailed => "a Guard failed error",
            Form::InputCheck => "an input check error",
            Form::SolverCrash => "torch's solver crash",
            Form::Guards => "guard lines",
            Form::Program => "an exported program",
            Form::DataDependent => "a data-dependent failure (GuardOnDataDependentSymNode)",
        };
        parts.push(format!("read from {what}"));
    }
    if let Some(v) = &report.torch_version {
        parts.push(format!("PyTorch {v}"));
    }
    parts.join(" · ")
}

/// What a size's strip shows: its label, the sizes it is linked to, the set drawn and the
/// range it is drawn over.
#[derive(Default)]
struct StripDim<'a> {
    label: String,
    linked_with: &'a [String],
    /// For a linked size, the values that pass with some partner; else its accepted values.
    /// `None` when undecided.
    set: Option<&'a Feasible>,
    range: Option<(i128, i128)>,
    /// `diagnose`: no guard names the size alone.
    unconstrained: bool,
    /// `diagnose`: why the size is not decided.
    undecided: Option<&'a str>,
    /// `check`: how many values are not decided, and why.
    undecided_part: Option<(u128, &'a str)>,
    /// Tied to another size: its answer is the partner's, through the tie.
    tied_to: Option<&'a TiedTo>,
    /// Defined by the others as a product: its values with some partner, in their own form
    /// (no periodic set to draw).
    defined: Option<&'a dimguard_solver::report::DefinedValues>,
}

impl PageDim {
    /// The input dimension, when known.
    pub fn source(&self) -> Option<&str> {
        match self {
            PageDim::Check(c) => Some(&c.source),
            PageDim::Diagnose(d) => d.source.as_deref(),
            PageDim::Drawn(d) => d.source.as_deref(),
        }
    }

    /// Its name in `diagnose`'s groups.
    fn name(&self) -> Option<&str> {
        match self {
            PageDim::Check(_) => None,
            PageDim::Diagnose(d) => Some(&d.name),
            PageDim::Drawn(d) => Some(&d.name),
        }
    }

    fn sides(&self) -> Option<&LinkedSides> {
        match self {
            PageDim::Check(c) => Some(&c.sides),
            PageDim::Diagnose(d) => Some(&d.sides),
            PageDim::Drawn(_) => None,
        }
    }

    /// The range its values are drawn over (without the set's bounds).
    fn range(&self) -> Option<(i128, i128)> {
        match self {
            PageDim::Check(c) => Some((c.claimed.min?, c.claimed.max?)),
            PageDim::Diagnose(d) => d.range.map(|[a, b]| (a, b)),
            PageDim::Drawn(d) => d.range.map(|[a, b]| (a, b)),
        }
    }

    fn strip(&self) -> StripDim<'_> {
        let named = |n: &str, s: Option<&str>| match s {
            Some(s) => format!("{n} = {s}"),
            None => n.to_string(),
        };
        let tied_to = self.sides().and_then(|s| s.tied_to.as_ref());
        // A linked size: the values that pass with some partner; a tied one: its partner's set
        // through the tie.
        let partner = self
            .sides()
            .and_then(|s| s.with_some_partner.as_ref())
            .or(tied_to.and_then(|t| t.accepted.as_ref()));
        let range = self.range();
        match self {
            PageDim::Check(c) => StripDim {
                label: format!("{}.size({}) = {}", c.input, c.index, c.expr),
                linked_with: &c.linked_with,
                set: partner.or(c.accepted.as_ref()),
                range,
                undecided_part: c.undecided.as_ref().map(|u| (u.count, u.reason.as_str())),
                tied_to,
                defined: c.sides.defined_values.as_ref(),
                ..StripDim::default()
            },
            PageDim::Diagnose(d) => StripDim {
                label: named(&d.name, d.source.as_deref()),
                linked_with: &d.linked_with,
                set: partner.or(d.feasible.as_ref()),
                range,
                unconstrained: d.status == Status::Unconstrained,
                undecided: d.undecided.as_deref(),
                tied_to,
                ..StripDim::default()
            },
            PageDim::Drawn(d) => StripDim {
                label: named(&d.name, d.source.as_deref()),
                set: d.feasible.as_ref(),
                range,
                ..StripDim::default()
            },
        }
    }
}

/// A strip of the range's values, wrapped into rows whose width is a multiple of the set's period
/// so each residue class forms a column.
/// `free`: the size is linked, but its joint set is its side times the rest (the link excludes
/// none of its values).
fn strip(d: &StripDim, i: usize, free: bool) -> String {
    let label = &d.label;
    let mut out = format!("<h3 id=\"dim-{i}\">{}</h3>", esc(label));
    let linked = !d.linked_with.is_empty();
    if let Some(t) = d.tied_to {
        let _ = write!(
            out,
            "<p class=\"tied\">Tied: {}. Its answer is {}'s, through the tie: the marks are \
             its values that pass with some value of {}.</p>",
            esc(&t.relation),
            esc(&t.partner),
            esc(&t.partner)
        );
    }
    if linked && free {
        let _ = write!(
            out,
            "<p>Guards link it to {}, but the link excludes none of its values: each value \
             marked passes with every accepted value of those (see the joint answer above).</p>",
            esc(&d.linked_with.join(", "))
        );
    } else if linked {
        let _ = write!(
            out,
            "<p>Linked to {} by guards over several sizes: which of its values pass depends on \
             them (see the joint answer above). The marks are the values that pass with some \
             value of those.</p>",
            esc(&d.linked_with.join(", "))
        );
    }
    if let Some(v) = d.defined {
        let list = |xs: &[i128]| {
            xs.iter()
                .map(i128::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = write!(
            out,
            "<p class=\"note\">Defined by the others: {} = {}. No value passes with every \
             value of those; its values with some partner are {} (e.g. {}; the others fail \
             with every partner, e.g. {}). Not a periodic set: no strip is drawn.</p>",
            esc(&d.label),
            esc(&v.relation),
            esc(&v.text),
            esc(&list(&v.examples)),
            esc(&list(&v.excluded_examples))
        );
        return out;
    }
    // Null, undecided, or segments dropped by the output budget: no set to draw.
    let Some(set) = d.set.and_then(|f| f.set().ok()) else {
        if let Some(why) = d.undecided {
            let _ = write!(out, "<p class=\"bad\">Not decided: {}</p>", esc(why));
        } else if d.unconstrained {
            out.push_str(
                "<p>No guard names this size alone (when it is linked to another size, see \
                 the joint answer).</p>",
            );
        } else {
            out.push_str("<p class=\"bad\">The report carries no accepted set for this size.</p>");
        }
        return out;
    };
    let Some((lo, hi)) = d.range.or_else(|| Some((set.min()?, set.max()?))) else {
        out.push_str("<p>No range.</p>");
        return out;
    };
    let n = (hi - lo + 1).max(0) as u128;
    let acc = set.count();
    let period = set.period().clamp(1, 1 << 20);
    let classes: Vec<i128> = (0..period.min(4096))
        .filter(|r| {
            set.segments()
                .iter()
                .any(|s| s.residues.contains(&r.rem_euclid(s.modulus)))
        })
        .collect();
    let colour = |x: i128| {
        let k = classes
            .iter()
            .position(|c| *c == x.rem_euclid(period))
            .unwrap_or(0);
        PALETTE[k % PALETTE.len()]
    };
    let summary = format!(
        "{label}: {acc} of {n} values in {lo}..{hi} pass {}{}",
        if linked {
            "with some partner"
        } else {
            "every guard"
        },
        if period > 1 {
            format!(
                "; accepted residues mod {period}: {}",
                classes
                    .iter()
                    .map(i128::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        }
    );
    let _ = write!(out, "<p class=\"note\">{}</p>", esc(&summary));
    // `check`'s values neither proven to pass nor to fail (drawn pale, said here).
    if let Some((count, reason)) = d.undecided_part {
        let _ = write!(
            out,
            "<p class=\"bad\">{count} values not decided: {}</p>",
            esc(reason)
        );
    }
    if period > 1 && classes.len() <= 32 {
        out.push_str("<ul class=\"legend\" aria-label=\"residue classes\">");
        for c in &classes {
            let _ = write!(
                out,
                "<li><span class=\"sw\" style=\"background:{}\"></span>≡ {c} (mod {period})</li>",
                colour(*c)
            );
        }
        out.push_str(
            "<li><span class=\"sw\" style=\"background:#e2e2e2\"></span>fails a guard</li></ul>",
        );
    }
    if n == 0 || n > MAX_MARKS {
        // Too many to draw one by one: one band per segment over the range.
        let w = 900.0;
        let span = (hi - lo).max(1) as f64;
        let _ = write!(
            out,
            "<svg class=\"strip\" data-marks=\"{}\" data-aggregated=\"true\" viewBox=\"0 0 {w} 40\" role=\"img\" tabindex=\"0\" aria-label=\"{}\"><title>{}</title><rect class=\"rej\" x=\"0\" y=\"8\" width=\"{w}\" height=\"18\"/>",
            set.segments().len(),
            esc(&summary),
            esc(&summary)
        );
        for s in set.segments() {
            let x0 = (s.lo - lo) as f64 / span * w;
            let x1 = ((s.hi - lo) as f64 / span * w).max(x0 + 1.0);
            let _ = write!(
                out,
                "<rect class=\"band\" x=\"{x0:.1}\" y=\"8\" width=\"{:.1}\" height=\"18\" fill=\"#0072B2\"><title>{}..{} mod {} in {{{}}}</title></rect>",
                x1 - x0,
                s.lo,
                s.hi,
                s.modulus,
                s.residues.iter().map(i128::to_string).collect::<Vec<_>>().join(", ")
            );
        }
        let _ = write!(
            out,
            "<text class=\"axis\" x=\"0\" y=\"38\">{lo}</text><text class=\"axis\" x=\"{w}\" y=\"38\" text-anchor=\"end\">{hi}</text></svg>\
             <p class=\"note\">{} values: drawn as {} band(s), one per segment.</p>",
            n,
            set.segments().len()
        );
        return out;
    }
    // Columns: a multiple of the period near 64 (at most 128), so classes line up.
    let cols = if period <= 128 {
        (64 / period).max(1) * period
    } else {
        64
    }
    .min(n as i128)
    .max(1);
    let rows = (n as i128 + cols - 1) / cols;
    let cell: i128 = if cols <= 32 {
        20
    } else {
        (880 / cols).clamp(6, 14)
    };
    let left = 56;
    let (w, h) = (left + cols * cell, rows * cell + 4);
    let _ = write!(
        out,
        "<svg class=\"strip\" data-marks=\"{acc}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" role=\"img\" tabindex=\"0\" aria-label=\"{}\"><title>{}</title>",
        esc(&summary),
        esc(&summary)
    );
    // Each row: its first value, a pale bar for the row's values (those that fail stay pale),
    // then one mark per accepted value.
    for r in 0..rows {
        let in_row = (n as i128 - r * cols).min(cols);
        let _ = write!(
            out,
            "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect class=\"rej\" x=\"{left}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            left - 4,
            r * cell + cell * 4 / 5,
            lo + r * cols,
            r * cell,
            in_row * cell - 1,
            cell - 1
        );
    }
    let side = cell - 1;
    for k in 0..n as i128 {
        let x = lo + k;
        if set.contains(x) {
            let _ = write!(
                out,
                "<rect class=\"acc\" x=\"{}\" y=\"{}\" width=\"{side}\" height=\"{side}\" fill=\"{}\"><title>{x}</title></rect>",
                left + (k % cols) * cell,
                (k / cols) * cell,
                colour(x)
            );
        }
    }
    out.push_str("</svg>");
    let _ = write!(
        out,
        "<details><summary>The accepted values as text</summary><p>{}</p></details>",
        esc(&segments_text(&set))
    );
    out
}

fn segments_text(set: &DimSet) -> String {
    if set.is_empty() {
        return "none".into();
    }
    set.segments()
        .iter()
        .map(|s| {
            if s.modulus == 1 {
                format!("{}..{}", s.lo, s.hi)
            } else {
                format!(
                    "{}..{} with x mod {} in {{{}}}",
                    s.lo,
                    s.hi,
                    s.modulus,
                    s.residues
                        .iter()
                        .map(i128::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A group of linked sizes as the page plots it: the sizes drawn, and the accepted tuples over
/// them.
struct Group {
    names: Vec<String>,
    tuples: Vec<Vec<i128>>,
    /// The largest sound box over the sizes drawn, per size `[lo, hi]`, when the report carries
    /// one.
    sound_box: Option<Vec<(i128, i128)>>,
    note: String,
}

/// A joint set (`check`'s `joint`, `diagnose`'s and `verify`'s `joint_sets`), read: its sizes,
/// its boxes as exact sets (when every box is listed and readable), and which sizes are
/// independent of the others.
struct Joint<'a> {
    v: &'a JointReport,
    names: &'a [String],
    boxes: Option<Vec<Vec<DimSet>>>,
    /// Per size: the joint set is its side times the rest (every box has the same side), so the
    /// link excludes none of its values. All false unless `boxes` is the whole joint set.
    independent: Vec<bool>,
}

impl Joint<'_> {
    /// `None` for a group of fewer than two sizes.
    fn read(v: &JointReport) -> Option<Joint<'_>> {
        let names = &v.dims[..];
        if names.len() < 2 {
            return None;
        }
        // The whole joint set: every box listed and readable, nothing undecided, no size
        // defined by the others.
        let boxes: Option<Vec<Vec<DimSet>>> = crate::api::joint_boxes(v)
            .filter(|b| !b.is_empty() && b.iter().all(|s| s.len() == names.len()));
        let independent = boxes
            .as_deref()
            .map_or_else(|| vec![false; names.len()], crate::api::independent);
        Some(Joint {
            v,
            names,
            boxes,
            independent,
        })
    }

    /// The sizes the plot draws: those not independent of the others, completed with
    /// independent ones (in the group's order) to at least two.
    fn plotted(&self) -> Vec<usize> {
        let mut out: Vec<usize> = (0..self.names.len())
            .filter(|k| !self.independent[*k])
            .collect();
        for k in 0..self.names.len() {
            if out.len() >= 2 {
                break;
            }
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out.sort_unstable();
        out
    }

    /// The 2-D plot's group: the accepted tuples over the plotted sizes (each once), when they
    /// are few enough to draw.
    fn group(&self) -> Option<Group> {
        let boxes = self.boxes.as_ref()?;
        let keep = self.plotted();
        let mut tuples: std::collections::BTreeSet<Vec<i128>> = Default::default();
        for b in boxes {
            let mut part: Vec<Vec<i128>> = vec![vec![]];
            for &k in &keep {
                if b[k].count() > MAX_MARKS {
                    return None;
                }
                let side: Vec<i128> = b[k].iter().collect();
                part = part
                    .iter()
                    .flat_map(|t| {
                        side.iter().map(move |v| {
                            let mut t = t.clone();
                            t.push(*v);
                            t
                        })
                    })
                    .collect();
                if part.len() as u128 > MAX_MARKS {
                    return None;
                }
            }
            tuples.extend(part);
            if tuples.len() as u128 > MAX_MARKS {
                return None;
            }
        }
        let sound_box = self.v.largest_box.as_ref().and_then(|lb| {
            keep.iter()
                .map(|&k| lb.sides.get(k).map(|p| (p.lo, p.hi)))
                .collect::<Option<Vec<_>>>()
        });
        let collapsed: Vec<&str> = (0..self.names.len())
            .filter(|k| !keep.contains(k))
            .map(|k| self.names[k].as_str())
            .collect();
        let note = if collapsed.is_empty() {
            String::new()
        } else {
            format!(
                "Drawn once: {} {} independent of the others (every value of {} passes with \
                 every tuple drawn).",
                collapsed.join(", "),
                if collapsed.len() == 1 { "is" } else { "are" },
                if collapsed.len() == 1 { "it" } else { "them" }
            )
        };
        Some(Group {
            names: keep.iter().map(|&k| self.names[k].clone()).collect(),
            tuples: tuples.into_iter().collect(),
            sound_box,
            note,
        })
    }
}

/// A set in a few words: `224..227`, `64..512 step 32`, or its segments.
fn set_text(set: &DimSet) -> String {
    match set.as_progression() {
        Some(p) if p.lo == p.hi => p.lo.to_string(),
        Some(p) if p.modulus == 1 => format!("{}..{}", p.lo, p.hi),
        Some(p) => format!("{}..{} step {}", p.lo, p.hi, p.modulus),
        None => segments_text(set),
    }
}

/// A progression side in a few words.
fn side_text(p: &Suggestion) -> String {
    match (p.lo, p.hi, p.modulus) {
        (a, b, _) if a == b => a.to_string(),
        (a, b, m) if m > 1 => format!("{a}..{b} step {m}"),
        (a, b, _) => format!("{a}..{b}"),
    }
}

/// The joint answer, first on the page: per group of linked sizes, the answer in a sentence,
/// how many tuples pass, the largest sound box (and the box through the traced sizes that the
/// spec uses, when it differs), which sizes the link leaves free, and one plot of the accepted
/// tuples.
fn joint_section(report: &Page, joints: &[Joint]) -> String {
    let derived = derived_groups(report);
    if joints.is_empty() && derived.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section aria-labelledby=\"h-joint\"><h2 id=\"h-joint\">Joint answer: linked sizes</h2>",
    );
    let mut plot = 0;
    for j in joints {
        let what: Vec<String> = j
            .names
            .iter()
            .zip(j.v.sources.iter().map(Some).chain(std::iter::repeat(None)))
            .map(|(n, s)| match s {
                Some(s) => format!("{n} = {s}"),
                None => n.clone(),
            })
            .collect();
        let _ = write!(
            out,
            "<h3>{}</h3><p><strong>{}</strong></p><ul>",
            esc(&what.join(", ")),
            esc(&j.v.summary)
        );
        let nboxes = j.v.boxes.len();
        let _ = write!(
            out,
            "<li>accepts {} of the {} claimed combinations ({nboxes} box{}{})</li>",
            count_text(j.v.accepted),
            count_text(j.v.claimed),
            if nboxes == 1 { "" } else { "es" },
            if j.boxes.is_some() { "" } else { " or more" }
        );
        if let Some(lb) = &j.v.largest_box {
            let text: Vec<String> = j
                .names
                .iter()
                .zip(&lb.sides)
                .map(|(n, p)| format!("{n} in {}", side_text(p)))
                .collect();
            let _ = write!(
                out,
                "<li>largest sound box: {} ({} combinations{})</li>",
                esc(&text.join(", ")),
                count_text(lb.count),
                if lb.maximal { ", maximal" } else { "" }
            );
        }
        // The box through the traced sizes, when the spec uses it instead.
        let through: Vec<String> =
            j.v.sources
                .iter()
                .zip(j.names)
                .filter_map(|(src, n)| {
                    let d = report.dims.iter().find(|d| d.source() == Some(src))?;
                    let side = d.sides()?.example_box_side.as_ref()?;
                    Some(format!("{n} in {}", side_text(side)))
                })
                .collect();
        if !through.is_empty() {
            let _ = write!(
                out,
                "<li>the spec below uses the sound box through the traced sizes: {}</li>",
                esc(&through.join(", "))
            );
        }
        if let Some(boxes) = &j.boxes {
            if j.independent.iter().all(|i| *i) {
                out.push_str(
                    "<li>the link excludes nothing: every combination of the sizes' accepted \
                     values passes</li>",
                );
            } else {
                for (k, n) in j
                    .names
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| j.independent[*k])
                {
                    let others: Vec<&str> = j
                        .names
                        .iter()
                        .enumerate()
                        .filter(|(o, _)| *o != k)
                        .map(|(_, o)| o.as_str())
                        .collect();
                    let _ = write!(
                        out,
                        "<li>{n} is independent of {}: every {n} in {} passes with every \
                         accepted ({}); the link excludes nothing for it</li>",
                        esc(&others.join(", ")),
                        esc(&set_text(&boxes[0][k])),
                        esc(&others.join(", "))
                    );
                }
            }
        }
        if let Some(u) = &j.v.undecided {
            let _ = write!(
                out,
                "<li class=\"bad\">{} combinations not decided: {}</li>",
                count_text(u.count),
                esc(&u.reason)
            );
        }
        // A few tuples of the joint set and outside it (as the text's `pass` and `fail` rows).
        for (word, ts) in [
            ("pass", &j.v.accepted_examples),
            ("fail", &j.v.rejected_examples),
        ] {
            let shown: Vec<String> = ts
                .iter()
                .take(3)
                .map(|t| {
                    let vals: Vec<String> = t.iter().map(i128::to_string).collect();
                    format!("({})", vals.join(", "))
                })
                .collect();
            if !shown.is_empty() {
                let _ = write!(
                    out,
                    "<li>{word}, e.g. ({}) = {}</li>",
                    esc(&j.names.join(", ")),
                    esc(&shown.join(", "))
                );
            }
        }
        out.push_str("</ul>");
        match j.group() {
            Some(g) => {
                out.push_str(&pairs(&g, plot));
                plot += 1;
            }
            None => out.push_str(
                "<p class=\"note\">Not drawn: too many tuples to draw one by one, or not \
                 every box is listed.</p>",
            ),
        }
    }
    for g in &derived {
        let _ = write!(out, "<h3>{}</h3>", esc(&g.names.join(", ")));
        out.push_str(&pairs(g, plot));
        plot += 1;
    }
    out.push_str("</section>");
    out
}

/// `diagnose`'s groups of a root and members derived from it (`linked`): one tuple per accepted
/// root value, each member's value from its expression of the root.
fn derived_groups(report: &Page) -> Vec<Group> {
    let mut out = vec![];
    for g in &report.linked {
        let root = g.root.as_str();
        let Some(set) = g.feasible.as_ref().and_then(|f| f.set().ok()) else {
            continue;
        };
        if set.count() > MAX_MARKS {
            continue;
        }
        let root_var = crate::solver::python::py_name(root);
        let mut names = vec![root.to_string()];
        let mut members = vec![];
        for [n, e] in &g.members {
            if let Ok(expr) = parse_expr(e) {
                names.push(n.clone());
                members.push(expr);
            }
        }
        if names.len() < 2 {
            continue;
        }
        let (lo, hi) = report
            .dims
            .iter()
            .find(|d| d.name() == Some(root))
            .and_then(PageDim::range)
            .or_else(|| Some((set.min()?, set.max()?)))
            .unwrap_or((0, -1));
        let tuples: Vec<Vec<i128>> = set
            .clip(lo, hi)
            .iter()
            .filter_map(|x| {
                let mut t = vec![x];
                for e in &members {
                    let v = e
                        .eval(&|a| (a == root || a == root_var).then_some(x))
                        .ok()?;
                    match v {
                        Value::Num(q) if q.is_integer() => t.push(*q.numer()),
                        _ => return None,
                    }
                }
                Some(t)
            })
            .collect();
        out.push(Group {
            names,
            tuples,
            sound_box: None,
            note: "members are derived from the root: one Dim holds the whole group".into(),
        });
    }
    out
}

/// A 2-D plot of a group's accepted tuples (the first two sizes; with three sizes, one panel per
/// value of the third, at most 6 panels, each its own plot).
fn pairs(g: &Group, i: usize) -> String {
    let mut out = format!("<h3>{}</h3>", esc(&g.names.join(", ")));
    if !g.note.is_empty() {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(&g.note));
    }
    let slices: Vec<(Option<i128>, Vec<&Vec<i128>>)> = if g.names.len() >= 3 {
        let mut vals: Vec<i128> = g.tuples.iter().map(|t| t[2]).collect();
        vals.sort_unstable();
        vals.dedup();
        let shown: Vec<i128> = vals.iter().copied().take(6).collect();
        if vals.len() > shown.len() {
            let _ = write!(
                out,
                "<p class=\"note\">{} values of {}: the first {} are drawn.</p>",
                vals.len(),
                esc(&g.names[2]),
                shown.len()
            );
        }
        shown
            .into_iter()
            .map(|v| (Some(v), g.tuples.iter().filter(|t| t[2] == v).collect()))
            .collect()
    } else {
        vec![(None, g.tuples.iter().collect())]
    };
    for (j, (slice, ts)) in slices.iter().enumerate() {
        let (Some(x0), Some(x1), Some(y0), Some(y1)) = (
            ts.iter().map(|t| t[0]).min(),
            ts.iter().map(|t| t[0]).max(),
            ts.iter().map(|t| t[1]).min(),
            ts.iter().map(|t| t[1]).max(),
        ) else {
            out.push_str("<p>No accepted tuple.</p>");
            continue;
        };
        let (x0, x1, y0, y1) = match &g.sound_box {
            Some(b) if b.len() >= 2 => (
                x0.min(b[0].0),
                x1.max(b[0].1),
                y0.min(b[1].0),
                y1.max(b[1].1),
            ),
            _ => (x0, x1, y0, y1),
        };
        let (pw, ph, m) = (480.0, 480.0, 48.0);
        let sx = |x: i128| m + (x - x0) as f64 / ((x1 - x0).max(1)) as f64 * (pw - 10.0);
        let sy = |y: i128| ph - (y - y0) as f64 / ((y1 - y0).max(1)) as f64 * (ph - 10.0) + 5.0;
        let label = format!(
            "{} accepted ({}, {}) pairs{}",
            ts.len(),
            g.names[0],
            g.names[1],
            slice.map_or(String::new(), |v| format!(" with {} = {v}", g.names[2]))
        );
        let _ = write!(
            out,
            "<svg class=\"pairs\" id=\"pairs-{i}-{j}\" data-marks=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" role=\"img\" tabindex=\"0\" aria-label=\"{}\"><title>{}</title>\
             <rect x=\"{m}\" y=\"0\" width=\"{pw}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#999\"/>",
            ts.len(),
            pw + m + 10.0,
            ph + 40.0,
            pw + m + 10.0,
            esc(&label),
            esc(&label),
            ph + 10.0
        );
        let r = (300.0 / (ts.len() as f64).sqrt()).clamp(1.2, 4.0);
        for t in ts {
            let _ = write!(
                out,
                "<circle class=\"tup\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r:.1}\" fill=\"#0072B2\"><title>({}, {})</title></circle>",
                sx(t[0]),
                sy(t[1]),
                t[0],
                t[1]
            );
        }
        // The box, on the panels whose slice value it contains.
        let in_box = |b: &Vec<(i128, i128)>| {
            b.len() >= 2 && slice.is_none_or(|v| b.get(2).is_none_or(|r| r.0 <= v && v <= r.1))
        };
        if let Some(b) = g.sound_box.as_ref().filter(|b| in_box(b)) {
            let _ = write!(
                out,
                "<rect class=\"box\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>largest sound box: {} in {}..{}, {} in {}..{}</title></rect>",
                sx(b[0].0),
                sy(b[1].1),
                sx(b[0].1) - sx(b[0].0),
                sy(b[1].0) - sy(b[1].1),
                g.names[0], b[0].0, b[0].1, g.names[1], b[1].0, b[1].1
            );
        }
        let _ = write!(
            out,
            "<text class=\"axis\" x=\"{m}\" y=\"{:.0}\">{x0}</text><text class=\"axis\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{x1}</text>\
             <text class=\"axis\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>\
             <text class=\"axis\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{y1}</text><text class=\"axis\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{y0}</text>\
             <text class=\"axis\" x=\"12\" y=\"{:.0}\" transform=\"rotate(-90 12 {:.0})\" text-anchor=\"middle\">{}</text></svg>",
            ph + 24.0,
            pw + m,
            ph + 24.0,
            m + pw / 2.0,
            ph + 36.0,
            esc(&g.names[0]),
            m - 4.0,
            12.0,
            m - 4.0,
            ph + 5.0,
            ph / 2.0,
            ph / 2.0,
            esc(&g.names[1])
        );
    }
    out
}

fn line_card(l: &LineReport) -> String {
    let short = crate::solver::short_file(&l.file);
    let mut out = format!(
        "<div class=\"card{}\"><p><span class=\"loc\" title=\"{}\">{}:{}</span> in <code>{}</code>{}{}</p>",
        if l.user { "" } else { " lib" },
        esc(&l.file),
        esc(short),
        l.line,
        esc(&l.function),
        if l.ops.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"ops\">(torch: {})</span>", esc(&l.ops.join(", ")))
        },
        if l.user {
            ""
        } else {
            " <span class=\"ops\">— no user frame was recorded; this is torch's frame</span>"
        }
    );
    if let Some(c) = &l.code {
        let _ = write!(out, "<pre><code>{}</code></pre>", esc(c));
    }
    if !l.dims.is_empty() {
        out.push_str("<table><thead><tr><th scope=\"col\">size</th><th scope=\"col\">this line requires</th><th scope=\"col\">removes</th></tr></thead><tbody>");
        for d in &l.dims {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&d.name),
                esc(&d.requires),
                match d.removes {
                    Some(r) => format!("{r} of {}", d.of),
                    None => "not decided".into(),
                }
            );
        }
        out.push_str("</tbody></table>");
    }
    for g in &l.links {
        let _ = write!(out, "<p>Links sizes: <code>{}</code></p>", esc(g));
    }
    let _ = write!(
        out,
        "<details><summary>{} guard{} recorded at this line</summary><ul>{}</ul></details></div>",
        l.guards.len(),
        if l.guards.len() == 1 { "" } else { "s" },
        l.guards
            .iter()
            .map(|g| format!("<li><code>{}</code></li>", esc(g)))
            .collect::<String>()
    );
    out
}

/// The rounds of a `dimguard.export` report: each round's outcome, notes, and the guards it
/// recorded grouped by source line (`lines`, from the trace captured during the round).
fn rounds_section(rounds: &[Round]) -> String {
    let mut out = String::from(
        "<section aria-labelledby=\"h-rounds\"><h2 id=\"h-rounds\">Export rounds</h2>",
    );
    for r in rounds {
        let _ = write!(
            out,
            "<h3>Round {}: {}</h3>",
            r.round,
            esc(&r.outcome.replace('_', " "))
        );
        if let Some(e) = r.error.as_deref().filter(|e| !e.is_empty()) {
            let _ = write!(out, "<p class=\"bad\">{}</p>", esc(e));
        }
        if !r.notes.is_empty() {
            let _ = write!(
                out,
                "<ul>{}</ul>",
                r.notes
                    .iter()
                    .map(|n| format!("<li>{}</li>", esc(n)))
                    .collect::<String>()
            );
        }
        if let Some(spec) = &r.spec {
            let _ = write!(
                out,
                "<details><summary>The spec of this round</summary><pre><code>{}</code></pre></details>",
                esc(spec)
            );
        }
        for l in &r.lines {
            out.push_str(&line_card(l));
        }
    }
    out.push_str("</section>");
    out
}

/// A cover (`diagnose --cover N`, or a `dimguard.Dispatch`): the summary, then each piece's
/// spec with what it holds.
fn cover_section(c: &PageCover) -> String {
    let mut out = format!(
        "<section aria-labelledby=\"h-cover\"><h2 id=\"h-cover\">Several specs that cover every valid size</h2>\
         <p>{}</p>",
        esc(&c.summary)
    );
    if !(c.left_out.is_empty() && c.notes.is_empty()) {
        out.push_str("<ul class=\"note\">");
        for n in c.left_out.iter().chain(&c.notes) {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>");
    }
    for (i, p) in c.pieces.iter().enumerate() {
        let sides: Vec<String> = p
            .sides
            .iter()
            .map(|s| {
                let step = if s.modulus > 1 {
                    format!(" ≡ {} (mod {})", s.residue, s.modulus)
                } else {
                    String::new()
                };
                format!("{} in {}..{}{step}", s.name, s.lo, s.hi)
            })
            .collect();
        let what = [p.label.clone().unwrap_or_default(), sides.join(", ")]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        let held = p.count.map(|n| format!(" ({n} sizes)")).unwrap_or_default();
        let _ = write!(
            out,
            "<h3>Spec {} of {}: {}{held}</h3><pre tabindex=\"0\"><code>{}</code></pre>",
            i + 1,
            c.pieces.len(),
            esc(&what),
            esc(&p.code)
        );
    }
    out.push_str("</section>");
    out
}

/// `check`'s run-time checks: asserts inside the graph (they raise mid-run, not when the program
/// is called) and limits the graph implies without any check, each with what it rejects and the
/// user's line.
fn runtime_section(checks: &[RuntimeCheck]) -> String {
    let mut out = String::from(
        "<section aria-labelledby=\"h-runtime\"><h2 id=\"h-runtime\">Run-time asserts and implied limits</h2>\
         <p class=\"note\">Guards are checked when the program is called; these are not: a run-time \
         assert raises mid-run, an implied limit (an index into a fixed-length table) fails inside \
         an operator. The accepted sizes above include them.</p><ul>",
    );
    for c in checks {
        let kind = c.kind.label();
        let cond = c.on_inputs.as_deref().unwrap_or(&c.condition);
        let rejects = match c.rejects {
            Some(0) => " — rejects no claimed size".to_string(),
            Some(n) => {
                let ex: Vec<String> = c
                    .rejected_examples
                    .iter()
                    .take(3)
                    .map(i128::to_string)
                    .collect();
                format!(
                    " — <span class=\"bad\">rejects {n} claimed size{}</span>{}",
                    if n == 1 { "" } else { "s" },
                    if ex.is_empty() {
                        String::new()
                    } else {
                        format!(", e.g. {}", ex.join(", "))
                    }
                )
            }
            None => c
                .reason
                .as_deref()
                .map(|r| format!(" — {}", esc(r)))
                .unwrap_or_default(),
        };
        let at = c.needed_by.as_ref().map_or(&c.target, |n| &n.target);
        let line = c
            .stack_trace
            .as_deref()
            .or(c.needed_by.as_ref().and_then(|n| n.stack_trace.as_deref()))
            .and_then(|t| {
                t.lines()
                    .find(|l| l.contains("File ") && !l.contains("site-packages"))
            })
            .map(|l| format!("<br><span class=\"ops\">{}</span>", esc(l.trim())))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<li>{kind}: <code>{}</code> (at <code>{}</code>){rejects}{line}</li>",
            esc(cond),
            esc(at)
        );
    }
    out.push_str("</ul></section>");
    out
}

/// The guards: a `check` report lists them once, with the sizes each mentions; without that
/// list, a diagnosis's guards per size, with what each requires.
fn guard_list(dims: &[PageDim], top: &[GuardUse]) -> String {
    let mut out = String::new();
    let item = |g: &GuardUse| {
        format!(
            "<li><code>{}</code>{}{}</li>",
            esc(&g.guard),
            if g.sizes.is_empty() {
                String::new()
            } else {
                format!(" — on {}", esc(&g.sizes.join(", ")))
            },
            match (&g.reason, &g.error) {
                (_, Some(e)) => format!(" — <span class=\"bad\">not read: {}</span>", esc(e)),
                (Some(r), _) => format!(" — <span class=\"bad\">{}</span>", esc(r)),
                _ => String::new(),
            }
        )
    };
    if !top.is_empty() {
        // `check`: the guards a person must look at (undecided, unread) one by one; those
        // solved (one size at a time, or jointly) folded, one line per kind.
        out.push_str("<section aria-labelledby=\"h-guards\"><h2 id=\"h-guards\">Guards</h2>");
        let is_open = |g: &GuardUse| matches!(g.fate, GuardFate::Undecided | GuardFate::Unparsed);
        let open: Vec<&GuardUse> = top.iter().filter(|g| is_open(g)).collect();
        if !open.is_empty() {
            // The first few open; the rest (often the same reason) folded.
            let rest = &open[open.len().min(5)..];
            let _ = write!(
                out,
                "<p class=\"bad\">{} guard{} not decided or not read:</p><ul>{}</ul>{}",
                open.len(),
                if open.len() == 1 { "" } else { "s" },
                open.iter().take(5).map(|g| item(g)).collect::<String>(),
                if rest.is_empty() {
                    String::new()
                } else {
                    format!(
                        "<details><summary>{} more not decided or not read</summary><ul>{}</ul></details>",
                        rest.len(),
                        rest.iter().take(MAX_GUARDS).map(|g| item(g)).collect::<String>()
                    )
                }
            );
        }
        let kinds: [(bool, &str); 2] = [
            (
                true,
                "over several sizes, solved together (the joint answer above)",
            ),
            (
                false,
                "on one size each or none, solved exactly (the strips above)",
            ),
        ];
        for (joint, what) in kinds {
            let these: Vec<&GuardUse> = top
                .iter()
                .filter(|g| !is_open(g))
                .filter(|g| (g.fate == GuardFate::Joint) == joint)
                .collect();
            if these.is_empty() {
                continue;
            }
            // At most [`MAX_GUARDS`] listed (the page stays small; `--json` lists every one).
            let more = these.len().saturating_sub(MAX_GUARDS);
            let _ = write!(
                out,
                "<details><summary>{} guard{} {what}</summary><ul>{}{}</ul></details>",
                these.len(),
                if these.len() == 1 { "" } else { "s" },
                these
                    .iter()
                    .take(MAX_GUARDS)
                    .map(|g| item(g))
                    .collect::<String>(),
                if more > 0 {
                    format!("<li>and {more} more (<code>--json</code> lists every guard)</li>")
                } else {
                    String::new()
                }
            );
        }
        out.push_str("</section>");
        return out;
    }
    for d in dims {
        let PageDim::Diagnose(r) = d else { continue };
        if r.guards.is_empty() {
            continue;
        }
        if out.is_empty() {
            out.push_str("<section aria-labelledby=\"h-guards\"><h2 id=\"h-guards\">Guards</h2>");
        }
        let _ = write!(out, "<h3>{}</h3><ul>", esc(&d.strip().label));
        let text = |g: &GuardReport| {
            format!(
                "<li><code>{}</code>{}</li>",
                esc(&g.text),
                if g.requires.is_empty() {
                    String::new()
                } else {
                    format!(" — requires {}", esc(&g.requires))
                }
            )
        };
        // Guards that remove nothing beyond those listed: one folded line (`folded`: the listed
        // ones keep exactly the size's accepted values).
        let (implied, kept): (Vec<&GuardReport>, Vec<&GuardReport>) =
            r.guards.iter().partition(|g| g.folded);
        for g in &kept {
            out.push_str(&text(g));
        }
        out.push_str("</ul>");
        if !implied.is_empty() {
            let _ = write!(
                out,
                "<details><summary>{} more guard{} remove{} nothing beyond the others</summary><ul>{}</ul></details>",
                implied.len(),
                if implied.len() == 1 { "" } else { "s" },
                if implied.len() == 1 { "s" } else { "" },
                implied.iter().map(|g| text(g)).collect::<String>()
            );
        }
    }
    if !out.is_empty() {
        out.push_str("</section>");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The page of a report's JSON (as the Python package hands it over).
    fn draw(r: &serde_json::Value, title: &str) -> String {
        render_json(&r.to_string(), title).unwrap()
    }

    /// A diagnosed size (`diagnose`'s `dims[]`) with the fields the contract requires.
    fn diagnosed(
        name: &str,
        range: [i64; 2],
        feasible: serde_json::Value,
        status: &str,
    ) -> serde_json::Value {
        json!({"name": name, "source": null, "range": range, "status": status, "feasible": feasible,
               "suggestions": [], "maximality": "", "guards": [], "specialized": null,
               "coverage": null, "padding": null, "torch_fix": null, "undecided": null, "advice": []})
    }

    /// A program's input dimension (`check`'s `dims[]`) with the fields the contract requires.
    fn checked(input: &str, index: usize, source: &str, claimed: [i64; 2]) -> serde_json::Value {
        json!({"input": input, "index": index, "symbol": "s0", "expr": "s0", "source": source,
               "claimed": {"count": claimed[1] - claimed[0] + 1, "min": claimed[0], "max": claimed[1]},
               "accepted": null, "suggestions": [], "rejected_examples": []})
    }

    /// A joint set (`check`'s `joint[]`) with the fields the contract requires.
    fn joint(
        dims: &[&str],
        claimed: u128,
        accepted: u128,
        boxes: serde_json::Value,
    ) -> serde_json::Value {
        json!({"dims": dims, "sources": dims, "claimed": claimed, "accepted": accepted,
               "boxes": boxes, "boxes_complete": true, "accepted_examples": [],
               "rejected_examples": [], "summary": "",
               "search": {"points": 0, "periodic_solves": 0, "shared_nodes": 0}})
    }

    #[test]
    fn marks_match_accepted_values_and_text_is_escaped() {
        let r = json!({
            "form": "torch_trace",
            "dims": [{"name": "h", "source": "L['x'].size()[2]", "range": [96, 1024],
                      "feasible": {"count": 465, "segments": [{"lo": 96, "hi": 1024, "modulus": 8, "residues": [0, 5, 6, 7]}]}}],
            "lines": [{"file": "/m/model.py", "line": 17, "function": "forward", "code": "f = a < b",
                       "user": true, "ops": ["infer_size"], "guards": ["Eq(s0, 1)"],
                       "dims": [{"name": "h", "requires": "h mod 8", "removes": 464, "of": 929}], "links": []}],
            "dynamic_shapes": "h = Dim('h')",
            "linked": [{"root": "a", "members": [["b", "2*a + 1"]], "certificate": "enumeration",
                        "feasible": {"count": 3, "segments": [{"lo": 2, "hi": 4, "modulus": 1, "residues": [0]}]}}]
        });
        let page = draw(&r, "t<1>");
        assert_eq!(page.matches("class=\"acc\"").count(), 465);
        // Rows of 64 values: the pale bar of each row shows the values that fail.
        assert_eq!(
            page.matches("class=\"rej\"").count(),
            929_usize.div_ceil(64)
        );
        assert_eq!(page.matches("class=\"tup\"").count(), 3);
        assert!(page.contains("<title>(4, 9)</title>"));
        assert!(page.contains("f = a &lt; b"));
        assert!(page.contains("dimguard: t&lt;1&gt;"));
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(page.contains("≡ 5 (mod 8)"));
    }

    #[test]
    fn a_cover_lists_each_spec() {
        let r = json!({"dims": [], "cover": {"summary": "1014 of 1014 valid sizes in 2 specs", "left_out": ["w: linked"],
        "pieces": [
            {"sides": [{"name": "_2", "lo": 136, "hi": 2160, "modulus": 8, "residue": 0, "count": 254}], "count": 254, "code": "_2 = 8*__2  # <x>"},
            {"label": "program 1 (Dim.AUTO)", "count": 101, "code": "x = Dim('x')"}
        ]}});
        let page = draw(&r, "t");
        assert!(
            page.contains("<p>1014 of 1014 valid sizes in 2 specs</p>"),
            "{page}"
        );
        assert!(page.contains("<li>w: linked</li>"));
        assert!(
            page.contains("Spec 1 of 2: _2 in 136..2160 ≡ 0 (mod 8) (254 sizes)"),
            "{page}"
        );
        assert!(page.contains("<code>_2 = 8*__2  # &lt;x&gt;</code>"));
        assert!(
            page.contains("Spec 2 of 2: program 1 (Dim.AUTO) (101 sizes)"),
            "{page}"
        );
    }

    #[test]
    fn run_time_checks_are_listed_apart_from_guards() {
        let r = json!({"dims": [], "guards": [], "runtime": [
            {"kind": "implied_limit", "node": "embedding_1", "target": "torch.ops.aten.embedding.default",
             "condition": "s27 <= 128", "on_inputs": "L['ids'].size()[1] <= 128", "sizes": [],
             "fate": "periodic", "rejects": 384, "rejected_examples": [129, 130, 131, 132],
             "stack_trace": "File \"m.py\", line 7, in forward\n    x = self.wpe(pos)\n  File \"/v/site-packages/torch/nn/sparse.py\", line 1"},
            {"kind": "runtime_assert", "node": "_assert_scalar", "target": "torch.ops.aten._assert_scalar.default",
             "condition": "Eq(u0, 1) & <b>", "sizes": [], "fate": "periodic", "rejects": 0}
        ]});
        let page = draw(&r, "t");
        assert!(page.contains("Run-time asserts and implied limits"));
        assert!(
            page.contains("implied limit: <code>L[&#39;ids&#39;].size()[1] &lt;= 128</code>"),
            "{page}"
        );
        assert!(page.contains("rejects 384 claimed sizes</span>, e.g. 129, 130, 131"));
        assert!(
            page.contains("File &quot;m.py&quot;, line 7, in forward"),
            "{page}"
        );
        assert!(!page.contains("sparse.py"), "the user's frame, not torch's");
        assert!(
            page.contains("run-time assert: <code>Eq(u0, 1) &amp; &lt;b&gt;</code>"),
            "{page}"
        );
        assert!(page.contains("rejects no claimed size"));
    }

    #[test]
    fn data_dependent_expressions_show_the_sizes_the_assumption_keeps() {
        let r = json!({"form": "data_dependent", "dims": [], "data_dependent": [{
            "guard": "u1 <= 31", "sizes": ["u1"], "torch_check": ["", ""], "symbols": [],
            "certificate": "enumeration", "source": "x.shape[2]", "range": [16, 1024],
            "when_true": {"count": 16, "segments": [{"lo": 16, "hi": 31, "modulus": 1, "residues": [0]}]},
            "when_false": {"count": 993, "segments": [{"lo": 32, "hi": 1024, "modulus": 1, "residues": [0]}]},
            "always": null, "example_branch": false, "assumption": "H > 31"}]});
        let page = draw(&r, "swin");
        assert!(page.contains("Data-dependent expressions"));
        assert!(page.contains("assume H &gt; 31"));
        assert_eq!(page.matches("class=\"acc\"").count(), 993);
    }

    #[test]
    fn huge_ranges_are_bands_and_undecided_says_so() {
        let mut w = diagnosed("w", [2, 10], json!(null), "undecided");
        w["undecided"] = json!("too wide");
        let r = json!({"dims": [
            diagnosed("h", [2, 9223372036854775807i64],
                json!({"count": 4611686018427387903i64, "segments": [{"lo": 2, "hi": 9223372036854775806i64, "modulus": 2, "residues": [0]}]}),
                "constrained"),
            w]});
        let page = draw(&r, "x");
        assert!(page.contains("data-aggregated=\"true\""));
        assert!(page.contains("Not decided: too wide"));
        assert!(page.len() < 20_000);
    }

    #[test]
    fn export_reports_show_rounds_with_their_lines_and_the_spec() {
        let line = json!({"file": "m.py", "line": 9, "function": "forward", "code": "y = x.view(-1, 4)",
                          "user": true, "ops": ["_reshape_view_helper_core_alg"], "guards": ["Eq(Mod(s0, 4), 0)"],
                          "dims": [{"name": "x_0", "requires": "x_0 ≡ 0 (mod 4)", "removes": 6, "of": 8}], "links": []});
        let r = json!({
            "exported": true, "spec": "x_0 = 4*_x_0",
            "rounds": [{"round": 1, "outcome": "constraint_violation", "spec": "h = Dim('h')", "notes": ["narrowed"],
                        "lines": [line]},
                       {"round": 2, "outcome": "exported", "spec": "x_0 = 4*_x_0", "notes": [], "lines": []}],
            "dims": [checked("x", 0, "L['x'].size()[0]", [4, 8])]
        });
        let mut r = r;
        r["dims"][0]["expr"] = json!("4*s0");
        r["dims"][0]["claimed"]["count"] = json!(2);
        r["dims"][0]["accepted"] = json!({"count": 2, "min": 4, "max": 8, "segments": [{"lo": 4, "hi": 8, "modulus": 4, "residues": [0]}]});
        let page = draw(&r, "export");
        assert!(page.contains("Round 1: constraint violation"));
        assert!(page.contains("y = x.view(-1, 4)"));
        assert!(
            page.contains("id=\"copy\""),
            "the final spec with its button"
        );
        assert_eq!(page.matches("class=\"acc\"").count(), 2);
    }

    #[test]
    fn three_linked_sizes_are_sliced_by_the_third_with_the_box() {
        // Two disjoint boxes: a in 2..5 (even), b in 4..5, c = 1; and a = 3, b in 2..3, c = 2.
        let seg = |lo: i64, hi: i64, m: i64, r: &[i64]| {
            let n = (lo..=hi).filter(|x| r.contains(&x.rem_euclid(m))).count();
            json!({"count": n, "segments": [{"lo": lo, "hi": hi, "modulus": m, "residues": r}]})
        };
        let side = |lo: i64, hi: i64, m: i64| {
            json!({"lo": lo, "hi": hi, "modulus": m, "residue": lo % m, "count": (hi - lo) / m + 1,
                   "code": "", "certificate": "enumeration", "proof": "enumeration"})
        };
        let mut j = joint(
            &["a", "b", "c"],
            64,
            6,
            json!([
                [seg(2, 5, 2, &[0]), seg(4, 5, 1, &[0]), seg(1, 1, 1, &[0])],
                [seg(3, 3, 1, &[0]), seg(2, 3, 1, &[0]), seg(2, 2, 1, &[0])]
            ]),
        );
        j["largest_box"] = json!({"count": 4, "maximal": true,
                                  "sides": [side(2, 4, 2), side(4, 5, 1), side(1, 1, 1)]});
        j["summary"] = json!("6 of 64 tuples pass");
        let r = json!({"dims": [], "joint": [j]});
        let page = draw(&r, "three");
        assert_eq!(
            page.matches("<svg class=\"pairs\"").count(),
            2,
            "one panel per value of c"
        );
        assert_eq!(page.matches("class=\"tup\"").count(), 6);
        assert!(page.contains("with c = 2"));
        assert!(page.contains("6 of 64 tuples pass"));
        assert_eq!(page.matches("class=\"box\"").count(), 1, "c = 1 only");
        // Incomplete box lists are not drawn as if complete.
        let mut r2 = r.clone();
        r2["joint"][0]["boxes_complete"] = json!(false);
        assert!(!draw(&r2, "x").contains("class=\"tup\""));
    }

    #[test]
    fn guards_folded_are_those_that_remove_nothing_beyond_the_listed_ones() {
        // timm's mobilevit_xxs (torch 2.15): every guard of h has an exact twin, so all 33 are
        // redundant, yet together they keep 56 of 417 heights: three are listed, 30 folded.
        let text = include_str!("../tests/data/messages/mobilevit_xxs_215.txt");
        let report = crate::solver::diagnose::diagnose_text(text, &Default::default()).unwrap();
        let h = report.dims.iter().find(|d| d.name == "h").unwrap();
        assert!(h.guards.iter().all(|g| g.redundant));
        // Without the report's own list of guards (`guards`), the page lists them per size.
        let mut v = serde_json::to_value(&report).unwrap();
        v["guards"] = json!([]);
        let page = draw(&v, "mobilevit");
        assert!(
            page.contains("<summary>30 more guards remove nothing beyond the others</summary>"),
            "{page}"
        );
        assert!(page.contains("<summary>29 more guards remove nothing beyond the others</summary>"));
    }

    #[test]
    fn diagnose_joint_sets_are_drawn() {
        // Two images whose pooled H (and W) must match: the joint sets come in `joint_sets`
        // (diagnose's `joint` holds the single guards).
        let text = include_str!("../tests/data/forms/two_input.log.txt");
        let report = crate::solver::diagnose::diagnose_text(text, &Default::default()).unwrap();
        assert_eq!(report.joint_sets.len(), 2);
        let page = render(&Page::diagnosis(&report, None), "shared");
        // The report's JSON, read back into the same types, draws the same page.
        let text = serde_json::to_string(&report).unwrap();
        let read = render_json(&text, "shared").unwrap();
        let at = read
            .bytes()
            .zip(page.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        assert_eq!(
            read.len(),
            page.len(),
            "{}",
            &read[at.saturating_sub(200)..(at + 200).min(read.len())]
        );
        assert!(
            read == page,
            "{}",
            &read[at.saturating_sub(200)..(at + 200).min(read.len())]
        );
        assert_eq!(page.matches("<svg class=\"pairs\"").count(), 2);
        assert!(page.contains(&report.joint_sets[0].summary));
        assert!(page.contains("Linked to image2_2 by guards over several sizes"));
    }

    #[test]
    fn an_independent_size_is_drawn_once_and_the_joint_answer_leads() {
        // (h, w) linked, batch b free: two boxes with the same side of b.
        let seg = |lo: i64, hi: i64| json!({"count": hi - lo + 1, "segments": [{"lo": lo, "hi": hi, "modulus": 1, "residues": [0]}]});
        let linked = |index: usize, with: &str, claimed: [i64; 2], partner: serde_json::Value| {
            let mut d = checked("x", index, &format!("L['x'].size()[{index}]"), claimed);
            d["linked_with"] = json!([with]);
            d["accepted"] = json!({"count": 0, "segments": []});
            d["with_some_partner"] = partner;
            d
        };
        let mut j = joint(
            &["x_2", "x_3", "x_0"],
            800,
            48,
            json!([
                [seg(4, 5), seg(4, 4), seg(1, 8)],
                [seg(6, 7), seg(6, 6), seg(1, 8)]
            ]),
        );
        j["sources"] = json!(["L['x'].size()[2]", "L['x'].size()[3]", "L['x'].size()[0]"]);
        j["summary"] = json!("joint summary");
        j["rejected_examples"] = json!([[1, 1, 1]]);
        j["accepted_examples"] = json!([[4, 4, 1], [5, 4, 2]]);
        let r = json!({"dims": [
            linked(0, "L['x'].size()[2]", [1, 8], seg(1, 8)),
            linked(2, "L['x'].size()[0]", [1, 10], seg(4, 7))],
            "guards": [{"guard": "a", "sizes": [], "fate": "joint"}, {"guard": "b", "sizes": [], "fate": "periodic"}],
            "joint": [j]});
        let page = draw(&r, "free");
        assert_eq!(
            page.matches("<svg class=\"pairs\"").count(),
            1,
            "one (h, w) plot"
        );
        assert_eq!(page.matches("class=\"tup\"").count(), 4);
        assert!(page.contains("x_0 is independent of x_2, x_3: every x_0 in 1..8 passes"));
        assert!(page.find("joint summary") < page.find("Accepted sizes"));
        assert!(
            page.contains("the link excludes none of its values"),
            "{page}"
        );
        // Linked sizes' strips mark the values that pass with some partner.
        assert_eq!(page.matches("class=\"acc\"").count(), 8 + 4);
        assert!(page.contains("<summary>1 guard over several sizes"));
        // Tuples that pass beside those that fail, in the joint set's order.
        assert!(page.contains("<li>pass, e.g. (x_2, x_3, x_0) = (4, 4, 1), (5, 4, 2)</li>"));
        assert!(page.contains("<li>fail, e.g. (x_2, x_3, x_0) = (1, 1, 1)</li>"));
    }

    #[test]
    fn a_tied_size_says_so_and_draws_its_partners_set() {
        // b[0] equal to a[0]; a[0]'s set (2..5 of 2..8) drawn on b[0]'s strip through the tie.
        let set = json!({"count": 4, "min": 2, "max": 5,
                         "segments": [{"lo": 2, "hi": 5, "modulus": 1, "residues": [0]}]});
        let mut a = checked("a", 0, "L['a'].size()[0]", [2, 8]);
        a["accepted"] = set.clone();
        let mut b = checked("b", 0, "L['b'].size()[0]", [2, 8]);
        b["tied_to"] = json!({"partner": "a[0]", "source": "L['a'].size()[0]",
                              "relation": "equal to a[0]", "equal": true, "accepted": set});
        let page = draw(&json!({"dims": [a, b], "guards": []}), "tied");
        assert!(
            page.contains("Tied: equal to a[0]. Its answer is a[0]"),
            "{page}"
        );
        assert_eq!(page.matches("class=\"acc\"").count(), 4 + 4, "{page}");
    }

    #[test]
    fn check_reports_read_back_from_json_draw_the_same_page() {
        // What the Python package hands over (a `check` report's JSON, the audit of
        // `dimguard.export`), read back into the contract's types: the CLI's page, byte for byte.
        for file in [
            "relative_position.model.json",
            "raft_small_torchfix.model.json",
            "two_stem_unbounded.pt2",
        ] {
            let path = format!("{}/tests/data/pt2/{file}", env!("CARGO_MANIFEST_DIR"));
            let bytes = std::fs::read(&path).unwrap();
            let program = crate::graph::load_bytes(bytes, &path).unwrap();
            let report = crate::api::check_program(&program, false).unwrap();
            let page = render(&Page::check(&report), file);
            let text = serde_json::to_string(&report).unwrap();
            assert!(render_json(&text, file).unwrap() == page, "{file}");
            assert!(page.contains("Joint answer: linked sizes"), "{file}");
        }
    }

    #[test]
    fn python_diagnose_and_verify_reports_draw() {
        // The Python package's diagnosis carries the merged spec sheet (an object with its
        // code) as `spec`; `verify`'s `joint` holds checks of joint guards, not joint sets.
        let text = include_str!("../tests/data/forms/two_input.log.txt");
        let report = crate::solver::diagnose::diagnose_text(text, &Default::default()).unwrap();
        let mut v = serde_json::to_value(&report).unwrap();
        v["dynamic_shapes"] = json!("");
        v["spec"] = json!({"roots": [], "entries": [], "code": "h = Dim('h')"});
        let page = draw(&v, "merged");
        assert!(page.contains("<code>h = Dim(&#39;h&#39;)</code>"), "{page}");
        let verify = json!({"sound": false, "unrecognized": [], "guards": [],
            "dims": [{"name": "h", "sound": true, "admitted": 3, "failing": 0, "counterexamples": [],
                      "certificate": "enumeration", "source": null, "spec": "h = Dim('h')", "maximal_spec": null}],
            "joint": [{"guard": "Eq(a, b)", "sound": false, "counterexample": {"a": 1, "b": 2}, "certificate": "z3"}]});
        let page = draw(&verify, "verify");
        assert!(page.contains("The report carries no accepted set for this size."));
        // A joint set that does not read is named.
        let e = render_json(r#"{"joint": [{"boxes": []}]}"#, "x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("report: joint[0] is no joint set: missing field"),
            "{e}"
        );
    }

    #[test]
    fn counts_past_64_bits_are_read_exactly() {
        // An unbounded linked group: its counts saturate at u128::MAX ("more than 3.4e38").
        let text = r#"{"dims": [], "joint": [{"dims": ["a", "b"], "sources": ["a", "b"],
            "claimed": 1180591620717411303424, "accepted": 0, "boxes": [],
            "boxes_complete": true, "summary": "s", "accepted_examples": [], "rejected_examples": [],
            "search": {"points": 0, "periodic_solves": 0, "shared_nodes": 0},
            "undecided": {"count": 340282366920938463463374607431768211455, "reason": "r"}}]}"#;
        let page = render_json(text, "x").unwrap();
        assert!(
            page.contains("accepts 0 of the 1180591620717411303424 claimed"),
            "{page}"
        );
        assert!(page.contains("more than 3.4e38 combinations not decided: r"));
    }

    #[test]
    fn a_report_of_no_known_shape_is_an_error() {
        let e = render_json(r#"{"dims": [{"size": 3}]}"#, "x").unwrap_err();
        assert!(
            e.to_string().starts_with("report: dims[0] is no named set"),
            "{e}"
        );
        let e = render_json(r#"{"dims": [{"input": "x", "index": 0}]}"#, "x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("report: dims[0] is no check dimension: missing field"),
            "{e}"
        );
        assert!(render_json("[1]", "x").is_err());
    }
}
