//! Profiles from a source: TensorRT optimization profiles from a program, a message or `--dim`s
//! (the pipeline behind `dimguard profile` and `dimguard.profile`). A program is loaded and
//! checked once; a group of linked sizes takes one box of its joint set — the one holding the
//! traced sizes when they are known — and the program's intermediate sizes are computed over
//! the box the profiles serve.

use crate::commands::diagnose::{self, Options};
use crate::graph::{self, CheckReport, Program, ProgramGraph};
use crate::solver::python::source_input;
use crate::solver::report::{Feasible, Status};
use crate::solver::{DimSet, Expr};
use crate::trt::{DimKind, InputSpec, ProfileSet};
use dimguard_readers::{Sheet, SheetValue};
use std::collections::{BTreeMap, BTreeSet};

/// Why profiles could not be made from the inputs given.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A shape (`--example`, `--select`) is not `NAME:1x3x520x960`.
    #[error("`{text}`: {why}")]
    ParseShape {
        /// The text given.
        text: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A `--dim` is not `INPUT:INDEX=LO..HI`.
    #[error("`{0}`: expected --dim INPUT:INDEX=LO..HI, e.g. image1:2=135..2160")]
    ParseDim(String),
    /// Checking the program failed.
    #[error(transparent)]
    Check(#[from] graph::Error),
    /// Diagnosing the message failed.
    #[error(transparent)]
    Diagnose(#[from] crate::solver::Error),
    /// Building the profiles failed.
    #[error(transparent)]
    Profile(#[from] crate::trt::profile::Error),
    /// A dimension has no size to serve (none passes, or it is undecided).
    #[error("input `{input}` dimension {index}: {why}")]
    NoSize {
        /// The input.
        input: String,
        /// The dimension.
        index: usize,
        /// Why.
        why: String,
    },
    /// The inputs given do not say enough (a rank, an input's dimensions, what to profile).
    #[error("{0}")]
    Missing(String),
    /// A corner of a profile fails a guard of the program (re-checked before anything is
    /// printed; a bug in dimguard if it ever happens).
    #[error("profile {profile}: the {corner} shapes ({shapes}) fail the program's guard `{guard}`: no profile is printed (a bug in dimguard: please report it)")]
    CornerFails {
        /// The profile.
        profile: usize,
        /// `min`, `opt` or `max`.
        corner: &'static str,
        /// The shapes, `x:1x3x224x224`.
        shapes: String,
        /// The guard.
        guard: String,
    },
}

/// What [`inputs`] read: the profiled inputs and, for a program, its symbolic intermediate sizes
/// over the sizes the inputs allow.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The inputs with their accepted sizes (for a linked size, its side of the chosen box).
    pub specs: Vec<InputSpec>,
    /// For a program: every symbolic intermediate size, `{tensor, index, expr, min, opt, max,
    /// count, exact}`.
    pub intermediate: Option<Vec<serde_json::Value>>,
    /// The dimensions whose `max` dimguard chose, because the sizes they accept reach past
    /// [`UNBOUNDED`] (an unbounded `Dim`, `Dim.AUTO`); no engine is built for 2^63 - 1.
    pub chosen: Vec<Chosen>,
    /// For a program: its guards and run-time conditions over the input sizes; [`build`]
    /// re-checks every corner of every profile against each.
    pub guards: Vec<Expr>,
}

/// A `max` dimguard chose for a dimension that accepts sizes without a useful bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The input.
    pub input: String,
    /// The dimension.
    pub index: usize,
    /// The `max` chosen: the largest accepted size at most [`MAX_FACTOR`] times `base`.
    pub max: i128,
    /// The traced size (else the least accepted size) the bound is a multiple of.
    pub base: i128,
    /// Whether `base` is the traced size.
    pub traced: bool,
    /// The largest size the dimension accepts.
    pub accepted_max: i128,
    /// Every size the dimension accepts (before the cut), for [`select`].
    pub accepted: DimSet,
}

impl Chosen {
    /// The note printed beside the profiles.
    pub fn note(&self) -> String {
        format!(
            "input `{}` dimension {}: the program accepts sizes up to {}; max {} was chosen (the largest accepted size at most {MAX_FACTOR} x the {} {}): give --dim {}:{}=LO..HI for another range",
            self.input,
            self.index,
            self.accepted_max,
            self.max,
            if self.traced { "traced size" } else { "least accepted size" },
            self.base,
            self.input,
            self.index
        )
    }
}

/// A dimension whose accepted sizes reach this far is read as unbounded: its profile `max` is
/// chosen ([`Chosen`]). No tensor has a dimension of 2^62 elements.
pub const UNBOUNDED: i128 = 1 << 62;

/// For an unbounded dimension, the profile's `max` is the largest accepted size at most this
/// many times its traced size (else its least accepted size).
pub const MAX_FACTOR: i128 = 8;

/// `NAME:1x3x520x960`.
pub fn parse_shape(s: &str) -> Result<(String, Vec<i128>), Error> {
    let bad = |why| Error::ParseShape {
        text: s.to_string(),
        why,
    };
    let (name, dims) = s
        .rsplit_once(':')
        .ok_or_else(|| bad("expected NAME:1x3x520x960"))?;
    let v: Result<Vec<i128>, _> = dims.split('x').map(|d| d.trim().parse::<i128>()).collect();
    let v = v.map_err(|_| bad("sizes must be integers separated by `x`"))?;
    Ok((name.to_string(), v))
}

/// `INPUT:INDEX=LO..HI`.
fn parse_dim(s: &str) -> Result<(String, usize, i128, i128), Error> {
    let bad = || Error::ParseDim(s.to_string());
    let (lhs, range) = s.split_once('=').ok_or_else(bad)?;
    let (input, index) = lhs.rsplit_once(':').ok_or_else(bad)?;
    let (lo, hi) = range.split_once("..").ok_or_else(bad)?;
    Ok((
        input.to_string(),
        index.parse().map_err(|_| bad())?,
        lo.parse().map_err(|_| bad())?,
        hi.parse().map_err(|_| bad())?,
    ))
}

/// Inputs from a source file (program or message) plus `--dim` and `--example` flags. With a
/// message, every input given with `--example` is covered: one the message does not name takes,
/// for each dimension that shares a `Dim` of `spec` (the user's `dynamic_shapes`) with a named
/// input, that input's sizes, and its example's size for the rest.
///
/// One flow, each step a call: the examples and the program read (`load`); what the source
/// says of each input, from `dimguard check` over the program (`from_program`) or
/// `dimguard diagnose` over the message (`from_message`); the `--dim`s applied (`bound`);
/// a `max` chosen for each unbounded size (`choose_max`); the program's intermediate sizes
/// over the sizes the profiles serve (`intermediate`).
pub fn inputs(
    source: Option<&str>,
    path: Option<&std::path::Path>,
    dims: &[String],
    examples: &[String],
    spec: Option<&Sheet>,
) -> Result<Inputs, Error> {
    let examples: BTreeMap<String, Vec<i128>> = examples
        .iter()
        .map(|e| parse_shape(e))
        .collect::<Result<_, _>>()?;
    let program = load(path)?;
    let mut read = match &program {
        Some(loaded) => from_program(loaded, &examples)?,
        None => from_message(source, &examples, spec)?,
    };
    let known = Known {
        program: program.is_some(),
        source: program.is_some() || source.is_some(),
    };
    let given = bound(&mut read.specs, dims, &examples, known)?;
    let chosen = choose_max(&mut read.specs, &given, &read.shifted);
    if read.specs.is_empty() {
        return Err(Error::Missing("nothing to profile: give a .pt2 archive, an error message, or --dim INPUT:INDEX=LO..HI with --example".into()));
    }
    let intermediate = program
        .as_ref()
        .map(|l| intermediate(&l.program, &l.graph, &read.specs, &read.shifted))
        .transpose()?;
    Ok(Inputs {
        specs: read.specs,
        intermediate,
        chosen,
        guards: read.guards,
    })
}

/// A program, loaded with its graph (built once for the check and the intermediate sizes).
struct Loaded {
    program: Program,
    graph: ProgramGraph,
}

/// The program at `path`, when it is one (else the source is read as a message).
fn load(path: Option<&std::path::Path>) -> Result<Option<Loaded>, Error> {
    let Some(program) = path.and_then(|p| graph::load(p).ok()) else {
        return Ok(None);
    };
    let graph = ProgramGraph::build(&program)?;
    Ok(Some(Loaded { program, graph }))
}

/// What a source says of the inputs, before the `--dim`s.
#[derive(Default)]
struct Read {
    /// The inputs and what each dimension accepts.
    specs: Vec<InputSpec>,
    /// Tied sizes written from a partner with an offset (`b = a + delta`): `(b, a, delta)`.
    shifted: Vec<Shift>,
    /// For a program: its guards and run-time conditions over the input sizes.
    guards: Vec<Expr>,
}

/// Every input of a program, checked as `dimguard check` does (Z3 decides linked groups too
/// wide to enumerate): a static size, a size equal to another, or the sizes it accepts (a
/// linked size's side of the chosen box, [`chosen_boxes`]).
fn from_program(loaded: &Loaded, examples: &BTreeMap<String, Vec<i128>>) -> Result<Read, Error> {
    let (program, pg) = (&loaded.program, &loaded.graph);
    let report = crate::commands::check::check_program_graph(program, pg, false)?;
    let (boxes, ties) = chosen_boxes(&report, examples);
    let at = Place {
        report: &report,
        boxes: &boxes,
        ties: &ties,
        examples,
    };
    let mut read = Read::default();
    for input in program.user_inputs() {
        let sizes = program.sizes(&input)?.unwrap_or_default();
        let mut ds = Vec::new();
        for (i, s) in sizes.iter().enumerate() {
            ds.push(match s {
                graph::program::Size::Int(n) => DimKind::Static(*n),
                graph::program::Size::Expr(..) => at.kind(&input, i, &mut read.shifted)?,
            });
        }
        read.specs.push(InputSpec {
            name: input,
            dims: ds,
        });
    }
    read.guards = program_guards(program, &report)?;
    Ok(read)
}

/// What the check says of a program's symbolic sizes, and the boxes and ties chosen from it.
struct Place<'a> {
    report: &'a CheckReport,
    boxes: &'a BTreeMap<String, DimSet>,
    ties: &'a Ties,
    examples: &'a BTreeMap<String, Vec<i128>>,
}

