//! A dispatch archive's programs in one table, an ONNX file's stored report, and a shape's
//! verdict.

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

/// `dimguard check model.onnx`: the file's inputs and symbolic axes, where the file and the stored
/// report disagree, then the stored check of the program it was exported from.
pub fn onnx(r: &dimguard::solver::report::OnnxReport, color: bool) -> String {
    let o = &r.onnx;
    let mut out = format!(
        "dimguard check: {}: an ONNX file ({}{}) carrying dimguard's report{}\n",
        o.file,
        if o.producer.is_empty() {
            "unknown producer"
        } else {
            &o.producer
        },
        o.opset.map_or(String::new(), |v| format!(", opset {v}")),
        o.dimguard_version
            .as_ref()
            .map_or(String::new(), |v| format!(" (dimguard {v})"))
    );
    for i in &o.inputs {
        let shape = match &i.shape {
            None => "no shape recorded".to_string(),
            Some(s) => s
                .iter()
                .map(|d| match d {
                    Some(dimguard::solver::report::ShapeEntry::Fixed(v)) => v.to_string(),
                    Some(dimguard::solver::report::ShapeEntry::Symbolic(p)) => p.clone(),
                    None => "?".into(),
                })
                .collect::<Vec<_>>()
                .join(" x "),
        };
        let program = if i.input == i.name {
            String::new()
        } else {
            format!(" (the program's `{}`)", i.input)
        };
        let _ = writeln!(out, "  input {}{program}: {shape}", i.name);
    }
    if !o.symbolic.is_empty() {
        let _ = writeln!(
            out,
            "  symbolic axes: {} (onnxruntime takes any size there; the sizes the program accepts follow)",
            o.symbolic.join(", ")
        );
    }
    for n in &o.notes {
        let _ = writeln!(out, "  note: {n}");
    }
    out.push('\n');
    out.push_str(&check(&r.check, color));
    out
}
