//! TensorRT optimization profiles from exact sets of accepted sizes.
//!
//! TensorRT builds an engine for boxes of shapes (min, opt, max per dimension). A box cannot say
//! "only heights ≡ 8 (mod 64)", so dimguard makes every corner of every box an accepted size:
//! `min` the smallest accepted size of its bucket, `max` the largest, `opt` the traced size when
//! it lies in the bucket, else the accepted size nearest the bucket's middle. Sizes linked by an
//! equality share one dimension ([`DimKind::Same`]) and get equal values in every profile.
//! [`ProfileSet::select`] then turns a shape into its profile, or into an error that says what
//! to do — the actionable version of TensorRT's "does not satisfy any optimization profile".

use dimguard_solver::DimSet;
use serde::Serialize;
use std::fmt;

/// One dimension of an input.
#[derive(Debug, Clone, PartialEq)]
pub enum DimKind {
    /// A fixed size.
    Static(i128),
    /// A dynamic size: its exact accepted set and the traced size, if known.
    Dynamic {
        /// Accepted sizes.
        accepted: DimSet,
        /// The traced (example) size.
        example: Option<i128>,
    },
    /// Always equal to another dimension: `(input, index)`.
    Same(String, usize),
}

/// An input of the engine.
#[derive(Debug, Clone, PartialEq)]
pub struct InputSpec {
    /// Input (binding) name.
    pub name: String,
    /// Its dimensions, in order.
    pub dims: Vec<DimKind>,
}

/// min/opt/max shapes of one input in one profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Triple {
    /// Smallest shape.
    pub min: Vec<i128>,
    /// The shape TensorRT optimizes for.
    pub opt: Vec<i128>,
    /// Largest shape.
    pub max: Vec<i128>,
}

/// One optimization profile: a triple per input, in input order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Profile {
    /// `(input name, shapes)`.
    pub inputs: Vec<(String, Triple)>,
}

/// Profiles in the order they would be added to the builder configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSet {
    /// The profiles.
    pub profiles: Vec<Profile>,
    /// The inputs they were built from (for [`ProfileSet::select`]).
    pub inputs: Vec<InputSpec>,
    /// Per profile of a cover ([`ProfileSet::cover`]): the sizes of each dynamic dimension
    /// `(input index, dimension)` it serves, one progression each. Empty otherwise: every
    /// profile serves the whole accepted set inside its box.
    pub pieces: Vec<Vec<((usize, usize), DimSet)>>,
}

/// Why profiles could not be built, or a shape has none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// An accepted set is empty: no engine can serve this input.
    #[error("input `{input}` dimension {index}: no accepted size, so no profile can serve it")]
    EmptyDim {
        /// Input.
        input: String,
        /// Dimension.
        index: usize,
    },
    /// A `Same` link points nowhere.
    #[error("input `{input}` dimension {index} is tied to `{other}` dimension {other_index}, which does not exist")]
    BadLink {
        /// Input.
        input: String,
        /// Dimension.
        index: usize,
        /// Linked input.
        other: String,
        /// Linked dimension.
        other_index: usize,
    },
    /// TensorRT's rules for a profile do not hold (a bug if it ever happens).
    #[error("profile {profile}: {rule}")]
    Invalid {
        /// Profile index.
        profile: usize,
        /// The rule broken.
        rule: String,
    },
    /// A shape for an unknown input, or of the wrong rank.
    #[error("input `{input}`: {message}")]
    Shape {
        /// Input.
        input: String,
        /// What is wrong.
        message: String,
    },
    /// A shape no profile serves.
    #[error("{0}")]
    NoProfile(NoProfile),
}

/// The actionable "does not satisfy any optimization profile".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoProfile {
    /// Input.
    pub input: String,
    /// Dimension.
    pub index: usize,
    /// The size given.
    pub value: i128,
    /// Nearest accepted size below.
    pub below: Option<i128>,
    /// Nearest accepted size above.
    pub above: Option<i128>,
}

impl fmt::Display for NoProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "input `{}` dimension {} = {} is not a size the program accepts",
            self.input, self.index, self.value
        )?;
        match (self.below, self.above) {
            (b, Some(a)) => {
                write!(f, "; nearest accepted: ")?;
                if let Some(b) = b {
                    write!(f, "{b} below, ")?;
                }
                write!(f, "{a} above: pad by {} to {a}", a - self.value)
            }
            (Some(b), None) => write!(
                f,
                "; the largest accepted size is {b}: crop or resize to it"
            ),
            (None, None) => write!(f, "; no size is accepted"),
        }
    }
}

