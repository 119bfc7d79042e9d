//! The paste block: the one place a report's `dynamic_shapes` code is written.
//!
//! Every form of it is built here, once, after the report's answers are final (Z3's
//! certification included, so a suggestion it withholds is never pasted): `Dim` lines and a
//! `dynamic_shapes` dict ([`Format::Auto`], the default), the user's own spec with the diagnosis
//! merged into it ([`Paste::merge`]), the user's `ShapesSpec` with the assumptions it needs
//! ([`Paste::shapes`]), a `ShapesSpec` or `torch._check` lines on request ([`Format`]), and
//! torch.compile's `mark_dynamic` lines for a recompile. Nothing rewrites the block afterwards.

use dimguard_readers::spec::shapes::ShapesSpec;
use dimguard_readers::spec::{merge, Sheet};
use dimguard_readers::Message;
use dimguard_solver::analyze::Analysis;
use dimguard_solver::joint::{self, Choice};
use dimguard_solver::python::{self, py_name};
use dimguard_solver::report::{DataDependent, DimReport, LinkedGroup, Report, Status};
use dimguard_solver::SIZE_MAX;
use std::collections::{BTreeMap, BTreeSet};

/// The form the user asked the block in (`--format`; `dimguard.export`'s API).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Format {
    /// The form the input calls for: `Dim` lines, a `ShapesSpec`'s assumptions for a
    /// `ShapesSpec` export's data-dependent failure, `mark_dynamic` for a recompile.
    #[default]
    Auto,
    /// `Dim` lines; a data-dependent failure without a size gets its `torch._check` lines.
    Dim,
    /// A torch 2.15 `ShapesSpec`, from the data-dependent expressions or from the sizes.
    ShapesSpec,
}

/// What the paste block is written into.
#[derive(Debug, Clone, Default)]
pub struct Paste {
    /// The requested form.
    pub format: Format,
    /// The user's `dynamic_shapes` spec: the block is that spec with the diagnosis merged in.
    pub merge: Option<Sheet>,
    /// The user's `ShapesSpec`: the block is that spec with the assumptions added (it wins over
    /// `format` and `merge`).
    pub shapes: Option<ShapesSpec>,
}

/// The block for `report` (its answers final; each linked group's lines from its answer in
/// `analysis`), and the merged spec when [`Paste::merge`] is given.
pub(super) fn block(
    msg: &Message,
    report: &Report,
    analysis: &Analysis,
    paste: &Paste,
) -> (String, Option<Sheet>) {
    let specs = &specs(msg, report, analysis);
    let merged = paste.merge.as_ref().map(|s| merge(s, report));
    let (dims, dd) = (&report.dims, &report.data_dependent);
    let code = if let Some(s) = &paste.shapes {
        let (items, open) = python::assumptions(dd);
        let mut code = s.code(&items);
        for o in open {
            code.push_str(&format!("\n# {o}"));
        }
        code
    } else if paste.format == Format::ShapesSpec && !dd.is_empty() {
        python::shapes_spec_block(dd)
    } else if paste.format == Format::ShapesSpec && !dims.is_empty() {
        python::shapes_spec_from_dims(dims)
    } else if paste.format == Format::Dim && !dd.is_empty() && dims.is_empty() {
        let checks: Vec<String> = dd
            .iter()
            .filter_map(|d| d.example_branch.or(d.always).map(|b| (d, b)))
            .map(|(d, b)| d.torch_check[usize::from(!b)].clone())
            .collect();
        format!(
            "# A data-dependent failure: no Dim decides it. Assert the branch in the model:\n{}",
            checks.join("\n")
        )
    } else if let Some(m) = &merged {
        let notes: Vec<String> = m.notes.iter().map(|n| format!("# {n}")).collect();
        if notes.is_empty() {
            m.code()
        } else {
            format!("{}\n\n{}", notes.join("\n"), m.code())
        }
    } else {
        dim_block(msg, dims, &report.linked, specs, dd)
    };
    (code, merged)
}

