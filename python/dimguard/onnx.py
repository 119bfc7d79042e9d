"""``dimguard.onnx``: ONNX as a target, with the sizes the program was proven to accept.

* :func:`export` runs the audited export loop (:func:`dimguard.export`, plain ``Dim`` or torch
  2.15's ``ShapesSpec``), then torch's ONNX exporter (``dynamo=True``) on the returned program;
  the file's dynamic axes carry your ``Dim`` names and its ``metadata_props`` the report under
  ``dimguard.report`` (the program's check: accepted sets, joint sets, the conditions it checks).
* ``dimguard check model.onnx`` / ``dimguard.check("model.onnx")`` read that report back.
* :class:`Session` is an ``onnxruntime.InferenceSession`` whose ``run`` checks the input shapes
  against the stored conditions first and raises :class:`dimguard.ShapeError` instead of running
  where the program would have raised.

torch, onnx and onnxruntime are imported lazily, by the function that needs them.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
import time
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from . import _native
from ._results import FACT_KEYS, CheckReport, Record, ShapeError
from .export import ExportReport

__all__ = ["export", "attach", "Session", "OnnxExportReport", "REPORT_KEY"]

#: The ``metadata_props`` key that holds the report.
REPORT_KEY = "dimguard.report"

PathLike = Any


def _progress(verbose: bool, msg: str) -> None:
    if verbose:
        print(f"dimguard.onnx: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# The names of the user's sizes: (input, index) -> the Dim's (or ShapeVar's) name.


def _arg_names(model: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> List[str]:
    try:
        params = list(inspect.signature(getattr(model, "forward", model)).parameters)
    except (TypeError, ValueError):
        params = []
    names = params[: len(args)] + [f"arg{i}" for i in range(len(params), len(args))]
    return names + list(kwargs)


def _dim_names(model: Any, args: Sequence[Any], kwargs: Mapping[str, Any], dynamic_shapes: Any) -> Dict[Tuple[str, int], str]:
    """Each size of ``dynamic_shapes`` the user named: a plain ``Dim``'s name, a derived one's
    expression (``8*_h``), a ``ShapesSpec`` slot's variable or expression."""
    from ._shapes_spec import spec_from

    out: Dict[Tuple[str, int], str] = {}
    spec = spec_from(model, dynamic_shapes)
    names = _arg_names(model, args, kwargs)
    if spec is not None:
        for n, v in zip(names, list(args) + list(kwargs.values())):
            for i in range(len(getattr(v, "shape", ()))):
                slot = spec.slot_at(n, i)
                if slot is not None and not slot.lstrip("-").isdigit() and slot != "None":
                    out[(n, i)] = slot
        return out
    if dynamic_shapes is None:
        return out
    items = dynamic_shapes.items() if isinstance(dynamic_shapes, Mapping) else zip(names, dynamic_shapes)
    for n, per in items:
        dims = per.items() if isinstance(per, Mapping) else enumerate(per or ()) if isinstance(per, (list, tuple)) else ()
        for i, d in dims:
            name = getattr(d, "__name__", None)
            if isinstance(name, str) and type(d).__name__ in ("Dim", "_DerivedDim", "_StaticDim"):
                out[(str(n), int(i))] = name
    return out


# ---------------------------------------------------------------------------------------------
# The ONNX file: axes renamed, report stored.


def _stored(report: Any, onnx_inputs: Mapping[str, str], axes: Mapping[str, str], opset: Optional[int]) -> str:
    """The report as stored: the export report's JSON (the program's check in ``audit``, with
    ``dims``, ``joint``, ``spec``, the rounds without torch's captured stderr) and how the
    file's inputs and axes map to the program's."""
    data = report.to_dict() if hasattr(report, "to_dict") else dict(report)
    for r in data.get("rounds") or []:
        r.pop("log", None)
    import torch

    data["onnx"] = {
        "inputs": dict(onnx_inputs),
        "axes": dict(axes),
        "opset": opset,
        "dimguard_version": _native.__version__,
        "torch_version": str(torch.__version__),
    }
    return json.dumps(data)


