"""Covering every valid size: several exported programs behind one callable.

One ``Dim`` holds one progression; the sizes a model runs at are often a union (four residue
classes mod 8 for a stride-8 network with an upsampling skip; boxes of linked sizes). PyTorch's
answer to such sets is several exported programs behind a dispatcher (pytorch#136119).
:func:`dimguard.export` with ``cover=True`` builds it:

* candidates: the program the export loop returns, one exported with ``Dim.AUTO`` inside your
  bounds (its guards are checked when it is called, so one such program often accepts the whole
  union), and one per remaining progression of the first round's diagnosis, each exported through
  the same loop with example inputs re-sized into it;
* every candidate is audited (what ``dimguard check`` says it accepts, exactly), and pieces are
  chosen greedily by how many sizes of your box they add, up to ``max_programs``;
* a call is routed by its input sizes to the first piece that accepts them (a cache keyed by the
  shapes makes repeated shapes one dictionary look-up); a size no piece accepts raises
  :class:`DispatchError` naming the nearest accepted sizes and the padding that reaches one.

Coverage is counted exactly (unions of products of periodic sets, no enumeration):
``dispatch.coverage``.

torch is imported lazily.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
import time
import zipfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._results import FACT_KEYS, Record, _lines, _verdict

__all__ = ["Dispatch", "DispatchError", "load"]

MANIFEST = "dimguard-dispatch.json"
FORMAT = 1

Key = Tuple[str, int]  # (input, index)
Segs = List[Mapping[str, Any]]  # a SizeSet's segments
Box = Dict[Key, Segs]


class DispatchError(LookupError):
    """No program of a :class:`Dispatch` accepts these input sizes. ``.shapes`` holds them and
    ``.nearest`` per refused dimension ``(input, index) -> (below, above)``, the nearest accepted
    sizes (None where there is none)."""

    def __init__(self, message: str, shapes: Mapping[str, Sequence[int]], nearest: Mapping[Key, Tuple[Optional[int], Optional[int]]]):
        super().__init__(message)
        self.shapes = dict(shapes)
        self.nearest = dict(nearest)


# ---------------------------------------------------------------------------------------------
# Exact sets: segments {lo <= x <= hi, x % modulus in residues}, boxes of them, unions counted.


def _member(segs: Segs, x: int) -> bool:
    return any(s["lo"] <= x <= s["hi"] and x % s["modulus"] in s["residues"] for s in segs)


def _clip(segs: Segs, lo: int, hi: int) -> Segs:
    out = []
    for s in segs:
        a, b = max(s["lo"], lo), min(s["hi"], hi)
        if a <= b:
            out.append({**s, "lo": a, "hi": b})
    return out


def _single(x: int) -> Segs:
    return [{"lo": x, "hi": x, "modulus": 1, "residues": [0]}]


def _interval(lo: int, hi: int) -> Segs:
    return [{"lo": lo, "hi": hi, "modulus": 1, "residues": [0]}] if lo <= hi else []


def _in_progression(a: int, b: int, m: int, r: int) -> int:
    """How many x in [a, b] have x % m == r."""
    if a > b:
        return 0
    first = a + ((r - a) % m)
    return 0 if first > b else (b - first) // m + 1


# Work bound of one union count (elementary pieces visited); past it the count is refused, never
# guessed.
_UNION_WORK = 2_000_000


class _TooMuch(Exception):
    pass


def union_count(boxes: Sequence[Box], dims: Sequence[Key]) -> int:
    """The exact number of tuples (one value per dim of ``dims``) in the union of ``boxes``.

    Recursive on the first dim: its axis is cut into pieces on which every box's membership is
    the same (between the segments' ends, one residue class of the moduli's lcm at a time); the
    tuples over a piece are its size times the union count of the boxes holding it, on the other
    dims (memoized by that set of boxes)."""
    work = [0]
    memo: Dict[Tuple[int, Tuple[int, ...]], int] = {}

    def go(level: int, idx: Tuple[int, ...]) -> int:
        if not idx:
            return 0
        if level == len(dims):
            return 1
        key = (level, idx)
        if key in memo:
            return memo[key]
        d = dims[level]
        cuts = set()
        for i in idx:
            for s in boxes[i][d]:
                cuts.add(s["lo"])
                cuts.add(s["hi"] + 1)
        points = sorted(cuts)
        by_pattern: Dict[Tuple[int, ...], int] = {}
        for a, b1 in zip(points, points[1:]):
            b = b1 - 1
            covering = [(i, s) for i in idx for s in boxes[i][d] if s["lo"] <= a and b <= s["hi"]]
            if not covering:
                continue
            m = 1
            for _, s in covering:
                m = m * s["modulus"] // math.gcd(m, s["modulus"])
            work[0] += m
            if work[0] > _UNION_WORK:
                raise _TooMuch()
            for r in range(m):
                n = _in_progression(a, b, m, r)
                if n == 0:
                    continue
                pat = tuple(sorted({i for i, s in covering if r % s["modulus"] in s["residues"]}))
                if pat:
                    by_pattern[pat] = by_pattern.get(pat, 0) + n
        total = sum(n * go(level + 1, pat) for pat, n in by_pattern.items())
        memo[key] = total
        return total

    return go(0, tuple(range(len(boxes))))


def _intersect(a: Segs, b: Segs) -> Segs:
    """``a`` ∩ ``b`` for periodic segments, one lcm-period residue set per overlap."""
    out = []
    for x in a:
        for y in b:
            lo, hi = max(x["lo"], y["lo"]), min(x["hi"], y["hi"])
            if lo > hi:
                continue
            m = x["modulus"] * y["modulus"] // math.gcd(x["modulus"], y["modulus"])
            res = [r for r in range(m) if r % x["modulus"] in x["residues"] and r % y["modulus"] in y["residues"]]
            if res:
                out.append({"lo": lo, "hi": hi, "modulus": m, "residues": res})
    return out


def _nearest(segs: Segs, x: int) -> Tuple[Optional[int], Optional[int]]:
    below: Optional[int] = None
    above: Optional[int] = None
    for s in segs:
        m = s["modulus"]
        for r in s["residues"]:
            # largest member <= x
            hi = min(x, s["hi"])
            if hi >= s["lo"]:
                v = hi - ((hi - r) % m)
                if v >= s["lo"] and (below is None or v > below):
                    below = v
            lo = max(x, s["lo"])
            if lo <= s["hi"]:
                v = lo + ((r - lo) % m)
                if v <= s["hi"] and (above is None or v < above):
                    above = v
    return below, above


# ---------------------------------------------------------------------------------------------
# A piece: one exported program and its exact accepted set.


class Piece:
    """One program of a :class:`Dispatch`: ``program`` (the ``ExportedProgram``), ``report`` (its
    :class:`~dimguard.ExportReport`, or a :class:`~dimguard.Record` of the audit after
    :func:`load`), ``spec`` (the Python it was exported with) and ``how`` (which candidate it
    came from)."""

    def __init__(self, program: Any, audit: Mapping[str, Any], spec: str, how: str):
        self.program = program
        self.audit = {k: audit.get(k) or [] for k in ("dims", "joint", "static", "assumptions", *FACT_KEYS)}
        self.spec = spec
        self.how = how
        self.adds = 0
        self._module: Any = None

    @property
    def module(self) -> Any:
        """The callable module (``program.module()``, made once)."""
        if self._module is None:
            self._module = self.program.module()
        return self._module

    def accepts(self, shapes: Mapping[str, Sequence[int]]) -> bool:
        """Whether this program accepts the shapes, for routing: only a decided accept counts
        (an undecided verdict never routes a call to a program that may raise)."""
        return _verdict(self.audit, shapes)["accepted"] is True

    def boxes(self, target: Mapping[Key, Tuple[int, int]]) -> Optional[List[Box]]:
        """The accepted set inside ``target`` (dim -> range) as boxes, or None when the audit left
        some size undecided (the piece then counts nothing it cannot prove)."""
        base: Box = {}
        static = {(s["input"], s["index"]): s["size"] for s in self.audit["static"]}
        dyn = {(d["input"], d["index"]): d for d in self.audit["dims"]}
        groups: List[List[Box]] = []
        linked = set()
        for j in self.audit["joint"]:
            members = [next((k for k, d in dyn.items() if d.get("source") == s), None) for s in j.get("sources", [])]
            # A group with a defined size (`joint[].defined`) is a graph, not boxes: its sizes
            # count through their own sets (none proven), never its boxes over the others.
            if any(k is None for k in members) or not j.get("boxes_complete") or j.get("defined"):
                continue
            alts = []
            for b in j.get("boxes", []):
                alts.append({k: side["segments"] for k, side in zip(members, b)})
            groups.append(alts)
            linked.update(members)
        for k, (lo, hi) in target.items():
            if k in linked:
                continue
            if k in dyn:
                acc = dyn[k].get("accepted")
                if acc is None:
                    return None
                base[k] = _clip(acc["segments"], lo, hi)
            elif k in static:
                base[k] = _clip(_single(static[k]), lo, hi)
            else:
                base[k] = _interval(lo, hi)  # not a tensor dim the program fixes or reads
        # A ShapesSpec's added assumptions: the program asserts each at run time.
        for a in self.audit["assumptions"]:
            k = (a.get("input"), a.get("index"))
            if a.get("kept") is None:
                return None  # over several sizes: not counted
            if k in base:
                base[k] = _intersect(base[k], a["kept"]["segments"])
        out = [dict(base)]
        for alts in groups:
            out = [{**b, **{k: _clip(v, *target[k]) if k in target else v for k, v in a.items()}} for b in out for a in alts]
        return [{k: b[k] for k in target} for b in out]


# ---------------------------------------------------------------------------------------------
# The dispatcher.


class Dispatch:
    """Several exported programs behind one callable (``dimguard.export(..., cover=True)``).

    Call it like the model: the input sizes choose the program (the first piece whose exact
    accepted set holds them; repeated shapes hit a cache). ``pieces`` lists the programs,
    ``coverage`` says how many sizes of your box they accept together and what one ``Dim``
    would, ``save(path)`` writes one archive that :func:`dimguard.load` restores."""

    def __init__(self, pieces: List[Piece], names: List[str], target: Mapping[Key, Tuple[int, int]], one_dim: Optional[int], notes: Optional[List[str]] = None):
        self.pieces = pieces
        self.names = list(names)
        self.target = dict(target)
        self.one_dim = one_dim
        self.notes = list(notes or [])
        self._cache: Dict[Tuple[Tuple[str, Tuple[int, ...]], ...], int] = {}
        self.coverage = Record(self._coverage())

    # -- coverage --------------------------------------------------------------------------
    def _coverage(self) -> Dict[str, Any]:
        dims = sorted(self.target)
        box_size = 1
        for lo, hi in self.target.values():
            box_size *= max(0, hi - lo + 1)
        pieces = []
        covered: List[Box] = []
        total: Optional[int] = 0
        for p in self.pieces:
            bs = p.boxes(self.target)
            row = {"how": p.how, "spec": p.spec, "accepts": None, "adds": None}
            if bs is not None and total is not None:
                try:
                    row["accepts"] = union_count(bs, dims) if dims else 1
                    new_total = union_count(covered + bs, dims) if dims else 1
                    row["adds"] = new_total - total
                    total = new_total
                    covered.extend(bs)
                except _TooMuch:
                    total = None
            else:
                total = None
            pieces.append(row)
        return {
            "dims": [f"{i}[{k}]" for i, k in dims],
            "box": [[self.target[k][0], self.target[k][1]] for k in dims],
            "box_size": box_size,
            "accepted": total,
            "programs": len(self.pieces),
            "one_dim": self.one_dim,
            "pieces": pieces,
            "summary": self._summary(total, box_size),
        }

    def _summary(self, total: Optional[int], box_size: int) -> str:
        n = len(self.pieces)
        progs = f"{n} program{'s' if n != 1 else ''}"
        if total is None:
            acc = "an undecided number of"
        else:
            acc = str(total)
        s = f"{acc} of {box_size} sizes in {progs}"
        if self.one_dim is not None:
            s += f"; one Dim: {self.one_dim}"
        return s

    # -- routing ---------------------------------------------------------------------------
    def shapes_of(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Dict[str, List[int]]:
        """The tensor arguments' shapes by argument name (positional arguments in ``forward``'s
        order, as exported)."""
        if len(args) > len(self.names):
            raise TypeError(f"{len(args)} positional arguments for {len(self.names)} inputs ({self.names})")
        out: Dict[str, List[int]] = {}
        for name, v in list(zip(self.names, args)) + list(kwargs.items()):
            shape = getattr(v, "shape", None)
            if shape is not None:
                out[name] = [int(s) for s in shape]
        return out

    def route(self, shapes: Mapping[str, Sequence[int]]) -> int:
        """The index of the piece that runs inputs of these shapes; :class:`DispatchError` when no
        piece accepts them."""
        key = tuple(sorted((k, tuple(int(s) for s in v)) for k, v in shapes.items()))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        for i, p in enumerate(self.pieces):
            if p.accepts(shapes):
                if len(self._cache) < 4096:
                    self._cache[key] = i
                return i
        raise self._refusal(shapes)

    def accepts(self, shapes: Mapping[str, Sequence[int]]) -> bool:
        """Whether some piece accepts inputs of these shapes."""
        try:
            self.route(shapes)
            return True
        except DispatchError:
            return False

    def _refusal(self, shapes: Mapping[str, Sequence[int]]) -> DispatchError:
        nearest: Dict[Key, Tuple[Optional[int], Optional[int]]] = {}
        parts = []
        for k in sorted(self.target):
            inp, idx = k
            shape = shapes.get(inp)
            if shape is None or idx >= len(shape):
                continue
            v = int(shape[idx])
            segs: Segs = []
            for p in self.pieces:
                bs = p.boxes({k: (-(1 << 62), 1 << 62)})
                for b in bs or []:
                    segs.extend(b[k])
            if _member(segs, v):
                continue
            below, above = _nearest(segs, v)
            nearest[k] = (below, above)
            near = " and ".join(str(x) for x in (below, above) if x is not None) or "none"
            pad = f"; pad by {above - v} to {above}" if above is not None else ""
            parts.append(f"{inp}[{idx}] = {v} is accepted by no program (nearest accepted: {near}{pad})")
        if not parts:
            parts.append(
                "each size is accepted by some program, but no program accepts them together "
                f"({len(self.pieces)} programs; see dispatch.pieces[i].audit['joint'])"
            )
        got = ", ".join(f"{k}={tuple(v)}" for k, v in shapes.items())
        return DispatchError(f"dimguard.Dispatch: {got}: " + "; ".join(parts), shapes, nearest)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        i = self.route(self.shapes_of(args, kwargs))
        return self.pieces[i].module(*args, **kwargs)

    # -- archive ---------------------------------------------------------------------------
    def save(self, path: Any) -> None:
        """Writes one archive (a zip): every program (``torch.export.save``) and a manifest with
        each program's exact accepted set, the spec it was exported with and the torch version."""
        import torch

        manifest = {
            "format": FORMAT,
            "torch": torch.__version__,
            "names": self.names,
            "target": [[i, k, lo, hi] for (i, k), (lo, hi) in sorted(self.target.items())],
            "one_dim": self.one_dim,
            "notes": self.notes,
            "coverage": self.coverage.to_dict(),
            "pieces": [],
        }
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
            for i, p in enumerate(self.pieces):
                buf = io.BytesIO()
                torch.export.save(p.program, buf)
                name = f"programs/{i}.pt2"
                z.writestr(name, buf.getvalue())
                manifest["pieces"].append({"file": name, "spec": p.spec, "how": p.how, "audit": p.audit})
            z.writestr(MANIFEST, json.dumps(manifest, indent=1))

    def html(self, path: Any = None, title: str = "dimguard dispatch") -> str:
        """The coverage as one self-contained HTML page: per program and dimension a strip of
        the sizes it accepts in your box, then each program's spec; written to ``path`` when
        given."""
        from . import _native

        dims = []
        for i, p in enumerate(self.pieces):
            for k in sorted(self.target):
                lo, hi = self.target[k]
                segs: Segs = []
                for b in p.boxes({k: (lo, hi)}) or []:
                    segs.extend(b[k])
                count = union_count([{k: segs}], [k]) if segs else 0
                dims.append({
                    "name": f"program {i}: {k[0]}[{k[1]}]",
                    "range": [lo, hi],
                    "feasible": {"count": count, "segments": sorted(segs, key=lambda s: s["lo"])},
                })
        cov = self.coverage.to_dict()
        page = _native.html(json.dumps({
            "dims": dims,
            "cover": {
                "summary": cov["summary"],
                "notes": self.notes,
                "pieces": [
                    {"label": f"program {i} ({p['how']})", "count": p["accepts"], "code": p["spec"]}
                    for i, p in enumerate(cov["pieces"])
                ],
            },
        }), title)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
        return page

    def __repr__(self) -> str:
        rows = [self.coverage.summary]
        for i, p in enumerate(self.coverage.to_dict()["pieces"]):
            rows.append(f"program {i} ({p['how']}): accepts {p['accepts']}, adds {p['adds']}")
        rows.extend(self.notes)
        return _lines(f"Dispatch({len(self.pieces)} programs)", rows)


