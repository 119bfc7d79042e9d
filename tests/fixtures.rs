//! The real PyTorch messages in `tests/data/messages/`: for every dimension with guards, the
//! feasible set equals brute-force evaluation of the printed guards over the printed range, the
//! first suggestion is sound and as large as any progression inside the set, and the sets match
//! the hand derivations written next to each case.

use dimguard::commands::diagnose::{diagnose_text, Options};
use dimguard::readers::forms::violation as message;
use dimguard::solver::report::{Certificate, GuardMethod, Status};

mod common;
use common::{data_path, text};

/// Longest arithmetic progression of consecutive terms inside the sorted set `v`.
fn brute_best(v: &[i128]) -> u128 {
    let set: std::collections::HashSet<i128> = v.iter().copied().collect();
    let mut best = v.len().min(1) as u128;
    for (i, &a) in v.iter().enumerate() {
        for &b in &v[i + 1..] {
            let step = b - a;
            if set.contains(&(a - step)) {
                continue;
            }
            let (mut x, mut c) = (b, 2);
            while set.contains(&(x + step)) {
                x += step;
                c += 1;
            }
            best = best.max(c);
        }
    }
    best
}

/// Checks every dimension of a message against brute force; returns the report for more checks.
fn check(name: &str) -> dimguard::solver::report::Report {
    let text = common::text(&format!("messages/{name}"));
    let msg = message::read(&text).unwrap();
    let report = diagnose_text(&text, &Options::default()).unwrap();
    assert_eq!(report.dims.len(), msg.dims.len());
    for (d, entry) in report.dims.iter().zip(&msg.dims) {
        if entry.guards.is_empty() {
            continue;
        }
        let var = entry.source.clone().unwrap();
        let [lo, hi] = d.range.unwrap();
        let want: Vec<i128> = (lo..=hi)
            .filter(|&x| entry.guards.iter().all(|g| g.expr.holds_at(&var, x)))
            .collect();
        let f = d.answer.accepted.as_ref().expect("decided");
        assert_eq!(f.count as usize, want.len(), "{name}: {}", d.name);
        assert_eq!(f.min, want.first().copied());
        assert_eq!(f.max, want.last().copied());
        let best = &d.answer.suggestions[0];
        let mut x = best.lo;
        while x <= best.hi {
            assert!(
                want.binary_search(&x).is_ok(),
                "{name}: suggestion admits {x}"
            );
            x += best.modulus;
        }
        assert_eq!(
            best.count,
            brute_best(&want),
            "{name}: {} suggestion not maximal",
            d.name
        );
        assert_eq!(best.certificate, Certificate::Enumeration);
        for s in &d.answer.suggestions {
            let mut x = s.lo;
            while x <= s.hi {
                assert!(
                    want.binary_search(&x).is_ok(),
                    "{name}: a later suggestion admits {x}"
                );
                x += s.modulus;
            }
        }
    }
    report
}

fn residues(r: &dimguard::solver::report::Report, dim: &str) -> (i128, Vec<i128>) {
    let d = r.dims.iter().find(|d| d.name == dim).unwrap();
    let f = d.answer.accepted.as_ref().unwrap();
    assert_eq!(f.segments.len(), 1, "{dim}: {:?}", f.segments);
    (f.segments[0].modulus, f.segments[0].residues.clone())
}

#[test]
fn raft_sympy_seed() {
    // ((h - 1)//4 - 1) even  <=>  h - 1 in [4, 7] + 8k  <=>  h mod 8 in {5, 6, 7, 0}.
    let r = check("seed_raft_sympy_syntax.txt");
    assert_eq!(residues(&r, "_2"), (8, vec![0, 5, 6, 7]));
    let d = &r.dims[0];
    assert_eq!(d.answer.accepted.as_ref().unwrap().count, 1014);
    assert_eq!(d.answer.suggestions[0].count, 254);
    assert_eq!(d.answer.suggestions[0].modulus, 8);
}

#[test]
fn raft_example_picks_its_class() {
    let opts = Options {
        examples: vec![(None, 520)],
        ..Options::default()
    };
    let r = diagnose_text(&text("messages/seed_raft_sympy_syntax.txt"), &opts).unwrap();
    let s = &r.dims[0].answer.suggestions[0];
    assert_eq!((s.modulus, s.residue, s.lo, s.hi), (8, 0, 136, 2160));
    assert_eq!(s.code, "__2 = Dim('__2', min=17, max=270)\n_2 = 8*__2");
}

