//! `.pt2` programs: reading, shape propagation against recorded sizes, and `check` against brute
//! force over the claimed sizes.

use dimguard::commands::check::check;
use dimguard::graph::{load, Error, ProgramGraph};
use dimguard::solver::parse_guard;
use dimguard::solver::Expr;
use std::collections::BTreeMap;
use std::io::Write;

mod common;
use common::program;

const ALL: [&str; 7] = [
    "linear_testmod",
    "unetish_exact",
    "resnet18_auto",
    "mobilenet_v3_small_dims",
    "raft_small_torchfix",
    "densenet121_auto",
    "mobilenet_v2_auto",
];

#[test]
fn propagated_shapes_equal_recorded_shapes() {
    for name in ALL {
        let p = load(&program(name)).unwrap();
        let g = ProgramGraph::build(&p).unwrap();
        let r = &g.report;
        assert!(r.disagreements.is_empty(), "{name}: {:?}", r.disagreements);
        assert!(
            r.unchecked.is_empty(),
            "{name}: no shape function for {:?}",
            r.unchecked
        );
        assert_eq!(r.checked, p.graph_module.graph.nodes.len(), "{name}");
        assert_eq!(
            g.topological().len(),
            g.graph.node_count(),
            "{name}: acyclic"
        );
        let dot = g.dot();
        assert!(
            dot.starts_with("digraph program {") && dot.contains("->"),
            "{name}"
        );
    }
}

fn holds(g: &Expr, env: &BTreeMap<String, i128>) -> bool {
    matches!(
        g.eval(&|a| env.get(a).copied()),
        Ok(dimguard::solver::expr::Value::Bool(true))
    )
}

/// Brute force of `check`'s semantics on two linked sizes: each size's own guards over its claimed
/// sizes, then a size is accepted when the linking guards hold for every own-accepted value of
/// the other. `same` maps sizes that guards make equal to the size standing for them.
fn brute_two(
    guards: &[Expr],
    a: (&str, Vec<i128>),
    b: (&str, Vec<i128>),
    same: &[(&str, &str)],
) -> (Vec<i128>, Vec<i128>) {
    let env_of = |x: i128, y: i128| {
        let mut env = BTreeMap::from([(a.0.to_string(), x), (b.0.to_string(), y)]);
        for (alias, of) in same {
            let v = env[*of];
            env.insert(alias.to_string(), v);
        }
        env
    };
    let own = |which: usize, v: i128| {
        guards
            .iter()
            .filter(|g| {
                let atoms: Vec<String> = g.atoms().iter().map(|s| s.to_string()).collect();
                let sizes: Vec<&str> = atoms
                    .iter()
                    .map(|s| {
                        same.iter()
                            .find(|(al, _)| al == s)
                            .map_or(s.as_str(), |(_, of)| *of)
                    })
                    .collect();
                sizes.iter().all(|s| *s == [a.0, b.0][which])
            })
            .all(|g| {
                let env = if which == 0 {
                    env_of(v, b.1[0])
                } else {
                    env_of(a.1[0], v)
                };
                holds(g, &env)
            })
    };
    let sa: Vec<i128> = a.1.iter().copied().filter(|&v| own(0, v)).collect();
    let sb: Vec<i128> = b.1.iter().copied().filter(|&v| own(1, v)).collect();
    let all_hold = |x: i128, y: i128| guards.iter().all(|g| holds(g, &env_of(x, y)));
    let acc_a = sa
        .iter()
        .copied()
        .filter(|&x| sb.iter().all(|&y| all_hold(x, y)))
        .collect();
    let acc_b = sb
        .iter()
        .copied()
        .filter(|&y| sa.iter().all(|&x| all_hold(x, y)))
        .collect();
    (acc_a, acc_b)
}

/// A fixture program's `check` report (shapes propagated through its graph when `graph`) and its
/// guards, parsed.
fn checked(name: &str, graph: bool) -> (dimguard::graph::CheckReport, Vec<Expr>) {
    let p = load(&program(name)).unwrap();
    let r = check(&p, graph).unwrap();
    let guards = p
        .guards_code
        .iter()
        .map(|g| parse_guard(g).unwrap())
        .collect();
    (r, guards)
}

/// `check`'s accepted sizes of `input`'s dimensions 2 and 3 are the brute force's (`h`, `w`).
fn assert_accepts(r: &dimguard::graph::CheckReport, input: &str, (h, w): (&[i128], &[i128])) {
    assert_eq!(accepted_values(r, input, 2), h, "{input} 2");
    assert_eq!(accepted_values(r, input, 3), w, "{input} 3");
}

