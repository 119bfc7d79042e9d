//! The sections after the strips: the guards by the line of code they come from, the rounds of a
//! `dimguard.export` report, a cover's specs, the run-time checks, and the folded guard list;
//! before them, `verify`'s verdict.

use super::model::{PageCover, PageDim, PageVerdict, Round};
use super::text::{esc, MAX_GUARDS};
use crate::solver::report::CoverSide;
use crate::solver::report::{GuardFate, GuardReport, GuardUse, LineReport, RuntimeCheck};
use std::fmt::Write;

/// `verify`'s verdict: the spec's, then one row per size (its spec, the values it admits, those
/// that fail, real failing values, the certificate, the largest sound spec), then the guards
/// over several sizes.
pub(super) fn verdict_section(v: &PageVerdict, dims: &[PageDim]) -> String {
    let said = |s: Option<bool>| match s {
        Some(true) => "sound",
        Some(false) => "not sound",
        None => "undecided",
    };
    let mut out = format!(
        "<section aria-labelledby=\"h-verdict\"><h2 id=\"h-verdict\">Verdict</h2>\
         <p class=\"{}\">The spec is {}{}.</p>",
        if v.sound == Some(false) {
            "bad"
        } else {
            "note"
        },
        said(v.sound),
        match v.sound {
            Some(true) => ": no value it admits fails a guard",
            Some(false) => ": some values it admits fail a guard",
            None => ": not every size could be decided",
        }
    );
    out.push_str(
        "<table><thead><tr><th scope=\"col\">size</th><th scope=\"col\">spec</th>\
         <th scope=\"col\">verdict</th><th scope=\"col\">admitted</th>\
         <th scope=\"col\">failing</th><th scope=\"col\">failing values</th>\
         <th scope=\"col\">certificate</th><th scope=\"col\">largest sound spec</th></tr></thead><tbody>",
    );
    for d in dims {
        let PageDim::Verify(d) = d else { continue };
        let count = |n: Option<u128>| n.map_or("?".to_string(), |n| n.to_string());
        let _ = write!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(&d.name),
            esc(&d.spec),
            said(d.sound),
            d.note
                .as_deref()
                .map(|n| format!(" ({})", esc(n)))
                .unwrap_or_default(),
            d.admitted,
            count(d.failing),
            esc(&d
                .counterexamples
                .iter()
                .map(i128::to_string)
                .collect::<Vec<_>>()
                .join(", ")),
            esc(d.certificate.as_str()),
            esc(d.maximal_spec.as_deref().unwrap_or("")),
        );
    }
    out.push_str("</tbody></table>");
    if !v.joint.is_empty() {
        out.push_str("<h3>Guards over several sizes</h3><ul>");
        for j in &v.joint {
            let witness = j
                .counterexample
                .as_ref()
                .map(|c| {
                    let at: Vec<String> = c.iter().map(|(k, x)| format!("{k} = {x}")).collect();
                    format!(": fails at {}", at.join(", "))
                })
                .unwrap_or_default();
            let _ = write!(
                out,
                "<li><code>{}</code> — {}{}</li>",
                esc(&j.guard),
                said(j.sound),
                esc(&witness)
            );
        }
        out.push_str("</ul>");
    }
    if !v.unrecognized.is_empty() {
        let _ = write!(
            out,
            "<p class=\"bad\">Spec lines not understood: {}</p>",
            v.unrecognized
                .iter()
                .map(|l| format!("<code>{}</code>", esc(l)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out.push_str("</section>");
    out
}

pub(super) fn line_card(l: &LineReport) -> String {
    let short = crate::solver::short_file(&l.file);
    let mut out = format!(
        "<div class=\"card{}\"><p><span class=\"loc\" title=\"{}\">{}:{}</span> in <code>{}</code>{}{}</p>",
        if l.user { "" } else { " lib" },
        esc(&l.file),
        esc(short),
        l.line,
        esc(&l.function),
        if l.ops.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"ops\">(torch: {})</span>", esc(&l.ops.join(", ")))
        },
        if l.user {
            ""
        } else {
            " <span class=\"ops\">— no user frame was recorded; this is torch's frame</span>"
        }
    );
    if let Some(c) = &l.code {
        let _ = write!(out, "<pre><code>{}</code></pre>", esc(c));
    }
    if !l.dims.is_empty() {
        out.push_str("<table><thead><tr><th scope=\"col\">size</th><th scope=\"col\">this line requires</th><th scope=\"col\">removes</th></tr></thead><tbody>");
        for d in &l.dims {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&d.name),
                esc(&d.requires),
                match d.removes {
                    Some(r) => format!("{r} of {}", d.of),
                    None => "not decided".into(),
                }
            );
        }
        out.push_str("</tbody></table>");
    }
    for g in &l.links {
        let _ = write!(out, "<p>Links sizes: <code>{}</code></p>", esc(g));
    }
    let _ = write!(
        out,
        "<details><summary>{} guard{} recorded at this line</summary><ul>{}</ul></details></div>",
        l.guards.len(),
        if l.guards.len() == 1 { "" } else { "s" },
        l.guards
            .iter()
            .map(|g| format!("<li><code>{}</code></li>", esc(g)))
            .collect::<String>()
    );
    out
}

