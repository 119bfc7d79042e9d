//! Merging a diagnosis into the user's own `dynamic_shapes` spec, so the spec a user pastes (or
//! that `dimguard.export` exports with) keeps every input and every dimension the user gave, with
//! shared `Dim`s still shared, and narrows exactly the dimensions the diagnosis constrains.
//!
//! The spec is the one model, [`Sheet`] ([`crate::spec`]). Narrowing an entry to a progression
//! rewrites its *root*, so every other entry that used the same `Dim` follows (they are equal
//! sizes by the user's own spec).

use super::model::{Entry, Root, Sheet, Value};
use crate::forms::fixes::fix_kind;
use crate::message::FixKind;
use dimguard_solver::num::{int_ceildiv, int_floordiv};
use dimguard_solver::python::{py_name, source_input};
use dimguard_solver::report::{DimReport, Report, Status};
use dimguard_solver::Progression;

impl Sheet {
    /// Sets one entry (adding it when the spec did not mention the dimension).
    fn set(&mut self, input: &str, index: usize, value: Value) {
        match self.entry_mut(input, index) {
            Some(e) => {
                e.value = value;
                e.name = None;
            }
            None => self.entries.push(Entry {
                input: input.to_string(),
                index,
                value,
                name: None,
                comment: None,
            }),
        }
    }

    /// Narrows the entry at `(input, index)` to the sizes of `p`, by rewriting its root. Returns
    /// false (and changes nothing) when the entry's values cannot meet `p`.
    fn narrow(&mut self, input: &str, index: usize, fallback_name: &str, p: &Progression) -> bool {
        let value = self.entry_mut(input, index).map(|e| e.value.clone());
        let (root, coef, offset) = match value {
            Some(Value::Dim {
                root, coef, offset, ..
            }) if coef > 0 => (root, coef, offset),
            // Not a Dim yet (AUTO, absent): a new root of its own.
            _ => {
                let name = py_name(fallback_name);
                let name = if self.root(&name).is_some() {
                    self.fresh(&format!("_{name}"))
                } else {
                    name
                };
                self.roots.push(Root::new(&name, None, None));
                self.set(
                    input,
                    index,
                    Value::Dim {
                        root: name.clone(),
                        coef: 1,
                        offset: 0,
                        name: None,
                    },
                );
                (name, 1, 0)
            }
        };
        let Some(r) = self.root(&root).cloned() else {
            return false;
        };
        // coef*k + offset in [lo, hi] and ≡ residue (mod modulus).
        let mut klo = int_ceildiv(p.lo - offset, coef);
        let mut khi = int_floordiv(p.hi - offset, coef).unwrap_or(i128::MIN);
        if let Some(m) = r.min {
            klo = klo.max(m);
        }
        if let Some(m) = r.max {
            khi = khi.min(m);
        }
        let Some((k0, step)) = congruence(coef, p.residue - offset, p.modulus) else {
            return false;
        };
        let jlo = int_ceildiv(klo - k0, step);
        let jhi = int_floordiv(khi - k0, step).unwrap_or(i128::MIN);
        if jlo > jhi {
            return false;
        }
        if step == 1 {
            let r = self
                .roots
                .iter_mut()
                .find(|x| x.name == root)
                .expect("root");
            r.min = Some(klo);
            r.max = Some(khi);
            r.narrowed = None;
            return true;
        }
        // k = step*j + k0: a new root j; every use of the old root becomes derived from it.
        // The new root starts at 2 at least: torch specializes a root traced at 0 or 1 ("You
        // marked 32*_w + 16 as dynamic but your code specialized it to be a constant (48)"),
        // so j is shifted and k0 with it (as `python::dim_code` writes a progression).
        let shift = (2 - jlo).max(0);
        let k0 = k0 - step * shift;
        let new = self.fresh(&format!("_{root}"));
        let pos = self
            .roots
            .iter()
            .position(|x| x.name == root)
            .expect("root");
        self.roots[pos] = Root::new(&new, Some(jlo + shift), Some(jhi + shift));
        for v in self.values_mut() {
            if let Value::Dim {
                root: er,
                coef: c,
                offset: o,
                name,
            } = v
            {
                if *er == root {
                    *o += *c * k0;
                    *c *= step;
                    *er = new.clone();
                    if name.is_none() {
                        *name = Some(root.clone());
                    }
                }
            }
        }
        true
    }

