//! Linked sizes: the joint answer in words and one 2-D plot of the accepted tuples per group
//! (with the largest sound box when the report carries one).

use super::model::{Page, PageDim};
use super::text::{esc, segments_text, MAX_MARKS};
use crate::solver::report::{count_text, JointReport, Suggestion};
use crate::solver::{parse_expr, DimSet};
use std::fmt::Write;

/// A group of linked sizes as the page plots it: the sizes drawn, and the accepted tuples over
/// them.
pub(super) struct Group {
    pub(super) names: Vec<String>,
    pub(super) tuples: Vec<Vec<i128>>,
    /// The largest sound box over the sizes drawn, per size `[lo, hi]`, when the report carries
    /// one.
    pub(super) sound_box: Option<Vec<(i128, i128)>>,
    pub(super) note: String,
}

/// A joint set (`check`'s `joint`, `diagnose`'s and `verify`'s `joint_sets`), read: its sizes,
/// its boxes as exact sets (when every box is listed and readable), and which sizes are
/// independent of the others.
pub(super) struct Joint<'a> {
    pub(super) v: &'a JointReport,
    pub(super) names: &'a [String],
    pub(super) boxes: Option<Vec<Vec<DimSet>>>,
    /// Per size: the joint set is its side times the rest (every box has the same side), so the
    /// link excludes none of its values. All false unless `boxes` is the whole joint set.
    pub(super) independent: Vec<bool>,
}

impl Joint<'_> {
    /// `None` for a group of fewer than two sizes.
    pub(super) fn read(v: &JointReport) -> Option<Joint<'_>> {
        let names = &v.dims[..];
        if names.len() < 2 {
            return None;
        }
        // The whole joint set: every box listed and readable, nothing undecided, no size
        // defined by the others.
        let boxes: Option<Vec<Vec<DimSet>>> = v
            .exact_boxes()
            .filter(|b| !b.is_empty() && b.iter().all(|s| s.len() == names.len()));
        let independent = boxes
            .as_ref()
            .and_then(|_| v.free_sides())
            .unwrap_or_else(|| vec![false; names.len()]);
        Some(Joint {
            v,
            names,
            boxes,
            independent,
        })
    }

    /// The sizes the plot draws: those not independent of the others, completed with
    /// independent ones (in the group's order) to at least two.
    pub(super) fn plotted(&self) -> Vec<usize> {
        let mut out: Vec<usize> = (0..self.names.len())
            .filter(|k| !self.independent[*k])
            .collect();
        for k in 0..self.names.len() {
            if out.len() >= 2 {
                break;
            }
            if !out.contains(&k) {
                out.push(k);
            }
        }
        out.sort_unstable();
        out
    }

    /// The 2-D plot's group: the accepted tuples over the plotted sizes (each once), when they
    /// are few enough to draw.
    pub(super) fn group(&self) -> Option<Group> {
        let boxes = self.boxes.as_ref()?;
        let keep = self.plotted();
        let mut tuples: std::collections::BTreeSet<Vec<i128>> = Default::default();
        for b in boxes {
            let mut part: Vec<Vec<i128>> = vec![vec![]];
            for &k in &keep {
                if b[k].count() > MAX_MARKS {
                    return None;
                }
                let side: Vec<i128> = b[k].iter().collect();
                part = part
                    .iter()
                    .flat_map(|t| {
                        side.iter().map(move |v| {
                            let mut t = t.clone();
                            t.push(*v);
                            t
                        })
                    })
                    .collect();
                if part.len() as u128 > MAX_MARKS {
                    return None;
                }
            }
            tuples.extend(part);
            if tuples.len() as u128 > MAX_MARKS {
                return None;
            }
        }
        let sound_box = self.v.largest_box.as_ref().and_then(|lb| {
            keep.iter()
                .map(|&k| lb.sides.get(k).map(|p| (p.lo, p.hi)))
                .collect::<Option<Vec<_>>>()
        });
        let collapsed: Vec<&str> = (0..self.names.len())
            .filter(|k| !keep.contains(k))
            .map(|k| self.names[k].as_str())
            .collect();
        let note = if collapsed.is_empty() {
            String::new()
        } else {
            format!(
                "Drawn once: {} {} independent of the others (every value of {} passes with \
                 every tuple drawn).",
                collapsed.join(", "),
                if collapsed.len() == 1 { "is" } else { "are" },
                if collapsed.len() == 1 { "it" } else { "them" }
            )
        };
        Some(Group {
            names: keep.iter().map(|&k| self.names[k].clone()).collect(),
            tuples: tuples.into_iter().collect(),
            sound_box,
            note,
        })
    }
}

