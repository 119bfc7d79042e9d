//! TensorRT profiles: every corner accepted, and each emitted format parses back to the same
//! shapes (the parsers are written here, independently of the emitters).

mod common;

use common::run;
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

#[test]
fn cli_from_program_message_and_dims() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let program = format!("{dir}/tests/data/pt2/raft_small_torchfix.model.json");
    let (code, out, err) = run(&["profile", &program, "--format", "json"], None);
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
    let (code, _, err) = run(&["profile", &msg], None);
    assert_eq!(code, 2);
    assert!(err.contains("--example x:"), "{err}");
    let (code, out, err) = run(&["profile", &msg, "--example", "x:1x3x224x224"], None);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        "--minShapes=x:1x3x100x100 --optShapes=x:1x3x224x224 --maxShapes=x:1x3x1000x1000"
    );

    let (code, out, _) = run(
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

    let (code, _, err) = run(
        &["profile", &program, "--select", "image1:1x3x530x960"],
        None,
    );
    assert_eq!(code, 3);
    assert!(err.contains("pad by 54 to 584"), "{err}");
    let (code, out, _) = run(
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
    let (code, out, err) = run(&["profile", &program, "--format", "json"], None);
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
    let (code, out, err) = run(&["check", &program, "--json"], None);
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

/// Shapes by input name.
type Shapes = std::collections::BTreeMap<String, Vec<i128>>;

/// An unbounded program's profile (`dimguard profile NAME.pt2 --format json`), its guards
/// (`guards_code`, parsed here), and each dynamic input size's symbol and traced value, read
/// from the program with the library (not from the profile).
struct Unbounded {
    profile: serde_json::Value,
    guards: Vec<dimguard::solver::Expr>,
    /// `(input, index) -> (symbol, traced)`.
    sizes: std::collections::BTreeMap<(String, usize), (String, i128)>,
}

fn unbounded(name: &str, extra: &[&str]) -> Unbounded {
    use dimguard::graph::program::Size;
    let dir = env!("CARGO_MANIFEST_DIR");
    let path = format!("{dir}/tests/data/pt2/{name}");
    let (code, out, err) = run(
        &[&["profile", &path, "--format", "json"], extra].concat(),
        None,
    );
    assert_eq!(code, 0, "{err}");
    let p = dimguard::graph::load(path.as_ref()).unwrap();
    let guards = p
        .guards_code
        .iter()
        .map(|g| dimguard::solver::parse_guard(g).unwrap())
        .collect();
    let mut sizes = std::collections::BTreeMap::new();
    for input in p.user_inputs() {
        for (i, s) in p.sizes(&input).unwrap().unwrap().iter().enumerate() {
            if let Size::Expr(e, Some(t)) = s {
                assert_eq!(e.atoms().len(), 1, "{e}");
                sizes.insert((input.clone(), i), (e.to_string(), *t));
            }
        }
    }
    Unbounded {
        profile: serde_json::from_str(&out).unwrap(),
        guards,
        sizes,
    }
}

impl Unbounded {
    /// Whether every guard holds at the shapes `shape(input)` (each guard evaluated).
    fn passes(&self, shape: &dyn Fn(&str) -> Vec<i128>) -> bool {
        let env = |source: &str| {
            let (input, index) = dimguard::solver::python::source_input(source)?;
            shape(&input).get(index).copied()
        };
        self.guards.iter().all(|g| g.truth(&env) == Ok(true))
    }

    /// A corner (`min`, `opt`, `max`) of profile `k`, by input.
    fn corner(&self, k: usize, which: &str) -> Shapes {
        self.profile["profiles"][k]["inputs"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(n, t)| {
                let v = t[which]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_i64().unwrap() as i128)
                    .collect();
                (n.clone(), v)
            })
            .collect()
    }

    /// Every corner of every profile passes every guard, holds no size past 2^62, and the
    /// `opt` corner is the traced shape.
    fn corners_pass(&self) {
        let n = self.profile["profiles"].as_array().unwrap().len();
        assert!(n >= 1);
        for k in 0..n {
            for which in ["min", "opt", "max"] {
                let c = self.corner(k, which);
                assert!(
                    self.passes(&|i| c[i].clone()),
                    "profile {k} {which} {c:?} fails a guard"
                );
                assert!(c.values().flatten().all(|&v| v < 1 << 62), "{c:?}");
            }
            let opt = self.corner(k, "opt");
            for ((input, i), (_, t)) in &self.sizes {
                assert_eq!(opt[input][*i], *t, "{input}[{i}]");
            }
        }
    }

    /// The value of `expr` with the input sizes `shape`.
    fn eval(&self, expr: &str, shape: &dyn Fn(&str) -> Vec<i128>) -> i128 {
        let e = dimguard::solver::parse_expr(expr).unwrap();
        let env = |s: &str| {
            self.sizes
                .iter()
                .find(|(_, (sym, _))| sym == s)
                .map(|((input, i), _)| shape(input)[*i])
        };
        match e.eval(&env).unwrap() {
            dimguard::solver::expr::Value::Num(q) => *q.numer(),
            other => panic!("{expr}: {other:?}"),
        }
    }

    /// The intermediate sizes: present, finite, and at every shape of `accepted` (each passes
    /// every guard) between their `min` and `max`; an exact entry over one symbol has the
    /// `min`, `max` and `count` of its values at `line` (shapes varying that size alone; none:
    /// not checked).
    fn intermediate_holds(&self, accepted: &[Shapes], line: &dyn Fn(&str) -> Vec<Shapes>) {
        let sizes = self.profile["intermediate"].as_array().unwrap();
        assert!(sizes.len() >= 10, "{sizes:?}");
        for s in sizes {
            let expr = s["expr"].as_str().unwrap();
            let (lo, hi) = (
                s["min"].as_i64().expect("finite min") as i128,
                s["max"].as_i64().expect("finite max") as i128,
            );
            for shape in accepted {
                let v = self.eval(expr, &|i| shape[i].clone());
                assert!(lo <= v && v <= hi, "{s}: {v} at {shape:?}");
            }
            let atoms = dimguard::solver::parse_expr(expr).unwrap().atoms();
            let along = if s["exact"] == true && atoms.len() == 1 {
                line(atoms.iter().next().unwrap().as_ref())
            } else {
                vec![]
            };
            if !along.is_empty() {
                let vals: std::collections::BTreeSet<i128> = along
                    .iter()
                    .map(|shape| self.eval(expr, &|i| shape[i].clone()))
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
    }
}

/// Two inputs tied after a stride-4 stem (`(h1-1)//4 == (h2-1)//4`), exported with `Dim.AUTO`
/// and no bounds (torch 2.15): the group is decided in closed form as a tied set, which no box
/// of accepted sizes holds (it exited 2, "no size passes", before). The profile takes the tied
/// choice (image2's H and W equal image1's), a finite max chosen for the unbounded sizes and
/// said so (`chosen`), every corner passes every guard, and so does every diagonal shape
/// (image2 = image1) of the box, evaluated guard by guard; intermediate sizes are finite and
/// exact.
#[test]
fn a_tied_unbounded_program_profiles_its_tied_choice() {
    let u = unbounded("two_stem_unbounded.pt2", &[]);
    u.corners_pass();
    let (min, max) = (u.corner(0, "min"), u.corner(0, "max"));
    for which in ["min", "opt", "max"] {
        let c = u.corner(0, which);
        assert_eq!(c["image1"][2..], c["image2"][2..], "{which}: {c:?}");
    }
    // Finite, chosen, and said so: a multiple of the traced size at most.
    let chosen = u.profile["chosen"].as_array().unwrap();
    assert_eq!(chosen.len(), 2, "{chosen:?}");
    for c in chosen {
        assert_eq!(c["input"], "image1");
        let i = c["index"].as_u64().unwrap() as usize;
        let traced = u.sizes[&("image1".to_string(), i)].1;
        assert_eq!(c["max"].as_i64().unwrap() as i128, max["image1"][i]);
        assert!(max["image1"][i] <= 8 * traced && max["image1"][i] >= traced);
        assert!(c["note"].as_str().unwrap().contains("was chosen"), "{c}");
    }
    // Every diagonal shape of the box (H, W each at 24 points spread over their range, and at
    // both ends) passes.
    let spread = |lo: i128, hi: i128| -> Vec<i128> {
        let mut v: Vec<i128> = (0..24).map(|k| lo + (hi - lo) * k / 23).collect();
        v.extend([lo + 1, hi - 1]);
        v
    };
    let shape = |h: i128, w: i128| {
        let s = vec![1, 3, h, w];
        std::collections::BTreeMap::from([("image1".to_string(), s.clone()), ("image2".into(), s)])
    };
    let mut accepted = vec![];
    for h in spread(min["image1"][2], max["image1"][2]) {
        for w in spread(min["image1"][3], max["image1"][3]) {
            let s = shape(h, w);
            assert!(u.passes(&|i| s[i].clone()), "{s:?}");
            accepted.push(s);
        }
    }
    // A shape that leaves the tie (image2 one block past image1) fails: the guards bite.
    let off = {
        let mut s = shape(64, 96);
        s.get_mut("image2").unwrap()[2] = 68;
        s
    };
    assert!(!u.passes(&|i| off[i].clone()));
    let line = |sym: &str| -> Vec<Shapes> {
        let ((_, i), _) = u.sizes.iter().find(|(_, (s, _))| s == sym).unwrap();
        (min["image1"][*i]..=max["image1"][*i])
            .map(|v| {
                let mut s = shape(64, 96);
                for x in s.values_mut() {
                    x[*i] = v;
                }
                s
            })
            .collect()
    };
    u.intermediate_holds(&accepted, &line);
    assert!(u.profile["intermediate"]
        .as_array()
        .unwrap()
        .iter()
        .all(|s| s["exact"] == true));
}

/// The Swin-style window attention exported with `Dim.AUTO` (batch, H and W claimed up to
/// 2^63 - 1; H and W accepted in residues 0..3 mod 28 from 56 on): the profile holds the traced
/// 2 x 3 x 224 x 224, a finite max chosen for each size and said so, every corner passes every
/// guard; intermediate sizes (0 entries before, each over more than 2^20 tuples) come from the
/// chosen box: each is finite, holds the values at accepted shapes spread over the box (guards
/// evaluated one by one), and one of a single size is exact. `--dim` narrows a size inside
/// what the program accepts and is not re-chosen.
#[test]
fn an_unbounded_linked_program_profiles_a_finite_box_with_its_intermediate_sizes() {
    let u = unbounded("window7_unbounded.pt2", &[]);
    u.corners_pass();
    let (min, max) = (&u.corner(0, "min")["x"], &u.corner(0, "max")["x"]);
    let chosen = u.profile["chosen"].as_array().unwrap();
    assert_eq!(chosen.len(), 3, "{chosen:?}");
    for i in [0, 2, 3] {
        let traced = u.sizes[&("x".to_string(), i)].1;
        assert!(traced <= max[i] && max[i] <= 8 * traced, "{max:?}");
    }
    // The accepted values of each size inside the box: every guard evaluated with the others
    // at their traced sizes.
    let traced = |i: usize| u.sizes[&("x".to_string(), i)].1;
    let base = vec![traced(0), 3, traced(2), traced(3)];
    let at = |i: usize, v: i128| {
        let mut s = base.clone();
        s[i] = v;
        std::collections::BTreeMap::from([("x".to_string(), s)])
    };
    let side = |i: usize| -> Vec<i128> {
        (min[i]..=max[i])
            .filter(|&v| u.passes(&|_| at(i, v)["x"].clone()))
            .collect()
    };
    let (b, h, w) = (side(0), side(2), side(3));
    assert_eq!((b.first(), b.last()), (Some(&min[0]), Some(&max[0])));
    assert_eq!((h.first(), h.last()), (Some(&min[2]), Some(&max[2])));
    assert!(h.len() > 100 && h.iter().all(|v| v % 28 < 4), "{h:?}");
    // Shapes spread over the box (ends included) pass every guard together.
    let pick = |v: &Vec<i128>| -> Vec<i128> {
        let mut p: Vec<i128> = (0..9).map(|k| v[(v.len() - 1) * k / 8]).collect();
        p.dedup();
        p
    };
    let mut accepted = vec![];
    for &bb in &pick(&b) {
        for &hh in &pick(&h) {
            for &ww in &pick(&w) {
                let s = std::collections::BTreeMap::from([("x".to_string(), vec![bb, 3, hh, ww])]);
                assert!(u.passes(&|_| s["x"].clone()), "{s:?}");
                accepted.push(s);
            }
        }
    }
    let line = |sym: &str| -> Vec<Shapes> {
        let ((_, i), _) = u.sizes.iter().find(|(_, (s, _))| s == sym).unwrap();
        [&b, &h, &h, &w][*i].iter().map(|&v| at(*i, v)).collect()
    };
    u.intermediate_holds(&accepted, &line);
    let sizes = u.profile["intermediate"].as_array().unwrap();
    assert!(sizes.iter().any(|s| s["exact"] == true));
    assert!(sizes.iter().any(|s| s["exact"] == false));

    // --dim: H inside 56..300, as the program accepts it; the others still chosen.
    let n = unbounded("window7_unbounded.pt2", &["--dim", "x:2=60..300"]);
    n.corners_pass();
    let (lo, hi) = (n.corner(0, "min")["x"][2], n.corner(0, "max")["x"][2]);
    assert_eq!((lo, hi), (84, 283), "the accepted ends inside 60..300");
    assert_eq!(n.profile["chosen"].as_array().unwrap().len(), 2);
}

/// `profiles::build` re-checks every corner against the program's guards: a set of sizes that
/// does not match the guards (here by hand: 50..200 against `H <= 100`) is an error naming the
/// corner and the guard, never a printed profile.
#[test]
fn a_corner_that_fails_a_guard_is_an_error() {
    let inputs = dimguard::commands::profile::Inputs {
        specs: vec![InputSpec {
            name: "x".into(),
            dims: vec![
                DimKind::Static(1),
                DimKind::Dynamic {
                    accepted: DimSet::interval(50, 200),
                    example: Some(64),
                },
            ],
        }],
        intermediate: None,
        chosen: vec![],
        guards: vec![dimguard::solver::parse_guard("L['x'].size()[1] <= 100").unwrap()],
    };
    let err = dimguard::commands::profile::build(&inputs, 1, None)
        .unwrap_err()
        .to_string();
    assert!(err.contains("max") && err.contains("x:1x200"), "{err}");
    let fine = dimguard::commands::profile::Inputs {
        guards: vec![dimguard::solver::parse_guard("L['x'].size()[1] <= 200").unwrap()],
        ..inputs
    };
    assert!(dimguard::commands::profile::build(&fine, 1, None).is_ok());
}

/// A 16x16 patch grid exported with `Dim.AUTO`: its group needs Z3 (the whole box is too wide
/// to enumerate), which `profile` now asks as `check` does (it exited 2, "decided for part of
/// the sizes only", before). Every corner passes every guard; intermediate sizes are finite and
/// hold the values at the corners.
#[test]
fn an_unbounded_patch_grid_profiles_as_check_decides_it() {
    let u = unbounded("patch16_unbounded.pt2", &[]);
    u.corners_pass();
    assert_eq!(u.profile["chosen"].as_array().unwrap().len(), 3);
    let corners: Vec<Shapes> = ["min", "opt", "max"]
        .iter()
        .map(|w| u.corner(0, w))
        .collect();
    u.intermediate_holds(&corners, &|_| vec![]);
}

/// `--select` past a `max` dimguard chose: a size the program accepts is said as such (it was
/// "not a size the program accepts; the largest accepted size is 1792" before), and for one it
/// rejects, the nearest accepted sizes come from everything the program accepts: each checked
/// here against every guard (they pass, and every size between them fails).
#[test]
fn select_past_a_chosen_max_says_what_the_program_accepts() {
    let u = unbounded("window7_unbounded.pt2", &[]);
    let path = format!(
        "{}/tests/data/pt2/window7_unbounded.pt2",
        env!("CARGO_MANIFEST_DIR")
    );
    let at = |h: i128| vec![2, 3, h, 224];
    let max = u.corner(0, "max")["x"][2];
    for h in [max + 1, max + 3, max + 4, max + 20, 2800, 2805, 100_000] {
        let (code, _, err) = run(
            &["profile", &path, "--select", &format!("x:2x3x{h}x224")],
            None,
        );
        assert_eq!(code, 3, "{err}");
        if u.passes(&|_| at(h)) {
            assert!(
                err.contains(&format!("= {h} is a size the program accepts, but")),
                "{err}"
            );
            assert!(err.contains("--dim x:2=LO..HI"), "{err}");
            continue;
        }
        let num = |key: &str| -> i128 {
            let i = err.find(key).unwrap_or_else(|| panic!("{key}: {err}"));
            let head = err[..i].trim_end();
            head[head.rfind(' ').unwrap() + 1..].parse().unwrap()
        };
        let (below, above) = (num(" below"), num(" above"));
        assert!(
            u.passes(&|_| at(below)) && u.passes(&|_| at(above)),
            "{err}"
        );
        assert!((below + 1..above).all(|v| !u.passes(&|_| at(v))), "{err}");
        assert!(
            err.contains(&format!("{above} is past the max {max} chosen")),
            "{err}"
        );
    }
}

/// The two stems traced with image2 smaller than image1 inside one stride-4 block (64 x 96 and
/// 62 x 95; made by tools/export_profile_offset.py): the tied spec writes image2 at the traced
/// offset (`image2_2 = image1_2 - 2`), and so does the profile: at every corner image2's H and W
/// sit at that offset from image1's, every corner passes every guard, and each corner the
/// program was run at (`two_stem_offset_unbounded.runs.json`, H1 in 5..24, H2 in 3..26) ran.
#[test]
fn a_tied_program_traced_at_an_offset_profiles_at_that_offset() {
    let u = unbounded("two_stem_offset_unbounded.pt2", &[]);
    u.corners_pass();
    let t = |input: &str, i: usize| u.sizes[&(input.to_string(), i)].1;
    let delta = [
        0,
        0,
        t("image2", 2) - t("image1", 2),
        t("image2", 3) - t("image1", 3),
    ];
    assert_eq!((delta[2], delta[3]), (-2, -1));
    let runs: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!(
            "{}/tests/data/pt2/two_stem_offset_unbounded.runs.json",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap(),
    )
    .unwrap();
    let ran = |h1: i128, h2: i128| {
        runs["runs"].as_array().unwrap().iter().find_map(|r| {
            (r[0].as_i64()? as i128 == h1 && r[1].as_i64()? as i128 == h2).then(|| r[2] == true)
        })
    };
    let mut checked_by_runs = 0;
    for which in ["min", "opt", "max"] {
        let c = u.corner(0, which);
        for i in [2, 3] {
            assert_eq!(c["image2"][i] - c["image1"][i], delta[i], "{which}: {c:?}");
        }
        if let Some(ok) = ran(c["image1"][2], c["image2"][2]) {
            assert!(ok, "{which} {c:?} did not run");
            checked_by_runs += 1;
        }
    }
    assert!(checked_by_runs >= 1, "the min corner lies in the runs");
    let chosen = u.profile["chosen"].as_array().unwrap();
    assert!(chosen.iter().all(|c| c["input"] == "image1") && chosen.len() == 2);
    // Intermediate sizes: finite, and exact ones equal to their values along each size, over
    // what the profile serves: image1's side of the check's tied spec (`shared_side`, here
    // multiples of 4: its tied choice), image2 at the offset, each shape passing every guard.
    let path = format!(
        "{}/tests/data/pt2/two_stem_offset_unbounded.pt2",
        env!("CARGO_MANIFEST_DIR")
    );
    let (code, out, err) = run(&["check", &path, "--json"], None);
    assert_eq!(code, 0, "{err}");
    let check: serde_json::Value = serde_json::from_str(&out).unwrap();
    let spec = |i: usize| {
        let d = check["dims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["input"] == "image1" && d["index"] == i as u64)
            .unwrap();
        let n = |k: &str| d["shared_side"][k].as_i64().unwrap() as i128;
        (n("modulus"), n("residue"))
    };
    let (min, max) = (u.corner(0, "min"), u.corner(0, "max"));
    let at = |i: usize, v: i128| {
        let mut s = u.corner(0, "opt");
        s.get_mut("image1").unwrap()[i] = v;
        s.get_mut("image2").unwrap()[i] = v + delta[i];
        s
    };
    let line = |sym: &str| -> Vec<Shapes> {
        let ((_, i), _) = u.sizes.iter().find(|(_, (s, _))| s == sym).unwrap();
        let (m, r) = spec(*i);
        (min["image1"][*i]..=max["image1"][*i])
            .filter(|v| v.rem_euclid(m) == r)
            .map(|v| at(*i, v))
            .inspect(|s| assert!(u.passes(&|n| s[n].clone()), "{s:?}"))
            .collect()
    };
    let corners: Vec<Shapes> = ["min", "opt", "max"]
        .iter()
        .map(|w| u.corner(0, w))
        .collect();
    u.intermediate_holds(&corners, &line);
}
