//! Texts that hold only some of the export's guards (`Message::partial`): PyTorch 2.15's solver
//! crash, a constraint violation cut mid-line, an excerpt of a draft_export report, a run-time
//! `Guard failed` (the first guard of the program that failed). Generated:
//! a guard over one, two or three sizes (linear, scaled by a fraction, floor-divided, a
//! product), in each form, with the ranges given or the default, put through every wrapper
//! `tests/corpus.rs` uses. For each:
//!
//! * the reading is partial, and the report says so (`partial`);
//! * no size is claimed accepted: no accepted set but an empty one, no suggestion, no box side,
//!   no joint set, no linked group's code, no `Dim` in the paste block;
//! * each size's undecided set (the set the held guards leave) equals brute force: the values
//!   of its range for which some values of the others' ranges satisfy the guard, evaluated here
//!   in plain integer arithmetic (not the engine's evaluator); over a default range, a window of
//!   it (one size: equal there; several: it holds every value with a partner in the window);
//! * every wrapper gives the same sets.

use dimguard::commands::diagnose::{diagnose, Options};
use dimguard::readers::forms;
use dimguard::readers::Message;
use dimguard::solver::report::{Report, Status};
use dimguard::solver::DimSet;

mod rng;
mod wrappers;
use rng::Rng;
use wrappers::WRAPPERS;

/// A relation between a left side and a constant or a size.
#[derive(Clone, Copy, Debug)]
enum Op {
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
    /// `a/b OP c/d` for positive denominators, by cross-multiplying.
    fn holds(self, (a, b): (i128, i128), (c, d): (i128, i128)) -> bool {
        let (l, r) = (a * d, c * b);
        match self {
            Op::Lt => l < r,
            Op::Le => l <= r,
            Op::Gt => l > r,
            Op::Ge => l >= r,
        }
    }
}

/// A guard of the family, over sizes `v[0..n]`.
#[derive(Clone, Debug)]
enum Guard {
    /// `a0*v0 + a1*v1 + ... OP c`.
    Linear(Vec<i128>, Op, i128),
    /// `(1/k)*v1 OP v0`.
    Fraction(i128, Op),
    /// `(v0 // k) OP v1`, or `(v0 // k) OP c` over one size.
    FloorDiv(i128, Op, Option<i128>),
    /// `v0*v1 OP c`.
    Product(Op, i128),
}

impl Guard {
    fn sizes(&self) -> usize {
        match self {
            Guard::Linear(a, _, _) => a.len(),
            Guard::Fraction(..) | Guard::Product(..) => 2,
            Guard::FloorDiv(_, _, c) => 1 + usize::from(c.is_none()),
        }
    }

    /// The guard written with `name(i)` for size `i`, as torch prints it.
    fn text(&self, name: &dyn Fn(usize) -> String) -> String {
        match self {
            Guard::Linear(a, op, c) => {
                let terms: Vec<String> = a
                    .iter()
                    .enumerate()
                    .map(|(i, k)| match k {
                        1 => name(i),
                        k if *k < 0 => format!("({k})*{}", name(i)),
                        k => format!("{k}*{}", name(i)),
                    })
                    .collect();
                format!("{} {} {c}", terms.join(" + "), op.text())
            }
            Guard::Fraction(k, op) => format!("(1/{k})*{} {} {}", name(1), op.text(), name(0)),
            Guard::FloorDiv(k, op, Some(c)) => format!("(({}) // {k}) {} {c}", name(0), op.text()),
            Guard::FloorDiv(k, op, None) => {
                format!("(({}) // {k}) {} {}", name(0), op.text(), name(1))
            }
            Guard::Product(op, c) => format!("{}*{} {} {c}", name(0), name(1), op.text()),
        }
    }

    /// Its truth at `v`, in plain integer arithmetic (sizes are positive: `//` is truncation).
    fn holds(&self, v: &[i128]) -> bool {
        match self {
            Guard::Linear(a, op, c) => {
                op.holds((a.iter().zip(v).map(|(k, x)| k * x).sum(), 1), (*c, 1))
            }
            Guard::Fraction(k, op) => op.holds((v[1], *k), (v[0], 1)),
            Guard::FloorDiv(k, op, Some(c)) => op.holds((v[0] / k, 1), (*c, 1)),
            Guard::FloorDiv(k, op, None) => op.holds((v[0] / k, 1), (v[1], 1)),
            Guard::Product(op, c) => op.holds((v[0] * v[1], 1), (*c, 1)),
        }
    }
}

/// The family's draws.
trait Draw {
    fn op(&mut self) -> Op;
    fn guard(&mut self) -> Guard;
}

