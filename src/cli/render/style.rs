//! What every renderer draws with: the terminal style, the aligned row, a tied size's row (one
//! function for `diagnose`, `check` and `verify`), and numbers, sets and long text in a few words.

use dimguard::solver::analyze::describe;
use dimguard::solver::linked::count_text;
use dimguard::solver::report::{Feasible, SizeAnswer, TiedTo};
use std::fmt::Write;

pub(super) struct Style {
    pub(super) on: bool,
}

impl Style {
    pub(super) fn paint(&self, code: &str, s: &str) -> String {
        if self.on {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_string()
        }
    }
    pub(super) fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    pub(super) fn green(&self, s: &str) -> String {
        self.paint("32", s)
    }
    pub(super) fn red(&self, s: &str) -> String {
        self.paint("31", s)
    }
    pub(super) fn yellow(&self, s: &str) -> String {
        self.paint("33", s)
    }
    pub(super) fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
}

pub(super) fn num(v: i128) -> String {
    if v == i64::MAX as i128 {
        "unbounded".into()
    } else {
        v.to_string()
    }
}

/// A set's first four segments (`96..296 mod 8 ∈ {0, 5, 6, 7}`), and how many more.
pub(super) fn segments_text(f: &Feasible) -> String {
    let segs: Vec<String> = f
        .segments
        .iter()
        .take(4)
        .map(|s| {
            let pat = if s.modulus == 1 {
                String::new()
            } else {
                let r: Vec<String> = s.residues.iter().map(|r| r.to_string()).collect();
                format!(" mod {} ∈ {{{}}}", s.modulus, r.join(", "))
            };
            format!("{}..{}{pat}", num(s.lo), num(s.hi))
        })
        .collect();
    let more = if f.segments.len() > 4 {
        format!(" (+{} more)", f.segments.len() - 4)
    } else {
        String::new()
    };
    format!("{}{more}", segs.join(", "))
}

pub(super) fn row(out: &mut String, label: &str, text: &str, st: &Style) {
    let mut lines = text.lines();
    let _ = writeln!(
        out,
        "  {:<11} {}",
        st.dim(label),
        lines.next().unwrap_or("")
    );
    for l in lines {
        let _ = writeln!(out, "  {:<11} {l}", "");
    }
}

/// A command's own rows of one size, in order (label, text), which [`size`] draws.
#[derive(Default)]
pub(super) struct Rows(Vec<(String, String)>);

impl Rows {
    /// Adds a row (an empty label continues the row above).
    pub(super) fn row(&mut self, label: &str, text: &str) {
        self.0.push((label.to_string(), text.to_string()));
    }
}

/// One size of any command's report, the one function that draws a size for `diagnose`,
/// `check` and `verify`: a blank line, its `head`, the command's rows that say how its set
/// reads against what it was asked (`before`: `status`; `claims` and `accepts`; `spec` and
/// `verdict`), the rows of its [`SizeAnswer`] every command shares ([`answer_rows`]), then the
/// command's own rows (`after`: guards, suggestions, box sides, advice; the link and the spec
/// line; the maximal spec). `v` names the size; `claimed` is its range and count, when the
/// report has one.
#[allow(clippy::too_many_arguments)]
pub(super) fn size(
    out: &mut String,
    head: &str,
    before: Rows,
    a: &SizeAnswer,
    v: &str,
    claimed: Option<(i128, i128, u128)>,
    after: Rows,
    st: &Style,
) {
    let _ = writeln!(out, "\n{head}");
    for (label, text) in &before.0 {
        row(out, label, text, st);
    }
    answer_rows(out, a, v, claimed, st);
    for (label, text) in &after.0 {
        row(out, label, text, st);
    }
}

/// The rows of a size's answer every command draws alike: the values neither proven to pass
/// nor to fail, the size it is tied to, and the nearest accepted sizes around a rejected traced
/// size. `v` names the size; `claimed` is its range and count, when the report has one.
fn answer_rows(
    out: &mut String,
    a: &SizeAnswer,
    v: &str,
    claimed: Option<(i128, i128, u128)>,
    st: &Style,
) {
    if let Some(u) = &a.undecided {
        row(
            out,
            "undecided",
            &st.yellow(&format!("{} sizes: {}", u.count, u.reason)),
            st,
        );
    }
    if let Some(t) = &a.sides.tied_to {
        tied_row(out, t, v, claimed, st);
    }
    if let Some(n) = &a.nearest_accepted {
        let side = |x: Option<i128>| x.map_or("none".to_string(), |x| x.to_string());
        row(
            out,
            "nearest",
            &format!(
                "{v} = {} is rejected; nearest accepted: {} below, {} above",
                n.size,
                side(n.below),
                side(n.above)
            ),
            st,
        );
    }
}

/// A tied size's line: its tie, and its set (its partner's through the tie) in `v`'s terms,
/// counted within `range` when known: "in the block of 4 values holding a_2: 4611686018427387899
/// of 9223372036854775806 pass (a_2's set: b_2 mod 8 ∈ {0, 5, 6, 7} and b_2 >= 13)".
/// `claimed`: the sizes the size may take, when known (its range, and how many sizes that is).
fn tied_row(
    out: &mut String,
    t: &TiedTo,
    v: &str,
    claimed: Option<(i128, i128, u128)>,
    st: &Style,
) {
    let text = match t.accepted.as_ref().map(|f| (f, f.set())) {
        Some((f, Ok(set))) => {
            let (lo, hi) = claimed
                .map(|(lo, hi, _)| (lo, hi))
                .or(set.min().zip(set.max()))
                .unwrap_or_default();
            let total = claimed.map(|(_, _, n)| n);
            let n = match total {
                Some(t) if t == f.count => format!("all {} of its values pass", count_text(t)),
                Some(t) => format!("{} of {} pass", count_text(f.count), count_text(t)),
                None => format!("{} pass", count_text(f.count)),
            };
            let what = match describe(&set, lo, hi, v) {
                w if w == "always true on the range" => String::new(),
                w => format!(": {w}"),
            };
            format!("{}: {n} ({}'s set{what})", t.relation, t.partner)
        }
        _ => format!(
            "{}: its set is {}'s, which is undecided",
            t.relation, t.partner
        ),
    };
    row(out, "tied", &text, st);
}

/// `lo..hi`, `lo..hi step m`, or the single value.
pub(super) fn progression(lo: i128, hi: i128, m: i128) -> String {
    if lo == hi {
        lo.to_string()
    } else if m == 1 {
        format!("{lo}..{hi}")
    } else {
        format!("{lo}..{hi} step {m}")
    }
}

/// A long expression shortened in the middle: its head and tail with the number of characters
/// left out.
pub fn abbreviate(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_string();
    }
    let keep = max / 2;
    let head: String = chars[..keep].iter().collect();
    let tail: String = chars[chars.len() - keep..].iter().collect();
    format!("{head} …({} characters)… {tail}", chars.len() - 2 * keep)
}
