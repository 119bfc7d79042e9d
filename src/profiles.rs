//! Profiles from a source: TensorRT optimization profiles from a program, a message or `--dim`s
//! (the pipeline behind `dimguard profile` and `dimguard.profile`).

use crate::graph;
use crate::solver::diagnose::{self, Options};
use crate::solver::merge::{Sheet, Value};
use crate::solver::python::source_input;
use crate::solver::report::Status;
use crate::solver::DimSet;
use crate::trt::{DimKind, InputSpec, ProfileSet};
use std::collections::BTreeMap;

/// `NAME:1x3x520x960`.
pub fn parse_shape(s: &str) -> Result<(String, Vec<i128>), String> {
    let (name, dims) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("`{s}`: expected NAME:1x3x520x960"))?;
    let v: Result<Vec<i128>, _> = dims.split('x').map(|d| d.trim().parse::<i128>()).collect();
    let v = v.map_err(|_| format!("`{s}`: sizes must be integers separated by `x`"))?;
    Ok((name.to_string(), v))
}

/// `INPUT:INDEX=LO..HI`.
fn parse_dim(s: &str) -> Result<(String, usize, i128, i128), String> {
    let bad = || format!("`{s}`: expected --dim INPUT:INDEX=LO..HI, e.g. image1:2=135..2160");
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
) -> Result<Vec<InputSpec>, String> {
    let examples: BTreeMap<String, Vec<i128>> = examples
        .iter()
        .map(|e| parse_shape(e))
        .collect::<Result<_, _>>()?;
    let mut specs: Vec<InputSpec> = Vec::new();
    let mut program_loaded = false;
    if let Some(p) = path {
        if let Ok(program) = graph::load(p) {
            program_loaded = true;
            let report = graph::check(&program, false).map_err(|e| e.to_string())?;
            for input in program.user_inputs() {
                let sizes = program
                    .sizes(&input)
                    .map_err(|e| e.to_string())?
                    .unwrap_or_default();
                let mut ds = Vec::new();
                for (i, s) in sizes.iter().enumerate() {
                    let kind = match s {
                        graph::program::Size::Int(n) => DimKind::Static(*n),
                        graph::program::Size::Expr(..) => {
                            let d = report
                                .dims
                                .iter()
                                .find(|d| d.input == input && d.index == i)
                                .ok_or("dimension missing")?;
                            if let Some((o, oi)) = &d.same_as {
                                DimKind::Same(o.clone(), *oi)
                            } else {
                                // A linked size: its side of the largest sound box, so that
                                // every corner shape passes with the others' sides.
                                let side = d.sides.box_side.as_ref().map(|p| {
                                    crate::solver::report::Feasible::from(&DimSet::progression(
                                        p.lo, p.hi, p.modulus, p.residue,
                                    ))
                                });
                                let acc = side
                                    .as_ref()
                                    .or(d.accepted.as_ref())
                                    .filter(|a| a.count > 0)
                                    .ok_or_else(|| {
                                        format!(
                                            "input `{input}` dimension {i}: {}",
                                            d.undecided
                                                .as_ref()
                                                .map_or("no size passes", |u| u.reason.as_str())
                                        )
                                    })?;
                                let example = examples
                                    .get(&input)
                                    .and_then(|e| e.get(i).copied())
                                    .or(d.example);
                                DimKind::Dynamic {
                                    accepted: DimSet::from_segments(acc.segments.clone())
                                        .map_err(|e| e.to_string())?,
                                    example,
                                }
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
        }
    }
    if !program_loaded {
        if let Some(text) = source {
            let report =
                diagnose::diagnose_text(text, &Options::default()).map_err(|e| e.to_string())?;
            for d in &report.dims {
                let Some((input, index)) = d.source.as_deref().and_then(source_input) else {
                    continue;
                };
                let shape = examples.get(&input).ok_or_else(|| {
                    format!("the message does not give the rank of input `{input}`: add --example {input}:1x3x520x960 (its full traced shape)")
                })?;
                if index >= shape.len() {
                    return Err(format!(
                        "`{}` is dimension {index} of `{input}`, but --example gives `{input}` rank {}: give its full traced shape (--example {input}:1x3x520x960)",
                        d.name,
                        shape.len()
                    ));
                }
                let spec = ensure(&mut specs, &input, shape);
                let kind = match (d.status, &d.feasible) {
                    (Status::Specialized, _) => {
                        DimKind::Static(d.specialized.unwrap_or(shape[index]))
                    }
                    (_, Some(f)) => DimKind::Dynamic {
                        accepted: DimSet::from_segments(f.segments.clone())
                            .map_err(|e| e.to_string())?,
                        example: shape.get(index).copied(),
                    },
                    _ => {
                        return Err(format!(
                            "`{}`: {}",
                            d.name,
                            d.undecided.as_deref().unwrap_or("no exact set")
                        ))
                    }
                };
                *spec
                    .dims
                    .get_mut(index)
                    .ok_or_else(|| format!("`{input}` has no dimension {index}"))? = kind;
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
            .ok_or_else(|| format!("--dim {d}: add --example {input}:... (the full shape of `{input}`) to give its rank"))?
            .clone();
        let spec = ensure(&mut specs, &input, &shape);
        *spec
            .dims
            .get_mut(index)
            .ok_or_else(|| format!("`{input}` has no dimension {index}"))? = DimKind::Dynamic {
            accepted: DimSet::interval(lo, hi),
            example: shape.get(index).copied(),
        };
    }
    if specs.is_empty() {
        return Err("nothing to profile: give a .pt2 archive, an error message, or --dim INPUT:INDEX=LO..HI with --example".into());
    }
    Ok(specs)
}

/// Adds every `--example` input the message did not name (see [`inputs`]).
fn cover_examples(
    specs: &mut Vec<InputSpec>,
    examples: &BTreeMap<String, Vec<i128>>,
    spec: Option<&Sheet>,
) -> Result<(), String> {
    let named: Vec<String> = specs.iter().map(|s| s.name.clone()).collect();
    for (input, shape) in examples {
        if named.contains(input) {
            continue;
        }
        let Some(sheet) = spec else {
            return Err(format!(
                "the message does not name input `{input}`: give --spec FILE (your dynamic_shapes) so dimguard knows which of its dimensions share a Dim with {}, or --dim {input}:INDEX=LO..HI",
                if named.is_empty() { "the others".to_string() } else { named.join(", ") }
            ));
        };
        let mut kinds: Vec<DimKind> = shape.iter().map(|&n| DimKind::Static(n)).collect();
        for e in sheet.entries.iter().filter(|e| &e.input == input) {
            let Some(slot) = kinds.get_mut(e.index) else {
                return Err(format!(
                    "--spec gives `{input}` dimension {}, but its example has rank {}",
                    e.index,
                    shape.len()
                ));
            };
            // The same Dim (same root, coef and offset) on an input the message covers.
            let twin = sheet.entries.iter().find(|o| {
                o.value == e.value
                    && named.contains(&o.input)
                    && matches!(o.value, Value::Dim { .. })
            });
            match (&e.value, twin) {
                (_, Some(o)) => *slot = DimKind::Same(o.input.clone(), o.index),
                (Value::Static | Value::Int { .. }, _) => {}
                _ => {
                    return Err(format!(
                        "`{input}` dimension {}: the message says nothing about it and it shares no Dim with an input it names; give --dim {input}:{}=LO..HI",
                        e.index, e.index
                    ))
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

/// Exact min/opt/max of every symbolic intermediate size of a program (the `s0 + 1` case):
/// JSON objects `{tensor, index, expr, min, opt, max, count}`.
pub fn intermediate(path: &std::path::Path) -> Option<Vec<serde_json::Value>> {
    let program = graph::load(path).ok()?;
    let report = graph::check(&program, true).ok()?;
    Some(
        report
            .sizes
            .iter()
            .filter_map(|s| {
                let v = s.values.as_ref()?;
                Some(serde_json::json!({
                    "tensor": s.tensor, "index": s.index, "expr": s.expr,
                    "min": v.min, "opt": s.example, "max": v.max, "count": v.count,
                }))
            })
            .collect(),
    )
}

/// Profiles in the requested format (JSON gains `intermediate` sizes for a program).
/// The profiles of `specs`: `k` buckets per dynamic dimension (at most 64), or with `cover`,
/// one profile per piece of a cover of at most `cover` pieces (at most 64).
pub fn build(
    specs: &[InputSpec],
    k: usize,
    cover: Option<usize>,
) -> Result<ProfileSet, crate::trt::profile::Error> {
    match cover {
        Some(n) => ProfileSet::cover(specs, n.clamp(1, 64)),
        None => ProfileSet::build(specs, k.clamp(1, 64)),
    }
}

pub fn render(set: &ProfileSet, format: &str, program: Option<&std::path::Path>) -> String {
    match format {
        "trtexec" => crate::trt::emit::trtexec(set) + "\n",
        "polygraphy" => crate::trt::emit::polygraphy(set) + "\n",
        "torch-tensorrt" => crate::trt::emit::torch_tensorrt(set),
        _ => {
            let mut v = crate::trt::emit::json(set);
            if let Some(sizes) = program.and_then(intermediate) {
                v["intermediate"] = serde_json::Value::Array(sizes);
            }
            serde_json::to_string_pretty(&v).expect("json") + "\n"
        }
    }
}
