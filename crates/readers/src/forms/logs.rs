//! `TORCH_LOGS="+dynamic"` output: symbols, their sources and ranges, every guard with the
//! operator (and in strict mode the user line) that added it, replacements and specializations.
//!
//! Lines read (after [`super::clean`] removed the log prefixes):
//!
//! * `create_symbol s53 = 224 for L['x'].size()[2] [32, 512] (...)`: symbol, source, range;
//! * `track_symint L['b'].size()[2] s16 StrictMinMaxConstraint(warn_only=False, vr=VR[32, 512])`;
//! * `eval GUARD [guard added] CODE  # model.py:13 in forward (fake_impls.py:2435 in infer_size)`,
//!   also `at model.py:13 in forward (...)` and `runtime_assert GUARD [guard added] (...)`;
//! * `set_replacement s99 = s41 (solve)`, `set_replacement s1 = 6 (range_refined_to_singleton)`;
//! * `Ignored guard Eq(s0*s1, 16) == True`, `eval [guard suppressed] ...`,
//!   `could not evaluate Eq(u0, 0) due to data dependency, it was assumed to be False`;
//! * `failed during evaluate_expr(GUARD, hint=...)`: a data-dependent guard.

use super::clean::Line;
use super::clean::{int_bound, RawGuard};
use crate::message::{Message, Unreadable};
use crate::phrase::Phrase;
use dimguard_solver::provenance::{attribute, Frame, Provenance};
use dimguard_solver::report::Form;
use dimguard_solver::syntax::parse_guard;
use dimguard_solver::{is_backed, is_size_symbol, is_unbacked, Expr};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Whether the lines hold `TORCH_LOGS="+dynamic"` output.
pub fn is_log(lines: &[Line]) -> bool {
    lines.iter().any(|l| {
        let t = l.text.trim_start();
        t.starts_with("create_symbol ")
            || t.starts_with("create_unbacked_symint ")
            || t.starts_with("create_unbacked_symbol ")
            || (t.starts_with("eval ") && t.has("[guard added]"))
            || (t.starts_with("runtime_assert ") && t.has("[guard added]"))
            || t.starts_with("set_replacement ")
            || t.starts_with("track_symint ")
            || t.starts_with("Ignored guard ")
            || t.starts_with("Summary of dimension constraints")
            || t.has("failed during evaluate_expr(")
    })
}

/// A `TORCH_LOGS="+dynamic"` log of several compiles of one frame (`[0/0]`, `[0/1]`: torch.compile's
/// cache entries, each with its own symbols and guards): each entry read alone, and each size's
/// guard the union (`or`) of the entries' guards, as for a recompile's reasons (a call runs if
/// any entry accepts it). `None` when no frame has two entries with guards.
pub fn read_entries(lines: &[Line]) -> Option<Message> {
    let guard_line = |t: &str| {
        let t = t.trim_start();
        t.starts_with("create_symbol ") || (t.starts_with("eval ") && t.has("[guard added]"))
    };
    let mut ids: Vec<String> = Vec::new();
    for l in lines {
        if let Some(f) = &l.frame {
            if guard_line(&l.text) && !ids.contains(f) {
                ids.push(f.clone());
            }
        }
    }
    let frame = |id: &str| id.split('/').next().unwrap_or("").to_string();
    let repeated = ids
        .iter()
        .any(|a| ids.iter().filter(|b| frame(b) == frame(a)).count() > 1);
    if !repeated {
        return None;
    }
    let mut msg = Message::empty(Form::GuardFailed);
    let mut entries: Vec<crate::message::CacheEntry> = Vec::new();
    let mut unions: Vec<(String, Vec<Expr>)> = Vec::new();
    for id in &ids {
        let sub: Vec<Line> = lines
            .iter()
            .filter(|l| l.frame.as_deref() == Some(id.as_str()))
            .cloned()
            .collect();
        let m = read(&sub);
        let mut parts: Vec<crate::message::Guard> = Vec::new();
        for d in &m.dims {
            let Some(src) = d.source.clone() else {
                continue;
            };
            let nd = msg.dim_mut(&size_name(&src), Some(src.clone()));
            nd.range = nd.range.or(d.range);
            if let Some(v) = d.specialized {
                let text = format!("{src} == {v}");
                if let Ok(expr) = parse_guard(&text) {
                    parts.push(crate::message::Guard {
                        text,
                        expr,
                        provenance: None,
                    });
                }
            }
            parts.extend(d.guards.iter().cloned());
        }
        parts.extend(m.joint.iter().cloned());
        msg.unreadable.extend(m.unreadable);
        let conj = Expr::And(parts.iter().map(|g| g.expr.clone()).collect());
        match unions.iter_mut().find(|(f, _)| *f == frame(id)) {
            Some((_, v)) => v.push(conj),
            None => unions.push((frame(id), vec![conj])),
        }
        entries.push(crate::message::CacheEntry {
            id: id.clone(),
            function: None,
            guards: parts,
            other: vec![],
            actual: None,
        });
    }
    msg.notes.push(format!(
        "the log holds {} compiles ({}): each is a cache entry of torch.compile, and a call runs if any entry of its frame accepts it, so each size's set is the union of the entries' sets",
        ids.len(),
        ids.join(", ")
    ));
    let mut first: Option<Expr> = None;
    for (_, alts) in unions {
        let union = Expr::Or(alts);
        let atoms = union.atoms();
        let g = crate::message::Guard {
            text: union.to_string(),
            expr: union.clone(),
            provenance: None,
        };
        match atoms.iter().next() {
            Some(a) if atoms.len() == 1 => {
                let src = a.to_string();
                msg.dim_mut(&size_name(&src), Some(src)).guards.push(g);
            }
            Some(_) => msg.joint.push(g),
            None => {}
        }
        first.get_or_insert(union);
    }
    for d in &mut msg.dims {
        d.every_guard = true;
    }
    let expr = first?;
    msg.runtime = Some(crate::message::Runtime {
        kind: Form::GuardFailed,
        text: expr.to_string(),
        expr,
        got: None,
        recompile: true,
        listed: true,
        entries,
    });
    Some(msg)
}

