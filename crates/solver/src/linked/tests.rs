use super::search::Acc;
use super::*;
use crate::error::Error;
use crate::expr::Value;
use crate::report::{SearchLimit, Undecided as Why};
use crate::syntax::parse_guard;
use crate::types::{CmpOp, DimSet, Expr, Progression};
use proptest::prelude::*;
use std::time::Instant;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]
    /// Periodic joint sets (steps above 1): the box through a point holds it, lies inside the
    /// set, and no side can take one more value.
    #[test]
    fn the_box_through_a_point_of_a_periodic_set_is_sound_and_maximal(a in 1i128..12, b in 1i128..12, k in 2i128..9, x in 1i128..40, y in 1i128..40) {
        let guards = vec![g(&format!("((x // {a}) * (y // {b})) % {k} == 0"))];
        let names = names(&["x", "y"]);
        let domains = vec![DimSet::interval(1, 40), DimSet::interval(1, 40)];
        let j = solve_joint(&names, &domains, &guards, &Budget::default());
        box_through_oracle(&j, &names, &guards, &domains, &reorder(&j, &names, &[x, y]))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(150))]
    /// Random guard systems over two and three sizes on small boxes, every point of the
    /// joint set: the box through it holds it, lies inside the set (brute force), and is
    /// maximal by inclusion: no side takes one more value (the next of its progression at
    /// either end; for a side of one value, any other value of its domain) and stays inside.
    #[test]
    fn the_box_through_a_point_is_sound_and_maximal(
        ks in proptest::collection::vec((0usize..11, 2i128..5, 0i128..5), 1..4),
        three in any::<bool>(),
        lo in 1i128..4, wa in 1i128..7, wb in 1i128..7, wc in 0i128..3,
    ) {
        let (n, gs, doms) = system(&ks, three, lo, [wa, wb, wc]);
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        prop_assert!(js.undecided.is_none());
        let level_doms: Vec<DimSet> = js.sizes.iter().map(|s| doms[n.iter().position(|x| x == s).unwrap()].clone()).collect();
        for point in tuples(&level_doms) {
            box_through_oracle(&js, &n, &gs, &doms, &point)?;
        }
    }
}

/// [`box_through`] at `point` (in level order) against brute force over the domains (in
/// `names` order): a box exactly when the point passes; the box holds the point, lies inside
/// the set, and no side can take one more value (the next of its progression at either end;
/// for a side of one value, any other value of its domain) and stay inside.
fn box_through_oracle(
    js: &JointSet,
    names: &[String],
    guards: &[Expr],
    domains: &[DimSet],
    point: &[i128],
) -> Result<(), TestCaseError> {
    let level_doms: Vec<DimSet> = js
        .sizes
        .iter()
        .map(|s| domains[names.iter().position(|x| x == s).unwrap()].clone())
        .collect();
    let inside = |t: &[i128]| {
        let named: Vec<i128> = names.iter().map(|s| t[js.level(s).unwrap()]).collect();
        t.iter().zip(&level_doms).all(|(x, d)| d.contains(*x)) && holds_all(guards, names, &named)
    };
    let sound = |sides: &[DimSet]| tuples(sides).iter().all(|t| inside(t));
    let b = box_through(&js.tree, point);
    prop_assert_eq!(b.is_some(), inside(point));
    let Some(b) = b else { return Ok(()) };
    let sides: Vec<DimSet> = b.sides.iter().map(Progression::to_set).collect();
    prop_assert_eq!(b.count, sides.iter().map(DimSet::count).product::<u128>());
    for (s, x) in sides.iter().zip(point) {
        prop_assert!(s.contains(*x), "{:?} misses {:?}", b.sides, point);
    }
    prop_assert!(sound(&sides), "{:?} through {:?} fails", b.sides, point);
    for (l, p) in b.sides.iter().enumerate() {
        let more: Vec<i128> = if p.lo == p.hi {
            level_doms[l].iter().filter(|&y| y != p.lo).collect()
        } else {
            vec![p.lo - p.modulus, p.hi + p.modulus]
        };
        for y in more {
            let mut wider = sides.clone();
            wider[l] = wider[l].union(&DimSet::interval(y, y)).unwrap();
            prop_assert!(
                !sound(&wider),
                "{:?} through {:?}: side {} takes {} too",
                b.sides,
                point,
                l,
                y
            );
        }
    }
    Ok(())
}