/// The `dynamic_shapes` block: every dimension's best sound spec (a linked group's lines all
/// from its one answer, [`dimguard_solver::analyze::group_specs`]), then the dict, which names only
/// what the block defines.
fn dim_block(
    msg: &Message,
    dims: &[DimReport],
    linked: &[LinkedGroup],
    specs: &[GroupSpec],
    dd: &[DataDependent],
) -> String {
    if msg.datadep.shapes_spec && msg.dims.is_empty() && !dd.is_empty() {
        // torch 2.15's ShapesSpec: what it needs are assumptions, in the user's names.
        return python::shapes_spec_block(dd);
    }
    if let Some(rt) = msg.runtime.as_ref().filter(|r| r.recompile) {
        return compile_block(rt, dims);
    }
    let mut block = python::SpecBlock::new();
    // The names the block defines (Python names), so far.
    let mut defined: BTreeSet<String> = BTreeSet::new();
    // Sizes the text names only inside a guard: (name in the text, Python name).
    let mut unnamed: Vec<(String, String)> = Vec::new();
    let in_group = |n: &str| {
        linked
            .iter()
            .any(|g| g.code.is_some() && (g.root == n || g.members.iter().any(|m| m[0] == n)))
    };
    let is_dim = |n: &str| msg.dims.iter().any(|d| d.name == n);
    for g in linked {
        if let Some(c) = &g.code {
            let members: Vec<&str> = g.members.iter().map(|m| m[0].as_str()).collect();
            block.comment(&format!(
                "{} and {} are solved together",
                g.root,
                members.join(", ")
            ));
            block.code(c);
            for n in std::iter::once(&g.root).chain(g.members.iter().map(|m| &m[0])) {
                defined.insert(py_name(n));
                if !is_dim(n) && n.contains('[') {
                    unnamed.push((n.clone(), py_name(n)));
                }
            }
        }
    }
    let mut printed = vec![false; specs.len()];
    for d in dims.iter().filter(|d| !in_group(&d.name)) {
        // A linked group: every member's line from the group's one answer, printed once, where
        // its first dimension comes.
        if let Some(k) = specs.iter().position(|s| s.named.contains(&d.name)) {
            if !std::mem::replace(&mut printed[k], true) {
                block.code(&specs[k].code);
                defined.extend(specs[k].named.iter().map(|n| py_name(n)));
                defined.extend(specs[k].partners.iter().map(|p| p.name.clone()));
                unnamed.extend(
                    specs[k]
                        .partners
                        .iter()
                        .map(|p| (p.source.clone(), p.name.clone())),
                );
            }
            continue;
        }
        if d.is_unbacked() {
            // Not an input's size: no Dim, but what the model states where it makes it.
            block.comment(&format!(
                "{} is a data-dependent (unbacked) size, not an input's dimension: no Dim applies. Where the model makes it (.item(), nonzero, ...), the sizes the guards admit are:",
                d.name
            ));
            let checks = d.answer.suggestions.first().map_or("", |s| s.code.as_str());
            for c in checks.lines() {
                block.comment(c);
            }
            if checks.is_empty() {
                block.code(&python::dim_comment(
                    &d.name,
                    d.undecided.as_deref().unwrap_or("no constraint to express"),
                ));
            }
            continue;
        }
        let code = match d.answer.suggestions.first() {
            Some(s) if d.status == Status::Spurious => python::dim_auto(&d.name, s.lo, s.hi),
            Some(s) => s.code.clone(),
            None => {
                block.code(&python::dim_comment(
                    &d.name,
                    d.undecided.as_deref().unwrap_or("no constraint to express"),
                ));
                continue;
            }
        };
        block.code(&code);
        defined.insert(py_name(&d.name));
    }
    for rel in msg.relations.iter().filter(|r| !in_group(&r.name)) {
        if defined.contains(&py_name(&rel.other)) {
            block.code(&python::assign(&rel.name, &rel.expr));
            defined.insert(py_name(&rel.name));
        }
    }
    for (a, b) in msg.equalities.iter().filter(|(_, b)| !in_group(b)) {
        if defined.contains(&py_name(a)) {
            block.code(&python::equal(b, a));
            defined.insert(py_name(b));
        }
    }
    if !dd.is_empty() {
        block.blank();
        block.comment("Data-dependent guards: in the model, before the code that branches, assert the case you need:");
        for d in dd {
            for c in d.torch_check.iter().filter(|c| !c.is_empty()) {
                block.comment(c);
            }
        }
    }
    // The dict, when every dimension names its input and index: inputs in the order first
    // named, indices in order; only names the block defines (a dimension left without a spec
    // keeps torch's default, static). A size named only inside a guard whose source is not an
    // input's dimension is left to the user, with a comment.
    let mapped: Option<Vec<(String, usize, String)>> = dims
        .iter()
        .filter(|d| defined.contains(&py_name(&d.name)))
        .map(|d| {
            d.source
                .as_deref()
                .and_then(python::source_input)
                .map(|(i, k)| (i, k, py_name(&d.name)))
        })
        .collect();
    if let Some(mapped) = mapped {
        block.with_dict();
        for (i, k, n) in mapped {
            block.entry(&i, k, n, None);
        }
        for (source, name) in unnamed {
            match python::source_input(&source) {
                Some((i, k)) => block.entry(&i, k, name, None),
                None => block.comment(&format!(
                    "{name} is {source}, not a dimension of a named input: add it to dynamic_shapes at that size's place"
                )),
            }
        }
    }
    block.finish()
}

