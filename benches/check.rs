//! `dimguard check` on the largest fixture (densenet121 exported with Dim.AUTO: 431 operators,
//! 29 guards): load + propagate + check. Target: under 50 ms. Results in docs/PERFORMANCE.md.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use dimguard::commands::check::check;
use dimguard::graph::{load, ProgramGraph};
use std::path::Path;

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pt2");
    for name in ["densenet121_auto", "raft_small_torchfix"] {
        let path = dir.join(format!("{name}.model.json"));
        let mut g = c.benchmark_group(format!("check/{name}"));
        g.sample_size(20);
        g.bench_function("load", |b| b.iter(|| load(black_box(&path)).unwrap()));
        let p = load(&path).unwrap();
        g.bench_function("propagate", |b| {
            b.iter(|| ProgramGraph::build(black_box(&p)).unwrap())
        });
        g.bench_function("load+propagate+check", |b| {
            b.iter(|| {
                let p = load(black_box(&path)).unwrap();
                check(&p, false).unwrap()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