/// A set in a few words: `224..227`, `64..512 step 32`, or its segments.
pub(super) fn set_text(set: &DimSet) -> String {
    match set.as_progression() {
        Some(p) if p.lo == p.hi => p.lo.to_string(),
        Some(p) if p.modulus == 1 => format!("{}..{}", p.lo, p.hi),
        Some(p) => format!("{}..{} step {}", p.lo, p.hi, p.modulus),
        None => segments_text(set),
    }
}

/// A progression side in a few words.
pub(super) fn side_text(p: &Suggestion) -> String {
    match (p.lo, p.hi, p.modulus) {
        (a, b, _) if a == b => a.to_string(),
        (a, b, m) if m > 1 => format!("{a}..{b} step {m}"),
        (a, b, _) => format!("{a}..{b}"),
    }
}

/// The joint answer, first on the page: per group of linked sizes, the answer in a sentence,
/// how many tuples pass, the largest sound box (and the box through the traced sizes that the
/// spec uses, when it differs), which sizes the link leaves free, and one plot of the accepted
/// tuples.
pub(super) fn joint_section(report: &Page, joints: &[Joint]) -> String {
    let derived = derived_groups(report);
    if joints.is_empty() && derived.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "<section aria-labelledby=\"h-joint\"><h2 id=\"h-joint\">Joint answer: linked sizes</h2>",
    );
    let mut plot = 0;
    for j in joints {
        let what: Vec<String> = j
            .names
            .iter()
            .zip(j.v.sources.iter().map(Some).chain(std::iter::repeat(None)))
            .map(|(n, s)| match s {
                Some(s) => format!("{n} = {s}"),
                None => n.clone(),
            })
            .collect();
        let _ = write!(
            out,
            "<h3>{}</h3><p><strong>{}</strong></p><ul>",
            esc(&what.join(", ")),
            esc(&j.v.summary)
        );
        let nboxes = j.v.boxes.len();
        let _ = write!(
            out,
            "<li>accepts {} of the {} claimed combinations ({nboxes} box{}{})</li>",
            j.v.accepted_text(),
            count_text(j.v.claimed),
            if nboxes == 1 { "" } else { "es" },
            if j.boxes.is_some() { "" } else { " or more" }
        );
        if let Some(lb) = &j.v.largest_box {
            let text: Vec<String> = j
                .names
                .iter()
                .zip(&lb.sides)
                .map(|(n, p)| format!("{n} in {}", side_text(p)))
                .collect();
            let _ = write!(
                out,
                "<li>largest sound box: {} ({} combinations{})</li>",
                esc(&text.join(", ")),
                count_text(lb.count),
                if lb.maximal { ", maximal" } else { "" }
            );
        }
        // The box through the traced sizes, when the spec uses it instead.
        let through: Vec<String> =
            j.v.sources
                .iter()
                .zip(j.names)
                .filter_map(|(src, n)| {
                    let d = report.dims.iter().find(|d| d.source() == Some(src))?;
                    let side = d.sides()?.example_box_side.as_ref()?;
                    Some(format!("{n} in {}", side_text(side)))
                })
                .collect();
        if !through.is_empty() {
            let _ = write!(
                out,
                "<li>the spec below uses the sound box through the traced sizes: {}</li>",
                esc(&through.join(", "))
            );
        }
        if let Some(boxes) = &j.boxes {
            if j.independent.iter().all(|i| *i) {
                // As the text's `link` row: nothing excluded only when the box is the product of
                // the sizes' own sets.
                if let Some(link) = j.v.one_box_link() {
                    // (A fixed sentence: nothing to escape.)
                    let _ = write!(out, "<li>the link {link}</li>");
                }
            } else {
                for (k, n) in j
                    .names
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| j.independent[*k])
                {
                    let others: Vec<&str> = j
                        .names
                        .iter()
                        .enumerate()
                        .filter(|(o, _)| *o != k)
                        .map(|(_, o)| o.as_str())
                        .collect();
                    let _ = write!(
                        out,
                        "<li>{n} is independent of {}: every {n} in {} passes with every \
                         accepted ({}); the link excludes nothing for it</li>",
                        esc(&others.join(", ")),
                        esc(&set_text(&boxes[0][k])),
                        esc(&others.join(", "))
                    );
                }
            }
        }
        if let Some(u) = &j.v.undecided {
            let _ = write!(
                out,
                "<li class=\"bad\">{} combinations not decided: {}</li>",
                count_text(u.count),
                esc(&u.reason)
            );
        }
        // A few tuples of the joint set and outside it (as the text's `pass` and `fail` rows).
        for (word, ts) in [
            ("pass", &j.v.accepted_examples),
            ("fail", &j.v.rejected_examples),
        ] {
            let shown: Vec<String> = ts
                .iter()
                .take(3)
                .map(|t| {
                    let vals: Vec<String> = t.iter().map(i128::to_string).collect();
                    format!("({})", vals.join(", "))
                })
                .collect();
            if !shown.is_empty() {
                let _ = write!(
                    out,
                    "<li>{word}, e.g. ({}) = {}</li>",
                    esc(&j.names.join(", ")),
                    esc(&shown.join(", "))
                );
            }
        }
        out.push_str("</ul>");
        match j.group() {
            Some(g) => {
                out.push_str(&pairs(&g, plot));
                plot += 1;
            }
            None => out.push_str(
                "<p class=\"note\">Not drawn: too many tuples to draw one by one, or not \
                 every box is listed.</p>",
            ),
        }
    }
    for g in &derived {
        let _ = write!(out, "<h3>{}</h3>", esc(&g.names.join(", ")));
        out.push_str(&pairs(g, plot));
        plot += 1;
    }
    out.push_str("</section>");
    out
}