def _rename_axes(proto: Any, names: Mapping[Tuple[str, int], str], onnx_to_input: Mapping[str, str]) -> Dict[str, str]:
    """Renames the graph's ``dim_param``s after the user's names: an input axis the user named
    ``h`` (the exporter wrote torch's ``s83``, or ``16*s16 - 5`` for a derived size) becomes
    ``h``, and so does the same text wherever it appears (outputs, intermediate shapes; a bare
    symbol also inside expressions: ``((h - 1)//8) + 1``). Returns ``{"x[2]": "h"}``."""
    g = proto.graph
    whole: Dict[str, str] = {}
    for vi in g.input:
        inp = onnx_to_input.get(vi.name)
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            name = names.get((inp, k)) if inp is not None else None
            if name is not None and d.HasField("dim_param"):
                whole.setdefault(d.dim_param, name)
    token = {p: n for p, n in whole.items() if re.fullmatch(r"[a-z]\d+", p)}

    def rename(p: str) -> str:
        if p in whole:
            return whole[p]
        return re.sub(r"\b[a-z]\d+\b", lambda m: token.get(m.group(0), m.group(0)), p)

    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if not vi.type.HasField("tensor_type"):
            continue
        for d in vi.type.tensor_type.shape.dim:
            if d.HasField("dim_param"):
                d.dim_param = rename(d.dim_param)
    axes = {}
    for vi in g.input:
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            if d.HasField("dim_param"):
                axes[f"{vi.name}[{k}]"] = d.dim_param
    return axes


def _onnx_inputs(proto: Any, audit: Mapping[str, Any]) -> Dict[str, str]:
    """ONNX input name -> the program's input name, in order (the exporter keeps the program's
    user inputs, in order, as the graph's inputs that are not initializers)."""
    init = {t.name for t in proto.graph.initializer}
    onnx_names = [i.name for i in proto.graph.input if i.name not in init]
    program = [p["input"] for p in audit.get("inputs") or []]
    if len(onnx_names) == len(program):
        return dict(zip(onnx_names, program))
    return {n: n for n in onnx_names}


def _save(proto: Any, path: str) -> None:
    import onnx

    onnx.save(proto, path)


def attach(path: PathLike, report: Any, *, names: Optional[Mapping[Tuple[str, int], str]] = None) -> Dict[str, str]:
    """Stores ``report`` (what :func:`dimguard.export` returned for the program the ONNX file at
    ``path`` was exported from) in the file's ``metadata_props`` under ``dimguard.report``, and
    renames the file's symbolic axes after ``names`` (``{("x", 2): "h"}``). Returns the input
    axes' names (``{"x[2]": "h"}``)."""
    import onnx

    path = os.fspath(path)
    proto = onnx.load(path, load_external_data=False)
    audit = report["audit"] if "audit" in report else None
    if not audit:
        why = report["unaudited"] if "unaudited" in report else "no audit in the report"
        raise ValueError(f"dimguard.onnx: the report holds no audit of the program ({why}): nothing to store")
    audit = dict(audit.to_dict() if hasattr(audit, "to_dict") else audit)
    to_input = _onnx_inputs(proto, audit)
    axes = _rename_axes(proto, names or {}, to_input)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
    for i in reversed(range(len(proto.metadata_props))):
        if proto.metadata_props[i].key == REPORT_KEY:
            del proto.metadata_props[i]
    proto.metadata_props.add(key=REPORT_KEY, value=_stored(report, to_input, axes, opset))
    _save(proto, path)
    return axes


class OnnxExportReport(ExportReport):
    """What :func:`export` returns: the :class:`~dimguard.ExportReport` (its fields, JSON and
    methods unchanged), and ``program``: the ``torch.export.ExportedProgram`` the file was
    written from (``report.program.module()`` runs it), not part of the JSON."""

    __slots__ = ("program",)


