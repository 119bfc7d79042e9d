"""An ``ExportedProgram`` in memory as the program JSON ``dimguard check`` reads."""

from __future__ import annotations

import contextlib
import json
import math
import sys
import types
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from . import _native
from ._round import _first_line


def _bound(v: Any) -> Optional[int]:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    if math.isinf(f):
        return None
    return int(v)


def _size(s: Any) -> Dict[str, Any]:
    if isinstance(s, int):
        return {"as_int": int(s)}
    node = getattr(s, "node", None)
    expr = getattr(node, "expr", None)
    if expr is None:
        return {"as_int": int(s)}
    hint = getattr(node, "hint", None)
    out: Dict[str, Any] = {"expr_str": str(expr)}
    if isinstance(hint, int):
        out["hint"] = {"as_int": hint}
    return {"as_expr": out}


# Operators whose conditions decide sizes while the program runs: run-time asserts (torch 2.15's
# ShapesSpec programs hold one per condition torch could not decide) and `arange`, whose values
# may index a table of fixed length. A graph holding one is serialized whole, so the audit reads
# them (``dimguard check``'s `runtime` entries).
_RUNTIME_OPS = ("_assert_scalar", "sym_constrain_range", "_assert_async", "arange")


def needs_graph(ep: Any) -> bool:
    """Whether the program's graph holds run-time asserts or an ``arange`` (see ``_RUNTIME_OPS``)."""
    for n in ep.graph.nodes:
        if n.op == "call_function" and any(k in str(n.target) for k in _RUNTIME_OPS):
            return True
    return False


# Operators whose output is an index the audit stops following (their values are a table's rows).
_INDEX_CONSUMERS = ("aten.embedding", "aten.index_select", "aten.gather", "aten.index.Tensor")


def _audit_nodes(ep: Any) -> set:
    """The nodes the audit reads of a program with run-time asserts or an ``arange``: every
    node whose value is not a tensor (size arithmetic, ``item``, the asserts themselves), the
    run-time operators, and every node an ``arange``'s values reach (up to and including the
    operators that index a table with them, and the table they index), and every node a value read
    from data (``item``) is computed from, so that each implied limit and assert is decided as in
    the whole graph. Tensor arithmetic elsewhere (the model's layers) only fed torch's recorded sizes."""
    import torch

    keep: set = set()
    reached: set = set()
    for n in ep.graph.nodes:
        if n.op != "call_function":
            continue
        t = str(n.target)
        val = n.meta.get("val")
        tensors = isinstance(val, torch.Tensor) or (isinstance(val, (list, tuple)) and any(isinstance(v, torch.Tensor) for v in val))
        fed = any(a in reached for a in n.all_input_nodes)
        consumer = any(c in t for c in _INDEX_CONSUMERS)
        if "arange" in t or (fed and not consumer):
            reached.add(n)
        if fed or not tensors or any(k in t for k in _RUNTIME_OPS):
            keep.add(n)
        if fed and consumer:
            # The table it indexes: its sizes are the limit (Longformer's `index(mask, [arange
            # ...])` over a mask made from `ones`, no `arange` of its own).
            keep.update(a for a in n.all_input_nodes if a.op == "call_function")
    # The tensor a kept `sym_size` reads (a `slice` whose length torch recorded as a value read
    # from data, `u1`: the audit computes it from the slice's bounds).
    for n in list(keep):
        if "sym_size" in str(n.target):
            keep.update(a for a in n.all_input_nodes if a.op == "call_function")
    # What a value read from data (`item`) is computed from: the audit bounds it from the
    # program's own operators (Longformer's `any(mask > 0).item()` over a mask of ones).
    todo = [n for n in ep.graph.nodes if n.op == "call_function" and ("aten.item" in str(n.target) or "_local_scalar_dense" in str(n.target))]
    seen: set = set()
    while todo:
        n = todo.pop()
        for a in n.all_input_nodes:
            if a.op == "call_function" and a not in seen:
                seen.add(a)
                keep.add(a)
                todo.append(a)
    return keep


