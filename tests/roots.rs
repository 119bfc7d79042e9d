//! Fractional powers and rounded true divisions, as torch prints them (HF DPT's
//! `math.trunc(torch.sym_float((H//16)*(W//16)) ** 0.5) == 14`, `sym_sqrt`, `math.ceil(x / 8)`,
//! `CeilToInt(IntTrueDiv(x, 8))`, `IntTrueDiv` by a size): the engine's exact set, and the joint
//! set of two sizes, equal a brute force that evaluates each guard with `f64` arithmetic, as
//! Python does (`float(a) ** 0.5`, `math.sqrt`, `math.ceil(a / d)`), not with dimguard's exact
//! evaluator.

use dimguard::commands::diagnose::{diagnose_text, Options};
use dimguard::solver::engine::{solve, Limits, Outcome};
use dimguard::solver::report::DimReport;
use dimguard::solver::{parse_guard, DimSet};
use proptest::prelude::*;
use std::collections::BTreeSet;

const X: &str = "L['x'].size()[2]";
const Y: &str = "L['x'].size()[3]";

/// An integer expression in one size, with its text and its value (Python's floor semantics).
#[derive(Debug, Clone)]
enum A {
    X,
    FloorDiv(Box<A>, i64),
    Lin(Box<A>, i64, i64),
    Prod(Box<A>, Box<A>),
}

impl A {
    fn text(&self) -> String {
        match self {
            A::X => X.to_string(),
            A::FloorDiv(a, d) => format!("(({}) // {d})", a.text()),
            A::Lin(a, k, m) => format!("({k}*({}) + {m})", a.text()),
            A::Prod(a, b) => format!("(({})*({}))", a.text(), b.text()),
        }
    }
    fn at(&self, x: i64) -> i128 {
        match self {
            A::X => x as i128,
            A::FloorDiv(a, d) => a.at(x).div_euclid(*d as i128),
            A::Lin(a, k, m) => *k as i128 * a.at(x) + *m as i128,
            A::Prod(a, b) => a.at(x) * b.at(x),
        }
    }
}

fn inner() -> impl Strategy<Value = A> {
    let leaf = Just(A::X);
    leaf.prop_recursive(3, 8, 2, |a| {
        prop_oneof![
            (a.clone(), 1i64..20).prop_map(|(a, d)| A::FloorDiv(Box::new(a), d)),
            (a.clone(), -3i64..4, -20i64..21).prop_map(|(a, k, m)| A::Lin(Box::new(a), k, m)),
            (a.clone(), a.clone()).prop_map(|(a, b)| A::Prod(Box::new(a), Box::new(b))),
        ]
    })
}

/// How a float is made an int: Python's `math.trunc`, `math.floor`, `math.ceil`, `round`, in
/// guard code and in sympy's printing.
const ROUNDS: [(&str, &str); 4] = [
    ("math.trunc", "TruncToInt"),
    ("math.floor", "FloorToInt"),
    ("math.ceil", "CeilToInt"),
    ("round", "RoundToInt"),
];
const OPS: [&str; 6] = ["==", "!=", "<", "<=", ">", ">="];
const SYMPY_OPS: [&str; 6] = ["Eq", "Ne", "Lt", "Le", "Gt", "Ge"];

fn round_f64(k: usize, v: f64) -> f64 {
    match k {
        0 => v.trunc(),
        1 => v.floor(),
        2 => v.ceil(),
        // Python's round: to nearest, ties to even.
        _ => {
            let r = v.round();
            if (v - v.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
                r - v.signum()
            } else {
                r
            }
        }
    }
}

fn cmp_f64(op: usize, a: f64, b: f64) -> bool {
    [a == b, a != b, a < b, a <= b, a > b, a >= b][op]
}

/// The float a fractional power gives in Python, or None where Python raises (a negative base:
/// `float ** 0.5` is complex, and rounding or comparing it raises; `math.sqrt` raises).
fn power(base: i128, e: usize) -> Option<f64> {
    if base < 0 {
        return None;
    }
    let b = base as f64;
    Some(match e {
        0 => b.sqrt(),
        1 => b.powf(0.5),
        2 => b.powf(1.5),
        _ => b.powf(0.25),
    })
}

