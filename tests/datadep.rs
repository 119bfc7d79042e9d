//! Data-dependent failures of torch 2.15 `ShapesSpec` exports (`tests/data/forms/shapesspec/`,
//! made by its `make.py`): each expression's symbol is mapped to its input size, and its
//! `when_true` / `when_false` sets equal evaluating the expression size by size over the range.

mod common;

use dimguard::api::{diagnose_with_spec, Examples};
use dimguard::commands::diagnose::Paste;
use dimguard::readers::forms::{self, Form};
use dimguard::readers::spec::shapes::ShapesSpec;
use dimguard::solver::report::{DataDependent, Report};
use dimguard::solver::DimSet;

fn load(name: &str) -> String {
    common::text(&format!("forms/shapesspec/{name}"))
}

const SPEC: &str = "from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec\nB = ShapeVar(\"B\", min=1, max=8)\nH = ShapeVar(\"H\", min=LO, max=1024)\nW = ShapeVar(\"W\", min=LO, max=1024)\ndynamic_shapes = ShapesSpec({\"x\": TensorSpec([B, 3, H, W])})\n";

fn run(text: &str, ranges: &[(&str, (i128, i128))], shape: &[i128], spec: Option<&str>) -> Report {
    let examples = Examples {
        by_name: vec![],
        shapes: vec![("x".into(), shape.to_vec())],
        ranges: ranges.iter().map(|(n, r)| (n.to_string(), *r)).collect(),
    };
    let spec = spec.map(|s| ShapesSpec::read(s).unwrap());
    let paste = Paste {
        shapes: spec,
        ..Paste::default()
    };
    diagnose_with_spec(text, &examples, None, 1000, &paste)
        .unwrap_or_else(|e| panic!("{e}"))
        .0
}

/// `when_true` and `when_false` are exactly the sizes of the range where the expression (read
/// from the text) is true and false, evaluated one by one.
fn brute_force(d: &DataDependent) {
    let text = dimguard::solver::parse_guard(&d.guard).unwrap();
    let u = &d.sizes[0];
    let [lo, hi] = d.range.unwrap();
    let t = DimSet::from_segments(d.when_true.as_ref().unwrap().segments.clone()).unwrap();
    let f = DimSet::from_segments(d.when_false.as_ref().unwrap().segments.clone()).unwrap();
    let (mut nt, mut nf) = (0u128, 0u128);
    for x in lo..=hi {
        let v = text.truth_at(u, x).unwrap();
        assert_eq!(t.contains(x), v, "{} at {x}", d.guard);
        assert_eq!(f.contains(x), !v, "{} at {x}", d.guard);
        if v {
            nt += 1
        } else {
            nf += 1
        }
    }
    assert_eq!((t.count(), f.count()), (nt, nf));
    assert_eq!(
        d.always,
        (nf == 0).then_some(true).or((nt == 0).then_some(false))
    );
    if let (Some(x), Some(b)) = (d.example, d.example_branch) {
        assert_eq!(text.truth_at(u, x).unwrap(), b);
    }
    if let Some(k) = d.removes {
        let b = d.always.or(d.example_branch).unwrap();
        assert_eq!(k, if b { nf } else { nt });
    }
}

