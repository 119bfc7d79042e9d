//! Whether a program accepts inputs of given shapes: the program's own exact answer.
//!
//! An exported program checks, on every call, what torch 2.15's
//! `_check_input_constraints_for_graph` checks (the rank of each tensor; each fixed size; sizes
//! sharing a symbol equal; a derived size `2*s1 + 1` of that form; a bare symbol inside its
//! `range_constraints`, whose minimum only counts above 2), then its guards (`guards_code`), then,
//! while it runs, its run-time asserts and the limits its operators need. [`verdict`] evaluates
//! each of them at the given shapes, in that order, from a [`CheckReport`]'s [`Facts`] (its
//! `inputs`, `symbols`, `guards` and `runtime`): no set lookup, so no answer of the solver can make it
//! wrong. The accepted sets of the same report are checked against it (tests/verdict.rs).
//!
//! ```
//! use dimguard_graph::verdict::{verdict, Facts};
//! use std::collections::BTreeMap;
//!
//! // What `dimguard check --json` writes of a program (only these keys are read).
//! let facts: Facts = serde_json::from_str(r#"{
//!   "guards": [{"guard": "L['x'].size()[2] % 8 == 0", "sizes": [], "fate": "periodic"}],
//!   "inputs": [{"input": "x", "shape": [1, 3, "s0", "s0"],
//!               "sources": ["L['x'].size()[0]", "L['x'].size()[1]", "L['x'].size()[2]", "L['x'].size()[3]"]}],
//!   "symbols": [{"symbol": "s0", "min": 16, "max": 512}]
//! }"#).unwrap();
//! let at = |shape: &[i128]| verdict(&facts, &BTreeMap::from([("x".to_string(), shape.to_vec())])).accepted;
//! assert_eq!(at(&[1, 3, 64, 64]), Some(true));
//! assert_eq!(at(&[1, 3, 64, 72]), Some(false)); // one symbol, two sizes: they must be equal
//! assert_eq!(at(&[2, 3, 64, 64]), Some(false)); // the batch is fixed at 1
//! assert_eq!(at(&[1, 3, 60, 60]), Some(false)); // the guard
//! assert_eq!(at(&[1, 3, 520, 520]), Some(false)); // the range
//! ```

use dimguard_solver::expr::{EvalError, Value};
use dimguard_solver::report::{
    CheckReport, GuardFate, GuardUse, ProgramInput, RuntimeCheck, ShapeEntry, SymbolRange, Verdict,
};
use dimguard_solver::Expr;
use dimguard_solver::{parse_expr, parse_guard};
use serde::Deserialize;
use std::collections::BTreeMap;

/// What decides whether a program accepts a shape: the keys `inputs`, `symbols`, `guards` and
/// `runtime` of a [`CheckReport`] (any JSON object holding them deserializes, the rest ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Facts {
    /// The tensor inputs as the program takes them.
    #[serde(default)]
    pub inputs: Vec<ProgramInput>,
    /// The program's symbol ranges.
    #[serde(default)]
    pub symbols: Vec<SymbolRange>,
    /// Its guards.
    #[serde(default)]
    pub guards: Vec<GuardUse>,
    /// Its run-time checks.
    #[serde(default)]
    pub runtime: Vec<RuntimeCheck>,
}

impl From<&CheckReport> for Facts {
    fn from(r: &CheckReport) -> Facts {
        Facts {
            inputs: r.inputs.clone(),
            symbols: r.symbols.clone(),
            guards: r.guards.clone(),
            runtime: r.runtime.clone(),
        }
    }
}

fn rejected(why: String) -> Verdict {
    Verdict {
        accepted: Some(false),
        reason: Some(why),
    }
}

fn undecided(why: String) -> Verdict {
    Verdict {
        accepted: None,
        reason: Some(why),
    }
}

/// The value of `e` at `env`: `Ok(None)` when a name it needs has no value.
fn value_at(e: &Expr, env: &BTreeMap<String, i128>) -> Result<Option<Value>, EvalError> {
    if e.atoms().iter().any(|a| !env.contains_key(&**a)) {
        return Ok(None);
    }
    e.eval(&|a| env.get(a).copied()).map(Some)
}

