//! `dimguard check` on real programs whose sizes are linked by guards (exported by PyTorch 2.15
//! with `tools/export_linked.py`), against the brute-force oracle the same script recorded: every
//! guard of `guards_code` evaluated, as Python, at every (batch, H, W) of the claimed box
//! (`tests/data/pt2/<model>.oracle.json`).

mod common;

use common::{data, json};
use serde_json::Value;
use std::collections::BTreeSet;

fn check_json(model: &str) -> Value {
    check_file(&format!("{model}.model.json"))
}

fn check_file(file: &str) -> Value {
    json(&["check", "--json", &data(&format!("pt2/{file}"))])
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
        &std::fs::read_to_string(data(&format!("pt2/{model}.oracle.json"))).unwrap(),
    )
    .unwrap();
    let r = check_json(model);
    let groups = r["joint"].as_array().expect("linked groups");
    assert_eq!(groups.len(), 1, "{model}");
    let g = &groups[0];
    let names: Vec<&str> = g["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    let with_batch = names.iter().any(|n| n.ends_with("_0"));
    let side_count = |k: &str| {
        let b = &oracle["box"][k];
        let step = b.get(2).and_then(Value::as_u64).unwrap_or(1);
        (b[1].as_u64().unwrap() - b[0].as_u64().unwrap()) / step + 1
    };
    let (claimed, passing) = if with_batch {
        (
            oracle["claimed"].as_u64().unwrap(),
            oracle["passing"].as_u64().unwrap(),
        )
    } else {
        (
            side_count("h") * side_count("w"),
            oracle["hw_pairs"].as_u64().unwrap(),
        )
    };
    assert_eq!(
        oracle["factors"], true,
        "{model}: the oracle's tuples are batch x pairs"
    );
    assert_eq!(g["claimed"].as_u64(), Some(claimed), "{model}");
    assert_eq!(g["accepted"].as_u64(), Some(passing), "{model}");
    assert!(g.get("undecided").is_none(), "{model}");
    let dims = r["dims"].as_array().unwrap();
    let by_index = |i: u64| dims.iter().find(|d| d["index"] == i).unwrap();
    for (i, key) in [(0, "batch_values"), (2, "h_values"), (3, "w_values")] {
        let d = by_index(i);
        let want = ints(&oracle[key]);
        // `with_some_partner` (or `accepted` for a size not linked): the sizes that pass with
        // some value of the sizes linked to them.
        let some = d.get("with_some_partner").unwrap_or(&d["accepted"]);
        assert_eq!(values(some), want, "{model} x[{i}]");
        // `accepted` (the contract): those that pass with every partner.
        assert!(values(&d["accepted"]).is_subset(&want), "{model} x[{i}]");
        // A size that passes with some partner is never listed as rejected.
        for x in ints(&d["rejected_examples"]) {
            assert!(
                !want.contains(&x),
                "{model} x[{i}] rejects {x}, which passes"
            );
        }
    }
    // Rejected tuples really fail, accepted ones really pass (the oracle's pairs).
    let pairs = hw_pairs(&oracle);
    let b_ok = ints(&oracle["batch_values"]);
    let order = level_dims(g, dims);
    let tuple = |t: &Value| -> (i64, i64, i64) {
        let mut b = *b_ok.iter().next().unwrap();
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
        let Some(k) = order.iter().position(|&o| o == i) else {
            // Not linked: any accepted value goes with the box.
            return ints(&oracle[["batch_values", "", "h_values", "w_values"][i as usize]]);
        };
        let s = &lb["sides"][k];
        let (lo, hi, m) = (
            s["lo"].as_i64().unwrap(),
            s["hi"].as_i64().unwrap(),
            s["modulus"].as_i64().unwrap(),
        );
        (lo..=hi).step_by(m as usize).collect()
    };
    let (bs, hs, ws) = (side(0), side(2), side(3));
    let in_box: usize = order
        .iter()
        .map(|&i| match i {
            0 => bs.len(),
            2 => hs.len(),
            _ => ws.len(),
        })
        .product();
    assert_eq!(lb["count"].as_u64().unwrap() as usize, in_box);
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

/// The oracle's passing (H, W) pairs.
fn hw_pairs(oracle: &Value) -> BTreeSet<(i64, i64)> {
    oracle["hw_pairs_all"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p[0].as_i64().unwrap(), p[1].as_i64().unwrap()))
        .collect()
}

