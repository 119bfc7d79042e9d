//! Operators that slide a window over spatial dimensions or rescale them: convolution, pooling,
//! adaptive pooling, upsampling, `pixel_shuffle` / `pixel_unshuffle`, `grid_sampler`,
//! `im2col` / `col2im` (`F.unfold` / `F.fold`).

use super::args::{Args, Inferred, Rule};
use dimguard_solver::{CmpOp, Expr, RoundKind};

pub(super) fn rule(op: &str) -> Option<Rule> {
    Some(match op {
        "conv2d" | "conv1d" | "conv3d" | "convolution" | "_convolution" => conv,
        "max_pool2d" | "avg_pool2d" | "max_pool2d_with_indices" | "max_pool1d" | "avg_pool1d" => {
            pool
        }
        "adaptive_avg_pool2d"
        | "adaptive_max_pool2d"
        | "_adaptive_avg_pool2d"
        | "adaptive_avg_pool1d" => adaptive_pool,
        "pixel_shuffle" | "pixel_unshuffle" => pixel_shuffle,
        "upsample_nearest2d"
        | "upsample_bilinear2d"
        | "upsample_nearest1d"
        | "upsample_bicubic2d"
        | "_upsample_nearest_exact2d" => upsample,
        "grid_sampler" | "grid_sampler_2d" => grid_sampler,
        "im2col" => im2col,
        "col2im" => col2im,
        _ => return None,
    })
}

/// `floor((in + 2p - d(k-1) - 1 + extra) / s) + 1`; with `ceil_mode`, PyTorch's
/// `pooling_output_shape`: ceil, then drop the last window if it starts in the padding.
pub(super) fn window(input: &Expr, k: i128, s: i128, p: i128, d: i128, ceil_mode: bool) -> Expr {
    let span = input.clone() + Expr::int(2 * p - d * (k - 1) - 1);
    if !ceil_mode {
        return span.floordiv(s) + Expr::int(1);
    }
    let out = (span + Expr::int(s - 1)).floordiv(s) + Expr::int(1);
    let starts_in_pad = Expr::Cmp(
        CmpOp::Ge,
        Box::new(Expr::int(s) * (out.clone() + Expr::int(-1))),
        Box::new(input.clone() + Expr::int(p)),
    );
    Expr::Ite(
        Box::new(starts_in_pad),
        Box::new(out.clone() + Expr::int(-1)),
        Box::new(out),
    )
}

fn conv(a: &Args) -> Option<Inferred> {
    let x = a.tensor_of_rank("input", 0, 2)?;
    let w = a.tensor("weight", 1)?;
    let n = x.len() - 2;
    let w = a.rank(w, n + 2, "weight")?;
    let stride = a.int_list("stride", 3, n, 1)?;
    let dil = a.int_list("dilation", 5, n, 1)?;
    let transposed = a.op.contains("convolution") && a.bool("transposed", 6).unwrap_or(false);
    if transposed {
        return None;
    }
    let pad = match a.get("padding", 4) {
        Some(v) if v.get("as_string").is_some() => {
            if v["as_string"] == "same" {
                let mut s = x.to_vec();
                s[1] = w[0].clone();
                return Some(Inferred::one(s));
            }
            vec![0; n]
        }
        _ => a.int_list("padding", 4, n, 0)?,
    };
    let mut s = vec![x[0].clone(), w[0].clone()];
    for i in 0..n {
        let k = match &w[2 + i] {
            Expr::Const(c) if c.is_integer() => *c.numer(),
            _ => return None,
        };
        s.push(window(&x[2 + i], k, stride[i], pad[i], dil[i], false));
    }
    Some(Inferred::one(s))
}

/// The number of spatial dimensions a 1d or 2d operator works on.
fn spatial(op: &str) -> usize {
    if op.ends_with("1d") {
        1
    } else {
        2
    }
}

fn pool(a: &Args) -> Option<Inferred> {
    let n = spatial(a.op);
    let x = a.input(n)?;
    let k = a.int_list("kernel_size", 1, n, 1)?;
    let stride = match a.ints("stride", 2).filter(|v| !v.is_empty()) {
        None => k.clone(),
        Some(_) => a.int_list("stride", 2, n, 1)?,
    };
    let pad = a.int_list("padding", 3, n, 0)?;
    let max = a.op.starts_with("max");
    let dil = if max {
        a.int_list("dilation", 4, n, 1)?
    } else {
        vec![1; n]
    };
    let ceil = a
        .bool("ceil_mode", if max { 5 } else { 4 })
        .unwrap_or(false);
    let r = x.len();
    let mut s = x[..r - n].to_vec();
    for i in 0..n {
        s.push(window(&x[r - n + i], k[i], stride[i], pad[i], dil[i], ceil));
    }
    Some(Inferred {
        tensors: a.node.outputs.iter().map(|_| Some(s.clone())).collect(),
        ..Inferred::default()
    })
}