impl Place<'_> {
    /// The input and index of the size `source`.
    fn of(&self, source: &str) -> Option<Slot> {
        self.report
            .dims
            .iter()
            .find(|d| d.source == source)
            .map(|d| (d.input.clone(), d.index))
    }

    /// Dimension `i` of `input`, a symbolic size: equal to another size (the check's
    /// `same_as`, or tied and written as its partner), else the sizes it accepts (a tie at an
    /// offset added to `shifted`).
    fn kind(&self, input: &str, i: usize, shifted: &mut Vec<Shift>) -> Result<DimKind, Error> {
        let d = self
            .report
            .dims
            .iter()
            .find(|d| d.input == input && d.index == i)
            .ok_or_else(|| Error::NoSize {
                input: input.to_string(),
                index: i,
                why: "missing from the check".into(),
            })?;
        let tie = self
            .ties
            .get(&d.source)
            .and_then(|(a, delta)| Some((self.of(a)?, *delta)));
        if let Some((o, oi)) = &d.same_as {
            return Ok(DimKind::Same(o.clone(), *oi));
        }
        if let Some(((o, oi), 0)) = &tie {
            // Tied and written as its partner: equal in every profile.
            return Ok(DimKind::Same(o.clone(), *oi));
        }
        if let Some((a, delta)) = tie {
            shifted.push(((input.to_string(), i), a, delta));
        }
        // A linked size: its side of the chosen box, so that every corner shape passes with
        // the others' sides.
        let accepted = match self.boxes.get(&d.source) {
            Some(side) => side.clone(),
            None => d
                .answer
                .accepted
                .as_ref()
                .map(|a| DimSet::from_segments(a.segments.clone()))
                .transpose()?
                .unwrap_or_default(),
        };
        if accepted.is_empty() {
            return Err(Error::NoSize {
                input: input.to_string(),
                index: i,
                why: d
                    .answer
                    .undecided
                    .as_ref()
                    .map_or("no size passes", |u| u.reason.as_str())
                    .to_string(),
            });
        }
        let example = self
            .examples
            .get(input)
            .and_then(|e| e.get(i).copied())
            .or(d.example);
        Ok(DimKind::Dynamic { accepted, example })
    }
}

