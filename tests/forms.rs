//! Every form in which users meet a guard (`tests/data/forms/`, made with PyTorch 2.15 by
//! `tools/make_form_fixtures.py`): each is read as its form, every decided set equals brute-force
//! evaluation of the guards read, the answers equal what torch itself does when the exported
//! program runs at every size of the range, a log gives the report of the exception, and every
//! variant of a paste (prefixed, quoted, wrapped, trailing backtick) gives the same answer.

mod common;

use dimguard::commands::diagnose::{diagnose, Options};
use dimguard::readers::forms::{self, Form};
use dimguard::readers::Message;
use dimguard::solver::report::{Report, Status};

mod wrappers;
use wrappers::wrap;

fn load(name: &str) -> String {
    common::text(&format!("forms/{name}"))
}

fn read(text: &str, ranges: &[(&str, (i128, i128))]) -> Message {
    let mut m = forms::read(text).unwrap_or_else(|e| panic!("{e}"));
    let ranges: Vec<(String, (i128, i128))> =
        ranges.iter().map(|(n, r)| (n.to_string(), *r)).collect();
    forms::apply_ranges(&mut m, &ranges).unwrap();
    m
}

fn report(m: &Message, examples: &[(Option<&str>, i128)]) -> Report {
    let opts = Options {
        examples: examples
            .iter()
            .map(|(n, v)| (n.map(String::from), *v))
            .collect(),
        ..Options::default()
    };
    diagnose(m, &opts)
}

/// Brute force: every dimension's feasible set is the values of its range at which every guard
/// read for it holds, evaluated value by value (the oracle evaluator, not the engine).
fn brute_force(name: &str, m: &Message, r: &Report) {
    for (d, entry) in r.dims.iter().zip(&m.dims) {
        if entry.guards.is_empty() || d.status == Status::Specialized {
            continue;
        }
        let var = entry.source.clone().unwrap_or_else(|| entry.name.clone());
        let [lo, hi] = d.range.expect("range");
        if hi - lo > 200_000 {
            continue;
        }
        let want: Vec<i128> = (lo..=hi)
            .filter(|&x| entry.guards.iter().all(|g| g.expr.holds_at(&var, x)))
            .collect();
        let f = d.answer.accepted.as_ref().expect("decided");
        assert_eq!(f.count as usize, want.len(), "{name}: {}", d.name);
        let set = dimguard::solver::DimSet::from_segments(f.segments.clone()).unwrap();
        assert!(want.iter().all(|&x| set.contains(x)), "{name}: {}", d.name);
    }
}

