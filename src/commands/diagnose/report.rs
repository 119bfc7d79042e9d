//! The report of a diagnosis, assembled once from the entries and the analysis: linked groups
//! of sizes reduced to one root, the guards over several sizes, every guard and what became of
//! it, the data-dependent expressions, and the guards by the line they come from.

use super::datadep;
use super::problem::{Origin, Sized};
use dimguard_readers::Message;
use dimguard_solver::analyze::{describe, Analysis, Options};
use dimguard_solver::joint;
use dimguard_solver::python::{self, dim_code, py_name};
use dimguard_solver::recheck;
use dimguard_solver::report::{
    Certificate, DataDependent, DimReport, Feasible, GuardFate, GuardMethod, GuardUse, JointGuard,
    LineDim, LineReport, LinkedGroup, RelationReport, Report, Status,
};
use dimguard_solver::{DimSet, Expr};
use dimguard_solver::{DEFAULT_MIN, SIZE_MAX};
use std::collections::BTreeMap;

/// The report of `msg` from its entries `dims` ([`super::size::entries`]) and the analysis of
/// its guards `sized`; its paste block and run-time explanation come after.
pub(super) fn report(
    msg: &Message,
    opts: &Options,
    sized: &Sized,
    analysis: &Analysis,
    dims: Vec<DimReport>,
) -> Report {
    let linked = linked_groups(msg, opts, analysis);
    let joint = joint_guards(&linked, analysis, msg);
    let guards = accounting(msg, &dims, sized, analysis);
    let data_dependent: Vec<DataDependent> = msg
        .data_dependent
        .iter()
        .map(|g| datadep::report(g, msg, opts))
        .collect();
    let lines = line_reports(msg, &dims);
    Report {
        dims,
        equalities: msg
            .equalities
            .iter()
            .map(|(a, b)| [a.clone(), b.clone()])
            .collect(),
        relations: msg
            .relations
            .iter()
            .map(|r| RelationReport {
                name: r.name.clone(),
                other: r.other.clone(),
                expr: r.expr.clone(),
            })
            .collect(),
        dynamic_shapes: String::new(),
        linked,
        data_dependent,
        unrecognized: msg.unrecognized.clone(),
        lines,
        form: msg.form,
        notes: msg.notes.clone(),
        unreadable: msg.unreadable.clone(),
        joint,
        runtime: None,
        joint_sets: analysis
            .groups
            .iter()
            .filter(|g| g.grp.roots.len() > 1)
            .filter_map(|g| g.linked.as_ref().map(|l| l.report.clone()))
            .collect(),
        guards,
        missing_bounds: msg.missing_bounds.clone(),
        partial: None,
    }
}

/// Every guard over several sizes, with what the joint solver says about its group.
fn joint_guards(linked: &[LinkedGroup], analysis: &Analysis, msg: &Message) -> Vec<JointGuard> {
    let solved = || analysis.groups.iter().filter(|g| g.grp.roots.len() > 1);
    let name_of = |v: &str| {
        msg.dims
            .iter()
            .find(|d| d.var() == v)
            .map_or(v.to_string(), |d| d.name.clone())
    };
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
            let in_group = |grp: &joint::Group| grp.members.iter().any(|m| atoms.contains(&m.name));
            if let Some(j) = solved().find(|j| in_group(&j.grp)) {
                out.accepted = j
                    .grp
                    .roots
                    .iter()
                    .filter_map(|r| {
                        j.solved
                            .accepted
                            .get(r)
                            .map(|s| (name_of(r), Feasible::from(s)))
                    })
                    .collect();
                out.joint_count = j.solved.joint_count.map(|(a, b)| [a, b]);
                out.undecided = j.solved.undecided.as_ref().map(|u| u.to_string());
                let names: Vec<String> = j.grp.roots.iter().map(|r| name_of(r)).collect();
                out.note = format!(
                    "solved with the joint set of {} (see linked below); each accepted set holds the values that pass for every value of the others",
                    names.join(", ")
                );
            } else if let Some(grp) = atoms.iter().find_map(|a| Some(&analysis.group(a)?.grp)) {
                let root = name_of(&grp.roots[0]);
                out.note = match linked.iter().find(|l| l.root == root) {
                    Some(_) => format!("solved with the linked sizes of {root} (see linked)"),
                    None => format!("its sizes reduce to {root}"),
                };
            } else {
                out.note = "not grouped".into();
            }
            out
        })
        .collect()
}