def load(path: Any) -> Dispatch:
    """Restores a :class:`Dispatch` written by :meth:`Dispatch.save`. The programs share one copy
    of every weight that is the same in all of them."""
    import torch

    with zipfile.ZipFile(path) as z:
        try:
            manifest = json.loads(z.read(MANIFEST))
        except KeyError:
            raise ValueError(f"{path}: not a dimguard dispatch archive (no {MANIFEST})") from None
        if manifest.get("format") != FORMAT:
            raise ValueError(f"{path}: dispatch archive format {manifest.get('format')}, this dimguard reads {FORMAT}")
        pieces = []
        for p in manifest["pieces"]:
            ep = torch.export.load(io.BytesIO(z.read(p["file"])))
            pieces.append(Piece(ep, p["audit"], p["spec"], p["how"]))
    share_weights([p.program for p in pieces])
    target = {(i, k): (lo, hi) for i, k, lo, hi in manifest["target"]}
    return Dispatch(pieces, manifest["names"], target, manifest.get("one_dim"), manifest.get("notes"))


def share_weights(programs: Sequence[Any]) -> int:
    """Makes every program's state (parameters and buffers) the first program's tensor where the
    name, shape, dtype and values agree; returns how many tensors were shared."""
    import torch

    if not programs:
        return 0
    first = programs[0].state_dict
    shared = 0
    for ep in programs[1:]:
        sd = ep.state_dict
        for name, t in list(sd.items()):
            f = first.get(name)
            if f is None or f is t or f.shape != t.shape or f.dtype != t.dtype:
                continue
            if f.data_ptr() == t.data_ptr() or torch.equal(f, t):
                sd[name] = f
                shared += 1
    return shared