def export(
    model: Any,
    args: Any,
    path: PathLike,
    kwargs: Optional[Mapping[str, Any]] = None,
    *,
    dynamic_shapes: Any = None,
    opset_version: Optional[int] = None,
    verbose: bool = True,
    strict: bool = False,
    max_rounds: int = 4,
    export_kwargs: Optional[Mapping[str, Any]] = None,
    **onnx_kwargs: Any,
) -> Any:
    """The audited export, written to ONNX. Returns the :class:`~dimguard.ExportReport`, as an
    :class:`OnnxExportReport` whose ``program`` is the audited program the file was written from.

    1. :func:`dimguard.export` (``dynamic_shapes``: plain ``Dim``s or a torch 2.15 ``ShapesSpec``;
       ``strict``, ``max_rounds`` and ``export_kwargs`` go to it): the program and the exact
       sizes it accepts.
    2. ``torch.onnx.export(program, dynamo=True, opset_version=...)``; other keyword arguments
       (``onnx_kwargs``: ``external_data``, ``optimize``, ...) go to it. torch's ONNX chatter is
       kept off the terminal.
    3. The file's symbolic axes are renamed after your ``Dim``s, and the report (the program's
       ``dimguard check``: accepted sets, joint sets, the conditions it checks) is stored in its
       ``metadata_props`` under ``dimguard.report``: ``dimguard check model.onnx`` and
       :class:`Session` read it.

    One progress line per step on stderr unless ``verbose=False``.
    """
    import torch

    from ._round import quiet
    from .export import export as audited_export

    if not isinstance(args, tuple):
        args = tuple(args) if isinstance(args, list) else (args,)
    kwargs = dict(kwargs or {})
    path = os.fspath(path)
    for bad in ("dynamo", "f", "dynamic_shapes", "dynamic_axes"):
        if bad in onnx_kwargs:
            raise TypeError(f"dimguard.onnx.export: {bad}= is dimguard's to set (the audited program's own sizes are exported)")
    ep, report = audited_export(
        model, args, kwargs, dynamic_shapes=dynamic_shapes, strict=strict, max_rounds=max_rounds, verbose=verbose, **dict(export_kwargs or {})
    )
    t0 = time.perf_counter()
    with quiet() as log:
        try:
            program = torch.onnx.export(ep, args, kwargs=kwargs or None, dynamo=True, opset_version=opset_version, verbose=False, **onnx_kwargs)
        except Exception as e:
            raise RuntimeError(f"dimguard.onnx: torch.onnx.export failed on the audited program: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}\n(torch's output:\n{log.text[-4000:]})") from e
        program.save(path)
    t_onnx = time.perf_counter() - t0
    proto_opset = None
    names = _dim_names(model, args, kwargs, dynamic_shapes)
    axes = attach(path, report, names=names)
    try:
        import onnx

        proto_opset = next((o.version for o in onnx.load(path, load_external_data=False).opset_import if o.domain in ("", "ai.onnx")), None)
    except Exception:  # noqa: BLE001 - only for the progress line
        pass
    named = ", ".join(f"{k} = {v}" for k, v in axes.items()) or "no symbolic axes"
    _progress(verbose, f"torch.onnx.export {t_onnx:.1f} s (opset {proto_opset}); wrote {path}: {named}; the accepted sets are in metadata_props['{REPORT_KEY}']")
    out = OnnxExportReport(report._data)
    object.__setattr__(out, "program", ep)
    return out


# ---------------------------------------------------------------------------------------------
# Reading the report back, and a session that refuses rejected shapes.


def _nearest_per_size(audit: Mapping[str, Any], static: Sequence[Mapping[str, Any]], shapes: Mapping[str, Sequence[int]]) -> Dict[Tuple[str, int], Dict[str, Optional[int]]]:
    """For each size of ``shapes`` outside its own accepted set (for a linked size, the sizes that
    pass with some partner; a fixed size, its value): ``{"size", "below", "above"}``, the
    nearest accepted sizes (None where there is none)."""
    from .cover import _member, _nearest

    out: Dict[Tuple[str, int], Dict[str, Optional[int]]] = {}
    for d in audit.get("dims") or []:
        shape = shapes.get(d["input"])
        k = int(d["index"])
        if shape is None or k >= len(shape):
            continue
        acc = d.get("with_some_partner") if d.get("linked_with") and d.get("with_some_partner") is not None else d.get("accepted")
        if acc is None:
            continue
        v = int(shape[k])
        if _member(acc["segments"], v):
            continue
        below, above = _nearest(acc["segments"], v)
        out[(d["input"], k)] = {"size": v, "below": below, "above": above}
    for p in audit.get("inputs") or []:
        shape = shapes.get(p["input"])
        if shape is None:
            continue
        for k, e in enumerate(p["shape"]):
            if isinstance(e, int) and k < len(shape) and int(shape[k]) != e:
                v = int(shape[k])
                out[(p["input"], k)] = {"size": v, "below": e if e < v else None, "above": e if e > v else None}
    return out


