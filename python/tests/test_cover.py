"""``dimguard.export(..., cover=True)``: several programs behind one callable, with real torch 2.15.

Every size of each range goes through the dispatcher; the sizes it accepts are exactly the sizes
at which the model itself runs (brute force, one eager call per size), its outputs equal the
model's, refused sizes raise a ``DispatchError`` naming accepted neighbours, the programs share
the model's weights, and an archive written by ``save`` runs the same in a fresh process."""

import json
import random
import subprocess
import sys

import pytest

try:
    import torch
    from torch.export import Dim
except ImportError as e:  # never a skip
    raise RuntimeError(f"the cover tests need torch 2.15 ({e}): pip install -r python/requirements-test.txt") from e

import dimguard
from dimguard.cover import union_count


class StrideSkip(torch.nn.Module):
    """A stride-4 map added to an upsampled stride-8 map: runs at H in four residue classes mod 8."""

    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.c2 = torch.nn.Conv2d(4, 4, 3, stride=2, padding=1)
        self.c3 = torch.nn.Conv2d(4, 4, 3, stride=2, padding=1)

    def forward(self, x):
        a = self.c2(self.c1(x))
        return a + torch.nn.functional.interpolate(self.c3(a), scale_factor=2.0)


class Branchy(torch.nn.Module):
    """Takes another path at H >= 200: one trace cannot hold both."""

    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.d = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)

    def forward(self, x):
        if x.shape[2] >= 200:
            return torch.nn.functional.interpolate(self.d(x), size=(x.shape[2], x.shape[3]))
        return self.c(x)


