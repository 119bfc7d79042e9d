//! Building a solved group's [`Linked`] report: its boxes, largest sound box, examples and
//! summary, for a plain joint set, tied sizes, or a defined size.

use super::choice::{diagonal, Linked};
use super::defined::{chain_values, nondecreasing};
use super::grouping::Group;
use super::solve::{box_sample, tied_report};
use super::solved::{Defined, Solved};
use crate::linked::{largest_box, Budget, JointSet, LargestBox, TiedSet, TupleCheck};
use crate::report::{
    BoxReport, Certificate, Feasible, JointReport, JointSearch, JointUndecided, Proof, SharedReport,
};
use crate::suggest::unchecked_suggestion;
use crate::types::{DimSet, Progression};
use std::collections::BTreeMap;

/// The report of a solved group's joint set: its boxes, the largest sound box (re-checked tuple
/// by tuple with the exact evaluator, independently of the search), accepted examples, real
/// failing tuples (each re-checked), the summary sentence. `name` gives a root's dimension name,
/// `label` the name the summary uses, `claimed` how many values a root was claimed to take.
/// `None` for a group of one root.
pub fn linked(
    solved: &Solved,
    grp: &Group,
    budget: &Budget,
    name: &dyn Fn(&str) -> String,
    label: &dyn Fn(&str) -> String,
    claimed: &dyn Fn(&str) -> u128,
) -> Option<Linked> {
    if let Some(e) = &solved.equation {
        return Some(e.linked(grp, name, label, claimed));
    }
    if let Some(d) = &solved.defined {
        return defined_linked(d, grp, budget, name, label, claimed);
    }
    let j = solved.joint.as_ref().filter(|_| grp.roots.len() > 1)?;
    if let Some(t) = &solved.tied {
        return tied_linked(t, j, grp, budget, name, label, claimed);
    }
    let lb = largest_box(&j.tree, budget);
    let dims: Vec<String> = j.sizes.iter().map(|s| name(s)).collect();
    let claimed_count = j
        .sizes
        .iter()
        .map(|s| claimed(s))
        .fold(1u128, |a, c| a.saturating_mul(c));
    let (boxes, complete) = j.tree.boxes(100);
    let check = TupleCheck::new(&j.sizes, &grp.guards);
    let holds = |t: &[i128]| check.holds(t);
    let largest_box = lb.as_ref().map(|b| {
        let mut sides: Vec<_> = b
            .sides
            .iter()
            .zip(&dims)
            .map(|(p, n)| unchecked_suggestion(n, p, Proof::Periodic))
            .collect();
        let tuples = box_sample(&b.sides, b.count, grp.guards.len());
        // Past the deadline of the command's budget the re-check stops where it is.
        let mut checked = 0;
        let mut ok = true;
        for t in &tuples {
            if crate::budget::expired().is_some() {
                break;
            }
            if !holds(t) {
                ok = false;
                break;
            }
            checked += 1;
        }
        let all = checked as u128 == b.count;
        for s in sides.iter_mut() {
            s.certificate = if ok && all {
                Certificate::Enumeration
            } else {
                Certificate::None
            };
            if ok && !all {
                s.certificate_note = Some(format!(
                    "re-checked at {checked} of its {} tuples; exact by the joint search",
                    b.count
                ));
            }
        }
        BoxReport {
            count: b.count,
            maximal: b.maximal,
            sides,
        }
    });
    // Two sizes that must be equal (two images through one broadcast): one shared Dim admits
    // the diagonal, which no box can. Offered when it beats the largest box.
    let shared =
        diagonal(j, &holds).filter(|(p, _)| p.count() > lb.as_ref().map_or(0, |b| b.count));
    let shared_report = shared.as_ref().map(|(p, all)| {
        let mut side = unchecked_suggestion(&dims[0], p, Proof::Periodic);
        if *all {
            side.certificate = Certificate::Enumeration;
        }
        SharedReport {
            count: p.count(),
            dims: [dims[0].clone(), dims[1].clone()],
            side,
        }
    });
    let rejected: Vec<Vec<i128>> = j
        .rejected_examples(5)
        .unwrap_or_default()
        .into_iter()
        .filter(|t| !holds(t))
        .collect();
    let mut labels: Vec<(String, String)> = j.sizes.iter().map(|s| (s.clone(), label(s))).collect();
    labels.sort_by(|a, b| a.1.cmp(&b.1));
    let report = JointReport {
        dims,
        sources: j.sizes.clone(),
        claimed: claimed_count,
        accepted: j.count(),
        boxes: boxes
            .iter()
            .map(|b| b.iter().map(Feasible::from).collect())
            .collect(),
        // Never complete while part of the joint set is undecided: the boxes are the decided
        // part, and a tuple outside them is not known to fail.
        boxes_complete: complete && j.undecided.is_none(),
        largest_box,
        shared: shared_report.clone(),
        accepted_examples: j.tree.examples(5),
        rejected_examples: rejected,
        undecided: undecided_of(j),
        summary: match &shared_report {
            Some(s) => format!(
                "{}; one Dim for both ({} = {}) admits {} pairs, {}..{}{}",
                j.summary(&labels),
                s.dims[1],
                s.dims[0],
                s.count,
                s.side.lo,
                s.side.hi,
                if s.side.modulus > 1 {
                    format!(" ≡ {} (mod {})", s.side.residue, s.side.modulus)
                } else {
                    String::new()
                }
            ),
            None => j.summary(&labels),
        },
        search: JointSearch {
            points: j.stats.points,
            periodic_solves: j.stats.periodic_solves,
            shared_nodes: j.stats.shared_nodes,
        },
        tied: solved
            .tied
            .as_ref()
            .and_then(|t| tied_report(t, grp, name, label)),
        equal: vec![],
        equations: vec![],
        link_excludes_some: j.undecided.is_none().then(|| j.excludes_some()),
        defined: vec![],
    };
    Some(Linked {
        report,
        largest: lb,
        shared: shared.map(|(p, _)| p),
        joint: j.clone(),
        tied: None,
        defined: None,
        equation: None,
    })
}

