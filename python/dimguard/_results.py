"""Result objects: the JSON contract's fields as attributes, ``.to_json()``, and a ``__repr__``
that reads well in a terminal or a notebook."""

from __future__ import annotations

import json
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

from . import _native

__all__ = [
    "Record",
    "SizeSet",
    "Diagnosis",
    "Verification",
    "CheckReport",
    "Profiles",
    "Undecided",
    "ShapeError",
]


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        if "segments" in value and "count" in value:
            return SizeSet(value)
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class Record:
    """A JSON object with its fields as attributes (``r.dims[0].feasible.count``); ``r["field"]``
    works too, and ``to_dict()``/``to_json()`` give back exactly what the contract says."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]):
        object.__setattr__(self, "_data", dict(data))

    def __getattr__(self, name: str) -> Any:
        try:
            return _wrap(self._data[name])
        except KeyError:
            raise AttributeError(
                f"{type(self).__name__} has no field {name!r} (fields: {', '.join(self._data)})"
            ) from None

    def __getitem__(self, name: str) -> Any:
        return _wrap(self._data[name])

    def __contains__(self, name: object) -> bool:
        return name in self._data

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self._data == other._data

    __hash__ = None  # type: ignore[assignment]

    def __dir__(self) -> List[str]:
        return sorted(set(self._data) | set(super().__dir__()))

    def keys(self) -> List[str]:
        """The field names."""
        return list(self._data)

    def html(self, path: Any = None, title: str = "dimguard report") -> str:
        """The report as one self-contained HTML page (plots of the accepted sizes, guards by
        source line, the spec with a copy button); written to ``path`` when given."""
        from . import _native

        page = _native.html(json.dumps(self._data), title)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(page)
        return page

    def to_dict(self) -> Dict[str, Any]:
        """The plain JSON value (a copy)."""
        return json.loads(json.dumps(self._data))

    def to_json(self, indent: Optional[int] = 2) -> str:
        """The contract's JSON text."""
        return json.dumps(self._data, indent=indent)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={_short(v)}" for k, v in self._data.items())
        return f"{type(self).__name__}({fields})"

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:  # IPython
        p.text(repr(self))


def _short(v: Any) -> str:
    if isinstance(v, dict):
        if "count" in v and "segments" in v:
            return repr(SizeSet(v))
        return "{…}"
    if isinstance(v, list):
        return f"[{len(v)} items]"
    if isinstance(v, str) and len(v) > 40:
        return repr(v[:37] + "...")
    return repr(v)


class SizeSet(Record):
    """An exact set of sizes (the contract's ``feasible``/``accepted`` form): disjoint sorted
    segments ``{x : lo <= x <= hi and x % modulus in residues}``. Supports ``in``, ``len`` and
    iteration in increasing order."""

    __slots__ = ()

    def __contains__(self, x: object) -> bool:  # type: ignore[override]
        if not isinstance(x, int) or isinstance(x, bool):
            return False
        return any(
            s["lo"] <= x <= s["hi"] and x % s["modulus"] in s["residues"]
            for s in self._data["segments"]
        )

    def __len__(self) -> int:
        return int(self._data["count"])

    def __iter__(self) -> Iterator[int]:
        for s in self._data["segments"]:
            for x in range(s["lo"], s["hi"] + 1):
                if x % s["modulus"] in s["residues"]:
                    yield x

    @property
    def min(self) -> Optional[int]:
        """The smallest size (None when empty)."""
        return self._data.get("min")

    @property
    def max(self) -> Optional[int]:
        """The largest size (None when empty)."""
        return self._data.get("max")

    def describe(self) -> str:
        """``"136..2120 ≡ 8 (mod 64)"``, segments joined by ``∪``."""
        if not self._data["segments"]:
            return "∅"
        parts = []
        for s in self._data["segments"]:
            r = f"{s['lo']}..{s['hi']}"
            if s["modulus"] > 1:
                res = s["residues"]
                r += f" ≡ {res[0]} (mod {s['modulus']})" if len(res) == 1 else f" mod {s['modulus']} ∈ {{{', '.join(map(str, res))}}}"
            parts.append(r)
        return " ∪ ".join(parts)

    def __repr__(self) -> str:
        return f"SizeSet({self._data['count']} sizes: {self.describe()})"


def _lines(title: str, rows: Sequence[str], code: Optional[str] = None) -> str:
    out = [title] + [f"  {r}" for r in rows]
    if code:
        out.append("")
        out.extend("  " + line for line in code.splitlines())
    return "\n".join(out)


