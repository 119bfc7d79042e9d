//! The one model of a user's `dynamic_shapes` spec ([`Sheet`]), what it says about each size
//! ([`Sheet::lookup`], [`Sheet::admitted`]) and its printer ([`Sheet::code`]).
//!
//! A [`Sheet`] is a spec as data: root `Dim`s with their bounds, the other names the spec
//! defines (derived `8*_h + 5`, an int, `Dim.AUTO`, `Dim.STATIC`), and one [`Entry`] per
//! `(input, index)` of the `dynamic_shapes` dict whose [`Value`] is an affine use of a root,
//! `Dim.AUTO`, `Dim.STATIC` or an integer. It is what [`crate::spec::read`] reads, what
//! [`crate::merge`] narrows, what `verify` checks and what the Python package round-trips as
//! JSON.

use dimguard_solver::python::{self, py_name, source_input, SpecBlock};
use dimguard_solver::{DimSet, DEFAULT_MIN, SIZE_MAX};
use serde::{Deserialize, Serialize};

/// A `dynamic_shapes` spec as data.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sheet {
    /// Root `Dim`s, in order of definition.
    pub roots: Vec<Root>,
    /// One entry per `(input, index)` the spec mentions, in the user's order.
    pub entries: Vec<Entry>,
    /// What a merge changed, in sentences (empty for a spec as read).
    #[serde(default)]
    pub notes: Vec<String>,
    /// The other names the spec defines, in order of definition: derived dims (`h = 8*_h`, a
    /// chain `_r = 3*__r + 2; h = 16*_r` composed to its root), ints, `Dim.AUTO`, `Dim.STATIC`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<Named>,
    /// Lines (and dict items, and ShapesSpec assumptions) not understood or not applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unrecognized: Vec<String>,
    /// Whether the spec has a `dynamic_shapes` dict: a size with an input's source is then
    /// found by that source only (a dimension the dict leaves out, or gives `None`, is static
    /// in torch, whatever its name).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dict: bool,
}

/// A root `Dim('name', min=.., max=..)`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Root {
    /// Its name (a Python identifier): the variable the spec assigns it to.
    pub name: String,
    /// The name given to `Dim(...)` itself when it differs from the variable's
    /// (`b = Dim('batch')`); printed back as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `min=`, when given.
    pub min: Option<i128>,
    /// `max=`, when given.
    pub max: Option<i128>,
    /// A `ShapesSpec`'s assumptions over this variable alone (`H % 32 == 0`), as written: its
    /// sizes are those of `min..=max` where every one holds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    /// The sizes `assumptions` leave, solved once when they were applied.
    #[serde(skip)]
    pub(crate) narrowed: Option<DimSet>,
}

/// A name the spec defines that is not a root `Dim`: `h = 8*_h`, `b = 1`, `w = Dim.AUTO`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Named {
    /// The variable.
    pub name: String,
    /// What it is.
    pub value: Value,
}

/// One dimension of one input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The input's name (a `forward` parameter).
    pub input: String,
    /// The dimension's index.
    pub index: usize,
    /// What the spec says about it.
    pub value: Value,
    /// The name (of [`Sheet::names`]) the dict gives it by, for a value that is no `Dim`
    /// (`b` in `{0: b}` with `b = 1`); printed back as that name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A comment printed at the end of the entry's line (the dict is then printed one entry a
    /// line): the user's name for a size that is no longer a named `Dim` (`Dim.AUTO`,
    /// `Dim.STATIC`, an int, which torch gives no name), and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// What a spec says about one dimension. JSON: `{"kind": "dim", "root": "h", "coef": 8,
/// "offset": 5, "name": "w"}`, `{"kind": "auto", "min": 2, "max": 9}`, `{"kind": "static"}`,
/// `{"kind": "int", "value": 3}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "Wire", try_from = "Wire")]
pub enum Value {
    /// `coef*root + offset` (a plain `Dim` is `coef` 1, `offset` 0); `name` names a derived dim.
    Dim {
        /// The root's name.
        root: String,
        /// Multiplier (positive).
        coef: i128,
        /// Offset.
        offset: i128,
        /// The name a derived dim is printed under.
        #[serde(default)]
        name: Option<String>,
    },
    /// `Dim.AUTO`, optionally bounded.
    Auto {
        /// `min=`.
        min: Option<i128>,
        /// `max=`.
        max: Option<i128>,
    },
    /// `Dim.STATIC` (the traced size).
    Static,
    /// A fixed size.
    Int {
        /// The size.
        value: i128,
    },
}