/// The values torch's own exported program ran at (`*.expected.json`, one call per size).
fn torch_accepted(name: &str) -> (Vec<i128>, (i128, i128)) {
    let v: serde_json::Value = serde_json::from_str(&load(name)).unwrap();
    let acc = v["accepted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() as i128)
        .collect();
    let r = v["range"].as_array().unwrap();
    (
        acc,
        (
            r[0].as_i64().unwrap() as i128,
            r[1].as_i64().unwrap() as i128,
        ),
    )
}

fn members(r: &Report, dim: usize) -> Vec<i128> {
    let f = r.dims[dim].answer.accepted.as_ref().expect("decided");
    dimguard::solver::DimSet::from_segments(f.segments.clone())
        .unwrap()
        .iter()
        .collect()
}

/// For a text that holds only some of the program's guards (`partial`): the set they leave
/// (`undecided_values`; every accepted size is in it), with no accepted set claimed.
fn necessary(r: &Report, dim: usize) -> Vec<i128> {
    assert!(r.partial.is_some());
    let d = &r.dims[dim];
    assert!(d.answer.accepted.is_none() && d.answer.suggestions.is_empty());
    let u = d
        .answer
        .undecided
        .as_ref()
        .expect("the set its guards leave");
    dimguard::solver::DimSet::from_segments(u.segments.clone())
        .unwrap()
        .iter()
        .collect()
}

#[test]
fn every_fixture_is_read_as_its_form_and_matches_brute_force() {
    let cases: &[(&str, Form)] = &[
        ("fpn.exception.txt", Form::ConstraintViolation),
        ("fpn.log.txt", Form::TorchLogs),
        ("fpn_strict.log.txt", Form::TorchLogs),
        ("fpn_strict.exception.txt", Form::ConstraintViolation),
        ("fpn.draft.txt", Form::DraftExport),
        ("fpn.guard_failed.txt", Form::GuardFailed),
        ("fpn.input_check.txt", Form::InputCheck),
        ("googlenet.crash.txt", Form::SolverCrash),
        ("googlenet.log.txt", Form::TorchLogs),
        ("two_input.crash.txt", Form::SolverCrash),
        ("two_input.log.txt", Form::TorchLogs),
        ("shared_size.log.txt", Form::TorchLogs),
        ("window_attention.exception.txt", Form::ConstraintViolation),
        ("window_attention.log.txt", Form::TorchLogs),
        ("product_reshape.log.txt", Form::TorchLogs),
        ("specialize.exception.txt", Form::ConstraintViolation),
        ("specialize.log.txt", Form::TorchLogs),
        ("data_dependent.exception.txt", Form::DataDependent),
        ("real/pytorch_140011.log.txt", Form::TorchLogs),
        ("real/pytorch_126607.log.txt", Form::TorchLogs),
        ("real/pytorch_181097.guard_failed.txt", Form::GuardFailed),
        ("real/pytorch_143378.draft.txt", Form::DraftExport),
    ];
    for (name, form) in cases {
        let m = read(&load(name), &[]);
        assert_eq!(m.form, *form, "{name}");
        assert!(m.unreadable.is_empty(), "{name}: {:?}", m.unreadable);
        let r = report(&m, &[]);
        brute_force(name, &m, &r);
    }
}

#[test]
fn fpn_answers_equal_what_the_exported_program_does() {
    // torch ran the draft-exported program at every h in 32..512: these sizes passed.
    let (torch, (lo, hi)) = torch_accepted("fpn.expected.json");
    assert_eq!(torch.len(), 241);
    // The 1/4 map and the upsampled 1/8 map agree exactly when h mod 8 is 0, 5, 6 or 7.
    for name in [
        "fpn.log.txt",
        "fpn_strict.log.txt",
        "fpn.exception.txt",
        "fpn.draft.txt",
    ] {
        let r = report(&read(&load(name), &[]), &[]);
        assert_eq!(r.dims.len(), 1, "{name}");
        assert_eq!(r.dims[0].range, Some([lo, hi]), "{name}");
        assert_eq!(members(&r, 0), torch, "{name}");
    }
    // The run-time failure has no range, and holds one of the program's guards: with the
    // exported range given, the set that guard leaves (here the program's), never claimed.
    let r = report(
        &read(&load("fpn.guard_failed.txt"), &[("x_2", (lo, hi))]),
        &[],
    );
    assert_eq!(necessary(&r, 0), torch);
}

/// What a report says about sizes, without the names and texts that differ between forms.
fn answer(r: &Report) -> Vec<String> {
    r.dims
        .iter()
        .map(|d| {
            format!(
                "{:?} {:?} {:?} {:?} {:?}",
                // A specialization message gives no range.
                (d.status != Status::Specialized).then_some(d.range),
                d.status,
                d.answer.accepted.as_ref().map(|f| &f.segments),
                d.answer
                    .suggestions
                    .iter()
                    .map(|s| (s.lo, s.hi, s.modulus, s.residue))
                    .collect::<Vec<_>>(),
                d.specialized
            )
        })
        .collect()
}

#[test]
fn a_log_gives_the_report_of_the_exception() {
    for (log, exc) in [
        ("fpn.log.txt", "fpn.exception.txt"),
        ("fpn_strict.log.txt", "fpn_strict.exception.txt"),
        ("window_attention.log.txt", "window_attention.exception.txt"),
        ("specialize.log.txt", "specialize.exception.txt"),
    ] {
        let from_log = report(&read(&load(log), &[]), &[]);
        let from_exc = report(&read(&load(exc), &[]), &[]);
        // The exception names only the sizes it constrains; compare those.
        let log_dims: Vec<String> = answer(&from_log)
            .into_iter()
            .zip(&from_log.dims)
            .filter(|(_, d)| {
                from_exc.dims.iter().any(|e| {
                    e.source.as_deref().map(strip_flat) == d.source.as_deref().map(strip_flat)
                        || e.specialized.is_some() && e.specialized == d.specialized
                })
            })
            .map(|(a, _)| a)
            .collect();
        assert_eq!(log_dims, answer(&from_exc), "{log} vs {exc}");
        // The log and the exception together: the exception's names, the log's provenance.
        let both = format!("{}\n{}", load(log), load(exc));
        let m = read(&both, &[]);
        let r = report(&m, &[]);
        assert_eq!(
            answer(&r)
                .into_iter()
                .filter(|a| log_dims.contains(a))
                .count(),
            log_dims.len(),
            "{log} + {exc}"
        );
    }
}

/// Strict mode names inputs `L['flat_args'][0]`; the exception names them `L['x']`.
fn strip_flat(s: &str) -> String {
    s.replace("L['flat_args'][0]", "L['x']")
}

/// Variants of a paste as it really arrives.
fn variants(text: &str) -> Vec<(&'static str, String)> {
    let each = |f: &dyn Fn(&str) -> String| text.lines().map(f).collect::<Vec<_>>().join("\n");
    vec![
        ("hash-prefixed", each(&|l| format!("# {l}"))),
        ("quoted", each(&|l| format!("> {l}"))),
        ("trailing backtick", each(&|l| format!("{l}`"))),
        ("fenced", format!("```\n{text}\n```")),
        ("pytest", each(&|l| format!("E   {l}"))),
        ("wrapped", each(&|l| wrap(l, 72))),
    ]
}

#[test]
fn variants_of_every_fixture_give_the_same_answer() {
    for name in [
        "fpn.exception.txt",
        "fpn.log.txt",
        "fpn_strict.log.txt",
        "fpn.draft.txt",
        "fpn.guard_failed.txt",
        "fpn.input_check.txt",
        "googlenet.crash.txt",
        "window_attention.exception.txt",
        "specialize.log.txt",
        "shared_size.log.txt",
        "data_dependent.exception.txt",
        "real/pytorch_140011.log.txt",
        "real/pytorch_126607.log.txt",
        "real/pytorch_181097.guard_failed.txt",
        "real/pytorch_143378.draft.txt",
    ] {
        let text = load(name);
        let base = report(&read(&text, &[]), &[]);
        for (how, v) in variants(&text) {
            let mut m = forms::read(&v).unwrap_or_else(|e| panic!("{name} ({how}): {e}"));
            forms::apply_ranges(&mut m, &[]).unwrap();
            let r = report(&m, &[]);
            assert_eq!(answer(&r), answer(&base), "{name} ({how})");
            assert_eq!(r.form, base.form, "{name} ({how})");
        }
    }
}

#[test]
fn wrapped_relation_and_guards_read_like_one_line() {
    // A relation message wrapped over three indented lines, as a terminal or e-mail wraps it.
    let one = "Constraints violated (a, b)!\n  - The values of a = L['a'].size()[1] and b = L['b'].size()[1] must always be equal.\n";
    let wrapped = "Constraints violated (a, b)!\n  - The values of a = L['a'].size()[1] and\n    b = L['b'].size()[1] must always\n    be equal.\n";
    let (a, b) = (read(one, &[]), read(wrapped, &[]));
    assert_eq!(a.equalities, b.equalities);
    assert_eq!(b.equalities, vec![("a".to_string(), "b".to_string())]);
    // A data-dependent expression inside a sentence.
    let m = read(
        "the export failed with Could not guard on data-dependent expression Eq(u0, 0) while tracing",
        &[],
    );
    assert_eq!(m.data_dependent.len(), 1);
}

#[test]
fn provenance_from_logs_and_draft_reports() {
    // Non-strict: only torch's operator is known.
    let r = report(&read(&load("fpn.log.txt"), &[]), &[]);
    let ops: Vec<Option<&str>> = r.dims[0]
        .guards
        .iter()
        .map(|g| g.provenance.as_ref().and_then(|p| p.op.as_deref()))
        .collect();
    assert_eq!(
        ops,
        [Some("pooling_output_shape_pad_lr"), Some("infer_size")]
    );
    assert!(r.dims[0]
        .guards
        .iter()
        .all(|g| !g.provenance.as_ref().unwrap().user));
    // Strict: the user's line, and the group it heads removes exactly h mod 8 in {1, 2, 3, 4}.
    let r = report(&read(&load("fpn_strict.log.txt"), &[]), &[]);
    let p = r.dims[0].guards[1].provenance.as_ref().unwrap();
    assert!(p.user);
    assert!(p.file.ends_with("make_form_fixtures.py"));
    assert!(p.code.as_deref().unwrap().contains("F.interpolate"));
    // Grouped by the user's line: that line removes exactly h mod 8 in {1, 2, 3, 4}.
    let l = r.lines.iter().find(|l| l.user).unwrap();
    assert_eq!(l.guards.len(), 1);
    assert_eq!(l.dims[0].removes, Some(240));
    assert_eq!(l.dims[0].requires, "flat_args_0_2 mod 8 ∈ {0, 5, 6, 7}");
    // Non-user origins are grouped by torch's frame, with the operator.
    let pool = r.lines.iter().find(|l| !l.user).unwrap();
    assert_eq!(pool.ops, ["pooling_output_shape_pad_lr"]);
    // draft_export: the user's stack and torch's framework stack.
    let r = report(&read(&load("fpn.draft.txt"), &[]), &[]);
    for g in &r.dims[0].guards {
        let p = g.provenance.as_ref().unwrap();
        assert!(p.user, "{}", g.text);
        assert!(p.op.is_some(), "{}", g.text);
    }
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["form"], "draft_export");
    assert_eq!(
        json["dims"][0]["guards"][1]["provenance"]["op"],
        "infer_size"
    );
    assert!(json["dims"][0]["guards"][1]["provenance"]["stack"].is_array());
}

