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
use super::clean::RawGuard;
use super::logs::{place_guards, size_name};
use crate::error::Error;
use crate::message::{Message, Runtime, Unreadable};
use crate::report::Form;
use crate::syntax::parse_guard;
use crate::types::{CmpOp, Expr};

/// How a failing guard of a compiled or exported program is introduced: `Guard failed: EXPR`
/// (`ep.module()`), `Guard check failed: 0/1: EXPR` (torch.compile's guard check, with the frame
/// id), `Runtime assertion failed for expression EXPR on node 'le_5'` (a run-time assert of the
/// graph, over unbacked sizes too).
const GUARD_FAILED: [&str; 3] = [
    "Guard failed: ",
    "Guard check failed: ",
    "Runtime assertion failed for expression ",
];
const INPUT: &str = "Expected input at ";
/// `Expected input x.shape[0] = 5 to be of the form 2*s1, where s1 is an integer`.
const INPUT_FORM: &str = "Expected input ";

/// Reads a run-time failure; `None` when the text holds none.
pub fn read(lines: &[Line]) -> Result<Option<Message>, Error> {
    if let Some(m) = guard_failed(lines) {
        return Ok(Some(m));
    }
    if let Some(m) = recompile(lines) {
        return Ok(Some(m));
    }
    Ok(input_check(lines).or_else(|| input_form(lines)))
}

/// `Expected input x.shape[0] = 5 to be of the form 2*s1, where s1 is an integer` (a derived
/// dimension `A*s + B` checked when the program runs): the size must be `B` plus a multiple of
/// `A` (and at least `A*2 + B`, the smallest value of a size symbol, is left to the range).
fn input_form(lines: &[Line]) -> Option<Message> {
    let mut msg = Message::empty(Form::InputCheck);
    for line in lines {
        let Some(i) = line.text.find(INPUT_FORM) else {
            continue;
        };
        let rest = &line.text[i + INPUT_FORM.len()..];
        let Some((head, form)) = rest.split_once(" to be of the form ") else {
            continue;
        };
        let Some((source, got)) = head.split_once(" = ") else {
            continue;
        };
        let form = form.split(", where ").next().unwrap_or(form).trim();
        let Some((a, b)) = affine_form(form) else {
            msg.unreadable.push(Unreadable {
                line: line.no,
                text: line.text.trim().to_string(),
                reason: format!("the form `{form}` is not `A*s + B`"),
            });
            continue;
        };
        let source = source.trim().to_string();
        let text = if b == 0 {
            format!("({source}) % {a} == 0")
        } else {
            format!("({source} - {b}) % {a} == 0")
        };
        let Ok(expr) = parse_guard(&text) else {
            continue;
        };
        record_input_check(&mut msg, &source, text, expr, got.trim().parse().ok());
    }
    (msg.runtime.is_some() || !msg.unreadable.is_empty()).then_some(msg)
}

/// A condition an input check states on one size (`source`): the size's guard (once), and the
/// message's run-time failure (the first one, with the size the program got).
fn record_input_check(
    msg: &mut Message,
    source: &str,
    text: String,
    expr: Expr,
    got: Option<i128>,
) {
    let d = msg.dim_mut(&size_name(source), Some(source.to_string()));
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
            recompile: false,
            listed: false,
        });
    }
}

/// `2*s1` → (2, 0); `4*s0 + 3` → (4, 3); `s2 - 1` → (1, -1); `s0` → (1, 0).
fn affine_form(form: &str) -> Option<(i128, i128)> {
    let e = crate::syntax::parse_expr(form).ok()?;
    let atoms: Vec<String> = e.atoms().iter().map(|a| a.to_string()).collect();
    let [s] = atoms.as_slice() else {
        return None;
    };
    let at = |v: i128| match e.eval(&|a: &str| (a == s).then_some(v)).ok()? {
        crate::expr::Val::Num(q) if q.is_integer() => Some(q.to_integer()),
        _ => None,
    };
    let b = at(0)?;
    let a = at(1)? - b;
    // Affine: the same step twice more.
    (a > 0 && at(2)? == 2 * a + b && at(3)? == 3 * a + b).then_some((a, b))
}

