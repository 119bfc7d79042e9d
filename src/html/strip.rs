//! One size's strip: the values of its range, one mark per accepted value coloured by its
//! residue class (one band per segment past [`MAX_MARKS`] values).

use super::model::PageDim;
use super::text::{esc, segments_text, MAX_MARKS, PALETTE};
use crate::solver::report::{Feasible, Nearest, Status, TiedTo};
use crate::solver::DimSet;
use std::fmt::Write;

/// What a size's strip shows: its label, the sizes it is linked to, the set drawn and the
/// range it is drawn over.
#[derive(Default)]
pub(super) struct StripDim<'a> {
    pub(super) label: String,
    pub(super) linked_with: &'a [String],
    /// For a linked size, the values that pass with some partner; else its accepted values.
    /// `None` when undecided.
    pub(super) set: Option<&'a Feasible>,
    pub(super) range: Option<(i128, i128)>,
    /// `diagnose`: no guard names the size alone.
    pub(super) unconstrained: bool,
    /// `diagnose`: why the size is not decided.
    pub(super) undecided: Option<&'a str>,
    /// How many values are not decided, and why.
    pub(super) undecided_part: Option<(u128, &'a str)>,
    /// Tied to another size: its answer is the partner's, through the tie.
    pub(super) tied_to: Option<&'a TiedTo>,
    /// Defined by the others as a product: its values with some partner, in their own form
    /// (no periodic set to draw).
    pub(super) defined: Option<&'a dimguard_solver::report::DefinedValues>,
    /// A rejected traced size, with the nearest accepted sizes around it.
    pub(super) nearest: Option<&'a Nearest>,
}

impl PageDim {
    pub(super) fn strip(&self) -> StripDim<'_> {
        let named = |n: &str, s: Option<&str>| match s {
            Some(s) => format!("{n} = {s}"),
            None => n.to_string(),
        };
        let range = self.range();
        let (label, answer) = match self {
            PageDim::Check(c) => (
                format!("{}.size({}) = {}", c.input, c.index, c.expr),
                &c.answer,
            ),
            PageDim::Diagnose(d) => (named(&d.name, d.source.as_deref()), &d.answer),
            PageDim::Verify(v) => (named(&v.name, v.source.as_deref()), &v.answer),
            PageDim::Drawn(d) => {
                return StripDim {
                    label: named(&d.name, d.source.as_deref()),
                    set: d.feasible.as_ref(),
                    range,
                    ..StripDim::default()
                }
            }
        };
        // Drawn from the size's answer, the same in every command.
        let sides = &answer.sides;
        let tied_to = sides.tied_to.as_ref();
        // A linked size: the values that pass with some partner; a tied one: its partner's set
        // through the tie.
        let partner = sides
            .with_some_partner
            .as_ref()
            .or(tied_to.and_then(|t| t.accepted.as_ref()));
        let mut strip = StripDim {
            label,
            linked_with: &answer.linked_with,
            set: partner.or(answer.accepted.as_ref()),
            range,
            undecided_part: answer
                .undecided
                .as_ref()
                .map(|u| (u.count, u.reason.as_str())),
            tied_to,
            defined: sides.defined_values.as_ref(),
            nearest: answer.nearest_accepted.as_ref(),
            ..StripDim::default()
        };
        if let PageDim::Diagnose(d) = self {
            strip.unconstrained = d.status == Status::Unconstrained;
            strip.undecided = d.undecided.as_deref();
        }
        strip
    }
}

