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
use crate::message::{CacheEntry, Message, Runtime, Unreadable};
use dimguard_solver::report::Form;
use dimguard_solver::syntax::parse_guard;
use dimguard_solver::Error;
use dimguard_solver::{CmpOp, Expr};

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

/// Whether the lines hold torch.compile's recompile reasons (`triggered by the following guard
/// failure(s):`, a guard-fail hook's `GuardFail(reason=...)`): they are read as cache entries
/// even inside a `TORCH_LOGS="+dynamic"` log.
pub fn has_recompile(lines: &[Line]) -> bool {
    lines.iter().any(|l| {
        l.text.contains("triggered by the following guard failure")
            || l.text.contains("GuardFail(reason=")
    })
}

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
            entries: vec![],
        });
    }
}

/// `2*s1` → (2, 0); `4*s0 + 3` → (4, 3); `s2 - 1` → (1, -1); `s0` → (1, 0).
fn affine_form(form: &str) -> Option<(i128, i128)> {
    let e = dimguard_solver::syntax::parse_expr(form).ok()?;
    let atoms: Vec<String> = e.atoms().iter().map(|a| a.to_string()).collect();
    let [s] = atoms.as_slice() else {
        return None;
    };
    let at = |v: i128| match e.eval(&|a: &str| (a == s).then_some(v)).ok()? {
        dimguard_solver::expr::Val::Num(q) if q.is_integer() => Some(q.to_integer()),
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
                entries: vec![],
            });
        }
    }
    first.map(|_| {
        // An unbacked size in a run-time assert (`u0 <= 2002`): a size-like symbol, 0 or more.
        let unbacked: Vec<String> = msg
            .dims
            .iter_mut()
            .filter(|d| dimguard_solver::is_unbacked(d.var()))
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
        msg.partial = Some(crate::message::Partial {
            holds: "one of the program's guards: the first that failed at the size that ran; the program checks others, which the error does not print".into(),
            instead: "save the exported program and run `dimguard check model.pt2` (every guard and range it holds), or paste the export's TORCH_LOGS=\"+dynamic\" log".into(),
        });
        msg
    })
}