impl Draw for Rng {
    fn op(&mut self) -> Op {
        [Op::Lt, Op::Le, Op::Gt, Op::Ge][self.int(0, 3) as usize]
    }
    fn guard(&mut self) -> Guard {
        match self.int(0, 5) {
            0 => Guard::Linear(vec![self.int(1, 4)], self.op(), self.int(10, 200)),
            1 => {
                let n = self.int(2, 3) as usize;
                let a = (0..n)
                    .map(|_| {
                        let k = self.int(1, 4);
                        if self.chance(25) {
                            -k
                        } else {
                            k
                        }
                    })
                    .collect();
                Guard::Linear(a, self.op(), self.int(10, 200))
            }
            2 => Guard::Fraction(self.int(2, 4), self.op()),
            3 => Guard::FloorDiv(self.int(2, 8), self.op(), Some(self.int(3, 30))),
            4 => Guard::FloorDiv(self.int(2, 8), self.op(), None),
            _ => Guard::Product(self.op(), self.int(50, 2000)),
        }
    }
}

/// The forms of a text that holds some of the export's guards.
#[derive(Clone, Copy, Debug)]
enum Form {
    /// `AssertionError: Expected op to be '==', got <= for GUARD`.
    Crash,
    /// A `Constraints violated` error cut inside its second bullet.
    Cut,
    /// Item 9 of a draft_export report, alone.
    Excerpt,
    /// `AssertionError: Guard failed: GUARD` from calling an exported program.
    GuardFailed,
}

const NAMES: [&str; 3] = ["h", "w", "c"];

/// The text of `g` in `form`, and each size's dimension name in the report. A cut violation
/// states its ranges (`range`, else 2..4096); the other forms state none.
fn text(form: Form, g: &Guard, range: Option<(i128, i128)>) -> (String, Vec<String>) {
    let n = g.sizes();
    match form {
        Form::Crash => {
            let guard = g.text(&|i| NAMES[i].to_string());
            let op = guard.split(' ').find(|w| w.contains(['<', '>'])).unwrap();
            (
                format!(
                    "Traceback (most recent call last):\n  File \"export.py\", line 9, in <module>\n    ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)\nAssertionError: Expected op to be '==', got {op} for {guard}\n"
                ),
                NAMES[..n].iter().map(|s| s.to_string()).collect(),
            )
        }
        Form::Cut => {
            let source = |i: usize| format!("L['x'].size()[{}]", i + 1);
            let guard = g.text(&source);
            let (lo, hi) = range.unwrap_or((2, 4096));
            let mut t = format!(
                "torch._dynamo.exc.UserError: Constraints violated ({})! For more information, run with TORCH_LOGS=\"+dynamic\".\n",
                NAMES[..n].join(", ")
            );
            for (i, name) in NAMES[..n].iter().enumerate() {
                t.push_str(&format!(
                    "  - Not all values of {name} = {} in the specified range {lo} <= {name} <= {hi} satisfy the generated guard {guard}.\n",
                    source(i)
                ));
            }
            t.push_str("  - Not all values of h = L['x'].size()[1] in the specified range are valid because L['");
            (t, NAMES[..n].iter().map(|s| s.to_string()).collect())
        }
        Form::Excerpt => {
            let sym = |i: usize| format!("s{}", 21 + 17 * i);
            let guard = g.text(&sym);
            let map: Vec<String> = (0..n)
                .map(|i| format!("'{}': \"L['x'].size()[{}]\"", sym(i), i + 1))
                .collect();
            (
                format!(
                    "...\n9. Guard Added.\n    A guard was added during tracing, which might've resulted in some incorrect\n    tracing or constraint violation error.\n    Specifically, this guard was added: {guard}, where {{{}}}.\n    This occurred at the following stacktrace:\n        File /work/model.py, lineno 12, in forward\n            y = x.view(-1, 8)\n",
                    map.join(", ")
                ),
                (0..n).map(|i| format!("x_{}", i + 1)).collect(),
            )
        }
        Form::GuardFailed => {
            let guard = g.text(&|i| format!("x.size()[{}]", i + 1));
            (
                format!("Traceback (most recent call last):\n  File \"run.py\", line 4, in <module>\n    ep.module()(x)\nAssertionError: Guard failed: {guard}\n"),
                (0..n).map(|i| format!("x_{}", i + 1)).collect(),
            )
        }
    }
}

