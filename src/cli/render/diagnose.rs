//! `dimguard diagnose`: per size its status, guards and suggestions, the data-dependent
//! expressions, the forms read, the lines of code, and a cover's specs.

use super::fates::guard_fates;
use super::joint::joint_sets;
use super::style::{num, progression, segments_text, size, Rows, Style};
use dimguard::solver::analyze::describe;
use dimguard::solver::linked::count_text;
use dimguard::solver::report::{
    CoverSide, DataDependent, DimReport, Feasible, FixCheck, GuardFate, Report, Status, Suggestion,
};
use dimguard::solver::DimSet;
use std::fmt::Write;

/// A diagnosis with the specs of `--cover N` (JSON: the report's fields, then `cover`).
#[derive(serde::Serialize)]
pub struct Covered {
    /// The diagnosis.
    #[serde(flatten)]
    pub report: Report,
    /// The cover, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cover: Option<dimguard::solver::report::CoverReport>,
}

/// [`human`], then the cover's specs.
pub fn covered(c: &Covered, color: bool) -> String {
    let mut out = human(&c.report, color);
    let Some(cover) = &c.cover else {
        return out;
    };
    let _ = writeln!(out, "\nCover: {}", cover.summary);
    for note in &cover.left_out {
        let _ = writeln!(out, "  left as above: {note}");
    }
    for (i, p) in cover.pieces.iter().enumerate() {
        let sides: Vec<String> = p.sides.iter().map(CoverSide::text).collect();
        let _ = writeln!(
            out,
            "\nSpec {} of {}: {} ({} sizes)\n",
            i + 1,
            cover.pieces.len(),
            sides.join(", "),
            p.count
        );
        for line in p.code.lines() {
            let _ = writeln!(out, "    {line}");
        }
    }
    out
}

/// Renders a report for a person.
pub fn human(r: &Report, color: bool) -> String {
    let st = Style { on: color };
    let mut out = String::new();
    let n = r.dims.len();
    let dd = r.data_dependent.len();
    let what = if n == 0 && dd > 0 {
        let mut sizes: Vec<String> = Vec::new();
        for s in r.data_dependent.iter().flat_map(|d| &d.symbols) {
            let t = match &s.source {
                Some(src) if s.name != s.symbol => format!("{} = {src}", s.name),
                Some(src) => format!("{} = {src}", s.symbol),
                None => s.name.clone(),
            };
            if !sizes.contains(&t) {
                sizes.push(t);
            }
        }
        format!(
            "{dd} data-dependent expression{} over {}",
            if dd == 1 { "" } else { "s" },
            sizes.join(", ")
        )
    } else {
        format!("{n} dimension{}", if n == 1 { "" } else { "s" })
    };
    let _ = writeln!(
        out,
        "{} {what}  {}",
        st.bold("dimguard diagnose:"),
        st.dim(&format!("(read as {})", r.form.name()))
    );
    for note in &r.notes {
        let _ = writeln!(out, "{} {note}", st.yellow("note"));
    }
    if let Some(p) = &r.partial {
        let _ = writeln!(
            out,
            "{} this text holds only some of the export's guards ({}): every accepted size is in the sets its guards leave, not every size there is accepted, so no size is claimed accepted and no Dim is pasted. Instead, {}",
            st.red("partial"),
            p.holds,
            p.instead
        );
    }
    for u in &r.unreadable {
        let _ = writeln!(
            out,
            "{} line {}: could not read the guard {}: {}",
            st.red("unread"),
            u.line,
            u.text,
            u.reason
        );
    }
    // Linked sizes: the joint answer first (each size's own lines cannot say it).
    let through = |src: &str| {
        let d = r.dims.iter().find(|d| d.source.as_deref() == Some(src))?;
        let p = d.answer.sides.example_box_side.as_ref()?;
        Some(progression(p.lo, p.hi, p.modulus))
    };
    joint_sets(&mut out, &r.joint_sets, &through, &st);
    let compiled = r.runtime.as_ref().is_some_and(|rt| rt.recompile);
    for d in &r.dims {
        dim(&mut out, d, compiled, &st);
    }
    for [a, b] in &r.equalities {
        let _ = writeln!(
            out,
            "\n{} {a} and {b} must always be equal: use one Dim for both",
            st.yellow("relation")
        );
    }
    for rel in &r.relations {
        let _ = writeln!(
            out,
            "\n{} {} = {}",
            st.yellow("relation"),
            rel.name,
            rel.expr
        );
    }
    for u in &r.unrecognized {
        let _ = writeln!(out, "\n{} not understood: {u}", st.yellow("note"));
    }
    for d in &r.data_dependent {
        data_dependent(&mut out, d, &st);
    }
    lines(&mut out, r, &st);
    missing_bounds(&mut out, r, &st);
    forms_sections(&mut out, r, &st);
    guard_fates(&mut out, &r.guards, "in the text", &st);
    let recompile = r.runtime.as_ref().is_some_and(|rt| rt.recompile);
    let _ = writeln!(
        out,
        "\n{}\n",
        st.bold(if recompile {
            "Paste in front of your torch.compile call:"
        } else {
            "Paste in front of your export call:"
        })
    );
    for line in r.dynamic_shapes.lines() {
        let _ = writeln!(out, "    {line}");
    }
    out
}

