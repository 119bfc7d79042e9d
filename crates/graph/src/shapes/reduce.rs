//! Reductions (`sum`, `mean`, `amax`, `amin`) and products: `linear`, `mm`, `matmul`, `bmm`,
//! `addmm`.

use super::args::{broadcast, norm_dim, Args, Inferred, Rule};
use dimguard_solver::Expr;

pub(super) fn rule(op: &str) -> Option<Rule> {
    Some(match op {
        "sum" | "mean" | "amax" | "amin" => reduction,
        "linear" => linear,
        "mm" | "matmul" | "bmm" | "addmm" => matmul,
        _ => return None,
    })
}

fn reduction(a: &Args) -> Option<Inferred> {
    let x = a.tensor("self", 0)?;
    let dims = a.ints("dim", 1).unwrap_or_default();
    let keep = a.bool("keepdim", 2).unwrap_or(false);
    let dims: Vec<usize> = if dims.is_empty() {
        (0..x.len()).collect()
    } else {
        dims.iter()
            .map(|d| match d {
                Expr::Const(c) => norm_dim(*c.numer(), x.len()),
                _ => None,
            })
            .collect::<Option<_>>()?
    };
    let s: Vec<Expr> = x
        .iter()
        .enumerate()
        .filter_map(|(i, e)| {
            if dims.contains(&i) {
                keep.then(|| Expr::int(1))
            } else {
                Some(e.clone())
            }
        })
        .collect();
    Some(Inferred::one(s))
}

fn linear(a: &Args) -> Option<Inferred> {
    let x = a.tensor_of_rank("input", 0, 1)?;
    let w = a.tensor("weight", 1)?;
    let mut s = x[..x.len() - 1].to_vec();
    s.push(a.dim(w, 0, "weight")?);
    Some(Inferred::one(s))
}

fn matmul(a: &Args) -> Option<Inferred> {
    let (x, y) = if a.op == "addmm" {
        (a.tensor("mat1", 1)?, a.tensor("mat2", 2)?)
    } else {
        (
            a.tensor("self", 0)?,
            a.tensor("mat2", 1).or_else(|| a.tensor("other", 1))?,
        )
    };
    if x.len() < 2 || y.len() < 2 {
        return None;
    }
    let mut out = Inferred::default();
    let mut s = broadcast(&x[..x.len() - 2], &y[..y.len() - 2], &mut out.guards);
    s.push(x[x.len() - 2].clone());
    s.push(y[y.len() - 1].clone());
    out.tensors = vec![Some(s)];
    Some(out)
}