/// `e` (one symbol, integer coefficients) solved for its symbol at `value`: `Ok(None)` when no
/// integer solves it; `Err` when `e` is not of that form.
fn solve_affine(e: &Expr, value: i128) -> Result<Option<(String, i128)>, ()> {
    let (coefs, c0) = e.affine().ok_or(())?;
    let [(s, k)] = coefs.iter().collect::<Vec<_>>()[..] else {
        return Err(());
    };
    if !(k.is_integer() && c0.is_integer()) || *k.numer() == 0 {
        return Err(());
    }
    let (k, o) = (*k.numer(), *c0.numer());
    let d = value.checked_sub(o).ok_or(())?;
    Ok((d % k == 0).then(|| (s.to_string(), d / k)))
}

/// Whether the program described by `report` accepts inputs of these shapes (input name ->
/// shape). Inputs left out are not checked; a condition that needs one of their sizes makes the
/// answer undecided, naming it.
///
/// Each of torch's checks in its order, each a call: the inputs named (`known_inputs`), each
/// input's sizes bound to the program's symbols (`Sizes::bind`), the guards over the inputs'
/// sizes (`guards`), the run-time checks over the symbols (`runtime`). The first check that
/// fails rejects; one that cannot be decided leaves the answer undecided unless a later one
/// fails.
pub fn verdict(report: &Facts, shapes: &BTreeMap<String, Vec<i128>>) -> Verdict {
    let decided = || -> Result<Option<String>, Verdict> {
        known_inputs(report, shapes)?;
        let sizes = Sizes::bind(report, shapes)?;
        let mut pending: Option<String> = None;
        guards(report, &sizes.by_source, &mut pending)?;
        runtime(report, &sizes.symbols, &mut pending)?;
        Ok(pending)
    };
    match decided() {
        Err(no) => no,
        Ok(Some(why)) => undecided(why),
        Ok(None) => Verdict {
            accepted: Some(true),
            reason: None,
        },
    }
}

/// Every input given is one of the program's tensor inputs.
fn known_inputs(report: &Facts, shapes: &BTreeMap<String, Vec<i128>>) -> Result<(), Verdict> {
    for given in shapes.keys() {
        if !report.inputs.iter().any(|i| &i.input == given) {
            let names: Vec<&str> = report.inputs.iter().map(|i| i.input.as_str()).collect();
            return Err(rejected(format!(
                "the program has no tensor input `{given}` (its tensor inputs: {})",
                names.join(", ")
            )));
        }
    }
    Ok(())
}

/// torch 2.15's guards function checks the range of every input size whose expression is a
/// key of `range_constraints` (a symbol, or a derived size's expression such as
/// `32*s0 - 16`), a minimum of 2 or less excepted (it lets 0 and 1 through).
struct Ranges<'a>(Vec<(Expr, &'a str, i128, Option<i128>)>);

impl<'a> Ranges<'a> {
    fn read(report: &'a Facts) -> Ranges<'a> {
        Ranges(
            report
                .symbols
                .iter()
                .filter_map(|r| {
                    Some((parse_expr(&r.symbol).ok()?, r.symbol.as_str(), r.min, r.max))
                })
                .collect(),
        )
    }

    /// The size `at`, written `e` in the program, is `v`: inside every range of `e`.
    fn check(&self, at: &str, e: &Expr, v: i128) -> Result<(), Verdict> {
        let same = |k: &Expr| k == e || (k.affine().is_some() && k.affine() == e.affine());
        for (_, key, lo, hi) in self.0.iter().filter(|(k, ..)| same(k)) {
            if *lo > 2 && v < *lo {
                return Err(rejected(format!(
                    "{at} = {v} is below the program's minimum {lo} for {key}"
                )));
            }
            if let Some(hi) = hi.filter(|&hi| v > hi) {
                return Err(rejected(format!(
                    "{at} = {v} is above the program's maximum {hi} for {key}"
                )));
            }
        }
        Ok(())
    }
}

/// The given sizes by the guards' names, and the program's symbols as the inputs bind them.
#[derive(Default)]
struct Sizes {
    by_source: BTreeMap<String, i128>,
    symbols: BTreeMap<String, i128>,
    /// Where each symbol was first bound (`x[2]`).
    first_at: BTreeMap<String, String>,
}

impl Sizes {
    /// Binds every given input's sizes, in input order: its rank, then each size against the
    /// program's (fixed, a symbol, a derived size).
    fn bind(report: &Facts, shapes: &BTreeMap<String, Vec<i128>>) -> Result<Sizes, Verdict> {
        let ranges = Ranges::read(report);
        let mut sizes = Sizes::default();
        for input in &report.inputs {
            let Some(shape) = shapes.get(&input.input) else {
                continue;
            };
            if shape.len() != input.shape.len() {
                return Err(rejected(format!(
                    "{} has {} dimensions; the program takes {}",
                    input.input,
                    shape.len(),
                    input.shape.len()
                )));
            }
            sizes.bind_input(input, shape, &ranges)?;
        }
        Ok(sizes)
    }

