//! One group of sizes the guards link, solved ([`GroupAnswer`]), and what it knows about each
//! of its sizes ([`MemberAnswer`]).

use crate::joint::{self, Choice, Group, Member, Solved};
use crate::linked::LargestBox;
use crate::report::{Decided, DefinedReport, Undecided};
use crate::types::{DimSet, Progression};

/// One group of sizes the guards link, solved.
#[derive(Debug, Clone)]
pub struct GroupAnswer {
    /// The group: its members (each `coef*root + offset`), roots, guards and their origins.
    pub grp: Group,
    /// Its solution: per root the values that pass with every value of the others, the joint
    /// set, each guard's fate.
    pub solved: Solved,
    /// Its joint set as reported, with the largest sound box (groups of several roots whose
    /// own guards were decided).
    pub linked: Option<joint::Linked>,
    /// A sound box through the traced sizes, when the largest box leaves them out.
    pub example_box: Option<LargestBox>,
    /// The group's one choice of spec, which every member's line follows.
    pub choice: Option<Choice>,
    /// Why the group has no [`Self::choice`] when the command's budget ran out before it was
    /// found (the box search cut short): each member's values not proven to pass with every
    /// partner are then undecided with this reason, never left without a line or an answer.
    pub cut: Option<Undecided>,
}

/// A size alone (a group of one size, which no guard links to another) solved guard by guard
/// (`Problem::by_guard`): the stage's whole answer for it, and nothing more (a text of 75,000
/// sizes holds one each: a [`GroupAnswer`] apiece doubled the time to read such a text).
#[derive(Debug, Clone)]
pub struct Alone {
    /// The range its guards were decided over (`own.domain`'s ends).
    pub range: (i128, i128),
    /// Each of its guards' index in `Problem::guards`, in order (ascending), as `own`'s
    /// decisions are.
    pub origin: Vec<usize>,
    /// Each guard decided over the size's whole range, and the set they leave. A front end may
    /// move a decision's set into its report (`Analysis::alone_mut`; `diagnose`'s line per
    /// guard): it is then `None` here, its fate kept.
    pub own: OwnSet,
}

impl Alone {
    /// The decision of guard `k` (its index in `Problem::guards`), to move its set into a
    /// report: the set moved out, the fate and period copied.
    pub fn take_decision(&mut self, k: usize) -> Option<joint::Decision> {
        // A size alone's guards are in the order given (a text of 10,000 guards of one size
        // asks for each: no scan per guard).
        let p = self.origin.binary_search(&k).ok()?;
        let d = self.own.decisions.get_mut(p)?;
        Some(joint::Decision {
            set: d.set.take(),
            fate: d.fate.clone(),
            period: d.period,
        })
    }
}

/// What the stage knows about one size of a group ([`GroupAnswer::member`]).
#[derive(Debug, Clone)]
pub struct MemberAnswer<'a> {
    /// The member (`coef*root + offset`).
    pub member: &'a Member,
    /// The values that pass with every value of the others, or why they are not known.
    pub accepted: Decided<DimSet>,
    /// Values neither proven to pass nor to fail, with why.
    pub unsure: Option<(DimSet, Undecided)>,
    /// For a linked size: the values that pass with some value of the others.
    pub some: Option<DimSet>,
    /// Its side of the largest sound box.
    pub box_side: Option<Progression>,
    /// Its side under one `Dim` shared with its partner, and the size it is written from.
    pub shared_side: Option<(Progression, Option<String>)>,
    /// Its side of the box through the traced sizes.
    pub example_side: Option<Progression>,
    /// Its side under the group's tied choice ([`Choice::Tied`]), and for a tied size the size
    /// it is written from and the offset (`b = a + delta`).
    pub tied_side: Option<(Progression, Option<(String, i128)>)>,
    /// The other members' variables (empty for a size alone).
    pub linked_with: Vec<String>,
    /// For a size the others define by a product of two factors: its values with some partner
    /// ([`joint::Defined::products`]).
    pub products: Option<joint::Products>,
}

