//! Every form in which users meet a guard, behind one entry point: [`read`].
//!
//! | form | reader | what it is |
//! |---|---|---|
//! | `constraint_violation` | [`violation`] | `torch.export`'s `ConstraintViolationError` / `UserError` |
//! | `torch_logs` | [`logs`] | `TORCH_LOGS="+dynamic"` output (either prefix format) |
//! | `draft_export` | [`draft`] | `print(ep._report)` of `torch.export.draft_export` |
//! | `guard_failed` | [`runtime`] | `Guard failed: ...` from calling an exported program |
//! | `input_check` | [`runtime`] | `Expected input at *args[0].shape[2] to be ...` |
//! | `solver_crash` | [`crash`] | PyTorch 2.15's `Expected op to be '==', got < for ...` |
//! | `data_dependent` | [`violation`], [`datadep`] | `GuardOnDataDependentSymNode` (torch 2.15's `ShapesSpec` failures too) |
//! | `guard_failed` | [`runtime`] | `Guard check failed: 0/1: ...` (torch.compile), `Runtime assertion failed for expression u0 <= 2002 on node ...` |
//! | `input_check` | [`runtime`] | `Expected input x.shape[0] = 5 to be of the form 2*s1, ...` |
//! | `program` | [`printed`] | `print(ep)`: a printed `ExportedProgram` (`f32[s1 + 2]` inputs, `Range constraints: {s1: VR[2, int_oo]}`) |
//! | `torch_trace` | [`trace`] | a `TORCH_TRACE` file (structured JSON lines: symbols, guards, provenance, example sizes) |
//! | `guards` | [`scan`] | any other text holding a condition over sizes (a guard quoted in prose) |
//!
//! Beside any form, the user's own spec pasted with it (`batch = Dim("batch", min=1, max=32)`,
//! `dynamic_shapes={"x": {0: batch}}`, `ShapeVar`/`TensorSpec`) gives the sizes the text leaves
//! without a range the user's range and name ([`crate::spec::bind_user_spec`], called by
//! [`crate::diagnose::read`]: it sits above the readers).
//!
//! Every reader works on the same cleaned lines ([`clean`]: log prefixes of any logger and torch
//! version, `> `/`# ` quote markers, diff markers, Markdown backticks, fences and table bars,
//! HTML entities and colour codes removed, wrapped lines joined, line numbers kept) and returns a
//! [`Message`] whose `form` says what it read. A guard-looking line that cannot be read is kept
//! in `unreadable` with its line and the reason, never dropped.

pub mod clean;
pub mod crash;
pub mod datadep;
pub mod draft;
pub mod fixes;
pub mod logs;
pub mod printed;
pub mod runtime;
pub mod scan;
pub mod trace;
pub mod violation;

use crate::error::Error;
use crate::message::{Message, DEFAULT_MIN, SIZE_MAX};
pub use crate::report::Form;

/// Reads any form (see the module docs). When several are present (a log that ends with the
/// exception), the log's guards, sources and provenance are kept and the exception's dimension
/// names, ranges, specializations and suggested fixes are added to them.
pub fn read(text: &str) -> Result<Message, Error> {
    if trace::looks_like_trace(text) {
        let t = trace::read(text)?;
        let mut msg = t.to_message();
        datadep::trace_bounds(&mut msg);
        return Ok(msg);
    }
    let lines = clean::lines(text);
    let exception = violation::read_lines(&lines);
    let crash = crash::read(&lines);
    let mut msg = if printed::is_printed(&lines) && !logs::is_log(&lines) {
        printed::read(&lines)
    } else if logs::is_log(&lines) {
        let mut m = logs::read(&lines);
        if let Ok(e) = &exception {
            adopt_names(&mut m, e);
        }
        if m.dims.is_empty() && m.data_dependent.is_empty() && m.joint.is_empty() {
            // Log lines without a symbol (a log of a run that never made one): use the rest.
            fallback(&lines, exception, crash)?
        } else {
            m
        }
    } else if draft::is_draft(&lines) {
        let mut m = draft::read(&lines);
        if let Ok(e) = &exception {
            adopt_names(&mut m, e);
        }
        m
    } else {
        fallback(&lines, exception, crash)?
    };
    if let Some(c) = crash::read(&lines) {
        if msg.form != Form::SolverCrash {
            msg.notes.extend(c.notes);
        }
    }
    datadep::read(&lines, &mut msg);
    for g in &msg.data_dependent {
        // `Could not extract specialized integer from data-dependent expression u0 + 1`: torch
        // needed the value itself, not a condition on it.
        if crate::syntax::parse_expr(&g.text).is_ok_and(|e| !e.is_bool()) {
            msg.notes.push(format!(
                "`{}` is an integer, not a condition: torch needed its value as a Python int (\"Could not extract specialized integer\"), so no torch._check of a condition on it lets the export go on. Make the size static, or fix its value with torch._check({} == V) for the one value your code needs",
                g.text, g.text
            ));
        }
    }
    if msg.form == Form::ConstraintViolation
        && msg.dims.is_empty()
        && !msg.data_dependent.is_empty()
    {
        msg.form = Form::DataDependent;
    }
    Ok(msg)
}