/// The part of a joint set left undecided, as the report says it.
fn undecided_of(j: &JointSet) -> Option<JointUndecided> {
    j.undecided.as_ref().map(|u| JointUndecided {
        count: u.count,
        reason: u.reason.to_string(),
    })
}

/// [`linked`] for a group with a defined size ([`Solved::defined`]): the reduced group's joint
/// set over the others (boxes, examples completed with the defined size and re-checked against
/// every guard of the group), the definition ([`DefinedReport`]), no largest box. `None` when
/// the reduced group has no joint set of its own (one size, tied, or itself with a defined
/// size): its sizes then stay undecided, with the reason.
fn defined_linked(
    d: &Defined,
    grp: &Group,
    budget: &Budget,
    name: &dyn Fn(&str) -> String,
    label: &dyn Fn(&str) -> String,
    claimed: &dyn Fn(&str) -> u128,
) -> Option<Linked> {
    // Every size the others define (several: the reduced group had one of its own, issue 34
    // gap 4), outermost first; the innermost reduced group's joint set is over the rest.
    let defs = d.chain();
    let r = &defs.last()?.solved;
    if r.tied.is_some() || r.undecided.is_some() {
        return None;
    }
    // No guard links the rest (each is one size's): their joint set is the product of their
    // own sets.
    let product;
    let j = match &r.joint {
        Some(j) => j,
        None if r.unsure.is_empty() => {
            product = own_product(&defs.last()?.group.roots, &r.accepted)?;
            &product
        }
        None => return None,
    };
    let (boxes, complete) = j.tree.boxes(100);
    let (accepted_examples, rejected_examples) = defined_examples(&defs, j, grp);
    let lb = defined_box(&defs, j, grp, budget);
    let largest_box = lb.as_ref().map(|b| defined_box_report(b, &defs, j, name));
    let relation_of = |x: &Defined| x.expr.renamed(name);
    let mut labels: Vec<(String, String)> = j.sizes.iter().map(|s| (s.clone(), label(s))).collect();
    labels.sort_by(|a, b| a.1.cmp(&b.1));
    let report = JointReport {
        dims: j.sizes.iter().map(|s| name(s)).collect(),
        sources: j.sizes.clone(),
        claimed: grp
            .roots
            .iter()
            .map(|s| claimed(s))
            .fold(1u128, |a, c| a.saturating_mul(c)),
        accepted: j.count(),
        boxes: boxes
            .iter()
            .map(|b| b.iter().map(Feasible::from).collect())
            .collect(),
        boxes_complete: complete && j.undecided.is_none(),
        largest_box,
        shared: None,
        accepted_examples,
        rejected_examples,
        undecided: undecided_of(j),
        summary: format!(
            "{}; the others: {}",
            defs.iter()
                .map(|x| format!(
                    "{} = {} (within {})",
                    label(&x.dim),
                    relation_of(x),
                    crate::report::count_text(x.own.count())
                ))
                .collect::<Vec<_>>()
                .join("; "),
            j.summary(&labels)
        ),
        search: JointSearch {
            points: j.stats.points,
            periodic_solves: j.stats.periodic_solves,
            shared_nodes: j.stats.shared_nodes,
        },
        tied: None,
        equal: vec![],
        equations: vec![],
        link_excludes_some: None,
        defined: defs
            .iter()
            .map(|x| crate::report::DefinedReport {
                dim: name(&x.dim),
                source: x.dim.clone(),
                expr: x.expr.to_string(),
                relation: relation_of(x).to_string(),
                accepted: Feasible::from(&x.own),
            })
            .collect(),
    };
    Some(Linked {
        report,
        largest: lb,
        shared: None,
        joint: j.clone(),
        tied: None,
        defined: Some(Box::new(d.clone())),
        equation: None,
    })
}

