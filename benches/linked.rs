//! Linked sizes: the joint solve of a real program whose batch, H and W are linked by guards
//! (`tests/data/pt2/window_attention.model.json`: 111 guards from PyTorch 2.15, Swin-style window
//! partition, claimed box 2..32 x 32..512 x 32..512 = 7,172,191 tuples), against brute force in
//! the same run: every guard evaluated at every tuple by the exact evaluator, in program order,
//! stopping at the first failure. That evaluator is exact and slow (rational arithmetic on guards of
//! up to 2,000 characters: milliseconds per tuple), so brute force is timed on a sub-box (batch 2,
//! H and W 32..47: 256 tuples) where both are measured and the ratio is taken; the whole box is
//! also compared with the Python oracle's time in docs/PERFORMANCE.md. Results in
//! docs/PERFORMANCE.md.
//!
//! The same on torchvision's Swin-T exported with Dim.AUTO (`tests/data/pt2/swin_t_auto.pt2`: 669
//! guards, batch 2..32 x H 96..1024 x W 96..1024 = 26,754,271 tuples, 496 of which pass), brute
//! force on the sub-box batch 2, H and W 222..229 (64 tuples).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use dimguard::solver::expr::Value;
use dimguard::solver::joint::{group, solve_group_with};
use dimguard::solver::linked::Budget;
use dimguard::solver::{parse_guard, Expr};
use std::collections::BTreeMap;
use std::path::Path;

const B: &str = "L['x'].size()[0]";
const H: &str = "L['x'].size()[2]";
const W: &str = "L['x'].size()[3]";

fn guards(file: &str) -> Vec<Expr> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/pt2")
        .join(file);
    dimguard::graph::load(&path)
        .unwrap()
        .guards_code
        .iter()
        .map(|g| parse_guard(g).unwrap())
        .collect()
}

/// Number of passing tuples by the joint engine.
fn joint(gs: &[Expr], b: (i128, i128), h: (i128, i128), w: (i128, i128)) -> u128 {
    let sizes = [B, H, W].map(String::from);
    let ranges = BTreeMap::from([
        (sizes[0].clone(), b),
        (sizes[1].clone(), h),
        (sizes[2].clone(), w),
    ]);
    let grp = &group(gs, &sizes)[0];
    let s = solve_group_with(grp, &ranges, &Budget::default(), None);
    s.joint.map_or(0, |j| j.count())
}

/// Number of passing tuples by brute force.
fn brute(gs: &[Expr], b: (i128, i128), h: (i128, i128), w: (i128, i128)) -> u128 {
    let mut n = 0;
    for x0 in b.0..=b.1 {
        for x2 in h.0..=h.1 {
            for x3 in w.0..=w.1 {
                let env = |a: &str| match a {
                    B => Some(x0),
                    H => Some(x2),
                    W => Some(x3),
                    _ => None,
                };
                if gs
                    .iter()
                    .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
                {
                    n += 1;
                }
            }
        }
    }
    n
}

type Box3 = ((i128, i128), (i128, i128), (i128, i128));

/// One program: the joint engine on the whole box (its count checked against the oracle's) and
/// on the sub-box, and brute force on the sub-box (same count both ways).
fn program(c: &mut Criterion, file: &str, full: Box3, sub: Box3, passing: u128) {
    let gs = guards(file);
    assert_eq!(
        joint(&gs, sub.0, sub.1, sub.2),
        brute(&gs, sub.0, sub.1, sub.2)
    );
    assert_eq!(joint(&gs, full.0, full.1, full.2), passing);
    let tuples = |b: Box3| (b.0 .1 - b.0 .0 + 1) * (b.1 .1 - b.1 .0 + 1) * (b.2 .1 - b.2 .0 + 1);
    let name = file.split('.').next().unwrap_or(file);
    let mut g = c.benchmark_group(format!("linked/{name}"));
    g.sample_size(10);
    g.bench_function(
        format!("joint, whole box ({} tuples)", tuples(full)),
        |bch| bch.iter(|| joint(black_box(&gs), full.0, full.1, full.2)),
    );
    g.bench_function(format!("joint, sub-box ({} tuples)", tuples(sub)), |bch| {
        bch.iter(|| joint(black_box(&gs), sub.0, sub.1, sub.2))
    });
    g.bench_function(
        format!("brute force, sub-box ({} tuples)", tuples(sub)),
        |bch| bch.iter(|| brute(black_box(&gs), sub.0, sub.1, sub.2)),
    );
    g.finish();
}

fn bench(c: &mut Criterion) {
    // The whole boxes' counts are the Python oracles' (tests/data/pt2/*.oracle.json, and for
    // swin_t the test restricting the joint set to its oracle's sub-box).
    program(
        c,
        "window_attention.model.json",
        ((2, 32), (32, 512), (32, 512)),
        ((2, 2), (32, 47), (32, 47)),
        143_344,
    );
    program(
        c,
        "swin_t_auto.pt2",
        ((2, 32), (96, 1024), (96, 1024)),
        ((2, 2), (222, 229), (222, 229)),
        496,
    );
}

