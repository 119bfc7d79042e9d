//! A group's joint set as the reports carry it ([`Linked`]): the spec choice it offers
//! ([`Choice`]), each size's side, and the check of a side against the rest of the set.

use super::grouping::{Group, Member};
use super::solved::{BoxAnswer, Defined, Equation, Paired, Prover};
use crate::expr::Value;
use crate::linked::{box_through, JointSet, LargestBox, TiedSet, TiedSpec};
use crate::report::JointReport;
use crate::suggest::rank;
use crate::types::{DimSet, Expr, Progression};

/// A group's joint set as the reports carry it (`check`'s `joint`, `diagnose`'s and `verify`'s
/// `joint_sets`), and its largest sound box.
#[derive(Debug, Clone)]
pub struct Linked {
    /// The report entry.
    pub report: JointReport,
    /// The largest box of one progression per root, in the joint set's level order.
    pub largest: Option<LargestBox>,
    /// For two sizes: one progression both take at once, when it admits more than the box.
    pub shared: Option<Progression>,
    /// The joint set (in root names).
    pub joint: JointSet,
    /// The group's answer in closed form when guards tie sizes
    /// ([`Solved::tied`](super::Solved::tied)), with the largest box of its reduced set.
    pub tied: Option<(TiedSet, Option<LargestBox>)>,
    /// A size the others define ([`Solved::defined`](super::Solved::defined)): `joint` is then
    /// the reduced group's, over the others, and no size has a box, a shared side or a set of
    /// its own here.
    pub defined: Option<Box<Defined>>,
    /// Sizes linked by one equation of products ([`Solved::equation`](super::Solved::equation)):
    /// `joint` is then the product of their own sets (the equation cuts it), and no size has a
    /// box of its own.
    pub equation: Option<Box<Equation>>,
}

/// The spec a linked group takes, chosen once for the whole group ([`Linked::choice`]): every
/// member's line (named or not) comes from the same answer, so the lines are sound together.
/// One member under a shared `Dim` and another on its side of a box would not be: for
/// `|x - y| <= 1` and `x + y <= 21` traced at (10, 11), `x` in 2..10 (the shared `Dim`) and `y`
/// in 9..11 (the box through the traced sizes) admit (2, 11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    /// One `Dim` both roots take at once (over the roots), when it admits more than the largest
    /// box and holds the traced sizes.
    Shared(Progression),
    /// A sound box through the traced sizes (one side per root, in level order), when the
    /// largest box leaves them out: torch refuses a spec that excludes its example inputs.
    Example(Vec<Progression>),
    /// The largest sound box (one side per root, in level order).
    Largest(Vec<Progression>),
    /// For a tied group ([`Linked::tied`]): a sound box of the sizes no tie binds, each tied
    /// size written from its partner (`b = a`, or `a` plus the traced difference inside one
    /// block), re-checked at its corners and at tuples spread over it.
    Tied(TiedSpec),
    /// For sizes linked by one equation of products ([`Linked::equation`]): each size of one
    /// side a `Dim`, each of the other written as the size whose term it matches (equal terms
    /// make the products equal), re-checked at its corners.
    Paired(Paired),
}

impl Linked {
    /// The group's [`Choice`]: one shared `Dim` when there is one and it holds every traced size
    /// (`traced`, by size) at one value of the roots, else the box through the traced sizes when
    /// the largest box leaves them out (`example`, [`Linked::example_box`]), else the largest
    /// box; `None` when no box passes.
    pub fn choice(
        &self,
        grp: &Group,
        traced: &dyn Fn(&str) -> Option<i128>,
        example: Option<&LargestBox>,
    ) -> Option<Choice> {
        if let Some((t, lb)) = &self.tied {
            return tied_choice(t, lb.as_ref(), grp, traced).map(Choice::Tied);
        }
        if let Some(e) = &self.equation {
            let p = e.paired(traced)?;
            return paired_holds(&p, &self.joint.sizes, grp).then_some(Choice::Paired(p));
        }
        if let Some(p) = &self.shared {
            // Each traced member's root value: the shared Dim holds them when they are one
            // value of `p` (the roots are equal under it).
            let roots: Option<Vec<i128>> = grp
                .members
                .iter()
                .filter_map(|m| {
                    let v = traced(&m.name)? - m.offset;
                    Some((v % m.coef == 0).then(|| v / m.coef))
                })
                .collect();
            if roots.is_some_and(|r| r.iter().all(|&v| p.contains(v) && v == r[0])) {
                return Some(Choice::Shared(*p));
            }
        }
        if let Some(b) = example {
            return Some(Choice::Example(b.sides.clone()));
        }
        self.largest
            .as_ref()
            .map(|b| Choice::Largest(b.sides.clone()))
    }

