//! Drives the library entry points on one input and checks every answer small enough against
//! the brute-force oracle: the exact evaluator ([`Expr::truth_at`]), value by value.

use crate::cpu::library;
use crate::gen::Input;
use dimguard::commands::diagnose::{diagnose, Options};
use dimguard::commands::verify::{self, verify_input};
use dimguard_solver::expr::EvalError;
use dimguard_solver::ArithError;
use dimguard_solver::Expr;
use std::collections::BTreeSet;

/// Largest range the oracle enumerates.
const ORACLE_MAX: i128 = 1000;

/// Runs the input; `Err` describes an answer that disagrees with the oracle. A finding in words
/// (the fuzzer prints and saves it with the input), not an error of the oracle: it stays a
/// `String`, as do the helpers' below.
pub fn check(input: &Input, z3_ms: u32) -> Result<(), String> {
    match input {
        Input::Message(text) => check_message(text),
        Input::Verify(text, spec_text) => check_verify(text, spec_text, z3_ms),
        Input::Program(bytes) => check_program(bytes),
    }
}

/// The values of `lo..=hi` where every guard holds, by evaluation; `None` when a value cannot be
/// evaluated exactly (overflow past the big-integer bound), so nothing can be compared.
fn brute(guards: &[&Expr], var: &str, values: impl Iterator<Item = i128>) -> Option<Vec<i128>> {
    let mut out = Vec::new();
    for x in values {
        let mut all = true;
        for g in guards {
            match g.truth_at(var, x) {
                Ok(true) => {}
                Err(EvalError::Arith(ArithError::Overflow)) => return None,
                Ok(false) | Err(_) => {
                    all = false;
                    break;
                }
            }
        }
        if all {
            out.push(x);
        }
    }
    Some(out)
}

fn members(segments: &[dimguard_solver::Segment]) -> Vec<i128> {
    let mut out = Vec::new();
    for s in segments {
        let mut x = s.lo;
        while x <= s.hi {
            if s.residues
                .binary_search(&x.rem_euclid(s.modulus.max(1)))
                .is_ok()
            {
                out.push(x);
            }
            x += 1;
        }
    }
    out
}

/// Every set the library prints must read back, unchanged, through `DimSet::from_segments`
/// (readers such as `profile` and `check` rebuild sets that way), whatever its width or moduli.
fn reads_back(what: &str, segments: &[dimguard_solver::Segment]) -> Result<(), String> {
    match dimguard_solver::DimSet::from_segments(segments.to_vec()) {
        Ok(s) if s.segments() == segments => Ok(()),
        Ok(s) => Err(format!(
            "{what}: the printed set {segments:?} reads back as {:?}",
            s.segments()
        )),
        Err(e) => Err(format!(
            "{what}: the printed set {segments:?} does not read back: {e}"
        )),
    }
}

fn only_in(guards: &[&Expr], var: &str) -> bool {
    guards.iter().all(|g| g.atoms().iter().all(|a| &**a == var))
}

fn check_message(text: &str) -> Result<(), String> {
    let msg = match library(|| dimguard_readers::forms::violation::read(text)) {
        Ok(m) => m,
        Err(e) => {
            // Rendering the error (carets included) must not panic either.
            let _ = e.to_string();
            return Ok(());
        }
    };
    let report = library(|| diagnose(&msg, &Options::default()));
    let _ =
        serde_json::to_string(&report).map_err(|e| format!("report does not serialize: {e}"))?;
    let linked: BTreeSet<&str> = msg
        .equalities
        .iter()
        .flat_map(|(a, b)| [a.as_str(), b.as_str()])
        .chain(
            msg.relations
                .iter()
                .flat_map(|r| [r.name.as_str(), r.other.as_str()]),
        )
        .collect();
    for (d, rep) in msg.dims.iter().zip(&report.dims) {
        if d.name != rep.name {
            return Err(format!(
                "report dims out of order: {} vs {}",
                d.name, rep.name
            ));
        }
        if let Some(f) = &rep.answer.accepted {
            reads_back(&d.name, &f.segments)?;
        }
        let (Some(src), Some((lo, hi)), Some(f)) = (&d.source, d.range, &rep.answer.accepted)
        else {
            continue;
        };
        if d.specialized.is_some()
            || d.inferred_equal.is_some()
            || linked.contains(d.name.as_str())
            || hi - lo >= ORACLE_MAX
        {
            continue;
        }
        let guards: Vec<&Expr> = d.guards.iter().map(|g| &g.expr).collect();
        if !only_in(&guards, src) {
            continue;
        }
        let Some(want) = brute(&guards, src, lo..=hi) else {
            continue;
        };
        // The members straight from the printed segments: what a reader of the report sees.
        let got = members(&f.segments);
        if got != want {
            let first = want
                .iter()
                .zip(&got)
                .find(|(a, b)| a != b)
                .map_or_else(|| want.len().min(got.len()), |_| 0);
            return Err(format!(
                "{}: feasible has {} values, the oracle {} (first lists differ near index {first}: oracle {:?}, answer {:?})",
                d.name,
                got.len(),
                want.len(),
                &want[..want.len().min(8)],
                &got[..got.len().min(8)]
            ));
        }
        let want: BTreeSet<i128> = want.into_iter().collect();
        for s in &rep.answer.suggestions {
            let mut x = s.lo;
            while x <= s.hi {
                if !want.contains(&x) {
                    return Err(format!(
                        "{}: suggestion {}..{} step {} admits {x}, which fails a guard",
                        d.name, s.lo, s.hi, s.modulus
                    ));
                }
                x += s.modulus.max(1);
            }
        }
    }
    Ok(())
}

