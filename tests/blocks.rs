//! The `dynamic_shapes` block `diagnose` prints, held to the product's rule: as a whole it is
//! sound (every combination of sizes it admits passes every guard) and it runs as Python (every
//! name defined before use, none re-bound, the dict names only what the block defines).
//!
//! The block is read line by line as Python runs it ([`Block::read`]: `Dim(..)`, `Dim.AUTO`,
//! integers, `k*name + c`), its admitted tuples enumerated and each checked against every guard
//! of the message with the exact evaluator: for the reviewer's reproducers and for random groups
//! of guards over two or three sizes (products, sums, equalities with multipliers, broadcasts,
//! mods), some sizes named only inside a guard.

use dimguard::api::{self, Examples};
use dimguard::prove::Mode;
use dimguard::solver::expr::Value;
use dimguard::solver::{parse_guard, Expr};
use std::collections::BTreeMap;

mod rng;
use rng::Rng;

/// What a Python name holds: `coef * root + offset` (`root` an index into [`Block::roots`]), or
/// the integer `offset` when `root` is `None`.
#[derive(Debug, Clone, Copy)]
struct Val {
    root: Option<usize>,
    coef: i128,
    offset: i128,
}

/// A printed block as Python would run it.
#[derive(Debug)]
struct Block {
    /// Each `Dim` (or `Dim.AUTO` with the range its comment states): `(lo, hi)`.
    roots: Vec<(i128, i128)>,
    /// The dict: `(source, value)` per entry.
    dict: Vec<(String, Val)>,
}

/// Values of one root enumerated at most (a side without a bound is checked on its first ones).
const PER_ROOT: i128 = 64;

impl Block {
    /// Runs `code`: an error for a name used before it is defined or bound twice, or a line it
    /// cannot read; `None` dict entries when there is no dict.
    fn read(code: &str) -> Result<Block, String> {
        let mut roots = Vec::new();
        let mut names: BTreeMap<String, Val> = BTreeMap::new();
        let mut dict = Vec::new();
        let lookup = |names: &BTreeMap<String, Val>, n: &str| {
            names
                .get(n)
                .copied()
                .ok_or_else(|| format!("NameError: {n} is used before it is defined"))
        };
        for line in code.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line == "from torch.export import Dim" {
                continue;
            }
            let (name, rhs) = line
                .split_once(" = ")
                .ok_or_else(|| format!("cannot read {line:?}"))?;
            if name == "dynamic_shapes" {
                let body = rhs
                    .strip_prefix('{')
                    .and_then(|r| r.strip_suffix('}'))
                    .ok_or("dict")?;
                for part in body.split("}, ").filter(|p| !p.is_empty()) {
                    let (input, entries) = part.split_once(": {").ok_or("dict entry")?;
                    let input = input.trim_matches('"');
                    for e in entries.trim_end_matches('}').split(", ") {
                        let (k, n) = e.split_once(": ").ok_or("dict index")?;
                        let v = match n.parse::<i128>() {
                            Ok(c) => Val {
                                root: None,
                                coef: 0,
                                offset: c,
                            },
                            Err(_) => lookup(&names, n)?,
                        };
                        dict.push((format!("L['{input}'].size()[{k}]"), v));
                    }
                }
                continue;
            }
            let rhs = rhs.split("  #").next().unwrap_or(rhs).trim();
            let comment = line.split_once("  # ").map_or("", |(_, c)| c);
            let v = if let Some(args) = rhs.strip_prefix("Dim(").and_then(|r| r.strip_suffix(')')) {
                let arg = |k: &str| {
                    args.split(", ")
                        .find_map(|a| a.strip_prefix(k))
                        .map(|v| v.parse::<i128>().map_err(|e| e.to_string()))
                        .transpose()
                };
                let lo = arg("min=")?.unwrap_or(0);
                let hi = arg("max=")?.unwrap_or(i128::MAX);
                roots.push((lo, hi));
                Val {
                    root: Some(roots.len() - 1),
                    coef: 1,
                    offset: 0,
                }
            } else if rhs == "Dim.AUTO" {
                // `# every size in lo..hi passes`: the claim is checked like a range.
                let range = comment
                    .strip_prefix("every size in ")
                    .and_then(|r| r.split_whitespace().next())
                    .and_then(|r| r.split_once(".."))
                    .ok_or_else(|| format!("Dim.AUTO without its range: {line:?}"))?;
                roots.push((
                    range.0.parse().map_err(|_| "AUTO lo")?,
                    range.1.parse().map_err(|_| "AUTO hi")?,
                ));
                Val {
                    root: Some(roots.len() - 1),
                    coef: 1,
                    offset: 0,
                }
            } else if let Ok(c) = rhs.parse::<i128>() {
                Val {
                    root: None,
                    coef: 0,
                    offset: c,
                }
            } else {
                // `k*x + c`, `x - c`, `x`.
                let (term, off) = match rhs.split_once(" + ") {
                    Some((t, c)) => (t, c.parse::<i128>().map_err(|e| e.to_string())?),
                    None => match rhs.split_once(" - ") {
                        Some((t, c)) => (t, -c.parse::<i128>().map_err(|e| e.to_string())?),
                        None => (rhs, 0),
                    },
                };
                let (k, x) = match term.split_once('*') {
                    Some((k, x)) => (k.parse::<i128>().map_err(|e| e.to_string())?, x),
                    None => (1, term),
                };
                let base = lookup(&names, x)?;
                Val {
                    root: base.root,
                    coef: k * base.coef,
                    offset: k * base.offset + off,
                }
            };
            if names.insert(name.to_string(), v).is_some() {
                return Err(format!("{name} is bound twice (the second re-binds it)"));
            }
        }
        Ok(Block { roots, dict })
    }

    /// The first admitted tuple (by source) that fails a guard, among at most [`PER_ROOT`]
    /// values per root; `Ok(false)` when some guard names a size the dict leaves out (nothing
    /// checked), `Ok(true)` when every tuple passes.
    fn check(&self, guards: &[Expr]) -> Result<bool, BTreeMap<String, i128>> {
        let env_has = |a: &str| self.dict.iter().any(|(s, _)| s == a);
        if !guards
            .iter()
            .all(|g| g.atoms().iter().all(|a| env_has(a.as_ref())))
        {
            return Ok(false);
        }
        let sides: Vec<Vec<i128>> = self
            .roots
            .iter()
            .map(|&(lo, hi)| (lo..=hi.min(lo + PER_ROOT - 1)).collect())
            .collect();
        let mut idx = vec![0usize; sides.len()];
        if sides.iter().any(Vec::is_empty) {
            return Ok(true);
        }
        loop {
            let values: BTreeMap<String, i128> = self
                .dict
                .iter()
                .map(|(s, v)| {
                    let r = v.root.map_or(0, |r| sides[r][idx[r]]);
                    let x = v.coef.checked_mul(r).and_then(|x| x.checked_add(v.offset));
                    (s.clone(), x.unwrap_or(i128::MAX))
                })
                .collect();
            let env = |a: &str| values.get(a).copied();
            if !guards
                .iter()
                .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
            {
                return Err(values);
            }
            // Next tuple.
            let mut k = 0;
            loop {
                if k == idx.len() {
                    return Ok(true);
                }
                idx[k] += 1;
                if idx[k] < sides[k].len() {
                    break;
                }
                idx[k] = 0;
                k += 1;
            }
        }
    }
}

