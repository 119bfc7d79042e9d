//! `dimguard check`: per size of an exported program its claimed and accepted values, its
//! joint sets, its guards and the run-time checks.

use super::fates::guard_fates;
use super::joint::joint_sets;
use super::style::{abbreviate, num, progression, row, size, Rows, Style};
use dimguard::solver::report::{CheckDim, CheckReport, GuardFate, RuntimeKind};
use std::fmt::Write;

/// Renders a `check` report for a person.
pub fn check(r: &CheckReport, color: bool) -> String {
    let st = Style { on: color };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} dynamic dimension{}{}",
        st.bold("dimguard check:"),
        r.dims.len(),
        if r.dims.len() == 1 { "" } else { "s" },
        r.torch_version
            .as_ref()
            .map_or(String::new(), |v| format!(" (exported by PyTorch {v})"))
    );
    // Linked sizes: the joint answer first (each size's own lines cannot say it).
    let through = |src: &str| {
        let d = r.dims.iter().find(|d| d.source == src)?;
        let p = d.answer.sides.example_box_side.as_ref()?;
        Some(progression(p.lo, p.hi, p.modulus))
    };
    joint_sets(&mut out, &r.joint, &through, &st);
    for d in &r.dims {
        dim(&mut out, d, r, &st);
    }
    guard_fates(&mut out, &r.guards, "in the program", &st);
    runtime_checks(&mut out, r, &st);
    let p = &r.propagation;
    let _ = writeln!(
        out,
        "\n{} {} operators checked, {} without a shape function{}",
        st.bold("shapes:"),
        p.checked,
        p.unchecked.len(),
        if p.unchecked.is_empty() {
            String::new()
        } else {
            format!(" ({})", p.unchecked.join(", "))
        }
    );
    if p.disagreements.is_empty() {
        row(
            &mut out,
            "",
            &st.green("every computed size equals the recorded one"),
            &st,
        );
    }
    for d in &p.disagreements {
        row(
            &mut out,
            "differs",
            &format!(
                "{} ({}): recorded [{}], computed [{}] at {}",
                d.node,
                d.tensor,
                abbreviate(&d.recorded.join(", "), 160),
                abbreviate(&d.computed.join(", "), 160),
                d.witness
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            &st,
        );
    }
    if !p.equal_on_accepted.is_empty() {
        row(
            &mut out,
            "equal",
            &format!(
                "{} output{} written differently from torch's, equal on {} (they differ only at inputs the guards reject)",
                p.equal_on_accepted.len(),
                if p.equal_on_accepted.len() == 1 { "" } else { "s" },
                p.equal_on_accepted[0].method
            ),
            &st,
        );
    }
    if !p.filled.is_empty() {
        row(
            &mut out,
            "filled",
            &format!(
                "sizes of {} computed where none were recorded",
                p.filled.join(", ")
            ),
            &st,
        );
    }
    for s in &r.sizes {
        let v = s
            .values
            .as_ref()
            .map_or("not enumerated".to_string(), |f| match (f.min, f.max) {
                (Some(a), Some(b)) => format!("{} values in {}..{}", f.count, a, b),
                _ => "none".into(),
            });
        row(
            &mut out,
            "size",
            &format!("{}[{}] = {}: {v}", s.tensor, s.index, s.expr),
            &st,
        );
    }
    let _ = writeln!(out, "\n{}\n", st.bold("Corrected dynamic_shapes:"));
    for line in r.dynamic_shapes.lines() {
        let _ = writeln!(out, "    {line}");
    }
    out
}