/// The sizes of `src` a recompile's cache entries were each compiled static for (`expected 128`,
/// `expected 256`, ...), when every entry that guards `src` is one of them and there are two or
/// more.
fn static_entries(rt: &dimguard_readers::Runtime, src: &str) -> Option<String> {
    let mut sizes: Vec<String> = Vec::new();
    for e in &rt.entries {
        let on: Vec<&dimguard_readers::Guard> = e
            .guards
            .iter()
            .filter(|g| g.expr.atoms().iter().any(|a| &**a == src))
            .collect();
        if on.is_empty() {
            continue;
        }
        let [g] = on.as_slice() else { return None };
        let v = g
            .text
            .split_once(" == ")
            .map(|(_, v)| v.trim().to_string())?;
        if e.actual.is_none() || v.parse::<i128>().is_err() {
            return None;
        }
        if !sizes.contains(&v) {
            sizes.push(v);
        }
    }
    (sizes.len() >= 2).then(|| sizes.join(", "))
}

/// A recompile's paste block: torch.compile's advice, not export's. Each size the compiled graph
/// accepts as one range gets `torch._dynamo.mark_dynamic(x, i, min=LO, max=HI)` with that range's
/// bounds (no `max` where it has none); a size compiled static whose guard failed gets
/// `mark_dynamic(x, i)`; a size whose accepted set is not one range (a guard splits it), or that
/// guards link to another size, gets a comment instead (bounds over it would be violated);
/// then `dynamic=True`, and where the text gives only the failed guard, the log that lists them all.
fn compile_block(rt: &dimguard_readers::Runtime, dims: &[DimReport]) -> String {
    let mut block = python::SpecBlock::with_import(python::COMPILE_IMPORT);
    let failed = rt.expr.atoms();
    for d in dims {
        let src = d.source.as_deref().unwrap_or(&d.name);
        let Some((x, i)) = dimguard_solver::python::input_dim(src) else {
            block.comment(&format!(
                "{src} is not a dimension of a named input: mark it dynamic where the tensor it belongs to enters the compiled function"
            ));
            continue;
        };
        let Some(f) = d.answer.accepted.as_ref() else {
            block.comment(&format!(
                "{src}: the sizes the compiled graph accepts are undecided ({})",
                d.undecided.as_deref().unwrap_or("no answer")
            ));
            block.code(&python::mark_dynamic(&x, i, None, None));
            continue;
        };
        let (Some(lo), Some(hi)) = (f.min, f.max) else {
            block.comment(&format!(
                "{src}: no size in the range passes the compiled graph's guards"
            ));
            continue;
        };
        let upto = if hi == SIZE_MAX {
            "unbounded".to_string()
        } else {
            hi.to_string()
        };
        if !d.answer.linked_with.is_empty() {
            block.comment(&format!(
                "{src}: guards link it to {}: the sizes accepted are a joint set (above), not a range per size; compile with dynamic=True or mark the sizes dynamic without bounds:",
                d.answer.linked_with.join(", ")
            ));
            block.code(&python::mark_dynamic(&x, i, None, None));
        } else if lo == hi {
            if failed.iter().any(|a| &**a == src) {
                let ran = rt
                    .got
                    .map(|g| format!("; the call ran at {g}"))
                    .unwrap_or_default();
                block.comment(&format!(
                    "{src}: the graph was compiled for {lo} only (static){ran}. Marked dynamic, one graph takes other sizes too (add min=, max= for the sizes you run):"
                ));
                block.code(&python::mark_dynamic(&x, i, None, None));
            } else {
                block.comment(&format!(
                    "{src} stays static at {lo} (its guard did not fail)"
                ));
            }
        } else if let Some(sizes) = static_entries(rt, src) {
            // Each cached graph was compiled for one size: one dynamic graph takes them all.
            let ran = rt
                .got
                .map(|g| format!("; the call ran at {g}"))
                .unwrap_or_default();
            block.comment(&format!(
                "{src}: each cached graph was compiled for one size ({sizes}){ran}. Marked dynamic, one graph takes these sizes and others (add min=, max= for the sizes you run):"
            ));
            block.code(&python::mark_dynamic(&x, i, None, None));
        } else if f.count == (hi - lo + 1) as u128 {
            block.comment(&format!(
                "{src}: the compiled graph accepts {lo}..{upto}; one graph over them, sizes outside still recompile:"
            ));
            let max = (hi != SIZE_MAX).then_some(hi);
            block.code(&python::mark_dynamic(&x, i, Some(lo), max));
        } else {
            block.comment(&format!(
                "{src}: the compiled graph accepts {lo}..{upto} only where its guards hold (feasible above), not one range: a guard splits it (a branch of the model on the size), and mark_dynamic with bounds over it would be violated. Pad to an accepted size, or compile with dynamic=True"
            ));
        }
    }
    block.blank();
    block.comment("or keep every size dynamic: torch.compile(model, dynamic=True)");
    if !rt.listed {
        block.comment("the text gives only the guard that failed: for every guard of the compiled graph run with TORCH_LOGS=\"recompiles,guards\" and give dimguard the log");
    }
    block.finish()
}