# ---------------------------------------------------------------------------------------------
# Building a cover (called by dimguard.export).


def _resize(t: Any, dim: int, n: int) -> Any:
    """``t`` with size ``n`` along ``dim``: cut, or tiled with its own content (so token ids and
    masks stay valid values)."""
    import torch

    size = t.shape[dim]
    if n == size:
        return t
    if n < size:
        out = t.narrow(dim, 0, n).contiguous()
    else:
        reps = -(-n // max(size, 1))
        out = torch.cat([t] * reps, dim=dim).narrow(dim, 0, n).contiguous()
    # A view (``narrow`` of the whole tensor stays one) is traced with its base's sizes too
    # (``L['x']._base.size()[0]``): the example must be a tensor of its own.
    return out.clone() if out._base is not None else out


def example_point(sheet: Mapping[str, Any], shapes: Mapping[str, Sequence[int]]) -> Dict[Key, int]:
    """A size for every Dim entry of ``sheet`` inside its spec, nearest to the traced sizes: each
    root's value closest to what its first entry was traced at, within the root's bounds."""
    roots = {r["name"]: r for r in sheet["roots"]}
    value: Dict[str, int] = {}
    out: Dict[Key, int] = {}
    for e in sheet["entries"]:
        v = e["value"]
        k = (e["input"], int(e["index"]))
        traced = shapes.get(e["input"], [None] * (k[1] + 1))[k[1]] if e["input"] in shapes else None
        if v["kind"] == "dim":
            r = roots[v["root"]]
            if v["root"] not in value:
                c, o = v["coef"], v["offset"]
                want = round(((traced if traced is not None else o + c * (r.get("min") or 2)) - o) / c)
                lo, hi = r.get("min"), r.get("max")
                if lo is not None:
                    want = max(want, lo)
                if hi is not None:
                    want = min(want, hi)
                value[v["root"]] = want
            out[k] = v["coef"] * value[v["root"]] + v["offset"]
        elif v["kind"] == "int":
            out[k] = int(v["value"])
    return out


def resized(top: Sequence[Tuple[str, Any]], point: Mapping[Key, int]) -> Tuple[Tuple[Any, ...], Dict[str, Any]]:
    """The example arguments re-sized to ``point``, as positional arguments in order."""
    import torch

    args = []
    for name, v in top:
        if isinstance(v, torch.Tensor):
            for (inp, idx), n in point.items():
                if inp == name and idx < v.dim() and v.shape[idx] != n:
                    v = _resize(v, idx, n)
        args.append(v)
    return tuple(args), {}


_SOURCE = re.compile(r"L\[['\"](\w+)['\"]\]\.size\(\)\[(\d+)\]")


def progressions(report: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Every suggestion of the first constraint violation's diagnosis, as narrowing items
    (input, index, progression), largest first."""
    out = []
    for r in report.get("rounds", []):
        diag = r.get("diagnosis")
        if not diag:
            continue
        for d in diag.get("dims", []):
            m = _SOURCE.search(d.get("source") or "")
            if not m:
                continue
            for s in d.get("suggestions") or []:
                out.append({"input": m.group(1), "index": int(m.group(2)), "name": d["name"], "count": s.get("count", 0), **{k: s[k] for k in ("lo", "hi", "modulus", "residue")}})
        break
    out.sort(key=lambda s: -s["count"])
    return out


def target_box(sheet: Mapping[str, Any], shapes: Mapping[str, Sequence[int]]) -> Dict[Key, Tuple[int, int]]:
    """The user's box: every dimension the user's spec makes dynamic, with its range (a Dim's
    bounds, an ``AUTO``'s bounds; torch's defaults 0..2^63-1 where none is given, capped to
    what an int64 size holds)."""
    roots = {r["name"]: r for r in sheet["roots"]}
    out: Dict[Key, Tuple[int, int]] = {}
    top = (1 << 63) - 1
    for e in sheet["entries"]:
        v = e["value"]
        k = (e["input"], int(e["index"]))
        if v["kind"] == "dim":
            r = roots[v["root"]]
            c, o = v["coef"], v["offset"]
            lo = c * (r["min"] if r.get("min") is not None else 0) + o
            hi = c * r["max"] + o if r.get("max") is not None else top
            out[k] = (max(lo, 0), min(hi, top))
        elif v["kind"] == "auto":
            out[k] = (v.get("min") or 0, v.get("max") if v.get("max") is not None else top)
    return out


def _say(verbose: bool, msg: str) -> None:
    if verbose:
        print(f"dimguard.export (cover): {msg}", file=sys.stderr, flush=True)


def _count(pieces: Sequence[Piece], target: Mapping[Key, Tuple[int, int]], dims: Sequence[Key]) -> Optional[int]:
    """The tuples of the box that some piece accepts (pieces with an undecided size count
    nothing); None past the union count's work bound."""
    boxes: List[Box] = [b for p in pieces for b in (p.boxes(target) or [])]
    try:
        return union_count(boxes, dims) if dims else (1 if boxes else 0)
    except _TooMuch:
        return None


def _greedy(pool: Sequence[Piece], chosen: Sequence[Piece], target: Mapping[Key, Tuple[int, int]], dims: Sequence[Key], max_programs: int) -> List[Piece]:
    """``chosen`` extended, up to ``max_programs``, each time by the piece of ``pool`` that adds
    the most tuples of the box (its ``adds``)."""
    chosen = list(chosen)
    base = _count(chosen, target, dims) or 0
    while len(chosen) < max_programs:
        best, gain = None, 0
        for p in pool:
            if p in chosen:
                continue
            c = _count(chosen + [p], target, dims)
            if c is not None and c - base > gain:
                best, gain = p, c - base
        if best is None:
            break
        best.adds = gain
        chosen.append(best)
        base += gain
    return chosen


def _serve_example(candidates: List[Piece], chosen: List[Piece], model: Any, top: Sequence[Tuple[str, Any]], kwargs: Mapping[str, Any], max_programs: int, notes: List[str], verbose: bool, export_kwargs: Mapping[str, Any]) -> List[Piece]:
    """The chosen pieces, with one that accepts the user's own example when none does: a
    candidate that accepts it, else a program exported static at the example itself (it runs
    there whenever the model does). It replaces the piece chosen last when ``max_programs`` are
    chosen already. The Dispatch always serves the call the user traced with."""
    import torch

    from ._program import _audit, _static
    from ._round import quiet

    shapes = {n: [int(x) for x in v.shape] for n, v in top if isinstance(v, torch.Tensor)}
    base = chosen or list(candidates[:1])
    if any(p.accepts(shapes) for p in base):
        return chosen
    room = base if len(base) < max_programs else base[: max_programs - 1]
    for p in candidates:
        if p not in base and p.accepts(shapes):
            notes.append(f"{p.how}: added, since no chosen program accepts your example")
            return room + [p]
    t0 = time.perf_counter()
    try:
        with quiet():
            ep = torch.export.export(model, tuple(v for _, v in top), dict(kwargs), **{k: v for k, v in export_kwargs.items() if k != "max_rounds"})
        tensors = [n for n, v in top if isinstance(v, torch.Tensor)]
        placeholders = list(ep.graph_signature.user_inputs)
        audit = _audit(ep, dict(zip(placeholders, tensors)) if len(placeholders) == len(tensors) else {})
        audit["static"] = _static(ep, tensors)
    except Exception as e:  # noqa: BLE001 - said: the Dispatch then refuses the example, with why
        notes.append(f"no program accepts your example, and a static program at it did not export ({type(e).__name__})")
        return chosen
    piece = Piece(ep, audit, "dynamic_shapes = None", "static at your example")
    _say(verbose, f"static at your example: exported ({time.perf_counter() - t0:.1f} s)")
    if not piece.accepts(shapes):
        notes.append("no program accepts your example, nor the static program exported at it (its audit does not decide it)")
        return chosen
    candidates.append(piece)
    notes.append("static at your example: added, since no chosen program accepts your example")
    return room + [piece]


def _finish(candidates: Sequence[Piece], chosen: List[Piece], top: Sequence[Tuple[str, Any]], target: Mapping[Key, Tuple[int, int]], dims: Sequence[Key], notes: List[str], verbose: bool) -> Dispatch:
    """The dispatch of the chosen pieces; "one Dim" is what the loop's own program accepts."""
    one_dim = _count(candidates[:1], target, dims) if candidates[0].boxes(target) is not None else None
    d = Dispatch(chosen or list(candidates[:1]), [n for n, _ in top], target, one_dim, notes)
    _say(verbose, d.coverage.summary)
    return d


def build_shapes_spec(export_fn: Any, model: Any, top: Sequence[Tuple[str, Any]], kwargs: Mapping[str, Any], spec: Any, first: Tuple[Any, Any], max_programs: int, verbose: bool, export_kwargs: Mapping[str, Any]) -> Dispatch:
    """The cover for a ``ShapesSpec``: the loop's program holds the branch the traced example
    takes of every data-dependent expression; for each assumption that removed sizes, the same
    ``ShapesSpec`` is exported again at an example re-sized into the sizes it removed (the
    other branch), and pieces are chosen greedily as for ``Dim`` specs."""
    import torch

    shapes = {n: [int(s) for s in v.shape] for n, v in top if isinstance(v, torch.Tensor)}
    target: Dict[Key, Tuple[int, int]] = {}
    top_size = (1 << 63) - 1
    for name, leaf in spec._leaves():
        if isinstance(leaf, spec.ds.TensorSpec):
            for i, d in enumerate(leaf):
                if isinstance(d, spec.ds.IntVar):
                    target[(name, i)] = (max(d.min or 0, 0), d.max if d.max is not None else top_size)
    dims = sorted(target)
    ep0, rep0 = first
    candidates: List[Piece] = [Piece(ep0, rep0.to_dict(), rep0.spec, "the export loop's program")]
    notes: List[str] = []

    queue = list(rep0.to_dict().get("assumptions") or [])
    tried: set = set()
    while queue and len(candidates) < 2 * max_programs + 1:
        a = queue.pop(0)
        k = (a.get("input"), a.get("index"))
        if a.get("kept") is None or k not in target:
            continue
        lo, hi = target[k]
        kept = a["kept"]["segments"]
        traced = shapes[k[0]][k[1]]
        # The size of the removed region nearest the traced one.
        outside = [x for x in range(max(lo, traced - 4096), min(hi, traced + 4096) + 1) if not _member(kept, x)]
        if not outside:
            continue
        x = min(outside, key=lambda v: (abs(v - traced), v))
        if (k, x) in tried or any(p.accepts({**shapes, k[0]: [x if j == k[1] else s for j, s in enumerate(shapes[k[0]])]}) for p in candidates):
            continue
        tried.add((k, x))
        args, _ = resized(top, {k: x})
        t0 = time.perf_counter()
        try:
            ep, rep = export_fn(model, args, dict(kwargs), dynamic_shapes=spec.ds.ShapesSpec(spec.params, assumptions=spec.user_assumptions), verbose=False, **export_kwargs)
        except Exception as e:  # noqa: BLE001 - a region that does not export is said, not a piece
            notes.append(f"{k[0]}[{k[1]}]={x} (the other branch of {a['code']}): did not export ({type(e).__name__})")
            continue
        _say(verbose, f"the other branch of {a['code']}, traced at {k[0]}[{k[1]}]={x}: exported ({time.perf_counter() - t0:.1f} s)")
        piece = Piece(ep, rep.to_dict(), rep.spec, f"traced at {k[0]}[{k[1]}]={x}")
        candidates.append(piece)
        queue.extend(rep.to_dict().get("assumptions") or [])
    chosen = _greedy(candidates, [], target, dims, max_programs)
    chosen = _serve_example(candidates, chosen, model, top, kwargs, max_programs, notes, verbose, export_kwargs)
    return _finish(candidates, chosen, top, target, dims, notes, verbose)


def build(export_fn: Any, model: Any, top: Sequence[Tuple[str, Any]], kwargs: Mapping[str, Any], layout: Any, user_sheet: Mapping[str, Any], first: Tuple[Any, Any], max_programs: int, verbose: bool, export_kwargs: Mapping[str, Any]) -> Dispatch:
    """The greedy cover (see the module's doc)."""
    import torch

    from . import _native
    from ._round import quiet
    from ._program import _audit, _static
    from ._sheet import _auto

    shapes = {n: [int(s) for s in v.shape] for n, v in top if isinstance(v, torch.Tensor)}
    target = target_box(user_sheet, shapes)
    dims = sorted(target)
    ep0, rep0 = first
    candidates: List[Piece] = [Piece(ep0, rep0.to_dict(), rep0.spec, "the export loop's program")]
    notes: List[str] = []

    def attempt(sheet: Mapping[str, Any], how: str, point: Optional[Mapping[Key, int]], raw: bool = False) -> None:
        args = tuple(v for _, v in top)
        if point:
            args, _ = resized(top, point)
        t0 = time.perf_counter()
        try:
            if raw:
                # As exported, not narrowed: a program whose guards accept a union is kept whole.
                with quiet():
                    ep = torch.export.export(model, args, dict(kwargs), dynamic_shapes=layout.to_torch(sheet), **export_kwargs)
                placeholders = list(ep.graph_signature.user_inputs)
                tensors = [n for n, v in top if isinstance(v, torch.Tensor)]
                audit = _audit(ep, dict(zip(placeholders, tensors)) if len(placeholders) == len(tensors) else {})
                audit["static"] = _static(ep, tensors)
                spec = _native.spec_code(json.dumps(sheet))
            else:
                ep, rep = export_fn(model, args, dict(kwargs), dynamic_shapes=layout.to_torch(sheet), verbose=False, max_rounds=3, **export_kwargs)
                audit, spec = rep.to_dict(), rep.spec
        except Exception as e:  # noqa: BLE001 - a candidate that does not export is skipped, said
            notes.append(f"{how}: did not export ({type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''})")
            _say(verbose, f"{how}: did not export ({time.perf_counter() - t0:.1f} s)")
            return
        candidates.append(Piece(ep, audit, spec, how))
        _say(verbose, f"{how}: exported ({time.perf_counter() - t0:.1f} s)")

    # One program with Dim.AUTO inside the user's bounds: its guards are checked at call time.
    if any(e["value"]["kind"] == "dim" for e in user_sheet["entries"]):
        auto = _auto(user_sheet, None)
        attempt({"roots": auto["roots"], "entries": auto["entries"], "notes": []}, "Dim.AUTO inside your bounds", None, raw=True)

    chosen = _greedy(candidates, [], target, dims, max_programs)
    # The remaining progressions of the first diagnosis, each exported at a re-sized example.
    if len(chosen) < max_programs:
        for item in progressions(rep0.to_dict()):
            if len(chosen) >= max_programs:
                break
            k = (item["input"], item["index"])
            covered = any(_member(b[k], item["lo"] + ((item["residue"] - item["lo"]) % item["modulus"])) for p in chosen for b in (p.boxes(target) or []) if k in b)
            if covered:
                continue
            narrowed = json.loads(_native.narrow(json.dumps(user_sheet), json.dumps([{k2: item[k2] for k2 in ("input", "index", "name", "lo", "hi", "modulus", "residue")}])))
            sheet = {"roots": narrowed["roots"], "entries": narrowed["entries"], "notes": []}
            desc = f"{item['input']}[{item['index']}] in {item['lo']}..{item['hi']}" + (f" ≡ {item['residue']} (mod {item['modulus']})" if item["modulus"] > 1 else "")
            attempt(sheet, desc, example_point(sheet, shapes))
            chosen = _greedy(candidates, chosen, target, dims, max_programs)
    # Branch regions: sizes of the box no chosen program accepts but the model itself runs at
    # (a size-dependent branch, a different trace) get a program traced there.
    tried: set = set()
    refused: List[str] = []
    budget = 2 * max_programs + 2
    while len(chosen) < max_programs and len(candidates) < budget:
        probe = next((pt for k in dims for pt in _probes(chosen, target, k, user_sheet, shapes) if tuple(sorted(pt.items())) not in tried), None)
        if probe is None:
            break
        tried.add(tuple(sorted(probe.items())))
        args, _ = resized(top, probe)
        where = ", ".join(f"{i}[{k}]={v}" for (i, k), v in sorted(probe.items()) if (i, k) in target)
        try:
            # The model's own output (transformers' "Input ids are automatically padded ...")
            # never reaches the terminal: the probe is dimguard's, not the user's call.
            with torch.no_grad(), quiet():
                model(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the model itself refuses the size: not a piece
            refused.append(f"{where} ({type(e).__name__})")
            continue
        if any(e["value"]["kind"] == "dim" for e in user_sheet["entries"]):
            auto = _auto(user_sheet, None)
            before = len(candidates)
            attempt({"roots": auto["roots"], "entries": auto["entries"], "notes": []}, f"Dim.AUTO traced at {where}", probe, raw=True)
            if len(candidates) == before:
                continue
            chosen = _greedy(candidates, chosen, target, dims, max_programs)
        else:
            break
    if refused:
        notes.append("sizes no program accepts where the model itself raises (probed): " + ", ".join(refused))
    chosen = _serve_example(candidates, chosen, model, top, kwargs, max_programs, notes, verbose, export_kwargs)
    return _finish(candidates, chosen, top, target, dims, notes, verbose)


def _probes(chosen: Sequence[Piece], target: Mapping[Key, Tuple[int, int]], k: Key, sheet: Mapping[str, Any], shapes: Mapping[str, Sequence[int]]) -> List[Dict[Key, int]]:
    """A few points of the box that no chosen piece accepts, differing from the traced sizes in
    dim ``k`` (and the dims tied to it by the spec): near each end and the middle of its range."""
    lo, hi = target[k]
    span = hi - lo
    starts = sorted({lo, hi, lo + span // 2, lo + span // 4, lo + 3 * span // 4})
    traced = {(i, j): shapes[i][j] for i in shapes for j in range(len(shapes[i]))}
    out = []
    for start in starts:
        for x in list(range(start, min(start + 64, hi) + 1)) + list(range(start - 1, max(start - 64, lo) - 1, -1)):
            point = _tied(sheet, traced, k, x)
            if point is None:
                continue
            shp = {i: [point.get((i, j), s) for j, s in enumerate(shapes[i])] for i in shapes}
            if not any(p.accepts(shp) for p in chosen):
                out.append(point)
                break
    return out


def _tied(sheet: Mapping[str, Any], traced: Mapping[Key, int], k: Key, x: int) -> Optional[Dict[Key, int]]:
    """Every dim at its traced size but ``k`` at ``x``, and the dims sharing ``k``'s root at the
    value the spec ties them to (None when ``x`` is not a value of ``k``'s Dim)."""
    point = {key: v for key, v in traced.items()}
    entry = next((e for e in sheet["entries"] if (e["input"], int(e["index"])) == k), None)
    if entry is None or entry["value"]["kind"] != "dim":
        point[k] = x
        return point
    v = entry["value"]
    if (x - v["offset"]) % v["coef"]:
        return None
    rv = (x - v["offset"]) // v["coef"]
    for e in sheet["entries"]:
        w = e["value"]
        if w["kind"] == "dim" and w["root"] == v["root"]:
            point[(e["input"], int(e["index"]))] = w["coef"] * rv + w["offset"]
    return point