fn check_verify(text: &str, spec_text: &str, z3_ms: u32) -> Result<(), String> {
    // Read as the command reads (its guards and spec, for the oracle too), then verified.
    let verify::Input { guards: gs, spec } = match library(|| verify::read(text, spec_text)) {
        Ok(input) => input,
        Err(e) => {
            let _ = e.to_string();
            return Ok(());
        }
    };
    let report = library(|| verify_input(&gs, &spec, z3_ms));
    let _ =
        serde_json::to_string(&report).map_err(|e| format!("report does not serialize: {e}"))?;
    for vd in &report.dims {
        let Some((name, source, exprs)) = gs.dims.iter().find(|(n, _, _)| *n == vd.name) else {
            continue;
        };
        let Some(admitted) = spec
            .lookup(name, source.as_deref())
            .and_then(|s| s.admitted)
        else {
            continue;
        };
        if admitted.count() > ORACLE_MAX as u128 {
            continue;
        }
        let var = source.clone().unwrap_or_else(|| name.clone());
        let guards: Vec<&Expr> = exprs.iter().collect();
        if !only_in(&guards, &var) {
            continue;
        }
        let Some(pass) = brute(&guards, &var, admitted.iter()) else {
            continue;
        };
        let pass: BTreeSet<i128> = pass.into_iter().collect();
        let failing: Vec<i128> = admitted.iter().filter(|x| !pass.contains(x)).collect();
        match vd.sound {
            Some(true) if !failing.is_empty() => {
                return Err(format!(
                    "verify says `{name}` is sound, but {} admitted values fail (e.g. {:?})",
                    failing.len(),
                    &failing[..failing.len().min(5)]
                ))
            }
            Some(false) if failing.is_empty() => {
                return Err(format!(
                    "verify says `{name}` is unsound (counterexamples {:?}), but every admitted value passes",
                    vd.counterexamples
                ))
            }
            _ => {}
        }
        if let Some(bad) = vd.counterexamples.iter().find(|x| pass.contains(x)) {
            return Err(format!(
                "verify reports {bad} as a counterexample for `{name}`, but it passes every guard"
            ));
        }
        if let Some(n) = vd.failing {
            if n != failing.len() as u128 {
                return Err(format!(
                    "verify counts {n} failing values for `{name}`, the oracle {}",
                    failing.len()
                ));
            }
        }
    }
    Ok(())
}

fn check_program(bytes: &[u8]) -> Result<(), String> {
    let Ok(p) = library(|| dimguard_graph::program::parse(bytes, "fuzz.json")) else {
        return Ok(());
    };
    library(|| {
        if let Ok(g) = dimguard_graph::ProgramGraph::build(&p) {
            let _ = g.dot();
        }
    });
    let Ok(report) = library(|| dimguard::commands::check::check(&p, true)) else {
        return Ok(());
    };
    let _ =
        serde_json::to_string(&report).map_err(|e| format!("report does not serialize: {e}"))?;
    for d in &report.dims {
        let what = format!("{}[{}]", d.input, d.index);
        if let Some(a) = &d.answer.accepted {
            reads_back(&what, &a.segments)?;
            if a.count > d.claimed.count {
                return Err(format!(
                    "{}[{}]: accepts {} sizes but claims only {}",
                    d.input, d.index, a.count, d.claimed.count
                ));
            }
        }
    }
    Ok(())
}
