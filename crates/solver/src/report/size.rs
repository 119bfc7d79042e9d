//! One size's entry, the same type in every command's `dims[]`: [`Entry`], the command's own
//! fields (its [`EntryKind`]: `diagnose`'s [`Diagnosed`](super::Diagnosed), `check`'s
//! [`Checked`](super::Checked), `verify`'s [`Verified`](super::Verified)) beside one
//! [`SizeAnswer`], what the analysis says of the size in every command.
//!
//! The analysis does not know which command it answers; the entry's one serializer writes the
//! answer's keys among the kind's fields. The contract only grows, so the keys each command
//! printed before keep their names: the one place that names them is [`Command`], chosen by the
//! kind at output.
//!
//! ```
//! use dimguard_solver::report::{Checked, Claimed, Command, Entry, Feasible, SizeAnswer};
//! use dimguard_solver::DimSet;
//!
//! let mut a = SizeAnswer::default();
//! a.accepted = Some(Feasible::from(&DimSet::progression(8, 64, 8, 0)));
//! a.nearest_accepted = SizeAnswer::nearest(&DimSet::progression(8, 64, 8, 0), 13);
//! let claimed = Claimed { count: 63, min: Some(2), max: Some(64) };
//! let kind = Checked { input: "x".into(), index: 2, symbol: "s0".into(), expr: "s0".into(),
//!     claimed, source: "L['x'].size()[2]".into(), rejected_examples: vec![],
//!     same_as: None, example: Some(13) };
//! let entry = Entry { kind, answer: a };
//! assert_eq!(entry.input, "x"); // the kind's fields, through the entry
//! let json = serde_json::to_value(&entry).unwrap();
//! assert_eq!(json["accepted"]["count"], 8);
//! assert_eq!(json["nearest_accepted"]["below"], 8);
//! assert_eq!(json["nearest_accepted"]["above"], 16);
//! // The answer's keys sit where the contract has always printed them: after `claimed`.
//! let text = serde_json::to_string(&entry).unwrap();
//! assert!(text.find(r#""claimed""#) < text.find(r#""accepted""#));
//! assert!(text.find(r#""accepted""#) < text.find(r#""source""#));
//! // `diagnose` names the same set `feasible`; every command reads it back.
//! let back: Entry<Checked> = serde_json::from_str(&text).unwrap();
//! assert_eq!(back.answer.accepted.unwrap().count, 8);
//! let diag = SizeAnswer::read(r#"{"feasible": {"count": 8, "min": 8, "max": 64,
//!     "segments": []}}"#, Command::Diagnose).unwrap();
//! assert_eq!(diag.accepted.unwrap().count, 8);
//! ```

use super::common::{Feasible, Suggestion};
use super::sides::LinkedSides;
use crate::types::DimSet;
use serde::de::DeserializeOwned;
use serde::ser::{Impossible, SerializeMap, SerializeStruct};
use serde::{Deserialize, Serialize, Serializer};

/// Which command's `dims[]` an [`Entry`] sits in: the names its answer's keys print under,
/// the one place that names them.
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// `diagnose`'s `dims[]`.
    Diagnose,
    /// `check`'s `dims[]`.
    Check,
    /// `verify`'s `dims[]`.
    Verify,
}

impl Command {
    /// The set key and the undecided key.
    fn keys(self) -> (&'static str, &'static str) {
        match self {
            Command::Diagnose => ("feasible", "undecided_values"),
            Command::Check => ("accepted", "undecided"),
            Command::Verify => ("accepted", "undecided_values"),
        }
    }

    /// Whether the set and the suggestions print only when present (else always, the set as
    /// null when undecided).
    fn only_present(self) -> bool {
        self == Command::Verify
    }
}

/// A command's own fields of a size's [`Entry`].
pub trait EntryKind: Serialize {
    /// The command whose `dims[]` the entry sits in.
    const COMMAND: Command;
    /// The field the answer's keys print before (`None`: after the last), where the contract
    /// has always printed them.
    const ANSWER_BEFORE: Option<&'static str>;
}

/// One size in a command's `dims[]`: the command's own fields beside the size's answer. Reads
/// as its kind (`entry.name` is `entry.kind.name`).
#[derive(Debug, Clone)]
pub struct Entry<K> {
    /// The command's own fields.
    pub kind: K,
    /// Its answer, as in every command: the set (`feasible` in `diagnose`, `accepted` in `check`
    /// and `verify`), `suggestions`, `linked_with`, the undecided values, the joint set's sides,
    /// `nearest_accepted` ([`Command`] names the keys).
    pub answer: SizeAnswer,
}

impl<K> std::ops::Deref for Entry<K> {
    type Target = K;
    fn deref(&self) -> &K {
        &self.kind
    }
}

impl<K> std::ops::DerefMut for Entry<K> {
    fn deref_mut(&mut self) -> &mut K {
        &mut self.kind
    }
}

impl<K: EntryKind + DeserializeOwned> Entry<K> {
    /// Reads an entry back from its JSON `text`: the kind's fields, then the answer apart
    /// (serde cannot read 128-bit integers in a struct with a flattened field).
    pub fn read(text: &str) -> Result<Entry<K>, serde_json::Error> {
        Ok(Entry {
            kind: serde_json::from_str(text)?,
            answer: SizeAnswer::read(text, K::COMMAND)?,
        })
    }
}

