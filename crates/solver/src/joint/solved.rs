//! A group's outcome as data: each guard's [`Fate`], the validity oracle's answer, the
//! [`Solved`] group and its [`Defined`] elimination, and whether a tuple is accepted.

use super::grouping::Group;
use crate::linked::{JointSet, TiedSet};
use crate::report::{GuardFate, Undecided};
use crate::types::{DimSet, Expr, Progression};
use std::collections::BTreeMap;

/// What happened to one guard of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fate {
    /// Solved exactly: [`GuardFate::Periodic`], [`GuardFate::Enumeration`] (one size) or
    /// [`GuardFate::Joint`] (several sizes).
    Solved(GuardFate),
    /// Not solvable in closed form over its range, but Z3 proved that every value passes.
    Proved,
    /// Not decided, with the reason (and Z3's answer when it was asked).
    Undecided(Undecided),
}

impl Fate {
    /// The reports' `fate` and, for an undecided guard, the reason.
    pub fn label(&self) -> (GuardFate, Option<String>) {
        match self {
            Fate::Solved(how) => (*how, None),
            Fate::Proved => (GuardFate::Z3, None),
            Fate::Undecided(why) => (GuardFate::Undecided, Some(why.to_string())),
        }
    }
}

/// Z3's answer to "does every point of this box pass these guards?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoxAnswer {
    /// Every point passes (proved).
    Holds,
    /// This point (one value per size, in the order asked) fails, re-checked exactly.
    Fails(Vec<i128>),
    /// Not decided (time-out, a construct without encoding).
    Unknown(String),
}

/// A validity oracle for boxes of sizes; the CLI passes Z3 (`dimguard-prove::check_box`), the
/// solver crate does not depend on it.
pub type Prover<'a> = &'a dyn Fn(&[&Expr], &[(&str, &DimSet)]) -> BoxAnswer;

/// The outcome for a group.
#[derive(Debug, Clone, PartialEq)]
pub struct Solved {
    /// Per root, the values proven to pass: for several roots, those that pass with **every**
    /// value of the other roots (any product of `Dim`s inside them is sound).
    pub accepted: BTreeMap<String, DimSet>,
    /// For several roots: how many points of the product of the roots' one-size sets pass every
    /// linking guard, and the size of that product.
    pub joint_count: Option<(u128, u128)>,
    /// Why something is undecided.
    pub undecided: Option<Undecided>,
    /// Per root, the values neither proven to pass nor to fail (empty when all is decided).
    pub unsure: BTreeMap<String, DimSet>,
    /// For several roots: the exact joint set (see `linked.rs`).
    pub joint: Option<JointSet>,
    /// What happened to each guard of the group (parallel to [`Group::guards`]).
    pub fates: Vec<Fate>,
    /// When the joint search left tuples undecided and guards tie sizes (`F(a) == F(b)`): the
    /// joint set decided in closed form ([`solve_tied`](crate::linked::solve_tied)), which is
    /// then the group's answer (`accepted` comes from it, nothing is undecided); `joint` stays
    /// the search's own (undecided) result.
    pub tied: Option<TiedSet>,
    /// When a linking guard defines one size by the others (`n == (h//16)*(w//16)`) and the
    /// group was solved with that size eliminated: the definition and the reduced group's
    /// solution, which then decide every tuple ([`Solved::contains`]). `joint` and `tied` are
    /// then `None`. No value of a size passes with every value of the others (the partners
    /// break the definition: `accepted` empty, decided); a degenerate group where they cannot
    /// (the defined size's own set one value, `E` constant) keeps that size unsure
    /// ([`Undecided::Defined`]).
    pub defined: Option<Box<Defined>>,
    /// When the group's sizes are linked by one equation of products
    /// ([`Equation`](Equation)): every tuple decided by it (`joint`, `tied` and
    /// `defined` are then `None`), no value passing with every partner.
    pub equation: Option<Box<Equation>>,
}