fn guard_failed(lines: &[Line]) -> Option<Message> {
    let mut msg = Message::empty(Form::GuardFailed);
    let mut first: Option<(String, usize)> = None;
    for (n, line) in lines.iter().enumerate() {
        let Some((i, key)) = GUARD_FAILED
            .iter()
            .filter_map(|k| line.text.find(k.trim_end()).map(|i| (i, k.trim_end())))
            .min()
        else {
            continue;
        };
        let text = line.text[i + key.len()..].trim();
        // A line wrapped right after the key (`... Guard failed:` / `    x.size()[0] != 1`).
        let text = match (text.is_empty(), lines.get(n + 1)) {
            (true, Some(next)) => next.text.trim(),
            _ => text,
        };
        // torch.compile's frame id (`0/1: `).
        let text = match text.split_once(": ") {
            Some((id, rest))
                if !id.is_empty() && id.chars().all(|c| c.is_ascii_digit() || c == '/') =>
            {
                rest.trim()
            }
            _ => text,
        };
        // The node of a run-time assert, quoted (`... on node 'le_5'`).
        let text = text.split(" on node '").next().unwrap_or(text).trim();
        // Older torch appends the guard's origin: `Guard failed: EXPR  # model.py:12`; the guard
        // check a comment on its source (`EXPR # (unknown source x.size()[0], ...)`).
        let text = text.split(" # ").next().unwrap_or(text).trim();
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
                recompile: false,
                listed: false,
            });
        }
    }
    first.map(|_| {
        // An unbacked size in a run-time assert (`u0 <= 2002`): a size-like symbol, 0 or more.
        let unbacked: Vec<String> = msg
            .dims
            .iter_mut()
            .filter(|d| crate::types::is_unbacked(d.var()))
            .map(|d| {
                d.range = Some((0, crate::message::SIZE_MAX));
                d.var().to_string()
            })
            .collect();
        if !unbacked.is_empty() {
            msg.notes.push(format!(
                "{} is an unbacked (data-dependent) size the text does not tie to an input: decided over 0..{} (a size-like symbol); give the range your data allows as --range {}=LO..HI",
                unbacked.join(", "),
                crate::message::SIZE_MAX,
                unbacked[0]
            ));
        }
        rename_by_source(&mut msg);
        msg
    })
}