    /// Narrows the entry at `(input, index)` to the sizes of `p` (see [`merge`]), noting what
    /// changed; when no size of the entry can meet `p`, the entry becomes `Dim.STATIC`.
    pub fn narrow_to(&mut self, input: &str, index: usize, name: &str, p: &Progression) {
        let here = format!("{input}[{index}]");
        let before = (self.roots.clone(), self.entries.clone());
        let sizes = |s: &Sheet| s.entry(input, index).and_then(|e| s.admitted(&e.value));
        let sizes_before = sizes(self);
        if self.narrow(input, index, name, p) {
            // The same sizes in another form (`Dim.AUTO(min=96, max=512)` become a `Dim` of
            // 96..512): a guard that removes none of them narrows nothing.
            let same_sizes = sizes_before
                .zip(sizes(self))
                .is_some_and(|(a, b)| a.same_members(&b));
            if same_sizes || (&self.roots, &self.entries) == (&before.0, &before.1) {
                // Every size the spec gives already passes: nothing narrowed, nothing to say.
            } else if p.count() == 1 {
                self.notes
                    .push(format!("{here}: only {} works: static", p.lo));
            } else {
                self.notes.push(format!(
                    "{here}: narrowed to {} values in {}..{}{}",
                    p.count(),
                    p.lo,
                    p.hi,
                    if p.modulus > 1 {
                        format!(" ≡ {} (mod {})", p.residue, p.modulus)
                    } else {
                        String::new()
                    }
                ));
            }
            self.pin_singletons();
        } else {
            self.set(input, index, Value::Static);
            self.notes.push(format!(
                "{here}: the spec's other constraints leave no size the guards accept; Dim.STATIC"
            ));
        }
    }

    /// Every use of `root` (`coef*root + offset`) becomes `value(coef, offset)`; an entry that
    /// gave a derived dim by its name keeps the name (still defined, now as that value).
    fn unroot(&mut self, root: &str, value: impl Fn(i128, i128) -> Value) {
        for e in &mut self.entries {
            if let Value::Dim {
                root: r,
                coef,
                offset,
                name,
            } = &e.value
            {
                if r == root {
                    e.name = name.clone();
                    e.value = value(*coef, *offset);
                }
            }
        }
        for n in &mut self.names {
            if let Value::Dim {
                root: r,
                coef,
                offset,
                ..
            } = &n.value
            {
                if r == root {
                    n.value = value(*coef, *offset);
                }
            }
        }
    }

    /// A root narrowed to one value is no dimension at all (torch refuses a `Dim` whose min is
    /// its max): every entry on it becomes that fixed size, and the root goes.
    fn pin_singletons(&mut self) {
        let pinned: Vec<(String, i128)> = self
            .roots
            .iter()
            .filter_map(|r| match (r.min, r.max) {
                (Some(lo), Some(hi)) if lo == hi => Some((r.name.clone(), lo)),
                _ => None,
            })
            .collect();
        for (root, v) in &pinned {
            self.unroot(root, |coef, offset| Value::Int {
                value: coef * v + offset,
            });
            self.roots.retain(|r| &r.name != root);
        }
    }
}

/// The solutions `k ≡ k0 (mod step)` of `coef*k ≡ rhs (mod modulus)`, `0 <= k0 < step`.
fn congruence(coef: i128, rhs: i128, modulus: i128) -> Option<(i128, i128)> {
    if modulus <= 1 {
        return Some((0, 1));
    }
    let g = gcd(coef.rem_euclid(modulus), modulus);
    let rhs = rhs.rem_euclid(modulus);
    if rhs % g != 0 {
        return None;
    }
    let (m, c, r) = (modulus / g, coef.rem_euclid(modulus) / g, rhs / g);
    // c is invertible mod m.
    let inv = (0..m).find(|&i| (c * i) % m == 1 % m)?;
    Some(((r * inv) % m, m))
}

fn gcd(a: i128, b: i128) -> i128 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

