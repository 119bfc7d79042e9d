//! What became of each guard (solved, undecided by reason, left to run time), shared by
//! `diagnose`, `check` and `verify`.

use super::style::{abbreviate, row, Style};
use dimguard::solver::report::{GuardFate, GuardUse};
use std::fmt::Write;

/// What became of every guard (`guards` of `check`, `diagnose` and `verify`): counts per fate,
/// then the undecided ones grouped by reason.
pub(super) fn guard_fates(out: &mut String, guards: &[GuardUse], place: &str, st: &Style) {
    if guards.is_empty() {
        return;
    }
    let counts = |fate: GuardFate| guards.iter().filter(|g| g.fate == fate).count();
    let mut extra = String::new();
    for (fate, what) in [
        (GuardFate::Specialized, "on specialized sizes"),
        (GuardFate::DataDependent, "data-dependent"),
    ] {
        if counts(fate) > 0 {
            let _ = write!(extra, ", {} {what}", counts(fate));
        }
    }
    let _ = writeln!(
        out,
        "\n{} {} {place}: {} solved one size at a time, {} jointly, {} relations, {} proved by Z3, {} undecided, {} unparsed{extra}",
        st.bold("guards:"),
        guards.len(),
        counts(GuardFate::Periodic) + counts(GuardFate::Enumeration),
        counts(GuardFate::Joint),
        counts(GuardFate::Relation),
        counts(GuardFate::Z3),
        counts(GuardFate::Undecided),
        counts(GuardFate::Unparsed),
    );
    // Undecided guards grouped by reason: the reason once, then the guards (abbreviated).
    let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
    for g in guards.iter().filter(|g| g.fate == GuardFate::Undecided) {
        let why = g.reason.as_deref().unwrap_or("?");
        match reasons.iter_mut().find(|(w, _)| *w == why) {
            Some((_, v)) => v.push(&g.guard),
            None => reasons.push((why, vec![&g.guard])),
        }
    }
    for (why, gs) in &reasons {
        row(
            out,
            "undecided",
            &st.yellow(&format!(
                "{} guard{}: {why}",
                gs.len(),
                if gs.len() == 1 { "" } else { "s" }
            )),
            st,
        );
        for g in gs.iter().take(3) {
            row(out, "", &abbreviate(g, 100), st);
        }
        if gs.len() > 3 {
            row(
                out,
                "",
                &format!("and {} more (all in --json)", gs.len() - 3),
                st,
            );
        }
    }
}
