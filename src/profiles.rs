//! Profiles from a source: TensorRT optimization profiles from a program, a message or `--dim`s
//! (the pipeline behind `dimguard profile` and `dimguard.profile`). A program is loaded and
//! checked once; a group of linked sizes takes one box of its joint set — the one holding the
//! traced sizes when they are known — and the program's intermediate sizes are computed over
//! the box the profiles serve.

use crate::graph::{self, CheckReport, Program, ProgramGraph};
use crate::solver::diagnose::{self, Options};
use crate::solver::python::source_input;
use crate::solver::report::{Feasible, Status};
use crate::solver::{DimSet, Expr};
use crate::solver::{Sheet, SheetValue};
use crate::trt::{DimKind, InputSpec, ProfileSet};
use std::collections::BTreeMap;

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
}

/// What [`inputs`] read: the profiled inputs and, for a program, its symbolic intermediate sizes
/// over the sizes the inputs allow.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The inputs with their accepted sizes (for a linked size, its side of the chosen box).
    pub specs: Vec<InputSpec>,
    /// For a program: every symbolic intermediate size, `{tensor, index, expr, min, opt, max,
    /// count}`.
    pub intermediate: Option<Vec<serde_json::Value>>,
}

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
    let mut specs: Vec<InputSpec> = Vec::new();
    // The program, loaded and checked once.
    let program = path.and_then(|p| graph::load(p).ok());
    let program_loaded = program.is_some();
    // Its graph, built once for the check and the intermediate sizes.
    let built = program.as_ref().map(ProgramGraph::build).transpose()?;
    let mut checked: Option<CheckReport> = None;
    if let (Some(program), Some(pg)) = (&program, &built) {
        let report = graph::check_graph(program, pg, false, None)?;
        let boxes = chosen_boxes(&report, &examples);
        for input in program.user_inputs() {
            let sizes = program.sizes(&input)?.unwrap_or_default();
            let mut ds = Vec::new();
            for (i, s) in sizes.iter().enumerate() {
                let kind = match s {
                    graph::program::Size::Int(n) => DimKind::Static(*n),
                    graph::program::Size::Expr(..) => {
                        let d = report
                            .dims
                            .iter()
                            .find(|d| d.input == input && d.index == i)
                            .ok_or_else(|| Error::NoSize {
                                input: input.clone(),
                                index: i,
                                why: "missing from the check".into(),
                            })?;
                        if let Some((o, oi)) = &d.same_as {
                            DimKind::Same(o.clone(), *oi)
                        } else {
                            // A linked size: its side of the chosen box, so that every corner
                            // shape passes with the others' sides.
                            let accepted = match boxes.get(&d.source) {
                                Some(side) => side.clone(),
                                None => d
                                    .accepted
                                    .as_ref()
                                    .map(|a| DimSet::from_segments(a.segments.clone()))
                                    .transpose()?
                                    .unwrap_or_default(),
                            };
                            if accepted.is_empty() {
                                return Err(Error::NoSize {
                                    input: input.clone(),
                                    index: i,
                                    why: d
                                        .undecided
                                        .as_ref()
                                        .map_or("no size passes", |u| u.reason.as_str())
                                        .to_string(),
                                });
                            }
                            let example = examples
                                .get(&input)
                                .and_then(|e| e.get(i).copied())
                                .or(d.example);
                            DimKind::Dynamic { accepted, example }
                        }
                    }
                };
                ds.push(kind);
            }
            specs.push(InputSpec {
                name: input,
                dims: ds,
            });
        }
        checked = Some(report);
    }
    if !program_loaded {
        if let Some(text) = source {
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
                let spec = ensure(&mut specs, &input, shape);
                let kind = match (d.status, &d.feasible) {
                    (Status::Specialized, _) => {
                        DimKind::Static(d.specialized.unwrap_or(shape[index]))
                    }
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
                *spec.dims.get_mut(index).ok_or_else(|| {
                    Error::Missing(format!("`{input}` has no dimension {index}"))
                })? = kind;
            }
        }
    }
    if !program_loaded && source.is_some() {
        cover_examples(&mut specs, &examples, spec)?;
    }
    for d in dims {
        let (input, index, lo, hi) = parse_dim(d)?;
        let shape = examples
            .get(&input)
            .ok_or_else(|| Error::Missing(format!("--dim {d}: add --example {input}:... (the full shape of `{input}`) to give its rank")))?
            .clone();
        let spec = ensure(&mut specs, &input, &shape);
        *spec
            .dims
            .get_mut(index)
            .ok_or_else(|| Error::Missing(format!("`{input}` has no dimension {index}")))? =
            DimKind::Dynamic {
                accepted: DimSet::interval(lo, hi),
                example: shape.get(index).copied(),
            };
    }
    if specs.is_empty() {
        return Err(Error::Missing("nothing to profile: give a .pt2 archive, an error message, or --dim INPUT:INDEX=LO..HI with --example".into()));
    }
    // A program's intermediate sizes, over the sizes the profiles serve.
    let intermediate = program
        .as_ref()
        .zip(built.as_ref())
        .filter(|_| checked.is_some())
        .map(|(p, pg)| intermediate(p, pg, &specs))
        .transpose()?;
    Ok(Inputs {
        specs,
        intermediate,
    })
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