    /// One input's sizes: bare symbols and fixed sizes first (torch unifies in input order;
    /// the result is the same in any order, since every binding is checked against every
    /// other), then the derived sizes ([`Sizes::derived`]).
    fn bind_input(
        &mut self,
        input: &ProgramInput,
        shape: &[i128],
        ranges: &Ranges,
    ) -> Result<(), Verdict> {
        let mut derived = Vec::new();
        for (k, (entry, &v)) in input.shape.iter().zip(shape).enumerate() {
            let at = format!("{}[{k}]", input.input);
            if v < 0 {
                return Err(rejected(format!("{at} = {v}: a size is never negative")));
            }
            if let Some(src) = input.sources.get(k) {
                self.by_source.insert(src.clone(), v);
            }
            let text = match entry {
                ShapeEntry::Fixed(n) if i128::from(*n) != v => {
                    return Err(rejected(format!(
                        "{at} is fixed at {n} in the program (exported static); given {v}"
                    )))
                }
                ShapeEntry::Fixed(_) => continue,
                ShapeEntry::Symbolic(text) => text,
            };
            let e = parse_expr(text).map_err(|err| {
                undecided(format!(
                    "cannot read the program's size `{text}` of {at}: {err}"
                ))
            })?;
            ranges.check(&at, &e, v)?;
            let Expr::Sym(s) = &e else {
                derived.push((at, e, v));
                continue;
            };
            let s = s.to_string();
            if let Some(&w) = self.symbols.get(&s) {
                if w != v {
                    return Err(rejected(format!(
                        "{at} = {v} but {} = {w}: the program gives both the symbol {s}, so they must be equal",
                        self.first_at[&s]
                    )));
                }
            } else {
                self.symbols.insert(s.clone(), v);
                self.first_at.insert(s, at);
            }
        }
        for (at, e, v) in derived {
            self.derived(at, &e, v)?;
        }
        Ok(())
    }

