//! One size's answer from its group, built once for every command ([`size_answer`]): the sizes
//! it is linked with, what the joint set says of it (its values with some partner, its side of
//! the largest sound box, of a box through the traced sizes, of a shared or tied spec), the
//! size it is tied to, a defined size's values, and the nearest accepted sizes around a
//! rejected traced size. `diagnose`, `check` and `verify` fill their `dims[]` with it; only the
//! names differ (`name`, `partners`): which command it answers, the analysis does not know.

use super::answer::Ranked;
use super::group::{GroupAnswer, MemberAnswer, OwnSet};
use crate::joint::{self, Products};
use crate::report::{
    Decided, DefinedValues, Feasible, LinkedSides, Proof, SizeAnswer, Suggestion, TiedTo,
    Undecided, UndecidedSet,
};
use crate::suggest::unchecked_suggestion;
use crate::types::{DimSet, Expr};

/// What a front end tells [`size_answer`] about one size.
#[derive(Clone, Copy)]
pub struct Asked<'a> {
    /// The size's name in the report (`h`, `x_2`), which its suggestions' code assigns.
    pub label: &'a str,
    /// Names another size as the report does in a tie (`a_2` in `diagnose` and `verify`,
    /// `a[2]` in `check`), and in `linked_with` (where `check` writes sources).
    pub name: &'a dyn Fn(&str) -> String,
    /// Names another size in Python code (`a_2`).
    pub code: &'a dyn Fn(&str) -> String,
    /// Whether a variable is one of the report's sizes (a root a spec introduces, `_r` of
    /// `a_2 = 8*_r`, is not: a size derived from it is tied to an earlier size written the
    /// same way).
    pub is_size: &'a dyn Fn(&str) -> bool,
    /// The size's own values (its range, its claimed sizes): every set is within them.
    pub own: Option<&'a DimSet>,
    /// The size's set as the command states it (null when undecided): a size derived from a
    /// root answers with it through the relation, and a rejected traced size is measured
    /// against it.
    pub accepted: Option<&'a DimSet>,
    /// The traced size, for [`SizeAnswer::nearest_accepted`].
    pub example: Option<i128>,
    /// Which partners `linked_with` lists, and how it names them.
    pub partners: Partners,
    /// Whether the relations sizes are derived by are the spec's, not the guards' (`verify`):
    /// `tied_to` says so.
    pub spec_ties: bool,
}

/// Which partners a size's `linked_with` lists ([`Asked::partners`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Partners {
    /// Every other size of its group, as the group's variables name them (`check`: their
    /// sources).
    Every,
    /// The others of a group of several roots, named by [`Asked::name`] (`diagnose`, `verify`):
    /// a size tied to its root by an equality or a relation says so in `tied_to`.
    OfSeveralRoots,
}

/// The size `m` of group `g`'s answer: everything but the set, its
/// undecided part and its suggestions, which each command decides over its own values (a
/// diagnosed range, a program's claimed sizes, a spec's admitted ones).
pub fn size_answer(
    g: Option<&GroupAnswer>,
    m: Option<&MemberAnswer<'_>>,
    asked: &Asked<'_>,
) -> SizeAnswer {
    let mut a = SizeAnswer::default();
    // A linked size's traced value is measured against the values that pass with some partner
    // (the spec beside it admits those with the partner it writes), never against those that
    // pass with every partner: a value that runs with its traced partners is not "rejected".
    let some = m.and_then(|m| m.some.as_ref()).map(|s| match asked.own {
        Some(o) => s.intersect(o).unwrap_or_else(|_| s.clone()),
        None => s.clone(),
    });
    a.nearest_accepted = some
        .as_ref()
        .or(asked.accepted)
        .zip(asked.example)
        .and_then(|(s, x)| SizeAnswer::nearest(s, x));
    let (Some(g), Some(m)) = (g, m) else {
        return a;
    };
    a.linked_with = match asked.partners {
        Partners::Every => m.linked_with.clone(),
        // A size tied to its root by an equality or a relation says so in `tied_to` (and
        // `diagnose`'s readers, the Python export loop among them, read `linked_with` as
        // "decided jointly").
        Partners::OfSeveralRoots if g.grp.roots.len() > 1 => {
            m.linked_with.iter().map(|v| (asked.name)(v)).collect()
        }
        Partners::OfSeveralRoots => vec![],
    };
    a.sides = sides(g, m, asked);
    a
}