/// A guard and its oracle: `(text, holds(x))`.
#[derive(Debug, Clone)]
struct G {
    a: A,
    kind: usize,
    e: usize,
    round: usize,
    op: usize,
    c: i64,
    d: i64,
    sympy: bool,
}

impl G {
    fn text(&self) -> String {
        let a = self.a.text();
        let (op, sop, c) = (OPS[self.op], SYMPY_OPS[self.op], self.c);
        let pw = |sympy: bool| match (self.e, sympy) {
            (0, false) => format!("math.sqrt({a})"),
            (0, true) => format!("OpaqueUnaryFn_sqrt({a})"),
            (e, false) => format!("torch.sym_float({a}) ** {}", ["", "0.5", "1.5", "0.25"][e]),
            (e, true) => format!("FloatPow(ToFloat({a}), {})", ["", "0.5", "1.5", "0.25"][e]),
        };
        let (r, sr) = ROUNDS[self.round];
        match (self.kind, self.sympy) {
            // A rounded power compared with an integer.
            (0, false) => format!("{r}({}) {op} {c}", pw(false)),
            (0, true) => format!("{sop}({sr}({}), {c})", pw(true)),
            // A power compared with an integer, no rounding.
            (1, false) => format!("({}) {op} {c}", pw(false)),
            (1, true) => format!("{sop}({}, {c})", pw(true)),
            // A rounded true division by a constant.
            (2, false) => format!("{r}(({a}) / {}) {op} {c}", self.d),
            (2, true) => format!("{sop}({sr}(IntTrueDiv({a}, {})), {c})", self.d),
            // A rounded true division of a constant by the size (x >= 1 in the domain).
            (_, false) => format!("{r}({} / {X}) {op} {c}", self.d * 7),
            (_, true) => format!("{sop}({sr}(IntTrueDiv({}, {X})), {c})", self.d * 7),
        }
    }

    fn holds(&self, x: i64) -> bool {
        let v = self.a.at(x);
        let c = self.c as f64;
        match self.kind {
            0 => power(v, self.e).is_some_and(|p| cmp_f64(self.op, round_f64(self.round, p), c)),
            1 => power(v, self.e).is_some_and(|p| cmp_f64(self.op, p, c)),
            2 => cmp_f64(self.op, round_f64(self.round, v as f64 / self.d as f64), c),
            _ => cmp_f64(
                self.op,
                round_f64(self.round, (self.d * 7) as f64 / x as f64),
                c,
            ),
        }
    }
}

fn guard() -> impl Strategy<Value = G> {
    (
        inner(),
        0usize..4,
        0usize..4,
        0usize..4,
        0usize..6,
        -2i64..40,
        1i64..17,
        any::<bool>(),
    )
        .prop_map(|(a, kind, e, round, op, c, d, sympy)| G {
            a,
            kind,
            e,
            round,
            op,
            c,
            d,
            sympy,
        })
}

fn members(s: &DimSet) -> BTreeSet<i64> {
    s.iter().map(|v| v as i64).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// One size: the engine's set is exactly the sizes where Python's float arithmetic passes.
    #[test]
    fn a_rounded_root_or_true_division_of_one_size_matches_floats(
        g in guard(), lo in 1i64..300, width in 0i64..700,
    ) {
        // Below 2^48 under a root (past it floats may round across an integer: dimguard's
        // answer is undefined there, by design).
        let top = (lo..=lo + width).map(|x| g.a.at(x).unsigned_abs()).max().unwrap_or(0);
        let p = [1u32, 1, 3, 1][g.e];
        prop_assume!(top.checked_pow(p).is_some_and(|y| y < 1 << 48));
        let text = g.text();
        let e = parse_guard(&text).unwrap_or_else(|err| panic!("{text}: {err}"));
        let domain = DimSet::interval(lo as i128, (lo + width) as i128);
        let got = match solve(&e, X, &domain, &Limits::default()) {
            Outcome::Solved { set, .. } => members(&set),
            Outcome::Undecided { reason } => {
                prop_assert!(false, "{text} over {lo}..{}: undecided: {reason}", lo + width);
                unreachable!()
            }
        };
        let want: BTreeSet<i64> = (lo..=lo + width).filter(|&x| g.holds(x)).collect();
        prop_assert_eq!(got, want, "{} over {}..{}", text, lo, lo + width);
    }
}

