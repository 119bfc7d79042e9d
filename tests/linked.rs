//! `dimguard check` on real programs whose sizes are linked by guards (exported by PyTorch 2.15
//! with `tools/export_linked.py`), against the brute-force oracle the same script recorded: every
//! guard of `guards_code` evaluated, as Python, at every (batch, H, W) of the claimed box
//! (`tests/data/pt2/<model>.oracle.json`).

use serde_json::Value;
use std::collections::BTreeSet;
use std::process::Command;

fn data(name: &str) -> String {
    format!("{}/tests/data/pt2/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn check_json(model: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_dimguard"))
        .args(["check", "--json", &data(&format!("{model}.model.json"))])
        .output()
        .expect("dimguard runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn values(f: &Value) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
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
        for x in lo..=hi {
            if res.contains(&x.rem_euclid(m)) {
                out.insert(x);
            }
        }
    }
    out
}

fn ints(v: &Value) -> BTreeSet<i64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap())
        .collect()
}

/// The joint set, its projections, the sizes that never work, rejected and accepted examples,
/// the largest box and the guard accounting, against the oracle.
fn matches_oracle(model: &str) {
    let oracle: Value = serde_json::from_str(
        &std::fs::read_to_string(data(&format!("{model}.oracle.json"))).unwrap(),
    )
    .unwrap();
    let r = check_json(model);
    let groups = r["linked"].as_array().expect("linked groups");
    assert_eq!(groups.len(), 1, "{model}");
    let g = &groups[0];
    assert_eq!(g["claimed"], oracle["claimed"], "{model}");
    assert_eq!(g["accepted"], oracle["passing"], "{model}");
    assert!(g.get("undecided").is_none(), "{model}");
    let dims = r["dims"].as_array().unwrap();
    let by_index = |i: u64| dims.iter().find(|d| d["index"] == i).unwrap();
    for (i, key) in [(0, "batch_values"), (2, "h_values"), (3, "w_values")] {
        let d = by_index(i);
        let want = ints(&oracle[key]);
        // `accepted`: the sizes that pass with some value of the sizes linked to them.
        assert_eq!(values(&d["accepted"]), want, "{model} x[{i}]");
        // A size that passes with some partner is never listed as rejected.
        for x in ints(&d["rejected_examples"]) {
            assert!(!want.contains(&x), "{model} x[{i}] rejects {x}, which passes");
        }
    }
    // Rejected tuples really fail, accepted ones really pass (the oracle's pairs).
    let pairs: BTreeSet<(i64, i64)> = oracle["hw_pairs_all"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_i64().unwrap(), p[1].as_i64().unwrap()))
        .collect();
    let b_ok = ints(&oracle["batch_values"]);
    let order: Vec<u64> = g["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| by_index_of(dims, n.as_str().unwrap()))
        .collect();
    let tuple = |t: &Value| -> (i64, i64, i64) {
        let mut b = 0;
        let mut h = 0;
        let mut w = 0;
        for (k, &i) in order.iter().enumerate() {
            let x = t[k].as_i64().unwrap();
            match i {
                0 => b = x,
                2 => h = x,
                _ => w = x,
            }
        }
        (b, h, w)
    };
    for t in g["rejected_examples"].as_array().unwrap() {
        let (b, h, w) = tuple(t);
        assert!(
            !(pairs.contains(&(h, w)) && b_ok.contains(&b)),
            "{model}: rejected {t} passes"
        );
    }
    for t in g["accepted_examples"].as_array().unwrap() {
        let (b, h, w) = tuple(t);
        assert!(pairs.contains(&(h, w)) && b_ok.contains(&b), "{model}: {t}");
    }
    // The largest box is inside the joint set (the oracle's passing tuples: batch set x pairs,
    // which is how every fixture's joint set factors).
    let lb = &g["largest_box"];
    let side = |i: u64| -> BTreeSet<i64> {
        let name = dims.iter().find(|d| d["index"] == i).unwrap();
        let key = format!("{}_{}", name["input"].as_str().unwrap(), i);
        let s = &lb["sides"][&key];
        let (lo, hi, m) = (
            s["lo"].as_i64().unwrap(),
            s["hi"].as_i64().unwrap(),
            s["modulus"].as_i64().unwrap(),
        );
        (lo..=hi).step_by(m as usize).collect()
    };
    let (bs, hs, ws) = (side(0), side(2), side(3));
    assert_eq!(
        lb["count"].as_u64().unwrap() as usize,
        bs.len() * hs.len() * ws.len()
    );
    for b in &bs {
        assert!(b_ok.contains(b));
    }
    for h in &hs {
        for w in &ws {
            assert!(pairs.contains(&(*h, *w)), "{model}: box holds ({h}, {w})");
        }
    }
    // Every guard accounted for.
    let guards = r["guards"].as_array().unwrap();
    assert_eq!(guards.len() as u64, oracle["guards"].as_u64().unwrap());
    for gu in guards {
        let fate = gu["fate"].as_str().unwrap_or("missing");
        assert!(
            ["periodic", "enumeration", "joint", "z3"].contains(&fate),
            "{model}: guard {} is {fate}",
            gu["guard"]
        );
    }
}

fn by_index_of(dims: &[Value], name: &str) -> u64 {
    dims.iter()
        .find(|d| format!("{}_{}", d["input"].as_str().unwrap(), d["index"]) == name)
        .map(|d| d["index"].as_u64().unwrap())
        .unwrap_or_else(|| panic!("no dim {name}"))
}

#[test]
fn conv_attention_accepts_one_pair() {
    matches_oracle("conv_attention");
    let r = check_json("conv_attention");
    let summary = r["linked"][0]["summary"].as_str().unwrap();
    assert!(summary.contains("1 (H, W) pair") || summary.contains("1 pair"), "{summary}");
    assert!(summary.contains("224x224"), "{summary}");
}

#[test]
fn relative_position_matches_brute_force() {
    matches_oracle("relative_position");
}

#[test]
fn patch_grid_matches_brute_force() {
    matches_oracle("patch_grid");
}

#[test]
fn window_attention_matches_brute_force() {
    matches_oracle("window_attention");
}