#[test]
fn guard_failed_says_why_the_size_fails_and_what_to_export() {
    let m = read(&load("fpn.guard_failed.txt"), &[("x_2", (32, 512))]);
    let r = report(&m, &[(Some("x_2"), 33)]);
    let rt = r.runtime.as_ref().unwrap();
    assert_eq!(rt.passes, Some(false));
    assert_eq!(rt.sides, Some(["9".to_string(), "10".to_string()]));
    // One guard of the program's: no size is claimed to pass, no spec to export.
    assert_eq!(rt.nearest, [None, None]);
    assert!(!rt.explanation.iter().any(|e| e.contains("8*_x_2")));
    assert!(rt
        .explanation
        .iter()
        .any(|e| e.contains("the program may hold more")));
    assert_eq!(necessary(&r, 0).len(), 241);
    assert!(!r.dynamic_shapes.contains("Dim("));
    // Without a range the default is used and said.
    let m = read(&load("fpn.guard_failed.txt"), &[]);
    assert!(m.notes.iter().any(|n| n.contains("--range x_2=LO..HI")));
    // A guard over two inputs (H of image1 and image2 after the stem).
    let m = read(&load("two_input.guard_failed.txt"), &[]);
    assert_eq!(m.form, Form::GuardFailed);
    assert_eq!(
        m.joint.len() + m.dims.iter().map(|d| d.guards.len()).sum::<usize>(),
        1
    );
    let r = report(&m, &[(Some("image1_2"), 96), (Some("image2_2"), 104)]);
    assert_eq!(r.runtime.as_ref().unwrap().passes, Some(false));
}

#[test]
fn input_check_is_explained_not_solved_as_a_model_guard() {
    let r = report(&read(&load("fpn.input_check.txt"), &[]), &[]);
    let rt = r.runtime.as_ref().unwrap();
    assert_eq!(rt.at, vec![("args_0_2".to_string(), 1000)]);
    assert_eq!(rt.passes, Some(false));
    assert!(rt.explanation[0].contains("input check, not a guard"));
}

#[test]
fn the_215_solver_crash_reads_its_guard() {
    let m = read(&load("googlenet.crash.txt"), &[("width", (64, 512))]);
    assert_eq!(m.form, Form::SolverCrash);
    let r = report(&m, &[]);
    assert_eq!(r.dims[0].name, "width");
    // 2*((w/2)//4) - 2 < w/4 holds for every w: torch's solver crashed on a tautology. The
    // text holds that one guard of the export's, so the width is undecided, not "spurious".
    assert_eq!(r.dims[0].guards[0].removes, Some(0));
    assert_eq!(r.dims[0].status, Status::Undecided);
    assert!(r.dims[0].answer.accepted.is_none());
    assert!(r.dims[0].answer.suggestions.is_empty());
    assert!(r.dims[0]
        .undecided
        .as_ref()
        .unwrap()
        .contains("only some of the export's guards"));
    // Undecided over the set that guard leaves (all of 64..512), stated.
    assert_eq!(r.dims[0].answer.undecided.as_ref().unwrap().count, 449);
    assert!(r.partial.is_some());
    assert!(!r.dynamic_shapes.contains("width = Dim"));
    assert_eq!(r.dims[0].range, Some([64, 512]));
    // The issue's text, with a range given and missing.
    let text = "AssertionError: Expected op to be '==', got < for (-2) + 2*(((1/2)*height) // 4) < (1/4)*height";
    let m = read(text, &[("height", (64, 512))]);
    assert_eq!(m.dims[0].range, Some((64, 512)));
    let m = read(text, &[]);
    assert!(m.notes.iter().any(|n| n.contains("no range for height")));
    assert!(forms::apply_ranges(&mut read(text, &[]), &[("width".into(), (2, 4))]).is_err());
}

#[test]
fn specialization_reason_from_the_log() {
    let r = report(&read(&load("specialize.log.txt"), &[]), &[]);
    let d = r.dims.iter().find(|d| d.specialized == Some(6)).unwrap();
    assert!(
        d.advice
            .iter()
            .any(|a| a.contains("range_refined_to_singleton") && a.contains("Eq(s27, 6)")),
        "{:?}",
        d.advice
    );
}