class Diagnosis(Record):
    """``dimguard.diagnose``: the contract's ``diagnose --json`` object. ``dynamic_shapes`` is the
    Python block to paste (with ``spec=``, the user's spec with the answer merged in)."""

    __slots__ = ()

    def __repr__(self) -> str:
        rows = []
        for d in self._data["dims"]:
            f = d.get("feasible")
            rng = d.get("range")
            what = f"{d['status']}"
            if f is not None and rng:
                what += f": {f['count']} of {rng[1] - rng[0] + 1} sizes in {rng[0]}..{rng[1]} pass"
            what += _tied_text(d)
            best = d["suggestions"][0]["code"].replace("\n", "; ") if d.get("suggestions") else "-"
            rows.append(f"{d['name']} = {d.get('source') or '?'}  {what}; best: {best}")
        dd = self._data.get("data_dependent") or []
        for d in dd:
            sizes = ", ".join(f"{s['symbol']} = {s.get('source') or '?'}" for s in d.get("symbols", []))
            if d.get("always") is not None:
                what = f"{str(d['always']).lower()} at every size of {d['range'][0]}..{d['range'][1]}" if d.get("range") else f"always {str(d['always']).lower()}"
            elif d.get("when_true") is not None:
                what = f"true at {d['when_true']['count']}, false at {d['when_false']['count']} sizes"
            else:
                what = d.get("holds") or d.get("undecided") or "undecided"
            assume = f"; assume {d['assumption']} (removes {d['removes']})" if d.get("assumption") else ""
            rows.append(f"data-dependent {d['guard']} ({sizes}): {what}{assume}")
        head = f"Diagnosis({len(self._data['dims'])} dims" + (f", {len(dd)} data-dependent)" if dd else ")")
        return _lines(head, rows, self._data.get("dynamic_shapes"))


class Verification(Record):
    """``dimguard.verify``: the contract's ``verify --json`` object."""

    __slots__ = ()

    def __repr__(self) -> str:
        rows = [
            f"{d['name']}: {'sound' if d['sound'] else 'UNSOUND' if d['sound'] is False else 'undecided'}"
            f" ({d['admitted']} admitted, {d['failing']} failing"
            + (f", e.g. {d['counterexamples'][:3]}" if d.get("counterexamples") else "")
            + f"; certificate {d['certificate']})"
            for d in self._data["dims"]
        ]
        return _lines(f"Verification(sound={self._data['sound']})", rows)


class CheckReport(Record):
    """``dimguard.check``: the contract's ``check --json`` object: per input dimension what the
    program claims and what it really accepts."""

    __slots__ = ()

    def accepts(self, shapes: Mapping[str, Sequence[int]]) -> bool:
        """Whether the program accepts inputs of these shapes (input name -> shape; inputs left
        out are not checked): the program's own answer, from every condition it checks (fixed
        sizes, sizes sharing a symbol, derived sizes, its ranges, its guards, its run-time
        asserts) evaluated at these sizes. Raises :class:`Undecided` when the shapes alone cannot
        decide it (:meth:`verdict` says why without raising)."""
        return _decided(self.verdict(shapes))

    def verdict(self, shapes: Mapping[str, Sequence[int]]) -> "Record":
        """The contract's ``Verdict`` for these shapes: ``accepted`` (True, False, or None when
        undecided) and ``reason`` (the first condition that fails, or why it is undecided)."""
        return _verdict(self._data, shapes)

    def __repr__(self) -> str:
        rows = _audit_rows(self._data)
        return _lines(f"CheckReport({len(self._data['dims'])} dynamic dims)", rows)


def _audit_rows(data: Mapping[str, Any], exprs: bool = True) -> List[str]:
    """One line per dimension (what it claims, what it accepts), then each linked group's
    summary: the rows of a check report, also in an export report."""
    rows = []
    for d in data.get("dims", []):
        c, a = d.get("claimed") or {}, d.get("accepted")
        doubt = d.get("undecided")
        if a is None:
            acc = "undecided"
        elif doubt:
            # Never "every claimed size" beside sizes it cannot decide.
            many = f"{doubt['count']} sizes" if isinstance(doubt, dict) and doubt.get("count") is not None else "some sizes"
            acc = f"{SizeSet(a)!r}; undecided at {many}"
        else:
            acc = "every claimed size" if a["count"] == c.get("count") else repr(SizeSet(a))
        if d.get("linked_with") and d.get("with_some_partner"):
            some = SizeSet(d["with_some_partner"])
            if d.get("link_excludes_none"):
                # Every value that passes, passes with every accepted value of the others.
                kept = "every claimed size" if some.count == c.get("count") else repr(some)
                acc = f"{kept}, each with every accepted value of the sizes it is linked to; the link excludes none of its values"
            else:
                acc = f"{some.count} sizes with some partner (linked)"
        v = d.get("defined_values")
        if v:
            # A size the others define: none passes with every partner; its values with some
            # partner in their own form (not a periodic set).
            acc = f"none with every partner; with some partner {v['text']} (= {v['relation']})"
        acc += _tied_text(d)
        expr = f" = {d.get('expr')}" if exprs else ""
        rows.append(f"{d['input']}[{d['index']}]{expr}: claims {c.get('count')} sizes in {c.get('min')}..{c.get('max')}, accepts {acc}")
    rows.extend(j["summary"] for j in data.get("joint") or [] if j.get("summary"))
    rows.extend(_runtime_rows(data))
    return rows