/// `check`'s run-time conditions: counts beside the guards', then each one that rejects a claimed
/// size or is undecided, in the inputs' names, with the user's line.
pub(super) fn runtime_checks(out: &mut String, r: &CheckReport, st: &Style) {
    if r.runtime.is_empty() {
        return;
    }
    let n = |k: RuntimeKind| r.runtime.iter().filter(|c| c.kind == k).count();
    let plural =
        |k: usize, one: &str, many: &str| format!("{k} {}", if k == 1 { one } else { many });
    let _ = writeln!(
        out,
        "\n{} {} (checked when the program is called), {} (raise mid-run), {} (an operator fails; no check states them)",
        st.bold("checks:"),
        plural(r.guards.len(), "guard", "guards"),
        plural(
            n(RuntimeKind::RuntimeAssert),
            "run-time assert",
            "run-time asserts"
        ),
        plural(
            n(RuntimeKind::ImpliedLimit),
            "implied limit",
            "implied limits"
        ),
    );
    let label = |text: &str| {
        r.dims.iter().fold(text.to_string(), |t, d| {
            t.replace(&d.source, &format!("{}[{}]", d.input, d.index))
        })
    };
    let quiet = r
        .runtime
        .iter()
        .filter(|c| c.rejects == Some(0) && c.fate != GuardFate::Undecided)
        .count();
    for c in &r.runtime {
        if c.rejects == Some(0) && c.fate != GuardFate::Undecided {
            continue;
        }
        let what = match c.kind {
            RuntimeKind::RuntimeAssert => "assert",
            RuntimeKind::ImpliedLimit => "limit",
        };
        let cond = c.on_inputs.as_deref().map_or(c.condition.clone(), label);
        row(out, what, &abbreviate(&cond, 160), st);
        let verdict = match (c.rejects, c.fate) {
            (_, GuardFate::Undecided) => st.yellow(&format!(
                "undecided: {}",
                c.reason.as_deref().unwrap_or("?")
            )),
            (Some(k), _) => st.red(&format!(
                "rejects {k} claimed size{}{}",
                if k == 1 { "" } else { "s" },
                eg(&c
                    .rejected_examples
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>())
            )),
            (None, _) => "with other sizes (see the accepted sets)".to_string(),
        };
        row(out, "", &verdict, st);
        let op = |t: &str| t.trim_start_matches("torch.ops.").to_string();
        let mut at = format!("{} ({})", c.node, op(&c.target));
        let mut trace = c.stack_trace.as_deref();
        if let Some(nb) = &c.needed_by {
            let _ = write!(at, ", needed by {} ({})", nb.node, op(&nb.target));
            trace = nb.stack_trace.as_deref();
        }
        row(out, "", &format!("at {at}"), st);
        if let Some(l) = trace.and_then(user_line) {
            row(out, "", &l, st);
        }
    }
    if quiet > 0 {
        row(
            out,
            "",
            &st.green(&format!(
                "{} more hold at every claimed size (all in --json)",
                quiet
            )),
            st,
        );
    }
}

/// The user's line in a stack trace: its last frame outside torch, as `file:line in fn: code`.
pub(super) fn user_line(trace: &str) -> Option<String> {
    let lines: Vec<&str> = trace.lines().collect();
    let (k, frame) = lines.iter().enumerate().rev().find(|(_, l)| {
        let l = l.trim_start();
        l.starts_with("File \"") && !l.contains("torch/")
    })?;
    // `File "/path/x.py", line 93, in forward`
    let rest = frame.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once('"')?;
    let file = path.rsplit('/').next().unwrap_or(path);
    let rest = rest.trim_start_matches(',').trim();
    let line = rest
        .strip_prefix("line ")
        .map(|r| r.split(',').next().unwrap_or(r))
        .unwrap_or("?");
    let func = rest.rsplit_once("in ").map_or("", |(_, f)| f);
    let code = lines.get(k + 1).map_or("", |c| c.trim());
    Some(format!("{file}:{line} in {func}: {code}"))
}

