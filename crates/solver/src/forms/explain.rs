//! The parts of a report that say where guards came from and what a run-time failure means:
//! guards grouped by origin, guards over several sizes, and the explanation of a `Guard failed`
//! or input check at the size the user ran.

use crate::diagnose::{example_for, Options};
use crate::engine::Limits;
use crate::expr::Value;
use crate::forms::Form;
use crate::joint;
use crate::message::{DimEntry, Message, DEFAULT_MIN, SIZE_MAX};
use crate::report::{DimReport, Feasible, JointGuard, LinkedGroup, Report, RuntimeReport, Status};
use crate::types::{DimSet, Expr};
use std::collections::BTreeMap;

/// Fills the report's origins, joint guards and run-time explanation.
pub fn complete(report: &mut Report, msg: &Message, opts: &Options) {
    report.runtime = runtime(report, msg, opts);
}

fn var_of(d: &DimEntry) -> String {
    d.source.clone().unwrap_or_else(|| d.name.clone())
}

/// Every guard over several sizes, with what today's joint solver says about its group.
pub fn joint_guards(linked: &[LinkedGroup], msg: &Message, limits: &Limits) -> Vec<JointGuard> {
    if msg.joint.is_empty() {
        return vec![];
    }
    let name_of = |v: &str| {
        msg.dims
            .iter()
            .find(|d| var_of(d) == v)
            .map_or(v.to_string(), |d| d.name.clone())
    };
    let ranges: BTreeMap<String, (i128, i128)> = msg
        .dims
        .iter()
        .map(|d| (var_of(d), d.range.unwrap_or((DEFAULT_MIN, SIZE_MAX))))
        .collect();
    let all: Vec<Expr> = msg
        .dims
        .iter()
        .flat_map(|d| d.guards.iter().map(|g| g.expr.clone()))
        .chain(msg.joint.iter().map(|g| g.expr.clone()))
        .collect();
    let sizes: Vec<String> = msg.dims.iter().map(var_of).collect();
    let groups = joint::group(&all, &sizes);
    msg.joint
        .iter()
        .map(|g| {
            let atoms: Vec<String> = g.expr.atoms().iter().map(|a| a.to_string()).collect();
            let mut out = JointGuard {
                text: g.text.clone(),
                sizes: atoms.iter().map(|a| name_of(a)).collect(),
                provenance: g.provenance.clone(),
                accepted: vec![],
                joint_count: None,
                undecided: None,
                note: String::new(),
            };
            let grp = groups
                .iter()
                .find(|grp| grp.members.iter().any(|m| atoms.contains(&m.name)));
            match grp {
                Some(grp) if grp.roots.len() == 1 => {
                    let root = name_of(&grp.roots[0]);
                    out.note = match linked.iter().find(|l| l.root == root) {
                        Some(_) => format!("solved with the linked sizes of {root} (see linked)"),
                        None => format!("its sizes reduce to {root}"),
                    };
                }
                Some(grp) => {
                    let solved = joint::solve_group(grp, &ranges, limits);
                    out.accepted = grp
                        .roots
                        .iter()
                        .filter_map(|r| {
                            solved
                                .accepted
                                .get(r)
                                .map(|s| (name_of(r), Feasible::from(s)))
                        })
                        .collect();
                    out.joint_count = solved.joint_count.map(|(a, b)| [a, b]);
                    out.undecided = solved.undecided.map(|u| u.to_string());
                    out.note = format!(
                        "links {} independent sizes: each accepted set holds the values that pass for every value of the others",
                        grp.roots.len()
                    );
                }
                None => out.note = "not grouped".into(),
            }
            out
        })
        .collect()
}

/// A size linked to others by a guard that its own answer does not imply (some combination of
/// the sizes' one-size answers fails it) cannot take a `Dim` of its own: its report says so and
/// offers no suggestion, so no unsound spec is printed.
pub fn mark_linked(dims: &mut [DimReport], joint: &[JointGuard]) {
    for j in joint {
        let why = match (&j.undecided, j.joint_count) {
            (Some(u), _) => format!("linked to other sizes by {}, undecided: {u}", j.text),
            (None, Some([pass, total])) if pass < total => format!(
                "linked to {} by {}: only {pass} of {total} combinations of their one-size answers pass, \
                 so separate Dims are not sound (see the joint guard)",
                j.sizes.join(", "),
                j.text
            ),
            _ => continue,
        };
        for d in dims.iter_mut().filter(|d| j.sizes.contains(&d.name)) {
            d.status = Status::Undecided;
            d.suggestions.clear();
            d.coverage = None;
            d.padding = None;
            d.undecided.get_or_insert_with(|| why.clone());
            // The one-size advice ("every size passes") no longer holds.
            d.advice = vec![why.clone()];
        }
    }
}

/// What a specialization's reason means, and the guard behind it when the text has one.
pub fn specialization_reason(name: &str, v: i128, why: &str, d: &DimEntry) -> String {
    let meaning = match why {
        "range_refined_to_singleton" => {
            format!("a guard left {name} only one possible value ({v}) in its range")
        }
        "solve" => format!("torch solved a guard for {name} = {v}"),
        other => format!("torch replaced {name} by {v} ({other})"),
    };
    let behind = d
        .guards
        .iter()
        .find(|g| g.expr.atoms().len() == 1)
        .map(|g| {
            let at = g
                .provenance
                .as_ref()
                .map(|p| format!(", from {}", p.origin()))
                .unwrap_or_default();
            format!(": the guard {}{at}", g.text)
        })
        .unwrap_or_default();
    format!("why {name} is {v}: {meaning} (torch says `{why}`){behind}")
}

fn runtime(report: &Report, msg: &Message, opts: &Options) -> Option<RuntimeReport> {
    let rt = msg.runtime.as_ref()?;
    let atoms: Vec<String> = rt.expr.atoms().iter().map(|a| a.to_string()).collect();
    let dim_of = |a: &str| msg.dims.iter().find(|d| var_of(d) == a);
    let mut at: Vec<(String, i128)> = Vec::new();
    let mut values: BTreeMap<String, i128> = BTreeMap::new();
    for a in &atoms {
        let name = dim_of(a).map_or(a.clone(), |d| d.name.clone());
        let v = match rt.kind {
            Form::InputCheck => rt.got.or_else(|| example_for(opts, &name)),
            _ => example_for(opts, &name),
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
        .and_then(|d| d.feasible.as_ref())
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
                "at {at_text} the guard is false{sides}: the exported program only runs at sizes that pass every guard it recorded"
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
    if rt.kind == Form::GuardFailed {
        explanation.push(
            "torch reports only the first guard that failed; the program may hold more: `dimguard check` on the saved program lists every guard and the sizes it really accepts"
                .into(),
        );
        if let Some(s) = dim_report.and_then(|d| d.suggestions.first()) {
            explanation.push(format!(
                "export with a spec that only admits passing sizes, so the program never raises: {}",
                s.code.replace('\n', "; ")
            ));
        }
    }
    Some(RuntimeReport {
        kind: rt.kind,
        guard: rt.text.clone(),
        at,
        passes,
        sides,
        nearest,
        explanation,
    })
}
