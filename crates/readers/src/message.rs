//! The model of a text dimguard reads: per dimension its name, source, requested range, guards
//! and specializations; guards over several sizes; relations between dimensions; data-dependent
//! expressions; torch's own suggested fixes. Every reader of an input form (`forms/`, `trace`)
//! fills a [`Message`]; `diagnose` turns it into the analysis stage's problem.

pub use dimguard_solver::provenance::Provenance;
use dimguard_solver::report::Form;
pub use dimguard_solver::report::{Partial, Unreadable};
use dimguard_solver::Expr;

pub use dimguard_solver::{DEFAULT_MIN, SIZE_MAX};

/// Everything read from one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Dimensions in the order the message first names them.
    pub dims: Vec<DimEntry>,
    /// Pairs of dimension names that must always be equal.
    pub equalities: Vec<(String, String)>,
    /// Linear relations `name = expr(other)`.
    pub relations: Vec<Relation>,
    /// torch's "Suggested fixes", in order.
    pub fixes: Vec<Fix>,
    /// Guards on data-dependent (unbacked) sizes torch could not decide
    /// ("Could not guard on data-dependent expression ...").
    pub data_dependent: Vec<Guard>,
    /// Lines that looked like constraint bullets but were not understood (kept for the report).
    pub unrecognized: Vec<String>,
    /// Which form the text was read as.
    pub form: Form,
    /// Guards over several sizes (a log's or draft_export's linking guards, a run-time guard over
    /// two inputs), over the sizes' sources.
    pub joint: Vec<Guard>,
    /// What the reader assumed or skipped, in sentences (a default range, a suppressed guard).
    pub notes: Vec<String>,
    /// Guard-looking lines that could not be read, with their place and the reason.
    pub unreadable: Vec<Unreadable>,
    /// For a run-time failure (`Guard failed`, an input check): what failed.
    pub runtime: Option<Runtime>,
    /// For data-dependent expressions: the input size each unbacked symbol stands for, and
    /// whether the export used a `ShapesSpec`.
    pub datadep: Info,
    /// Sizes Torch-TensorRT found no upper bound for.
    pub missing_bounds: Vec<dimguard_solver::report::MissingBound>,
    /// Sizes the text traced (a `TORCH_TRACE`'s example values), with their names: examples
    /// for the diagnosis, before any the user gives.
    pub examples: Vec<(Option<String>, i128)>,
    /// Set when the text holds only some of the export's guards (a solver crash holds the one
    /// torch crashed on; a cut text, what comes before the cut; an excerpt of a draft_export
    /// report, its items): the sets its guards leave hold every accepted size, not only accepted
    /// ones. The diagnosis then claims no accepted set and pastes no `Dim`.
    pub partial: Option<Partial>,
}

/// What failed when an exported program ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Runtime {
    /// `guard_failed` or `input_check`.
    pub kind: Form,
    /// The failing condition as printed.
    pub text: String,
    /// The failing condition, over the sizes' sources.
    pub expr: Expr,
    /// For an input check: the size the program received (`but got 1000`).
    pub got: Option<i128>,
    /// A guard of a graph torch.compile made (a recompile reason), not of an exported program:
    /// at a size that fails it torch compiles another graph.
    pub recompile: bool,
    /// For a recompile: the text also lists every guard of each frame that failed
    /// (`TORCH_LOGS="recompiles,guards"`), so the sets are all the compiled graph accepts.
    pub listed: bool,
    /// For a recompile: the cached graphs the text names (`- 0/1: ...`), each with the guards it
    /// failed. A call runs if any one entry of its function accepts it: the sizes' sets are the
    /// union of the entries' sets, never their intersection.
    pub entries: Vec<CacheEntry>,
}

/// One graph torch.compile cached for a function, as a recompile reason names it.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheEntry {
    /// `0/1` (frame/entry) as printed, or `#k` for the k-th reason of a text that prints none.
    pub id: String,
    /// The compiled function (`forward`), when the text names it.
    pub function: Option<String>,
    /// The guards over sizes this entry failed, over the sizes' sources: the entry accepts at
    /// most the sizes where they all hold (the text lists only what failed).
    pub guards: Vec<Guard>,
    /// Its failed guards over anything that is not a size (a float or int argument, a
    /// constant, an object id), as printed.
    pub other: Vec<String>,
    /// The size the call had where a static size failed (`expected 128, actual 1024`).
    pub actual: Option<i128>,
}

/// One dimension named by the message.
#[derive(Debug, Clone, PartialEq)]
pub struct DimEntry {
    /// The debug name (`height`, `dim_2`, `_2`).
    pub name: String,
    /// The source (`L['x'].size()[2]`), when printed.
    pub source: Option<String>,
    /// The requested range `[lo, hi]`, when printed; omitted bounds become 2 and [`SIZE_MAX`].
    pub range: Option<(i128, i128)>,
    /// The guards listed for this dimension, in order, deduplicated.
    pub guards: Vec<Guard>,
    /// A constant the code specialized the dimension to.
    pub specialized: Option<i128>,
    /// An expression torch inferred the dimension to equal.
    pub inferred_equal: Option<String>,
    /// Whether torch forced the specialization because it could not solve the guards
    /// ("Specializations unexpectedly required"), rather than the code using a constant.
    pub forced: bool,
    /// Why the size became a constant, as the text says (`range_refined_to_singleton`).
    pub specialized_reason: Option<String>,
    /// The symbol torch gave the size (`s53`), when the text names one.
    pub symbol: Option<String>,
    /// Whether the input lists every guard on the dimension (a structured trace does; an error
    /// message lists only the failing ones): then no guard means every value of the range passes.
    pub every_guard: bool,
}

