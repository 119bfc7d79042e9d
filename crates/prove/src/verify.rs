//! `dimguard verify`: is a user's `dynamic_shapes` spec sound for some guards, with a proof or
//! counterexamples, and what is the maximal sound spec?

use crate::{check_box, check_set, JointVerdict, Verdict};
use dimguard_solver::compiled::RECHECK_LIMIT;
use dimguard_solver::engine::{solve, Limits};
use dimguard_solver::joint;
use dimguard_solver::message::{self, Message};
use dimguard_solver::python::dim_code;
use dimguard_solver::report::{Certificate, JointCheck, VerifyDim, VerifyReport};
use dimguard_solver::spec::Spec;
use dimguard_solver::suggest::rank;
use dimguard_solver::types::{DimSet, Expr};
use dimguard_solver::{parse_guard, Error, ParseError};

/// The guards to verify against: from an error message, or one guard per line.
#[derive(Debug, Clone)]
pub struct GuardSet {
    /// Per size: its name, source and guards.
    pub dims: Vec<(String, Option<String>, Vec<Expr>)>,
    /// Guards over several sizes (not decided here).
    pub joint: Vec<String>,
}

impl GuardSet {
    /// Reads a message, or else a file of guard lines (`#` starts a comment).
    pub fn read(text: &str) -> Result<GuardSet, Error> {
        match message::read(text) {
            Ok(msg) => Ok(GuardSet::from_message(&msg)),
            Err(Error::Message(_)) => GuardSet::from_lines(text),
            Err(e) => Err(e),
        }
    }

    fn from_message(msg: &Message) -> GuardSet {
        let dims = msg
            .dims
            .iter()
            .map(|d| {
                (
                    d.name.clone(),
                    d.source.clone(),
                    d.guards.iter().map(|g| g.expr.clone()).collect(),
                )
            })
            .collect();
        GuardSet {
            dims,
            joint: vec![],
        }
    }

    fn from_lines(text: &str) -> Result<GuardSet, Error> {
        let mut set = GuardSet {
            dims: vec![],
            joint: vec![],
        };
        for (no, line) in text.lines().enumerate() {
            let g = line.split_once('#').map_or(line, |(a, _)| a).trim();
            if g.is_empty() {
                continue;
            }
            let e = parse_guard(g).map_err(|error| Error::Guard {
                dim: "?".into(),
                line: no + 1,
                error: Box::new(error),
            })?;
            let atoms = e.atoms();
            match atoms.len() {
                0 => {}
                1 => {
                    let a = atoms.into_iter().next().expect("one atom").to_string();
                    match set.dims.iter_mut().find(|d| d.0 == a) {
                        Some(d) => d.2.push(e),
                        None => set.dims.push((a.clone(), Some(a), vec![e])),
                    }
                }
                _ => {
                    // Each linked size is a dimension too (with no one-size guard of its own).
                    for a in atoms {
                        if !set.dims.iter().any(|d| *d.0 == *a) {
                            set.dims.push((a.to_string(), Some(a.to_string()), vec![]));
                        }
                    }
                    set.joint.push(g.to_string())
                }
            }
        }
        if set.dims.is_empty() && set.joint.is_empty() {
            return Err(Error::Parse(ParseError::new(
                "no guard found: expected an error message or one guard per line",
                text,
                0,
                0,
            )));
        }
        Ok(set)
    }
}