/// `diagnose`'s block for `text` (with Z3, as the command runs), with `--example NAME=N`s.
fn block(text: &str, examples: &[(&str, i128)]) -> String {
    let ex = Examples {
        by_name: examples
            .iter()
            .map(|(n, v)| (Some(n.to_string()), *v))
            .collect(),
        ..Examples::default()
    };
    let (report, _) =
        api::diagnose_text(text, &ex, Some(Mode::Auto), 2_000, None).expect("diagnoses");
    report.dynamic_shapes
}

/// A constraint violation listing each guard under each named size `(name, source, lo, hi)` it
/// mentions (under the first when it mentions none, as torch does).
fn message(named: &[(&str, &str, i128, i128)], guards: &[String]) -> String {
    let mut lines = Vec::new();
    for g in guards {
        let under: Vec<_> = named.iter().filter(|d| g.contains(d.1)).collect();
        let under = if under.is_empty() {
            vec![&named[0]]
        } else {
            under
        };
        for (n, s, lo, hi) in under {
            lines.push(format!(
                "  - Not all values of {n} = {s} in the specified range {lo} <= {n} <= {hi} satisfy the generated guard {g}."
            ));
        }
    }
    let names: Vec<&str> = named.iter().map(|d| d.0).collect();
    format!(
        "torch._dynamo.exc.UserError: Constraints violated ({})!\n{}\n",
        names.join(", "),
        lines.join("\n")
    )
}

/// Reads the block for `text`, checks it against `guards`: its error (Python) or the failing
/// tuple, with the block.
fn sound(text: &str, guards: &[&str], examples: &[(&str, i128)]) -> Result<bool, String> {
    let code = block(text, examples);
    let guards: Vec<Expr> = guards.iter().map(|g| parse_guard(g).unwrap()).collect();
    let b = Block::read(&code).map_err(|e| format!("{e}\n{code}"))?;
    b.check(&guards)
        .map_err(|t| format!("admits {t:?}, which fails a guard\n{code}"))
}