    /// For a group of two sizes whose diagonal beats the largest box: `member`'s spec under one
    /// shared `Dim`: the shared progression (mapped to the member), and for every member but
    /// the first root the first root, which it is written from (`member.coef * first +
    /// member.offset`, [`crate::python::alias`]).
    pub fn shared_side(&self, member: &Member) -> Option<(Progression, Option<&str>)> {
        let p = self.shared.as_ref()?;
        let l = self.joint.level(&member.root)?;
        let alias = (l == 1 || member.name != member.root).then(|| self.joint.sizes[0].as_str());
        Some((member.side(p), alias))
    }

    /// The values of `member` that pass with some value of the others (from the tied set when
    /// the group is tied).
    pub fn some(&self, member: &Member) -> Result<DimSet, crate::Error> {
        if let Some(d) = &self.defined {
            return member.image(&d.some(&self.joint, &member.root)?);
        }
        if let Some(e) = &self.equation {
            let set = e.some.get(&member.root).ok_or_else(|| {
                crate::Error::NotComputed(format!("{}'s values with some partner", member.name))
            })?;
            return member.image(set);
        }
        let p = match &self.tied {
            Some((t, _)) => t.projection(&member.root)?,
            None => self.joint.projection(&member.root)?,
        };
        member.image(&p)
    }

    /// `member`'s side under a tied choice ([`Choice::Tied`]), and for a tied root the root
    /// it is written from and the offset.
    pub fn tied_side(
        &self,
        choice: Option<&Choice>,
        member: &Member,
    ) -> Option<(Progression, Option<(String, i128)>)> {
        if let (Some(Choice::Paired(p)), Some(l)) = (choice, self.joint.level(&member.root)) {
            let (side, from) = p.sides.get(l)?;
            return Some((member.side(side), from.clone().map(|a| (a, 0))));
        }
        let (Some((t, _)), Some(Choice::Tied(spec))) = (&self.tied, choice) else {
            return None;
        };
        let (p, from) = spec.side(t, &member.root)?;
        Some((member.side(&p), from.filter(|_| member.name == member.root)))
    }

    /// The side of the largest box for `member` (a root or a size derived from one).
    pub fn side(&self, member: &Member) -> Option<Progression> {
        let b = self.largest.as_ref()?;
        let l = self.joint.level(&member.root)?;
        Some(member.side(&b.sides[l]))
    }

    /// When the largest box leaves out `point` (one value per root, in the joint set's level
    /// order: the traced sizes), a sound box through it ([`box_through`]); `None` when the
    /// largest box holds the point or the point is not in the joint set. Torch refuses a spec
    /// that excludes its example inputs, so this is the box a spec for that export must use.
    pub fn example_box(&self, point: &[i128]) -> Option<LargestBox> {
        if self.tied.is_some() || self.defined.is_some() || self.equation.is_some() {
            // The tied choice finds its own box through the traced sizes; a group with a
            // defined size has no box.
            return None;
        }
        let holds = |b: &LargestBox| b.sides.iter().zip(point).all(|(s, &x)| s.contains(x));
        if self.largest.as_ref().is_some_and(holds) {
            return None;
        }
        box_through(&self.joint.tree, point)
    }

    /// The traced tuple of the group in the joint set's level order: each root's value from a
    /// member whose traced size `traced` knows (`None` when some root has none).
    pub fn point(&self, grp: &Group, traced: &dyn Fn(&str) -> Option<i128>) -> Option<Vec<i128>> {
        self.joint
            .sizes
            .iter()
            .map(|root| {
                grp.members
                    .iter()
                    .filter(|m| &m.root == root)
                    .find_map(|m| {
                        let v = traced(&m.name)? - m.offset;
                        (v % m.coef == 0).then(|| v / m.coef)
                    })
            })
            .collect()
    }