/// Every input a message names, diagnosed as `dimguard diagnose` does (each size's accepted
/// set, a specialized size static; its rank from `--example`), and every other input given
/// with `--example` ([`cover_examples`]).
fn from_message(
    source: Option<&str>,
    examples: &BTreeMap<String, Vec<i128>>,
    spec: Option<&Sheet>,
) -> Result<Read, Error> {
    let mut read = Read::default();
    let Some(text) = source else {
        return Ok(read);
    };
    let report = diagnose::diagnose_text(text, &Options::default())?;
    for d in &report.dims {
        let Some((input, index)) = d.source.as_deref().and_then(source_input) else {
            continue;
        };
        let shape = examples.get(&input).ok_or_else(|| {
            Error::Missing(format!("the message does not give the rank of input `{input}`: add --example {input}:1x3x520x960 (its full traced shape)"))
        })?;
        if index >= shape.len() {
            return Err(Error::Missing(format!(
                "`{}` is dimension {index} of `{input}`, but --example gives `{input}` rank {}: give its full traced shape (--example {input}:1x3x520x960)",
                d.name,
                shape.len()
            )));
        }
        let spec = ensure(&mut read.specs, &input, shape);
        let kind = match (d.status, &d.answer.accepted) {
            (Status::Specialized, _) => DimKind::Static(d.specialized.unwrap_or(shape[index])),
            (_, Some(f)) => DimKind::Dynamic {
                accepted: DimSet::from_segments(f.segments.clone())?,
                example: shape.get(index).copied(),
            },
            _ => {
                return Err(Error::Missing(format!(
                    "`{}`: {}",
                    d.name,
                    d.undecided.as_deref().unwrap_or("no exact set")
                )))
            }
        };
        *spec
            .dims
            .get_mut(index)
            .ok_or_else(|| Error::Missing(format!("`{input}` has no dimension {index}")))? = kind;
    }
    cover_examples(&mut read.specs, examples, spec)?;
    Ok(read)
}

/// What the source was: a program, or any source (a program or a message).
#[derive(Clone, Copy)]
struct Known {
    program: bool,
    source: bool,
}

/// Applies each `--dim INPUT:INDEX=LO..HI`: a dimension the source decided keeps the sizes it
/// accepts inside the range; one it did not (or no source) takes the range. The dimensions
/// given.
fn bound(
    specs: &mut Vec<InputSpec>,
    dims: &[String],
    examples: &BTreeMap<String, Vec<i128>>,
    from: Known,
) -> Result<BTreeSet<Slot>, Error> {
    let mut given: BTreeSet<Slot> = BTreeSet::new();
    for d in dims {
        let (input, index, lo, hi) = parse_dim(d)?;
        let known = specs.iter().any(|s| s.name == input) && from.source;
        let shape = match examples.get(&input) {
            Some(e) => e.clone(),
            None if known => vec![],
            None => return Err(Error::Missing(format!("--dim {d}: add --example {input}:... (the full shape of `{input}`) to give its rank"))),
        };
        let spec = ensure(specs, &input, &shape);
        let slot = spec
            .dims
            .get_mut(index)
            .ok_or_else(|| Error::Missing(format!("`{input}` has no dimension {index}")))?;
        *slot = match slot {
            // A dimension the source decided: the sizes it accepts inside the range.
            DimKind::Dynamic { accepted, example } if known => {
                let inside = accepted.intersect(&DimSet::interval(lo, hi))?;
                if inside.is_empty() {
                    return Err(Error::NoSize {
                        input,
                        index,
                        why: format!("no accepted size in {lo}..{hi}"),
                    });
                }
                DimKind::Dynamic {
                    accepted: inside,
                    example: *example,
                }
            }
            DimKind::Same(o, oi) if known => {
                return Err(Error::Missing(format!(
                    "--dim {d}: `{input}` dimension {index} equals `{o}` dimension {oi}: give --dim {o}:{oi}=LO..HI"
                )))
            }
            DimKind::Static(n) if known && from.program => {
                return Err(Error::Missing(format!(
                    "--dim {d}: `{input}` dimension {index} is static in the program ({n})"
                )))
            }
            _ => DimKind::Dynamic {
                accepted: DimSet::interval(lo, hi),
                example: shape.get(index).copied(),
            },
        };
        given.insert((input, index));
    }
    Ok(given)
}

