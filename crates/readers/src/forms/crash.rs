//! PyTorch 2.15's solver crash: instead of a `ConstraintViolationError`, `torch.export` raises
//!
//! ```text
//! AssertionError: Expected op to be '==', got < for (-2) + 2*(((1/2)*height) // 4) < (1/4)*height
//! ```
//!
//! (torchvision `googlenet`, `squeezenet1_0`, ...). The text holds one guard, over the user's
//! `Dim` names, as torch's solver rewrote it: one of the export's guards, so the message is
//! partial ([`Message::partial`]). It holds no range, so the range comes from
//! `--range NAME=LO..HI` or the default is used and said.

use super::clean::Line;
use crate::message::{Guard, Message, Unreadable};
use crate::phrase::Phrase;
use dimguard_solver::report::Form;
use dimguard_solver::syntax::parse_guard;

const KEY: &str = "Expected op to be '==', got ";

/// Reads the crash; `None` when the text holds none.
pub fn read(lines: &[Line]) -> Option<Message> {
    let mut msg = Message::empty(Form::SolverCrash);
    let mut found = false;
    for line in lines {
        let Some(i) = line.text.phrase(KEY) else {
            continue;
        };
        let rest = &line.text[i + KEY.len()..];
        let Some((_, guard)) = rest.split_once(" for ") else {
            continue;
        };
        let guard = guard.trim();
        if guard.starts_with('{') {
            // The `raise AssertionError(f"... for {t}")` line of the traceback itself.
            continue;
        }
        found = true;
        let expr = match parse_guard(guard) {
            Ok(e) => e,
            Err(e) => {
                msg.unreadable.push(Unreadable {
                    line: line.no,
                    text: guard.to_string(),
                    reason: e.message.clone(),
                });
                continue;
            }
        };
        let atoms: Vec<String> = expr.atoms().iter().map(|a| a.to_string()).collect();
        let g = Guard {
            text: guard.to_string(),
            expr,
            provenance: None,
        };
        match atoms.as_slice() {
            [one] => {
                let d = msg.dim_mut(one, None);
                if !d.guards.iter().any(|x| x.text == g.text) {
                    d.guards.push(g);
                }
            }
            [] => {}
            _ => {
                for a in &atoms {
                    msg.dim_mut(a, None);
                }
                msg.joint.push(g);
            }
        }
    }
    if !found {
        return None;
    }
    msg.partial = Some(crate::message::Partial {
        holds: "one of the export's guards: the one PyTorch 2.15's solver crashed on (\"Expected op to be '=='\"); torch stopped there, so neither the others nor its suggested fixes are in it".into(),
        instead: "run the export with TORCH_LOGS=\"+dynamic\" and give dimguard the log (it holds every guard), or export with Dim.AUTO for these sizes and run `dimguard check` on the saved program".into(),
    });
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::clean;

    #[test]
    fn reads_the_guard() {
        let m = read(&clean::lines("AssertionError: Expected op to be '==', got < for (-2) + 2*(((1/2)*height) // 4) < (1/4)*height\n")).unwrap();
        assert_eq!(m.dims.len(), 1);
        assert_eq!(m.dims[0].name, "height");
        assert_eq!(m.dims[0].range, None);
        assert_eq!(m.dims[0].guards.len(), 1);
        assert!(read(&clean::lines("nothing")).is_none());
    }
}
