//! Programs exported by PyTorch 2.15 with `Dim.AUTO` and no bounds (sizes claimed up to
//! `2^63 - 1`), made by `tools/export_unbounded.py` in every form dimguard reads: the saved
//! program (`check`), the `TORCH_LOGS="+dynamic"` log and the `TORCH_TRACE` of the same export
//! (`diagnose`). Checked against the program itself (`<name>_unbounded.runs.json`: the exported
//! program run at sizes near the small corner and at larger ones), and the forms against each
//! other.

mod common;

use common::{data, json, member, root, value_of};
use serde_json::Value;

/// The linked group of each form (`check` on the program, `diagnose` on the log and the
/// trace), and the least claimed value of each size (by source, from `check`).
#[allow(clippy::type_complexity)]
fn forms(name: &str) -> (Vec<(&'static str, Value)>, Vec<(String, i64)>) {
    let (all, mins) = reports(name);
    (
        all.into_iter()
            .map(|(form, r, key)| (form, group_of(&r, key.joint, key.set)))
            .collect(),
        mins,
    )
}

/// Where a form's report keeps its linked groups and each size's own set.
#[derive(Clone, Copy)]
struct Keys {
    /// The groups (`joint` in `check`, `joint_sets` in `diagnose`).
    joint: &'static str,
    /// Each size's own set (`accepted` in `check`, `feasible` in `diagnose`).
    set: &'static str,
}

/// The report of each form (`check` on the program, `diagnose` on the log and the trace) with
/// its keys, and the least claimed value of each size (by source, from `check`).
#[allow(clippy::type_complexity)]
fn reports(name: &str) -> (Vec<(&'static str, Value, Keys)>, Vec<(String, i64)>) {
    let pt2 = data(&format!("pt2/{name}_unbounded.pt2"));
    let log = data(&format!("forms/{name}_unbounded.log.txt"));
    let trace = data(&format!("traces/{name}_unbounded.log"));
    let budget = ["--time-budget", "10"];
    let c = json(&[&budget[..], &["check", "--json", &pt2]].concat());
    let l = json(&[&budget[..], &["diagnose", "--json", &log]].concat());
    let t = json(&[&budget[..], &["diagnose", "--json", &trace]].concat());
    let mins = claimed_mins(&c);
    let check = Keys {
        joint: "joint",
        set: "accepted",
    };
    let diagnose = Keys {
        joint: "joint_sets",
        set: "feasible",
    };
    (
        vec![
            ("check", c, check),
            ("torch_logs", l, diagnose),
            ("torch_trace", t, diagnose),
        ],
        mins,
    )
}

/// A report's linked group (`joint`), or, where the solver split the sizes into independent parts
/// and no guard links them, their product as one group: each size's own set (`set_key`) as the
/// one box, complete when every size is decided.
fn group_of(report: &Value, joint: &str, set_key: &str) -> Value {
    if !report[joint][0].is_null() {
        return report[joint][0].clone();
    }
    let dims = report["dims"].as_array().unwrap();
    let sets: Vec<&Value> = dims.iter().map(|d| &d[set_key]).collect();
    if dims.is_empty() || sets.iter().any(|s| s.is_null()) {
        return Value::Null;
    }
    serde_json::json!({
        "sources": dims.iter().map(|d| d["source"].clone()).collect::<Vec<_>>(),
        "boxes": [sets],
        "boxes_complete": true,
        "undecided": null,
    })
}

/// The least claimed value of each size of a `check --json` report (by source).
fn claimed_mins(c: &Value) -> Vec<(String, i64)> {
    c["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["source"].as_str().unwrap().to_string(),
                d["claimed"]["min"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// The program's recorded runs (`<name>_unbounded.runs.json`) and its input names.
fn runs_of(name: &str) -> (Value, Vec<String>) {
    let runs: Value = serde_json::from_str(
        &std::fs::read_to_string(data(&format!("pt2/{name}_unbounded.runs.json"))).unwrap(),
    )
    .unwrap();
    let inputs = runs["inputs"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    (runs, inputs)
}

/// Every run of the program that dimguard's joint set says passes really ran; when the joint
/// set is decided, every run it says fails really raised.
/// Sizes below their claimed range are not judged (torch runs some of them, dimguard answers
/// for the claimed range).
fn agrees_with_the_program(
    name: &str,
    joint: &Value,
    form: &str,
    mins: &[(String, i64)],
) -> (usize, usize) {
    let (runs, inputs) = runs_of(name);
    let sources: Vec<&str> = joint["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    // Outside the listed boxes means rejected only when they are the whole joint set (a tied
    // set over unbounded ranges lists its first blocks only).
    let decided = joint.get("undecided").is_none_or(Value::is_null)
        && joint["boxes_complete"].as_bool().unwrap();
    let (mut pass, mut fail) = (0, 0);
    for r in runs["runs"].as_array().unwrap() {
        let (shapes, ran) = (&r[0], r[1].as_bool().unwrap());
        let t: Vec<i64> = sources
            .iter()
            .map(|s| value_of(s, &inputs, shapes))
            .collect();
        let claimed = sources.iter().zip(&t).all(|(s, &v)| {
            mins.iter()
                .find(|(src, _)| src == s)
                .is_none_or(|&(_, lo)| v >= lo)
        });
        if !claimed {
            continue;
        }
        let inside = joint["boxes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|b| (0..t.len()).all(|l| member(&b[l], t[l])));
        if inside {
            assert!(ran, "{name} {form}: {t:?} said to pass, the program raises");
            pass += 1;
        } else if decided {
            // Outside the joint set: a guard fails (or a size is outside its own accepted set).
            assert!(!ran, "{name} {form}: {t:?} said to fail, the program runs");
            fail += 1;
        }
    }
    (pass, fail)
}

#[test]
fn a_patch_grid_is_decided_in_every_form_and_agrees_with_the_program() {
    let (all, mins) = forms("patch16");
    for (form, j) in &all {
        assert!(
            j.get("undecided").is_none_or(Value::is_null),
            "patch16 {form}: {j}"
        );
        let (pass, fail) = agrees_with_the_program("patch16", j, form, &mins);
        // The runs near the small corner hold both passing and failing sizes.
        assert!(
            pass > 5 && fail > 5,
            "patch16 {form}: {pass} pass, {fail} fail"
        );
    }
    // Every form gives the same joint set.
    let boxes: Vec<&Value> = all.iter().map(|(_, j)| &j["boxes"]).collect();
    assert_eq!(boxes[0], boxes[1], "check and TORCH_LOGS differ");
    assert_eq!(boxes[0], boxes[2], "check and TORCH_TRACE differ");
}

/// Whether a report's budget ran out (`budget.exhausted`), or a size is undecided for that
/// reason: such a form may report no linked group.
fn budget_cut(report: &Value) -> bool {
    !report["budget"]["exhausted"].is_null()
        || report["dims"].as_array().unwrap().iter().any(|d| {
            d["undecided"]
                .as_str()
                .is_some_and(|u| u.contains("budget") || u.contains("limit"))
        })
}

/// Every run of the program against each size's own answer (`dims[]`), not only the group's:
/// a size outside a set its answer says every passing value lies in (`diagnose`'s `feasible`,
/// the values its own guards keep; `with_some_partner`; `check`'s `accepted` for a size linked
/// to none) makes the run fail; a run where every size is vouched for runs. A size is vouched for
/// by its own set when its answer stands alone (`diagnose` status other than `linked` or
/// `undecided`; `check` with no `linked_with`), else by the group: the run's sizes of the
/// group inside one of its boxes. Both claims are judged on every run. Returns the runs judged
/// to pass and to fail.
fn sizes_agree_with_the_program(
    name: &str,
    report: &Value,
    keys: Keys,
    group: &Value,
    form: &str,
    mins: &[(String, i64)],
) -> (usize, usize) {
    let (runs, inputs) = runs_of(name);
    let dims = report["dims"].as_array().unwrap();
    let source = |d: &Value| d["source"].as_str().unwrap().to_string();
    let group_sources: Vec<String> = group["sources"].as_array().map_or(vec![], |a| {
        a.iter().map(|s| s.as_str().unwrap().to_string()).collect()
    });
    let alone = |d: &Value| {
        d["undecided"].is_null()
            && !d[keys.set].is_null()
            && match d["status"].as_str() {
                Some(st) => st != "linked" && st != "undecided",
                None => d["linked_with"].as_array().is_none_or(Vec::is_empty),
            }
    };
    let (mut pass, mut fail) = (0, 0);
    for r in runs["runs"].as_array().unwrap() {
        let (shapes, ran) = (&r[0], r[1].as_bool().unwrap());
        let t: Vec<i64> = dims
            .iter()
            .map(|d| value_of(&source(d), &inputs, shapes))
            .collect();
        // Sizes below their claimed range (or the text's range) are not judged.
        let claimed = dims.iter().zip(&t).all(|(d, &v)| {
            let lo = mins.iter().find(|(s, _)| *s == source(d)).map(|p| p.1);
            lo.is_none_or(|lo| v >= lo)
                && d["range"]
                    .as_array()
                    .is_none_or(|rg| v >= rg[0].as_i64().unwrap())
        });
        if !claimed {
            continue;
        }
        // A set every passing value of the size lies in.
        let excluded = dims.iter().zip(&t).find(|(d, &v)| {
            let decided = d["undecided"].is_null();
            let own = (decided && (keys.set == "feasible" || alone(d)))
                .then(|| &d[keys.set])
                .filter(|s| !s.is_null());
            let partner = Some(&d["with_some_partner"]).filter(|s| decided && !s.is_null());
            own.into_iter().chain(partner).any(|s| !member(s, v))
        });
        if let Some((d, v)) = excluded {
            assert!(
                !ran,
                "{name} {form}: {t:?} said to fail ({} = {v} outside its answer {}), the \
                 program runs",
                source(d),
                d
            );
            fail += 1;
        }
        // Judged apart from the sets above: a report whose answers contradict each other (a
        // size's own set said to stand alone, and a partner set leaving some of it out) fails
        // on the run either way.
        let in_group = |d: &Value| {
            group_sources.contains(&source(d))
                && group["boxes"].as_array().unwrap().iter().any(|b| {
                    group_sources.iter().enumerate().all(|(l, s)| {
                        let k = dims.iter().position(|d| source(d) == *s).unwrap();
                        member(&b[l], t[k])
                    })
                })
        };
        let vouched = dims
            .iter()
            .zip(&t)
            .all(|(d, &v)| (alone(d) && member(&d[keys.set], v)) || in_group(d));
        if vouched {
            assert!(
                ran,
                "{name} {form}: {t:?} said to pass by the sizes' own answers, the program \
                 raises: {dims:#?}"
            );
            pass += 1;
        }
    }
    (pass, fail)
}

#[test]
fn what_is_decided_of_unbounded_linked_programs_agrees_with_the_program() {
    for name in ["two_stem", "window7"] {
        let (all, mins) = reports(name);
        let mut judged = 0;
        for (form, report, keys) in all {
            let j = group_of(&report, keys.joint, keys.set);
            // A form whose budget ran out before a group was reported claims nothing of the
            // group; the program's own form always reports its group; any other form without a
            // group says every size stands alone (judged below).
            if j.is_null() {
                assert_ne!(form, "check", "{name}: check reports no linked group");
                assert!(
                    budget_cut(&report),
                    "{name} {form}: no linked group and no budget ran out: {report:#}"
                );
            } else {
                let (pass, fail) = agrees_with_the_program(name, &j, form, &mins);
                judged += pass + fail;
            }
            // A size the link restricts is not also said to be linked by guards that hold for
            // every combination of the accepted values (the sentence of the same joint set).
            for d in report["dims"].as_array().unwrap() {
                let said_free = d["advice"].as_array().is_some_and(|a| {
                    a.iter().any(|s| {
                        s.as_str()
                            .is_some_and(|s| s.contains("hold for every combination"))
                    })
                });
                assert!(
                    !(d["status"] == "linked" && said_free),
                    "{name} {form}: {} linked, yet its advice says the link restricts nothing: \
                     {}",
                    d["name"],
                    d["advice"]
                );
            }
            // Each size's own answer, in every form, budget-cut or not.
            let (pass, fail) = sizes_agree_with_the_program(name, &report, keys, &j, form, &mins);
            assert!(
                pass + fail > 0,
                "{name} {form}: no run judged by the sizes' answers"
            );
            judged += pass + fail;
        }
        assert!(judged > 20, "{name}: only {judged} runs judged");
    }
}

/// Whether `t` (in the tied report's `sources` order) is in the tied joint set: its first sizes in
/// one box of the reduced set, each tied size in its range and in its partner's block.
fn in_tied(tied: &Value, t: &[i64]) -> bool {
    let boxed = tied["boxes"].as_array().unwrap().iter().any(|b| {
        b.as_array()
            .unwrap()
            .iter()
            .enumerate()
            .all(|(l, side)| member(side, t[l]))
    });
    let tied_ok = tied["ties"].as_array().unwrap().iter().all(|tie| {
        let dims: Vec<&str> = tie["dims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        let names: Vec<&str> = tied["dims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_str().unwrap())
            .collect();
        let at = |n: &str| t[names.iter().position(|x| *x == n).unwrap()];
        let (d, c) = (
            tie["block"].as_i64().unwrap(),
            tie["offset"].as_i64().unwrap(),
        );
        let (lo, hi) = (
            tie["range"][0].as_i64().unwrap(),
            tie["range"][1].as_i64().unwrap(),
        );
        let b = at(dims[1]);
        (lo..=hi).contains(&b) && (at(dims[0]) + c).div_euclid(d) == (b + c).div_euclid(d)
    });
    boxed && tied_ok
}

/// Two images through stride-4 stems (`(h1-1)//4 == (h2-1)//4`), claimed 2..2^63-1: the joint
/// set is a union of diagonal blocks, decided in closed form in every form (the program, its
/// TORCH_LOGS log, its TORCH_TRACE), with the same answer, and every run of the program near the
/// small corner and at larger sizes agrees with it: those it says pass ran, those it says fail
/// raised. Its examples are re-checked, and each tied pair may share one Dim.
#[test]
fn two_stems_are_decided_in_closed_form_in_every_form_and_agree_with_the_program() {
    let (all, mins) = forms("two_stem");
    let (runs, inputs) = runs_of("two_stem");
    let mut answers = Vec::new();
    for (form, j) in &all {
        let tied = &j["tied"];
        assert!(tied.is_object(), "two_stem {form}: no closed form: {j}");
        assert!(!tied["accepted_examples"].as_array().unwrap().is_empty());
        assert!(!tied["rejected_examples"].as_array().unwrap().is_empty());
        assert!(tied["ties"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["shared_dim"] == true));
        let sources: Vec<&str> = tied["sources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap())
            .collect();
        let (mut pass, mut fail) = (0, 0);
        for r in runs["runs"].as_array().unwrap() {
            let (shapes, ran) = (&r[0], r[1].as_bool().unwrap());
            let t: Vec<i64> = sources
                .iter()
                .map(|s| value_of(s, &inputs, shapes))
                .collect();
            let claimed = sources.iter().zip(&t).all(|(s, &v)| {
                mins.iter()
                    .find(|(src, _)| src == s)
                    .is_none_or(|&(_, lo)| v >= lo)
            });
            if !claimed {
                continue;
            }
            let inside = in_tied(tied, &t);
            assert_eq!(inside, ran, "two_stem {form}: {t:?}");
            if inside {
                pass += 1;
            } else {
                fail += 1;
            }
        }
        assert!(
            pass > 5 && fail > 5,
            "two_stem {form}: {pass} pass, {fail} fail"
        );
        // The forms may order the sizes differently: the count and the ties' blocks and ranges.
        let mut ties: Vec<String> = tied["ties"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| format!("{} {} {}", t["block"], t["offset"], t["range"]))
            .collect();
        ties.sort();
        answers.push((tied["accepted"].clone(), ties));
    }
    assert_eq!(answers[0], answers[1], "check and TORCH_LOGS differ");
    assert_eq!(answers[0], answers[2], "check and TORCH_TRACE differ");
}

/// The two-stem program's corrected spec, the same in every form (the program, its TORCH_LOGS
/// log, its TORCH_TRACE): image1's sizes a `Dim` each from 5 on, image2's written as image1's
/// (one Dim per tied pair: the largest sound form, more than any box of the blocks), nothing
/// left undecided. tests/unbounded.rs's closed-form test checks the joint answer it comes from,
/// python/tests/test_tied_specs.py that torch 2.15 exports it.
#[test]
fn two_stems_print_one_tied_spec_in_every_form() {
    let budget = ["--time-budget", "10"];
    let pt2 = data("pt2/two_stem_unbounded.pt2");
    let log = data("forms/two_stem_unbounded.log.txt");
    let trace = data("traces/two_stem_unbounded.log");
    let forms = [
        (
            "check",
            json(&[&budget[..], &["check", "--json", &pt2]].concat()),
        ),
        (
            "torch_logs",
            json(&[&budget[..], &["diagnose", "--json", &log]].concat()),
        ),
        (
            "torch_trace",
            json(&[&budget[..], &["diagnose", "--json", &trace]].concat()),
        ),
    ];
    let mut specs = Vec::new();
    for (form, v) in &forms {
        let code = v["dynamic_shapes"].as_str().unwrap();
        let mut lines: Vec<&str> = code
            .lines()
            .map(|l| l.split("  #").next().unwrap().trim())
            .filter(|l| !l.is_empty())
            .collect();
        lines.sort();
        for want in [
            "image1_2 = Dim('image1_2', min=5)",
            "image1_3 = Dim('image1_3', min=5)",
            "image2_2 = image1_2",
            "image2_3 = image1_3",
        ] {
            assert!(lines.contains(&want), "{form}: {want} not in\n{code}");
        }
        let joint = if *form == "check" {
            &v["joint"][0]
        } else {
            &v["joint_sets"][0]
        };
        assert!(joint["undecided"].is_null(), "{form}: {joint}");
        assert!(joint["tied"].is_object(), "{form}");
        for d in v["dims"].as_array().unwrap() {
            assert!(d["undecided"].is_null(), "{form}: {d}");
        }
        specs.push(lines);
    }
    assert_eq!(specs[0], specs[1], "check and TORCH_LOGS differ");
    assert_eq!(specs[0], specs[2], "check and TORCH_TRACE differ");
}

/// A program's answer over `x`'s batch, H and W, by `check` without Z3 (asserted decided): its
/// one linked group (boxes complete), and each of the three sizes the group leaves out (solved
/// apart, issue 41's decomposition: Swin-T's batch) through its own accepted set; the program's
/// guards to judge it by.
struct Brute {
    boxes: Vec<Vec<dimguard::solver::DimSet>>,
    guards: Vec<dimguard::solver::Expr>,
    /// Where the batch, H and W sit in a tuple of the joint set, or their own accepted set when
    /// the group leaves them out.
    at: [Result<usize, dimguard::solver::DimSet>; 3],
}

impl Brute {
    /// Whether every guard of the program holds at (b, h, w), the exact evaluator's answer,
    /// after asserting that the answer (the joint set and the sizes apart) says the same.
    fn agrees_at(&self, b: i128, h: i128, w: i128) -> bool {
        let n = self.boxes.first().map_or(0, Vec::len);
        let mut t = vec![0; n];
        let mut apart = true;
        for (at, v) in self.at.iter().zip([b, h, w]) {
            match at {
                Ok(l) => t[*l] = v,
                Err(own) => apart &= own.contains(v),
            }
        }
        let env = |s: &str| match s {
            "L['x'].size()[0]" => Some(b),
            "L['x'].size()[2]" => Some(h),
            "L['x'].size()[3]" => Some(w),
            _ => None,
        };
        let truth = self.guards.iter().all(|g| g.truth(&env) == Ok(true));
        let said = apart
            && self
                .boxes
                .iter()
                .any(|bx| bx.iter().zip(&t).all(|(s, &v)| s.contains(v)));
        assert_eq!(said, truth, "(b, h, w) = ({b}, {h}, {w})");
        truth
    }
}

fn decided_without_z3(rel: &str) -> (dimguard::graph::CheckReport, Brute) {
    use dimguard::solver::{parse_guard, DimSet};
    let p = dimguard::graph::load(&root().join(rel)).unwrap();
    let r = dimguard::commands::check::check(&p, false).unwrap();
    assert_eq!(
        r.joint.len(),
        1,
        "{}",
        serde_json::to_string(&r.dims).unwrap()
    );
    let j = &r.joint[0];
    assert!(j.undecided.is_none(), "{:?}", j.undecided);
    assert!(j.boxes_complete);
    let boxes = j
        .boxes
        .iter()
        .map(|b| {
            b.iter()
                .map(|f| DimSet::from_segments(f.segments.clone()).unwrap())
                .collect()
        })
        .collect();
    let guards = p
        .guards_code
        .iter()
        .map(|g| parse_guard(g).unwrap())
        .collect();
    let at = |s: &str| {
        j.sources.iter().position(|x| x == s).ok_or_else(|| {
            let d = r.dims.iter().find(|d| d.source == s).unwrap();
            assert!(d.answer.undecided.is_none(), "{s}: {:?}", d.answer);
            let own = d.answer.accepted.as_ref().unwrap();
            DimSet::from_segments(own.segments.clone()).unwrap()
        })
    };
    let at = [
        at("L['x'].size()[0]"),
        at("L['x'].size()[2]"),
        at("L['x'].size()[3]"),
    ];
    (r, Brute { boxes, guards, at })
}

/// The Swin-style window attention (4x4 patches, padded to a multiple of the 7x7 window),
/// exported with `Dim.AUTO` and no bounds: 115 guards, identities of the padding
/// (`16*b*Pw*Ph == 784*b*(Pw//7)*(Ph//7)`) among them. Decided without Z3 (the guards in normal
/// form, `linked::normalize`), and exact: near the small corner, at 2^20 and at 2^40, every
/// tuple is in the joint set exactly when every guard of the program holds there.
#[test]
fn window7_is_decided_without_z3_and_exact_by_brute_force() {
    let (r, brute) = decided_without_z3("tests/data/pt2/window7_unbounded.pt2");
    let (mut pass, mut fail) = (0, 0);
    for (b0, h0, w0, n) in [
        (2i128, 4i128, 4i128, 64i128),
        (2, 1 << 20, (1 << 20) + 5, 30),
        (1 << 40, 1 << 40, 3 << 40, 30),
    ] {
        for b in [b0, b0 + 1] {
            for h in h0..h0 + n {
                for w in w0..w0 + n {
                    if brute.agrees_at(b, h, w) {
                        pass += 1;
                    } else {
                        fail += 1;
                    }
                }
            }
        }
    }
    assert!(pass > 50 && fail > 1000, "{pass} pass, {fail} fail");
    // The spec: H and W multiples of 28 from 56 on, the batch from 2 on.
    assert!(
        r.dynamic_shapes.contains("x_2 = 28*_x_2") && r.dynamic_shapes.contains("x_3 = 28*_x_3"),
        "{}",
        r.dynamic_shapes
    );
}

/// window7's corrected spec is the same in every form (the program, its TORCH_LOGS log, its
/// TORCH_TRACE), and no size is left undecided in any of them.
#[test]
fn window7_prints_one_spec_in_every_form() {
    let budget = ["--time-budget", "20"];
    let pt2 = data("pt2/window7_unbounded.pt2");
    let log = data("forms/window7_unbounded.log.txt");
    let trace = data("traces/window7_unbounded.log");
    let forms = [
        json(&[&budget[..], &["check", "--json", &pt2]].concat()),
        json(&[&budget[..], &["diagnose", "--json", &log]].concat()),
        json(&[&budget[..], &["diagnose", "--json", &trace]].concat()),
    ];
    let specs: Vec<&str> = forms
        .iter()
        .map(|v| v["dynamic_shapes"].as_str().unwrap())
        .collect();
    assert!(specs[0].contains("x_2 = 28*_x_2"), "{}", specs[0]);
    assert_eq!(specs[0], specs[1], "check and TORCH_LOGS differ");
    assert_eq!(specs[0], specs[2], "check and TORCH_TRACE differ");
    for v in &forms {
        for d in v["dims"].as_array().unwrap() {
            assert!(d["undecided"].is_null(), "{d}");
        }
    }
}

/// torchvision's Swin-T exported with `Dim.AUTO` and no bounds (the issue's own case; made by
/// `tools/export_unbounded.py swin_t`): 815 guards, 519 of them linking the batch, H and W, some
/// 15,000 characters long. Decided without Z3 (the guards over the unbounded batch in normal form,
/// `linked::normalize`): H and W in 224..227, the batch from 2 on. Exact by brute force around
/// the traced 224 at batches 2, 3, 2^20 and 2^40 (every guard of the program evaluated by the
/// exact evaluator), and every run of the program agrees.
#[test]
fn swin_t_unbounded_is_decided_without_z3_exact_and_agrees_with_the_program() {
    let pt2 = data("pt2/swin_t_unbounded.pt2");
    let (r, brute) = decided_without_z3("tests/data/pt2/swin_t_unbounded.pt2");
    let (mut pass, mut fail) = (0, 0);
    for b in [2i128, 3, 1 << 20, 1 << 40] {
        for h in 220..=230 {
            for w in [223, 224, 225, 227, 228, 231] {
                if brute.agrees_at(b, h, w) {
                    pass += 1;
                } else {
                    fail += 1;
                }
            }
        }
    }
    // 4 heights x 3 widths pass at each batch.
    assert_eq!((pass, fail), (48, 216));
    for want in [
        "x_0 = Dim('x_0', min=2)",
        "x_2 = Dim('x_2', min=224, max=227)",
        "x_3 = Dim('x_3', min=224, max=227)",
    ] {
        assert!(r.dynamic_shapes.contains(want), "{}", r.dynamic_shapes);
    }
    // The program's own runs, against the joint set `check --json` reports.
    let c = json(&["check", "--json", &pt2]);
    let mins = claimed_mins(&c);
    let (pass, fail) = agrees_with_the_program("swin_t", &c["joint"][0], "check", &mins);
    assert!(pass >= 10 && fail >= 40, "{pass} pass, {fail} fail");
}

/// `check`'s line "link excludes nothing: every combination of the sizes' accepted values
/// passes" is printed only where no tuple of the sizes' own sets fails. Oracle: each size's own
/// set is the values passing every guard over that size alone, and a tuple fails when some guard
/// of the program is false there (the guards evaluated apart, first values of each own set).
/// window7 printed it while (2, 32, 32) fails. The same for the HTML page's line.
#[test]
fn link_excludes_nothing_only_where_no_tuple_of_the_own_sets_fails() {
    use dimguard::solver::parse_guard;
    let mut judged = 0;
    for name in [
        "window7_unbounded",
        "two_stem_unbounded",
        "patch16_unbounded",
    ] {
        let rel = format!("tests/data/pt2/{name}.pt2");
        if !root().join(&rel).exists() {
            continue;
        }
        let pt2 = root().join(&rel).display().to_string();
        let text = common::stdout(&["check", &pt2]);
        let c = json(&["check", "--json", &pt2]);
        // The page says what the text says (its own renderer).
        let page =
            dimguard::html::render_json(&common::stdout(&["check", "--json", &pt2]), name).unwrap();
        let p = dimguard::graph::load(&root().join(&rel)).unwrap();
        let guards: Vec<_> = p
            .guards_code
            .iter()
            .map(|g| parse_guard(g).unwrap())
            .collect();
        for j in c["joint"].as_array().unwrap() {
            let sources: Vec<String> = j["sources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            // The first 6 values of each size's own set, from its claimed minimum.
            let own: Vec<Vec<i128>> = sources
                .iter()
                .map(|s| {
                    let d = c["dims"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|d| d["source"] == s.as_str())
                        .unwrap();
                    let lo = d["claimed"]["min"].as_i64().unwrap() as i128;
                    (lo..lo + 4000)
                        .filter(|&v| {
                            let env = |x: &str| (x == s).then_some(v);
                            guards.iter().all(|g| g.truth(&env).unwrap_or(true))
                        })
                        .take(6)
                        .collect()
                })
                .collect();
            let mut fails = false;
            let mut t = vec![0usize; sources.len()];
            'walk: loop {
                let env = |x: &str| sources.iter().position(|s| s == x).map(|k| own[k][t[k]]);
                // A guard over a size outside the group cannot be evaluated here: it does not
                // link the group's sizes (the guards linking them mention only them).
                fails |= guards.iter().any(|g| g.truth(&env) == Ok(false));
                for k in 0..t.len() {
                    t[k] += 1;
                    if t[k] < own[k].len() {
                        continue 'walk;
                    }
                    t[k] = 0;
                }
                break;
            }
            assert!(
                !(fails && text.contains("link        excludes nothing")),
                "{name}: a tuple of the own sets {own:?} fails, yet: {text}"
            );
            assert!(
                !(fails && page.contains("the link excludes nothing")),
                "{name}: a tuple of the own sets {own:?} fails, yet the page says the link excludes nothing"
            );
            // Absent for tied and defined groups (two_stem): not computed there.
            if let Some(said) = j["link_excludes_some"].as_bool() {
                assert_eq!(said, fails, "{name}: link_excludes_some");
                judged += 1;
            }
        }
    }
    assert!(judged >= 1, "no group judged");
}
