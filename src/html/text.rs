//! What every section of the page uses: the drawing limits, the palette of residue classes,
//! HTML escaping, and a set's segments in words.

use crate::solver::DimSet;

/// The most values a strip or a 2-D plot draws one by one.
pub const MAX_MARKS: u128 = 20_000;

/// The most solved guards a folded list shows (the JSON report lists every one).
pub(super) const MAX_GUARDS: usize = 100;

/// Okabe–Ito colours (without yellow, too pale on white), for residue classes.
pub(super) const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

pub(super) fn segments_text(set: &DimSet) -> String {
    if set.is_empty() {
        return "none".into();
    }
    set.segments()
        .iter()
        .map(|s| {
            if s.modulus == 1 {
                format!("{}..{}", s.lo, s.hi)
            } else {
                format!(
                    "{}..{} with x mod {} in {{{}}}",
                    s.lo,
                    s.hi,
                    s.modulus,
                    s.residues
                        .iter()
                        .map(i128::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}