/// Every guard of the message and what became of it.
fn accounting(
    msg: &Message,
    dims: &[DimReport],
    sized: &Sized,
    analysis: &Analysis,
) -> Vec<GuardUse> {
    let names =
        |e: &Expr| -> Vec<String> { e.atoms().iter().map(|a| msg.name_of(a)).collect::<Vec<_>>() };
    let mut out = Vec::new();
    for (i, o) in sized.origin.iter().enumerate() {
        let (guard, sizes) = match *o {
            Origin::Dim(di, gi) => (
                msg.dims[di].guards[gi].text.clone(),
                vec![msg.dims[di].name.clone()],
            ),
            Origin::Joint(j) => (msg.joint[j].text.clone(), names(&msg.joint[j].expr)),
            Origin::Equality(k) => {
                let (a, b) = &msg.equalities[k];
                (format!("{b} == {a}"), vec![a.clone(), b.clone()])
            }
            Origin::Relation(k) => {
                let r = &msg.relations[k];
                (format!("{} == {}", r.name, r.expr), names(&sized.guards[i]))
            }
        };
        // A guard listed under a size answers with the size's group (else with the size's own
        // line: a guard that names only a size of another group was decided over that size);
        // one of a size alone solved guard by guard answers with its line, the analysis'
        // decision.
        let own_line = match *o {
            Origin::Dim(di, _) => match analysis.group(msg.dims[di].var()) {
                Some(g) => {
                    !sized.answered_in(i, g, analysis)
                        || (dims[di].status == Status::Specialized && !g.is_multi())
                }
                None => true,
            },
            _ => false,
        };
        let fate = analysis.fates.get(&i).filter(|_| !own_line).cloned();
        let (fate, reason) = fate.unwrap_or_else(|| match *o {
            Origin::Dim(di, gi) => match dims[di].guards.get(gi) {
                Some(g) => match g.method {
                    GuardMethod::Periodic => (GuardFate::Periodic, None),
                    GuardMethod::Enumeration => (GuardFate::Enumeration, None),
                    GuardMethod::Z3 => (GuardFate::Z3, None),
                    GuardMethod::Joint => (GuardFate::Joint, None),
                    GuardMethod::Undecided => (GuardFate::Undecided, dims[di].undecided.clone()),
                },
                None => (GuardFate::Specialized, None),
            },
            Origin::Equality(_) | Origin::Relation(_) => (GuardFate::Relation, None),
            Origin::Joint(_) => (GuardFate::Undecided, Some("not grouped".into())),
        });
        out.push(GuardUse {
            guard,
            sizes,
            error: None,
            fate,
            reason,
        });
    }
    for (k, why) in &sized.unread {
        let r = &msg.relations[*k];
        out.push(GuardUse {
            guard: format!("{} == {}", r.name, r.expr),
            sizes: vec![r.name.clone()],
            error: Some(why.clone()),
            fate: GuardFate::Unparsed,
            reason: None,
        });
    }
    for g in &msg.data_dependent {
        out.push(GuardUse {
            guard: g.text.clone(),
            sizes: g.expr.atoms().iter().map(|a| a.to_string()).collect(),
            error: None,
            fate: GuardFate::DataDependent,
            reason: None,
        });
    }
    for u in &msg.unreadable {
        out.push(GuardUse {
            guard: u.text.clone(),
            sizes: vec![],
            error: Some(u.reason.clone()),
            fate: GuardFate::Unparsed,
            reason: None,
        });
    }
    out
}