#[test]
fn linked_sizes_from_logs_are_reported() {
    // Three sizes linked by a reshape into rows of 2560 (the export itself succeeded).
    let r = report(&read(&load("product_reshape.log.txt"), &[]), &[]);
    assert!(!r.joint.is_empty());
    assert!(r.joint.iter().any(|j| j.sizes.len() == 3));
    // Two images that must share H and W.
    let r = report(&read(&load("shared_size.log.txt"), &[]), &[]);
    assert_eq!(r.joint.len(), 2);
    for j in &r.joint {
        assert_eq!(j.sizes.len(), 2, "{}", j.text);
        // ((h1 - 1)//2 == (h2 - 1)//2): 449 of the 225 x 225 pairs, counted by brute force here.
        let pairs = (32..=256i128)
            .flat_map(|a| (32..=256i128).map(move |b| (a, b)))
            .filter(|(a, b)| (a - 1).div_euclid(2) == (b - 1).div_euclid(2))
            .count() as u128;
        assert_eq!(j.joint_count, Some([pairs, 225 * 225]));
    }
    // The joint sets: the same pairs, by brute force.
    let pass = |a: i128, b: i128| (a - 1).div_euclid(2) == (b - 1).div_euclid(2);
    assert_eq!(r.joint_sets.len(), 2);
    for j in &r.joint_sets {
        let want = (32..=256i128)
            .flat_map(|a| (32..=256i128).map(move |b| (a, b)))
            .filter(|&(a, b)| pass(a, b))
            .count() as u128;
        assert_eq!((j.accepted, j.claimed), (want, 225 * 225));
        for t in &j.rejected_examples {
            assert!(!pass(t[0], t[1]), "{t:?} passes");
        }
    }
    // No size of a pair gets a Dim of its own (separate Dims would not be sound): its spec is
    // its side of the largest box, and every pair of that box passes.
    for d in &r.dims {
        assert_eq!(d.status, Status::Linked, "{}", d.name);
        assert!(d.answer.suggestions.is_empty());
        assert_eq!(d.answer.linked_with.len(), 1);
        let side = d.answer.sides.box_side.as_ref().expect("box side");
        let partner = r
            .dims
            .iter()
            .find(|o| o.name == d.answer.linked_with[0])
            .unwrap();
        let other = partner.answer.sides.box_side.as_ref().unwrap();
        for a in (side.lo..=side.hi).step_by(side.modulus as usize) {
            for b in (other.lo..=other.hi).step_by(other.modulus as usize) {
                assert!(pass(a, b), "{a}, {b}");
            }
        }
        // One shared Dim admits the whole diagonal (every (v, v) passes, brute force: 225
        // pairs), more than the box: the spec uses it, the second size written as the first,
        // as a choice (the guards do not force the sizes equal: (33, 34) passes).
        let shared = d.answer.sides.shared_side.as_ref().expect("shared side");
        let diagonal = (32..=256i128).filter(|&v| pass(v, v)).count() as u128;
        assert_eq!((shared.lo, shared.hi, shared.modulus), (32, 256, 1));
        assert_eq!(shared.count, diagonal);
        assert!(shared.count > side.count * other.count);
        for v in (shared.lo..=shared.hi).step_by(shared.modulus as usize) {
            assert!(pass(v, v), "{v}");
        }
        assert!(
            r.dynamic_shapes.contains(&shared.code),
            "{}",
            r.dynamic_shapes
        );
        let first = d.name < partner.name;
        assert_eq!(
            shared
                .code
                .contains(&format!("= {}  # one Dim for both", partner.name)),
            !first,
            "{}",
            shared.code
        );
    }
    assert!(pass(33, 34) && !r.dynamic_shapes.contains("must always be equal"));
    for j in &r.joint_sets {
        let sh = j.shared.as_ref().expect("shared");
        assert_eq!(sh.count, 225);
    }
    // Every guard is accounted for: both solved jointly.
    assert_eq!(r.guards.len(), 2);
    assert!(
        r.guards.iter().all(|g| g.fate.as_str() == "joint"),
        "{:?}",
        r.guards
    );
    // A linking guard the sizes' own answers imply leaves them as they are (window attention:
    // h and w multiples of 7 make 32*h*w == 1568*(h//7)*(w//7) hold).
    let r = report(&read(&load("window_attention.log.txt"), &[]), &[]);
    assert!(r
        .joint
        .iter()
        .all(|j| j.joint_count.is_some_and(|[p, t]| p == t)));
    assert!(r.dims.iter().all(|d| d.status == Status::Constrained));
}

#[test]
fn what_is_not_a_guard_says_what_to_paste() {
    let e = forms::read(&load("product_reshape.draft_clean.txt")).unwrap_err();
    assert!(e.to_string().contains("found no issue"), "{e}");
}

#[test]
fn real_messages_from_public_issues() {
    // pytorch/pytorch#181097: x = 5*batch with batch in 1..8; the program raised at x = 5.
    let m = read(
        &load("real/pytorch_181097.guard_failed.txt"),
        &[("x_0", (5, 40))],
    );
    let r = report(&m, &[(Some("x_0"), 5)]);
    let rt = r.runtime.as_ref().unwrap();
    assert_eq!(rt.passes, Some(false));
    assert_eq!(rt.sides, Some(["1".to_string(), "1".to_string()]));
    // The guard it holds leaves 10..40; the program accepts only the multiples of 5 there
    // (x = 5*batch): necessary, not sufficient, so nothing is claimed accepted.
    assert_eq!(rt.nearest, [None, None]);
    assert_eq!(necessary(&r, 0), (10..=40).collect::<Vec<i128>>());
    // pytorch/pytorch#140011: the sequence length specialized to 6, from the user's line in
    // transformers' modeling_llama.py, although the log never names its symbol's source.
    let r = report(&read(&load("real/pytorch_140011.log.txt"), &[]), &[]);
    let d = &r.dims[0];
    assert_eq!(d.source.as_deref(), Some("L['input_ids'].size()[1]"));
    assert_eq!((d.range, d.specialized), (Some([1, 128]), Some(6)));
    assert!(d.advice.iter().any(|a| a.contains("modeling_llama.py:589")));
    // pytorch/pytorch#126607: a reshape into rows of 20, the last line cut mid-word.
    let m = read(
        &load("real/pytorch_126607.log.txt"),
        &[("args_0_0_0", (2, 200))],
    );
    assert_eq!(m.dims[0].guards.len(), 2);
    let r = report(&m, &[]);
    let want: Vec<i128> = (2..=200).filter(|x| x % 20 != 0).collect();
    assert_eq!(members(&r, 0), want);
    // pytorch/pytorch#143378: an older draft_export report ("occured", "in forward:").
    let r = report(&read(&load("real/pytorch_143378.draft.txt"), &[]), &[]);
    let p = r.dims[0].guards[0].provenance.as_ref().unwrap();
    assert_eq!(
        (p.line, p.function.as_str(), p.user),
        (267, "forward", true)
    );
    assert_eq!(p.code.as_deref(), Some("assert a.shape[0] == 3"));
    assert_eq!(members(&r, 0), [3]);
}

/// Every guard of `m` over input sizes: one-size guards, then guards over several sizes.
fn all_guards(m: &Message) -> Vec<&dimguard::solver::Expr> {
    m.dims
        .iter()
        .flat_map(|d| d.guards.iter().map(|g| &g.expr))
        .chain(m.joint.iter().map(|g| &g.expr))
        .collect()
}