/// The program's guards and run-time conditions over its input sizes (those whose every symbol
/// is an input size), parsed once for [`build`]'s re-check.
fn program_guards(program: &Program, report: &CheckReport) -> Result<Vec<Expr>, Error> {
    let texts = program
        .guards_code
        .iter()
        .chain(report.runtime.iter().filter_map(|r| r.on_inputs.as_ref()));
    let mut out = Vec::new();
    for g in texts {
        let e = crate::solver::parse_guard(g).map_err(|e| {
            Error::Missing(format!("the program's guard `{g}` cannot be read: {e}"))
        })?;
        if e.atoms().iter().all(|a| source_input(a).is_some()) {
            out.push(e);
        }
    }
    Ok(out)
}

/// Gives every dimension whose accepted sizes reach [`UNBOUNDED`] (and that no `--dim` bounds,
/// `given`) a finite `max`: the largest accepted size at most [`MAX_FACTOR`] times its traced
/// size (else its least accepted size), so that the profile holds the traced size. A side of a
/// sound box stays sound when cut, so a linked size is cut alone; a size tied to a partner at
/// an offset (`shifted`, `(b, a, delta)`) follows its partner's cut.
fn choose_max(specs: &mut [InputSpec], given: &BTreeSet<Slot>, shifted: &[Shift]) -> Vec<Chosen> {
    let mut chosen = Vec::new();
    for spec in specs.iter_mut() {
        for (index, kind) in spec.dims.iter_mut().enumerate() {
            let key = (spec.name.clone(), index);
            if given.contains(&key) || shifted.iter().any(|(b, _, _)| *b == key) {
                continue;
            }
            let DimKind::Dynamic { accepted, example } = kind else {
                continue;
            };
            let (Some(lo), Some(hi)) = (accepted.min(), accepted.max()) else {
                continue;
            };
            if hi < UNBOUNDED {
                continue;
            }
            let traced = example.filter(|e| accepted.contains(*e));
            let base = traced.unwrap_or(lo);
            let cut = accepted.clip(lo, base.saturating_mul(MAX_FACTOR).max(base));
            let Some(max) = cut.max() else { continue };
            chosen.push(Chosen {
                input: spec.name.clone(),
                index,
                max,
                base,
                traced: traced.is_some(),
                accepted_max: hi,
                accepted: std::mem::replace(accepted, cut),
            });
        }
    }
    for ((b, bi), (a, ai), delta) in shifted {
        let side = |specs: &[InputSpec], n: &str, i: usize| match specs
            .iter()
            .find(|s| s.name == n)
            .and_then(|s| s.dims.get(i))
        {
            Some(DimKind::Dynamic { accepted, .. }) => Some((accepted.min()?, accepted.max()?)),
            _ => None,
        };
        let Some((lo, hi)) = side(specs, a, *ai) else {
            continue;
        };
        if let Some(DimKind::Dynamic { accepted, .. }) = specs
            .iter_mut()
            .find(|s| &s.name == b)
            .and_then(|s| s.dims.get_mut(*bi))
        {
            *accepted = accepted.clip(lo.saturating_add(*delta), hi.saturating_add(*delta));
        }
    }
    chosen
}

/// Adds every `--example` input the message did not name (see [`inputs`]).
fn cover_examples(
    specs: &mut Vec<InputSpec>,
    examples: &BTreeMap<String, Vec<i128>>,
    spec: Option<&Sheet>,
) -> Result<(), Error> {
    let named: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    for (input, shape) in examples {
        if named.contains(input) {
            continue;
        }
        let Some(sheet) = spec else {
            return Err(Error::Missing(format!(
                "the message does not name input `{input}`: give --spec FILE (your dynamic_shapes) so dimguard knows which of its dimensions share a Dim with {}, or --dim {input}:INDEX=LO..HI",
                if named.is_empty() { "the others".to_string() } else { named.join(", ") }
            )));
        };
        let mut kinds: Vec<DimKind> = shape.iter().map(|&n| DimKind::Static(n)).collect();
        for e in sheet.entries.iter().filter(|e| &e.input == input) {
            let Some(slot) = kinds.get_mut(e.index) else {
                return Err(Error::Missing(format!(
                    "--spec gives `{input}` dimension {}, but its example has rank {}",
                    e.index,
                    shape.len()
                )));
            };
            // The same Dim (same root, coef and offset) on an input the message covers.
            let twin = sheet.entries.iter().find(|o| {
                o.value == e.value
                    && named.contains(&o.input)
                    && matches!(o.value, SheetValue::Dim { .. })
            });
            match (&e.value, twin) {
                (_, Some(o)) => *slot = DimKind::Same(o.input.clone(), o.index),
                (SheetValue::Static | SheetValue::Int { .. }, _) => {}
                _ => {
                    return Err(Error::Missing(format!(
                        "`{input}` dimension {}: the message says nothing about it and it shares no Dim with an input it names; give --dim {input}:{}=LO..HI",
                        e.index, e.index
                    )))
                }
            }
        }
        specs.push(InputSpec {
            name: input.clone(),
            dims: kinds,
        });
    }
    Ok(())
}