/// `diagnose`'s groups of a root and members derived from it (`linked`): one tuple per accepted
/// root value, each member's value from its expression of the root.
pub(super) fn derived_groups(report: &Page) -> Vec<Group> {
    let mut out = vec![];
    for g in &report.linked {
        let root = g.root.as_str();
        let Some(set) = g.feasible.as_ref().and_then(|f| f.set().ok()) else {
            continue;
        };
        if set.count() > MAX_MARKS {
            continue;
        }
        let root_var = crate::solver::python::py_name(root);
        let mut names = vec![root.to_string()];
        let mut members = vec![];
        for [n, e] in &g.members {
            if let Ok(expr) = parse_expr(e) {
                names.push(n.clone());
                members.push(expr);
            }
        }
        if names.len() < 2 {
            continue;
        }
        let (lo, hi) = report
            .dims
            .iter()
            .find(|d| d.name() == Some(root))
            .and_then(PageDim::range)
            .or_else(|| Some((set.min()?, set.max()?)))
            .unwrap_or((0, -1));
        let tuples: Vec<Vec<i128>> = set
            .clip(lo, hi)
            .iter()
            .filter_map(|x| {
                let mut t = vec![x];
                for e in &members {
                    t.push(e.int_at(&|a| (a == root || a == root_var).then_some(x))?);
                }
                Some(t)
            })
            .collect();
        out.push(Group {
            names,
            tuples,
            sound_box: None,
            note: "members are derived from the root: one Dim holds the whole group".into(),
        });
    }
    out
}