#[test]
fn joint_sets_match_brute_force_and_every_guard_is_accounted_for() {
    use dimguard::solver::expr::Value;
    // Ranges narrowed where the claimed box is too large to enumerate in a test.
    type Ranges = &'static [(&'static str, (i128, i128))];
    let cases: &[(&str, Ranges)] = &[
        (
            "product_reshape.log.txt",
            &[("t_0", (2, 5)), ("t_1", (2, 160)), ("t_2", (2, 300))],
        ),
        ("shared_size.log.txt", &[]),
        ("two_input.log.txt", &[]),
        ("window_attention.log.txt", &[]),
    ];
    for (name, ranges) in cases {
        let m = read(&load(name), ranges);
        let r = report(&m, &[]);
        assert!(!r.joint_sets.is_empty(), "{name}");
        let guards = all_guards(&m);
        for j in &r.joint_sets {
            let sizes = &j.sources;
            // The sizes' ranges, from the message.
            let ranges: Vec<(i128, i128)> = sizes
                .iter()
                .map(|s| {
                    let d = m
                        .dims
                        .iter()
                        .find(|d| d.source.as_deref() == Some(s))
                        .unwrap();
                    d.range.unwrap()
                })
                .collect();
            let mine: Vec<&&dimguard::solver::Expr> = guards
                .iter()
                .filter(|g| g.atoms().iter().all(|a| sizes.iter().any(|s| **s == **a)))
                .collect();
            let holds = |t: &[i128]| {
                let env = |a: &str| sizes.iter().position(|s| s == a).map(|i| t[i]);
                mine.iter()
                    .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
            };
            // Enumerate the box of the ranges, tuple by tuple (the oracle evaluator).
            let mut count = 0u128;
            let mut total = 0u128;
            let mut t: Vec<i128> = ranges.iter().map(|r| r.0).collect();
            'all: loop {
                total += 1;
                if holds(&t) {
                    count += 1;
                }
                for l in (0..t.len()).rev() {
                    if t[l] < ranges[l].1 {
                        t[l] += 1;
                        continue 'all;
                    }
                    t[l] = ranges[l].0;
                }
                break;
            }
            assert_eq!(
                (j.accepted, j.claimed),
                (count, total),
                "{name}: {:?}",
                j.dims
            );
            assert!(j.undecided.is_none(), "{name}");
            for t in &j.accepted_examples {
                assert!(holds(t), "{name}: {t:?} is said to pass");
            }
            for t in &j.rejected_examples {
                assert!(!holds(t), "{name}: {t:?} is said to fail");
            }
            // Every tuple of the largest box passes, and each size's spec is its side.
            let b = j.largest_box.as_ref().expect("a box");
            let sides: Vec<Vec<i128>> = b
                .sides
                .iter()
                .map(|s| (s.lo..=s.hi).step_by(s.modulus as usize).collect())
                .collect();
            let mut n = 0u128;
            let mut idx = vec![0usize; sides.len()];
            'boxes: loop {
                let t: Vec<i128> = idx.iter().zip(&sides).map(|(&i, s)| s[i]).collect();
                assert!(holds(&t), "{name}: box tuple {t:?} fails");
                n += 1;
                for l in (0..idx.len()).rev() {
                    if idx[l] + 1 < sides[l].len() {
                        idx[l] += 1;
                        continue 'boxes;
                    }
                    idx[l] = 0;
                }
                break;
            }
            assert_eq!(n, b.count);
            for (dim, side) in j.dims.iter().zip(&b.sides) {
                let d = r.dims.iter().find(|d| &d.name == dim).unwrap();
                if d.status == Status::Linked {
                    assert_eq!(
                        d.answer.sides.box_side.as_ref().map(|s| &s.code),
                        Some(&side.code)
                    );
                    // The spec is the box side, or one Dim shared by a pair when that admits
                    // more (then every (v, v) of it passes).
                    match (&d.answer.sides.shared_side, &j.shared) {
                        (Some(sh), Some(js)) => {
                            assert!(js.count > b.count, "{name}");
                            assert!(r.dynamic_shapes.contains(&sh.code), "{name}");
                            for v in (sh.lo..=sh.hi).step_by(sh.modulus as usize) {
                                assert!(holds(&[v, v]), "{name}: ({v}, {v}) fails");
                            }
                        }
                        (None, None) => {
                            assert!(r.dynamic_shapes.contains(&side.code), "{name}")
                        }
                        other => panic!("{name}: shared side and joint disagree: {other:?}"),
                    }
                    assert!(d.answer.suggestions.is_empty());
                }
            }
        }
        if *name == "product_reshape.log.txt" {
            // t_1 * t_2 == 2560 links them; t_0 goes with every such pair (a box side of its
            // own: its answer stands).
            let status: Vec<Status> = r.dims.iter().map(|d| d.status).collect();
            assert_eq!(
                status,
                [Status::Unconstrained, Status::Linked, Status::Linked],
                "{name}"
            );
        }
        // No silent drops: every guard of the text has a fate.
        let n = all_guards(&m).len()
            + m.equalities.len()
            + m.relations.len()
            + m.data_dependent.len()
            + m.unreadable.len();
        assert_eq!(r.guards.len(), n, "{name}");
        for g in &r.guards {
            assert!(
                ["periodic", "enumeration", "joint", "relation", "z3"].contains(&g.fate.as_str()),
                "{name}: {g:?}"
            );
        }
    }
}

/// A guard outside the engine's methods over an unbounded range goes to Z3 before it is called
/// undecided (the issue's Dim.AUTO window-attention modulus: proved for every size), and one
/// that fails only for small sizes is enumerated over its first 65,536 values with the rest
/// proved by Z3. Checked against brute force with the exact evaluator.
#[test]
fn diagnose_asks_z3_before_calling_a_guard_undecided() {
    use dimguard::api::{diagnose_text, Examples};
    use dimguard::prove::Mode;
    use dimguard::solver::report::GuardMethod;
    let msg = |g: &str| {
        format!(
            "Constraints violated (h)!\n  - Not all values of h = L['x'].size()[2] in the specified range 64 <= h <= 9223372036854775807 satisfy the generated guard {}.\n",
            g.replace('h', "L['x'].size()[2]")
        )
    };
    let run = |g: &str, z3: Option<Mode>| {
        diagnose_text(&msg(g), &Examples::default(), z3, 5_000, None)
            .unwrap()
            .0
    };
    // The window-attention modulus is decided without Z3 since the guards are read in normal
    // form (`Pw` a multiple of 7 is `7*(Pw//7)`, so `Pw % (Pw//7)` is 0): the periodic engine
    // answers, with or without Z3.
    let window = "(((h // 4) + (7 - ((h // 4) % 7)) % 7) % (((h // 4) + (7 - ((h // 4) % 7)) % 7) // 7)) == 0";
    for z3 in [None, Some(Mode::Auto)] {
        let r = run(window, z3);
        let d = &r.dims[0];
        assert_eq!(d.status, Status::Spurious);
        assert_eq!(d.guards[0].method, GuardMethod::Periodic);
        assert_eq!(r.guards[0].fate.as_str(), "periodic");
    }
    let m = read(&msg(window), &[]);
    let g = &m.dims[0].guards[0].expr;
    let var = m.dims[0].source.clone().unwrap();
    assert!((64..200_000).all(|h| g.holds_at(&var, h)));
    // Fails for some small sizes, passes for every size from 5000 (a square modulo a
    // size-dependent divisor: no periodic set, and its quotient takes too many values for the
    // engine's piecewise method).
    let small = "(((h*h) % (h // 7)) == 0) or (h >= 5000)";
    let r = run(small, Some(Mode::Auto));
    let d = &r.dims[0];
    assert_eq!(d.guards[0].method, GuardMethod::Z3);
    let m = read(&msg(small), &[]);
    let g = &m.dims[0].guards[0].expr;
    let head = (64..5000).filter(|&h| g.holds_at(&var, h)).count() as u128;
    assert!((5000..200_000).all(|h| g.holds_at(&var, h)));
    let f = d.answer.accepted.as_ref().unwrap();
    assert_eq!(f.count, head + (i64::MAX as u128 - 5000 + 1));
    let set = dimguard::solver::DimSet::from_segments(f.segments.clone()).unwrap();
    assert!((64..20_000).all(|h| set.contains(h) == g.holds_at(&var, h)));
}

