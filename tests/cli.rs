//! The `dimguard` binary: JSON contract, exit codes, input handling.

mod common;

use common::{data, run};
use serde_json::Value;
use std::process::Command;

#[test]
fn json_follows_the_contract() {
    for entry in std::fs::read_dir(format!(
        "{}/tests/data/messages",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    {
        let path = entry.unwrap().path();
        let (code, out, err) = run(&["diagnose", "--json", path.to_str().unwrap()], None);
        assert_eq!(code, 0, "{}: {err}", path.display());
        let v: Value = serde_json::from_str(&out).unwrap();
        let dims = v["dims"].as_array().unwrap();
        assert!(!dims.is_empty());
        for d in dims {
            assert!(d["name"].is_string());
            if let Some(range) = d["range"].as_array() {
                assert_eq!(range.len(), 2);
                assert!(range[0].as_i64().unwrap() <= range[1].as_i64().unwrap());
            }
            let f = &d["feasible"];
            assert!(f["count"].is_u64());
            let mut count = 0u64;
            for s in f["segments"].as_array().unwrap() {
                let (lo, hi, m) = (
                    s["lo"].as_i64().unwrap(),
                    s["hi"].as_i64().unwrap(),
                    s["modulus"].as_i64().unwrap(),
                );
                let res: Vec<i64> = s["residues"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_i64().unwrap())
                    .collect();
                assert!(lo <= hi && m >= 1 && res.iter().all(|r| (0..m).contains(r)));
                count += (lo..=hi).filter(|x| res.contains(&x.rem_euclid(m))).count() as u64;
            }
            assert_eq!(count, f["count"].as_u64().unwrap());
            for s in d["suggestions"].as_array().unwrap() {
                for k in ["lo", "hi", "modulus", "residue", "count"] {
                    assert!(s[k].is_i64() || s[k].is_u64(), "{k}");
                }
                assert!(s["code"].is_string());
                assert!(["z3", "enumeration", "none"].contains(&s["certificate"].as_str().unwrap()));
                let m = s["modulus"].as_i64().unwrap();
                assert_eq!(
                    s["lo"].as_i64().unwrap().rem_euclid(m),
                    s["residue"].as_i64().unwrap()
                );
            }
        }
    }
}

#[test]
fn contract_example_shape_for_the_seed() {
    let (code, out, _) = run(
        &[
            "diagnose",
            "--json",
            "--example",
            "520",
            &data("messages/seed_raft_sympy_syntax.txt"),
        ],
        None,
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = &v["dims"][0];
    assert_eq!(d["name"], "_2");
    assert_eq!(d["source"], "L['image1'].size()[2]");
    assert_eq!(d["range"], serde_json::json!([135, 2160]));
    assert_eq!(
        d["feasible"]["segments"][0]["residues"],
        serde_json::json!([0, 5, 6, 7])
    );
    assert_eq!(d["suggestions"][0]["count"], 254);
    assert_eq!(d["suggestions"][0]["residue"], 0);
}

#[test]
fn stdin_and_human_output() {
    let text = std::fs::read_to_string(data("messages/resnet18.txt")).unwrap();
    let (code, out, _) = run(&["diagnose"], Some(&text));
    assert_eq!(code, 0);
    assert!(out.contains("height mod 4 ∈ {0, 3}"), "{out}");
    assert!(
        out.contains("dynamic_shapes = {\"x\": {2: height, 3: width}}"),
        "{out}"
    );
    assert!(
        !out.contains('\x1b'),
        "NO_COLOR and a pipe: no escape codes"
    );
    let (code, out2, _) = run(&["diagnose", "-"], Some(&text));
    assert_eq!((code, out2), (0, out));
}

#[test]
fn bad_input_is_a_clear_error() {
    let (code, out, err) = run(&["diagnose"], Some("this is not a torch error"));
    assert_eq!(code, 2);
    assert!(out.is_empty());
    assert!(err.contains("no dynamic-shape constraint found"), "{err}");
    let bad = "  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 9 satisfy the generated guard (L['x'].size()[2] +) == 3.";
    let (code, _, err) = run(&["diagnose"], Some(bad));
    assert_eq!(code, 2);
    assert!(err.contains("guard for `h`"), "{err}");
    let caret = format!("  | {}^", " ".repeat(19));
    assert!(
        err.lines().any(|l| l == caret),
        "caret under the column:\n{err}"
    );
    let (code, _, err) = run(&["diagnose", "/no/such/file"], None);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read /no/such/file"), "{err}");
    let (code, _, err) = run(
        &[
            "diagnose",
            "--example",
            "abc",
            &data("messages/resnet18.txt"),
        ],
        None,
    );
    assert_eq!(code, 2);
    assert!(err.contains("--example"), "{err}");
}

#[test]
fn named_examples() {
    let (code, out, _) = run(
        &[
            "diagnose",
            "--json",
            "--example",
            "height=103",
            &data("messages/resnet18.txt"),
        ],
        None,
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let h = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "height")
        .unwrap();
    let w = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == "width")
        .unwrap();
    // 226 values for residue 0 vs 225 for residue 3: the larger wins even against the example.
    assert_eq!(h["suggestions"][0]["residue"], 0);
    assert_eq!(w["suggestions"][0]["residue"], 0);
}

/// A message does not say which size was traced, and torch refuses a spec that leaves it out:
/// without `--example`, a size whose valid values no one Dim holds says so and how to give it;
/// with it, the note is gone and the spec holds the traced size (timm's mobilevit_xxs, torch
/// 2.15: 56 valid heights in 96..512, traced 256).
#[test]
fn a_split_size_asks_for_the_traced_size_until_it_is_given() {
    let msg = format!(
        "{}/python/tests/fixtures/mobilevit_xxs_215.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let advice = |extra: &[&str]| -> (Vec<String>, String) {
        let (code, out, err) = run(&[&["diagnose", "--json", &msg], extra].concat(), None);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let h = v["dims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == "h")
            .unwrap()
            .clone();
        let advice = h["advice"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect();
        (advice, v["dynamic_shapes"].as_str().unwrap().to_string())
    };
    let (without, spec) = advice(&[]);
    assert!(
        without
            .iter()
            .any(|a| a.contains("the size you traced is not in this text")
                && a.contains("--example h=N")),
        "{without:?}"
    );
    assert!(spec.contains("h = Dim('h', min=121, max=128)"), "{spec}");
    let (with, spec) = advice(&["--example", "h=256", "--example", "w=256"]);
    assert!(
        !with.iter().any(|a| a.contains("the size you traced")),
        "{with:?}"
    );
    assert!(spec.contains("h = Dim('h', min=249, max=256)"), "{spec}");
}

#[test]
fn diagnose_certifies_with_z3() {
    let (code, out, _) = run(
        &[
            "diagnose",
            "--json",
            "--z3",
            "always",
            &data("messages/torch211_raft_small.txt"),
        ],
        None,
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    for d in v["dims"].as_array().unwrap() {
        for s in d["suggestions"].as_array().unwrap() {
            assert_eq!(s["certificate"], "z3", "{s}");
        }
        assert_eq!(d["torch_fix"]["certificate"], "z3");
        assert_eq!(d["torch_fix"]["sound"], false);
    }
    // By default small answers keep their value-by-value certificate (no Z3 start-up) ...
    let (_, out, _) = run(
        &[
            "diagnose",
            "--json",
            &data("messages/torch211_raft_small.txt"),
        ],
        None,
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["dims"][0]["suggestions"][0]["certificate"], "enumeration");
    // ... and answers too large for that get Z3's.
    let huge = "  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h satisfy the generated guard ((((-1) + L['x'].size()[2]) // 8) % 8) == 1.";
    let (code, out, _) = run(&["diagnose", "--json"], Some(huge));
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    let s = &v["dims"][0]["suggestions"][0];
    assert_eq!(s["certificate"], "z3", "{s}");
    assert!(s["count"].as_u64().unwrap() > 10_000_000);
}

#[test]
fn verify_follows_the_contract() {
    let spec = "_dim_2 = Dim('_dim_2', min=17, max=270)\ndim_2 = 8*_dim_2\n";
    let (code, out, err) = run(
        &[
            "verify",
            "--json",
            &data("messages/torch211_raft_small.txt"),
            "-",
        ],
        Some(spec),
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["sound"], false);
    let d = &v["dims"][0];
    assert_eq!(d["name"], "dim_2");
    assert_eq!(d["sound"], false);
    assert_eq!(d["admitted"], 254);
    assert_eq!(d["failing"], 222);
    assert_eq!(d["certificate"], "z3");
    let ex: Vec<i64> = d["counterexamples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect();
    assert_eq!(ex[..3], [144, 152, 160]);
    // The maximal sound spec, fed back, is proved sound.
    let fixed = d["maximal_spec"].as_str().unwrap().to_string();
    let (code, out, _) = run(
        &[
            "verify",
            "--json",
            &data("messages/torch211_raft_small.txt"),
            "-",
        ],
        Some(&fixed),
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["sound"], true, "{out}");
    assert_eq!(v["dims"][0]["certificate"], "z3");
    assert_eq!(v["dims"][0]["counterexamples"].as_array().unwrap().len(), 0);
}

#[test]
fn verify_draws_its_page() {
    // A real message and a spec: the page shows the report's verdict, size by size, and one
    // strip mark per accepted value (counted from the JSON, not from the page); read back from
    // the JSON (as the Python package hands it over), the same page byte for byte.
    let msg = data("messages/torch211_raft_small.txt");
    let dir = std::env::temp_dir().join(format!("dimguard-verify-page-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Unsound (222 of the 254 admitted values fail), then its largest sound spec.
    let mut specs = vec!["_dim_2 = Dim('_dim_2', min=17, max=270)\ndim_2 = 8*_dim_2\n".to_string()];
    let mut k = 0;
    while let Some(spec) = specs.get(k).cloned() {
        let html = dir.join(format!("v{k}.html"));
        let (code, out, err) = run(
            &[
                "verify",
                "--json",
                "--html",
                html.to_str().unwrap(),
                &msg,
                "-",
            ],
            Some(&spec),
        );
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let page = std::fs::read_to_string(&html).unwrap();
        let sound = match v["sound"].as_bool() {
            Some(true) => "sound",
            Some(false) => "not sound",
            None => "undecided",
        };
        assert!(page.contains(&format!("The spec is {sound}")), "{page}");
        let dims = v["dims"].as_array().unwrap();
        assert!(!dims.is_empty());
        let esc = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('\'', "&#39;")
        };
        for d in dims {
            let examples: Vec<String> = d["counterexamples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.to_string())
                .collect();
            let row = format!(
                "<tr><td>{}</td><td><code>{}</code></td>",
                esc(d["name"].as_str().unwrap()),
                esc(d["spec"].as_str().unwrap())
            );
            assert!(page.contains(&row), "{row}\n{page}");
            let cells = format!(
                "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
                d["admitted"],
                d["failing"],
                examples.join(", "),
                d["certificate"].as_str().unwrap(),
                esc(d["maximal_spec"].as_str().unwrap_or(""))
            );
            assert!(page.contains(&cells), "{cells}\n{page}");
            if let Some(n) = d["accepted"]["count"].as_u64() {
                assert!(
                    page.contains(&format!("<svg class=\"strip\" data-marks=\"{n}\"")),
                    "{n} marks\n{page}"
                );
            }
        }
        if k == 0 {
            assert_eq!(v["sound"], false);
            assert!(
                page.contains("<td>254</td><td>222</td><td>144, 152, 160"),
                "{page}"
            );
            specs.push(dims[0]["maximal_spec"].as_str().unwrap().to_string());
        } else {
            assert_eq!(v["sound"], true, "{out}");
        }
        let title = "torch211_raft_small.txt";
        assert!(dimguard::html::render_json(&out, title).unwrap() == page);
        k += 1;
    }
    assert_eq!(k, 2);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn verify_errors_are_clear() {
    let (code, _, err) = run(
        &["verify", &data("messages/resnet18.txt"), "-"],
        Some("nothing here\n"),
    );
    assert_eq!(code, 2);
    assert!(err.contains("defines no dimension"), "{err}");
    let (code, _, err) = run(
        &["verify", &data("messages/resnet18.txt"), "-"],
        Some("q = Dim('q', min=2, max=9)\n"),
    );
    assert_eq!(code, 2);
    assert!(err.contains("no dimension of the spec matches"), "{err}");
}

#[test]
fn check_follows_the_contract() {
    let dot = std::env::temp_dir().join(format!("dimguard-{}.dot", std::process::id()));
    let (code, out, err) = run(
        &[
            "check",
            "--json",
            "--dot",
            dot.to_str().unwrap(),
            &data("pt2/raft_small_torchfix.model.json"),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = &v["dims"][0];
    assert_eq!(d["input"], "image1");
    assert_eq!(d["index"], 2);
    assert_eq!(d["symbol"], "s24");
    assert_eq!(d["expr"], "8*s24");
    assert_eq!(
        d["claimed"],
        serde_json::json!({"count": 254, "min": 136, "max": 2160})
    );
    let a = &d["accepted"];
    assert_eq!(
        (a["count"].as_u64(), a["min"].as_i64(), a["max"].as_i64()),
        (Some(32), Some(136), Some(2120))
    );
    assert_eq!(
        a["segments"],
        serde_json::json!([{"lo": 136, "hi": 2120, "modulus": 64, "residues": [8]}])
    );
    let s = &d["suggestions"][0];
    assert_eq!(
        (
            s["lo"].as_i64(),
            s["hi"].as_i64(),
            s["modulus"].as_i64(),
            s["residue"].as_i64()
        ),
        (Some(136), Some(2120), Some(64), Some(8))
    );
    assert!(["z3", "enumeration", "none"].contains(&s["certificate"].as_str().unwrap()));
    assert!(
        !d["linked_with"].as_array().unwrap().is_empty(),
        "the images are linked"
    );
    let drawn = std::fs::read_to_string(&dot).unwrap();
    std::fs::remove_file(&dot).unwrap();
    assert!(drawn.contains("conv2d") && drawn.contains("->"));
    // Human output states the claim and the truth.
    let (_, out, _) = run(
        &["check", &data("pt2/raft_small_torchfix.model.json")],
        None,
    );
    assert!(out.contains("254 sizes in 136..2160"), "{out}");
    assert!(
        out.contains("32 of them; 222 raise Guard failed, e.g. 144, 152, 160"),
        "{out}"
    );
    let (code, _, err) = run(&["check", &data("messages/resnet18.txt")], None);
    assert_eq!(code, 2);
    assert!(err.contains("not an exported program"), "{err}");
}

/// A malformed program (a rank-0 `linear` weight, found by fuzzing) exits with code 2 and a
/// message naming the node, not a panic (exit code 70).
#[test]
fn a_malformed_program_is_exit_code_2_naming_the_node() {
    let fixture = format!(
        "{}/tests/data/pt2/linear_testmod.model.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(fixture).unwrap()).unwrap();
    v["graph_module"]["graph"]["tensor_values"]["p_l1_weight"]["sizes"] = serde_json::json!([]);
    let dir = std::env::temp_dir().join(format!("dimguard-malformed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.json");
    std::fs::write(&path, v.to_string()).unwrap();
    let (code, _, err) = run(&["check", path.to_str().unwrap()], None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("node `linear` (torch.ops.aten.linear.default): `weight` has 0 dimension(s)"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `norm-bench` without a usable GPU says why and exits 2, never panics. CUDA_VISIBLE_DEVICES is
/// emptied so that the test means the same on a machine with a GPU.
#[test]
fn norm_bench_without_a_gpu_says_why() {
    let out = Command::new(env!("CARGO_BIN_EXE_dimguard"))
        .args(["norm-bench", "--iters", "1", "--samples", "1"])
        .env("CUDA_VISIBLE_DEVICES", "")
        .output()
        .expect("dimguard runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no GPU available") && err.contains("norm-bench needs an NVIDIA GPU"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_partner_named_only_in_a_guard_gets_its_side_and_the_spec_verifies() {
    // Torch lists `h * w <= 65536` (and a broadcast) under `h` only: `w` has no dimension in the
    // text. Before, the printed spec narrowed `h` and left `w` out, so `w` kept whatever the
    // user's call gave it: unsound. The block now holds the partner's side of the same box (or
    // the one Dim it shares), and `verify` proves the printed block sound with Z3.
    let cases = [
        (
            "L['x'].size()[2] * L['x'].size()[3] <= 65536",
            "32 <= h <= 1024",
            "x_3 = Dim('x_3', min=2, max=64)",
            "dynamic_shapes = {\"x\": {2: h, 3: x_3}}",
        ),
        (
            "Or(Eq(L['x'].size()[2], L['y'].size()[2]), Eq(L['y'].size()[2], 1))",
            "2 <= h <= 1024",
            "y_2 = h",
            "dynamic_shapes = {\"x\": {2: h}, \"y\": {2: y_2}}",
        ),
    ];
    let dir = std::env::temp_dir().join(format!("dimguard-partner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (k, (guard, range, partner, dict)) in cases.iter().enumerate() {
        let msg = format!("torch._dynamo.exc.UserError: Constraints violated (h)!\n  - Not all values of h = L['x'].size()[2] in the specified range {range} satisfy the generated guard {guard}.\n");
        let (code, out, err) = run(&["diagnose", "--json", "-"], Some(&msg));
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let block = v["dynamic_shapes"].as_str().unwrap();
        assert!(block.contains(partner) && block.contains(dict), "{block}");
        let (m, s) = (dir.join(format!("m{k}.txt")), dir.join(format!("s{k}.py")));
        std::fs::write(&m, &msg).unwrap();
        std::fs::write(&s, block).unwrap();
        let (code, out, err) = run(
            &["verify", "--json", m.to_str().unwrap(), s.to_str().unwrap()],
            None,
        );
        assert_eq!(code, 0, "{err}");
        let r: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(r["sound"], true, "{block}\n{out}");
        assert_eq!(r["joint"][0]["certificate"], "z3", "{out}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_guard_over_two_sizes_that_always_holds_decides_the_size_it_is_listed_under() {
    // `x + y > 3` listed under x only; y, named only in the guard, has torch's range
    // 2..2^63-1, so every combination passes. Before, x's own line said "undecided ... Z3
    // found the failing value 2" (the one-size question let y be any integer) while the joint
    // answer said it holds.
    let text = "  - Not all values of d0 = L['x'].size()[2] in the specified range 2 <= d0 <= 100 satisfy the generated guard (L['x'].size()[2] + L['y'].size()[0]) > 3.\n";
    let (code, out, err) = run(&["diagnose"], Some(text));
    assert_eq!(code, 0, "{err}");
    // The joint answer comes first, then each size.
    let x = out
        .split("\n\n")
        .find(|p| p.starts_with("d0 = L['x'].size()[2]"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        x.contains("status      spurious: 99 of 99 values pass every guard"),
        "{out}"
    );
    assert!(x.contains("[joint]"), "{out}");
    assert!(
        x.contains("best Dim    2..100 (99 values) [certificate: z3]"),
        "{out}"
    );
    assert!(!x.contains("undecided"), "{out}");
    assert!(!out.contains("failing value"), "{out}");
    assert!(out.contains("d0 = Dim.AUTO"), "{out}");
    // The JSON: decided, the whole range, with a Dim Z3 proved together with y's range ...
    let (_, out, _) = run(&["diagnose", "--json"], Some(text));
    let v: Value = serde_json::from_str(&out).unwrap();
    let d = &v["dims"][0];
    assert_eq!(d["status"], "spurious");
    assert_eq!(d["undecided"], Value::Null);
    assert_eq!(d["feasible"]["count"], 99);
    assert_eq!(d["guards"][0]["method"], "joint");
    assert_eq!(
        d["suggestions"][0]["code"],
        "d0 = Dim('d0', min=2, max=100)"
    );
    assert_eq!(d["suggestions"][0]["certificate"], "z3");
    // ... and without Z3, not certified, saying why (2^63 values of y to re-check).
    let (_, out, _) = run(&["diagnose", "--json", "--z3", "never"], Some(text));
    let v: Value = serde_json::from_str(&out).unwrap();
    let s = &v["dims"][0]["suggestions"][0];
    assert_eq!(s["certificate"], "none");
    assert!(s["certificate_note"]
        .as_str()
        .unwrap()
        .contains("exact by the joint search"));
}

#[test]
fn failing_tuples_name_their_order() {
    // The summary says "(L['x'].size()[3], h) pairs", the tuples are in level order: the line
    // names it.
    let text = "torch._dynamo.exc.UserError: Constraints violated (h)!\n  - Not all values of h = L['x'].size()[2] in the specified range 32 <= h <= 1024 satisfy the generated guard L['x'].size()[2] * L['x'].size()[3] <= 65536.\n";
    let (_, out, _) = run(&["diagnose", "-"], Some(text));
    let linked = out
        .lines()
        .find_map(|l| l.strip_prefix("linked: "))
        .unwrap();
    let fail = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("fail"))
        .unwrap()
        .trim();
    assert!(
        fail.starts_with(&format!("({linked}) e.g. (32, 2049)")),
        "{out}"
    );
}

/// `diagnose --cover N`: the specs are disjoint, each inside the sizes at which the message's
/// guard holds (evaluated value by value with Python's floor semantics, not by the solver), and
/// together they hold every such size once N is large enough; the text prints one paste block
/// per spec.
#[test]
fn diagnose_cover_specs_are_disjoint_and_cover_the_guard() {
    let valid = |h: i128| ((h - 1).div_euclid(4) - 1).rem_euclid(2) == 0;
    let truth: Vec<i128> = (135..=2160).filter(|&h| valid(h)).collect();
    for n in [1usize, 2, 4, 6] {
        let (code, out, err) = run(
            &[
                "diagnose",
                &data("messages/seed_raft_sympy_syntax.txt"),
                "--json",
                "--example",
                "520",
                "--cover",
                &n.to_string(),
            ],
            None,
        );
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let c = &v["cover"];
        let pieces = c["pieces"].as_array().unwrap();
        assert_eq!(pieces.len(), n.min(4), "four residue classes");
        let mut seen = std::collections::BTreeSet::new();
        for p in pieces {
            let s = &p["sides"][0];
            let (lo, hi, m) = (
                s["lo"].as_i64().unwrap() as i128,
                s["hi"].as_i64().unwrap() as i128,
                s["modulus"].as_i64().unwrap() as i128,
            );
            let members: Vec<i128> = (lo..=hi).step_by(m as usize).collect();
            assert_eq!(members.len() as u64, p["count"].as_u64().unwrap());
            for h in members {
                assert!(valid(h), "{h} admitted by a cover spec fails the guard");
                assert!(seen.insert(h), "{h} in two specs");
            }
            assert!(p["code"]
                .as_str()
                .unwrap()
                .contains("dynamic_shapes = {\"image1\": {2: _2}}"));
        }
        assert_eq!(c["covered"].as_u64().unwrap() as usize, seen.len());
        assert_eq!(c["valid"].as_u64().unwrap() as usize, truth.len());
        assert_eq!(c["in_range"].as_u64().unwrap(), 2026);
        if n >= 4 {
            assert_eq!(seen.into_iter().collect::<Vec<_>>(), truth);
        }
        assert!(pieces[0]["sides"][0]["lo"].as_i64().unwrap() <= 520);
    }
    let (code, out, _) = run(
        &[
            "diagnose",
            &data("messages/seed_raft_sympy_syntax.txt"),
            "--cover",
            "4",
        ],
        None,
    );
    assert_eq!(code, 0);
    assert!(
        out.contains(
            "Cover: 1014 of 1014 valid sizes (2026 in the range) in 4 specs; one Dim: 254"
        ),
        "{out}"
    );
    assert_eq!(out.matches("Spec ").count(), 4);
    let (code, _, err) = run(
        &[
            "diagnose",
            &data("messages/seed_raft_sympy_syntax.txt"),
            "--cover",
            "0",
        ],
        None,
    );
    assert_eq!(code, 2);
    assert!(err.contains("--cover must be at least 1"), "{err}");
}

#[test]
fn data_dependent_shapes_spec_failures() {
    let dir = format!("{}/tests/data/forms/shapesspec", env!("CARGO_MANIFEST_DIR"));
    let cnn = format!("{dir}/cnn.exception.txt");
    // `--range` by torch's symbol (refused before), JSON in the contract's set form.
    let (code, out, err) = run(
        &[
            "diagnose",
            "--json",
            "--range",
            "u1=96..1024",
            "--example",
            "224",
            &cnn,
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["form"], "data_dependent");
    let d = &v["data_dependent"][0];
    assert_eq!(d["source"], "x.shape[2]");
    assert_eq!(d["when_true"]["count"], 0);
    assert_eq!(d["when_false"]["count"], 929);
    assert_eq!(d["always"], false);
    assert_eq!(d["certificate"], "enumeration");
    assert_eq!(d["example_branch"], false);
    assert_eq!(d["removes"], 0);
    // The human report says data-dependent, never constraint_violation or "0 dimensions".
    let (_, human, _) = run(&["diagnose", "--range", "u1=96..1024", &cnn], None);
    assert!(human.contains("data-dependent expression over"), "{human}");
    assert!(!human.contains("constraint_violation") && !human.contains("0 dimensions"));
    // --spec with the user's ShapesSpec: their names, their spec back whole.
    let spec = std::env::temp_dir().join(format!("dimguard-cli-spec-{}.py", std::process::id()));
    std::fs::write(
        &spec,
        "from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec\nB = ShapeVar(\"B\", min=1, max=8)\nH = ShapeVar(\"H\", min=96, max=1024)\nW = ShapeVar(\"W\", min=96, max=1024)\ndynamic_shapes = ShapesSpec({\"x\": TensorSpec([B, 3, H, W])})\n",
    )
    .unwrap();
    let (code, out, err) = run(
        &["diagnose", "--json", "--spec", spec.to_str().unwrap(), &cnn],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let block = v["dynamic_shapes"].as_str().unwrap();
    assert!(block.contains("TensorSpec([B, 3, H, W])"), "{block}");
    assert!(
        block.contains("2*(((H - 3) // 2 - 1) // 2) < (H - 3) // 2 + 1,"),
        "{block}"
    );
    // --format dim gives torch._check lines instead; a bad --format is refused.
    let (_, out, _) = run(
        &[
            "diagnose",
            "--format",
            "dim",
            "--range",
            "u1=96..1024",
            &cnn,
        ],
        None,
    );
    assert!(out.contains("torch._check(torch.sym_not("), "{out}");
    let (code, _, err) = run(&["diagnose", "--format", "yaml", &cnn], None);
    assert_eq!(code, 2, "{err}");
    // verify takes a ShapesSpec file (its assumptions narrow its sizes).
    let guards = std::env::temp_dir().join(format!("dimguard-cli-g-{}.txt", std::process::id()));
    std::fs::write(&guards, "Eq(Mod(L['x'].size()[2], 2), 0)\n").unwrap();
    let (_, out, _) = run(
        &["verify", guards.to_str().unwrap(), spec.to_str().unwrap()],
        None,
    );
    assert!(
        out.contains("UNSOUND: 464 of 929"),
        "H odd fails the guard: {out}"
    );
    let even = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("W])})", "W])}, assumptions=[H % 2 == 0])");
    std::fs::write(&spec, even).unwrap();
    let (code, out, err) = run(
        &["verify", guards.to_str().unwrap(), spec.to_str().unwrap()],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("sound: all 465 admitted values pass"), "{out}");
    let _ = std::fs::remove_file(&spec);
    let _ = std::fs::remove_file(&guards);
}

#[test]
fn format_shapesspec_for_dim_guards() {
    let (code, out, err) = run(
        &[
            "diagnose",
            "--json",
            "--format",
            "shapesspec",
            &data("messages/seed_raft_sympy_syntax.txt"),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let block = v["dynamic_shapes"].as_str().unwrap();
    let d = &v["dims"][0]["suggestions"][0];
    assert!(
        block.contains(&format!(
            "_2 = ShapeVar(\"_2\", min={}, max={})",
            d["lo"], d["hi"]
        )),
        "{block}"
    );
    assert!(
        block.contains(&format!("_2 % {} == {},", d["modulus"], d["residue"])),
        "{block}"
    );
}

/// `check` of a `dimguard.Dispatch` archive (tools/export_dispatch.py): every program checked
/// from its own graph, and the union of what they accept equals the heights at which the model
/// itself runs (eager, one call per size, inside the box the archive was made for).
#[test]
fn check_reads_a_dispatch_archive() {
    let dir = format!("{}/tests/data/pt2", env!("CARGO_MANIFEST_DIR"));
    let truth: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{dir}/branchy.dispatch.truth.json")).unwrap(),
    )
    .unwrap();
    let runs: Vec<i64> = truth["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let archive = format!("{dir}/branchy.dispatch");
    let (code, out, err) = run(&["check", &archive, "--json"], None);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["programs"].as_array().unwrap().len() as u64,
        truth["programs"].as_u64().unwrap()
    );
    let u = &v["union"][0];
    assert_eq!(
        (u["input"].as_str(), u["index"].as_u64()),
        (Some("x"), Some(2))
    );
    let member = |h: i64| {
        u["accepted"]["segments"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| {
                let (lo, hi, m) = (
                    s["lo"].as_i64().unwrap(),
                    s["hi"].as_i64().unwrap(),
                    s["modulus"].as_i64().unwrap(),
                );
                lo <= h
                    && h <= hi
                    && s["residues"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|r| r.as_i64() == Some(h.rem_euclid(m)))
            })
    };
    let got: Vec<i64> = (96..=300).filter(|&h| member(h)).collect();
    assert_eq!(got, runs);
    let (code, text, _) = run(&["check", &archive], None);
    assert_eq!(code, 0);
    assert!(
        text.starts_with("dimguard check: a dimguard.Dispatch archive: 2 programs"),
        "{text}"
    );
    assert!(text.contains("== program 1 (programs/1.pt2)"), "{text}");
    let (code, _, err) = run(&["check", &archive, "--dot", "/tmp/x.dot"], None);
    assert_eq!(code, 2);
    assert!(err.contains("--dot and --html draw one program"), "{err}");
}

/// timm's `mobilevit_xxs` under torch 2.15 (H, W in 96..512): each of h's and w's guards has an
/// exact twin, so every guard is implied by the others (`redundant`, checked here value by
/// value), and most remove no value at all. The text lists guards that together keep exactly the
/// accepted sizes and folds the rest into one line, each of them removing nothing beyond those
/// listed (checked value by value, with torch's guards parsed from the JSON).
#[test]
fn guards_that_remove_nothing_beyond_the_others_fold_into_one_line() {
    let file = data("messages/mobilevit_xxs_215.txt");
    let (code, json, err) = run(&["diagnose", "--json", &file], None);
    assert_eq!(code, 0, "{err}");
    let (code, text, err) = run(&["diagnose", &file], None);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    for name in ["h", "w"] {
        let d = v["dims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .unwrap();
        let var = d["source"].as_str().unwrap();
        let (lo, hi) = (
            d["range"][0].as_i64().unwrap() as i128,
            d["range"][1].as_i64().unwrap() as i128,
        );
        let guards: Vec<_> = d["guards"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| dimguard::solver::parse_guard(g["text"].as_str().unwrap()).unwrap())
            .collect();
        let n = guards.len();
        let holds = |i: usize, x: i128| guards[i].holds_at(var, x);
        let passes_all = |x: i128| (0..n).all(|i| holds(i, x));
        for i in 0..n {
            let implied = (lo..=hi).all(|x| holds(i, x) || (0..n).any(|k| k != i && !holds(k, x)));
            assert_eq!(
                d["guards"][i]["redundant"],
                implied,
                "{name} guard {}",
                i + 1
            );
        }
        // The size's block of the text: its listed guards and the folded line.
        let block: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with(&format!("{name} = ")))
            .take_while(|l| !l.is_empty())
            .collect();
        let listed: Vec<usize> = block
            .iter()
            .filter_map(|l| l.trim_start().strip_prefix("guard "))
            .filter_map(|l| l.split_whitespace().next()?.parse::<usize>().ok())
            .map(|k| k - 1)
            .collect();
        let folded_line = block
            .iter()
            .find(|l| l.contains("remove nothing beyond the guards above"))
            .unwrap_or_else(|| panic!("{name}: no folded line in\n{}", block.join("\n")));
        let folded: Vec<usize> = folded_line
            .trim_start()
            .strip_prefix("guards ")
            .unwrap()
            .split(" remove")
            .next()
            .unwrap()
            .split(", ")
            .map(|k| k.parse::<usize>().unwrap() - 1)
            .collect();
        assert_eq!(listed.len() + folded.len(), n, "{name}");
        assert!(listed.len() < n / 4, "{name}: {listed:?} listed");
        // The listed guards keep exactly the sizes every guard keeps: 56 of 417.
        let kept = (lo..=hi)
            .filter(|&x| {
                let all = passes_all(x);
                assert_eq!(listed.iter().all(|&i| holds(i, x)), all, "{name} = {x}");
                all
            })
            .count();
        assert_eq!(kept as u64, d["feasible"]["count"].as_u64().unwrap());
        assert_eq!(kept, 56);
    }
}

/// `check --at`: the program's verdict on a shape, in text and JSON; a bad shape is an input
/// error (exit 2) that says the form it wants.
#[test]
fn check_at_gives_the_programs_verdict() {
    let program = format!(
        "{}/tests/data/pt2/assert_async.pt2",
        env!("CARGO_MANIFEST_DIR")
    );
    let verdict = |shape: &str| {
        let (code, out, err) = run(&["check", &program, "--at", shape, "--json"], None);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    // x is [1, s] with a run-time assert s % 3 == 0 (s in 2..64).
    for s in 2..=64 {
        let v = verdict(&format!("x:1x{s}"));
        assert_eq!(v["accepted"], Value::Bool(s % 3 == 0), "{s}: {v}");
    }
    let v = verdict("x:2x30");
    assert_eq!(v["accepted"], Value::Bool(false));
    assert!(v["reason"].as_str().unwrap().contains("fixed at 1"), "{v}");
    // s = -3 passes s % 3 == 0 and no range check of torch's (its minimum is 2): a negative
    // size is refused by its own rule.
    let v = verdict("x:1x-3");
    assert_eq!(v["accepted"], Value::Bool(false));
    assert!(
        v["reason"].as_str().unwrap().contains("never negative"),
        "{v}"
    );
    let (code, out, _) = run(&["check", &program, "--at", "x:1x31"], None);
    assert_eq!(code, 0);
    assert!(out.starts_with("rejected: the run-time assert"), "{out}");
    let (code, _, err) = run(&["check", &program, "--at", "x=1,31"], None);
    assert_eq!(code, 2);
    assert!(err.contains("NAME:1x3x520x960"), "{err}");
}

#[test]
fn torch_215s_glued_specialization_message_is_read() {
    // torch 2.15 glues "Specializations unexpectedly required (batch)!" onto the last guard
    // (`... <= 255Specializations ...`); made by tools/make_form_fixtures.py (case `glued`).
    let file = format!(
        "{}/tests/data/forms/glued.exception.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let (code, out, err) = run(&["diagnose", "--json", &file], None);
    assert!(code == 0 || code == 1, "exit {code}: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let dims = v["dims"].as_array().unwrap();
    let batch = dims.iter().find(|d| d["name"] == "batch").unwrap();
    assert_eq!(batch["specialized"], 2);
    let seq = dims.iter().find(|d| d["name"] == "seq").unwrap();
    assert_eq!(seq["feasible"]["count"], 254, "{seq}");
}

#[test]
fn fuzzing_findings_are_clear_errors_or_said_answers() {
    // A bullet whose source is empty (`x1 =  in the specified range`) reached Z3 as an empty
    // symbol name and panicked (exit 70): now a clear error naming what is missing.
    let text = "  - Not all values of x1 =  in the specified range x1 <= 512 satisfy the generated guard Ne(512, L['args'][1]['input_ids'].size()[1]).";
    for z3 in ["auto", "always"] {
        let (code, out, err) = run(&["diagnose", "--z3", z3], Some(text));
        assert_eq!(code, 2, "{out}{err}");
        assert!(err.contains("no source for `x1`"), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // A negative shift count: torch raises there, and the report says so.
    let text = "  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 10 satisfy the generated guard LShift(L['x'].size()[2], -5) > 0.";
    let (code, out, err) = run(&["diagnose", "--json"], Some(text));
    assert!(code == 0 || code == 1, "exit {code}: {err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let requires = v["dims"][0]["guards"][0]["requires"].as_str().unwrap();
    assert!(requires.contains("negative shift count"), "{requires}");
    assert_eq!(v["dims"][0]["feasible"]["count"], 0);
}

/// A tied size says so in every command, with its partner's set (issue 34 item 3): on the
/// pyramid program's trace (`b`'s batch equal to `a`'s; `b`'s stride-4 maps in the blocks of
/// `a`'s), in `diagnose`, `check` and `verify`, text and JSON; and `verify`'s maximal line for a
/// size given its partner's `Dim` object names the size (`b_0 = a_0`, never `a_0 = a_0`).
#[test]
fn tied_sizes_answer_with_their_partners_set() {
    let root = env!("CARGO_MANIFEST_DIR");
    let trace = format!("{root}/tests/data/traces/pyramid2_composed.log");
    let program = format!("{root}/tests/data/pt2/pyramid2_composed.pt2");
    let json = |args: &[&str]| {
        let (code, out, err) = run(args, None);
        assert_eq!(code, 0, "{args:?}: {err}");
        serde_json::from_str::<Value>(&out).unwrap()
    };
    let tie = |v: &Value, source: &str| {
        v["dims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["source"] == source)
            .unwrap_or_else(|| panic!("{source}: {v}"))["tied_to"]
            .clone()
    };
    let (b0, b2) = ("L['b'].size()[0]", "L['b'].size()[2]");
    for v in [
        json(&["diagnose", "--json", &trace]),
        json(&["check", "--json", &program]),
    ] {
        let t = tie(&v, b0);
        assert_eq!(t["source"], "L['a'].size()[0]", "{t}");
        assert_eq!(t["equal"], true);
        let t = tie(&v, b2);
        assert_eq!(t["source"], "L['a'].size()[2]", "{t}");
        assert_eq!(t["equal"], false);
        assert!(
            t["relation"].as_str().unwrap().contains("block of 4"),
            "{t}"
        );
        // a[2]'s set: 0, 5, 6 and 7 mod 8 from 13.
        let seg = &t["accepted"]["segments"][0];
        assert_eq!(
            (seg["lo"].as_i64(), seg["modulus"].as_i64()),
            (Some(13), Some(8))
        );
        assert_eq!(seg["residues"], serde_json::json!([0, 5, 6, 7]));
    }
    let (_, text, _) = run(&["diagnose", &trace], None);
    assert!(
        text.contains("tied        in the block of 4 values holding a_2"),
        "{text}"
    );
    let (_, text, _) = run(&["check", &program], None);
    assert!(text.contains("tied        equal to a[0]: all"), "{text}");
    let spec = "from torch.export import Dim\na_0 = Dim('a_0', min=2)\n_a_2 = Dim('_a_2', min=2)\na_2 = 8*_a_2\n_a_3 = Dim('_a_3', min=2)\na_3 = 8*_a_3\ndynamic_shapes = {\"a\": {0: a_0, 2: a_2, 3: a_3}, \"b\": {0: a_0, 2: a_2, 3: a_3}}\n";
    let (code, text, err) = run(&["verify", &trace, "-"], Some(spec));
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("b_0 = a_0  # must always be equal"), "{text}");
    assert!(!text.contains("a_0 = a_0"), "{text}");
    assert!(text.contains("tied        equal to a_0"), "{text}");
}

/// `diagnose TRT_ERROR --program MODEL.pt2`: the max bound the program implies for a size
/// Torch-TensorRT found none for, checked against torch 2.15 running the program
/// (`tools/export_trt_bound.py`: the row counts 0..100 at which `ep.module()` runs). Sound:
/// every accepted size is at most the bound; and exact here (the bound itself is accepted). With
/// no `torch._check(n <= N)` the program implies none, and torch accepts sizes up to the top of
/// the checked range.
#[test]
fn trt_missing_bound_from_the_program() {
    let root = env!("CARGO_MANIFEST_DIR");
    let text = format!("{root}/tests/data/forms/real/torch_tensorrt_4610.no_max_bound.txt");
    for name in ["trt_bounded", "trt_unbounded"] {
        let model = format!("{root}/tests/data/pt2/{name}.pt2");
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{root}/tests/data/pt2/{name}.bound.json")).unwrap(),
        )
        .unwrap();
        let accepted: Vec<i64> = truth["accepted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap())
            .collect();
        let top = truth["checked"][1].as_i64().unwrap();
        let (code, out, err) = run(&["diagnose", "--json", &text, "--program", &model], None);
        assert_eq!(code, 0, "{name}: {err}");
        let v: Value = serde_json::from_str(&out).unwrap();
        let mb = &v["missing_bounds"][0];
        assert_eq!(mb["symbol"], "u0", "{name}: {mb}");
        let bound = &mb["program"]["max"];
        match bound.as_i64() {
            Some(hi) => {
                assert_eq!(name, "trt_bounded");
                assert!(
                    accepted.iter().all(|&n| n <= hi),
                    "{name}: unsound bound {hi}"
                );
                assert_eq!(
                    accepted.iter().max(),
                    Some(&hi),
                    "{name}: bound {hi} not tight"
                );
                assert!(hi < top, "{name}: the truth must check above the bound");
            }
            None => {
                assert_eq!(name, "trt_unbounded", "{name}: no bound reported");
                assert!(bound.is_null(), "{name}: {mb}");
                assert_eq!(accepted.iter().max(), Some(&top), "{name}: torch bounds it");
            }
        }
        let (code, human, _) = run(&["diagnose", &text, "--program", &model], None);
        assert_eq!(code, 0);
        assert!(human.contains("TensorRT max bound:"), "{human}");
    }
    // A program given with a text that names no missing bound: a note, not an error.
    let (code, out, _) = run(
        &[
            "diagnose",
            "--json",
            &data("messages/seed_raft_sympy_syntax.txt"),
            "--program",
            &format!("{root}/tests/data/pt2/trt_bounded.pt2"),
        ],
        None,
    );
    assert_eq!(code, 0);
    assert!(out.contains("the program was not needed"), "{out}");
}
