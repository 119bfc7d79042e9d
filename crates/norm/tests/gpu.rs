//! GPU kernels against the f64 CPU reference: every layer, storage type, kernel path
//! (fused, slab, three passes) and parameter kind (constants in f32 or in the tensor's type,
//! run-time device buffers of either type produced on the device, mixed), on odd shapes (prime H
//! and W, groups of one element, C not a multiple of the vector width), with fresh random inputs
//! per run (the seed is printed), outputs poisoned with NaN and every element checked. Without a
//! GPU these tests print why and return.

use dimguard_norm::{
    half, reference, BatchNorm, Buffer, DType, Gpu, Layer, Norm, NormError, Param, Strategy,
};

fn gpu() -> Option<&'static Gpu> {
    match Gpu::get() {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("skipping GPU test: {e}");
            None
        }
    }
}

/// A fresh seed per process (printed so that a failure can be replayed).
fn base_seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        let s = std::env::var("NORM_SEED")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(1)
            });
        eprintln!("NORM_SEED={s}");
        s
    })
}

/// Random values in [lo, lo + 5) (never zeros).
fn random(n: usize, seed: u64, lo: f32) -> Vec<f32> {
    let mut s = (seed ^ base_seed()).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + 5.0 * ((s >> 11) as f64 / (1u64 << 53) as f64) as f32
        })
        .collect()
}

/// How a case passes its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Constants not representable in 16 bits (stored as f32).
    Const,
    /// Constants rounded to the storage type (stored in it).
    ConstExact,
    /// Run-time buffers of the storage type, produced by a kernel.
    RuntimeSame,
    /// Run-time f32 buffers, produced by a kernel.
    RuntimeF32,
    /// One run-time buffer of another 16-bit type, the rest constants.
    Mixed,
}

const KINDS: [Kind; 5] = [
    Kind::Const,
    Kind::ConstExact,
    Kind::RuntimeSame,
    Kind::RuntimeF32,
    Kind::Mixed,
];

/// A device buffer holding `values` (rounded to `dt`), written by a kernel at run time: a
/// BatchNorm `y = 2 x + 1` over `x = (v - 1) / 2`.
fn produced(g: &Gpu, dt: DType, values: &[f32]) -> Buffer {
    let c = values.len();
    let src: Vec<f32> = values.iter().map(|v| (v - 1.0) / 2.0).collect();
    let maker = Layer::Batch(BatchNorm::new(
        "maker",
        vec![0.0; c],
        vec![1.0; c],
        vec![2.0; c],
        vec![1.0; c],
        0.0,
    ));
    let x = g.upload(DType::F32, &src).unwrap();
    let mut y32 = g.poisoned(DType::F32, c).unwrap();
    g.run(&maker, &[1, c], &x, &mut y32, &[]).unwrap();
    if dt == DType::F32 {
        return y32;
    }
    let back = g.download(&y32).unwrap();
    g.upload(dt, &back).unwrap()
}

struct Case {
    layer: Layer,
    tensors: Vec<(String, Buffer)>,
}

/// Builds `layer` with parameters of `kind`: names and lengths come from `spec`
/// (parameter name, length, low end of its random range).
fn with_params(
    g: &Gpu,
    dt: DType,
    kind: Kind,
    seed: u64,
    spec: &[(&str, usize, f32)],
    build: impl FnOnce(Vec<Param>) -> Layer,
) -> Case {
    let mut tensors = Vec::new();
    let mut params = Vec::new();
    for (k, (name, len, lo)) in spec.iter().enumerate() {
        let v = random(*len, seed + 17 * k as u64, *lo);
        let exact: Vec<f32> = v.iter().map(|x| half::round_to(dt, *x)).collect();
        let runtime = |tdt: DType, tensors: &mut Vec<(String, Buffer)>| {
            let tname = format!("{name}{seed}");
            tensors.push((tname.clone(), produced(g, tdt, &v)));
            Param::Runtime(tname)
        };
        params.push(match kind {
            Kind::Const => Param::Const(v),
            Kind::ConstExact => Param::Const(exact),
            Kind::RuntimeSame => runtime(dt, &mut tensors),
            Kind::RuntimeF32 => runtime(DType::F32, &mut tensors),
            Kind::Mixed if k == 0 => {
                let other = if dt == DType::BF16 {
                    DType::F16
                } else {
                    DType::BF16
                };
                runtime(other, &mut tensors)
            }
            Kind::Mixed => Param::Const(v),
        });
    }
    Case {
        layer: build(params),
        tensors,
    }
}