/// The sizes of a data-dependent expression's range where one branch holds, in plain terms.
pub(super) fn branch_text(f: Option<&Feasible>, range: [i128; 2], var: &str) -> String {
    let Some(f) = f else {
        return "undecided".into();
    };
    let of = (range[1] - range[0] + 1) as u128;
    if f.count == 0 {
        return format!("none of the {} sizes", count_text(of));
    }
    if f.count == of {
        return format!("all {} sizes", count_text(of));
    }
    let plain = DimSet::from_segments(f.segments.clone())
        .map(|s| describe(&s, range[0], range[1], var))
        .unwrap_or_default();
    format!(
        "{} of {} sizes: {plain}",
        count_text(f.count),
        count_text(of)
    )
}

/// One data-dependent expression: its input size, both branches over the range, the example's
/// branch and the assumption to add.
pub(super) fn data_dependent(out: &mut String, d: &DataDependent, st: &Style) {
    let _ = writeln!(out, "\n{} {}", st.yellow("data-dependent"), d.guard);
    for s in &d.symbols {
        let _ = writeln!(
            out,
            "  {:<11} {}{}{}",
            st.dim("size"),
            s.symbol,
            s.source
                .as_ref()
                .map(|src| format!(" = {src}"))
                .unwrap_or_else(|| " (the text does not say which input size)".into()),
            if s.name != s.symbol && s.source.as_ref().is_none_or(|src| *src != s.name) {
                format!(", written {}", s.name)
            } else {
                String::new()
            }
        );
    }
    if let Some(p) = &d.provenance {
        let mut from = p.origin();
        if let Some(op) = p.op.as_ref().filter(|op| **op != p.function) {
            from.push_str(&format!(" (in torch's {op})"));
        }
        let _ = writeln!(out, "  {:<11} {from}", st.dim("from"));
    }
    if let Some(u) = &d.undecided {
        let _ = writeln!(out, "  {:<11} {u}", st.red("undecided"));
        return;
    }
    match d.range {
        Some(range) => {
            let var = d.symbols.first().map_or("x", |s| s.name.as_str());
            let _ = writeln!(
                out,
                "  {:<11} {}..{}",
                st.dim("range"),
                num(range[0]),
                num(range[1])
            );
            let _ = writeln!(
                out,
                "  {:<11} {}",
                st.dim("true at"),
                branch_text(d.when_true.as_ref(), range, var)
            );
            let _ = writeln!(
                out,
                "  {:<11} {}",
                st.dim("false at"),
                branch_text(d.when_false.as_ref(), range, var)
            );
        }
        // Several sizes: how many combinations of their ranges take each branch.
        None => match &d.holds {
            Some(h) => {
                let _ = writeln!(out, "  {:<11} {h}", st.dim("sizes"));
            }
            None => return,
        },
    }
    if let Some(b) = d.always {
        let _ = writeln!(
            out,
            "  {:<11} {} at every size of the range ({}): assuming it removes nothing; torch cannot decide it, dimguard can",
            st.green("always"),
            if b { "true" } else { "false" },
            match d.certificate.as_str() {
                "enumeration" => "checked size by size",
                "z3" => "proved by Z3",
                _ => "exact periodic method",
            }
        );
    }
    match (d.example, d.example_branch) {
        (None, Some(b)) => {
            let _ = writeln!(
                out,
                "  {:<11} the traced sizes take the {b} branch",
                st.dim("example")
            );
        }
        (Some(x), Some(b)) => {
            let _ = writeln!(out, "  {:<11} {x} takes the {b} branch", st.dim("example"));
        }
        _ if d.always.is_none() => {
            let _ = writeln!(
                out,
                "  {:<11} both branches occur: give the traced size (--example NAME=N) to pick the one the model takes",
                st.dim("example")
            );
        }
        _ => {}
    }
    if let (Some(a), Some(k)) = (&d.assumption, d.removes) {
        let _ = writeln!(
            out,
            "  {:<11} {a}  ({})",
            st.bold("assume"),
            if k == 0 {
                "removes no size".to_string()
            } else {
                format!(
                    "removes {} {}{}",
                    count_text(k),
                    if d.range.is_none() {
                        "combination"
                    } else {
                        "size"
                    },
                    if k == 1 { "" } else { "s" }
                )
            }
        );
    }
}