/// A symbol of the shape environment.
#[derive(Debug, Default, Clone)]
struct Symbol {
    source: Option<String>,
    range: Option<(i128, i128)>,
    /// Replaced by a constant (value, reason).
    constant: Option<(i128, String)>,
    unbacked: bool,
}

/// Reads a log. Guards are rewritten over the symbols' sources; unreadable guard lines are
/// kept with their place and reason.
pub fn read(lines: &[Line]) -> Message {
    let mut msg = Message::empty(Form::TorchLogs);
    let mut log = LogRecords::default();
    for line in lines {
        log.line(line, &mut msg);
    }
    let excerpt = log.quoted_guards(&mut msg);
    specializations_summary(lines, &mut msg);
    log.constant_replacements();
    log.constant_sources(&mut msg);
    let mut names = log.dims(&mut msg, excerpt);
    log.unmapped_dims(&mut msg, &mut names);
    log.relations(&mut msg);
    log.place(&mut msg);
    msg
}

/// What [`read`] gathers from a log's lines: the symbols (in the order the log created them),
/// the guards, the replacements, and what is kept for the notes.
#[derive(Default)]
struct LogRecords {
    order: Vec<String>,
    ordered: HashSet<String>,
    syms: BTreeMap<String, Symbol>,
    guards: Vec<RawGuard>,
    /// `set_replacement` (symbol, right-hand side, reason).
    replaced: Vec<(String, String, String)>,
    /// Guard lines marked `[guard suppressed]`.
    suppressed: usize,
    /// A constrained size tracked as a constant: (source, value, range).
    constant_sources: Vec<(String, i128, (i128, i128))>,
    /// Data-dependent expressions torch decided by assumption.
    assumed: Vec<String>,
    /// Guards quoted in prose, with their line.
    prose: Vec<(usize, String)>,
}

impl LogRecords {
    /// Lists the symbol `name` in creation order (once).
    fn sym(&mut self, name: &str) {
        if self.ordered.insert(name.to_string()) {
            self.order.push(name.to_string());
        }
    }

