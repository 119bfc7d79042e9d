//! The `dimguard` binary links Z3 (through `dimguard-prove`); give it the rpath to the Z3 library
//! that `crates/prove/build.rs` unpacked (or to `DIMGUARD_Z3_DIR`).

fn main() {
    println!("cargo:rerun-if-env-changed=DIMGUARD_Z3_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let lib = match std::env::var_os("DIMGUARD_Z3_DIR") {
        Some(dir) => std::path::PathBuf::from(dir).join("lib"),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("third_party/z3/dist/lib"),
    };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
}