/// One size of a `check` report: its claims, what it accepts, its tie and link, and its line of
/// the corrected spec. `r`: the report, for the run-time checks and guards that reject it.
fn dim(out: &mut String, d: &CheckDim, r: &CheckReport, st: &Style) {
    let head = format!(
        "{}   {} = {}",
        st.bold(&format!("{}[{}]", d.input, d.index)),
        d.source,
        d.expr
    );
    let (mut before, mut after) = (Rows::default(), Rows::default());
    let claims = match (d.claimed.min, d.claimed.max) {
        (Some(a), Some(b)) => format!("{} sizes in {}..{}", d.claimed.count, num(a), num(b)),
        _ => "nothing".into(),
    };
    before.row("claims", &claims);
    let unsure = d.answer.undecided.as_ref().map_or(0, |u| u.count);
    match &d.answer.accepted {
        Some(a) => {
            let rejected = d.claimed.count.saturating_sub(a.count + unsure);
            // Really linked: some size passes with one partner and fails with another.
            let some = d
                .answer
                .sides
                .with_some_partner
                .as_ref()
                .filter(|f| f.count != a.count)
                .map(|f| f.count);
            let rejected = match some {
                Some(n) => d.claimed.count.saturating_sub(n + unsure),
                None => rejected,
            };
            // Linked, but the link excludes none of its values: its values that pass, pass
            // with every accepted value of the others.
            let free = some.is_some() && d.answer.sides.link_excludes_none == Some(true);
            let verdict = if let Some(v) = &d.answer.sides.defined_values {
                // A size the others define: its values with some partner, in their own form.
                let list = |xs: &[i128]| {
                    xs.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                st.red(&format!(
                    "{} of them with every partner; with some: {} (e.g. {}); the others fail with every partner, e.g. {}",
                    a.count,
                    v.text,
                    list(&v.examples),
                    list(&d.rejected_examples)
                ))
            } else if free {
                let n = d
                    .answer
                    .sides
                    .with_some_partner
                    .as_ref()
                    .map_or(0, |f| f.count);
                let ex: Vec<String> = d.rejected_examples.iter().map(|v| v.to_string()).collect();
                let each = "each with every accepted value of the sizes it is linked to";
                if n == d.claimed.count {
                    st.green(&format!("all {n} claimed sizes, {each}"))
                } else {
                    st.red(&format!(
                        "{n} of them, {each}; {} fail with every partner{}",
                        d.claimed.count.saturating_sub(n + unsure),
                        eg(&ex)
                    ))
                }
            } else if rejected == 0 && unsure == 0 && some.is_none() {
                st.green(&format!("all {} claimed sizes", a.count))
            } else if rejected == 0 && some.is_none() {
                st.yellow(&format!("{} of them proven", a.count))
            } else {
                let ex: Vec<String> = d.rejected_examples.iter().map(|v| v.to_string()).collect();
                let head = match some {
                    Some(n) => format!("{} of them with every partner, {n} with some", a.count),
                    None => format!("{} of them", a.count),
                };
                // Run-time checks that reject sizes of this dimension (they raise mid-run),
                // and guards on it (checked when the program is called).
                let mid_run = r
                    .runtime
                    .iter()
                    .any(|c| c.sizes.contains(&d.source) && c.rejects.unwrap_or(0) > 0);
                let guarded = r.guards.iter().any(|g| g.sizes.contains(&d.source));
                let fail = if some.is_some() {
                    "fail with every partner"
                } else if mid_run && guarded {
                    "fail a guard or raise mid-run"
                } else if mid_run {
                    "raise mid-run"
                } else {
                    "raise Guard failed"
                };
                if rejected == 0 {
                    st.yellow(&head)
                } else {
                    st.red(&format!("{head}; {rejected} {fail}{}", eg(&ex)))
                }
            };
            before.row("accepts", &verdict);
        }
        None => before.row("accepts", &st.yellow("undecided")),
    }
    let v = format!("{}[{}]", d.input, d.index);
    let claimed = d.claimed.min.zip(d.claimed.max);
    let claimed = claimed.map(|(a, b)| (a, b, d.claimed.count));
    // Equal to another input's size (one symbol): the tie says it all.
    if d.same_as.is_none() {
        linked_and_spec(d, &mut after);
    }
    size(out, &head, before, &d.answer, &v, claimed, after, st);
}

/// `, e.g. 3, 5` for a few rejected sizes, nothing when none is listed (never a dangling
/// "e.g.").
fn eg(ex: &[String]) -> String {
    if ex.is_empty() {
        String::new()
    } else {
        format!(", e.g. {}", ex.join(", "))
    }
}

/// A size's link and its line of the corrected spec (none for a size equal to another's).
fn linked_and_spec(d: &CheckDim, after: &mut Rows) {
    if !d.answer.linked_with.is_empty() {
        let every = match (&d.answer.sides.with_some_partner, &d.answer.accepted) {
            (Some(_), _) if d.answer.sides.link_excludes_none == Some(true) => {
                "; the link excludes none of its values".to_string()
            }
            (Some(f), Some(a)) if f.count == a.count => {
                "; each accepted size passes with every accepted size of those".to_string()
            }
            (Some(_), _) => {
                "; `accepts` counts the sizes that pass with every value of those; the joint answer is under `linked:` above".to_string()
            }
            _ => String::new(),
        };
        after.row(
            "linked",
            &format!("with {}{every}", d.answer.linked_with.join(", ")),
        );
    }
    // The size's line of the corrected spec: its side of the box through the traced sizes,
    // else of the shared Dim, else of the largest box; a size solved alone, the suggestion that
    // holds its traced size, as the corrected spec below takes it (torch refuses a spec that
    // excludes the example), else the best.
    let through_example = d.answer.suggestions.iter().find(|s| {
        d.example.is_some_and(|x| {
            (s.lo..=s.hi).contains(&x) && (x - s.residue).rem_euclid(s.modulus.max(1)) == 0
        })
    });
    if let Some(s) = d
        .answer
        .sides
        .example_box_side
        .as_ref()
        .or(d.answer.sides.shared_side.as_ref())
        .or(d.answer.sides.box_side.as_ref())
        .or(through_example)
        .or(d.answer.suggestions.first())
    {
        after.row("spec", &s.code);
    }
}