impl GroupAnswer {
    /// The tie of member `m` to its partner, when the group's one spec writes it from the
    /// partner (a tied block, or one `Dim` shared with it): the partner's variable, and the tie
    /// in words with `name` naming sizes as the report does ("in the block of 4 values holding
    /// a_2", "equal to 2*a_2 + 1"). The size's answer is then its partner's, through the tie:
    /// its values that pass with some partner value ([`MemberAnswer::some`]).
    pub fn tie(
        &self,
        m: &MemberAnswer<'_>,
        name: &dyn Fn(&str) -> String,
    ) -> Option<(String, String, bool)> {
        if let Some((_, Some((a, delta)))) = &m.tied_side {
            let block = self
                .linked
                .as_ref()
                .and_then(|l| l.tied.as_ref())
                .and_then(|(t, _)| t.ties.iter().find(|(x, _)| x.b == m.member.root))
                .map_or(1, |(x, _)| x.d);
            let target = crate::python::linear(crate::num::q(1), &name(a), *delta);
            let relation = if block == 1 {
                format!("equal to {target}")
            } else {
                format!("in the block of {block} values holding {target}")
            };
            return Some((a.clone(), relation, block == 1 && *delta == 0));
        }
        if let Some((_, Some(a))) = &m.shared_side {
            let coef = crate::num::q(m.member.coef);
            let target = crate::python::linear(coef, &name(a), m.member.offset);
            let equal = (m.member.coef, m.member.offset) == (1, 0);
            return Some((a.clone(), format!("equal to {target}"), equal));
        }
        None
    }

    /// For a size the others define: its entry of `joint[].defined`.
    pub fn defined(&self, var: &str) -> Option<&DefinedReport> {
        let l = self.linked.as_ref()?;
        l.report.defined.iter().find(|d| d.source == var)
    }

    /// For a size the others define: its relation in the report's names
    /// (`tokens_1 = ((image_3 // 16)*(image_2 // 16))`), which a spec line keeps as a comment
    /// (torch cannot write a floor-derived `Dim`).
    pub fn defined_relation(&self, var: &str) -> Option<String> {
        let d = self.defined(var)?;
        Some(format!("{} = {}", d.dim, d.relation))
    }

    /// For a size the others define, when the group's spec is a box of the others
    /// ([`Choice::Largest`] of a [`joint::Linked::defined`] group): the least and greatest value
    /// of its definition over that box (at its least and its top corner: the definition is
    /// nondecreasing there), the range its `Dim.AUTO` line takes.
    pub fn defined_range(&self, var: &str) -> Option<(i128, i128)> {
        let l = self.linked.as_ref()?;
        let d = l.defined.as_ref()?;
        let Some(Choice::Largest(sides)) = &self.choice else {
            return None;
        };
        let at = |t: Vec<i128>| d.value_at(var, &l.joint.sizes, &t);
        Some((
            at(sides.iter().map(|p| p.lo).collect())?,
            at(sides.iter().map(|p| p.hi).collect())?,
        ))
    }

    /// The values of member `m` that pass with every value of the others (its root's answer
    /// through its relation), within `own` when given; `None` when the group is undecided or a
    /// set operation fails.
    pub fn decided(&self, m: &MemberAnswer<'_>, own: Option<&DimSet>) -> Option<DimSet> {
        let set = m
            .accepted
            .as_ref()
            .ok()
            .filter(|_| self.solved.undecided.is_none())?;
        match own {
            Some(o) => set.intersect(o).ok(),
            None => Some(set.clone()),
        }
    }

    /// Whether the group links several sizes (several roots, or sizes derived from one root).
    pub fn is_multi(&self) -> bool {
        self.grp.roots.len() > 1 || self.grp.members.len() > 1
    }

    /// Why the group has no answer, when it has none.
    pub fn undecided(&self) -> Option<String> {
        self.solved.undecided.as_ref().map(|u| u.to_string())
    }

    /// Member `m`'s values in its group's joint set that are not proven to pass with every
    /// partner (`accepted`), undecided because `why` (a budget ran out), when any. The
    /// difference is a set operation past the deadline, which may stop for it (a periodic
    /// `accepted`: text a19's multiples of 2560): then no value is proven to pass with every
    /// partner (`accepted` becomes `why`) and the whole domain is undecided, never silent.
    fn cut_short(
        &self,
        m: &Member,
        l: &joint::Linked,
        accepted: &mut Decided<DimSet>,
        why: &Undecided,
    ) -> Option<(DimSet, Undecided)> {
        let domain = m
            .image(l.joint.domains.get(l.joint.level(&m.root)?)?)
            .ok()?;
        let left = match accepted.as_ref().map(|a| domain.difference(a)) {
            Ok(Ok(left)) => left,
            Ok(Err(_)) => {
                *accepted = Err(why.clone());
                domain
            }
            Err(_) => domain,
        };
        (!left.is_empty()).then(|| (left, why.clone()))
    }