#[test]
fn resnet_family_height_and_width() {
    // (h - 1)//2 odd  <=>  h - 1 in {2, 3} mod 4  <=>  h mod 4 in {3, 0}.
    for name in ["resnet18.txt", "shufflenet_v2_x0_5.txt", "fcn_resnet50.txt"] {
        let r = check(name);
        assert_eq!(residues(&r, "height"), (4, vec![0, 3]), "{name}");
        assert_eq!(residues(&r, "width"), (4, vec![0, 3]), "{name}");
    }
    let r = check("fcn_resnet50.txt");
    assert_eq!(r.dims[0].name, "batch");
    assert_eq!(r.dims[0].status, Status::Specialized);
    assert_eq!(r.dims[0].specialized, Some(1));
}

#[test]
fn unet_guards_combine_to_mod_4() {
    // Guard 1: h mod 4 in {0, 3}; guard 2 (trunc(h/2) == 1 + (h-1)//2): h even. Together h ≡ 0 (mod 4).
    let r = check("unet_pixelshuffle_interpolate.txt");
    assert_eq!(residues(&r, "height"), (4, vec![0]));
    let d = r.dims.iter().find(|d| d.name == "height").unwrap();
    assert_eq!(d.guards[0].requires, "height mod 4 ∈ {0, 3}");
    assert_eq!(d.guards[1].requires, "height ≡ 0 (mod 2)");
    // torch's own fix (4*_height, 50..100) is sound here, and maximal.
    let fix = d.torch_fix.as_ref().unwrap();
    assert!(fix.sound);
    assert_eq!(fix.admitted, 51);
    assert_eq!(d.answer.suggestions[0].count, 51);
    assert!(r
        .dynamic_shapes
        .contains("dynamic_shapes = {\"x\": {2: height, 3: width}}"));
}

#[test]
fn specializations() {
    let r = check("vit_b_16.txt");
    let got: Vec<(String, Option<i128>)> = r
        .dims
        .iter()
        .map(|d| (d.name.clone(), d.specialized))
        .collect();
    assert_eq!(
        got,
        [
            ("batch".into(), Some(1)),
            ("height".into(), Some(224)),
            ("width".into(), Some(224))
        ]
    );
    assert!(r.dims.iter().all(|d| d.status == Status::Specialized));
    assert_eq!(r.dims[1].answer.suggestions[0].code, "height = 224");
    let r = check("deeplabv3_mobilenet_v3_large.txt");
    assert_eq!(r.dims.len(), 1);
    assert_eq!(r.dims[0].specialized, Some(1));
}

#[test]
fn torch_unsound_fix_is_caught() {
    // torch 2.11 suggests a multiple of 8 for this guard; 3 of every 4 multiples of 8 fail.
    let text = "torch._dynamo.exc.UserError: Constraints violated (dim_2)!\n  - Not all values of dim_2 = L['image1'].size()[2] in the specified range 135 <= dim_2 <= 2160 satisfy the generated guard ((((-1) + L['image1'].size()[2]) // 8) % 8) == 1.\nSuggested fixes:\n  _dim_2 = Dim('_dim_2', min=17, max=270)\n  dim_2 = 8*_dim_2\n";
    let r = diagnose_text(text, &Options::default()).unwrap();
    let d = &r.dims[0];
    let fix = d.torch_fix.as_ref().unwrap();
    assert!(!fix.sound);
    assert_eq!(fix.admitted, 254);
    // (h-1)//8 ≡ 1 (mod 8)  <=>  h in [9, 16] + 64k: of the multiples of 8 only h ≡ 16 (mod 64)
    // pass (144, 208, ..., 2128: 32 values), so 222 of the 254 fail.
    assert_eq!(fix.failing, 222);
    assert_eq!(fix.counterexamples[..3], [136, 152, 160]);
    let s = &d.answer.suggestions[0];
    assert_eq!(
        (s.lo, s.hi, s.modulus, s.residue, s.count),
        (137, 2121, 64, 9, 32)
    );
}

#[test]
fn spurious_violation() {
    let text = "  - Not all values of w = L['x'].size()[3] in the specified range 100 <= w <= 1000 satisfy the generated guard (1 % (96*(L['x'].size()[3] // 4))) != 0.";
    let r = diagnose_text(text, &Options::default()).unwrap();
    let d = &r.dims[0];
    assert_eq!(d.status, Status::Spurious);
    assert_eq!(d.guards[0].method, GuardMethod::Periodic);
    assert!(d.advice[0].contains("spurious"));
    assert!(r.dynamic_shapes.contains("w = Dim.AUTO"));
}

#[test]
fn every_message_matches_brute_force() {
    let dir = data_path("messages");
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        check(&name);
        n += 1;
    }
    assert!(n >= 17, "{n} messages");
}