    /// One line of the log, by its record (`create_symbol`, `track_symint`, `set_replacement`,
    /// a guard, a data-dependent assumption), or prose quoting a guard.
    fn line(&mut self, line: &Line, msg: &mut Message) {
        let t = line.text.trim();
        if let Some(rest) = t.strip_prefix("create_symbol ") {
            self.create_symbol(rest);
        } else if let Some(rest) = t
            .strip_prefix("create_unbacked_symint ")
            .or_else(|| t.strip_prefix("create_unbacked_symbol "))
        {
            let name = rest.split_whitespace().next().unwrap_or("");
            self.syms.entry(name.to_string()).or_default().unbacked = true;
        } else if let Some(rest) = t.strip_prefix("track_symint ") {
            self.track_symint(rest);
        } else if let Some(rest) = t.strip_prefix("set_replacement ") {
            // s99 = s41 (solve) | s1 = 6 (range_refined_to_singleton) VR[6, 6]
            let Some((a, rest)) = rest.split_once(" = ") else {
                return;
            };
            let (rhs, reason) = match rest.split_once(" (") {
                Some((r, why)) => (r.trim(), why.split(')').next().unwrap_or("").to_string()),
                None => (rest.trim(), String::new()),
            };
            self.replaced
                .push((a.trim().to_string(), rhs.to_string(), reason));
        } else if let Some(rest) = t
            .strip_prefix("eval ")
            .or_else(|| t.strip_prefix("runtime_assert "))
        {
            let Some((expr, tail)) = rest.split_once(" [guard added]") else {
                return;
            };
            if expr.strip_prefix("[guard suppressed] ").is_some() {
                self.suppressed += 1;
                return;
            }
            self.guards.push(RawGuard {
                line: line.no,
                text: fact(expr).to_string(),
                provenance: provenance(tail),
            });
        } else if let Some(rest) = t.strip_prefix("Ignored guard ") {
            // `Ignored guard Eq(s0*s1, 16) == True, this could result in accuracy problems`:
            // torch's shape environment was frozen, so the guard was not installed. It is read
            // as a guard: the answer is where it holds; elsewhere the program runs unchecked.
            let g = rest.split(", this could").next().unwrap_or(rest).trim();
            msg.notes.push(format!(
                "line {}: torch ignored the guard {g} (added after its shape environment was frozen): no check is installed, so sizes where it fails run unchecked and may compute wrong results; the answer below is where it holds",
                line.no
            ));
            self.guards.push(RawGuard {
                line: line.no,
                text: fact(g).to_string(),
                provenance: None,
            });
        } else if let Some(i) = t.phrase("failed during evaluate_expr(") {
            // `failed during evaluate_expr(Eq(u0, 399), hint=None, ...`: the first argument.
            let rest = &t[i + "failed during evaluate_expr(".len()..];
            let expr = first_arg(rest);
            self.guards.push(RawGuard {
                line: line.no,
                text: expr.to_string(),
                provenance: None,
            });
        } else if let Some(rest) = t.strip_prefix("could not evaluate ") {
            self.could_not_evaluate(line.no, rest);
        } else if let Some(found) = quoted_guards(t) {
            // Prose quoting a guard (`The guard it reports is Eq(2048*s0, 2000896) and ...`):
            // kept aside, read below when it names only the log's symbols.
            self.prose.extend(found.into_iter().map(|g| (line.no, g)));
        }
    }

    /// `create_symbol s53 = 224 for L['x'].size()[2] [32, 512] (...)`: the symbol's source and
    /// range.
    fn create_symbol(&mut self, rest: &str) {
        let Some((name, rest)) = rest.split_once(" = ") else {
            return;
        };
        let Some((_, rest)) = rest.split_once(" for ") else {
            return;
        };
        let (source, range) = match rest.phrase(" [") {
            Some(i) => (&rest[..i], parse_range(&rest[i + 1..])),
            None => (rest.split(' ').next().unwrap_or(rest), None),
        };
        self.sym(name.trim());
        let s = self.syms.entry(name.trim().to_string()).or_default();
        s.source = Some(source.trim().to_string());
        s.range = s.range.or(range);
    }

    /// `track_symint L['b'].size()[2] s16 StrictMinMaxConstraint(warn_only=False, vr=VR[32,
    /// 512])`: a size's symbol and range, or a constrained size torch made a constant.
    fn track_symint(&mut self, rest: &str) {
        let mut parts = rest.splitn(3, ' ');
        let (Some(source), Some(value)) = (parts.next(), parts.next()) else {
            return;
        };
        let tail = parts.next().unwrap_or("");
        if !source.has(".size()") {
            return;
        }
        if let (Some(v), Some(i)) = (int_bound(value), tail.phrase("VR[")) {
            // A size the user asked to be dynamic (a range constraint) that torch made a
            // constant: a specialization, whose symbol the log may not name any more.
            if let Some(range) = parse_range(&tail[i + 2..]) {
                self.constant_sources.push((source.to_string(), v, range));
            }
            return;
        }
        if !is_size_symbol(value) {
            return;
        }
        self.sym(value);
        let s = self.syms.entry(value.to_string()).or_default();
        s.source.get_or_insert_with(|| source.to_string());
        if let Some(i) = tail.phrase("VR[") {
            s.range = s.range.or(parse_range(&tail[i + 2..]));
        }
    }

    /// `could not evaluate E due to data dependency, it was assumed to be False with no
    /// runtime assertions`: kept for the note, and read as a guard when `E` is over an unbacked
    /// size.
    fn could_not_evaluate(&mut self, no: usize, rest: &str) {
        let Some((e, tail)) = rest.split_once(" due to data dependency") else {
            return;
        };
        let value = if tail.has("assumed to be True") {
            "True"
        } else {
            "False"
        };
        self.assumed.push(format!("{e} (assumed {value})"));
        // A data-dependent expression torch decided by assumption: read as one.
        if parse_guard(e).is_ok_and(|x| x.atoms().iter().any(|a| is_unbacked(a))) {
            self.guards.push(RawGuard {
                line: no,
                text: e.to_string(),
                provenance: provenance(tail),
            });
        }
    }