/// Examples of a group with defined sizes (`defs`, [`Defined::chain`]): tuples of the reduced
/// joint set `j` completed with each defined size at its definition (innermost first: an outer
/// definition may read an inner defined size), in `j`'s sizes then the defined sizes innermost
/// first; accepted ones that pass every guard of the group (at most 5), rejected ones with the
/// outermost defined size off its definition that fail.
fn defined_examples(
    defs: &[&Defined],
    j: &JointSet,
    grp: &Group,
) -> (Vec<Vec<i128>>, Vec<Vec<i128>>) {
    let with_defined = |t: &[i128]| -> Option<Vec<i128>> {
        let mut full = t.to_vec();
        let mut names: Vec<&str> = j.sizes.iter().map(String::as_str).collect();
        for x in defs.iter().rev() {
            let env = |a: &str| names.iter().position(|s| *s == a).map(|i| full[i]);
            let v = x.expr.int_at(&env)?;
            full.push(v);
            names.push(&x.dim);
        }
        Some(full)
    };
    let mut sources = j.sizes.clone();
    sources.extend(defs.iter().rev().map(|x| x.dim.clone()));
    let passes = |t: &[i128]| {
        let env = |a: &str| sources.iter().position(|s| s == a).map(|i| t[i]);
        grp.guards.iter().all(|g| matches!(g.truth(&env), Ok(true)))
    };
    let accepted_examples: Vec<Vec<i128>> = j
        .tree
        .examples(20)
        .iter()
        .filter_map(|t| with_defined(t))
        .filter(|t| passes(t))
        .take(5)
        .collect();
    let rejected_examples: Vec<Vec<i128>> = j
        .tree
        .examples(5)
        .iter()
        .filter_map(|t| with_defined(t))
        .map(|mut t| {
            // The outermost defined size off its definition.
            *t.last_mut().expect("defined") += 1;
            t
        })
        .filter(|t| !passes(t))
        .collect();
    (accepted_examples, rejected_examples)
}

/// The report of a sound box `b` of the others ([`defined_box`]), each side with a note saying
/// how it was checked (each tuple with the defined sizes `defs` at their definition).
fn defined_box_report(
    b: &LargestBox,
    defs: &[&Defined],
    j: &JointSet,
    name: &dyn Fn(&str) -> String,
) -> BoxReport {
    let sides = b
        .sides
        .iter()
        .zip(&j.sizes)
        .map(|(p, s)| {
            let mut side = unchecked_suggestion(&name(s), p, Proof::Periodic);
            side.certificate_note = Some(format!(
                "a box of the others, each tuple with {} at its definition; re-checked at its corners and tuples spread over it",
                defs.iter().map(|x| name(&x.dim)).collect::<Vec<_>>().join(", ")
            ));
            side
        })
        .collect();
    BoxReport {
        count: b.count,
        maximal: false,
        sides,
    }
}

