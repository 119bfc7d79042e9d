//! `dimguard diagnose` on structured traces (`TORCH_TRACE`) made with PyTorch 2.15 from the
//! models in `tools/make_traces.py`: every guard is attributed to the model line that the
//! generating script marked (`tests/data/traces/<case>.expect.json`), and the exact answers hold.

mod common;

use common::{root, run};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn traces() -> PathBuf {
    root().join("tests/data/traces")
}

fn diagnose_json(path: &Path) -> Value {
    common::json(&[
        "diagnose",
        "--json",
        "--z3",
        "never",
        path.to_str().unwrap(),
    ])
}

fn cases() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(traces())
        .unwrap()
        .filter_map(|e| {
            let p = e.ok()?.path();
            let name = p
                .file_name()?
                .to_str()?
                .strip_suffix(".expect.json")?
                .to_string();
            let want: Value = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
            Some((name, want))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn every_fixture_names_the_marked_user_line_for_every_guard() {
    let cases = cases();
    assert!(cases.len() >= 6, "fixtures missing: {cases:?}");
    for (case, want) in cases {
        let r = diagnose_json(&traces().join(format!("{case}.log")));
        assert_eq!(r["form"], "torch_trace", "{case}");
        let line = want["line"].as_u64().unwrap();
        let mut n = 0;
        for d in r["dims"].as_array().unwrap() {
            for g in d["guards"].as_array().unwrap() {
                let p = &g["provenance"];
                assert_eq!(p["user"], true, "{case}: {g}");
                assert_eq!(p["file"], "models.py", "{case}: {g}");
                assert_eq!(p["line"].as_u64(), Some(line), "{case}: {g}");
                assert_eq!(p["function"], "forward", "{case}: {g}");
                assert!(
                    p["code"].as_str().unwrap().contains("# LINE:"),
                    "{case}: the marked source line is shown: {p}"
                );
                assert!(!p["stack"].as_array().unwrap().is_empty());
                n += 1;
            }
        }
        assert!(n > 0, "{case}: no guard read");
        // One line of the model adds every guard of these models.
        let lines = r["lines"].as_array().unwrap();
        assert_eq!(lines.len(), 1, "{case}: {lines:?}");
        assert_eq!(lines[0]["line"].as_u64(), Some(line), "{case}");
    }
}

#[test]
fn fpn_line_removes_what_the_guard_removes_and_names_the_broadcast() {
    for case in ["fpn_nonstrict", "fpn_strict"] {
        let r = diagnose_json(&traces().join(format!("{case}.log")));
        let l = &r["lines"][0];
        assert!(l["code"]
            .as_str()
            .unwrap()
            .starts_with("f = fa + F.interpolate(self.s8(fa)"));
        let d = &l["dims"][0];
        assert_eq!(d["removes"], 464, "{case}: {d}");
        assert_eq!(d["of"], 929);
        assert!(d["requires"]
            .as_str()
            .unwrap()
            .contains("mod 8 ∈ {0, 5, 6, 7}"));
        // Brute force: H in 96..=1024 passes the recorded guard exactly when H mod 8 is 0, 5, 6, 7.
        let pass = (96i64..=1024)
            .filter(|h| ((h - 1).div_euclid(4)) + 1 == 2 * ((h - 1).div_euclid(8)) + 2)
            .count();
        assert_eq!(r["dims"][0]["feasible"]["count"], pass as u64);
        if case == "fpn_nonstrict" {
            // Non-strict export keeps the whole stack: the broadcast that checks the sizes.
            assert_eq!(l["ops"][0], "infer_size");
        }
    }
}

#[test]
fn operators_are_kept_as_context() {
    let op = |case: &str| {
        let r = diagnose_json(&traces().join(format!("{case}.log")));
        r["lines"][0]["ops"].clone()
    };
    assert!(op("ceil_pool")
        .as_array()
        .unwrap()
        .iter()
        .any(|o| o.as_str().unwrap().starts_with("pooling_output_shape")));
    assert!(op("broadcast")
        .as_array()
        .unwrap()
        .contains(&Value::from("infer_size")));
}

#[test]
fn linked_pair_keeps_the_link_and_claims_nothing_from_one_size() {
    let r = diagnose_json(&traces().join("linked.log"));
    let links = r["lines"][0]["links"].as_array().unwrap();
    assert_eq!(links.len(), 1);
    assert!(links[0].as_str().unwrap().starts_with("Eq(((s"));
    // The pair is linked: neither size may be declared free from its own guards alone.
    for d in r["dims"].as_array().unwrap() {
        assert_ne!(d["status"], "spurious", "{d}");
    }
}

#[test]
fn reads_a_trace_directory_and_rejects_an_empty_one() {
    let dir = std::env::temp_dir().join(format!("dimguard-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(
        traces().join("fpn_nonstrict.log"),
        dir.join("dedicated_log_torch_trace_x.log"),
    )
    .unwrap();
    let r = diagnose_json(&dir);
    assert_eq!(r["dims"][0]["feasible"]["count"], 465);
    std::fs::remove_file(dir.join("dedicated_log_torch_trace_x.log")).unwrap();
    let (code, _, err) = run(&["diagnose", dir.to_str().unwrap()], None);
    assert_eq!(code, 1);
    assert!(err.contains("empty directory"));
    std::fs::remove_dir(&dir).unwrap();
}

/// A `TORCH_TRACE` size that no guard names accepts its whole range.
#[test]
fn a_size_without_guards_accepts_its_whole_range() {
    use dimguard::commands::diagnose;
    let text = format!(
        "V1129 00:00:00.000000 1 torch/_logging/structured.py:28] {}\n",
        r#"{"create_symbol": {"symbol": "s5", "val": "256", "vr": "[96, 1024]", "source": "L['x'].size()[2]"}}"#
    );
    let opts = &mut diagnose::Options::default();
    let msg = diagnose::read(&text, opts).unwrap();
    assert_eq!(msg.form, dimguard::readers::forms::Form::TorchTrace);
    let r = diagnose::diagnose(&msg, opts);
    let d = &r.dims[0];
    assert_eq!(d.answer.accepted.as_ref().unwrap().count, 929);
    assert_eq!(
        (d.answer.suggestions[0].lo, d.answer.suggestions[0].hi),
        (96, 1024)
    );
}
