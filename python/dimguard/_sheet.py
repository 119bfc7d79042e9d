"""The user's ``dynamic_shapes`` as a sheet (the spec model ``dimguard`` reads and writes), and
the sheet's rewritings between rounds of ``dimguard.export``: sizes made static, sizes left to
``Dim.AUTO`` within the user's bounds, the example point a round traces at, and the sheet back in
the form torch takes.

torch is imported lazily.
"""

from __future__ import annotations

import json
import re
from typing import Any, Collection, Dict, List, Mapping, Optional, Sequence, Tuple


def _bound(v: Any) -> Optional[int]:
    if v is None:
        return None
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return None  # int_oo


class _Layout:
    """The user's ``dynamic_shapes`` as a sheet, and a sheet back as ``dynamic_shapes`` of the
    same form (dict by argument name, or tuple in argument order)."""

    def __init__(self, dynamic_shapes: Any, names: List[str]):
        from torch.export import Dim

        self.names = names
        self.as_dict = isinstance(dynamic_shapes, Mapping)
        if self.as_dict:
            unknown = [k for k in dynamic_shapes if k not in names]
            if unknown:
                raise ValueError(f"dynamic_shapes names {unknown}, which are not arguments of forward ({names})")
            per_input = {k: dynamic_shapes.get(k) for k in names}
        elif isinstance(dynamic_shapes, (tuple, list)):
            if len(dynamic_shapes) != len(names):
                raise ValueError(f"dynamic_shapes has {len(dynamic_shapes)} entries for {len(names)} arguments ({names})")
            per_input = dict(zip(names, dynamic_shapes))
        else:
            raise TypeError("dynamic_shapes must be a dict (argument name -> dims) or a tuple in argument order")
        self.roots: List[Dict[str, Any]] = []
        self.entries: List[Dict[str, Any]] = []
        root_ids: Dict[int, str] = {}

        def root(d: Any) -> str:
            if id(d) not in root_ids:
                name = d.__name__
                if any(r["name"] == name for r in self.roots):
                    raise ValueError(f"two different Dim objects are both named {name!r}")
                root_ids[id(d)] = name
                self.roots.append({"name": name, "min": _bound(d.min), "max": _bound(d.max)})
            return root_ids[id(d)]

        for inp, spec in per_input.items():
            if spec is None:
                continue
            if isinstance(spec, Mapping):
                items = list(spec.items())
            elif isinstance(spec, (tuple, list)):
                items = list(enumerate(spec))
            else:
                raise TypeError(
                    f"dynamic_shapes[{inp!r}]: expected {{index: Dim}} or a tuple of Dims (dimguard.export handles "
                    f"top-level tensor arguments), got {type(spec).__name__}"
                )
            for idx, v in items:
                value = self._value(v, inp, int(idx), root, Dim)
                if value is not None:
                    self.entries.append({"input": inp, "index": int(idx), "value": value})

    def _value(self, v: Any, inp: str, idx: int, root: Any, Dim: Any) -> Optional[Dict[str, Any]]:
        if v is None:
            return None
        if isinstance(v, int) and not isinstance(v, bool):
            return {"kind": "int", "value": int(v)}
        hint = getattr(v, "type", None)
        if hint is not None and type(v).__name__ == "_DimHint":
            kind = getattr(hint, "name", str(hint))
            lo, hi = _bound(getattr(v, "min", None)), _bound(getattr(v, "max", None))
            if kind == "STATIC":
                return {"kind": "static"}
            if kind == "AUTO":
                return {"kind": "auto", "min": lo, "max": hi}
            # DYNAMIC: must stay dynamic; a named Dim of its own has exactly that meaning.
            name = re.sub(r"\W", "_", f"{inp}_{idx}")
            self.roots.append({"name": name, "min": lo, "max": hi})
            return {"kind": "dim", "root": name, "coef": 1, "offset": 0, "name": None}
        if hasattr(v, "root") and hasattr(v, "fn"):
            r = root(v.root)
            b0, b1 = int(v.fn(0)), int(v.fn(1))
            name = v.__name__ if str(v.__name__).isidentifier() else None
            return {"kind": "dim", "root": r, "coef": b1 - b0, "offset": b0, "name": name}
        if isinstance(v, Dim) or (hasattr(v, "__name__") and hasattr(v, "min") and hasattr(v, "max")):
            return {"kind": "dim", "root": root(v), "coef": 1, "offset": 0, "name": None}
        raise TypeError(f"dynamic_shapes[{inp!r}][{idx}]: cannot read {v!r}")

    def sheet(self) -> Dict[str, Any]:
        return {"roots": self.roots, "entries": self.entries, "notes": []}

    def to_torch(self, sheet: Mapping[str, Any]) -> Any:
        from torch.export import Dim

        roots = {}
        for r in sheet["roots"]:
            kw = {k: r[k] for k in ("min", "max") if r.get(k) is not None}
            roots[r["name"]] = Dim(r["name"], **kw)
        per: Dict[str, Dict[int, Any]] = {n: {} for n in self.names}
        for e in sheet["entries"]:
            v = e["value"]
            k = v["kind"]
            if k == "dim":
                d = roots[v["root"]]
                val = d if (v["coef"], v["offset"]) == (1, 0) else v["coef"] * d + v["offset"]
            elif k == "auto":
                kw = {x: v[x] for x in ("min", "max") if v.get(x) is not None}
                val = Dim.AUTO(**kw) if kw else Dim.AUTO
            elif k == "static":
                val = Dim.STATIC
            else:
                val = int(v["value"])
            per.setdefault(e["input"], {})[int(e["index"])] = val
        shaped = {n: (per[n] or None) for n in self.names}
        return shaped if self.as_dict else tuple(shaped[n] for n in self.names)


