//! `cargo run --release --example norm_bench -p dimguard-trt`: the normalization benchmark (the
//! same as `dimguard norm-bench`), as a binary without the Z3 dependency of the CLI.

fn main() {
    let iters = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    if let Err(e) = dimguard_trt::norm::bench::print_table(iters) {
        eprintln!("norm_bench: {e}");
        std::process::exit(2);
    }
}