/// torch.compile's recompile reasons (`TORCH_LOGS="recompiles"`): `Recompiling function f in
/// m.py:3`, `triggered by the following guard failure(s):`, then one line per cached graph
/// (`- 0/1: tensor 'x' size mismatch at index 1. expected 256, actual 1024`, a graph compiled for
/// a static size; `- 0/0: 2 <= x.size()[0] <= 64  # ...`, a guard of a dynamic graph; older torch
/// prints no entry id, the 2023 logs a tuple `('Recompiling function f in m.py', "triggered by
/// the following guard failure: L['t'] == 0")`; a guard-fail hook a `GuardFail(reason="...")`).
///
/// Each line is one cache entry, and a call runs if any entry of its function accepts it: each
/// size's guard is the union (`or`) of its entries' failed guards, per function (two functions'
/// `x` are two sizes, `f.x.size()[0]` and `g.x.size()[0]`). A failed guard over something that is
/// not a size (`c == 0.5`, `L['end'] == 10`, an object id) is kept with its entry as such, never
/// turned into a size. The entries are kept in [`Runtime::entries`] for the report.
///
/// Where the text also lists the guards of a frame that failed (`TORCH_LOGS="recompiles,guards"`:
/// `+- LAMBDA_GUARD: (L['x'].size()[0] % 4) == 0  # ...` and `TENSOR_MATCH: check_tensor(L['x'],
/// ..., size=[5, 3], ...)` under that frame's `[0/0]`, see `frame_guards`), they are that
/// entry's guards too: its set is then all the compiled graph accepts.
pub fn recompile(lines: &[Line]) -> Option<Message> {
    let mut scan = ReasonScan {
        triggered: lines.iter().any(|l| {
            l.text.contains("guard failure")
                || l.text.contains("Recompiling function")
                || l.text.contains("GuardFail(")
        }),
        ..ReasonScan::default()
    };
    for line in lines {
        scan.line(line);
    }
    let mut entries = scan.entries;
    if entries.is_empty() {
        return None;
    }
    name_unnamed(&mut entries);
    let mut msg = Message::empty(Form::GuardFailed);
    msg.unreadable = scan.unread;
    let all_listed = add_frame_guards(lines, &mut entries);
    // How many guards of each entry the text gives (the implied bound comes after them).
    let given: Vec<usize> = entries.iter().map(|(_, e)| e.guards.len()).collect();
    let implied = add_implied_bounds(&mut entries);
    // Two functions: their sizes are kept apart by the function's name.
    let groups: Vec<String> = entries.iter().fold(Vec::new(), |mut v, (g, _)| {
        if !v.contains(g) {
            v.push(g.clone());
        }
        v
    });
    if groups.len() > 1 {
        qualify_by_function(&mut entries);
    }
    let mut raws = Vec::new();
    let mut first: Option<FailedGuard> = None;
    for group in &groups {
        let (of, given_of): (Vec<&CacheEntry>, Vec<usize>) = entries
            .iter()
            .zip(&given)
            .filter(|((g, _), _)| g == group)
            .map(|((_, e), &n)| (e, n))
            .unzip();
        if let Some((r, f)) = function_guard(&mut msg, &of, &given_of) {
            raws.extend(r);
            first.get_or_insert(f);
        }
    }
    if implied {
        msg.notes.push(
            "an entry over a dynamic size accepts it from 2 only (torch specializes sizes 0 and 1: a call at either compiles another graph), so `2 <= size` is added to each such entry".to_string(),
        );
    }
    static_notes(&mut msg, &entries);
    if let Some(l) = &scan.limit {
        msg.notes.push(format!(
            "torch stopped compiling new graphs for this function ({l}): a call no cached graph accepts raises (fail_on_recompile_limit_hit) or runs without compiling; raise torch._dynamo.config.recompile_limit or make the sizes dynamic"
        ));
    }
    if !all_listed {
        msg.notes.push(
            "the text gives only the guard each cached graph failed; a graph checks more, so each entry accepts at most the sizes shown: run with TORCH_LOGS=\"recompiles,guards\" and give dimguard the log for the full sets".to_string(),
        );
    }
    let (text, expr, got) = first.unwrap_or_else(|| {
        let o = entries
            .iter()
            .flat_map(|(_, e)| e.other.first())
            .next()
            .cloned()
            .unwrap_or_default();
        (o, Expr::int(1), None)
    });
    msg.runtime = Some(Runtime {
        kind: Form::GuardFailed,
        text,
        expr,
        got,
        recompile: true,
        listed: all_listed,
        entries: entries.into_iter().map(|(_, e)| e).collect(),
    });
    place_guards(&mut msg, raws, &|a: &str| Some(a.to_string()), &|_| false);
    // A compiled function is called with any size, 0 and 1 too: its cache entries decide.
    for d in &mut msg.dims {
        d.range.get_or_insert((0, crate::message::SIZE_MAX));
    }
    rename_by_source(&mut msg);
    Some(msg)
}

/// [`recompile`]'s reading of the lines: the cache entries (each with its function's cache:
/// `#frame` where printed, else the function's name), the reasons that do not read, and
/// torch's recompile-limit line.
#[derive(Default)]
struct ReasonScan {
    /// Whether the text holds a recompile block (a reason alone is read otherwise).
    triggered: bool,
    /// The function each frame number compiles (`5` → `forward`).
    frame_fn: Vec<(String, String)>,
    /// The function being read.
    function: Option<String>,
    /// Inside a `triggered by the following guard failure(s)` block.
    in_block: bool,
    limit: Option<String>,
    unread: Vec<Unreadable>,
    entries: Vec<(String, CacheEntry)>,
}

impl ReasonScan {
    /// One line: a `Recompiling function` header, the limit line, or a reason, read into its
    /// entry.
    fn line(&mut self, line: &Line) {
        let t = line.text.trim();
        if let Some(i) = t.find("Recompiling function ") {
            let name = t[i + "Recompiling function ".len()..]
                .split([' ', '\'', '"', ','])
                .next()
                .unwrap_or("")
                .to_string();
            if let Some(f) = line.frame.as_deref().and_then(|f| f.split('/').next()) {
                if !self.frame_fn.iter().any(|(k, _)| k == f) {
                    self.frame_fn.push((f.to_string(), name.clone()));
                }
            }
            self.function = (!name.is_empty()).then_some(name);
            self.in_block = false;
        }
        if t.contains("hit config.recompile_limit") || t.contains("FailOnRecompileLimitHit") {
            self.limit.get_or_insert_with(|| t.to_string());
        }
        if let Some((id, text)) = self.reason(t) {
            self.entry(line.no, id, text);
        }
    }

