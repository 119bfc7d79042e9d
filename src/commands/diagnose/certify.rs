//! Z3 certificates for a diagnosis: every suggestion, every linked group's progression and every
//! data-dependent branch the report states, and torch's own fixes, checked with `dimguard-prove`.

use dimguard_prove::certify::Mode;
use dimguard_prove::{check_set, Verdict};
use dimguard_readers::{Guard, Message};
use dimguard_solver::report::{Certificate, Report};
use dimguard_solver::RECHECK_LIMIT;
use dimguard_solver::{DimSet, Expr};

/// Certifies every suggestion of `report` with Z3 (`certificate: "z3"` on `unsat`), and checks
/// torch's fixes independently. A suggestion Z3 refutes would be a dimguard bug: it is withheld
/// and the report says so. `unknown` keeps the existing certificate and records Z3's reason.
pub fn certify(report: &mut Report, msg: &Message, mode: Mode, timeout_ms: u32) {
    // A data-dependent expression one branch of which holds over a range too wide to evaluate
    // size by size: Z3 proves it over the whole range.
    for (d, g) in report.data_dependent.iter_mut().zip(&msg.data_dependent) {
        let (Some(b), Some([lo, hi]), [u]) = (d.always, d.range, d.sizes.as_slice()) else {
            continue;
        };
        if mode == Mode::Auto && d.certificate != Certificate::None {
            continue;
        }
        let branch = if b {
            g.expr.clone()
        } else {
            Expr::Not(Box::new(g.expr.clone()))
        };
        let set = DimSet::interval(lo, hi);
        match check_set(&[&branch], u, &set, 1, timeout_ms) {
            Verdict::Proved => d.certificate = Certificate::Z3,
            Verdict::Refuted(at) => {
                d.always = None;
                d.assumption = None;
                d.removes = None;
                d.undecided = Some(format!(
                    "internal error: Z3 found {at:?}, where the branch said to hold everywhere does not; withheld"
                ));
            }
            Verdict::Unknown(_) => {}
        }
    }
    for g in &mut report.linked {
        let Some(p) = g.progression else { continue };
        if mode == Mode::Auto && g.certificate != Certificate::None {
            continue;
        }
        let guards: Vec<&Expr> = g.guards.iter().collect();
        let set = DimSet::progression(p.lo, p.hi, p.modulus, p.residue);
        match check_set(&guards, &g.root_var, &set, 1, timeout_ms) {
            Verdict::Proved => g.certificate = Certificate::Z3,
            Verdict::Refuted(_) => {
                g.code = None;
                g.certificate = Certificate::None;
                g.undecided = Some(
                    "internal error: Z3 refuted the group's suggestion; it was withheld".into(),
                );
            }
            Verdict::Unknown(_) => {}
        }
    }
    for (d, entry) in report.dims.iter_mut().zip(&msg.dims) {
        let var = entry.var().to_string();
        // A guard listed under the size that names another: a one-size question would let the
        // other take any integer. Such a size's answer comes from its group's joint set, and its
        // suggestions were checked with the rest of it when the diagnosis made them.
        let linking = |g: &Guard| g.expr.atoms().iter().any(|a| **a != *var);
        if entry.guards.is_empty() || entry.guards.iter().any(linking) {
            continue;
        }
        let guards: Vec<&Expr> = entry.guards.iter().map(|g| &g.expr).collect();
        let mut kept = Vec::with_capacity(d.answer.suggestions.len());
        for mut s in std::mem::take(&mut d.answer.suggestions) {
            if mode == Mode::Auto && s.certificate != Certificate::None {
                kept.push(s);
                continue;
            }
            let set = DimSet::progression(s.lo, s.hi, s.modulus, s.residue);
            match check_set(&guards, &var, &set, 1, timeout_ms) {
                Verdict::Proved => s.certificate = Certificate::Z3,
                Verdict::Refuted(xs) => {
                    d.advice.push(format!(
                        "internal error: Z3 found {} failing in a candidate suggestion, which was withheld; please report this message",
                        xs[0]
                    ));
                    continue;
                }
                Verdict::Unknown(why) => s.certificate_note = Some(why),
            }
            kept.push(s);
        }
        d.answer.suggestions = kept;
        if let Some(fx) = d.torch_fix.as_mut() {
            if mode == Mode::Auto && fx.admitted <= RECHECK_LIMIT {
                continue;
            }
            match check_set(&guards, &var, &fx.admitted_set, 3, timeout_ms) {
                Verdict::Proved if fx.sound => fx.certificate = Certificate::Z3,
                Verdict::Refuted(xs) if !fx.sound && xs.iter().all(|x| fx.admitted_set.contains(*x)) => {
                    fx.certificate = Certificate::Z3
                }
                Verdict::Unknown(_) => {}
                other => d.advice.push(format!(
                    "internal error: Z3 ({other:?}) disagrees with the exact check of torch's fix; please report this message"
                )),
            }
        }
    }
}
