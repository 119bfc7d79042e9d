//! The extension needs `libz3.so.5.3` at run time, and the wheel must carry no path into this
//! build tree. The extension's only RUNPATH is `$ORIGIN/../dimguard.libs`: in a wheel that is
//! where maturin's auditwheel repair puts the bundled library; at build time this script makes
//! `<target>/dimguard.libs/libz3.so.5.3` a link to the library `dimguard-prove`'s build script
//! fetched (`DEP_DIMGUARD_Z3_LIB`), so the repair finds it there (the extension is built in
//! `<target>/maturin/` or `<target>/<profile>/`, one level below).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN/../dimguard.libs");
    let (Ok(lib), Ok(out)) = (
        std::env::var("DEP_DIMGUARD_Z3_LIB"),
        std::env::var("OUT_DIR"),
    ) else {
        return;
    };
    // OUT_DIR = <target>/<profile>/build/<pkg>-<hash>/out
    let Some(target) = Path::new(&out).ancestors().nth(4).map(PathBuf::from) else {
        return;
    };
    let dir = target.join("dimguard.libs");
    let link = dir.join("libz3.so.5.3");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::remove_file(&link);
    if let Err(e) = std::os::unix::fs::symlink(Path::new(&lib).join("libz3.so.5.3"), &link) {
        println!("cargo:warning=cannot link {}: {e}", link.display());
    }
}