/// A strip of the range's values, wrapped into rows whose width is a multiple of the set's period
/// so each residue class forms a column.
/// `free`: the size is linked, but its joint set is its side times the rest (the link excludes
/// none of its values).
pub(super) fn strip(d: &StripDim, i: usize, free: bool) -> String {
    let label = &d.label;
    let mut out = format!("<h3 id=\"dim-{i}\">{}</h3>", esc(label));
    let linked = !d.linked_with.is_empty();
    relations(&mut out, d, free);
    if let Some(v) = d.defined {
        defined_note(&mut out, d, v);
        return out;
    }
    // Null, undecided, or segments dropped by the output budget: no set to draw.
    let Some(set) = d.set.and_then(|f| f.set().ok()) else {
        if let Some(why) = d.undecided {
            let _ = write!(out, "<p class=\"bad\">Not decided: {}</p>", esc(why));
        } else if d.unconstrained {
            out.push_str(
                "<p>No guard names this size alone (when it is linked to another size, see \
                 the joint answer).</p>",
            );
        } else {
            out.push_str("<p class=\"bad\">The report carries no accepted set for this size.</p>");
        }
        return out;
    };
    let Some((lo, hi)) = d.range.or_else(|| Some((set.min()?, set.max()?))) else {
        out.push_str("<p>No range.</p>");
        return out;
    };
    let n = (hi - lo + 1).max(0) as u128;
    let acc = set.count();
    let classes = Classes::of(&set);
    let summary = format!(
        "{label}: {acc} of {n} values in {lo}..{hi} pass {}{}",
        if linked {
            "with some partner"
        } else {
            "every guard"
        },
        classes.text()
    );
    let _ = write!(out, "<p class=\"note\">{}</p>", esc(&summary));
    // `check`'s values neither proven to pass nor to fail (drawn pale, said here).
    if let Some((count, reason)) = d.undecided_part {
        let _ = write!(
            out,
            "<p class=\"bad\">{count} values not decided: {}</p>",
            esc(reason)
        );
    }
    classes.legend(&mut out);
    if n == 0 || n > MAX_MARKS {
        bands(&mut out, &set, (lo, hi), n, &summary);
    } else {
        marks(&mut out, &set, lo, n, &classes, &summary);
    }
    out
}

/// The paragraphs on what the size is tied or linked to, and on the traced size it rejects.
fn relations(out: &mut String, d: &StripDim, free: bool) {
    let linked = !d.linked_with.is_empty();
    if let Some(t) = d.tied_to {
        let _ = write!(
            out,
            "<p class=\"tied\">Tied: {}. Its answer is {}'s, through the tie: the marks are \
             its values that pass with some value of {}.</p>",
            esc(&t.relation),
            esc(&t.partner),
            esc(&t.partner)
        );
    }
    if let Some(n) = d.nearest {
        let side = |x: Option<i128>| x.map_or("none".to_string(), |x| x.to_string());
        let _ = write!(
            out,
            "<p class=\"bad\">The traced size {} is rejected. Nearest accepted: {} below, {} \
             above.</p>",
            n.size,
            side(n.below),
            side(n.above)
        );
    }
    if linked && free {
        let _ = write!(
            out,
            "<p>Guards link it to {}, but the link excludes none of its values: each value \
             marked passes with every accepted value of those (see the joint answer above).</p>",
            esc(&d.linked_with.join(", "))
        );
    } else if linked {
        let _ = write!(
            out,
            "<p>Linked to {} by guards over several sizes: which of its values pass depends on \
             them (see the joint answer above). The marks are the values that pass with some \
             value of those.</p>",
            esc(&d.linked_with.join(", "))
        );
    }
}