/// torch.compile's recompile reasons (`TORCH_LOGS="recompiles"`): `triggered by the following
/// guard failure(s):` then `- 0/0: tensor 'L['x']' size mismatch at index 0. expected 5,
/// actual 3` (the graph was compiled for a static size) or `- 0/0: EXPR` (a guard of a dynamic
/// graph). Each becomes the guard the compiled graph holds the size to, the size that ran
/// beside it; a note says how to make the size dynamic.
///
/// Where the text also lists the guards of the frame that failed (`TORCH_LOGS="recompiles,guards"`:
/// `+- LAMBDA_GUARD: (L['x'].size()[0] % 4) == 0  # ...` and `TENSOR_MATCH: check_tensor(L['x'],
/// ..., size=[5, 3], ...)` under that frame's `[0/0]`, see [`frame_guards`]), every one of them
/// is read too: the sets are then the sizes that compiled graph accepts, not only what the failed
/// guard allows.
fn recompile(lines: &[Line]) -> Option<Message> {
    const MISMATCH: &str = "' size mismatch at index ";
    let mut msg = Message::empty(Form::GuardFailed);
    let mut raws = Vec::new();
    let mut statics: Vec<(String, i128)> = Vec::new();
    // The frames whose guards failed (`0/0`), in order.
    let mut failed: Vec<String> = Vec::new();
    let triggered = lines
        .iter()
        .any(|l| l.text.contains("guard failure") || l.text.contains("Recompiling function"));
    for line in lines {
        let t = line.text.trim();
        if let Some((id, _)) = t.strip_prefix("- ").and_then(|r| r.split_once(": ")) {
            if is_frame_id(id) && !failed.iter().any(|f| f == id) {
                failed.push(id.to_string());
            }
        }
        if let Some(i) = t.find(MISMATCH) {
            // tensor 'L['x']' size mismatch at index 0. expected 5, actual 3
            let Some(k) = t[..i].find("tensor '") else {
                continue;
            };
            let tensor = &t[k + "tensor '".len()..i];
            let rest = &t[i + MISMATCH.len()..];
            let num = |s: &str| -> Option<i128> {
                s.trim()
                    .trim_end_matches(['.', ','])
                    .split(|c: char| !c.is_ascii_digit() && c != '-')
                    .next()?
                    .parse()
                    .ok()
            };
            let Some((index, rest)) = rest.split_once(". expected ") else {
                continue;
            };
            let (expected, actual) = match rest.split_once(", actual ") {
                Some((e, a)) => (num(e), num(a)),
                None => (num(rest), None),
            };
            let (Some(index), Some(expected)) = (num(index), expected) else {
                continue;
            };
            let source = format!("{tensor}.size()[{index}]");
            let text = format!("{source} == {expected}");
            let Ok(expr) = parse_guard(&text) else {
                continue;
            };
            statics.push((source.clone(), expected));
            raws.push(RawGuard {
                line: line.no,
                text: text.clone(),
                provenance: None,
            });
            msg.dim_mut(&source, Some(source.clone()));
            if msg.runtime.is_none() {
                msg.runtime = Some(Runtime {
                    kind: Form::GuardFailed,
                    text,
                    expr,
                    got: actual,
                    recompile: true,
                    listed: false,
                });
            }
        } else if triggered {
            // - 0/0: L['x'].size()[0] <= 8  # x.shape[0] <= 8 at m.py:3
            let Some(rest) = t.strip_prefix("- ") else {
                continue;
            };
            let Some((id, g)) = rest.split_once(": ") else {
                continue;
            };
            if !is_frame_id(id) {
                continue;
            }
            let g = g.split(" # ").next().unwrap_or(g).trim();
            let Ok(expr) = parse_guard(g) else {
                continue;
            };
            for a in expr.atoms() {
                msg.dim_mut(&a, Some(a.to_string()));
            }
            raws.push(RawGuard {
                line: line.no,
                text: g.to_string(),
                provenance: None,
            });
            if msg.runtime.is_none() {
                msg.runtime = Some(Runtime {
                    kind: Form::GuardFailed,
                    text: g.to_string(),
                    expr,
                    got: None,
                    recompile: true,
                    listed: false,
                });
            }
        }
    }
    if raws.is_empty() {
        return None;
    }
    // Whether every failed frame's guard list is in the text.
    let mut all_listed = !failed.is_empty();
    for frame in &failed {
        let listed = frame_guards(lines, frame);
        if listed.is_empty() {
            all_listed = false;
            msg.notes.push(format!(
                "the text gives only the guard that failed for frame {frame}; the compiled graph checks more: run with TORCH_LOGS=\"recompiles,guards\" and give dimguard the log for the full set of sizes it accepts"
            ));
            continue;
        }
        msg.notes.push(format!(
            "read the {} size guard(s) torch lists for frame {frame}: the sets below are the sizes that compiled graph accepts",
            listed.len()
        ));
        for g in listed {
            if raws.iter().any(|r| r.text == g.text) {
                continue;
            }
            if let Ok(e) = parse_guard(&g.text) {
                for a in e.atoms() {
                    msg.dim_mut(&a, Some(a.to_string()));
                }
            }
            raws.push(g);
        }
    }
    if let Some(rt) = msg.runtime.as_mut() {
        rt.listed = all_listed;
    }
    place_guards(&mut msg, raws, &|a: &str| Some(a.to_string()), &|_| false);
    for (source, v) in &statics {
        let (tensor, index) = source
            .strip_suffix(']')
            .and_then(|s| s.rsplit_once(".size()["))
            .unwrap_or((source.as_str(), "0"));
        msg.notes.push(format!(
            "the compiled graph holds {source} to {v} (torch.compile made it static); to accept other sizes mark it dynamic before the call: {} (the block at the end), or compile with dynamic=True",
            crate::python::mark_dynamic(&py_tensor(tensor), index.parse().unwrap_or(0), None, None)
        ));
    }
    rename_by_source(&mut msg);
    Some(msg)
}