/// The joint set of sizes no guard links (each guard is one size's): the product of their own
/// sets `accepted`; `None` when one has none.
fn own_product(rest: &[String], accepted: &BTreeMap<String, DimSet>) -> Option<JointSet> {
    let domains: Option<Vec<DimSet>> = rest.iter().map(|x| accepted.get(x).cloned()).collect();
    let domains = domains?;
    Some(JointSet {
        sizes: rest.to_vec(),
        tree: crate::linked::Tree::full(&domains),
        domains,
        undecided: None,
        stats: Default::default(),
    })
}

/// A sound box of the others for a group with defined sizes (`defs`, [`Defined::chain`]): every
/// tuple of it passes every guard of the group with each defined size at its definition. From
/// the reduced set's largest box, each side cut at one common cap, the largest at which every
/// definition at the box's top corner stays within its size's own set (one interval; each
/// definition nondecreasing ([`nondecreasing`]), so every tuple of the box lies between the
/// corners). Re-checked with the exact evaluator at every corner and at tuples spread over the
/// box; `None` when anything fails (no box is printed then).
fn defined_box(
    defs: &[&Defined],
    j: &JointSet,
    grp: &Group,
    budget: &Budget,
) -> Option<LargestBox> {
    let mut bounds = Vec::with_capacity(defs.len());
    for d in defs {
        let (lo, hi) = (d.own.min()?, d.own.max()?);
        if DimSet::interval(lo, hi) != d.own || !nondecreasing(&d.expr) {
            return None;
        }
        bounds.push((lo, hi));
    }
    let lb = largest_box(&j.tree, budget)?;
    // Each definition's value at `t`, all present (none past 128 bits).
    let eval = |t: &[i128]| -> Option<Vec<i128>> {
        chain_values(defs, &j.sizes, t)?.into_iter().collect()
    };
    let least: Vec<i128> = lb.sides.iter().map(|p| p.lo).collect();
    let inside = |v: &[i128]| {
        v.iter()
            .zip(&bounds)
            .all(|(x, (lo, hi))| (lo..=hi).contains(&x))
    };
    if least.iter().any(|&v| v < 0) || !eval(&least).is_some_and(|v| inside(&v)) {
        return None;
    }
    // Each side cut at `cap`: its greatest member at most `cap` (its least when above).
    let cut = |cap: i128| -> Vec<Progression> {
        lb.sides
            .iter()
            .map(|p| {
                let top = if cap >= p.hi {
                    p.hi
                } else if cap <= p.lo {
                    p.lo
                } else {
                    p.lo + (cap - p.lo) / p.modulus * p.modulus
                };
                Progression { hi: top, ..*p }
            })
            .collect()
    };
    let fits = |cap: i128| {
        let top: Vec<i128> = cut(cap).iter().map(|p| p.hi).collect();
        eval(&top).is_some_and(|v| v.iter().zip(&bounds).all(|(x, (_, hi))| x <= hi))
    };
    let (mut good, mut bad) = (
        least.iter().copied().min()?,
        lb.sides.iter().map(|p| p.hi).max()?.saturating_add(1),
    );
    if fits(bad - 1) {
        good = bad - 1;
    } else {
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if fits(mid) {
                good = mid;
            } else {
                bad = mid;
            }
        }
    }
    let sides = cut(good);
    let count = sides.iter().fold(1u128, |a, p| a.saturating_mul(p.count()));
    let passes = |t: &[i128]| {
        let Some(v) = eval(t) else { return false };
        if !defs.iter().zip(&v).all(|(d, &x)| d.own.contains(x)) {
            return false;
        }
        let env = |a: &str| match j.sizes.iter().position(|s| s == a) {
            Some(i) => Some(t[i]),
            None => defs.iter().position(|d| d.dim == a).map(|i| v[i]),
        };
        grp.guards.iter().all(|g| matches!(g.truth(&env), Ok(true)))
    };
    box_sample(&sides, count, grp.guards.len())
        .iter()
        .all(|t| passes(t))
        .then_some(LargestBox {
            sides,
            count,
            maximal: false,
        })
}

