//! The normalization benchmark (`dimguard norm-bench`, `examples/norm_bench.rs`): every cell of
//! the matrix timed through CUDA graphs (see [`Gpu::time`]), bandwidth counting one read and one
//! write, and the share of the device's copy bandwidth for the same bytes, measured in the same
//! run the same way. The cells are written as JSON lines that `tools/device/norm_bench_torch.py`
//! reads to time PyTorch eager and `torch.compile` on the same shapes, values and parameters.
//!
//! Inputs and parameters are deterministic formulas that the PyTorch script computes too
//! ([`input_value`], [`param_value`]); parameters are rounded to the storage type, as a model in
//! that type holds them.

use crate::gpu::{Gpu, Strategy};
use crate::{half, BatchNorm, DType, Layer, Norm, NormError, Param};
use serde::Serialize;

/// What PyTorch calls for a cell (read by the PyTorch script).
#[derive(Debug, Clone, Serialize)]
pub struct TorchOp {
    /// `batch_norm`, `instance_norm`, `group_norm` or `layer_norm`.
    pub op: &'static str,
    /// Groups of `group_norm`.
    pub groups: usize,
    /// Normalized shape of `layer_norm`.
    pub normalized: Vec<usize>,
    /// Whether weight and bias are given.
    pub affine: bool,
}

/// One cell of the matrix.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Which part of the matrix: `issue`, `runtime`, `rows`, `raft`, `resnet`.
    pub set: &'static str,
    /// Layer label as in tables.
    pub layer: String,
    /// Input shape.
    pub shape: Vec<usize>,
    /// Storage type name.
    pub dtype: &'static str,
    /// `const` (uploaded once) or `runtime` (device buffers bound at each launch).
    pub params: &'static str,
    /// The PyTorch call.
    pub torch: TorchOp,
}

/// A timed cell.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The cell.
    #[serde(flatten)]
    pub cell: Cell,
    /// Tensor bytes (one of input or output).
    pub bytes: usize,
    /// Median milliseconds per run.
    pub ms: f32,
    /// Median milliseconds of a device-to-device copy of the same bytes.
    pub copy_ms: f32,
    /// Percent of the copy's bandwidth.
    pub pct_copy: f64,
    /// Median milliseconds of an empty kernel timed the same way (the launch floor).
    pub floor_ms: f32,
    /// The kernel path taken.
    pub path: String,
}

/// Input element `i` (before rounding to the storage type): values in [-2, 2).
pub fn input_value(i: usize) -> f32 {
    ((i as u64).wrapping_mul(2_654_435_761) % 1000) as f32 / 250.0 - 2.0
}

/// Parameter `i` of kind `which` (`weight`, `bias`, `mean`, `var`), before rounding.
pub fn param_value(which: &str, i: usize) -> f32 {
    let i = i as u64;
    match which {
        "weight" => 0.5 + ((i * 37) % 101) as f32 / 101.0,
        "bias" => ((i * 53) % 97) as f32 / 97.0 - 0.5,
        "mean" => ((i * 29) % 89) as f32 / 89.0 - 0.5,
        _ => 0.5 + ((i * 41) % 83) as f32 / 83.0,
    }
}

fn params(dt: DType, which: &str, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| half::round_to(dt, param_value(which, i)))
        .collect()
}

