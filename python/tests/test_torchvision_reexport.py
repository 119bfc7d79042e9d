"""The spec ``dimguard.check`` prints for real torchvision programs exported by torch 2.15 with
``Dim.AUTO`` and no bounds (batch, H and W claim 2..int_oo) re-exports in torch 2.15, and the
program runs at its corners: the smallest sizes and sizes up the unbounded ranges, every
combination; below each minimum dimguard says it fails and both programs raise; near the small
corner the ``Dim.AUTO`` program runs exactly where ``report.accepts`` says (issue 24)."""

import pytest
import torch
import torchvision
from torch.export import Dim

import dimguard
from reexport import corners, entries, roots, runs

SHAPES = [("x", (2, 3, 224, 224))]
AUTO = {"x": {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}}


def _shape(sizes):
    s = list(SHAPES[0][1])
    for (_, i), v in sizes.items():
        s[i] = v
    return s


@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
def test_the_spec_check_prints_for_a_torchvision_program_reexports_and_runs_at_its_corners(name):
    torch.manual_seed(0)
    m = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(*SHAPES[0][1])
    auto = torch.export.export(m, (x,), dynamic_shapes=AUTO)
    report = dimguard.check(auto)
    data = report._data
    assert all(not d.get("undecided") for d in data["dims"]), data["dims"]
    code = data["dynamic_shapes"]
    ns = {}
    exec(code, ns)  # noqa: S102
    spec = ns["dynamic_shapes"]
    assert {i for _, i, _ in entries(spec)} == {0, 2, 3}, code
    mod = torch.export.export(m, (x,), dynamic_shapes=spec).module()
    oracle = auto.module()
    # Unbounded: the corners' tops are batch 3 and H, W 257 (a Dim a size derives from: its
    # root's value giving about that size).
    lows = {i: int(v.min) if not hasattr(v, "root") else v.fn(v.root.min) for _, i, v in entries(spec)}

    def top(root):
        (i, v) = next((i, v) for _, i, v in entries(spec) if getattr(v, "root", v) is root)
        want = 3 if i == 0 else 257
        k = int(root.min)
        while (v.fn(k + 1) if hasattr(v, "root") else k + 1) <= want:
            k += 1
        return k

    n = 0
    for sizes in corners(spec, top):
        assert report.accepts({"x": _shape(sizes)}), sizes
        assert runs(mod, SHAPES, sizes), (sizes, code)
        assert runs(oracle, SHAPES, sizes), sizes
        n += 1
    assert n == 2 ** len(roots(spec)) == 8
    # Below the minimum of H and W (the others at theirs): rejected, both programs raise. (Not
    # the batch: torch claims 2.. but the programs run at batch 0 and 1, which check calls
    # rejected; test_unbounded_reexport.py's xfail shows it.)
    for i, below in ((2, lows[2] - 1), (3, lows[3] - 1)):
        sizes = {("x", j): lows[j] for j in lows}
        sizes[("x", i)] = below
        assert not report.accepts({"x": _shape(sizes)}), sizes
        assert not runs(mod, SHAPES, sizes), (sizes, code)
        assert not runs(oracle, SHAPES, sizes), sizes
    # Exact near the small corner: every H in lows-12..lows+12 at W = lows[3] (batch 2).
    for h in range(lows[2] - 12, lows[2] + 13):
        sizes = {("x", 0): 2, ("x", 2): h, ("x", 3): lows[3]}
        assert runs(oracle, SHAPES, sizes) == report.accepts({"x": _shape(sizes)}), sizes
