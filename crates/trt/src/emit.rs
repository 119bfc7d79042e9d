//! Profiles as the text each tool takes: trtexec flags, Polygraphy flags, `torch_tensorrt.Input`
//! code, and JSON (`docs/PROFILE.md`; the `profiles` form of the project contract).

use crate::profile::{Profile, ProfileSet};
use serde_json::{json, Value};

fn dims(v: &[i128]) -> String {
    v.iter().map(i128::to_string).collect::<Vec<_>>().join("x")
}

/// trtexec quotes names that contain `:` (`'input:0':1x3x224x224`).
fn trtexec_name(n: &str) -> String {
    if n.contains(':') {
        format!("'{n}'")
    } else {
        n.to_string()
    }
}

fn triple_flags(p: &Profile) -> String {
    let part = |f: fn(&crate::profile::Triple) -> &Vec<i128>| {
        p.inputs
            .iter()
            .map(|(n, t)| format!("{}:{}", trtexec_name(n), dims(f(t))))
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "--minShapes={} --optShapes={} --maxShapes={}",
        part(|t| &t.min),
        part(|t| &t.opt),
        part(|t| &t.max)
    )
}

/// trtexec flags: the first profile's triple, then `--profile=N` before each extra triple.
pub fn trtexec(set: &ProfileSet) -> String {
    set.profiles
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i == 0 {
                triple_flags(p)
            } else {
                format!("--profile={i} {}", triple_flags(p))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Polygraphy flags: one `--trt-min-shapes ... --trt-opt-shapes ... --trt-max-shapes ...`
/// repetition per profile.
pub fn polygraphy(set: &ProfileSet) -> String {
    let list = |v: &[i128]| {
        format!(
            "[{}]",
            v.iter().map(i128::to_string).collect::<Vec<_>>().join(",")
        )
    };
    set.profiles
        .iter()
        .map(|p| {
            let part = |f: fn(&crate::profile::Triple) -> &Vec<i128>| {
                p.inputs
                    .iter()
                    .map(|(n, t)| format!("{n}:{}", list(f(t))))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            format!(
                "--trt-min-shapes {} --trt-opt-shapes {} --trt-max-shapes {}",
                part(|t| &t.min),
                part(|t| &t.opt),
                part(|t| &t.max)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Python for `torch_tensorrt`: one list of `Input`s per profile (`torch_tensorrt.compile`
/// takes one range per input, so several profiles mean several engines).
pub fn torch_tensorrt(set: &ProfileSet) -> String {
    let tuple = |v: &[i128]| {
        let items: Vec<String> = v.iter().map(i128::to_string).collect();
        if items.len() == 1 {
            format!("({},)", items[0])
        } else {
            format!("({})", items.join(", "))
        }
    };
    let mut out = String::from("import torch\nimport torch_tensorrt\n\n");
    out.push_str("# Every min/opt/max below is a size the exported program accepts.\n");
    out.push_str("profiles = [\n");
    for p in &set.profiles {
        out.push_str("    [\n");
        for (n, t) in &p.inputs {
            out.push_str(&format!(
                "        torch_tensorrt.Input(min_shape={}, opt_shape={}, max_shape={}, dtype=torch.float32, name={:?}),\n",
                tuple(&t.min),
                tuple(&t.opt),
                tuple(&t.max),
                n
            ));
        }
        out.push_str("    ],\n");
    }
    out.push_str("]\n# e.g. trt_module = torch_tensorrt.compile(exported_program, ir=\"dynamo\", inputs=profiles[0])\n");
    out
}

/// The contract's JSON: `{"profiles": [{"inputs": {"name": {"min", "opt", "max"}}}]}`.
pub fn json(set: &ProfileSet) -> Value {
    let profiles: Vec<Value> = set
        .profiles
        .iter()
        .map(|p| {
            let inputs: serde_json::Map<String, Value> = p
                .inputs
                .iter()
                .map(|(n, t)| (n.clone(), json!({"min": t.min, "opt": t.opt, "max": t.max})))
                .collect();
            json!({ "inputs": inputs })
        })
        .collect();
    json!({ "profiles": profiles })
}
