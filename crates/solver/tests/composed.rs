//! Composed linked groups (issue 34): guards as torch 2.15 prints them, composed from the
//! families torch emits for images through convolutional stems — stride chains (floor and ceil
//! mode, paddings, printed nested or simplified), upsample adds and skip concatenations (`F4(h) ==
//! 2*F8(h)`), two or three inputs tied after stems of the same or different strides, patch and
//! window divisibility, products `!= 1`, `Max`/`Min`, batch ties — with random depths, strides and
//! ranges (bounded, or 2..2^63-1 as `Dim.AUTO` claims).
//!
//! Each group is solved by the joint solver ([`solve_group_with`], no Z3) and must be decided;
//! its answer is compared, tuple by tuple, with the guards evaluated directly by the reference
//! evaluator (`Expr::truth`, not the compiled code the solver searches with): on every tuple of a
//! sub-box near the small corner for groups of at most three sizes, and on tuples sampled near
//! the small corner and near 2^20, 2^40 and 2^62 (partners drawn near each other, so that ties
//! are hit as well as missed).

use dimguard_solver::joint::{group, linked, solve_group_with, Group};
use dimguard_solver::linked::Budget;
use dimguard_solver::report::Undecided;
use dimguard_solver::{parse_guard, Expr};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Defined sizes whose values with some partner were compared as products, and boxes of a
/// defined group re-evaluated (counted so that a test can say the checks ran).
static PRODUCTS: AtomicUsize = AtomicUsize::new(0);
static BOXES: AtomicUsize = AtomicUsize::new(0);

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i128, hi: i128) -> i128 {
        lo + (self.next() as i128).rem_euclid(hi - lo + 1)
    }
    fn coin(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// One layer of a stem.
#[derive(Debug, Clone, Copy)]
enum Layer {
    /// Convolution (or floor-mode pooling): `(x + 2p - k)//s + 1`.
    Conv { k: i128, s: i128, p: i128 },
    /// Ceil-mode pooling without padding: `ceil((x - k)/s) + 1`.
    Ceil { k: i128, s: i128 },
}

impl Layer {
    fn stride(self) -> i128 {
        match self {
            Layer::Conv { s, .. } | Layer::Ceil { s, .. } => s,
        }
    }
    /// The size after the layer, as torch's guard code prints it, over `t`.
    fn text(self, t: &str) -> String {
        match self {
            Layer::Conv { k, s, p } => format!("(1 + ((({}) + {t}) // {s}))", 2 * p - k),
            Layer::Ceil { k, s } => format!("(1 + ((({}) + {t}) // {s}))", s - 1 - k),
        }
    }
    /// A layer torch's stems use, of stride `s`.
    fn pick(r: &mut Rng, s: i128) -> Layer {
        match r.below(4) {
            0 => Layer::Conv { k: 3, s, p: 1 },
            1 => Layer::Conv { k: s, s, p: 0 },
            2 => Layer::Conv {
                k: 7.min(2 * s + 1),
                s,
                p: 7.min(2 * s + 1) / 2,
            },
            _ => Layer::Ceil { k: s, s },
        }
    }
}

/// A stem: the size after each layer, nested as printed (`text(i)` is the map of the first `i`
/// layers); all-`k3 s p1` chains are also printed simplified (`1 + (x-1)//S`), as torch does.
#[derive(Debug, Clone)]
struct Stem {
    layers: Vec<Layer>,
    simplified: bool,
}

impl Stem {
    fn text(&self, x: &str, depth: usize) -> String {
        let odd = self.layers[..depth]
            .iter()
            .all(|l| matches!(l, Layer::Conv { k, p, .. } if 2 * p - k == -1));
        if self.simplified && odd && depth > 0 {
            let s: i128 = self.layers[..depth].iter().map(|l| l.stride()).product();
            return format!("(1 + (((-1) + {x}) // {s}))");
        }
        let mut t = x.to_string();
        for l in &self.layers[..depth] {
            t = l.text(&t);
        }
        t
    }
}

fn size(input: char, dim: usize) -> String {
    format!("L['{input}'].size()[{dim}]")
}

/// A composed group: its guards (as torch prints them) and each size's range.
#[derive(Debug)]
struct Composition {
    guards: Vec<String>,
    ranges: BTreeMap<String, (i128, i128)>,
    /// For a reshape product: the strides `(a, b)` of `n == (h//a)*(w//b)` (`h`, `w` the first
    /// input's sizes 2 and 3, `n` the second's size 1), so that tuples on the product are asked.
    product: Option<(i128, i128)>,
}

const TOP: i128 = i64::MAX as i128;

/// A reshape of an image's patches into a second input's tokens (`tokens2`): `n == (h//a)*(w//b)`
/// as torch prints it (either side first, either factor first), random strides, each of `h`, `w`,
/// `n` bounded or claimed to 2^63-1, with or without torch's `!= 1` guards on the factors and the
/// product, its `h//a % (h//a * w//b) != 0` and `sym_max` forms, and a batch tie.
fn product(r: &mut Rng) -> Composition {
    let strides = [2, 4, 8, 14, 16];
    let a = strides[r.below(5) as usize];
    let b = strides[r.below(5) as usize];
    let (h, w, n) = (size('a', 2), size('a', 3), size('b', 1));
    let mut ranges = BTreeMap::new();
    let mut bound = |r: &mut Rng, name: &str, lo: i128| {
        let hi = if r.coin(0.5) {
            TOP
        } else {
            lo + r.range(20, 400)
        };
        ranges.insert(name.to_string(), (lo, hi));
    };
    let lo_h = a + if r.coin(0.5) { 0 } else { r.range(0, 10) };
    let lo_w = b + if r.coin(0.5) { 0 } else { r.range(0, 10) };
    bound(r, &h, lo_h);
    bound(r, &w, lo_w);
    let lo_n = r.range(1, 3);
    bound(r, &n, lo_n);
    let (fh, fw) = (format!("({h} // {a})"), format!("({w} // {b})"));
    let prod = if r.coin(0.5) {
        format!("({fh}*{fw})")
    } else {
        format!("({fw}*{fh})")
    };
    let mut guards = vec![if r.coin(0.5) {
        format!("{prod} == {n}")
    } else {
        format!("{n} == {prod}")
    }];
    if r.coin(0.6) {
        guards.push(format!("{fh} != 1"));
        guards.push(format!("{fw} != 1"));
        guards.push(format!("{prod} != 1"));
    }
    if r.coin(0.3) {
        guards.push(format!("{prod} != {fh}"));
        guards.push(format!("({fh} % {prod}) != 0"));
    }
    if r.coin(0.3) {
        let m = format!("torch.sym_max(1, {w} // {b})*torch.sym_max(1, {h} // {a})");
        guards.push(format!("{m} > 1"));
        guards.push(format!("(1 % ({m})) != 0"));
    }
    if r.coin(0.3) {
        guards.push(format!("{n} != 1"));
    }
    if r.coin(0.5) {
        let lo = r.range(1, 3);
        let hi = if r.coin(0.5) {
            TOP
        } else {
            lo + r.range(4, 30)
        };
        ranges.insert(size('a', 0), (lo, hi));
        ranges.insert(size('b', 0), (lo, hi));
        guards.push(format!("{} == {}", size('a', 0), size('b', 0)));
    }
    Composition {
        guards,
        ranges,
        product: Some((a, b)),
    }
}

fn compose(r: &mut Rng) -> Composition {
    if r.coin(0.25) {
        return product(r);
    }
    let inputs = ['a', 'b', 'c'];
    let n = 1 + r.below(3) as usize;
    let unbounded = r.coin(0.5);
    let mut ranges = BTreeMap::new();
    let mut guards = Vec::new();
    // One stem per input; the first input's is the longest (a pyramid's levels).
    let depth = 1 + r.below(3) as usize;
    let mut stems = Vec::new();
    for i in 0..n {
        let d = if i == 0 {
            depth + 1
        } else {
            1 + r.below(depth as u64 + 1) as usize
        };
        let layers: Vec<Layer> = (0..d)
            .map(|_| {
                let s = if r.coin(0.8) { 2 } else { 4 };
                Layer::pick(r, s)
            })
            .collect();
        stems.push(Stem {
            layers,
            simplified: r.coin(0.5),
        });
    }
    let dims: Vec<usize> = if r.coin(0.3) { vec![2] } else { vec![2, 3] };
    for (i, stem) in stems.iter().enumerate() {
        let inp = inputs[i];
        // torch claims from the least size every layer of the stem accepts (an output of at
        // least 1): `Dim.AUTO`'s range for a 4x4 patch embedding starts at 4.
        let least = (1..)
            .find(|&x| {
                let mut v = x;
                stem.layers.iter().all(|l| {
                    v = match *l {
                        Layer::Conv { k, s, p } => (v + 2 * p - k).div_euclid(s) + 1,
                        Layer::Ceil { k, s } => (v + s - 1 - k).div_euclid(s) + 1,
                    };
                    v >= 1
                })
            })
            .unwrap()
            .max(2);
        for &d in &dims {
            let lo = if unbounded {
                least
            } else {
                least + r.range(0, 10)
            };
            let hi = if unbounded {
                TOP
            } else {
                lo + r.range(20, 160)
            };
            ranges.insert(size(inp, d), (lo, hi));
        }
        // A ceil-mode pool's last window starts inside its input (torch's guard, as printed:
        // `2*(((-1) + x) // 2) < x`).
        for (j, l) in stem.layers.iter().enumerate() {
            if let Layer::Ceil { k, s } = *l {
                for &d in &dims {
                    let t = stem.text(&size(inp, d), j);
                    guards.push(format!("{s}*((({}) + {t}) // {s}) < {t}", s - 1 - k));
                }
            }
        }
        // Every level's size is not 1 (torch's broadcast checks), and the product of H and W.
        for depth in 1..=stem.layers.len() {
            for &d in &dims {
                guards.push(format!("{} != 1", stem.text(&size(inp, d), depth)));
            }
            if dims.len() == 2 && r.coin(0.5) {
                guards.push(format!(
                    "({}*{}) != 1",
                    stem.text(&size(inp, 3), depth),
                    stem.text(&size(inp, 2), depth)
                ));
            }
        }
        // An upsample add / skip concat between two levels two apart in stride: F_j == 2*F_j+1.
        let l = stem.layers.len();
        if l >= 2 && stem.layers[l - 1].stride() == 2 && r.coin(0.7) {
            for &d in &dims {
                let x = size(inp, d);
                let deep = stem.text(&x, l);
                let up = if r.coin(0.5) {
                    format!("2*{deep}")
                } else {
                    match deep.strip_prefix("(1 + ") {
                        Some(rest) => format!("(2 + 2*{}", rest),
                        None => format!("2*{deep}"),
                    }
                };
                guards.push(format!("{} == {up}", stem.text(&x, l - 1)));
            }
        }
        // Patch or window divisibility of the deepest level.
        if r.coin(0.25) {
            let k = [2, 3, 7][r.below(3) as usize];
            let d = dims[r.below(dims.len() as u64) as usize];
            guards.push(format!("Eq(Mod({}, {k}), 0)", stem.text(&size(inp, d), l)));
        }
    }
    // Ties: every other input against the first, after stems of the same total stride, or one
    // level finer and then upsampled x2.
    let stride =
        |s: &Stem, depth: usize| -> i128 { s.layers[..depth].iter().map(|l| l.stride()).product() };
    for i in 1..n {
        let (a, b) = (&stems[0], &stems[i]);
        let db = b.layers.len();
        let sb = stride(b, db);
        // The level of `a` with the same stride, or twice it (then `b`'s map is upsampled).
        let same = (1..=a.layers.len()).find(|&j| stride(a, j) == sb);
        let finer = (1..=a.layers.len()).find(|&j| 2 * stride(a, j) == sb);
        for &d in &dims {
            let (xa, xb) = (size(inputs[0], d), size(inputs[i], d));
            let g = match (same, finer) {
                (Some(_), Some(f)) if r.coin(0.5) => {
                    format!("{} == 2*{}", a.text(&xa, f), b.text(&xb, db))
                }
                (Some(j), _) => format!("{} == {}", a.text(&xa, j), b.text(&xb, db)),
                (None, Some(f)) => format!("{} == 2*{}", a.text(&xa, f), b.text(&xb, db)),
                (None, None) => continue,
            };
            // Either side first, as torch prints them.
            if r.coin(0.5) {
                guards.push(g);
            } else {
                let (l, rr) = g.split_once(" == ").unwrap();
                guards.push(format!("{rr} == {l}"));
            }
        }
    }
    // Max / Min of the first input's deepest levels.
    if dims.len() == 2 && r.coin(0.3) {
        let l = stems[0].layers.len();
        let (h, w) = (
            stems[0].text(&size('a', 2), l),
            stems[0].text(&size('a', 3), l),
        );
        guards.push(if r.coin(0.5) {
            format!("Max({h}, {w}) >= 2")
        } else {
            format!("Min({h}, {w}) != 1")
        });
    }
    // Batch ties.
    if n > 1 {
        let lo = if unbounded { 1 } else { r.range(1, 4) };
        let hi = if unbounded { TOP } else { lo + r.range(4, 30) };
        for &inp in &inputs[..n] {
            ranges.insert(size(inp, 0), (lo, hi));
        }
        for &inp in &inputs[1..n] {
            guards.push(format!("{} == {}", size('a', 0), size(inp, 0)));
        }
    }
    Composition {
        guards,
        ranges,
        product: None,
    }
}

/// Tuples to compare at: every tuple of a sub-box near the small corner (at most three sizes),
/// then sampled tuples near the small corner and near 2^20, 2^40 and 2^62, partners near each
/// other.
fn tuples(r: &mut Rng, c: &Composition) -> Vec<Vec<i128>> {
    let names: Vec<&String> = c.ranges.keys().collect();
    let mut out = Vec::new();
    if names.len() <= 3 {
        let w = 12;
        let mut t: Vec<i128> = names.iter().map(|n| c.ranges[*n].0).collect();
        'all: loop {
            out.push(t.clone());
            for (i, n) in names.iter().enumerate() {
                if t[i] < c.ranges[*n].0 + w - 1 {
                    t[i] += 1;
                    continue 'all;
                }
                t[i] = c.ranges[*n].0;
            }
            break;
        }
    }
    let unbounded = c.ranges.values().any(|&(_, hi)| hi == TOP);
    for _ in 0..120 {
        let base = match r.below(if unbounded { 4 } else { 1 }) {
            0 => r.range(2, 80),
            1 => (1 << 20) + r.range(0, 64),
            2 => (1 << 40) + r.range(0, 64),
            _ => (1 << 62) + r.range(0, 64),
        };
        let t = names
            .iter()
            .map(|n| {
                let (lo, hi) = c.ranges[*n];
                if n.ends_with("[0]") {
                    return r.range(lo.saturating_sub(1).max(0), lo + 6);
                }
                let v = base + r.range(-12, 12);
                if hi == TOP {
                    v
                } else {
                    v.clamp(lo - 1, hi + 1)
                }
            })
            .collect();
        out.push(t);
    }
    // A reshape product: tuples on the product, one off it, and past `n`'s range, with `h` and
    // `w` near the small corner or one of them near 2^20, 2^40 or 2^62.
    if let Some((a, b)) = c.product {
        let (h, w, n) = (size('a', 2), size('a', 3), size('b', 1));
        for _ in 0..200 {
            let near = |r: &mut Rng, name: &str, big: bool| {
                let (lo, hi) = c.ranges[name];
                let v = if big {
                    [1i128 << 20, 1 << 40, 1 << 62][r.below(3) as usize] + r.range(-12, 12)
                } else {
                    lo + r.range(-1, 60)
                };
                if hi == TOP {
                    v
                } else {
                    v.clamp(lo - 1, hi + 1)
                }
            };
            let big = r.below(3);
            let hv = near(r, &h, big == 1);
            let wv = near(r, &w, big == 2);
            let nv = hv.div_euclid(a) * wv.div_euclid(b) + [0, 0, 0, -1, 1][r.below(5) as usize];
            let t = names
                .iter()
                .map(|x| match x.as_str() {
                    s if s == h => hv,
                    s if s == w => wv,
                    s if s == n => nv,
                    s => c.ranges[s].0 + r.range(0, 3),
                })
                .collect();
            out.push(t);
        }
    }
    out
}