    /// Guards quoted in prose: those over the log's symbols only, read as guards. Whether one
    /// was: the text is then an excerpt (not every guard torch added is in it).
    fn quoted_guards(&mut self, msg: &mut Message) -> bool {
        let mut excerpt = false;
        for (no, g) in std::mem::take(&mut self.prose) {
            let Ok(e) = parse_guard(&g) else { continue };
            let atoms = e.atoms();
            if !atoms.is_empty() && atoms.iter().all(|a| self.syms.contains_key(&a.to_string())) {
                msg.notes.push(format!(
                    "line {no}: read the guard {g} quoted in the text (not a log record): the text is an excerpt, so other guards torch added may be missing"
                ));
                self.guards.push(RawGuard {
                    line: no,
                    text: g,
                    provenance: None,
                });
                excerpt = true;
            }
        }
        excerpt
    }

    /// Replacements by a constant specialize the symbol (a symbol or affine expression relates
    /// it: [`LogRecords::relations`], once the dimensions have names).
    fn constant_replacements(&mut self) {
        for (a, rhs, reason) in std::mem::take(&mut self.replaced) {
            if let Some(v) = int_bound(&rhs) {
                self.sym(&a);
                self.syms.entry(a.clone()).or_default().constant = Some((v, reason.clone()));
            }
            self.replaced.push((a, rhs, reason));
        }
    }

    /// A constrained size tracked as a constant: the symbol replaced by that constant is it,
    /// when exactly one symbol without a source was (`set_replacement s1 = 6` and
    /// `track_symint L['ids'].size()[1] 6 StrictMinMaxConstraint(..., vr=VR[1, 128])`); else a
    /// dimension of its own, specialized.
    fn constant_sources(&mut self, msg: &mut Message) {
        for (source, v, range) in &self.constant_sources {
            if self
                .syms
                .values()
                .any(|s| s.source.as_deref() == Some(source))
            {
                continue; // the log named this size's symbol (`create_symbol`)
            }
            let unnamed: Vec<String> = self
                .syms
                .iter()
                .filter(|(_, s)| s.source.is_none() && s.constant.as_ref().map(|c| c.0) == Some(*v))
                .map(|(n, _)| n.clone())
                .collect();
            match unnamed.as_slice() {
                [one] => {
                    let s = self.syms.get_mut(one).expect("listed");
                    s.source = Some(source.clone());
                    s.range = Some(*range);
                }
                _ => {
                    let name = size_name(source);
                    let d = msg.dim_mut(&name, Some(source.clone()));
                    d.range = Some(*range);
                    d.specialized = Some(*v);
                }
            }
        }
    }

    /// One dimension per backed symbol with a source, in the order the log created them,
    /// named from its source (`x_2`) as for a structured trace; guards keep torch's symbols
    /// (`s53`). Each lists every guard unless the text is an `excerpt`. The dimensions'
    /// indices by name.
    fn dims(&self, msg: &mut Message, excerpt: bool) -> HashMap<String, usize> {
        let mut names: HashMap<String, usize> = msg
            .dims
            .iter()
            .enumerate()
            .map(|(i, d)| (d.name.clone(), i))
            .collect();
        for name in &self.order {
            let s = &self.syms[name];
            if s.unbacked || s.source.is_none() {
                continue;
            }
            let dim_name = size_name(s.source.as_deref().unwrap_or(name));
            let dim_name = if names.contains_key(&dim_name) {
                format!("{dim_name}_{name}")
            } else {
                dim_name
            };
            let i = match names.get(&dim_name) {
                Some(&i) => i,
                None => {
                    msg.dims.push(crate::message::DimEntry::new(&dim_name));
                    names.insert(dim_name.clone(), msg.dims.len() - 1);
                    msg.dims.len() - 1
                }
            };
            let d = &mut msg.dims[i];
            d.source = d.source.take().or_else(|| s.source.clone());
            d.symbol = Some(name.clone());
            d.range = s.range;
            // A log lists every guard torch added (an excerpt quoting a guard does not).
            d.every_guard = !excerpt;
            if let Some((v, why)) = &s.constant {
                d.specialized = Some(*v);
                d.specialized_reason = (!why.is_empty()).then(|| why.clone());
            }
        }
        names
    }