/// Counts the pairs of `lo..=hi` x `lo..=hi` at which `g` holds over `a` and `b` (the oracle
/// evaluator, pair by pair).
fn pairs(g: &dimguard::solver::Expr, a: &str, b: &str, lo: i128, hi: i128) -> u128 {
    use dimguard::solver::expr::Value;
    let mut n = 0;
    for x in lo..=hi {
        for y in lo..=hi {
            let env = |s: &str| (s == a).then_some(x).or((s == b).then_some(y));
            if matches!(g.eval(&env), Ok(Value::Bool(true))) {
                n += 1;
            }
        }
    }
    n
}

#[test]
fn texts_users_paste_from_public_issues_are_read() {
    // A relation message wrapped over indented lines, with and without the exception's name.
    for f in [
        "pasted/relation_wrapped.txt",
        "pasted/relation_wrapped_bare.txt",
    ] {
        let m = read(&load(f), &[]);
        assert_eq!(
            m.equalities,
            vec![("img_ids_1".to_string(), "hidden_states_1".to_string())],
            "{f}"
        );
        assert_eq!(
            m.dims[1].source.as_deref(),
            Some("L['hidden_states'].size()[1]")
        );
    }
    // `Ignored guard Eq(s0*s1, 16) == True` alone: read as a guard over torch's symbols, with
    // what torch did and what is missing said.
    let m = read(
        &load("pasted/ignored_guard.log.txt"),
        &[("s0", (2, 64)), ("s1", (2, 64))],
    );
    assert_eq!(m.form, Form::TorchLogs);
    let names: Vec<&str> = m.dims.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["s0", "s1"]);
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("torch ignored the guard Eq(s0*s1, 16)")));
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("never says which input sizes s0, s1")));
    let r = report(&m, &[]);
    let j = &r.joint_sets[0];
    assert_eq!(j.accepted, pairs(&m.joint[0].expr, "s0", "s1", 2, 64));
    assert_eq!(j.accepted, 3); // 2x8, 4x4, 8x2
                               // A TORCH_LOGS excerpt without create_symbol lines: the sizes are torch's symbols, the
                               // replacement an equality, the guard's line kept; the note says what to add.
    let m = read(
        &load("pasted/no_create_symbol.log.txt"),
        &[("s0", (2, 40)), ("s1", (2, 40)), ("s3", (2, 40))],
    );
    let names: Vec<&str> = m.dims.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["s0", "s1", "s3"]);
    assert_eq!(m.equalities, vec![("s1".to_string(), "s3".to_string())]);
    assert_eq!(m.joint[0].text, "Eq(Mod(3584*s0, 512*s1), 0)");
    let p = m.joint[0].provenance.as_ref().unwrap();
    assert_eq!((p.file.as_str(), p.line), ("model.py", 77));
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("s0, s1, s3") && n.contains("create_symbol")));
    let r = report(&m, &[]);
    let j = r
        .joint_sets
        .iter()
        .find(|j| j.dims.iter().any(|d| d == "s0"))
        .expect("the joint set of s0 and s1");
    assert_eq!(
        j.accepted,
        pairs(&m.joint[0].expr, "s0", "s1", 2, 40),
        "{:?}",
        j.dims
    );
    // torch 2.1's summary of dimension constraints behind log prefixes: a specialization.
    let m = read(&load("pasted/specializations_torch21.log.txt"), &[]);
    assert_eq!(m.dims.len(), 1);
    assert_eq!(m.dims[0].source.as_deref(), Some("L['x'].size()[0]"));
    assert_eq!(m.dims[0].specialized, Some(1));
    // Prose quoting a guard beside its create_symbol line: s0 must be 977 (brute force over a
    // window around it; the range is 2..2^63-2).
    let m = read(&load("pasted/prose_create_symbol.txt"), &[]);
    assert_eq!(m.dims[0].range, Some((2, 9223372036854775806)));
    assert!(
        !m.dims[0].every_guard,
        "an excerpt does not list every guard"
    );
    let r = report(&m, &[]);
    let g = &m.dims[0].guards[0];
    let want: Vec<i128> = (2..100_000)
        .filter(|&x| g.expr.holds_at("L['x'].size()[1]", x))
        .collect();
    assert_eq!(want, [977]);
    assert_eq!(members(&r, 0), want);
}

#[test]
fn torchs_fix_is_judged_over_the_users_range() {
    // torch 2.15 on a BERT-like embedding (tests/data/forms/bert_position.py): seq in 2..512,
    // a 128-entry position table. torch suggests Dim('seq', max=128), which admits 0 and 1; the
    // user's range excludes them, so the fix is sound where it was asked to work.
    let m = read(&load("bert_position.exception.txt"), &[]);
    assert_eq!(m.dims[0].range, Some((2, 512)));
    let r = report(&m, &[]);
    let fx = r.dims[0].torch_fix.as_ref().expect("torch's fix checked");
    let g = &m.dims[0].guards[0];
    let failing = (2..=128)
        .filter(|&x| !g.expr.holds_at("L['ids'].size()[1]", x))
        .count();
    assert_eq!(failing, 0);
    assert!(fx.sound, "{fx:?}");
    assert_eq!((fx.admitted, fx.failing, fx.outside_range), (127, 0, 2));
    assert_eq!(fx.judged_over, Some([2, 512]));
    assert!(!fx.range_is_default);
}