fn check(seed: u64) -> Result<(), TestCaseError> {
    let mut r = Rng(seed);
    let c = compose(&mut r);
    let guards: Vec<Expr> = c.guards.iter().map(|g| parse_guard(g).unwrap()).collect();
    let names: Vec<String> = c.ranges.keys().cloned().collect();
    let budget = Budget {
        time: Duration::from_secs(5),
        ..Budget::default()
    };
    let start = Instant::now();
    let groups = group(&guards, &names);
    let solved: Vec<_> = groups
        .iter()
        .map(|g| solve_group_with(g, &c.ranges, &budget, None))
        .collect();
    let took = start.elapsed();
    let show = || {
        format!(
            "guards:\n  {}\nranges: {:?}",
            c.guards.join("\n  "),
            c.ranges
        )
    };
    prop_assert!(
        took < Duration::from_secs(1),
        "{:?} to solve (closed form: {:?})\n{}",
        took,
        solved.iter().map(|s| s.tied.is_some()).collect::<Vec<_>>(),
        show()
    );
    for (g, s) in groups.iter().zip(&solved) {
        // Every tuple decided: nothing undecided, or only each size's own set of a group with a
        // defined size (`n == (h//a)*(w//b)`), whose tuples are all decided.
        prop_assert!(
            matches!(s.undecided, None | Some(Undecided::Defined { .. })),
            "undecided: {:?}\nroots {:?}, linking guards:\n  {}\n{}",
            s.undecided.as_ref().map(|u| u.to_string()),
            g.roots,
            g.guards
                .iter()
                .filter(|e| e.atoms().len() > 1)
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join("\n  "),
            show()
        );
    }
    // A reshape product solved with `n` defined: each image size's values with some partner
    // (where computed) against the guards evaluated directly, the partner enumerated over its
    // first 400 values and `n` at the product.
    if let Some((a, b)) = c.product {
        let (h, w, n) = (size('a', 2), size('a', 3), size('b', 1));
        for s in &solved {
            let Some(d) = &s.defined else { continue };
            let Some(j) = &d.solved.joint else { continue };
            for (me, other) in [(&h, &w), (&w, &h)] {
                let Ok(some) = d.some(j, me) else { continue };
                let (lo, hi) = c.ranges[me.as_str()];
                let (plo, phi) = c.ranges[other.as_str()];
                let mut values: Vec<i128> = (lo - 1..lo + 60).collect();
                values.extend([1 << 20, 1 << 40, 1 << 62].map(|x: i128| x + r.range(-12, 12)));
                for v in values.into_iter().filter(|&v| v <= hi.saturating_add(1)) {
                    let truth = (plo..=phi.min(plo + 400)).any(|p| {
                        let (hv, wv) = if me == &h { (v, p) } else { (p, v) };
                        let nv = hv.div_euclid(a) * wv.div_euclid(b);
                        let value = |x: &str| {
                            Some(if x == h {
                                hv
                            } else if x == w {
                                wv
                            } else if x == n {
                                nv
                            } else {
                                c.ranges[x].0
                            })
                        };
                        let in_range = [(&h, hv), (&w, wv), (&n, nv)].iter().all(|(x, v)| {
                            (c.ranges[x.as_str()].0..=c.ranges[x.as_str()].1).contains(v)
                        });
                        in_range && guards.iter().all(|g| g.truth(&value) == Ok(true))
                    });
                    prop_assert_eq!(
                        some.contains(v),
                        truth,
                        "{} at {} with some partner\n{}",
                        me,
                        v,
                        show()
                    );
                }
            }
        }
    }
    // A reshape product (issue 34, last review): each size's values that pass with every
    // partner are decided (none: the tokens break the definition) unless the group is
    // degenerate; the tokens' values with some partner (products of the factors' ranges) equal
    // the guards evaluated directly with h, w enumerated over each factor pair; the group's box
    // of the image sizes passes at its corners and tuples over it with n at the product.
    if let Some((a, b)) = c.product {
        let (h, w, n) = (size('a', 2), size('a', 3), size('b', 1));
        let at = |hv: i128, wv: i128, nv: i128| {
            let value = |x: &str| {
                Some(if x == h {
                    hv
                } else if x == w {
                    wv
                } else if x == n {
                    nv
                } else {
                    c.ranges[x].0
                })
            };
            let in_range = [(&h, hv), (&w, wv), (&n, nv)]
                .iter()
                .all(|(x, v)| (c.ranges[x.as_str()].0..=c.ranges[x.as_str()].1).contains(v));
            in_range && guards.iter().all(|g| g.truth(&value) == Ok(true))
        };
        for (g, s) in groups.iter().zip(&solved) {
            let Some(d) = &s.defined else { continue };
            for root in &g.roots {
                if s.unsure.contains_key(root) {
                    continue;
                }
                prop_assert!(s.accepted[root].is_empty(), "{root}\n{}", show());
                // Some partner breaks it: at the least corner, n moved off the product.
                let (hl, wl) = (c.ranges[&h].0, c.ranges[&w].0);
                let nv = hl.div_euclid(a) * wl.div_euclid(b);
                prop_assert!(
                    !(at(hl, wl, nv) && at(hl, wl, nv + 1) && at(hl, wl, nv - 1)),
                    "{root}\n{}",
                    show()
                );
            }
            let Some(j) = &d.solved.joint else { continue };
            if let Some(p) = d.products(j) {
                PRODUCTS.fetch_add(1, Ordering::Relaxed);
                let (lo_n, hi_n) = c.ranges[&n];
                for nv in lo_n..=hi_n.min(lo_n + 80) {
                    let truth = (1..=nv).filter(|p| nv % p == 0).any(|p| {
                        let q = nv / p;
                        // h with h // a == p (the guards read h only so), likewise w.
                        let pick = |x: &str, f: i128, k: i128| {
                            let (lo, hi) = c.ranges[x];
                            let v = (k * f).max(lo);
                            (v <= hi.min(k * f + k - 1)).then_some(v)
                        };
                        match (pick(&h, p, a), pick(&w, q, b)) {
                            (Some(hv), Some(wv)) => at(hv, wv, nv),
                            _ => false,
                        }
                    });
                    prop_assert_eq!(
                        p.contains(nv),
                        truth,
                        "n = {} with some partner\n{}",
                        nv,
                        show()
                    );
                }
            }
            let name = |x: &str| x.to_string();
            let l = linked(s, g, &budget, &name, &name, &|_| 1);
            if let Some(bx) = l.as_ref().and_then(|l| l.largest.as_ref()) {
                let lv = |x: &str| j.sizes.iter().position(|y| y == x);
                let (Some(lh), Some(lw)) = (lv(&h), lv(&w)) else {
                    continue;
                };
                let (sh, sw) = (bx.sides[lh], bx.sides[lw]);
                BOXES.fetch_add(1, Ordering::Relaxed);
                let spread = |p: dimguard_solver::Progression| {
                    let k = (p.hi - p.lo) / p.modulus;
                    [0, 1, k / 3, k / 2, k - 1, k].map(|i| p.lo + i.clamp(0, k) * p.modulus)
                };
                for hv in spread(sh) {
                    for wv in spread(sw) {
                        let nv = hv.div_euclid(a) * wv.div_euclid(b);
                        prop_assert!(
                            at(hv, wv, nv),
                            "box tuple ({}, {}) fails\n{}",
                            hv,
                            wv,
                            show()
                        );
                    }
                }
            }
        }
    }
    for t in tuples(&mut r, &c) {
        let value = |n: &str| names.iter().position(|x| x == n).map(|i| t[i]);
        let in_range = names
            .iter()
            .zip(&t)
            .all(|(n, &v)| (c.ranges[n].0..=c.ranges[n].1).contains(&v));
        let truth = in_range && guards.iter().all(|g| g.truth(&value) == Ok(true));
        let said = groups
            .iter()
            .zip(&solved)
            .map(|(g, s)| s.contains(g, &value))
            .try_fold(true, |acc, x| x.map(|b| acc && b));
        prop_assert_eq!(said, Some(truth), "at {:?}\n{}", t, show());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("DIMGUARD_COMPOSED_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
    ))]
    /// At least 2,000 composed groups per run (`DIMGUARD_COMPOSED_CASES` for a longer run): each
    /// decided within a second, its answer equal to the guards' own value at every tuple asked.
    #[test]
    fn composed_groups_are_decided_and_exact(seed in any::<u64>()) {
        check(seed)?;
    }
}