fn accepted_values(r: &dimguard::graph::CheckReport, input: &str, index: usize) -> Vec<i128> {
    let d = r
        .dims
        .iter()
        .find(|d| d.input == input && d.index == index)
        .unwrap();
    let f = d.answer.accepted.as_ref().unwrap();
    let set = dimguard::solver::DimSet::from_segments(f.segments.clone()).unwrap();
    set.iter().collect()
}

#[test]
fn raft_torch_fix_program_check_equals_brute_force() {
    let (r, guards) = checked("raft_small_torchfix", false);
    let h = "L['image1'].size()[2]";
    let w = "L['image1'].size()[3]";
    let same = [("L['image2'].size()[2]", h), ("L['image2'].size()[3]", w)];
    let hs: Vec<i128> = (17..=270).map(|k| 8 * k).collect();
    let ws: Vec<i128> = (17..=480).map(|k| 8 * k).collect();
    let (acc_h, acc_w) = brute_two(&guards, (h, hs), (w, ws), &same);
    assert_accepts(&r, "image1", (&acc_h, &acc_w));
    assert_accepts(&r, "image2", (&acc_h, &acc_w));
    // The brief's numbers: claims 254 heights, accepts 32; 222 raise Guard failed.
    let d = r
        .dims
        .iter()
        .find(|d| d.input == "image1" && d.index == 2)
        .unwrap();
    assert_eq!(
        (d.claimed.count, d.answer.accepted.as_ref().unwrap().count),
        (254, 32)
    );
    assert_eq!(d.rejected_examples[..3], [144, 152, 160]);
    assert!(
        r.dynamic_shapes
            .contains("\"image2\": {2: image1_2, 3: image1_3}"),
        "{}",
        r.dynamic_shapes
    );
}

#[test]
fn unetish_check_equals_brute_force() {
    let (r, guards) = checked("unetish_exact", true);
    let claimed: Vec<i128> = (50..=100).map(|k| 4 * k).collect();
    let (acc_h, acc_w) = brute_two(
        &guards,
        ("L['x'].size()[2]", claimed.clone()),
        ("L['x'].size()[3]", claimed),
        &[],
    );
    assert_accepts(&r, "x", (&acc_h, &acc_w));
    // Intermediate sizes: conv2d(stride 2, pad 1) of 4*s16 has exactly the values 2*s16.
    let conv = r
        .sizes
        .iter()
        .find(|s| s.tensor == "conv2d" && s.index == 2)
        .unwrap();
    let v = conv.values.as_ref().unwrap();
    assert_eq!((v.count, v.min, v.max), (51, Some(100), Some(200)));
}

#[test]
fn programs_without_guards_accept_what_they_claim() {
    for name in ["linear_testmod", "mobilenet_v3_small_dims"] {
        let r = check(&load(&program(name)).unwrap(), false).unwrap();
        for d in &r.dims {
            assert_eq!(
                d.answer.accepted.as_ref().unwrap().count,
                d.claimed.count,
                "{name} {}",
                d.source
            );
        }
    }
}

#[test]
fn archives_are_found_by_content_and_bad_files_are_clear_errors() {
    let dir = std::env::temp_dir().join(format!("dimguard-pt2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = std::fs::read(program("unetish_exact")).unwrap();
    let pt2 = dir.join("model.pt2");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&pt2).unwrap());
    let opts =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("unetish/version", opts).unwrap();
    zip.write_all(b"1").unwrap();
    zip.start_file("unetish/models/other.json", opts).unwrap();
    zip.write_all(b"{\"not\": \"a program\"}").unwrap();
    zip.start_file("unetish/models/unetish.json", opts).unwrap();
    zip.write_all(&json).unwrap();
    zip.finish().unwrap();
    let p = load(&pt2).unwrap();
    assert_eq!(p.guards_code.len(), 5);

    let empty = dir.join("empty.pt2");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&empty).unwrap());
    zip.start_file("a.txt", opts).unwrap();
    zip.finish().unwrap();
    assert!(matches!(load(&empty), Err(Error::NoProgram { .. })));

    let bad = dir.join("bad.json");
    std::fs::write(&bad, "{\"hello\": 1}").unwrap();
    let e = load(&bad).unwrap_err();
    assert!(matches!(e, Error::NotAProgram { .. }), "{e}");
    assert!(e.to_string().contains("not an exported program"));
    assert!(matches!(
        load(&dir.join("missing.pt2")),
        Err(Error::Read { .. })
    ));
}