fn cases(g: &Gpu, shape: &[usize], dt: DType, kind: Kind, seed: u64) -> Vec<Case> {
    let r = shape.len();
    let c = shape[1];
    let inner: usize = shape[2..].iter().product();
    let mut out = vec![with_params(
        g,
        dt,
        kind,
        seed,
        &[
            ("mean", c, -1.0),
            ("var", c, 0.1),
            ("weight", c, -2.0),
            ("bias", c, -2.0),
        ],
        |p| {
            let [m, v, w, b]: [Param; 4] = p.try_into().unwrap();
            Layer::Batch(BatchNorm::new("bn", m, v, w, b, 1e-5))
        },
    )];
    if r >= 3 {
        out.push(with_params(
            g,
            dt,
            kind,
            seed + 1,
            &[("scale", c, -2.0), ("bias", c, -2.0)],
            |p| {
                let [w, b]: [Param; 2] = p.try_into().unwrap();
                Layer::Norm(Norm::instance("in", r, 1e-5, w, b))
            },
        ));
    }
    out.push(with_params(
        g,
        dt,
        kind,
        seed + 2,
        &[("scale", c * inner, -2.0), ("bias", c * inner, -2.0)],
        |p| {
            let [w, b]: [Param; 2] = p.try_into().unwrap();
            Layer::Norm(Norm::layer("ln_all", r, r - 1, 1e-5, w, b))
        },
    ));
    out.push(with_params(
        g,
        dt,
        kind,
        seed + 3,
        &[("scale", shape[r - 1], -2.0), ("bias", shape[r - 1], -2.0)],
        |p| {
            let [w, b]: [Param; 2] = p.try_into().unwrap();
            Layer::Norm(Norm::layer("ln_last", r, 1, 1e-5, w, b))
        },
    ));
    if r >= 4 {
        out.push(with_params(
            g,
            dt,
            kind,
            seed + 4,
            &[("scale", inner, -2.0), ("bias", inner, -2.0)],
            |p| {
                let [w, b]: [Param; 2] = p.try_into().unwrap();
                Layer::Norm(Norm::layer("ln_spatial", r, r - 2, 1e-5, w, b))
            },
        ));
    }
    if r >= 3 && c % 2 == 0 {
        out.push(with_params(
            g,
            dt,
            kind,
            seed + 5,
            &[("scale", c, -2.0), ("bias", c, -2.0)],
            |p| {
                let [w, b]: [Param; 2] = p.try_into().unwrap();
                Layer::Norm(Norm::group("gn", r, 2, 1e-5, w, b))
            },
        ));
    }
    out
}

/// Runs a case with a strategy and checks every element; returns the kernel path, or None
/// when the strategy does not apply to the shape.
fn check(
    g: &Gpu,
    case: &Case,
    shape: &[usize],
    dt: DType,
    strategy: Strategy,
    seed: u64,
) -> Option<String> {
    let n: usize = shape.iter().product();
    let mut p = match g.prepare(&case.layer, shape, dt, strategy) {
        Ok(p) => p,
        Err(NormError::Invalid { message, .. }) if message.contains("does not apply") => {
            return None
        }
        Err(e) => panic!("{e}"),
    };
    let xb = g.upload(dt, &random(n, seed, -2.0)).unwrap();
    // The reference sees exactly the values the GPU sees (after storage rounding).
    let xs: Vec<f64> = g.download(&xb).unwrap().iter().map(|v| *v as f64).collect();
    let host: Vec<(String, Vec<f32>)> = case
        .tensors
        .iter()
        .map(|(t, b)| (t.clone(), g.download(b).unwrap()))
        .collect();
    let host_ref: Vec<(&str, &[f32])> = host.iter().map(|(t, v)| (t.as_str(), &v[..])).collect();
    let want = reference(&case.layer, shape, &xs, &host_ref).unwrap();
    let bound: Vec<(&str, &Buffer)> = case.tensors.iter().map(|(t, b)| (t.as_str(), b)).collect();
    let mut y = g.poisoned(dt, n).unwrap();
    g.launch(&mut p, &xb, &mut y, &bound).unwrap();
    let got = g.download(&y).unwrap();
    let tol = if dt == DType::F32 { 2e-5 } else { 1e-2 };
    let path = p.path();
    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
        let err = (*a as f64 - b).abs() / b.abs().max(1.0);
        assert!(
            err <= tol,
            "layer {} {dt:?} {shape:?} {path}: element {i}: got {a}, want {b} (error {err:e}; NORM_SEED={})",
            case.layer.name(),
            base_seed()
        );
    }
    Some(path)
}