/// `check` (load, propagate, solve; no Z3) on programs exported with `Dim.AUTO` and no bounds:
/// every dynamic size claimed up to `2^63 - 1`. Target: under 1 s each. The joint answer of each
/// is asserted: decided (resnet18_auto, densenet121_auto: products of stride-2 floor terms that
/// hold past a small corner; two_stem_unbounded: a staircase `(h1-1)//4 == (h2-1)//4`, not a
/// finite union of boxes, decided in closed form as the report's `tied` answer;
/// window7_unbounded and window_attention_auto: identities of window padding such as
/// `16*b*Pw*Ph == 784*b*(Pw//7)*(Ph//7)`, decided once the guards are in normal form,
/// `linked::normalize`), or not without Z3 (patch16_unbounded: `(h//16) % ((w//16)*(h//16)) !=
/// 0`, which `dimguard check` proves with Z3), reported undecided quickly. torchvision's Swin-T
/// (swin_t_unbounded: 815 guards, the batch unbounded and H, W decided to 224..227), beside the
/// same model exported over bounded ranges (swin_t_auto: batch 1..32, H and W 96..1024): the
/// unbounded answer should cost about what the bounded one does.
fn unbounded(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pt2");
    let mut g = c.benchmark_group("linked/unbounded check");
    g.sample_size(10);
    for (file, decided) in [
        ("resnet18_auto.model.json", true),
        ("densenet121_auto.model.json", true),
        ("patch16_unbounded.pt2", false),
        ("two_stem_unbounded.pt2", true),
        ("window7_unbounded.pt2", true),
        ("window_attention_auto.model.json", true),
        ("swin_t_unbounded.pt2", true),
        ("swin_t_auto.pt2", true),
    ] {
        let path = dir.join(file);
        let run = || {
            let p = dimguard::graph::load(&path).unwrap();
            dimguard::commands::check::check(&p, false).unwrap()
        };
        let r = run();
        let text = serde_json::to_string(&r).unwrap();
        assert_eq!(
            !text.contains("\"undecided\":{") || text.contains("\"tied\":{"),
            decided,
            "{file}: decided {decided}"
        );
        g.bench_function(file.split('.').next().unwrap(), |b| {
            b.iter(|| black_box(run()))
        });
    }
    g.finish();
}

/// The same joint solve (`solve_group_with`, no Z3) over sizes claimed `2..2^63-1` and over
/// `96..1024`, in one run: the unbounded answer should cost about what the bounded one does.
/// two_stem_unbounded: its guards (a staircase per spatial size, decided in closed form as
/// the group's `tied` answer, both ways).
fn unbounded_vs_bounded(c: &mut Criterion) {
    let gs = guards("two_stem_unbounded.pt2");
    let mut sizes: Vec<String> = Vec::new();
    for g in &gs {
        for a in g.atoms() {
            if !sizes.contains(&a.to_string()) {
                sizes.push(a.to_string());
            }
        }
    }
    let grp = group(&gs, &sizes)
        .into_iter()
        .find(|g| g.roots.len() > 1)
        .unwrap();
    let mut g = c.benchmark_group("linked/two_stem tied");
    g.sample_size(10);
    for (label, range) in [
        ("2..2^63-1", (2, i64::MAX as i128)),
        ("96..1024", (96, 1024)),
    ] {
        let ranges: BTreeMap<String, (i128, i128)> =
            sizes.iter().map(|s| (s.clone(), range)).collect();
        let solve = || solve_group_with(&grp, &ranges, &Budget::default(), None);
        let s = solve();
        let tied = s.tied.as_ref().expect("decided in closed form");
        assert!(tied.count().is_some(), "{label}");
        g.bench_function(label, |b| b.iter(|| black_box(solve())));
    }
    g.finish();
}

/// `check` (load, propagate, solve, no Z3) of the composed programs of issue 34
/// (`tools/export_composed.py`: torch 2.15 `Dim.AUTO`, every size claimed to 2^63 - 1): each group
/// decided in closed form (ties through different strides, several inputs tied to one; two ties
/// of one size composed into a tie of their kept sizes: skip3) or by bounds over boxes
/// (winpatch's 236 guards), except
/// tokens2 (`(h//16)*(w//16) == n` across inputs), still undecided, its spec keeping the sizes.
fn composed(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pt2");
    let mut g = c.benchmark_group("linked/composed check");
    g.sample_size(10);
    for (name, decided) in [
        ("pyramid2", true),
        ("pyramid3", true),
        ("flow2", true),
        ("fusion2", true),
        ("unet3", true),
        ("winpatch", true),
        ("skip3", true),
        ("tokens2", false),
    ] {
        let path = dir.join(format!("{name}_composed.pt2"));
        let run = || {
            let p = dimguard::graph::load(&path).unwrap();
            dimguard::commands::check::check(&p, false).unwrap()
        };
        let r = run();
        assert_eq!(
            r.joint.iter().all(|j| j.undecided.is_none()),
            decided,
            "{name}: decided {decided}"
        );
        g.bench_function(name, |b| b.iter(|| black_box(run())));
    }
    g.finish();
}

criterion_group!(benches, bench, unbounded, unbounded_vs_bounded, composed);
criterion_main!(benches);
