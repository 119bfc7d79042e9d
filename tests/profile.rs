//! TensorRT profiles: every corner accepted, and each emitted format parses back to the same
//! shapes (the parsers are written here, independently of the emitters).

use dimguard::solver::DimSet;
use dimguard::trt::emit;
use dimguard::trt::{DimKind, InputSpec, ProfileSet};
use std::io::Write;
use std::process::{Command, Stdio};

type Parsed = Vec<Vec<(String, [Vec<i128>; 3])>>;

fn shape(s: &str) -> Vec<i128> {
    s.split('x').map(|d| d.parse().unwrap()).collect()
}

/// trtexec: `--minShapes=a:1x2,b:3 --optShapes=... --maxShapes=... [--profile=N ...]`.
fn parse_trtexec(s: &str) -> Parsed {
    let mut out: Parsed = vec![];
    for tok in s.split_whitespace() {
        if tok.starts_with("--profile=") {
            continue;
        }
        let (flag, val) = tok.split_once('=').unwrap();
        let which = ["--minShapes", "--optShapes", "--maxShapes"]
            .iter()
            .position(|f| *f == flag)
            .unwrap();
        if which == 0 {
            out.push(vec![]);
        }
        let prof = out.last_mut().unwrap();
        for (i, item) in val.split(',').enumerate() {
            let (name, dims) = item.rsplit_once(':').unwrap();
            let name = name.trim_matches('\'').to_string();
            if which == 0 {
                prof.push((name, [shape(dims), vec![], vec![]]));
            } else {
                assert_eq!(prof[i].0, name);
                prof[i].1[which] = shape(dims);
            }
        }
    }
    out
}

/// Polygraphy: `--trt-min-shapes a:[1,2] b:[3] --trt-opt-shapes ... --trt-max-shapes ...` per profile.
fn parse_polygraphy(s: &str) -> Parsed {
    let mut out: Parsed = vec![];
    let mut which = 0;
    for tok in s.split_whitespace() {
        match tok {
            "--trt-min-shapes" => {
                which = 0;
                out.push(vec![]);
            }
            "--trt-opt-shapes" => which = 1,
            "--trt-max-shapes" => which = 2,
            item => {
                let (name, dims) = item.rsplit_once(':').unwrap();
                let v: Vec<i128> = dims
                    .trim_matches(['[', ']'])
                    .split(',')
                    .map(|d| d.parse().unwrap())
                    .collect();
                let prof = out.last_mut().unwrap();
                match prof.iter_mut().find(|(n, _)| n == name) {
                    Some(e) => e.1[which] = v,
                    None => prof.push((name.to_string(), [v, vec![], vec![]])),
                }
            }
        }
    }
    out
}

fn expected(set: &ProfileSet) -> Parsed {
    set.profiles
        .iter()
        .map(|p| {
            p.inputs
                .iter()
                .map(|(n, t)| (n.clone(), [t.min.clone(), t.opt.clone(), t.max.clone()]))
                .collect()
        })
        .collect()
}

fn raft(k: usize) -> ProfileSet {
    let inputs = vec![
        InputSpec {
            name: "input:0".into(),
            dims: vec![
                DimKind::Static(1),
                DimKind::Static(3),
                DimKind::Dynamic {
                    accepted: DimSet::progression(136, 2120, 64, 8),
                    example: Some(520),
                },
                DimKind::Dynamic {
                    accepted: DimSet::progression(192, 3840, 64, 0),
                    example: Some(960),
                },
            ],
        },
        InputSpec {
            name: "image2".into(),
            dims: vec![
                DimKind::Static(1),
                DimKind::Static(3),
                DimKind::Same("input:0".into(), 2),
                DimKind::Same("input:0".into(), 3),
            ],
        },
    ];
    ProfileSet::build(&inputs, k).unwrap()
}

#[test]
fn trtexec_and_polygraphy_parse_back() {
    for k in [1, 2, 3] {
        let set = raft(k);
        assert_eq!(set.profiles.len(), k * k);
        let t = emit::trtexec(&set);
        assert!(
            t.contains("'input:0':1x3x"),
            "names with ':' are quoted: {t}"
        );
        assert_eq!(t.matches("--profile=").count(), k * k - 1);
        assert_eq!(parse_trtexec(&t), expected(&set));
        assert_eq!(parse_polygraphy(&emit::polygraphy(&set)), expected(&set));
    }
}