/// The `k`-th member of a set (0-based), in increasing order.
pub fn nth(set: &DimSet, mut k: u128) -> Option<i128> {
    for s in set.segments() {
        let c = s.count();
        if k >= c {
            k -= c;
            continue;
        }
        let m = s.modulus;
        let base = s.lo - s.lo.rem_euclid(m);
        let p0 = s.residues.iter().position(|&r| r == s.lo.rem_euclid(m))? as u128;
        let n = s.residues.len() as u128;
        let t = p0 + k;
        return Some(base + (t / n) as i128 * m + s.residues[(t % n) as usize]);
    }
    None
}

/// Splits an accepted set into `k` buckets of about equal count; pieces separated by a gap
/// wider than the set's period always get their own buckets.
pub fn buckets(set: &DimSet, k: usize) -> Vec<DimSet> {
    let period = set.period();
    // Pieces: maximal runs without a gap wider than the period.
    let mut pieces: Vec<DimSet> = Vec::new();
    let mut start: Option<i128> = None;
    let mut prev: Option<i128> = None;
    for seg in set.segments() {
        if let (Some(p), Some(s)) = (prev, start) {
            if seg.lo - p > period {
                pieces.push(set.clip(s, p));
                start = None;
            }
        }
        start.get_or_insert(seg.lo);
        prev = Some(seg.hi);
    }
    if let (Some(s), Some(p)) = (start, prev) {
        pieces.push(set.clip(s, p));
    }
    let total: u128 = set.count();
    let k = k.max(1).max(pieces.len());
    let mut out = Vec::new();
    for piece in pieces {
        let c = piece.count();
        // This piece's share of the buckets, at least one.
        let share = ((c * k as u128).div_ceil(total.max(1)) as usize).clamp(1, k);
        for i in 0..share {
            let a = c * i as u128 / share as u128;
            let b = c * (i as u128 + 1) / share as u128;
            if b == a {
                continue;
            }
            let (lo, hi) = (
                nth(&piece, a).expect("in range"),
                nth(&piece, b - 1).expect("in range"),
            );
            out.push(piece.clip(lo, hi));
        }
    }
    out
}

/// min, opt and max of a bucket: all accepted.
fn corners(bucket: &DimSet, example: Option<i128>) -> (i128, i128, i128) {
    let (lo, hi) = (
        bucket.min().expect("non-empty"),
        bucket.max().expect("non-empty"),
    );
    let opt = match example.filter(|e| bucket.contains(*e)) {
        Some(e) => e,
        None => {
            let mid = lo + (hi - lo) / 2;
            let up = bucket.next_at_least(mid);
            let down = bucket.prev_at_most(mid);
            match (down, up) {
                (Some(d), Some(u)) => {
                    if mid - d <= u - mid {
                        d
                    } else {
                        u
                    }
                }
                (Some(d), None) => d,
                (None, Some(u)) => u,
                (None, None) => lo,
            }
        }
    };
    (lo, opt, hi)
}

/// A dynamic dimension `(input index, dimension)` and its buckets' `(min, opt, max)`.
type Axis = ((usize, usize), Vec<(i128, i128, i128)>);