/// A 2-D plot of a group's accepted tuples (the first two sizes; with three sizes, one panel per
/// value of the third, at most 6 panels, each its own plot).
pub(super) fn pairs(g: &Group, i: usize) -> String {
    let mut out = format!("<h3>{}</h3>", esc(&g.names.join(", ")));
    if !g.note.is_empty() {
        let _ = write!(out, "<p class=\"note\">{}</p>", esc(&g.note));
    }
    let slices: Vec<(Option<i128>, Vec<&Vec<i128>>)> = if g.names.len() >= 3 {
        let mut vals: Vec<i128> = g.tuples.iter().map(|t| t[2]).collect();
        vals.sort_unstable();
        vals.dedup();
        let shown: Vec<i128> = vals.iter().copied().take(6).collect();
        if vals.len() > shown.len() {
            let _ = write!(
                out,
                "<p class=\"note\">{} values of {}: the first {} are drawn.</p>",
                vals.len(),
                esc(&g.names[2]),
                shown.len()
            );
        }
        shown
            .into_iter()
            .map(|v| (Some(v), g.tuples.iter().filter(|t| t[2] == v).collect()))
            .collect()
    } else {
        vec![(None, g.tuples.iter().collect())]
    };
    for (j, (slice, ts)) in slices.iter().enumerate() {
        let (Some(x0), Some(x1), Some(y0), Some(y1)) = (
            ts.iter().map(|t| t[0]).min(),
            ts.iter().map(|t| t[0]).max(),
            ts.iter().map(|t| t[1]).min(),
            ts.iter().map(|t| t[1]).max(),
        ) else {
            out.push_str("<p>No accepted tuple.</p>");
            continue;
        };
        let (x0, x1, y0, y1) = match &g.sound_box {
            Some(b) if b.len() >= 2 => (
                x0.min(b[0].0),
                x1.max(b[0].1),
                y0.min(b[1].0),
                y1.max(b[1].1),
            ),
            _ => (x0, x1, y0, y1),
        };
        let (pw, ph, m) = (480.0, 480.0, 48.0);
        let sx = |x: i128| m + (x - x0) as f64 / ((x1 - x0).max(1)) as f64 * (pw - 10.0);
        let sy = |y: i128| ph - (y - y0) as f64 / ((y1 - y0).max(1)) as f64 * (ph - 10.0) + 5.0;
        let label = format!(
            "{} accepted ({}, {}) pairs{}",
            ts.len(),
            g.names[0],
            g.names[1],
            slice.map_or(String::new(), |v| format!(" with {} = {v}", g.names[2]))
        );
        let _ = write!(
            out,
            "<svg class=\"pairs\" id=\"pairs-{i}-{j}\" data-marks=\"{}\" viewBox=\"0 0 {} {}\" width=\"{}\" role=\"img\" tabindex=\"0\" aria-label=\"{}\"><title>{}</title>\
             <rect x=\"{m}\" y=\"0\" width=\"{pw}\" height=\"{}\" fill=\"#fafafa\" stroke=\"#999\"/>",
            ts.len(),
            pw + m + 10.0,
            ph + 40.0,
            pw + m + 10.0,
            esc(&label),
            esc(&label),
            ph + 10.0
        );
        let r = (300.0 / (ts.len() as f64).sqrt()).clamp(1.2, 4.0);
        for t in ts {
            let _ = write!(
                out,
                "<circle class=\"tup\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"{r:.1}\" fill=\"#0072B2\"><title>({}, {})</title></circle>",
                sx(t[0]),
                sy(t[1]),
                t[0],
                t[1]
            );
        }
        // The box, on the panels whose slice value it contains.
        let in_box = |b: &Vec<(i128, i128)>| {
            b.len() >= 2 && slice.is_none_or(|v| b.get(2).is_none_or(|r| r.0 <= v && v <= r.1))
        };
        if let Some(b) = g.sound_box.as_ref().filter(|b| in_box(b)) {
            let _ = write!(
                out,
                "<rect class=\"box\" x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\"><title>largest sound box: {} in {}..{}, {} in {}..{}</title></rect>",
                sx(b[0].0),
                sy(b[1].1),
                sx(b[0].1) - sx(b[0].0),
                sy(b[1].0) - sy(b[1].1),
                g.names[0], b[0].0, b[0].1, g.names[1], b[1].0, b[1].1
            );
        }
        let _ = write!(
            out,
            "<text class=\"axis\" x=\"{m}\" y=\"{:.0}\">{x0}</text><text class=\"axis\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{x1}</text>\
             <text class=\"axis\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"middle\">{}</text>\
             <text class=\"axis\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{y1}</text><text class=\"axis\" x=\"{:.0}\" y=\"{:.0}\" text-anchor=\"end\">{y0}</text>\
             <text class=\"axis\" x=\"12\" y=\"{:.0}\" transform=\"rotate(-90 12 {:.0})\" text-anchor=\"middle\">{}</text></svg>",
            ph + 24.0,
            pw + m,
            ph + 24.0,
            m + pw / 2.0,
            ph + 36.0,
            esc(&g.names[0]),
            m - 4.0,
            12.0,
            m - 4.0,
            ph + 5.0,
            ph / 2.0,
            ph / 2.0,
            esc(&g.names[1])
        );
    }
    out
}