/// Merges a diagnosis into the user's spec: every dimension the diagnosis names is narrowed to
/// its first (sound, maximal) suggestion, made `Dim.STATIC` when the code specialized it, or
/// `Dim.AUTO` (within the user's bounds) when it is undecided; dimensions solved together
/// (linked groups) share one root. Everything else the user gave is kept as given.
pub fn merge(user: &Sheet, report: &Report) -> Sheet {
    let mut sheet = user.clone();
    sheet.notes.clear();
    let located = |d: &DimReport| d.source.as_deref().and_then(source_input);
    let by_name = |n: &str| report.dims.iter().find(|d| d.name == n);
    let mut members: Vec<&str> = Vec::new();
    for g in &report.linked {
        members.extend(g.members.iter().map(|m| m[0].as_str()));
    }
    for d in &report.dims {
        if members.contains(&d.name.as_str()) {
            continue;
        }
        // Without a source, a dimension is found by its Dim's name (torch names it so).
        let by_root = || {
            sheet.entries.iter().find_map(|e| match &e.value {
                Value::Dim {
                    root,
                    coef: 1,
                    offset: 0,
                    ..
                } if *root == d.name => Some((e.input.clone(), e.index)),
                _ => None,
            })
        };
        let Some((input, index)) = located(d).or_else(by_root) else {
            sheet.notes.push(format!(
                "{}: no input of the spec is this dimension ({}); left as given",
                d.name,
                d.source.as_deref().unwrap_or("no source")
            ));
            continue;
        };
        let group = report.linked.iter().find(|g| g.root == d.name);
        let progression = match group {
            Some(g) => g.progression,
            None => d.answer.suggestions.first().map(|s| Progression {
                lo: s.lo,
                hi: s.hi,
                modulus: s.modulus,
                residue: s.residue,
            }),
        };
        let here = format!("{input}[{index}]");
        match (d.status, progression) {
            (Status::Specialized, _) => {
                // Every use of the same Dim is the same size: all become static.
                let root = match sheet.entry_mut(&input, index).map(|e| &e.value) {
                    Some(Value::Dim { root, .. }) => Some(root.clone()),
                    _ => None,
                };
                if let Some(root) = &root {
                    sheet.unroot(root, |_, _| Value::Static);
                    sheet.roots.retain(|r| r.name != *root);
                }
                if sheet.entry(&input, index).map(|e| &e.value) != Some(&Value::Static) {
                    sheet.set(&input, index, Value::Static);
                }
                let hint = match d.specialized {
                    Some(v @ (0 | 1)) => format!(
                        " (torch specializes a size of {v} it was traced with: trace with a size of 2 or more to keep it dynamic)"
                    ),
                    _ => String::new(),
                };
                sheet.notes.push(format!(
                    "{here}: the code specialized it to {}; Dim.STATIC{hint}",
                    d.specialized.map_or("a constant".into(), |v| v.to_string())
                ));
            }
            (Status::Undecided, _) | (_, None) => {
                let (min, max) = d.range.map_or((None, None), |[a, b]| (Some(a), Some(b)));
                sheet.set(&input, index, Value::Auto { min, max });
                sheet.notes.push(format!(
                    "{here}: {}; Dim.AUTO (audit the exported program)",
                    d.undecided.as_deref().unwrap_or("no sound Dim found")
                ));
            }
            (_, Some(p)) => sheet.narrow_to(&input, index, &d.name, &p),
        }
        // Members follow their root: `name = expr(root)`.
        if let Some(g) = group {
            let root_value = sheet
                .entries
                .iter()
                .find(|e| e.input == input && e.index == index)
                .map(|e| e.value.clone());
            for [name, expr] in &g.members {
                let Some(md) = by_name(name) else { continue };
                let Some((mi, mk)) = located(md) else {
                    continue;
                };
                let value = match (&root_value, fix_kind(expr)) {
                    (
                        Some(Value::Dim {
                            root, coef, offset, ..
                        }),
                        Some(FixKind::Derived {
                            coef: a, offset: b, ..
                        }),
                    ) => Value::Dim {
                        root: root.clone(),
                        coef: a * coef,
                        offset: a * offset + b,
                        name: Some(py_name(name)),
                    },
                    (Some(v), _)
                        if expr.trim() == g.root || py_name(expr.trim()) == py_name(&g.root) =>
                    {
                        v.clone()
                    }
                    _ => Value::Auto {
                        min: None,
                        max: None,
                    },
                };
                sheet.set(&mi, mk, value);
                sheet.notes.push(format!(
                    "{mi}[{mk}]: {name} = {expr} (solved with {})",
                    g.root
                ));
            }
        }
    }
    sheet
}

#[cfg(test)]
mod tests {
    use super::*;
    use dimguard_solver::DimSet;

    fn read(text: &str) -> Sheet {
        crate::spec::read(text).unwrap()
    }

    #[test]
    fn narrowing_a_shared_root_rewrites_every_use() {
        let mut s =
            read("h = Dim('h', min=135, max=2160)\ndynamic_shapes = {'image1': {2: h}, 'image2': {2: h}}\n");
        let p = Progression {
            lo: 136,
            hi: 2120,
            modulus: 64,
            residue: 8,
        };
        assert!(s.narrow("image1", 2, "h", &p));
        assert_eq!(
            s.code(),
            "from torch.export import Dim\n\n_h = Dim('_h', min=2, max=33)\nh = 64*_h + 8\n\ndynamic_shapes = {\"image1\": {2: h}, \"image2\": {2: h}}"
        );
        // Every admitted value is in the progression, and every progression value is admitted.
        let admitted: Vec<i128> = (2..=33).map(|j| 64 * j + 8).collect();
        let wanted: Vec<i128> = (136..=2120).filter(|x| x % 64 == 8).collect();
        assert_eq!(admitted, wanted);
    }

