//! What a run-time failure means: the explanation of a `Guard failed`, an input check or a
//! recompile at the size the user ran, from the report's answers.

use dimguard_readers::forms::Form;
use dimguard_readers::Message;
use dimguard_solver::analyze::Options;
use dimguard_solver::expr::Value;
use dimguard_solver::report::{DimReport, Report, RuntimeReport};
use dimguard_solver::{DimSet, Expr};
use std::collections::BTreeMap;

/// Fills the report's run-time explanation.
pub fn complete(report: &mut Report, msg: &Message, opts: &Options) {
    report.runtime = runtime(report, msg, opts);
}

/// A recompile's cache entries against the size that ran: per size, what each entry accepts
/// (its failed guards solved alone over the size's range) and whether the size that ran is among
/// them: `x.size()[1]: 1024 is accepted by no cached graph; entries accept 128 (0/0), 256 (0/1),
/// 512 (0/2)`.
fn entry_lines(rt: &dimguard_readers::Runtime, report: &Report) -> Vec<String> {
    let mut by_size: Vec<(String, Vec<EntrySet>)> = Vec::new();
    for (k, e) in rt.entries.iter().enumerate() {
        let atoms: Vec<String> = e
            .guards
            .iter()
            .flat_map(|g| g.expr.atoms())
            .map(|a| a.to_string())
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let [a] = atoms.as_slice() else { continue };
        let Some([lo, hi]) = report
            .dims
            .iter()
            .find(|d| d.source.as_deref() == Some(a.as_str()))
            .and_then(|d| d.range)
        else {
            continue;
        };
        let conj = Expr::And(e.guards.iter().map(|g| g.expr.clone()).collect());
        let set = dimguard_solver::engine::solve(
            &conj,
            a,
            &DimSet::interval(lo, hi),
            &dimguard_solver::engine::Limits::default(),
        )
        .set()
        .cloned();
        let id = if e.id.is_empty() {
            format!("#{}", k + 1)
        } else {
            e.id.clone()
        };
        match by_size.iter_mut().find(|(s, _)| s == a) {
            Some((_, v)) => v.push((id, set)),
            None => by_size.push((a.clone(), vec![(id, set)])),
        }
    }
    let mut out = Vec::new();
    for (size, entries) in by_size {
        let list: Vec<String> = entries
            .iter()
            .map(|(id, s)| {
                let what = s.as_ref().map_or("undecided".to_string(), short_set);
                format!("{what} ({id})")
            })
            .collect();
        let ran = rt
            .got
            .filter(|_| rt.expr.atoms().iter().any(|x| **x == *size));
        let head = match ran {
            Some(v) => {
                let by: Vec<&str> = entries
                    .iter()
                    .filter(|(_, s)| s.as_ref().is_some_and(|s| s.contains(v)))
                    .map(|(id, _)| id.as_str())
                    .collect();
                if by.is_empty() {
                    format!("{v} is accepted by no cached graph")
                } else {
                    format!("{v} is accepted by {}", by.join(", "))
                }
            }
            None => "a call runs if any cached graph accepts it".to_string(),
        };
        out.push(format!(
            "{size}: {head}; entries accept {} (their union is the set above)",
            list.join(", ")
        ));
    }
    out
}

/// A cache entry's id and the sizes it accepts (when decided).
type EntrySet = (String, Option<DimSet>);

