//! The cross-form test (issue 23): one PyTorch 2.15 model per case, exported by
//! `tools/export_crossform.py` and captured in every form a user meets its guards in
//! (`tests/data/crossform/<case>/`): the `ConstraintViolationError` text, the
//! `TORCH_LOGS="+dynamic"` log, the `TORCH_TRACE` file, the `draft_export` report (each read by
//! `dimguard diagnose`) and the exported program (`dimguard check`). Every form must give the same
//! exact sets, per size and joint, and they must equal the brute force `truth.json` (the exported
//! program run at every size, and at every pair of a linked pair).
//!
//! The exception and the draft report are not complete records of the guards: torch 2.15 prints
//! in the exception only the guards over one size it finds violated (never a guard linking two
//! sizes, and not every congruence), and in the draft report one failure per place in torch's
//! code. For those two forms the test checks what can be checked: every guard the text prints is
//! read, the sets equal brute force over those guards, no size that runs is called rejected, and,
//! where the text prints every guard of a size, the set equals the truth. Where it does not, the
//! test names the size and the guard torch left out.

mod common;

use common::{data, json};
use dimguard::readers::forms;
use dimguard::solver::report::{Command, SizeAnswer};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

type Tuples = BTreeSet<Vec<i64>>;

/// A linked group: its sources, and its boxes (per source, a set of values).
type Group = (Vec<String>, Vec<Vec<BTreeSet<i64>>>);

/// A brute-forced pair of sizes: their sources, the box run, and the pairs that ran.
type Pair = ([String; 2], [(i64, i64); 2], Tuples);

/// What a form says about sizes, by source (`L['x'].size()[2]`): each size's accepted set (with
/// some partner, for a linked size; `None` when undecided), and each linked group's joint set.
#[derive(Debug, Default)]
struct Answer {
    sizes: BTreeMap<String, Option<BTreeSet<i64>>>,
    joint: Vec<Group>,
    /// Distinct guard texts the form was read with (`guards` of the JSON).
    guards: usize,
    /// Sizes the form says always equal another (`tied_to` with `equal`): (size, partner).
    equal: Vec<(String, String)>,
}

/// The members of a set in the contract's form (`segments` of `lo`, `hi`, `modulus`, `residues`).
fn members(set: &Value) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for s in set["segments"].as_array().expect("segments") {
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
        out.extend((lo..=hi).filter(|x| res.contains(&x.rem_euclid(m))));
    }
    out
}