impl ProfileSet {
    /// Builds profiles: `k` buckets per dynamic dimension (more where the accepted set has
    /// disjoint pieces), one profile per combination of buckets.
    pub fn build(inputs: &[InputSpec], k: usize) -> Result<ProfileSet, Error> {
        // The independent dynamic dimensions and their buckets.
        let mut axes: Vec<Axis> = Vec::new();
        for (ii, inp) in inputs.iter().enumerate() {
            for (d, kind) in inp.dims.iter().enumerate() {
                match kind {
                    DimKind::Dynamic { accepted, example } => {
                        if accepted.is_empty() {
                            return Err(Error::EmptyDim {
                                input: inp.name.clone(),
                                index: d,
                            });
                        }
                        let bs: Vec<_> = buckets(accepted, k)
                            .iter()
                            .map(|b| corners(b, *example))
                            .collect();
                        axes.push(((ii, d), bs));
                    }
                    DimKind::Same(other, od) => {
                        let ok = inputs
                            .iter()
                            .find(|i| &i.name == other)
                            .and_then(|i| i.dims.get(*od))
                            .is_some_and(|k| {
                                matches!(k, DimKind::Dynamic { .. } | DimKind::Static(_))
                            });
                        if !ok {
                            return Err(Error::BadLink {
                                input: inp.name.clone(),
                                index: d,
                                other: other.clone(),
                                other_index: *od,
                            });
                        }
                    }
                    DimKind::Static(_) => {}
                }
            }
        }
        // Cartesian product of the axes' buckets.
        let mut combos: Vec<Vec<usize>> = vec![vec![]];
        for (_, bs) in &axes {
            combos = combos
                .into_iter()
                .flat_map(|c| (0..bs.len()).map(move |b| [c.clone(), vec![b]].concat()))
                .collect();
        }
        Self::assemble(inputs, &axes, &combos, Vec::new())
    }

    /// One profile per piece of a cover: each dynamic dimension's accepted set split into
    /// disjoint progressions ([`dimguard_solver::progression_cover`], largest first), combined
    /// across dimensions, the `n` largest combinations kept. Every size a profile lists is
    /// accepted, its corners included, and [`ProfileSet::select`] sends a shape to the profile
    /// whose pieces hold it. Together they serve as many accepted sizes as `n` progressions can.
    pub fn cover(inputs: &[InputSpec], n: usize) -> Result<ProfileSet, Error> {
        let n = n.max(1);
        let mut axes: Vec<Axis> = Vec::new();
        let mut sets: Vec<Vec<DimSet>> = Vec::new();
        for (ii, inp) in inputs.iter().enumerate() {
            for (d, kind) in inp.dims.iter().enumerate() {
                if let DimKind::Dynamic { accepted, example } = kind {
                    let pieces = dimguard_solver::progression_cover(accepted, *example, n);
                    if pieces.is_empty() {
                        return Err(Error::EmptyDim {
                            input: inp.name.clone(),
                            index: d,
                        });
                    }
                    let pieces: Vec<DimSet> = pieces.iter().map(|p| p.to_set()).collect();
                    axes.push((
                        (ii, d),
                        pieces.iter().map(|b| corners(b, *example)).collect(),
                    ));
                    sets.push(pieces);
                }
            }
        }
        Self::build(inputs, 1)?; // the links and ranks, checked as for any profile set
                                 // The largest combinations first (disjoint pieces: a combination's count is the
                                 // product of its pieces').
        let counts: Vec<Vec<u128>> = sets
            .iter()
            .map(|pieces| pieces.iter().map(DimSet::count).collect())
            .collect();
        let combos = dimguard_solver::largest_combinations(&counts, n);
        let chosen: Vec<Vec<usize>> = combos.into_iter().map(|(_, c)| c).collect();
        let pieces = chosen
            .iter()
            .map(|combo| {
                axes.iter()
                    .zip(combo)
                    .zip(&sets)
                    .map(|(((key, _), &i), s)| (*key, s[i].clone()))
                    .collect()
            })
            .collect();
        Self::assemble(inputs, &axes, &chosen, pieces)
    }

    fn assemble(
        inputs: &[InputSpec],
        axes: &[Axis],
        combos: &[Vec<usize>],
        pieces: Vec<Vec<((usize, usize), DimSet)>>,
    ) -> Result<ProfileSet, Error> {
        let value = |ii: usize, d: usize, combo: &[usize], which: usize| -> i128 {
            let lookup = |ii: usize, d: usize| -> i128 {
                match &inputs[ii].dims[d] {
                    DimKind::Static(n) => *n,
                    _ => {
                        let ax = axes
                            .iter()
                            .position(|(key, _)| *key == (ii, d))
                            .expect("an axis");
                        let (lo, opt, hi) = axes[ax].1[combo[ax]];
                        [lo, opt, hi][which]
                    }
                }
            };
            match &inputs[ii].dims[d] {
                DimKind::Same(other, od) => {
                    let oi = inputs
                        .iter()
                        .position(|i| &i.name == other)
                        .expect("checked");
                    lookup(oi, *od)
                }
                _ => lookup(ii, d),
            }
        };
        let profiles: Vec<Profile> = combos
            .iter()
            .map(|combo| Profile {
                inputs: inputs
                    .iter()
                    .enumerate()
                    .map(|(ii, inp)| {
                        let shape = |w: usize| {
                            (0..inp.dims.len())
                                .map(|d| value(ii, d, combo, w))
                                .collect()
                        };
                        (
                            inp.name.clone(),
                            Triple {
                                min: shape(0),
                                opt: shape(1),
                                max: shape(2),
                            },
                        )
                    })
                    .collect(),
            })
            .collect();
        let set = ProfileSet {
            profiles,
            inputs: inputs.to_vec(),
            pieces,
        };
        set.validate()?;
        Ok(set)
    }