def _size_ops(ep: Any) -> set:
    """The Python functions of ``math`` and ``operator`` the program's size arithmetic calls
    (``math.ceil``, ``math.sqrt``, ...): torch's serializer knows a fixed list of them and refuses
    the others (``op ceil is not in _SYM_OPS``), so ``torch.export.save`` cannot write such a
    program; dimguard writes them like the listed ones and still checks it, from memory."""
    out = set()
    for n in ep.graph.nodes:
        t = n.target
        if n.op == "call_function" and getattr(t, "__module__", None) in ("math", "_operator", "operator") and callable(t):
            out.add(t)
    return out


def _sizes_meta(serde: Any) -> Any:
    """torch's ``serialize_tensor_meta`` with sizes and dtype only: strides and storage offset
    written as none (``[]``, 0), which the audit never reads (``crates/graph``'s ``TensorMeta``
    holds sizes and dtype)."""
    sym_int, meta = serde.serialize_sym_int, serde.TensorMeta
    dtypes, layouts = serde._TORCH_TO_SERIALIZE_DTYPE, serde._TORCH_TO_SERIALIZE_LAYOUT
    zero = sym_int(0)

    def sizes_meta(t: Any) -> Any:
        return meta(
            dtype=dtypes[t.dtype],
            sizes=[sym_int(s) for s in t.shape],
            requires_grad=t.requires_grad,
            device=serde.Device(type=t.device.type, index=t.device.index),
            strides=[],
            storage_offset=zero,
            layout=layouts[t.layout],
        )

    return sizes_meta


def _printed_once(print_sympy: Any) -> Any:
    """torch's ``_print_sympy`` (sympy's ``srepr``) remembering each expression's text: a
    program's sizes repeat the same few expressions at every node."""
    done: Dict[Any, str] = {}

    def printed(s: Any) -> str:
        expr = getattr(getattr(s, "node", None), "expr", s)
        try:
            return done[expr]
        except KeyError:
            done[expr] = out = print_sympy(s)
            return out
        except TypeError:  # not hashable: printed each time
            return print_sympy(s)

    return printed


def _json_bytes(serde: Any) -> Any:
    """torch's ``_to_json_bytes`` with the same output, walking the dataclasses directly: a
    union's tag and value read without its checked ``__getattribute__`` (a third of the
    serializer's time), each dataclass's field names listed once."""
    import dataclasses

    union = serde._Union
    names: Dict[type, Tuple[str, ...]] = {}
    get = object.__getattribute__

    def plain(obj: Any) -> Any:
        t = type(obj)
        if t is int or t is str or t is bool or obj is None:
            return obj
        if isinstance(obj, union):
            tag = get(obj, "_type")
            return {tag: plain(get(obj, str(tag)))}
        fs = names.get(t)
        if fs is None and dataclasses.is_dataclass(obj):
            fs = names[t] = tuple(f.name for f in dataclasses.fields(obj))
        if fs is not None:
            return {f: plain(get(obj, f)) for f in fs}
        if isinstance(obj, list):
            return [plain(x) for x in obj]
        if isinstance(obj, tuple):
            return tuple(plain(x) for x in obj)
        if isinstance(obj, dict):
            return {k: plain(v) for k, v in obj.items()}
        if isinstance(obj, float):
            if obj == math.inf:
                return "Infinity"
            if obj == -math.inf:
                return "-Infinity"
            return "NaN" if math.isnan(obj) else obj
        return obj

    def to_json_bytes(obj: Any) -> bytes:
        return json.dumps(plain(obj), cls=serde.EnumEncoder, allow_nan=False).encode("utf-8")

    return to_json_bytes


# Per union class of torch's schema: its fields, each None (what ``_Union.create`` starts from).
_UNION_FIELDS: Dict[type, Dict[str, None]] = {}


