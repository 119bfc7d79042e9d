//! The parts of a report that say where guards came from and what a run-time failure means:
//! guards grouped by origin, guards over several sizes, and the explanation of a `Guard failed`
//! or input check at the size the user ran.

use super::size::{conclude, UNDECIDED_ADVICE};
use dimguard_readers::forms::Form;
use dimguard_readers::{DimEntry, Message};
use dimguard_solver::analyze::{GroupAnswer as JointGroup, Options, WITHHELD};
use dimguard_solver::expr::Value;
use dimguard_solver::joint::{self, Choice, Prover};
use dimguard_solver::report::{
    Certificate, DimReport, Feasible, GuardMethod, JointGuard, LinkedGroup, Proof, Report,
    RuntimeReport, Status,
};
use dimguard_solver::{DimSet, Expr};
use std::collections::BTreeMap;

/// Fills the report's origins, joint guards and run-time explanation.
pub fn complete(report: &mut Report, msg: &Message, opts: &Options) {
    report.runtime = runtime(report, msg, opts);
}

/// Every guard over several sizes, with what the joint solver says about its group.
pub(crate) fn joint_guards(
    linked: &[LinkedGroup],
    groups: &[joint::Group],
    solved: &[JointGroup],
    msg: &Message,
) -> Vec<JointGuard> {
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
            if let Some(j) = solved.iter().find(|j| in_group(&j.grp)) {
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
            } else if let Some(grp) = groups.iter().find(|g| in_group(g)) {
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

/// The diagnosis of each jointly solved group's dimensions (their sides, ties and linked sizes
/// come from [`group_answers`]): when the linking guards reject some combination of the sizes'
/// own answers, status `linked`, no single-`Dim` suggestion (none is sound alone) and advice
/// naming the spec the block uses; a size whose values each go with every accepted combination
/// of the others keeps its own answer. A group the search left undecided makes its sizes
/// undecided, with the reason. Returns each group's [`Choice`] (parallel to `solved`), for
/// [`group_specs`].
pub(crate) fn link_dims(
    dims: &mut [DimReport],
    solved: &[JointGroup],
    msg: &Message,
    opts: &Options,
    prover: Option<Prover>,
) -> Vec<Option<Choice>> {
    let mut choices = Vec::new();
    for j in solved {
        // The group's one choice of spec, made by the analysis stage.
        let choice = j.choice.clone();
        for m in &j.grp.members {
            let Some(di) = msg.dims.iter().position(|d| d.var() == m.name) else {
                continue;
            };
            // Named as the report names them: a dimension's name, else the size's source.
            let others: Vec<String> = j
                .grp
                .members
                .iter()
                .filter(|o| o.name != m.name)
                .map(|o| msg.name_of(&o.name))
                .collect();
            let d = &mut dims[di];
            let range = d.range.map(|[lo, hi]| DimSet::interval(lo, hi));
            let why = match (&j.solved.undecided, &j.linked) {
                (Some(u), _) => Some(format!(
                    "linked to {} and undecided: {u}",
                    others.join(", ")
                )),
                (None, None) => Some(format!("linked to {}: not solved", others.join(", "))),
                (None, Some(l)) => {
                    let set = l.some(m);
                    let set = match (&range, set) {
                        (Some(r), Ok(set)) => set.intersect(r),
                        (None, set) => set,
                        (_, Err(e)) => Err(e),
                    };
                    // A size whose every accepted value goes with every accepted combination
                    // of the others keeps its own answer.
                    let free = l.tied.is_none()
                        && l.joint.level(&m.root).is_some_and(|lv| {
                            l.joint.free_levels()[lv]
                                && l.joint.tree.projection(lv).ok().as_ref()
                                    == Some(&l.joint.domains[lv])
                        });
                    if !l.restricts() || free {
                        if let Some(set) = decided_jointly(d, &msg.dims[di], &m.name, &set) {
                            let entry = &msg.dims[di];
                            answer_jointly(d, entry, m, &set, &others, j, l, (msg, opts, prover));
                        }
                        d.advice.push(if free && l.restricts() {
                            format!(
                                "linked to {} by guards, but each of its values goes with every accepted combination of theirs: its own answer stands (see linked)",
                                others.join(", ")
                            )
                        } else {
                            format!(
                                "linked to {} by guards that hold for every combination of their accepted values",
                                others.join(", ")
                            )
                        });
                        None
                    } else {
                        let side = l.side(m);
                        d.status = Status::Linked;
                        d.answer.suggestions.clear();
                        d.coverage = None;
                        d.padding = None;
                        // The guards over several sizes were decided jointly: not undecided.
                        d.undecided = None;
                        for g in d.guards.iter_mut().filter(|g| g.set.is_none()) {
                            g.method = GuardMethod::Joint;
                            g.requires =
                                format!("decided jointly with {} (see linked)", others.join(", "));
                        }
                        d.advice = vec![l.report.summary.clone()];
                        let tied_pairs = l.report.tied.as_ref().map(|t| {
                            t.ties
                                .iter()
                                .map(|x| format!("{} from {}", x.dims[1], x.dims[0]))
                                .collect::<Vec<_>>()
                                .join(", ")
                        });
                        let why = match &side {
                            _ if matches!(choice, Some(Choice::Tied(_))) => format!(
                                "no Dim of {} alone is sound: which of its values pass depends on {}; its spec below writes each tied size from its partner ({}), which admits more than any box (see linked)",
                                d.name,
                                others.join(", "),
                                tied_pairs.unwrap_or_default()
                            ),
                            None if l.tied.is_some() => format!(
                                "no Dim of {} alone is sound: which of its values pass depends on {}, and no spec through the traced sizes was found sound (see linked)",
                                d.name,
                                others.join(", ")
                            ),
                            Some(_) if matches!(choice, Some(Choice::Shared(_))) => format!(
                                "no Dim of {} alone is sound: which of its values pass depends on {}; its spec below is one Dim shared with {}, which admits more than any box (see linked)",
                                d.name,
                                others.join(", "),
                                others.join(", ")
                            ),
                            Some(_) if matches!(choice, Some(Choice::Example(_))) => format!(
                                "no Dim of {} alone is sound: which of its values pass depends on {}; the largest sound box leaves out the traced sizes (--example), so its spec below is its side of a sound box through them (see linked)",
                                d.name,
                                others.join(", ")
                            ),
                            Some(_) => format!(
                                "no Dim of {} alone is sound: which of its values pass depends on {}; its spec below is its side of the largest sound box (see linked)",
                                d.name,
                                others.join(", ")
                            ),
                            None => format!("no combination of {} and {} passes every guard", d.name, others.join(", ")),
                        };
                        d.advice.push(why);
                        None
                    }
                }
            };
            if let Some(why) = why {
                d.status = Status::Undecided;
                d.answer.suggestions.clear();
                d.coverage = None;
                d.padding = None;
                d.undecided.get_or_insert_with(|| why.clone());
                d.advice = vec![why];
            }
        }
        choices.push(choice);
    }
    choices
}

/// Every dimension's answer from its group, as every command builds it
/// ([`dimguard_solver::analyze::size_answer`]): the sizes it is linked with, its sides of the joint set,
/// the size it is tied to (a root it is derived from answers through the relation; a partner the
/// group's spec writes it from, with its values with some partner), a defined size's values,
/// and the nearest accepted sizes around a rejected traced size. Runs last: the set it is given
/// is the dimension's final `feasible`.
pub(crate) fn group_answers(
    dims: &mut [DimReport],
    msg: &Message,
    groups: &[&JointGroup],
    opts: &Options,
) {
    for (d, entry) in dims.iter_mut().zip(&msg.dims) {
        let found = groups
            .iter()
            .find_map(|g| g.member(entry.var()).map(|m| (*g, m)));
        let own = d.range.map(|[lo, hi]| DimSet::interval(lo, hi));
        // A size of a group of one root (tied to it by equalities and relations): its set as
        // the group decides it (the root's answer through the relation, within its range);
        // else its own `feasible`.
        let grouped = found
            .as_ref()
            .filter(|(g, _)| g.grp.roots.len() == 1)
            .and_then(|(g, m)| g.decided(m, Some(own.as_ref()?)));
        // A size whose one-size answer is undecided only because a guard names another size,
        // alone in its part of the group: the stage set that guard aside as holding on every
        // tuple of the parts' answers (`Group::held`; a guard that fails somewhere merges the
        // parts), so the part's set is the size's answer, and each of its values has a partner.
        let mut held = false;
        if d.status == Status::Undecided {
            if let Some(set) = grouped.as_ref().filter(|_| {
                d.guards
                    .iter()
                    .zip(&entry.guards)
                    .filter(|(g, _)| g.set.is_none())
                    .all(|(_, e)| e.expr.atoms().iter().any(|a| **a != *entry.var()))
            }) {
                held_apart(d, entry, set, msg, opts);
                held = true;
            }
        }
        let example = opts.example_for(&d.name);
        // (Read back from its contract form only when a traced size needs it.)
        let accepted = grouped.or_else(|| {
            example?;
            d.answer.accepted.as_ref()?.set().ok()
        });
        let name = |v: &str| msg.name_of(v);
        let is_size = |v: &str| msg.dims.iter().any(|d| d.var() == v);
        let asked = dimguard_solver::analyze::Asked {
            label: &d.name,
            name: &name,
            code: &name,
            is_size: &is_size,
            own: own.as_ref(),
            accepted: accepted.as_ref(),
            example,
            partners: dimguard_solver::analyze::Partners::OfSeveralRoots,
            spec_ties: false,
        };
        let g = dimguard_solver::analyze::size_answer(
            found.as_ref().map(|(g, _)| *g),
            found.as_ref().map(|(_, m)| m),
            &asked,
        );
        // The set and its suggestions are the dimension's own (its guards over its range);
        // everything else is the group's answer, field for field.
        d.answer = dimguard_solver::report::SizeAnswer {
            accepted: d.answer.accepted.take(),
            undecided: d.answer.undecided.take(),
            suggestions: std::mem::take(&mut d.answer.suggestions),
            ..g
        };
        // A size that keeps its own answer (its group's guards reject no combination of the
        // sizes' answers, or each of its values goes with every accepted combination of the
        // others) is pasted from its own suggestions: no side of a box is its spec.
        if held {
            d.answer.sides.with_some_partner = d.answer.accepted.clone();
        }
        if d.status != Status::Linked {
            let s = &mut d.answer.sides;
            (s.box_side, s.example_box_side, s.shared_side) = (None, None, None);
        }
        // A tied size the text lists no guard for has its partner's set through the tie as
        // its answer (`feasible`), linked: never "unconstrained" with no set beside a tie that
        // says which of its values pass.
        if d.status == Status::Unconstrained && d.answer.accepted.is_none() {
            let tied = d.answer.sides.tied_to.as_ref();
            if let Some((set, t)) = tied.and_then(|t| Some((t.accepted.clone()?, t.clone()))) {
                // Linked to its partner: its values with some partner are the tie's.
                d.answer.sides.with_some_partner = Some(set.clone());
                if !d.answer.linked_with.contains(&t.partner) {
                    d.answer.linked_with.push(t.partner);
                }
                d.answer.accepted = Some(set);
                d.status = Status::Linked;
            }
        }
    }
}

/// A size that a linked group's guards name but the text gives no dimension (torch listed the
/// guard under its partner only), for the `dynamic_shapes` dict.
pub(crate) struct PartnerSpec {
    /// Where the size comes from (`L['x'].size()[3]`), for the `dynamic_shapes` dict.
    pub source: String,
    /// The name the spec gives it (`x_3` for `L['x'].size()[3]`, as `check` names it, unless
    /// the block already uses that name).
    pub name: String,
}

/// The spec lines of one linked group ([`group_specs`]).
pub(crate) struct GroupSpec {
    /// The dimensions of the text (their names) whose lines `code` holds.
    pub named: Vec<String>,
    /// The sizes of the group the text gives no dimension.
    pub partners: Vec<PartnerSpec>,
    /// Every member's line, each name defined before it is used: per root (in level order) its
    /// `Dim` (or, for the second root under one shared `Dim`, the first root), then each size
    /// derived from it as `coef*root + offset`.
    pub code: String,
}

/// The spec lines of each decided linked group of several roots, every member (named in the
/// text or not) from the group's one [`Choice`]: a size derived from a root is written from the
/// root's line, never as a `Dim` of its own. A dimension's side of a box is sound only together
/// with the other sides: left out of the `dynamic_shapes` block, a size the text names only
/// inside a guard would keep whatever the user's call gave it (or become static), and
/// `h*w <= 65536`'s side `h 32..1024` would be printed without `w 2..64`. Such a size is named
/// as `check` names an input's dimension (`x_3`), else with a suffix when `taken` (the block's
/// other names) holds that name; each name given is added to `taken`. `choices`: each group's,
/// from [`link_dims`].
pub(crate) fn group_specs(
    solved: &[JointGroup],
    choices: &[Option<Choice>],
    msg: &Message,
    taken: &mut std::collections::BTreeSet<String>,
) -> Vec<GroupSpec> {
    use dimguard_solver::analyze::{group_line, GroupLine};
    use dimguard_solver::python::{alias, py_name, source_input};
    let mut out = Vec::new();
    for (j, choice) in solved.iter().zip(choices) {
        let Some(l) = j.linked.as_ref().filter(|_| j.solved.undecided.is_none()) else {
            continue;
        };
        let Some(choice) = choice else {
            continue;
        };
        let named: Vec<String> = j
            .grp
            .members
            .iter()
            .filter_map(|m| msg.dims.iter().find(|d| d.var() == m.name))
            .map(|d| d.name.clone())
            .collect();
        if named.is_empty() {
            continue;
        }
        let mut partners = Vec::new();
        // The name of each member in the block.
        let mut names: BTreeMap<&str, String> = BTreeMap::new();
        for m in &j.grp.members {
            if let Some(d) = msg.dims.iter().find(|d| d.var() == m.name) {
                names.insert(&m.name, py_name(&d.name));
                continue;
            }
            let source = msg.name_of(&m.name);
            let base =
                py_name(&source_input(&source).map_or(source.clone(), |(i, k)| format!("{i}_{k}")));
            let free = |n: &String| !taken.contains(n) && !taken.contains(&format!("_{n}"));
            let name = std::iter::once(base.clone())
                .chain((2..).map(|k| format!("{base}_{k}")))
                .find(free)
                .unwrap_or(base);
            taken.insert(name.clone());
            names.insert(&m.name, name.clone());
            partners.push(PartnerSpec { source, name });
        }
        let mut code: Vec<String> = Vec::new();
        let comment = |code: &mut Vec<String>, m: &joint::Member| {
            if let Some(p) = partners.iter().find(|p| names[m.name.as_str()] == p.name) {
                code.push(format!(
                    "# {} is {}: a guard links it to the sizes above, which are sound only with this",
                    p.name, p.source
                ));
            }
        };
        // Each member's line from the group's one spec (`group_line`, as every command writes
        // it), the roots in the order their lines are written (a tied group's reduced sizes,
        // then each tied size, written from its partner, defined above it), each followed by
        // the sizes derived from it; then the sizes the others define.
        let name = |v: &str| names.get(v).cloned().unwrap_or_else(|| py_name(v));
        let line = |m: &joint::Member| {
            let range = msg
                .dims
                .iter()
                .find(|d| d.var() == m.name)
                .and_then(|d| d.range);
            let ma = j.member(&m.name)?;
            Some(match group_line(j, &ma, &name(&m.name), &name, range)? {
                GroupLine::Derived { root, coef, offset } => {
                    alias(&name(&m.name), &name(&root), coef, offset)
                }
                GroupLine::Defined(code) => code,
                GroupLine::Side { side, .. } => side.code,
            })
        };
        let order: Vec<String> = match (choice, &l.tied) {
            (Choice::Tied(_), Some((t, _))) => t.sizes(),
            _ => l.joint.sizes.clone(),
        };
        for root in &order {
            let Some(rm) = j.grp.members.iter().find(|m| &m.name == root) else {
                continue;
            };
            comment(&mut code, rm);
            let Some(root_line) = line(rm) else { continue };
            code.push(root_line);
            for m in j
                .grp
                .members
                .iter()
                .filter(|m| &m.root == root && &m.name != root)
            {
                comment(&mut code, m);
                code.extend(line(m));
            }
        }
        for x in &l.report.defined {
            if let Some(m) = j.grp.members.iter().find(|m| m.name == x.source) {
                code.extend(line(m));
            }
        }
        out.push(GroupSpec {
            named,
            partners,
            code: code.join("\n"),
        });
    }
    out
}

/// For a size in a group whose linking guards hold for every accepted combination of the
/// others (or whose values combine freely with theirs): its values that pass (`set`, from the
/// joint set) when its own line is waiting for that answer, that is, when every guard listed
/// under it that the one-size solve left open names another size. The one-size question lets
/// the others take any integer, torch's sizes cannot: only the joint set decides.
fn decided_jointly(
    d: &DimReport,
    entry: &DimEntry,
    var: &str,
    set: &Result<DimSet, dimguard_solver::Error>,
) -> Option<DimSet> {
    let open: Vec<&dimguard_readers::Guard> = entry
        .guards
        .iter()
        .zip(&d.guards)
        .filter(|(_, g)| g.set.is_none())
        .map(|(e, _)| e)
        .collect();
    let names_other = |g: &&dimguard_readers::Guard| g.expr.atoms().iter().any(|a| **a != *var);
    let waiting = !open.is_empty() && open.iter().all(names_other);
    set.as_ref().ok().filter(|_| waiting).cloned()
}

/// A size's answer when every guard it could not decide alone names another size and holds on
/// every tuple of the parts' answers: `set`, its part's, concluded as for a size of its own, each
/// suggestion re-checked against the size's own guards.
fn held_apart(d: &mut DimReport, entry: &DimEntry, set: &DimSet, msg: &Message, opts: &Options) {
    let var = entry.var();
    let own: Vec<&Expr> = entry
        .guards
        .iter()
        .map(|g| &g.expr)
        .filter(|e| e.atoms().iter().all(|a| **a == *var))
        .collect();
    d.undecided = None;
    d.advice.retain(|a| a != UNDECIDED_ADVICE);
    for g in d.guards.iter_mut().filter(|g| g.set.is_none()) {
        g.method = GuardMethod::Joint;
        g.requires =
            "holds with every accepted value of the sizes it names (decided jointly)".into();
    }
    conclude(d, entry, set, Some(&own), Proof::Enumeration, msg, opts);
}

/// Replaces a size's one-size answer by the joint set's `set` (see [`decided_jointly`]):
/// status, suggestions and the rest as for a size of its own ([`conclude`]), each suggestion
/// re-checked against its own guards value by value and, with the rest of the joint set,
/// against every guard of the group ([`joint::Linked::check_side`]): tuple by tuple when few,
/// else by Z3 (`prover`); a suggestion that fails is withheld.
#[allow(clippy::too_many_arguments)]
fn answer_jointly(
    d: &mut DimReport,
    entry: &DimEntry,
    m: &joint::Member,
    set: &DimSet,
    others: &[String],
    j: &JointGroup,
    l: &joint::Linked,
    (msg, opts, prover): (&Message, &Options, Option<Prover>),
) {
    let own: Vec<&Expr> = entry
        .guards
        .iter()
        .map(|g| &g.expr)
        .filter(|e| e.atoms().iter().all(|a| **a == *m.name))
        .collect();
    d.undecided = None;
    // The one-size solve's "could not decide" goes; other advice (a forced specialization) stays.
    d.advice.retain(|a| a != UNDECIDED_ADVICE);
    for g in d.guards.iter_mut().filter(|g| g.set.is_none()) {
        g.method = GuardMethod::Joint;
        g.requires = match others {
            [one] => {
                format!("holds with every accepted value of {one} (decided jointly, see linked)")
            }
            _ => format!(
                "holds with every accepted combination of {} (decided jointly, see linked)",
                others.join(", ")
            ),
        };
    }
    conclude(d, entry, set, Some(&own), Proof::Periodic, msg, opts);
    let level = l.joint.level(&m.root);
    let mut withheld = false;
    d.answer.suggestions.retain_mut(|s| {
        let root_set = s.progression().to_set().affine_preimage(m.coef, m.offset);
        let check = match (level, root_set) {
            (Some(lv), Ok(rs)) => l.check_side(&j.grp.guards, lv, &rs, prover),
            (None, _) => joint::SideCheck::Unchecked("not in the joint set".into()),
            (_, Err(e)) => joint::SideCheck::Unchecked(e.to_string()),
        };
        match check {
            joint::SideCheck::Enumerated => s.certificate = Certificate::Enumeration,
            joint::SideCheck::Proved => s.certificate = Certificate::Z3,
            joint::SideCheck::Fails(_) => {
                withheld = true;
                return false;
            }
            joint::SideCheck::Unchecked(why) => {
                s.certificate = Certificate::None;
                s.certificate_note = Some(why);
            }
        }
        true
    });
    if withheld && !d.advice.iter().any(|a| a == WITHHELD) {
        d.advice.push(WITHHELD.into());
    }
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
        explanation.extend(entry_lines(rt, report));
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
    } else if rt.kind == Form::GuardFailed {
        explanation.push(
            "torch reports only the first guard that failed; the program may hold more: `dimguard check` on the saved program lists every guard and the sizes it really accepts"
                .into(),
        );
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