/// The forms without a symbol table: an exception, a solver crash, a run-time failure.
fn fallback(
    lines: &[clean::Line],
    exception: Result<Message, Error>,
    crash: Option<Message>,
) -> Result<Message, Error> {
    match exception {
        Ok(m) => Ok(m),
        Err(Error::Message(_)) => {
            if let Some(c) = crash {
                return Ok(c);
            }
            if let Some(r) = runtime::read(lines)? {
                return Ok(r);
            }
            if let Some(m) = scan::read(lines) {
                return Ok(m);
            }
            Err(Error::Message(not_a_guard(lines)))
        }
        Err(e) => Err(e),
    }
}

/// Says what the text is (when dimguard recognizes it) and what to paste instead.
fn not_a_guard(lines: &[clean::Line]) -> String {
    let has = |s: &str| lines.iter().any(|l| l.text.contains(s));
    let what = if has("Unable to call ExportedProgram directly") {
        "this is not a guard: an ExportedProgram cannot be called directly. Call `ep.module()(...)`; if that raises `Guard failed: ...`, paste that text"
    } else if has("Congratulations: No issues are found during export") {
        "this draft_export report found no issue: the export is sound. To see which sizes the program really accepts, save it with torch.export.save and run `dimguard check model.pt2`"
    } else if has("Could not guard on data-dependent") {
        "the data-dependent expression could not be read"
    } else if has("Traceback (most recent call last)") {
        "this traceback holds no dynamic-shape guard. Paste the ConstraintViolationError / UserError text, the output of the export run with TORCH_LOGS=\"+dynamic\", a draft_export report (print(ep._report)), or the `Guard failed: ...` line"
    } else {
        ""
    };
    let base = "no dynamic-shape constraint found: expected lines such as \"Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 64 satisfy the generated guard ...\", TORCH_LOGS=\"+dynamic\" output (create_symbol / eval ... [guard added] lines), a draft_export report, or `Guard failed: ...` \
         (paste the whole ConstraintViolationError / UserError text from torch.export)";
    if what.is_empty() {
        base.to_string()
    } else {
        format!("{what}\n  ({base})")
    }
}

/// A log or draft report read with the exception beside it: the user's dimension names,
/// requested ranges, specializations, relations and torch's suggested fixes, matched by source.
fn adopt_names(m: &mut Message, e: &Message) {
    for ed in &e.dims {
        let Some(src) = &ed.source else { continue };
        let Some(d) = m
            .dims
            .iter_mut()
            .find(|d| d.source.as_deref().map(normalize_source) == Some(normalize_source(src)))
        else {
            continue;
        };
        let old = d.name.clone();
        d.name = ed.name.clone();
        d.range = ed.range.or(d.range);
        if ed.specialized.is_some() {
            d.specialized = ed.specialized;
            d.forced = ed.forced;
        }
        rename(m, &old, &ed.name);
    }
    m.fixes = e.fixes.clone();
    m.unrecognized.extend(e.unrecognized.iter().cloned());
    for d in &e.data_dependent {
        if !m.data_dependent.iter().any(|x| x.text == d.text) {
            m.data_dependent.push(d.clone());
        }
    }
}

/// The equalities and relations that name a dimension `old` name it `new` (the dimension itself
/// renamed by the caller).
pub(crate) fn rename(m: &mut Message, old: &str, new: &str) {
    for (a, b) in &mut m.equalities {
        for x in [a, b] {
            if *x == old {
                *x = new.to_string();
            }
        }
    }
    for r in &mut m.relations {
        if r.name == old {
            r.name = new.to_string();
        }
        if r.other == old {
            r.other = new.to_string();
        }
    }
}