fn ensure<'a>(specs: &'a mut Vec<InputSpec>, input: &str, shape: &[i128]) -> &'a mut InputSpec {
    if let Some(i) = specs.iter().position(|s| s.name == input) {
        return &mut specs[i];
    }
    specs.push(InputSpec {
        name: input.to_string(),
        dims: shape.iter().map(|&n| DimKind::Static(n)).collect(),
    });
    specs.last_mut().expect("just pushed")
}

/// An input dimension, `(input, index)`.
type Slot = (String, usize);

/// A tied dimension written from its partner at an offset: `(b, a, delta)`, `b = a + delta`.
type Shift = (Slot, Slot, i128);

/// Sizes tied to a partner (by source): the partner's source and the offset the tied size is
/// written at (`b = a + delta`; 0: the same size).
type Ties = BTreeMap<String, (String, i128)>;

/// Per linked size (by source): its side of the box of its joint set that the profiles serve.
/// With the traced sizes known (`--example`, else the program's own), the larger of the joint
/// set's listed box that holds them and the sound box through them (`example_box_side`);
/// without, the largest sound box (`box_side`). Every box is inside the joint set, so each of
/// its tuples passes every guard. A group whose sizes are tied (`(h1-1)//4 == (h2-1)//4`,
/// decided in closed form: `tied`) takes the check's tied choice (`shared_side`, which holds the
/// traced sizes): a side per size no tie binds, and each tied size written from its partner
/// ([`Ties`]).
fn chosen_boxes(
    report: &CheckReport,
    examples: &BTreeMap<String, Vec<i128>>,
) -> (BTreeMap<String, DimSet>, Ties) {
    let mut out = BTreeMap::new();
    let mut ties = Ties::new();
    let set = |f: &Feasible| DimSet::from_segments(f.segments.clone()).ok();
    let side = |p: &crate::solver::report::Suggestion| {
        DimSet::progression(p.lo, p.hi, p.modulus, p.residue)
    };
    for j in &report.joint {
        if let Some(t) = &j.tied {
            let sides: Option<BTreeMap<&String, DimSet>> = t
                .sources
                .iter()
                .map(|s| {
                    let d = report.dims.iter().find(|d| &d.source == s)?;
                    Some((s, side(d.answer.sides.shared_side.as_ref()?)))
                })
                .collect();
            if let Some(sides) = sides {
                for tie in &t.ties {
                    let source = |n: &String| {
                        t.dims
                            .iter()
                            .position(|x| x == n)
                            .map(|k| t.sources[k].clone())
                    };
                    let (Some(a), Some(b)) = (source(&tie.dims[0]), source(&tie.dims[1])) else {
                        continue;
                    };
                    // `b`'s side is `a`'s shifted by the offset the spec writes it at.
                    let (sa, sb) = (&sides[&a], &sides[&b]);
                    if let (Some(la), Some(lb)) = (sa.min(), sb.min()) {
                        let delta = lb - la;
                        if sa.count() == sb.count()
                            && sa.max().zip(sb.max()).is_some_and(|(x, y)| y - x == delta)
                        {
                            ties.insert(b, (a, delta));
                        }
                    }
                }
                for (s, d) in sides {
                    out.insert(s.clone(), d);
                }
                continue;
            }
        }
        let dims: Vec<_> = j
            .sources
            .iter()
            .map(|s| report.dims.iter().find(|d| &d.source == s))
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default();
        // A group with a size the others define (`joint[].defined`) is a graph: its boxes are
        // the others' set only, so no box of it is a set of every size's values.
        if dims.len() != j.sources.len() || !j.defined.is_empty() {
            continue;
        }
        let traced: Option<Vec<i128>> = dims
            .iter()
            .map(|d| {
                examples
                    .get(&d.input)
                    .and_then(|e| e.get(d.index).copied())
                    .or(d.example)
            })
            .collect();
        let mut candidates: Vec<Vec<DimSet>> = Vec::new();
        if let Some(t) = &traced {
            // A listed box of the joint set that holds the traced tuple.
            for b in &j.boxes {
                let sides: Option<Vec<DimSet>> = b.iter().map(set).collect();
                if let Some(sides) = sides.filter(|s| s.iter().zip(t).all(|(s, v)| s.contains(*v)))
                {
                    candidates.push(sides);
                }
            }
            let through: Option<Vec<DimSet>> = dims
                .iter()
                .map(|d| d.answer.sides.example_box_side.as_ref().map(side))
                .collect();
            candidates.extend(through.filter(|s| s.iter().zip(t).all(|(s, v)| s.contains(*v))));
        }
        let largest: Option<Vec<DimSet>> = j
            .largest_box
            .as_ref()
            .map(|b| b.sides.iter().map(side).collect());
        let tuples = |b: &Vec<DimSet>| b.iter().fold(1u128, |n, s| n.saturating_mul(s.count()));
        let best = candidates.into_iter().max_by_key(tuples).or(largest);
        if let Some(b) = best {
            for (src, s) in j.sources.iter().zip(b) {
                out.insert(src.clone(), s);
            }
        }
    }
    (out, ties)
}

/// The most tuples of symbol values one intermediate size is evaluated at; past it, its
/// values are bounded instead ([`crate::solver::value_range`]: `count` null, `exact` false).
const MAX_TUPLES: u128 = 1 << 18;