/// Each size Torch-TensorRT found no max bound for, with the bound the program (`--program`)
/// implies, or that its recorded range has no upper end.
pub(super) fn missing_bounds(out: &mut String, r: &Report, st: &Style) {
    for mb in &r.missing_bounds {
        let Some(p) = &mb.program else { continue };
        let range = match p.range {
            Some([lo, hi]) => format!(
                "its range for {} is {}..{}",
                mb.symbol,
                lo.map_or("-unbounded".to_string(), |v| v.to_string()),
                hi.map_or("unbounded".to_string(), |v| v.to_string())
            ),
            None => format!("it records no range for {}", mb.symbol),
        };
        let verdict = match p.max {
            Some(hi) => format!(
                "max={hi} is a sound bound (the program accepts no larger size): set it as torch._dynamo.mark_dynamic(..., max={hi}) or Dim(..., max={hi})"
            ),
            None => "that range has no upper end, so no sound max bound follows from the program: set the largest size you will run (torch._check(n <= HI) where the model makes it, or Dim(..., max=HI))".to_string(),
        };
        let _ = writeln!(
            out,
            "\n{} line {}: {} ({}) in {}: {range}; {verdict}",
            st.bold("TensorRT max bound:"),
            mb.line,
            mb.source,
            mb.symbol,
            p.path
        );
    }
}

/// Guards over several sizes, a run-time failure explained, and where guards came from when the
/// text does not say.
pub(super) fn forms_sections(out: &mut String, r: &Report, st: &Style) {
    let guards = r.dims.iter().map(|d| d.guards.len()).sum::<usize>() + r.joint.len();
    if r.lines.is_empty() && guards > 0 && r.runtime.as_ref().is_some_and(|rt| rt.recompile) {
        let _ = writeln!(
            out,
            "\n{} torch.compile's, with TORCH_LOGS=\"recompiles,guards\" each with the line of your model after its `#` (dimguard reads the guards, not yet those lines)",
            st.bold("Where the guards come from:")
        );
    } else if r.lines.is_empty() && guards > 0 {
        let _ = writeln!(
            out,
            "\n{} not in this text ({}): run the export with TORCH_LOGS=\"+dynamic\" and give dimguard the log (or a draft_export report) to see the line of your model behind each guard",
            st.bold("Where the guards come from:"),
            r.form.name()
        );
    }
    for j in &r.joint {
        let _ = writeln!(
            out,
            "\n{} {} links {}",
            st.yellow("joint guard"),
            j.text,
            j.sizes.join(", ")
        );
        if let Some(p) = &j.provenance {
            let _ = writeln!(out, "  {:<11} {}", st.dim("from"), p.origin());
        }
        if let Some(u) = r.guards.iter().find(|u| u.guard == j.text) {
            let fate = match u.fate {
                GuardFate::Joint => {
                    "solved jointly (the group's joint set is under linked below)".into()
                }
                GuardFate::Z3 => "proved by Z3 for every combination".into(),
                GuardFate::Relation => "a relation between the sizes, substituted".into(),
                other => format!("{}: {}", other.as_str(), u.reason.as_deref().unwrap_or("?")),
            };
            let _ = writeln!(out, "  {:<11} {fate}", st.dim("fate"));
        }
        for (name, f) in j.accepted.iter().filter(|_| r.joint_sets.is_empty()) {
            let _ = writeln!(
                out,
                "  {:<11} {name}: {} values accepted{}",
                st.dim("accepted"),
                f.count,
                f.min
                    .zip(f.max)
                    .map(|(a, b)| format!(" in {}..{}", num(a), num(b)))
                    .unwrap_or_default()
            );
        }
        if let Some([pass, total]) = j.joint_count.filter(|_| r.joint_sets.is_empty()) {
            let _ = writeln!(
                out,
                "  {:<11} {} of {} combinations pass",
                st.dim("jointly"),
                count_text(pass),
                count_text(total)
            );
        }
        if let Some(u) = &j.undecided {
            let _ = writeln!(out, "  {:<11} {u}", st.red("undecided"));
        }
        let _ = writeln!(out, "  {:<11} {}", st.dim("note"), j.note);
    }
    if let Some(rt) = &r.runtime {
        let _ = writeln!(out, "\n{} {}", st.bold("The program raised on:"), rt.guard);
        for e in &rt.explanation {
            let _ = writeln!(out, "  - {e}");
        }
    }
}