#[test]
fn raft_small_torch_2_11() {
    // The real RAFT message: torch suggests 8*_dim_2 (254 heights); 222 of them fail.
    let r = check("torch211_raft_small.txt");
    let h = &r.dims[0];
    assert_eq!(h.name, "dim_2");
    let f = h.answer.accepted.as_ref().unwrap();
    assert_eq!((f.count, f.min, f.max), (32, Some(136), Some(2120)));
    assert_eq!(residues(&r, "dim_2"), (64, vec![8]));
    assert_eq!(
        h.answer.suggestions[0].code,
        "_dim_2 = Dim('_dim_2', min=2, max=33)\ndim_2 = 64*_dim_2 + 8"
    );
    let fix = h.torch_fix.as_ref().unwrap();
    assert_eq!((fix.admitted, fix.failing), (254, 222));
    assert_eq!(fix.counterexamples[..3], [144, 152, 160]);
}

#[test]
fn densenet121_torch_fix_fails_85_of_113() {
    let r = check("torch211_densenet121.txt");
    for d in &r.dims {
        let fix = d.torch_fix.as_ref().unwrap();
        assert_eq!((fix.admitted, fix.failing), (113, 85), "{}", d.name);
        assert_eq!(d.answer.suggestions[0].modulus, 32);
    }
}

#[test]
fn swin_forced_specialization_is_solved_exactly() {
    // torch gives up on these guards and forces 224; the exact set is an interval around it.
    let r = check("torch211_swin_t.txt");
    let h = r.dims.iter().find(|d| d.name == "height").unwrap();
    assert_eq!(h.specialized, Some(224));
    let f = h.answer.accepted.as_ref().unwrap();
    assert!(f.count > 1);
    assert!(f.min.unwrap() <= 224 && 224 <= f.max.unwrap());
}

#[test]
fn convnext_guards_are_spurious() {
    let r = check("torch211_convnext_tiny.txt");
    assert_eq!(r.dims[0].status, Status::Spurious);
}

#[test]
fn related_dims_are_solved_together() {
    let text = "Constraints violated (dx, dy)!\n  - Not all values of dx = L['x'].size()[0] in the specified range 3 <= dx <= 100 satisfy the generated guard (L['x'].size()[0] % 2) == 0.\n  - Not all values of dy = L['y'].size()[0] in the specified range 4 <= dy <= 101 satisfy the generated guard (L['y'].size()[0] % 3) == 0.\n  - The values of dy = L['y'].size()[0] must always be related to the values of dx = L['x'].size()[0] by dy = dx + 1.\n";
    let r = diagnose_text(text, &Options::default()).unwrap();
    assert_eq!(r.linked.len(), 1);
    let g = &r.linked[0];
    assert_eq!(g.root, "dx");
    assert_eq!(g.members, vec![["dy".to_string(), "dx + 1".to_string()]]);
    // Brute force: dx in 3..=100 even, dx + 1 in 4..=101 divisible by 3.
    let want: Vec<i128> = (3..=100)
        .filter(|x| x % 2 == 0 && (x + 1) % 3 == 0 && (4..=101).contains(&(x + 1)))
        .collect();
    let f = g.feasible.as_ref().unwrap();
    assert_eq!(f.count as usize, want.len());
    assert_eq!(
        (f.min, f.max),
        (want.first().copied(), want.last().copied())
    );
    assert_eq!(
        g.code.as_deref(),
        Some("_dx = Dim('_dx', min=2, max=17)\ndx = 6*_dx - 4\ndy = dx + 1")
    );
    assert_eq!(g.certificate, Certificate::Enumeration);
    assert!(r.dynamic_shapes.contains("dy = dx + 1"));
    assert!(
        !r.dynamic_shapes.contains("dy = Dim("),
        "{}",
        r.dynamic_shapes
    );
}

#[test]
fn data_dependent_guards_get_torch_checks() {
    let text = "torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).  (Size-like symbols: u0)\n";
    let r = diagnose_text(text, &Options::default()).unwrap();
    let d = &r.data_dependent[0];
    assert_eq!(d.sizes, ["u0"]);
    assert_eq!(d.holds.as_deref(), Some("u0 = 1"));
    assert_eq!(d.torch_check[0], "torch._check(u0 == 1)");
    assert_eq!(d.torch_check[1], "torch._check(torch.sym_not(u0 == 1))");
    let text = "GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(-Min(7312, Max(0, u0)) + Min(7312, Max(0, u0, u0 + u1)), 0) (unhinted: x)";
    let r = diagnose_text(text, &Options::default()).unwrap();
    let d = &r.data_dependent[0];
    assert_eq!(d.sizes, ["u0", "u1"]);
    assert!(
        d.torch_check[0].contains("torch.sym_min(7312, torch.sym_max(0, u0))"),
        "{}",
        d.torch_check[0]
    );
}
