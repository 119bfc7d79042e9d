//! The page itself: its frame (header, summary, inline CSS and script), the order of its
//! sections, and the paste-able spec with its copy button.

use super::joint::{joint_section, Joint};
use super::model::{Page, PageError};
use super::sections::{
    cover_section, guard_list, line_card, rounds_section, runtime_section, verdict_section,
};
use super::strip::{strip, StripDim};
use super::text::esc;
use crate::solver::report::{DataDependent, Form, LineReport};
use std::fmt::Write;

/// A report's JSON as a page ([`Page::from_json`], then [`render`]).
pub fn render_json(text: &str, title: &str) -> Result<String, PageError> {
    Ok(render(&Page::from_json(text)?, title))
}

/// Renders a report as a page. `title` names the input (a file name).
pub fn render(report: &Page, title: &str) -> String {
    let mut body = String::new();
    let dims = &report.dims;
    let _ = writeln!(
        body,
        "<header><h1>dimguard: {}</h1><p class=\"sub\">{}</p></header>",
        esc(title),
        esc(&summary(report))
    );
    body.push_str("<main>");
    if let Some(p) = &report.partial {
        let _ = write!(
            body,
            "<p class=\"bad\">This text holds only some of the export's guards: {}. Every accepted size is in the sets its guards leave, not every size there is accepted: no size is claimed accepted and no Dim is pasted. Instead: {}.</p>",
            esc(&p.holds),
            esc(&p.instead)
        );
    }
    if let Some(v) = &report.verdict {
        body.push_str(&verdict_section(v, dims));
    }
    let joints: Vec<Joint> = report.joint.iter().filter_map(Joint::read).collect();
    // Linked sizes: the joint answer first (each size's own strip cannot say it).
    body.push_str(&joint_section(report, &joints));
    if !dims.is_empty() {
        body.push_str(
            "<section aria-labelledby=\"h-sizes\"><h2 id=\"h-sizes\">Accepted sizes</h2>",
        );
        body.push_str(
            "<p class=\"note\">Each mark is one size of the range; coloured marks pass every guard \
             (for a linked size: with some value of the sizes it is linked to; one colour per \
             residue class), pale marks fail.</p>",
        );
        // Sizes a link leaves free (independent of the others in their joint set).
        let free: Vec<&str> = joints
            .iter()
            .flat_map(|j| {
                (0..j.names.len())
                    .filter(|k| j.independent[*k])
                    .filter_map(|k| j.v.sources.get(k).map(String::as_str))
                    .collect::<Vec<_>>()
            })
            .collect();
        for (i, d) in dims.iter().enumerate() {
            let linked_free = d.source().is_some_and(|s| free.contains(&s));
            body.push_str(&strip(&d.strip(), i, linked_free));
        }
        body.push_str("</section>");
    }
    let dd: Vec<&DataDependent> = report
        .data_dependent
        .iter()
        .filter(|d| d.when_true.is_some())
        .collect();
    if !dd.is_empty() {
        body.push_str(
            "<section aria-labelledby=\"h-dd\"><h2 id=\"h-dd\">Data-dependent expressions</h2>",
        );
        body.push_str(
            "<p class=\"note\">Each mark is one size of the range; coloured marks are the sizes \
             the assumption keeps (the branch that holds everywhere, or the traced size's), pale \
             marks the sizes it removes.</p>",
        );
        for (i, d) in dd.iter().enumerate() {
            let kept = match d.always.or(d.example_branch) {
                Some(false) => d.when_false.as_ref(),
                _ => d.when_true.as_ref(),
            };
            let label = match &d.assumption {
                Some(a) => format!("{}: assume {a}", d.guard),
                None => format!("{} (where it is true)", d.guard),
            };
            let view = StripDim {
                label: match &d.source {
                    Some(s) => format!("{label} = {s}"),
                    None => label,
                },
                set: kept,
                range: d.range.map(|[a, b]| (a, b)),
                ..StripDim::default()
            };
            body.push_str(&strip(&view, dims.len() + i, false));
        }
        body.push_str("</section>");
    }
    if !report.lines.is_empty() {
        body.push_str(
            "<section aria-labelledby=\"h-lines\"><h2 id=\"h-lines\">Where the guards come from</h2>",
        );
        // Lines whose guards remove nothing (and link nothing) are folded into one line.
        let idle =
            |l: &LineReport| l.links.is_empty() && l.dims.iter().all(|d| d.removes == Some(0));
        for l in report.lines.iter().filter(|l| !idle(l)) {
            body.push_str(&line_card(l));
        }
        let folded: Vec<&LineReport> = report.lines.iter().filter(|l| idle(l)).collect();
        if !folded.is_empty() {
            let _ = write!(
                body,
                "<details><summary>{} more line{} recorded guards that remove no size</summary>{}</details>",
                folded.len(),
                if folded.len() == 1 { "" } else { "s" },
                folded.iter().map(|l| line_card(l)).collect::<String>()
            );
        }
        body.push_str("</section>");
    } else if report.rounds.is_none() {
        body.push_str(&guard_list(dims, &report.guards));
    }
    if let Some(c) = &report.cover {
        body.push_str(&cover_section(c));
    }
    if !report.runtime.is_empty() {
        body.push_str(&runtime_section(&report.runtime));
    }
    if let Some(rounds) = report.rounds.as_ref().filter(|r| !r.is_empty()) {
        body.push_str(&rounds_section(rounds));
    }
    if let Some(spec) = report.spec.as_deref().filter(|s| !s.is_empty()) {
        // A torch.compile text's advice goes before the compiled call, not an export.
        let (call, what) = if report.compiled {
            ("torch.compile call", "torch.compile advice")
        } else {
            ("export call", "dynamic_shapes spec")
        };
        let _ = write!(
            body,
            "<section aria-labelledby=\"h-spec\"><h2 id=\"h-spec\">Paste in front of your {call}</h2>\
             <pre id=\"spec\" tabindex=\"0\" aria-label=\"{what}\"><code>{}</code></pre>\
             <button type=\"button\" id=\"copy\">Copy the spec</button> \
             <span id=\"copied\" role=\"status\" aria-live=\"polite\"></span></section>",
            esc(spec)
        );
    }
    body.push_str("</main>");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>dimguard: {}</title><style>{CSS}</style></head><body>{body}<script>{JS}</script></body></html>\n",
        esc(title)
    )
}