/// The guards grouped by the line of the user's code they come from.
pub(super) fn lines(out: &mut String, r: &Report, st: &Style) {
    if r.lines.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n{}", st.bold("Where the guards come from:"));
    // Lines whose guards remove no value and link no sizes: one line at the end.
    let idle = |l: &&dimguard::solver::report::LineReport| {
        l.links.is_empty() && !l.dims.is_empty() && l.dims.iter().all(|d| d.removes == Some(0))
    };
    for l in r.lines.iter().filter(|l| !idle(l)) {
        let ops = if l.ops.is_empty() {
            String::new()
        } else {
            let described: Vec<String> = l
                .ops
                .iter()
                .map(|op| match dimguard::solver::describe_op(op) {
                    Some(what) => format!("{op}: {what}"),
                    None => op.clone(),
                })
                .collect();
            format!(" ({})", described.join("; "))
        };
        let whose = if l.user {
            ""
        } else {
            " [torch frame: no user frame recorded]"
        };
        let _ = writeln!(
            out,
            "\n  {} in {}{ops}{whose}",
            st.bold(&format!(
                "{}:{}",
                dimguard::solver::short_file(&l.file),
                l.line
            )),
            l.function
        );
        if let Some(c) = &l.code {
            let _ = writeln!(out, "      {}", st.dim(c));
        }
        for d in &l.dims {
            let removes = d
                .removes
                .map_or(String::new(), |n| format!(", removes {n} of {}", d.of));
            let _ = writeln!(out, "      {}: {}{removes}", d.name, d.requires);
        }
        for g in &l.links {
            let _ = writeln!(out, "      links sizes: {g}");
        }
    }
    let folded: Vec<String> = r
        .lines
        .iter()
        .filter(idle)
        .map(|l| format!("{}:{}", dimguard::solver::short_file(&l.file), l.line))
        .collect();
    if !folded.is_empty() {
        let _ = writeln!(
            out,
            "\n  {}",
            st.dim(&format!(
                "{} more line{} recorded guards that remove no size: {}",
                folded.len(),
                if folded.len() == 1 { "" } else { "s" },
                folded.join(", ")
            ))
        );
    }
}

/// One size's rows; `compiled`: the text is torch.compile's (a recompile), whose best range is
/// a `mark_dynamic` range, not a `Dim`.
pub(super) fn dim(out: &mut String, d: &DimReport, compiled: bool, st: &Style) {
    let head = match &d.source {
        Some(s) => format!("{} = {s}", d.name),
        None => d.name.clone(),
    };
    let range = d
        .range
        .map(|[a, b]| format!("range {}..{}", num(a), num(b)))
        .unwrap_or_default();
    let head = format!("{}   {}", st.bold(&head), range);
    let (mut before, mut after) = (Rows::default(), Rows::default());
    before.row("status", &status_detail(d, st));
    let claimed = d.range.map(|[a, b]| (a, b, DimSet::interval(a, b).count()));
    if let Some(f) = &d.answer.accepted {
        if d.status == Status::Constrained {
            after.row("feasible", &segments_text(f));
        }
    }
    guard_rows(&mut after, d, st);
    suggestion_rows(&mut after, d, compiled, st);
    for (label, side) in [
        ("box side", &d.answer.sides.box_side),
        ("traced box", &d.answer.sides.example_box_side),
    ] {
        let Some(b) = side else { continue };
        let cert = format!("[certificate: {}]", b.certificate);
        after.row(
            label,
            &format!(
                "{} {}",
                st.green(&format!(
                    "{} ({} value{})",
                    progression(b.lo, b.hi, b.modulus),
                    b.count,
                    if b.count == 1 { "" } else { "s" }
                )),
                st.dim(&cert)
            ),
        );
    }
    if let Some(p) = &d.padding {
        let mut t = format!(
            "pad x to {}  (at most {} more)",
            p.formula, p.max_for_suggestion
        );
        if let Some(f) = p.max_for_feasible {
            let _ = write!(t, "; to the nearest valid size: at most {f} more");
        }
        after.row("padding", &t);
    }
    if let Some(fx) = &d.torch_fix {
        after.row("torch fix", &torch_fix_text(fx, st));
    }
    if let Some(u) = &d.undecided {
        after.row("undecided", u);
    }
    for a in &d.advice {
        after.row("advice", &wrap(a, 86));
    }
    size(out, &head, before, &d.answer, &d.name, claimed, after, st);
}

