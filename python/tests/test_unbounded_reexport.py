"""The spec ``dimguard.check`` prints for tests/data/pt2/patch16_unbounded.pt2 (tools/export_unbounded.py's
Patch16, exported by torch 2.15 with ``Dim.AUTO`` and no bounds: batch, H and W claim 2.., 32..
and 16.. up to int_oo) re-exports in torch 2.15, and the program runs at its corners (issue 24):
the smallest sizes, sizes far up the unbounded ranges, and every combination of the two; one
below each minimum raises. The same model exported here again with ``Dim.AUTO`` is the oracle:
it agrees with ``report.accepts`` at every size of a box around the small corner."""

import pathlib
import sys

import pytest
import torch
from torch._dynamo.exc import UserError
from torch.export import Dim
from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

import dimguard
from reexport import corners, entries, roots, runs

PT2 = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "pt2" / "patch16_unbounded.pt2"

# tools/export_unbounded.py's Patch16, from the one module of fixture models.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
from fixture_models import Patch16  # noqa: E402

SHAPES = [("x", (2, 3, 224, 224))]


def _export(dynamic_shapes):
    torch.manual_seed(0)
    m = Patch16().eval()
    return torch.export.export(m, (torch.randn(*SHAPES[0][1]),), dynamic_shapes=dynamic_shapes)


def _shape(sizes):
    s = list(SHAPES[0][1])
    for (_, i), v in sizes.items():
        s[i] = v
    return s


def _check_spec():
    report = dimguard.check(PT2)
    data = report._data
    assert all(not d.get("undecided") for d in data["dims"]), data["dims"]
    assert all(not j.get("undecided") for j in data.get("joint") or []), data["joint"]
    code = data["dynamic_shapes"]
    ns = {}
    exec(code, ns)  # noqa: S102
    spec = ns["dynamic_shapes"]
    # Batch, H and W stay dynamic (torch exported all three dynamic).
    assert {i for _, i, _ in entries(spec)} == {0, 2, 3}, code
    return report, code, spec


def _runs_at_the_corners(report, code, spec, mod):
    """``mod`` (the program re-exported with ``spec``) and the ``Dim.AUTO`` oracle run at every
    corner of the spec, and raise one below each minimum, where ``report`` says so too."""
    auto = _export({"x": {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}})
    # The archive is this model's program: exported here again, it gets the same spec.
    assert dimguard.check(auto)._data["dynamic_shapes"] == code
    oracle = auto.module()
    # Every corner: each size at its minimum and far up its range (unbounded: batch 9, H and W
    # 1041, 8 combinations), then each alone much further (2^14 + 7 for H or W, 2^9 for batch).
    tops = {0: 9, 2: 1041, 3: 1041}

    def top(root):
        (i,) = {i for _, i, v in entries(spec) if getattr(v, "root", v) is root}
        return tops[i]

    n = 0
    for sizes in corners(spec, top):
        assert report.accepts({"x": _shape(sizes)}), sizes
        assert runs(mod, SHAPES, sizes), (sizes, code)
        assert runs(oracle, SHAPES, sizes), sizes
        n += 1
    assert n == 2 ** len(roots(spec)) == 8
    lows = {i: int(v.min) for _, i, v in entries(spec)}
    for i, far in ((2, (1 << 14) + 7), (3, (1 << 14) + 7), (0, 1 << 9)):
        sizes = {("x", j): lows[j] for j in lows}
        sizes[("x", i)] = far
        assert report.accepts({"x": _shape(sizes)}), sizes
        assert runs(mod, SHAPES, sizes), (sizes, code)
    # One below each minimum of H and W (the others at theirs), and batch 0: dimguard says it
    # fails, both programs raise. (Batch 1, below the claimed 2, runs: see the xfail below.)
    assert lows[0] == 2, code
    for i, below in ((2, lows[2] - 1), (3, lows[3] - 1), (0, 0)):
        sizes = {("x", j): lows[j] for j in lows}
        sizes[("x", i)] = below
        assert not report.accepts({"x": _shape(sizes)}), sizes
        assert not runs(mod, SHAPES, sizes), (sizes, code)
        assert not runs(oracle, SHAPES, sizes), sizes
    # Exact near the small corner: the Dim.AUTO program runs at (H, W) exactly where the report
    # accepts it, every size of 16..72 x {16, 31, 47, 48, 49, 64} (batch 2).
    for h in range(16, 73):
        for w in (16, 31, 47, 48, 49, 64):
            sizes = {("x", 0): 2, ("x", 2): h, ("x", 3): w}
            assert runs(oracle, SHAPES, sizes) == report.accepts({"x": _shape(sizes)}), sizes


def test_the_patch16_spec_check_prints_reexports_and_runs_at_its_corners():
    report, code, spec = _check_spec()
    # torch 2.15 re-exports the printed spec at the traced input.
    mod = _export(spec).module()
    _runs_at_the_corners(report, code, spec, mod)


def test_check_prints_dim_dynamic_where_torch_refuses_a_dim():
    """torch 2.15 refuses ``Dim('x_2', min=48)`` for this program: it cannot decide its own guard
    ``2*((x_2//16 - 1)//2) < x_2//16`` (true at every size) over a Dim's range, and value ranges
    cannot show it either. check prints H and W as ``Dim.DYNAMIC(min=48)`` (re-exported and run
    at its corners above) and the batch, whose guards it can show, as a ``Dim``."""
    report, code, spec = _check_spec()
    assert "x_2 = Dim.DYNAMIC(min=48)" in code and "x_3 = Dim.DYNAMIC(min=48)" in code, code
    assert "x_0 = Dim('x_0', min=2)" in code, code
    plain = {"x": {0: spec["x"][0], 2: Dim("x_2", min=48), 3: Dim("x_3", min=48)}}
    with pytest.raises((UserError, ConstraintViolationError)):
        _export(plain)


def test_a_batch_of_1_is_reported_as_the_program_runs_it():
    # torch claims batch 2.. (its 0/1 convention) and does not check that minimum at run time,
    # so the program runs at batch 1: accepts is the program's verdict, which says so.
    report, code, spec = _check_spec()
    oracle = _export({"x": {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}}).module()
    sizes = {("x", 0): 1, ("x", 2): 48, ("x", 3): 48}
    assert runs(oracle, SHAPES, sizes) == report.accepts({"x": _shape(sizes)}), sizes
