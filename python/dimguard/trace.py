"""Capture PyTorch's structured trace in-process, for provenance.

``TORCH_TRACE=/tmp/dir python script.py`` makes PyTorch write one JSON record per event
(symbols, guards with the stacks that recorded them) to files. :func:`capture` records the same
records in memory while its block runs, with no environment variable and no file: it attaches a
handler to torch's structured-trace logger (``torch.__trace``, which records whenever it has a
handler) and removes it on exit, restoring the logger as it was.

    >>> from dimguard.trace import capture
    >>> with capture() as trace:
    ...     torch.export.export(model, args, dynamic_shapes=spec)   # may raise
    >>> text = trace.text()   # what `dimguard diagnose` reads as a TORCH_TRACE file

File names in stack frames are interned by torch (``{"str": [path, id]}``), once per process: a
path interned before the block is not recorded again inside it, so :meth:`Capture.text` starts
with every interned name the records need, taken from torch's intern table.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading

__all__ = ["Capture", "capture", "provenance"]

TRACE_LOGGER = "torch.__trace"


class _Handler(logging.Handler):
    def __init__(self, sink: "Capture"):
        super().__init__(level=logging.DEBUG)
        self._sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        metadata = getattr(record, "metadata", None)
        if not isinstance(metadata, dict):
            return
        try:
            line = json.dumps(metadata, default=_default)
        except (TypeError, ValueError):
            return
        payload = getattr(record, "payload", None)
        with self._sink._lock:
            self._sink._lines.append(line)
            if isinstance(payload, str) and payload:
                self._sink._lines.extend("\t" + p for p in payload.split("\n"))


def _default(obj):
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=repr)
    return repr(obj)


class Capture:
    """The structured-trace records of one :func:`capture` block."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self._interned: dict[str, int] = {}

    @property
    def records(self) -> list[dict]:
        """The records (JSON objects), in order; payload lines are left out."""
        return [json.loads(l) for l in self._lines if not l.startswith("\t")]

    def text(self) -> str:
        """The records as a TORCH_TRACE file's text (one JSON object per line, payload lines
        starting with a tab), preceded by the interned file names the stacks refer to."""
        head = [json.dumps({"str": [s, i]}) for s, i in sorted(self._interned.items(), key=lambda x: x[1])]
        return "\n".join(head + self._lines) + "\n"

    def __len__(self) -> int:
        return sum(1 for l in self._lines if not l.startswith("\t"))


@contextlib.contextmanager
def capture():
    """Records torch's structured trace while the block runs (see the module's doc).

    Nothing is written to disk and no environment variable is read or set. The logger's handlers,
    level and propagation are restored on exit, also when the block raises.
    """
    import torch._logging.structured as structured  # torch is needed only here

    log = logging.getLogger(TRACE_LOGGER)
    sink = Capture()
    handler = _Handler(sink)
    level, propagate = log.level, log.propagate
    log.addHandler(handler)
    log.setLevel(logging.DEBUG)
    log.propagate = False
    try:
        yield sink
    finally:
        log.removeHandler(handler)
        log.setLevel(level)
        log.propagate = propagate
        sink._interned = dict(structured.INTERN_TABLE)


def provenance(trace: Capture, shapes=()) -> dict:
    """What a captured trace says about where the guards come from.

    Returns ``{"lines": [...], "guards": [...]}``: ``lines`` groups the guards by the line of the
    user's code that made torch record them, with what each line requires of each size and how
    many values it removes (the report's ``lines``); ``guards`` lists every guard with its size,
    what it requires and its ``provenance`` (file, line, function, code, torch operator, stack).
    ``shapes`` (input name -> traced shape) only orders suggestions. Empty lists when the block
    recorded no size (nothing was exported).
    """
    import json

    from . import _native

    if not any(line.startswith('{"create_symbol"') for line in trace._lines):  # no parse
        return {"lines": [], "guards": []}
    out = json.loads(_native.diagnose(trace.text(), [], [(n, list(s)) for n, s in shapes], None, "never", 10_000))
    guards = [
        {
            "dim": d["name"],
            "source": d.get("source"),
            "text": g["text"],
            "requires": g["requires"],
            "removes": g.get("removes"),
            "provenance": g.get("provenance"),
        }
        for d in out.get("dims", [])
        for g in d.get("guards", [])
    ]
    return {"lines": out.get("lines", []), "guards": guards}