    /// TensorRT's rules: same rank per input, `0 <= min <= opt <= max`, static dims equal.
    pub fn validate(&self) -> Result<(), Error> {
        for (pi, p) in self.profiles.iter().enumerate() {
            for ((name, t), inp) in p.inputs.iter().zip(&self.inputs) {
                let r = inp.dims.len();
                if t.min.len() != r || t.opt.len() != r || t.max.len() != r {
                    return Err(Error::Invalid {
                        profile: pi,
                        rule: format!("`{name}`: min/opt/max must have rank {r}"),
                    });
                }
                for d in 0..r {
                    let (a, o, b) = (t.min[d], t.opt[d], t.max[d]);
                    if !(0 <= a && a <= o && o <= b) {
                        return Err(Error::Invalid {
                            profile: pi,
                            rule: format!(
                                "`{name}`[{d}]: need 0 <= min <= opt <= max, got {a}, {o}, {b}"
                            ),
                        });
                    }
                    if let DimKind::Static(n) = inp.dims[d] {
                        if a != n || o != n || b != n {
                            return Err(Error::Invalid {
                                profile: pi,
                                rule: format!("`{name}`[{d}] is static ({n})"),
                            });
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The first profile whose box holds `shapes` (input name -> shape) and whose dimensions
    /// accept every size; otherwise what to do about the first size no profile serves.
    pub fn select(&self, shapes: &[(&str, Vec<i128>)]) -> Result<usize, Error> {
        for (name, shape) in shapes {
            let inp = self
                .inputs
                .iter()
                .find(|i| i.name == *name)
                .ok_or_else(|| Error::Shape {
                    input: name.to_string(),
                    message: format!(
                        "unknown input; the engine's inputs are {}",
                        self.inputs
                            .iter()
                            .map(|i| i.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                })?;
            if shape.len() != inp.dims.len() {
                return Err(Error::Shape {
                    input: name.to_string(),
                    message: format!(
                        "rank {} given, the engine expects {}",
                        shape.len(),
                        inp.dims.len()
                    ),
                });
            }
            for (d, (&v, kind)) in shape.iter().zip(&inp.dims).enumerate() {
                let accepted = match kind {
                    DimKind::Static(n) => DimSet::interval(*n, *n),
                    DimKind::Dynamic { accepted, .. } => accepted.clone(),
                    DimKind::Same(o, od) => {
                        let want = shapes
                            .iter()
                            .find(|(n, _)| n == o)
                            .and_then(|(_, s)| s.get(*od))
                            .copied();
                        if let Some(w) = want.filter(|w| *w != v) {
                            return Err(Error::Shape {
                                input: name.to_string(),
                                message: format!(
                                    "dimension {d} = {v} must equal `{o}` dimension {od} = {w}"
                                ),
                            });
                        }
                        continue;
                    }
                };
                if !accepted.contains(v) {
                    return Err(Error::NoProfile(NoProfile {
                        input: name.to_string(),
                        index: d,
                        value: v,
                        below: accepted.prev_at_most(v),
                        above: accepted.next_at_least(v),
                    }));
                }
            }
        }
        let inside = |p: &Profile| {
            shapes.iter().all(|(name, shape)| {
                p.inputs
                    .iter()
                    .find(|(n, _)| n == name)
                    .is_some_and(|(_, t)| {
                        shape
                            .iter()
                            .enumerate()
                            .all(|(d, &v)| t.min[d] <= v && v <= t.max[d])
                    })
            })
        };
        // A cover's profile serves only its pieces.
        let in_pieces = |pi: usize| {
            self.pieces.get(pi).is_none_or(|ps| {
                ps.iter().all(|((ii, d), set)| {
                    shapes
                        .iter()
                        .find(|(n, _)| *n == self.inputs[*ii].name)
                        .and_then(|(_, shape)| shape.get(*d))
                        .is_none_or(|v| set.contains(*v))
                })
            })
        };
        let found =
            (0..self.profiles.len()).find(|&pi| inside(&self.profiles[pi]) && in_pieces(pi));
        if found.is_none() && !self.pieces.is_empty() {
            return Err(Error::Shape {
                input: shapes.first().map_or(String::new(), |s| s.0.to_string()),
                message: format!(
                    "every size is accepted but none of the cover's {} profiles holds this combination; build with a larger --cover",
                    self.profiles.len()
                ),
            });
        }
        found.ok_or_else(|| Error::Shape {
            input: shapes.first().map_or(String::new(), |s| s.0.to_string()),
            message: "every size is accepted but no profile's box holds this combination; build with more profiles (--profiles)".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dimguard_solver::Segment;
    use proptest::prelude::*;

    fn raft() -> Vec<InputSpec> {
        let h = DimSet::progression(136, 2120, 64, 8);
        let w = DimSet::progression(192, 3840, 64, 0);
        vec![
            InputSpec {
                name: "image1".into(),
                dims: vec![
                    DimKind::Static(1),
                    DimKind::Static(3),
                    DimKind::Dynamic {
                        accepted: h,
                        example: Some(520),
                    },
                    DimKind::Dynamic {
                        accepted: w,
                        example: Some(960),
                    },
                ],
            },
            InputSpec {
                name: "image2".into(),
                dims: vec![
                    DimKind::Static(1),
                    DimKind::Static(3),
                    DimKind::Same("image1".into(), 2),
                    DimKind::Same("image1".into(), 3),
                ],
            },
        ]
    }

    #[test]
    fn raft_profile_corners_are_accepted() {
        let p = ProfileSet::build(&raft(), 1).unwrap();
        assert_eq!(p.profiles.len(), 1);
        let t = &p.profiles[0].inputs[0].1;
        assert_eq!(t.min, vec![1, 3, 136, 192]);
        assert_eq!(t.opt, vec![1, 3, 520, 960]);
        assert_eq!(t.max, vec![1, 3, 2120, 3840]);
        assert_eq!(p.profiles[0].inputs[1].1, *t, "image2 equals image1");
        assert_eq!(
            p.select(&[
                ("image1", vec![1, 3, 520, 960]),
                ("image2", vec![1, 3, 520, 960])
            ]),
            Ok(0)
        );
        let e = p.select(&[("image1", vec![1, 3, 530, 960])]).unwrap_err();
        assert_eq!(e.to_string(), "input `image1` dimension 2 = 530 is not a size the program accepts; nearest accepted: 520 below, 584 above: pad by 54 to 584");
        let e = p
            .select(&[
                ("image1", vec![1, 3, 520, 960]),
                ("image2", vec![1, 3, 584, 960]),
            ])
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("must equal `image1` dimension 2 = 520"),
            "{e}"
        );
    }

    #[test]
    fn disjoint_pieces_get_their_own_profiles() {
        let set = DimSet::from_segments(vec![
            Segment {
                lo: 100,
                hi: 200,
                modulus: 4,
                residues: vec![0],
            },
            Segment {
                lo: 900,
                hi: 1000,
                modulus: 4,
                residues: vec![0],
            },
        ])
        .unwrap();
        let b = buckets(&set, 1);
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].min(), b[0].max(), b[1].min(), b[1].max()),
            (Some(100), Some(200), Some(900), Some(1000))
        );
    }

    proptest! {
        #[test]
        fn every_corner_is_accepted(
            segs in prop::collection::vec((0i128..500, 0i128..300, 1i128..9, prop::collection::vec(0i128..8, 1..4)), 1..4),
            k in 1usize..6, ex in 0i128..900,
        ) {
            let set = DimSet::from_segments(segs.into_iter().map(|(lo, w, m, rs)| Segment { lo, hi: lo + w, modulus: m, residues: rs }).collect()).unwrap();
            prop_assume!(!set.is_empty());
            let inputs = vec![InputSpec { name: "x".into(), dims: vec![DimKind::Static(2), DimKind::Dynamic { accepted: set.clone(), example: Some(ex) }] }];
            let p = ProfileSet::build(&inputs, k).unwrap();
            let mut covered = 0u128;
            for prof in &p.profiles {
                let t = &prof.inputs[0].1;
                for v in [t.min[1], t.opt[1], t.max[1]] {
                    prop_assert!(set.contains(v), "corner {} not accepted", v);
                }
                covered += set.clip(t.min[1], t.max[1]).count();
            }
            // Buckets partition the accepted set.
            prop_assert_eq!(covered, set.count());
            // Every accepted size selects a profile.
            for v in set.iter().take(200) {
                prop_assert!(p.select(&[("x", vec![2, v])]).is_ok());
            }
        }

        /// A cover: every corner of every profile lies in that profile's piece and is
        /// accepted; pieces of different profiles are disjoint; a pair of sizes selects a
        /// profile exactly when some profile's pieces hold it (brute force over both axes),
        /// and that profile's pieces hold it.
        #[test]
        fn cover_profiles_serve_exactly_their_pieces(
            a in prop::collection::vec((0i128..200, 0i128..120, 1i128..9, prop::collection::vec(0i128..8, 1..4)), 1..3),
            b in prop::collection::vec((0i128..200, 0i128..120, 1i128..9, prop::collection::vec(0i128..8, 1..4)), 1..3),
            n in 1usize..7, ex in 0i128..300,
        ) {
            let set = |segs: Vec<(i128, i128, i128, Vec<i128>)>| DimSet::from_segments(segs.into_iter().map(|(lo, w, m, rs)| Segment { lo, hi: lo + w, modulus: m, residues: rs }).collect()).unwrap();
            let (h, w) = (set(a), set(b));
            prop_assume!(!h.is_empty() && !w.is_empty());
            let inputs = vec![InputSpec { name: "x".into(), dims: vec![
                DimKind::Static(1),
                DimKind::Dynamic { accepted: h.clone(), example: Some(ex) },
                DimKind::Dynamic { accepted: w.clone(), example: None },
            ] }];
            let p = ProfileSet::cover(&inputs, n).unwrap();
            prop_assert!(!p.profiles.is_empty());
            prop_assert!(p.profiles.len() <= n);
            prop_assert_eq!(p.pieces.len(), p.profiles.len());
            for (prof, pieces) in p.profiles.iter().zip(&p.pieces) {
                let t = &prof.inputs[0].1;
                for ((_, d), piece) in pieces {
                    let whole = if *d == 1 { &h } else { &w };
                    prop_assert!(piece.is_subset(whole).unwrap());
                    for v in [t.min[*d], t.opt[*d], t.max[*d]] {
                        prop_assert!(piece.contains(v), "corner {} outside its piece", v);
                    }
                }
            }
            let holds = |pi: usize, x: i128, y: i128| p.pieces[pi][0].1.contains(x) && p.pieces[pi][1].1.contains(y);
            for i in 0..p.pieces.len() {
                for j in i + 1..p.pieces.len() {
                    let disjoint = p.pieces[i].iter().zip(&p.pieces[j]).any(|((_, s), (_, t))| s.intersect(t).unwrap().is_empty());
                    prop_assert!(disjoint, "profiles {} and {} overlap", i, j);
                }
            }
            for x in 0..=330 {
                for y in 0..=330 {
                    let served = (0..p.pieces.len()).find(|&pi| holds(pi, x, y));
                    match p.select(&[("x", vec![1, x, y])]) {
                        Ok(pi) => prop_assert!(holds(pi, x, y), "({}, {}) sent to profile {}", x, y, pi),
                        Err(_) => prop_assert!(served.is_none(), "({}, {}) refused but profile {:?} serves it", x, y, served),
                    }
                }
            }
        }

        #[test]
        fn nth_matches_iteration(segs in prop::collection::vec((0i128..500, 0i128..300, 1i128..9, prop::collection::vec(0i128..8, 1..4)), 1..4)) {
            let set = DimSet::from_segments(segs.into_iter().map(|(lo, w, m, rs)| Segment { lo, hi: lo + w, modulus: m, residues: rs }).collect()).unwrap();
            for (i, v) in set.iter().enumerate() {
                prop_assert_eq!(nth(&set, i as u128), Some(v));
            }
            prop_assert_eq!(nth(&set, set.count()), None);
        }
    }
}