#[test]
fn every_layer_path_and_parameter_kind_matches_the_reference() {
    let Some(g) = gpu() else { return };
    let shapes: [&[usize]; 12] = [
        &[2, 4, 7],
        &[2, 3000, 64], // 6,000 groups of 64: more blocks than fit at once
        &[3, 5, 4],     // groups of 4: a cluster's second slab is empty (fp32)
        &[1, 1, 1, 1],
        &[3, 6, 1, 1],   // InstanceNorm groups of one element
        &[2, 6, 13, 17], // prime H and W, C not a multiple of the vector width
        &[1, 8, 135, 240],
        &[2, 3, 5, 7, 9],
        &[1, 2, 300, 300], // groups of 90,000: slabs over several blocks
        &[4, 16, 33],
        &[5, 1024], // BatchNorm channels-last vectors
        &[2, 24, 64, 64],
    ];
    let mut paths = std::collections::BTreeSet::new();
    for (k, shape) in shapes.iter().enumerate() {
        for dt in DType::ALL {
            for kind in KINDS {
                let seed = 1000 * k as u64 + 10 * kind as u64 + dt.size() as u64;
                for case in cases(g, shape, dt, kind, seed) {
                    for strategy in [
                        Strategy::Auto,
                        Strategy::Fused,
                        Strategy::Slab,
                        Strategy::Pipelined,
                        Strategy::Cluster,
                        Strategy::ThreePass,
                    ] {
                        if matches!(case.layer, Layer::Batch(_)) && strategy != Strategy::Auto {
                            continue;
                        }
                        if let Some(p) = check(g, &case, shape, dt, strategy, seed) {
                            if p.ends_with(" columns") {
                                paths.insert("three-pass columns".to_string());
                            }
                            if p.ends_with(" staged") {
                                paths.insert("fused staged".to_string());
                            }
                            paths.insert(p.split(' ').take(2).collect::<Vec<_>>().join(" "));
                        }
                    }
                }
            }
        }
    }
    eprintln!("paths checked: {paths:?}");
    if g.has_clusters() {
        assert!(
            paths.iter().any(|p| p.starts_with("cluster vector")),
            "cluster not covered: {paths:?}"
        );
    }
    for want in [
        "batch vector",
        "batch planes",
        "fused staged",
        "fused vector",
        "fused",
        "slab vector",
        "slab pipelined",
        "slab",
        "three-pass vector",
        "three-pass",
        "three-pass columns",
    ] {
        assert!(
            paths
                .iter()
                .any(|p| p == want || p.starts_with(&format!("{want} "))),
            "{want} not covered: {paths:?}"
        );
    }
}

#[test]
fn batch_norm_over_more_than_one_wave_of_threads() {
    let Some(g) = gpu() else { return };
    // 2.5M elements (more vectors than the device has threads at once in every type), channels
    // of 16,899 elements (vectors across two channels), all parameter kinds: two accesses per
    // thread in 16-bit types and with run-time parameters, one in fp32 with constants.
    let shape = [4, 37, 129, 131];
    for dt in DType::ALL {
        for kind in KINDS {
            let seed = 50 + kind as u64 + 10 * dt.size() as u64;
            let case = cases(g, &shape, dt, kind, seed).swap_remove(0);
            let path = check(g, &case, &shape, dt, Strategy::Auto, seed).unwrap();
            let runtime = matches!(kind, Kind::RuntimeSame | Kind::RuntimeF32 | Kind::Mixed);
            let want = if dt == DType::F32 && !runtime {
                "batch vector 256t x1"
            } else {
                "batch vector 128t x2"
            };
            assert!(path.starts_with(want), "{path}");
        }
    }
}

