//! The message as the analysis stage's [`Problem`]: every guard over its sizes in one list
//! (one-size guards, guards over several sizes, equalities and relations as `==` guards), each
//! with where it comes from, and every dimension as a size of the problem, a size nothing links
//! a group of one.

use dimguard_readers::{self, Message};
use dimguard_solver::analyze::{Analysis, GroupAnswer, Options, Problem, Size};
use dimguard_solver::linked::Budget;
use dimguard_solver::report::GuardFate;
use dimguard_solver::{CmpOp, Expr};

/// Where a guard over the message's sizes comes from.
#[derive(Debug, Clone, Copy)]
pub(super) enum Origin {
    /// `msg.dims[d].guards[g]`.
    Dim(usize, usize),
    /// `msg.joint[j]`.
    Joint(usize),
    /// `msg.equalities[i]`.
    Equality(usize),
    /// `msg.relations[i]`.
    Relation(usize),
}

/// Every guard over the message's sizes as one list: one-size guards, guards over several
/// sizes, and equalities and relations as `==` guards, all over the sizes' sources.
pub(super) struct Sized {
    /// The guards, in order: a guard's origin is its index here.
    pub guards: Vec<Expr>,
    /// Where each guard comes from.
    pub origin: Vec<Origin>,
    /// Relations whose right-hand side could not be read, with the reason.
    pub unread: Vec<(usize, String)>,
    /// Where each dimension's guards start in `guards` (they come first, dimension after
    /// dimension), and one past the last dimension's.
    starts: Vec<usize>,
}

pub(super) fn size_guards(msg: &Message) -> Sized {
    let var = |name: &str| {
        msg.dims
            .iter()
            .find(|d| d.name == name)
            .map_or_else(|| name.to_string(), |d| d.var().to_string())
    };
    let mut out = Sized {
        guards: vec![],
        origin: vec![],
        unread: vec![],
        starts: vec![],
    };
    for (di, d) in msg.dims.iter().enumerate() {
        out.starts.push(out.guards.len());
        for (gi, g) in d.guards.iter().enumerate() {
            out.guards.push(g.expr.clone());
            out.origin.push(Origin::Dim(di, gi));
        }
    }
    out.starts.push(out.guards.len());
    for (ji, g) in msg.joint.iter().enumerate() {
        out.guards.push(g.expr.clone());
        out.origin.push(Origin::Joint(ji));
    }
    for (i, (a, b)) in msg.equalities.iter().enumerate() {
        out.guards.push(Expr::Cmp(
            CmpOp::Eq,
            Box::new(Expr::sym(&var(b))),
            Box::new(Expr::sym(&var(a))),
        ));
        out.origin.push(Origin::Equality(i));
    }
    for (i, r) in msg.relations.iter().enumerate() {
        match relation_guard(msg, r) {
            Ok(g) => {
                out.guards.push(g);
                out.origin.push(Origin::Relation(i));
            }
            Err(e) => out.unread.push((i, e.message)),
        }
    }
    out
}

/// A relation torch states (`dy = dx + 1`) as an `==` guard over the sizes' sources: its
/// right-hand side names dimensions, rewritten over their sizes.
pub fn relation_guard(
    msg: &Message,
    r: &dimguard_readers::Relation,
) -> Result<Expr, dimguard_solver::ParseError> {
    let mut rhs = dimguard_solver::syntax::parse_expr(&r.expr)?;
    for d in &msg.dims {
        rhs = rhs.substitute(&d.name, &Expr::sym(d.var()));
    }
    let lhs = msg
        .dims
        .iter()
        .find(|d| d.name == r.name)
        .map_or_else(|| r.name.clone(), |d| d.var().to_string());
    Ok(Expr::Cmp(
        CmpOp::Eq,
        Box::new(Expr::sym(&lhs)),
        Box::new(rhs),
    ))
}

/// The message as the analysis stage's [`Problem`]: its dimensions (range, traced value from
/// `--example`) and every guard over their sizes ([`Sized`], in its order: a guard's origin is
/// its index there).
pub(super) fn problem(msg: &Message, opts: &Options, sized: &Sized) -> Problem {
    Problem {
        sizes: msg
            .dims
            .iter()
            .map(|d| Size {
                example: opts.example_for(&d.name),
                ..Size::new(d.var(), &d.name, d.range)
            })
            .collect(),
        guards: sized.guards.clone(),
        extra_ranges: Default::default(),
        parts: true,
        // A size alone is solved guard by guard: each guard's line is its decision.
        by_guard: true,
    }
}

/// The analysis' budget under `opts`' limits.
pub(super) fn budget(opts: &Options) -> Budget {
    Budget {
        limits: opts.limits,
        ..Default::default()
    }
}

impl Sized {
    /// The guards listed under the message's `di`-th dimension, by their index, in order.
    pub fn listed(&self, di: usize) -> std::ops::Range<usize> {
        self.starts[di]..self.starts[di + 1]
    }

    /// Whether the analysis answers for guard `k` as a guard of group `g`: solved in it, a
    /// relation of it, or set aside as holding on every tuple of the parts' answers (by `g` or
    /// by the part of the size it names first). A guard listed under a size that names only a
    /// size of another group is not: the analysis decided it over that size, not this one.
    pub fn answered_in(&self, k: usize, g: &GroupAnswer, analysis: &Analysis) -> bool {
        g.grp.origin.contains(&k)
            || g.grp.relations.contains(&k)
            || g.grp.held.contains(&k)
            || analysis
                .fates
                .get(&k)
                .is_some_and(|(f, _)| *f == GuardFate::Joint)
    }
}