    /// What the stage knows about the size `var`, when it is a member.
    pub fn member(&self, var: &str) -> Option<MemberAnswer<'_>> {
        let m = self.grp.members.iter().find(|m| m.name == var)?;
        let image = |s: &DimSet| m.image(s).map_err(Undecided::Exact);
        let mut accepted = match self.solved.accepted.get(&m.root) {
            Some(set) => image(set),
            None => Err(Undecided::NotSolved),
        };
        // Values are unsure only where a guard is undecided, which says why.
        let reason = self
            .solved
            .undecided
            .clone()
            .unwrap_or(Undecided::NotSolved);
        let mut unsure = self
            .solved
            .unsure
            .get(&m.root)
            .and_then(|s| image(s).ok())
            .map(|s| (s, reason));
        let l = self.linked.as_ref();
        let some = match l.map(|l| l.some(m)) {
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => {
                // The budget ran out before its values with some partner were found (the
                // error says so, or a set operation failed past the deadline): the values not
                // proven to pass with every partner are undecided, never rejected.
                let cut = match e {
                    crate::Error::Exhausted(e) => Some(e),
                    _ => crate::budget::exhausted(),
                };
                if let (None, Some(e)) = (&unsure, cut) {
                    let why = Undecided::Exhausted(e);
                    unsure = l.and_then(|l| self.cut_short(m, l, &mut accepted, &why));
                }
                None
            }
            None => None,
        };
        if let (None, Some(l), Some(why)) = (&unsure, l, &self.cut) {
            // No spec for the group within the budget: what is not proven is undecided.
            unsure = self.cut_short(m, l, &mut accepted, why);
        }
        let example_side = self
            .example_box
            .as_ref()
            .zip(l.and_then(|l| l.joint.level(&m.root)))
            .map(|(b, lv)| m.side(&b.sides[lv]));
        let linked_with = if self.is_multi() {
            self.grp
                .members
                .iter()
                .filter(|o| o.name != m.name)
                .map(|o| o.name.clone())
                .collect()
        } else {
            vec![]
        };
        Some(MemberAnswer {
            member: m,
            accepted,
            unsure,
            some,
            box_side: l.and_then(|l| l.side(m)),
            shared_side: l
                .and_then(|l| l.shared_side(m))
                .map(|(p, a)| (p, a.map(str::to_string))),
            example_side,
            tied_side: l.and_then(|l| l.tied_side(self.choice.as_ref(), m)),
            linked_with,
            products: l.and_then(|l| {
                let d = l.defined.as_ref().filter(|d| d.dim == m.name)?;
                d.products(&l.joint)
            }),
        })
    }
}

/// A size's set under its own guards (`own_set`): each guard's decision over the size's
/// values, and what they leave.
#[derive(Debug, Clone)]
pub struct OwnSet {
    /// Each guard's decision, in order.
    pub decisions: Vec<joint::Decision>,
    /// The values that pass every guard, or why there is no answer (the first undecided
    /// guard's reason, or a set operation past the budget).
    pub set: Decided<DimSet>,
    /// The values every guard was decided over (the size's range).
    pub domain: DimSet,
}

impl OwnSet {
    /// The set `decisions` leave of `domain` (each guard decided over all of it): their
    /// intersection, or the first undecided guard's reason.
    pub fn new(decisions: Vec<joint::Decision>, domain: &DimSet) -> OwnSet {
        let set = leave(&decisions, domain);
        OwnSet {
            decisions,
            set,
            domain: domain.clone(),
        }
    }

    /// Whether the periodic method decided every guard (the set's suggestions are then proven
    /// by it; else by enumeration or Z3).
    pub fn periodic(&self) -> bool {
        self.decisions
            .iter()
            .all(|d| d.fate == joint::Fate::Solved(crate::report::GuardFate::Periodic))
    }
}

/// The values of `domain` that `decisions` (each guard's, over all of `domain`) leave: their
/// intersection, or why there is none (the first undecided guard's reason, or the set operation
/// that failed).
pub(super) fn leave(decisions: &[joint::Decision], domain: &DimSet) -> Result<DimSet, Undecided> {
    if let Some(why) = decisions.iter().find_map(|d| match &d.fate {
        joint::Fate::Undecided(why) => Some(why.clone()),
        _ => None,
    }) {
        return Err(why);
    }
    decisions
        .iter()
        .filter_map(|d| d.set.as_ref())
        .try_fold(domain.clone(), |acc, s| acc.intersect(s))
        .map_err(Undecided::Exact)
}
