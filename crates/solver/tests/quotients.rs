//! Groups with quotients by the size and products of monotone terms (issue 41: pixel shuffle,
//! unfold/fold): `x % (x//k)` and `x // (x//k)` (a divisor that depends on the size: the
//! quotient is piecewise constant), their products across two sizes against constants, the
//! product form of a divisibility (`k*k*h*w*b == c*b*(h//k)*(w//k)`), equal products of
//! monotone floor and ceil terms across two sizes (`ceil(h/k)*ceil(w/k) == (h//k)*(w//k)`:
//! termwise `ceil >= floor`, so equal exactly when every pair is), and a batch in corner-only
//! guards (`b*P != b`, `b % (b*P) != 0`).
//!
//! Each group is solved as independent parts (`common::solve_all`: `solve_parts`, no Z3) over ranges as `Dim.AUTO`
//! claims them (to 2^63-1) and must be decided; its answer is compared with the guards
//! evaluated directly (`Expr::truth`) on every tuple of a box near the small corner and of a
//! box near 2^40.

mod common;

use dimguard_solver::parse_guard;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// The guards of one member of the family: each of `h` and `w` with its own quotient guards
/// (`k` the block, `m` a modulus on the blocks), the link chosen by `link`, the batch `b` in
/// corner guards.
fn family(k: i128, m: i128, link: u8, ceil_off: i128, lo: i128) -> Vec<String> {
    let mut t = vec![
        format!("h >= {lo}"),
        format!("w >= {lo}"),
        "b >= 1".to_string(),
    ];
    for x in ["h", "w"] {
        t.push(format!("({x} // {k}) != {x}"));
        t.push(format!("({x} // ({x} // {k})) != 0"));
        t.push(format!("(({x} // {k}) % {m}) == 0"));
    }
    let qh = format!("(h // (h // {k}))");
    let qw = format!("(w // (w // {k}))");
    match link % 4 {
        // pixel (un)shuffle: divisibility through `x % (x//k)` and the quotient's value.
        0 => {
            t.push(format!("(h % (h // {k})) == 0"));
            t.push(format!("(w % (w // {k})) == 0"));
            t.push(format!("(3*{qw}*{qh}) == {}", 3 * k * k));
            t.push(format!("((3*{qw}*{qh}) % {}) == 0", 3 * k));
            t.push(format!("(w*{qh}) != ((w // {k})*{qw})"));
            t.push(format!(
                "(max(1, w // {k})*max(1, {qw})*max(1, h // {k})*max(1, {qh})) == ((w // {k})*{qw}*(h // {k})*{qh})"
            ));
        }
        // The product form of "both divisible by k", the batch cancelling.
        1 => t.push(format!(
            "({}*w*h*b) == ({}*b*(w // {k})*(h // {k}))",
            3,
            3 * k * k
        )),
        // unfold against fold: ceil-form blocks against floor blocks, equal products.
        2 => {
            let cw = format!("((w + {ceil_off}) // {k})");
            let ch = format!("((h + {ceil_off}) // {k})");
            t.push(format!("({cw}*{ch}) == ((w // {k})*(h // {k}))"));
            t.push(format!("(16*b*{cw}*{ch}) == (16*b*(w // {k})*(h // {k}))"));
            t.push(format!("(w // {k}) < {cw}*{ch}"));
            t.push(format!("(({cw}*{ch}) % (h // {k})) == 0"));
            t.push(format!("(w // {k}) == (({cw}*{ch}) // (h // {k}))"));
        }
        // A quotient's value linking nothing: `x // (x//k)` against another size's.
        _ => t.push(format!("{qw}*{qh} <= {}", (k + 1) * (k + 1))),
    }
    // The batch only in corner guards.
    let p = format!("((w // {k})*(h // {k}))");
    t.push(format!("(b*{p}) != b"));
    t.push(format!("(b % (b*{p})) != 0"));
    t
}

fn check(k: i128, m: i128, link: u8, ceil_off: i128, lo: i128) -> Result<(), TestCaseError> {
    let texts = family(k, m, link, ceil_off, lo);
    let guards: Vec<_> = texts.iter().map(|t| parse_guard(t).unwrap()).collect();
    let names: Vec<String> = ["b", "h", "w"].iter().map(|s| s.to_string()).collect();
    let ranges: BTreeMap<String, (i128, i128)> = names
        .iter()
        .map(|n| (n.clone(), (0, i64::MAX as i128)))
        .collect();
    let parts = common::solve_all(&guards, &names, &ranges);
    for (_, s) in &parts {
        prop_assert!(s.undecided.is_none(), "{:?}: {:?}", texts, s.undecided);
    }
    // Every root apart: nothing in these groups links two sizes for real (a box).
    for (p, _) in &parts {
        prop_assert_eq!(p.roots.len(), 1, "{:?}: {:?}", texts, p.roots);
    }
    let w = 4 * k * m + 6;
    for base in [0i128, 1 << 40] {
        for b in [0i128, 1, 2, 3, base + 1] {
            for h in base..base + w {
                for x in base..base + w {
                    let value = |n: &str| match n {
                        "b" => Some(b),
                        "h" => Some(h),
                        "w" => Some(x),
                        _ => None,
                    };
                    let truth = guards.iter().all(|g| g.truth(&value) == Ok(true));
                    let said = parts
                        .iter()
                        .map(|(g, s)| s.contains(g, &value))
                        .try_fold(true, |acc, v| v.map(|v| acc && v));
                    prop_assert_eq!(said, Some(truth), "{:?} at {:?}", texts, (b, h, x));
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// The family against brute force, every member decided and split into one part per size.
    #[test]
    fn quotient_and_product_groups_match_brute_force(
        k in 2i128..5, m in 1i128..4, link in 0u8..4, ceil_off in 1i128..3, past in 0i128..12,
    ) {
        // Sizes from `2*k` on: the corner (`(w//k)*(h//k) == 1`, which would link the sizes
        // for real) lies below every size.
        let ceil_off = ceil_off.min(k - 1);
        check(k, m, link, ceil_off, 2 * k + past)?;
    }
}

/// The two composed programs' own shapes are members: pixel shuffle by 2, unfold/fold k=2.
#[test]
fn pixel_shuffle_and_unfold_fold_are_members() {
    check(2, 2, 0, 1, 8).unwrap();
    check(2, 1, 2, 1, 4).unwrap();
}