/// The most evaluations all intermediate sizes take together; past it, the rest are bounded.
const MAX_EVALS: u128 = 1 << 21;

/// The symbol an input symbol is written from in the profiles (a dimension equal to another,
/// or tied to it at an offset): `s -> (root, offset)`, `s = root + offset`.
type Aliases = BTreeMap<String, (String, i128)>;

/// Min/opt/max of every symbolic intermediate size of a program over the sizes `specs` serve
/// (each input symbol ranging over the values its dimension takes there, the symbols of a box
/// independently; a dimension equal to another, or tied to it at an offset (`shifted`), written
/// from it), `opt` at the traced sizes: JSON objects `{tensor, index, expr, min, opt, max, count,
/// exact}`. Exact (`count` the number of values) when its symbols take at most [`MAX_TUPLES`]
/// tuples (within [`MAX_EVALS`] in all); else `min` and `max` are interval bounds holding every
/// value (`count` null, `exact` false).
fn intermediate(
    program: &Program,
    pg: &ProgramGraph,
    specs: &[InputSpec],
    shifted: &[Shift],
) -> Result<Vec<serde_json::Value>, Error> {
    // Symbol -> the values it takes in the box, and its traced value.
    let mut sym_sets: BTreeMap<String, DimSet> = BTreeMap::new();
    let mut hints: BTreeMap<String, i128> = BTreeMap::new();
    // Each input dimension's `k*s + c`.
    let mut forms: BTreeMap<Slot, (String, i128, i128)> = BTreeMap::new();
    for spec in specs {
        let Some(sizes) = program.sizes(&spec.name)? else {
            continue;
        };
        for (i, (size, kind)) in sizes.iter().zip(&spec.dims).enumerate() {
            let graph::program::Size::Expr(e, traced) = size else {
                continue;
            };
            let Some((coefs, c0)) = e.affine() else {
                continue;
            };
            let Some((s, k)) = coefs.iter().next().filter(|_| coefs.len() == 1) else {
                continue;
            };
            if !(k.is_integer() && c0.is_integer()) {
                continue;
            }
            let (k, c) = (*k.numer(), *c0.numer());
            forms.insert((spec.name.clone(), i), (s.clone(), k, c));
            if let Some(v) = traced.filter(|v| k != 0 && (v - c) % k == 0) {
                hints.entry(s.clone()).or_insert((v - c) / k);
            }
            if let DimKind::Dynamic { accepted, .. } = kind {
                if let Ok(roots) = accepted.affine_preimage(k, c) {
                    sym_sets.entry(s.clone()).or_insert(roots);
                }
            }
        }
    }
    // Symbols written from another: `Same` dimensions and tied ones (both bare symbols).
    let mut alias = Aliases::new();
    let mut link = |b: &Slot, a: &Slot, delta: i128| {
        if let (Some((sb, kb, cb)), Some((sa, ka, ca))) = (forms.get(b), forms.get(a)) {
            if sb != sa && (kb, cb) == (ka, ca) && (*kb == 1 || delta == 0) {
                alias.insert(sb.clone(), (sa.clone(), delta));
            }
        }
    };
    for spec in specs {
        for (i, kind) in spec.dims.iter().enumerate() {
            if let DimKind::Same(o, oi) = kind {
                link(&(spec.name.clone(), i), &(o.clone(), *oi), 0);
            }
        }
    }
    for (b, a, delta) in shifted {
        link(b, a, *delta);
    }
    let mut evals: u128 = 0;
    let mut cache: BTreeMap<String, Option<Range>> = BTreeMap::new();
    let mut out = Vec::new();
    let symints = pg
        .symints
        .iter()
        .filter(|(_, v)| !v.is_bool())
        .map(|(k, v)| (k, std::slice::from_ref(v)));
    for (tensor, sizes) in pg
        .sizes
        .iter()
        .map(|(k, v)| (k, v.as_slice()))
        .chain(symints)
    {
        for (index, e) in sizes.iter().enumerate() {
            let atoms: Vec<String> = e.atoms().iter().map(|a| a.to_string()).collect();
            if atoms.is_empty() {
                continue;
            }
            let text = e.to_string();
            let values = cache
                .entry(text.clone())
                .or_insert_with(|| range_over(e, &atoms, &sym_sets, &alias, &mut evals))
                .clone();
            // Sizes over symbols that take no set (no input's) are left out.
            let Some(v) = values else { continue };
            let example = e.int_at(&|n| hints.get(n).copied());
            out.push(serde_json::json!({
                "tensor": tensor, "index": index, "expr": text,
                "min": v.min, "opt": example, "max": v.max, "count": v.count,
                "exact": v.count.is_some(),
            }));
        }
    }
    Ok(out)
}

/// The most sub-boxes the values of one size are bounded over (when not enumerated).
const MAX_PIECES: usize = 1 << 12;

/// `set` as at most `parts` intervals holding it: its runs of consecutive values (read value by
/// value when it has at most [`MAX_TUPLES`] x 4 of them; else its hull), neighbours grouped.
fn runs(set: &DimSet, parts: usize) -> Vec<(i128, i128)> {
    let (Some(lo), Some(hi)) = (set.min(), set.max()) else {
        return vec![];
    };
    if set.count() > MAX_TUPLES * 4 {
        return vec![(lo, hi)];
    }
    let mut runs: Vec<(i128, i128)> = Vec::new();
    for v in set.iter() {
        match runs.last_mut() {
            Some(r) if r.1 + 1 == v => r.1 = v,
            _ => runs.push((v, v)),
        }
    }
    let per = runs.len().div_ceil(parts.max(1)).max(1);
    runs.chunks(per)
        .map(|c| (c[0].0, c[c.len() - 1].1))
        .collect()
}

