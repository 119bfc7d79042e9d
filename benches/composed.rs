//! `dimguard check` and `check --at` on every composed program of issue 41 (the six shared ones,
//! `../shared/programs/composed/`, and the eight of `tests/data/composed/`), against torch's own
//! answer to the point question in the same run: `tools/bench_torch_point.py` times `ep.module()` (moved to meta) and its guard
//! function `_guards_fn` at the traced shapes. Results in docs/PERFORMANCE.md.
//!
//! Per program: `check` (load + propagate + the whole report, as `dimguard check` computes it),
//! `--at` (load + propagate + the program's conditions + the verdict at the traced shapes, as
//! `dimguard check --at` computes it, no set solved) and the verdict alone (the conditions built
//! once: the question a loaded program answers). After criterion's groups, a table of medians
//! with torch's numbers and the ratios is printed (torch from `DIMGUARD_BENCH_PYTHON`, else the
//! first `~/.cache/dimguard/venv-*/bin/python` that imports torch; skipped, saying so, when none).

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use dimguard::commands::check::facts;
use dimguard::graph::{load, verdict, ProgramGraph};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The programs, each with its directory: 0 the shared set, 1 `tests/data/composed`.
const PROGRAMS: [(usize, &str); 14] = [
    (0, "fpn_three_inputs"),
    (0, "unet_skip"),
    (0, "raft_pair"),
    (0, "window_patch"),
    (0, "hrnet_fuse"),
    (0, "mixed_batch"),
    (1, "pixel_shuffle"),
    (1, "reflect_pad"),
    (1, "unfold_fold"),
    (1, "wav2vec_text"),
    (1, "image_mask"),
    (1, "patch_pos"),
    (1, "unet_ceil"),
    (1, "tokens_two"),
];

/// The directory of set `k` (0 the shared programs, 1 `tests/data/composed`).
fn dir(k: usize) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    if k == 0 {
        root.join("../shared/programs/composed")
    } else {
        root.join("tests/data/composed")
    }
}

/// The traced shapes of a program's inputs, from its truth file (`example`).
fn traced(k: usize, name: &str) -> BTreeMap<String, Vec<i128>> {
    let text = std::fs::read_to_string(dir(k).join(format!("{name}.truth.json"))).unwrap();
    let truth: serde_json::Value = serde_json::from_str(&text).unwrap();
    truth["example"]
        .as_object()
        .expect("example shapes")
        .iter()
        .map(|(k, v)| {
            let s = v
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap() as i128)
                .collect();
            (k.clone(), s)
        })
        .collect()
}

fn check_once(path: &Path) {
    let p = load(path).unwrap();
    let g = ProgramGraph::build(&p).unwrap();
    black_box(dimguard::api::check_program_graph(&p, &g, false).unwrap());
}

fn at_once(path: &Path, shapes: &BTreeMap<String, Vec<i128>>) {
    let p = load(path).unwrap();
    let g = ProgramGraph::build(&p).unwrap();
    let f = facts(&p, &g).unwrap();
    black_box(verdict(&f, shapes));
}

/// Median seconds of `n` calls of `f`.
fn median(n: usize, mut f: impl FnMut()) -> f64 {
    f();
    let mut t: Vec<f64> = (0..n)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    t[n / 2]
}

fn python() -> Option<PathBuf> {
    if let Ok(p) = std::env::var("DIMGUARD_BENCH_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let home = std::env::var("HOME").ok()?;
    let mut venvs: Vec<PathBuf> = std::fs::read_dir(Path::new(&home).join(".cache/dimguard"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin/python")))
        .filter(|p| p.exists())
        .collect();
    venvs.sort();
    venvs.into_iter().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import torch"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

fn bench(c: &mut Criterion) {
    for (k, name) in PROGRAMS {
        let path = dir(k).join(format!("{name}.model.json"));
        let shapes = traced(k, name);
        let mut g = c.benchmark_group(format!("composed/{name}"));
        g.sample_size(10);
        g.bench_function("check", |b| b.iter(|| check_once(&path)));
        g.bench_function("check --at", |b| b.iter(|| at_once(&path, &shapes)));
        let p = load(&path).unwrap();
        let pg = ProgramGraph::build(&p).unwrap();
        let f = facts(&p, &pg).unwrap();
        g.bench_function("verdict alone", |b| {
            b.iter(|| verdict(black_box(&f), black_box(&shapes)))
        });
        g.finish();
    }
    // The table: medians of this run, torch's in the same run (one run of the script per set).
    let py = python();
    let torch: Vec<Option<serde_json::Value>> = (0..2)
        .map(|k| {
            let out = std::process::Command::new(py.as_ref()?)
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/bench_torch_point.py"))
                .arg(dir(k))
                .arg("200")
                .output()
                .ok()?;
            if !out.status.success() {
                eprintln!(
                    "torch baseline failed: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                return None;
            }
            serde_json::from_slice(&out.stdout).ok()
        })
        .collect();
    if torch.iter().any(Option::is_none) {
        println!(
            "torch baseline: no Python with torch found (DIMGUARD_BENCH_PYTHON); dimguard only"
        );
    }
    let ms = |s: f64| format!("{:.3} ms", s * 1e3);
    let us = |s: f64| format!("{:.1} µs", s * 1e6);
    println!(
        "\n| program | check | check --at | verdict alone | torch ep.module() (meta) | torch _guards_fn | _guards_fn / verdict |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (k, name) in PROGRAMS {
        let path = dir(k).join(format!("{name}.model.json"));
        let shapes = traced(k, name);
        let check = median(11, || check_once(&path));
        let at = median(31, || at_once(&path, &shapes));
        let p = load(&path).unwrap();
        let pg = ProgramGraph::build(&p).unwrap();
        let f = facts(&p, &pg).unwrap();
        let alone = median(1001, || {
            black_box(verdict(black_box(&f), black_box(&shapes)));
        });
        let t = torch[k].as_ref().map(|t| &t["programs"][name]);
        let module = t.and_then(|t| t["module_call_s"].as_f64());
        let guards = t.and_then(|t| t["guards_fn_s"].as_f64());
        println!(
            "| {name} | {} | {} | {} | {} | {} | {} |",
            ms(check),
            ms(at),
            us(alone),
            module.map_or("-".into(), ms),
            guards.map_or("-".into(), us),
            guards.map_or("-".into(), |g| format!("{:.2}", g / alone)),
        );
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