/// Verifies `spec` against `guards`.
pub fn verify(guards: &GuardSet, spec: &Spec, timeout_ms: u32) -> VerifyReport {
    let limits = Limits::default();
    let mut dims = Vec::new();
    for (name, source, gs) in &guards.dims {
        let Some(sd) = spec.lookup(name, source.as_deref()) else {
            continue;
        };
        let Some(admitted) = &sd.admitted else {
            continue;
        };
        let var = source.clone().unwrap_or_else(|| name.clone());
        let refs: Vec<&Expr> = gs.iter().collect();
        // The exact engine: the passing members of the admitted set.
        let passing = refs.iter().try_fold(admitted.clone(), |acc, g| {
            solve(g, &var, &acc, &limits)
                .set()
                .and_then(|s| acc.intersect(s).ok())
        });
        let failing_set = passing.as_ref().and_then(|p| admitted.difference(p).ok());
        let verdict = check_set(&refs, &var, admitted, 5, timeout_ms);
        let mut d = VerifyDim {
            name: name.clone(),
            sound: None,
            admitted: admitted.count(),
            failing: failing_set.as_ref().map(DimSet::count),
            counterexamples: vec![],
            certificate: Certificate::None,
            source: source.clone(),
            spec: sd.code.clone(),
            maximal_spec: None,
            note: None,
        };
        match verdict {
            Verdict::Proved => {
                d.sound = Some(true);
                d.certificate = Certificate::Z3;
            }
            Verdict::Refuted(xs) => {
                d.sound = Some(false);
                d.certificate = Certificate::Z3;
                d.counterexamples = xs;
            }
            Verdict::Unknown(why) => {
                d.note = Some(why);
                if let Some(f) = &failing_set {
                    if admitted.count() <= RECHECK_LIMIT {
                        d.sound = Some(f.is_empty());
                        d.certificate = Certificate::Enumeration;
                        d.counterexamples = f.iter().take(5).collect();
                    }
                }
            }
        }
        // The largest sound spec within the admitted range.
        if let (Some(lo), Some(hi)) = (admitted.min(), admitted.max()) {
            let range = DimSet::interval(lo, hi);
            let feasible = refs.iter().try_fold(range.clone(), |acc, g| {
                solve(g, &var, &range, &limits)
                    .set()
                    .and_then(|s| acc.intersect(s).ok())
            });
            if let Some(best) =
                feasible.and_then(|f| rank(&f, None, 1).progressions.first().copied())
            {
                d.maximal_spec = Some(dim_code(&sd.name, &best));
            }
        }
        dims.push(d);
    }
    let joint: Vec<JointCheck> = guards
        .joint
        .iter()
        .map(|g| joint_check(g, spec, timeout_ms))
        .collect();
    joint_maximal(guards, spec, &mut dims, &limits);
    let all: Vec<Option<bool>> = dims
        .iter()
        .map(|d| d.sound)
        .chain(joint.iter().map(|j| j.sound))
        .collect();
    let sound = if all.contains(&Some(false)) {
        Some(false)
    } else if !all.is_empty() && all.iter().all(|v| *v == Some(true)) {
        Some(true)
    } else {
        None
    };
    VerifyReport {
        sound,
        dims,
        joint,
        unrecognized: spec.unrecognized.clone(),
    }
}

/// With guards linking sizes, the maximal spec of each linked size must hold for every value of
/// the others: solve the groups jointly within the spec's ranges and replace `maximal_spec`.
fn joint_maximal(guards: &GuardSet, spec: &Spec, dims: &mut [VerifyDim], limits: &Limits) {
    if guards.joint.is_empty() {
        return;
    }
    let mut all: Vec<Expr> = guards
        .dims
        .iter()
        .flat_map(|(_, _, gs)| gs.iter().cloned())
        .collect();
    all.extend(guards.joint.iter().filter_map(|t| parse_guard(t).ok()));
    let mut ranges = std::collections::BTreeMap::new();
    let mut sizes = Vec::new();
    for e in &all {
        for a in e.atoms() {
            let a = a.to_string();
            if let Some(set) = spec.lookup(&a, Some(&a)).and_then(|d| d.admitted.as_ref()) {
                if let (Some(lo), Some(hi)) = (set.min(), set.max()) {
                    ranges.insert(a.clone(), (lo, hi));
                }
            }
            if !sizes.contains(&a) {
                sizes.push(a);
            }
        }
    }
    for grp in joint::group(&all, &sizes) {
        if grp.roots.len() < 2 {
            continue;
        }
        let solved = joint::solve_group(&grp, &ranges, limits);
        for d in dims.iter_mut() {
            let var = d.source.clone().unwrap_or_else(|| d.name.clone());
            if !grp.roots.contains(&var) {
                continue;
            }
            d.maximal_spec = match (&solved.undecided, solved.accepted.get(&var)) {
                (None, Some(acc)) => {
                    let name = spec
                        .lookup(&var, Some(&var))
                        .map_or(d.name.clone(), |sd| sd.name.clone());
                    rank(acc, None, 1)
                        .progressions
                        .first()
                        .map(|p| dim_code(&name, p))
                }
                (Some(why), _) => {
                    d.note.get_or_insert_with(|| format!("joint guards: {why}"));
                    None
                }
                _ => None,
            };
        }
    }
}