    /// Checks, independently of the search, that `set` (values of the root at `level`) goes
    /// with the rest of the joint set: for each box of the tree, every tuple of that box with
    /// `set` as its side at `level` passes every guard of the group (`guards`, over the roots).
    /// Evaluated tuple by tuple with the exact evaluator when there are at most
    /// [`SIDE_RECHECK`]; else each box is asked to `prover` (Z3); else not checked, with why.
    pub fn check_side(
        &self,
        guards: &[Expr],
        level: usize,
        set: &DimSet,
        prover: Option<Prover>,
    ) -> SideCheck {
        let j = &self.joint;
        let (boxes, complete) = j.tree.boxes(SIDE_BOXES);
        if !complete {
            return SideCheck::Unchecked(Unchecked::ManyBoxes);
        }
        let boxes: Vec<Vec<DimSet>> = boxes
            .into_iter()
            .map(|mut b| {
                b[level] = set.clone();
                b
            })
            .collect();
        let count = boxes.iter().fold(0u128, |a, b| {
            a.saturating_add(b.iter().fold(1u128, |c, s| c.saturating_mul(s.count())))
        });
        let holds = |t: &[i128]| {
            let env = |a: &str| j.sizes.iter().position(|s| s == a).map(|i| t[i]);
            guards
                .iter()
                .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
        };
        if count <= SIDE_RECHECK {
            for b in &boxes {
                for t in crate::linked::tuples(b) {
                    if let Some(e) = crate::budget::expired() {
                        return SideCheck::Unchecked(Unchecked::Exhausted(e));
                    }
                    if !holds(&t) {
                        return SideCheck::Fails(t);
                    }
                }
            }
            return SideCheck::Enumerated;
        }
        let Some(p) = prover else {
            return SideCheck::Unchecked(Unchecked::TooMany(count));
        };
        let refs: Vec<&Expr> = guards.iter().collect();
        for b in &boxes {
            let sets: Vec<(&str, &DimSet)> = j.sizes.iter().map(|s| s.as_str()).zip(b).collect();
            match p(&refs, &sets) {
                BoxAnswer::Holds => {}
                BoxAnswer::Fails(t) => return SideCheck::Fails(t),
                BoxAnswer::Unknown(z) => return SideCheck::Unchecked(Unchecked::Z3(z)),
            }
        }
        SideCheck::Proved
    }

    /// Whether the linking guards reject some combination of the roots' own accepted values
    /// (or the search left some undecided): then no size of the group can take a `Dim` of its
    /// own, only its side of the largest box.
    pub fn restricts(&self) -> bool {
        // A size the others define: every value of each size fails with some partner.
        self.defined.is_some()
            || self.equation.is_some()
            || self.joint.undecided.is_some()
            || match (self.joint.count(), self.joint.box_count()) {
                (c, b) if c < b => true,
                (c, _) if c < u128::MAX => false,
                // Both counts saturated (three sizes to 2^63): whether a tuple of the box fails.
                _ => self
                    .joint
                    .tree
                    .covers(&self.joint.domains)
                    .map_or(true, |c| !c),
            }
    }
}

/// Boxes of a joint set [`Linked::check_side`] checks one by one.
const SIDE_BOXES: usize = 16;

/// Tuples [`Linked::check_side`] evaluates one by one.
pub const SIDE_RECHECK: u128 = 4096;

/// How [`Linked::check_side`] checked a size's set against the rest of the joint set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SideCheck {
    /// Every tuple was evaluated with the exact evaluator, and passes.
    Enumerated,
    /// Z3 proved that every tuple passes.
    Proved,
    /// This tuple (in the joint set's level order) fails a guard.
    Fails(Vec<i128>),
    /// Not checked independently of the joint search, with why.
    Unchecked(Unchecked),
}

/// Why a size's set was not checked against the rest of its joint set independently of the
/// joint search ([`SideCheck::Unchecked`]); `Display` says it as the suggestion's
/// `certificate_note`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unchecked {
    /// The joint set has more boxes than the check examines one by one (16).
    ManyBoxes,
    /// The command's budget ran out while the tuples were evaluated.
    Exhausted(crate::budget::Exhausted),
    /// This many combinations with the other sizes, above [`SIDE_RECHECK`], and no prover.
    TooMany(u128),
    /// Z3 did not decide a box: what it said.
    Z3(String),
    /// The size is no level of the joint set.
    NotInJoint,
    /// The set over the root could not be computed.
    Root(crate::error::Error),
}

impl std::fmt::Display for Unchecked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unchecked::ManyBoxes => write!(
                f,
                "the joint set has more than {SIDE_BOXES} boxes; exact by the joint search"
            ),
            Unchecked::Exhausted(e) => f.write_str(&e.reason()),
            Unchecked::TooMany(count) => write!(
                f,
                "{} combinations with the other sizes: exact by the joint search, too many to re-check one by one",
                crate::linked::count_text(*count)
            ),
            Unchecked::Z3(z) => write!(f, "exact by the joint search; Z3: {z}"),
            Unchecked::NotInJoint => f.write_str("not in the joint set"),
            Unchecked::Root(e) => write!(f, "{e}"),
        }
    }
}

/// The spec line of a tied size `b` written from its partner `a` (`b = a`, or `b = a + delta`),
/// saying why it is not a plain equality: every size of `a`'s block of `block` values passes.
pub fn tied_alias(b: &str, a: &str, delta: i128, block: i128) -> String {
    use crate::python::{assign, linear, py_name};
    let rhs = linear(crate::num::q(1), &py_name(a), delta);
    let taken = if delta == 0 {
        "this spec takes the same size"
    } else {
        "this spec keeps the traced offset"
    };
    format!(
        "{}  # any size in {}'s block of {block} passes; {taken}",
        assign(b, &rhs),
        py_name(a)
    )
}

