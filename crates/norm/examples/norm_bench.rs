//! `cargo run --release -p dimguard-norm --example norm_bench -- [REPS] [SAMPLES] [JSON]`: the
//! normalization benchmark (the same as `dimguard norm-bench`), as a binary without the Z3
//! dependency of the CLI. With JSON, writes one line per cell for
//! `tools/device/norm_bench_torch.py`.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let json = args.get(2).map(std::path::PathBuf::from);
    if let Err(e) = dimguard_norm::bench::print_table(num(0, 20), num(1, 15), json.as_deref()) {
        eprintln!("norm_bench: {e}");
        std::process::exit(2);
    }
}