#[test]
fn torch_tensorrt_code_is_valid_python() {
    let code = emit::torch_tensorrt(&raft(2));
    let mut child = Command::new("python3")
        .args(["-c", "import ast, sys; ast.parse(sys.stdin.read())"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("python3 is needed for this test");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(code.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "{code}");
    assert_eq!(code.matches("torch_tensorrt.Input(").count(), 8);
}

#[test]
fn json_follows_the_contract() {
    let v = emit::json(&raft(1));
    let p = &v["profiles"][0]["inputs"]["input:0"];
    assert_eq!(p["min"], serde_json::json!([1, 3, 136, 192]));
    assert_eq!(p["opt"], serde_json::json!([1, 3, 520, 960]));
    assert_eq!(p["max"], serde_json::json!([1, 3, 2120, 3840]));
}

fn dimguard(args: &[&str], stdin: Option<&str>) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dimguard"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    if let Some(s) = stdin {
        child.stdin.take().unwrap().write_all(s.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let o = child.wait_with_output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into(),
        String::from_utf8_lossy(&o.stderr).into(),
    )
}

#[test]
fn cli_from_program_message_and_dims() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let program = format!("{dir}/tests/data/pt2/raft_small_torchfix.model.json");
    let (code, out, err) = dimguard(&["profile", &program, "--format", "json"], None);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["profiles"][0]["inputs"]["image1"]["max"],
        serde_json::json!([1, 3, 2120, 3840])
    );
    assert_eq!(
        v["profiles"][0]["inputs"]["image2"],
        v["profiles"][0]["inputs"]["image1"]
    );

    let msg = format!("{dir}/tests/data/messages/resnet18.txt");
    let (code, _, err) = dimguard(&["profile", &msg], None);
    assert_eq!(code, 2);
    assert!(err.contains("--example x:"), "{err}");
    let (code, out, err) = dimguard(&["profile", &msg, "--example", "x:1x3x224x224"], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        "--minShapes=x:1x3x100x100 --optShapes=x:1x3x224x224 --maxShapes=x:1x3x1000x1000"
    );

    let (code, out, _) = dimguard(
        &[
            "profile",
            "--dim",
            "x:2=135..2160",
            "--example",
            "x:1x3x520x960",
            "--format",
            "polygraphy",
        ],
        None,
    );
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "--trt-min-shapes x:[1,3,135,960] --trt-opt-shapes x:[1,3,520,960] --trt-max-shapes x:[1,3,2160,960]");

    let (code, _, err) = dimguard(
        &["profile", &program, "--select", "image1:1x3x530x960"],
        None,
    );
    assert_eq!(code, 3);
    assert!(err.contains("pad by 54 to 584"), "{err}");
    let (code, out, _) = dimguard(
        &[
            "profile",
            &program,
            "--profiles",
            "2",
            "--select",
            "image1:1x3x2120x3840",
            "--select",
            "image2:1x3x2120x3840",
        ],
        None,
    );
    assert_eq!((code, out.trim()), (0, "profile 3"));
}

/// The comparison recorded in docs/PROFILE.md: Torch-TensorRT's rule (min and max from
/// `range_constraints`, opt = int(min + max/2) without an example) against dimguard's profile,
/// for RAFT exported with torch's suggested fix.
#[test]
fn torch_tensorrt_rule_versus_exact_profiles() {
    let h = DimSet::progression(136, 2120, 64, 8); // accepted heights (dimguard check)
    let w = DimSet::progression(192, 3840, 64, 0); // accepted widths
    let rule = |lo: i128, hi: i128| (lo, lo + hi / 2, hi);
    let (hmin, hopt, hmax) = rule(136, 2160);
    let (wmin, wopt, wmax) = rule(136, 3840);
    assert_eq!((hopt, wopt), (1216, 2056));
    let accepted_corners = |s: &DimSet, c: [i128; 3]| c.iter().filter(|v| s.contains(**v)).count();
    assert_eq!(accepted_corners(&h, [hmin, hopt, hmax]), 1); // only 136
    assert_eq!(accepted_corners(&w, [wmin, wopt, wmax]), 1); // only 3840
                                                             // The box admits every integer in range; the program accepts few of them.
    assert_eq!((hmax - hmin + 1, h.clip(hmin, hmax).count()), (2025, 32));
    assert_eq!((wmax - wmin + 1, w.clip(wmin, wmax).count()), (3705, 58));
    let set = raft(1);
    let t = &set.profiles[0].inputs[0].1;
    assert_eq!(accepted_corners(&h, [t.min[2], t.opt[2], t.max[2]]), 3);
    assert_eq!(accepted_corners(&w, [t.min[3], t.opt[3], t.max[3]]), 3);
    assert_eq!(
        (t.max[2] - t.min[2] + 1, h.clip(t.min[2], t.max[2]).count()),
        (1985, 32)
    );
}