/// The note for a size the others define as a product (its values with some partner, in their
/// own form): no strip is drawn.
fn defined_note(out: &mut String, d: &StripDim, v: &dimguard_solver::report::DefinedValues) {
    let list = |xs: &[i128]| {
        xs.iter()
            .map(i128::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = write!(
        out,
        "<p class=\"note\">Defined by the others: {} = {}. No value passes with every \
         value of those; its values with some partner are {} (e.g. {}; the others fail \
         with every partner, e.g. {}). Not a periodic set: no strip is drawn.</p>",
        esc(&d.label),
        esc(&v.relation),
        esc(&v.text),
        esc(&list(&v.examples)),
        esc(&list(&v.excluded_examples))
    );
}

/// The accepted residue classes of a set modulo its period (at most 2^20; the first 4,096
/// residues looked at), each drawn in its own colour.
struct Classes {
    period: i128,
    classes: Vec<i128>,
}

impl Classes {
    fn of(set: &DimSet) -> Classes {
        let period = set.period().clamp(1, 1 << 20);
        let classes: Vec<i128> = (0..period.min(4096))
            .filter(|r| {
                set.segments()
                    .iter()
                    .any(|s| s.residues.contains(&r.rem_euclid(s.modulus)))
            })
            .collect();
        Classes { period, classes }
    }

    /// The colour of value `x`'s class (the first colour for a class not listed).
    fn colour(&self, x: i128) -> &'static str {
        let k = self
            .classes
            .iter()
            .position(|c| *c == x.rem_euclid(self.period))
            .unwrap_or(0);
        PALETTE[k % PALETTE.len()]
    }

    /// `"; accepted residues mod P: ..."` for the summary, empty for period 1.
    fn text(&self) -> String {
        if self.period > 1 {
            format!(
                "; accepted residues mod {}: {}",
                self.period,
                self.classes
                    .iter()
                    .map(i128::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        } else {
            String::new()
        }
    }

    /// The legend of the classes' colours (none for period 1 or more than 32 classes).
    fn legend(&self, out: &mut String) {
        let period = self.period;
        if period > 1 && self.classes.len() <= 32 {
            out.push_str("<ul class=\"legend\" aria-label=\"residue classes\">");
            for c in &self.classes {
                let _ = write!(
                    out,
                    "<li><span class=\"sw\" style=\"background:{}\"></span>≡ {c} (mod {period})</li>",
                    self.colour(*c)
                );
            }
            out.push_str(
                "<li><span class=\"sw\" style=\"background:#e2e2e2\"></span>fails a guard</li></ul>",
            );
        }
    }
}

/// The strip of a range too long to draw value by value (`n` values in `lo..=hi`): one band
/// per segment of `set` over the range.
fn bands(out: &mut String, set: &DimSet, (lo, hi): (i128, i128), n: u128, summary: &str) {
    let w = 900.0;
    let span = (hi - lo).max(1) as f64;
    let _ = write!(
        out,
        "<svg class=\"strip\" data-marks=\"{}\" data-aggregated=\"true\" viewBox=\"0 0 {w} 40\" role=\"img\" tabindex=\"0\" aria-label=\"{}\"><title>{}</title><rect class=\"rej\" x=\"0\" y=\"8\" width=\"{w}\" height=\"18\"/>",
        set.segments().len(),
        esc(summary),
        esc(summary)
    );
    for s in set.segments() {
        let x0 = (s.lo - lo) as f64 / span * w;
        let x1 = ((s.hi - lo) as f64 / span * w).max(x0 + 1.0);
        let _ = write!(
            out,
            "<rect class=\"band\" x=\"{x0:.1}\" y=\"8\" width=\"{:.1}\" height=\"18\" fill=\"#0072B2\"><title>{}..{} mod {} in {{{}}}</title></rect>",
            x1 - x0,
            s.lo,
            s.hi,
            s.modulus,
            s.residues.iter().map(i128::to_string).collect::<Vec<_>>().join(", ")
        );
    }
    let _ = write!(
        out,
        "<text class=\"axis\" x=\"0\" y=\"38\">{lo}</text><text class=\"axis\" x=\"{w}\" y=\"38\" text-anchor=\"end\">{hi}</text></svg>\
         <p class=\"note\">{} values: drawn as {} band(s), one per segment.</p>",
        n,
        set.segments().len()
    );
}

/// The strip of the `n` values from `lo`, one mark per accepted value in its class's colour,
/// wrapped into rows whose width is a multiple of the period (near 64, at most 128) so classes
/// line up; then the accepted values as text.
fn marks(out: &mut String, set: &DimSet, lo: i128, n: u128, classes: &Classes, summary: &str) {
    let period = classes.period;
    let acc = set.count();
    let cols = if period <= 128 {
        (64 / period).max(1) * period
    } else {
        64
    }
    .min(n as i128)
    .max(1);
    let rows = (n as i128 + cols - 1) / cols;
    let cell: i128 = if cols <= 32 {
        20
    } else {
        (880 / cols).clamp(6, 14)
    };
    let left = 56;
    let (w, h) = (left + cols * cell, rows * cell + 4);
    let _ = write!(
        out,
        "<svg class=\"strip\" data-marks=\"{acc}\" viewBox=\"0 0 {w} {h}\" width=\"{w}\" role=\"img\" tabindex=\"0\" aria-label=\"{}\"><title>{}</title>",
        esc(summary),
        esc(summary)
    );
    // Each row: its first value, a pale bar for the row's values (those that fail stay pale),
    // then one mark per accepted value.
    for r in 0..rows {
        let in_row = (n as i128 - r * cols).min(cols);
        let _ = write!(
            out,
            "<text class=\"axis\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect class=\"rej\" x=\"{left}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
            left - 4,
            r * cell + cell * 4 / 5,
            lo + r * cols,
            r * cell,
            in_row * cell - 1,
            cell - 1
        );
    }
    let side = cell - 1;
    for k in 0..n as i128 {
        let x = lo + k;
        if set.contains(x) {
            let _ = write!(
                out,
                "<rect class=\"acc\" x=\"{}\" y=\"{}\" width=\"{side}\" height=\"{side}\" fill=\"{}\"><title>{x}</title></rect>",
                left + (k % cols) * cell,
                (k / cols) * cell,
                classes.colour(x)
            );
        }
    }
    out.push_str("</svg>");
    let _ = write!(
        out,
        "<details><summary>The accepted values as text</summary><p>{}</p></details>",
        esc(&segments_text(set))
    );
}