/// The matrix: the issue's `[8, 64, 256, 256]` cells, the same with run-time parameters,
/// LayerNorm over rows of 4096 and BatchNorm on `[4096, 4096]`, RAFT's InstanceNorm on
/// `1x256x(H/8)x(W/8)` for sizes RAFT accepts, and ResNet BatchNorm shapes at batch 1 and 64.
pub fn cells() -> Vec<Cell> {
    let mut out = Vec::new();
    let op = |op, groups, normalized: &[usize], affine| TorchOp {
        op,
        groups,
        normalized: normalized.to_vec(),
        affine,
    };
    for dt in DType::ALL {
        let big = vec![8, 64, 256, 256];
        for (set, params) in [("issue", "const"), ("runtime", "runtime")] {
            let mut layers = vec![
                ("batch_norm", op("batch_norm", 0, &[], true)),
                ("group_norm(8)", op("group_norm", 8, &[], true)),
            ];
            if set == "issue" {
                layers.push(("instance_norm", op("instance_norm", 0, &[], true)));
                layers.push((
                    "layer_norm(C,H,W)",
                    op("layer_norm", 0, &[64, 256, 256], true),
                ));
            }
            for (layer, torch) in layers {
                out.push(Cell {
                    set,
                    layer: layer.into(),
                    shape: big.clone(),
                    dtype: dt.name(),
                    params,
                    torch,
                });
            }
        }
        for (layer, torch) in [
            ("layer_norm(4096)", op("layer_norm", 0, &[4096], true)),
            ("batch_norm", op("batch_norm", 0, &[], true)),
        ] {
            out.push(Cell {
                set: "rows",
                layer: layer.into(),
                shape: vec![4096, 4096],
                dtype: dt.name(),
                params: "const",
                torch,
            });
        }
        // RAFT (feature encoder output, InstanceNorm without affine) at image sizes in its
        // accepted set (H, W multiples of 8).
        for (h, w) in [(368, 768), (440, 1024), (1080, 1920)] {
            out.push(Cell {
                set: "raft",
                layer: format!("instance_norm {h}x{w}"),
                shape: vec![1, 256, h / 8, w / 8],
                dtype: dt.name(),
                params: "const",
                torch: op("instance_norm", 0, &[], false),
            });
        }
        for shape in [
            [1, 64, 112, 112],
            [64, 64, 112, 112],
            [1, 2048, 7, 7],
            [64, 2048, 7, 7],
        ] {
            out.push(Cell {
                set: "resnet",
                layer: "batch_norm".into(),
                shape: shape.to_vec(),
                dtype: dt.name(),
                params: "const",
                torch: op("batch_norm", 0, &[], true),
            });
        }
    }
    out
}

/// The storage type named in a cell.
fn dtype(name: &str) -> DType {
    DType::ALL
        .into_iter()
        .find(|d| d.name() == name)
        .unwrap_or(DType::F32)
}

/// The layer of a cell and the run-time tensors it needs (name, values).
pub fn layer(cell: &Cell) -> (Layer, Vec<(String, Vec<f32>)>) {
    let dt = dtype(cell.dtype);
    let shape = &cell.shape;
    let c = shape[1];
    let t = &cell.torch;
    let plen = if t.op == "layer_norm" {
        t.normalized.iter().product()
    } else {
        c
    };
    let mut runtime = Vec::new();
    let mut param = |which: &str| -> Param {
        let v = params(dt, which, plen);
        if cell.params == "runtime" {
            let name = format!("{}.{which}", cell.layer);
            runtime.push((name.clone(), v));
            Param::Runtime(name)
        } else {
            Param::Const(v)
        }
    };
    let r = shape.len();
    let layer = match t.op {
        "batch_norm" => Layer::Batch(BatchNorm::new(
            &cell.layer,
            param("mean"),
            param("var"),
            param("weight"),
            param("bias"),
            1e-5,
        )),
        op => {
            let (w, b) = if t.affine {
                (param("weight"), param("bias"))
            } else {
                (Param::Absent, Param::Absent)
            };
            Layer::Norm(match op {
                "group_norm" => Norm::group(&cell.layer, r, t.groups, 1e-5, w, b),
                "instance_norm" => Norm::instance(&cell.layer, r, 1e-5, w, b),
                _ => Norm::layer(&cell.layer, r, t.normalized.len(), 1e-5, w, b),
            })
        }
    };
    (layer, runtime)
}