pub(super) const CSS: &str = "body{font:15px/1.5 system-ui,-apple-system,Segoe UI,sans-serif;color:#1a1a1a;\
background:#fff;margin:0 auto;max-width:1000px;padding:1rem 1.5rem}h1{font-size:1.5rem;margin:.2rem 0}\
h2{font-size:1.2rem;border-bottom:1px solid #ccc;margin-top:2rem}h3{font-size:1.05rem;margin:1.2rem 0 .3rem}\
.sub,.note{color:#444}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13.5px}\
pre{background:#f4f4f4;padding:.7rem;overflow-x:auto;border:1px solid #ddd}\
.card{border:1px solid #ccc;border-left:4px solid #0072B2;padding:.5rem .9rem;margin:.8rem 0}\
.card.lib{border-left-color:#767676}.loc{font-weight:600}.ops{color:#444}\
.legend{display:flex;flex-wrap:wrap;gap:.8rem;margin:.2rem 0 .6rem;padding:0;list-style:none}\
.legend li{display:flex;align-items:center;gap:.3rem}.sw{display:inline-block;width:12px;height:12px;border:1px solid #333}\
svg{display:block;max-width:100%;height:auto}svg:focus,pre:focus,button:focus{outline:3px solid #D55E00;outline-offset:2px}\
.rej{fill:#e2e2e2}.axis{font-size:11px;fill:#333}.box{fill:none;stroke:#000;stroke-width:2;stroke-dasharray:6 3}\
button{font:inherit;padding:.35rem .9rem;border:1px solid #0b4f7c;background:#0072B2;color:#fff;border-radius:4px;cursor:pointer}\
button:hover{background:#005a8c}table{border-collapse:collapse}td,th{padding:.15rem .6rem;text-align:left;vertical-align:top}\
details{margin:.3rem 0}.bad{color:#a3290a}";

