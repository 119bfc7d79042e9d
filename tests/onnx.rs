//! `dimguard check FILE.onnx`: the report `dimguard.onnx.export` stored in a real ONNX file
//! (tests/data/onnx, written by tools/onnx_fixtures.py with torch 2.15 and onnxscript), its
//! verdict at every recorded shape against the torch program's own (it ran or raised), and a
//! file without the report (plain `torch.onnx.export`) refused with its symbolic axes named.

mod common;

use common::{data, run};
use serde_json::Value;

#[test]
fn the_stored_report_reads_back_with_the_files_inputs() {
    let (code, out, err) = run(&["check", "--json", &data("onnx/raft_pair.onnx")], None);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let onnx = &v["onnx"];
    assert_eq!(
        onnx["opset"].as_i64().map(|o| o >= 18),
        Some(true),
        "{onnx}"
    );
    assert!(onnx["notes"].as_array().unwrap().is_empty(), "{onnx}");
    let names: Vec<&str> = onnx["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["image1", "image2"]);
    // The user's Dim names, not torch's symbols, on the file's axes.
    let axes = onnx["symbolic"].as_array().unwrap();
    assert!(
        axes.iter()
            .any(|a| a.as_str().unwrap() == "image1[0] = batch"),
        "{axes:?}"
    );
    assert!(!v["dims"].as_array().unwrap().is_empty());
    assert!(!v["inputs"].as_array().unwrap().is_empty());
    let (code, text, _) = run(&["check", &data("onnx/raft_pair.onnx")], None);
    assert_eq!(code, 0);
    assert!(
        text.contains("an ONNX file") && text.contains("input image1:"),
        "{text}"
    );
}

#[test]
fn check_at_agrees_with_the_torch_program_at_every_recorded_shape() {
    let runs: Value =
        serde_json::from_str(&std::fs::read_to_string(data("onnx/raft_pair.runs.json")).unwrap())
            .unwrap();
    let runs = runs["runs"].as_array().unwrap();
    assert!(runs.len() >= 16);
    let (mut yes, mut no) = (0, 0);
    for r in runs {
        let at: Vec<String> = ["image1", "image2"]
            .iter()
            .map(|n| {
                let s: Vec<String> = r["shapes"][n]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.to_string())
                    .collect();
                format!("{n}:{}", s.join("x"))
            })
            .collect();
        let mut args = vec!["check", "--json"];
        let file = data("onnx/raft_pair.onnx");
        args.push(&file);
        for a in &at {
            args.extend(["--at", a.as_str()]);
        }
        let (code, out, err) = run(&args, None);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let runs_there = r["runs"].as_bool().unwrap();
        assert_eq!(v["accepted"].as_bool(), Some(runs_there), "{at:?}: {v}");
        if runs_there {
            yes += 1;
        } else {
            no += 1;
        }
    }
    assert!(yes >= 3 && no >= 3, "{yes} run, {no} raise");
}

#[test]
fn a_file_without_the_report_says_which_axes_are_symbolic_and_how_to_add_it() {
    let (code, out, err) = run(&["check", &data("onnx/raft_pair_plain.onnx")], None);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("without dimguard's report"), "{err}");
    assert!(err.contains("image1[0] = "), "{err}");
    assert!(err.contains("dimguard.onnx.export("), "{err}");
    let (code, out, _) = run(
        &["check", "--json", &data("onnx/raft_pair_plain.onnx")],
        None,
    );
    assert_eq!(code, 2);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["error"]["kind"], "input");
    let (code, _, err) = run(
        &["check", "--dot", "/dev/null", &data("onnx/raft_pair.onnx")],
        None,
    );
    assert_eq!(code, 2);
    assert!(err.contains("--dot"), "{err}");
}