#[test]
fn groups_larger_than_the_chip_take_three_passes_and_slabs_span_the_device() {
    let Some(g) = gpu() else { return };
    // LayerNorm over 12M fp32 values (48 MB): more than the shared memory of the whole device.
    let shape = [1, 12, 1024, 1024];
    let case = Case {
        layer: Layer::Norm(Norm::layer("ln_huge", 4, 3, 1e-5, vec![], vec![])),
        tensors: vec![],
    };
    let path = check(g, &case, &shape, DType::F32, Strategy::Auto, 7).unwrap();
    assert!(path.starts_with("three-pass"), "{path}");
    // 4 MB groups: slabs over many blocks, more slabs than fit at once, so the grid is all
    // the blocks that fit (a multiple of the multiprocessor count).
    let shape = [8, 16, 256, 256];
    let case = Case {
        layer: Layer::Norm(Norm::layer("ln_4mb", 4, 3, 1e-5, vec![], vec![])),
        tensors: vec![],
    };
    let path = check(g, &case, &shape, DType::F32, Strategy::Auto, 8).unwrap();
    let grid: u32 = path
        .split("grid=")
        .nth(1)
        .and_then(|v| v.split(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{path}"));
    assert!(path.starts_with("slab pipelined vector k="), "{path}");
    assert_eq!(grid % g.sm_count(), 0, "{path}");
    twice_the_same(g, &case.layer, &shape, Strategy::Pipelined);
    // LayerNorm with per-element parameters over 2M-element groups: slabs of several groups
    // taken together in batches of m (fp32: 5 groups in batches of 3, the last one smaller;
    // bf16: all 5 in one batch).
    let shape = [5, 32, 256, 256];
    for dt in [DType::F32, DType::BF16] {
        let case = with_params(
            g,
            dt,
            Kind::ConstExact,
            11,
            &[
                ("scale", 32 * 256 * 256, -2.0),
                ("bias", 32 * 256 * 256, -2.0),
            ],
            |p| {
                let [w, b]: [Param; 2] = p.try_into().unwrap();
                Layer::Norm(Norm::layer("ln_batches", 4, 3, 1e-5, w, b))
            },
        );
        let path = check(g, &case, &shape, dt, Strategy::Slab, 12).unwrap();
        let m: usize = path
            .split("m=")
            .nth(1)
            .and_then(|v| v.split(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{path}"));
        assert!(m >= 2, "{path}");
        // Automatic choice: slabs only when one batch holds all 5 groups (parameters read once),
        // else three passes with the column-order apply.
        let auto = check(g, &case, &shape, dt, Strategy::Auto, 13).unwrap();
        if m >= 5 {
            assert!(auto.starts_with("slab vector"), "{auto}");
        } else {
            assert!(
                auto.starts_with("three-pass") && auto.ends_with(" columns"),
                "{auto}"
            );
        }
    }
    twice_the_same(g, &case.layer, &shape, Strategy::Slab);
}

#[test]
fn a_nan_in_a_slab_group_spoils_only_its_group() {
    let Some(g) = gpu() else { return };
    // Groups of 90,000 fp32 values: several slabs per group on both slab kernels and the cluster
    // kernel. A NaN with every
    // payload bit set (the bit pattern of an empty statistics slot in both halves) in group 0:
    // that group's output is NaN, the launch finishes, and group 1 matches the reference.
    let shape = [1, 2, 300, 300];
    let gs = 300 * 300;
    let layer = Layer::Norm(Norm::instance("in", 4, 1e-5, vec![], vec![]));
    let mut x = random(2 * gs, 21, -2.0);
    x[123] = f32::from_bits(u32::MAX);
    let want = reference(
        &layer,
        &[1, 1, 300, 300],
        &x[gs..].iter().map(|v| *v as f64).collect::<Vec<_>>(),
        &[],
    )
    .unwrap();
    let mut strategies = vec![Strategy::Slab, Strategy::Pipelined];
    if g.has_clusters() {
        strategies.push(Strategy::Cluster);
    }
    for strategy in strategies {
        let mut p = g.prepare(&layer, &shape, DType::F32, strategy).unwrap();
        let xb = g.upload(DType::F32, &x).unwrap();
        for _ in 0..2 {
            let mut y = g.poisoned(DType::F32, 2 * gs).unwrap();
            g.launch(&mut p, &xb, &mut y, &[]).unwrap();
            let got = g.download(&y).unwrap();
            assert!(got[..gs].iter().all(|v| v.is_nan()), "{}", p.path());
            for (i, (a, b)) in got[gs..].iter().zip(&want).enumerate() {
                let err = (*a as f64 - b).abs() / b.abs().max(1.0);
                assert!(err <= 2e-5, "{}: element {i}: got {a}, want {b}", p.path());
            }
        }
    }
    if g.has_clusters() {
        twice_the_same(g, &layer, &shape, Strategy::Cluster);
    }
}

/// Runs a layer twice through the same prepared slab path (one-buffer or pipelined kernel): the
/// kernel's counters reset themselves, and the results are bit-identical.
fn twice_the_same(g: &Gpu, layer: &Layer, shape: &[usize], strategy: Strategy) {
    let mut p = g.prepare(layer, shape, DType::F32, strategy).unwrap();
    let n: usize = shape.iter().product();
    let xb = g.upload(DType::F32, &random(n, 9, -2.0)).unwrap();
    let mut y1 = g.poisoned(DType::F32, n).unwrap();
    let mut y2 = g.poisoned(DType::F32, n).unwrap();
    g.launch(&mut p, &xb, &mut y1, &[]).unwrap();
    g.launch(&mut p, &xb, &mut y2, &[]).unwrap();
    assert_eq!(g.download(&y1).unwrap(), g.download(&y2).unwrap());
}

#[test]
fn eps_edge_cases_and_constant_groups() {
    let Some(g) = gpu() else { return };
    // A constant group has zero variance: the output is 0 * rstd = 0 (eps keeps it finite).
    for shape in [[1usize, 2, 64], [1, 2, 60_000]] {
        let n = shape.iter().product();
        let layer = Layer::Norm(Norm::instance("in", 3, 1e-3, vec![], vec![]));
        let xb = g.upload(DType::F32, &vec![3.0; n]).unwrap();
        let mut y = g.poisoned(DType::F32, n).unwrap();
        g.run(&layer, &shape, &xb, &mut y, &[]).unwrap();
        assert!(g.download(&y).unwrap().iter().all(|v| *v == 0.0));
    }
    // eps = 0 on random data.
    let case = Case {
        layer: Layer::Norm(Norm::layer("ln", 3, 1, 0.0, vec![], vec![])),
        tensors: vec![],
    };
    check(g, &case, &[2, 3, 4096], DType::F32, Strategy::Auto, 7).unwrap();
}

#[test]
fn buffers_that_do_not_fit_the_layer_are_refused_before_launch() {
    let Some(g) = gpu() else { return };
    let layer = Layer::Norm(Norm::instance("in", 4, 1e-5, vec![], vec![]));
    let shape = [1, 4, 4, 4];
    let mut p = g
        .prepare(&layer, &shape, DType::F32, Strategy::Auto)
        .unwrap();
    // The case of issue 13: a 16-bit buffer launched as fp32 would read past its end.
    let half_x = g.upload(DType::F16, &[1.0; 64]).unwrap();
    let mut y = g.poisoned(DType::F32, 64).unwrap();
    let e = g
        .launch(&mut p, &half_x, &mut y, &[])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("the input is a fp16 buffer of 64 elements but the layer was prepared for fp32 with 64 elements"),
        "{e}"
    );
    let short = g.upload(DType::F32, &[1.0; 63]).unwrap();
    let e = g
        .launch(&mut p, &short, &mut y, &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("fp32 buffer of 63 elements"), "{e}");
    let x = g.upload(DType::F32, &[1.0; 64]).unwrap();
    let mut bf = g.poisoned(DType::BF16, 64).unwrap();
    let e = g.launch(&mut p, &x, &mut bf, &[]).unwrap_err().to_string();
    assert!(e.contains("the output is a bf16 buffer"), "{e}");
    // fp16 and bf16 are different types, not one "half" type.
    let mut p16 = g
        .prepare(&layer, &shape, DType::F16, Strategy::Auto)
        .unwrap();
    let bx = g.upload(DType::BF16, &[1.0; 64]).unwrap();
    let mut hy = g.poisoned(DType::F16, 64).unwrap();
    assert!(g.launch(&mut p16, &bx, &mut hy, &[]).is_err());
    assert!(
        g.download(&y).unwrap().iter().all(|v| v.is_nan()),
        "nothing ran"
    );
    assert!(
        g.download(&hy).unwrap().iter().all(|v| v.is_nan()),
        "nothing ran"
    );
}

#[test]
fn bad_parameters_never_reach_the_gpu() {
    let Some(g) = gpu() else { return };
    let layer = Layer::Norm(Norm::group("gn", 4, 3, 1e-5, vec![], vec![]));
    let xb = g.upload(DType::F32, &[1.0; 64]).unwrap();
    let mut y = g.poisoned(DType::F32, 64).unwrap();
    let e = g.run(&layer, &[1, 4, 4, 4], &xb, &mut y, &[]).unwrap_err();
    assert!(matches!(e, NormError::Invalid { .. }), "{e}");
    // A run-time parameter of the wrong length.
    let layer = Layer::Norm(Norm::instance("in", 4, 1e-5, Param::runtime("w"), vec![]));
    let w = g.upload(DType::F32, &[1.0; 3]).unwrap();
    let e = g
        .run(&layer, &[1, 4, 4, 4], &xb, &mut y, &[("w", &w)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("scale (run-time tensor `w`) has 3 values but 4 were expected"),
        "{e}"
    );
    assert!(
        g.download(&y).unwrap().iter().all(|v| v.is_nan()),
        "nothing was launched"
    );
}

#[test]
fn graph_timing_runs() {
    let Some(g) = gpu() else { return };
    let ms = g.copy_ms(1 << 20, 5, 3).unwrap();
    assert!(ms > 0.0 && ms < 10.0, "{ms}");
}
