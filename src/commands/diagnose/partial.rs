//! A text that holds only some of the export's guards ([`Message::partial`]: a solver crash, a
//! cut text, an excerpt of a draft_export report): the sets its guards leave are necessary, not
//! sufficient. Every accepted size is in them; not every size there is accepted, since a guard
//! the text lacks may reject it. The one place a report is made to say so: each size it names
//! is undecided over the set its guards leave (that set stated, in `undecided_values` and in
//! words), with no accepted set, suggestion, box or `Dim` to paste, and a line saying why and
//! what to paste instead; linked groups and guards over several sizes claim no accepted set.

use super::explain::short_set;
use dimguard_readers::Message;
use dimguard_solver::report::Partial;
use dimguard_solver::report::{DimReport, Report, Status, UndecidedSet};
use dimguard_solver::DimSet;
use dimguard_solver::{DEFAULT_MIN, SIZE_MAX};

/// Rewrites `report` (its answers final, before the paste block is written) as
/// necessary-not-sufficient when `msg` holds only some of the export's guards; leaves it as it
/// is otherwise.
pub(super) fn necessary_only(report: &mut Report, msg: &Message) {
    let Some(p) = &msg.partial else {
        return;
    };
    report.partial = Some(p.clone());
    for d in &mut report.dims {
        dim(d, p);
    }
    let why = format!("the text holds {}", p.holds);
    for g in &mut report.linked {
        g.feasible = None;
        g.code = None;
        g.progression = None;
        g.certificate = dimguard_solver::report::Certificate::None;
        g.undecided = Some(why.clone());
    }
    for j in &mut report.joint {
        j.accepted.clear();
        j.joint_count = None;
        j.note = format!(
            "{why}: the combinations this guard leaves hold every accepted one, not only accepted ones (each size's set below)"
        );
    }
    // The joint set, its boxes and its passing tuples are the held guards' only.
    report.joint_sets.clear();
}

/// What a partial text's undecided sizes are (the `reason` of `undecided_values`).
const NECESSARY: &str = "necessary, not sufficient: the sizes the text's guards leave hold every accepted size, not only accepted ones";

/// One size of a partial text: undecided over the set the held guards leave.
fn dim(d: &mut DimReport, p: &Partial) {
    // A size the text states (`was inferred to be a constant (1)`) keeps its answer.
    if d.status == Status::Specialized {
        return;
    }
    let [lo, hi] = d.range.unwrap_or([DEFAULT_MIN, SIZE_MAX]);
    let own = d.answer.accepted.as_ref().and_then(|f| f.set().ok());
    let some = d
        .answer
        .sides
        .with_some_partner
        .as_ref()
        .and_then(|f| f.set().ok());
    let necessary = match (d.status, own, some) {
        // The guards the text holds could not be decided: no set to state.
        (Status::Undecided, _, _) => None,
        (_, Some(a), Some(b)) => a.intersect(&b).ok(),
        (_, a, b) => a.or(b),
    }
    // A size the text names under no guard: its whole range.
    .or_else(|| {
        (d.status == Status::Unconstrained && d.guards.is_empty()).then(|| DimSet::interval(lo, hi))
    });
    let name = d.name.clone();
    let why = match &necessary {
        Some(s) => format!(
            "the text holds only some of the export's guards: every size of {name} the export accepts is among the {} sizes {} (of {lo}..{hi}) that the guards it holds leave, and a guard it lacks may reject some of them",
            s.count(),
            short_set(s)
        ),
        None => format!(
            "the text holds only some of the export's guards{}",
            d.undecided
                .as_ref()
                .map(|u| format!(", and those on {name} are undecided: {u}"))
                .unwrap_or_default()
        ),
    };
    if let Some(none) = necessary.as_ref().filter(|s| s.is_empty()) {
        // No size passes the guards it holds: none passes them all. A decided answer.
        d.status = Status::Unsatisfiable;
        d.answer.accepted = Some(none.into());
        d.answer.suggestions.clear();
        d.answer.sides = Default::default();
        d.torch_fix = None;
        d.advice = vec![format!(
            "no size of {name} in {lo}..{hi} passes the guards this text holds, so the export accepts none of them (the text holds {})",
            p.holds
        )];
        return;
    }
    d.status = Status::Undecided;
    let answer = &mut d.answer;
    answer.accepted = None;
    // Without the necessary set (its guards cut short by the budget), the undecided part its
    // own answer had, if any (never silent).
    let own = answer.undecided.take();
    answer.undecided = necessary
        .as_ref()
        .map(|s| UndecidedSet::new(s, NECESSARY))
        .or(own);
    answer.suggestions.clear();
    answer.nearest_accepted = None;
    answer.sides = Default::default();
    d.coverage = None;
    d.padding = None;
    d.torch_fix = None;
    d.maximality = "proven".into();
    d.undecided = Some(why);
    d.advice = vec![format!(
        "no accepted set and no Dim for {name} from this text, which holds {}: {}",
        p.holds, p.instead
    )];
}