#[test]
fn missing_metadata_is_filled_in() {
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(program("unetish_exact")).unwrap()).unwrap();
    let tv = v["graph_module"]["graph"]["tensor_values"]
        .as_object_mut()
        .unwrap();
    let recorded = tv.remove("conv2d_1").unwrap();
    let path = std::env::temp_dir().join(format!("dimguard-filled-{}.json", std::process::id()));
    std::fs::write(&path, serde_json::to_vec(&v).unwrap()).unwrap();
    let p = load(&path).unwrap();
    let g = ProgramGraph::build(&p).unwrap();
    assert_eq!(g.report.filled, vec!["conv2d_1".to_string()]);
    assert!(
        g.report.disagreements.is_empty(),
        "{:?}",
        g.report.disagreements
    );
    // The filled sizes agree with what torch had recorded.
    let want: Vec<dimguard::graph::program::Size> = recorded["sizes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| dimguard::graph::program::size(s, "conv2d_1").unwrap())
        .collect();
    let got = &g.sizes["conv2d_1"];
    let ranges = dimguard::graph::graph::symbol_ranges(&p);
    for (w, e) in want.iter().zip(got) {
        assert!(dimguard::graph::graph::agree(&w.expr(), e, &ranges, &BTreeMap::new()).is_ok());
    }
}

/// A size related to another by `b == a + c` is printed as a derived dim with its sign
/// (`x_0 - 1`, `x_0 + 2`), never `1*x_0 + -1` (the printing bug `check` had before `python.rs`).
#[test]
fn related_sizes_print_as_derived_dims_with_signs() {
    for (guard, derived) in [
        ("L['x'].size()[1] == L['x'].size()[0] - 1", "1: x_0 - 1"),
        ("L['x'].size()[1] == L['x'].size()[0] + 2", "1: x_0 + 2"),
        ("L['x'].size()[1] == 2*L['x'].size()[0] - 1", "1: 2*x_0 - 1"),
    ] {
        let mut p = load(&program("linear_testmod")).unwrap();
        p.guards_code = vec![guard.to_string()];
        let r = check(&p, false).unwrap();
        let last = r.dynamic_shapes.lines().last().unwrap();
        assert!(
            last.starts_with("dynamic_shapes = ") && last.contains(derived),
            "{guard}: {last}"
        );
        assert!(!r.dynamic_shapes.contains("1*x") && !r.dynamic_shapes.contains("+ -"));
    }
}

/// Two inputs with the same symbolic sizes (`8*s16`) are one size: their equality guards
/// (`f(image1 h) == f(image2 h)`) must not make every size fail "for every size of the other".
/// Program exported by PyTorch 2.15 from python/tests/models.py's FlowNet with shared `8*_h`,
/// `8*_w`.
#[test]
fn inputs_sharing_a_symbol_are_one_size() {
    let (r, guards) = checked("flownet_shared_hw", false);
    let h = "L['image1'].size()[2]";
    let w = "L['image1'].size()[3]";
    let same = [("L['image2'].size()[2]", h), ("L['image2'].size()[3]", w)];
    let sizes: Vec<i128> = (4..=64).map(|k| 8 * k).collect();
    let (acc_h, acc_w) = brute_two(&guards, (h, sizes.clone()), (w, sizes.clone()), &same);
    assert_eq!(acc_h, sizes, "brute force: every claimed height passes");
    assert_accepts(&r, "image1", (&acc_h, &acc_w));
    assert_accepts(&r, "image2", (&acc_h, &acc_w));
}

/// A malformed program (found by fuzzing: a rank-0 `linear` weight) is a clear error naming the
/// node, never a panic (the CLI's exit code for it is tested in the root `tests/cli.rs`).
#[test]
fn a_malformed_node_is_an_error_naming_it() {
    let text = std::fs::read_to_string(program("linear_testmod")).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    v["graph_module"]["graph"]["tensor_values"]["p_l1_weight"]["sizes"] = serde_json::json!([]);
    let p: dimguard::graph::Program = serde_json::from_value(v).unwrap();
    let err = check(&p, false).unwrap_err();
    assert!(
        matches!(err, Error::Shape(ref e) if e.node == "linear"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("node `linear` (torch.ops.aten.linear.default): `weight` has 0 dimension(s)"),
        "{err}"
    );
}