    /// The reason a line gives (its entry id where printed, and the failed guard): a block's
    /// header with the guard on the same line (the tuple form), a `- ` line of a block, a
    /// guard-fail hook's `GuardFail(reason=...)`, or a size mismatch alone.
    fn reason(&mut self, t: &str) -> Option<(Option<String>, String)> {
        if let Some(i) = t.find("triggered by the following guard failure") {
            self.in_block = true;
            // The tuple form gives the guard on the same line, after the colon.
            let rest = t[i..].split_once(':').map_or("", |(_, r)| r);
            let rest = rest.trim().trim_end_matches([')', '"', '\'']).trim();
            if rest.is_empty() {
                return None;
            }
            Some((None, rest.to_string()))
        } else if let Some(rest) = t
            .strip_prefix("- ")
            .filter(|_| self.in_block || self.triggered)
        {
            let rest = rest.trim();
            match rest.split_once(": ") {
                Some((id, g)) if is_frame_id(id) => Some((Some(id.to_string()), g.to_string())),
                // torch 2.15 prints the user stack under each reason (`- User stack trace:`,
                // `-   File "m.py", line 7, in f`).
                _ if rest.starts_with("User stack") || rest.starts_with("File ") => None,
                _ if self.in_block || rest.contains(MISMATCH) => Some((None, rest.to_string())),
                _ => None,
            }
        } else if let Some(i) = t.find("GuardFail(reason=") {
            let rest = &t[i + "GuardFail(reason=".len()..];
            let q = rest.chars().next().unwrap_or('"');
            let body = rest[1..].split(&format!("{q}, ")).next().unwrap_or("");
            Some((None, body.to_string()))
        } else if t.contains(MISMATCH) && !self.triggered {
            // A reason alone (no recompile block around it; torch's `last reason: 0/1: ...`
            // after a limit repeats an entry of the block and is not read again).
            Some((None, t.to_string()))
        } else {
            if !t.is_empty() && !t.starts_with('-') {
                self.in_block = false;
            }
            None
        }
    }

    /// The entry of a reason at line `no`: its guard over a size (with the size the call had),
    /// or over something else, or unreadable (kept as such); the same entry in a later reason
    /// (each recompile lists every entry again) is read once.
    fn entry(&mut self, no: usize, id: Option<String>, text: String) {
        let fun = id
            .as_deref()
            .and_then(|id| id.split('/').next())
            .and_then(|f| self.frame_fn.iter().find(|(k, _)| k == f))
            .map(|(_, n)| n.clone())
            .or_else(|| self.function.clone());
        // Which function's cache: the frame number where printed, else the function's name.
        let group = match &id {
            Some(id) => format!("#{}", id.split('/').next().unwrap_or("")),
            None => fun.clone().unwrap_or_default(),
        };
        let mut e = CacheEntry {
            id: id.clone().unwrap_or_default(),
            function: fun,
            guards: vec![],
            other: vec![],
            actual: None,
        };
        match entry_guard(&text) {
            Ok(EntryGuard::Size(g, actual)) => {
                e.actual = actual;
                e.guards.push(*g);
            }
            Ok(EntryGuard::Other(g)) => e.other.push(g),
            Err(reason) => {
                self.unread.push(Unreadable {
                    line: no,
                    text: text.clone(),
                    reason: reason.to_string(),
                });
                e.other.push(text.clone());
            }
        }
        let key = |e: &CacheEntry| {
            if e.id.is_empty() {
                e.guards
                    .iter()
                    .map(|g| g.text.clone())
                    .chain(e.other.iter().cloned())
                    .collect::<Vec<_>>()
                    .join(" and ")
            } else {
                e.id.clone()
            }
        };
        match self
            .entries
            .iter_mut()
            .find(|(g, x)| *g == group && key(x) == key(&e))
        {
            Some((_, x)) => x.actual = e.actual.or(x.actual),
            None => self.entries.push((group, e)),
        }
    }
}