    /// Symbols the text uses but never maps to an input (no create_symbol line): each is a
    /// size of its own, named by the symbol, so the answer is in torch's symbols; the note says
    /// what to add.
    fn unmapped_dims(&self, msg: &mut Message, names: &mut HashMap<String, usize>) {
        let mut unmapped: Vec<String> = Vec::new();
        let mut seen_unmapped: HashSet<String> = HashSet::new();
        let words = self.guards.iter().map(|g| g.text.as_str()).chain(
            self.replaced
                .iter()
                .flat_map(|(a, rhs, _)| [a.as_str(), rhs.as_str()]),
        );
        for text in words {
            for w in text.split(|c: char| !c.is_ascii_alphanumeric() && c != '_') {
                let mapped = self
                    .syms
                    .get(w)
                    .is_some_and(|s| s.source.is_some() || s.unbacked);
                if is_backed(w) && !mapped && seen_unmapped.insert(w.to_string()) {
                    unmapped.push(w.to_string());
                }
            }
        }
        unmapped.sort_by_key(|w| w[1..].parse::<u64>().unwrap_or(u64::MAX));
        for w in &unmapped {
            if names.contains_key(w) {
                continue;
            }
            let mut d = crate::message::DimEntry::new(w);
            d.symbol = Some(w.clone());
            d.range = self.syms.get(w).and_then(|s| s.range);
            if let Some((v, why)) = self.syms.get(w).and_then(|s| s.constant.clone()) {
                d.specialized = Some(v);
                d.specialized_reason = (!why.is_empty()).then_some(why);
            }
            names.insert(w.clone(), msg.dims.len());
            msg.dims.push(d);
        }
        if !unmapped.is_empty() {
            msg.notes.push(format!(
                "the text never says which input sizes {} are (no `create_symbol {} = ... for L['x'].size()[..]` line): the answer is over torch's symbols. Add the create_symbol lines (run the export with TORCH_LOGS=\"+dynamic\" and paste its whole output) to get it over your inputs",
                unmapped.join(", "),
                unmapped[0]
            ));
        }
    }

    /// Replacements by a symbol or an expression, over the dimensions' names: equalities
    /// (`s99 = s41`) and relations (`s1 = 2*s0 + 1`).
    fn relations(&self, msg: &mut Message) {
        let mut by_symbol: HashMap<String, String> = HashMap::new();
        for d in &msg.dims {
            if let Some(s) = &d.symbol {
                by_symbol.entry(s.clone()).or_insert_with(|| d.name.clone());
            }
        }
        let dim_of = |sym: &str| by_symbol.get(sym).cloned();
        for (a, rhs, _) in &self.replaced {
            let Some(an) = dim_of(a) else { continue };
            if is_size_symbol(rhs) {
                if let Some(bn) = dim_of(rhs) {
                    msg.equalities.push((bn, an));
                }
            } else if int_bound(rhs).is_none() {
                // `s1 = 2*s0 + 1`: the right-hand side over the dimensions' names.
                let Some(other) = first_symbol(rhs).and_then(|o| dim_of(&o)) else {
                    continue;
                };
                let expr = rename_words(rhs, &|w: &str| dim_of(w));
                msg.relations.push(crate::message::Relation {
                    name: an,
                    other,
                    expr,
                });
            }
        }
    }

    /// The guards placed over the symbols' sources ([`place_guards`]), then the notes on
    /// suppressed guard lines and on what torch assumed.
    fn place(self, msg: &mut Message) {
        let syms = &self.syms;
        let source_of = |a: &str| syms.get(a).and_then(|s| s.source.clone());
        place_guards(msg, self.guards, &source_of, &|a: &str| {
            syms.get(a).is_some_and(|s| s.unbacked) || is_unbacked(a)
        });
        if self.suppressed > 0 {
            msg.notes.push(format!(
                "{} guard line(s) marked [guard suppressed] were skipped: torch did not keep them",
                self.suppressed
            ));
        }
        let mut assumed = self.assumed;
        if !assumed.is_empty() {
            let mut seen = HashSet::new();
            assumed.retain(|a| seen.insert(a.clone()));
            msg.notes.push(format!(
                "torch could not evaluate {} because of data dependency and assumed the value shown, with no run-time check",
                assumed.join(", ")
            ));
        }
    }
}

/// A readable name for a size: `x.size()[2]` → `x_2`, `*args[0].shape[2]` → `args_0_2`.
pub fn size_name(source: &str) -> String {
    super::trace::name_from_source(source)
        .unwrap_or_else(|| dimguard_solver::python::py_name(source))
}

