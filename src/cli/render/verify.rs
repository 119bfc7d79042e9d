//! `dimguard verify`: per size whether the spec's range holds.

use super::fates::guard_fates;
use super::joint::joint_sets;
use super::style::{row, size, Rows, Style};
use dimguard::solver::report::{VerifyDim, VerifyReport};
use std::fmt::Write;

/// Renders a `verify` report for a person.
pub fn verify(r: &VerifyReport, color: bool) -> String {
    let st = Style { on: color };
    let mut out = String::new();
    let verdict = match r.sound {
        Some(true) => st.green("sound"),
        Some(false) => st.red("UNSOUND"),
        None => st.yellow("undecided"),
    };
    let _ = writeln!(out, "{} {verdict}", st.bold("dimguard verify:"));
    for d in &r.dims {
        dim(&mut out, d, &st);
    }
    for j in &r.joint {
        let v = match (j.sound, &j.counterexample) {
            (Some(true), _) => st.green("holds for every combination the spec admits"),
            (Some(false), Some(ce)) => {
                let parts: Vec<String> = ce.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                st.red(&format!("FAILS at {}", parts.join(", ")))
            }
            _ => st.yellow(&format!("undecided: {}", j.note.as_deref().unwrap_or("?"))),
        };
        let _ = writeln!(out, "\n{} {}", st.bold("joint guard"), j.guard);
        row(
            &mut out,
            "verdict",
            &format!(
                "{v} {}",
                st.dim(&format!("[certificate: {}]", j.certificate))
            ),
            &st,
        );
    }
    joint_sets(&mut out, &r.joint_sets, &|_| None, &st);
    guard_fates(&mut out, &r.guards, "checked", &st);
    for u in &r.unrecognized {
        let _ = writeln!(out, "\n{} spec line not understood: {u}", st.yellow("note"));
    }
    out
}

/// One size of a `verify` report: its spec line, the verdict with its certificate, the sizes
/// that fail, its tie, and the maximal spec.
fn dim(out: &mut String, d: &VerifyDim, st: &Style) {
    let (mut before, mut after) = (Rows::default(), Rows::default());
    let head = match &d.source {
        Some(s) if s != &d.name => format!("{} = {s}", d.name),
        _ => d.name.clone(),
    };
    before.row("spec", &d.spec);
    let v = match (d.sound, d.failing) {
        (Some(true), _) => st.green(&format!("sound: all {} admitted values pass", d.admitted)),
        (Some(false), Some(f)) => st.red(&format!(
            "UNSOUND: {f} of {} admitted values fail",
            d.admitted
        )),
        (Some(false), None) => st.red(&format!(
            "UNSOUND: some of {} admitted values fail",
            d.admitted
        )),
        (None, _) => st.yellow("undecided"),
    };
    before.row(
        "verdict",
        &format!(
            "{v} {}",
            st.dim(&format!("[certificate: {}]", d.certificate))
        ),
    );
    if !d.counterexamples.is_empty() {
        let ex: Vec<String> = d.counterexamples.iter().map(|v| v.to_string()).collect();
        before.row("fails at", &ex.join(", "));
    }
    if let Some(m) = &d.maximal_spec {
        after.row("maximal", m);
    }
    if let Some(n) = &d.note {
        after.row("note", n);
    }
    size(
        out,
        &st.bold(&head),
        before,
        &d.answer,
        &d.name,
        None,
        after,
        st,
    );
}
