//! Operators that rearrange, select, join or split dimensions: `view` / `reshape` / `expand`,
//! `flatten`, `permute`, `transpose`, `t`, `unsqueeze`, `squeeze`, `slice`, `cat`, `stack`,
//! `repeat`, `meshgrid`, `chunk` / `split`, padding (`pad`, `constant_pad_nd`, reflection and
//! replication padding).

use super::args::{norm_dim, Args, Inferred, Rule};
use super::symint::ceil_div;
use dimguard_solver::{CmpOp, Expr};
use serde_json::Value;

pub(super) fn rule(op: &str) -> Option<Rule> {
    Some(match op {
        "view" | "reshape" | "_unsafe_view" | "expand" => view,
        "flatten" => flatten,
        "permute" => permute,
        "transpose" => transpose,
        "t" => |a| {
            Some(Inferred::one(
                a.tensor("self", 0)?.iter().rev().cloned().collect(),
            ))
        },
        "unsqueeze" => unsqueeze,
        "squeeze" => squeeze,
        "slice" => slice,
        "cat" | "concat" => cat,
        "stack" => stack,
        "repeat" => repeat,
        "meshgrid" => meshgrid,
        "chunk" | "split" | "split_with_sizes" => split,
        "pad" | "constant_pad_nd" | "reflection_pad1d" | "reflection_pad2d"
        | "reflection_pad3d" | "replication_pad1d" | "replication_pad2d" | "replication_pad3d" => {
            pad
        }
        _ => return None,
    })
}

/// Padding: the list (`pad`, or `padding` for the reflection and replication operators) holds
/// (before, after) pairs from the last dimension backwards; each pair adds to its dimension
/// (negative amounts crop). The bounds reflection padding needs (an amount below the size) are
/// torch's own guards.
fn pad(a: &Args) -> Option<Inferred> {
    let x = a.input(0)?;
    let amounts = a.ints("pad", 1).or_else(|| a.ints("padding", 1))?;
    if amounts.len() % 2 != 0 || amounts.len() > 2 * x.len() {
        return a.malformed(format!(
            "`pad` has {} values, but {} needs pairs for at most {} dimension(s)",
            amounts.len(),
            a.op,
            x.len()
        ));
    }
    let mut s = x.to_vec();
    for (i, pair) in amounts.chunks(2).enumerate() {
        let d = x.len() - 1 - i;
        s[d] = s[d].clone() + pair[0].clone() + pair[1].clone();
    }
    Some(Inferred::one(s))
}

/// The product of sizes (1 for none).
fn product(sizes: impl IntoIterator<Item = Expr>) -> Expr {
    sizes
        .into_iter()
        .reduce(|p, q| p * q)
        .unwrap_or(Expr::int(1))
}