/// Per linked size (by source): its side of the box of its joint set that the profiles serve.
/// With the traced sizes known (`--example`, else the program's own), the larger of the joint
/// set's listed box that holds them and the sound box through them (`example_box_side`);
/// without, the largest sound box (`box_side`). Every box is inside the joint set, so each of
/// its tuples passes every guard.
fn chosen_boxes(
    report: &CheckReport,
    examples: &BTreeMap<String, Vec<i128>>,
) -> BTreeMap<String, DimSet> {
    let mut out = BTreeMap::new();
    let set = |f: &Feasible| DimSet::from_segments(f.segments.clone()).ok();
    let side = |p: &crate::solver::report::Suggestion| {
        DimSet::progression(p.lo, p.hi, p.modulus, p.residue)
    };
    for j in &report.joint {
        let dims: Vec<_> = j
            .sources
            .iter()
            .map(|s| report.dims.iter().find(|d| &d.source == s))
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default();
        if dims.len() != j.sources.len() {
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
                .map(|d| d.sides.example_box_side.as_ref().map(side))
                .collect();
            candidates.extend(through.filter(|s| s.iter().zip(t).all(|(s, v)| s.contains(*v))));
        }
        let largest: Option<Vec<DimSet>> = j
            .largest_box
            .as_ref()
            .map(|b| b.sides.iter().map(side).collect());
        let tuples = |b: &Vec<DimSet>| b.iter().map(DimSet::count).product::<u128>();
        let best = candidates.into_iter().max_by_key(tuples).or(largest);
        if let Some(b) = best {
            for (src, s) in j.sources.iter().zip(b) {
                out.insert(src.clone(), s);
            }
        }
    }
    out
}

/// The most tuples of symbol values one intermediate size is evaluated at; past it, its
/// values are not enumerated (`count`, `min`, `max` null).
const MAX_TUPLES: u128 = 1 << 20;