/// `0/0`, `1/2`, `0/1_1`: a frame id as a recompile reason names it.
fn is_frame_id(id: &str) -> bool {
    id.contains('/')
        && id.starts_with(|c: char| c.is_ascii_digit())
        && id
            .chars()
            .all(|c| c.is_ascii_digit() || c == '/' || c == '_')
}

/// The size guards torch's guard list (`TORCH_LOGS="guards"`) gives for `frame`: each
/// `LAMBDA_GUARD: EXPR  # where` over sizes, and each static size of a `TENSOR_MATCH:
/// check_tensor(L['x'], ..., size=[5, None], ...)` as `x.size()[0] == 5` (a `None` is a dynamic
/// size, held by the lambda guards). Inputs are named as the recompile reasons name them (`x`
/// for `L['x']`). Guards over other things (types, globals, strides) are not sizes and are left.
fn frame_guards(lines: &[Line], frame: &str) -> Vec<RawGuard> {
    let mut out: Vec<RawGuard> = Vec::new();
    for line in lines.iter().filter(|l| l.frame.as_deref() == Some(frame)) {
        let t = line.text.trim_start_matches([' ', '|', '+', '-']);
        let mut push = |text: String| {
            if !out.iter().any(|g| g.text == text) {
                out.push(RawGuard {
                    line: line.no,
                    text,
                    provenance: None,
                });
            }
        };
        if let Some(g) = t.strip_prefix("LAMBDA_GUARD: ") {
            let g = local_names(g.split(" # ").next().unwrap_or(g).trim());
            let sizes = parse_guard(&g).is_ok_and(|e| {
                let atoms = e.atoms();
                !atoms.is_empty() && atoms.iter().all(|a| a.contains(".size()["))
            });
            if sizes {
                push(g);
            }
        } else if let Some(rest) = t.strip_prefix("TENSOR_MATCH: check_tensor(") {
            let Some((tensor, rest)) = rest.split_once(", ") else {
                continue;
            };
            let Some(sizes) = rest
                .split_once("size=[")
                .and_then(|(_, r)| r.split_once(']'))
                .map(|(s, _)| s)
            else {
                continue;
            };
            let tensor = local_names(tensor.trim());
            for (i, v) in sizes.split(',').enumerate() {
                if let Ok(v) = v.trim().parse::<i128>() {
                    push(format!("{tensor}.size()[{i}] == {v}"));
                }
            }
        }
    }
    out
}

/// `L['x']` → `x` wherever the key is a plain name (guard lists write `L['x']`, recompile
/// reasons `x`).
fn local_names(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("L['") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 3..];
        match after.split_once("']") {
            Some((name, tail))
                if !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                out.push_str(name);
                rest = tail;
            }
            _ => {
                out.push_str("L['");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// `L['x']` → `x` (the tensor as the user's code names it).
fn py_tensor(t: &str) -> String {
    t.strip_prefix("L['")
        .and_then(|r| r.strip_suffix("']"))
        .unwrap_or(t)
        .to_string()
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
        record_input_check(&mut msg, &source, text, expr, got);
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
