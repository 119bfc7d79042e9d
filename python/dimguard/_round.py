"""What one round of ``dimguard.export`` wraps around ``torch.export.export``:

* :func:`quiet`: everything written to the process's stderr while torch runs (its logging, its
  warnings, fake-tensor tracebacks, C++ output) goes into the round's ``log`` instead of the
  user's terminal;
* :func:`collecting`: for a torch 2.15 ``ShapesSpec`` export, every data-dependent expression of
  one traced pass. torch stops a ``ShapesSpec`` export at the first expression it cannot decide
  over the spec's unbacked sizes; inside this context each input size's unbacked symbol carries
  the example's value (torch's own ``propagate_real_tensors`` mechanism, which ``draft_export``
  uses), so torch decides each expression at the example and goes on, and each expression is
  recorded as the error torch would have raised (its own ``GuardOnDataDependentSymNode``, with
  its own suggested fixes) together with the example's value. The hooks are installed only
  inside the context.

torch is imported lazily.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import sys
import tempfile
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

# At most this many bytes of torch's output are kept per round; the rest is counted and cut,
# and the log says so.
LOG_LIMIT = 1 << 20


class Log:
    """The text a :func:`quiet` block captured (``text``), filled when the block ends."""

    __slots__ = ("text",)

    def __init__(self) -> None:
        self.text = ""


@contextlib.contextmanager
def quiet() -> Iterator[Log]:
    """Sends the process's stderr (file descriptor 2, and ``sys.stderr``) to a temporary file
    while the block runs; ``log.text`` holds what was written (at most :data:`LOG_LIMIT` bytes,
    with a line saying how many more were cut)."""
    log = Log()
    try:
        sys.stderr.flush()
    except (AttributeError, ValueError):
        pass
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2 (a closed stderr): nothing to capture there
        with contextlib.redirect_stderr(_Sink(log)):
            yield log
        return
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        text = open(tmp.fileno(), "w", encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115 - closed below
        try:
            os.dup2(tmp.fileno(), 2)
            with contextlib.redirect_stderr(text):
                yield log
        finally:
            try:
                text.flush()
            finally:
                text.close()
                os.dup2(saved, 2)
                os.close(saved)
            size = os.fstat(tmp.fileno()).st_size
            tmp.seek(0)
            data = tmp.read(LOG_LIMIT)
            log.text = data.decode("utf-8", "replace")
            if size > LOG_LIMIT:
                log.text += f"\n[dimguard: {size - LOG_LIMIT} more bytes of torch's output were cut]\n"


class _Sink:
    """A text stream that keeps what is written in a :class:`Log` (up to :data:`LOG_LIMIT`)."""

    def __init__(self, log: Log):
        self.log = log

    def write(self, text: str) -> int:
        if len(self.log.text) < LOG_LIMIT:
            self.log.text += text[: LOG_LIMIT - len(self.log.text)]
        return len(text)

    def flush(self) -> None:
        pass


class Recorded:
    """One data-dependent expression of a traced pass: ``error`` (the
    ``GuardOnDataDependentSymNode`` torch would have raised, fixes included), ``expr`` (torch's
    sympy expression), ``value`` (its value at the example: a bool, or an int for an integer
    expression), ``symbols`` (each unbacked symbol it uses -> ``(input, index)`` of the
    input size it stands for, where known), and ``check`` (see :func:`decided_check`)."""

    __slots__ = ("error", "expr", "value", "symbols", "check")

    def __init__(self, error: BaseException, expr: Any, value: Any, symbols: Dict[str, Optional[Tuple[str, int]]]):
        self.error = error
        self.expr = expr
        self.value = value
        self.symbols = symbols
        self.check = decided_check(error, value)


_BLAMED = re.compile(r'The following call raised this error:\n\s*File "([^"\n]+)", line (\d+), in [^\n]*\n[ \t]*([^\n]*)')
_FIX = re.compile(r"^\s+([12])\. (torch\._check\(.*\))$", re.M)


def decided_check(error: BaseException, value: Any) -> Optional[Dict[str, Any]]:
    """The ``torch._check`` that states, in the model's own names, the branch torch took at the
    example (``value``, a bool) for the expression of ``error``: of the two fixes torch suggests
    for a ``GuardOnDataDependentSymNode`` (the condition, its negation), the one that holds at
    the example, with the user's line torch blames (``{"file", "line", "source", "check"}``).
    None where torch suggests none (an integer expression, a symbol with no name in the user's
    frame) or names no line."""
    if not isinstance(value, bool) or not error.args or not isinstance(error.args[0], str):
        return None
    msg = error.args[0]
    blamed = _BLAMED.search(msg)
    fixes = dict(_FIX.findall(msg))
    fix = fixes.get("1" if value else "2")
    if blamed is None or fix is None:
        return None
    return {"file": blamed.group(1), "line": int(blamed.group(2)), "source": blamed.group(3).strip(), "check": fix}


@contextlib.contextmanager
def collecting(inputs: Dict[int, str], real: bool = False) -> Iterator[List[Recorded]]:
    """Installs the hooks described in the module's docstring for one ``torch.export.export``
    call and yields the list the pass fills. ``inputs`` maps ``id(tensor)`` of each top-level
    tensor argument to its name (to say which input size each unbacked symbol stands for).
    ``real``: real tensors are propagated too (``draft_export``'s mechanism), so a value the
    model reads back from a tensor (``.item()``) has its example value as well."""
    import sympy
    import torch
    import torch.fx.experimental.symbolic_shapes as ss

    found: List[Recorded] = []
    where: Dict[Any, Tuple[str, int]] = {}
    pending: List[Any] = []
    o_context = ss._symbolic_context_from_shapes_spec
    o_wire = ss._wire_tensor_spec_dims
    o_log = ss.ShapeEnv._log_real_tensor_propagation
    o_find = ss._find_user_code_frame
    torch_dir = os.path.dirname(inspect.getfile(torch)) + os.path.sep

    def find() -> Any:
        # torch's own search for the user's frame, past this module's hook too.
        frame = inspect.currentframe()
        while frame is not None and (frame.f_code.co_filename.startswith(torch_dir) or frame.f_code.co_filename == __file__):
            frame = frame.f_back
        return frame

    def context(x: Any, *a: Any, **k: Any) -> Any:
        pending.append(x)
        return o_context(x, *a, **k)

    def wire(spec: Any, fake: Any) -> Any:
        # The values first: wiring the spec's slots lowers its assumptions, which torch may
        # evaluate then and there.
        x = pending.pop() if pending else None
        env = getattr(getattr(fake, "fake_mode", None), "shape_env", None)
        if x is not None and env is not None:
            name = inputs.get(id(x))
            for i, s in enumerate(fake.shape):
                if isinstance(s, torch.SymInt) and s.node.expr.is_Symbol and s.node.expr not in env.real_tensor_prop_unbacked_vals:
                    env.set_real_tensor_prop_unbacked_vals(s.node.expr, int(x.shape[i]))
                    if name is not None:
                        where[s.node.expr] = (name, i)
        return o_wire(spec, fake)

    def log(self: Any, orig_expr: Any, result: Any) -> None:
        expr = orig_expr.xreplace(self.backed_var_to_val)
        err = self._make_data_dependent_error(expr, orig_expr)
        # What torch adds when it raises one (the user's frame, the suggested torch._checks).
        with contextlib.suppress(Exception):
            ss._suggest_fixes_for_data_dependent_error_non_strict(err)
        value: Any = bool(result) if isinstance(result, sympy.logic.boolalg.BooleanAtom) else int(result)
        found.append(Recorded(err, orig_expr, value, {str(s): where.get(s) for s in orig_expr.free_symbols}))
        o_log(self, orig_expr, result)

    ss._symbolic_context_from_shapes_spec = context
    ss._wire_tensor_spec_dims = wire
    ss.ShapeEnv._log_real_tensor_propagation = log
    ss._find_user_code_frame = find
    patch = torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True) if real else contextlib.nullcontext()
    try:
        with patch:
            yield found
    finally:
        ss._symbolic_context_from_shapes_spec = o_context
        ss._wire_tensor_spec_dims = o_wire
        ss.ShapeEnv._log_real_tensor_propagation = o_log
        ss._find_user_code_frame = o_find


def _first_line(e: BaseException) -> str:
    line = next((ln.strip() for ln in str(e).splitlines() if ln.strip()), "")
    return f"{type(e).__name__}: {line[:200]}"


def _text(error_or_text: Union[str, BaseException]) -> str:
    if isinstance(error_or_text, BaseException):
        parts = [f"{type(error_or_text).__module__}.{type(error_or_text).__name__}: {error_or_text}"]
        cause = error_or_text.__cause__ or error_or_text.__context__
        if cause is not None and not error_or_text.__suppress_context__:
            parts.insert(0, f"{type(cause).__module__}.{type(cause).__name__}: {cause}")
        return "\n".join(parts)
    if isinstance(error_or_text, bytes):
        return error_or_text.decode("utf-8", "replace")
    if not isinstance(error_or_text, str):
        raise TypeError(
            f"diagnose() expects the error text (str) or the exception object, got {type(error_or_text).__name__}"
        )
    return error_or_text
