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
//! | `guard_failed` (recompile) | [`runtime::recompile`] | torch.compile's recompile reasons (`TORCH_LOGS="recompiles"`, any prefix, the 2023 tuple form, `GuardFail(reason=...)`): one entry per cached graph, each size's set the union of its function's entries' sets; non-size guards named as such |
//! | `constraint_violation` | [`violation::static_hints`] | `Dim.DYNAMIC ... but tracing inferred a static shape of 30 for dimension inputs['x'].shape[1]` |
//! | `program` | [`printed::read_ranges`] | range-constraint maps printed alone (`{s0: ValueRanges(lower=2, upper=2, ...)}`) |
//! | `guards` (no guard) | `no_guard` | a text about symbolic sizes that holds no condition (a `NameError`/`KeyError` on a symbol, a header cut before its bullets): read, with a note that says so and what to paste |
//! | `input_check` | [`runtime`] | `Expected input x.shape[0] = 5 to be of the form 2*s1, ...` |
//! | `program` | [`printed`] | `print(ep)`: a printed `ExportedProgram` (`f32[s1 + 2]` inputs, `Range constraints: {s1: VR[2, int_oo]}`) |
//! | `torch_trace` | [`trace`] | a `TORCH_TRACE` file (structured JSON lines: symbols, guards, provenance, example sizes) |
//! | `guards` | [`scan`] | any other text holding a condition over sizes (a guard quoted in prose) |
//!
//! Beside any form, the user's own spec pasted with it (`batch = Dim("batch", min=1, max=32)`,
//! `dynamic_shapes={"x": {0: batch}}`, `ShapeVar`/`TensorSpec`) gives the sizes the text leaves
//! without a range the user's range and name ([`crate::spec::bind_user_spec`], called by
//! `dimguard`'s `commands::diagnose::read`: it sits above the readers).
//!
//! Every reader works on the same cleaned lines ([`clean`]: log prefixes of any logger and torch
//! version, `> `/`# ` quote markers, diff markers, Markdown backticks, fences and table bars,
//! HTML entities and colour codes removed, wrapped lines joined, line numbers kept) and returns a
//! [`Message`] whose `form` says what it read. A guard-looking line that cannot be read is kept
//! in `unreadable` with its line and the reason, never dropped.

use crate::phrase::Phrase;
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

use crate::message::{Message, DEFAULT_MIN, SIZE_MAX};
pub use dimguard_solver::report::Form;
use dimguard_solver::Error;

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
    let mut msg = if runtime::has_recompile(&lines) {
        // torch.compile's recompile reasons: cache entries, whatever log they sit in.
        match runtime::recompile(&lines) {
            Some(m) => m,
            None => fallback(&lines, exception, crash)?,
        }
    } else if printed::is_printed(&lines) && !logs::is_log(&lines) {
        printed::read(&lines)
    } else if let Some(m) = logs::is_log(&lines)
        .then(|| logs::read_entries(&lines))
        .flatten()
    {
        // Several compiles of one frame: torch.compile's cache entries, as alternatives.
        m
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
    datadep::read(&lines, &mut msg);
    for g in &msg.data_dependent {
        // `Could not extract specialized integer from data-dependent expression u0 + 1`: torch
        // needed the value itself, not a condition on it.
        if dimguard_solver::syntax::parse_expr(&g.text).is_ok_and(|e| !e.is_bool()) {
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
            if let Some(m) = violation::static_hints(lines) {
                return Ok(m);
            }
            if let Some(r) = runtime::read(lines)? {
                return Ok(r);
            }
            if let Some(m) = scan::read(lines) {
                return Ok(m);
            }
            if let Some(m) = printed::read_ranges(lines) {
                return Ok(m);
            }
            if let Some(m) = no_guard(lines) {
                return Ok(m);
            }
            Err(Error::Message(not_a_guard(lines)))
        }
        Err(e) => Err(e),
    }
}