    /// A derived size `at = v`, written `e` (`2*s1 + 1`): its value where its symbols are
    /// bound, else solved for its one symbol.
    fn derived(&mut self, at: String, e: &Expr, v: i128) -> Result<(), Verdict> {
        match value_at(e, &self.symbols) {
            Ok(Some(Value::Num(q))) if q.is_integer() && *q.numer() == v => Ok(()),
            Ok(Some(w)) => Err(rejected(format!(
                "{at} = {v}; the program takes it as {e}, which is {} here",
                show(&w)
            ))),
            Err(err) => Err(undecided(format!("{at}: cannot evaluate {e}: {err}"))),
            Ok(None) => match solve_affine(e, v) {
                Ok(Some((s, x))) => {
                    self.symbols.insert(s.clone(), x);
                    self.first_at.insert(s, at);
                    Ok(())
                }
                Ok(None) => Err(rejected(format!(
                    "{at} = {v} is not of the form {e} the program takes it as (for an integer)"
                ))),
                Err(()) => Err(undecided(format!(
                    "{at}: the program takes it as {e}, which dimguard cannot solve for its symbols"
                ))),
            },
        }
    }
}

/// The guards, over the inputs' sizes: a guard that fails (or raises, as torch does where
/// Python does) rejects; the first that cannot be decided is `pending`.
fn guards(
    report: &Facts,
    by_source: &BTreeMap<String, i128>,
    pending: &mut Option<String>,
) -> Result<(), Verdict> {
    for g in &report.guards {
        if g.fate == GuardFate::Unparsed {
            pending.get_or_insert(format!(
                "the guard `{}` could not be read ({})",
                g.guard,
                g.error.as_deref().unwrap_or("parse error")
            ));
            continue;
        }
        let e = match parse_guard(&g.guard) {
            Ok(e) => e,
            Err(err) => {
                pending.get_or_insert(format!("the guard `{}` could not be read ({err})", g.guard));
                continue;
            }
        };
        match value_at(&e, by_source) {
            Ok(Some(Value::Bool(true))) => {}
            Ok(Some(Value::Bool(false))) => {
                return Err(rejected(format!(
                    "the guard `{}` fails",
                    named(&g.guard, report)
                )))
            }
            Ok(Some(_)) => {
                pending.get_or_insert(format!("the guard `{}` is not a condition", g.guard));
            }
            Ok(None) => {
                pending.get_or_insert(format!(
                    "the guard `{}` needs a size of an input not given",
                    named(&g.guard, report)
                ));
            }
            Err(err) => {
                // torch raises where Python does (a division by zero, a negative shift).
                return Err(rejected(format!(
                    "the guard `{}` raises: {err}",
                    named(&g.guard, report)
                )));
            }
        }
    }
    Ok(())
}

/// The run-time checks, over the program's symbols: one that fails rejects; the first that
/// cannot be decided (unread, not evaluated, or over a symbol the shapes do not fix) is
/// `pending`.
fn runtime(
    report: &Facts,
    symbols: &BTreeMap<String, i128>,
    pending: &mut Option<String>,
) -> Result<(), Verdict> {
    for r in &report.runtime {
        let kind = r.kind.label();
        let e = match parse_guard(&r.condition) {
            Ok(e) => e,
            Err(_) => {
                pending.get_or_insert(format!(
                    "the {kind} at `{}` could not be read ({})",
                    r.node, r.condition
                ));
                continue;
            }
        };
        match value_at(&e, symbols) {
            Ok(Some(Value::Bool(true))) => {}
            Ok(Some(Value::Bool(false))) => {
                let on = r.on_inputs.as_deref().unwrap_or(&r.condition);
                return Err(rejected(format!(
                    "the {kind} `{}` at `{}` fails",
                    named(on, report),
                    r.node
                )));
            }
            Ok(Some(_)) | Err(_) => {
                pending.get_or_insert(format!(
                    "the {kind} `{}` at `{}` could not be evaluated",
                    r.condition, r.node
                ));
            }
            Ok(None) => {
                let missing: Vec<String> = e
                    .atoms()
                    .iter()
                    .map(|a| a.to_string())
                    .filter(|a| !symbols.contains_key(a))
                    .collect();
                pending.get_or_insert(format!(
                    "the {kind} `{}` at `{}` depends on {}, which the given shapes do not fix (a value computed from data, or an input not given)",
                    r.condition,
                    r.node,
                    missing.join(", ")
                ));
            }
        }
    }
    Ok(())
}

fn show(v: &Value) -> String {
    match v {
        Value::Num(q) if q.is_integer() => q.numer().to_string(),
        Value::Num(q) => format!("{}/{}", q.numer(), q.denom()),
        Value::Inf(true) => "oo".into(),
        Value::Inf(false) => "-oo".into(),
        Value::Bool(b) => b.to_string(),
    }
}

/// `text` with each input size's source written as `input[index]`.
fn named(text: &str, report: &Facts) -> String {
    let mut out = text.to_string();
    for input in &report.inputs {
        // Highest index first: `L['x'].size()[1]` is a prefix of `L['x'].size()[10]`.
        for (k, src) in input.sources.iter().enumerate().rev() {
            out = out.replace(src, &format!("{}[{k}]", input.input));
        }
    }
    out
}