/// The input index (0, 2, 3) of each level of a joint set.
fn level_dims(g: &Value, dims: &[Value]) -> Vec<u64> {
    g["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| by_index_of(dims, n.as_str().unwrap()))
        .collect()
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
    let summary = r["joint"][0]["summary"].as_str().unwrap();
    assert_eq!(
        summary,
        "x[2] and x[3] are linked: this program accepts 1 (x[2], x[3]) pair, 224x224: \
         export it static"
    );
    // The corrected spec pins 224x224 and keeps the batch dynamic.
    let code = r["dynamic_shapes"].as_str().unwrap();
    assert!(
        code.contains("x_2 = 224") && code.contains("x_3 = 224"),
        "{code}"
    );
    assert!(code.contains("Dim('x_0', min=1, max=32)"), "{code}");
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

/// torchvision's Swin-T exported with Dim.AUTO (669 guards over batch 2..32, H and W 96..1024:
/// 26.8 million claimed tuples): the answer (the joint set of H and W, the batch's own set),
/// restricted to the oracle's sub-box (batch 2..9, H and W 96..415: 819,200 tuples, every guard
/// evaluated in Python at each), is exactly the oracle's passing tuples.
#[test]
fn swin_t_matches_brute_force_on_a_sub_box() {
    let oracle: Value = serde_json::from_str(
        &std::fs::read_to_string(data("pt2/swin_t_auto.oracle.json")).unwrap(),
    )
    .unwrap();
    let r = check_file("swin_t_auto.pt2");
    let g = &r["joint"][0];
    let dims = r["dims"].as_array().unwrap();
    let order = level_dims(g, dims);
    // The batch is solved apart (issue 41's decomposition): the group is H and W, the batch's
    // answer its own accepted set.
    assert_eq!(g["claimed"].as_u64(), Some(929 * 929));
    assert!(!order.contains(&0), "{order:?}");
    let batch = &dims.iter().find(|d| d["index"] == 0).unwrap()["accepted"];
    assert_eq!(g["boxes_complete"], true);
    assert!(g.get("undecided").is_none());
    // The joint set's tuples inside the sub-box, from its boxes.
    let range = |k: &str| {
        let b = &oracle["box"][k];
        (b[0].as_i64().unwrap(), b[1].as_i64().unwrap())
    };
    let (bb, hb, wb) = (range("batch"), range("h"), range("w"));
    let mut mine: BTreeSet<(i64, i64, i64)> = BTreeSet::new();
    for bx in g["boxes"].as_array().unwrap() {
        let side = |i: u64| -> Vec<i64> {
            let k = order.iter().position(|&o| o == i).unwrap();
            let (lo, hi) = [bb, bb, hb, wb][i as usize];
            values(&bx[k])
                .into_iter()
                .filter(|x| (lo..=hi).contains(x))
                .collect()
        };
        let batches: Vec<i64> = values(batch)
            .into_iter()
            .filter(|x| (bb.0..=bb.1).contains(x))
            .collect();
        for &b in &batches {
            for h in side(2) {
                for w in side(3) {
                    mine.insert((b, h, w));
                }
            }
        }
    }
    let pairs = hw_pairs(&oracle);
    let want: BTreeSet<(i64, i64, i64)> = ints(&oracle["batch_values"])
        .into_iter()
        .flat_map(|b| pairs.iter().map(move |&(h, w)| (b, h, w)))
        .collect();
    assert_eq!(oracle["factors"], true);
    assert_eq!(want.len() as u64, oracle["passing"].as_u64().unwrap());
    assert_eq!(mine, want);
    // Every guard accounted for.
    let guards = r["guards"].as_array().unwrap();
    assert_eq!(guards.len() as u64, oracle["guards"].as_u64().unwrap());
    assert!(
        guards
            .iter()
            .all(|u| ["periodic", "enumeration", "joint", "z3"]
                .contains(&u["fate"].as_str().unwrap()))
    );
}

/// Fuzzing found `check` dropping guards it could not decide (`x // 0 == 1`, `x**2 <= 10000`
/// appended to a real program) and reporting sizes every one of them fails. Every guard is now
/// accounted for, and nothing is accepted that fails one.
#[test]
fn no_guard_is_dropped() {
    let text = std::fs::read_to_string(data("pt2/conv_attention.model.json")).unwrap();
    let mut j: Value = serde_json::from_str(&text).unwrap();
    let guards = j["guards_code"].as_array_mut().unwrap();
    guards.push(Value::from("L['x'].size()[3] ** 2 <= 10000"));
    let dir = std::env::temp_dir().join(format!("dimguard-linked-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("model.json");
    std::fs::write(&path, serde_json::to_string(&j).unwrap()).unwrap();
    let run = |p: &std::path::Path| -> Value { json(&["check", "--json", p.to_str().unwrap()]) };
    // x[3] <= 100: 64 and 96 pass that guard, and no (224, x[3]) pair is left.
    let r = run(&path);
    assert_eq!(r["joint"][0]["accepted"], 0);
    let fates: Vec<&str> = r["guards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["fate"].as_str().unwrap())
        .collect();
    assert_eq!(fates.len(), 12);
    assert!(
        fates
            .iter()
            .all(|f| ["periodic", "enumeration", "joint"].contains(f)),
        "{fates:?}"
    );
    for d in r["dims"].as_array().unwrap() {
        assert_eq!(d["accepted"]["count"], 0, "{d}");
    }
    // A division by zero raises for every size: nothing passes, and the guard is listed.
    let guards = j["guards_code"].as_array_mut().unwrap();
    guards.pop();
    guards.push(Value::from("(L['x'].size()[2] // 0) == 1"));
    std::fs::write(&path, serde_json::to_string(&j).unwrap()).unwrap();
    let r = run(&path);
    assert_eq!(r["joint"][0]["accepted"], 0);
    let last = r["guards"].as_array().unwrap().last().unwrap().clone();
    assert!(
        ["periodic", "enumeration"].contains(&last["fate"].as_str().unwrap()),
        "{last}"
    );
    for d in r["dims"].as_array().unwrap() {
        assert!(d["accepted"].is_object(), "no bare null: {d}");
        assert!(d["index"] == 0 || d["accepted"]["count"] == 0, "{d}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn diagnose_gives_a_box_through_the_traced_sizes_when_the_largest_leaves_them_out() {
    use dimguard::commands::diagnose::{diagnose_text, Options};
    let g = "(L['x'].size()[2] * L['x'].size()[3]) <= 1024";
    let text = format!(
        "  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 64 satisfy the generated guard {g}.\n  - Not all values of w = L['x'].size()[3] in the specified range 2 <= w <= 64 satisfy the generated guard {g}.\n"
    );
    let traced = [("h", 50), ("w", 10)];
    let opts = Options {
        examples: traced
            .iter()
            .map(|(n, v)| (Some(n.to_string()), *v))
            .collect(),
        ..Options::default()
    };
    let r = diagnose_text(&text, &opts).unwrap();
    let side = |name: &str| {
        let d = r.dims.iter().find(|d| d.name == name).unwrap();
        let s = d
            .answer
            .sides
            .example_box_side
            .as_ref()
            .expect("a box through the traced sizes");
        assert!(r.dynamic_shapes.contains(&s.code), "{}", r.dynamic_shapes);
        s.progression()
    };
    // The largest box leaves the traced pair out (else no other box is needed).
    let in_largest = traced.iter().all(|(n, v)| {
        let d = r.dims.iter().find(|d| d.name == *n).unwrap();
        d.answer
            .sides
            .box_side
            .as_ref()
            .unwrap()
            .progression()
            .contains(*v)
    });
    assert!(!in_largest);
    let (h, w) = (side("h"), side("w"));
    // The box holds the traced sizes, and every pair of it passes the guard (brute force).
    assert!(h.contains(50) && w.contains(10));
    let hs: Vec<i128> = (h.lo..=h.hi).filter(|x| h.contains(*x)).collect();
    let ws: Vec<i128> = (w.lo..=w.hi).filter(|x| w.contains(*x)).collect();
    for a in &hs {
        for b in &ws {
            assert!(a * b <= 1024, "({a}, {b}) is in the box but fails");
        }
    }
    // Without traced sizes: the largest box, no box through them.
    let plain = diagnose_text(&text, &Options::default()).unwrap();
    assert!(plain
        .dims
        .iter()
        .all(|d| d.answer.sides.example_box_side.is_none()));
}
