//! The `dimguard` binary links Z3 (through `dimguard-prove`); give it the rpath to the Z3 library
//! that `crates/prove/build.rs` fetched (or `DIMGUARD_Z3_DIR`), handed over as
//! `DEP_DIMGUARD_Z3_LIB`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(lib) = std::env::var("DEP_DIMGUARD_Z3_LIB") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{lib}");
    }
}