/// Reasons read before the text names their function (a log cut before its first
/// `Recompiling function` line) belong to the one function it names; the same reason read
/// before and after the name is then one entry.
fn name_unnamed(entries: &mut Vec<(String, CacheEntry)>) {
    let named: Vec<&str> = entries.iter().fold(Vec::new(), |mut v, (g, _)| {
        if !g.is_empty() && !v.contains(&g.as_str()) {
            v.push(g.as_str());
        }
        v
    });
    let [one] = named.as_slice() else {
        return;
    };
    let one = one.to_string();
    for (g, _) in entries.iter_mut() {
        if g.is_empty() {
            *g = one.clone();
        }
    }
    let mut seen: Vec<(String, Vec<String>)> = Vec::new();
    entries.retain(|(g, e)| {
        if !e.id.is_empty() {
            return true;
        }
        let k = (
            g.clone(),
            e.guards
                .iter()
                .map(|x| x.text.clone())
                .chain(e.other.iter().cloned())
                .collect(),
        );
        if seen.contains(&k) {
            return false;
        }
        seen.push(k);
        true
    });
}

/// The guard lists of the failed frames, where printed ([`frame_guards`]): each is its entry's
/// guards too. Whether every entry's list was printed.
fn add_frame_guards(lines: &[Line], entries: &mut [(String, CacheEntry)]) -> bool {
    let mut all_listed = entries.iter().all(|(_, e)| !e.id.is_empty());
    for (_, e) in entries.iter_mut() {
        let listed = if e.id.is_empty() {
            vec![]
        } else {
            frame_guards(lines, &e.id)
        };
        if listed.is_empty() {
            all_listed = false;
            continue;
        }
        for g in listed {
            if e.guards.iter().any(|x| x.text == g.text) {
                continue;
            }
            if let Ok(expr) = parse_guard(&g.text) {
                e.guards.push(crate::message::Guard {
                    text: g.text,
                    expr,
                    provenance: None,
                });
            }
        }
    }
    all_listed
}

/// A dynamic entry's sizes start at 2 (torch specializes 0 and 1: a call at either fails the
/// entry's `2 <= x.size()[0]`): `2 <= size` added to each entry for each size it does not pin
/// (an entry compiled for one size, `expected 1`, `== 1`, holds it). Whether one was added.
fn add_implied_bounds(entries: &mut [(String, CacheEntry)]) -> bool {
    let mut implied = false;
    for (_, e) in entries.iter_mut() {
        let atoms: std::collections::BTreeSet<String> = e
            .guards
            .iter()
            .flat_map(|g| g.expr.atoms())
            .map(|a| a.to_string())
            .collect();
        for a in atoms {
            let pinned = e.guards.iter().any(|g| pins(&g.expr, &a));
            let text = format!("2 <= {a}");
            if pinned || e.guards.iter().any(|g| g.text == text) {
                continue;
            }
            if let Ok(expr) = parse_guard(&text) {
                e.guards.push(crate::message::Guard {
                    text,
                    expr,
                    provenance: None,
                });
                implied = true;
            }
        }
    }
    implied
}

/// With two functions' caches, each entry's sizes named by its function (`f.x.size()[0]`; an
/// entry of no named function by its frame, `frame5.x.size()[0]`).
fn qualify_by_function(entries: &mut [(String, CacheEntry)]) {
    for (g, e) in entries.iter_mut() {
        let prefix = e
            .function
            .clone()
            .unwrap_or_else(|| format!("frame{}", g.trim_start_matches('#')));
        for guard in &mut e.guards {
            for a in guard.expr.atoms() {
                let q = format!("{prefix}.{}", local_names(&a));
                guard.expr = guard.expr.substitute(&a, &Expr::sym(&q));
                guard.text = guard.text.replace(&*a, &q);
            }
        }
    }
}

/// A failed guard of a cache entry: its text, its expression, and the size the call had.
type FailedGuard = (String, Expr, Option<i128>);