/// Sources compare without spaces.
fn normalize_source(s: &str) -> String {
    s.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Applies `--range NAME=LO..HI` (NAME: a dimension's name, symbol or source); then says, for
/// every dimension still without a range, which default is used.
pub fn apply_ranges(msg: &mut Message, ranges: &[(String, (i128, i128))]) -> Result<(), Error> {
    for (name, (lo, hi)) in ranges {
        if lo > hi {
            return Err(Error::Message(format!(
                "--range {name}={lo}..{hi}: the lower bound is above the upper bound"
            )));
        }
        if msg.datadep.find_mut(name).is_some() && !msg.dims.iter().any(|d| d.name == *name) {
            // An unbacked size: by symbol (`u1`), source (`x.shape[2]`) or name.
            let u = msg.datadep.find_mut(name).expect("found above");
            u.range = Some((*lo, *hi));
            continue;
        }
        let key = normalize_source(name);
        let Some(d) = msg.dims.iter_mut().find(|d| {
            d.name == *name
                || d.symbol.as_deref() == Some(name.as_str())
                || d.source.as_deref().map(normalize_source) == Some(key.clone())
        }) else {
            let known: Vec<String> = msg
                .dims
                .iter()
                .map(|d| d.name.clone())
                .chain(msg.datadep.unbacked.iter().map(|u| match &u.source {
                    Some(s) => format!("{} ({s})", u.symbol),
                    None => u.symbol.clone(),
                }))
                .collect();
            return Err(Error::Message(format!(
                "--range {name}=...: the text names no size `{name}`; its sizes are: {}",
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        };
        d.range = Some((*lo, *hi));
    }
    let open: Vec<String> = msg
        .datadep
        .unbacked
        .iter()
        .filter(|u| u.range.is_none())
        .filter(|u| {
            msg.data_dependent
                .iter()
                .any(|g| g.expr.atoms().iter().any(|a| **a == *u.symbol))
        })
        .map(|u| match &u.source {
            Some(s) => format!("{} ({s})", u.symbol),
            None => u.symbol.clone(),
        })
        .collect();
    if !open.is_empty() {
        msg.notes.push(format!(
            "the text gives no range for {}: decided over 0..{SIZE_MAX} (a size-like symbol); give the range you export with as --range {}=LO..HI, or your ShapesSpec as --spec",
            open.join(", "),
            msg.datadep.unbacked.iter().find(|u| u.range.is_none()).map_or("u0", |u| &u.symbol)
        ));
    }
    if msg.form == Form::ConstraintViolation {
        return Ok(());
    }
    let mut missing: Vec<String> = Vec::new();
    for d in &mut msg.dims {
        if d.range.is_none() && d.specialized.is_none() {
            d.range = Some((DEFAULT_MIN, SIZE_MAX));
            missing.push(d.name.clone());
        }
    }
    if !missing.is_empty() {
        msg.notes.push(format!(
            "the text gives no range for {}: used {DEFAULT_MIN}..{SIZE_MAX} (torch's default for a dynamic size); give the range you export with as --range {}=LO..HI",
            missing.join(", "),
            missing[0]
        ));
    }
    Ok(())
}

/// Parses `NAME=LO..HI` (also `NAME=LO-HI` is refused with the reason).
pub fn parse_range_arg(arg: &str) -> Result<(String, (i128, i128)), Error> {
    let err = || Error::RangeArg(arg.to_string());
    let (name, r) = arg.rsplit_once('=').ok_or_else(err)?;
    let (lo, hi) = r.split_once("..").ok_or_else(err)?;
    let lo: i128 = lo.trim().parse().map_err(|_| err())?;
    let hi: i128 = hi.trim().parse().map_err(|_| err())?;
    if lo > hi || lo < 0 || hi > SIZE_MAX || name.trim().is_empty() {
        return Err(err());
    }
    Ok((name.trim().to_string(), (lo, hi)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_args() {
        assert_eq!(
            parse_range_arg("height=64..512"),
            Ok(("height".into(), (64, 512)))
        );
        assert_eq!(
            parse_range_arg("L['x'].size()[2]=2..8"),
            Ok(("L['x'].size()[2]".into(), (2, 8)))
        );
        assert!(parse_range_arg("h=9..3").is_err());
        assert!(parse_range_arg("h=3").is_err());
        assert!(parse_range_arg("=3..4").is_err());
    }

    #[test]
    fn not_a_guard_says_what_to_paste() {
        let e = read("RuntimeError: Unable to call ExportedProgram directly. You should use `exported_program.module()` instead.").unwrap_err();
        assert!(e.to_string().contains("ep.module()"), "{e}");
        assert!(read("hello").is_err());
    }
}