/// Groups the guards by the line they come from: per line, what its guards together require of
/// each size (the intersection of their exact sets) and how many values that removes.
fn line_reports(msg: &Message, dims: &[DimReport]) -> Vec<LineReport> {
    let mut out: Vec<LineReport> = vec![];
    let mut sets: Vec<BTreeMap<usize, Option<DimSet>>> = vec![];
    let slot = |p: &dimguard_solver::provenance::Provenance,
                out: &mut Vec<LineReport>,
                sets: &mut Vec<BTreeMap<usize, Option<DimSet>>>| {
        let i = out
            .iter()
            .position(|l| l.file == p.file && l.line == p.line)
            .unwrap_or_else(|| {
                out.push(LineReport {
                    file: p.file.clone(),
                    line: p.line,
                    function: p.function.clone(),
                    code: p.code.clone(),
                    user: p.user,
                    ops: vec![],
                    guards: vec![],
                    dims: vec![],
                    links: vec![],
                });
                sets.push(BTreeMap::new());
                out.len() - 1
            });
        if let Some(op) = &p.op {
            if !out[i].ops.contains(op) {
                out[i].ops.push(op.clone());
            }
        }
        i
    };
    for (di, d) in dims.iter().enumerate() {
        for g in &d.guards {
            let Some(p) = &g.provenance else { continue };
            if msg.joint.iter().any(|l| l.text == g.text) {
                continue; // listed once, under `links`
            }
            let i = slot(p, &mut out, &mut sets);
            out[i].guards.push(g.text.clone());
            let acc = sets[i]
                .entry(di)
                .or_insert_with(|| d.range.map(|[lo, hi]| DimSet::interval(lo, hi)));
            *acc = match (acc.take(), &g.set) {
                (Some(a), Some(s)) => a.intersect(s).ok(),
                _ => None,
            };
        }
    }
    for g in &msg.joint {
        let Some(p) = &g.provenance else { continue };
        let i = slot(p, &mut out, &mut sets);
        out[i].guards.push(g.text.clone());
        out[i].links.push(g.text.clone());
    }
    for (l, per_dim) in out.iter_mut().zip(sets) {
        for (di, set) in per_dim {
            let d = &dims[di];
            let [lo, hi] = d.range.unwrap_or([DEFAULT_MIN, SIZE_MAX]);
            let of = DimSet::interval(lo, hi).count();
            l.dims.push(LineDim {
                name: d.name.clone(),
                requires: set
                    .as_ref()
                    .map_or_else(|| "not decided".into(), |s| describe(s, lo, hi, &d.name)),
                removes: set.as_ref().map(|s| of - s.count()),
                of,
            });
        }
    }
    out
}

/// Groups of sizes that reduce to one root (equalities, relations): one `Dim` for the root,
/// derived dims for the others.
fn linked_groups(msg: &Message, opts: &Options, analysis: &Analysis) -> Vec<LinkedGroup> {
    let name_of = |v: &str| msg.name_of(v);
    let mut out = Vec::new();
    for g in &analysis.groups {
        let (grp, solved) = (&g.grp, &g.solved);
        if grp.members.len() < 2 || grp.roots.len() != 1 {
            continue;
        }
        let root = grp.roots[0].clone();
        let members: Vec<[String; 2]> = grp
            .members
            .iter()
            .filter(|m| m.name != root)
            .map(|m| {
                let e = python::derived(&py_name(&name_of(&root)), m.coef, m.offset);
                [name_of(&m.name), e]
            })
            .collect();
        let feasible = solved
            .accepted
            .get(&root)
            .filter(|_| solved.undecided.is_none());
        let best = feasible.and_then(|f| {
            dimguard_solver::rank(f, opts.example_for(&name_of(&root)), 1)
                .progressions
                .first()
                .copied()
        });
        let code = best.map(|p| {
            let mut lines = vec![dim_code(&name_of(&root), &p)];
            lines.extend(members.iter().map(|[n, e]| python::assign(n, e)));
            lines.join("\n")
        });
        // Independent re-check of the root's progression against every guard of the group.
        let guards: Vec<&Expr> = grp.guards.iter().collect();
        let certificate = match best.and_then(|p| recheck(&guards, &root, &p.to_set())) {
            Some(true) => Certificate::Enumeration,
            _ => Certificate::None,
        };
        out.push(LinkedGroup {
            root: name_of(&root),
            members,
            feasible: feasible.map(Feasible::from),
            code,
            certificate,
            undecided: g.undecided(),
            root_var: root.clone(),
            guards: grp.guards.clone(),
            progression: best,
        });
    }
    out
}
