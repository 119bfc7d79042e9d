//! Makes the Z3 library that matches the `z3` crate's bindings available: the official Z3 5.3.2
//! build from PyPI's `z3-solver==5.3.2.0` wheel, unpacked into `third_party/z3/dist` (see
//! `third_party/z3/README.md`). `DIMGUARD_Z3_DIR` points at an existing install instead.

use std::path::{Path, PathBuf};
use std::process::Command;

const WHEEL: &str = "z3-solver==5.3.2.0";

fn main() {
    println!("cargo:rerun-if-env-changed=DIMGUARD_Z3_DIR");
    println!("cargo:rerun-if-changed=build.rs");
    let lib = match std::env::var_os("DIMGUARD_Z3_DIR") {
        Some(dir) => PathBuf::from(dir).join("lib"),
        None => {
            let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../third_party/z3/dist");
            if let Err(e) = ensure(&dist) {
                panic!(
                    "\n\ndimguard needs Z3 5.3.2 (see third_party/z3/README.md) and could not fetch it: {e}\n\
                     Fix: make PyPI reachable for `python3 -m pip download {WHEEL}`, or set DIMGUARD_Z3_DIR\n\
                     to a Z3 5.3 install (with lib/libz3.so and include/z3.h).\n\n"
                );
            }
            dist.canonicalize().expect("dist exists").join("lib")
        }
    };
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
    println!("cargo:rustc-env=DIMGUARD_Z3_LIB={}", lib.display());
    // For dependents that link Z3 through this crate (the binary, the Python extension).
    println!("cargo:lib={}", lib.display());
}

/// Why Z3 could not be fetched: the step that failed.
#[derive(Debug)]
enum Fetch {
    /// A step that could not run (`creating DIR`, `running python3 -m pip`, ...).
    Io {
        step: String,
        source: std::io::Error,
    },
    /// A command that ran and failed.
    Failed {
        command: String,
        status: std::process::ExitStatus,
    },
}

impl std::fmt::Display for Fetch {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Fetch::Io { step, source } => write!(f, "{step}: {source}"),
            Fetch::Failed { command, status } => write!(f, "`{command}` failed ({status})"),
        }
    }
}

/// `step` failed with `source`.
fn io(step: impl Into<String>) -> impl FnOnce(std::io::Error) -> Fetch {
    let step = step.into();
    move |source| Fetch::Io { step, source }
}

fn ensure(dist: &Path) -> Result<(), Fetch> {
    if dist.join("lib/libz3.so.5.3").exists() && dist.join("include/z3.h").exists() {
        return Ok(());
    }
    let tmp = dist.with_file_name(format!("dist.tmp.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).map_err(io(format!("creating {}", tmp.display())))?;
    let status = Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
        ])
        .args([
            "--platform",
            "manylinux_2_27_x86_64",
            "--python-version",
            "3.11",
        ])
        .arg(WHEEL)
        .arg("-d")
        .arg(&tmp)
        .status()
        .map_err(io("running python3 -m pip"))?;
    if !status.success() {
        return Err(Fetch::Failed {
            command: format!("python3 -m pip download {WHEEL}"),
            status,
        });
    }
    // Unpack lib/ and include/ with Python's zipfile (no unzip needed).
    let script = r#"
import os, sys, zipfile
tmp = sys.argv[1]
whl = [f for f in os.listdir(tmp) if f.endswith('.whl')][0]
with zipfile.ZipFile(os.path.join(tmp, whl)) as z:
    for n in z.namelist():
        if n.startswith(('z3/lib/', 'z3/include/')) and not n.endswith('/'):
            out = os.path.join(tmp, 'dist', n[len('z3/'):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with open(out, 'wb') as f:
                f.write(z.read(n))
"#;
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(&tmp)
        .status()
        .map_err(io("unpacking the wheel"))?;
    if !status.success() {
        return Err(Fetch::Failed {
            command: "python3 -c <unpack the wheel>".into(),
            status,
        });
    }
    // Another build may have finished first; either copy is the same file.
    let _ = std::fs::remove_dir_all(dist);
    std::fs::rename(tmp.join("dist"), dist)
        .map_err(io(format!("moving into {}", dist.display())))?;
    let _ = std::fs::remove_dir_all(&tmp);
    Ok(())
}