/// The size's sides of its group's joint set.
fn sides(g: &GroupAnswer, m: &MemberAnswer<'_>, asked: &Asked<'_>) -> LinkedSides {
    let label = asked.label;
    let within = |s: &DimSet| match asked.own {
        Some(o) => s.intersect(o).ok(),
        None => Some(s.clone()),
    };
    let l = g.linked.as_ref();
    let level = l.and_then(|l| l.joint.level(&m.member.root));
    let periodic = |p| unchecked_suggestion(label, p, Proof::Periodic);
    // Only from a decided group: an undecided one's joint set may miss tuples.
    let with_some_partner = m
        .some
        .as_ref()
        .filter(|_| g.solved.undecided.is_none())
        .and_then(within);
    let mut s = LinkedSides {
        with_some_partner: with_some_partner.as_ref().map(Feasible::from),
        // Its side of the largest box, with the certificate the box was re-checked with.
        box_side: m.box_side.as_ref().map(|p| {
            let mut s = periodic(p);
            let side = l
                .and_then(|l| l.report.largest_box.as_ref())
                .zip(level)
                .map(|(b, lv)| &b.sides[lv]);
            if let Some(side) = side {
                s.certificate = side.certificate;
                s.certificate_note = side.certificate_note.clone();
            }
            s
        }),
        example_box_side: m.example_side.as_ref().map(periodic),
        shared_side: shared_side(g, m, label, asked.code),
        link_excludes_none: l
            .filter(|_| !m.linked_with.is_empty())
            .and_then(|l| l.report.excludes_none(&m.member.name)),
        tied_to: None,
        defined_values: None,
    };
    // A size the others define by a product of two factors: its values with some partner.
    if let (Some(d), Some(p)) = (g.defined(&m.member.name), m.products.as_ref()) {
        s.defined_values = Some(defined_values(p, &d.relation, asked.code));
    }
    s.tied_to = tied_to(g, m, asked, s.with_some_partner.as_ref());
    s
}

/// Its side under the group's one spec when that spec writes it from its partner: a tied
/// block, else one `Dim` shared with the partner.
fn shared_side(
    g: &GroupAnswer,
    m: &MemberAnswer<'_>,
    label: &str,
    name: &dyn Fn(&str) -> String,
) -> Option<Suggestion> {
    let l = g.linked.as_ref();
    let tied = m.tied_side.as_ref().map(|(p, from)| {
        let mut s = unchecked_suggestion(label, p, Proof::Periodic);
        s.certificate_note = Some(
            "re-checked at the spec's corners and tuples spread over it; exact by the closed form (see linked)".into(),
        );
        if let (Some((a, _)), Some(joint::Choice::Paired(_))) = (from, g.choice.as_ref()) {
            s.code = joint::paired_alias(label, &name(a));
        } else if let Some((a, delta)) = from {
            let block = l
                .and_then(|l| l.tied.as_ref())
                .and_then(|(t, _)| {
                    t.ties
                        .iter()
                        .find(|(x, _)| x.b == m.member.root)
                        .map(|(x, _)| x.d)
                })
                .unwrap_or(1);
            s.code = joint::tied_alias(label, &name(a), *delta, block);
        }
        s
    });
    tied.or_else(|| {
        m.shared_side.as_ref().map(|(p, a)| {
            let mut s = unchecked_suggestion(label, p, Proof::Periodic);
            if let Some(sh) = l.and_then(|l| l.report.shared.as_ref()) {
                s.certificate = sh.side.certificate;
            }
            if let Some(a) = a {
                s.code = if m.member.name == m.member.root {
                    // A root written as its partner by the group's choice, not by a guard.
                    crate::python::shared(label, &name(a))
                } else {
                    crate::python::alias(label, &name(a), m.member.coef, m.member.offset)
                };
            }
            s
        })
    })
}