#[test]
fn ceil_mode_cnn_is_false_everywhere() {
    let text = load("cnn.exception.txt");
    let m = forms::read(&text).unwrap();
    assert_eq!(m.form, Form::DataDependent);
    assert!(m.datadep.shapes_spec);
    assert!(m.unrecognized.is_empty(), "{:?}", m.unrecognized);
    let u1 = m.datadep.symbol("u1").unwrap();
    assert_eq!(u1.source.as_deref(), Some("x.shape[2]"));
    let p = m.data_dependent[0].provenance.as_ref().unwrap();
    assert!(
        p.user && p.file.ends_with("make.py") && p.function == "forward",
        "{p:?}"
    );
    assert_eq!(p.op.as_deref(), Some("pooling_output_shape_pad_lr"));
    // --range by symbol, by source in either spelling.
    for key in ["u1", "x.shape[2]", "L['x'].size()[2]"] {
        let r = run(&text, &[(key, (96, 1024))], &[2, 3, 224, 224], None);
        let d = &r.data_dependent[0];
        assert_eq!(d.source.as_deref(), Some("x.shape[2]"));
        assert_eq!(d.range, Some([96, 1024]));
        assert_eq!(d.always, Some(false), "{key}");
        assert_eq!(d.removes, Some(0));
        assert_eq!(d.example, Some(224));
        assert_eq!(d.certificate.as_str(), "enumeration");
        brute_force(d);
    }
    // The user's names from their ShapesSpec; the paste block is it with the assumption added.
    let spec = SPEC.replace("LO", "96");
    let r = run(&text, &[], &[2, 3, 224, 224], Some(&spec));
    let d = &r.data_dependent[0];
    assert_eq!(
        d.assumption.as_deref(),
        Some("2*(((H - 3) // 2 - 1) // 2) < (H - 3) // 2 + 1")
    );
    let back = ShapesSpec::read(&r.dynamic_shapes).unwrap();
    assert_eq!(back.assumptions, vec![d.assumption.clone().unwrap()]);
    assert_eq!(back.inputs, ShapesSpec::read(&spec).unwrap().inputs);
    // Without a range: over every size, with a note saying so.
    let r = run(&text, &[], &[], None);
    assert!(
        r.notes.iter().any(|n| n.contains("no range for u1")),
        "{:?}",
        r.notes
    );
    assert_eq!(r.data_dependent[0].range, Some([0, i64::MAX as i128]));
}

#[test]
fn window_padding_changes_branch_inside_the_range() {
    let text = load("swin.exception.txt");
    let spec = SPEC.replace("LO", "16");
    let r = run(&text, &[], &[2, 3, 224, 224], Some(&spec));
    let d = &r.data_dependent[0];
    // No source in the text: placed by torch's numbering of the spec's slots.
    assert_eq!(d.source.as_deref(), Some("x.shape[2]"));
    assert_eq!(d.range, Some([16, 1024]));
    assert_eq!(d.always, None);
    assert_eq!(d.example_branch, Some(false));
    assert!(d.assumption.as_deref().unwrap().contains('H'));
    brute_force(d);
    assert_eq!(d.when_true.as_ref().unwrap().max, Some(31));
}

#[test]
fn own_torch_check_and_the_log_form() {
    let r = run(
        &load("check.exception.txt"),
        &[("u1", (8, 512))],
        &[2, 64],
        None,
    );
    let d = &r.data_dependent[0];
    assert_eq!(d.example, None, "the text does not say which input u1 is");
    brute_force(d);
    assert_eq!(d.when_false.as_ref().unwrap().count, 128);
    // The log: the source from create_unbacked_symint, the range from the spec's own bounds
    // (which are not data-dependent guards).
    let text = load("cnn.log.txt");
    let m = forms::read(&text).unwrap();
    let r = run(&text, &[], &[2, 3, 224, 224], None);
    assert_eq!(
        m.datadep.symbol("u2").unwrap().source.as_deref(),
        Some("L['x'].size()[3]")
    );
    let d = r
        .data_dependent
        .iter()
        .find(|d| d.guard.contains("//2"))
        .unwrap();
    assert_eq!(d.range, Some([96, 1024]));
    assert_eq!(d.always, Some(false));
    assert!(!r.data_dependent.iter().any(|d| d.guard == "u1 >= 96"));
    brute_force(d);
}

#[test]
fn readable_expressions() {
    let e = dimguard::solver::parse_guard("2*((((((u1 - 3)//2)) - 1)//2)) >= (((u1 - 3)//2)) + 1")
        .unwrap();
    assert_eq!(
        e.torch_python(),
        "2*(((u1 - 3) // 2 - 1) // 2) >= (u1 - 3) // 2 + 1"
    );
    for (g, want) in [
        ("Eq(Mod(-1 + s0, 8), 0)", "(s0 - 1) % 8 == 0"),
        ("-s0 + 2*s1 <= 7", "2*s1 - s0 <= 7"),
        ("(s0*(s1 // 2)) // 3 > 1", "s0*(s1 // 2) // 3 > 1"),
        ("s0 // (2*s1) != 1", "s0 // (2*s1) != 1"),
        ("Max(1, s0 - 3) < 4", "torch.sym_max(1, s0 - 3) < 4"),
    ] {
        let e = dimguard::solver::parse_guard(g).unwrap();
        let p = e.torch_python();
        assert_eq!(p, want, "{g}");
        // Same value everywhere as the guard.
        let back = dimguard::solver::parse_guard(&p.replace("torch.sym_max", "Max")).unwrap();
        for s0 in 0..20 {
            for s1 in 1..6 {
                let env = |a: &str| match a {
                    "s0" => Some(s0),
                    "s1" => Some(s1),
                    _ => None,
                };
                assert_eq!(
                    e.truth(&env).ok(),
                    back.truth(&env).ok(),
                    "{g} at {s0}, {s1}"
                );
            }
        }
    }
}

