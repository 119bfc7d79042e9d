//! A guard over two sizes listed under one of them: each size's own line (status, feasible set,
//! `with_some_partner`) against brute force over every combination of the two ranges.
//!
//! The one-size question about such a guard lets the other size take any integer (torch's sizes
//! cannot), so before, a guard that holds for every combination left the size "undecided"
//! while the joint answer said it holds.

use dimguard::commands::diagnose::{diagnose_text, Options};
use dimguard::solver::report::{Certificate, DimReport, Status};
use dimguard::solver::{parse_guard, DimSet};
use proptest::prelude::*;
use std::collections::BTreeSet;

const X: &str = "L['x'].size()[0]";
const Y: &str = "L['y'].size()[0]";

/// A guard over x and y (`a`, `b`, `c` small constants), as torch prints guard code.
fn cross(k: usize, a: i64, b: i64, c: i64) -> String {
    match k % 6 {
        0 => format!("{X} + {Y} > {c}"),
        1 => format!("{X} * {Y} <= {}", a * b * 4 + c),
        2 => format!("({X} + {Y}) % {a} != {}", c % a),
        3 => format!("{X} >= {Y} - {c}"),
        4 => format!("max({X}, {Y}) <= {}", c + 4),
        _ => format!("({X} // {a}) + ({Y} // {b}) != {c}"),
    }
}

/// A guard of one size (`v`).
fn own(v: &str, k: usize, a: i64, c: i64) -> String {
    match k % 3 {
        0 => format!("Eq(Mod({v}, {a}), {})", c % a),
        1 => format!("{v} >= {}", c + 1),
        _ => format!("{v} != {}", c + 2),
    }
}

fn line(dim: &str, src: &str, (lo, hi): (i64, i64), guard: &str) -> String {
    format!("  - Not all values of {dim} = {src} in the specified range {lo} <= {dim} <= {hi} satisfy the generated guard {guard}.\n")
}

fn holds(guard: &str, x: i64, y: i64) -> bool {
    let e = parse_guard(guard).unwrap();
    let env = |a: &str| match a {
        _ if a == X => Some(x as i128),
        _ if a == Y => Some(y as i128),
        _ => None,
    };
    matches!(e.eval(&env).and_then(|v| v.truth()), Ok(true))
}

fn values(d: &DimReport) -> Option<BTreeSet<i64>> {
    let f = d.answer.accepted.as_ref()?;
    let set = DimSet::from_segments(f.segments.clone()).unwrap();
    Some(set.iter().map(|v| v as i64).collect())
}

fn partner_values(d: &DimReport) -> Option<BTreeSet<i64>> {
    let f = d.answer.sides.with_some_partner.as_ref()?;
    let set = DimSet::from_segments(f.segments.clone()).unwrap();
    Some(set.iter().map(|v| v as i64).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn a_size_linked_by_a_guard_listed_under_it_matches_brute_force(
        k in 0usize..6, a in 2i64..5, b in 2i64..5, c in 0i64..12,
        x_own in proptest::option::of((0usize..3, 2i64..4, 0i64..8)),
        y_own in (0usize..3, 2i64..4, 0i64..8),
        xlo in 2i64..5, xw in 0i64..8, ylo in 2i64..5, yw in 0i64..8,
    ) {
        let g = cross(k, a, b, c);
        let xr = (xlo, xlo + xw);
        let yr = (ylo, ylo + yw);
        let xg = x_own.map(|(k, a, c)| own(X, k, a, c));
        let yg = own(Y, y_own.0, y_own.1, y_own.2);
        // The guard over both sizes is listed under x only; y has a guard of its own.
        let mut text = line("d0", X, xr, &g);
        if let Some(xg) = &xg {
            text += &line("d0", X, xr, xg);
        }
        text += &line("d1", Y, yr, &yg);
        let r = diagnose_text(&text, &Options::default()).unwrap();
        let (dx, dy) = (&r.dims[0], &r.dims[1]);
        // Brute force: each size's own accepted values, and the joint set.
        let xs: Vec<i64> = (xr.0..=xr.1).filter(|&x| xg.as_ref().is_none_or(|h| holds(h, x, 0))).collect();
        let ys: Vec<i64> = (yr.0..=yr.1).filter(|&y| holds(&yg, 0, y)).collect();
        let joint: BTreeSet<(i64, i64)> = xs.iter().flat_map(|&x| ys.iter().map(move |&y| (x, y))).filter(|&(x, y)| holds(&g, x, y)).collect();
        let px: BTreeSet<i64> = joint.iter().map(|t| t.0).collect();
        let py: BTreeSet<i64> = joint.iter().map(|t| t.1).collect();
        let every = joint.len() == xs.len() * ys.len();
        // x's values combine freely with y's: the joint set is the product of x's whole own
        // answer and y's passing values.
        let free = joint.len() == px.len() * py.len() && px.len() > 1 && px.len() == xs.len();
        prop_assert!(dx.undecided.is_none(), "{text}{:?}", dx.undecided);
        prop_assert_ne!(dx.status, Status::Undecided);
        prop_assert_eq!(partner_values(dx), Some(px.clone()), "{}", text);
        if every || free {
            // Every combination passes (or x's values combine freely with y's): x's own answer
            // is its values that pass, decided, with a sound Dim.
            prop_assert_eq!(values(dx), Some(px.clone()), "{}", text);
            let range = (xr.1 - xr.0 + 1) as usize;
            let want = if px.is_empty() {
                Status::Unsatisfiable
            } else if px.len() == range {
                Status::Spurious
            } else {
                Status::Constrained
            };
            prop_assert_eq!(dx.status, want, "{}", text);
            for s in &dx.answer.suggestions {
                // Tiny boxes: re-checked tuple by tuple against every guard of the group.
                prop_assert_eq!(s.certificate, Certificate::Enumeration, "{}", text);
                for x in s.progression().to_set().iter() {
                    prop_assert!(py.iter().all(|&y| joint.contains(&(x as i64, y))), "{} {:?}", text, s);
                }
            }
            prop_assert_eq!(dx.answer.suggestions.is_empty(), px.is_empty(), "{}", text);
        } else {
            prop_assert_eq!(dx.status, Status::Linked, "{}", text);
        }
        // y's guards are its own: it is never undecided.
        prop_assert_ne!(dy.status, Status::Undecided, "{}", text);
    }
}

#[test]
fn a_guard_over_two_sizes_that_always_holds_decides_the_size() {
    // The session-4 example: `x + y > 3` listed under x only, y named only in the guard (torch's
    // default range 2..2^63-1). Every combination passes: x's whole range, decided.
    let text = line("d0", X, (2, 100), &format!("({X} + {Y}) > 3"));
    let r = diagnose_text(&text, &Options::default()).unwrap();
    let d = &r.dims[0];
    assert_eq!(d.status, Status::Spurious);
    assert_eq!(d.undecided, None);
    assert_eq!(values(d), Some((2..=100).collect()));
    assert_eq!(d.guards[0].method.to_string(), "joint");
    assert!(
        !d.advice.iter().any(|a| a.contains("could not decide")),
        "{:?}",
        d.advice
    );
    let s = &d.answer.suggestions[0];
    assert_eq!((s.lo, s.hi, s.modulus), (2, 100, 1));
    // y's range has 2^63 values: no tuple-by-tuple re-check, and no Z3 here (the CLI asks it).
    assert_eq!(s.certificate, Certificate::None);
    assert!(s
        .certificate_note
        .as_deref()
        .unwrap()
        .contains("exact by the joint search"));
}
