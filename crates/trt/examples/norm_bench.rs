//! `cargo run --release --example norm_bench -p dimguard-trt`: the normalization benchmark (the
//! same as `dimguard norm-bench`), as a binary without the Z3 dependency of the CLI.

fn main() {
    let iters = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20);
    println!("| layer | shape | dtype | ms | GB/s | % of copy |");
    println!("|---|---|---|---|---|---|");
    let r = dimguard_trt::norm::bench::run(iters, |r| {
        println!(
            "| {} | {:?} | {} | {:.4} | {:.0} | {:.0}% |",
            r.layer,
            r.shape,
            r.dtype.name(),
            r.ms,
            r.gbps,
            r.pct_copy
        )
    });
    if let Err(e) = r {
        eprintln!("norm_bench: {e}");
        std::process::exit(2);
    }
}