fn joint_check(text: &str, spec: &Spec, timeout_ms: u32) -> JointCheck {
    let mut out = JointCheck {
        guard: text.to_string(),
        sound: None,
        counterexample: None,
        certificate: Certificate::None,
        note: None,
    };
    let g = match parse_guard(text) {
        Ok(g) => g,
        Err(e) => {
            out.note = Some(e.message);
            return out;
        }
    };
    let atoms: Vec<String> = g.atoms().iter().map(|a| a.to_string()).collect();
    let mut sets = Vec::new();
    for a in &atoms {
        match spec.lookup(a, Some(a)).and_then(|d| d.admitted.clone()) {
            Some(s) => sets.push(s),
            None => {
                out.note = Some(format!("the spec does not cover `{a}`"));
                return out;
            }
        }
    }
    // One Dim object for several sizes makes them equal: check over the shared values.
    let names: Vec<Option<String>> = atoms
        .iter()
        .map(|a| spec.lookup(a, Some(a)).map(|d| d.name.clone()))
        .collect();
    let mut g = g;
    for i in 0..atoms.len() {
        if let Some(j) = (0..i).find(|&j| names[j].is_some() && names[j] == names[i]) {
            g = g.substitute(&atoms[i], &Expr::sym(&atoms[j]));
        }
    }
    let live: Vec<usize> = (0..atoms.len())
        .filter(|&i| g.atoms().iter().any(|a| **a == *atoms[i]))
        .collect();
    let named: Vec<(&str, &DimSet)> = live
        .iter()
        .map(|&i| (atoms[i].as_str(), &sets[i]))
        .collect();
    match check_box(&[&g], &named, timeout_ms) {
        JointVerdict::Proved => {
            out.sound = Some(true);
            out.certificate = Certificate::Z3;
        }
        JointVerdict::Refuted(p) => {
            out.sound = Some(false);
            out.certificate = Certificate::Z3;
            let mut ce: std::collections::BTreeMap<String, i128> = live
                .iter()
                .map(|&i| atoms[i].clone())
                .zip(p.iter().copied())
                .collect();
            for i in 0..atoms.len() {
                if let Some(j) = (0..i).find(|&j| names[j].is_some() && names[j] == names[i]) {
                    if let Some(v) = ce.get(&atoms[j]).copied() {
                        ce.insert(atoms[i].clone(), v);
                    }
                }
            }
            out.counterexample = Some(ce);
        }
        JointVerdict::Unknown(why) => out.note = Some(why),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use dimguard_solver::spec;

    const RAFT: &str = "  - Not all values of dim_2 = L['image1'].size()[2] in the specified range 135 <= dim_2 <= 2160 satisfy the generated guard ((((-1) + L['image1'].size()[2]) // 8) % 8) == 1.";

    #[test]
    fn torch_fix_is_unsound_with_counterexamples() {
        let g = GuardSet::read(RAFT).unwrap();
        let s = spec::read("_dim_2 = Dim('_dim_2', min=17, max=270)\ndim_2 = 8*_dim_2\n").unwrap();
        let r = verify(&g, &s, 5_000);
        assert_eq!(r.sound, Some(false));
        let d = &r.dims[0];
        assert_eq!((d.admitted, d.failing), (254, Some(222)));
        assert_eq!(d.counterexamples[..3], [136, 152, 160]);
        assert_eq!(d.certificate, Certificate::Z3);
        assert_eq!(
            d.maximal_spec.as_deref(),
            Some("_dim_2 = Dim('_dim_2', min=2, max=33)\ndim_2 = 64*_dim_2 + 9")
        );
    }

    #[test]
    fn joint_guards_are_decided_over_the_spec_box() {
        let g = GuardSet::read(
            "L['image2'].size()[2] == L['image1'].size()[2]\nL['image1'].size()[2] % 2 == 0\n",
        )
        .unwrap();
        let s = spec::read(
            "h = Dim('h', min=2, max=64)\ndynamic_shapes = {'image1': {2: h}, 'image2': {2: h}}\n",
        )
        .unwrap();
        let r = verify(&g, &s, 5_000);
        // The same Dim on both: equal by construction, proved.
        assert_eq!(r.joint[0].sound, Some(true), "{r:?}");
        let s = spec::read("h = Dim('h', min=2, max=64)\nw = Dim('w', min=2, max=64)\ndynamic_shapes = {'image1': {2: h}, 'image2': {2: w}}\n").unwrap();
        let r = verify(&g, &s, 5_000);
        assert_eq!(r.joint[0].sound, Some(false));
        let ce = r.joint[0].counterexample.as_ref().unwrap();
        assert_ne!(ce["L['image1'].size()[2]"], ce["L['image2'].size()[2]"]);
        assert_eq!(r.sound, Some(false));
    }

    #[test]
    fn maximal_specs_respect_joint_guards() {
        // h*w must be a multiple of 16 for every pair: with w free in 2..64, h must be a
        // multiple of 16 itself.
        let g = GuardSet::read("(L['x'].size()[2] * L['x'].size()[3]) % 16 == 0\n").unwrap();
        let s = spec::read("h = Dim('h', min=2, max=200)\nw = Dim('w', min=2, max=64)\ndynamic_shapes = {'x': {2: h, 3: w}}\n").unwrap();
        let r = verify(&g, &s, 5_000);
        assert_eq!(r.sound, Some(false));
        let h = r
            .dims
            .iter()
            .find(|d| d.name == "L['x'].size()[2]")
            .unwrap();
        assert_eq!(h.sound, Some(true), "no one-size guard of its own");
        assert_eq!(
            h.maximal_spec.as_deref(),
            Some("_h = Dim('_h', min=1, max=12)\nh = 16*_h")
        );
        // Through the joint solver directly:
        let e = parse_guard("(h * w) % 16 == 0").unwrap();
        let groups = joint::group(&[e], &[]);
        let ranges = std::collections::BTreeMap::from([
            ("h".to_string(), (2, 200)),
            ("w".to_string(), (2, 64)),
        ]);
        let solved = joint::solve_group(&groups[0], &ranges, &Limits::default());
        assert!(solved.accepted["h"].iter().all(|h| h % 16 == 0));
        assert_eq!(solved.accepted["h"].count(), 12);
    }

    #[test]
    fn suggestion_is_proved_over_a_huge_range_from_guard_lines() {
        let g =
            GuardSet::read("# one guard per line\n((((-1) + L['x'].size()[2]) // 8) % 8) == 1\n")
                .unwrap();
        let s = spec::read("_h = Dim('_h', min=0, max=72057594037927935)\nh = 64*_h + 9\ndynamic_shapes = {'x': {2: h}}").unwrap();
        let r = verify(&g, &s, 5_000);
        assert_eq!(r.sound, Some(true), "{r:?}");
        assert_eq!(r.dims[0].certificate, Certificate::Z3);
    }
}