const H: &str = "L['x'].size()[2]";
const W: &str = "L['x'].size()[3]";
const Y: &str = "L['y'].size()[2]";
const Z: &str = "L['z'].size()[2]";

/// The reviewer's reproducers: each block is sound, runs, and names every size its guards name.
fn reproducer(named: &[(&str, &str, i128, i128)], guards: &[String], ex: &[(&str, i128)]) {
    let text = message(named, guards);
    let g: Vec<&str> = guards.iter().map(String::as_str).collect();
    match sound(&text, &g, ex) {
        Ok(true) => {}
        Ok(false) => panic!(
            "the dict leaves out a size a guard names\n{}",
            block(&text, ex)
        ),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn a_partner_name_never_rebinds_a_user_dim() {
    // m2: the partner L['x'].size()[3] would be `x_3`, the user's Dim of L['y'].size()[0].
    let y0 = "L['y'].size()[0]";
    reproducer(
        &[("h", H, 32, 1024), ("x_3", y0, 2, 1000)],
        &[
            format!("{H} * {W} <= 65536"),
            format!("Eq(Mod({y0}, 2), 0)"),
        ],
        &[],
    );
}

#[test]
fn a_size_derived_from_a_root_is_written_from_the_roots_line() {
    // m4 (partners), m3 (named), m21 (partner of a shared Dim).
    let area = format!("{H} * {W} <= 1000");
    let twice = format!("Eq({Y}, 2*{H})");
    reproducer(&[("h", H, 2, 100)], &[area.clone(), twice.clone()], &[]);
    reproducer(
        &[("h", H, 2, 100), ("w", W, 2, 100), ("g", Y, 2, 300)],
        &[area, twice],
        &[],
    );
    reproducer(
        &[("h", H, 2, 1024)],
        &[
            format!("Or(Eq({H}, {Y}), Eq({Y}, 1))"),
            format!("Eq({Z}, 2*{H})"),
        ],
        &[],
    );
}

#[test]
fn one_shared_dim_keeps_each_members_multiplier() {
    // m7 (partners), m11 (named).
    let guards = [
        format!("Or(Eq({H}, {Y}), Eq({Y}, 1))"),
        format!("Eq({Z}, 2*{Y})"),
    ];
    reproducer(&[("h", H, 2, 1024)], &guards, &[]);
    reproducer(
        &[("h", H, 2, 1024), ("v", Y, 2, 1024), ("u", Z, 2, 4096)],
        &guards,
        &[],
    );
}

#[test]
fn one_group_takes_one_answer_for_every_member() {
    // m5: h's traced size is in the shared Dim, w's is not: both lines from one answer.
    reproducer(
        &[("h", H, 2, 1024), ("w", Y, 2, 1024)],
        &[format!(
            "Or(And(Eq({H}, {Y}), Eq(Mod({H}, 2), 0)), And(Eq({H}, 10), Eq({Y}, 11)))"
        )],
        &[("h", 10), ("w", 11)],
    );
}

#[test]
fn an_alias_comes_after_the_dim_it_names() {
    // m17: `h = w` was printed above `w = Dim(..)`.
    reproducer(
        &[("h", H, 2, 21), ("w", W, 2, 14)],
        &[format!("Or(Eq({H}, {W}), Eq({W}, 23))")],
        &[],
    );
}

#[test]
fn a_guard_true_for_every_partner_value_keeps_its_dims() {
    // m18: the one-size re-check evaluated the guard with w unbound and withheld h's Dim; the
    // dict then named `h`, which the block never defined.
    let g = format!("Ne(Mod(2*{H} + 2*{W}, 2), 1)");
    let text = message(&[("h", H, 2, 12), ("w", W, 2, 9)], std::slice::from_ref(&g));
    let code = block(&text, &[]);
    assert!(
        !code.contains("no constraint to express"),
        "h and w keep their Dims:\n{code}"
    );
    reproducer(&[("h", H, 2, 12), ("w", W, 2, 9)], &[g], &[]);
}

#[test]
fn every_size_a_group_names_reaches_the_dict() {
    // m25: a one-root group's derived size; m14: a partner with no input/index keeps the dict.
    reproducer(&[("h", H, 2, 100)], &[format!("Eq({Y}, 2*{H})")], &[]);
    let a = "L['args'][1].size()[0]";
    let text = message(&[("h", H, 32, 1024)], &[format!("{H} * {a} <= 65536")]);
    let code = block(&text, &[]);
    assert!(
        code.contains("dynamic_shapes = {\"x\": {2: h}}")
            && code.contains("not a dimension of a named input"),
        "{code}"
    );
    Block::read(&code).unwrap();
}

/// A random guard over `H`, `W` and sometimes `Y` and `Z` (named only inside guards).
fn random_guard(r: &mut Rng) -> String {
    let (a, b, c, k) = (r.int(1, 6), r.int(1, 6), r.int(2, 7), r.int(20, 900));
    let (m, k2, k3) = (r.int(2, 6), r.int(3, 30), r.int(3, 30));
    let q = r.int(0, m - 1);
    match r.int(0, 13) {
        0 => format!("{H}*{W} <= {k}"),
        1 => format!("Ne(Mod({a}*{H} + {b}*{W}, {c}), {})", q % c),
        2 => format!("Or({H} <= {k2}, {W} <= {k3})"),
        3 => format!("Eq(Mod({H}*{W}, {m}), 0)"),
        4 => format!("{a}*{H} + {b}*{W} <= {}", k / 8 + 10),
        5 => format!("Or(Eq(Mod({H}, {m}), {q}), {H}*{W} <= {k})"),
        6 => format!("Or(Eq({H}, {W}), Eq({W}, {k3}))"),
        7 => format!("Or(Eq({H}, {W}), Eq({W}, 1))"),
        8 => format!("Eq({Y}, {a}*{H} + {})", q),
        9 => format!("Eq({Y}, {a}*{W})"),
        10 => format!("{Y}*{H} <= {k}"),
        11 => format!("Or(Eq({Y}, {H}), Eq({Y}, 1))"),
        12 => format!("Eq({Z}, {a}*{Y} + {q})"),
        _ => format!("Ne(Mod({H}*{W} + {H}, {c}), {})", q % c),
    }
}

/// Random groups, `CASES` of them (160) from seed `SEED` (env, to search further by hand).
#[test]
fn random_blocks_are_sound_and_run() {
    let mut r = Rng(std::env::var("SEED").map_or(0x5eed_b10c, |s| s.parse().unwrap()));
    let (mut checked, mut cases) = (0, 0);
    let mut failures = Vec::new();
    for case in 0..std::env::var("CASES").map_or(160, |s| s.parse().unwrap()) {
        let guards: Vec<String> = (0..r.int(1, 3)).map(|_| random_guard(&mut r)).collect();
        let mut named = vec![("h", H, 2, r.int(8, 40))];
        if r.chance(60) {
            named.push(("w", W, 2, r.int(8, 40)));
        }
        if guards.iter().any(|g| g.contains(Y)) && r.chance(50) {
            // Sometimes named as the partner of W would be (`x_3`): the block must not re-bind it.
            let n = if named.len() == 1 && r.chance(50) {
                "x_3"
            } else {
                "g"
            };
            named.push((n, Y, 2, r.int(8, 90)));
        }
        let text = message(&named, &guards);
        // A traced size for each named dimension, from a combination that passes (when asked).
        let mut ex = Vec::new();
        if r.chance(40) {
            let gs: Vec<Expr> = guards.iter().map(|g| parse_guard(g).unwrap()).collect();
            let hi = |s: &str| named.iter().find(|d| d.1 == s).map_or(40, |d| d.3);
            'find: for h in 2..=hi(H) {
                for w in 2..=hi(W) {
                    for y in 2..=hi(Y).min(90) {
                        let env = |a: &str| match a {
                            a if a == H => Some(h),
                            a if a == W => Some(w),
                            a if a == Y => Some(y),
                            _ => None,
                        };
                        if r.chance(3)
                            && gs
                                .iter()
                                .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
                        {
                            for (n, s, _, _) in &named {
                                ex.push((
                                    *n,
                                    [(H, h), (W, w), (Y, y)]
                                        .iter()
                                        .find(|p| p.0 == *s)
                                        .unwrap()
                                        .1,
                                ));
                            }
                            break 'find;
                        }
                    }
                }
            }
        }
        let g: Vec<&str> = guards.iter().map(String::as_str).collect();
        cases += 1;
        match sound(&text, &g, &ex) {
            Ok(true) => checked += 1,
            Ok(false) => {}
            Err(e) => failures.push(format!(
                "case {case}: {guards:?} named {named:?} examples {ex:?}: {e}"
            )),
        }
    }
    eprintln!("checked {checked} of {cases}");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // Not vacuous: most blocks name every size their guards name.
    assert!(
        checked * 2 > cases,
        "only {checked} of {cases} blocks checked"
    );
}
