"""Every corrected spec ``dimguard.check`` prints exports in torch, and the program exported with
it runs at the corners of every ``Dim`` (issue 24 item 2): exported with ``Dim.AUTO`` (so torch
keeps what its guards allow), checked, re-exported with the printed ``dynamic_shapes``, run."""

import itertools

import pytest
import torch
from torch.export import Dim

import dimguard
from models import ConvStack, FlowNet, NearDiagonal


def _corners(dim):
    """The smallest and largest size a spec value admits (a Dim, a derived Dim or an int)."""
    if isinstance(dim, int):
        return [dim]
    return sorted({dim.min, dim.max})


def _resized(args, spec, sizes):
    """Fresh inputs shaped like ``args`` with the sizes ``sizes`` at the spec's dimensions."""
    out = []
    for name, a in args:
        shape = list(a.shape)
        for index in spec.get(name, {}) or {}:
            shape[index] = sizes[(name, index)]
        out.append(torch.randn(*shape))
    return out


CASES = [
    (
        "conv_stack",
        ConvStack,
        [("x", (1, 3, 97, 65))],
        {"x": {2: Dim.AUTO(min=32, max=256), 3: Dim.AUTO(min=32, max=256)}},
    ),
    (
        # Two frames that must agree, through guards no linear relation states: the spec writes
        # image2's sizes as image1's Dims (a box of four independent sizes holds only the trace).
        "flownet",
        FlowNet,
        [("image1", (1, 3, 64, 96)), ("image2", (1, 3, 64, 96))],
        {
            "image1": {2: Dim.AUTO(min=32, max=256), 3: Dim.AUTO(min=32, max=256)},
            "image2": {2: Dim.AUTO(min=32, max=256), 3: Dim.AUTO(min=32, max=256)},
        },
    ),
    (
        "near_diagonal",
        NearDiagonal,
        [("x", (10, 3)), ("y", (11, 3))],
        {"x": {0: Dim.AUTO(min=2, max=30)}, "y": {0: Dim.AUTO(min=2, max=30)}},
    ),
]


@pytest.mark.parametrize("name,model,shapes,auto", CASES, ids=[c[0] for c in CASES])
def test_the_spec_check_prints_exports_and_runs_at_its_corners(name, model, shapes, auto):
    torch.manual_seed(0)
    m = model().eval()
    args = [(n, torch.randn(*s)) for n, s in shapes]
    ep = torch.export.export(m, tuple(a for _, a in args), dynamic_shapes=auto)
    report = dimguard.check(ep)
    code = report._data["dynamic_shapes"]
    assert code and "dynamic_shapes" in code, code
    ns = {}
    exec(code, ns)
    spec = ns["dynamic_shapes"]
    # Every dimension the user made dynamic is in the corrected spec (none silently dropped).
    for inp, dims in auto.items():
        assert set(dims) <= set(spec.get(inp) or {}), (inp, code)
    # torch accepts it at the traced inputs (the spec holds them)...
    ep2 = torch.export.export(m, tuple(a for _, a in args), dynamic_shapes=spec)
    # ...and both programs run at every corner of the spec's box.
    # A Dim given to several sizes takes one value at a time (they move together).
    keys = [(inp, i) for inp, dims in spec.items() for i in (dims or {})]
    distinct = []
    for inp, i in keys:
        if not any(spec[inp][i] is d for d in distinct):
            distinct.append(spec[inp][i])
    corners = [_corners(d) for d in distinct]
    runs = 0
    for values in itertools.product(*corners):
        sizes = {}
        for inp, i in keys:
            k = next(n for n, d in enumerate(distinct) if d is spec[inp][i])
            sizes[(inp, i)] = values[k]
        new = _resized(args, spec, sizes)
        ep2.module()(*new)
        ep.module()(*new)
        runs += 1
    assert runs == 2 ** len([c for c in corners if len(c) == 2]) > 0
    if name == "flownet":
        # The Dims are shared, and not for nothing: the program rejects frames that differ.
        assert not isinstance(spec["image1"][2], int), code  # dynamic, not the traced 64
        assert spec["image2"][2] is spec["image1"][2], code
        with pytest.raises(Exception):
            ep.module()(torch.randn(1, 3, 64, 96), torch.randn(1, 3, 72, 96))