/// The spec line of a size `b` of an equation of products written as the size `a` whose term
/// it matches ([`Choice::Paired`]), saying what the spec gives up.
pub fn paired_alias(b: &str, a: &str) -> String {
    use crate::python::{assign, py_name};
    format!(
        "{}  # equal terms make the two products equal; tuples with equal products but other sizes pass too and are outside this spec (see linked)",
        assign(b, &py_name(a))
    )
}

/// Tuples of a tied spec re-checked with the exact evaluator.
const TIED_RECHECK: usize = 256;

/// The tied choice ([`Choice::Tied`]): from the largest box of the reduced set, or the box
/// through the traced sizes when it leaves them out ([`box_through`]); every corner and tuples
/// spread over the spec re-checked against every guard of the group (a failing spec is
/// dropped, never printed).
fn tied_choice(
    t: &TiedSet,
    lb: Option<&LargestBox>,
    grp: &Group,
    traced: &dyn Fn(&str) -> Option<i128>,
) -> Option<TiedSpec> {
    // Each root's traced value, from a member whose traced size is known.
    let root = |r: &str| {
        grp.members.iter().filter(|m| m.root == r).find_map(|m| {
            let v = traced(&m.name)? - m.offset;
            (v % m.coef == 0).then(|| v / m.coef)
        })
    };
    let point: Option<Vec<i128>> = t.reduced.sizes.iter().map(|r| root(r)).collect();
    let holds = |b: &LargestBox, p: &[i128]| b.sides.iter().zip(p).all(|(s, &x)| s.contains(x));
    let bx = match (lb, &point) {
        (Some(b), Some(p)) if holds(b, p) => b.clone(),
        (_, Some(p)) => box_through(&t.reduced.tree, p)?,
        (Some(b), None) => b.clone(),
        (None, None) => return None,
    };
    let spec = t.spec(&bx, &root)?;
    let sizes = t.sizes();
    for tuple in spec.sample(t, TIED_RECHECK) {
        let env = |a: &str| sizes.iter().position(|s| s == a).map(|i| tuple[i]);
        if !grp
            .guards
            .iter()
            .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
        {
            return None;
        }
    }
    Some(spec)
}

/// Diagonals up to this many values are searched for a shared `Dim`.
const DIAGONAL_MAX: u128 = 1 << 20;

/// For a joint set of two sizes: the largest progression of values `v` with `(v, v)` in the set,
/// and whether every pair of it passed `holds` (the exact evaluator) as well.
pub(super) fn diagonal(
    j: &JointSet,
    holds: &dyn Fn(&[i128]) -> bool,
) -> Option<(Progression, bool)> {
    if j.sizes.len() != 2 {
        return None;
    }
    let both = j.domains[0].intersect(&j.domains[1]).ok()?;
    if both.count() > DIAGONAL_MAX || both.count() < 2 {
        return None;
    }
    let on: Vec<i128> = both
        .iter()
        .take_while(|_| crate::budget::expired().is_none())
        .filter(|&v| j.tree.contains(&[v, v]))
        .collect();
    let p = *rank(&DimSet::from_values(on), None, 1)
        .progressions
        .first()?;
    let members = DimSet::progression(p.lo, p.hi, p.modulus, p.residue);
    let mut all = true;
    for v in members.iter() {
        if crate::budget::expired().is_some() {
            all = false;
            break;
        }
        if !holds(&[v, v]) {
            return None;
        }
    }
    Some((p, all))
}

/// Whether every guard of the group passes at each corner of a paired spec ([`Choice::Paired`]):
/// each size at its side's least and greatest value (a size written from another at that one's).
fn paired_holds(p: &Paired, sizes: &[String], grp: &Group) -> bool {
    let free: Vec<usize> = (0..sizes.len())
        .filter(|&i| p.sides[i].1.is_none())
        .collect();
    if free.len() > 12 {
        return false;
    }
    (0u32..1 << free.len()).all(|mask| {
        let mut t = vec![0i128; sizes.len()];
        for (k, &i) in free.iter().enumerate() {
            let s = &p.sides[i].0;
            t[i] = if mask >> k & 1 == 1 { s.hi } else { s.lo };
        }
        for (i, (_, from)) in p.sides.iter().enumerate() {
            if let Some(a) = from {
                match sizes.iter().position(|s| s == a) {
                    Some(j) => t[i] = t[j],
                    None => return false,
                }
            }
        }
        let env = |a: &str| sizes.iter().position(|s| s == a).map(|i| t[i]);
        grp.guards
            .iter()
            .all(|g| matches!(g.eval(&env), Ok(Value::Bool(true))))
    })
}