/// [`Value`]'s JSON as one flat object (serde's internally tagged enums cannot hold `i128`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Wire {
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    root: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    coef: Option<i128>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offset: Option<i128>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    min: Option<i128>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    max: Option<i128>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    value: Option<i128>,
}

impl From<Value> for Wire {
    fn from(v: Value) -> Wire {
        match v {
            Value::Dim {
                root,
                coef,
                offset,
                name,
            } => Wire {
                kind: "dim".into(),
                root: Some(root),
                coef: Some(coef),
                offset: Some(offset),
                name,
                ..Wire::default()
            },
            Value::Auto { min, max } => Wire {
                kind: "auto".into(),
                min,
                max,
                ..Wire::default()
            },
            Value::Static => Wire {
                kind: "static".into(),
                ..Wire::default()
            },
            Value::Int { value } => Wire {
                kind: "int".into(),
                value: Some(value),
                ..Wire::default()
            },
        }
    }
}

/// Why a [`Wire`] is no [`Value`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum WireError {
    /// A field its kind needs is missing.
    Missing {
        kind: &'static str,
        field: &'static str,
    },
    /// A kind other than dim, auto, static, int.
    Kind(String),
}

impl std::fmt::Display for WireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WireError::Missing { kind, field } => write!(f, "a {kind} value needs `{field}`"),
            WireError::Kind(other) => {
                write!(f, "unknown kind `{other}` (dim, auto, static, int)")
            }
        }
    }
}

impl TryFrom<Wire> for Value {
    type Error = WireError;
    fn try_from(w: Wire) -> Result<Value, WireError> {
        let missing = |kind, field| WireError::Missing { kind, field };
        Ok(match w.kind.as_str() {
            "dim" => Value::Dim {
                root: w.root.ok_or(missing("dim", "root"))?,
                coef: w.coef.unwrap_or(1),
                offset: w.offset.unwrap_or(0),
                name: w.name,
            },
            "auto" => Value::Auto {
                min: w.min,
                max: w.max,
            },
            "static" => Value::Static,
            "int" => Value::Int {
                value: w.value.ok_or(missing("int", "value"))?,
            },
            other => return Err(WireError::Kind(other.to_string())),
        })
    }
}

/// One size as the spec gives it ([`Sheet::lookup`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Given {
    /// The spec's name for it: its variable (`h`; a root's, a derived dim's, a named int's), or
    /// for a value written inline in the dict, the input's dimension (`x_3`).
    pub name: String,
    /// What the spec says.
    pub value: Value,
    /// The sizes it admits; `None` for `Dim.STATIC` (the traced size, unknown here) and for a
    /// derived dim whose root the spec does not define.
    pub admitted: Option<DimSet>,
}

impl Given {
    /// For a size given as a use of a root `Dim` (`h` itself, `h = 8*_h + 1`, `w = h`): the
    /// root, multiplier and offset. Two sizes of one root are tied (`8*_h` and `8*_h + 1`
    /// move together); `admitted` alone does not say so.
    pub fn derived(&self) -> Option<(&str, i128, i128)> {
        match &self.value {
            Value::Dim {
                root, coef, offset, ..
            } => Some((root.as_str(), *coef, *offset)),
            _ => None,
        }
    }
}

/// Equal roots say the same (the solved `narrowed` is a cache).
impl PartialEq for Root {
    fn eq(&self, o: &Root) -> bool {
        (
            &self.name,
            &self.label,
            self.min,
            self.max,
            &self.assumptions,
        ) == (&o.name, &o.label, o.min, o.max, &o.assumptions)
    }
}

impl Root {
    /// A root `Dim` with these bounds (no label, no assumption).
    pub fn new(name: &str, min: Option<i128>, max: Option<i128>) -> Root {
        Root {
            name: name.to_string(),
            label: None,
            min,
            max,
            assumptions: vec![],
            narrowed: None,
        }
    }

    /// Its bounds, `min..=max` (a missing `min` is 0, a missing `max` [`SIZE_MAX`]).
    pub fn range(&self) -> (i128, i128) {
        (self.min.unwrap_or(0), self.max.unwrap_or(SIZE_MAX))
    }

    /// The sizes it admits: its range, where every assumption holds.
    pub fn set(&self) -> Option<DimSet> {
        if let Some(s) = &self.narrowed {
            return Some(s.clone());
        }
        let (lo, hi) = self.range();
        let mut set = DimSet::interval(lo, hi);
        for a in &self.assumptions {
            set = narrow_by(&set, &self.name, a)?;
        }
        Some(set)
    }