/// A size of a group defined by a linking guard `x == E(others)` (`x` bare, not in `E`; torch's
/// `tokens_1 == (image_2 // 16)*(image_3 // 16)` for a reshape of patches into tokens), and the
/// group solved without it. A tuple passes every guard of the group exactly when `x == E` holds
/// at it (Python's evaluation: a division by zero fails), `x` lies in its own set ([`Self::own`]:
/// its range and its one-size guards), and the others pass the reduced group, whose guards are
/// the group's others with `E` written for `x`. Exact: where `x == E`, every guard takes the
/// same value with `E` written for `x`.
#[derive(Debug, Clone, PartialEq)]
pub struct Defined {
    /// The defined size (a root of the group no other member is derived from).
    pub dim: String,
    /// Its definition over the other roots.
    pub expr: Expr,
    /// The defining guard's index in [`Group::guards`].
    pub guard: usize,
    /// The defined size's own set: its range and its one-size guards, decided.
    pub own: DimSet,
    /// The group without the defined size: the other guards with [`Self::expr`] written for it.
    pub group: Group,
    /// The reduced group's solution.
    pub solved: Solved,
}

impl Solved {
    /// Whether the group's answer accepts a tuple of its sizes (`value` gives each member's
    /// value): `Some(true)` or `Some(false)` when the answer decides it, `None` when the tuple
    /// lies where the answer is undecided. Members derived from one root must agree on it.
    pub fn contains(&self, grp: &Group, value: &dyn Fn(&str) -> Option<i128>) -> Option<bool> {
        if let Some(e) = &self.equation {
            return e.contains(value);
        }
        if let Some(d) = &self.defined {
            match grp.guards.get(d.guard)?.truth(value) {
                Ok(true) => {}
                Ok(false) => return Some(false),
                Err(crate::expr::EvalError::Arith(crate::num::ArithError::Overflow)) => {
                    return None
                }
                Err(crate::expr::EvalError::Arith(_)) => return Some(false),
                Err(_) => return None,
            }
            if !d.own.contains(value(&d.dim)?) {
                return Some(false);
            }
            return d.solved.contains(&d.group, value);
        }
        let mut roots: BTreeMap<&str, i128> = BTreeMap::new();
        for m in &grp.members {
            let v = value(&m.name)?.checked_sub(m.offset)?;
            if v % m.coef != 0 {
                return Some(false);
            }
            let r = v / m.coef;
            if *roots.entry(&m.root).or_insert(r) != r {
                return Some(false);
            }
        }
        for (root, set) in &self.unsure {
            if roots.get(root.as_str()).is_some_and(|&r| set.contains(r)) {
                return None;
            }
        }
        let at = |n: &str| roots.get(n).copied();
        if let Some(t) = &self.tied {
            let tuple: Option<Vec<i128>> = t.sizes().iter().map(|n| at(n)).collect();
            return Some(t.contains(&tuple?));
        }
        match &self.joint {
            Some(j) => {
                let tuple: Option<Vec<i128>> = j.sizes.iter().map(|n| at(n)).collect();
                let tuple = tuple?;
                if j.tree.contains(&tuple) {
                    return Some(true);
                }
                let inside = j.domains.iter().zip(&tuple).all(|(d, &x)| d.contains(x));
                if j.undecided.is_some() && inside {
                    return None;
                }
                Some(false)
            }
            None => {
                if self.undecided.is_some() {
                    return None;
                }
                Some(grp.roots.iter().all(|r| {
                    at(r).is_some_and(|x| self.accepted.get(r).is_some_and(|s| s.contains(x)))
                }))
            }
        }
    }
}

/// One term of a side: a size and its term (over the size's name).
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    /// The size.
    pub root: String,
    /// The term, nondecreasing in the size.
    pub expr: Expr,
    /// Its values over the size's own set.
    pub image: DimSet,
}

/// A group whose sizes are linked by one equation of products (solved by `equation.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct Equation {
    /// The equation's index in [`Group::guards`].
    pub guard: usize,
    /// The equation as the guards write it.
    pub expr: Expr,
    /// The terms of each side.
    pub sides: [Vec<Term>; 2],
    /// The sizes and their own sets (the product of which, cut by the equation, is the joint
    /// set): `tree` is that product, never the answer by itself.
    pub joint: JointSet,
    /// Per size, its values that pass with some value of the others.
    pub some: BTreeMap<String, DimSet>,
}

/// A spec of an [`Equation`] group that keeps every size varying ([`Equation::paired`]): per
/// size its side and the size it is written from (equal to it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paired {
    /// Per size of the joint set, in its order.
    pub sides: Vec<(Progression, Option<String>)>,
}
