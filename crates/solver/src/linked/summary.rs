//! The joint set in words: one sentence for people ([`JointSet::summary`]).

use super::JointSet;
use crate::report::count_text;
use crate::types::DimSet;

/// A set in a few words: `1..32`, `64..512 step 32`, `7 values in 96..1024`.
pub fn brief(s: &DimSet) -> String {
    match (s.min(), s.max(), s.as_progression()) {
        (None, _, _) | (_, None, _) => "no value".to_string(),
        (Some(a), Some(b), _) if a == b => a.to_string(),
        (Some(a), Some(b), Some(p)) if p.modulus == 1 => format!("{a}..{b}"),
        (Some(a), Some(b), Some(p)) => format!("{a}..{b} step {}", p.modulus),
        (Some(a), Some(b), None) => format!("{} values in {a}..{b}", count_text(s.count())),
    }
}

impl JointSet {
    /// Levels whose values combine freely with the rest: every box of the joint set has that
    /// level's whole projection, of more than one value, as its side.
    pub fn free_levels(&self) -> Vec<bool> {
        self.free_sides().iter().map(Option::is_some).collect()
    }

    /// For each level, its projection when the level is free ([`JointSet::free_levels`]).
    fn free_sides(&self) -> Vec<Option<DimSet>> {
        let (boxes, complete) = self.tree.boxes(10_000);
        (0..self.sizes.len())
            .map(|l| {
                let proj = self.tree.projection(l).ok()?;
                (complete && proj.count() > 1 && boxes.iter().all(|b| b[l] == proj)).then_some(proj)
            })
            .collect()
    }

    /// The joint set in one sentence, with `labels` naming each size (by name) and sizes listed
    /// in the order of `labels`: "`x[2]` and `x[3]` are linked: this program accepts 1 (`x[2]`, `x[3]`)
    /// pair, 224x224, for `x[0]` in 1..32: export it static".
    pub fn summary(&self, labels: &[(String, String)]) -> String {
        let label = |l: usize| {
            labels
                .iter()
                .find(|(n, _)| *n == self.sizes[l])
                .map_or(self.sizes[l].clone(), |(_, t)| t.clone())
        };
        let rank_of = |l: usize| {
            labels
                .iter()
                .position(|(n, _)| *n == self.sizes[l])
                .unwrap_or(usize::MAX)
        };
        let free = self.free_sides();
        let side = |l: usize| free[l].clone().unwrap_or_default();
        let mut linked: Vec<usize> = (0..self.sizes.len())
            .filter(|&l| free[l].is_none())
            .collect();
        linked.sort_by_key(|&l| rank_of(l));
        let mut frees: Vec<usize> = (0..self.sizes.len())
            .filter(|&l| free[l].is_some())
            .collect();
        frees.sort_by_key(|&l| rank_of(l));
        let count = self.count();
        if count == 0 {
            let what = match &self.undecided {
                // The undecided region is the whole box: the search decided nothing (what Z3 found past
                // it is in the reason).
                Some(u) if u.sides.first() == self.domains.first() => {
                    "the joint search decided none of the combinations of the claimed sizes"
                }
                Some(_) => {
                    "no combination of the decided part of the claimed sizes passes every guard"
                }
                None => "no combination of the claimed sizes passes every guard",
            };
            return format!(
                "{} are linked: {what}",
                join_and(&(0..self.sizes.len()).map(label).collect::<Vec<_>>())
            );
        }
        if linked.is_empty() {
            let names = join_and(&frees.iter().map(|&l| label(l)).collect::<Vec<_>>());
            let sides = frees
                .iter()
                .map(|&l| format!("{} in {}", label(l), brief(&side(l))))
                .collect::<Vec<_>>()
                .join(", ");
            return if self.excludes_some() && self.undecided.is_none() {
                // One box, narrower than the sizes' own answers.
                format!("{names} are linked: this program accepts every combination of {sides}, and no other")
            } else {
                format!("the guards linking {names} hold for every combination of their accepted values: {sides}")
            };
        }
        let free_count: u128 = frees.iter().map(|&l| side(l).count()).product();
        // A saturated count: the quotient is only a lower bound.
        let tuples = if count == u128::MAX && free_count <= 1 {
            u128::MAX
        } else {
            count / free_count.max(1)
        };
        let names: Vec<String> = linked.iter().map(|&l| label(l)).collect();
        let kind = match linked.len() {
            1 => "value",
            2 => "pair",
            3 => "triple",
            _ => "combination",
        };
        let plural = if tuples == 1 { "" } else { "s" };
        let tuple_names = if linked.len() == 1 {
            names[0].clone()
        } else {
            format!("({})", names.join(", "))
        };
        let for_free = if frees.is_empty() {
            String::new()
        } else {
            format!(
                ", for {}",
                frees
                    .iter()
                    .map(|&l| format!("{} in {}", label(l), brief(&side(l))))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        let at_least = if (self.undecided.is_some() || count == u128::MAX) && tuples != u128::MAX {
            "at least "
        } else {
            ""
        };
        let head = if linked.len() == 1 {
            format!(
                "{} is linked to {}",
                names[0],
                join_and(&frees.iter().map(|&l| label(l)).collect::<Vec<_>>())
            )
        } else {
            format!("{} are linked", join_and(&names))
        };
        if tuples <= 3 {
            // List them, in the labels' order.
            let sub = self.linked_tuples(&linked, 3);
            let listed: Vec<String> = sub
                .iter()
                .map(|t| {
                    t.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join("x")
                })
                .collect();
            let advice = if tuples == 1 {
                "export it static".to_string()
            } else {
                format!("export once per {kind}, or pad inputs to one of them")
            };
            format!(
                "{head}: this program accepts {at_least}{tuples} {tuple_names} {kind}{plural}, {}{for_free}: {advice}",
                listed.join(", ")
            )
        } else {
            format!(
                "{head}: this program accepts {at_least}{} {tuple_names} {kind}{plural}{for_free}",
                count_text(tuples)
            )
        }
    }

    /// Distinct tuples of the `levels` (in that order) occurring in the joint set, at most `n`.
    fn linked_tuples(&self, levels: &[usize], n: usize) -> Vec<Vec<i128>> {
        let mut out: Vec<Vec<i128>> = Vec::new();
        for t in self.tree.examples(10_000) {
            let sub: Vec<i128> = levels.iter().map(|&l| t[l]).collect();
            if !out.contains(&sub) {
                out.push(sub);
                if out.len() >= n {
                    break;
                }
            }
        }
        out.sort();
        out
    }
}

/// Every tuple of the box `sides` (one set per level), listed: for small boxes only.
pub fn tuples(sides: &[DimSet]) -> Vec<Vec<i128>> {
    let mut out = vec![vec![]];
    for d in sides {
        out = out
            .into_iter()
            .flat_map(|t| {
                d.iter().map(move |x| {
                    let mut t = t.clone();
                    t.push(x);
                    t
                })
            })
            .collect();
    }
    out
}

fn join_and(v: &[String]) -> String {
    match v {
        [] => String::new(),
        [a] => a.clone(),
        [a @ .., b] => format!("{} and {b}", a.join(", ")),
    }
}
