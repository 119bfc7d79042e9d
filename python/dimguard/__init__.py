"""dimguard: exact answers for PyTorch dynamic shapes.

* :func:`diagnose` reads a ``torch.export`` dynamic-shape error (the text, or the exception
  object itself) and gives the exact valid sizes and sound, maximal ``Dim`` specs.
* :func:`verify` checks a ``dynamic_shapes`` spec against guards (Z3 proof or counterexamples).
* :func:`check` audits an exported program: which input sizes it really accepts.
* :func:`profile` builds TensorRT optimization profiles whose every shape the program accepts.
* :func:`export` runs the whole loop: export, diagnose, merge into your spec, re-export, audit;
  with ``cover=True``, several programs behind one callable (:class:`Dispatch`, :func:`load`).
* :mod:`dimguard.onnx`: the loop's program written to ONNX with its accepted set, and an
  onnxruntime session that refuses the shapes the program rejects.

Nothing here imports torch except :func:`export`, :func:`check` given an ``ExportedProgram`` and
:mod:`dimguard.onnx`'s functions.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _native
from ._round import _text
from ._results import CheckReport, Diagnosis, Profiles, Record, ShapeError, SizeSet, Undecided, Verification

__version__: str = _native.__version__

__all__ = [
    "diagnose",
    "verify",
    "check",
    "profile",
    "export",
    "load",
    "Dispatch",
    "DispatchError",
    "ExportReport",
    "ExportError",
    "Diagnosis",
    "Verification",
    "CheckReport",
    "Profiles",
    "Record",
    "SizeSet",
    "Undecided",
    "ShapeError",
    "onnx",
    "z3_version",
    "set_budget",
]

PathLike = Union[str, "os.PathLike[str]"]
Examples = Union[int, Mapping[str, Any], None]


def z3_version() -> str:
    """The version of the Z3 library bundled with the package."""
    return _native.z3_version()


def set_budget(time: float = 20.0, output: int = 16 << 20, memory: int = 1 << 30) -> None:
    """Bounds every later call (``diagnose``, ``verify``, ``check``, ``profile`` and the audits of
    ``export``): ``time`` seconds of work, ``output`` bytes for the printed form of any one
    set and ``memory`` bytes the work may hold — the CLI's ``--time-budget``,
    ``--output-budget`` and ``--memory-budget``, with the same defaults. Past a budget the
    answer is partial and says so, as data (an ``undecided`` reason naming the budget).
    """
    _native.set_budget(float(time), int(output), int(memory))


def _shape(v: Any) -> Optional[List[int]]:
    shape = getattr(v, "shape", None)
    if shape is not None:
        return [int(s) for s in shape]
    if isinstance(v, (list, tuple)) and all(isinstance(s, int) for s in v):
        return [int(s) for s in v]
    return None


def _examples(examples: Examples) -> Tuple[List[Tuple[Optional[str], int]], List[Tuple[str, List[int]]]]:
    by_name: List[Tuple[Optional[str], int]] = []
    shapes: List[Tuple[str, List[int]]] = []
    if examples is None:
        return by_name, shapes
    if isinstance(examples, int) and not isinstance(examples, bool):
        return [(None, int(examples))], shapes
    if not isinstance(examples, Mapping):
        raise TypeError(
            "examples must be an int (every dimension), a dict of dimension name -> size, "
            "or a dict of input name -> traced shape / tensor"
        )
    for k, v in examples.items():
        if isinstance(v, int) and not isinstance(v, bool):
            by_name.append((str(k), int(v)))
            continue
        shape = _shape(v)
        if shape is None:
            raise TypeError(f"examples[{k!r}]: expected a size, a shape or a tensor, got {type(v).__name__}")
        shapes.append((str(k), shape))
    return by_name, shapes


def diagnose(
    error_or_text: Union[str, BaseException],
    examples: Examples = None,
    *,
    spec: Optional[str] = None,
    ranges: Optional[Mapping[str, Tuple[int, int]]] = None,
    z3: str = "auto",
    z3_timeout_ms: int = 10_000,
    cover: Optional[int] = None,
) -> Diagnosis:
    """Diagnoses a ``torch.export`` dynamic-shape error.

    ``error_or_text``: the exception (``except Exception as e: dimguard.diagnose(e)``) or its
    text (a whole traceback is fine). ``examples``: the traced sizes, preferred among equally
    large suggestions: an int for every dimension, ``{"h": 520}`` by dimension name, or
    ``{"image1": x}`` / ``{"image1": (1, 3, 520, 960)}`` by input. ``spec``: your own
    ``dynamic_shapes`` Python; the returned ``dynamic_shapes`` block is then your spec with the
    answer merged in (every input and dimension kept, shared ``Dim``s shared); a torch 2.15
    ``ShapesSpec`` (the object, or its Python) names and bounds the sizes of a data-dependent
    failure, and the block is then that ``ShapesSpec`` with the assumptions added. ``ranges``:
    ``{"h": (64, 1024)}`` for dimensions whose range the text does not state (PyTorch 2.15's
    solver crash prints the guard but no range). ``z3``: ``"auto"``, ``"always"`` or ``"never"``.
    ``cover=N``: also up to N specs that together accept every valid size (``.cover``: each
    piece's ``code`` to paste, ``covered``/``valid``/``one_dim`` counts), one export each.

    Raises ``ValueError`` (with the position) when the text holds no dynamic-shape error.
    """
    by_name, shapes = _examples(examples)
    shapes_spec = None
    if spec is not None and not isinstance(spec, str):
        from ._shapes_spec import Spec  # a torch 2.15 ShapesSpec / ParamsSpec object

        spec = Spec(spec).code(with_comments=False)
    if spec is not None and any(k in spec for k in ("ShapesSpec(", "TensorSpec(", "ShapeVar(")):
        shapes_spec, spec = spec, None
    sheet = _native.read_spec(spec) if spec is not None else None
    rng = [(str(k), (int(v[0]), int(v[1]))) for k, v in (ranges or {}).items()]
    out = _native.diagnose(_text(error_or_text), by_name, shapes, sheet, z3, z3_timeout_ms, rng, shapes_spec, cover)
    return Diagnosis(json.loads(out))


def verify(guards: Union[str, BaseException], spec: str, *, z3_timeout_ms: int = 10_000) -> Verification:
    """Checks ``spec`` (Python as written for ``dynamic_shapes``) against ``guards`` (an error
    message or exception, or guard lines): ``sound`` with a Z3 proof, or counterexamples, and
    the largest sound spec."""
    return Verification(json.loads(_native.verify(_text(guards), spec, z3_timeout_ms)))


def _read(path: PathLike) -> bytes:
    with open(os.fspath(path), "rb") as f:
        return f.read()


def check(path_or_program: Any, *, sizes: bool = False, full: bool = True) -> CheckReport:
    """Audits an exported program: per dynamic input dimension, the sizes it claims and the sizes
    it really accepts (``accepted``), with sound corrected specs.

    ``path_or_program``: a ``.pt2`` archive or ``model.json`` path, their bytes, or an
    ``ExportedProgram`` in memory. For a program in memory, ``full=False`` reads only its inputs,
    ranges and guards, and the whole graph only when it holds run-time asserts or an ``arange``
    (what ``dimguard.export`` uses: much faster, same accepted sets);
    ``full=True`` serializes the whole graph so shape propagation is checked too.
    ``sizes=True`` also lists every symbolic intermediate size. A ``dimguard.Dispatch`` archive
    (``Dispatch.save``) gives a :class:`Record` with each program's check (``programs``) and, per
    input size, the sizes some program accepts (``union``). An ONNX file written by
    :func:`dimguard.onnx.export` gives the report stored in it (the exported program's check,
    :meth:`CheckReport.verdict` included) with ``onnx``: the file's inputs and symbolic axes; a
    file without the report raises ``ValueError`` naming its symbolic axes.
    """
    if isinstance(path_or_program, (bytes, bytearray, memoryview)):
        data, label = bytes(path_or_program), "<bytes>"
    elif isinstance(path_or_program, (str, os.PathLike)):
        data, label = _read(path_or_program), os.fspath(path_or_program)
    elif hasattr(path_or_program, "graph_signature") and hasattr(path_or_program, "range_constraints"):
        from ._program import program_json

        data, label = program_json(path_or_program, full=full), "<ExportedProgram>"
    else:
        raise TypeError(
            f"check() expects a path, bytes, or a torch.export.ExportedProgram, got {type(path_or_program).__name__}"
        )
    out = json.loads(_native.check(data, label, sizes))
    if "union" in out:  # a dimguard.Dispatch archive: each program's check, and the union
        return Record(out)
    return CheckReport(out)


def profile(
    source: Any = None,
    *,
    dims: Iterable[str] = (),
    examples: Union[Mapping[str, Sequence[int]], Iterable[str], None] = None,
    format: str = "json",
    profiles: int = 1,
    spec: Optional[str] = None,
    cover: Optional[int] = None,
) -> Union[Profiles, str]:
    """TensorRT optimization profiles whose every min/opt/max shape the program accepts.

    ``source``: a ``.pt2``/``model.json`` path, an ``ExportedProgram``, an error message (text
    or exception), or None with ``dims``. ``dims``: ``"INPUT:INDEX=LO..HI"`` strings.
    ``examples``: traced shapes, ``{"image1": (1, 3, 520, 960), "image2": ...}``; every input
    given here is covered. ``format``: ``"json"`` (a :class:`Profiles`), or ``"trtexec"``,
    ``"polygraphy"``, ``"torch-tensorrt"`` (the text). ``spec``: your ``dynamic_shapes`` Python,
    so inputs a message does not name (a second image sharing the first one's ``Dim``s) are
    covered too. ``cover=N``: instead of buckets, one profile per piece of a cover (up to N, each
    one progression of accepted sizes per dimension, every corner accepted).
    """
    ex: List[str] = []
    if isinstance(examples, Mapping):
        for k, v in examples.items():
            shape = _shape(v)
            if shape is None:
                raise TypeError(f"examples[{k!r}]: expected a shape or a tensor")
            ex.append(f"{k}:{'x'.join(map(str, shape))}")
    elif examples is not None:
        ex = [str(e) for e in examples]
    data: Optional[bytes] = None
    path: Optional[str] = None
    if source is None:
        pass
    elif isinstance(source, BaseException):
        data = _text(source).encode()
    elif isinstance(source, (str, os.PathLike)) and os.path.exists(os.fspath(source)):
        path = os.fspath(source)
        data = _read(path)
    elif isinstance(source, str):
        data = source.encode()
    elif hasattr(source, "graph_signature"):
        import tempfile

        from ._program import program_json

        with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
            f.write(program_json(source, full=False))
            path = f.name
        try:
            return profile(path, dims=dims, examples=ex, format=format, profiles=profiles, spec=spec, cover=cover)
        finally:
            os.unlink(path)
    else:
        raise TypeError(f"profile() cannot read a {type(source).__name__}")
    sheet = _native.read_spec(spec) if spec is not None else None
    out = _native.profile(data, path, list(dims), ex, format, profiles, sheet, cover)
    return Profiles(json.loads(out)) if format == "json" else out


from .cover import Dispatch, DispatchError, load  # noqa: E402
from .export import ExportError, ExportReport, export  # noqa: E402
from . import onnx  # noqa: E402
