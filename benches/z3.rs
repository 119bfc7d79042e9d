//! Z3 benchmarks (results in `docs/PERFORMANCE.md`):
//!
//! * `z3/certify/...`: the certificate for a single-size suggestion over [2, 2^62].
//! * `z3/refute/...`: counterexamples to torch's fix for RAFT.
//! * `z3/solutions/...` vs `periodic/...`: Z3's own model enumeration (`solutions()`) of every
//!   valid size of the RAFT seed guard on [135, 2160], against dimguard's periodic method.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use dimguard::prove::check_set;
use dimguard::prove::encode::Encoder;
use dimguard::solver::engine::{solve, Limits};
use dimguard::solver::{parse_guard, DimSet};
use z3::ast::Int;

fn z3_benches(c: &mut Criterion) {
    let g = parse_guard("((((-1) + x) // 8) % 8) == 1").unwrap();
    let ours = DimSet::progression(9, 1 << 62, 64, 9);
    c.bench_function("z3/certify/64k+9 over 2..2^62", |b| {
        b.iter(|| check_set(&[&g], "x", black_box(&ours), 1, 10_000))
    });
    let fix = DimSet::progression(136, 2160, 8, 0);
    c.bench_function("z3/refute/torch fix 8k, 3 counterexamples", |b| {
        b.iter(|| check_set(&[&g], "x", black_box(&fix), 3, 10_000))
    });

    let seed = parse_guard("Eq(Mod(((x - 1)//4) - 1, 2), 0)").unwrap();
    let mut group = c.benchmark_group("enumerate valid sizes of the RAFT seed guard on 135..2160");
    group.sample_size(10);
    group.bench_function("z3/solutions", |b| {
        b.iter(|| {
            let mut enc = Encoder::new();
            let x = enc.var("x");
            let holds = enc.holds(&seed).unwrap();
            let s = z3::Solver::new();
            s.assert(&holds);
            s.assert(x.ge(Int::from_i64(135)));
            s.assert(x.le(Int::from_i64(2160)));
            let n = s.solutions([x], false).count();
            assert_eq!(n, 1014);
        })
    });
    let range = DimSet::interval(135, 2160);
    group.bench_function("periodic", |b| {
        b.iter(|| solve(black_box(&seed), "x", &range, &Limits::default()))
    });
    group.finish();

    // A two-size system with a product and an equality (three sizes, two after substitution).
    let texts = [
        "h2 == h",
        "((1 + (((-1) + w) // 2))*(1 + (((-1) + h) // 2))) != 1",
        "h % 8 == 0",
        "((((-1) + w) // 2) % 2) != 0",
    ];
    let guards: Vec<_> = texts.iter().map(|t| parse_guard(t).unwrap()).collect();
    let ranges: std::collections::BTreeMap<String, (i128, i128)> = ["h", "h2", "w"]
        .iter()
        .map(|n| (n.to_string(), (2, 64)))
        .collect();
    let mut group = c.benchmark_group("joint system on [2, 64]^3");
    group.sample_size(10);
    group.bench_function("joint::solve_group", |b| {
        b.iter(|| {
            let groups = dimguard::solver::joint::group(black_box(&guards), &[]);
            let s = dimguard::solver::joint::solve_group(&groups[0], &ranges, &Limits::default());
            assert_eq!(s.joint_count.map(|j| j.0), Some(8 * 32));
        })
    });
    group.bench_function("z3/solutions", |b| {
        b.iter(|| {
            let mut enc = Encoder::new();
            let vars: Vec<Int> = ["h", "h2", "w"].iter().map(|n| enc.var(n)).collect();
            let s = z3::Solver::new();
            for g in &guards {
                s.assert(enc.holds(g).unwrap());
            }
            for v in &vars {
                s.assert(v.ge(Int::from_i64(2)));
                s.assert(v.le(Int::from_i64(64)));
            }
            assert_eq!(s.solutions(vars, false).count(), 8 * 32);
        })
    });
    group.finish();
}

criterion_group!(benches, z3_benches);
criterion_main!(benches);