/// The values of an intermediate size over the box: exact (`count` known), or interval bounds.
#[derive(Debug, Clone)]
struct Range {
    min: Option<i128>,
    max: Option<i128>,
    count: Option<u128>,
}

/// The values of `e` over every tuple of its symbols' sets (each symbol written from its root in
/// `alias` first), when each root has a set: enumerated when the tuples are at most
/// [`MAX_TUPLES`] and `evals` (the evaluations spent so far) stays within [`MAX_EVALS`], else
/// bounded over the hull of each set ([`crate::solver::value_range`]).
fn range_over(
    e: &Expr,
    atoms: &[String],
    sets: &BTreeMap<String, DimSet>,
    alias: &Aliases,
    evals: &mut u128,
) -> Option<Range> {
    let root = |a: &String| {
        alias
            .get(a)
            .map_or((a.clone(), 0), |(r, d)| (r.clone(), *d))
    };
    let mut roots: Vec<String> = atoms.iter().map(|a| root(a).0).collect();
    roots.sort();
    roots.dedup();
    let sides: Vec<&DimSet> = roots.iter().map(|a| sets.get(a)).collect::<Option<_>>()?;
    if sides.iter().any(|s| s.is_empty()) {
        return None;
    }
    let tuples = sides
        .iter()
        .try_fold(1u128, |acc, s| acc.checked_mul(s.count()));
    let enumerable = tuples.filter(|&t| t <= MAX_TUPLES && *evals + t <= MAX_EVALS);
    let Some(tuples) = enumerable else {
        // Interval bounds over sub-boxes: each root's set cut into runs of consecutive values
        // (grouped so that the sub-boxes number at most MAX_PIECES); every tuple lies in one.
        let parts = (1..=MAX_PIECES)
            .take_while(|p| {
                p.checked_pow(roots.len() as u32)
                    .is_some_and(|n| n <= MAX_PIECES)
            })
            .last()
            .unwrap_or(1);
        let pieces: Vec<Vec<(i128, i128)>> = sides.iter().map(|s| runs(s, parts)).collect();
        let (mut lo, mut hi) = (i128::MAX, i128::MIN);
        let mut at = vec![0usize; pieces.len()];
        loop {
            let ranges: BTreeMap<&str, (i128, i128)> = atoms
                .iter()
                .map(|a| {
                    let (r, d) = root(a);
                    let k = roots.iter().position(|x| *x == r)?;
                    let (l, h) = pieces[k][at[k]];
                    Some((a.as_str(), (l.checked_add(d)?, h.checked_add(d)?)))
                })
                .collect::<Option<_>>()?;
            let (l, h) = crate::solver::value_range(e, &ranges)?;
            (lo, hi) = (lo.min(l), hi.max(h));
            // The next sub-box (odometer order).
            let mut k = 0;
            loop {
                if k == pieces.len() {
                    return Some(Range {
                        min: Some(lo),
                        max: Some(hi),
                        count: None,
                    });
                }
                at[k] += 1;
                if at[k] < pieces[k].len() {
                    break;
                }
                at[k] = 0;
                k += 1;
            }
        }
    };
    *evals += tuples;
    let lists: Vec<Vec<i128>> = sides.iter().map(|s| s.iter().collect()).collect();
    let mut vals = BTreeSet::new();
    let mut at = vec![0usize; lists.len()];
    loop {
        let env = |n: &str| {
            let (r, d) = alias.get(n).map_or((n, 0), |(r, d)| (r.as_str(), *d));
            let k = roots.iter().position(|a| a == r)?;
            lists[k][at[k]].checked_add(d)
        };
        match e.eval(&env) {
            Ok(crate::solver::expr::Value::Num(q)) if q.is_integer() => {
                vals.insert(*q.numer());
            }
            // A value that is no integer (or an error) at some tuple: not exact, say nothing.
            _ => return None,
        }
        // The next tuple (odometer order).
        let mut k = 0;
        loop {
            if k == lists.len() {
                return Some(Range {
                    min: vals.first().copied(),
                    max: vals.last().copied(),
                    count: Some(vals.len() as u128),
                });
            }
            at[k] += 1;
            if at[k] < lists[k].len() {
                break;
            }
            at[k] = 0;
            k += 1;
        }
    }
}

/// The profiles of `inputs`: `k` buckets per dynamic dimension (at most 64), or with `cover`,
/// one profile per piece of a cover of at most `cover` pieces (at most 64). For a program,
/// every corner (the `min` shapes of all inputs together, the `opt` ones, the `max` ones) of
/// every profile is re-checked against every guard and run-time condition before it is
/// returned.
pub fn build(inputs: &Inputs, k: usize, cover: Option<usize>) -> Result<ProfileSet, Error> {
    let set = match cover {
        Some(n) => ProfileSet::cover(&inputs.specs, n.clamp(1, 64))?,
        None => ProfileSet::build(&inputs.specs, k.clamp(1, 64))?,
    };
    recheck(&set, &inputs.guards)?;
    Ok(set)
}