#[test]
fn wide_ranges_are_exact_and_proved_by_z3() {
    let text = load("cnn.exception.txt");
    let examples = Examples {
        by_name: vec![],
        shapes: vec![],
        ranges: vec![("u1".into(), (96, 1 << 62))],
    };
    let (r, _) = diagnose_with_spec(
        &text,
        &examples,
        Some(dimguard::prove::Mode::Auto),
        10_000,
        &Paste::default(),
    )
    .unwrap();
    let d = &r.data_dependent[0];
    assert_eq!(d.always, Some(false));
    assert_eq!(d.certificate.as_str(), "z3");
    assert_eq!(d.when_false.as_ref().unwrap().count, (1u128 << 62) - 95);
    // Spot checks far out, by the evaluator.
    let e = dimguard::solver::parse_guard(&d.guard).unwrap();
    for x in [1i128 << 40, (1 << 62) - 1, 123_456_789_012_345] {
        assert!(!e.truth_at("u1", x).unwrap());
    }
}

#[test]
fn a_trace_gives_the_ranges_and_says_the_failure_is_not_in_it() {
    let r = run(&load("cnn.trace.log"), &[], &[], None);
    assert!(
        r.data_dependent.is_empty(),
        "the spec's bounds are no failures"
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("u1 in 96..1024") && n.contains("no data-dependent failure")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_branch_on_two_inputs_is_counted_over_the_box() {
    let spec = "from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec\nB = ShapeVar(\"B\", min=1, max=8)\nN = ShapeVar(\"N\", min=2, max=64)\nM = ShapeVar(\"M\", min=1, max=64)\ndynamic_shapes = ShapesSpec({\"x\": TensorSpec([B, N]), \"y\": TensorSpec([B, M])})\n";
    let examples = Examples {
        by_name: vec![],
        shapes: vec![("x".into(), vec![2, 17]), ("y".into(), vec![2, 16])],
        ranges: vec![],
    };
    let s = ShapesSpec::read(spec).unwrap();
    let (r, _) = diagnose_with_spec(
        &load("two.exception.txt"),
        &examples,
        None,
        1000,
        &Paste {
            shapes: Some(s),
            ..Paste::default()
        },
    )
    .unwrap();
    let d = &r.data_dependent[0];
    let names: Vec<(&str, Option<&str>)> = d
        .symbols
        .iter()
        .map(|s| (s.name.as_str(), s.source.as_deref()))
        .collect();
    assert_eq!(
        names,
        [("N", Some("x.shape[1]")), ("M", Some("y.shape[1]"))]
    );
    // Brute force over the box N in 2..64, M in 1..64, by the evaluator on the text.
    let e = dimguard::solver::parse_guard(&d.guard).unwrap();
    let (mut t, mut f) = (0u128, 0u128);
    for n in 2..=64 {
        for m in 1..=64 {
            let env = |a: &str| match a {
                "u1" => Some(n),
                "u3" => Some(m),
                _ => None,
            };
            if e.truth(&env).unwrap() {
                t += 1
            } else {
                f += 1
            }
        }
    }
    assert_eq!(d.example_branch, Some(17 >= 2 * 16));
    assert_eq!(d.always, None);
    assert_eq!(d.removes, Some(t));
    assert!(d
        .holds
        .as_deref()
        .unwrap()
        .contains(&format!("true at {t} and false at {f}")));
    assert_eq!(d.assumption.as_deref(), Some("N < 2*M"));
    assert_eq!(d.certificate.as_str(), "enumeration");
}