/// Files each guard under its size, the joint guards, or the data-dependent guards; a guard
/// that does not parse, or names a symbol without a source, is kept as unreadable with the
/// reason. A guard already filed (same text, same place) is not filed again. Linear in the
/// number of guards: sizes are found through maps built once.
pub(super) fn place_guards(
    msg: &mut Message,
    guards: Vec<RawGuard>,
    source_of: &dyn Fn(&str) -> Option<String>,
    unbacked: &dyn Fn(&str) -> bool,
) {
    // Sizes by symbol, by source and by name (the first of each, as a search would find).
    let mut by_symbol: HashMap<String, usize> = HashMap::new();
    let mut by_source: HashMap<String, usize> = HashMap::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    for (i, d) in msg.dims.iter().enumerate() {
        if let Some(s) = &d.symbol {
            by_symbol.entry(s.clone()).or_insert(i);
        }
        if let Some(s) = &d.source {
            by_source.entry(s.clone()).or_insert(i);
        }
        by_name.entry(d.name.clone()).or_insert(i);
    }
    for g in guards {
        place_one(
            msg,
            g,
            source_of,
            unbacked,
            (&mut by_symbol, &mut by_source, &mut by_name),
        );
    }
    msg.dedup_guards();
}

type Maps<'a> = (
    &'a mut HashMap<String, usize>,
    &'a mut HashMap<String, usize>,
    &'a mut HashMap<String, usize>,
);

fn place_one(
    msg: &mut Message,
    g: RawGuard,
    source_of: &dyn Fn(&str) -> Option<String>,
    unbacked: &dyn Fn(&str) -> bool,
    (by_symbol, by_source, by_name): Maps,
) {
    let parsed = parse_guard(&g.text).or_else(|first| {
        // `Ne(Mod(s0, 8), 0) == False`: the guard is the negation.
        match g.text.strip_suffix(" == False") {
            Some(inner) => parse_guard(inner).map(|e| Expr::Not(Box::new(e))),
            None => Err(first),
        }
    });
    let expr = match parsed {
        Ok(e) => e,
        Err(e) => {
            msg.unreadable.push(Unreadable {
                line: g.line,
                text: g.text.clone(),
                reason: e.message.clone(),
            });
            return;
        }
    };
    let atoms: Vec<String> = expr.atoms().iter().map(|a| a.to_string()).collect();
    let guard = |expr: Expr| crate::message::Guard {
        text: g.text.clone(),
        expr,
        provenance: g.provenance.clone(),
    };
    if atoms.iter().any(|a| unbacked(a)) {
        msg.data_dependent.push(guard(expr));
        return;
    }
    let mut over_sources = expr.clone();
    for a in &atoms {
        match source_of(a) {
            Some(src) => {
                over_sources = over_sources.substitute(a, &Expr::sym(&src));
            }
            // A size known by its name only (a symbol the text never maps to an input).
            None if (atoms.len() == 1 && by_name.contains_key(a))
                || by_name
                    .get(a)
                    .is_some_and(|&i| msg.dims[i].source.is_none()) => {}
            None => {
                msg.unreadable.push(Unreadable {
                    line: g.line,
                    text: g.text.clone(),
                    reason: format!(
                        "the text never says which input size {a} is (no create_symbol, track_symint or symbol map names it)"
                    ),
                });
                return;
            }
        }
    }
    match atoms.as_slice() {
        [] => {}
        [one] => {
            let source = source_of(one);
            let found = by_symbol
                .get(one.as_str())
                .or_else(|| source.as_ref().and_then(|s| by_source.get(s)))
                .copied();
            let i = match found.or_else(|| by_name.get(one.as_str()).copied()) {
                Some(i) => i,
                None => {
                    msg.dims.push(crate::message::DimEntry::new(one));
                    let i = msg.dims.len() - 1;
                    by_name.insert(one.clone(), i);
                    i
                }
            };
            let d = &mut msg.dims[i];
            if d.source.is_none() {
                d.source = source;
                if let Some(s) = &d.source {
                    by_source.entry(s.clone()).or_insert(i);
                }
            }
            d.guards.push(guard(over_sources));
        }
        _ => msg.joint.push(guard(over_sources)),
    }
}

/// `Eq(s0, 4) == True` → `Eq(s0, 4)` (a `== False` is kept: the guard is the negation).
fn fact(expr: &str) -> &str {
    let e = expr.trim();
    e.strip_suffix(" == True").unwrap_or(e).trim()
}

/// `expr` with every identifier `w` for which `f(w)` is some name replaced by it.
fn rename_words(expr: &str, f: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(expr.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        out.push_str(&f(word).unwrap_or_else(|| word.clone()));
        word.clear();
    };
    for c in expr.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

fn first_symbol(e: &str) -> Option<String> {
    e.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| is_size_symbol(w))
        .map(String::from)
}

/// `[32, 512]`, `[2, int_oo]`, `[6, 6]` (a leading `VR` already removed).
pub(super) fn parse_range(s: &str) -> Option<(i128, i128)> {
    let s = s.trim_start().strip_prefix('[')?;
    let (inside, _) = s.split_once(']')?;
    let (lo, hi) = inside.split_once(',')?;
    let lo = int_bound(lo.trim()).or_else(|| lo.trim().starts_with('-').then_some(i128::MIN))?;
    let hi = int_bound(hi.trim()).unwrap_or(crate::message::SIZE_MAX);
    Some((lo.max(0), hi.min(crate::message::SIZE_MAX)))
}