/// [`linked`] for a group decided in closed form ([`Solved::tied`]): the report over the tied
/// set's sizes ([`TiedSet::sizes`]): its count, its first boxes (one per block, so never all
/// of them over an unbounded range), its re-checked examples, no largest box (the spec is the
/// tied choice, [`Choice::Tied`](super::Choice::Tied)), nothing undecided.
fn tied_linked(
    t: &TiedSet,
    j: &JointSet,
    grp: &Group,
    budget: &Budget,
    name: &dyn Fn(&str) -> String,
    label: &dyn Fn(&str) -> String,
    claimed: &dyn Fn(&str) -> u128,
) -> Option<Linked> {
    let tr = tied_report(t, grp, name, label)?;
    let sources = t.sizes();
    let (boxes, complete) = t.boxes(100);
    let report = JointReport {
        dims: sources.iter().map(|s| name(s)).collect(),
        sources: sources.clone(),
        claimed: sources
            .iter()
            .map(|s| claimed(s))
            .fold(1u128, |a, c| a.saturating_mul(c)),
        accepted: tr.accepted,
        boxes: boxes
            .iter()
            .map(|b| b.iter().map(Feasible::from).collect())
            .collect(),
        boxes_complete: complete,
        largest_box: None,
        shared: None,
        accepted_examples: tr.accepted_examples.clone(),
        rejected_examples: tr.rejected_examples.clone(),
        undecided: None,
        summary: tr.summary.clone(),
        search: JointSearch {
            points: j.stats.points,
            periodic_solves: j.stats.periodic_solves,
            shared_nodes: j.stats.shared_nodes,
        },
        tied: Some(tr),
        equal: vec![],
        equations: vec![],
        link_excludes_some: None,
        defined: vec![],
    };
    Some(Linked {
        report,
        largest: None,
        shared: None,
        joint: j.clone(),
        tied: Some((t.clone(), largest_box(&t.reduced.tree, budget))),
        defined: None,
        equation: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Limits;
    use crate::joint::{group, solve_group};
    use crate::syntax::parse_guard;
    use crate::types::Expr;
    use std::collections::BTreeMap;

    fn g(s: &str) -> Expr {
        parse_guard(s).unwrap()
    }

    /// Two sizes defined by the others (two token inputs of one image at strides 16 and 8):
    /// both reported, and every tuple decided as the guards evaluated directly decide it
    /// (brute force near the small corner, the tokens on and off their products).
    #[test]
    fn several_defined_sizes_are_each_reported() {
        let guards: Vec<Expr> = [
            "n1 == (h // 16)*(w // 16)",
            "n2 == (h // 8)*(w // 8)",
            "(h // 16) != 1",
            "(w // 16) != 1",
        ]
        .iter()
        .map(|t| g(t))
        .collect();
        let names: Vec<String> = ["h", "w", "n1", "n2"].map(String::from).to_vec();
        let ranges: BTreeMap<String, (i128, i128)> = names
            .iter()
            .map(|n| (n.clone(), (2, (1i128 << 63) - 1)))
            .collect();
        let groups = group(&guards, &names);
        assert_eq!(groups.len(), 1);
        let grp = &groups[0];
        let s = solve_group(grp, &ranges, &Limits::default());
        assert!(s.undecided.is_none());
        let id = |x: &str| x.to_string();
        let l = linked(&s, grp, &Budget::default(), &id, &id, &|_| 1).expect("reported");
        let mut dims: Vec<&str> = l.report.defined.iter().map(|d| d.dim.as_str()).collect();
        dims.sort();
        assert_eq!(dims, ["n1", "n2"]);
        for t in &l.report.accepted_examples {
            assert_eq!(t.len(), 4, "{t:?}");
        }
        for h in 14..70i128 {
            for w in [15, 16, 31, 32, 47, 64] {
                let (p1, p2) = ((h / 16) * (w / 16), (h / 8) * (w / 8));
                for (n1, n2) in [(p1, p2), (p1 + 1, p2), (p1, p2 - 1)] {
                    let v = |x: &str| {
                        Some(match x {
                            "h" => h,
                            "w" => w,
                            "n1" => n1,
                            _ => n2,
                        })
                    };
                    let inside = [h, w, n1, n2].iter().all(|&x| x >= 2);
                    let truth = inside && guards.iter().all(|e| e.truth(&v) == Ok(true));
                    assert_eq!(s.contains(grp, &v), Some(truth), "{h} {w} {n1} {n2}");
                }
            }
        }
    }
}
