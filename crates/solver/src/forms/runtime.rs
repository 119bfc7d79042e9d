//! Errors from running an exported program at a size it does not accept:
//!
//! * `AssertionError: Guard failed: x.size()[0] // 5 != 1` (the program's guards, checked by
//!   `ep.module()`): the guard, over the inputs' sizes;
//! * `RuntimeError: Expected input at *args[0].shape[2] to be <= 512, but got 1000` (torch's
//!   input check against the exported ranges and static sizes): the bound and the size received.
//!
//! Neither text gives the exported range: the caller applies `--range` or the default, and says
//! which.

use super::clean::Line;
use super::logs::{place_guards, size_name};
use super::{Form, RawGuard};
use crate::error::Error;
use crate::message::{Message, Runtime, Unreadable};
use crate::syntax::parse_guard;
use crate::types::{CmpOp, Expr};

const GUARD_FAILED: &str = "Guard failed: ";
const INPUT: &str = "Expected input at ";

/// Reads a run-time failure; `None` when the text holds none.
pub fn read(lines: &[Line]) -> Result<Option<Message>, Error> {
    if let Some(m) = guard_failed(lines) {
        return Ok(Some(m));
    }
    Ok(input_check(lines))
}

fn guard_failed(lines: &[Line]) -> Option<Message> {
    let mut msg = Message::empty(Form::GuardFailed);
    let mut first: Option<(String, usize)> = None;
    for line in lines {
        let Some(i) = line.text.find(GUARD_FAILED) else {
            continue;
        };
        let text = line.text[i + GUARD_FAILED.len()..].trim();
        // Older torch appends the guard's origin: `Guard failed: EXPR  # model.py:12`.
        let text = text.split("  # ").next().unwrap_or(text).trim();
        if first.as_ref().is_some_and(|(t, _)| t == text) {
            continue;
        }
        first.get_or_insert((text.to_string(), line.no));
        let expr = match parse_guard(text) {
            Ok(e) => e,
            Err(e) => {
                msg.unreadable.push(Unreadable {
                    line: line.no,
                    text: text.to_string(),
                    reason: e.message.clone(),
                });
                continue;
            }
        };
        // Every size named gets a dimension (a size only in a joint guard too).
        for a in expr.atoms() {
            msg.dim_mut(&a, Some(a.to_string()));
        }
        place_guards(
            &mut msg,
            vec![RawGuard {
                line: line.no,
                text: text.to_string(),
                provenance: None,
            }],
            &|a: &str| Some(a.to_string()),
            &|_| false,
        );
        if msg.runtime.is_none() {
            msg.runtime = Some(Runtime {
                kind: Form::GuardFailed,
                text: text.to_string(),
                expr,
                got: None,
            });
        }
    }
    first.map(|_| {
        rename_by_source(&mut msg);
        msg
    })
}

/// Dimensions are filed under their source; give them friendly names (`x_2`).
fn rename_by_source(msg: &mut Message) {
    for d in &mut msg.dims {
        d.name = size_name(d.source.as_deref().unwrap_or(&d.name));
    }
}

/// `Expected input at *args[0].shape[2] to be <= 512, but got 1000`, `... to be >= 16, ...`,
/// `... to be equal to 3, but got 4. If you meant for this dimension to be dynamic, ...`.
fn input_check(lines: &[Line]) -> Option<Message> {
    let mut msg = Message::empty(Form::InputCheck);
    for line in lines {
        let Some(i) = line.text.find(INPUT) else {
            continue;
        };
        let rest = &line.text[i + INPUT.len()..];
        let Some((source, rest)) = rest.split_once(" to be ") else {
            continue;
        };
        let (cond, got) = match rest.split_once(", but got ") {
            Some((c, g)) => (c.trim(), g.split(|c: char| !c.is_ascii_digit()).next()),
            None => (rest.trim(), None),
        };
        let got = got.and_then(|g| g.parse::<i128>().ok());
        let (op, bound) = if let Some(v) = cond.strip_prefix("<= ") {
            (CmpOp::Le, v)
        } else if let Some(v) = cond.strip_prefix(">= ") {
            (CmpOp::Ge, v)
        } else if let Some(v) = cond.strip_prefix("equal to ") {
            (CmpOp::Eq, v)
        } else {
            msg.unreadable.push(Unreadable {
                line: line.no,
                text: line.text.trim().to_string(),
                reason: format!("unknown input check `to be {cond}`"),
            });
            continue;
        };
        let Ok(bound) = bound.trim().trim_end_matches('.').parse::<i128>() else {
            msg.unreadable.push(Unreadable {
                line: line.no,
                text: line.text.trim().to_string(),
                reason: format!("the bound `{bound}` is not an integer"),
            });
            continue;
        };
        let source = source.trim().to_string();
        let expr = Expr::Cmp(op, Box::new(Expr::sym(&source)), Box::new(Expr::int(bound)));
        let text = format!("{source} {} {bound}", op.symbol());
        let name = size_name(&source);
        let d = msg.dim_mut(&name, Some(source.clone()));
        if !d.guards.iter().any(|g| g.text == text) {
            d.guards.push(crate::message::Guard {
                text: text.clone(),
                expr: expr.clone(),
                provenance: None,
            });
        }
        if msg.runtime.is_none() {
            msg.runtime = Some(Runtime {
                kind: Form::InputCheck,
                text,
                expr,
                got,
            });
        }
    }
    (msg.runtime.is_some() || !msg.unreadable.is_empty()).then_some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forms::clean;

    #[test]
    fn names() {
        assert_eq!(size_name("x.size()[2]"), "x_2");
        assert_eq!(size_name("*args[0].shape[2]"), "args_0_2");
        assert_eq!(size_name("L['image1'].size()[3]"), "image1_3");
    }

    #[test]
    fn guard_failed_over_one_and_two_sizes() {
        let m = read(&clean::lines(
            "AssertionError: Guard failed: 1 + (-1 + x.size()[2]) // 4 == 2 + 2 * ((-1 + x.size()[2]) // 8)\n",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(m.form, Form::GuardFailed);
        assert_eq!(m.dims.len(), 1);
        assert_eq!(m.dims[0].name, "x_2");
        assert_eq!(m.dims[0].guards.len(), 1);
        let m = read(&clean::lines(
            "AssertionError: Guard failed: (1 + x.size()[2]) // 2 == y.size()[2]\n",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(m.dims.len(), 2);
        assert_eq!(m.joint.len(), 1);
    }

    #[test]
    fn input_checks() {
        let m = read(&clean::lines(
            "RuntimeError: Expected input at *args[0].shape[2] to be <= 512, but got 1000\n",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(m.form, Form::InputCheck);
        let r = m.runtime.unwrap();
        assert_eq!(r.got, Some(1000));
        assert_eq!(r.text, "*args[0].shape[2] <= 512");
        let m = read(&clean::lines("RuntimeError: Expected input at *args[0].shape[1] to be equal to 3, but got 4. If you meant for this dimension to be dynamic, please re-export and specify dynamic_shapes (e.g. with Dim.DYNAMIC)\n")).unwrap().unwrap();
        assert_eq!(m.runtime.unwrap().got, Some(4));
    }
}