/// The `status` row of a size: its status, with how many values of its range pass (every
/// guard, or with some partner for a linked size), or the value it is specialized to.
fn status_detail(d: &DimReport, st: &Style) -> String {
    let status = match d.status {
        Status::Constrained => st.yellow("constrained"),
        Status::Spurious => st.green("spurious"),
        Status::Unsatisfiable => st.red("unsatisfiable"),
        Status::Specialized => st.yellow("specialized"),
        Status::Undecided => st.red("undecided"),
        Status::Unconstrained => "unconstrained".into(),
        Status::Linked => st.yellow("linked"),
    };
    match (&d.answer.accepted, d.range) {
        (_, Some([a, b])) if d.status == Status::Linked => {
            let total = (b - a + 1) as u128;
            format!(
                "{status}: {} of {} values pass with some value of {}",
                d.answer
                    .sides
                    .with_some_partner
                    .as_ref()
                    .map_or(0, |f| f.count),
                total,
                d.answer.linked_with.join(", ")
            )
        }
        (Some(f), Some([a, b])) if d.status != Status::Specialized => {
            let total = (b - a + 1) as u128;
            format!("{status}: {} of {} values pass every guard", f.count, total)
        }
        (_, _) if d.status == Status::Specialized => {
            format!(
                "{status} to {}",
                d.specialized.map_or("?".into(), |v| v.to_string())
            )
        }
        _ => status,
    }
}

/// The rows of a size's guards: each guard shown (its text, what it requires and removes, how
/// it was solved, where it comes from), then one line for the folded guards (those that remove
/// nothing beyond the others).
fn guard_rows(after: &mut Rows, d: &DimReport, st: &Style) {
    let shown: Vec<bool> = d.guards.iter().map(|g| !g.folded).collect();
    for (i, g) in d.guards.iter().enumerate() {
        if !shown[i] {
            continue;
        }
        after.row(&format!("guard {}", i + 1), &g.text);
        let removes = g
            .removes
            .map_or(String::new(), |n| format!("; removes {n} values"));
        let how = match g.period {
            Some(p) => format!("periodic, period {p}"),
            None => g.method.to_string(),
        };
        let red = if g.redundant {
            format!(" {}", st.dim(&redundant_note(d, i)))
        } else {
            String::new()
        };
        after.row(
            "",
            &format!(
                "requires {}{removes}{red}  {}",
                g.requires,
                st.dim(&format!("[{how}]"))
            ),
        );
        if let Some(p) = &g.provenance {
            let op = p.op.as_ref().map_or(String::new(), |o| format!(" ({o})"));
            after.row("", &format!("from {} in {}{op}", p.location(), p.function));
        }
    }
    let folded: Vec<String> = (0..d.guards.len())
        .filter(|i| !shown[*i])
        .map(|i| (i + 1).to_string())
        .collect();
    if !folded.is_empty() {
        after.row(
            "",
            &st.dim(&format!(
                "guard{} {} remove{} {} (--json lists {})",
                if folded.len() == 1 { "" } else { "s" },
                folded.join(", "),
                if folded.len() == 1 { "s" } else { "" },
                if shown.iter().any(|s| *s) {
                    "nothing beyond the guards above"
                } else {
                    "no value of the range"
                },
                if folded.len() == 1 { "it" } else { "them" }
            )),
        );
    }
}