/// The rounds of a `dimguard.export` report: each round's outcome, notes, and the guards it
/// recorded grouped by source line (`lines`, from the trace captured during the round).
pub(super) fn rounds_section(rounds: &[Round]) -> String {
    let mut out = String::from(
        "<section aria-labelledby=\"h-rounds\"><h2 id=\"h-rounds\">Export rounds</h2>",
    );
    for r in rounds {
        let _ = write!(
            out,
            "<h3>Round {}: {}</h3>",
            r.round,
            esc(&r.outcome.replace('_', " "))
        );
        if let Some(e) = r.error.as_deref().filter(|e| !e.is_empty()) {
            let _ = write!(out, "<p class=\"bad\">{}</p>", esc(e));
        }
        if !r.notes.is_empty() {
            let _ = write!(
                out,
                "<ul>{}</ul>",
                r.notes
                    .iter()
                    .map(|n| format!("<li>{}</li>", esc(n)))
                    .collect::<String>()
            );
        }
        if let Some(spec) = &r.spec {
            let _ = write!(
                out,
                "<details><summary>The spec of this round</summary><pre><code>{}</code></pre></details>",
                esc(spec)
            );
        }
        for l in &r.lines {
            out.push_str(&line_card(l));
        }
    }
    out.push_str("</section>");
    out
}

/// A cover (`diagnose --cover N`, or a `dimguard.Dispatch`): the summary, then each piece's
/// spec with what it holds.
pub(super) fn cover_section(c: &PageCover) -> String {
    let mut out = format!(
        "<section aria-labelledby=\"h-cover\"><h2 id=\"h-cover\">Several specs that cover every valid size</h2>\
         <p>{}</p>",
        esc(&c.summary)
    );
    if !(c.left_out.is_empty() && c.notes.is_empty()) {
        out.push_str("<ul class=\"note\">");
        for n in c.left_out.iter().chain(&c.notes) {
            let _ = write!(out, "<li>{}</li>", esc(n));
        }
        out.push_str("</ul>");
    }
    for (i, p) in c.pieces.iter().enumerate() {
        let sides: Vec<String> = p.sides.iter().map(CoverSide::text).collect();
        let what = [p.label.clone().unwrap_or_default(), sides.join(", ")]
            .into_iter()
            .filter(|t| !t.is_empty())
            .collect::<Vec<_>>()
            .join(": ");
        let held = p.count.map(|n| format!(" ({n} sizes)")).unwrap_or_default();
        let _ = write!(
            out,
            "<h3>Spec {} of {}: {}{held}</h3><pre tabindex=\"0\"><code>{}</code></pre>",
            i + 1,
            c.pieces.len(),
            esc(&what),
            esc(&p.code)
        );
    }
    out.push_str("</section>");
    out
}

/// `check`'s run-time checks: asserts inside the graph (they raise mid-run, not when the program
/// is called) and limits the graph implies without any check, each with what it rejects and the
/// user's line.
pub(super) fn runtime_section(checks: &[RuntimeCheck]) -> String {
    let mut out = String::from(
        "<section aria-labelledby=\"h-runtime\"><h2 id=\"h-runtime\">Run-time asserts and implied limits</h2>\
         <p class=\"note\">Guards are checked when the program is called; these are not: a run-time \
         assert raises mid-run, an implied limit (an index into a fixed-length table) fails inside \
         an operator. The accepted sizes above include them.</p><ul>",
    );
    for c in checks {
        let kind = c.kind.label();
        let cond = c.on_inputs.as_deref().unwrap_or(&c.condition);
        let rejects = match c.rejects {
            Some(0) => " — rejects no claimed size".to_string(),
            Some(n) => {
                let ex: Vec<String> = c
                    .rejected_examples
                    .iter()
                    .take(3)
                    .map(i128::to_string)
                    .collect();
                format!(
                    " — <span class=\"bad\">rejects {n} claimed size{}</span>{}",
                    if n == 1 { "" } else { "s" },
                    if ex.is_empty() {
                        String::new()
                    } else {
                        format!(", e.g. {}", ex.join(", "))
                    }
                )
            }
            None => c
                .reason
                .as_deref()
                .map(|r| format!(" — {}", esc(r)))
                .unwrap_or_default(),
        };
        let at = c.needed_by.as_ref().map_or(&c.target, |n| &n.target);
        let line = c
            .stack_trace
            .as_deref()
            .or(c.needed_by.as_ref().and_then(|n| n.stack_trace.as_deref()))
            .and_then(|t| {
                t.lines()
                    .find(|l| l.contains("File ") && !l.contains("site-packages"))
            })
            .map(|l| format!("<br><span class=\"ops\">{}</span>", esc(l.trim())))
            .unwrap_or_default();
        let _ = write!(
            out,
            "<li>{kind}: <code>{}</code> (at <code>{}</code>){rejects}{line}</li>",
            esc(cond),
            esc(at)
        );
    }
    out.push_str("</ul></section>");
    out
}