#[test]
fn torch_215s_glued_specialization_is_read_from_the_exception_and_the_log() {
    // torch 2.15 glues its last "Not all values" bullet and "Specializations unexpectedly
    // required (batch)!" onto one line (tools/make_form_fixtures.py, case `glued`).
    let text = load("glued.exception.txt");
    assert!(text.contains("<= 255Specializations unexpectedly required (batch)!"));
    let m = read(&text, &[]);
    assert_eq!(m.form, Form::ConstraintViolation);
    let batch = m.dims.iter().find(|d| d.name == "batch").unwrap();
    assert_eq!((batch.specialized, batch.forced), (Some(2), true));
    let seq = m.dims.iter().find(|d| d.name == "seq").unwrap();
    assert_eq!(seq.range, Some((2, 512)));
    assert_eq!(
        seq.guards[0].text,
        "2 <= L['x'].size()[1] and L['x'].size()[1] <= 255"
    );
    let r = report(&m, &[]);
    brute_force("glued", &m, &r);
    let i = m.dims.iter().position(|d| d.name == "seq").unwrap();
    assert_eq!(members(&r, i), (2..=255).collect::<Vec<i128>>());
    // The log of the same export gives the same length.
    let log = read(&load("glued.log.txt"), &[]);
    let r = report(&log, &[]);
    let d = r
        .dims
        .iter()
        .find(|d| d.source.as_deref() == Some("L['x'].size()[1]"))
        .expect("the length in the log");
    let f = d.answer.accepted.as_ref().expect("decided");
    let set = dimguard::solver::DimSet::from_segments(f.segments.clone()).unwrap();
    assert!(
        (2..=255).all(|x| set.contains(x)) && !set.contains(256),
        "{f:?}"
    );
}

#[test]
fn a_printed_exported_program_gives_its_dims_relations_and_spec() {
    // `print(ep)` of a torch 2.15 program (tools/make_form_fixtures.py, case `printed`), beside
    // the program's own facts read from the ExportedProgram object (its inputs' symbolic shapes
    // and `range_constraints`), not from the printed text.
    let m = read(&load("printed.program.txt"), &[]);
    assert_eq!(m.form, Form::Program);
    let facts: serde_json::Value = serde_json::from_str(&load("printed.expected.json")).unwrap();
    let ranges = facts["ranges"].as_object().unwrap();
    let range_of = |k: &str| {
        let r = &ranges[k];
        (
            r[0].as_i64().unwrap() as i128,
            r[1].as_i64().unwrap() as i128,
        )
    };
    let mut checked = 0;
    for (input, dims) in facts["shapes"].as_object().unwrap() {
        for (i, d) in dims.as_array().unwrap().iter().enumerate() {
            let d = d.as_str().unwrap();
            let source = format!("L['{input}'].size()[{i}]");
            let entry = m.dims.iter().find(|e| e.source.as_deref() == Some(&source));
            if d.parse::<i128>().is_ok() {
                assert!(entry.is_none(), "{source} is static");
                assert!(m
                    .notes
                    .iter()
                    .any(|n| n.contains(&format!("{source} = {d}"))));
                continue;
            }
            let entry = entry.unwrap_or_else(|| panic!("{source} is read"));
            assert_eq!(entry.range, Some(range_of(d)), "{source}");
            checked += 1;
        }
    }
    assert_eq!(checked, 2);
    // The relation read gives x's size from y's at every value of the symbol's range, as the
    // program's own expression does.
    let rel = &m.relations[0];
    let (lo, hi) = range_of("s17");
    let theirs = dimguard::solver::parse_expr("s17 + 2").unwrap();
    let ours = dimguard::solver::parse_expr(&rel.expr).unwrap();
    for v in lo..=hi {
        let a = theirs.eval(&|s: &str| (s == "s17").then_some(v)).unwrap();
        let b = ours.eval(&|s: &str| (s == rel.other).then_some(v)).unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "at {v}");
    }
    let r = report(&m, &[]);
    assert!(r.dynamic_shapes.contains("Dim('"), "{}", r.dynamic_shapes);
    assert_eq!(r.linked.len(), 1, "{:?}", r.linked);
}

#[test]
fn torch_compile_recompile_reasons_say_what_the_compiled_graph_accepts() {
    // TORCH_LOGS="recompiles" of torch 2.15 (tools/make_form_fixtures.py, case `recompile`).
    // A size compiled static at 5, called with 3: the graph accepts 5 only, 3 fails, and the
    // advice is mark_dynamic.
    let m = read(&load("recompile_static.log.txt"), &[("x_0", (1, 64))]);
    assert_eq!(m.form, Form::GuardFailed);
    let rt = m.runtime.as_ref().unwrap();
    assert_eq!((rt.text.as_str(), rt.got), ("x.size()[0] == 5", Some(3)));
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("torch._dynamo.mark_dynamic(x, 0")));
    let r = report(&m, &[(Some("x_0"), 3)]);
    assert_eq!(members(&r, 0), [5]);
    assert_eq!(r.runtime.as_ref().unwrap().passes, Some(false));
    // A size marked dynamic in 2..8 (mark_dynamic(x, 0, min=2, max=8)), called with 16: the
    // guard that failed is read, and the sizes it accepts are the marked range.
    let m = read(&load("recompile_dynamic.log.txt"), &[("x_0", (1, 64))]);
    assert_eq!(m.form, Form::GuardFailed);
    assert_eq!(m.runtime.as_ref().unwrap().text, "2 <= x.size()[0] <= 8");
    let r = report(&m, &[]);
    brute_force("recompile_dynamic", &m, &r);
    assert_eq!(members(&r, 0), (2..=8).collect::<Vec<i128>>());
}