/// The reshape-product checks above run: over 600 seeds, defined sizes' products and boxes of
/// image sizes are compared with the guards.
#[test]
fn reshape_products_and_boxes_are_checked() {
    for seed in 0..600u64 {
        check(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)).unwrap();
    }
    let (p, b) = (
        PRODUCTS.load(Ordering::Relaxed),
        BOXES.load(Ordering::Relaxed),
    );
    assert!(p >= 20 && b >= 20, "{p} products, {b} boxes checked");
}

/// Three sizes linked through one shared floor/ceil parameter (issue 41: the FPN's three
/// images, `a` through a stride-`da` map, `b` stride `db`, `c` stride `dc`, `da | db | dc`): each
/// finer map equals the coarser one upsampled (`x//da == r*(y//db)`, torch's ceil form `1 +
/// ((x - 1)//d)` or a floor), and a cycle of ties at the coarser strides read through the finer
/// maps' offsets — so that some tie reads a size through steps finer than its tie's blocks —
/// over `Dim.AUTO`'s unbounded ranges. Its answer equals the guards' value at every tuple of a
/// box near the small corner and of one near 2^40 where it decides; it must decide where `b`'s
/// two maps share their blocks (see `must`).
/// Guards written over the sizes `vars`, each ranged `lo..2^63-1`, grouped as the solver groups
/// them: what the families below pose.
struct Posed {
    names: Vec<String>,
    guards: Vec<Expr>,
    ranges: BTreeMap<String, (i128, i128)>,
    groups: Vec<Group>,
}

