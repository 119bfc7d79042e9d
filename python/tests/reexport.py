"""Helpers for the re-export tests (issue 24: every spec dimguard prints exports in torch 2.15 and
the exported program runs at its corners): the sizes a printed ``dynamic_shapes`` spec takes, its
corners, and inputs re-sized to them."""

import itertools

import torch


def is_dim(v):
    """A ``torch.export.Dim``, a derived one (``8*_h + 1``) or a ``Dim.DYNAMIC``/``Dim.AUTO``
    hint (each its own root); not an int, not a ``Dim.STATIC``."""
    if isinstance(v, int):
        return False
    if hasattr(v, "__name__") and hasattr(v, "min") and hasattr(v, "max"):
        return True
    return getattr(getattr(v, "type", None), "name", None) in ("DYNAMIC", "AUTO")


def root_of(v):
    """The ``Dim`` a spec value derives from (itself for a plain ``Dim``)."""
    return getattr(v, "root", None) or v


def size_at(v, k):
    """The size a spec value takes when its root is ``k``."""
    fn = getattr(v, "fn", None)
    return int(fn(k)) if fn is not None else int(k)


def entries(spec):
    """``[(input, index, value)]`` for every dynamic size of a ``dynamic_shapes`` dict."""
    return [(inp, i, v) for inp, dims in spec.items() for i, v in (dims or {}).items() if is_dim(v)]


def roots(spec):
    """The distinct root ``Dim``s the dict uses (a ``Dim`` defined but unused is not one)."""
    out = []
    for _, _, v in entries(spec):
        r = root_of(v)
        if not any(r is o for o in out):
            out.append(r)
    return out


def sizes_at(spec, values):
    """``{(input, index): size}`` when each root takes its value in ``values`` (root -> int)."""
    out = {}
    for inp, i, v in entries(spec):
        r = root_of(v)
        k = next(val for o, val in values if o is r)
        out[(inp, i)] = size_at(v, k)
    return out


def corners(spec, top=None):
    """Every corner of the spec's box: each root at its min and at its max (``top(root)`` when
    its max is unbounded), the derived sizes computed. Yields ``{(input, index): size}``."""
    rs = roots(spec)
    ends = []
    for r in rs:
        assert r.min is not None, f"{r} has no minimum"
        hi = r.max
        if hi is None or not isinstance(hi, int) or hi > 1 << 40:
            assert top is not None, f"{r} is unbounded: give top()"
            hi = top(r)
        ends.append(sorted({int(r.min), int(hi)}))
    for vals in itertools.product(*ends):
        yield sizes_at(spec, list(zip(rs, vals)))


def inputs(shapes, sizes, device="cpu"):
    """Random inputs shaped like ``shapes`` (``[(name, shape)]``) with ``sizes`` put in (empty
    ones on the ``meta`` device)."""
    out = []
    for name, shape in shapes:
        s = list(shape)
        for (inp, i), v in sizes.items():
            if inp == name:
                s[i] = v
        out.append(torch.empty(*s, device="meta") if device == "meta" else torch.randn(*s))
    return tuple(out)


def runs(module, shapes, sizes, device="cpu"):
    """Whether ``module`` (``ep.module()``, moved to ``device``) runs at these sizes; torch
    raises several kinds of errors for a failed guard or a size out of range, so any exception
    is a rejection."""
    try:
        with torch.no_grad():
            module(*inputs(shapes, sizes, device))
        return True
    except Exception:  # noqa: BLE001
        return False


def static_sizes(ep, names, spec):
    """The sizes ``spec`` keeps (``(input, index)``) that the program ``ep`` exported with it
    made static: its placeholder's size is an int, not a symbol (``names``: the user inputs in
    order)."""
    user = ep.graph_signature.user_inputs
    vals = {n.name: n.meta["val"] for n in ep.graph.nodes if n.op == "placeholder"}
    shape = {name: vals[p].shape for name, p in zip(names, user)}
    return sorted((inp, i) for inp, i, _ in entries(spec) if not isinstance(shape[inp][i], torch.SymInt))