def _tied_text(d: Mapping[str, Any]) -> str:
    """A tied size's answer (``tied_to``): its partner's set, through the tie."""
    t = d.get("tied_to")
    if not t:
        return ""
    a = t.get("accepted")
    with_it = f": {SizeSet(a).count} sizes pass with it ({t['partner']}'s set)" if a else f" ({t['partner']}'s set)"
    return f"; tied, {t['relation']}{with_it}"


def _runtime_rows(data: Mapping[str, Any]) -> List[str]:
    """One line per run-time check (``runtime``: a run-time assert or an implied limit) that
    rejects a claimed size or is undecided, in the inputs' names."""
    names = {d.get("source"): f"{d['input']}[{d['index']}]" for d in data.get("dims", [])}
    rows = []
    for c in data.get("runtime") or []:
        kind = "run-time assert" if c.get("kind") == "runtime_assert" else "implied limit"
        cond = c.get("on_inputs") or c.get("condition", "")
        for source, name in names.items():
            if source:
                cond = cond.replace(source, name)
        if c.get("fate") == "undecided":
            rows.append(f"{kind} at {c.get('node')}: undecided ({c.get('reason')})")
        elif c.get("rejects"):
            ex = ", ".join(str(v) for v in c.get("rejected_examples", []))
            rows.append(f"{kind} {cond} (at {c.get('node')}) rejects {c['rejects']} claimed sizes, e.g. {ex}")
    return rows


class Undecided(ValueError):
    """``accepts`` could not decide: a condition of the program depends on something the shapes
    do not fix (a value computed from data, an input left out, a guard dimguard could not read).
    The message says which."""


class ShapeError(ValueError):
    """The exported program rejects inputs of these shapes (``dimguard.onnx.Session.run``):
    ``reason`` names the condition that fails, in the inputs' names; ``shapes`` holds the input
    shapes; ``nearest`` per size outside its own accepted set ``(input, index) -> {"size",
    "below", "above"}``, the nearest accepted sizes (None where there is none)."""

    def __init__(self, message: str, *, reason: str, shapes: Mapping[str, Sequence[int]], nearest: Mapping[Any, Mapping[str, Optional[int]]]):
        super().__init__(message)
        self.reason = reason
        self.shapes = dict(shapes)
        self.nearest = dict(nearest)


#: The keys of a check report that decide whether a shape is accepted.
FACT_KEYS = ("inputs", "symbols", "guards", "runtime")


def _verdict(data: Mapping[str, Any], shapes: Mapping[str, Sequence[int]]) -> Record:
    """See :meth:`CheckReport.verdict`: evaluated by the native ``verdict`` (one home, in Rust)."""
    if not data.get("inputs"):
        return Record({"accepted": None, "reason": "this report holds no program inputs (written by an older dimguard, or no program was exported): check the program again"})
    facts = json.dumps({k: data.get(k) or [] for k in FACT_KEYS})
    given = json.dumps({str(n): [int(v) for v in s] for n, s in shapes.items()})
    return Record(json.loads(_native.verdict(facts, given)))


def _decided(v: Record) -> bool:
    if v["accepted"] is None:
        raise Undecided(v["reason"] if "reason" in v else "undecided")
    return bool(v["accepted"])


class Profiles(Record):
    """``dimguard.profile(format="json")``: TensorRT optimization profiles."""

    __slots__ = ()

    def __repr__(self) -> str:
        rows = []
        for i, p in enumerate(self._data["profiles"]):
            for name, t in p["inputs"].items():
                rows.append(f"profile {i}: {name} min={t['min']} opt={t['opt']} max={t['max']}")
        return _lines(f"Profiles({len(self._data['profiles'])})", rows)
