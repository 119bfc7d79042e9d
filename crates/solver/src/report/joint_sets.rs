//! A group's joint set as every report carries it (`check`'s `joint`, `diagnose`'s and
//! `verify`'s `joint_sets`): its boxes, examples, ties, defined sizes and search.

use super::common::{count_text, Feasible, Suggestion};
use crate::types::DimSet;
use serde::{Deserialize, Serialize};

/// A group of sizes linked by guards, solved jointly.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JointReport {
    /// The sizes' names (`x_2`), in the order of every tuple below.
    pub dims: Vec<String>,
    /// Their sources in guards.
    pub sources: Vec<String>,
    /// Tuples of the claimed box.
    pub claimed: u128,
    /// Tuples that pass every guard (of the decided part, when `undecided` is present).
    pub accepted: u128,
    /// The accepted tuples as a union of disjoint boxes: one `feasible` set per size.
    pub boxes: Vec<Vec<Feasible>>,
    /// Whether `boxes` lists every box (at most 100 are listed).
    pub boxes_complete: bool,
    /// The box of one progression per size with the most tuples: a sound `dynamic_shapes` spec.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub largest_box: Option<BoxReport>,
    /// For two sizes that work when equal: one `Dim` for both (the second written as the first),
    /// when that admits more pairs than the largest box. A spec can say it; a box cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<SharedReport>,
    /// A few accepted tuples.
    pub accepted_examples: Vec<Vec<i128>>,
    /// A few claimed tuples that fail a guard (each re-checked: it really fails).
    pub rejected_examples: Vec<Vec<i128>>,
    /// The part the search did not decide (its budget ran out), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undecided: Option<JointUndecided>,
    /// The answer in one sentence.
    pub summary: String,
    /// How the search went.
    pub search: JointSearch,
    /// The joint set in closed form when guards tie sizes (`(h1-1)//4 == (h2-1)//4`: a union of
    /// diagonal blocks no finite list of boxes holds), decided without enumeration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tied: Option<TiedReport>,
    /// Sizes equal in every accepted tuple though the program gives them symbols of their own
    /// (`[b, a]`: `b` equals `a`; two inputs that must agree): solved with `b` written as `a`,
    /// so `dims`, `boxes` and the largest box are over the others, and `claimed` still counts
    /// `b`'s own claimed values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equal: Vec<[String; 2]>,
    /// Sizes the others define (`tokens_1 == (image_2 // 16)*(image_3 // 16)`): the group is
    /// solved with each written as its expression, so `dims`, `boxes` are over the others; a
    /// tuple passes when the others lie in one box and each defined size equals its expression
    /// at them, within its own set. `accepted` then counts the tuples of the others' boxes (at
    /// most one accepted tuple each: an upper bound), there is no largest box, and the examples
    /// hold each defined size's value after the others'.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub defined: Vec<DefinedReport>,
    /// Equations every accepted tuple satisfies besides lying in one box (`(x_3 // 16)*(x_2 //
    /// 16) == (y_2 // 16)*(y_3 // 16)`: equal products across sizes, no finite list of boxes
    /// holds them): a tuple passes exactly when it lies in one box and every equation holds.
    /// `accepted` then counts the boxes' tuples (an upper bound).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equations: Vec<EquationReport>,
    /// Whether some tuple of the product of the sizes' own sets (each size's one-size guards)
    /// fails: true also when the joint set is one box narrower than that product (window7:
    /// every size cut to its side, no size against another). Absent where not computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_excludes_some: Option<bool>,
}

/// An equation of a linked group's joint set ([`JointReport::equations`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EquationReport {
    /// The equation over the sizes' sources, in the guards' syntax.
    pub expr: String,
    /// The equation over the sizes' names.
    pub relation: String,
}

/// A size of a linked group defined by the others ([`JointReport::defined`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DefinedReport {
    /// The size's name (`tokens_1`).
    pub dim: String,
    /// Its source in guards.
    pub source: String,
    /// Its value, over the other sizes' sources, as the guards write it (`dimguard`'s guard
    /// syntax: `((L['image'].size()[3] // 16)*(L['image'].size()[2] // 16))`).
    pub expr: String,
    /// The same over the sizes' names (`((image_3 // 16)*(image_2 // 16))`).
    pub relation: String,
    /// Its own set (its range and its one-size guards): a tuple whose value of the expression
    /// lies outside it fails.
    pub accepted: Feasible,
}

/// A joint set with tied sizes ([`crate::linked::TiedSet`]), in closed form.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TiedReport {
    /// The sizes' names, in the order of every tuple below.
    pub dims: Vec<String>,
    /// Their sources in guards.
    pub sources: Vec<String>,
    /// Tuples that pass every guard (saturating at `u128::MAX`: "more than 3.4e38").
    pub accepted: u128,
    /// Each tie: the tied size lies in the block of its partner.
    pub ties: Vec<TieReport>,
    /// The joint set of the sizes no tie binds (the first `boxes[i].len()` of `dims`), as a
    /// union of disjoint boxes; a tuple passes when its first sizes lie in one box and every tie
    /// holds.
    pub boxes: Vec<Vec<Feasible>>,
    /// A few accepted tuples (each re-checked against every guard).
    pub accepted_examples: Vec<Vec<i128>>,
    /// A few tuples that fail (each re-checked: it really fails).
    pub rejected_examples: Vec<Vec<i128>>,
    /// The answer in one sentence.
    pub summary: String,
}