    /// Applies a `ShapesSpec` assumption over this root alone; false (nothing changed) when
    /// the engine cannot decide it.
    pub(crate) fn assume(&mut self, text: &str) -> bool {
        let Some(set) = self.set().and_then(|s| narrow_by(&s, &self.name, text)) else {
            return false;
        };
        self.assumptions.push(text.to_string());
        self.narrowed = Some(set);
        true
    }
}

/// The members of `set` where the guard `text` over `var` holds; `None` when undecided.
fn narrow_by(set: &DimSet, var: &str, text: &str) -> Option<DimSet> {
    let e = dimguard_solver::syntax::parse_guard(text).ok()?;
    dimguard_solver::engine::solve(&e, var, set, &dimguard_solver::engine::Limits::default())
        .set()
        .cloned()
}

impl Sheet {
    /// `base`, or `_base`, `__base`, ...: the first that names no root, no name and no entry's
    /// derived name of the sheet (a name the reader or a merge adds never shadows one).
    pub(crate) fn fresh(&self, base: &str) -> String {
        let mut name = base.to_string();
        while self.root(&name).is_some()
            || self.entries.iter().any(|e| e.derived_name() == Some(&name))
            || self.names.iter().any(|n| n.name == name)
        {
            name.insert(0, '_');
        }
        name
    }