/// Times every cell (or those selected by the environment variable `NORM_BENCH_FILTER`):
/// `reps` launches per CUDA graph, the median of `samples` replays.
pub fn run(
    reps: usize,
    samples: usize,
    mut progress: impl FnMut(&Row),
) -> Result<Vec<Row>, NormError> {
    let g = Gpu::get()?;
    let mut rows = Vec::new();
    // NORM_BENCH_FILTER=TEXT keeps the cells whose "set layer shape dtype" contains TEXT (for
    // profiling one cell under ncu).
    let filter = std::env::var("NORM_BENCH_FILTER").unwrap_or_default();
    g.preload(&DType::ALL)?;
    let floor_ms = g.floor_ms(reps, samples)?;
    // NORM_BENCH_STRATEGY=fused|slab|pipelined|cluster|three forces a path where it applies (for comparing paths;
    // cells where it does not apply keep the automatic choice).
    let forced = match std::env::var("NORM_BENCH_STRATEGY").as_deref() {
        Ok("fused") => Strategy::Fused,
        Ok("slab") => Strategy::Slab,
        Ok("pipelined") => Strategy::Pipelined,
        Ok("three") => Strategy::ThreePass,
        Ok("cluster") => Strategy::Cluster,
        _ => Strategy::Auto,
    };
    for cell in cells() {
        let label = format!(
            "{} {} {:?} {}",
            cell.set, cell.layer, cell.shape, cell.dtype
        );
        if !label.contains(&filter) {
            continue;
        }
        let dt = dtype(cell.dtype);
        let n: usize = cell.shape.iter().product();
        let bytes = n * dt.size();
        let copy_ms = g.copy_ms(bytes, reps, samples)?;
        let x: Vec<f32> = (0..n).map(input_value).collect();
        let xb = g.upload(dt, &x)?;
        let mut yb = g.poisoned(dt, n)?;
        let (layer, runtime) = layer(&cell);
        let tensors = runtime
            .iter()
            .map(|(name, v)| Ok((name.as_str(), g.upload(dt, v)?)))
            .collect::<Result<Vec<_>, NormError>>()?;
        let bound: Vec<(&str, &crate::Buffer)> = tensors.iter().map(|(n, b)| (*n, b)).collect();
        let mut prepared = match g.prepare(&layer, &cell.shape, dt, forced) {
            Ok(p) => p,
            Err(_) if forced != Strategy::Auto => {
                g.prepare(&layer, &cell.shape, dt, Strategy::Auto)?
            }
            Err(e) => return Err(e),
        };
        let ms = g.time(reps, samples, || {
            g.launch(&mut prepared, &xb, &mut yb, &bound)
        })?;
        let row = Row {
            bytes,
            ms,
            copy_ms,
            pct_copy: 100.0 * copy_ms as f64 / ms as f64,
            floor_ms,
            path: prepared.path(),
            cell,
        };
        progress(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// Runs the matrix and prints a Markdown table row by row; with `json`, also writes one JSON
/// object per cell to that file (the input of `tools/device/norm_bench_torch.py`).
pub fn print_table(
    reps: usize,
    samples: usize,
    json: Option<&std::path::Path>,
) -> Result<(), NormError> {
    use std::io::Write;
    let g = Gpu::get()?;
    let mut out = match json {
        Some(p) => Some(std::fs::File::create(p).map_err(|source| NormError::Write {
            path: p.to_path_buf(),
            source,
        })?),
        None => None,
    };
    println!("{} ({} multiprocessors)", g.name(), g.sm_count());
    println!();
    println!(
        "| set | layer | shape | dtype | params | ms | copy ms | % of copy | launch floor ms | path |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    run(reps, samples, |r| {
        println!(
            "| {} | {} | {:?} | {} | {} | {:.4} | {:.4} | {:.0}% | {:.4} | {} |",
            r.cell.set,
            r.cell.layer,
            r.cell.shape,
            r.cell.dtype,
            r.cell.params,
            r.ms,
            r.copy_ms,
            r.pct_copy,
            r.floor_ms,
            r.path
        );
        if let Some(f) = out.as_mut() {
            // A failed write shows as a missing cell in the PyTorch script's table.
            let _ = writeln!(f, "{}", serde_json::to_string(r).unwrap_or_default());
        }
    })
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cell_builds_a_valid_layer() {
        let cells = cells();
        assert_eq!(cells.len(), 3 * (4 + 2 + 2 + 3 + 4));
        for cell in &cells {
            let (layer, runtime) = layer(cell);
            layer.check(&cell.shape).unwrap();
            assert_eq!(runtime.is_empty(), cell.params == "const", "{cell:?}");
            for (name, len, _) in layer.runtime_params(&cell.shape).unwrap() {
                assert!(runtime.iter().any(|(n, v)| *n == name && v.len() == len));
            }
        }
    }

    #[test]
    fn parameters_are_exact_in_their_storage_type() {
        for dt in DType::ALL {
            for v in params(dt, "weight", 300) {
                assert_eq!(half::round_to(dt, v), v);
            }
        }
        assert_eq!(input_value(0), -2.0);
        assert_eq!(input_value(1), 761.0 / 250.0 - 2.0);
    }
}
