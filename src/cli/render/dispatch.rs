//! A dispatch archive's programs in one table, and a shape's verdict.

use super::check::check;
use super::style::segments_text;
use std::fmt::Write;

/// `dimguard check` of a `dimguard.Dispatch` archive: the union, then each program's check.
pub fn dispatch(r: &dimguard::solver::report::DispatchReport, color: bool) -> String {
    let mut out = format!(
        "dimguard check: a dimguard.Dispatch archive: {}\n",
        r.summary
    );
    for u in &r.union {
        let acc = match &u.accepted {
            Some(f) => format!("{} sizes, {}", f.count, segments_text(f)),
            None => "undecided in some program".into(),
        };
        let progs: Vec<String> = u.dynamic_in.iter().map(|i| i.to_string()).collect();
        let _ = writeln!(
            out,
            "  {}[{}]  accepted by some program: {acc}  (dynamic in program{} {})",
            u.input,
            u.index,
            if progs.len() == 1 { "" } else { "s" },
            progs.join(", ")
        );
    }
    for (i, p) in r.programs.iter().enumerate() {
        let _ = write!(
            out,
            "\n== program {i} ({})\n{}",
            p.file,
            check(&p.check, color)
        );
    }
    out
}

/// `check --at`: the program's verdict on the given shapes, one line.
pub fn verdict(v: &dimguard::solver::report::Verdict, _color: bool) -> String {
    let why = v.reason.as_deref().unwrap_or_default();
    match v.accepted {
        Some(true) => "accepted: the program runs every check it makes at these shapes\n".into(),
        Some(false) => format!("rejected: {why}\n"),
        None => format!("undecided: {why}\n"),
    }
}