/// A program whose (H, W) are linked (`relative_position`, torch 2.15, traced at 32 x 32):
/// its profiles take the box of the joint set that holds the traced sizes (the largest box,
/// 61..64 x 13..16, leaves them out), every corner is a tuple the brute-force oracle (each guard
/// evaluated in Python at every (batch, H, W)) accepts, and each intermediate size's min, max
/// and count are its values over the accepted tuples of the box, enumerated here from the
/// oracle (they read `count 0` and null before).
#[test]
fn a_linked_program_profiles_the_box_of_its_traced_sizes() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let program = format!("{dir}/tests/data/pt2/relative_position.model.json");
    let oracle: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{dir}/tests/data/pt2/relative_position.oracle.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let pairs: std::collections::BTreeSet<(i128, i128)> = oracle["hw_pairs_all"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_i64().unwrap() as i128,
                p[1].as_i64().unwrap() as i128,
            )
        })
        .collect();
    let batches: Vec<i128> = oracle["batch_values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_i64().unwrap() as i128)
        .collect();
    let (code, out, err) = dimguard(&["profile", &program, "--format", "json"], None);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let x = &v["profiles"][0]["inputs"]["x"];
    let get = |k: &str, i: usize| x[k][i].as_i64().unwrap() as i128;
    // The traced 32 x 32 is inside the box, and is the opt.
    assert!(get("min", 2) <= 32 && 32 <= get("max", 2), "{x}");
    assert!(get("min", 3) <= 32 && 32 <= get("max", 3), "{x}");
    assert_eq!((get("opt", 2), get("opt", 3)), (32, 32));
    // Every corner (and every tuple of the box) passes, by the oracle.
    let tuples: Vec<(i128, i128, i128)> = (get("min", 0)..=get("max", 0))
        .flat_map(|b| {
            (get("min", 2)..=get("max", 2))
                .flat_map(move |h| (get("min", 3)..=get("max", 3)).map(move |w| (b, h, w)))
        })
        .collect();
    for (b, h, w) in &tuples {
        assert!(
            batches.contains(b) && pairs.contains(&(*h, *w)),
            "({b}, {h}, {w}) fails"
        );
    }
    // The symbols of batch, H and W, from the program's check.
    let (code, out, err) = dimguard(&["check", &program, "--json"], None);
    assert_eq!(code, 0, "{err}");
    let c: serde_json::Value = serde_json::from_str(&out).unwrap();
    let sym = |i: u64| {
        c["dims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["index"] == i)
            .unwrap()["symbol"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (sb, sh, sw) = (sym(0), sym(2), sym(3));
    let sizes = v["intermediate"].as_array().unwrap();
    assert!(sizes.len() > 30, "{sizes:?}");
    for s in sizes {
        let e = dimguard::solver::parse_expr(s["expr"].as_str().unwrap()).unwrap();
        let vals: std::collections::BTreeSet<i128> = tuples
            .iter()
            .map(|(b, h, w)| {
                let env = |n: &str| {
                    [(&sb, *b), (&sh, *h), (&sw, *w)]
                        .iter()
                        .find(|(k, _)| k.as_str() == n)
                        .map(|(_, v)| *v)
                };
                match e.eval(&env).unwrap() {
                    dimguard::solver::expr::Value::Num(q) => *q.numer(),
                    other => panic!("{other:?}"),
                }
            })
            .collect();
        let n = |k: &str| s[k].as_i64().map(i128::from);
        assert_eq!(
            (n("min"), n("max"), s["count"].as_u64().map(|c| c as usize)),
            (
                vals.first().copied(),
                vals.last().copied(),
                Some(vals.len())
            ),
            "{s}"
        );
    }
}