/// A size's line under its group's one spec ([`GroupAnswer::choice`]): the same line in
/// every command's paste block ([`group_line`]).
#[derive(Debug, Clone)]
pub enum GroupLine {
    /// A size derived from a root (`b = 2*a + 1`): written from the root's line, never as a
    /// `Dim` of its own (two sizes of one root with `Dim`s of their own would no longer move
    /// together, and a linking guard could fail between them).
    Derived {
        /// The root's variable.
        root: String,
        /// `coef` of `coef*root + offset`.
        coef: i128,
        /// `offset` of `coef*root + offset`.
        offset: i128,
    },
    /// A size the others define (`tokens_1 == (image_2//16)*(image_3//16)`): torch derives it
    /// from them; its `Dim.AUTO` line over the definition's range on the group's box (else its
    /// own range), with the relation as a comment.
    Defined(String),
    /// Its side of the group's spec: a `Dim` of its own, or a tie to the partner the spec
    /// writes it from (`from_partner`: then its line is that tie, whatever its own range).
    Side {
        /// The side, its `code` the line.
        side: Suggestion,
        /// Whether the line writes it from its partner (`depth_2 = rgb_2`).
        from_partner: bool,
    },
}

/// The line of size `m` under its group's one spec, named `label` (its partners named by
/// `code`): a derived size from its root; a defined size's `Dim.AUTO` (over `range`, its own
/// sizes, when the group's box gives no range); else its side of the group's [`Choice`](
/// crate::joint::Choice): a `Dim` shared with its partner or a tie to it, its side of the box
/// through the traced sizes, or of the largest sound box (`None` when the group is undecided
/// or has no spec). `diagnose`'s block, `check`'s corrected spec and `verify`'s maximal spec
/// all write a linked size with it.
pub fn group_line(
    g: &GroupAnswer,
    m: &MemberAnswer<'_>,
    label: &str,
    code: &dyn Fn(&str) -> String,
    range: Option<(i128, i128)>,
) -> Option<GroupLine> {
    use crate::joint::Choice;
    let member = m.member;
    if member.root != member.name {
        return Some(GroupLine::Derived {
            root: member.root.clone(),
            coef: member.coef,
            offset: member.offset,
        });
    }
    if let Some(d) = g.defined(&member.name) {
        let (lo, hi) = match g.defined_range(&member.name) {
            Some((lo, hi)) => (Some(lo), Some(hi)),
            None => (range.map(|r| r.0), range.map(|r| r.1)),
        };
        let relation = format!("{label} = {}", d.relation);
        return Some(GroupLine::Defined(crate::python::defined_line(
            label, lo, hi, &relation,
        )));
    }
    if g.solved.undecided.is_some() {
        return None;
    }
    let l = g.linked.as_ref()?;
    let level = l.joint.level(&member.root)?;
    match g.choice.as_ref()? {
        Choice::Shared(_) | Choice::Tied(_) | Choice::Paired(_) => {
            let from_partner = m.tied_side.as_ref().is_some_and(|(_, f)| f.is_some())
                || (m.tied_side.is_none()
                    && m.shared_side.as_ref().is_some_and(|(_, a)| a.is_some()));
            Some(GroupLine::Side {
                side: shared_side(g, m, label, code)?,
                from_partner,
            })
        }
        Choice::Example(sides) | Choice::Largest(sides) => Some(GroupLine::Side {
            side: unchecked_suggestion(label, &member.side(sides.get(level)?), Proof::Periodic),
            from_partner: false,
        }),
    }
}

/// The size it is tied to: the root it is derived from (`b = 2*a + 1`; its values are the
/// root's answer through the relation), else the partner the group's one spec writes it from
/// (its values with some partner).
fn tied_to(
    g: &GroupAnswer,
    m: &MemberAnswer<'_>,
    asked: &Asked<'_>,
    with_some_partner: Option<&Feasible>,
) -> Option<TiedTo> {
    let name = asked.name;
    let member = m.member;
    // Derived from a root: the root when it is a size, else an earlier size of the group
    // written the same way (`a_2 = 8*_r` and `b_2 = 8*_r`: equal).
    let partner = if member.root == member.name {
        None
    } else if (asked.is_size)(&member.root) {
        Some((member.root.clone(), member.coef, member.offset))
    } else {
        g.grp
            .members
            .iter()
            .take_while(|o| o.name != member.name)
            .find(|o| {
                (&o.root, o.coef, o.offset) == (&member.root, member.coef, member.offset)
                    && (asked.is_size)(&o.name)
            })
            .map(|o| (o.name.clone(), 1, 0))
    };
    if let Some((p, k, off)) = partner {
        let shown = name(&p);
        let mut relation = format!("equal to {}", crate::python::derived(&shown, k, off));
        if asked.spec_ties {
            relation.push_str(" (the spec writes it so)");
        }
        return Some(TiedTo {
            relation,
            equal: (k, off) == (1, 0),
            partner: shown,
            source: p,
            accepted: asked.accepted.map(Feasible::from),
        });
    }
    let (a, relation, equal) = g.tie(m, name)?;
    Some(TiedTo {
        partner: name(&a),
        source: a,
        relation,
        equal,
        accepted: with_some_partner.cloned(),
    })
}