/// Exact min/opt/max of every symbolic intermediate size of a program over the sizes `specs`
/// serve (each input symbol ranging over the values its dimension takes there; the symbols of a
/// box independently), `opt` at the traced sizes: JSON objects `{tensor, index, expr, min, opt,
/// max, count}`, for each size whose symbols take at most [`MAX_TUPLES`] tuples.
fn intermediate(
    program: &Program,
    pg: &ProgramGraph,
    specs: &[InputSpec],
) -> Result<Vec<serde_json::Value>, Error> {
    // Symbol -> the values it takes in the box, and its traced value.
    let mut sym_sets: BTreeMap<String, DimSet> = BTreeMap::new();
    let mut hints: BTreeMap<String, i128> = BTreeMap::new();
    for spec in specs {
        let Some(sizes) = program.sizes(&spec.name)? else {
            continue;
        };
        for (size, kind) in sizes.iter().zip(&spec.dims) {
            let (graph::program::Size::Expr(e, traced), DimKind::Dynamic { accepted, .. }) =
                (size, kind)
            else {
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
            if let Ok(roots) = accepted.affine_preimage(k, c) {
                sym_sets.entry(s.clone()).or_insert(roots);
            }
            if let Some(v) = traced.filter(|v| k != 0 && (v - c) % k == 0) {
                hints.entry(s.clone()).or_insert((v - c) / k);
            }
        }
    }
    let int = |v: Result<crate::solver::expr::Value, _>| match v {
        Ok(crate::solver::expr::Value::Num(q)) if q.is_integer() => Some(*q.numer()),
        _ => None,
    };
    let mut cache: BTreeMap<String, Option<Feasible>> = BTreeMap::new();
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
                .or_insert_with(|| values_over(e, &atoms, &sym_sets))
                .clone();
            // Sizes whose values are not enumerated are left out (every entry is exact).
            let Some(v) = values else { continue };
            let example = int(e.eval(&|n| hints.get(n).copied()));
            out.push(serde_json::json!({
                "tensor": tensor, "index": index, "expr": text,
                "min": v.min, "opt": example, "max": v.max, "count": v.count,
            }));
        }
    }
    Ok(out)
}

/// The values of `e` over every tuple of its symbols' sets, when each symbol has one and the
/// tuples are at most [`MAX_TUPLES`].
fn values_over(e: &Expr, atoms: &[String], sets: &BTreeMap<String, DimSet>) -> Option<Feasible> {
    let sides: Vec<&DimSet> = atoms.iter().map(|a| sets.get(a)).collect::<Option<_>>()?;
    let mut tuples: u128 = 1;
    for s in &sides {
        tuples = tuples.checked_mul(s.count())?;
    }
    if tuples > MAX_TUPLES {
        return None;
    }
    let lists: Vec<Vec<i128>> = sides.iter().map(|s| s.iter().collect()).collect();
    let mut vals = std::collections::BTreeSet::new();
    let mut at = vec![0usize; lists.len()];
    if lists.iter().any(Vec::is_empty) {
        return Some(Feasible::from(&DimSet::empty()));
    }
    loop {
        let env = |n: &str| atoms.iter().position(|a| a == n).map(|k| lists[k][at[k]]);
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
                return Some(Feasible::from(&DimSet::from_values(vals)));
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

/// The profiles of `specs`: `k` buckets per dynamic dimension (at most 64), or with `cover`,
/// one profile per piece of a cover of at most `cover` pieces (at most 64).
pub fn build(specs: &[InputSpec], k: usize, cover: Option<usize>) -> Result<ProfileSet, Error> {
    match cover {
        Some(n) => Ok(ProfileSet::cover(specs, n.clamp(1, 64))?),
        None => Ok(ProfileSet::build(specs, k.clamp(1, 64))?),
    }
}

/// Profiles in the requested format (JSON gains `intermediate` sizes for a program).
pub fn render(set: &ProfileSet, format: &str, inputs: &Inputs) -> String {
    match format {
        "trtexec" => crate::trt::emit::trtexec(set) + "\n",
        "polygraphy" => crate::trt::emit::polygraphy(set) + "\n",
        "torch-tensorrt" => crate::trt::emit::torch_tensorrt(set),
        _ => {
            let mut v = crate::trt::emit::json(set);
            if let Some(sizes) = &inputs.intermediate {
                v["intermediate"] = serde_json::Value::Array(sizes.clone());
            }
            serde_json::to_string_pretty(&v).expect("json") + "\n"
        }
    }
}