/// The guards: a `check` report lists them once, with the sizes each mentions; without that
/// list, a diagnosis's guards per size, with what each requires.
pub(super) fn guard_list(dims: &[PageDim], top: &[GuardUse]) -> String {
    let mut out = String::new();
    let item = |g: &GuardUse| {
        format!(
            "<li><code>{}</code>{}{}</li>",
            esc(&g.guard),
            if g.sizes.is_empty() {
                String::new()
            } else {
                format!(" — on {}", esc(&g.sizes.join(", ")))
            },
            match (&g.reason, &g.error) {
                (_, Some(e)) => format!(" — <span class=\"bad\">not read: {}</span>", esc(e)),
                (Some(r), _) => format!(" — <span class=\"bad\">{}</span>", esc(r)),
                _ => String::new(),
            }
        )
    };
    if !top.is_empty() {
        // `check`: the guards a person must look at (undecided, unread) one by one; those
        // solved (one size at a time, or jointly) folded, one line per kind.
        out.push_str("<section aria-labelledby=\"h-guards\"><h2 id=\"h-guards\">Guards</h2>");
        let is_open = |g: &GuardUse| matches!(g.fate, GuardFate::Undecided | GuardFate::Unparsed);
        let open: Vec<&GuardUse> = top.iter().filter(|g| is_open(g)).collect();
        if !open.is_empty() {
            // The first few open; the rest (often the same reason) folded.
            let rest = &open[open.len().min(5)..];
            let _ = write!(
                out,
                "<p class=\"bad\">{} guard{} not decided or not read:</p><ul>{}</ul>{}",
                open.len(),
                if open.len() == 1 { "" } else { "s" },
                open.iter().take(5).map(|g| item(g)).collect::<String>(),
                if rest.is_empty() {
                    String::new()
                } else {
                    format!(
                        "<details><summary>{} more not decided or not read</summary><ul>{}</ul></details>",
                        rest.len(),
                        rest.iter().take(MAX_GUARDS).map(|g| item(g)).collect::<String>()
                    )
                }
            );
        }
        let kinds: [(bool, &str); 2] = [
            (
                true,
                "over several sizes, solved together (the joint answer above)",
            ),
            (
                false,
                "on one size each or none, solved exactly (the strips above)",
            ),
        ];
        for (joint, what) in kinds {
            let these: Vec<&GuardUse> = top
                .iter()
                .filter(|g| !is_open(g))
                .filter(|g| (g.fate == GuardFate::Joint) == joint)
                .collect();
            if these.is_empty() {
                continue;
            }
            // At most [`MAX_GUARDS`] listed (the page stays small; `--json` lists every one).
            let more = these.len().saturating_sub(MAX_GUARDS);
            let _ = write!(
                out,
                "<details><summary>{} guard{} {what}</summary><ul>{}{}</ul></details>",
                these.len(),
                if these.len() == 1 { "" } else { "s" },
                these
                    .iter()
                    .take(MAX_GUARDS)
                    .map(|g| item(g))
                    .collect::<String>(),
                if more > 0 {
                    format!("<li>and {more} more (<code>--json</code> lists every guard)</li>")
                } else {
                    String::new()
                }
            );
        }
        out.push_str("</section>");
        return out;
    }
    for d in dims {
        let PageDim::Diagnose(r) = d else { continue };
        if r.guards.is_empty() {
            continue;
        }
        if out.is_empty() {
            out.push_str("<section aria-labelledby=\"h-guards\"><h2 id=\"h-guards\">Guards</h2>");
        }
        let _ = write!(out, "<h3>{}</h3><ul>", esc(&d.strip().label));
        let text = |g: &GuardReport| {
            format!(
                "<li><code>{}</code>{}</li>",
                esc(&g.text),
                if g.requires.is_empty() {
                    String::new()
                } else {
                    format!(" — requires {}", esc(&g.requires))
                }
            )
        };
        // Guards that remove nothing beyond those listed: one folded line (`folded`: the listed
        // ones keep exactly the size's accepted values).
        let (implied, kept): (Vec<&GuardReport>, Vec<&GuardReport>) =
            r.guards.iter().partition(|g| g.folded);
        for g in &kept {
            out.push_str(&text(g));
        }
        out.push_str("</ul>");
        if !implied.is_empty() {
            let _ = write!(
                out,
                "<details><summary>{} more guard{} remove{} nothing beyond the others</summary><ul>{}</ul></details>",
                implied.len(),
                if implied.len() == 1 { "" } else { "s" },
                if implied.len() == 1 { "s" } else { "" },
                implied.iter().map(|g| text(g)).collect::<String>()
            );
        }
    }
    if !out.is_empty() {
        out.push_str("</section>");
    }
    out
}