/// A defined size's values with some partner ([`LinkedSides::defined_values`]), named as the
/// report names sizes.
fn defined_values(p: &Products, relation: &str, name: &dyn Fn(&str) -> String) -> DefinedValues {
    let named = |e: &Expr| e.renamed(name).to_string();
    // The least members and non-members, within the first values of the own set.
    let (lo, hi) = p.within;
    let first = (lo..=hi).take(10_000);
    let examples: Vec<i128> = first.clone().filter(|&n| p.contains(n)).take(5).collect();
    let excluded: Vec<i128> = first.filter(|&n| !p.contains(n)).take(5).collect();
    DefinedValues {
        form: "products".into(),
        relation: relation.to_string(),
        factors: [named(&p.factors[0]), named(&p.factors[1])],
        ranges: p
            .ranges
            .iter()
            .map(|[a, b]| [[a.0, a.1], [b.0, b.1]])
            .collect(),
        within: [lo, hi],
        text: p.text(&named),
        examples,
        excluded_examples: excluded,
    }
}

/// The values of `domain` that pass every guard of `guards`, each decided over `domain` for
/// the size `var` ([`joint::decide`]: the engine, then `prover` when given); a guard that names
/// another size is decided for every value of it. The set `verify` reports per size (the
/// admitted values that pass, and the set its maximal spec is ranked in), and the one the
/// analysis gives a size alone under [`Problem::by_guard`](super::Problem::by_guard)
/// (`diagnose`'s `feasible`, with a line per guard).
///
/// ```
/// use dimguard_solver::analyze::own_set;
/// use dimguard_solver::engine::Limits;
/// use dimguard_solver::{parse_guard, DimSet};
///
/// let (a, b) = (parse_guard("x % 8 == 0").unwrap(), parse_guard("x <= 40").unwrap());
/// let own = own_set(&[&a, &b], "x", &DimSet::interval(2, 64), &Limits::default(), None);
/// assert!(own.periodic());
/// assert_eq!(own.set.unwrap().iter().collect::<Vec<_>>(), vec![8, 16, 24, 32, 40]);
/// ```
pub fn own_set(
    guards: &[&Expr],
    var: &str,
    domain: &DimSet,
    limits: &crate::engine::Limits,
    prover: Option<joint::Prover>,
) -> OwnSet {
    let decisions: Vec<joint::Decision> = guards
        .iter()
        .map(|g| joint::decide(g, var, domain, limits, prover))
        .collect();
    OwnSet::new(decisions, domain)
}

/// A size's exact set and the ranked suggestions inside it, re-checked as
/// [`suggestions`](super::suggestions) says (`limit` of them; `example`: prefer one holding the
/// traced size): the last step of every command's answer. Returns the ranking (its
/// progressions, maximality and how many candidates were withheld).
#[allow(clippy::too_many_arguments)]
pub fn set_and_specs(
    a: &mut SizeAnswer,
    set: &DimSet,
    example: Option<i128>,
    limit: usize,
    recheck: Option<&[&Expr]>,
    var: &str,
    label: &str,
    proof: Proof,
) -> Ranked {
    let r = super::answer::suggestions(set, example, limit, recheck, var, label, proof);
    a.accepted = Some(Feasible::from(set));
    a.suggestions = r.suggestions.clone();
    r
}

/// A program's size, for [`claimed_answer`]: what its claimed sizes and the graph say.
pub struct Claimed<'a> {
    /// The stage's accepted set for the size within its claimed sizes, or why there is none.
    pub accepted: &'a Decided<DimSet>,
    /// Values neither proven to pass nor to fail, with why (the stage's, and the graph's
    /// conditions it cannot decide).
    pub unsure: Option<&'a (DimSet, Undecided)>,
    /// The guards over this size alone, for the value-by-value re-check of its suggestions.
    pub guards: &'a [&'a Expr],
    /// The size's variable.
    pub var: &'a str,
    /// For a size the others define: its relation, in the report's names.
    pub relation: Option<&'a str>,
}