/// Two sizes tied by `F(a) == F(b)`, `F(x) = k*((x + offset)//block) + e` non-decreasing.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TieReport {
    /// The partner and the tied size (names).
    pub dims: [String; 2],
    /// Block length: `b` passes with `a` when both lie in one block `[q*block - offset,
    /// q*block - offset + block - 1]`.
    pub block: i128,
    /// The blocks' offset.
    pub offset: i128,
    /// The tied size's shift: `b + shift` lies in `a`'s block (0 when both sizes go through the
    /// same map; ties through different strides have others, e.g. `(a + 3)//8 == (c + 7)//8` is
    /// block 8, offset 3, shift 4).
    #[serde(default)]
    pub shift: i128,
    /// The tied size's own accepted range (inclusive): the least and greatest value of `own`.
    pub range: [i128; 2],
    /// The tied size's own accepted set (what its own guards allow; not always an interval:
    /// a skip connection inside the tied input makes it periodic). A tuple passes the tie when
    /// the tied size is in this set and in its partner's block.
    #[serde(default)]
    pub own: Option<Feasible>,
    /// Whether one `Dim` for both (the tied size written as its partner) is sound: every value the
    /// partner accepts lies in the tied size's own range.
    pub shared_dim: bool,
}

/// The undecided part of a joint set.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JointUndecided {
    /// Tuples not decided.
    pub count: u128,
    /// Why.
    pub reason: String,
}

/// One `Dim` shared by the two sizes of a group: the values `v` for which `(v, v)` passes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SharedReport {
    /// Pairs it admits (one per value).
    pub count: u128,
    /// The two sizes, the second written as the first.
    pub dims: [String; 2],
    /// The shared progression (with the first size's `Dim` code; certificate `enumeration` when
    /// every pair `(v, v)` of it was re-checked with the exact evaluator).
    pub side: Suggestion,
}

/// The largest sound box of a group.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BoxReport {
    /// Tuples in the box.
    pub count: u128,
    /// True when no box of progressions inside the joint set has more tuples.
    pub maximal: bool,
    /// One progression per size, in `dims` order (with its `Dim` code).
    pub sides: Vec<Suggestion>,
}

/// Work done by the joint search.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct JointSearch {
    /// Partial and whole tuples evaluated.
    pub points: u64,
    /// Last-level sets solved by the periodic engine.
    pub periodic_solves: u64,
    /// Nodes of the shared expression graph (common sub-expressions counted once).
    pub shared_nodes: usize,
}

impl JointReport {
    /// The boxes as exact sets, when every box is listed, nothing is left undecided, no size
    /// is defined by the others and no equation cuts them (they are then the whole joint set;
    /// with a defined size, [`JointReport::defined`], they are the others' set only; with
    /// [`JointReport::equations`], a superset).
    pub fn exact_boxes(&self) -> Option<Vec<Vec<DimSet>>> {
        if !self.boxes_complete
            || self.boxes.is_empty()
            || self.undecided.is_some()
            || !self.defined.is_empty()
            || !self.equations.is_empty()
        {
            return None;
        }
        self.boxes
            .iter()
            .map(|b| {
                b.iter()
                    .map(|f| DimSet::from_segments(f.segments.clone()).ok())
                    .collect::<Option<Vec<_>>>()
            })
            .collect()
    }

    /// Per size: whether the link excludes none of its values, that is, whether every box has
    /// the same side for it (the joint set is then its side times the others'). `None` unless
    /// [`JointReport::exact_boxes`] gives the whole set.
    pub fn free_sides(&self) -> Option<Vec<bool>> {
        let boxes = self.exact_boxes()?;
        let n = boxes.first().map_or(0, Vec::len);
        Some(
            (0..n)
                .map(|k| {
                    boxes
                        .iter()
                        .all(|b| b.len() == n && b[k].same_members(&boxes[0][k]))
                })
                .collect(),
        )
    }

    /// Whether [`JointReport::accepted`] is an upper bound rather than the exact count: with a
    /// size the others define, or equations that cut the boxes.
    pub fn accepted_is_bound(&self) -> bool {
        !self.defined.is_empty() || !self.equations.is_empty()
    }

    /// [`JointReport::accepted`] in words, for every renderer: the count, "at most" the count
    /// where it is a bound ([`JointReport::accepted_is_bound`]), and no number for a bound that
    /// saturates (it says nothing).
    pub fn accepted_text(&self) -> String {
        match (self.accepted_is_bound(), self.accepted) {
            (false, n) => count_text(n),
            (true, u128::MAX) => "an uncounted number".to_string(),
            (true, n) => format!("at most {}", count_text(n)),
        }
    }

    /// What the link of a joint set that is one box with no size against another excludes, for
    /// every renderer (after "link"): nothing, where the box is the product of the sizes' own
    /// sets ([`JointReport::link_excludes_some`] false), else each size cut to its side; `None`
    /// where that was not computed.
    pub fn one_box_link(&self) -> Option<&'static str> {
        Some(if self.link_excludes_some? {
            "cuts each size to its side of the box (the values outside fail with every partner), \
             no size against another: every combination of the box's values passes"
        } else {
            "excludes nothing: every combination of the sizes' accepted values passes"
        })
    }

    /// [`JointReport::free_sides`] for the size `source`, when this joint set holds it.
    pub fn excludes_none(&self, source: &str) -> Option<bool> {
        let k = self.sources.iter().position(|s| s == source)?;
        Some(self.free_sides()?[k])
    }
}