fn view(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let target = a.ints("size", 1).or_else(|| a.ints("shape", 1))?;
    let minus_one = Expr::int(-1);
    let numel = product(x.iter().cloned());
    let known = product(target.iter().filter(|e| **e != minus_one).cloned());
    let s = target
        .iter()
        .enumerate()
        .map(|(i, e)| {
            if *e != minus_one {
                Some(e.clone())
            } else if a.op == "expand" {
                // -1 keeps the size of the aligned input dimension.
                let j = (i + x.len()).checked_sub(target.len());
                match j {
                    Some(j) => Some(x[j].clone()),
                    None => a.malformed(format!(
                        "`size` has {} entries, more than the input's {} dimension(s), and -1 at {i} has no input dimension",
                        target.len(),
                        x.len()
                    )),
                }
            } else {
                Some(Expr::FloorDiv(
                    Box::new(numel.clone()),
                    Box::new(known.clone()),
                ))
            }
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Inferred::one(s))
}

fn flatten(a: &Args) -> Option<Inferred> {
    let x = a.tensor("input", 0).or_else(|| a.tensor("self", 0))?;
    if x.is_empty() {
        return Some(Inferred::one(vec![Expr::int(1)]));
    }
    let st = a.index(
        a.const_int("start_dim", 1).unwrap_or(0),
        x.len(),
        "start_dim",
    )?;
    let en = a.index(a.const_int("end_dim", 2).unwrap_or(-1), x.len(), "end_dim")?;
    if st > en {
        return a.malformed(format!("`start_dim` ({st}) is after `end_dim` ({en})"));
    }
    let mut s = x[..st].to_vec();
    s.push(product(x[st..=en].iter().cloned()));
    s.extend(x[en + 1..].iter().cloned());
    Some(Inferred::one(s))
}

fn permute(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let dims = a.ints("dims", 1)?;
    let s = dims
        .iter()
        .map(|d| match d {
            Expr::Const(c) => norm_dim(*c.numer(), x.len()).map(|i| x[i].clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Inferred::one(s))
}

fn transpose(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let d0 = a.index(a.const_int("dim0", 1)?, x.len(), "dim0")?;
    let d1 = a.index(a.const_int("dim1", 2)?, x.len(), "dim1")?;
    let mut s = x.to_vec();
    s.swap(d0, d1);
    Some(Inferred::one(s))
}

fn unsqueeze(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let d = a.index(a.const_int("dim", 1)?, x.len() + 1, "dim")?;
    let mut s = x.to_vec();
    s.insert(d, Expr::int(1));
    Some(Inferred::one(s))
}

fn squeeze(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let one = Expr::int(1);
    let s = match a.ints("dim", 1) {
        Some(d) => {
            let ds: Vec<usize> = d
                .iter()
                .filter_map(|e| match e {
                    Expr::Const(c) => norm_dim(*c.numer(), x.len()),
                    _ => None,
                })
                .collect();
            x.iter()
                .enumerate()
                .filter(|(i, e)| !(ds.contains(i) && **e == one))
                .map(|(_, e)| e.clone())
                .collect()
        }
        None => x.iter().filter(|e| **e != one).cloned().collect(),
    };
    Some(Inferred::one(s))
}

fn slice(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let d = a.index(a.const_int("dim", 1).unwrap_or(0), x.len(), "dim")?;
    let size = x[d].clone();
    let step = a.const_int("step", 4).unwrap_or(1);
    let clamp = |e: Option<Expr>, default: Expr| -> Expr {
        match e {
            None => default,
            Some(e) => {
                // Negative indices count from the end; then clamp to [0, size].
                let wrapped = Expr::Ite(
                    Box::new(Expr::Cmp(
                        CmpOp::Lt,
                        Box::new(e.clone()),
                        Box::new(Expr::int(0)),
                    )),
                    Box::new(e.clone() + size.clone()),
                    Box::new(e),
                );
                Expr::Min(vec![Expr::Max(vec![wrapped, Expr::int(0)]), size.clone()])
            }
        }
    };
    let start = clamp(a.int("start", 2), Expr::int(0));
    let end = clamp(a.int("end", 3), size.clone());
    let len = Expr::Max(vec![end + Expr::int(-1) * start, Expr::int(0)]);
    let mut s = x.to_vec();
    s[d] = ceil_div(len, step);
    Some(Inferred::one(s))
}

fn cat(a: &Args) -> Option<Inferred> {
    // torch's `cat` skips a 1-D tensor of size 0 whatever the other tensors' rank and `dim`
    // (its legacy empty tensor: GPT-2's default cache concatenates a `(0,)` past state with
    // the new keys, `dim=-2`), and 0-d ones.
    let empty = |s: &[Expr]| s.is_empty() || (s.len() == 1 && s[0] == Expr::int(0));
    let all = a.tensor_list("tensors", 0)?;
    let shapes: Vec<&[Expr]> = all.iter().copied().filter(|s| !empty(s)).collect();
    let Some(&first) = shapes.first() else {
        // Only skipped tensors: the result is the empty 1-D tensor.
        return all
            .iter()
            .any(|s| s.len() == 1)
            .then(|| Inferred::one(vec![Expr::int(0)]));
    };
    let d = a.index(a.const_int("dim", 1).unwrap_or(0), first.len(), "dim")?;
    let mut out = Inferred::default();
    let mut s = first.to_vec();
    s[d] = shapes
        .iter()
        .map(|x| a.dim(x, d, "tensors"))
        .collect::<Option<Vec<_>>>()?
        .into_iter()
        .reduce(|p, q| p + q)?;
    for other in &shapes[1..] {
        for (i, (p, q)) in first.iter().zip(other.iter()).enumerate() {
            if i != d && p != q {
                out.guards.push(Expr::Cmp(
                    CmpOp::Eq,
                    Box::new(p.clone()),
                    Box::new(q.clone()),
                ));
            }
        }
    }
    out.tensors = vec![Some(s)];
    Some(out)
}

fn stack(a: &Args) -> Option<Inferred> {
    let names = a.get("tensors", 0)?.get("as_tensors")?.as_array()?;
    let first = a.env.tensors.get(names.first()?.get("name")?.as_str()?)?;
    let d = a.index(a.const_int("dim", 1).unwrap_or(0), first.len() + 1, "dim")?;
    let mut s = first.clone();
    s.insert(d, Expr::int(names.len() as i128));
    Some(Inferred::one(s))
}

fn repeat(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let reps = a.ints("repeats", 1)?;
    let Some(pad) = reps.len().checked_sub(x.len()) else {
        return a.malformed(format!(
            "`repeats` has {} entries, fewer than the input's {} dimension(s)",
            reps.len(),
            x.len()
        ));
    };
    let s = reps
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if i < pad {
                r.clone()
            } else {
                x[i - pad].clone() * r.clone()
            }
        })
        .collect();
    Some(Inferred::one(s))
}

fn meshgrid(a: &Args) -> Option<Inferred> {
    let names = a.get("tensors", 0)?.get("as_tensors")?.as_array()?;
    let lens: Vec<Expr> = names
        .iter()
        .map(|n| {
            a.env
                .tensors
                .get(n.get("name")?.as_str()?)
                .and_then(|s| s.first().cloned())
        })
        .collect::<Option<_>>()?;
    let mut shape = lens.clone();
    let xy = a.node.inputs.iter().any(|i| {
        i.name == "indexing" && i.arg.get("as_string").and_then(Value::as_str) == Some("xy")
    });
    if xy && shape.len() >= 2 {
        shape.swap(0, 1);
    }
    Some(Inferred {
        listed: vec![shape; lens.len()],
        ..Inferred::default()
    })
}

fn split(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let d = a.index(a.const_int("dim", 2).unwrap_or(0), x.len(), "dim")?;
    let n = x[d].clone();
    let count = a.node.outputs.first()?.get("as_tensors")?.as_array()?.len();
    let parts: Vec<Expr> = match a.op {
        "split_with_sizes" => a.ints("split_sizes", 1)?,
        _ => {
            let size = if a.op == "chunk" {
                ceil_div(n.clone(), a.const_int("chunks", 1)?)
            } else {
                a.int("split_size", 1)?
            };
            // Equal parts, the last one holding the rest.
            let mut v = vec![size.clone(); count.saturating_sub(1)];
            v.push(n + Expr::int(-(count as i128 - 1)) * size);
            v
        }
    };
    Some(Inferred {
        listed: parts
            .into_iter()
            .map(|p| {
                let mut s = x.to_vec();
                s[d] = p;
                s
            })
            .collect(),
        ..Inferred::default()
    })
}