fn joint_groups(groups: &Value, form: &str) -> Vec<Group> {
    let Some(groups) = groups.as_array() else {
        return vec![];
    };
    groups
        .iter()
        .filter(|g| g.get("sources").is_some())
        .map(|g| {
            assert!(
                g.get("undecided").is_none_or(Value::is_null),
                "{form}: a linked group is undecided: {}",
                g["undecided"]
            );
            assert_eq!(
                g["boxes_complete"].as_bool(),
                Some(true),
                "{form}: more boxes than listed"
            );
            let sources = g["sources"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_str().unwrap().to_string())
                .collect();
            let boxes = g["boxes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_array().unwrap().iter().map(members).collect())
                .collect();
            (sources, boxes)
        })
        .collect()
}

fn distinct_guards(v: &Value) -> usize {
    v["guards"]
        .as_array()
        .map(|g| {
            g.iter()
                .filter_map(|g| g["guard"].as_str())
                .collect::<BTreeSet<_>>()
                .len()
        })
        .unwrap_or(0)
}

/// `dimguard <command> --json` on one of the case's files, within a 60 s budget.
fn json_of(command: &str, case: &str, file: &str) -> Value {
    json(&[
        "--time-budget",
        "60",
        command,
        "--json",
        &data(&format!("crossform/{case}/{file}")),
    ])
}

/// `dimguard diagnose --json` on a text form.
fn diagnose(case: &str, file: &str) -> Answer {
    let v = json_of("diagnose", case, file);
    let mut a = Answer {
        guards: distinct_guards(&v),
        joint: joint_groups(&v["joint_sets"], file),
        equal: equal_ties(&v["dims"]),
        ..Answer::default()
    };
    for d in v["dims"].as_array().unwrap() {
        let source = d["source"].as_str().expect("source").to_string();
        // A linked size: the sizes that pass with some partner (`feasible` holds its own
        // guards' set only); a tied size: its partner's set through the tie; a size no guard
        // constrains: its whole range.
        let set = d
            .get("with_some_partner")
            .or_else(|| d.get("tied_to").map(|t| &t["accepted"]))
            .unwrap_or(&d["feasible"]);
        let set = match set.as_object() {
            Some(_) => Some(members(set)),
            None if d["status"] == "unconstrained" => {
                let end = |k: usize| d["range"][k].as_i64();
                end(0).zip(end(1)).map(|(lo, hi)| (lo..=hi).collect())
            }
            None => None,
        };
        a.sizes.insert(source, set);
    }
    a
}

/// `dimguard check --json` on the program.
fn check(case: &str) -> Answer {
    let v = json_of("check", case, "program.pt2");
    let mut a = Answer {
        joint: joint_groups(&v["joint"], "program.pt2"),
        equal: equal_ties(&v["dims"]),
        ..Answer::default()
    };
    for d in v["dims"].as_array().unwrap() {
        let source = d["source"].as_str().expect("source").to_string();
        // The sizes that pass with some partner (`accepted` for a size not linked).
        let set = d.get("with_some_partner").unwrap_or(&d["accepted"]);
        a.sizes
            .insert(source, set.as_object().map(|_| members(set)));
    }
    a
}

/// `truth.json`: each size's accepted set, and the tuples of each brute-forced pair in its box.
struct Truth {
    sizes: BTreeMap<String, BTreeSet<i64>>,
    pairs: Vec<Pair>,
}

fn truth(case: &str) -> Truth {
    let v: Value = serde_json::from_str(
        &std::fs::read_to_string(data(&format!("crossform/{case}/truth.json"))).unwrap(),
    )
    .unwrap();
    let mut by_name = BTreeMap::new();
    let mut sizes = BTreeMap::new();
    for (name, s) in v["sizes"].as_object().unwrap() {
        let source = s["source"].as_str().unwrap().to_string();
        by_name.insert(name.clone(), source.clone());
        let acc = s["accepted"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        sizes.insert(source, acc);
    }
    let pairs = v["joint"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            let d = |k: usize| by_name[j["dims"][k].as_str().unwrap()].clone();
            let b = |k: usize| {
                (
                    j["box"][k][0].as_i64().unwrap(),
                    j["box"][k][1].as_i64().unwrap(),
                )
            };
            let tuples: Tuples = j["tuples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| {
                    t.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_i64().unwrap())
                        .collect()
                })
                .collect();
            assert_eq!(tuples.len() as u64, j["count"].as_u64().unwrap());
            ([d(0), d(1)], [b(0), b(1)], tuples)
        })
        .collect();
    Truth { sizes, pairs }
}

/// The sizes a report's `dims[]` ties equal to a partner (`tied_to.equal`), by source.
fn equal_ties(dims: &Value) -> Vec<(String, String)> {
    dims.as_array()
        .unwrap()
        .iter()
        .filter(|d| d["tied_to"]["equal"] == true)
        .map(|d| {
            let s = |v: &Value| v.as_str().unwrap().to_string();
            (s(&d["source"]), s(&d["tied_to"]["source"]))
        })
        .collect()
}