/// A set in a few words: its members when at most six, else its pieces (`2..64`, `65..`).
pub(super) fn short_set(s: &DimSet) -> String {
    if s.is_empty() {
        return "no size".to_string();
    }
    if s.count() <= 6 {
        return s
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>()
            .join(", ");
    }
    s.segments()
        .iter()
        .map(|g| {
            let hi = if g.hi > dimguard_solver::SIZE_MAX - g.modulus {
                String::new()
            } else {
                g.hi.to_string()
            };
            if g.modulus == 1 {
                format!("{}..{hi}", g.lo)
            } else {
                let r: Vec<String> = g.residues.iter().map(|r| r.to_string()).collect();
                format!("{}..{hi} (mod {}: {})", g.lo, g.modulus, r.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn runtime(report: &Report, msg: &Message, opts: &Options) -> Option<RuntimeReport> {
    let rt = msg.runtime.as_ref()?;
    let atoms: Vec<String> = rt.expr.atoms().iter().map(|a| a.to_string()).collect();
    let dim_of = |a: &str| msg.dims.iter().find(|d| d.var() == a);
    let mut at: Vec<(String, i128)> = Vec::new();
    let mut values: BTreeMap<String, i128> = BTreeMap::new();
    for a in &atoms {
        let name = dim_of(a).map_or(a.clone(), |d| d.name.clone());
        let v = match rt.kind {
            Form::InputCheck => rt.got.or_else(|| opts.example_for(&name)),
            // A recompile's size that ran (`actual 1024`) is the one that failed.
            _ if rt.recompile && atoms.len() == 1 => opts.example_for(&name).or(rt.got),
            _ => opts.example_for(&name),
        };
        if let Some(v) = v {
            at.push((name, v));
            values.insert(a.clone(), v);
        }
    }
    let env = |s: &str| values.get(s).copied();
    let complete = values.len() == atoms.len() && !atoms.is_empty();
    let passes = complete
        .then(|| rt.expr.eval(&env).ok().and_then(|v| v.truth().ok()))
        .flatten();
    let sides = match (&rt.expr, complete) {
        (Expr::Cmp(_, l, r), true) => match (l.eval(&env), r.eval(&env)) {
            (Ok(Value::Num(a)), Ok(Value::Num(b))) => Some([a.to_string(), b.to_string()]),
            _ => None,
        },
        _ => None,
    };
    let one = (atoms.len() == 1).then(|| &atoms[0]);
    let dim_report = one.and_then(|a| {
        let name = dim_of(a).map(|d| d.name.clone())?;
        report.dims.iter().find(|d| d.name == name)
    });
    let feasible = dim_report
        .and_then(|d| d.answer.accepted.as_ref())
        .and_then(|f| DimSet::from_segments(f.segments.clone()).ok());
    let user = at.first().map(|(_, v)| *v);
    let nearest = match (&feasible, user) {
        (Some(f), Some(v)) => [
            v.checked_sub(1).and_then(|w| f.prev_at_most(w)),
            v.checked_add(1).and_then(|w| f.next_at_least(w)),
        ],
        _ => [None, None],
    };
    let mut explanation = Vec::new();
    let at_text = at
        .iter()
        .map(|(n, v)| format!("{n} = {v}"))
        .collect::<Vec<_>>()
        .join(", ");
    match (rt.kind, passes) {
        (Form::InputCheck, _) => {
            explanation.push(format!(
                "this is torch's input check, not a guard of the model: the program was exported for {} (its range or a static size){}",
                rt.text,
                user.map(|v| format!(", and received {v}")).unwrap_or_default()
            ));
            explanation.push(
                "to accept that size, export again with a Dim whose range includes it (dimguard diagnoses the new export's errors), \
                 then run `dimguard check` on the saved program to see exactly which sizes it accepts; or pad/crop the input into the range"
                    .into(),
            );
        }
        (_, Some(false)) => {
            let sides = sides
                .as_ref()
                .map(|[a, b]| format!(" (left side {a}, right side {b})"))
                .unwrap_or_default();
            explanation.push(format!(
                "at {at_text} the guard is false{sides}: {}",
                if rt.recompile {
                    "the compiled graph runs only at sizes that pass every guard it holds"
                } else {
                    "the exported program only runs at sizes that pass every guard it recorded"
                }
            ));
        }
        (_, Some(true)) => explanation.push(format!(
            "at {at_text} this guard holds: the size that failed was another one (pass it with --example NAME=N)"
        )),
        (_, None) => explanation.push(
            "give the size you ran with --example NAME=N (or N) to see why it fails".into(),
        ),
    }
    match nearest {
        [None, None] => {}
        [lo, hi] => explanation.push(format!(
            "nearest sizes that pass: {}",
            [
                lo.map(|v| format!("{v} below")),
                hi.map(|v| format!("{v} above"))
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
        )),
    }
    if rt.recompile && atoms.is_empty() {
        // Entries that differ only in values that are not sizes.
        explanation.clear();
        explanation.push(
            "the cached graphs failed only on guards that are not tensor sizes (see the notes): no size of the call is known to be rejected; torch compiles a graph per value of such an argument".into(),
        );
    } else if rt.recompile {
        explanation.extend(recompile_lines(rt, &atoms, report));
    } else if rt.kind == Form::GuardFailed {
        explanation.extend(guard_failed_lines(dim_report));
    }
    Some(RuntimeReport {
        kind: rt.kind,
        guard: rt.text.clone(),
        at,
        passes,
        sides,
        nearest,
        explanation,
        recompile: rt.recompile,
    })
}

/// A recompile's explanation past the first line: what each cache entry accepts, and how to
/// keep one graph (`mark_dynamic` of the sizes `atoms` names, or `dynamic=True`).
fn recompile_lines(
    rt: &dimguard_readers::Runtime,
    atoms: &[String],
    report: &Report,
) -> Vec<String> {
    let mut explanation = entry_lines(rt, report);
    // torch.compile: a size that fails a guard gets another graph, not an error.
    let marks: Vec<String> = atoms
        .iter()
        .filter_map(|a| dimguard_solver::python::input_dim(a))
        .map(|(x, i)| dimguard_solver::python::mark_dynamic(&x, i, None, None))
        .collect();
    explanation.push(
        "torch.compile compiled that graph for the sizes above only; at a size outside them it compiles another graph (a recompile, an error only past torch._dynamo.config.recompile_limit)"
            .into(),
    );
    explanation.push(format!(
        "to keep one graph over the sizes you run, mark them dynamic before the first call ({}, as the block at the end does), or compile with dynamic=True; a guard that still splits the range comes from a branch of the model on the size",
        if marks.is_empty() {
            "torch._dynamo.mark_dynamic".to_string()
        } else {
            marks.join("; ")
        }
    ));
    explanation
}

/// A `Guard failed`'s explanation past the first line: torch reports one guard only, and what
/// to export instead (from the failing size's first suggestion, `dim_report`'s when the guard
/// names one size).
fn guard_failed_lines(dim_report: Option<&DimReport>) -> Vec<String> {
    let mut explanation = vec![
        "torch reports only the first guard that failed; the program may hold more: `dimguard check` on the saved program lists every guard and the sizes it really accepts"
            .into(),
    ];
    match dim_report.and_then(|d| Some((d, d.answer.suggestions.first()?))) {
        Some((d, s)) if d.is_unbacked() => explanation.push(format!(
            "{} is a data-dependent (unbacked) size, made in the model (.item(), nonzero, ...), not an input's dimension: no export spec bounds it. The program holds it to {}, and the data gave a value outside: keep the data there, or find what bounds {} in the model (a torch._check, a size it is compared with) and export again with the bound the data needs",
            d.name,
            s.code.replace('\n', ", "),
            d.name
        )),
        Some((_, s)) => explanation.push(format!(
            "export with a spec that only admits passing sizes, so the program never raises: {}",
            s.code.replace('\n', "; ")
        )),
        None => {}
    }
    explanation
}