def _union_create(cls: Any, **kwargs: Any) -> Any:
    """torch's ``_Union.create`` with each class's field names listed once."""
    import dataclasses

    from torch._export.serde.union import _UnionTag

    if len(kwargs) != 1:
        raise AssertionError(f"expected exactly 1 kwarg, got {len(kwargs)}")
    nones = _UNION_FIELDS.get(cls)
    if nones is None:
        nones = _UNION_FIELDS[cls] = {f.name: None for f in dataclasses.fields(cls)}
    obj = cls(**{**nones, **kwargs})
    obj._type = _UnionTag.create(next(iter(kwargs)), cls)
    return obj


def _no_check(self: Any) -> None:
    """A union's ``__post_init__`` without its check of the schema's field names (static)."""


@contextlib.contextmanager
def _no_inductor_import() -> Iterator[None]:
    """torch's serializer imports ``torch._inductor.ir`` at every argument it writes, only to
    ask whether the argument is one of inductor's buffers (never, in an exported program): the
    first import costs 0.15 CPU s, as much as the rest of the audit (T5 encoder). Where it is
    not imported yet, a stand-in with those classes, that nothing is an instance of, answers for
    the duration of the call, and is removed after."""
    name = "torch._inductor.ir"
    if name in sys.modules:
        yield
        return
    stub = types.ModuleType(name)

    class _NotInductor:
        pass

    stub.Buffer = stub.ReinterpretView = stub.TorchBindObject = _NotInductor  # type: ignore[attr-defined]
    sys.modules[name] = stub
    try:
        yield
    finally:
        if sys.modules.get(name) is stub:
            del sys.modules[name]


def program_json(ep: Any, *, full: bool) -> bytes:
    """The program's JSON. ``full=False`` writes only what the audit needs (user inputs with their
    symbolic sizes, ``range_constraints``, ``guards_code``): torch's serializer prints every
    intermediate size with sympy, which costs as much as a quarter of the export itself.
    ``full=True``, a program without ``_guards_code``, or one whose graph holds run-time asserts
    or an ``arange`` (:func:`needs_graph`: the audit reads them from the graph) uses torch's own
    serializer."""
    guards = getattr(ep, "_guards_code", None)
    if full or guards is None or needs_graph(ep):
        from torch._export.serde import serialize as serde

        # torch's serializer refuses a graph whose size arithmetic calls math.ceil / math.floor
        # (user code such as ``math.ceil(h / 8)``, kept by a ShapesSpec program): they are
        # written like its other size operators, for the duration of the call.
        extra = ({math.ceil, math.floor} | _size_ops(ep)) - set(serde._SYM_OPS)
        serde._SYM_OPS.update(extra)
        # For the audit (not ``full``), only the nodes it reads: torch's serializer prints every
        # tensor's sizes with sympy, which was nearly all of dimguard's time on a ShapesSpec
        # program (HF DPT: 1.20 of 1.24 s). See :func:`_audit_nodes`.
        # Nor its checks of a canonical form, nor the weights pickled (the audit reads neither).
        from torch._export.serde.union import _Union

        cls = serde.GraphModuleSerializer
        union_saved = (_Union.__dict__["create"], _Union.__dict__["__post_init__"])
        saved = (cls.handle_call_function, serde.canonicalize, serde.serialize_torch_artifact, serde.serialize_tensor_meta, serde._print_sympy, serde._to_json_bytes)
        if not full:
            keep = _audit_nodes(ep)
            handle = saved[0]

            def pruned(self: Any, node: Any) -> None:
                if node in keep:
                    handle(self, node)

            cls.handle_call_function = pruned
            serde.canonicalize = lambda ep, constants=None: ep
            serde.serialize_torch_artifact = lambda *a, **k: b""
            # Nor each tensor's strides and storage offset (the audit reads sizes and dtypes:
            # strides were half the sizes torch printed with sympy), each expression printed
            # once, and the dataclasses written to JSON without torch's per-field checks of
            # its unions (docs/PERFORMANCE.md, issue 43).
            serde.serialize_tensor_meta = _sizes_meta(serde)
            serde._print_sympy = _printed_once(saved[4])
            serde._to_json_bytes = _json_bytes(serde)
            # Nor the program's verification (export verified it) and each union's check of
            # its schema's field names at every value (``dataclasses.fields`` per value).
            ep.validate = lambda: None
            _Union.create, _Union.__post_init__ = classmethod(_union_create), _no_check
        # torch's serializer prints the whole graph for a debug log line whether or not it is
        # logged (resnet18: 0.83 of its 1.32 s): not while dimguard serializes.
        gm = ep.graph_module
        gm.print_readable = lambda *a, **k: ""
        try:
            with _no_inductor_import():
                return serde.serialize(ep).exported_program
        finally:
            del gm.print_readable
            if not full:
                del ep.validate
                _Union.create, _Union.__post_init__ = union_saved
            serde._SYM_OPS.difference_update(extra)
            cls.handle_call_function, serde.canonicalize, serde.serialize_torch_artifact, serde.serialize_tensor_meta, serde._print_sympy, serde._to_json_bytes = saved
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    inputs: List[Dict[str, Any]] = []
    values: Dict[str, Any] = {}
    specs: List[Dict[str, Any]] = []
    for name in ep.graph_signature.user_inputs:
        node = placeholders.get(name)
        val = None if node is None else node.meta.get("val")
        shape = getattr(val, "shape", None)
        if shape is None:
            continue
        inputs.append({"as_tensor": {"name": name}})
        specs.append({"user_input": {"arg": {"as_tensor": {"name": name}}}})
        values[name] = {"sizes": [_size(s) for s in shape]}
    ranges = {
        str(sym): {"min_val": _bound(r.lower), "max_val": _bound(r.upper)}
        for sym, r in ep.range_constraints.items()
    }
    doc = {
        "graph_module": {
            "graph": {
                "inputs": inputs,
                "outputs": [],
                "nodes": [],
                "tensor_values": values,
                "sym_int_values": {},
            },
            "signature": {"input_specs": specs},
        },
        "range_constraints": ranges,
        "guards_code": [str(g) for g in guards],
        "torch_version": _torch_version(),
    }
    return json.dumps(doc).encode()