impl<K: EntryKind> Serialize for Entry<K> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        self.kind.serialize(Fields {
            map: &mut m,
            answer: Some((&self.answer, K::COMMAND, K::ANSWER_BEFORE)),
        })?;
        m.end()
    }
}

/// Reads the entry from JSON only (its text is read twice: the kind, then the answer).
impl<'de, K: EntryKind + DeserializeOwned> Deserialize<'de> for Entry<K> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Entry<K>, D::Error> {
        let raw = Box::<serde_json::value::RawValue>::deserialize(d)?;
        Entry::read(raw.get()).map_err(serde::de::Error::custom)
    }
}

/// The answer's keys, under `command`'s names, into the entry's map.
fn write_answer<M: SerializeMap>(
    m: &mut M,
    a: &SizeAnswer,
    command: Command,
) -> Result<(), M::Error> {
    let (set, undecided) = command.keys();
    let always = !command.only_present();
    if always || a.accepted.is_some() {
        m.serialize_entry(set, &a.accepted)?;
    }
    if always || !a.suggestions.is_empty() {
        m.serialize_entry("suggestions", &a.suggestions)?;
    }
    if let Some(u) = &a.undecided {
        m.serialize_entry(undecided, u)?;
    }
    if !a.linked_with.is_empty() {
        m.serialize_entry("linked_with", &a.linked_with)?;
    }
    if let Some(n) = &a.nearest_accepted {
        m.serialize_entry("nearest_accepted", n)?;
    }
    a.sides.serialize(Fields {
        map: m,
        answer: None,
    })
}

/// Writes a struct's fields into a map being written (an entry's), with the answer's keys
/// before the field `ANSWER_BEFORE` names (or after the last).
struct Fields<'m, 'a, M> {
    map: &'m mut M,
    answer: Option<(&'a SizeAnswer, Command, Option<&'static str>)>,
}

impl<M: SerializeMap> Fields<'_, '_, M> {
    /// The answer, when it goes before `key`.
    fn before(&mut self, key: &'static str) -> Result<(), M::Error> {
        if let Some((a, command, Some(at))) = self.answer {
            if at == key {
                self.answer = None;
                write_answer(self.map, a, command)?;
            }
        }
        Ok(())
    }
}

impl<M: SerializeMap> SerializeStruct for Fields<'_, '_, M> {
    type Ok = ();
    type Error = M::Error;
    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), M::Error> {
        self.before(key)?;
        self.map.serialize_entry(key, value)
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), M::Error> {
        self.before(key)
    }
    fn end(self) -> Result<(), M::Error> {
        match self.answer {
            Some((a, command, _)) => write_answer(self.map, a, command),
            None => Ok(()),
        }
    }
}

/// Fields of anything but a struct: an entry's kind is always one.
fn no_struct<E: serde::ser::Error>() -> E {
    E::custom("an entry's fields are a struct")
}

macro_rules! no_struct {
    ($($f:ident($t:ty);)*) => {
        $(fn $f(self, _: $t) -> Result<(), M::Error> {
            Err(no_struct())
        })*
    };
}

impl<M: SerializeMap> Serializer for Fields<'_, '_, M> {
    type Ok = ();
    type Error = M::Error;
    type SerializeSeq = Impossible<(), M::Error>;
    type SerializeTuple = Impossible<(), M::Error>;
    type SerializeTupleStruct = Impossible<(), M::Error>;
    type SerializeTupleVariant = Impossible<(), M::Error>;
    type SerializeMap = Impossible<(), M::Error>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Impossible<(), M::Error>;
    no_struct! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_unit_struct(&'static str);
    }
    fn serialize_none(self) -> Result<(), M::Error> {
        Err(no_struct())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), M::Error> {
        Err(no_struct())
    }
    fn serialize_unit(self) -> Result<(), M::Error> {
        Err(no_struct())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), M::Error> {
        Err(no_struct())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), M::Error> {
        Err(no_struct())
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), M::Error> {
        Err(no_struct())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, M::Error> {
        Err(no_struct())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, M::Error> {
        Err(no_struct())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, M::Error> {
        Err(no_struct())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, M::Error> {
        Err(no_struct())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, M::Error> {
        Err(no_struct())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, M::Error> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, M::Error> {
        Err(no_struct())
    }
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

/// What the analysis says of one size, in every command (an [`Entry`] prints it under its
/// command's keys).
#[derive(Debug, Clone, Default)]
pub struct SizeAnswer {
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

    /// Reads the answer back from one `dims[]` entry's JSON `text`, printed under `command`'s
    /// keys ([`Entry::read`] reads the whole entry).
    pub fn read(text: &str, command: Command) -> Result<SizeAnswer, serde_json::Error> {
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
        let undecided = match command {
            Command::Check => serde_json::from_str::<CheckUndecided>(text)?.undecided,
            _ => p.undecided_values,
        };
        Ok(SizeAnswer {
            accepted: match command {
                Command::Diagnose => p.feasible,
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
    /// The undecided values `set`, with the reason (an [`Undecided`](crate::report::Undecided),
    /// in its words).
    pub fn new(set: &DimSet, reason: impl std::fmt::Display) -> UndecidedSet {
        UndecidedSet {
            count: set.count(),
            reason: reason.to_string(),
            segments: set.segments().to_vec(),
        }
    }
}