class Session:
    """An ``onnxruntime.InferenceSession`` over an ONNX file written by :func:`export`, whose
    :meth:`run` first checks the input shapes against every condition the exported program
    checks (stored in the file) and raises :class:`dimguard.ShapeError` where the program would
    have raised, instead of running. Everything else is onnxruntime's session
    (``session.get_inputs()``, ``session.get_providers()``, ...).

    ``Session(path, **ort_kwargs)``: ``ort_kwargs`` go to ``onnxruntime.InferenceSession``
    (``providers=``, ``sess_options=``). ``check(feed)`` gives the verdict without running;
    repeated shapes are answered from a cache (a dictionary look-up).
    """

    def __init__(self, path: PathLike, **ort_kwargs: Any):
        import onnxruntime as ort

        path = os.fspath(path)
        self._session = ort.InferenceSession(path, **ort_kwargs)
        text = self._session.get_modelmeta().custom_metadata_map.get(REPORT_KEY)
        if text is None:
            axes = [f"{i.name}[{k}] = {d}" for i in self._session.get_inputs() for k, d in enumerate(i.shape) if not isinstance(d, int)]
            raise ValueError(
                f"dimguard.onnx.Session: {path} carries no dimguard report (metadata_props has no '{REPORT_KEY}'); "
                + (f"its symbolic axes are {', '.join(axes)}: onnxruntime takes any size there. " if axes else "")
                + "Export it with dimguard.onnx.export, or store the report of the program it came from with dimguard.onnx.attach(path, report)."
            )
        stored = json.loads(text)
        audit = stored.get("audit")
        if not audit:
            raise ValueError(f"dimguard.onnx.Session: the report stored in {path} holds no audit of the program ({stored.get('unaudited')})")
        self.path = path
        self.stored = Record(stored)
        self._audit = audit
        self._static = stored.get("static") or []
        self._verdicts = _native.Verdicts(json.dumps({k: audit.get(k) or [] for k in FACT_KEYS}))
        self._to_input: Dict[str, str] = dict((stored.get("onnx") or {}).get("inputs") or {})
        self._cache: Dict[Any, Tuple[Optional[bool], Optional[str]]] = {}

    @property
    def report(self) -> CheckReport:
        """The stored check of the exported program (``dims``, ``joint``, ``verdict``)."""
        return CheckReport(self._audit)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not onnxruntime's (and never recursing before __init__ set them)
            raise AttributeError(name)
        return getattr(self._session, name)

    def _shapes(self, input_feed: Mapping[str, Any]) -> Dict[str, Tuple[int, ...]]:
        out = {}
        to_input = self._to_input
        for n, v in input_feed.items():
            shape = v.shape
            if callable(shape):  # an OrtValue
                shape = shape()
            out[to_input.get(n, n)] = tuple(shape)
        return out

    def _verdict(self, shapes: Mapping[str, Tuple[int, ...]]) -> Tuple[Optional[bool], Optional[str]]:
        key = tuple(shapes.items())
        hit = self._cache.get(key)
        if hit is None:
            hit = self._verdicts.verdict([(n, [int(x) for x in s]) for n, s in shapes.items()])
            if len(self._cache) < 4096:
                self._cache[key] = hit
        return hit

    def check(self, input_feed: Mapping[str, Any]) -> Record:
        """The program's verdict on these inputs' shapes (``accepted``: True, False or None when
        the shapes cannot decide it, and ``reason``), without running anything."""
        accepted, reason = self._verdict(self._shapes(input_feed))
        return Record({"accepted": accepted, "reason": reason or ""})

    def _refuse(self, input_feed: Mapping[str, Any]) -> None:
        shapes = self._shapes(input_feed)
        accepted, reason = self._verdict(shapes)
        if accepted is not False:
            return  # accepted, or undecided from shapes alone (a condition on data): onnxruntime runs it
        v = {"reason": reason or ""}
        nearest = _nearest_per_size(self._audit, self._static, shapes)
        got = ", ".join(f"{n}={tuple(s)}" for n, s in shapes.items())
        parts = []
        for (inp, k), n in nearest.items():
            near = " and ".join(f"{x} {w}" for x, w in ((n["below"], "below"), (n["above"], "above")) if x is not None) or "none"
            parts.append(f"{inp}[{k}] = {n['size']}: nearest accepted {near}")
        msg = f"dimguard.onnx.Session: {got}: the exported program rejects these shapes: {v['reason']}"
        if parts:
            msg += "; " + "; ".join(parts)
        raise ShapeError(msg, reason=v["reason"], shapes=shapes, nearest=nearest)

    def run(self, output_names: Any, input_feed: Mapping[str, Any], run_options: Any = None) -> Any:
        """``InferenceSession.run``, after the shapes are checked: raises
        :class:`dimguard.ShapeError` (``reason``, ``nearest`` per size) where the exported
        program rejects them."""
        self._refuse(input_feed)
        return self._session.run(output_names, input_feed, run_options)

    def run_with_ort_values(self, output_names: Any, input_dict_ort_values: Mapping[str, Any], run_options: Any = None) -> Any:
        """``InferenceSession.run_with_ort_values``, after the shapes are checked (as :meth:`run`)."""
        self._refuse(input_dict_ort_values)
        return self._session.run_with_ort_values(output_names, input_dict_ort_values, run_options)

    def __repr__(self) -> str:
        axes = ", ".join(f"{i.name}{list(i.shape)}" for i in self._session.get_inputs())
        return f"dimguard.onnx.Session({self.path}: {axes}; shapes checked against the exported program's conditions)"