    /// The entry at `(input, index)`.
    pub fn entry(&self, input: &str, index: usize) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| e.input == input && e.index == index)
    }

    pub(crate) fn entry_mut(&mut self, input: &str, index: usize) -> Option<&mut Entry> {
        self.entries
            .iter_mut()
            .find(|e| e.input == input && e.index == index)
    }

    /// The root `Dim` called `name`.
    pub fn root(&self, name: &str) -> Option<&Root> {
        self.roots.iter().find(|r| r.name == name)
    }

    /// Whether the spec defines no size at all.
    pub fn is_empty(&self) -> bool {
        self.roots.is_empty() && self.names.is_empty() && self.entries.is_empty()
    }

    /// Every value the spec holds (entries' and names'), to rewrite together: a root that
    /// changes changes every use.
    pub(crate) fn values_mut(&mut self) -> impl Iterator<Item = &mut Value> {
        self.entries
            .iter_mut()
            .map(|e| &mut e.value)
            .chain(self.names.iter_mut().map(|n| &mut n.value))
    }

    /// The sizes `value` admits; `None` for `Dim.STATIC` and for a root the spec does not
    /// define. `Dim.AUTO` is `2..` within its bounds; a derived dim the image of its root's
    /// sizes (those up to [`SIZE_MAX`]).
    pub fn admitted(&self, value: &Value) -> Option<DimSet> {
        match value {
            Value::Dim {
                root, coef, offset, ..
            } if *coef > 0 => {
                let r = self.root(root)?;
                if r.assumptions.is_empty() {
                    let (kmin, kmax) = r.range();
                    let kmax = kmax.min((SIZE_MAX - offset) / coef);
                    return Some(DimSet::progression(
                        coef * kmin + offset,
                        coef * kmax + offset,
                        *coef,
                        *offset,
                    ));
                }
                r.set()?.affine_image(*coef, *offset).ok()
            }
            Value::Dim { .. } | Value::Static => None,
            Value::Auto { min, max } => Some(DimSet::interval(
                min.unwrap_or(DEFAULT_MIN),
                max.unwrap_or(SIZE_MAX),
            )),
            Value::Int { value } => Some(DimSet::interval(*value, *value)),
        }
    }

    fn given(&self, name: String, value: &Value) -> Given {
        Given {
            name,
            admitted: self.admitted(value),
            value: value.clone(),
        }
    }

    /// What the spec says about the entry: its name as the spec writes it.
    fn given_entry(&self, e: &Entry) -> Given {
        let name = match &e.value {
            Value::Dim {
                root,
                coef: 1,
                offset: 0,
                name: None,
            } => root.clone(),
            Value::Dim { name: Some(n), .. } => n.clone(),
            _ => e
                .name
                .clone()
                .unwrap_or_else(|| py_name(&format!("{}_{}", e.input, e.index))),
        };
        self.given(name, &e.value)
    }

    /// The sizes the spec defines by name, in order: roots (but not a root only derived dims
    /// use, unless the dict gives it by its own name), then the other names.
    fn by_name(&self, name: &str) -> Option<Given> {
        let plain_in_dict = |r: &str| {
            self.entries.iter().any(|e| {
                matches!(&e.value, Value::Dim { root, coef: 1, offset: 0, name: None } if root == r)
            })
        };
        let only_a_root = |r: &str| {
            self.names
                .iter()
                .any(|n| matches!(&n.value, Value::Dim { root, .. } if root == r))
                && !plain_in_dict(r)
        };
        if let Some(r) = self.root(name).filter(|r| !only_a_root(&r.name)) {
            return Some(self.given(
                r.name.clone(),
                &Value::Dim {
                    root: r.name.clone(),
                    coef: 1,
                    offset: 0,
                    name: None,
                },
            ));
        }
        let n = self.names.iter().find(|n| n.name == name)?;
        Some(self.given(n.name.clone(), &n.value))
    }

    /// What the spec says about a dimension: by its source (`L['x'].size()[2]`, the dict's
    /// entry for that input's dimension; with a dict, a dimension it leaves out is static and
    /// found by no name), else by its name, or by the source written as a name.
    pub fn lookup(&self, name: &str, source: Option<&str>) -> Option<Given> {
        if let Some((input, index)) = source.and_then(source_input) {
            if let Some(e) = self.entry(&input, index) {
                return Some(self.given_entry(e));
            }
            if self.dict {
                return None;
            }
        }
        self.by_name(name)
            .or_else(|| source.and_then(|s| self.by_name(s)))
    }

    /// The spec's own lines for one size: its root's `Dim` (with any assumption) and, for a
    /// derived dim, its definition.
    pub fn definition(&self, g: &Given) -> String {
        match &g.value {
            Value::Dim {
                root, coef, offset, ..
            } => {
                let root_line = self
                    .root(root)
                    .map_or_else(|| format!("{root} = ?"), root_line);
                if (*coef, *offset) == (1, 0) && g.name == *root {
                    root_line
                } else {
                    format!("{root_line}\n{}", python::assign(&g.name, &g.value.expr()))
                }
            }
            v => python::assign(&g.name, &v.expr()),
        }
    }

    /// Python to paste: the `Dim` definitions, the other names, then `dynamic_shapes = {...}`
    /// with every entry.
    pub fn code(&self) -> String {
        let mut block = SpecBlock::new();
        for r in &self.roots {
            block.code(&root_line(r));
        }
        let mut defs: Vec<String> = Vec::new();
        let named = self.names.iter().map(|n| (n.name.as_str(), &n.value));
        let derived = self
            .entries
            .iter()
            .filter_map(|e| Some((e.derived_name()?.as_str(), &e.value)));
        for (n, v) in named.chain(derived) {
            let def = python::assign(n, &v.expr());
            if !defs.contains(&def) {
                defs.push(def);
            }
        }
        for d in &defs {
            block.code(d);
        }
        for e in &self.entries {
            block.entry(&e.input, e.index, self.reference(e), e.comment.clone());
        }
        if self.dict {
            block.with_dict();
        }
        block.finish()
    }

    /// How the dict refers to an entry: a derived dim or a named value by its name (when that
    /// name still says the same), everything else inline.
    fn reference(&self, e: &Entry) -> String {
        let own = match &e.value {
            Value::Dim { name, .. } => name.as_ref(),
            _ => e.name.as_ref(),
        };
        if let Some(n) = own {
            if self
                .names
                .iter()
                .any(|x| x.name == *n && x.value == e.value)
            {
                return n.clone();
            }
        }
        match &e.value {
            Value::Dim {
                coef, offset, name, ..
            } if (*coef, *offset) != (1, 0) => name.clone().unwrap_or_else(|| e.value.expr()),
            v => v.expr(),
        }
    }
}

/// `h = Dim('h', min=2, max=9)`, with a comment for each assumption.
fn root_line(r: &Root) -> String {
    let mut line = python::root_dim(&r.name, r.label.as_deref(), r.min, r.max);
    for a in &r.assumptions {
        line.push_str(&format!("  # assumption: {a}"));
    }
    line
}

impl Entry {
    pub(crate) fn derived_name(&self) -> Option<&String> {
        match &self.value {
            Value::Dim {
                coef, offset, name, ..
            } if (*coef, *offset) != (1, 0) => name.as_ref(),
            _ => None,
        }
    }
}

impl Value {
    /// `8*_h + 5`, `h`, `Dim.AUTO(min=2, max=9)`, `Dim.STATIC`, `224`.
    pub fn expr(&self) -> String {
        match self {
            Value::Dim {
                root, coef, offset, ..
            } => python::derived(root, *coef, *offset),
            Value::Auto { min, max } => python::auto_hint(*min, *max),
            Value::Static => python::STATIC.into(),
            Value::Int { value } => value.to_string(),
        }
    }
}