def _static_roots(sheet: Mapping[str, Any], roots: Sequence[str]) -> Dict[str, Any]:
    """``sheet`` with every entry on one of ``roots`` as ``Dim.STATIC`` (traced at the user's
    example size), and notes saying so."""
    entries, notes, used = [], [], set()
    for e in sheet["entries"]:
        v = e["value"]
        if v["kind"] == "dim" and v["root"] in roots:
            entries.append({**e, "value": {"kind": "static"}})
            notes.append(f"{e['input']}[{e['index']}]: Dim.STATIC")
        else:
            entries.append(e)
            if v["kind"] == "dim":
                used.add(v["root"])
    return {"roots": [r for r in sheet["roots"] if r["name"] in used], "entries": entries, "notes": notes}


def _auto(sheet: Mapping[str, Any], roots: Optional[Sequence[str]]) -> Dict[str, Any]:
    """``sheet`` with every entry on one of ``roots`` (all Dim entries when None) as
    ``Dim.AUTO`` bounded like the entry was."""
    bounds = {r["name"]: (r.get("min"), r.get("max")) for r in sheet["roots"]}
    entries, notes, used = [], [], set()
    for e in sheet["entries"]:
        v = e["value"]
        if v["kind"] == "dim" and (roots is None or v["root"] in roots):
            lo, hi = bounds[v["root"]]
            c, o = v["coef"], v["offset"]
            nv = {"kind": "auto", "min": None if lo is None else c * lo + o, "max": None if hi is None else c * hi + o}
            if nv["min"] is not None and nv["min"] < 0:
                nv["min"] = 0
            entries.append({**e, "value": nv})
            notes.append(f"{e['input']}[{e['index']}]: Dim.AUTO (min={nv['min']}, max={nv['max']}); the audit decides")
        else:
            entries.append(e)
            if v["kind"] == "dim":
                used.add(v["root"])
    kept = [r for r in sheet["roots"] if r["name"] in used]
    return {"roots": kept, "entries": entries, "notes": notes}


Key = Tuple[str, int]


