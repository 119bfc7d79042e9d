//! The normalization benchmark matrix (`dimguard norm-bench`): time per layer, shape and type,
//! bandwidth counting one read and one write, and the share of the device's copy bandwidth
//! measured in the same run.

use super::gpu::Gpu;
use super::{BatchNorm, DType, Layer, Norm, NormError};

/// One cell.
#[derive(Debug, Clone)]
pub struct Row {
    /// Layer.
    pub layer: &'static str,
    /// Shape.
    pub shape: Vec<usize>,
    /// Storage type.
    pub dtype: DType,
    /// Mean milliseconds per run.
    pub ms: f32,
    /// GB/s counting one read and one write.
    pub gbps: f64,
    /// Percent of the device-to-device copy bandwidth of the same bytes.
    pub pct_copy: f64,
}

/// The shapes of the matrix.
pub const SHAPES: [&[usize]; 4] = [
    &[8, 64, 256, 256],
    &[1, 256, 135, 240],
    &[32, 32, 64, 64],
    &[4096, 4096],
];
/// The layers of the matrix.
pub const LAYERS: [&str; 5] = [
    "batch_norm",
    "instance_norm",
    "group_norm(8)",
    "layer_norm(C,H,W)",
    "layer_norm(last 4096)",
];

fn layer(name: &str, shape: &[usize]) -> Option<Layer> {
    let r = shape.len();
    let c = shape[1];
    match name {
        "batch_norm" => Some(Layer::Batch(BatchNorm {
            name: name.into(),
            mean: vec![0.1; c],
            var: vec![1.5; c],
            weight: vec![0.9; c],
            bias: vec![0.2; c],
            eps: 1e-5,
        })),
        "instance_norm" if r >= 3 => Some(Layer::Norm(Norm::instance(
            name,
            r,
            1e-5,
            vec![0.9; c],
            vec![0.2; c],
        ))),
        "group_norm(8)" if r >= 3 && c % 8 == 0 => Some(Layer::Norm(Norm::group(
            name,
            r,
            8,
            1e-5,
            vec![0.9; c],
            vec![0.2; c],
        ))),
        "layer_norm(C,H,W)" if r >= 3 => {
            let inner: usize = shape[1..].iter().product();
            Some(Layer::Norm(Norm::layer(
                name,
                r,
                r - 1,
                1e-5,
                vec![0.9; inner],
                vec![0.2; inner],
            )))
        }
        "layer_norm(last 4096)" if shape[r - 1] == 4096 => Some(Layer::Norm(Norm::layer(
            name,
            r,
            1,
            1e-5,
            vec![0.9; 4096],
            vec![0.2; 4096],
        ))),
        _ => None,
    }
}

/// Runs the matrix. Cells that do not apply (a rank-2 input for a channel norm, a last
/// dimension other than 4096) are skipped.
pub fn run(iters: usize, mut progress: impl FnMut(&Row)) -> Result<Vec<Row>, NormError> {
    let g = Gpu::get()?;
    let mut rows = Vec::new();
    for shape in SHAPES {
        let n: usize = shape.iter().product();
        for dt in [DType::F32, DType::F16, DType::BF16] {
            let bytes = n * dt.size();
            let copy = g.copy_ms(bytes, iters)?;
            let x: Vec<f32> = (0..n)
                .map(|i| ((i * 2654435761) % 1000) as f32 / 250.0 - 2.0)
                .collect();
            let xb = g.upload(dt, &x)?;
            let mut yb = g.poisoned(dt, n)?;
            for name in LAYERS {
                let Some(l) = layer(name, shape) else {
                    continue;
                };
                // Parameters uploaded once, as an engine does; the kernels alone are timed.
                let mut prepared = g.prepare(&l, shape)?;
                let ms = g.time(iters, || g.launch(&mut prepared, dt, &xb, &mut yb))?;
                let gbps = 2.0 * bytes as f64 / (ms as f64 * 1e-3) / 1e9;
                let copy_gbps = 2.0 * bytes as f64 / (copy as f64 * 1e-3) / 1e9;
                let row = Row {
                    layer: name,
                    shape: shape.to_vec(),
                    dtype: dt,
                    ms,
                    gbps,
                    pct_copy: 100.0 * gbps / copy_gbps,
                };
                progress(&row);
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

/// Runs the matrix and prints it as a Markdown table, row by row as cells finish.
pub fn print_table(iters: usize) -> Result<(), NormError> {
    Gpu::get()?;
    println!("| layer | shape | dtype | ms | GB/s | % of copy |");
    println!("|---|---|---|---|---|---|");
    run(iters.max(1), |r| {
        println!(
            "| {} | {:?} | {} | {:.4} | {:.0} | {:.0}% |",
            r.layer,
            r.shape,
            r.dtype.name(),
            r.ms,
            r.gbps,
            r.pct_copy
        )
    })
    .map(|_| ())
}