impl Answer {
    /// The pairs of `(a, b)` in `bx` this answer accepts: from its linked group over those two
    /// sources (every other size of the group free), else the product of the two sizes' sets
    /// (the form says they are not linked). `None` when the form names neither size.
    fn pairs(&self, [a, b]: &[String; 2], bx: [(i64, i64); 2]) -> Option<Tuples> {
        let inside = |x: i64, (lo, hi): (i64, i64)| lo <= x && x <= hi;
        if let Some((src, boxes)) = self
            .joint
            .iter()
            .find(|(s, _)| s.contains(a) && s.contains(b))
        {
            let (ia, ib) = (
                src.iter().position(|s| s == a).unwrap(),
                src.iter().position(|s| s == b).unwrap(),
            );
            let mut out = Tuples::new();
            for sides in boxes {
                for &x in sides[ia].iter().filter(|&&x| inside(x, bx[0])) {
                    for &y in sides[ib].iter().filter(|&&y| inside(y, bx[1])) {
                        out.insert(vec![x, y]);
                    }
                }
            }
            return Some(out);
        }
        let (sa, sb) = (self.sizes.get(a)?.as_ref()?, self.sizes.get(b)?.as_ref()?);
        // Sizes said to be equal: the pairs of one value.
        if self
            .equal
            .iter()
            .any(|(x, y)| (x == a && y == b) || (x == b && y == a))
        {
            return Some(
                sa.intersection(sb)
                    .filter(|&&x| inside(x, bx[0]) && inside(x, bx[1]))
                    .map(|&x| vec![x, x])
                    .collect(),
            );
        }
        Some(
            sa.iter()
                .filter(|&&x| inside(x, bx[0]))
                .flat_map(|&x| {
                    sb.iter()
                        .filter(move |&&y| inside(y, bx[1]))
                        .map(move |&y| vec![x, y])
                })
                .collect(),
        )
    }
}

/// A form that records every guard (the log, the trace, the program): every size of the truth
/// named and decided, its set equal to the truth's, and every brute-forced pair equal.
fn complete(case: &str, form: &str, a: &Answer, t: &Truth) {
    for (source, want) in &t.sizes {
        let got = a
            .sizes
            .get(source)
            .unwrap_or_else(|| panic!("{case} {form}: {source} not named"));
        let got = got
            .as_ref()
            .unwrap_or_else(|| panic!("{case} {form}: {source} undecided"));
        assert_eq!(
            got,
            want,
            "{case} {form}: {source}: {} accepted, truth {} (only in form: {:?}, only in truth: {:?})",
            got.len(),
            want.len(),
            got.difference(want).take(8).collect::<Vec<_>>(),
            want.difference(got).take(8).collect::<Vec<_>>()
        );
    }
    for (srcs, bx, want) in &t.pairs {
        let got = a
            .pairs(srcs, *bx)
            .unwrap_or_else(|| panic!("{case} {form}: {srcs:?} not named"));
        assert_eq!(
            got.len(),
            want.len(),
            "{case} {form}: {srcs:?} in {bx:?}: tuple count"
        );
        assert_eq!(&got, want, "{case} {form}: {srcs:?} in {bx:?}");
    }
}

