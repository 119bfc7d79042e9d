//! One size's answer, the same type in every command's `dims[]`: [`SizeAnswer`].
//!
//! `diagnose`'s [`DimReport`](super::DimReport), `check`'s [`CheckDim`](super::CheckDim) and
//! `verify`'s [`VerifyDim`](super::VerifyDim) each carry one, flattened into the entry. The
//! contract only grows, so the keys each command printed before keep their names: the one place
//! that names them is [`Dialect`].
//!
//! ```
//! use dimguard_solver::report::{Dialect, Feasible, SizeAnswer};
//! use dimguard_solver::DimSet;
//!
//! let mut a = SizeAnswer::new(Dialect::Check);
//! a.accepted = Some(Feasible::from(&DimSet::progression(8, 64, 8, 0)));
//! a.nearest_accepted = SizeAnswer::nearest(&DimSet::progression(8, 64, 8, 0), 13);
//! let json = serde_json::to_value(&a).unwrap();
//! assert_eq!(json["accepted"]["count"], 8);
//! assert_eq!(json["nearest_accepted"]["below"], 8);
//! assert_eq!(json["nearest_accepted"]["above"], 16);
//! // `diagnose` names the same set `feasible`, and reads it back.
//! a.dialect = Dialect::Diagnose;
//! let text = serde_json::to_string(&a).unwrap();
//! assert!(text.contains(r#""feasible":{"count":8"#));
//! let back = SizeAnswer::read(&text, Dialect::Diagnose).unwrap();
//! assert_eq!(back.accepted.unwrap().count, 8);
//! ```

use super::common::{Feasible, Suggestion};
use super::sides::LinkedSides;
use crate::types::DimSet;
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize};

/// Which command's entry a [`SizeAnswer`] sits in: the keys its fields print under.
///
/// | field | `diagnose` | `check` | `verify` |
/// |---|---|---|---|
/// | `accepted` | `feasible` (always) | `accepted` (always) | `accepted` (when known) |
/// | `undecided` | `undecided_values` | `undecided` | `undecided_values` |
/// | `suggestions` | always | always | when any |
///
/// Every other field prints under its own name, each only when present: `linked_with` (in
/// `check`, the sources of every other size of the size's group; in `diagnose` and `verify`,
/// the names of the others of a group of several roots), the [`LinkedSides`] keys,
/// `nearest_accepted`. (`diagnose`'s own `undecided` is the reason a
/// dimension is undecided, a string; `verify`'s reason is its `note`.)
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Dialect {
    /// `diagnose`'s `dims[]`.
    #[default]
    Diagnose,
    /// `check`'s `dims[]`.
    Check,
    /// `verify`'s `dims[]`.
    Verify,
}

/// The nearest accepted sizes around a traced size the answer rejects
/// ([`SizeAnswer::nearest_accepted`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Nearest {
    /// The traced (example) size, which the accepted set does not hold.
    pub size: i128,
    /// The greatest accepted size below it (null: none).
    pub below: Option<i128>,
    /// The least accepted size above it (null: none).
    pub above: Option<i128>,
}

/// What the analysis says of one size, in every command.
#[derive(Debug, Clone, Default)]
pub struct SizeAnswer {
    /// Which command's keys it prints under.
    pub dialect: Dialect,
    /// The size's set: in `diagnose`, the values of its range that pass the guards the text
    /// lists for it (null when undecided); in `check`, the claimed sizes that pass every guard
    /// with every value of its partners (empty, with `undecided` holding the values, when
    /// undecided); in `verify`, the admitted values that pass (absent when undecided). The
    /// values that pass with some partner are `sides.with_some_partner` in every command.
    pub accepted: Option<Feasible>,
    /// Values neither proven to pass nor to fail, with the reason.
    pub undecided: Option<UndecidedSet>,
    /// Ranked single-`Dim` progressions inside `accepted`, best first.
    pub suggestions: Vec<Suggestion>,
    /// The sizes linked to this one by guards over several sizes.
    pub linked_with: Vec<String>,
    /// What the joint set of its group says of it.
    pub sides: LinkedSides,
    /// For a traced size the answer rejects: the nearest accepted sizes below and above.
    pub nearest_accepted: Option<Nearest>,
}

impl SizeAnswer {
    /// An empty answer printed under `dialect`'s keys.
    pub fn new(dialect: Dialect) -> SizeAnswer {
        SizeAnswer {
            dialect,
            ..SizeAnswer::default()
        }
    }

