"""A program whose sizes are tied, not equal (issue 24 item 1): two images through one stride-4
stem each, added, so their heights (and widths) must agree after the stem,
``(h1 - 1)//4 == (h2 - 1)//4``: the pairs that pass are diagonal blocks of four, which no box of
``Dim``s holds over unbounded ranges. Exported with ``Dim.AUTO`` and no bounds, ``dimguard.check``
decides it in closed form and prints a spec with each of image2's sizes written as image1's
(``image2_2 = image1_2``); that spec re-exports in torch 2.15, the program runs at its smallest
sizes and at large ones, and a pair in different blocks raises."""

import pathlib
import sys

import torch
from torch.export import Dim

import dimguard

# tools/export_unbounded.py's models (tests/data/pt2/*_unbounded.pt2), from the one module of
# fixture models.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
from fixture_models import TwoStem, Window7  # noqa: E402


def _runs(ep, h1, w1, h2, w2):
    try:
        with torch.no_grad():
            ep.module()(torch.randn(1, 3, h1, w1), torch.randn(1, 3, h2, w2))
        return True
    except Exception:  # noqa: BLE001 - torch raises several kinds for a failed guard
        return False


def test_a_tied_spec_exports_and_runs_at_its_corners():
    torch.manual_seed(0)
    m = TwoStem().eval()
    args = (torch.randn(1, 3, 64, 96), torch.randn(1, 3, 64, 96))
    auto = {"image1": {2: Dim.AUTO, 3: Dim.AUTO}, "image2": {2: Dim.AUTO, 3: Dim.AUTO}}
    ep = torch.export.export(m, args, dynamic_shapes=auto)
    report = dimguard.check(ep)
    data = report._data
    # Decided: nothing undecided, the joint answer in closed form.
    assert all(not d.get("undecided") for d in data["dims"]), data["dims"]
    # H and W are independent: one tied group per axis (image1's size with image2's), never one
    # group of four.
    groups = data["joint"]
    assert len(groups) == 2, groups
    for joint in groups:
        assert not joint.get("undecided") and joint.get("tied"), joint
        assert len(joint["sources"]) == 2, joint
    code = data["dynamic_shapes"]
    ns = {}
    exec(code, ns)
    spec = ns["dynamic_shapes"]
    # Every size stays dynamic; image2's are image1's Dims (one Dim per tied pair).
    for inp in ("image1", "image2"):
        assert set(spec[inp]) == {2, 3}, code
    h, w = spec["image1"][2], spec["image1"][3]
    assert not isinstance(h, int) and not isinstance(w, int), code
    assert spec["image2"][2] is h and spec["image2"][3] is w, code
    # torch accepts the spec at the traced inputs...
    ep2 = torch.export.export(m, args, dynamic_shapes=spec)
    # ...and both programs run at its smallest sizes and at larger ones (no upper bound: the
    # spec claims every size from its minimum on).
    lo_h, lo_w = h.min, w.min
    for hh, ww in [(lo_h, lo_w), (lo_h, 1001), (1001, lo_w), (4097, 4099)]:
        assert _runs(ep2, hh, ww, hh, ww), (hh, ww)
        assert _runs(ep, hh, ww, hh, ww), (hh, ww)
    # Below the minimum the program itself fails (the spec is not narrower than it must be).
    assert not _runs(ep, lo_h - 1, lo_w - 1, lo_h - 1, lo_w - 1)
    # The tie, not equality: a pair inside one block runs in the Dim.AUTO program, a pair in
    # different blocks raises; the re-exported program refuses both (its Dims are shared).
    assert _runs(ep, 65, 97, 68, 100)
    assert not _runs(ep, 65, 97, 69, 97)
    assert not _runs(ep2, 65, 97, 69, 97)
    assert not _runs(ep2, 65, 97, 68, 97)
    # Every pair a group calls accepted or rejected runs or raises in the program, the other
    # axis held at its traced size (which passes).
    for joint in groups:
        order = joint["sources"]

        def at(t, order=order):
            size = {"L['image1'].size()[2]": 64, "L['image2'].size()[2]": 64}
            size |= {"L['image1'].size()[3]": 96, "L['image2'].size()[3]": 96}
            size |= dict(zip(order, t))
            return (
                size["L['image1'].size()[2]"],
                size["L['image1'].size()[3]"],
                size["L['image2'].size()[2]"],
                size["L['image2'].size()[3]"],
            )

        for t in joint["accepted_examples"]:
            assert _runs(ep, *at(t)), (order, t)
        for t in joint["rejected_examples"]:
            assert not _runs(ep, *at(t)), (order, t)
    # Each of image2's sizes answers with image1's set through the tie (`tied_to`): exactly
    # the sizes that run with some partner, by running the program at every partner in reach
    # (a block of 4 holds no value farther than 3 away).
    tied = {d.source: d.tied_to for d in report.dims if "tied_to" in d}
    assert set(tied) == {"L['image2'].size()[2]", "L['image2'].size()[3]"}, tied
    assert all(t.source.startswith("L['image1']") for t in tied.values())
    for h2 in range(2, 120):
        runs = any(_runs(ep, h1, 96, h2, 96) for h1 in range(max(2, h2 - 3), h2 + 4))
        assert (h2 in tied["L['image2'].size()[2]"].accepted) == runs, h2
    assert "tied, in the block of 4 values holding image1[2]" in repr(report), repr(report)


def _runs1(ep, b, h, w):
    try:
        with torch.no_grad():
            ep.module()(torch.randn(b, 3, h, w))
        return True
    except Exception:  # noqa: BLE001
        return False


def test_window_padding_is_decided_and_its_spec_exports():
    """Window attention with padding, ``Dim.AUTO`` and no bounds: the padding identities are
    decided (no size undecided), the printed spec (H, W multiples of 28 from 56 on, the batch
    from 2 on) re-exports in torch 2.15, both programs run at its corners and beyond, and a size
    the program rejects (H = 60: 15 patches, padded) raises."""
    torch.manual_seed(0)
    m = Window7().eval()
    args = (torch.randn(2, 3, 224, 224),)
    auto = {"x": {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}}
    ep = torch.export.export(m, args, dynamic_shapes=auto)
    data = dimguard.check(ep)._data
    assert all(not d.get("undecided") for d in data["dims"]), data["dims"]
    code = data["dynamic_shapes"]
    ns = {}
    exec(code, ns)
    spec = ns["dynamic_shapes"]
    assert set(spec["x"]) == {0, 2, 3}, code
    ep2 = torch.export.export(m, args, dynamic_shapes=spec)
    bmin, hmin, wmin = spec["x"][0].min, spec["x"][2].min, spec["x"][3].min
    for b, h, w in [(bmin, hmin, wmin), (bmin, hmin, 28 * 20), (5, 28 * 20, wmin), (3, 224, 252)]:
        assert _runs1(ep2, b, h, w), (b, h, w)
        assert _runs1(ep, b, h, w), (b, h, w)
    # Rejected by the program: 15 patches need padding, which the trace at 224 never had.
    assert not _runs1(ep, 2, 60, 224)
    assert not _runs1(ep, 2, 224, 60)