/// Every corner of every profile of `set` against every guard (over input sizes).
fn recheck(set: &ProfileSet, guards: &[Expr]) -> Result<(), Error> {
    for (profile, p) in set.profiles.iter().enumerate() {
        for (corner, pick) in [
            ("min", (|t| &t.min) as fn(&crate::trt::Triple) -> &Vec<i128>),
            ("opt", |t| &t.opt),
            ("max", |t| &t.max),
        ] {
            let shape = |name: &str| {
                p.inputs
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, t)| pick(t))
            };
            let env = |source: &str| {
                let (input, index) = source_input(source)?;
                shape(&input)?.get(index).copied()
            };
            if let Some(g) = guards.iter().find(|g| g.truth(&env) != Ok(true)) {
                let shapes = p
                    .inputs
                    .iter()
                    .map(|(n, t)| {
                        let v: Vec<String> = pick(t).iter().map(i128::to_string).collect();
                        format!("{n}:{}", v.join("x"))
                    })
                    .collect::<Vec<_>>()
                    .join(", ");
                return Err(Error::CornerFails {
                    profile,
                    corner,
                    shapes,
                    guard: g.to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Profiles in the requested format (JSON gains `intermediate` sizes for a program, and
/// `chosen`: each `max` dimguard chose, [`Chosen`]; the Python of `torch-tensorrt` says them in
/// comments; with `trtexec` and `polygraphy`, [`notes`] are for the user beside the command).
pub fn render(set: &ProfileSet, format: &str, inputs: &Inputs) -> String {
    match format {
        "trtexec" => crate::trt::emit::trtexec(set) + "\n",
        "polygraphy" => crate::trt::emit::polygraphy(set) + "\n",
        "torch-tensorrt" => {
            let notes: String = notes(inputs).iter().map(|n| format!("# {n}\n")).collect();
            notes + &crate::trt::emit::torch_tensorrt(set)
        }
        _ => {
            let mut v = crate::trt::emit::json(set);
            if let Some(sizes) = &inputs.intermediate {
                v["intermediate"] = serde_json::Value::Array(sizes.clone());
            }
            if !inputs.chosen.is_empty() {
                v["chosen"] = inputs
                    .chosen
                    .iter()
                    .map(|c| {
                        serde_json::json!({
                            "input": c.input, "index": c.index, "max": c.max,
                            "base": c.base, "traced": c.traced,
                            "accepted_max": c.accepted_max, "note": c.note(),
                        })
                    })
                    .collect();
            }
            serde_json::to_string_pretty(&v).expect("json") + "\n"
        }
    }
}

/// Why no profile of a set serves the shapes ([`select`]), said with what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unserved {
    /// What the profiles say: a shape for an unknown input or of the wrong rank, or a size no
    /// profile serves.
    Profiles(crate::trt::profile::Error),
    /// A size of a dimension whose `max` dimguard chose ([`Chosen`]): one the program accepts,
    /// past that `max` (`accepted`), or one it rejects, said with the nearest accepted sizes
    /// (the one above past that `max`, when it is).
    PastChosen {
        /// The size, with the nearest accepted sizes below and above.
        size: Box<crate::trt::profile::NoProfile>,
        /// The `max` chosen.
        max: i128,
        /// The largest size the dimension accepts.
        accepted_max: i128,
        /// Whether the program accepts the size.
        accepted: bool,
    },
}

impl std::fmt::Display for Unserved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::trt::profile::Error as E;
        let (size, max, accepted_max, accepted) = match self {
            Unserved::Profiles(e) => return write!(f, "{e}"),
            Unserved::PastChosen {
                size,
                max,
                accepted_max,
                accepted,
            } => (size, max, accepted_max, accepted),
        };
        let past = |v: i128| {
            format!(
                "{v} is past the max {max} chosen for these profiles (the program accepts sizes up to {accepted_max}): give --dim {}:{}=LO..HI holding it",
                size.input, size.index
            )
        };
        if *accepted {
            return write!(
                f,
                "input `{}` dimension {} = {} is a size the program accepts, but {}",
                size.input,
                size.index,
                size.value,
                past(size.value)
            );
        }
        write!(f, "{}", E::NoProfile((**size).clone()))?;
        match size.above.filter(|a| a > max) {
            Some(a) => write!(f, "; {}", past(a)),
            None => Ok(()),
        }
    }
}

/// The profile of `set` that serves `shapes` (`--select`), or what to do ([`ProfileSet::select`]).
/// A size past a `max` dimguard chose ([`Chosen`]) is said as such, with the nearest sizes the
/// program accepts, never as a size the program rejects.
pub fn select(
    set: &ProfileSet,
    inputs: &Inputs,
    shapes: &[(&str, Vec<i128>)],
) -> Result<usize, Unserved> {
    use crate::trt::profile::Error as E;
    let n = match set.select(shapes) {
        Ok(i) => return Ok(i),
        Err(E::NoProfile(n)) => n,
        Err(e) => return Err(Unserved::Profiles(e)),
    };
    let Some(c) = inputs
        .chosen
        .iter()
        .find(|c| c.input == n.input && c.index == n.index)
    else {
        return Err(Unserved::Profiles(E::NoProfile(n)));
    };
    let accepted = c.accepted.contains(n.value);
    let size = if accepted {
        n
    } else {
        crate::trt::profile::NoProfile {
            below: c.accepted.prev_at_most(n.value),
            above: c.accepted.next_at_least(n.value),
            ..n
        }
    };
    Err(Unserved::PastChosen {
        size: Box::new(size),
        max: c.max,
        accepted_max: c.accepted_max,
        accepted,
    })
}

/// What the user should know beside the profiles: each `max` dimguard chose ([`Chosen`]).
pub fn notes(inputs: &Inputs) -> Vec<String> {
    inputs.chosen.iter().map(Chosen::note).collect()
}