/// Why guard `i` of a size is redundant: implied by guards that require exactly the same
/// values, named so that a guard listed (and needed among those listed) does not read as one to
/// drop.
fn redundant_note(d: &DimReport, i: usize) -> String {
    let twins: Vec<String> = match &d.guards[i].set {
        Some(s) => (0..d.guards.len())
            .filter(|&k| k != i)
            .filter(|&k| d.guards[k].set.as_ref().is_some_and(|t| s.same_members(t)))
            .map(|k| (k + 1).to_string())
            .collect(),
        None => vec![],
    };
    match twins.as_slice() {
        [] => "(redundant)".to_string(),
        [k] => format!("(redundant: guard {k} requires the same)"),
        _ => format!("(redundant: guards {} require the same)", twins.join(", ")),
    }
}

/// The rows of a size's suggestions: the best (a check for an unbacked size, a range for a
/// recompile when `compiled`, else a `Dim`) with its certificate and coverage, then the others.
fn suggestion_rows(after: &mut Rows, d: &DimReport, compiled: bool, st: &Style) {
    let Some(best) = d.answer.suggestions.first() else {
        return;
    };
    let what = if best.count == 1 {
        format!("{} only", best.lo)
    } else {
        values_text(best, Some(&d.name))
    };
    let cert = format!("[certificate: {}]", best.certificate);
    // An unbacked size is bounded in the model (torch._check), not by a Dim.
    after.row(
        if d.is_unbacked() {
            "best check"
        } else if compiled {
            "best range"
        } else {
            "best Dim"
        },
        &format!("{} {}", st.green(&what), st.dim(&cert)),
    );
    if let Some(c) = &d.coverage {
        after.row("", c);
    }
    let others: Vec<String> = d.answer.suggestions[1..]
        .iter()
        .map(|s| values_text(s, None))
        .collect();
    if !others.is_empty() {
        after.row("others", &others.join("\n"));
    }
}

/// A suggestion's values in words: `lo..hi` and how many, after its class `≡ r (mod m)` when
/// it has one. The best one (`name` given) says `name ≡ r (mod m), lo..hi (n values)`; the
/// others, listed below it, `≡ r (mod m) lo..hi (n)`.
fn values_text(s: &Suggestion, name: Option<&str>) -> String {
    let (count, sep) = match name {
        Some(_) => (format!("{} values", s.count), ","),
        None => (s.count.to_string(), ""),
    };
    let values = format!("{}..{} ({count})", num(s.lo), num(s.hi));
    if s.modulus == 1 {
        return values;
    }
    let class = format!("≡ {} (mod {}){sep} {values}", s.residue, s.modulus);
    match name {
        Some(n) => format!("{n} {class}"),
        None => class,
    }
}

/// The `torch fix` row: the fix's code, whether every value it admits passes (or how many
/// fail, with examples), and the range it was judged over when that is not the one asked for.
fn torch_fix_text(fx: &FixCheck, st: &Style) -> String {
    let verdict = if fx.sound {
        st.green(&format!("sound: all {} admitted values pass", fx.admitted))
    } else {
        let ex: Vec<String> = fx.counterexamples.iter().map(|v| v.to_string()).collect();
        st.red(&format!(
            "UNSOUND: {} of {} admitted values fail, e.g. {}",
            fx.failing,
            fx.admitted,
            ex.join(", ")
        ))
    };
    let over = match fx.judged_over {
        Some([lo, hi]) if fx.range_is_default => format!(
            "\njudged over {lo}..{hi}, torch's default range (the text gives none; pass --range)"
        ),
        Some([lo, hi]) if fx.outside_range > 0 => format!(
            "\njudged over {lo}..{hi}, the range asked for ({} admitted values outside it not judged)",
            fx.outside_range
        ),
        _ => String::new(),
    };
    format!("{}\n{verdict}{over}", fx.code)
}

pub(super) fn wrap(s: &str, width: usize) -> String {
    let mut out = String::new();
    let mut line = 0;
    for w in s.split_whitespace() {
        if line > 0 && line + 1 + w.chars().count() > width {
            out.push('\n');
            line = 0;
        } else if line > 0 {
            out.push(' ');
            line += 1;
        }
        out.push_str(w);
        line += w.chars().count();
    }
    out
}