/// A form that prints only some guards (the exception, the draft report): every distinct guard
/// the text prints is read (`printed`: the guard lines as torch prints them), each size's set is
/// exactly the brute force of the guards read for it, it never rejects a size that runs, and
/// it equals the truth for the sizes of `exact`.
fn partial(case: &str, form: &str, a: &Answer, t: &Truth, printed: &str, exact: &[&str]) {
    let text = std::fs::read_to_string(data(&format!("crossform/{case}/{form}"))).unwrap();
    let lines: BTreeSet<&str> = text
        .lines()
        .filter_map(|l| l.split_once(printed).map(|(_, g)| g.trim()))
        .collect();
    assert!(!lines.is_empty(), "{case} {form}: no `{printed}` line");
    // An equality torch states ("The values of b2 = ... and b1 = ... must always be equal") is
    // read as a guard too.
    let equalities = text
        .lines()
        .filter(|l| l.contains("must always be equal"))
        .count();
    assert_eq!(
        a.guards,
        lines.len() + equalities,
        "{case} {form}: guards read"
    );
    // Brute force over the guards the reader found, evaluated value by value.
    let m = forms::read(&text).unwrap();
    assert!(m.unreadable.is_empty(), "{case} {form}: {:?}", m.unreadable);
    for d in &m.dims {
        let Some(source) = &d.source else { continue };
        let Some(Some(got)) = a.sizes.get(source) else {
            panic!("{case} {form}: {source} undecided")
        };
        let (lo, hi) = d.range.expect("range");
        let own: BTreeSet<i64> = (lo..=hi)
            .filter(|&x| d.guards.iter().all(|g| g.expr.holds_at(source, x)))
            .map(|x| x as i64)
            .collect();
        // Guards over several sizes bound a size only jointly; with none, its own guards decide it.
        if m.joint
            .iter()
            .all(|g| !g.expr.atoms().iter().any(|s| s.to_string() == *source))
        {
            assert_eq!(got, &own, "{case} {form}: {source} vs its own guards");
        }
        let want = &t.sizes[source];
        assert!(
            want.is_subset(got),
            "{case} {form}: {source} rejects sizes that run: {:?}",
            want.difference(got).take(8).collect::<Vec<_>>()
        );
        if exact.contains(&source.as_str()) {
            assert_eq!(got, want, "{case} {form}: {source}");
        }
    }
    // Every joint group the form reports holds every brute-forced pair that runs, and equals
    // the truth there when both sizes are of `exact`.
    for (srcs, bx, want) in &t.pairs {
        if a.joint
            .iter()
            .any(|(s, _)| s.contains(&srcs[0]) && s.contains(&srcs[1]))
        {
            let got = a.pairs(srcs, *bx).unwrap();
            assert!(
                want.is_subset(&got),
                "{case} {form}: {srcs:?} rejects pairs that run"
            );
            if srcs.iter().all(|s| exact.contains(&s.as_str())) {
                assert_eq!(&got, want, "{case} {form}: {srcs:?} in {bx:?}");
            }
        }
    }
}

const CVE: &str = "satisfy the generated guard";
const DRAFT: &str = "Specifically, this guard was added:";

/// The complete forms agree with each other and with the truth.
fn complete_forms(case: &str) -> Truth {
    let t = truth(case);
    complete(case, "log.txt", &diagnose(case, "log.txt"), &t);
    complete(case, "trace.log", &diagnose(case, "trace.log"), &t);
    complete(case, "program.pt2", &check(case), &t);
    t
}

const H1: &str = "L['image1'].size()[2]";
const W1: &str = "L['image1'].size()[3]";
const H2: &str = "L['image2'].size()[2]";
const W2: &str = "L['image2'].size()[3]";
const B1: &str = "L['image1'].size()[0]";
const B2: &str = "L['image2'].size()[0]";
const H: &str = "L['x'].size()[2]";
const W: &str = "L['x'].size()[3]";

#[test]
fn fpn2_every_form_gives_the_truth() {
    let t = complete_forms("fpn2");
    // Per size, 33 of 65 (32..96); each pair (h1, h2), (w1, w2) 129 of 4,225: `(h1 - 1)//4` odd
    // and equal to `(h2 - 1)//4`.
    assert!(t.sizes.values().all(|s| s.len() == 33));
    assert!(t.pairs.iter().all(|(_, _, p)| p.len() == 129));
    // The exception prints h1's and w1's own guards (all of them): exact. It never prints the
    // guard linking the two inputs.
    let e = diagnose("fpn2", "exception.txt");
    assert_eq!(
        e.sizes.keys().collect::<BTreeSet<_>>(),
        BTreeSet::from([&H1.to_string(), &W1.to_string()])
    );
    partial("fpn2", "exception.txt", &e, &t, CVE, &[H1, W1]);
    assert!(e.joint.is_empty());
    // The draft report prints one failure per place in torch: the (w1, w2) guards, not h's.
    let d = diagnose("fpn2", "draft.txt");
    partial("fpn2", "draft.txt", &d, &t, DRAFT, &[W1, W2]);
    assert!(!d.sizes.contains_key(H1) && !d.sizes.contains_key(H2));
}