/// `check`'s whole answer for one size over its claimed sizes (`asked.own`): the group's part
/// ([`size_answer`]), then the accepted set (empty, with every claimed size undecided, when the
/// stage has none), the undecided part with why (a size of a group with a defined size whose
/// values with some partner are not computed is undecided, never rejected), ranked suggestions
/// (re-checked value by value against its own guards when it is not linked), and, returned
/// beside it, the first few claimed sizes that fail with every partner.
pub fn claimed_answer(
    g: Option<&GroupAnswer>,
    m: Option<&MemberAnswer<'_>>,
    asked: &Asked<'_>,
    c: &Claimed<'_>,
) -> (SizeAnswer, Vec<i128>) {
    let claimed = asked.own;
    let set = match c.accepted {
        Ok(set) => set,
        Err(e) => {
            // Nothing proven: `accepted` is empty (never null) and the claimed sizes are
            // undecided, with the reason.
            let mut a = size_answer(g, m, asked);
            a.accepted = Some(Feasible::from(&DimSet::empty()));
            a.undecided = Some(UndecidedSet::new(claimed.unwrap_or(&DimSet::empty()), e));
            return (a, vec![]);
        }
    };
    let some = m.and_then(|m| m.some.as_ref());
    let linked = m.is_some_and(|m| !m.linked_with.is_empty());
    // Its values with some partner as a product of two factors (`sides.defined_values`).
    let products = g
        .zip(m)
        .is_some_and(|(g, m)| g.defined(&m.member.name).is_some() && m.products.is_some());
    let within = |s: &DimSet| match claimed {
        Some(o) => s.intersect(o).unwrap_or_else(|_| s.clone()),
        None => s.clone(),
    };
    let mut doubt = c.unsure.map(|(s, why)| (within(s), why.clone()));
    let defined_group = g.is_some_and(|g| g.solved.defined.is_some());
    if let (true, None, None, false) = (defined_group, some, &doubt, products) {
        // A size of a group with a defined size whose values with some partner are not
        // computed: undecided with why, never rejected.
        let own = g
            .and_then(|g| g.linked.as_ref()?.defined.as_ref())
            .filter(|x| x.dim == c.var)
            .map(|x| x.own.clone())
            .or_else(|| claimed.cloned());
        let set = own.map_or_else(DimSet::empty, |o| within(&o));
        let why = Undecided::DefinedBy {
            relation: c.relation.map(str::to_string),
        };
        doubt = Some((set, why));
    }
    let mut rejected = vec![];
    if let Some(cl) = claimed {
        // Only sizes that fail with every partner, never an undecided one: a linked size
        // whose projection is not known lists none.
        let passes = match some {
            Some(p) => Some(p),
            None if !linked => Some(set),
            None => None,
        };
        if let Some(passes) = passes {
            let mut no = cl.difference(passes).unwrap_or_default();
            if let Some((u, _)) = &doubt {
                no = no.difference(u).unwrap_or_default();
            }
            rejected = no.iter().take(5).collect();
        }
    }
    let undecided = doubt
        .filter(|(u, _)| !u.is_empty())
        .map(|(u, why)| UndecidedSet::new(&u, why));
    // The group's part, given the set when it is decided: a size derived from a root answers
    // with it through the relation, and a rejected traced size gets the nearest accepted ones.
    let decided = Asked {
        accepted: undecided.is_none().then_some(set),
        ..*asked
    };
    let mut a = size_answer(g, m, &decided);
    a.undecided = undecided;
    // A defined size's values that fail with every partner: outside its products.
    if let Some(v) = &a.sides.defined_values {
        rejected = v
            .excluded_examples
            .iter()
            .copied()
            .filter(|&n| claimed.is_none_or(|cl| cl.contains(n)))
            .collect();
    }
    // The pipeline's last step, as in `diagnose`: ranked, and re-checked value by value
    // against the size's own guards when it is not linked (a linked size's spec is its side
    // of the largest sound box, re-checked with the joint set).
    set_and_specs(
        &mut a,
        set,
        asked.example,
        4,
        (!linked).then_some(c.guards),
        c.var,
        asked.label,
        Proof::Periodic,
    );
    (a, rejected)
}
