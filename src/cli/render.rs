//! Human-readable output of `dimguard diagnose`: aligned, colored on a terminal, ending with the
//! code to paste.

use dimguard::solver::analyze::describe;
use dimguard::solver::linked::count_text;
use dimguard::solver::report::{
    CheckReport, DataDependent, DimReport, Feasible, GuardFate, GuardUse, JointReport, Report,
    RuntimeKind, Status, TiedTo, VerifyReport,
};
use dimguard::solver::DimSet;
use std::fmt::Write;

struct Style {
    on: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    fn green(&self, s: &str) -> String {
        self.paint("32", s)
    }
    fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.paint("33", s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
}

fn num(v: i128) -> String {
    if v == i64::MAX as i128 {
        "unbounded".into()
    } else {
        v.to_string()
    }
}

/// A set's first four segments (`96..296 mod 8 ∈ {0, 5, 6, 7}`), and how many more.
fn segments_text(f: &Feasible) -> String {
    let segs: Vec<String> = f
        .segments
        .iter()
        .take(4)
        .map(|s| {
            let pat = if s.modulus == 1 {
                String::new()
            } else {
                let r: Vec<String> = s.residues.iter().map(|r| r.to_string()).collect();
                format!(" mod {} ∈ {{{}}}", s.modulus, r.join(", "))
            };
            format!("{}..{}{pat}", num(s.lo), num(s.hi))
        })
        .collect();
    let more = if f.segments.len() > 4 {
        format!(" (+{} more)", f.segments.len() - 4)
    } else {
        String::new()
    };
    format!("{}{more}", segs.join(", "))
}

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
        let sides: Vec<String> = p
            .sides
            .iter()
            .map(|s| {
                let step = if s.modulus > 1 {
                    format!(" ≡ {} (mod {})", s.residue, s.modulus)
                } else {
                    String::new()
                };
                format!("{} in {}..{}{step}", s.name, s.lo, s.hi)
            })
            .collect();
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
        let p = d.sides.example_box_side.as_ref()?;
        Some(progression(p.lo, p.hi, p.modulus))
    };
    joint_sets(&mut out, &r.joint_sets, &through, &st);
    for d in &r.dims {
        out.push('\n');
        dim(&mut out, d, &st);
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
fn branch_text(f: Option<&Feasible>, range: [i128; 2], var: &str) -> String {
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
fn data_dependent(out: &mut String, d: &DataDependent, st: &Style) {
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
fn missing_bounds(out: &mut String, r: &Report, st: &Style) {
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
fn forms_sections(out: &mut String, r: &Report, st: &Style) {
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
fn lines(out: &mut String, r: &Report, st: &Style) {
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

fn row(out: &mut String, label: &str, text: &str, st: &Style) {
    let mut lines = text.lines();
    let _ = writeln!(
        out,
        "  {:<11} {}",
        st.dim(label),
        lines.next().unwrap_or("")
    );
    for l in lines {
        let _ = writeln!(out, "  {:<11} {l}", "");
    }
}

/// A tied size's line: its tie, and its set (its partner's through the tie) in `v`'s terms,
/// counted within `range` when known: "in the block of 4 values holding a_2: 4611686018427387899
/// of 9223372036854775806 pass (a_2's set: b_2 mod 8 ∈ {0, 5, 6, 7} and b_2 >= 13)".
/// `claimed`: the sizes the size may take, when known (its range, and how many sizes that is).
fn tied_row(
    out: &mut String,
    t: &TiedTo,
    v: &str,
    claimed: Option<(i128, i128, u128)>,
    st: &Style,
) {
    let text = match t.accepted.as_ref().map(|f| (f, f.set())) {
        Some((f, Ok(set))) => {
            let (lo, hi) = claimed
                .map(|(lo, hi, _)| (lo, hi))
                .or(set.min().zip(set.max()))
                .unwrap_or_default();
            let total = claimed.map(|(_, _, n)| n);
            let n = match total {
                Some(t) if t == f.count => format!("all {} of its values pass", count_text(t)),
                Some(t) => format!("{} of {} pass", count_text(f.count), count_text(t)),
                None => format!("{} pass", count_text(f.count)),
            };
            let what = match describe(&set, lo, hi, v) {
                w if w == "always true on the range" => String::new(),
                w => format!(": {w}"),
            };
            format!("{}: {n} ({}'s set{what})", t.relation, t.partner)
        }
        _ => format!(
            "{}: its set is {}'s, which is undecided",
            t.relation, t.partner
        ),
    };
    row(out, "tied", &text, st);
}

fn dim(out: &mut String, d: &DimReport, st: &Style) {
    let head = match &d.source {
        Some(s) => format!("{} = {s}", d.name),
        None => d.name.clone(),
    };
    let range = d
        .range
        .map(|[a, b]| format!("range {}..{}", num(a), num(b)))
        .unwrap_or_default();
    let _ = writeln!(out, "{}   {}", st.bold(&head), range);
    let status = match d.status {
        Status::Constrained => st.yellow("constrained"),
        Status::Spurious => st.green("spurious"),
        Status::Unsatisfiable => st.red("unsatisfiable"),
        Status::Specialized => st.yellow("specialized"),
        Status::Undecided => st.red("undecided"),
        Status::Unconstrained => "unconstrained".into(),
        Status::Linked => st.yellow("linked"),
    };
    let detail = match (&d.feasible, d.range) {
        (_, Some([a, b])) if d.status == Status::Linked => {
            let total = (b - a + 1) as u128;
            format!(
                "{status}: {} of {} values pass with some value of {}",
                d.sides.with_some_partner.as_ref().map_or(0, |f| f.count),
                total,
                d.linked_with.join(", ")
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
    };
    row(out, "status", &detail, st);
    if let Some(t) = &d.sides.tied_to {
        let claimed = d.range.map(|[a, b]| (a, b, DimSet::interval(a, b).count()));
        tied_row(out, t, &d.name, claimed, st);
    }
    if let Some(f) = &d.feasible {
        if d.status == Status::Constrained {
            row(out, "feasible", &segments_text(f), st);
        }
    }
    let shown: Vec<bool> = d.guards.iter().map(|g| !g.folded).collect();
    for (i, g) in d.guards.iter().enumerate() {
        if !shown[i] {
            continue;
        }
        row(out, &format!("guard {}", i + 1), &g.text, st);
        let removes = g
            .removes
            .map_or(String::new(), |n| format!("; removes {n} values"));
        let how = match g.period {
            Some(p) => format!("periodic, period {p}"),
            None => g.method.to_string(),
        };
        let red = if g.redundant {
            // Implied by guards that require exactly the same values: say which, so that a
            // guard listed (and needed among those listed) does not read as one to drop.
            let twins: Vec<String> = match &g.set {
                Some(s) => (0..d.guards.len())
                    .filter(|&k| k != i)
                    .filter(|&k| d.guards[k].set.as_ref().is_some_and(|t| s.same_members(t)))
                    .map(|k| (k + 1).to_string())
                    .collect(),
                None => vec![],
            };
            let why = match twins.as_slice() {
                [] => "(redundant)".to_string(),
                [k] => format!("(redundant: guard {k} requires the same)"),
                _ => format!("(redundant: guards {} require the same)", twins.join(", ")),
            };
            format!(" {}", st.dim(&why))
        } else {
            String::new()
        };
        row(
            out,
            "",
            &format!(
                "requires {}{removes}{red}  {}",
                g.requires,
                st.dim(&format!("[{how}]"))
            ),
            st,
        );
        if let Some(p) = &g.provenance {
            let op = p.op.as_ref().map_or(String::new(), |o| format!(" ({o})"));
            row(
                out,
                "",
                &format!("from {} in {}{op}", p.location(), p.function),
                st,
            );
        }
    }
    let folded: Vec<String> = (0..d.guards.len())
        .filter(|i| !shown[*i])
        .map(|i| (i + 1).to_string())
        .collect();
    if !folded.is_empty() {
        row(
            out,
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
            st,
        );
    }
    if let Some(best) = d.suggestions.first() {
        let what = if best.count == 1 {
            format!("{} only", best.lo)
        } else if best.modulus == 1 {
            format!("{}..{} ({} values)", num(best.lo), num(best.hi), best.count)
        } else {
            format!(
                "{} ≡ {} (mod {}), {}..{} ({} values)",
                d.name,
                best.residue,
                best.modulus,
                num(best.lo),
                num(best.hi),
                best.count
            )
        };
        let cert = format!("[certificate: {}]", best.certificate);
        // An unbacked size is bounded in the model (torch._check), not by a Dim.
        row(
            out,
            if d.is_unbacked() {
                "best check"
            } else {
                "best Dim"
            },
            &format!("{} {}", st.green(&what), st.dim(&cert)),
            st,
        );
        if let Some(c) = &d.coverage {
            row(out, "", c, st);
        }
        let others: Vec<String> = d.suggestions[1..]
            .iter()
            .map(|s| {
                if s.modulus == 1 {
                    format!("{}..{} ({})", num(s.lo), num(s.hi), s.count)
                } else {
                    format!(
                        "≡ {} (mod {}) {}..{} ({})",
                        s.residue,
                        s.modulus,
                        num(s.lo),
                        num(s.hi),
                        s.count
                    )
                }
            })
            .collect();
        if !others.is_empty() {
            row(out, "others", &others.join("\n"), st);
        }
    }
    for (label, side) in [
        ("box side", &d.sides.box_side),
        ("traced box", &d.sides.example_box_side),
    ] {
        let Some(b) = side else { continue };
        let cert = format!("[certificate: {}]", b.certificate);
        row(
            out,
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
            st,
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
        row(out, "padding", &t, st);
    }
    if let Some(fx) = &d.torch_fix {
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
        row(
            out,
            "torch fix",
            &format!("{}\n{verdict}{over}", fx.code),
            st,
        );
    }
    if let Some(u) = &d.undecided {
        row(out, "undecided", u, st);
    }
    for a in &d.advice {
        row(out, "advice", &wrap(a, 86), st);
    }
}

fn wrap(s: &str, width: usize) -> String {
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
        out.push('\n');
        let head = match &d.source {
            Some(s) if s != &d.name => format!("{} = {s}", d.name),
            _ => d.name.clone(),
        };
        let _ = writeln!(out, "{}", st.bold(&head));
        row(&mut out, "spec", &d.spec, &st);
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
        row(
            &mut out,
            "verdict",
            &format!(
                "{v} {}",
                st.dim(&format!("[certificate: {}]", d.certificate))
            ),
            &st,
        );
        if !d.counterexamples.is_empty() {
            let ex: Vec<String> = d.counterexamples.iter().map(|v| v.to_string()).collect();
            row(&mut out, "fails at", &ex.join(", "), &st);
        }
        if let Some(t) = &d.tied_to {
            tied_row(&mut out, t, &d.name, None, &st);
        }
        if let Some(m) = &d.maximal_spec {
            row(&mut out, "maximal", m, &st);
        }
        if let Some(n) = &d.note {
            row(&mut out, "note", n, &st);
        }
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
        let p = d.sides.example_box_side.as_ref()?;
        Some(progression(p.lo, p.hi, p.modulus))
    };
    joint_sets(&mut out, &r.joint, &through, &st);
    for d in &r.dims {
        out.push('\n');
        let _ = writeln!(
            out,
            "{}   {} = {}",
            st.bold(&format!("{}[{}]", d.input, d.index)),
            d.source,
            d.expr
        );
        let claims = match (d.claimed.min, d.claimed.max) {
            (Some(a), Some(b)) => format!("{} sizes in {}..{}", d.claimed.count, num(a), num(b)),
            _ => "nothing".into(),
        };
        row(&mut out, "claims", &claims, &st);
        let unsure = d.undecided.as_ref().map_or(0, |u| u.count);
        match &d.accepted {
            Some(a) => {
                let rejected = d.claimed.count.saturating_sub(a.count + unsure);
                // Really linked: some size passes with one partner and fails with another.
                let some = d
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
                let free = some.is_some() && d.sides.link_excludes_none == Some(true);
                let verdict = if let Some(v) = &d.sides.defined_values {
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
                    let n = d.sides.with_some_partner.as_ref().map_or(0, |f| f.count);
                    let ex: Vec<String> =
                        d.rejected_examples.iter().map(|v| v.to_string()).collect();
                    let each = "each with every accepted value of the sizes it is linked to";
                    if n == d.claimed.count {
                        st.green(&format!("all {n} claimed sizes, {each}"))
                    } else {
                        st.red(&format!(
                            "{n} of them, {each}; {} fail with every partner, e.g. {}",
                            d.claimed.count.saturating_sub(n + unsure),
                            ex.join(", ")
                        ))
                    }
                } else if rejected == 0 && unsure == 0 && some.is_none() {
                    st.green(&format!("all {} claimed sizes", a.count))
                } else if rejected == 0 && some.is_none() {
                    st.yellow(&format!("{} of them proven", a.count))
                } else {
                    let ex: Vec<String> =
                        d.rejected_examples.iter().map(|v| v.to_string()).collect();
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
                        st.red(&format!(
                            "{head}; {rejected} {fail}, e.g. {}",
                            ex.join(", ")
                        ))
                    }
                };
                row(&mut out, "accepts", &verdict, &st);
            }
            None => row(&mut out, "accepts", &st.yellow("undecided"), &st),
        }
        if let Some(u) = &d.undecided {
            row(
                &mut out,
                "undecided",
                &st.yellow(&format!("{} sizes: {}", u.count, u.reason)),
                &st,
            );
        }
        let v = format!("{}[{}]", d.input, d.index);
        if let Some(t) = &d.sides.tied_to {
            let claimed = d.claimed.min.zip(d.claimed.max);
            let claimed = claimed.map(|(a, b)| (a, b, d.claimed.count));
            tied_row(&mut out, t, &v, claimed, &st);
        }
        if d.same_as.is_some() {
            // Equal to another input's size (one symbol): the tie says it all.
            continue;
        }
        if !d.linked_with.is_empty() {
            let every = match (&d.sides.with_some_partner, &d.accepted) {
                (Some(_), _) if d.sides.link_excludes_none == Some(true) => {
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
            row(
                &mut out,
                "linked",
                &format!("with {}{every}", d.linked_with.join(", ")),
                &st,
            );
        }
        // The size's line of the corrected spec: its side of the box through the traced sizes,
        // else of the shared Dim, else of the largest box.
        if let Some(s) = d
            .sides
            .example_box_side
            .as_ref()
            .or(d.sides.shared_side.as_ref())
            .or(d.sides.box_side.as_ref())
            .or(d.suggestions.first())
        {
            row(&mut out, "spec", &s.code, &st);
        }
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

/// Every joint set (`check`'s `joint`, `diagnose`'s and `verify`'s `joint_sets`): the answer in
/// a sentence, the accepted combinations, the largest sound box, real failing tuples.
/// A set in a few words: `224..227`, `64..512 step 32`, or its first segments.
fn set_words(s: &DimSet) -> String {
    match s.as_progression() {
        Some(p) => progression(p.lo, p.hi, p.modulus),
        None => segments_text(&Feasible::from(s)),
    }
}

/// `side(source)`: a size's side of the sound box through the traced sizes, when the spec uses
/// one.
fn joint_sets(
    out: &mut String,
    joints: &[JointReport],
    side: &dyn Fn(&str) -> Option<String>,
    st: &Style,
) {
    for j in joints {
        out.push('\n');
        let _ = writeln!(out, "{} {}", st.bold("linked:"), j.dims.join(", "));
        row(out, "answer", &j.summary, st);
        // With a size the others define, the count is of the others' tuples: an upper bound.
        let at_most = if j.defined.is_empty() { "" } else { "at most " };
        row(
            out,
            "accepts",
            &format!(
                "{at_most}{} of the {} claimed combinations ({} box{}{})",
                count_text(j.accepted),
                count_text(j.claimed),
                j.boxes.len(),
                if j.boxes.len() == 1 { "" } else { "es" },
                if j.boxes_complete { "" } else { " or more" }
            ),
            st,
        );
        if let Some(b) = &j.largest_box {
            let sides: Vec<String> = b
                .sides
                .iter()
                .zip(&j.dims)
                .map(|(s, n)| format!("{n} {}", progression(s.lo, s.hi, s.modulus)))
                .collect();
            row(
                out,
                "largest box",
                &format!(
                    "{} ({} combination{}{})",
                    sides.join(", "),
                    count_text(b.count),
                    if b.count == 1 { "" } else { "s" },
                    if b.maximal { ", maximal" } else { "" }
                ),
                st,
            );
        }
        let through: Vec<String> = j
            .dims
            .iter()
            .zip(&j.sources)
            .filter_map(|(n, src)| side(src).map(|t| format!("{n} {t}")))
            .collect();
        if through.len() == j.dims.len() {
            row(
                out,
                "spec box",
                &format!(
                    "{} (holds the traced sizes; the corrected spec uses it)",
                    through.join(", ")
                ),
                st,
            );
        }
        if !j.equal.is_empty() {
            let pairs: Vec<String> = j.equal.iter().map(|[b, a]| format!("{b} = {a}")).collect();
            row(
                out,
                "equal",
                &format!(
                    "{} in every accepted combination (the program fails otherwise); the answer above is over the others, and the spec writes each as its partner",
                    pairs.join(", ")
                ),
                st,
            );
        }
        if let Some(boxes) = dimguard::api::joint_boxes(j) {
            let free = dimguard::api::independent(&boxes);
            if free.iter().all(|f| *f) && !j.equal.is_empty() {
                row(
                    out,
                    "link",
                    "with those equal, every combination of the others' accepted values passes",
                    st,
                );
            } else if free.iter().all(|f| *f) {
                row(
                    out,
                    "link",
                    "excludes nothing: every combination of the sizes' accepted values passes",
                    st,
                );
            } else {
                for (k, n) in j.dims.iter().enumerate().filter(|(k, _)| free[*k]) {
                    let others: Vec<&str> = j
                        .dims
                        .iter()
                        .enumerate()
                        .filter(|(o, _)| *o != k)
                        .map(|(_, o)| o.as_str())
                        .collect();
                    row(
                        out,
                        "free",
                        &format!(
                            "{n}: every {n} in {} passes with every accepted ({}); the link excludes none of its values",
                            set_words(&boxes[0][k]),
                            others.join(", ")
                        ),
                        st,
                    );
                }
                // The grid of the other sizes, each box once (at most 8).
                let keep: Vec<usize> = (0..j.dims.len()).filter(|k| !free[*k]).collect();
                let mut grid: Vec<String> = Vec::new();
                for b in &boxes {
                    let t = keep
                        .iter()
                        .map(|&k| format!("{} {}", j.dims[k], set_words(&b[k])))
                        .collect::<Vec<_>>()
                        .join(" × ");
                    if !grid.contains(&t) {
                        grid.push(t);
                    }
                }
                if grid.len() <= 8 {
                    row(out, "boxes", &grid.join("\n"), st);
                }
            }
        }
        // Concrete tuples of the joint set and outside it (the failing ones re-checked against
        // every guard). The tuples name their order (the summary may list the sizes otherwise).
        // A size the others define comes last in the examples.
        let names: Vec<&str> = j
            .dims
            .iter()
            .map(String::as_str)
            .chain(j.defined.iter().map(|d| d.dim.as_str()))
            .collect();
        let order = format!("({})", names.join(", "));
        let tuples = |ts: &[Vec<i128>]| -> String {
            let ex: Vec<String> = ts
                .iter()
                .map(|t| {
                    let v: Vec<String> = t.iter().map(|x| x.to_string()).collect();
                    format!("({})", v.join(", "))
                })
                .collect();
            format!("{order} e.g. {}", ex.join(", "))
        };
        if !j.accepted_examples.is_empty() {
            row(out, "pass", &st.green(&tuples(&j.accepted_examples)), st);
        }
        if !j.rejected_examples.is_empty() {
            row(out, "fail", &st.red(&tuples(&j.rejected_examples)), st);
        }
        if let Some(u) = &j.undecided {
            row(
                out,
                "undecided",
                &st.yellow(&format!(
                    "{} combination{}: {}",
                    count_text(u.count),
                    if u.count == 1 { "" } else { "s" },
                    u.reason
                )),
                st,
            );
        }
    }
}

/// `check`'s run-time conditions: counts beside the guards', then each one that rejects a claimed
/// size or is undecided, in the inputs' names, with the user's line.
fn runtime_checks(out: &mut String, r: &CheckReport, st: &Style) {
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
                "rejects {k} claimed size{}, e.g. {}",
                if k == 1 { "" } else { "s" },
                c.rejected_examples
                    .iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
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
fn user_line(trace: &str) -> Option<String> {
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

/// What became of every guard (`guards` of `check`, `diagnose` and `verify`): counts per fate,
/// then the undecided ones grouped by reason.
fn guard_fates(out: &mut String, guards: &[GuardUse], place: &str, st: &Style) {
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

/// `lo..hi`, `lo..hi step m`, or the single value.
fn progression(lo: i128, hi: i128, m: i128) -> String {
    if lo == hi {
        lo.to_string()
    } else if m == 1 {
        format!("{lo}..{hi}")
    } else {
        format!("{lo}..{hi} step {m}")
    }
}

/// A long expression shortened in the middle: its head and tail with the number of characters
/// left out.
pub fn abbreviate(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    let keep = max / 2;
    let head: String = chars[..keep].iter().collect();
    let tail: String = chars[chars.len() - keep..].iter().collect();
    format!("{head} …({} characters)… {tail}", chars.len() - 2 * keep)
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
