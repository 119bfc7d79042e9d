"""``dimguard.export``: the export loop a careful engineer runs, as one call.

Each round exports with the current spec. On a ``ConstraintViolationError`` the error is
diagnosed with the traced sizes and the answer is merged into *your* spec (every input and
dimension you gave is kept, shared ``Dim`` objects stay shared, specialized dims become
``Dim.STATIC``). When torch's own solver crashes instead of reporting guards (PyTorch 2.15:
``AssertionError: Expected op to be '==', got <``, or sympy's ``NotImplementedError``), or keeps
specializing a dim the diagnosis kept dynamic, the affected dims fall back to ``Dim.AUTO``
within your bounds. A program that exports is audited in memory (what ``dimguard check`` does):
when it accepts fewer sizes than it claims, the spec is narrowed to the largest sound one and
exported again; if that fails, the audited program is returned and the report says exactly which
sizes work.

torch is imported lazily: it is never a dependency of the package.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import signal
import sys
import threading
import time
import traceback
from typing import Any, ContextManager, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _native
from ._results import FACT_KEYS, Record, SizeSet, _audit_rows, _decided, _lines, _runtime_rows, _verdict
from ._program import _audit, _static
from ._round import _first_line, _text, quiet
from ._sheet import Key, _auto, _choose_point, _is_root, _Layout, _static_roots, _torch_form
from .trace import capture, provenance

__all__ = ["export", "ExportReport", "ExportError", "BudgetSpent", "round_context"]

# The default wall-clock budget of one ``dimguard.export`` call, in seconds (``time_budget``).
TIME_BUDGET = 3600.0


class BudgetSpent(BaseException):
    """Raised inside a round's ``torch.export.export`` when ``dimguard.export``'s time budget runs
    out (a ``BaseException``, so that torch's own ``except Exception`` does not swallow it); the
    loop catches it and says so in ``report.budget``."""


class _Budget:
    """``dimguard.export``'s wall-clock budget: ``left()`` seconds, and ``during()``, a context
    that interrupts the code inside it (a round's ``torch.export.export``) with
    :class:`BudgetSpent` when the budget runs out: ``SIGALRM``, on the main thread only (on
    another thread the budget is checked between rounds). ``record`` is ``report.budget``."""

    def __init__(self, seconds: Optional[float]):
        if seconds is not None and not (isinstance(seconds, (int, float)) and seconds > 0):
            raise ValueError(f"time_budget must be a positive number of seconds or None, got {seconds!r}")
        self.until = None if seconds is None else time.perf_counter() + float(seconds)
        self.record: Dict[str, Any] = {"seconds": seconds, "spent": False, "round": None, "where": None}

    def left(self) -> Optional[float]:
        return None if self.until is None else self.until - time.perf_counter()

    def spent(self, round_no: int, where: str) -> str:
        self.record.update({"spent": True, "round": round_no, "where": where})
        return f"the time budget of {self.record['seconds']:g} s was spent {where} (dimguard.export(time_budget=...))"

    @contextlib.contextmanager
    def during(self) -> Any:
        left = self.left()
        if left is None or threading.current_thread() is not threading.main_thread():
            yield
            return
        if left <= 0:
            raise BudgetSpent()

        def alarm(signum: int, frame: Any) -> None:
            raise BudgetSpent()

        old = signal.signal(signal.SIGALRM, alarm)
        signal.setitimer(signal.ITIMER_REAL, left)
        try:
            yield
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)


def round_context(round_no: int) -> ContextManager[Any]:
    """The one place each round's ``torch.export.export`` call is wrapped. Replace (or wrap) it to
    observe a round, e.g. to capture ``TORCH_TRACE`` records in-process; by default it does
    nothing. ``dimguard.export`` looks it up on this module at every round."""
    return contextlib.nullcontext()


class ExportReport(Record):
    """What ``dimguard.export`` did and what the returned program accepts.

    Fields: ``rounds`` (per round: ``round``, ``spec`` as Python, ``outcome`` — ``"exported"``,
    ``"constraint_violation"``, ``"solver_crash"`` or ``"error"`` —, ``error``, ``notes``,
    ``torch_seconds``, ``dimguard_seconds`` (of which ``provenance_seconds`` reading the round's
    trace; ``example_seconds`` choosing the example sizes and re-sizing the inputs,
    ``diagnose_seconds`` diagnosing torch's error and merging the answer into the spec,
    ``audit_seconds`` auditing an exported program), ``example`` (the shapes the round traced at: the given ones, or re-sized into the
    round's spec where it leaves them out or torch would specialize them; the notes say why), and
    from the structured trace captured in-process during
    the round: ``lines``, the guards grouped by the line of your code that made torch record them,
    with what each line removes, and ``guards``, each with its ``provenance``), ``spec`` (the final ``dynamic_shapes`` as
    paste-able Python), ``dims`` (the audit of the returned program: per input dimension
    ``claimed`` and ``accepted`` sets, as ``dimguard check``), ``joint`` (per group of linked
    sizes: the exact joint set as boxes, its largest sound box and a summary, as ``dimguard
    check``), ``runtime`` (the program's run-time asserts and the limits its graph implies, each
    with the sizes it rejects, as ``dimguard check``: part of ``dims``' accepted sets),
    ``budget`` (``seconds``, the call's ``time_budget``; ``spent``, whether it ran out; ``round``
    and ``where`` it did: the program of an earlier round, if any, is returned, else
    :class:`ExportError` is raised with this report), ``export_context`` (where the example has a size of 0 or 1 that ``spec`` keeps dynamic:
    :data:`OBLIVIOUS`, the context every round exported in and ``spec`` says to export in, as
    ``export_context``; where the returned program's round propagated real tensors (a value the
    model reads from a tensor): :data:`REAL`, likewise; else null), ``export_shapes`` (where torch specializes such a size at the example's 0 or 1 even
    in that context: the input sizes, by input name, the returned program was exported at inside it and ``spec`` says to
    export at, with the example's 0 or 1 moved to 2; else null), ``static`` (the dimensions the returned program's graph holds as numbers: ``input``,
    ``index``, ``size``), ``audit`` (the returned program's whole ``dimguard check`` JSON, which
    :meth:`accepts` answers from), ``no_reexport`` (why torch cannot export the model again from
    the final spec with your example, where it cannot: a ``ShapesSpec`` program from a pass that
    propagated real tensors; ``spec`` is then that spec as comments under the reason; else null),
    ``model_checks`` (where ``no_reexport`` is set: per expression over a value read from data,
    the ``torch._check`` torch itself suggests for the branch it took at your example, with the
    user's line it blames: ``file``, ``line``, ``source``, ``check``; inserted in the model, the
    spec exports; empty where torch names no user line for one of them),
    ``unaudited`` (why the program could not be audited, else
    null), ``narrowed`` (each size of your spec the program takes fewer values of than you asked:
    ``name``, ``input``, ``index``, ``kept``, ``undecided`` (how many of its sizes the program's
    answer is undecided at, counted apart from ``kept``), ``of`` and ``why``, one line offering ``cover=True``),
    per round ``log`` (what torch wrote to stderr during the round), ``spec_vs_program`` (one line per dimension whose range in ``spec``
    differs from the one the program claims: torch raised a minimum or dropped sizes; the
    program's accepted sets are ``dims``), ``exported`` (whether a program
    was produced), and ``overhead`` (dimguard's seconds over torch's).
    """

    __slots__ = ()

    def accepted(self, input: str, index: int) -> SizeSet:
        """The exact sizes the returned program accepts for one dimension. A size linked to
        others by guards: the sizes that pass with some partner (which tuples pass together is
        ``report.joint``; :meth:`accepts` decides a whole shape). A dimension the program fixes:
        its one size."""
        for d in self._data.get("dims", []):
            if d["input"] == input and d["index"] == index:
                if d.get("linked_with") and d.get("with_some_partner") is not None:
                    return SizeSet(d["with_some_partner"])
                if d.get("accepted") is None:
                    raise ValueError(f"{input}[{index}]: undecided ({d.get('undecided')})")
                return SizeSet(d["accepted"])
        for st in self._data.get("static", []):
            if st["input"] == input and st["index"] == index:
                v = st["size"]
                return SizeSet({"count": 1, "min": v, "max": v, "segments": [{"lo": v, "hi": v, "modulus": 1, "residues": [0]}]})
        raise KeyError(f"{input}[{index}] is not a dimension of the returned program's tensor inputs")

    def accepts(self, shapes: Mapping[str, Sequence[int]]) -> bool:
        """Whether the returned program accepts inputs of these shapes (input name -> shape):
        the program's own answer, as :meth:`CheckReport.accepts` (its fixed sizes, shared
        symbols, derived sizes, ranges, guards and run-time asserts, the assumptions dimguard
        added among them). Raises :class:`~dimguard.Undecided` when the shapes cannot decide."""
        return _decided(self.verdict(shapes))

    def verdict(self, shapes: Mapping[str, Sequence[int]]) -> Record:
        """As :meth:`CheckReport.verdict`, for the returned program (from ``audit``, its whole
        check JSON)."""
        if self._data.get("unaudited"):
            return Record({"accepted": None, "reason": f"the program could not be audited ({self._data['unaudited']})"})
        return _verdict(self._data.get("audit") or self._data, shapes)

    def __repr__(self) -> str:
        rows = []
        for r in self._data["rounds"]:
            rows.append(
                f"round {r['round']}: {r['outcome']} (torch {r['torch_seconds']:.2f} s, dimguard {r['dimguard_seconds']:.3f} s)"
                + (f" — {r['error']}" if r.get("error") else "")
            )
            rows.extend(f"    {n}" for n in r.get("notes", []))
        rows.extend(_audit_rows(self._data, exprs=False))
        static: Dict[str, List[str]] = {}
        for st in self._data.get("static", []):
            static.setdefault(st["input"], []).append(f"[{st['index']}]={st['size']}")
        rows.extend(f"{inp}: static {' '.join(v)}" for inp, v in static.items())
        rows.extend(self._data.get("spec_vs_program") or [])
        rows.extend(n["why"] for n in self._data.get("narrowed") or [])
        if self._data.get("unaudited"):
            rows.append(f"the program could not be audited ({self._data['unaudited']}): accepts() raises dimguard.Undecided (verdict() says why)")
        return _lines(f"ExportReport(exported={self._data['exported']}, {len(self._data['rounds'])} rounds)", rows, self._data.get("spec"))


class ExportError(RuntimeError):
    """No round produced a program; ``.report`` holds the rounds (an :class:`ExportReport`)."""

    def __init__(self, message: str, report: ExportReport):
        super().__init__(message)
        self.report = report


# ---------------------------------------------------------------------------------------------
# The user's dynamic_shapes <-> a spec sheet (the JSON of dimguard_solver::merge::Sheet).


def _specialized_roots(text: str) -> List[str]:
    """The names in torch's "Specializations unexpectedly required (batch, h)!" (also where torch
    glues it to the line before)."""
    out: List[str] = []
    for m in re.finditer(r"Specializations unexpectedly required \(([^)]*)\)!", text):
        out.extend(n.strip() for n in m.group(1).split(",") if n.strip() and n.strip() not in out)
    return out


def _solver_specialized(text: str, sheet: Mapping[str, Any], point: Mapping[Key, int]) -> List[str]:
    """The roots torch says "solving the guards generated for batch = L['x'].size()[0] resulted
    in a specialized value of 2" of, where 2 is the size the round traced them at and is 2 or
    more (a 0 or 1 is the example's doing, which the next round's example fixes), and which torch
    lists under "Specializations unexpectedly required"."""
    required = set(_specialized_roots(text))
    out: List[str] = []
    for m in re.finditer(r"solving the guards generated for (\w+) = (\S+) resulted in a specialized value of (-?\d+)", text):
        name, src, v = m.group(1), m.group(2), int(m.group(3))
        at = _input_dim(src)
        if name not in required or v < 2 or at is None or point.get(at) != v:
            continue
        for e in sheet["entries"]:
            val = e["value"]
            if val["kind"] == "dim" and (e["input"], int(e["index"])) == at and val["root"] not in out:
                out.append(val["root"])
    return out


def _with_roots_of(new: Mapping[str, Any], src: Mapping[str, Any], roots: Sequence[str]) -> Dict[str, Any]:
    """``new`` with every entry on one of ``roots`` in ``src`` (a sheet) as ``src`` has it, and
    those roots' bounds from ``src``."""
    theirs = {(e["input"], int(e["index"])): e for e in src["entries"] if e["value"].get("kind") == "dim" and e["value"]["root"] in roots}
    entries = [theirs.get((e["input"], int(e["index"])), e) for e in new["entries"]]
    kept = [r for r in new.get("roots", []) if r["name"] not in roots] + [r for r in src["roots"] if r["name"] in roots]
    return {**new, "roots": kept, "entries": entries, "notes": list(new.get("notes", []))}


def _windows(new: Mapping[str, Any], sheet: Mapping[str, Any], forced: Sequence[str]) -> Dict[str, str]:
    """Of the roots torch's solver asks to specialize (``forced``, in ``sheet``), those the
    diagnosed spec ``new`` keeps dynamic in a window narrower than ``sheet``'s at every entry on
    them (a shared ``Dim`` where torch tied them): root -> what the window is, in words."""
    roots_old = {r["name"]: r for r in sheet["roots"]}
    roots_new = {r["name"]: r for r in new.get("roots", [])}
    at_new = {(e["input"], int(e["index"])): e["value"] for e in new.get("entries", [])}

    def span(v: Mapping[str, Any], roots: Mapping[str, Any]) -> Optional[Tuple[int, int, int]]:
        r = roots.get(v.get("root")) or {}
        if v.get("kind") != "dim" or r.get("min") is None or r.get("max") is None:
            return None
        c, o = int(v["coef"]), int(v["offset"])
        return (c * int(r["min"]) + o, c * int(r["max"]) + o, int(r["max"]) - int(r["min"]) + 1)

    out: Dict[str, str] = {}
    for root in forced:
        said: List[str] = []
        ok = False
        for e in sheet["entries"]:
            v = e["value"]
            if v.get("kind") != "dim" or v["root"] != root:
                continue
            key = (e["input"], int(e["index"]))
            was, now = span(v, roots_old), span(at_new.get(key) or {}, roots_new)
            if was is None or now is None or now[2] < 2 or now[2] >= was[2]:
                ok = False
                break
            ok = True
            step = int(at_new[key]["coef"])
            said.append(f"{key[0]}[{key[1]}] {now[0]}..{now[1]}" + (f" step {step}" if step != 1 else "") + f", {now[2]} of {was[2]} sizes")
        if ok:
            out[root] = ", ".join(said)
    return out


# torch 2.15's switch that keeps a size of 0 or 1 dynamic; without it torch specializes such a size
# whatever the spec says ("your code specialized it to be a constant (1)").
OBLIVIOUS = "torch.fx.experimental._config.patch(backed_size_oblivious=True)"


# torch's real-tensor propagation (draft_export's mechanism): a round that meets an expression
# over a value the model reads from a tensor exports in it, and so does the printed spec's paste.
REAL = "torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True)"


def _small_sizes(sheet: Mapping[str, Any], shapes: Sequence[Tuple[str, List[int]]]) -> List[Key]:
    """The example's sizes of 0 or 1 that the spec makes dynamic: a plain ``Dim`` whose range
    takes the size, or ``Dim.AUTO`` whose bounds do. torch keeps them dynamic only under
    :data:`OBLIVIOUS`, where the program it traces at them is the one the user's own paste of the
    spec gives (traced at 2 instead, the printed spec does not re-export with the example)."""
    roots = {r["name"]: r for r in sheet["roots"]}
    at = dict(shapes)
    out: List[Key] = []
    for e in sheet["entries"]:
        v, k = e["value"], (e["input"], int(e["index"]))
        sh = at.get(e["input"]) or []
        if k[1] >= len(sh) or sh[k[1]] not in (0, 1):
            continue
        if v["kind"] == "dim" and (v["coef"], v["offset"]) == (1, 0):
            bounds = roots[v["root"]]
        elif v["kind"] == "auto":
            bounds = v
        else:
            continue
        lo, hi = bounds.get("min"), bounds.get("max")
        if (lo is None or lo <= sh[k[1]]) and (hi is None or sh[k[1]] <= hi):
            out.append(k)
    return out


def _oblivious(on: bool) -> ContextManager[Any]:
    """:data:`OBLIVIOUS` for one export, when on."""
    if not on:
        return contextlib.nullcontext()
    import torch.fx.experimental._config

    return torch.fx.experimental._config.patch(backed_size_oblivious=True)


def _context_header(context: Optional[str], sheet: Mapping[str, Any], small: Sequence[Key], shapes: Optional[Mapping[str, Sequence[int]]] = None) -> str:
    """The lines printed before the spec when the returned program was exported in ``context``
    (:data:`OBLIVIOUS` or :data:`REAL`): the context to export in, as Python the user pastes
    (``export_context``), and ``shapes``, where the program was exported at other sizes than the
    example's (its 0 or 1 moved to 2), as ``export_shapes``. "" when there is none, or for
    :data:`OBLIVIOUS` when the spec makes every 0 or 1 size static."""
    at = ", ".join(f"{n}={tuple(v)}" for n, v in (shapes or {}).items())
    if context == REAL:
        return (
            "import torch._functorch.config\n\n"
            "# The model reads a value from a tensor, and torch's export meets an expression over it that no\n"
            "# spec states; it exports propagating real tensors (draft_export's mechanism), so export inside\n"
            + (f"# this context, with inputs of the sizes in export_shapes ({at}: torch fixes a size of 0 or 1):\n" if shapes else "# this context:\n")
            + "#     with export_context:\n"
            + f"#         ep = torch.export.export(model, {'args_of_export_shapes' if shapes else 'args'}, dynamic_shapes=dynamic_shapes)\n"
            + f"export_context = {REAL}\n"
            + (f"export_shapes = {json.dumps({n: list(v) for n, v in shapes.items()})}\n" if shapes else "")
            + "\n"
        )
    if context != OBLIVIOUS:
        return ""
    dynamic = {(e["input"], int(e["index"])) for e in sheet["entries"] if e["value"]["kind"] in ("dim", "auto")}
    keys = [k for k in small if k in dynamic]
    if not keys:
        return ""
    where = ", ".join(f"{i}[{j}]" for i, j in keys)
    if shapes:
        return (
            "import torch.fx.experimental._config\n\n"
            f"# {where}: a size of 0 or 1 in your example, kept dynamic. torch specializes it at your example's\n"
            "# size even under backed_size_oblivious (torch 2.15; the model's code fixes it there), so export\n"
            f"# inside this context with inputs of the sizes in export_shapes ({at}):\n"
            "#     with export_context:\n"
            "#         ep = torch.export.export(model, args_of_export_shapes, dynamic_shapes=dynamic_shapes)\n"
            f"export_context = {OBLIVIOUS}\n"
            f"export_shapes = {json.dumps({n: list(v) for n, v in shapes.items()})}\n\n"
        )
    return (
        "import torch.fx.experimental._config\n\n"
        f"# {where}: a size of 0 or 1 in your example, kept dynamic. torch specializes such a size unless\n"
        "# it exports under backed_size_oblivious (torch 2.15), so export inside this context:\n"
        "#     with export_context:\n"
        "#         ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes)\n"
        f"export_context = {OBLIVIOUS}\n\n"
    )


def _keep_small(new: Mapping[str, Any], sheet: Mapping[str, Any], small: Sequence[Key]) -> Optional[Dict[str, Any]]:
    """``new`` with each entry at ``small`` that ``sheet`` keeps dynamic and ``new`` does not (made
    static, or its root narrowed to one size) put back as in ``sheet``; None when there is none."""
    before = {(e["input"], int(e["index"])): e for e in sheet["entries"]}
    roots_new = {r["name"]: r for r in new["roots"]}
    roots_old = {r["name"]: r for r in sheet["roots"]}
    out = json.loads(json.dumps({"roots": new["roots"], "entries": new["entries"]}))
    changed = False
    for i, e in enumerate(out["entries"]):
        k = (e["input"], int(e["index"]))
        old = before.get(k)
        if k not in small or old is None or old["value"]["kind"] not in ("dim", "auto"):
            continue
        v = e["value"]
        r = roots_new.get(v.get("root")) if v["kind"] == "dim" else None
        if v["kind"] in ("dim", "auto") and not (r is not None and r.get("min") is not None and r.get("min") == r.get("max")):
            continue
        out["entries"][i] = json.loads(json.dumps(old))
        name = old["value"].get("root")
        if name is not None:
            out["roots"] = [x for x in out["roots"] if x["name"] != name] + [json.loads(json.dumps(roots_old[name]))]
        changed = True
    return {**out, "notes": []} if changed else None


def _roots_at(sheet: Mapping[str, Any], keys: Sequence[Key]) -> List[str]:
    """The root ``Dim`` names of the sheet's entries at ``keys``."""
    return [e["value"]["root"] for e in sheet["entries"] if e["value"]["kind"] == "dim" and (e["input"], int(e["index"])) in keys]


def _shapes_at(shapes: Sequence[Tuple[str, List[int]]], point: Mapping[Key, int]) -> List[Tuple[str, List[int]]]:
    return [(n, [point.get((n, i), s) for i, s in enumerate(shape)]) for n, shape in shapes]


def _marked_constant(text: str) -> List[Tuple[str, int]]:
    """torch's "You marked 32*_w + 16 as dynamic but your code specialized it to be a constant
    (48)": each (expression, value)."""
    found = re.finditer(r"You marked (.+?) as dynamic but your code specialized it to be a constant \((-?\d+)\)", text)
    return list(dict.fromkeys((m.group(1).strip(), int(m.group(2))) for m in found))


def _text_of(err: BaseException) -> str:
    try:
        return _text(err)
    except Exception:  # noqa: BLE001 - only read for a message
        return str(err)


def _range_error(text: str) -> Optional[Tuple[int, int, int]]:
    """torch's refusal of an example outside the spec: ``256 not in range [121, 128]``."""
    m = re.search(r"(-?\d+) not in range \[(-?\d+), (-?\d+)\]", text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """The same spec (a key given as null and a key left out are the same)."""

    def bare(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: bare(x) for k, x in v.items() if x is not None}
        if isinstance(v, list):
            return [bare(x) for x in v]
        return v

    return bare(a["roots"]) == bare(b["roots"]) and bare(a["entries"]) == bare(b["entries"])


def _frames(e: BaseException) -> List[str]:
    out: List[str] = []
    seen = set()
    cur: Optional[BaseException] = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        out.extend(f.filename for f in traceback.extract_tb(cur.__traceback__))
        cur = cur.__cause__ or cur.__context__
    return out


def _classify(e: BaseException) -> str:
    text = str(e)
    if "Constraints violated" in text or type(e).__name__ == "ConstraintViolationError":
        return "constraint_violation"
    files = _frames(e)
    in_solver = any("symbolic_shapes.py" in f or "/sympy/" in f.replace("\\", "/") for f in files)
    if in_solver or "Expected op to be '=='" in text:
        return "solver_crash"
    return "error"


def _top_level(model: Any, args: Tuple[Any, ...], kwargs: Mapping[str, Any]) -> List[Tuple[str, Any]]:
    import inspect

    fn = getattr(model, "forward", model)
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"the arguments do not fit {type(model).__name__}.forward: {e}") from None
    out: List[Tuple[str, Any]] = []
    for name, value in bound.arguments.items():
        param = bound.signature.parameters[name]
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            out.extend((f"{name}_{i}", v) for i, v in enumerate(value))
        elif param.kind is inspect.Parameter.VAR_KEYWORD:
            out.extend(value.items())
        else:
            out.append((name, value))
    return out


def _progress(verbose: bool, msg: str) -> None:
    if verbose:
        print(f"dimguard.export: {msg}", file=sys.stderr, flush=True)


def _spec_vs_program(sheet: Mapping[str, Any], audit: Optional[Mapping[str, Any]]) -> List[str]:
    """Where the spec's range of a dimension is not the one the returned program claims (torch
    raised a root's minimum, or dropped a size): one line per dimension, so ``report.spec`` never
    claims more than the program without saying so."""
    if audit is None:
        return []
    roots = {r["name"]: r for r in sheet["roots"]}
    claimed = {(d["input"], d["index"]): d.get("claimed") or {} for d in audit.get("dims", [])}
    out = []
    for e in sheet["entries"]:
        v = e["value"]
        key = (e["input"], int(e["index"]))
        if v["kind"] != "dim" or key not in claimed:
            continue
        r = roots.get(v["root"], {})
        if r.get("min") is None or r.get("max") is None:
            continue
        c, o = int(v["coef"]), int(v["offset"])
        lo, hi, count = c * r["min"] + o, c * r["max"] + o, r["max"] - r["min"] + 1
        got = claimed[key]
        if got.get("count") is not None and (got.get("count"), got.get("min"), got.get("max")) != (count, lo, hi):
            step = f" step {c}" if c != 1 else ""
            out.append(
                f"{key[0]}[{key[1]}]: the spec takes {count} sizes in {lo}..{hi}{step}; the program claims {got.get('count')} "
                f"in {got.get('min')}..{got.get('max')} (report.accepted says which it accepts)"
            )
    return out


def _narrowed(user: Mapping[str, Any], static: Sequence[Mapping[str, Any]], audit: Optional[Mapping[str, Any]], rounds: Sequence[Mapping[str, Any]]) -> List[Dict[str, Any]]:
    """Each size of the user's spec the returned program takes fewer values of than asked: the
    program fixes it, or accepts fewer sizes of its range. One line (``why``) says why (torch's
    guards on it, from the rounds' diagnoses) and offers ``cover=True`` with the count of sizes
    this program leaves out."""
    if audit is None or audit.get("unaudited"):
        return []
    roots = {r["name"]: r for r in user["roots"]}
    fixed = {(s["input"], int(s["index"])): s["size"] for s in static}
    dims = {(d["input"], int(d["index"])): d for d in audit.get("dims", [])}
    out: List[Dict[str, Any]] = []
    for e in user["entries"]:
        v = e["value"]
        if v["kind"] != "dim":
            continue
        r = roots.get(v["root"], {})
        if r.get("min") is None or r.get("max") is None:
            continue
        c, o = int(v["coef"]), int(v["offset"])
        lo, hi, total = c * r["min"] + o, c * r["max"] + o, r["max"] - r["min"] + 1
        key = (e["input"], int(e["index"]))
        name = v.get("name") or v["root"]
        if any(n["name"] == name for n in out):
            continue  # one line per name (image1 and image2 sharing h)
        undecided: Optional[int] = None
        if key in fixed:
            kept, what = (1 if lo <= fixed[key] <= hi else 0), f"the returned program fixes it at {fixed[key]}"
        elif key in dims:
            d = dims[key]
            acc = d.get("with_some_partner") if d.get("linked_with") else d.get("accepted")
            # The sizes whose answer the audit could not decide: never counted as rejected (an
            # audit that proves nothing has an empty `accepted` and every size undecided).
            doubt = d.get("undecided") if isinstance(d.get("undecided"), dict) else None
            if acc is None and doubt is None:
                continue
            if max((acc or {}).get("count", 0), (doubt or {}).get("count", 0)) > 1_000_000:
                continue

            def within(segs: Optional[Mapping[str, Any]]) -> int:
                return sum(1 for x in SizeSet(segs) if lo <= x <= hi and (x - o) % c == 0) if segs and segs.get("count") else 0

            kept, undecided = within(acc), within(doubt)
            if kept >= total and not undecided:
                continue
            if undecided:
                reason = (doubt or {}).get("reason") or "undecided"
                what = f"the returned program accepts {kept} of them and is undecided at {undecided} ({reason})" if kept else f"whether the returned program accepts them is undecided at {undecided} of them ({reason})"
            else:
                what = f"the returned program accepts {kept} of them"
        else:
            continue
        source = f"L['{key[0]}'].size()[{key[1]}]"
        said: List[str] = []
        for rd in rounds:
            for dd in (rd.get("diagnosis") or {}).get("dims", []):
                if dd.get("source") == source or dd.get("name") == name:
                    said.extend(g.get("text", "") for g in dd.get("guards", [])[:2])
                    if not dd.get("guards") and dd.get("status") == "specialized" and key in fixed:
                        # Only where the program fixes it: a size a round's error called fixed
                        # can keep the window its whole trace allows (EfficientFormerV2's W).
                        said.append("torch specialized it")
        if said:
            why = f"torch's guards: {'; '.join(dict.fromkeys(x for x in said if x))}"
        elif key in fixed:
            why = "torch specialized it"
        else:
            # The program keeps it dynamic: what limits it is the program's own (its guards,
            # run-time asserts and implied limits: report.dims, report.runtime), never "torch
            # specialized it".
            why = "the program's own guards and run-time checks; report.dims and report.runtime say which"

        out.append(
            {
                "name": name,
                "input": key[0],
                "index": key[1],
                "kept": kept,
                "undecided": undecided,
                "of": total,
                "why": f"{name} ({key[0]}.shape[{key[1]}]): you asked for {total} sizes in {lo}..{hi}; {what} ({why}); "
                + (f"dimguard.export(..., cover=True) looks for programs for the {total - kept} sizes this one leaves out" if not undecided else f"dimguard.export(..., cover=True) looks for programs for the {total - kept - undecided} sizes this one rejects and the {undecided} it may reject"),
            }
        )
    return out


def _named_entries(
    sheet: Mapping[str, Any], names: Mapping[Key, str], static: Sequence[Mapping[str, Any]], narrowed: Sequence[Mapping[str, Any]], auto_why: Mapping[Key, str]
) -> Dict[str, Any]:
    """``sheet`` with the user's name kept, in a comment on its entry, for each size the loop
    made ``Dim.AUTO``, static or an int, or tied to another name (torch gives those no name):
    ``2: Dim.AUTO(min=64, max=512),  # h: ...``. The comment says what the returned program does
    with it (read from the program: ``static``, ``narrowed``), or, for a ``Dim.AUTO`` the program
    keeps dynamic, why it is one (``auto_why``, by dimension)."""
    fixed = {(s["input"], int(s["index"])): s["size"] for s in static}
    said = {n["name"]: n for n in narrowed}
    entries = []
    for e in sheet["entries"]:
        key = (e["input"], int(e["index"]))
        name, v = names.get(key), e["value"]
        # The name the dict prints the entry by: a plain Dim by its root, a derived one by its own.
        own = None if v["kind"] != "dim" else v["root"] if (int(v["coef"]), int(v["offset"])) == (1, 0) else v.get("name") or v["root"]
        if name is None or own == name:
            entries.append(e)
            continue
        if key in fixed:
            what = f"the returned program fixes it at {fixed[key]}"
        elif v["kind"] == "dim":
            c, o = int(v["coef"]), int(v["offset"])
            expr = own if v.get("name") or (c, o) == (1, 0) else f"{c}*{v['root']}" + (f" + {o}" if o else "")
            what = f"the returned program takes it as {expr}"
        elif v["kind"] == "auto":
            what = auto_why.get(key, "Dim.AUTO: torch refused a named Dim here")
        else:
            what = "static"
        if name in said:
            n_ = said[name]
            if n_.get("undecided"):
                what += f"; it accepts {n_['kept']} of the {n_['of']} sizes asked for and is undecided at {n_['undecided']} (report.narrowed says why)"
            else:
                what += f"; it accepts {n_['kept']} of the {n_['of']} sizes asked for (report.narrowed says why)"
        entries.append({**e, "comment": f"{name}: {what}"})
    return {**sheet, "entries": entries}


def _mixed_roots(sheet: Mapping[str, Any], text: str, trace: Any) -> List[str]:
    """The roots of ``sheet`` whose sizes a data-dependent expression compares with a value read
    from a tensor (``8*u1 < 64 (unhinted: 8*u1 < s70)``: the input size torch created ``s70``
    for, read from the round's trace)."""
    m = re.search(r"\(unhinted: (.*?)\)\.", text) or re.search(r"data-dependent expression (.*?) \(unhinted", text)
    if not m or not re.search(r"\bu\d+\b", m.group(1)):
        return []
    backed = set(re.findall(r"\bs\d+\b", m.group(1)))
    sources = []
    for line in getattr(trace, "_lines", []):
        if not line.startswith('{"create_symbol"'):
            continue
        try:
            rec = json.loads(line)["create_symbol"]
        except (ValueError, KeyError, TypeError):
            continue
        if rec.get("symbol") in backed and rec.get("source"):
            sources.append(rec["source"])
    return _named_roots(sheet, " ".join(sources)) if sources else []


def _user_names(sheet: Mapping[str, Any]) -> Dict[Key, str]:
    """The name the user's spec gives each dimension: its ``Dim``'s (a derived one's own name
    when it has one)."""
    out: Dict[Key, str] = {}
    for e in sheet["entries"]:
        v = e["value"]
        if v["kind"] == "dim":
            out[(e["input"], int(e["index"]))] = v.get("name") or v["root"]
    return out


def _named_roots(sheet: Mapping[str, Any], text: str) -> List[str]:
    """The roots of ``sheet`` that ``text`` names: by a ``Dim``'s name (``32*_w + 16`` names
    ``_w``), or by the source of an entry on it (``L['x'].size()[2]``)."""
    named = [r["name"] for r in sheet["roots"] if re.search(rf"(?<![\w']){re.escape(r['name'])}(?![\w'])", text)]
    sources = {(m.group(1), int(m.group(2))) for m in re.finditer(r"L\['(?:kwargs'\]\[')?(\w+)'\]\.size\(\)\[(\d+)\]", text)}
    for e in sheet["entries"]:
        v = e["value"]
        if v["kind"] == "dim" and (e["input"], int(e["index"])) in sources and v["root"] not in named:
            named.append(v["root"])
    return named


def _shortfall(audit: Mapping[str, Any], notes: List[str], names: Optional[Mapping[Key, str]] = None) -> Tuple[List[Dict[str, Any]], bool]:
    """What to narrow after an audit: per dimension the progression to narrow it to (a size that
    is not linked: its best suggestion; a linked size: its side of the group's largest sound box),
    and whether the program accepts exactly what it claims. Notes say what falls short."""
    short: List[Dict[str, Any]] = []
    exact = True
    full_groups = set()
    for j in audit.get("joint") or []:
        # A group is whole only when its joint set is decided and equals what it claims (an
        # undecided group has neither: never "accepts every claimed size").
        if j.get("accepted") is not None and j.get("accepted") == j.get("claimed"):
            full_groups.update(j.get("sources", []))
        else:
            exact = False
            if j.get("summary"):
                notes.append(j["summary"])
    for d in audit["dims"]:
        c, a = d.get("claimed") or {}, d.get("accepted")
        here = f"{d['input']}[{d['index']}]"
        name = (names or {}).get((d["input"], d["index"])) or d.get("symbol") or f"{d['input']}_{d['index']}"
        if d.get("undecided"):
            # Whatever else is known of it, some of its sizes are undecided.
            exact = False
        if d.get("linked_with"):
            if d.get("source") in full_groups:
                continue
            # The largest sound box, or a sound box through the traced sizes when the largest
            # leaves them out (torch refuses a spec that excludes its example inputs).
            side = d.get("example_box_side") or d.get("box_side")
            if side is None:
                notes.append(f"{here}: linked, and no sound box is known")
            elif side["count"] != c.get("count"):
                short.append({"input": d["input"], "index": d["index"], "name": name, **{k: side[k] for k in ("lo", "hi", "modulus", "residue")}})
            continue
        if a is None or d.get("undecided"):
            exact = False
            notes.append(f"{here}: undecided ({d.get('undecided')})")
        elif a["count"] != c.get("count"):
            exact = False
            notes.append(f"{here}: claims {c.get('count')} sizes, accepts {a['count']}: {SizeSet(a).describe()}")
            if d.get("suggestions"):
                s = d["suggestions"][0]
                short.append({"input": d["input"], "index": d["index"], "name": name, **{k: s[k] for k in ("lo", "hi", "modulus", "residue")}})
    short = _defer_linked_to_static(audit, short, notes)
    if short or not exact:
        # Why, when the graph says so: its run-time asserts and implied limits that reject sizes.
        notes.extend(_runtime_rows(audit))
    return short, exact and not short


def _trace_shortfall(out: Mapping[str, Any], sheet: Mapping[str, Any], traced: Mapping[Key, int], names: Optional[Mapping[Key, str]], notes: List[str]) -> List[Dict[str, Any]]:
    """What to narrow from the diagnosis of a failing round's whole captured trace (every guard
    torch recorded, not only the ones its error printed), given the spec the error's own diagnosis
    made (``sheet``), per named ``Dim`` of it: to the trace's sound answer (a size alone: its best
    suggestion; a linked size: its side of the group's largest sound box, as an audit narrows)
    where that lies inside what the entry claims and is smaller; else, where the entry claims
    sizes the trace rejects (with every partner) and the error's diagnosis chose another step,
    to the longest run of the entry's own sizes through the traced size (``traced``) that the
    trace accepts. The trace sees only sizes in torch's range for the symbol (from 2 for a backed
    size): a smaller size the entry claims is neither rejected nor dropped (a batch from 1 stays
    from 1). A size linked only to sizes that become static keeps its range
    (:func:`_defer_linked_to_static`: the next program's own guards decide it)."""
    roots = {r["name"]: r for r in sheet["roots"]}
    claims: Dict[Key, List[int]] = {}
    for e in sheet["entries"]:
        v = e["value"]
        r = roots.get(v.get("root")) or {}
        if v["kind"] != "dim" or r.get("min") is None or r.get("max") is None or int(r["max"]) - int(r["min"]) > 100_000:
            continue
        c, o = int(v["coef"]), int(v["offset"])
        claims[(e["input"], int(e["index"]))] = [c * x + o for x in range(int(r["min"]), int(r["max"]) + 1)]
    by_name: Dict[str, Dict[str, Any]] = {}
    for d in out.get("dims", []):
        at = _input_dim(d.get("source") or "")
        if at is not None:
            by_name[d["name"]] = {"input": at[0], "index": at[1], "source": d.get("source"), "d": d}
    short: List[Dict[str, Any]] = []
    for name, b in by_name.items():
        d, key = b["d"], (b["input"], b["index"])
        rng, claimed = d.get("range"), claims.get(key)
        if not rng or claimed is None or d.get("undecided") or d.get("specialized") is not None:
            continue
        lo_t, hi_t = int(rng[0]), int(rng[1])
        linked = bool(d.get("linked_with"))
        passes = d.get("with_some_partner") if linked else d.get("feasible")
        if passes is None:
            continue
        seen = SizeSet(passes)
        within = [x for x in claimed if lo_t <= x <= hi_t]
        side = d.get("box_side") if linked else (d.get("suggestions") or [None])[0]
        inside = set(claimed)
        nested = False
        if side and side.get("count") and side["count"] < len(within):
            m, res = int(side["modulus"]), int(side["residue"])
            nested = all(x in inside for x in range(int(side["lo"]), int(side["hi"]) + 1) if (x - res) % m == 0)
        if nested:
            # As an audit narrows (`_shortfall`): to the trace's sound answer, a linked size to
            # its side of the group's largest sound box.
            lo, hi = int(side["lo"]), int(side["hi"])
            if lo == lo_t:
                lo = min([x for x in claimed if x < lo_t and (x - res) % m == 0] + [lo])
        elif all(x in seen for x in within):
            continue
        else:
            # The trace's own progression is not one of the entry's (the error's diagnosis chose
            # another step): the longest run of the entry's sizes through the traced one that
            # the trace accepts (sizes below torch's range pass), in the entry's own step.
            at = traced.get(key)
            if at is None or at not in inside or len(claimed) < 2:
                continue
            ok = [x < lo_t or (x <= hi_t and x in seen) for x in claimed]
            i = claimed.index(at)
            if not ok[i]:
                continue
            j, k = i, i
            while j > 0 and ok[j - 1]:
                j -= 1
            while k + 1 < len(claimed) and ok[k + 1]:
                k += 1
            lo, hi = claimed[j], claimed[k]
            m, res = abs(claimed[1] - claimed[0]), claimed[0] % abs(claimed[1] - claimed[0])
        short.append({"input": key[0], "index": key[1], "name": (names or {}).get(key) or name, "lo": lo, "hi": hi, "modulus": m, "residue": res})
    audit = {
        "dims": [
            {"input": b["input"], "index": b["index"], "source": b["source"], "linked_with": [by_name[n]["source"] for n in b["d"].get("linked_with") or [] if n in by_name]}
            for b in by_name.values()
        ]
    }
    return _defer_linked_to_static(audit, short, notes)


def _defer_linked_to_static(audit: Mapping[str, Any], short: List[Dict[str, Any]], notes: List[str]) -> List[Dict[str, Any]]:
    """A linked size whose partners all become static this round is not narrowed yet: the link
    was a guard of this program over the partners' dynamic sizes, and the next program, traced
    with them static, has guards of its own (a Swin's batch was tied to H, W through a guard that
    ruled out batch 1 at 224x224; with H, W static that guard is gone and batch 1 runs). The next
    round's audit says what that program accepts, and narrows then if it must."""
    static = {(e["input"], int(e["index"])) for e in short if e["lo"] == e["hi"]}
    at = {d.get("source"): (d["input"], int(d["index"])) for d in audit.get("dims", [])}
    keep: List[Dict[str, Any]] = []
    for e in short:
        key = (e["input"], int(e["index"]))
        d = next((d for d in audit.get("dims", []) if (d["input"], int(d["index"])) == key), None)
        partners = [at.get(s) for s in (d or {}).get("linked_with", [])]
        if key not in static and partners and all(p in static for p in partners):
            notes.append(f"{key[0]}[{key[1]}]: not narrowed this round: the sizes it is linked with become static, and the next program's own guards decide it")
            continue
        keep.append(e)
    return keep


def export(
    model: Any,
    args: Any,
    kwargs: Optional[Mapping[str, Any]] = None,
    *,
    dynamic_shapes: Any = None,
    strict: bool = False,
    max_rounds: int = 4,
    verbose: bool = True,
    cover: bool = False,
    max_programs: int = 4,
    time_budget: Optional[float] = TIME_BUDGET,
    **export_kwargs: Any,
) -> Any:
    """``torch.export.export`` with dimguard in the loop. Returns ``(ExportedProgram, report)``.

    ``dynamic_shapes`` is your spec (a dict by argument name or a tuple in argument order, of
    ``{index: Dim}`` or tuples; plain, derived and shared ``Dim``s, ``Dim.AUTO``/``STATIC``/
    ``DYNAMIC`` and ints). At most ``max_rounds`` exports run; one progress line per round goes
    to stderr unless ``verbose=False``. Other keyword arguments go to ``torch.export.export``.

    ``cover=True`` returns a :class:`dimguard.Dispatch` instead: up to ``max_programs`` exported
    programs chosen greedily by how many sizes of your box they add (the loop's program, one
    with ``Dim.AUTO`` inside your bounds, one per remaining progression of the diagnosis), one
    callable routing each call by its input sizes (docs/PYTHON.md, "Covering every valid size").

    ``time_budget`` bounds the whole loop's wall-clock seconds (default :data:`TIME_BUDGET`;
    ``None``: no bound): a round's ``torch.export.export`` that runs past it is interrupted (on
    the main thread), no round starts after it, and ``report.budget`` says where it ran out.

    torch 2.15's ``ShapesSpec`` (or a ``ParamsSpec``, a dict of ``TensorSpec``, or a model whose
    ``forward`` carries ``@dynamic_spec``, with ``dynamic_shapes`` left out) is taken too: each
    data-dependent failure (``GuardOnDataDependentSymNode``) is diagnosed and the branch that
    holds at every size of the range (else the branch the traced example takes) is added as an
    assumption in your ``ShapeVar`` names, until the export succeeds; ``report.spec`` is the final
    ``ShapesSpec``.

    Raises :class:`ExportError` (with ``.report``) when no round produces a program; errors that
    are not about dynamic shapes are re-raised as the cause of that ``ExportError``.
    """
    import torch

    from ._shapes_spec import spec_from

    if not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    kwargs = dict(kwargs or {})
    top = _top_level(model, args, kwargs)
    shapes = [(n, [int(s) for s in v.shape]) for n, v in top if isinstance(v, torch.Tensor)]
    shapes_spec = spec_from(model, dynamic_shapes)
    budget = _Budget(time_budget)
    if cover and not (isinstance(max_programs, int) and max_programs >= 1):
        raise ValueError(f"max_programs must be a positive int, got {max_programs!r}")
    if shapes_spec is not None:
        first = _export_shapes_spec(model, args, kwargs, shapes_spec, top, shapes, strict, max_rounds, verbose, export_kwargs, budget)
        if not cover:
            return first
        from .cover import build_shapes_spec

        return build_shapes_spec(export, model, top, kwargs, shapes_spec, first, max_programs, verbose, {"strict": strict, "max_rounds": max_rounds, **export_kwargs})
    layout = _Layout(dynamic_shapes, [n for n, _ in top])
    loop = _DimLoop(model, args, kwargs, top, shapes, layout, strict, max_rounds, verbose, budget, export_kwargs)
    ep, rep = loop.run()
    if cover:
        from .cover import build

        return build(export, model, top, kwargs, layout, loop.user_sheet, (ep, rep), max_programs, verbose, export_kwargs)
    return ep, rep


class _Turn:
    """One round of the plain-``Dim`` loop: what it exported at and what came back."""

    def __init__(self, n: int, entry: Dict[str, Any], t1: float, t_torch: float, oblivious: bool, point: Mapping[Key, int], round_shapes: List[Tuple[str, List[int]]], trace: Any):
        self.n, self.entry, self.t1, self.t_torch = n, entry, t1, t_torch
        self.oblivious, self.point, self.round_shapes, self.trace = oblivious, point, round_shapes, trace
        # The diagnosis of the round's whole trace, once read (:meth:`_DimLoop.whole`).
        self.whole: Optional[Dict[str, Any]] = None
        self.whole_read = False


class _DimLoop:
    """The export loop for a plain-``Dim`` spec (:func:`export`): one :meth:`round` per
    ``torch.export.export``; a violation re-plans the spec (:meth:`replan`), a program is
    audited (:meth:`exported`), and :meth:`finish` checks the user's own example against the
    returned program and writes the report."""

    def __init__(self, model: Any, args: Tuple[Any, ...], kwargs: Dict[str, Any], top: List[Tuple[str, Any]], shapes: List[Tuple[str, List[int]]], layout: Any, strict: bool, max_rounds: int, verbose: bool, budget: _Budget, export_kwargs: Mapping[str, Any]):
        import torch

        self.model, self.args, self.kwargs, self.top, self.shapes, self.layout = model, args, kwargs, top, shapes, layout
        self.strict, self.max_rounds, self.verbose, self.budget, self.export_kwargs = strict, max_rounds, verbose, budget, export_kwargs
        self.sheet = layout.sheet()
        self.user_sheet = json.loads(json.dumps(self.sheet))
        self.tensor_inputs = [n for n, v in top if isinstance(v, torch.Tensor)]
        self.rounds: List[Dict[str, Any]] = []
        self.best: Optional[Tuple[Any, Dict[str, Any], Dict[str, Any], Dict[str, Any], List[Tuple[str, List[int]]]]] = None
        self.last_error: Optional[BaseException] = None
        self.traced = dict(shapes)
        # The example's sizes of 0 or 1 the spec makes dynamic: every round exports under OBLIVIOUS,
        # traced at them (the printed spec says to export so).
        self.small = _small_sizes(self.sheet, shapes)
        # Set when a round under OBLIVIOUS specialized one of them anyway, or propagates real
        # tensors (a value read from data at batch 1 makes torch guard on it): from then on the
        # rounds trace them at 2 outside OBLIVIOUS, as torch keeps them dynamic there.
        self.small_off = False
        # Set with small_off the first time: the next rounds trace those sizes at 2 *inside*
        # OBLIVIOUS (timm's mobilevitv2_050: 6.8 CPU s, against more than 15 minutes outside it,
        # torch's SymInt arithmetic in its unfold and fold); cleared when torch specializes them
        # there too, and then the rounds trace at 2 outside it.
        self.small_two = False
        self.small_two_tried = False
        # Roots a derived size of which torch specialized at the example ("You marked 32*_w + 16 as
        # dynamic but your code specialized it to be a constant (48)"): traced inside from then on.
        self.inside: List[str] = []
        # The user's name for each dimension of their spec: a size dimguard narrows keeps it.
        self.user_names = _user_names(self.user_sheet)
        # Why a size the user named became Dim.AUTO, where the loop knows (said in the spec's comment).
        self.auto_why: Dict[Key, str] = {}
        self.real = False
        # Roots torch's solver asked to specialize whose diagnosed window was tried (once each).
        self.window_tried: set = set()

    def report(self, exported: bool, audit: Optional[Dict[str, Any]], final: Dict[str, Any]) -> ExportReport:
        """The report of the loop so far, ``final`` the sheet of the program returned."""
        rounds, best = self.rounds, self.best
        torch_s = sum(r["torch_seconds"] for r in rounds)
        ours = sum(r["dimguard_seconds"] for r in rounds)
        static = _static(best[0], self.tensor_inputs) if best is not None and audit is not None else []
        narrowed = _narrowed(self.user_sheet, static, audit, rounds)
        final = _named_entries(final, self.user_names, static, narrowed, self.auto_why)
        header = _context_header(best[2].get("export_context"), final, self.small, best[2].get("export_shapes")) if best is not None else ""
        return ExportReport(
            {
                "exported": exported,
                "rounds": rounds,
                "spec": header + _native.spec_code(json.dumps(final)),
                "no_reexport": None,
                "model_checks": [],
                "export_context": best[2].get("export_context") if header and best is not None else None,
                "export_shapes": best[2].get("export_shapes") if header and best is not None else None,
                "budget": self.budget.record,
                "sheet": final,
                "dims": (audit or {}).get("dims", []),
                "joint": (audit or {}).get("joint", []),
                **{k: (audit or {}).get(k, []) for k in FACT_KEYS},
                "unaudited": (audit or {}).get("unaudited"),
                "audit": audit,
                "static": static,
                "spec_vs_program": _spec_vs_program(final, audit),
                "narrowed": narrowed,
                "torch_seconds": torch_s,
                "dimguard_seconds": ours,
                "overhead": (ours / torch_s) if torch_s else None,
            }
        )

    def run(self) -> Tuple[Any, ExportReport]:
        """Every round, then :meth:`finish`."""
        for n in range(1, self.max_rounds + 1):
            left = self.budget.left()
            if left is not None and left <= 0:
                self.rounds[-1]["notes"].append(self.budget.spent(n - 1, f"before round {n}"))
                _progress(self.verbose, self.rounds[-1]["notes"][-1])
                break
            if not self.round(n):
                break
        return self.finish()

    def _done(self, turn: _Turn, what: str) -> None:
        """Closes a round: its dimguard seconds, and its progress line."""
        turn.entry["dimguard_seconds"] = time.perf_counter() - turn.t1
        _progress(self.verbose, f"round {turn.n}/{self.max_rounds}: torch.export {turn.t_torch:.1f} s: {what}")

    def round(self, n: int) -> bool:
        """One ``torch.export.export`` with the current sheet; whether another round follows."""
        import torch

        t1 = time.perf_counter()
        self.sheet, shifted = _torch_form(self.sheet)
        spec_code = _native.spec_code(json.dumps(self.sheet))
        ds = self.layout.to_torch(self.sheet)
        # Example sizes inside this round's spec, where torch keeps them dynamic.
        oblivious = bool(self.small) and not self.real and (not self.small_off or self.small_two)
        point, moved = _choose_point(self.sheet, self.traced, self.inside, self.small if oblivious and not self.small_two else ())
        round_shapes = _shapes_at(self.shapes, point)
        r_args, r_kwargs = self.args, self.kwargs
        if moved:
            from .cover import resized

            r_args, r_kwargs = resized(self.top, point)
        t_ours = time.perf_counter() - t1
        t0 = time.perf_counter()
        ep, err, out_of_time = None, None, False
        with quiet() as log:
            try:
                with capture() as trace, sys.modules[__name__].round_context(n), _real_tensors(self.real), _oblivious(oblivious), self.budget.during():
                    ep = torch.export.export(self.model, r_args, r_kwargs, dynamic_shapes=ds, strict=self.strict, **self.export_kwargs)
            except BudgetSpent:
                out_of_time = True
            except Exception as e:  # noqa: BLE001 - classified below; non-shape errors re-raised
                err = e
        t_torch = time.perf_counter() - t0
        if out_of_time:
            why = self.budget.spent(n, f"in round {n}'s torch.export (after {t_torch:.1f} s)")
            self.rounds.append({"round": n, "spec": spec_code, "torch_seconds": t_torch, "dimguard_seconds": t_ours, "outcome": "budget", "error": why, "notes": shifted + moved, "log": log.text, "lines": [], "guards": []})
            _progress(self.verbose, f"round {n}/{self.max_rounds}: {why}")
            return False
        entry: Dict[str, Any] = {"round": n, "spec": spec_code, "torch_seconds": t_torch, "notes": shifted + moved, "log": log.text}
        entry["export_context"] = OBLIVIOUS if oblivious else REAL if self.real else None
        if (oblivious and self.small_two) or (self.real and any(point.get(k) != dict(self.shapes)[k[0]][k[1]] for k in self.small)):
            # The sizes to export at in that context: the example's 0 or 1 moved to 2.
            entry["export_shapes"] = {k: list(v) for k, v in round_shapes}
        if oblivious and n == 1:
            entry["notes"].insert(0, f"{', '.join(f'{i}[{j}]' for i, j in self.small)}: a size of 0 or 1 in your example, kept dynamic: exported under {OBLIVIOUS} (torch specializes it otherwise; the printed spec says so)")
        entry["example"] = {k: list(v) for k, v in round_shapes}
        entry["example_seconds"] = t_ours
        self.rounds.append(entry)
        turn = _Turn(n, entry, time.perf_counter() - t_ours, t_torch, oblivious, point, round_shapes, trace)
        # Where this round's guards come from (the trace captured in-process during the round).
        t_p = time.perf_counter()
        try:
            entry.update(provenance(trace, round_shapes))
        except ValueError as pe:
            entry.update({"lines": [], "guards": []})
            entry["notes"].append(f"the round's trace could not be read ({pe})")
        entry["provenance_seconds"] = time.perf_counter() - t_p
        if err is not None:
            return self.failed(turn, err)
        return self.exported(turn, ep)

    def failed(self, turn: _Turn, err: BaseException) -> bool:
        """A round torch refused: the next round's sheet, or the end of the loop."""
        entry, n = turn.entry, turn.n
        self.last_error = err
        kind = "data_dependent" if _is_data_dependent(err) else _classify(err)
        entry["outcome"] = kind
        entry["error"] = _first_line(err)
        if kind == "data_dependent" and self.best is None:
            return self.data_dependent(turn, err)
        if self.best is not None:
            # A later, narrower spec failed: the audited program stands.
            entry["notes"].append("keeping the audited program of round %d" % self.best[2]["round"])
            self._done(turn, f"{entry['error']}; keeping round {self.best[2]['round']}'s program")
            return False
        new = None
        marked = _marked_constant(_text_of(err))
        gave_up = [e for e, v in marked if turn.oblivious and v in (0, 1) and any(r in _named_roots(self.sheet, e) for r in _roots_at(self.sheet, self.small))]
        if kind == "constraint_violation" and gave_up:
            # torch specialized a 0 or 1 of the example even under OBLIVIOUS: the next round
            # traces it at 2 (the spec stays).
            entry["notes"].append(f"torch specialized {', '.join(gave_up)} at the example's 0 or 1 even under backed_size_oblivious: {self.leave_example()}")
            self._done(turn, "constraint violation; " + entry["notes"][-1])
            return True
        small_roots = _roots_at(self.sheet, self.small)
        fixed_small = [r for r in _solver_specialized(_text_of(err), self.sheet, turn.point) + _named_roots(self.sheet, " ".join(e for e, _ in marked)) if r in small_roots]
        if kind == "constraint_violation" and turn.oblivious and self.small_two and fixed_small:
            # Traced at 2 inside OBLIVIOUS, torch still asks to specialize the example's 0 or 1
            # sizes: the next round traces them at 2 outside it (the spec stays).
            entry["notes"].append(f"torch asks to specialize {', '.join(dict.fromkeys(fixed_small))} traced at 2 under backed_size_oblivious: {self.leave_example()}")
            self._done(turn, "constraint violation; " + entry["notes"][-1])
            return True
        fresh = [r for r in _named_roots(self.sheet, " ".join(e for e, _ in marked)) if r not in self.inside]
        if kind == "constraint_violation" and fresh and all(not _is_root(self.sheet, e) for e, _ in marked):
            # A derived size specialized at the example: its root sat on a bound of the
            # spec (pytorch#176349). The spec stays; the next round traces inside it.
            self.inside.extend(fresh)
            entry["notes"].append("; ".join(f"torch specialized {e} at {v}" for e, v in marked) + f": the example sat on a bound of {', '.join(fresh)}; tracing inside its range")
            self._done(turn, "constraint violation; " + entry["notes"][-1])
            return True
        if kind == "constraint_violation":
            new = self.replan(turn, err)
        elif kind == "solver_crash":
            new = _auto(self.sheet, _named_roots(self.sheet, str(err)) or None)
            new["notes"].insert(0, "torch's solver crashed instead of reporting guards")
        if new is not None and turn.oblivious:
            kept_small = _keep_small(new, self.sheet, self.small)
            if kept_small:
                # Guards recorded at the example's 1 under OBLIVIOUS (timm's mobilevitv2:
                # `Eq(s77, 1)`) would fix it there: it is traced at 2 from now on instead, and
                # keeps the spec's range.
                new = {**kept_small, "notes": list(new.get("notes", [])) + [f"the trace at the example's 0 or 1 under backed_size_oblivious fixes {', '.join(f'{i}[{j}]' for i, j in self.small)}: kept dynamic, {self.leave_example()}"]}
        if new is None or _same(new, self.sheet):
            self._done(turn, f"{entry['error']}; nothing left to change")
            return False
        entry["notes"].extend(new.get("notes", []))
        self.sheet = {"roots": new["roots"], "entries": new["entries"], "notes": []}
        self._done(turn, f"{kind.replace('_', ' ')}; " + "; ".join(entry["notes"]))
        return True

    def leave_example(self) -> str:
        """The example's 0 or 1 sizes are traced at 2 from the next round on: inside OBLIVIOUS
        the first time (torch's trace there is never the slower one), outside it after torch
        specialized them inside too. Returns what the round's note says."""
        first = not self.small_off
        self.small_off = True
        self.small_two = first and not self.small_two_tried
        self.small_two_tried = True
        return "traced at 2 inside that context instead (the printed spec says to export at 2 there)" if self.small_two else "traced at 2 outside that context instead"

    def data_dependent(self, turn: _Turn, err: BaseException) -> bool:
        """An expression over a value the model reads back from a tensor (HF Longformer's
        ``.item()`` of a size: "8*u1 < 40 (unhinted: 8*u1 < s70)"): no spec can state it. Once,
        the next pass propagates real tensors (draft_export's mechanism): torch decides it at the
        example and asserts that at run time; the audit decides."""
        entry = turn.entry
        if self.real:
            entry["notes"].append("data-dependent even with real tensors propagated: nothing to change")
            self._done(turn, f"{entry['error']}; nothing left to change")
            return False
        self.real = True
        mixed = _mixed_roots(self.sheet, _text_of(err), turn.trace)
        if mixed:
            # The expression compares such a value with input sizes (`8*u1 < s70`, s70 =
            # seq): torch decides it at the example's values, and deciding it can fix
            # those sizes (Longformer: seq at 64), which under a named Dim is one more
            # failed round. Dim.AUTO (in the user's bounds) lets torch do what it must in
            # this pass; the report reads what the program does with them.
            new = _auto(self.sheet, mixed)
            for e in self.sheet["entries"]:
                if e["value"]["kind"] == "dim" and e["value"]["root"] in mixed:
                    self.auto_why[(e["input"], int(e["index"]))] = "Dim.AUTO: torch compares it with a value the model reads from a tensor"
            self.sheet = {"roots": new["roots"], "entries": new["entries"], "notes": []}
            entry["notes"].append(
                f"an expression over a value the model reads from a tensor, compared with {', '.join(mixed)}: the next pass propagates real tensors (draft_export's mechanism), with {', '.join(mixed)} as Dim.AUTO (torch may fix them there; the report says)"
            )
        else:
            entry["notes"].append("an expression over a value the model reads from a tensor: the next pass propagates real tensors (draft_export's mechanism); the spec stays")
        self._done(turn, "data-dependent; " + entry["notes"][-1])
        return True

    def replan(self, turn: _Turn, err: BaseException) -> Optional[Dict[str, Any]]:
        """The sheet after a constraint violation: the error diagnosed with the traced sizes,
        then the round's whole guard set; ``None`` when nothing is to change."""
        entry = turn.entry
        try:
            new = self.diagnosed(turn, err)
            return self.whole_trace(turn, new)
        except ValueError as de:
            rng = _range_error(str(err))
            if rng is not None:
                # torch refused the example itself; _choose_point keeps examples inside
                # the spec, so this is dimguard's mistake: say so, change nothing.
                entry["notes"].append(f"torch refused the example: {rng[0]} is outside the spec's range {rng[1]}..{rng[2]}")
            else:
                # Never a guess: switching the sizes torch names to Dim.AUTO and tracing
                # again gave a program whose report was wrong (raft_small, issue 32).
                entry["notes"].append(f"dimguard could not read the error ({de}): nothing to change")
            return None

    def diagnosed(self, turn: _Turn, err: BaseException) -> Optional[Dict[str, Any]]:
        """The error's guards diagnosed and merged into the sheet: a sound window tried before
        ``Dim.STATIC`` where torch's solver asks to specialize, ``Dim.AUTO`` where torch keeps
        specializing what the diagnosis keeps. Raises ``ValueError`` when the error cannot be read."""
        entry, sheet = turn.entry, self.sheet
        t_d = time.perf_counter()
        out = json.loads(_native.diagnose(_text(err), [], turn.round_shapes, json.dumps(sheet), "auto", 10_000))
        entry["diagnose_seconds"] = time.perf_counter() - t_d
        entry["diagnosis"] = {k: v for k, v in out.items() if k != "spec"}
        new = out["spec"]
        forced = _solver_specialized(_text(err), sheet, turn.point)
        windows = _windows(new, sheet, [r for r in forced if r not in self.window_tried])
        if windows:
            # torch's solver asks to specialize these at the traced size, while the
            # diagnosis keeps a sound window through it (HF Dinov2: h == w and
            # (h//14)**2 == 256 specialize h at 224 over 64..512, and one shared
            # Dim 224..237 exports): that window is tried first, once; Dim.STATIC
            # only if torch specializes them again.
            self.window_tried.update(windows)
            forced = [r for r in forced if r not in windows]
            new = {
                **new,
                "notes": list(new.get("notes", []))
                + [
                    f"torch's solver asks to specialize {', '.join(windows)} at the traced size; "
                    f"trying the diagnosis's sound window first ({'; '.join(windows.values())}), Dim.STATIC only if torch specializes it again"
                ],
            }
        rest = [r for r in forced if r not in windows and r not in self.window_tried]
        if rest:
            # torch's error prints no guard of these (EfficientFormerV2: "specialized value of
            # 224" for w, every guard printed is over h), so its diagnosis fixes them; the
            # round's whole trace has their guards, and the window it keeps is tried first, once.
            new, traced = self.trace_windows(turn, new, rest)
            if traced:
                self.window_tried.update(traced)
                forced = [r for r in forced if r not in traced]
                new = {
                    **new,
                    "notes": list(new.get("notes", []))
                    + [
                        f"torch's solver asks to specialize {', '.join(traced)} at the traced size, and its error prints no guard of {'them' if len(traced) > 1 else 'it'}; "
                        f"trying the window the round's whole trace keeps first ({'; '.join(traced.values())}), Dim.STATIC only if torch specializes it again"
                    ],
                }
        if forced:
            # torch's solver specialized these at a traced size of 2 or more that
            # dimguard keeps dynamic (raft_small: it cannot solve (3*batch - 1) //
            # batch == 2, true at every batch): it will again, whatever the spec says
            # (Dim.AUTO there ends in torch's range conflict). Said in report.narrowed.
            fixed = _static_roots(new, forced)
            if not _same(fixed, new):
                new = {**fixed, "notes": list(new.get("notes", [])) + [f"torch's solver requires {', '.join(forced)} specialized (at the traced size; its guards do not say why): Dim.STATIC, traced at your example's size"]}
        if not _same(new, sheet):
            return new
        # The dims torch complained about, by name (a derived one, ``32*_w + 16``,
        # names its root) or source; never every dim.
        said = " ".join(f"{d['name']} {d.get('source') or ''}" for d in out["dims"])
        named = _named_roots(sheet, said) or _named_roots(sheet, _text(err))
        forced = [r for r in _specialized_roots(_text(err)) if r in named]
        if forced:
            # torch's own solver requires these specialized (raft_small: it cannot
            # solve (3*batch - 1) // batch == 2, true at every batch), whatever the
            # spec says: Dim.AUTO there only ends in torch's range conflict.
            new = _static_roots(sheet, forced)
            new["notes"].insert(0, f"the diagnosis does not change the spec, and torch's solver requires {', '.join(forced)} specialized: Dim.STATIC, traced at your example's size")
            return new
        if named:
            new = _auto(sheet, named)
            new["notes"].insert(0, "the diagnosis does not change the spec (torch keeps specializing): Dim.AUTO")
            return new
        entry["notes"].append("the diagnosis does not change the spec, and torch names no dimension of it: nothing to change")
        return None

    def whole(self, turn: _Turn) -> Optional[Dict[str, Any]]:
        """The diagnosis of the round's whole captured trace (once per round); ``None``, with a
        note, when it cannot be read."""
        if not turn.whole_read:
            turn.whole_read = True
            t_t = time.perf_counter()
            try:
                turn.whole = json.loads(_native.diagnose(turn.trace.text(), [], turn.round_shapes, None, "auto", 10_000))
            except ValueError as te:
                turn.whole = None
                turn.entry["notes"].append(f"the round's whole trace could not be diagnosed ({te}): the error's guards alone decide")
            turn.entry["trace_diagnose_seconds"] = time.perf_counter() - t_t
        return turn.whole

    def trace_windows(self, turn: _Turn, new: Dict[str, Any], roots: Sequence[str]) -> Tuple[Dict[str, Any], Dict[str, str]]:
        """Of ``roots`` (torch's solver asks to specialize them; the error's diagnosis ``new``
        fixes them, the error printing no guard of theirs), those the round's whole trace keeps
        in a sound window through the traced size, narrower than the sheet's: ``new`` with them
        in that window (as :meth:`whole_trace` narrows), and root -> the window in words."""
        whole = self.whole(turn)
        if whole is None:
            return new, {}
        free = _with_roots_of(new, self.sheet, roots)
        traced_at = {(inp, i): int(v) for inp, sh in turn.round_shapes for i, v in enumerate(sh)}
        on = {(e["input"], int(e["index"])) for e in self.sheet["entries"] if e["value"].get("kind") == "dim" and e["value"]["root"] in roots}
        short = [s for s in _trace_shortfall(whole, free, traced_at, self.user_names, []) if (s["input"], int(s["index"])) in on]
        if not short:
            return new, {}
        narrowed = json.loads(_native.narrow(json.dumps(free), json.dumps(short)))
        found = _windows(narrowed, self.sheet, roots)
        if not found:
            return new, {}
        kept = _with_roots_of(new, narrowed, list(found))
        # The error's diagnosis said these were fixed ("the code specialized it"): no longer so.
        said = tuple(f"{e['input']}[{e['index']}]:" for e in self.sheet["entries"] if e["value"].get("kind") == "dim" and e["value"]["root"] in found)
        kept["notes"] = [n for n in new.get("notes", []) if not n.startswith(said)]
        return kept, found

    def whole_trace(self, turn: _Turn, new: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
        """The whole guard set of the failing trace (captured in-process), decided at once:
        torch's error prints the guards that violate the spec over one size, and a guard over
        several sizes (hf_swin's tie of H, W and the batch through its windows) shows only in
        the next round's program. Narrowing the named Dims to the trace's answer now saves that
        round; what the error's own diagnosis made static or Dim.AUTO stays so."""
        whole = self.whole(turn)
        if whole is None:
            return new
        base = {"roots": (new or self.sheet)["roots"], "entries": (new or self.sheet)["entries"], "notes": []}
        more: List[str] = []
        traced_at = {(inp, i): int(v) for inp, sh in turn.round_shapes for i, v in enumerate(sh)}
        short = _trace_shortfall(whole, base, traced_at, self.user_names, more)
        if short:
            narrowed = json.loads(_native.narrow(json.dumps(base), json.dumps(short)))
            if not _same(narrowed, base):
                more = [f"the round's whole guard set (its trace): {n}" for n in narrowed["notes"]] + more
                new = {**narrowed, "notes": list((new or {}).get("notes", [])) + more}
        return new

    def exported(self, turn: _Turn, ep: Any) -> bool:
        """A program: audited in memory, and narrowed once more where it accepts fewer sizes
        than its spec claims; whether another round follows."""
        entry = turn.entry
        audit = _audited(ep, self.tensor_inputs, entry)
        entry["outcome"] = "exported"
        self.best = (ep, audit, entry, self.sheet, turn.round_shapes)
        short, exact = _shortfall(audit, entry["notes"], self.user_names)
        if audit.get("unaudited"):
            self._done(turn, "exported; the program could not be audited (report.accepts raises dimguard.Undecided)")
            return False
        short, lost = self.keeping_example(audit, short)
        if lost:
            entry["notes"].append(lost)
        if not short:
            if exact:
                self._done(turn, "exported; audit: accepts every claimed size")
            elif lost:
                self._done(turn, f"exported; audit: accepts fewer sizes than it claims (see report.dims); {lost}")
            else:
                self._done(turn, "exported; audit: accepts fewer sizes than it claims and no narrower spec is known (see report.dims)")
            return False
        narrowed = json.loads(_native.narrow(json.dumps(self.sheet), json.dumps(short)))
        if turn.n == self.max_rounds or _same(narrowed, self.sheet):
            self._done(turn, "exported; audit: accepts fewer sizes than it claims (see report.dims)")
            return False
        entry["notes"].extend(narrowed["notes"])
        self._done(turn, "exported, but accepts fewer sizes than it claims; narrowing: " + "; ".join(narrowed["notes"]))
        self.sheet = {"roots": narrowed["roots"], "entries": narrowed["entries"], "notes": []}
        return True

    def keeping_example(self, audit: Mapping[str, Any], short: List[Dict[str, Any]]) -> Tuple[List[Dict[str, Any]], str]:
        """Of the narrowings ``short``, those to take, where the program accepts the user's own
        example: a narrowing that leaves the example's size out, or keeps fewer of a size's
        values than the program accepts (its accepted set is no single progression), is not
        taken. It would trade sizes the program accepts, or the example itself, for a spec that
        claims exactly (ItemOfSize: the odd sizes 9..63 of the 49 the program accepts, without
        the example's 20; with chunks of 3, the sizes 1 mod 3 of those 1 or 2 mod 3). The
        program's audit says exactly which sizes it accepts. Returns the narrowings to take, and
        a note naming the others ("" when none)."""
        own = dict(self.shapes)
        if _verdict(audit, own)["accepted"] is not True:
            return short, ""
        dims = {(d["input"], int(d["index"])): d for d in audit.get("dims", [])}

        def keeps(s: Mapping[str, Any]) -> bool:
            key = (s["input"], int(s["index"]))
            shape = own.get(key[0], [])
            v = shape[key[1]] if key[1] < len(shape) else None
            lo, hi, m, r = int(s["lo"]), int(s["hi"]), int(s["modulus"]), int(s["residue"])
            if v is None or not (lo <= v <= hi and (v - r) % m == 0):
                return False
            d = dims.get(key) or {}
            acc = d.get("accepted")
            if d.get("linked_with") or not acc or acc.get("count") is None:
                return True
            first = lo + (r - lo) % m
            return first > hi or (hi - first) // m + 1 >= int(acc["count"])

        lost = [s for s in short if not keeps(s)]
        if not lost:
            return short, ""
        said = ", ".join(f"{s['input']}[{s['index']}] to {s['lo']}..{s['hi']}" + (f" step {s['modulus']}" if int(s["modulus"]) != 1 else "") for s in lost)
        return [s for s in short if keeps(s)], f"not narrowed ({said}): that leaves out your example's size or sizes this program accepts; report.dims says which sizes it accepts"

    def finish(self) -> Tuple[Any, ExportReport]:
        """The audited program and its report, the user's own example decided against it;
        :class:`ExportError` when no round produced one."""
        if self.best is None:
            rep = self.report(False, None, self.sheet)
            raise ExportError(
                f"dimguard.export: no round produced a program ({len(self.rounds)} rounds; last: {self.rounds[-1].get('error')})",
                rep,
            ) from self.last_error
        ep, audit, _, exported_sheet, final_shapes = self.best
        rep = self.report(True, audit, exported_sheet)
        own_verdict = rep.verdict(dict(self.shapes))
        if own_verdict["accepted"] is not True:
            # Never silently: the program was traced at other sizes, and torch's guards there
            # leave the user's own example out (or a run-time assert on data leaves it undecided).
            own = ", ".join(f"{n}={tuple(s)}" for n, s in self.shapes)
            if own_verdict["accepted"] is False:
                traced_at = ", ".join(f"{n}={tuple(s)}" for n, s in final_shapes)
                if traced_at == own:
                    # Traced at the very sizes it rejects: say what rejects them, never "traced at" the same.
                    why = f"the returned program does not accept your example inputs ({own}), the sizes it was traced at: {own_verdict['reason']}"
                else:
                    why = f"the returned program does not accept your example inputs ({own}); it was traced at {traced_at}: {own_verdict['reason']}"
            else:
                why = f"whether the returned program accepts your example inputs ({own}) is undecided: {own_verdict['reason']}"
            self.rounds[-1]["notes"].append(why)
            _progress(self.verbose, why)
            rep = self.report(True, audit, exported_sheet)
        return ep, rep


def _audited(ep: Any, tensor_inputs: Sequence[str], entry: Dict[str, Any]) -> Dict[str, Any]:
    """The program audited in memory (``entry["audit_seconds"]`` its time); a program that
    cannot be audited is Undecided, never a guess: ``unaudited`` says why, and
    ``report.accepts`` raises ``dimguard.Undecided``."""
    placeholders = list(ep.graph_signature.user_inputs)
    mapping = dict(zip(placeholders, tensor_inputs)) if len(placeholders) == len(tensor_inputs) else {}
    t_a = time.perf_counter()
    try:
        audit = _audit(ep, mapping)
    except ValueError as ae:
        audit = {"dims": [], "joint": [], "runtime": [], "unaudited": str(ae)}
        entry["notes"].append(f"the program could not be audited ({ae})")
    entry["audit_seconds"] = time.perf_counter() - t_a
    return audit


def _real_tensors(on: bool) -> ContextManager[Any]:
    """torch's real-tensor propagation for one export (``draft_export``'s mechanism), when on."""
    if not on:
        return contextlib.nullcontext()
    import torch

    return torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True)


def _input_dim(src: str) -> Optional[Tuple[str, int]]:
    """``x.shape[2]`` / ``L['x'].size()[2]`` -> ``("x", 2)``."""
    m = re.fullmatch(r"(\w+)\.(?:shape\[|size\(\)\[)(\d+)\]", src.replace(" ", "")) or re.fullmatch(
        r"L\['(?:kwargs'\]\[')?(\w+)'\]\.size\(\)\[(\d+)\]", src.replace(" ", "")
    )
    return (m.group(1), int(m.group(2))) if m else None


def _is_data_dependent(e: BaseException) -> bool:
    cur: Optional[BaseException] = e
    seen = set()
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if type(cur).__name__ == "GuardOnDataDependentSymNode" or "Could not guard on data-dependent expression" in str(cur):
            return True
        cur = cur.__cause__ or cur.__context__
    return False


def _cost(d: Mapping[str, Any]) -> str:
    """What an assumption costs, in words."""
    if d.get("range") is None:  # several sizes: combinations of their ranges
        k = d.get("removes")
        return f"{d['guard']} is {d.get('holds') or 'not counted'}; the traced sizes take this branch" + (f": this removes {k} combinations" if k is not None else "")
    lo, hi = d["range"]
    total = hi - lo + 1
    k = d["removes"]
    if d.get("always") is not None:
        return f"{d['guard']} is {str(d['always']).lower()} at every size of {lo}..{hi}: this removes nothing"
    return f"the traced size {d['example']} takes this branch: this removes {k} of the {total} sizes of {lo}..{hi}"


def _export_shapes_spec(
    model: Any,
    args: Tuple[Any, ...],
    kwargs: Mapping[str, Any],
    spec: Any,
    top: List[Tuple[str, Any]],
    shapes: List[Tuple[str, List[int]]],
    strict: bool,
    max_rounds: int,
    verbose: bool,
    export_kwargs: Mapping[str, Any],
    budget: "_Budget",
) -> Tuple[Any, ExportReport]:
    """The loop for a ``ShapesSpec``. Each round is one traced pass that records every
    data-dependent expression torch meets (``_round.collecting``: torch decides each at the
    example and goes on); all of them are decided at once (see :func:`_decide`) and added as
    assumptions, and the next round exports with them: two rounds where one pass shows every
    expression. A round whose pass met none returns its program, audited."""
    import torch

    from ._round import collecting, quiet
    from ._shapes_spec import detached

    tensor_inputs = [n for n, v in top if isinstance(v, torch.Tensor)]
    ids = {id(v): n for n, v in top if isinstance(v, torch.Tensor)}
    rounds: List[Dict[str, Any]] = []
    last_error: Optional[BaseException] = None
    # Per added assumption: the sizes it names and, over one input size, the sizes it keeps (the
    # program's run-time assert rejects the others).
    kept: List[Dict[str, Any]] = []

    def report(exported: bool, audit: Optional[Dict[str, Any]], ep: Any = None) -> ExportReport:
        torch_s = sum(r["torch_seconds"] for r in rounds)
        ours = sum(r["dimguard_seconds"] for r in rounds)
        # A program from a pass propagating real tensors: torch exports its spec again in no
        # context (see _NO_SHAPES_SPEC_REEXPORT), so the spec is printed as comments under why.
        never = _NO_SHAPES_SPEC_REEXPORT if exported and rounds and rounds[-1].get("real") else None
        checks = rounds[-1].get("model_checks", []) if never is not None else []
        return ExportReport(
            {
                "exported": exported,
                "rounds": rounds,
                "spec": spec.code() if never is None else _commented(never, spec.code(), checks),
                "no_reexport": never,
                "model_checks": checks,
                # A ShapeVar is unbacked: torch keeps a size of 0 or 1 dynamic in any context.
                "export_context": None,
                "export_shapes": None,
                "budget": budget.record,
                "sheet": None,
                "assumptions": [{"code": c, "note": m, **{k: v for k, v in k_.items() if k != "code"}} for (_, (c, m)), k_ in zip(spec.added, kept)],
                "dims": (audit or {}).get("dims", []),
                "joint": (audit or {}).get("joint", []),
                **{k: (audit or {}).get(k, []) for k in FACT_KEYS},
                "unaudited": (audit or {}).get("unaudited"),
                "audit": audit,
                "static": _static(ep, tensor_inputs) if ep is not None else [],
                "narrowed": [k_["narrowed"] for k_ in kept if k_.get("narrowed")],
                "torch_seconds": torch_s,
                "dimguard_seconds": ours,
                "overhead": (ours / torch_s) if torch_s else None,
            }
        )

    real = False
    for n in range(1, max_rounds + 1):
        left = budget.left()
        if left is not None and left <= 0:
            rounds[-1]["notes"].append(budget.spent(n - 1, f"before round {n}"))
            _progress(verbose, rounds[-1]["notes"][-1])
            break
        code = spec.code()
        t0 = time.perf_counter()
        ep, err, out_of_time = None, None, False
        with quiet() as log, collecting(ids, real=real) as found:
            try:
                with detached(model), sys.modules[__name__].round_context(n), budget.during():
                    ep = torch.export.export(model, args, dict(kwargs), dynamic_shapes=spec.torch_spec(), strict=strict, **export_kwargs)
            except BudgetSpent:
                out_of_time = True
            except Exception as e:  # noqa: BLE001 - classified below; non-shape errors re-raised
                err = e
        t_torch = time.perf_counter() - t0
        if out_of_time:
            why = budget.spent(n, f"in round {n}'s torch.export (after {t_torch:.1f} s)")
            rounds.append({"round": n, "spec": code, "torch_seconds": t_torch, "dimguard_seconds": 0.0, "outcome": "budget", "error": why, "notes": [], "lines": [], "guards": [], "log": log.text, "real": real})
            _progress(verbose, f"round {n}/{max_rounds}: {why}")
            break
        t1 = time.perf_counter()
        entry: Dict[str, Any] = {"round": n, "spec": code, "torch_seconds": t_torch, "notes": [], "lines": [], "guards": [], "log": log.text, "real": real}
        rounds.append(entry)
        if err is None and not found:
            entry["outcome"] = "exported"
            audit = _audited(ep, tensor_inputs, entry)
            entry["dimguard_seconds"] = time.perf_counter() - t1
            added = len(spec.added)
            _progress(verbose, f"round {n}/{max_rounds}: torch.export {t_torch:.1f} s: exported" + (f" with {added} assumption{'s' if added != 1 else ''} added" if added else ""))
            return ep, report(True, audit, ep)
        items: List[Tuple[BaseException, Any, Any, Dict[str, Any]]] = [(r.error, r.expr, r.value, r.symbols) for r in found]
        if err is not None:
            last_error = err
            if _is_data_dependent(err):
                # Raised even so: an expression over a value with no example value (one the
                # model reads back from a tensor, ``.item()`` of a size: HF Longformer). The next
                # pass propagates real tensors too (what draft_export does), so torch decides
                # those at the example as well and asserts each decision at run time.
                items.append((err, getattr(err, "cond", None), None, {}))
                if not real:
                    real = True
                    entry["notes"].append("an expression over a value the model reads from a tensor: the next pass propagates real tensors (draft_export's mechanism)")
            elif not found:
                entry["outcome"] = _classify(err)
                entry["error"] = _first_line(err)
                entry["dimguard_seconds"] = time.perf_counter() - t1
                _progress(verbose, f"round {n}/{max_rounds}: torch.export {t_torch:.1f} s: {entry['error']}; not a data-dependent failure")
                break
        entry["outcome"] = "data_dependent"
        entry["error"] = _first_line(items[0][0])
        entry["data_dependent"] = len(items)
        added_now, undecided = _decide(spec, items, shapes, entry, kept)
        added_now += _substitute_equalities(spec, entry, kept, len(spec.added) - added_now)
        if not added_now and err is None:
            # Every expression of this pass is already an assumption of the spec (torch could
            # not use it while tracing: raft_small's (3*batch - 1) // batch == 2), or none can
            # be stated: the pass's program stands. torch decided each expression at the example
            # and asserts that decision at run time, so its audit says what it accepts.
            entry["outcome"] = "exported"
            entry["notes"].append(
                "every expression torch met is already assumed (or cannot be stated): the program of this pass is returned; "
                "torch decided each at the example and asserts it at run time"
            )
            # Over a value read from data (a symbol that stands for no input size): no spec
            # states it, the model can (torch's own suggested check, the branch of the example),
            # where torch names the user's line for every one (HF Longformer: `8*u3 < u1` is met
            # in torch's own stride code, with no user line, so no list of checks is complete).
            checks = [r.check for r in found if None in r.symbols.values()]
            entry["model_checks"] = [c for i, c in enumerate(checks) if c not in checks[:i]] if all(checks) else []
            audit = _audited(ep, tensor_inputs, entry)
            entry["dimguard_seconds"] = time.perf_counter() - t1
            _progress(verbose, f"round {n}/{max_rounds}: torch.export {t_torch:.1f} s: exported; {len(items)} expression{'s' if len(items) != 1 else ''} decided at the example and asserted at run time")
            return ep, report(True, audit, ep)
        entry["dimguard_seconds"] = time.perf_counter() - t1
        if not added_now and not (real and not entry.get("real")):
            _progress(verbose, f"round {n}/{max_rounds}: torch.export {t_torch:.1f} s: data-dependent; no assumption to add ({'; '.join(undecided) or 'every expression already assumed'})")
            break
        k = len(items)
        _progress(
            verbose,
            f"round {n}/{max_rounds}: torch.export {t_torch:.1f} s: {k} data-dependent expression{'s' if k != 1 else ''}; "
            f"{added_now} assumption{'s' if added_now != 1 else ''} added (report.rounds[{n - 1}].notes)",
        )
    rep = report(False, None)
    raise ExportError(
        f"dimguard.export: no round produced a program ({len(rounds)} rounds; last: {rounds[-1].get('error')})",
        rep,
    ) from last_error


# Why a ShapesSpec program from a pass that propagates real tensors has no spec torch exports
# again (measured, torch 2.15: tests/test_export_loop.py::test_a_shapes_spec_from_a_real_tensor_pass_*).
_NO_SHAPES_SPEC_REEXPORT = (
    "the model reads a value from a tensor (.item() of a size), and torch meets an expression over it that no "
    "ShapesSpec states; dimguard's pass gave each ShapeVar your example's value while propagating real tensors, "
    "which torch 2.15 offers no way to do from a pasted spec: torch.export.export with this ShapesSpec raises "
    "GuardOnDataDependentSymNode on that expression, in any context (fake_tensor_propagate_real_tensors included), "
    "and torch.export.draft_export refuses a ShapesSpec. Keep the returned program (torch.export.save), or export "
    "with plain Dims: dimguard.export prints a Dim spec that re-exports in its export_context"
)


def _commented(why: str, code: str, checks: Sequence[Mapping[str, Any]] = ()) -> str:
    """``code`` (a spec torch does not export again) as comments, under the reason: pasted, it
    defines nothing rather than a spec that fails. ``checks`` (see :func:`_round.decided_check`):
    the lines the model would need for torch to export it with that spec."""
    import textwrap

    head = [f"# {ln}" for ln in textwrap.wrap(f"No spec to paste: {why}.", 96)]
    if checks:
        head += [f"# {ln}" for ln in textwrap.wrap(
            "Or state in the model what torch decided at your example: insert the check torch itself suggests "
            "(the returned program asserts the same at run time), then export with the spec below:",
            96,
        )]
        for c in checks:
            head.append(f"#   {c['check']}  before {c['file']}:{c['line']} (`{c['source']}`)")
    return "\n".join(head + ["# The spec the returned program was exported with:"] + [f"#     {ln}" for ln in code.splitlines()])


def _decide(
    spec: Any,
    items: Sequence[Tuple[BaseException, Any, Any, Mapping[str, Any]]],
    shapes: Sequence[Tuple[str, List[int]]],
    entry: Dict[str, Any],
    kept: List[Dict[str, Any]],
) -> Tuple[int, List[str]]:
    """Decides every data-dependent expression of one pass and adds one assumption per
    expression to ``spec``. Each item is ``(error, expr, value at the example, symbols)``.

    * A boolean expression: dimguard's diagnosis of torch's error (the branch that holds at every
      size of the range, else the example's branch, with what it removes). Where the diagnosis
      cannot read or decide it, the branch torch took at the example, in the spec's names, with
      what it removes counted by evaluating it at every size of the range (or "not counted").
    * An integer expression (``Could not extract specialized integer``: the model uses the size
      as a Python int): the assumption that it equals its value at the example, which fixes the
      size; the note says so.

    Returns how many assumptions were added and why the others were not."""

    added = 0
    why_not: List[str] = []
    seen: set = set()
    for err, expr, value, symbols in items:
        key = str(expr) if expr is not None else _first_line(err)
        if key in seen:
            continue
        seen.add(key)
        if value is None or isinstance(value, bool):
            try:
                out = json.loads(_native.diagnose(_text(err), [], shapes, None, "never", 10_000, [], spec.code(with_comments=False)))
            except ValueError as de:
                out = {"data_dependent": [], "notes": [f"dimguard could not read it ({de})"]}
            entry.setdefault("diagnosis", {"data_dependent": [], "notes": []})
            entry["diagnosis"]["data_dependent"].extend(out.get("data_dependent", []))
            entry["diagnosis"]["notes"].extend(out.get("notes", []))
            ds = [d for d in out.get("data_dependent", []) if d.get("assumption")]
            if ds and (value is None or all(_branch(d) is value for d in ds)):
                for d in ds:
                    if d["assumption"] in spec.assumption_codes():
                        continue
                    cost = _cost(d)
                    try:
                        spec.add(d["assumption"], cost)
                    except Exception as ae:  # noqa: BLE001 - torch refused the printed assumption
                        why_not.append(f"{d['assumption']}: torch refuses it as an assumption ({ae})")
                        continue
                    added += 1
                    entry["notes"].append(f"assuming {d['assumption']}: {cost}")
                    branch = _branch(d)
                    at = _input_dim(d.get("source") or "")
                    sizes = {s["name"]: _input_dim(s.get("source") or "") for s in d["symbols"]}
                    kept.append(
                        {
                            "code": d["assumption"],
                            "input": at[0] if at else None,
                            "index": at[1] if at else None,
                            "kept": (d["when_true"] if branch else d["when_false"]) if at and d.get("when_true") else None,
                            "sizes": sizes,
                        }
                    )
                    _add_twin(spec, d["assumption"], sizes, entry, kept)
                continue
            if value is None:
                why = "; ".join(d.get("undecided") or f"{d['guard']}: no branch known" for d in out.get("data_dependent", [])) or "; ".join(out.get("notes", [])) or "not read"
                why_not.append(why)
                continue
            reason = "; ".join(d.get("undecided") or "" for d in out.get("data_dependent", []) if d.get("undecided")) or "; ".join(out.get("notes", [])) or "no branch decided"
        else:
            reason = None
        # The branch torch took at the example (or, for an integer, its value there), written in
        # the spec's names.
        import sympy

        cond = sympy.Eq(expr, value) if not isinstance(value, bool) else (expr if value else sympy.Not(expr))
        code = _in_names(spec, cond, symbols)
        if code is None:
            why_not.append(f"{expr}: its sizes are not sizes of the spec's inputs")
            continue
        if code in spec.assumption_codes():
            continue
        names = _names_in(spec, code)
        count = _count(spec, code, names)
        sizes = {nm: _slot_of(spec, nm, symbols) for nm in names}
        if isinstance(value, bool):
            cost = f"the traced sizes take this branch ({reason}); " + (f"this keeps {count[0]} of the {count[1]} sizes of {_ranges(spec, names)}" if count else "what it removes is not counted")
            narrowed = None
        else:
            said = _in_names(spec, expr, symbols, python=False) or str(expr)
            where = ", ".join(f"{nm} ({_where(sizes[nm])})" for nm in names)
            cost = f"the model uses {said} as a Python int (torch needed its value); {where} fixed by this assumption" + (
                f": it keeps {count[0]} of the {count[1]} sizes of {_ranges(spec, names)}" if count else ""
            )
            narrowed = None
            if count and len(names) == 1 and count[1] > count[0]:
                nm = names[0]
                narrowed = {
                    "name": nm,
                    "input": sizes[nm][0] if sizes[nm] else None,
                    "index": sizes[nm][1] if sizes[nm] else None,
                    "kept": count[0],
                    "of": count[1],
                    "why": f"{nm}: the model uses {said} as a Python int (torch must know its value to trace), so the program keeps {count[0]} of the {count[1]} sizes of {_ranges(spec, names)}; "
                    f"dimguard.export(..., cover=True) looks for programs for the {count[1] - count[0]} sizes this one leaves out",
                }
        try:
            spec.add(code, cost)
        except Exception as ae:  # noqa: BLE001 - torch refused the printed assumption
            why_not.append(f"{code}: torch refuses it as an assumption ({ae})")
            continue
        added += 1
        entry["notes"].append(f"assuming {code}: {cost}")
        one = [v for v in sizes.values()]
        kept.append(
            {
                "code": code,
                "input": one[0][0] if len(one) == 1 and one[0] else None,
                "index": one[0][1] if len(one) == 1 and one[0] else None,
                "kept": None,
                "sizes": sizes,
                **({"narrowed": narrowed} if narrowed else {}),
            }
        )
        if not isinstance(value, bool) and len(names) == 1:
            added += _bounds_of(spec, code, names[0], entry, kept, sizes)
        _add_twin(spec, code, sizes, entry, kept)
    return added, why_not


def _bounds_of(spec: Any, code: str, name: str, entry: Dict[str, Any], kept: List[Dict[str, Any]], sizes: Mapping[str, Any]) -> int:
    """For an assumption fixing an integer expression of one variable (``2*(h // 16) - 1 ==
    27``) whose sizes form one interval (224..239): the interval's bounds, added as assumptions
    too. Implied by it, they remove nothing more; torch narrows the variable's range with them,
    so that it computes the integer from the range, and the printed spec re-exports (with the
    assumption alone torch raises "Could not extract specialized integer" on the pasted spec,
    HF BEiT). Returns how many were added."""
    v = spec.var_named(name)
    if re.fullmatch(rf"{re.escape(name)} == -?\d+", code):
        return 0  # the size itself: torch narrows its range from the assumption
    if v.min is None or v.max is None or int(v.max) - int(v.min) > _COUNT_LIMIT:
        return 0
    try:
        fn = eval(f"lambda {name}: bool({code})", {"math": math})  # noqa: S307 - dimguard's printed assumption
        ok = [x for x in range(int(v.min), int(v.max) + 1) if fn(x)]
    except Exception:  # noqa: BLE001 - not evaluable in Python ints: no bounds
        return 0
    if not ok or ok[-1] - ok[0] + 1 != len(ok):
        return 0
    added = 0
    for bound, needed in ((f"{name} >= {ok[0]}", ok[0] > int(v.min)), (f"{name} <= {ok[-1]}", ok[-1] < int(v.max))):
        if not needed or bound in spec.assumption_codes():
            continue
        note = f"implied by {code} (its sizes are {ok[0]}..{ok[-1]}): it removes nothing more; stated so that torch computes the integer from {name}'s range"
        try:
            spec.add(bound, note)
        except Exception:  # noqa: BLE001 - torch refused it: the assumption alone stands
            continue
        added += 1
        entry["notes"].append(f"assuming {bound}: {note}")
        kept.append({"code": bound, "input": None, "index": None, "kept": None, "sizes": dict(sizes)})
    return added


def _substitute_equalities(spec: Any, entry: Dict[str, Any], kept: List[Dict[str, Any]], first: int) -> int:
    """For each assumption ``a == b`` between two of the spec's variables added this round (from
    index ``first`` of ``spec.added``), every other assumption of this round over ``a`` (and over
    ``b``) is added again with one written as the other: implied by the two, it removes nothing
    more, and torch, which replaces one symbol by the other once it knows they are equal, meets it
    decided instead of stopping on it in a third round (HF Dinov2: ``h // 14*(w // 14) == 256``
    and ``h == w`` made torch ask ``(w // 14)**2 == 256``). Returns how many were added."""
    names = {spec.names[id(v)] for v in spec.vars}
    new = spec.added[first:]
    at: Dict[str, Any] = {}
    for k in kept:
        at.update({n: v for n, v in (k.get("sizes") or {}).items() if v})
    added = 0
    for _, (code, _) in new:
        m = re.fullmatch(r"(\w+) == (\w+)", code)
        if not m or m.group(1) not in names or m.group(2) not in names:
            continue
        a, b = m.group(1), m.group(2)
        for _, (other, _) in new:
            if other == code:
                continue
            for x, y in ((a, b), (b, a)):
                if not re.search(rf"(?<!\w){x}(?!\w)", other):
                    continue
                twin = re.sub(rf"(?<!\w){x}(?!\w)", y, other)
                if twin in spec.assumption_codes():
                    continue
                note = f"{other} with {x} written as {y} ({code}): implied by the two, it removes nothing more; stated so that torch meets it decided"
                try:
                    spec.add(twin, note)
                except Exception:  # noqa: BLE001 - torch refused it: the next round meets it
                    continue
                added += 1
                entry["notes"].append(f"assuming {twin}: {note}")
                used = _names_in(spec, twin)
                one = [at.get(u) for u in used]
                kept.append({"code": twin, "input": None, "index": None, "kept": None, "sizes": {u: at.get(u) for u in used}} if all(one) else {"code": twin, "kept": None})
    return added


def _add_twin(spec: Any, code: str, sizes: Mapping[str, Any], entry: Dict[str, Any], kept: List[Dict[str, Any]]) -> None:
    """Adds :func:`_integer_twin` of an assumption just added, when it has one."""
    twin = _integer_twin(code)
    if twin is None or twin in spec.assumption_codes():
        return
    note = f"{code} without true division: torch keeps no run-time assert for a true division, and asserts this one"
    try:
        spec.add(twin, note)
    except Exception as ae:  # noqa: BLE001 - torch refused it: said, the program's audit decides
        entry["notes"].append(f"{twin}: torch refuses it as an assumption ({ae}); the program may run at sizes {code} excludes")
        return
    entry["notes"].append(f"assuming {twin}: {note}")
    one = [v for v in sizes.values()]
    kept.append({"code": twin, "input": one[0][0] if len(one) == 1 and one[0] else None, "index": one[0][1] if len(one) == 1 and one[0] else None, "kept": None, "sizes": dict(sizes)})


def _branch(d: Mapping[str, Any]) -> Optional[bool]:
    """The branch a diagnosis of a data-dependent expression assumes."""
    return d["always"] if d.get("always") is not None else d.get("example_branch")


def _in_names(spec: Any, cond: Any, symbols: Mapping[str, Any], python: bool = True) -> Optional[str]:
    """``cond`` (a sympy boolean over torch's unbacked symbols) as Python in the spec's names:
    each symbol replaced by the spec's slot of the input size it stands for (``python=False``:
    torch's own spelling with the names replaced, for an integer expression in words)."""
    text = str(cond)
    for sym, at in symbols.items():
        slot = spec.slot_at(at[0], at[1]) if at else None
        if slot is None:
            return None
        text = re.sub(rf"(?<![\w#]){re.escape(sym)}(?![\w#])", f"({slot})" if not slot.isidentifier() else slot, text)
    if not python:
        return text
    try:
        return _native.readable(text)
    except ValueError:
        return None


def _names_in(spec: Any, code: str) -> List[str]:
    return [nm for nm in (spec.names[id(v)] for v in spec.vars) if re.search(rf"(?<!\w){re.escape(nm)}(?!\w)", code)]


def _slot_of(spec: Any, name: str, symbols: Mapping[str, Any]) -> Optional[Tuple[str, int]]:
    """The input size a spec variable is (where it is a whole slot of one of ``symbols``)."""
    for at in symbols.values():
        if at and spec.slot_at(at[0], at[1]) == name:
            return (at[0], at[1])
    return None


def _where(at: Optional[Tuple[str, int]]) -> str:
    return f"{at[0]}.shape[{at[1]}]" if at else "a size of the spec"


def _ranges(spec: Any, names: Sequence[str]) -> str:
    out = []
    for nm in names:
        v = spec.var_named(nm)
        out.append(f"{nm} in {v.min}..{v.max}")
    return ", ".join(out)


# Combinations evaluated one by one to count what an assumption keeps.
_COUNT_LIMIT = 200_000


def _count(spec: Any, code: str, names: Sequence[str]) -> Optional[Tuple[int, int]]:
    """``(kept, total)``: how many combinations of the named variables' ranges satisfy the
    assumption, by evaluating it at each (None when a range is unbounded or too large)."""
    import itertools

    ranges = []
    total = 1
    for nm in names:
        v = spec.var_named(nm)
        if v.min is None or v.max is None:
            return None
        ranges.append(range(int(v.min), int(v.max) + 1))
        total *= len(ranges[-1])
    if not names or total > _COUNT_LIMIT:
        return None
    try:
        fn = eval(f"lambda {', '.join(names)}: bool({code})", {"math": math})  # noqa: S307 - dimguard's printed assumption
        k = sum(1 for combo in itertools.product(*ranges) if fn(*combo))
    except Exception:  # noqa: BLE001 - an expression Python's ints cannot evaluate: not counted
        return None
    return k, total


def _integer_twin(code: str) -> Optional[str]:
    """``code`` with each ``math.ceil(A / B)`` written ``-(-(A) // (B))`` and ``math.floor(A / B)``
    written ``(A) // (B)`` (equal for integers, B nonzero, in Python's floor semantics), when that
    leaves no true division; else None. torch inserts no run-time assert for an assumption with
    a true division (``8*math.ceil(H / 8) != H`` is dropped from the graph, so the program would
    run at sizes the assumption excludes, computing the traced branch); its integer twin is
    asserted."""
    if "math." not in code and " / " not in code:
        return None
    out = code
    for fn, fmt in (("math.ceil(", "(-(-({a}) // ({b})))"), ("math.floor(", "(({a}) // ({b}))")):
        while fn in out:
            i = out.index(fn)
            j, depth = i + len(fn), 1
            while j < len(out) and depth:
                depth += {"(": 1, ")": -1}.get(out[j], 0)
                j += 1
            inner = out[i + len(fn) : j - 1]
            parts = _split_top(inner, " / ")
            if len(parts) != 2:
                return None
            out = out[:i] + fmt.format(a=parts[0], b=parts[1]) + out[j:]
    return None if (" / " in out or "math." in out) else out


def _split_top(text: str, sep: str) -> List[str]:
    """``text`` split at ``sep`` where it is outside parentheses."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(text[start:])
    return parts
