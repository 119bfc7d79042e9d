"""A program whose sizes are tied, not equal (issue 24 item 1): two images through one stride-4
stem each, added, so their heights (and widths) must agree after the stem,
``(h1 - 1)//4 == (h2 - 1)//4``: the pairs that pass are diagonal blocks of four, which no box of
``Dim``s holds over unbounded ranges. Exported with ``Dim.AUTO`` and no bounds, ``dimguard.check``
decides it in closed form and prints a spec with each of image2's sizes written as image1's
(``image2_2 = image1_2``); that spec re-exports in torch 2.15, the program runs at its smallest
sizes and at large ones, and a pair in different blocks raises."""

import torch
import torch.nn as nn
from torch.export import Dim

import dimguard


class TwoStem(nn.Module):
    """Two images, one stride-4 stem each, added: the stems' outputs must agree."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.b = nn.Conv2d(3, 8, 3, stride=4, padding=1)

    def forward(self, image1, image2):
        return (self.a(image1) + self.b(image2)).mean(dim=(2, 3))


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
    (joint,) = data["joint"]
    assert not joint.get("undecided") and joint.get("tied"), joint
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
    # Every tuple the JSON calls accepted or rejected runs or raises in the program.
    order = joint["sources"]

    def at(t):
        size = {s: v for s, v in zip(order, t)}
        return (
            size["L['image1'].size()[2]"],
            size["L['image1'].size()[3]"],
            size["L['image2'].size()[2]"],
            size["L['image2'].size()[3]"],
        )

    for t in joint["accepted_examples"]:
        assert _runs(ep, *at(t)), t
    for t in joint["rejected_examples"]:
        assert not _runs(ep, *at(t)), t
