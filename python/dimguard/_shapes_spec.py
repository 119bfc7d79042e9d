"""torch 2.15's ``ShapesSpec`` inside ``dimguard.export``: recognize it (a ``ShapesSpec``, a
``ParamsSpec``, a dict of ``TensorSpec``, or a module whose ``forward`` carries ``@dynamic_spec``),
print it as paste-able Python in the user's ``ShapeVar`` names, and add assumptions to it.

torch is imported lazily.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any, Dict, Iterator, List, Optional, Tuple

from . import _native


def _module() -> Any:
    try:
        from torch.fx.experimental import dynamic_spec
    except ImportError:  # torch before 2.15
        return None
    return dynamic_spec


def attached(model: Any) -> Any:
    """The ``ShapesSpec`` a ``@dynamic_spec`` decorator attached to ``model`` (or its forward)."""
    ds = _module()
    if ds is None:
        return None
    fn = getattr(model, "forward", model)
    return getattr(fn, ds._DYNAMIC_SPEC_ATTR, None)


def is_shapes_spec(spec: Any) -> bool:
    """A ``ShapesSpec`` / ``ParamsSpec``, or a dict whose values are ``TensorSpec``s or IntVars."""
    ds = _module()
    if ds is None or spec is None:
        return False
    if isinstance(spec, (ds.ShapesSpec, ds.ParamsSpec)):
        return True
    if isinstance(spec, dict) and spec:
        return any(isinstance(v, (ds.TensorSpec, ds.IntVar)) for v in spec.values())
    return False


@contextlib.contextmanager
def detached(model: Any) -> Iterator[None]:
    """Takes a ``@dynamic_spec`` off ``model`` while dimguard passes the spec explicitly (torch
    refuses both at once), and puts it back."""
    ds = _module()
    fn = getattr(model, "forward", model)
    target = getattr(fn, "__func__", fn)
    spec = getattr(target, ds._DYNAMIC_SPEC_ATTR, None) if ds is not None else None
    if spec is None:
        yield
        return
    delattr(target, ds._DYNAMIC_SPEC_ATTR)
    try:
        yield
    finally:
        setattr(target, ds._DYNAMIC_SPEC_ATTR, spec)


class Spec:
    """A ``ShapesSpec`` being extended: its params as given, the user's assumptions, and the
    assumptions dimguard adds (each ``(SymBool, code)``)."""

    def __init__(self, spec: Any):
        ds = _module()
        self.ds = ds
        shapes = ds._coerce_to_shapes_spec(spec)
        self.params = shapes._params
        self.user_assumptions = list(shapes.assumptions)
        self.added: List[Tuple[Any, str]] = []
        # Every IntVar, in order of first use, with its Python name (its label, made unique).
        self.vars: List[Any] = []
        for _, leaf in self._leaves():
            for v in self._vars_of(leaf):
                if all(v is not w for w in self.vars):
                    self.vars.append(v)
        for a in self.user_assumptions:
            for v in self._free(a):
                if all(v is not w for w in self.vars):
                    self.vars.append(v)
        self.names: Dict[int, str] = {}
        used: Dict[str, int] = {}
        for v in self.vars:
            base = v.name if v.name.isidentifier() else "v"
            name = base if base not in used else f"{base}_{v._uid}"
            used[name] = 1
            self.names[id(v)] = name

    # -- reading --------------------------------------------------------------------------------

    def _leaves(self) -> List[Tuple[str, Any]]:
        p = self.params
        if p is None:
            return []
        out: List[Tuple[str, Any]] = list(p._named_args.items())
        for i, v in enumerate(p._varargs or []):
            out.append((f"*args[{i}]", v))
        for k, v in (p._varkw or {}).items():
            out.append((k, v))
        return out

    def _vars_of(self, leaf: Any) -> List[Any]:
        ds = self.ds
        if isinstance(leaf, ds.TensorSpec):
            out: List[Any] = []
            for d in leaf:
                out.extend(self._vars_of(d))
            return out
        if isinstance(leaf, ds.IntVar):
            return [leaf]
        import torch

        if isinstance(leaf, (torch.SymInt, torch.SymBool)):
            return self._free(leaf)
        return []

    def _free(self, sym: Any) -> List[Any]:
        """The IntVars an expression over spec variables uses (by their ``name#uid`` symbols)."""
        names = {str(s) for s in sym.node.expr.free_symbols}
        out = []
        for v in self._all_intvars():
            if str(v.sympy_sym) in names:
                out.append(v)
        return out

    def _all_intvars(self) -> List[Any]:
        found: List[Any] = list(getattr(self, "vars", []))
        for _, leaf in self._leaves():
            for d in leaf if isinstance(leaf, self.ds.TensorSpec) else [leaf]:
                if isinstance(d, self.ds.IntVar) and all(d is not w for w in found):
                    found.append(d)
        return found

    def slot_at(self, input: str, index: int) -> Optional[str]:
        """The spec's slot for one input size, as Python in the spec's names (a variable's
        name, a derived expression, or a number); None where the spec has no such slot."""
        for name, leaf in self._leaves():
            if name == input and isinstance(leaf, self.ds.TensorSpec) and 0 <= index < len(leaf):
                d = leaf[index]
                return None if d is None else self._slot(d)
        return None

    def var_named(self, name: str) -> Any:
        return next(v for v in self.vars if self.names[id(v)] == name)

    # -- printing -------------------------------------------------------------------------------

    def _expr(self, sym: Any) -> str:
        """A derived slot or an assumption as readable Python in the spec's names."""
        text = str(sym.node.expr)
        for v in self.vars:
            text = re.sub(rf"(?<![\w#]){re.escape(str(v.sympy_sym))}(?![\w#])", self.names[id(v)], text)
        try:
            return _native.readable(text)
        except ValueError:
            return text

    def _slot(self, d: Any) -> str:
        if d is None:
            return "None"
        if isinstance(d, self.ds.IntVar):
            return self.names[id(d)]
        if isinstance(d, int):
            return str(d)
        return self._expr(d)

    def _leaf(self, leaf: Any) -> str:
        if isinstance(leaf, self.ds.TensorSpec):
            return "TensorSpec([" + ", ".join(self._slot(d) for d in leaf) + "])"
        return self._slot(leaf)

    def code(self, with_comments: bool = True) -> str:
        """The spec as paste-able Python: every variable, input and dimension as given, with the
        user's assumptions and dimguard's (each with a comment saying what it costs)."""
        lines = ["import torch", "from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, IntVar, TensorSpec"]
        if any("math." in c for _, (c, _) in self.added):
            lines.insert(0, "import math")
        for v in self.vars:
            kind = type(v).__name__ if type(v).__name__ in ("ShapeVar", "IntVar") else "IntVar"
            args = [repr(v.name)]
            if v.min is not None and not (kind == "ShapeVar" and v.min == 0):
                args.append(f"min={v.min}")
            if v.max is not None:
                args.append(f"max={v.max}")
            if v.optimization_hint is not None:
                args.append(f"optimization_hint={v.optimization_hint}")
            lines.append(f"{self.names[id(v)]} = {kind}({', '.join(args)})")
        params = [f"{json.dumps(k)}: {self._leaf(v)}" for k, v in self._leaves()]
        assumptions: List[str] = [self._expr(a) for a in self.user_assumptions]
        body = "{" + ", ".join(params) + "}"
        if not assumptions and not self.added:
            lines.append(f"dynamic_shapes = ShapesSpec({body})")
            return "\n".join(lines)
        lines.append(f"dynamic_shapes = ShapesSpec(\n    {body},\n    assumptions=[")
        for a in assumptions:
            lines.append(f"        {a},")
        for _, (code, comment) in self.added:
            if with_comments and comment:
                lines.append(f"        # {comment}")
            lines.append(f"        {code},")
        lines.append("    ],\n)")
        return "\n".join(lines)

    # -- extending ------------------------------------------------------------------------------

    def add(self, code: str, comment: str) -> None:
        """Adds an assumption written in the spec's names."""
        import torch

        import math

        env: Dict[str, Any] = {"torch": torch, "math": math}
        env.update({self.names[id(v)]: v for v in self.vars})
        sym = eval(code, env)  # noqa: S307 - dimguard's own printed expression over the spec's vars
        self.added.append((sym, (code, comment)))

    def torch_spec(self) -> Any:
        return self.ds.ShapesSpec(self.params, assumptions=self.user_assumptions + [s for s, _ in self.added])

    def assumption_codes(self) -> List[str]:
        return [c for _, (c, _) in self.added]


def spec_from(model: Any, dynamic_shapes: Any) -> Optional[Spec]:
    """The ShapesSpec to extend, when the call uses one (explicitly or by ``@dynamic_spec``)."""
    spec = dynamic_shapes
    if spec is None:
        spec = attached(model)
    elif attached(model) is not None:
        raise ValueError("the model's forward carries @dynamic_spec and dynamic_shapes= is given too: give only one (torch refuses both)")
    if spec is None or not is_shapes_spec(spec):
        return None
    return Spec(spec)