fn read(text: &str, ranges: &[(String, (i128, i128))]) -> Message {
    let mut m = forms::read(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    dimguard::readers::spec::bind_user_spec(text, &mut m);
    forms::apply_ranges(&mut m, ranges).unwrap_or_else(|e| panic!("{e}\n{text}"));
    m
}

/// Each size's undecided set (by dimension name; `None` where the guards it holds were left
/// undecided, which claims nothing either), after the claims every partial report must not
/// make are checked absent.
fn sets(r: &Report, names: &[String], what: &str) -> Vec<Option<DimSet>> {
    assert!(r.partial.is_some(), "{what}: no partial");
    assert!(r.joint_sets.is_empty(), "{what}: a joint set");
    assert!(
        r.linked.iter().all(|l| l.code.is_none()),
        "{what}: linked code"
    );
    assert!(r.joint.iter().all(|j| j.accepted.is_empty()), "{what}");
    for line in r.dynamic_shapes.lines() {
        let l = line.trim();
        assert!(
            l.starts_with('#') || l.starts_with("from torch") || !l.contains("Dim"),
            "{what}: pastes a Dim: {l}\n{}",
            r.dynamic_shapes
        );
    }
    names
        .iter()
        .map(|n| {
            let d = r
                .dims
                .iter()
                .find(|d| &d.name == n)
                .unwrap_or_else(|| panic!("{what}: no size {n}"));
            assert!(d.answer.suggestions.is_empty(), "{what}: {n} suggests");
            assert!(d.answer.sides.box_side.is_none(), "{what}: {n} box side");
            match d.status {
                Status::Undecided => {
                    assert!(d.answer.accepted.is_none(), "{what}: {n} accepted");
                    assert!(d.undecided.is_some() && !d.advice.is_empty(), "{what}");
                    let u = d.answer.undecided.as_ref()?;
                    Some(DimSet::from_segments(u.segments.clone()).unwrap())
                }
                // The guards it holds leave no size: none is accepted.
                Status::Unsatisfiable => {
                    let a = d.answer.accepted.as_ref().unwrap();
                    assert_eq!(a.count, 0, "{what}: {n}");
                    Some(DimSet::from_segments(vec![]).unwrap())
                }
                s => panic!("{what}: {n} is {s:?}"),
            }
        })
        .collect()
}

/// The values of size `k` in `ranges[k]` with some values of the others in theirs that satisfy
/// `g`.
fn brute(g: &Guard, ranges: &[(i128, i128)], k: usize) -> Vec<i128> {
    let mut out = vec![];
    let mut v = vec![0i128; ranges.len()];
    for x in ranges[k].0..=ranges[k].1 {
        v[k] = x;
        if some(g, ranges, &mut v, 0, k) {
            out.push(x);
        }
    }
    out
}

fn some(g: &Guard, ranges: &[(i128, i128)], v: &mut Vec<i128>, i: usize, k: usize) -> bool {
    if i == ranges.len() {
        return g.holds(v);
    }
    if i == k {
        return some(g, ranges, v, i + 1, k);
    }
    for y in ranges[i].0..=ranges[i].1 {
        v[i] = y;
        if some(g, ranges, v, i + 1, k) {
            return true;
        }
    }
    false
}

#[test]
fn partial_texts_claim_no_accepted_size_and_their_sets_are_brute_force() {
    let mut rng = Rng(0x5eed_4242);
    let (mut checked, mut windows, mut wrapped, mut undecided) = (0, 0, 0, 0);
    for case in 0..80 {
        let g = rng.guard();
        let form = [Form::Crash, Form::Cut, Form::Excerpt, Form::GuardFailed][case % 4];
        // Ranges given (`--range`, or stated by the cut violation), or the default.
        let ranged = case % 5 != 4 || matches!(form, Form::Cut);
        let n = g.sizes();
        let per: Vec<(i128, i128)> = (0..n)
            .map(|_| {
                let lo = rng.int(2, 20);
                (lo, lo + rng.int(10, if n == 3 { 25 } else { 120 }))
            })
            .collect();
        // A cut violation states one range for every size it lists.
        let per = match form {
            Form::Cut => vec![per[0]; n],
            _ => per,
        };
        let (t, names) = text(form, &g, ranged.then_some(per[0]));
        let given: Vec<(String, (i128, i128))> = match form {
            Form::Cut => vec![],
            _ if ranged => names.iter().cloned().zip(per.iter().copied()).collect(),
            _ => vec![],
        };
        let what = format!("case {case} {form:?} {}", g.text(&|i| NAMES[i].to_string()));
        let m = read(&t, &given);
        assert!(m.partial.is_some(), "{what}: not partial\n{t}");
        let r = diagnose(&m, &Options::default());
        let got = sets(&r, &names, &what);
        for (k, set) in got.iter().enumerate() {
            let Some(set) = set else {
                // Left undecided (the joint search over two default ranges): only there.
                assert!(!ranged && n > 1, "{what}: {} has no set", names[k]);
                undecided += 1;
                continue;
            };
            if ranged {
                let want = brute(&g, &per, k);
                let have: Vec<i128> = set.iter().collect();
                assert_eq!(have, want, "{what}: {} ({:?})", names[k], per);
                checked += 1;
            } else {
                // The default range 2..: a window of it.
                let window: Vec<(i128, i128)> = vec![(2, 300); n];
                let want = brute(&g, &window, k);
                let have: Vec<i128> = set.iter().take_while(|x| *x <= 300).collect();
                if n == 1 {
                    assert_eq!(have, want, "{what}");
                } else {
                    assert!(want.iter().all(|x| set.contains(*x)), "{what}");
                }
                windows += 1;
            }
        }
        // Every wrapper a paste meets: the same sets.
        for (wname, wrap) in WRAPPERS.iter() {
            let m = read(&wrap(&t), &given);
            let r = diagnose(&m, &Options::default());
            let again = sets(&r, &names, &format!("{what} ({wname})"));
            assert_eq!(again, got, "{what}: {wname} changes the sets");
            wrapped += 1;
        }
    }
    eprintln!(
        "{checked} sets against brute force, {windows} over a window, {undecided} undecided, {wrapped} wrapped texts"
    );
    assert!(checked >= 60 && windows >= 5 && wrapped >= 900);
}