#[test]
fn recompile_reasons_with_the_frames_guard_list_give_every_size_the_graph_accepts() {
    // TORCH_LOGS="recompiles,guards" of torch 2.15 (tools/make_form_fixtures.py, case
    // `recompile_guards`); the oracle is torch itself: the sizes in 1..40 at which the graph
    // compiled at the first call runs without a recompile (error_on_recompile).
    let oracle: serde_json::Value =
        serde_json::from_str(&load("recompile_guards.expected.json")).unwrap();
    let accepted = |kind: &str| -> Vec<i128> {
        oracle[kind]["x.size()[0]"]["accepted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_i64().unwrap() as i128)
            .collect()
    };
    // A branch on x.shape[0] % 4, compiled dynamic at 8, called with 6: the failed guard alone
    // allows every multiple of 4; the frame's list adds 4 <= x.shape[0].
    let m = read(
        &load("recompile_guards_branch.log.txt"),
        &[("x_0", (1, 40))],
    );
    assert_eq!(m.form, Form::GuardFailed);
    // One cache entry, 0/0: the guard it failed first, then the frame's list.
    let rt = m.runtime.as_ref().unwrap();
    assert_eq!(rt.entries.len(), 1);
    assert_eq!(
        rt.entries[0].guards[0].text, "(x.size()[0] % 4) == 0",
        "the guard that failed"
    );
    assert!(
        rt.entries[0].guards.len() >= 3,
        "{:?}",
        rt.entries[0].guards
    );
    assert!(rt.listed);
    assert_eq!(m.dims.len(), 1, "{:?}", m.dims);
    let r = report(&m, &[(Some("x_0"), 6)]);
    brute_force("recompile_guards_branch", &m, &r);
    assert_eq!(members(&r, 0), accepted("branch"));
    assert_eq!(r.runtime.as_ref().unwrap().passes, Some(false));
    // A graph compiled static at (5, 3), called with (3, 3): both sizes are held, and
    // mark_dynamic is the advice for the one that changed.
    let m = read(
        &load("recompile_guards_static.log.txt"),
        &[("x_0", (1, 40)), ("x_1", (1, 40))],
    );
    let rt = m.runtime.as_ref().unwrap();
    assert_eq!((rt.text.as_str(), rt.got), ("x.size()[0] == 5", Some(3)));
    let r = report(&m, &[(Some("x_0"), 3)]);
    let x0 = r.dims.iter().position(|d| d.name == "x_0").unwrap();
    let x1 = r.dims.iter().position(|d| d.name == "x_1").unwrap();
    assert_eq!(members(&r, x0), accepted("static"));
    assert_eq!(members(&r, x1), [3]);
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("torch._dynamo.mark_dynamic(x, 0")));
    // Without the guard list (TORCH_LOGS="recompiles" only), the note says how to get it.
    let m = read(&load("recompile_static.log.txt"), &[("x_0", (1, 64))]);
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("TORCH_LOGS=\"recompiles,guards\"")));
}

#[test]
fn a_missing_upper_bound_names_the_size_and_the_flag_that_supplies_it() {
    // pytorch/TensorRT#4610 as posted: an unbacked size (`torch.Size([u0, 4])`) with no max.
    let m = read(&load("real/torch_tensorrt_4610.no_max_bound.txt"), &[]);
    assert_eq!(m.dims.len(), 1);
    let d = &m.dims[0];
    assert_eq!(
        (d.source.as_deref(), d.symbol.as_deref(), d.range),
        (
            Some("dynamic_rows.shape[0]"),
            Some("u0"),
            Some((0, dimguard::solver::SIZE_MAX))
        )
    );
    assert!(m
        .notes
        .iter()
        .any(|n| n.contains("mark_dynamic") && n.contains("--range dynamic_rows_0=LO..HI")));
    // The bound given is the bound used.
    let m = read(
        &load("real/torch_tensorrt_4610.no_max_bound.txt"),
        &[("dynamic_rows_0", (1, 1200))],
    );
    assert_eq!(m.dims[0].range, Some((1, 1200)));
    let r = report(&m, &[]);
    assert_eq!(
        (r.dims[0].range, r.dims[0].status),
        (Some([1, 1200]), Status::Unconstrained)
    );
}

/// The texts issue 42 quotes, as quoted there: a text that states the answer gives that answer
/// over a range that holds it; a cut text says it is cut; the data-dependent and prose forms
/// are read.
#[test]
fn stated_answers_are_kept_and_cut_texts_say_so() {
    // `equal to 1, but got 1024`: only 1, never "no size passes" over the default 2..
    let m = read(
        "RuntimeError: Expected input at *args[2].shape[0] to be equal to 1, but got 1024",
        &[],
    );
    let r = report(&m, &[]);
    assert_eq!(members(&r, 0), [1]);
    // `resulted in a specialized value of 1` with torch's fix `batch = 1`.
    let m = read("torch._dynamo.exc.UserError: Constraints violated (batch)! For more information, run with TORCH_LOGS=\"+dynamic\".\n  - solving the guards generated for batch resulted in a specialized value of 1.\n\nSuggested fixes:\n  batch = 1\n", &[]);
    let r = report(&m, &[]);
    assert_eq!(r.dims[0].specialized, Some(1));
    assert!(r.dims[0].range.is_none_or(|[lo, hi]| lo <= 1 && 1 <= hi));
    // `Dim.DYNAMIC ... tracing inferred a static shape of 30`: 30 only, in its range.
    let m = read("ValueError: Found the following conflicts between user-specified ranges and inferred ranges from model tracing:\n- Received user-specified dim hint Dim.DYNAMIC(min=None, max=None), but tracing inferred a static shape of 30 for dimension inputs['x'].shape[1].\n", &[]);
    let d = &m.dims[0];
    assert_eq!(
        (d.source.as_deref(), d.specialized),
        (Some("inputs['x'].shape[1]"), Some(30))
    );
    assert!(d.range.is_some_and(|(lo, hi)| lo <= 30 && 30 <= hi));
    // A text cut mid-message: said, never "unconstrained".
    let m = forms::read("torch._dynamo.exc.UserError: Constraints violated (L['x'].size()[0])! For more information, run with TORCH_LOGS=\"+dynamic\".\n  - Not all values of RelaxedUnspecConstraint(L['x'].size()[0]) are valid because L['").unwrap();
    assert!(m.dims.is_empty(), "{:?}", m.dims);
    assert!(
        m.notes.iter().any(|n| n.contains("the text is cut")),
        "{:?}",
        m.notes
    );
    // `Could not extract specialized integer from data-dependent expression u1`, `u0+1`
    // without spaces.
    for (text, expr) in [
        ("torch.fx.experimental.symbolic_shapes.GuardOnDataDependentSymNode: Could not extract specialized integer from data-dependent expression u1 (unhinted: u1).  (Size-like symbols: none)", "u1"),
        ("Could not guard on data-dependent expression u0+1 < 5 (unhinted: u0+1 < 5).  (Size-like symbols: u0)", "u0+1 < 5"),
    ] {
        let m = forms::read(text).unwrap();
        assert!(
            m.data_dependent.iter().any(|g| g.text == expr),
            "{text}: {:?}",
            m.data_dependent
        );
    }
    // A guard in backticks inside prose in another language, over `values.size(0)`.
    let m = read(
        "La condición `10 <= values.size(0)` falla cuando el lote es pequeño.",
        &[("values_0", (2, 100))],
    );
    let r = report(&m, &[]);
    assert_eq!(members(&r, 0), (10..=100).collect::<Vec<i128>>());
}