impl DimEntry {
    /// A dimension named `name` with nothing else known yet.
    pub fn new(name: &str) -> DimEntry {
        DimEntry {
            name: name.to_string(),
            source: None,
            range: None,
            guards: vec![],
            specialized: None,
            inferred_equal: None,
            forced: false,
            specialized_reason: None,
            symbol: None,
            every_guard: false,
        }
    }

    /// The variable its guards are written in: the source when printed, else the name.
    pub fn var(&self) -> &str {
        self.source.as_deref().unwrap_or(&self.name)
    }
}

/// A guard as printed, and parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Guard {
    /// The text exactly as printed (wrapped lines joined).
    pub text: String,
    /// The parsed guard.
    pub expr: Expr,
    /// Where the guard came from, when the input says (a log line, a draft_export stack, a
    /// structured trace).
    pub provenance: Option<Provenance>,
}

/// `name = expr` relating two dimensions.
#[derive(Debug, Clone, PartialEq)]
pub struct Relation {
    /// The dependent dimension.
    pub name: String,
    /// The dimension it is expressed in.
    pub other: String,
    /// The right-hand side as printed (`dx + 1`).
    pub expr: String,
}

/// One line of torch's "Suggested fixes".
#[derive(Debug, Clone, PartialEq)]
pub struct Fix {
    /// The name assigned.
    pub name: String,
    /// The right-hand side as printed.
    pub text: String,
    /// What it means.
    pub kind: FixKind,
}

/// The meaning of a suggested fix.
#[derive(Debug, Clone, PartialEq)]
pub enum FixKind {
    /// `name = Dim('name', min=.., max=..)`.
    Dim {
        /// `min=`, if given.
        min: Option<i128>,
        /// `max=`, if given.
        max: Option<i128>,
    },
    /// `name = 8*_name + 3` with `_name` another fix's name.
    Derived {
        /// The root Dim's name.
        root: String,
        /// Multiplier.
        coef: i128,
        /// Offset.
        offset: i128,
    },
    /// `name = 224` or `name = None  # 224`.
    Const(i128),
    /// `Dim.AUTO` or `Dim.DYNAMIC`: any size torch accepts.
    Auto,
    /// `Dim.STATIC`: the traced size.
    Static,
    /// Anything else (kept as text).
    Other,
}

impl Message {
    /// A message with nothing in it yet, read as `form`.
    pub fn empty(form: Form) -> Message {
        Message {
            dims: vec![],
            equalities: vec![],
            relations: vec![],
            fixes: vec![],
            data_dependent: vec![],
            unrecognized: vec![],
            form,
            joint: vec![],
            notes: vec![],
            unreadable: vec![],
            runtime: None,
            datadep: Default::default(),
            missing_bounds: vec![],
            examples: vec![],
            partial: None,
        }
    }

    /// Removes repeated guards (the same text under one dimension, among the joint guards, among
    /// the data-dependent ones), keeping the first: readers push guards as they find them and
    /// call this once, so reading stays linear however many guards a text repeats.
    pub fn dedup_guards(&mut self) {
        fn dedup(guards: &mut Vec<Guard>) {
            let mut seen = std::collections::HashSet::new();
            guards.retain(|g| seen.insert(g.text.clone()));
        }
        for d in &mut self.dims {
            dedup(&mut d.guards);
        }
        dedup(&mut self.joint);
        dedup(&mut self.data_dependent);
    }

    /// The dimension name of a size variable (its dimension's name, else the variable), for
    /// reports.
    pub fn name_of(&self, var: &str) -> String {
        self.dims
            .iter()
            .find(|d| d.var() == var)
            .map_or(var.to_string(), |d| d.name.clone())
    }

    /// The dimension named `name`, created (with `source`) if the message has none yet; a
    /// source fills in a missing one.
    pub fn dim_mut(&mut self, name: &str, source: Option<String>) -> &mut DimEntry {
        dim_mut(self, name, source)
    }
}

pub(crate) fn dim_mut<'a>(
    msg: &'a mut Message,
    name: &str,
    source: Option<String>,
) -> &'a mut DimEntry {
    let i = match msg.dims.iter().position(|d| d.name == name) {
        Some(i) => i,
        None => {
            msg.dims.push(DimEntry::new(name));
            msg.dims.len() - 1
        }
    };
    let d = &mut msg.dims[i];
    if d.source.is_none() {
        d.source = source;
    }
    d
}

/// What a data-dependent failure says about its unbacked sizes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Info {
    /// The export used torch 2.15's `ShapesSpec` / `ParamsSpec` API (the text says so, or the
    /// spec given is one).
    pub shapes_spec: bool,
    /// Each unbacked symbol the text names, in order of first mention.
    pub unbacked: Vec<Unbacked>,
}

/// One unbacked symbol and the input size it stands for.
#[derive(Debug, Clone, PartialEq)]
pub struct Unbacked {
    /// `u1`.
    pub symbol: String,
    /// The input size as the text writes it (`x.shape[2]`, `L['x'].size()[2]`).
    pub source: Option<String>,
    /// The user's name for the size (a `ShapeVar`'s variable, from `--spec` or `--range`).
    pub name: Option<String>,
    /// The range the size is exported with.
    pub range: Option<(i128, i128)>,
    /// torch calls it size-like (`>= 0`).
    pub size_like: bool,
}