/// The spec lines of the report's linked groups ([`group_specs`]), the names the block gives
/// before the groups' partners get theirs taken; none from a text with only some of the
/// export's guards (no group's spec is sound from it).
fn specs(msg: &Message, report: &Report, analysis: &Analysis) -> Vec<GroupSpec> {
    if msg.partial.is_some() {
        return vec![];
    }
    let mut taken: BTreeSet<String> =
        msg.dims
            .iter()
            .map(|d| d.name.as_str())
            .chain(msg.relations.iter().flat_map(|r| [&*r.name, &*r.other]))
            .chain(msg.equalities.iter().flat_map(|(a, b)| [&**a, &**b]))
            .chain(
                report.linked.iter().flat_map(|g| {
                    std::iter::once(&*g.root).chain(g.members.iter().map(|m| &*m[0]))
                }),
            )
            .map(py_name)
            .collect();
    group_specs(analysis, msg, &mut taken)
}

/// A size that a linked group's guards name but the text gives no dimension (torch listed the
/// guard under its partner only), for the `dynamic_shapes` dict.
pub(super) struct PartnerSpec {
    /// Where the size comes from (`L['x'].size()[3]`), for the `dynamic_shapes` dict.
    pub source: String,
    /// The name the spec gives it (`x_3` for `L['x'].size()[3]`, as `check` names it, unless
    /// the block already uses that name).
    pub name: String,
}

/// The spec lines of one linked group ([`group_specs`]).
pub(super) struct GroupSpec {
    /// The dimensions of the text (their names) whose lines `code` holds.
    pub named: Vec<String>,
    /// The sizes of the group the text gives no dimension.
    pub partners: Vec<PartnerSpec>,
    /// Every member's line, each name defined before it is used: per root (in level order) its
    /// `Dim` (or, for the second root under one shared `Dim`, the first root), then each size
    /// derived from it as `coef*root + offset`.
    pub code: String,
}

