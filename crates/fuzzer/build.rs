//! The harness links Z3 (through `dimguard-prove`) like the `dimguard` binary: same rpath.

fn main() {
    println!("cargo:rerun-if-env-changed=DIMGUARD_Z3_DIR");
    let lib = match std::env::var_os("DIMGUARD_Z3_DIR") {
        Some(dir) => std::path::PathBuf::from(dir).join("lib"),
        None => {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../third_party/z3/dist/lib")
        }
    };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
}
