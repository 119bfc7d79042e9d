//! A size's side of a joint set, as `diagnose` and `check` report it: its sound side, the
//! values a defined size takes, the size it is tied to.

use super::common::{Feasible, Suggestion};
use serde::{Deserialize, Serialize};

/// What the joint set of a group says of one of its sizes (`diagnose`'s `dims[]` and `check`'s
/// `dims[]` carry these keys in place, each only when present).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LinkedSides {
    /// The values that pass every guard with **some** value of the others (the size's own
    /// answer, `feasible` or `accepted`, holds those that pass with every value of the others'
    /// accepted sets, so that any product of suggestions is sound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub with_some_partner: Option<Feasible>,
    /// Its side of the group's largest sound box (`joint_sets[]`, `check`'s `joint[]`), the
    /// spec the `dynamic_shapes` block uses (sound together with the other sides).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub box_side: Option<Suggestion>,
    /// For one of two sizes that work when equal, when one shared `Dim` admits more pairs than
    /// the largest box (`shared`): its spec under that `Dim` (the second size's `code` writes it
    /// as the first); the `dynamic_shapes` block uses it instead of `box_side`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_side: Option<Suggestion>,
    /// When the traced sizes are known (`--example`, a trace) and the largest sound box leaves
    /// them out: its side of a sound box through them, which the `dynamic_shapes` block uses
    /// (torch refuses a spec that excludes its example inputs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub example_box_side: Option<Suggestion>,
    /// `check`'s `dims[]`, for a linked size whose group lists every box of its joint set:
    /// whether the link excludes none of its values (the joint set is its side times the
    /// others': each of its values that passes, passes with every accepted combination of theirs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link_excludes_none: Option<bool>,
    /// For a size tied to another (equal to it, derived from it, or in its block): the partner,
    /// the tie, and the size's values that pass with some value of the partner (the partner's
    /// set mapped through the tie).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tied_to: Option<TiedTo>,
    /// For a size the others define (`joint[].defined`) whose values with some partner are the
    /// products of two factors (`(image_3 // 16)*(image_2 // 16)`): that set, exact, in a form
    /// of its own (no periodic set holds it; `with_some_partner` stays absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub defined_values: Option<DefinedValues>,
}

/// The values a defined size takes with some partner, as products of two factors
/// ([`LinkedSides::defined_values`]): `n` is in the set exactly when it lies in `within` and
/// `n = p*q` with `p`, `q` in the ranges of one entry of `ranges`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DefinedValues {
    /// `products`.
    pub form: String,
    /// The definition over the sizes' names.
    pub relation: String,
    /// The two factors, over the sizes' names (`image_3 // 16`).
    pub factors: [String; 2],
    /// Per box of the others, each factor's least and greatest value.
    pub ranges: Vec<[[i128; 2]; 2]>,
    /// The defined size's own set (least, greatest).
    pub within: [i128; 2],
    /// The set in words (`the composite numbers from 4`).
    pub text: String,
    /// Its least members.
    pub examples: Vec<i128>,
    /// The least values of `within` outside it (they fail with every partner).
    pub excluded_examples: Vec<i128>,
}

/// A size tied to another size: it passes exactly with the partner values the tie allows, so its
/// answer is its partner's, mapped through the tie ("equal to a_2: 465 of 929").
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TiedTo {
    /// The partner, as the report names sizes (`a_2` in `diagnose` and `verify`, `a[2]` in
    /// `check`).
    pub partner: String,
    /// The partner's source (`L['a'].size()[2]`).
    pub source: String,
    /// The tie in words: `equal to a_2`, `equal to 2*a_2 + 1`, `in the block of 4 values
    /// holding a_2`.
    pub relation: String,
    /// Whether the size always equals its partner (`relation` is `equal to <partner>`).
    pub equal: bool,
    /// The size's values (in its own range) that pass with some value of the partner: the
    /// partner's set through the tie (null when the partner's set is undecided).
    pub accepted: Option<Feasible>,
}
