//! GPU kernels against the f64 CPU reference, on fresh random inputs, with poisoned outputs and
//! every element checked. Without a GPU these tests print why and pass without running.

#![cfg(feature = "cuda")]

use dimguard_trt::norm::gpu::{Buffer, Gpu};
use dimguard_trt::norm::{reference, BatchNorm, DType, Layer, Norm, NormError};

fn gpu() -> Option<&'static Gpu> {
    match Gpu::get() {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("skipping GPU test: {e}");
            None
        }
    }
}

/// Random values in [-2, 3) with a per-call seed (never zeros).
fn random(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            -2.0 + 5.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) as f32
        })
        .collect()
}

fn check(g: &Gpu, layer: &Layer, shape: &[usize], dt: DType, seed: u64) {
    let n: usize = shape.iter().product();
    let x = random(n, seed);
    let xb = g.upload(dt, &x).unwrap();
    // The reference sees exactly the values the GPU sees (after storage rounding).
    let xs: Vec<f64> = g
        .download(dt, &xb)
        .unwrap()
        .iter()
        .map(|v| *v as f64)
        .collect();
    let want = reference(layer, shape, &xs).unwrap();
    let mut y: Buffer = g.poisoned(dt, n).unwrap();
    g.run(layer, shape, dt, &xb, &mut y).unwrap();
    let got = g.download(dt, &y).unwrap();
    let tol = if dt == DType::F32 { 1e-5 } else { 1e-2 };
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        let err = (*a as f64 - b).abs() / b.abs().max(1.0);
        assert!(
            err <= tol,
            "{dt:?} {shape:?} element {i}: got {a}, want {b} (error {err:e})"
        );
    }
}

fn layers(shape: &[usize]) -> Vec<Layer> {
    let r = shape.len();
    let c = shape[1];
    let inner: usize = shape[2..].iter().product();
    let mut v = vec![
        Layer::Batch(BatchNorm {
            name: "bn".into(),
            mean: random(c, 1),
            var: random(c, 2).iter().map(|v| v.abs() + 0.1).collect(),
            weight: random(c, 3),
            bias: random(c, 4),
            eps: 1e-5,
        }),
        Layer::Norm(Norm::instance("in", r, 1e-5, random(c, 5), random(c, 6))),
        Layer::Norm(Norm::layer(
            "ln",
            r,
            r - 1,
            1e-5,
            random(c * inner, 7),
            random(c * inner, 8),
        )),
        Layer::Norm(Norm::layer("ln_last", r, 1, 1e-5, vec![], vec![])),
    ];
    if c % 2 == 0 {
        v.push(Layer::Norm(Norm::group(
            "gn",
            r,
            2,
            1e-5,
            random(c, 9),
            random(c, 10),
        )));
    }
    v
}

#[test]
fn every_layer_matches_the_reference() {
    let Some(g) = gpu() else { return };
    let shapes: [&[usize]; 7] = [
        &[2, 4, 7],
        &[1, 1, 1, 1],
        &[3, 6, 1, 1],
        &[1, 8, 135, 240],
        &[2, 3, 5, 7, 9],
        &[1, 2, 300, 300], // groups larger than one block's registers: the three-pass path
        &[4, 16, 33],
    ];
    for (k, shape) in shapes.iter().enumerate() {
        for layer in layers(shape) {
            for dt in [DType::F32, DType::F16, DType::BF16] {
                check(g, &layer, shape, dt, 100 + k as u64);
            }
        }
    }
}

#[test]
fn eps_edge_cases_and_constant_groups() {
    let Some(g) = gpu() else { return };
    // A constant group has zero variance: the output is 0 * rstd = 0 (eps keeps it finite).
    let shape = [1, 2, 64];
    let x = vec![3.0f32; 128];
    let layer = Layer::Norm(Norm::instance("in", 3, 1e-3, vec![], vec![]));
    let xb = g.upload(DType::F32, &x).unwrap();
    let mut y = g.poisoned(DType::F32, 128).unwrap();
    g.run(&layer, &shape, DType::F32, &xb, &mut y).unwrap();
    assert!(g
        .download(DType::F32, &y)
        .unwrap()
        .iter()
        .all(|v| *v == 0.0));
    // eps = 0 on random data.
    check(
        g,
        &Layer::Norm(Norm::layer("ln", 3, 1, 0.0, vec![], vec![])),
        &[2, 3, 4096],
        DType::F32,
        7,
    );
}

#[test]
fn bad_parameters_never_reach_the_gpu() {
    let Some(g) = gpu() else { return };
    let layer = Layer::Norm(Norm::group("gn", 4, 3, 1e-5, vec![], vec![]));
    let xb = g.upload(DType::F32, &[1.0; 64]).unwrap();
    let mut y = g.poisoned(DType::F32, 64).unwrap();
    let e = g
        .run(&layer, &[1, 4, 4, 4], DType::F32, &xb, &mut y)
        .unwrap_err();
    assert!(matches!(e, NormError::Invalid { .. }), "{e}");
    assert!(
        g.download(DType::F32, &y)
            .unwrap()
            .iter()
            .all(|v| v.is_nan()),
        "nothing was launched"
    );
}