/// The guard of one function's cache (its entries `of`, each with the count of guards the
/// text gives, `given_of`): the notes on its entries, then its guards to place and the first
/// failed guard (text, expression, the size the call had). One entry: its guards, each on its
/// own (a guard per size stays that size's); several: the union (`or`) of the entries'
/// conjunctions. `None` when an entry failed only on a guard that is not a size (it bounds no
/// size) or the union does not parse.
fn function_guard(
    msg: &mut Message,
    of: &[&CacheEntry],
    given_of: &[usize],
) -> Option<(Vec<RawGuard>, FailedGuard)> {
    let who = of
        .iter()
        .find_map(|e| e.function.clone())
        .map_or("the compiled function".to_string(), |f| format!("`{f}`"));
    let conj = |e: &CacheEntry| -> Option<String> {
        match e.guards.as_slice() {
            [] => None,
            [g] => Some(g.text.clone()),
            gs => Some(
                gs.iter()
                    .map(|g| format!("({})", g.text))
                    .collect::<Vec<_>>()
                    .join(" and "),
            ),
        }
    };
    let name = |e: &CacheEntry, k: usize| {
        if e.id.is_empty() {
            format!("#{}", k + 1)
        } else {
            e.id.clone()
        }
    };
    let listed: Vec<String> = of
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let mut parts: Vec<String> = e.guards[..given_of[k]]
                .iter()
                .map(|g| g.text.clone())
                .collect();
            parts.extend(e.other.iter().map(|o| format!("{o} (not a size)")));
            format!("{}: {}", name(e, k), parts.join(", "))
        })
        .collect();
    msg.notes.push(format!(
        "torch.compile cached {} for {who}; a call runs if any one of them accepts it, so each size's set is the union of the entries' sets (the failed guard of each: {})",
        if of.len() == 1 { "1 graph".to_string() } else { format!("{} graphs", of.len()) },
        listed.join("; ")
    ));
    for (k, e) in of.iter().enumerate() {
        for o in &e.other {
            msg.notes.push(format!(
                "entry {} failed on `{o}`: a guard over a value that is not a tensor size (a Python number or constant argument, an object id); torch compiles a graph per value it sees. dimguard gives no size set for it: pass the value as a tensor, or keep it constant between calls",
                name(e, k)
            ));
        }
    }
    let parts: Vec<Option<String>> = of.iter().map(|e| conj(e)).collect();
    if parts.iter().any(Option::is_none) {
        // An entry that failed only on a non-size guard bounds no size.
        if parts.iter().any(Option::is_some) {
            msg.notes.push(format!(
                "an entry of {who} failed only on a guard that is not a size: the text bounds no size for it, so no size of {who} is known to be rejected"
            ));
        }
        return None;
    }
    if let [one] = of {
        let mut raws = Vec::new();
        for g in &one.guards {
            for a in g.expr.atoms() {
                msg.dim_mut(&a, Some(a.to_string()));
            }
            raws.push(RawGuard {
                line: 0,
                text: g.text.clone(),
                provenance: None,
            });
        }
        let g = &one.guards[0];
        return Some((raws, (g.text.clone(), g.expr.clone(), one.actual)));
    }
    let parts: Vec<String> = parts.into_iter().flatten().collect();
    let text = if parts.len() == 1 {
        parts[0].clone()
    } else {
        parts
            .iter()
            .map(|p| format!("({p})"))
            .collect::<Vec<_>>()
            .join(" or ")
    };
    let expr = parse_guard(&text).ok()?;
    for a in expr.atoms() {
        msg.dim_mut(&a, Some(a.to_string()));
    }
    let raws = vec![RawGuard {
        line: 0,
        text: text.clone(),
        provenance: None,
    }];
    let actual = of.iter().rev().find_map(|e| e.actual);
    Some((raws, (text, expr, actual)))
}

/// A size an entry was compiled static for (`expected 5`): how to make it dynamic.
fn static_notes(msg: &mut Message, entries: &[(String, CacheEntry)]) {
    let mut statics: Vec<(String, i128)> = Vec::new();
    for (_, e) in entries {
        for g in e.guards.iter().filter(|_| e.actual.is_some()) {
            if let Some((src, v)) = g.text.split_once(" == ") {
                if let Ok(v) = v.trim().parse::<i128>() {
                    if !statics.iter().any(|(s, _)| s == src) {
                        statics.push((src.to_string(), v));
                    }
                }
            }
        }
    }
    for (source, v) in &statics {
        if let Some((x, i)) = dimguard_solver::python::input_dim(source) {
            msg.notes.push(format!(
                "an entry holds {source} to {v} (torch.compile made it static); to accept other sizes in one graph mark it dynamic before the call: {} (the block at the end), or compile with dynamic=True",
                dimguard_solver::python::mark_dynamic(&x, i, None, None)
            ));
        }
    }
}