/// The spec lines of each decided linked group of several roots, every member (named in the
/// text or not) from the group's one [`Choice`]: a size derived from a root is written from the
/// root's line, never as a `Dim` of its own. A dimension's side of a box is sound only together
/// with the other sides: left out of the `dynamic_shapes` block, a size the text names only
/// inside a guard would keep whatever the user's call gave it (or become static), and
/// `h*w <= 65536`'s side `h 32..1024` would be printed without `w 2..64`. Such a size is named
/// as `check` names an input's dimension (`x_3`), else with a suffix when `taken` (the block's
/// other names) holds that name; each name given is added to `taken`.
fn group_specs(
    analysis: &Analysis,
    msg: &Message,
    taken: &mut std::collections::BTreeSet<String>,
) -> Vec<GroupSpec> {
    use dimguard_solver::analyze::{group_line, GroupLine};
    use dimguard_solver::python::{alias, py_name, source_input};
    let mut out = Vec::new();
    for j in analysis.groups.iter().filter(|g| g.grp.roots.len() > 1) {
        let Some(l) = j.linked.as_ref().filter(|_| j.solved.undecided.is_none()) else {
            continue;
        };
        let Some(choice) = &j.choice else {
            continue;
        };
        let named: Vec<String> = j
            .grp
            .members
            .iter()
            .filter_map(|m| msg.dims.iter().find(|d| d.var() == m.name))
            .map(|d| d.name.clone())
            .collect();
        if named.is_empty() {
            continue;
        }
        let mut partners = Vec::new();
        // The name of each member in the block.
        let mut names: BTreeMap<&str, String> = BTreeMap::new();
        for m in &j.grp.members {
            if let Some(d) = msg.dims.iter().find(|d| d.var() == m.name) {
                names.insert(&m.name, py_name(&d.name));
                continue;
            }
            let source = msg.name_of(&m.name);
            let base =
                py_name(&source_input(&source).map_or(source.clone(), |(i, k)| format!("{i}_{k}")));
            let free = |n: &String| !taken.contains(n) && !taken.contains(&format!("_{n}"));
            let name = std::iter::once(base.clone())
                .chain((2..).map(|k| format!("{base}_{k}")))
                .find(free)
                .unwrap_or(base);
            taken.insert(name.clone());
            names.insert(&m.name, name.clone());
            partners.push(PartnerSpec { source, name });
        }
        let mut code: Vec<String> = Vec::new();
        let comment = |code: &mut Vec<String>, m: &joint::Member| {
            if let Some(p) = partners.iter().find(|p| names[m.name.as_str()] == p.name) {
                code.push(format!(
                    "# {} is {}: a guard links it to the sizes above, which are sound only with this",
                    p.name, p.source
                ));
            }
        };
        // Each member's line from the group's one spec (`group_line`, as every command writes
        // it), the roots in the order their lines are written (a tied group's reduced sizes,
        // then each tied size, written from its partner, defined above it), each followed by
        // the sizes derived from it; then the sizes the others define.
        let name = |v: &str| names.get(v).cloned().unwrap_or_else(|| py_name(v));
        let line = |m: &joint::Member| {
            let range = msg
                .dims
                .iter()
                .find(|d| d.var() == m.name)
                .and_then(|d| d.range);
            let ma = j.member(&m.name)?;
            Some(match group_line(j, &ma, &name(&m.name), &name, range)? {
                GroupLine::Derived { root, coef, offset } => {
                    alias(&name(&m.name), &name(&root), coef, offset)
                }
                GroupLine::Defined(code) => code,
                GroupLine::Side { side, .. } => side.code,
            })
        };
        let order: Vec<String> = match (choice, &l.tied) {
            (Choice::Tied(_), Some((t, _))) => t.sizes(),
            _ => l.joint.sizes.clone(),
        };
        for root in &order {
            let Some(rm) = j.grp.members.iter().find(|m| &m.name == root) else {
                continue;
            };
            comment(&mut code, rm);
            let Some(root_line) = line(rm) else { continue };
            code.push(root_line);
            for m in j
                .grp
                .members
                .iter()
                .filter(|m| &m.root == root && &m.name != root)
            {
                comment(&mut code, m);
                code.extend(line(m));
            }
        }
        for x in &l.report.defined {
            if let Some(m) = j.grp.members.iter().find(|m| m.name == x.source) {
                code.extend(line(m));
            }
        }
        out.push(GroupSpec {
            named,
            partners,
            code: code.join("\n"),
        });
    }
    out
}