fn line(dim: &str, src: &str, (lo, hi): (i64, i64), guard: &str) -> String {
    format!("  - Not all values of {dim} = {src} in the specified range {lo} <= {dim} <= {hi} satisfy the generated guard {guard}.\n")
}

fn partner_values(d: &DimReport) -> Option<BTreeSet<i64>> {
    let f = d.answer.sides.with_some_partner.as_ref()?;
    Some(members(&DimSet::from_segments(f.segments.clone()).unwrap()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]

    /// Two sizes (HF DPT's position grid: `math.trunc(sym_float((H//p)*(W//p)) ** 0.5) == n`):
    /// the sizes that pass with some partner are the brute force's, over floats.
    #[test]
    fn the_dpt_grid_guard_matches_floats(
        p in 2i64..17, n in 1i64..12, round in 0usize..4, sympy in any::<bool>(),
        lo in 8i64..64, wx in 0i64..120, wy in 0i64..120,
    ) {
        let (r, sr) = ROUNDS[round];
        let g = if sympy {
            format!("Eq({sr}(FloatPow(ToFloat(FloorDiv({X}, {p})*FloorDiv({Y}, {p})), 0.5)), {n})")
        } else {
            format!("{r}(torch.sym_float(({X} // {p})*({Y} // {p})) ** 0.5) == {n}")
        };
        let (xr, yr) = ((lo, lo + wx), (lo, lo + wy));
        let text = line("h", X, xr, &g) + &line("w", Y, yr, &g);
        let r = diagnose_text(&text, &Options::default()).unwrap();
        let holds = |x: i64, y: i64| {
            let v = ((x.div_euclid(p) * y.div_euclid(p)) as f64).powf(0.5);
            round_f64(round, v) == n as f64
        };
        let px: BTreeSet<i64> = (xr.0..=xr.1).filter(|&x| (yr.0..=yr.1).any(|y| holds(x, y))).collect();
        let py: BTreeSet<i64> = (yr.0..=yr.1).filter(|&y| (xr.0..=xr.1).any(|x| holds(x, y))).collect();
        for (d, want) in r.dims.iter().zip([px, py]) {
            prop_assert!(d.undecided.is_none(), "{text}{:?}", d.undecided);
            match partner_values(d) {
                Some(got) => prop_assert_eq!(got, want, "{}", text),
                // A size no guard links (one side always passes): its own accepted set.
                None => {
                    let f = d.answer.accepted.as_ref().expect("decided");
                    let got = members(&DimSet::from_segments(f.segments.clone()).unwrap());
                    prop_assert_eq!(got, want, "{}", text);
                }
            }
        }
    }
}

#[test]
fn the_dpt_guard_keeps_every_size_the_program_runs() {
    // HF DPT (patch 16, a 14x14 position grid): the program runs 224x224, 225x224, 236x234.
    let g = format!("math.trunc(torch.sym_float(({X} // 16)*({Y} // 16)) ** 0.5) == 14");
    let e = parse_guard(&g).unwrap();
    let cases = [
        (224, 224, true),
        (225, 224, true),
        (236, 234, true),
        (240, 224, true),
        (192, 256, false),
        (240, 240, false),
        (208, 208, false),
    ];
    for (h, w, ok) in cases {
        let env = |a: &str| match a {
            _ if a == X => Some(h),
            _ if a == Y => Some(w),
            _ => None,
        };
        assert_eq!(e.truth(&env), Ok(ok), "{h}x{w}");
    }
}