class Grouped(torch.nn.Module):
    """Splits H*W into 16 groups: (H, W) linked by H*W % 16 == 0."""

    def forward(self, x):
        b, c, h, w = x.shape
        return x.reshape(b, c, 16, (h * w) // 16).sum(-1)


def eager_runs(model, x):
    try:
        with torch.no_grad():
            model(x)
        return True
    except RuntimeError:
        return False


def test_residue_classes_every_size_routed_and_exact():
    torch.manual_seed(0)
    m = StrideSkip().eval()
    d = dimguard.export(m, (torch.randn(1, 3, 128, 40),), dynamic_shapes={"x": {2: Dim("h", min=96, max=300)}}, cover=True, verbose=False)
    assert isinstance(d, dimguard.Dispatch)
    truth = [h for h in range(96, 301) if eager_runs(m, torch.randn(1, 3, h, 40))]
    got = [h for h in range(96, 301) if d.accepts({"x": [1, 3, h, 40]})]
    assert got == truth
    cov = d.coverage
    assert cov.accepted == len(truth) and cov.box_size == 205
    # One Dim (the loop's program) holds one residue class: far less than the cover.
    assert cov.one_dim is not None and cov.one_dim < cov.accepted
    assert f"{len(truth)} of 205 sizes" in cov.summary
    for h in truth:
        x = torch.randn(1, 3, h, 40)
        with torch.no_grad():
            assert torch.allclose(d(x), m(x), atol=1e-5), h
    for h in sorted(set(range(96, 301)) - set(truth))[:20]:
        with pytest.raises(dimguard.DispatchError) as err:
            d(torch.randn(1, 3, h, 40))
        below, above = err.value.nearest[("x", 2)]
        assert (below is None or below in truth) and (above is None or above in truth)
        assert below is None or not any(below < v < h for v in truth)
        assert above is None or not any(h < v < above for v in truth)
        if above is not None:
            assert f"pad by {above - h} to {above}" in str(err.value)


def test_branch_regions_get_a_program_each():
    torch.manual_seed(0)
    m = Branchy().eval()
    d = dimguard.export(m, (torch.randn(1, 3, 128, 16),), dynamic_shapes={"x": {2: Dim("h", min=96, max=300)}}, cover=True, verbose=False)
    assert len(d.pieces) == 2
    assert d.coverage.accepted == 205 and d.coverage.one_dim == 104
    assert d.route({"x": [1, 3, 199, 16]}) != d.route({"x": [1, 3, 200, 16]})
    for h in (96, 150, 199, 200, 257, 300):
        x = torch.randn(1, 3, h, 16)
        with torch.no_grad():
            assert torch.allclose(d(x), m(x), atol=1e-5), h
    page = d.html()
    assert "205 of 205 sizes in 2 programs" in page
    assert page.count("<h3 id=\"dim-") == 2 and "<h3 id=\"dim-1\">program 1: x[2]</h3>" in page
    assert "Spec 2 of 2: program 1" in page
    # One copy of the weights: every program reads the model's own tensors.
    ptrs = {p.module.c.weight.data_ptr() for p in d.pieces}
    assert ptrs == {m.c.weight.data_ptr()}


def test_linked_sizes_pairs_exact():
    m = Grouped().eval()
    spec = {"x": {2: Dim("h", min=8, max=40), 3: Dim("w", min=8, max=40)}}
    d = dimguard.export(m, (torch.randn(1, 2, 16, 16),), dynamic_shapes=spec, cover=True, verbose=False)
    truth = {(h, w) for h in range(8, 41) for w in range(8, 41) if eager_runs(m, torch.randn(1, 2, h, w))}
    got = {(h, w) for h in range(8, 41) for w in range(8, 41) if d.accepts({"x": [1, 2, h, w]})}
    assert got == truth
    assert d.coverage.accepted == len(truth)
    for h, w in sorted(truth)[:: max(1, len(truth) // 15)]:
        x = torch.randn(1, 2, h, w)
        assert torch.allclose(d(x), m(x))


def test_save_load_in_a_fresh_process(tmp_path):
    torch.manual_seed(0)
    m = Branchy().eval()
    d = dimguard.export(m, (torch.randn(1, 3, 128, 16),), dynamic_shapes={"x": {2: Dim("h", min=96, max=300)}}, cover=True, verbose=False)
    path = tmp_path / "branchy.dispatch"
    d.save(path)
    sizes = [96, 199, 200, 300, 301]
    xs = {h: torch.randn(1, 3, h, 16) for h in sizes}
    torch.save(xs, tmp_path / "inputs.pt")
    want = {}
    for h, x in xs.items():
        try:
            want[h] = d(x)
        except dimguard.DispatchError:
            want[h] = None
    code = f"""
import json, torch, dimguard
d = dimguard.load({str(path)!r})
xs = torch.load({str(tmp_path / 'inputs.pt')!r})
out = {{}}
for h, x in xs.items():
    try:
        out[h] = d(x)
    except dimguard.DispatchError as e:
        out[h] = None
torch.save(out, {str(tmp_path / 'out.pt')!r})
sd = [p.program.state_dict for p in d.pieces]
print(json.dumps({{"summary": d.coverage.summary, "shared": all(sd[0][k] is s[k] for s in sd[1:] for k in s if k in sd[0])}}))
"""
    # dimguard check reads the archive's programs themselves (not the manifest): the union is
    # exactly the sizes the dispatcher accepts.
    rep = dimguard.check(path)
    (u,) = rep.to_dict()["union"]
    assert (u["input"], u["index"]) == ("x", 2) and len(u["dynamic_in"]) == len(d.pieces)
    accepted = {h for h in range(90, 310) if dimguard.SizeSet(u["accepted"]).__contains__(h)}
    assert accepted == {h for h in range(90, 310) if d.accepts({"x": [1, 3, h, 16]})}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    info = json.loads(res.stdout.strip().splitlines()[-1])
    assert info["summary"] == d.coverage.summary
    assert info["shared"], "the loaded programs keep one copy of each weight"
    got = torch.load(tmp_path / "out.pt")
    for h in sizes:
        if want[h] is None:
            assert got[h] is None, h
        else:
            assert torch.allclose(got[h], want[h]), h


def test_load_refuses_other_archives(tmp_path):
    import zipfile

    p = tmp_path / "x.zip"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("a.txt", "hi")
    with pytest.raises(ValueError, match="not a dimguard dispatch archive"):
        dimguard.load(p)


def _member(segs, x):
    return any(s["lo"] <= x <= s["hi"] and x % s["modulus"] in s["residues"] for s in segs)


def test_union_count_equals_brute_force():
    rng = random.Random(7)
    for case in range(300):
        ndim = rng.randint(1, 3)
        dims = [("x", i) for i in range(ndim)]
        boxes = []
        for _ in range(rng.randint(0, 4)):
            box = {}
            for k in dims:
                segs = []
                for _ in range(rng.randint(1, 2)):
                    lo = rng.randint(0, 30)
                    hi = lo + rng.randint(0, 25)
                    m = rng.choice([1, 1, 2, 3, 4, 8])
                    res = sorted(rng.sample(range(m), rng.randint(1, m)))
                    segs.append({"lo": lo, "hi": hi, "modulus": m, "residues": res})
                box[k] = segs
            boxes.append(box)
        # Oracle: inclusion-exclusion over the boxes, each side as an explicit set of values.
        import itertools

        explicit = [{k: {v for v in range(0, 57) if _member(b[k], v)} for k in dims} for b in boxes]
        want = 0
        for r in range(1, len(boxes) + 1):
            for sub in itertools.combinations(explicit, r):
                n = 1
                for k in dims:
                    n *= len(set.intersection(*(b[k] for b in sub)))
                want += n if r % 2 else -n
        assert union_count(boxes, dims) == want, (case, boxes)


def test_diagnose_cover_specs_reexport_and_run():
    """``dimguard.diagnose(error, cover=4)`` on torch's own ConstraintViolationError: every printed
    spec exports in torch 2.15 and the program runs at its range ends and middle (equal to the
    model), and the specs together hold exactly the sizes at which the model runs."""
    torch.manual_seed(0)
    m = StrideSkip().eval()
    x = torch.randn(1, 3, 128, 40)
    try:
        torch.export.export(m, (x,), dynamic_shapes={"x": {2: Dim("h", min=96, max=300)}})
        raise AssertionError("torch accepted a range the model does not run at")
    except Exception as e:  # noqa: BLE001 - torch's ConstraintViolationError (a UserError)
        err = e
    d = dimguard.diagnose(err, {"x": x}, cover=4)
    truth = {h for h in range(96, 301) if eager_runs(m, torch.randn(1, 3, h, 40))}
    cover = d.cover.to_dict()
    assert cover["valid"] == len(truth) and cover["covered"] == len(truth)
    held = set()
    for p in cover["pieces"]:
        ns = {}
        exec(p["code"], ns)  # noqa: S102 - dimguard's own printed spec, real torch Dim
        ep = torch.export.export(m, (torch.randn(1, 3, next(iter(_members(p["sides"][0]))), 40),), dynamic_shapes=ns["dynamic_shapes"])
        members = _members(p["sides"][0])
        held |= set(members)
        for h in (members[0], members[len(members) // 2], members[-1]):
            xh = torch.randn(1, 3, h, 40)
            with torch.no_grad():
                assert torch.allclose(ep.module()(xh), m(xh), atol=1e-5), h
        outside = next(h for h in range(96, 301) if h not in members)
        with pytest.raises(Exception):
            ep.module()(torch.randn(1, 3, outside, 40))
    assert held == truth


def _members(side):
    return list(range(side["lo"], side["hi"] + 1, side["modulus"]))


def test_shapes_spec_branch_regions():
    """Under a ShapesSpec, ``Branchy``'s ``x.shape[2] >= 200`` is a data-dependent branch. A
    ShapesSpec export takes the traced example's branch (an assumption the program asserts);
    the cover exports the other branch too, and the dispatcher runs every size of the ShapeVar's
    range, equal to the model, refusing the sizes outside it."""
    from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec

    torch.manual_seed(0)
    m = Branchy().eval()
    H = ShapeVar("H", min=96, max=300)
    d = dimguard.export(m, (torch.randn(1, 3, 128, 16),), dynamic_shapes=ShapesSpec({"x": TensorSpec([1, 3, H, 16])}), cover=True, verbose=False)
    assert len(d.pieces) == 2
    assert d.coverage.accepted == 205 and d.coverage.one_dim == 104
    assert [h for h in range(90, 311) if d.accepts({"x": [1, 3, h, 16]})] == list(range(96, 301))
    assert d.route({"x": [1, 3, 199, 16]}) != d.route({"x": [1, 3, 200, 16]})
    for h in (96, 120, 199, 200, 233, 300):
        x = torch.randn(1, 3, h, 16)
        with torch.no_grad():
            assert torch.allclose(d(x), m(x), atol=1e-5), h
    # Each program really rejects the other branch's sizes (its run-time assert), so routing matters.
    for p in d.pieces:
        wrong = 120 if p.accepts({"x": [1, 3, 250, 16]}) else 250
        with pytest.raises(Exception):
            p.module(torch.randn(1, 3, wrong, 16))
    with pytest.raises(dimguard.DispatchError, match="nearest accepted: 96"):
        d(torch.randn(1, 3, 90, 16))