/// Whether `g` holds the size `a` to one value (`x.size()[0] == 1`): an entry compiled static.
fn pins(g: &Expr, a: &str) -> bool {
    match g {
        Expr::Cmp(CmpOp::Eq, l, r) => matches!(
            (&**l, &**r),
            (Expr::Sym(s), Expr::Const(_)) | (Expr::Const(_), Expr::Sym(s)) if &**s == a
        ),
        Expr::And(v) => v.iter().any(|x| pins(x, a)),
        _ => false,
    }
}

const MISMATCH: &str = "' size mismatch at index ";

/// What one recompile reason holds: a guard over sizes (with the size the call had, for a static
/// size's mismatch), or a guard over something else.
enum EntryGuard {
    Size(Box<crate::message::Guard>, Option<i128>),
    Other(String),
}

/// Why a recompile reason that reads as a size mismatch is not read (an [`Unreadable`]'s
/// reason).
enum Mismatch {
    NoTensor,
    NoExpected,
    NoIndex,
    /// The guard it reads as does not parse.
    Parse(String),
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mismatch::NoTensor => "a size mismatch without its tensor",
            Mismatch::NoExpected => "a size mismatch without `expected`",
            Mismatch::NoIndex => "a size mismatch without its index or expected size",
            Mismatch::Parse(message) => message,
        })
    }
}

/// `tensor 'x' size mismatch at index 1. expected 128, actual 1024` → `x.size()[1] == 128`
/// (actual 1024); `2 <= x.size()[0] <= 64  # where` → that guard; `c == 0.5` → not a size.
fn entry_guard(text: &str) -> Result<EntryGuard, Mismatch> {
    let t = text.trim();
    if let Some(i) = t.find(MISMATCH) {
        let k = t[..i].find("tensor '").ok_or(Mismatch::NoTensor)?;
        let tensor = &t[k + "tensor '".len()..i];
        let rest = &t[i + MISMATCH.len()..];
        let num = |s: &str| -> Option<i128> {
            s.trim()
                .split(|c: char| !c.is_ascii_digit() && c != '-')
                .next()?
                .parse()
                .ok()
        };
        let (index, rest) = rest.split_once(". expected ").ok_or(Mismatch::NoExpected)?;
        let (expected, actual) = match rest.split_once(", actual ") {
            Some((e, a)) => (num(e), num(a)),
            None => (num(rest), None),
        };
        let (Some(index), Some(expected)) = (num(index), expected) else {
            return Err(Mismatch::NoIndex);
        };
        let text = format!("{tensor}.size()[{index}] == {expected}");
        let expr = parse_guard(&text).map_err(|e| Mismatch::Parse(e.message))?;
        return Ok(EntryGuard::Size(
            Box::new(crate::message::Guard {
                text,
                expr,
                provenance: None,
            }),
            actual,
        ));
    }
    let g = t.split(" # ").next().unwrap_or(t).trim();
    let g = g.split("  #").next().unwrap_or(g).trim();
    match parse_guard(g) {
        Ok(expr) => {
            let atoms = expr.atoms();
            let size = |a: &str| a.contains(".size()[") || a.contains(".shape[");
            if !atoms.is_empty() && atoms.iter().all(|a| size(a)) {
                Ok(EntryGuard::Size(
                    Box::new(crate::message::Guard {
                        text: g.to_string(),
                        expr,
                        provenance: None,
                    }),
                    None,
                ))
            } else {
                Ok(EntryGuard::Other(g.to_string()))
            }
        }
        Err(_) => Ok(EntryGuard::Other(g.to_string())),
    }
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
        if op == CmpOp::Eq {
            // A static size of the program (`to be equal to 1`): the only size it accepts,
            // whatever torch's default range for a dynamic size says.
            let d = msg.dim_mut(&size_name(&source), Some(source.clone()));
            d.range = Some((0, crate::message::SIZE_MAX));
        }
    }
    let bound = |d: &crate::message::DimEntry| {
        d.guards
            .iter()
            .any(|g| !matches!(g.expr, Expr::Cmp(CmpOp::Eq, ..)))
    };
    if msg.dims.iter().any(bound) {
        // `to be <= 512`: one end of the program's range (torch checks the ends in turn and
        // stops at the first that fails); the other end and its guards are not in the text.
        msg.partial = Some(crate::message::Partial {
            holds: "one end of the program's range for the size (torch's input check stops at the first it fails); the other end and the program's guards are not in it".into(),
            instead: "save the exported program and run `dimguard check model.pt2` (every guard and range it holds)".into(),
        });
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