#[test]
fn window7_every_form_gives_the_truth() {
    let t = complete_forms("window7");
    // Every h (with a w that runs); 68 widths: those whose 1/4 map needs no padding to the
    // window (`(w//4) % 7 == 0`), a guard that also names h.
    assert_eq!(t.sizes[H].len(), 481);
    assert_eq!(t.sizes[W].len(), 68);
    // The exception prints only guards over one size that hold at every size of the range;
    // the guard that fixes w's padding names h too, and is never printed: w's set is the range.
    let e = diagnose("window7", "exception.txt");
    partial("window7", "exception.txt", &e, &t, CVE, &[H]);
    assert_eq!(e.sizes[W].as_ref().map(BTreeSet::len), Some(481));
    let d = diagnose("window7", "draft.txt");
    partial("window7", "draft.txt", &d, &t, DRAFT, &[H]);
}

/// Two inputs tied in every way torch ties sizes: the batches by an equality, the 1/4 maps by a
/// block tie. Every size, tied ones included, has the same set in the log, the trace and the
/// program, equal to the program run at every pair; and each form names the tie.
#[test]
fn tied2_every_form_gives_the_truth() {
    let t = complete_forms("tied2");
    // The batches: any of 2..8 (with the same partner); H and W: fpn2's 33 of 65.
    for s in [B1, B2] {
        assert_eq!(t.sizes[s].len(), 7, "{s}");
    }
    for s in [H1, W1, H2, W2] {
        assert_eq!(t.sizes[s].len(), 33, "{s}");
    }
    let tied = |v: &Value, b: &str, a: &str| {
        let d = v["dims"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["source"] == b)
            .unwrap_or_else(|| panic!("{b} not named"));
        assert_eq!(d["tied_to"]["source"], a, "{b}: {}", d["tied_to"]);
    };
    for form in ["log.txt", "trace.log"] {
        let v = json(&[
            "diagnose",
            "--json",
            &data(&format!("crossform/tied2/{form}")),
        ]);
        tied(&v, B2, B1);
    }
    let v = json(&["check", "--json", &data("crossform/tied2/program.pt2")]);
    tied(&v, B2, B1);
    // The exception states the batches' equality (without their range: no set) and prints h1's
    // and w1's own guards: exact.
    let v = json(&["diagnose", "--json", &data("crossform/tied2/exception.txt")]);
    tied(&v, B2, B1);
    let e = diagnose("tied2", "exception.txt");
    for s in [H1, W1] {
        assert_eq!(e.sizes[s].as_ref(), Some(&t.sizes[s]), "{s}");
    }
}

#[test]
fn ceil2_every_form_gives_the_truth() {
    let t = complete_forms("ceil2");
    // H and W multiples of 4: 121 of 481 each.
    assert_eq!(t.sizes[H].len(), 121);
    assert_eq!(t.sizes[W].len(), 121);
    // torch's exception leaves out the first level's `Eq(((h - 1)//2) + 1, h//2)` (h even; it
    // appears only in its suggested fix `h = 4*_h`): 0 or 3 mod 4, 241 sizes.
    let e = diagnose("ceil2", "exception.txt");
    partial("ceil2", "exception.txt", &e, &t, CVE, &[]);
    for s in [H, W] {
        let got = e.sizes[s].as_ref().unwrap();
        assert_eq!(got.len(), 241);
        let even: BTreeSet<i64> = got.iter().copied().filter(|x| x % 2 == 0).collect();
        assert_eq!(
            even, t.sizes[s],
            "{s}: the exception's set, h even, is the truth"
        );
    }
    // The draft report prints the two ceil-mode checks of h (`2*((h - 1)//2) < h`, ...), which
    // hold at every size: h is said to accept the range; w is not named.
    let d = diagnose("ceil2", "draft.txt");
    partial("ceil2", "draft.txt", &d, &t, DRAFT, &[]);
    assert_eq!(d.sizes[H].as_ref().map(BTreeSet::len), Some(481));
    assert!(!d.sizes.contains_key(W));
}

