//! A size's answer in words and specs, for every command: the set described relative to a range,
//! and the ranked suggestions inside a set, each re-checked value by value. Message-free: it
//! reads sets and guards, never a text.

use crate::compiled::recheck;
use crate::report::{Certificate, Proof, Suggestion};
use crate::suggest::{self, unchecked_suggestion, Maximality};
use crate::types::{DimSet, Expr, Progression};

/// What a report says when a candidate failed the independent re-check.
pub const WITHHELD: &str = "internal error: a candidate failed dimguard's independent re-check and was withheld; please report this message";

/// Ranked suggestions inside a set, the last step of every pipeline (`diagnose`, `check`).
#[derive(Debug, Clone)]
pub struct Ranked {
    /// The progressions ranked by [`suggest::rank`], best first.
    pub progressions: Vec<Progression>,
    /// Their suggestions, minus any that failed the re-check.
    pub suggestions: Vec<Suggestion>,
    /// Whether the first progression is proven maximal.
    pub maximality: Maximality,
    /// How many candidates failed the re-check (a bug in the engine): withheld, never printed.
    pub withheld: usize,
}

/// The `limit` best progressions inside `set` as suggestions for the dimension `name`
/// (`example`: prefer one holding the traced size). With `guards`, each is re-checked
/// independently of the engine: every guard is evaluated at every value, in the size `var`
/// (when there are at most [`RECHECK_LIMIT`](crate::RECHECK_LIMIT)), giving `certificate: "enumeration"`; a failing
/// candidate is withheld rather than printed unsound. Without guards nothing is re-checked
/// (`certificate: "none"`; the caller certifies).
pub fn suggestions(
    set: &DimSet,
    example: Option<i128>,
    limit: usize,
    guards: Option<&[&Expr]>,
    var: &str,
    name: &str,
    proof: Proof,
) -> Ranked {
    let ranking = suggest::rank(set, example, limit);
    let suggestions: Vec<Suggestion> = ranking
        .progressions
        .iter()
        .filter_map(|p| suggestion(p, guards, var, name, proof))
        .collect();
    Ranked {
        withheld: ranking.progressions.len() - suggestions.len(),
        progressions: ranking.progressions,
        suggestions,
        maximality: ranking.maximality,
    }
}

/// One suggestion, re-checked against `guards` as [`suggestions`] says; `None` when it fails.
fn suggestion(
    p: &Progression,
    guards: Option<&[&Expr]>,
    var: &str,
    name: &str,
    proof: Proof,
) -> Option<Suggestion> {
    let certificate = match guards.and_then(|g| recheck(g, var, &p.to_set())) {
        Some(false) => return None,
        Some(true) => Certificate::Enumeration,
        None => Certificate::None,
    };
    Some(Suggestion {
        certificate,
        ..unchecked_suggestion(name, p, proof)
    })
}

/// Most residues a guard's description lists.
const LISTED_RESIDUES: usize = 64;

/// A set described in plain terms relative to the range `[lo, hi]`.
pub fn describe(s: &DimSet, lo: i128, hi: i128, v: &str) -> String {
    let total = DimSet::interval(lo, hi).count();
    if s.count() == total {
        return "always true on the range".into();
    }
    if s.is_empty() {
        return "never true on the range".into();
    }
    if s.count() == 1 {
        return format!("{v} = {}", s.min().unwrap_or_default());
    }
    let pattern = |seg: &crate::types::Segment| -> Option<String> {
        let (m, res) = (seg.modulus, &seg.residues);
        if m == 1 {
            return None;
        }
        let list = |v: &[i128]| v.iter().map(i128::to_string).collect::<Vec<_>>().join(", ");
        Some(match res.len() {
            1 => format!("{v} ≡ {} (mod {m})", res[0]),
            n if n as i128 == m - 1 => {
                // Residues are sorted: the missing one is where the count breaks (one pass;
                // a search per candidate cost 660 ms at m = 64,000, fuzzer seed 1795455210
                // execution 540114).
                let missing = (0i128..)
                    .zip(res.iter())
                    .find(|(i, r)| *i != **r)
                    .map_or(m - 1, |(i, _)| i);
                format!("{v} mod {m} ≠ {missing}")
            }
            n if n > LISTED_RESIDUES => format!(
                "{v} mod {m} ∈ {{{}, ...}} ({n} residues)",
                list(&res[..LISTED_RESIDUES])
            ),
            _ => format!("{v} mod {m} ∈ {{{}}}", list(res)),
        })
    };
    let segs = s.segments();
    if let [seg] = segs {
        let mut parts: Vec<String> = pattern(seg).into_iter().collect();
        // Bounds only where the pattern alone would admit values outside.
        let below = crate::types::Segment {
            lo,
            hi: seg.lo - 1,
            ..seg.clone()
        };
        if seg.lo > lo && below.next_at_least(lo).is_some() {
            parts.push(format!("{v} >= {}", seg.lo));
        }
        let above = crate::types::Segment {
            lo: seg.hi + 1,
            hi,
            ..seg.clone()
        };
        if seg.hi < hi && above.next_at_least(seg.hi + 1).is_some() {
            parts.push(format!("{v} <= {}", seg.hi));
        }
        return parts.join(" and ");
    }
    let mut pieces: Vec<String> = segs
        .iter()
        .take(3)
        .map(|seg| {
            let range = if seg.lo == seg.hi {
                format!("{v} = {}", seg.lo)
            } else {
                format!("{} <= {v} <= {}", seg.lo, seg.hi)
            };
            match pattern(seg) {
                Some(p) if seg.lo != seg.hi => format!("{range} with {p}"),
                _ => range,
            }
        })
        .collect();
    if segs.len() > 3 {
        pieces.push(format!("{} more pieces", segs.len() - 3));
    }
    pieces.join("; or ")
}
