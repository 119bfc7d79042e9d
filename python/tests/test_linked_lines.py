"""The per-size lines of a check report for sizes torch links by a guard (issue 24 item 3): a
link that excludes nothing is said as such, in the CLI's words, not as "N sizes with some
partner (linked)"; a link that excludes pairs keeps that line. Each program is run at every
(H, W) of its range, and the report's answers are checked against those runs."""

import itertools

import torch
from torch.export import Dim, export

import dimguard

RANGE = range(8, 41)
SPEC = {"x": {0: Dim("batch", min=1, max=8), 2: Dim("h", min=RANGE.start, max=RANGE.stop - 1), 3: Dim("w", min=RANGE.start, max=RANGE.stop - 1)}}


class ProductBranch(torch.nn.Module):
    """Branches on ``H*W != 101``: a guard over H and W that torch cannot decide from the ranges
    (101 lies in 64..1600), true at every (H, W) of 8..40 since 101 is prime."""

    def forward(self, x):
        if x.shape[2] * x.shape[3] != 101:
            return x * 2
        return x + 1


class ParityBranch(torch.nn.Module):
    """Branches on ``(H + W) % 2 == 0``: traced at an even sum, the program takes only pairs of
    the same parity. Every H passes with some W, but the link excludes half the pairs."""

    def forward(self, x):
        if (x.shape[2] + x.shape[3]) % 2 == 0:
            return x * 2
        return x + 1


def _runs(ep):
    """The (H, W) pairs of the range at which the exported program runs (batch 2)."""
    ok = set()
    for h, w in itertools.product(RANGE, RANGE):
        try:
            ep.module()(torch.zeros(2, 1, h, w))
            ok.add((h, w))
        except Exception:  # noqa: BLE001 - the program's guard check raises
            pass
    return ok


def _lines(report):
    return {line.split(" = ")[0].strip(): line for line in repr(report).splitlines() if " = s" in line}


def test_a_link_that_excludes_nothing_is_said_as_such():
    ep = export(ProductBranch(), (torch.randn(2, 1, 16, 24),), dynamic_shapes=SPEC)
    runs = _runs(ep)
    assert runs == set(itertools.product(RANGE, RANGE)), "every pair runs"
    r = dimguard.check(ep)
    dims = {(d["input"], d["index"]): d for d in r["dims"]}
    assert dims[("x", 2)]["linked_with"] and dims[("x", 3)]["linked_with"], "torch links H and W"
    lines = _lines(r)
    for i in (2, 3):
        assert dims[("x", i)]["link_excludes_none"] is True
        assert lines[f"x[{i}]"].endswith(
            f"claims {len(RANGE)} sizes in {RANGE.start}..{RANGE.stop - 1}, accepts every claimed size, "
            "each with every accepted value of the sizes it is linked to; the link excludes none of its values"
        ), lines[f"x[{i}]"]
        assert "with some partner" not in lines[f"x[{i}]"]
    assert all(r.accepts({"x": (2, 1, h, w)}) for h, w in runs)


def test_a_link_that_excludes_pairs_keeps_its_line():
    ep = export(ParityBranch(), (torch.randn(2, 1, 16, 24),), dynamic_shapes=SPEC)
    runs = _runs(ep)
    assert runs == {(h, w) for h, w in itertools.product(RANGE, RANGE) if (h + w) % 2 == 0}
    r = dimguard.check(ep)
    dims = {(d["input"], d["index"]): d for d in r["dims"]}
    lines = _lines(r)
    for i in (2, 3):
        assert dims[("x", i)]["link_excludes_none"] is False
        assert lines[f"x[{i}]"].endswith(f"accepts {len(RANGE)} sizes with some partner (linked)"), lines[f"x[{i}]"]
    for h, w in itertools.product(RANGE, RANGE):
        assert r.accepts({"x": (2, 1, h, w)}) == ((h, w) in runs), (h, w)