def _torch_version() -> Optional[str]:
    try:
        import torch

        return str(torch.__version__)
    except ImportError:  # pragma: no cover - an ExportedProgram implies torch
        return None


def _audit(ep: Any, placeholder_to_input: Mapping[str, str]) -> Dict[str, Any]:
    from ._program import program_json

    try:
        data = program_json(ep, full=False)
    except Exception as e:  # noqa: BLE001 - torch's serializer refuses some graphs (math.ceil nodes)
        raise ValueError(f"torch cannot serialize the program ({_first_line(e)})") from None
    report = json.loads(_native.check(data, "<ExportedProgram>", False))
    for d in report["dims"] + report.get("inputs", []):
        d["input"] = placeholder_to_input.get(d["input"], d["input"])
    return report


def _static(ep: Any, tensor_inputs: Sequence[str]) -> List[Dict[str, Any]]:
    """Every dimension of the returned program's tensor inputs that its graph holds as a number
    (not a symbol): the program runs only at that size. Read from the program itself (its
    placeholders' recorded shapes), never from the sizes a round was traced at."""
    import torch

    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    user = list(ep.graph_signature.user_inputs)
    mapping = dict(zip(user, tensor_inputs)) if len(user) == len(tensor_inputs) else {}
    out = []
    for name in user:
        node = placeholders.get(name)
        shape = getattr(None if node is None else node.meta.get("val"), "shape", None)
        if shape is None:
            continue
        for i, s in enumerate(shape):
            # A SymInt whose expression torch has replaced by a number (a size it fixed while
            # tracing, with real tensors propagated) is fixed too.
            expr = getattr(getattr(s, "node", None), "expr", None) if isinstance(s, torch.SymInt) else None
            if not isinstance(s, torch.SymInt) or getattr(expr, "is_number", False):
                out.append({"input": mapping.get(name, name), "index": i, "size": int(s)})
    return out