/// Each size's whole answer ([`SizeAnswer`], read back from the JSON as the page reads it), by
/// source, from one command's `dims[]`.
fn size_answers(v: &Value, command: Command) -> BTreeMap<String, SizeAnswer> {
    v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            let a = SizeAnswer::read(&d.to_string(), command).expect("a size's answer reads back");
            (d["source"].as_str().expect("source").to_string(), a)
        })
        .collect()
}

/// An answer's fields as comparable text: each set by its members, each side by its
/// progression, the tie by its partner and equality. `traced`: keep the fields that depend on
/// the traced sizes (a box through them, the nearest accepted sizes around one).
fn fields(a: &SizeAnswer, traced: bool) -> BTreeMap<&'static str, String> {
    let set = |f: &Option<dimguard::solver::report::Feasible>| {
        f.as_ref().map(|f| {
            let s = f.set().expect("a set");
            format!(
                "{} values {:?}..{:?} period {}",
                s.count(),
                s.min(),
                s.max(),
                s.period()
            )
        })
    };
    let side = |s: &Option<dimguard::solver::report::Suggestion>| {
        s.as_ref()
            .map(|s| format!("{}..{} mod {} = {}", s.lo, s.hi, s.modulus, s.residue))
    };
    let s = &a.sides;
    let mut out = BTreeMap::from([
        ("accepted", format!("{:?}", set(&a.accepted))),
        (
            "undecided",
            format!("{:?}", a.undecided.as_ref().map(|u| u.count)),
        ),
        (
            "suggestions",
            format!(
                "{:?}",
                a.suggestions
                    .iter()
                    .map(|s| (s.lo, s.hi, s.modulus, s.residue))
                    .collect::<Vec<_>>()
            ),
        ),
        ("linked_with", format!("{:?}", a.linked_with)),
        (
            "with_some_partner",
            format!("{:?}", set(&s.with_some_partner)),
        ),
        ("box_side", format!("{:?}", side(&s.box_side))),
        ("shared_side", format!("{:?}", side(&s.shared_side))),
        ("link_excludes_none", format!("{:?}", s.link_excludes_none)),
        (
            "tied_to",
            format!(
                "{:?}",
                s.tied_to
                    .as_ref()
                    .map(|t| (&t.source, t.equal, set(&t.accepted)))
            ),
        ),
        (
            "defined_values",
            format!(
                "{:?}",
                s.defined_values.as_ref().map(|d| (&d.relation, d.within))
            ),
        ),
    ]);
    if traced {
        out.insert(
            "example_box_side",
            format!("{:?}", side(&s.example_box_side)),
        );
        out.insert("nearest_accepted", format!("{:?}", a.nearest_accepted));
    }
    out
}

/// How many fields two commands' answers both decide, by source, after asserting they agree:
/// the values that pass with some partner, each side of the largest box and of a shared spec,
/// the tie (its partner, whether equal, its set) and a defined size's values. A field one of
/// them leaves out is not compared (a size only `check` sees linked, through the program's own
/// asserts, has no side in `diagnose`).
fn agree(
    case: &str,
    (what_a, a): (&str, &BTreeMap<String, SizeAnswer>),
    (what_b, b): (&str, &BTreeMap<String, SizeAnswer>),
    context: &str,
) -> usize {
    let mut compared = 0;
    for (source, x) in a {
        let Some(y) = b.get(source) else { continue };
        let (x, y) = (fields(x, false), fields(y, false));
        for key in [
            "with_some_partner",
            "box_side",
            "shared_side",
            "tied_to",
            "defined_values",
        ] {
            if x[key] == "None" || y[key] == "None" {
                continue;
            }
            compared += 1;
            assert_eq!(
                x[key], y[key],
                "{case} {source} {key}: {what_a} and {what_b} differ\n{context}"
            );
        }
    }
    compared
}