fn pose(texts: &[String], vars: &[&str], lo: i128) -> Posed {
    let guards: Vec<Expr> = texts.iter().map(|t| parse_guard(t).unwrap()).collect();
    let names: Vec<String> = vars.iter().map(|s| s.to_string()).collect();
    let ranges = names
        .iter()
        .map(|n| (n.clone(), (lo, i64::MAX as i128)))
        .collect();
    let groups = group(&guards, &names);
    Posed {
        names,
        guards,
        ranges,
        groups,
    }
}

fn chain(
    (ia, ja, jc): (u32, u32, u32),
    (pa, pb, pc): (i128, i128, i128),
    (qa, qc): (i128, i128),
    ceil: [bool; 2],
    cycle: [bool; 2],
    lo: [i128; 3],
) -> Result<(), TestCaseError> {
    let da = 1i128 << ia;
    let db = da << ja;
    let dc = db << jc;
    // The map of a size at stride `d`, offset `p`: a floor, or torch's ceil form.
    let map = |x: &str, p: i128, d: i128, ceil: bool| {
        if ceil {
            format!("1 + ((({x} + {}) // {d}))", p - 1)
        } else {
            format!("(({x} + {p}) // {d})")
        }
    };
    let mut texts = vec![
        format!("a >= {}", lo[0]),
        format!("b >= {}", lo[1]),
        format!("c >= {}", lo[2]),
        format!(
            "{} == {}*{}",
            map("a", pa, da, ceil[0]),
            db / da,
            map("b", pb, db, false)
        ),
        format!(
            "{} == {}*{}",
            map("b", pb, db, ceil[1]),
            dc / db,
            map("c", pc, dc, false)
        ),
    ];
    if cycle[0] {
        texts.push(format!(
            "{} == {}",
            map("a", qa, db, false),
            map("b", pb, db, false)
        ));
    }
    if cycle[1] {
        texts.push(format!(
            "{} == {}",
            map("c", pc, dc, false),
            map("b", qc, dc, false)
        ));
    }
    let Posed {
        guards,
        ranges,
        groups,
        ..
    } = pose(&texts, &["a", "b", "c"], 2);
    let solved: Vec<_> = groups
        .iter()
        .map(|g| solve_group_with(g, &ranges, &Budget::default(), None))
        .collect();
    // Decided whenever `b`'s two maps share their blocks (no ceil form on the `b`-`c` link)
    // and the `c`-`b` cycle tie comes with the `a`-`b` one; past that (a size read through two
    // block alignments) the answer may be undecided, but never wrong where it decides.
    let must = !ceil[1] && (cycle == [true, true] || !cycle[1]);
    let undecided = solved.iter().any(|s| s.undecided.is_some());
    if must {
        prop_assert!(
            !undecided,
            "{:?}: {:?}",
            texts,
            solved.iter().map(|s| &s.undecided).collect::<Vec<_>>()
        );
    }
    for base in [2i128, 1 << 40] {
        let w = 3 * dc + 8;
        for a in base..base + w {
            for b in base..base + w {
                for c in base..base + w {
                    let value = |x: &str| match x {
                        "a" => Some(a),
                        "b" => Some(b),
                        "c" => Some(c),
                        _ => None,
                    };
                    let truth = guards.iter().all(|g| g.truth(&value) == Ok(true));
                    let said = groups
                        .iter()
                        .zip(&solved)
                        .map(|(g, s)| s.contains(g, &value))
                        .try_fold(true, |acc, x| x.map(|v| acc && v));
                    if !(undecided && said.is_none()) {
                        prop_assert_eq!(said, Some(truth), "{:?} at {:?}", texts, (a, b, c));
                    }
                }
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Chains of three sizes through a shared floor/ceil parameter ([`chain`]) against brute force.
    #[test]
    fn chains_through_a_shared_parameter_match_brute_force(
        ia in 0u32..2, ja in 1u32..3, jc in 0u32..2,
        pa in -3i128..3, pb in -3i128..3, pc in -3i128..3, qa in -3i128..3, qc in -3i128..3,
        ceil in any::<[bool; 2]>(), cycle in any::<[bool; 2]>(),
        la in 2i128..12, lb in 2i128..12, lc in 2i128..12,
    ) {
        chain((ia, ja, jc), (pa, pb, pc), (qa, qc), ceil, cycle, [la, lb, lc])?;
    }
}

/// The FPN's own axis (`fpn_three_inputs`: a stride-2 stem, a stride-4 stem, a stride-8 stem;
/// four floor ties in a cycle) is one member of the family.
#[test]
fn the_fpn_axis_is_a_chain() {
    chain(
        (1, 1, 1),
        (1, 1, 0),
        (3, 5),
        [false, false],
        [true, true],
        [3, 7, 16],
    )
    .unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// A size defined by two others through a conv stack's frame count plus a second input's
    /// half (`n == e + ((a//k - c)//2) + b//2`, a constant of either sign outside the floors),
    /// within `nlo..nhi` (`nlo` the definition's least value or `up` above it: then the defining
    /// sizes' ranges start below it, and small `a` need a larger `b`), over `Dim.AUTO`'s
    /// unbounded ranges: the defining size `a`'s values with some partner ([`Defined::some`])
    /// are computed and equal, over three windows of 300 values, those for which some `b`
    /// passes every guard (brute force).
    #[test]
    fn a_defining_size_has_its_values_with_some_partner(
        k in 1i128..25, c in -6i128..6, e in -3i128..3, m in 2i128..6, r in 0i128..6,
        lo in 2i128..120, wide in 0i128..40, up in 0i128..30,
    ) {
        let nlo = e + ((lo / k) - c).div_euclid(2) + 1 + up;
        prop_assume!(nlo >= 1);
        let nhi = nlo + wide;
        let texts = [
            format!("a >= {lo}"),
            format!("a % {m} != {}", r % m),
            "b >= 2".to_string(),
            format!("n >= {nlo}"),
            format!("n <= {nhi}"),
            format!("n == {e} + ((((-{c}) + (a // {k})) // 2)) + (b // 2)"),
        ];
        let Posed {
            guards,
            ranges,
            groups,
            ..
        } = pose(&texts, &["a", "b", "n"], 1);
        prop_assert_eq!(groups.len(), 1);
        let s = solve_group_with(&groups[0], &ranges, &Budget::default(), None);
        prop_assert!(s.defined.is_some(), "{:?}: n is defined by a and b", texts);
        let l = linked(&s, &groups[0], &Budget::default(), &|x| x.to_string(), &|x| x.to_string(), &|_| 0)
            .expect("the joint answer");
        let member = groups[0].members.iter().find(|x| x.name == "a").unwrap();
        let some = l.some(member).map_err(|x| TestCaseError::fail(format!("{texts:?}: {x}")))?;
        for base in [1i128, lo, 1 << 40] {
            for a in base..base + 300 {
                let truth = (1..2 * nhi + 40).any(|b| {
                    let n = e + ((a / k) - c).div_euclid(2) + b / 2;
                    let value = |x: &str| match x {
                        "a" => Some(a),
                        "b" => Some(b),
                        "n" => Some(n),
                        _ => None,
                    };
                    n >= 1 && guards.iter().all(|g| g.truth(&value) == Ok(true))
                });
                prop_assert_eq!(some.contains(a), truth, "{:?} at a = {}", texts, a);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(60))]
    /// Two sizes defined one each by a size of a linked pair (`p == a//k1 + c`, `q == b//k2`:
    /// an image and its quarter-size mask, per axis), each within its own range, the pair
    /// linked by `a + b >= t` and `a` periodic (`a % m != r`), over `Dim.AUTO`'s unbounded
    /// ranges: one definition is eliminated inside the other's reduced group. Every size's
    /// values with some partner ([`Linked::some`]: the defining sizes' and the defined sizes')
    /// are computed and equal the brute force over every tuple the own ranges leave; where the
    /// link holds at the least corner, the others have a sound box (the spec keeps `a` and
    /// `b`), every corner of it passing.
    #[test]
    fn two_defined_sizes_have_their_values_with_some_partner(
        k1 in 1i128..6, k2 in 1i128..6, c in -3i128..4, m in 2i128..5, r in 0i128..5,
        la in 2i128..40, lb in 2i128..40, t in 0i128..90, wp in 0i128..30, wq in 0i128..30,
        up in 0i128..8,
    ) {
        prop_assume!(la / k1 + c >= 1 && lb / k2 >= 1);
        let (hp, hq) = (la / k1 + c + wp, lb / k2 + wq);
        // `p`'s range may start above its definition's least value: `a`'s then starts below.
        let lp = la / k1 + c + up;
        let texts = [
            format!("a >= {la}"),
            format!("p >= {lp}"),
            format!("b >= {lb}"),
            format!("a % {m} != {}", r % m),
            format!("a + b >= {t}"),
            format!("p <= {hp}"),
            format!("q <= {hq}"),
            format!("p == (a // {k1}) + {c}"),
            format!("q == b // {k2}"),
        ];
        let Posed {
            names,
            ranges,
            groups,
            ..
        } = pose(&texts, &["a", "b", "p", "q"], 1);
        prop_assert_eq!(groups.len(), 1);
        let s = solve_group_with(&groups[0], &ranges, &Budget::default(), None);
        prop_assert!(
            s.defined.as_ref().is_some_and(|d| d.chain().len() == 2),
            "{:?}: p and q are defined",
            texts
        );
        let l = linked(&s, &groups[0], &Budget::default(), &|x| x.to_string(), &|x| x.to_string(), &|_| 0)
            .expect("the joint answer");
        // The oracle: every tuple, p and q at their definitions (their ranges bound a and b).
        let passes = |a: i128, b: i128| {
            let (p, q) = (a / k1 + c, b / k2);
            a >= la && b >= lb && a % m != r % m && a + b >= t
                && (lp..=hp).contains(&p) && (1..=hq).contains(&q)
        };
        let (amax, bmax) = ((hp - c + 1) * k1 + 5, (hq + 1) * k2 + 5);
        let mut truth: [BTreeMap<i128, bool>; 4] = Default::default();
        for a in 1..=amax {
            for b in 1..=bmax {
                let ok = passes(a, b);
                for (i, v) in [a, b, a / k1 + c, b / k2].into_iter().enumerate() {
                    *truth[i].entry(v).or_insert(false) |= ok;
                }
            }
        }
        for (i, x) in names.iter().enumerate() {
            let member = groups[0].members.iter().find(|mb| mb.name == *x).unwrap();
            let some = l
                .some(member)
                .map_err(|e| TestCaseError::fail(format!("{texts:?}: {x}: {e}")))?;
            for (&v, &ok) in &truth[i] {
                if v >= 1 {
                    prop_assert_eq!(some.contains(v), ok, "{:?}: {} = {}", texts, x, v);
                }
            }
            // Nothing past the brute force's window passes.
            let top = *truth[i].keys().max().unwrap();
            prop_assert!(some.max().is_none_or(|h| h < top), "{:?}: {} up to {:?}", texts, x, some.max());
        }
        // A box where the link holds at the least corner (image_mask's corner-only guard) and
        // the own ranges leave room for every residue of `a`; else the reduced set's largest
        // box can start above the caps (a binding link, or `a`'s one passing value off the
        // box's progression: not boxed yet).
        // (With `p`'s range starting at its definition's least value: the box's cut at the
        // top only.)
        if up == 0 && t <= la + lb && wp >= m && wq >= 1 && truth[0].values().any(|&ok| ok) {
            let b = l.largest.as_ref();
            prop_assert!(b.is_some(), "{:?}: no box of a and b", texts);
            let sides = &b.unwrap().sides;
            let (ia, ib) = (l.joint.level("a").unwrap(), l.joint.level("b").unwrap());
            for a in [sides[ia].lo, sides[ia].hi] {
                for b in [sides[ib].lo, sides[ib].hi] {
                    prop_assert!(passes(a, b), "{:?}: corner ({}, {})", texts, a, b);
                }
            }
        }
    }
}