def _choose_point(sheet: Mapping[str, Any], traced: Mapping[str, Sequence[int]], inside: Sequence[str] = (), small: Collection[Key] = ()) -> Tuple[Dict[Key, int], List[str]]:
    """Example sizes for one export with ``sheet``: the traced size wherever the spec takes it,
    else the nearest size that it takes; and, for every dynamic entry, a size torch keeps
    dynamic: never 0 or 1 (torch specializes those), and, for a ``Dim`` some entry derives from
    (``32*_w + 16``), a root value of 2 or more (torch specializes the root at 0 or 1, so
    ``32*_w + 16`` traced at 48, on its bound ``_w = 1``, fails: pytorch#176349). Returns the
    sizes of every entry and, per size moved, why. A root in ``inside`` (torch specialized a size
    derived from it at its bound) is taken strictly inside its range where it has an inside.
    Sizes in ``small`` (the example's 0 or 1 at a plain ``Dim`` or ``Dim.AUTO``, exported under
    ``backed_size_oblivious``, where torch keeps them dynamic) stay as traced."""
    roots = {r["name"]: r for r in sheet["roots"]}
    at = lambda e: (traced.get(e["input"]) or [])  # noqa: E731
    point: Dict[Key, int] = {}
    notes: List[str] = []
    by_root: Dict[str, List[Mapping[str, Any]]] = {}
    for e in sheet["entries"]:
        v = e["value"]
        k = (e["input"], int(e["index"]))
        t = at(e)[k[1]] if k[1] < len(at(e)) else None
        if v["kind"] == "dim":
            by_root.setdefault(v["root"], []).append(e)
        elif v["kind"] == "int":
            point[k] = int(v["value"])
        elif v["kind"] == "auto" and t is not None:
            lo = max(v.get("min") or 0, 0 if k in small else 2)
            hi = v.get("max")
            want = t if t >= lo and (hi is None or t <= hi) else (lo if t < lo else hi)
            point[k] = want
        elif t is not None:
            point[k] = t
    for name, entries in by_root.items():
        r = roots[name]
        lin = [(int(e["value"]["coef"]), int(e["value"]["offset"])) for e in entries]
        kmin = r.get("min") if r.get("min") is not None else 0
        kmax = r.get("max") if r.get("max") is not None else (1 << 62)
        derived = any((c, o) != (1, 0) for c, o in lin)
        # Every entry's size at least 2 (at least 0 where torch keeps 0 and 1 dynamic).
        floor = 0 if not derived and all((e["input"], int(e["index"])) in small for e in entries) else 2
        floor_k = max(-((o - floor) // c) for c, o in lin)
        lo_ok, hi_ok = max(kmin, floor_k), kmax
        if derived:
            lo_ok = max(lo_ok, 2)
        if lo_ok > hi_ok:  # no such size: the spec's own range decides
            lo_ok, hi_ok = kmin, kmax
        first = entries[0]
        t = at(first)[first["index"]] if first["index"] < len(at(first)) else None
        c0, o0 = lin[0]
        k0 = None if t is None else (t - o0) // c0 if (t - o0) % c0 == 0 else round((t - o0) / c0)
        if k0 is None:
            k = lo_ok
        else:
            k = min(max(k0, lo_ok), hi_ok)
        pushed = name in inside and hi_ok - lo_ok >= 2 and k in (lo_ok, hi_ok)
        if pushed:
            k = lo_ok + 1 if k == lo_ok else hi_ok - 1
        for e, (c, o) in zip(entries, lin):
            key = (e["input"], int(e["index"]))
            point[key] = c * k + o
            was = at(e)[key[1]] if key[1] < len(at(e)) else None
            if was is not None and was != point[key]:
                why = (
                    f"torch specialized a size derived from {name} at its bound: traced inside (pytorch#176349)"
                    if pushed
                    else "torch specializes a size of 0 or 1"
                    if was in (0, 1) and point[key] >= 2
                    else "the spec does not take it"
                    if k0 is None or k0 < kmin or k0 > kmax or (t - o0) % c0 != 0
                    else f"{name} would be {k0} there, and torch specializes a Dim at 0 or 1 (a size derived from it then fails to export)"
                )
                notes.append(f"{key[0]}[{key[1]}]: traced at {point[key]}, not {was}: {why}")
    return point, notes


def _torch_form(sheet: Mapping[str, Any]) -> Tuple[Dict[str, Any], List[str]]:
    """``sheet`` in a form torch exports: a ``Dim`` some size derives from is taken by torch at 2
    or more only (``32*_w + 16`` with ``_w = Dim('_w', min=1)`` exports with ``_w`` from 2, so
    the program leaves out 48, and traced at 48 it does not export at all: pytorch#176349). Such
    a root is shifted to start at 2, its entries' offsets following (``32*_w - 16`` with ``_w``
    from 2): the same sizes, in a form torch keeps whole. Returns the new sheet and notes."""
    out = json.loads(json.dumps(sheet))
    notes: List[str] = []
    for r in out["roots"]:
        uses = [e for e in out["entries"] if e["value"]["kind"] == "dim" and e["value"]["root"] == r["name"]]
        if not any((e["value"]["coef"], e["value"]["offset"]) != (1, 0) for e in uses):
            continue
        lo = r.get("min") if r.get("min") is not None else 0
        if lo >= 2:
            continue
        shift = 2 - lo
        r["min"] = 2
        if r.get("max") is not None:
            r["max"] = r["max"] + shift
        for e in uses:
            v = e["value"]
            if (v["coef"], v["offset"]) == (1, 0) and not v.get("name"):
                v["name"] = r["name"] + "_"
            v["offset"] -= v["coef"] * shift
        notes.append(f"{r['name']}: shifted to start at 2 (torch takes a Dim that sizes derive from at 2 or more; the sizes are the same)")
    return out, notes


def _is_root(sheet: Mapping[str, Any], expr: str) -> bool:
    return any(r["name"] == expr for r in sheet["roots"])