/// What follows `[guard added]`: `CODE  # FILE:LINE in FUNC (FILE:LINE in OP)`,
/// `at FILE:LINE in FUNC (FILE:LINE in OP)` or `(FILE:LINE in OP)`, then `, for more info ...`.
fn provenance(tail: &str) -> Option<Provenance> {
    let tail = tail.split(", for more info").next().unwrap_or(tail).trim();
    if tail.is_empty() {
        return None;
    }
    let mut frames = Vec::new();
    let (head, op) = match tail.rfind(" (").map(|i| (i, &tail[i + 2..])) {
        Some((i, inner)) if inner.ends_with(')') => (&tail[..i], frame(&inner[..inner.len() - 1])),
        _ => match tail.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
            Some(inner) => ("", frame(inner)),
            None => (tail, None),
        },
    };
    let head = head.trim();
    if let Some(rest) = head.strip_prefix("at ") {
        frames.extend(frame(rest));
    } else if let Some((c, at)) = head.rsplit_once("  # ") {
        frames.extend(frame(at).map(|f| Frame {
            code: Some(c.trim().to_string()),
            ..f
        }));
    }
    frames.extend(op);
    attribute(&frames, &[])
}

/// `model.py:13 in forward` → a frame.
fn frame(s: &str) -> Option<Frame> {
    let (loc, function) = s.trim().rsplit_once(" in ")?;
    let (file, line) = loc.rsplit_once(':')?;
    Some(Frame {
        file: file.trim().to_string(),
        line: line.trim().parse().ok()?,
        function: function.trim().to_string(),
        code: None,
    })
}

/// The first argument of a call whose `(` came just before `rest`: up to the first `,` or `)`
/// outside brackets (or the end of the text, for a line cut short).
fn first_arg(rest: &str) -> &str {
    let mut depth = 0i64;
    for (j, c) in rest.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' | ',' if depth == 0 => return rest[..j].trim(),
            ')' | ']' | '}' => depth -= 1,
            _ => {}
        }
    }
    rest.trim()
}

/// Sympy-style guards quoted inside a line of prose (`... is Eq(2048*s0, 2000896) and ...`):
/// each `Eq(`/`Ne(`/`Lt(`/`Le(`/`Gt(`/`Ge(` with its balanced parentheses. `None` when there is
/// none.
fn quoted_guards(t: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = ["Eq(", "Ne(", "Lt(", "Le(", "Gt(", "Ge("]
        .iter()
        .filter_map(|k| t[from..].phrase(k).map(|i| from + i))
        .min()
    {
        let word_start =
            i == 0 || !t[..i].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let mut depth = 0i64;
        let mut end = None;
        for (j, c) in t[i + 2..].char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i + 2 + j + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        if word_start {
            out.push(t[i..end].to_string());
        }
        from = end;
    }
    (!out.is_empty()).then_some(out)
}