fn adaptive_pool(a: &Args) -> Option<Inferred> {
    let o = a.ints("output_size", 1)?;
    let x = a.input(o.len())?;
    let mut s = x[..x.len() - o.len()].to_vec();
    s.extend(o);
    Some(Inferred {
        tensors: a.node.outputs.iter().map(|_| Some(s.clone())).collect(),
        ..Inferred::default()
    })
}

/// The 2-d window arguments of `im2col` / `col2im` from position `first` on: kernel,
/// dilation, padding, stride (two values each).
fn fold_window(a: &Args, first: usize) -> Option<[Vec<i128>; 4]> {
    Some([
        a.int_list("kernel_size", first, 2, 1)?,
        a.int_list("dilation", first + 1, 2, 1)?,
        a.int_list("padding", first + 2, 2, 0)?,
        a.int_list("stride", first + 3, 2, 1)?,
    ])
}

/// `F.unfold`: `(N, C, H, W)` (or `(C, H, W)`) to `(N, C*kh*kw, L)`, `L` the product of the
/// windows' counts along H and W.
fn im2col(a: &Args) -> Option<Inferred> {
    let x = a.input(3)?;
    let [k, d, p, s] = fold_window(a, 1)?;
    let n = x.len();
    let blocks = (0..2)
        .map(|i| window(&x[n - 2 + i], k[i], s[i], p[i], d[i], false))
        .reduce(|l, r| l * r)?;
    let mut out = x[..n - 3].to_vec();
    out.push(x[n - 3].clone() * Expr::int(k[0] * k[1]));
    out.push(blocks);
    Some(Inferred::one(out))
}

/// `F.fold`: `(N, C*kh*kw, L)` (or `(C*kh*kw, L)`) to `(N, C, oh, ow)` at `output_size`; that
/// `L` is the windows' count at the output size is torch's own guard.
fn col2im(a: &Args) -> Option<Inferred> {
    let x = a.input(2)?;
    let o = a.ints("output_size", 1)?;
    if o.len() != 2 {
        return a.malformed(format!(
            "`output_size` has {} values, but col2im needs 2",
            o.len()
        ));
    }
    let [k, ..] = fold_window(a, 2)?;
    let n = x.len();
    let mut out = x[..n - 2].to_vec();
    out.push(x[n - 2].clone().floordiv(k[0] * k[1]));
    out.extend(o);
    Some(Inferred::one(out))
}

fn pixel_shuffle(a: &Args) -> Option<Inferred> {
    let x = a.tensor_of_rank("self", 0, 3)?;
    let r = a
        .const_int("upscale_factor", 1)
        .or_else(|| a.const_int("downscale_factor", 1))?;
    let n = x.len();
    let mut s = x.to_vec();
    let (c, h, w) = (x[n - 3].clone(), x[n - 2].clone(), x[n - 1].clone());
    if a.op == "pixel_shuffle" {
        s[n - 3] = c.floordiv(r * r);
        s[n - 2] = Expr::int(r) * h;
        s[n - 1] = Expr::int(r) * w;
    } else {
        s[n - 3] = Expr::int(r * r) * c;
        s[n - 2] = h.floordiv(r);
        s[n - 1] = w.floordiv(r);
    }
    Some(Inferred::one(s))
}

fn upsample(a: &Args) -> Option<Inferred> {
    let n = spatial(a.op);
    let x = a.input(n)?;
    let r = x.len();
    let mut s = x[..r - n].to_vec();
    if let Some(o) = a.ints("output_size", 1).filter(|o| o.len() == n) {
        s.extend(o);
    } else {
        let sc = a
            .node
            .inputs
            .iter()
            .find(|i| i.name == "scale_factors")?
            .arg
            .get("as_floats")?
            .as_array()?;
        for i in 0..n {
            let f = a.float(sc.get(i).or(sc.first())?)?;
            s.push(Expr::Round(
                RoundKind::Floor,
                Box::new(Expr::Mul(vec![x[r - n + i].clone(), Expr::Const(f)])),
            ));
        }
    }
    Some(Inferred::one(s))
}

fn grid_sampler(a: &Args) -> Option<Inferred> {
    let x = a.tensor_of_rank("input", 0, 2)?;
    let g = a.tensor_of_rank("grid", 1, 3)?;
    Some(Inferred::one(vec![
        x[0].clone(),
        x[1].clone(),
        g[1].clone(),
        g[2].clone(),
    ]))
}