    /// The nearest members of `accepted` around `size`, when `accepted` does not hold it
    /// (`None` when it does, or holds nothing).
    pub fn nearest(accepted: &DimSet, size: i128) -> Option<Nearest> {
        if accepted.contains(size) || accepted.is_empty() {
            return None;
        }
        let below = size.checked_sub(1).and_then(|x| accepted.prev_at_most(x));
        let above = size.checked_add(1).and_then(|x| accepted.next_at_least(x));
        Some(Nearest { size, below, above })
    }

    /// The set key and the undecided key of `dialect`.
    fn keys(dialect: Dialect) -> (&'static str, &'static str) {
        match dialect {
            Dialect::Diagnose => ("feasible", "undecided_values"),
            Dialect::Check => ("accepted", "undecided"),
            Dialect::Verify => ("accepted", "undecided_values"),
        }
    }

    /// Reads the answer back from one `dims[]` entry's JSON `text`, printed under `dialect`.
    /// (Apart from the entry: serde cannot read 128-bit integers in a struct with a flattened
    /// field.)
    pub fn read(text: &str, dialect: Dialect) -> Result<SizeAnswer, serde_json::Error> {
        #[derive(Deserialize)]
        struct Plain {
            #[serde(default)]
            feasible: Option<Feasible>,
            #[serde(default)]
            accepted: Option<Feasible>,
            #[serde(default)]
            undecided_values: Option<UndecidedSet>,
            #[serde(default)]
            suggestions: Vec<Suggestion>,
            #[serde(default)]
            linked_with: Vec<String>,
            #[serde(default)]
            nearest_accepted: Option<Nearest>,
        }
        #[derive(Deserialize)]
        struct CheckUndecided {
            #[serde(default)]
            undecided: Option<UndecidedSet>,
        }
        let p: Plain = serde_json::from_str(text)?;
        let undecided = match dialect {
            Dialect::Check => serde_json::from_str::<CheckUndecided>(text)?.undecided,
            _ => p.undecided_values,
        };
        Ok(SizeAnswer {
            dialect,
            accepted: match dialect {
                Dialect::Diagnose => p.feasible,
                _ => p.accepted,
            },
            undecided,
            suggestions: p.suggestions,
            linked_with: p.linked_with,
            sides: serde_json::from_str(text)?,
            nearest_accepted: p.nearest_accepted,
        })
    }
}

/// The keys whose names depend on the [`Dialect`].
struct Head<'a>(&'a SizeAnswer);

impl Serialize for Head<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let a = self.0;
        let (set, undecided) = SizeAnswer::keys(a.dialect);
        let mut m = s.serialize_map(None)?;
        if a.dialect != Dialect::Verify || a.accepted.is_some() {
            m.serialize_entry(set, &a.accepted)?;
        }
        if a.dialect != Dialect::Verify || !a.suggestions.is_empty() {
            m.serialize_entry("suggestions", &a.suggestions)?;
        }
        if let Some(u) = &a.undecided {
            m.serialize_entry(undecided, u)?;
        }
        m.end()
    }
}

impl Serialize for SizeAnswer {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            #[serde(flatten)]
            head: Head<'a>,
            #[serde(skip_serializing_if = "<[String]>::is_empty")]
            linked_with: &'a [String],
            #[serde(skip_serializing_if = "Option::is_none")]
            nearest_accepted: Option<Nearest>,
            #[serde(flatten)]
            sides: &'a LinkedSides,
        }
        Out {
            head: Head(self),
            linked_with: &self.linked_with,
            nearest_accepted: self.nearest_accepted,
            sides: &self.sides,
        }
        .serialize(s)
    }
}

/// Values neither proven to pass nor to fail, with the reason (beside `accepted`, which then
/// holds only the values proven to pass).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UndecidedSet {
    /// How many values.
    pub count: u128,
    /// Why, in words.
    pub reason: String,
    /// The values, in the `feasible` segment form.
    pub segments: Vec<crate::types::Segment>,
}

impl UndecidedSet {
    /// The undecided values `set`, with the reason.
    pub fn new(set: &DimSet, reason: impl Into<String>) -> UndecidedSet {
        UndecidedSet {
            count: set.count(),
            reason: reason.into(),
            segments: set.segments().to_vec(),
        }
    }
}