/// The program's claim as a spec: each dimension's claimed range as a `Dim` of its own.
fn claimed_spec(check: &Value) -> String {
    let mut lines = vec!["from torch.export import Dim".to_string()];
    let mut dict: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for d in check["dims"].as_array().unwrap() {
        let (input, index) = (d["input"].as_str().unwrap(), d["index"].as_i64().unwrap());
        let c = &d["claimed"];
        let name = format!("{input}_{index}");
        lines.push(format!(
            "{name} = Dim('{name}', min={}, max={})",
            c["min"], c["max"]
        ));
        dict.entry(input.to_string())
            .or_default()
            .push(format!("{index}: {name}"));
    }
    let body: Vec<String> = dict
        .iter()
        .map(|(i, e)| format!("\"{i}\": {{{}}}", e.join(", ")))
        .collect();
    lines.push(format!("dynamic_shapes = {{{}}}", body.join(", ")));
    lines.join("\n") + "\n"
}

/// One answer per size (issue 35): the whole [`SizeAnswer`] of every size, compared field by
/// field. The `TORCH_LOGS` log and the `TORCH_TRACE` file carry the same guards, so `diagnose`
/// must give the same answer from both, field for field (only the box through the traced sizes,
/// which the log does not give, may differ). Against `check` on the exported program, every
/// field both commands decide must agree: the values that pass with some partner, the tie (its
/// partner, whether equal, its set), each side of the largest box and of a shared spec
/// ([`agree`]). `verify` of the program's own claim (each claimed range as a `Dim`) against the
/// trace must give `check`'s too.
#[test]
fn every_form_gives_one_answer_per_size() {
    let mut compared = 0;
    for case in ["fpn2", "window7", "tied2", "ceil2"] {
        let diag = |file: &str| size_answers(&json_of("diagnose", case, file), Command::Diagnose);
        let (log, trace) = (diag("log.txt"), diag("trace.log"));
        let program = json_of("check", case, "program.pt2");
        let check = size_answers(&program, Command::Check);
        assert_eq!(
            log.keys().collect::<Vec<_>>(),
            trace.keys().collect::<Vec<_>>(),
            "{case}: the log and the trace name the same sizes"
        );
        for (source, a) in &log {
            assert_eq!(
                fields(a, false),
                fields(&trace[source], false),
                "{case} {source}: the log and the trace answer alike"
            );
        }
        // `verify` of the program's own claim (each claimed range as a Dim) against the trace:
        // the spec admits what the program claims, so its sizes' answers are check's.
        let spec = claimed_spec(&program);
        let spec_file = std::env::temp_dir().join(format!("dimguard-crossform-{case}.py"));
        std::fs::write(&spec_file, &spec).unwrap();
        let verified = json(&[
            "--time-budget",
            "60",
            "verify",
            "--json",
            &data(&format!("crossform/{case}/trace.log")),
            spec_file.to_str().unwrap(),
        ]);
        let _ = std::fs::remove_file(&spec_file);
        let verify = size_answers(&verified, Command::Verify);
        compared += agree(case, ("check", &check), ("verify", &verify), &spec);
        compared += agree(case, ("check", &check), ("diagnose", &trace), "");
    }
    // fpn2, window7 and tied2 link their sizes in every form (ceil2's link is the program's
    // alone).
    assert!(compared >= 30, "only {compared} fields were compared");
    eprintln!("{compared} fields compared");
}