/// torch 2.1's `Summary of dimension constraints` (logged by dynamo's export): the sizes under
/// `def specializations(x):` (`assert x.size()[0] == 1`, or `return (x0.size()[0] == 8 and
/// ...)`) are specialized to their value.
fn specializations_summary(lines: &[Line], msg: &mut Message) {
    let Some(start) = lines
        .iter()
        .position(|l| l.text.trim_start().starts_with("def specializations("))
    else {
        return;
    };
    for l in &lines[start + 1..] {
        let t = l.text.trim();
        if t.starts_with("```") || t.starts_with("def ") || t.is_empty() {
            break;
        }
        let body = t
            .trim_start_matches("assert ")
            .trim_start_matches("return ")
            .trim_start_matches('(')
            .trim_end_matches(" and")
            .trim_end_matches(')');
        for part in body.split(" and ") {
            let Some((lhs, v)) = part.split_once(" == ") else {
                continue;
            };
            let Some(v) = int_bound(v.trim().trim_end_matches(')')) else {
                continue;
            };
            let lhs = lhs.trim();
            let Some((arg, idx)) = lhs.split_once(".size()[") else {
                continue;
            };
            let Some(idx) = idx.strip_suffix(']') else {
                continue;
            };
            let source = format!("L['{arg}'].size()[{idx}]");
            let name = size_name(&source);
            let d = msg.dim_mut(&name, Some(source));
            d.specialized = Some(v);
            d.specialized_reason = Some(
                "listed under `def specializations` in torch's summary of dimension constraints"
                    .into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::clean;

    #[test]
    fn provenance_forms() {
        let p = provenance(" (_meta_registrations.py:5162 in pooling_output_shape_pad_lr), for more info run with X=\"..\"").unwrap();
        assert!(!p.user);
        assert_eq!(p.op.as_deref(), Some("pooling_output_shape_pad_lr"));
        let p = provenance(" f = a + F.interpolate(b, scale_factor=2.0, mode=\"nearest\")  # mp/forms/t1.py:13 in forward (_subclasses/fake_impls.py:2435 in infer_size), for more info").unwrap();
        assert!(p.user);
        assert_eq!((p.file.as_str(), p.line), ("mp/forms/t1.py", 13));
        assert_eq!(p.op.as_deref(), Some("infer_size"));
        assert!(p.code.unwrap().starts_with("f = a + F.interpolate("));
        let p = provenance(
            " at model.py:77 in forward (_refs/__init__.py:4170 in _reshape_view_helper)",
        )
        .unwrap();
        assert_eq!(p.origin(), "model.py:77 (forward)");
        assert_eq!(p.stack.len(), 2);
        assert_eq!(p.op.as_deref(), Some("_reshape_view_helper"));
    }

    #[test]
    fn reads_symbols_guards_and_replacements() {
        let log = "\
I1123 10:34:54.290000 20419 torch/fx/experimental/symbolic_shapes.py:6064] [0/0] create_symbol s77 = 4 for L['x'].size()[0] [2, 64] (_export/non_strict_utils.py:252 in fakify)
I1123 10:34:54.291000 20419 torch/fx/experimental/symbolic_shapes.py:6064] [0/0] create_symbol s27 = 6 for L['x'].size()[1] [2, 64] (_export/non_strict_utils.py:252 in fakify)
I1123 10:34:54.291000 20419 torch/fx/experimental/symbolic_shapes.py:6064] [0/0] create_symbol s28 = 6 for L['y'].size()[1] [2, int_oo] (x.py:1 in f)
I1123 10:34:54.327000 20419 torch/fx/experimental/symbolic_shapes.py:8661] [0/0] eval Eq(s27, 6) [guard added] (_subclasses/fake_impls.py:2435 in infer_size)
I1123 10:34:54.328000 20419 torch/fx/experimental/symbolic_shapes.py:8254] [0/0] set_replacement s27 = 6 (range_refined_to_singleton) VR[6, 6]
I1123 10:34:54.328000 20419 torch/fx/experimental/symbolic_shapes.py:8254] [0/0] set_replacement s28 = s77 (solve)
I1123 10:34:54.327000 20419 torch/fx/experimental/symbolic_shapes.py:8661] [0/0] eval Eq(Mod(s77*s28, 4), 0) [guard added] (_refs/__init__.py:1 in _reshape_view_helper)
I1123 10:34:54.327000 20419 torch/fx/experimental/symbolic_shapes.py:8661] [0/0] eval Ne(Mod(s77, 8), 0) == False [guard added] (_refs/__init__.py:1 in _reshape_view_helper)
I1123 10:34:54.327000 20419 torch/fx/experimental/symbolic_shapes.py:8661] [0/0] eval Foo(s77) [guard added] (_refs/__init__.py:1 in _reshape_view_helper)
I1123 10:34:54.327000 20419 torch/fx/experimental/symbolic_shapes.py:8661] [0/0] eval [guard suppressed] Ne(s77, 1) [guard added] (utils/_stats.py:29 in wrapper)
";
        let m = read(&clean::lines(log));
        let names: Vec<&str> = m.dims.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["x_0", "x_1", "y_1"]);
        assert_eq!(
            rename_words("2*s0 + 1", &|w: &str| (w == "s0").then(|| "h".into())),
            "2*h + 1"
        );
        assert_eq!(m.dims[0].range, Some((2, 64)));
        assert_eq!(m.dims[2].range, Some((2, crate::message::SIZE_MAX)));
        assert_eq!(m.dims[1].specialized, Some(6));
        assert_eq!(
            m.dims[1].specialized_reason.as_deref(),
            Some("range_refined_to_singleton")
        );
        assert_eq!(m.equalities, vec![("x_0".into(), "y_1".into())]);
        assert_eq!(m.joint.len(), 1);
        assert_eq!(
            m.joint[0].expr.atoms().len(),
            2,
            "joint guard over the two sources"
        );
        assert_eq!(m.dims[0].guards.len(), 1);
        assert_eq!(m.dims[0].guards[0].text, "Ne(Mod(s77, 8), 0) == False");
        assert_eq!(m.unreadable.len(), 1);
        assert_eq!(m.unreadable[0].line, 9);
        assert!(m.notes.iter().any(|n| n.has("[guard suppressed]")));
    }
}