#[test]
fn the_box_through_a_traced_point_is_maximal() {
    // h*w <= 1024 traced at (50, 10): before, 49..51 x 2..20 (the tree's own group of h
    // values), inside 2..50 x 2..20; now a box no side of which can grow.
    let n = names(&["h", "w"]);
    let gs = vec![g("h * w <= 1024")];
    let dom = DimSet::interval(2, 64);
    let js = solve_joint(&n, &[dom.clone(), dom.clone()], &gs, &Budget::default());
    let point = reorder(&js, &n, &[50, 10]);
    let b = box_through(&js.tree, &point).unwrap();
    let side = |s: &str| b.sides[js.level(s).unwrap()];
    let (h, w) = (side("h"), side("w"));
    assert!(h.contains(50) && w.contains(10));
    assert_eq!((h.modulus, w.modulus), (1, 1));
    assert!(h.hi * w.hi <= 1024, "{h:?} {w:?}");
    // Neither side can grow: the corner past it fails (or leaves the range).
    assert!((h.hi + 1) * w.hi > 1024 || h.hi == 64);
    assert!(h.hi * (w.hi + 1) > 1024 || w.hi == 64);
    assert_eq!((h.lo, w.lo), (2, 2));
    assert!(b.count >= 49 * 19, "{b:?}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Guards that are down-closed in both sizes (lowering either keeps the pair accepted),
    /// over domains of up to 60 values: more than 12 groups, so not every subset of groups
    /// is tried. For such sets a box of intervals from the domains' minima is as large as any
    /// box of progressions, so the brute force over every interval box (soundness by a 2-D
    /// prefix sum of the rejected pairs) gives the largest count, which the search must reach.
    #[test]
    fn the_largest_box_of_a_down_closed_guard_is_found(
        form in 0usize..3, a in 1i128..5, b in 1i128..5, n in 20i128..1200, hi in 20i128..60,
    ) {
        let guard = match form {
            0 => format!("x * y <= {n}"),
            1 => format!("{a} * x + {b} * y <= {}", n / 8),
            _ => format!("(x // {a}) * (y // {b}) <= {}", n / 4),
        };
        let gs = vec![g(&guard)];
        let n2 = names(&["x", "y"]);
        let doms = [DimSet::interval(1, hi), DimSet::interval(1, hi)];
        let js = solve_joint(&n2, &doms, &gs, &Budget::default());
        prop_assert!(js.undecided.is_none());
        let (w, lo) = (hi as usize, 1i128);
        // rejected[i][j]: the pair (lo + i, lo + j) fails; prefix sums over it.
        let mut pre = vec![vec![0u32; w + 1]; w + 1];
        for i in 0..w {
            for j in 0..w {
                let t = [lo + i as i128, lo + j as i128];
                let bad = u32::from(!holds_all(&gs, &n2, &t));
                pre[i + 1][j + 1] = bad + pre[i][j + 1] + pre[i + 1][j] - pre[i][j];
            }
        }
        let rejected = |i0: usize, i1: usize, j0: usize, j1: usize| {
            pre[i1][j1] + pre[i0][j0] - pre[i0][j1] - pre[i1][j0]
        };
        let mut best = 0u128;
        for i0 in 0..w {
            for i1 in i0 + 1..=w {
                for j0 in 0..w {
                    for j1 in j0 + 1..=w {
                        if rejected(i0, i1, j0, j1) == 0 {
                            best = best.max(((i1 - i0) * (j1 - j0)) as u128);
                        }
                    }
                }
            }
        }
        let b = largest_box(&js.tree, &Budget::default());
        prop_assert_eq!(b.is_none(), best == 0);
        if let Some(b) = b {
            let sides: Vec<DimSet> = b.sides.iter().map(|p| DimSet::progression(p.lo, p.hi, p.modulus, p.residue)).collect();
            for t in tuples(&sides) {
                prop_assert!(js.tree.contains(&t), "box tuple {:?} fails {}", t, guard);
            }
            prop_assert_eq!(b.count, best, "{}: {:?}", guard, b.sides);
        }
    }
}

fn g(s: &str) -> Expr {
    parse_guard(s).unwrap()
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn holds_all(guards: &[Expr], names: &[String], t: &[i128]) -> bool {
    let env = |a: &str| names.iter().position(|n| n == a).map(|i| t[i]);
    guards
        .iter()
        .all(|g| matches!(g.eval(&env).and_then(Value::truth), Ok(true)))
}

/// A tuple in `names` order, reordered to the joint set's levels.
fn reorder(js: &JointSet, names: &[String], t: &[i128]) -> Vec<i128> {
    js.sizes
        .iter()
        .map(|s| t[names.iter().position(|n| n == s).unwrap()])
        .collect()
}

fn progressions(lo: i128, hi: i128) -> Vec<Progression> {
    let mut out = Vec::new();
    for a in lo..=hi {
        for step in 1..=(hi - lo).max(1) {
            for b in (a..=hi).step_by(step as usize) {
                out.push(Progression {
                    lo: a,
                    hi: b,
                    modulus: step,
                    residue: a.rem_euclid(step),
                });
            }
        }
    }
    out.sort_by_key(|p| (p.lo, p.hi, p.modulus));
    out.dedup_by_key(|p| (p.lo, p.hi, if p.lo == p.hi { 0 } else { p.modulus }));
    out
}

#[test]
fn a_product_links_two_sizes() {
    // A 16x16-patch grid with a 14x14 position table.
    let n = names(&["h", "w"]);
    let gs = vec![g("((h - 16)//16 + 1) * ((w - 16)//16 + 1) == 196")];
    let dom = DimSet::interval(16, 1024);
    let js = solve_joint(&n, &[dom.clone(), dom.clone()], &gs, &Budget::default());
    assert!(js.undecided.is_none());
    // Grids (a, b) with a*b = 196, a, b <= 64: 4x49, 7x28, 14x14, 28x7, 49x4; 16*16 sizes each.
    assert_eq!(js.count(), 5 * 256);
    let h = js.projection("h").unwrap();
    assert!(h.contains(224) && h.contains(64) && !h.contains(16));
    assert!(js.for_all("h").unwrap().is_empty());
    let b = largest_box(&js.tree, &Budget::default()).unwrap();
    assert_eq!(b.count, 256);
    assert!(b.maximal);
    for t in js.rejected_examples(5).unwrap() {
        let t: Vec<i128> = n.iter().map(|s| t[js.level(s).unwrap()]).collect();
        assert!(!holds_all(&gs, &n, &t));
    }
}

#[test]
fn a_projection_without_a_closed_form_is_an_error_not_a_guess() {
    // The multiples of 191..241 have no common period below 2^128 and 2^62 / 191 members:
    // their union is neither a closed form nor listable. Before, it was listed up to 2^22
    // members (a truncated set, and seconds of work); now it is an error the caller
    // reports as undecided.
    let n = names(&["x", "y"]);
    let gs = vec![g("x % y == 0")];
    let doms = [DimSet::interval(2, 1 << 62), DimSet::interval(191, 241)];
    let t = Instant::now();
    let js = solve_joint(&n, &doms, &gs, &Budget::default());
    assert!(js.undecided.is_none());
    assert_eq!(js.projection("y").unwrap(), doms[1]);
    // No y divides every x.
    assert!(js.for_all("y").unwrap().is_empty());
    assert!(js.projection("x").is_err());
    assert!(js.for_all("x").is_err());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[test]
fn one_pair_for_every_batch_is_said_plainly() {
    // A conv-attention hybrid: 32x downsampling and a 7x7 position table.
    let n = names(&["b", "h", "w"]);
    let gs = vec![
        g("(h // 32) * (w // 32) == 49"),
        g("h // 32 != 49 and w // 32 != 49"),
    ];
    let doms = [
        DimSet::interval(1, 32),
        DimSet::progression(64, 2048, 32, 0),
        DimSet::progression(64, 2048, 32, 0),
    ];
    let js = solve_joint(&n, &doms, &gs, &Budget::default());
    let labels: Vec<(String, String)> = [("b", "x[0]"), ("h", "x[2]"), ("w", "x[3]")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(
        js.summary(&labels),
        "x[2] and x[3] are linked: this program accepts 1 (x[2], x[3]) pair, 224x224, for x[0] in 1..32: export it static"
    );
}

#[test]
fn the_last_size_is_solved_once_per_value_of_what_its_guards_read() {
    // The last level's set depends on the other two sizes only through their product
    // (1,000-odd products for the 4,096 pairs, each solved once); the count against brute
    // force.
    let n = names(&["b", "h", "w"]);
    let gs = vec![g("b * h * w <= 4096"), g("h % 3 != 1")];
    let doms = [
        DimSet::interval(1, 64),
        DimSet::interval(1, 64),
        DimSet::interval(1, 256),
    ];
    let js = solve_joint(&n, &doms, &gs, &Budget::default());
    assert!(js.undecided.is_none(), "{:?}", js.undecided);
    let want = (1..=64i128)
        .flat_map(|b| (1..=64i128).flat_map(move |h| (1..=256i128).map(move |w| (b, h, w))))
        .filter(|&(b, h, w)| b * h * w <= 4096 && h % 3 != 1)
        .count();
    assert_eq!(js.count(), want as u128);
    assert!(js.stats.reused > 0, "{:?}", js.stats);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    /// One flat sum, product, minimum or maximum of all three sizes (as a parser may build
    /// `a*b*c`): the last size reads the other two through their sum (product, ...), and
    /// reuses sets across pairs with one value of it; every tuple against brute force.
    #[test]
    fn a_flat_operation_over_every_size_is_read_as_one_value(
        op in 0usize..4, k in 0i128..40, m in 2i128..5, w in 4i128..12,
    ) {
        let v = |x: &str| Expr::sym(x);
        let all = vec![v("a"), v("b"), v("c")];
        let (lhs, bound) = match op {
            0 => (Expr::Mul(all), 6 * k + 8),
            1 => (Expr::Add(all), k / 2 + 6),
            2 => (Expr::Min(all), k / 8 + 2),
            _ => (Expr::Max(all), k / 4 + 3),
        };
        let gs = vec![
            Expr::Cmp(CmpOp::Le, Box::new(lhs), Box::new(Expr::int(bound))),
            g(&format!("b % {m} != 1")),
        ];
        let n = names(&["a", "b", "c"]);
        let doms = [DimSet::interval(1, w), DimSet::interval(1, w), DimSet::interval(1, w)];
        let js = solve_joint(&n, &doms, &gs, &Budget::default());
        prop_assert!(js.undecided.is_none());
        let level_doms: Vec<DimSet> = js.sizes.iter().map(|s| doms[n.iter().position(|x| x == s).unwrap()].clone()).collect();
        for t in tuples(&level_doms) {
            let by_name: Vec<i128> = n.iter().map(|s| t[js.level(s).unwrap()]).collect();
            prop_assert_eq!(js.tree.contains(&t), holds_all(&gs, &n, &by_name), "{:?}", t);
        }
    }
}

#[test]
fn a_wide_last_size_is_solved_periodically() {
    let n = names(&["h", "w"]);
    let gs = vec![g("(h + w) % 8 == 0"), g("h * w >= 40")];
    let doms = [DimSet::interval(2, 9), DimSet::interval(2, 1 << 62)];
    let js = solve_joint(&n, &doms, &gs, &Budget::default());
    assert!(js.undecided.is_none(), "{:?}", js.undecided);
    assert_eq!(js.sizes, names(&["h", "w"]));
    assert!(js.stats.periodic_solves > 0);
    let want: u128 = (2..=9i128)
        .map(|h| {
            let lo = (40 + h - 1) / h;
            DimSet::progression(lo.max(2), 1 << 62, 8, (8 - h % 8) % 8).count()
        })
        .sum();
    assert_eq!(js.count(), want);
}

/// Sizes claimed up to `2^63 - 1` (`Dim.AUTO`): the joint set of guards that hold past a
/// small corner, decided by bounds over boxes; checked against the guards evaluated one
/// tuple at a time near the corner and at sampled large sizes.
fn unbounded_case(guards: &[&str], sizes: &[&str], lows: &[i128]) -> JointSet {
    let n = names(sizes);
    let gs: Vec<Expr> = guards.iter().map(|s| g(s)).collect();
    let doms: Vec<DimSet> = lows
        .iter()
        .map(|&lo| DimSet::interval(lo, i64::MAX as i128))
        .collect();
    let t = Instant::now();
    let js = solve_joint(&n, &doms, &gs, &Budget::default());
    // A guard against enumerating 2^63 values, not a speed figure (benches/linked.rs times
    // it): about 0.1 s alone, past 1 s on a 2-core machine running other builds.
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(js.undecided.is_none(), "{:?}", js.undecided);
    // Exact on the box of the first 24 values of every size.
    let corner: Vec<DimSet> = lows
        .iter()
        .map(|&lo| DimSet::interval(lo, lo + 23))
        .collect();
    for t in tuples(&corner) {
        assert_eq!(
            js.tree.contains(&reorder(&js, &n, &t)),
            holds_all(&gs, &n, &t),
            "{t:?}"
        );
    }
    // Sound and exact at sampled large sizes, alone and next to the corner.
    let big = [
        1i128 << 20,
        (1 << 20) + 3,
        1 << 40,
        (1 << 40) + 1,
        i64::MAX as i128,
    ];
    for &x in &big {
        for (i, &lo) in lows.iter().enumerate() {
            for other in [lo, lo + 1, lo + 5, x] {
                let mut t: Vec<i128> = lows.iter().map(|_| other).collect();
                t[i] = x;
                for (j, &l) in lows.iter().enumerate() {
                    t[j] = t[j].max(l);
                }
                assert_eq!(
                    js.tree.contains(&reorder(&js, &n, &t)),
                    holds_all(&gs, &n, &t),
                    "{t:?}"
                );
            }
        }
    }
    js
}

#[test]
fn products_of_monotone_floors_are_decided_over_unbounded_ranges() {
    // resnet-style stride-2 stems: only h = w = 2 makes both factors 1.
    let js = unbounded_case(
        &["((1 + (((-1) + w) // 2))*(1 + (((-1) + h) // 2))) != 1"],
        &["h", "w"],
        &[2, 2],
    );
    let side = (i64::MAX as u128) - 1;
    assert_eq!(js.count(), side * side - 1);
    assert!(!js.tree.contains(&[2, 2]));
    // A stride-4 stem and a clamped side: h//4 == 1 needs w >= 8.
    let js = unbounded_case(&["(h // 4)*max(1, w // 4) > 1"], &["h", "w"], &[2, 2]);
    assert!(js
        .tree
        .contains(&reorder(&js, &names(&["h", "w"]), &[4, 8])));
    assert!(!js
        .tree
        .contains(&reorder(&js, &names(&["h", "w"]), &[4, 7])));
    // Three sizes, a batch among them.
    unbounded_case(
        &[
            "b*(h // 16)*(w // 16) >= 2",
            "(h // 16) * w >= 40",
            "min(h, w) // 16 != 3",
        ],
        &["b", "h", "w"],
        &[1, 16, 16],
    );
}

#[test]
fn the_budget_returns_a_partial_answer() {
    let n = names(&["h", "w"]);
    let gs = vec![g("(h * w) % 7 != 3")];
    let doms = [DimSet::interval(1, 1 << 40), DimSet::interval(1, 1 << 40)];
    let budget = Budget {
        time: Duration::from_millis(50),
        work: f64::INFINITY,
        ..Budget::default()
    };
    let t0 = Instant::now();
    let js = solve_joint(&n, &doms, &gs, &budget);
    assert!(t0.elapsed() < Duration::from_secs(5));
    let u = js.undecided.as_ref().expect("stopped");
    assert!(
        matches!(u.reason, Why::Search(SearchLimit::Time(t)) if t == budget.time),
        "{:?}",
        u.reason
    );
    assert_eq!(u.reason.to_string(), "the time budget of 0.1 s ran out");
    // Decided part and undecided region are disjoint and cover the box.
    let cut = u.sides[0].min().unwrap();
    assert!(js.tree.projection(0).unwrap().max().is_none_or(|m| m < cut));
    for t in js.tree.examples(50) {
        let t: Vec<i128> = n.iter().map(|s| t[js.level(s).unwrap()]).collect();
        assert!(holds_all(&gs, &n, &t));
    }
}

#[test]
fn a_search_stopped_at_its_share_says_so() {
    // The joint search takes 60% of the time left, leaving the rest to the boxes and
    // projections built from its tree. Before, stopping there gave the reason "the time
    // budget of 1 s ran out", with 40% of it left.
    let _b = crate::budget::enter(crate::budget::Budget {
        time: Some(Duration::from_secs(1)),
        ..Default::default()
    });
    let n = names(&["h", "w"]);
    let gs = vec![g("(h * w) % 7 != 3")];
    let doms = [DimSet::interval(1, 1 << 40), DimSet::interval(1, 1 << 40)];
    let budget = Budget {
        work: f64::INFINITY,
        ..Budget::default()
    };
    let js = solve_joint(&n, &doms, &gs, &budget);
    let left = crate::budget::remaining().unwrap();
    let u = js.undecided.as_ref().expect("stopped");
    assert!(
        left > Duration::ZERO,
        "stopped at the deadline, not at the share"
    );
    assert_eq!(
        u.reason.to_string(),
        "the joint search stopped at its share (60% of the time left) of the time budget of 1 s, leaving the rest to report what it found (raise the budget with --time-budget, or dimguard.set_budget in Python)"
    );
    let e = crate::budget::exhausted().expect("recorded");
    assert_eq!(e.kind(), "time");
    assert_eq!(u.reason, Why::Exhausted(e));
    assert!(matches!(
        e,
        crate::budget::Exhausted::Share { percent: 60, .. }
    ));
}

#[test]
fn a_set_that_cannot_be_built_is_an_error_not_a_smaller_set() {
    // A search's runs are increasing and disjoint, so building its set cannot fail; broken
    // on purpose (1.1M overlapping runs, past the sweep's work bound), the error comes back.
    // Before, `unwrap_or_default` made it the empty set: every member silently dropped.
    let a = Acc {
        runs: vec![(0, 1); 1_100_000],
        values: 2_200_000,
    };
    assert!(matches!(a.into_set(), Err(Error::Exhausted(_))));
    let mut ok = Acc::default();
    for x in (0..3_000_000).filter(|x| x % 3 != 1) {
        ok.push(x);
    }
    let set = ok.into_set().unwrap();
    assert_eq!(set.count(), 2_000_000);
    assert!(set.contains(2_999_999) && !set.contains(1));
}

#[test]
fn a_hopeless_plan_is_not_started() {
    let n = names(&["h", "w"]);
    let gs = vec![g("(h * w) % 7 != 3")];
    let doms = [DimSet::interval(1, 1 << 40), DimSet::interval(1, 1 << 40)];
    let t0 = Instant::now();
    let js = solve_joint(&n, &doms, &gs, &Budget::default());
    // Not enumerated: a hang guard with margin for a loaded machine.
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    let u = js.undecided.as_ref().expect("undecided");
    assert_eq!(u.count, 1u128 << 80);
    assert!(
        matches!(u.reason, Why::Search(SearchLimit::Work { .. })),
        "{:?}",
        u.reason
    );
    assert!(
        u.reason.to_string().contains("guard evaluations"),
        "{}",
        u.reason
    );
}

#[test]
fn raising_guards_fail_and_overflow_is_exact() {
    let n = names(&["a", "b"]);
    let gs = vec![
        g("a % (b - 3) == 0 or b == 3"),
        g("a * b * 170141183460469231731687303715884105 > 0"),
    ];
    let doms = [DimSet::interval(1, 6), DimSet::interval(1, 6)];
    let js = solve_joint(&n, &doms, &gs, &Budget::default());
    for t in tuples(&doms) {
        let want = holds_all(&gs, &n, &t);
        assert_eq!(js.tree.contains(&reorder(&js, &n, &t)), want, "{t:?}");
    }
}

/// Guard templates over `a`, `b`, `c` (products, floor division, moduli that depend on sizes).
fn template(k: usize, p: i128, q: i128) -> String {
    match k % 11 {
        0 => format!("(a * b) % {p} != {}", q % p),
        1 => format!("((a - 1)//{p} + 1) * ((b - 1)//{q} + 1) <= {}", p * q + 3),
        2 => format!("a % (b // {p} + 1) == 0"),
        3 => format!("(a + {q}*b) % {p} != 0"),
        4 => format!("a * b * c >= {}", p * q * 3),
        5 => format!("(c * a) // {p} != {q}"),
        6 => format!("b % ((a + c) // {p} + 1) != {}", q % 3),
        7 => format!("max(a, c) - b != {q}"),
        // Raises (a guard that fails) where b = q: no value of the last size is reused
        // from a combination whose divisor raised.
        9 => format!("(a * c) // (b - {q}) != {p}"),
        // Outside the i128 graph (a power above 8): the exact evaluator, keyed by the sizes.
        10 => format!("(a * b + c) ** 9 % {p} != 1"),
        _ => format!(
            "(a // {p}) * (b // {q}) == (b // {p}) * (a // {q}) or a + b > {}",
            p + q + 6
        ),
    }
}

/// A random guard system from [`template`]s over `a`, `b` (and `c` when `three`), with the
/// sizes' domains `lo..=lo + w`.
fn system(
    ks: &[(usize, i128, i128)],
    three: bool,
    lo: i128,
    w: [i128; 3],
) -> (Vec<String>, Vec<Expr>, Vec<DimSet>) {
    let n = if three {
        names(&["a", "b", "c"])
    } else {
        names(&["a", "b"])
    };
    let mut gs: Vec<Expr> = ks.iter().map(|&(k, p, q)| g(&template(k, p, q))).collect();
    if !three {
        gs.retain(|e| !e.atoms().iter().any(|a| &**a == "c"));
        if gs.is_empty() {
            gs.push(g("(a * b) % 3 != 1"));
        }
    }
    let doms: Vec<DimSet> = w[..n.len()]
        .iter()
        .map(|w| DimSet::interval(lo, lo + w))
        .collect();
    (n, gs, doms)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]
    /// Random guard systems over two and three sizes against brute force on small boxes:
    /// joint set, projections, counts, rejected examples, and the largest box's soundness
    /// and maximality.
    #[test]
    fn joint_sets_match_brute_force(
        ks in proptest::collection::vec((0usize..11, 2i128..5, 0i128..5), 1..5),
        three in any::<bool>(),
        lo in 1i128..4, wa in 2i128..6, wb in 2i128..6, wc in 1i128..4,
        inner in prop_oneof![Just(0u128), Just(4096u128)],
    ) {
        let (n, gs, doms) = system(&ks, three, lo, [wa, wb, wc]);
        let budget = Budget { inner_enumeration: inner, ..Budget::default() };
        let js = solve_joint(&n, &doms, &gs, &budget);
        prop_assert!(js.undecided.is_none());
        let mut count = 0u128;
        let mut proj: Vec<std::collections::BTreeSet<i128>> = vec![Default::default(); n.len()];
        for t in tuples(&doms) {
            let want = holds_all(&gs, &n, &t);
            prop_assert_eq!(js.tree.contains(&reorder(&js, &n, &t)), want, "{:?}", t);
            if want {
                count += 1;
                for (i, x) in t.iter().enumerate() { proj[i].insert(*x); }
            }
        }
        prop_assert_eq!(js.count(), count);
        for (i, name) in n.iter().enumerate() {
            let p: Vec<i128> = js.projection(name).unwrap().iter().collect();
            prop_assert_eq!(p, proj[i].iter().copied().collect::<Vec<_>>());
            // for_all: passes with every value of the others.
            for x in doms[i].iter() {
                let all = tuples(&doms).iter().filter(|t| t[i] == x).all(|t| holds_all(&gs, &n, t));
                prop_assert_eq!(js.for_all(name).unwrap().contains(x), all);
            }
        }
        for t in js.rejected_examples(4).unwrap() {
            let t: Vec<i128> = n.iter().map(|s| t[js.level(s).unwrap()]).collect();
            prop_assert!(!holds_all(&gs, &n, &t));
        }
        // The largest box: sound, and no box of progressions has more tuples.
        let b = largest_box(&js.tree, &Budget::default());
        prop_assert_eq!(b.is_none(), count == 0);
        if let Some(b) = b {
            prop_assert!(b.maximal);
            let sides: Vec<DimSet> = b.sides.iter().map(|p| DimSet::progression(p.lo, p.hi, p.modulus, p.residue)).collect();
            prop_assert_eq!(b.count, sides.iter().map(DimSet::count).product::<u128>());
            for t in tuples(&sides) {
                prop_assert!(js.tree.contains(&t), "box tuple {:?} fails", t);
            }
            // Brute force over every box of progressions (levels in the tree's order).
            let level_doms: Vec<DimSet> = js.sizes.iter().map(|s| doms[n.iter().position(|x| x == s).unwrap()].clone()).collect();
            let cands: Vec<Vec<Progression>> = level_doms.iter().map(|d| progressions(d.min().unwrap(), d.max().unwrap())).collect();
            let mut best = 0u128;
            let mut idx = vec![0usize; cands.len()];
            'outer: loop {
                let sides: Vec<DimSet> = idx.iter().zip(&cands).map(|(&i, c)| { let p = c[i]; DimSet::progression(p.lo, p.hi, p.modulus, p.residue) }).collect();
                let size: u128 = sides.iter().map(DimSet::count).product();
                if size > best && tuples(&sides).iter().all(|t| js.tree.contains(t)) {
                    best = size;
                }
                let mut k = 0;
                loop {
                    if k == idx.len() { break 'outer; }
                    idx[k] += 1;
                    if idx[k] < cands[k].len() { break; }
                    idx[k] = 0;
                    k += 1;
                }
            }
            prop_assert_eq!(b.count, best);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]
    /// `TupleCheck::count` over a box agrees with the exact evaluator at every tuple: the
    /// tuples every guard holds at, those some guard fails at, none counted where a guard
    /// raises (a modulus that reaches zero) before one fails.
    #[test]
    fn counting_a_box_agrees_with_the_evaluator_tuple_by_tuple(
        a in 1i128..20, b in 1i128..20, k in 1i128..30, m in -3i128..6,
        lo in [0i128..6, 0i128..6, 0i128..6], w in [0i128..9, 0i128..9, 0i128..9],
        three in any::<bool>(),
    ) {
        let n = if three { 3 } else { 2 };
        let names = names(&["x", "y", "z"][..n]);
        let mut guards = vec![
            g(&format!("((x // {a}) * (y // {b})) % {k} == 0")),
            g(&format!("x % (y - {m}) < {a}")),
        ];
        if three {
            guards.push(g(&format!("z * {b} >= x + y - {k}")));
        }
        let ranges: Vec<(i128, i128)> = (0..n).map(|i| (lo[i], lo[i] + w[i])).collect();
        let (t, f) = TupleCheck::new(&names, &guards).count(&ranges);
        let doms: Vec<DimSet> = ranges.iter().map(|&(a, b)| DimSet::interval(a, b)).collect();
        let (mut bt, mut bf) = (0u128, 0u128);
        for p in tuples(&doms) {
            let env = |v: &str| names.iter().position(|x| x == v).map(|i| p[i]);
            let mut fate = Some(true);
            for e in &guards {
                match e.truth(&env) {
                    Ok(true) => {}
                    Ok(false) => { fate = Some(false); break; }
                    Err(_) => { fate = None; break; }
                }
            }
            match fate {
                Some(true) => bt += 1,
                Some(false) => bf += 1,
                None => {}
            }
        }
        prop_assert_eq!((t, f), (bt, bf));
    }
}

#[test]
fn a_group_with_nothing_decided_says_so_not_that_nothing_passes() {
    // The undecided region the whole box: no combination is known to fail. Part of it decided
    // (and empty): none of the decided part passes.
    let n = names(&["h", "w"]);
    let doms = vec![DimSet::interval(1, 8), DimSet::interval(1, 8)];
    let js = |first: DimSet| JointSet {
        sizes: n.clone(),
        domains: doms.clone(),
        tree: Tree::empty(2),
        undecided: Some(super::Undecided {
            reason: Why::NotSolved,
            count: first.count() * 8,
            sides: vec![first, doms[1].clone()],
        }),
        stats: Default::default(),
    };
    let labels: Vec<(String, String)> = n.iter().map(|s| (s.clone(), s.clone())).collect();
    assert_eq!(
        js(doms[0].clone()).summary(&labels),
        "h and w are linked: the joint search decided none of the combinations of the claimed sizes"
    );
    assert_eq!(
        js(DimSet::interval(5, 8)).summary(&labels),
        "h and w are linked: no combination of the decided part of the claimed sizes passes every guard"
    );
}