/// A text about torch's symbolic sizes that states no condition on them (a header cut before
/// its bullets, a `NameError`/`KeyError` on a symbol, generated code using an undeclared one, a
/// symbolic float): read, with a note that says what it is, that it holds no guard, and what to
/// paste; never a refusal, never "unconstrained".
fn no_guard(lines: &[clean::Line]) -> Option<Message> {
    let has = |s: &str| lines.iter().any(|l| l.text.has(s));
    let mut symbols: Vec<String> = Vec::new();
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for l in lines {
        for w in l
            .text
            .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .filter(|w| dimguard_solver::is_size_symbol(w) || is_float_symbol(w))
        {
            if seen.insert(w) {
                symbols.push(w.to_string());
            }
        }
    }
    let header = lines.iter().find_map(|l| {
        let t = &l.text;
        let i = t.phrase("Constraints violated (")?;
        let rest = &t[i + "Constraints violated (".len()..];
        Some(rest.split(")!").next().unwrap_or(rest).to_string())
    });
    let named = |what: &str| {
        if symbols.is_empty() {
            what.to_string()
        } else {
            format!("{what} (it names {})", symbols.join(", "))
        }
    };
    let what = if let Some(h) = header {
        format!(
            "the text is cut: it holds torch's header `Constraints violated ({h})!` but not the lines under it that give each size's range and guard (`- Not all values of {h} = L['...'].size()[...] in the specified range ... satisfy the generated guard ...`) and the `Suggested fixes:`. Paste the whole error from the header to the end of the suggested fixes"
        )
    } else if let Some(c) = lines.iter().find_map(|l| {
        let t = &l.text;
        let i = t.phrase("inline constraint [")?;
        let r = &t[i + "inline constraint ".len()..];
        Some(r[..=r.find(']')?].to_string())
    }) {
        format!(
            "this printed program checks a data-dependent value at run time (`is outside of inline constraint {c}`: the value, made in the model by .item() or similar, must lie in {c}), not a size of an input: no input size is guarded in it"
        )
    } else if has("NameError: name '") {
        named("this is a NameError in code torch generated: it uses a size symbol the graph never defined (a code-generation bug, e.g. in Torch-TensorRT or Inductor), not a guard. It holds no condition on sizes; the sizes the program accepts come from its export: paste the export's error, or save the program and run `dimguard check model.pt2`")
    } else if has("KeyError: ") && !symbols.is_empty() {
        named("this is a KeyError on a size symbol: the shape environment has no range for it (a program reloaded without its range constraints), not a guard. It holds no condition on sizes; run `dimguard check` on the saved program, or paste the export's error")
    } else if has("use of undeclared identifier") {
        named("this is a compiler error in code AOTInductor generated: it uses a data-dependent symbol it never declared, not a guard. It holds no condition on sizes; paste the export's log (TORCH_LOGS=\"+dynamic\") for the guards on that symbol")
    } else if symbols.iter().any(|s| is_float_symbol(s)) {
        named("this text is about a symbolic float (a `zuf`/`zf` symbol): torch guards on floats are not tensor sizes, and the text holds no condition on a size. Paste the error above these lines, or the export's log with TORCH_LOGS=\"+dynamic\"")
    } else if !symbols.is_empty() || has("SymInt") {
        named("this text is about torch's symbolic sizes but holds no guard: no condition on them (a comparison, an equality, a range) is in it. Paste the ConstraintViolationError / UserError text, the export's output with TORCH_LOGS=\"+dynamic\", or `print(ep)` of the exported program")
    } else {
        return None;
    };
    let mut m = Message::empty(Form::Guards);
    m.notes.push(format!("this text holds no guard: {what}"));
    Some(m)
}

/// `zuf0`, `zf3`: torch's symbols for unbacked and backed floats.
fn is_float_symbol(w: &str) -> bool {
    ["zuf", "zf"].iter().any(|p| {
        w.strip_prefix(p)
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// Says what the text is (when dimguard recognizes it) and what to paste instead.
fn not_a_guard(lines: &[clean::Line]) -> String {
    let has = |s: &str| lines.iter().any(|l| l.text.has(s));
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
    let mut pinned_notes: Vec<String> = Vec::new();
    for d in &mut msg.dims {
        if d.range.is_none() && d.specialized.is_none() {
            // A size the text pins below the default's lower bound (`x11.size()[1] == 1`):
            // the range starts at that value, never a default that excludes it.
            let var = d.var().to_string();
            let pinned = d
                .guards
                .iter()
                .filter_map(|g| match &g.expr {
                    dimguard_solver::Expr::Cmp(dimguard_solver::CmpOp::Eq, a, b) => {
                        match (a.as_ref(), b.as_ref()) {
                            (dimguard_solver::Expr::Sym(s), c)
                            | (c, dimguard_solver::Expr::Sym(s))
                                if **s == *var =>
                            {
                                c.eval(&|_: &str| None).ok().and_then(|v| match v {
                                    dimguard_solver::expr::Value::Num(q) if q.is_integer() => {
                                        Some(q.to_integer())
                                    }
                                    _ => None,
                                })
                            }
                            _ => None,
                        }
                    }
                    _ => None,
                })
                .min();
            let lo = pinned.map_or(DEFAULT_MIN, |v| v.clamp(0, DEFAULT_MIN));
            d.range = Some((lo, SIZE_MAX));
            if lo < DEFAULT_MIN {
                pinned_notes.push(format!(
                    "{}: the text pins it to {lo}, so its range starts at {lo}, not at torch's default {DEFAULT_MIN}",
                    d.name
                ));
            }
            missing.push(d.name.clone());
        }
    }
    msg.notes.extend(pinned_notes);
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
        assert!(e.to_string().has("ep.module()"), "{e}");
        assert!(read("hello").is_err());
    }
}