    #[test]
    fn narrowing_to_one_value_pins_every_use_of_the_root() {
        // h = 32*_h shared by two inputs; only 224 works: both become 224 and `_h` goes
        // (torch refuses a Dim whose min is its max). The dict still gives them as `h`.
        let mut s = read("_h = Dim('_h', min=1, max=16)\nh = 32*_h\nbatch = Dim('batch', min=1, max=32)\ndynamic_shapes = {'a': {2: h, 0: batch}, 'b': {2: h}}\n");
        s.narrow_to(
            "a",
            2,
            "h",
            &Progression {
                lo: 224,
                hi: 224,
                modulus: 1,
                residue: 0,
            },
        );
        assert!(s.roots.iter().all(|r| r.name != "_h"), "{:?}", s.roots);
        for e in s.entries.iter().filter(|e| e.index == 2) {
            assert!(
                matches!(e.value, Value::Int { value: 224 }),
                "{:?}",
                e.value
            );
        }
        assert_eq!(s.notes, ["a[2]: only 224 works: static"]);
        assert_eq!(
            s.code(),
            "from torch.export import Dim\n\nbatch = Dim('batch', min=1, max=32)\nh = 224\n\ndynamic_shapes = {\"a\": {0: batch, 2: h}, \"b\": {2: h}}"
        );
    }

    #[test]
    fn a_progression_holding_every_size_of_the_entry_is_not_called_narrowing() {
        // Dim.AUTO over 96..512 and every size passes (a guard true on the whole range): the
        // entry becomes a Dim of the same sizes, with no "narrowed to 417 values" note.
        let mut s = read("dynamic_shapes = {'x': {2: Dim.AUTO}}\n");
        s.entries[0].value = Value::Auto {
            min: Some(96),
            max: Some(512),
        };
        let all = Progression {
            lo: 96,
            hi: 512,
            modulus: 1,
            residue: 0,
        };
        s.narrow_to("x", 2, "h", &all);
        let e = s.entry("x", 2).unwrap();
        let admitted = s.admitted(&e.value).unwrap();
        assert!(admitted.same_members(&DimSet::interval(96, 512)), "{e:?}");
        assert!(s.notes.is_empty(), "{:?}", s.notes);
        // A progression that removes sizes still says so.
        s.narrow_to(
            "x",
            2,
            "h",
            &Progression {
                lo: 96,
                hi: 512,
                modulus: 8,
                residue: 0,
            },
        );
        assert_eq!(
            s.notes,
            ["x[2]: narrowed to 53 values in 96..512 ≡ 0 (mod 8)"]
        );
    }

    #[test]
    fn narrowing_a_derived_entry_solves_the_congruence() {
        // x = 2*k + 1, k in 1..100; want x ≡ 3 (mod 4) in 10..150.
        let mut s =
            read("k = Dim('k', min=1, max=100)\ns = 2*k + 1\ndynamic_shapes = {'x': {1: s}}\n");
        let p = Progression {
            lo: 10,
            hi: 150,
            modulus: 4,
            residue: 3,
        };
        assert!(s.narrow("x", 1, "s", &p));
        let (r, e) = (&s.roots[0], &s.entries[0].value);
        let Value::Dim { coef, offset, .. } = e else {
            panic!()
        };
        let got: Vec<i128> = (r.min.unwrap()..=r.max.unwrap())
            .map(|j| coef * j + offset)
            .collect();
        let want: Vec<i128> = (1..=100)
            .map(|k| 2 * k + 1)
            .filter(|x| (10..=150).contains(x) && x % 4 == 3)
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn congruences_against_brute_force() {
        for m in 1i128..13 {
            for c in 1i128..13 {
                for r in 0..m {
                    let brute: Vec<i128> = (0i128..200)
                        .filter(|k| (c * k - r).rem_euclid(m) == 0)
                        .collect();
                    match congruence(c, r, m) {
                        None => assert!(brute.is_empty(), "{c}*k ≡ {r} (mod {m})"),
                        Some((k0, step)) => {
                            let got: Vec<i128> = (0..200)
                                .filter(|k| (k - k0).rem_euclid(step) == 0)
                                .collect();
                            assert_eq!(got, brute, "{c}*k ≡ {r} (mod {m})");
                        }
                    }
                }
            }
        }
    }
}