pub(super) const JS: &str = "document.getElementById('copy')&&document.getElementById('copy').addEventListener('click',function(){\
var t=document.getElementById('spec').innerText,s=document.getElementById('copied');\
function done(ok){s.textContent=ok?'Copied.':'Select the text and copy it by hand.';}\
function fallback(){var r=document.createRange();r.selectNodeContents(document.getElementById('spec'));\
var sel=window.getSelection();sel.removeAllRanges();sel.addRange(r);var ok=false;try{ok=document.execCommand('copy');}catch(e){}done(ok);}\
if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(t).then(function(){done(true);},fallback);}else{fallback();}});";

pub(super) fn summary(report: &Page) -> String {
    let n = report.dims.len();
    let mut parts = vec![format!("{n} size{}", if n == 1 { "" } else { "s" })];
    if let Some(f) = report.form {
        let what = match f {
            Form::TorchTrace => "a structured trace (TORCH_TRACE)",
            Form::TorchLogs => "TORCH_LOGS output",
            Form::ConstraintViolation => "a torch.export constraint error",
            Form::DraftExport => "a draft_export report",
            Form::GuardFailed => "a Guard failed error",
            Form::InputCheck => "an input check error",
            Form::SolverCrash => "torch's solver crash",
            Form::Guards => "guard lines",
            Form::Program => "an exported program",
            Form::DataDependent => "a data-dependent failure (GuardOnDataDependentSymNode)",
        };
        parts.push(format!("read from {what}"));
    }
    if let Some(v) = &report.torch_version {
        parts.push(format!("PyTorch {v}"));
    }
    if report.verdict.is_some() {
        parts.push("a spec verified against its guards".to_string());
    }
    parts.join(" · ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The page of a report's JSON (as the Python package hands it over).
    fn draw(r: &serde_json::Value, title: &str) -> String {
        render_json(&r.to_string(), title).unwrap()
    }

    /// A diagnosed size (`diagnose`'s `dims[]`) with the fields the contract requires.
    fn diagnosed(
        name: &str,
        range: [i64; 2],
        feasible: serde_json::Value,
        status: &str,
    ) -> serde_json::Value {
        json!({"name": name, "source": null, "range": range, "status": status, "feasible": feasible,
               "suggestions": [], "maximality": "", "guards": [], "specialized": null,
               "coverage": null, "padding": null, "torch_fix": null, "undecided": null, "advice": []})
    }

    /// A program's input dimension (`check`'s `dims[]`) with the fields the contract requires.
    fn checked(input: &str, index: usize, source: &str, claimed: [i64; 2]) -> serde_json::Value {
        json!({"input": input, "index": index, "symbol": "s0", "expr": "s0", "source": source,
               "claimed": {"count": claimed[1] - claimed[0] + 1, "min": claimed[0], "max": claimed[1]},
               "accepted": null, "suggestions": [], "rejected_examples": []})
    }

    /// A joint set (`check`'s `joint[]`) with the fields the contract requires.
    fn joint(
        dims: &[&str],
        claimed: u128,
        accepted: u128,
        boxes: serde_json::Value,
    ) -> serde_json::Value {
        json!({"dims": dims, "sources": dims, "claimed": claimed, "accepted": accepted,
               "boxes": boxes, "boxes_complete": true, "accepted_examples": [],
               "rejected_examples": [], "summary": "",
               "search": {"points": 0, "periodic_solves": 0, "shared_nodes": 0}})
    }

    #[test]
    fn marks_match_accepted_values_and_text_is_escaped() {
        let r = json!({
            "form": "torch_trace",
            "dims": [{"name": "h", "source": "L['x'].size()[2]", "range": [96, 1024],
                      "feasible": {"count": 465, "segments": [{"lo": 96, "hi": 1024, "modulus": 8, "residues": [0, 5, 6, 7]}]}}],
            "lines": [{"file": "/m/model.py", "line": 17, "function": "forward", "code": "f = a < b",
                       "user": true, "ops": ["infer_size"], "guards": ["Eq(s0, 1)"],
                       "dims": [{"name": "h", "requires": "h mod 8", "removes": 464, "of": 929}], "links": []}],
            "dynamic_shapes": "h = Dim('h')",
            "linked": [{"root": "a", "members": [["b", "2*a + 1"]], "certificate": "enumeration",
                        "feasible": {"count": 3, "segments": [{"lo": 2, "hi": 4, "modulus": 1, "residues": [0]}]}}]
        });
        let page = draw(&r, "t<1>");
        assert_eq!(page.matches("class=\"acc\"").count(), 465);
        // Rows of 64 values: the pale bar of each row shows the values that fail.
        assert_eq!(
            page.matches("class=\"rej\"").count(),
            929_usize.div_ceil(64)
        );
        assert_eq!(page.matches("class=\"tup\"").count(), 3);
        assert!(page.contains("<title>(4, 9)</title>"));
        assert!(page.contains("f = a &lt; b"));
        assert!(page.contains("dimguard: t&lt;1&gt;"));
        assert!(!page.contains("http://") && !page.contains("https://"));
        assert!(page.contains("≡ 5 (mod 8)"));
    }

    #[test]
    fn a_cover_lists_each_spec() {
        let r = json!({"dims": [], "cover": {"summary": "1014 of 1014 valid sizes in 2 specs", "left_out": ["w: linked"],
        "pieces": [
            {"sides": [{"name": "_2", "lo": 136, "hi": 2160, "modulus": 8, "residue": 0, "count": 254}], "count": 254, "code": "_2 = 8*__2  # <x>"},
            {"label": "program 1 (Dim.AUTO)", "count": 101, "code": "x = Dim('x')"}
        ]}});
        let page = draw(&r, "t");
        assert!(
            page.contains("<p>1014 of 1014 valid sizes in 2 specs</p>"),
            "{page}"
        );
        assert!(page.contains("<li>w: linked</li>"));
        assert!(
            page.contains("Spec 1 of 2: _2 in 136..2160 ≡ 0 (mod 8) (254 sizes)"),
            "{page}"
        );
        assert!(page.contains("<code>_2 = 8*__2  # &lt;x&gt;</code>"));
        assert!(
            page.contains("Spec 2 of 2: program 1 (Dim.AUTO) (101 sizes)"),
            "{page}"
        );
    }

    #[test]
    fn run_time_checks_are_listed_apart_from_guards() {
        let r = json!({"dims": [], "guards": [], "runtime": [
            {"kind": "implied_limit", "node": "embedding_1", "target": "torch.ops.aten.embedding.default",
             "condition": "s27 <= 128", "on_inputs": "L['ids'].size()[1] <= 128", "sizes": [],
             "fate": "periodic", "rejects": 384, "rejected_examples": [129, 130, 131, 132],
             "stack_trace": "File \"m.py\", line 7, in forward\n    x = self.wpe(pos)\n  File \"/v/site-packages/torch/nn/sparse.py\", line 1"},
            {"kind": "runtime_assert", "node": "_assert_scalar", "target": "torch.ops.aten._assert_scalar.default",
             "condition": "Eq(u0, 1) & <b>", "sizes": [], "fate": "periodic", "rejects": 0}
        ]});
        let page = draw(&r, "t");
        assert!(page.contains("Run-time asserts and implied limits"));
        assert!(
            page.contains("implied limit: <code>L[&#39;ids&#39;].size()[1] &lt;= 128</code>"),
            "{page}"
        );
        assert!(page.contains("rejects 384 claimed sizes</span>, e.g. 129, 130, 131"));
        assert!(
            page.contains("File &quot;m.py&quot;, line 7, in forward"),
            "{page}"
        );
        assert!(!page.contains("sparse.py"), "the user's frame, not torch's");
        assert!(
            page.contains("run-time assert: <code>Eq(u0, 1) &amp; &lt;b&gt;</code>"),
            "{page}"
        );
        assert!(page.contains("rejects no claimed size"));
    }

    #[test]
    fn data_dependent_expressions_show_the_sizes_the_assumption_keeps() {
        let r = json!({"form": "data_dependent", "dims": [], "data_dependent": [{
            "guard": "u1 <= 31", "sizes": ["u1"], "torch_check": ["", ""], "symbols": [],
            "certificate": "enumeration", "source": "x.shape[2]", "range": [16, 1024],
            "when_true": {"count": 16, "segments": [{"lo": 16, "hi": 31, "modulus": 1, "residues": [0]}]},
            "when_false": {"count": 993, "segments": [{"lo": 32, "hi": 1024, "modulus": 1, "residues": [0]}]},
            "always": null, "example_branch": false, "assumption": "H > 31"}]});
        let page = draw(&r, "swin");
        assert!(page.contains("Data-dependent expressions"));
        assert!(page.contains("assume H &gt; 31"));
        assert_eq!(page.matches("class=\"acc\"").count(), 993);
    }

    #[test]
    fn huge_ranges_are_bands_and_undecided_says_so() {
        let mut w = diagnosed("w", [2, 10], json!(null), "undecided");
        w["undecided"] = json!("too wide");
        let r = json!({"dims": [
            diagnosed("h", [2, 9223372036854775807i64],
                json!({"count": 4611686018427387903i64, "segments": [{"lo": 2, "hi": 9223372036854775806i64, "modulus": 2, "residues": [0]}]}),
                "constrained"),
            w]});
        let page = draw(&r, "x");
        assert!(page.contains("data-aggregated=\"true\""));
        assert!(page.contains("Not decided: too wide"));
        assert!(page.len() < 20_000);
    }

    #[test]
    fn export_reports_show_rounds_with_their_lines_and_the_spec() {
        let line = json!({"file": "m.py", "line": 9, "function": "forward", "code": "y = x.view(-1, 4)",
                          "user": true, "ops": ["_reshape_view_helper_core_alg"], "guards": ["Eq(Mod(s0, 4), 0)"],
                          "dims": [{"name": "x_0", "requires": "x_0 ≡ 0 (mod 4)", "removes": 6, "of": 8}], "links": []});
        let r = json!({
            "exported": true, "spec": "x_0 = 4*_x_0",
            "rounds": [{"round": 1, "outcome": "constraint_violation", "spec": "h = Dim('h')", "notes": ["narrowed"],
                        "lines": [line]},
                       {"round": 2, "outcome": "exported", "spec": "x_0 = 4*_x_0", "notes": [], "lines": []}],
            "dims": [checked("x", 0, "L['x'].size()[0]", [4, 8])]
        });
        let mut r = r;
        r["dims"][0]["expr"] = json!("4*s0");
        r["dims"][0]["claimed"]["count"] = json!(2);
        r["dims"][0]["accepted"] = json!({"count": 2, "min": 4, "max": 8, "segments": [{"lo": 4, "hi": 8, "modulus": 4, "residues": [0]}]});
        let page = draw(&r, "export");
        assert!(page.contains("Round 1: constraint violation"));
        assert!(page.contains("y = x.view(-1, 4)"));
        assert!(
            page.contains("id=\"copy\""),
            "the final spec with its button"
        );
        assert_eq!(page.matches("class=\"acc\"").count(), 2);
    }

    #[test]
    fn three_linked_sizes_are_sliced_by_the_third_with_the_box() {
        // Two disjoint boxes: a in 2..5 (even), b in 4..5, c = 1; and a = 3, b in 2..3, c = 2.
        let seg = |lo: i64, hi: i64, m: i64, r: &[i64]| {
            let n = (lo..=hi).filter(|x| r.contains(&x.rem_euclid(m))).count();
            json!({"count": n, "segments": [{"lo": lo, "hi": hi, "modulus": m, "residues": r}]})
        };
        let side = |lo: i64, hi: i64, m: i64| {
            json!({"lo": lo, "hi": hi, "modulus": m, "residue": lo % m, "count": (hi - lo) / m + 1,
                   "code": "", "certificate": "enumeration", "proof": "enumeration"})
        };
        let mut j = joint(
            &["a", "b", "c"],
            64,
            6,
            json!([
                [seg(2, 5, 2, &[0]), seg(4, 5, 1, &[0]), seg(1, 1, 1, &[0])],
                [seg(3, 3, 1, &[0]), seg(2, 3, 1, &[0]), seg(2, 2, 1, &[0])]
            ]),
        );
        j["largest_box"] = json!({"count": 4, "maximal": true,
                                  "sides": [side(2, 4, 2), side(4, 5, 1), side(1, 1, 1)]});
        j["summary"] = json!("6 of 64 tuples pass");
        let r = json!({"dims": [], "joint": [j]});
        let page = draw(&r, "three");
        assert_eq!(
            page.matches("<svg class=\"pairs\"").count(),
            2,
            "one panel per value of c"
        );
        assert_eq!(page.matches("class=\"tup\"").count(), 6);
        assert!(page.contains("with c = 2"));
        assert!(page.contains("6 of 64 tuples pass"));
        assert_eq!(page.matches("class=\"box\"").count(), 1, "c = 1 only");
        // Incomplete box lists are not drawn as if complete.
        let mut r2 = r.clone();
        r2["joint"][0]["boxes_complete"] = json!(false);
        assert!(!draw(&r2, "x").contains("class=\"tup\""));
    }

    #[test]
    fn guards_folded_are_those_that_remove_nothing_beyond_the_listed_ones() {
        // timm's mobilevit_xxs (torch 2.15): every guard of h has an exact twin, so all 33 are
        // redundant, yet together they keep 56 of 417 heights: three are listed, 30 folded.
        let text = include_str!("../../tests/data/messages/mobilevit_xxs_215.txt");
        let report = crate::commands::diagnose::diagnose_text(text, &Default::default()).unwrap();
        let h = report.dims.iter().find(|d| d.name == "h").unwrap();
        assert!(h.guards.iter().all(|g| g.redundant));
        // Without the report's own list of guards (`guards`), the page lists them per size.
        let mut v = serde_json::to_value(&report).unwrap();
        v["guards"] = json!([]);
        let page = draw(&v, "mobilevit");
        assert!(
            page.contains("<summary>30 more guards remove nothing beyond the others</summary>"),
            "{page}"
        );
        assert!(page.contains("<summary>29 more guards remove nothing beyond the others</summary>"));
    }

    #[test]
    fn diagnose_joint_sets_are_drawn() {
        // Two images whose pooled H (and W) must match: the joint sets come in `joint_sets`
        // (diagnose's `joint` holds the single guards).
        let text = include_str!("../../tests/data/forms/two_input.log.txt");
        let report = crate::commands::diagnose::diagnose_text(text, &Default::default()).unwrap();
        assert_eq!(report.joint_sets.len(), 2);
        let page = render(&Page::diagnosis(&report, None), "shared");
        // The report's JSON, read back into the same types, draws the same page.
        let text = serde_json::to_string(&report).unwrap();
        let read = render_json(&text, "shared").unwrap();
        let at = read
            .bytes()
            .zip(page.bytes())
            .take_while(|(a, b)| a == b)
            .count();
        assert_eq!(
            read.len(),
            page.len(),
            "{}",
            &read[at.saturating_sub(200)..(at + 200).min(read.len())]
        );
        assert!(
            read == page,
            "{}",
            &read[at.saturating_sub(200)..(at + 200).min(read.len())]
        );
        assert_eq!(page.matches("<svg class=\"pairs\"").count(), 2);
        assert!(page.contains(&report.joint_sets[0].summary));
        assert!(page.contains("Linked to image2_2 by guards over several sizes"));
    }

    #[test]
    fn an_independent_size_is_drawn_once_and_the_joint_answer_leads() {
        // (h, w) linked, batch b free: two boxes with the same side of b.
        let seg = |lo: i64, hi: i64| json!({"count": hi - lo + 1, "segments": [{"lo": lo, "hi": hi, "modulus": 1, "residues": [0]}]});
        let linked = |index: usize, with: &str, claimed: [i64; 2], partner: serde_json::Value| {
            let mut d = checked("x", index, &format!("L['x'].size()[{index}]"), claimed);
            d["linked_with"] = json!([with]);
            d["accepted"] = json!({"count": 0, "segments": []});
            d["with_some_partner"] = partner;
            d
        };
        let mut j = joint(
            &["x_2", "x_3", "x_0"],
            800,
            48,
            json!([
                [seg(4, 5), seg(4, 4), seg(1, 8)],
                [seg(6, 7), seg(6, 6), seg(1, 8)]
            ]),
        );
        j["sources"] = json!(["L['x'].size()[2]", "L['x'].size()[3]", "L['x'].size()[0]"]);
        j["summary"] = json!("joint summary");
        j["rejected_examples"] = json!([[1, 1, 1]]);
        j["accepted_examples"] = json!([[4, 4, 1], [5, 4, 2]]);
        let r = json!({"dims": [
            linked(0, "L['x'].size()[2]", [1, 8], seg(1, 8)),
            linked(2, "L['x'].size()[0]", [1, 10], seg(4, 7))],
            "guards": [{"guard": "a", "sizes": [], "fate": "joint"}, {"guard": "b", "sizes": [], "fate": "periodic"}],
            "joint": [j]});
        let page = draw(&r, "free");
        assert_eq!(
            page.matches("<svg class=\"pairs\"").count(),
            1,
            "one (h, w) plot"
        );
        assert_eq!(page.matches("class=\"tup\"").count(), 4);
        assert!(page.contains("x_0 is independent of x_2, x_3: every x_0 in 1..8 passes"));
        assert!(page.find("joint summary") < page.find("Accepted sizes"));
        assert!(
            page.contains("the link excludes none of its values"),
            "{page}"
        );
        // Linked sizes' strips mark the values that pass with some partner.
        assert_eq!(page.matches("class=\"acc\"").count(), 8 + 4);
        assert!(page.contains("<summary>1 guard over several sizes"));
        // Tuples that pass beside those that fail, in the joint set's order.
        assert!(page.contains("<li>pass, e.g. (x_2, x_3, x_0) = (4, 4, 1), (5, 4, 2)</li>"));
        assert!(page.contains("<li>fail, e.g. (x_2, x_3, x_0) = (1, 1, 1)</li>"));
    }

    #[test]
    fn a_tied_size_says_so_and_draws_its_partners_set() {
        // b[0] equal to a[0]; a[0]'s set (2..5 of 2..8) drawn on b[0]'s strip through the tie.
        let set = json!({"count": 4, "min": 2, "max": 5,
                         "segments": [{"lo": 2, "hi": 5, "modulus": 1, "residues": [0]}]});
        let mut a = checked("a", 0, "L['a'].size()[0]", [2, 8]);
        a["accepted"] = set.clone();
        let mut b = checked("b", 0, "L['b'].size()[0]", [2, 8]);
        b["tied_to"] = json!({"partner": "a[0]", "source": "L['a'].size()[0]",
                              "relation": "equal to a[0]", "equal": true, "accepted": set});
        let page = draw(&json!({"dims": [a, b], "guards": []}), "tied");
        assert!(
            page.contains("Tied: equal to a[0]. Its answer is a[0]"),
            "{page}"
        );
        assert_eq!(page.matches("class=\"acc\"").count(), 4 + 4, "{page}");
    }

    #[test]
    fn check_reports_read_back_from_json_draw_the_same_page() {
        // What the Python package hands over (a `check` report's JSON, the audit of
        // `dimguard.export`), read back into the contract's types: the CLI's page, byte for byte.
        for file in [
            "relative_position.model.json",
            "raft_small_torchfix.model.json",
            "two_stem_unbounded.pt2",
        ] {
            let path = format!("{}/tests/data/pt2/{file}", env!("CARGO_MANIFEST_DIR"));
            let bytes = std::fs::read(&path).unwrap();
            let program = crate::graph::load_bytes(bytes, &path).unwrap();
            let report = crate::api::check_program(&program, false).unwrap();
            let page = render(&Page::check(&report), file);
            let text = serde_json::to_string(&report).unwrap();
            assert!(render_json(&text, file).unwrap() == page, "{file}");
            assert!(page.contains("Joint answer: linked sizes"), "{file}");
        }
    }

    #[test]
    fn python_diagnose_and_verify_reports_draw() {
        // The Python package's diagnosis carries the merged spec sheet (an object with its
        // code) as `spec`; `verify`'s `joint` holds checks of joint guards, not joint sets.
        let text = include_str!("../../tests/data/forms/two_input.log.txt");
        let report = crate::commands::diagnose::diagnose_text(text, &Default::default()).unwrap();
        let mut v = serde_json::to_value(&report).unwrap();
        v["dynamic_shapes"] = json!("");
        v["spec"] = json!({"roots": [], "entries": [], "code": "h = Dim('h')"});
        let page = draw(&v, "merged");
        assert!(page.contains("<code>h = Dim(&#39;h&#39;)</code>"), "{page}");
        let verify = json!({"sound": false, "unrecognized": [], "guards": [],
            "dims": [{"name": "h", "sound": true, "admitted": 3, "failing": 0, "counterexamples": [],
                      "certificate": "enumeration", "source": null, "spec": "h = Dim('h')", "maximal_spec": null}],
            "joint": [{"guard": "Eq(a, b)", "sound": false, "counterexample": {"a": 1, "b": 2}, "certificate": "z3"}]});
        let page = draw(&verify, "verify");
        assert!(page.contains("The report carries no accepted set for this size."));
        // A joint set that does not read is named.
        let e = render_json(r#"{"joint": [{"boxes": []}]}"#, "x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("report: joint[0] is no joint set: missing field"),
            "{e}"
        );
    }

    #[test]
    fn counts_past_64_bits_are_read_exactly() {
        // An unbounded linked group: its counts saturate at u128::MAX ("more than 3.4e38").
        let text = r#"{"dims": [], "joint": [{"dims": ["a", "b"], "sources": ["a", "b"],
            "claimed": 1180591620717411303424, "accepted": 0, "boxes": [],
            "boxes_complete": true, "summary": "s", "accepted_examples": [], "rejected_examples": [],
            "search": {"points": 0, "periodic_solves": 0, "shared_nodes": 0},
            "undecided": {"count": 340282366920938463463374607431768211455, "reason": "r"}}]}"#;
        let page = render_json(text, "x").unwrap();
        assert!(
            page.contains("accepts 0 of the 1180591620717411303424 claimed"),
            "{page}"
        );
        assert!(page.contains("more than 3.4e38 combinations not decided: r"));
    }

    #[test]
    fn a_report_of_no_known_shape_is_an_error() {
        let e = render_json(r#"{"dims": [{"size": 3}]}"#, "x").unwrap_err();
        assert!(
            e.to_string().starts_with("report: dims[0] is no named set"),
            "{e}"
        );
        let e = render_json(r#"{"dims": [{"input": "x", "index": 0}]}"#, "x").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("report: dims[0] is no check dimension: missing field"),
            "{e}"
        );
        assert!(render_json("[1]", "x").is_err());
    }
}
