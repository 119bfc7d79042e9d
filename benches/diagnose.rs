//! End-to-end and engine benchmarks. Results and the command that produced them are recorded in
//! `docs/PERFORMANCE.md`.
//!
//! * `diagnose/<fixture>`: read + solve + suggest + re-check for each real message.
//! * `solve/raft_seed/<range>`: the RAFT seed guard over [135, 2160] and over [2, 2^62] (the
//!   periodic method's cost does not depend on the width).
//! * `brute_force/raft_seed/135..2160`: the baseline, evaluating the guard at every value.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use dimguard::commands::diagnose::{diagnose_text, Options};
use dimguard::solver::engine::{enumerate, solve, Limits};
use dimguard::solver::{parse_guard, DimSet};

fn fixtures(c: &mut Criterion) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/messages");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    let mut g = c.benchmark_group("diagnose");
    for p in names {
        let text = std::fs::read_to_string(&p).unwrap();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        g.bench_function(name, |b| {
            b.iter(|| diagnose_text(black_box(&text), &Options::default()).unwrap())
        });
    }
    g.finish();
}

fn engine(c: &mut Criterion) {
    let x = "L['image1'].size()[2]";
    let guard = parse_guard("Eq(Mod(((L['image1'].size()[2] - 1)//4) - 1, 2), 0)").unwrap();
    let small = DimSet::interval(135, 2160);
    let huge = DimSet::interval(2, 1 << 62);
    let limits = Limits::default();
    c.bench_function("solve/raft_seed/135..2160", |b| {
        b.iter(|| solve(black_box(&guard), x, &small, &limits))
    });
    c.bench_function("solve/raft_seed/2..2^62", |b| {
        b.iter(|| solve(black_box(&guard), x, &huge, &limits))
    });
    c.bench_function("brute_force/raft_seed/135..2160", |b| {
        b.iter(|| enumerate(black_box(&guard), x, &small))
    });
    let million = DimSet::interval(2, 1_000_001);
    let mut g = c.benchmark_group("brute_force_large");
    g.sample_size(10);
    g.bench_function("raft_seed/10^6 values", |b| {
        b.iter(|| enumerate(black_box(&guard), x, &million))
    });
    g.finish();
}

criterion_group!(benches, fixtures, engine);
criterion_main!(benches);
