"""Every spec ``dimguard.diagnose`` prints for a real torch 2.15 ``ConstraintViolationError``
re-exports, and the program exported with it runs at its corners (issue 24, "Done when"): small
torch-only models whose sizes torch guards (strided convolutions with a parity branch, tiles of 16
columns, a pair of inputs torch relates by ``h1 = h2 + 1``) are exported with ``Dim(min, max)``;
torch refuses; the error goes to ``dimguard.diagnose`` with the user's spec (and the traced
example, or without it); the printed ``dynamic_shapes`` is executed and given to
``torch.export.export``. The program it gives runs at every corner of every printed range and
raises at the nearest size outside each range that dimguard says fails; the same program exported
with ``Dim.AUTO`` over the user's ranges (torch keeps every guard as a run-time check) is the
oracle: it runs at a size exactly when dimguard's answer says the size passes, at every size of
the user's range."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.exc import UserError
from torch.export import Dim

import dimguard
from models import ConvStack, FlowNet, OddTiles
from reexport import corners, entries, root_of, roots, runs, size_at


class ShiftPair(nn.Module):
    """Two inputs torch relates linearly: ``a`` loses its first row and is added to ``b`` (so
    ``h_a = h_b + 1``), then a stride-2 stem whose output height picks a branch (the parity guard
    ``((1 + (h_b - 1)//2) % 2) != 0`` on ``b``). torch's message states the relation and the
    guard; dimguard writes both sizes from one root."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)

    def forward(self, a, b):
        y = self.stem(a[:, :, 1:] + b)
        if y.shape[2] % 2 == 0:
            return F.max_pool2d(y, (2, 1))
        return y


# id, model, traced inputs [(name, shape)], the user's Dims {input: {index: (name, min, max)}}
CASES = {
    # ((h-1)//4 - 1) % 2: four residues mod 8 pass; traced in the class of 1, then of 2.
    "conv_stack_97": (ConvStack, [("x", (1, 3, 97, 65))], {"x": {2: ("h", 32, 256), 3: ("w", 32, 256)}}),
    "conv_stack_98": (ConvStack, [("x", (1, 3, 98, 65))], {"x": {2: ("h", 32, 256), 3: ("w", 32, 256)}}),
    # W % 32 == 16: the derived 32*_w + 16; traced at 80 (root 2) and at 48 (root 1, where torch
    # specializes a root, pytorch#176349).
    "odd_tiles_80": (OddTiles, [("x", (1, 2, 5, 80))], {"x": {3: ("w", 16, 512)}}),
    "odd_tiles_48": (OddTiles, [("x", (1, 2, 5, 48))], {"x": {3: ("w", 16, 512)}}),
    # A linked pair torch states (h1 = h2 + 1) with a parity guard on one of them.
    "shift_pair": (
        ShiftPair,
        [("a", (1, 3, 98, 64)), ("b", (1, 3, 97, 64))],
        {"a": {2: ("h1", 32, 256)}, "b": {2: ("h2", 32, 256)}},
    ),
}

# Bugs these tests show (reported; the CLI's output is not this stream's to change). Strict: a fix
# makes them pass and the mark must go. Only torch refusing the printed spec counts (`raises`).
BUGS = {
    # Without the example the four equally large classes mod 8 tie and the class of 1 is printed;
    # the traced 98 is in the class of 2 (8*_h + 2 is sound and exports: the run with the example).
    # A message does not carry the traced size: diagnose says so and asks for it
    # (test_a_spec_that_may_leave_out_the_traced_size_says_so below).
    ("conv_stack_98", False): "without the example the spec holds another residue class than the traced 98",
}
# Traced at 48 = 32*1 + 16, torch refused `_w = Dim('_w', min=1, max=15); w = 32*_w + 16` (its
# root is 1 there: "specialized it to be a constant (48)"); dimguard now starts every derived
# root at 2 (`w = 32*_w - 16`), so odd_tiles_48 exports with and without the example.


def user_code(dims):
    lines = ["from torch.export import Dim"]
    for d in dims.values():
        lines += [f"{n} = Dim({n!r}, min={lo}, max={hi})" for n, lo, hi in d.values()]
    body = ", ".join(
        f"{inp!r}: {{" + ", ".join(f"{i}: {n}" for i, (n, _, _) in d.items()) + "}" for inp, d in dims.items()
    )
    return "\n".join(lines + ["dynamic_shapes = {" + body + "}"])


def exported(model, shapes, dynamic_shapes):
    torch.manual_seed(0)
    return torch.export.export(model, tuple(torch.randn(*s) for _, s in shapes), dynamic_shapes=dynamic_shapes)


class Verdict:
    """dimguard's answer, as data: whether sizes ``{(input, index): size}`` pass every guard of
    the message (each dimension's range and ``feasible`` set, the linked groups' roots and
    members, torch's stated relations)."""

    def __init__(self, data):
        self.data = data
        self.key = {}
        for d in data["dims"]:
            src = d["source"]  # L['x'].size()[2]
            self.key[d["name"]] = (src.split("'")[1], int(src.split("[")[-1].rstrip("]")))

    @staticmethod
    def _in(feasible, v):
        return any(
            s["lo"] <= v <= s["hi"] and v % s["modulus"] in s["residues"] for s in feasible["segments"]
        )

    def ok(self, sizes):
        by_name = {n: sizes[k] for n, k in self.key.items() if k in sizes}
        for d in self.data["dims"]:
            v = by_name.get(d["name"])
            if v is None:
                continue
            if d.get("range") and not d["range"][0] <= v <= d["range"][1]:
                return False
            if d.get("feasible") and not self._in(d["feasible"], v):
                return False
        for g in self.data.get("linked") or []:
            if g["root"] not in by_name:
                continue
            if g.get("feasible") and not self._in(g["feasible"], by_name[g["root"]]):
                return False
            for member, expr in g["members"]:
                if member in by_name and by_name[member] != eval(expr, {g["root"]: by_name[g["root"]]}):  # noqa: S307
                    return False
        for r in self.data.get("relations") or []:
            if r["name"] in by_name and r["other"] in by_name:
                if by_name[r["name"]] != eval(r["expr"], {r["other"]: by_name[r["other"]]}):  # noqa: S307
                    return False
        return True

    def group(self, spec, root, s, traced):
        """The sizes with ``root``'s first size moved to ``s`` and the sizes tied to it following
        (on the progression through the root; off it, through the linked group's expressions);
        None when they cannot follow."""
        members = [(inp, i, v) for inp, i, v in entries(spec) if root_of(v) is root]
        inp0, i0, v0 = members[0]
        sizes = dict(traced)
        sizes[(inp0, i0)] = s
        ks = [k for k in range(int(root.min) - 64, int(root.max) + 65) if size_at(v0, k) == s]
        if ks:
            for inp, i, v in members[1:]:
                sizes[(inp, i)] = size_at(v, ks[0])
            return sizes
        if len(members) == 1:
            return sizes
        name0 = next((n for n, k in self.key.items() if k == (inp0, i0)), None)
        for g in self.data.get("linked") or []:
            if g["root"] == name0:
                for member, expr in g["members"]:
                    sizes[self.key[member]] = eval(expr, {name0: s})  # noqa: S307
                return sizes
        return None


def traced_sizes(shapes, dims):
    return {(inp, i): dict(shapes)[inp][i] for inp, d in dims.items() for i in d}


@pytest.mark.parametrize(
    "case,with_example",
    [
        pytest.param(
            c, e, marks=[pytest.mark.xfail(strict=True, raises=UserError, reason=BUGS[(c, e)])] if (c, e) in BUGS else []
        )
        for c in CASES
        for e in (True, False)
    ],
    ids=[f"{c}-{'example' if e else 'no_example'}" for c in CASES for e in (True, False)],
)
def test_the_spec_diagnose_prints_exports_and_runs_at_its_corners(case, with_example):
    model_cls, shapes, dims = CASES[case]
    m = model_cls().eval()
    code = user_code(dims)
    ns = {}
    exec(code, ns)  # noqa: S102
    # torch 2.15 refuses the user's Dims: the real error, not a fixture.
    with pytest.raises(UserError, match="Constraints violated") as err:
        exported(m, shapes, ns["dynamic_shapes"])
    example = {n: s for n, s in shapes} if with_example else None
    d = dimguard.diagnose(err.value, example, spec=code)
    data = d._data
    verdict = Verdict(data)
    traced = traced_sizes(shapes, dims)
    assert verdict.ok(traced), (traced, d)  # the traced sizes pass the message's guards
    printed = {}
    exec(d.dynamic_shapes, printed)  # noqa: S102
    spec = printed["dynamic_shapes"]
    # Every dimension the user asked for is still there, dynamic.
    for inp, dd in dims.items():
        assert set(spec[inp]) == set(dd), d.dynamic_shapes
    assert {(inp, i) for inp, i, _ in entries(spec)} == set(traced), d.dynamic_shapes
    # torch exports it at the traced inputs (a UserError here is the bug the marks name).
    ep2 = exported(m, shapes, spec)
    auto = {inp: {i: Dim.AUTO(min=lo, max=hi) for i, (_, lo, hi) in dd.items()} for inp, dd in dims.items()}
    oracle = exported(m, shapes, auto).module()
    mod2 = ep2.module()
    # Every corner of every printed range runs, in the re-exported program and in the oracle,
    # and dimguard says it passes.
    n = 0
    for sizes in corners(spec):
        assert verdict.ok(sizes), (sizes, d.dynamic_shapes)
        assert runs(mod2, shapes, sizes), (sizes, d.dynamic_shapes)
        assert runs(oracle, shapes, sizes), (sizes, d.dynamic_shapes)
        n += 1
    assert n == 2 ** len(roots(spec))
    # Just outside each printed range, the nearest size dimguard says fails: both programs raise.
    for r in roots(spec):
        (inp0, i0, v0) = next((inp, i, v) for inp, i, v in entries(spec) if root_of(v) is r)
        _, lo, hi = dims[inp0][i0]
        for start, stop, step in ((size_at(v0, r.min) - 1, lo - 1, -1), (size_at(v0, r.max) + 1, hi + 1, 1)):
            for s in range(start, stop, step):
                sizes = verdict.group(spec, r, s, traced)
                if sizes is not None and not verdict.ok(sizes):
                    assert not runs(mod2, shapes, sizes), (sizes, d.dynamic_shapes)
                    assert not runs(oracle, shapes, sizes), (sizes, d)
                    break
    # dimguard's answer is exact over the user's range: moving each size the message names (the
    # sizes tied to it following), the oracle runs exactly where dimguard says the sizes pass,
    # and the re-exported program runs at every size the spec holds.
    named = set(verdict.key.values())
    for r in roots(spec):
        inp0, i0, v0 = next((inp, i, v) for inp, i, v in entries(spec) if root_of(v) is r)
        if (inp0, i0) not in named:
            continue
        _, lo, hi = dims[inp0][i0]
        held = {size_at(v0, k) for k in range(int(r.min), int(r.max) + 1)}
        for s in range(lo, hi + 1):
            sizes = verdict.group(spec, r, s, traced)
            if sizes is None:
                continue
            ok = verdict.ok(sizes)
            assert runs(oracle, shapes, sizes) == ok, (sizes, ok, d)
            if s in held:
                assert ok and runs(mod2, shapes, sizes), (sizes, d.dynamic_shapes)


FLOW = [("image1", (1, 3, 64, 96)), ("image2", (1, 3, 64, 96))]
FLOW_DIMS = {"image1": {2: ("h1", 32, 256), 3: ("w1", 32, 256)}, "image2": {2: ("h2", 32, 256), 3: ("w2", 32, 256)}}


def flow_spec():
    m = FlowNet().eval()
    code = user_code(FLOW_DIMS)
    ns = {}
    exec(code, ns)  # noqa: S102
    with pytest.raises(UserError, match="Constraints violated") as err:
        exported(m, FLOW, ns["dynamic_shapes"])
    d = dimguard.diagnose(err.value, dict(FLOW), spec=code)
    printed = {}
    exec(d.dynamic_shapes, printed)  # noqa: S102
    spec = printed["dynamic_shapes"]
    return m, d, spec, exported(m, FLOW, spec).module()


def test_two_frames_the_spec_exports_and_runs_where_the_frames_agree():
    """FlowNet: torch's message names image1's sizes only (multiples of 8); the printed spec
    narrows them and keeps image2's Dims as the user wrote them. It exports; the program runs at
    every corner of image1's ranges with image2 the same size, and raises off the multiples of 8."""
    m, d, spec, mod = flow_spec()
    h1, w1 = spec["image1"][2], spec["image1"][3]
    assert h1.min % 8 == 0 and h1.max % 8 == 0 and w1.min % 8 == 0, d.dynamic_shapes
    for hh in (h1.min, h1.max):
        for ww in (w1.min, w1.max):
            sizes = {("image1", 2): hh, ("image1", 3): ww, ("image2", 2): hh, ("image2", 3): ww}
            assert runs(mod, FLOW, sizes), sizes
    bad = {("image1", 2): h1.min + 1, ("image1", 3): w1.min, ("image2", 2): h1.min + 1, ("image2", 3): w1.min}
    assert not runs(mod, FLOW, bad)


@pytest.mark.xfail(
    strict=True,
    raises=AssertionError,
    reason="torch's message does not name the link (w1-1)//8 == (w2-1)//8, torch accepts the spec "
    "without it, and the printed spec claims image2 sizes independent of image1's",
)
def test_two_frames_the_spec_runs_at_every_corner():
    m, d, spec, mod = flow_spec()
    for sizes in corners(spec):
        assert runs(mod, FLOW, sizes), (sizes, d.dynamic_shapes)


def test_two_frames_check_of_the_reexported_program_ties_them_and_its_spec_runs_at_every_corner():
    """The way out of the gap above: ``dimguard.check`` on the program the diagnosed spec gave
    finds the link and prints image2's sizes as image1's; that spec exports, runs at every corner,
    and the report rejects the frames that differ, as the program does."""
    m, d, spec, mod = flow_spec()
    report = dimguard.check(exported(m, FLOW, spec))
    code = report._data["dynamic_shapes"]
    ns = {}
    exec(code, ns)  # noqa: S102
    tied = ns["dynamic_shapes"]
    assert tied["image2"][2] is tied["image1"][2] and tied["image2"][3] is tied["image1"][3], code
    mod2 = exported(m, FLOW, tied).module()
    n = 0
    for sizes in corners(tied):
        shapes = {k: [1, 3, sizes[(k, 2)], sizes[(k, 3)]] for k in ("image1", "image2")}
        assert report.accepts(shapes) and runs(mod2, FLOW, sizes), (sizes, code)
        n += 1
    assert n == 4
    h1 = spec["image1"][2]
    differ = {("image1", 2): h1.min, ("image1", 3): 64, ("image2", 2): h1.max, ("image2", 3): 64}
    assert not report.accepts({"image1": [1, 3, h1.min, 64], "image2": [1, 3, h1.max, 64]})
    assert not runs(mod, FLOW, differ) and not runs(mod2, FLOW, differ)


def refused(case):
    """The case's model, traced shapes, Dims, the user's code and torch 2.15's real refusal of
    it (a ``UserError``: "Constraints violated")."""
    model_cls, shapes, dims = CASES[case]
    m = model_cls().eval()
    code = user_code(dims)
    ns = {}
    exec(code, ns)  # noqa: S102
    with pytest.raises(UserError, match="Constraints violated") as err:
        exported(m, shapes, ns["dynamic_shapes"])
    return m, shapes, dims, code, err.value


def test_a_spec_that_may_leave_out_the_traced_size_says_so():
    """ConvStack traced at 98 (the xfail above): without the example the printed class need not
    hold 98, and diagnose's advice for h says the traced size is unknown and how to give it; with
    the example the advice is gone and the spec holds 98."""
    _, shapes, _, code, err = refused("conv_stack_98")
    for example in (None, {n: s for n, s in shapes}):
        d = dimguard.diagnose(err, example, spec=code)
        advice = [a for dim in d._data["dims"] for a in dim.get("advice", [])]
        said = any("the size you traced is not in this text" in a for a in advice)
        assert said == (example is None), advice


@pytest.mark.parametrize("h", [32, 33, 37, 100, 102, 167, 248, 256])
def test_nearest_accepted_is_what_the_program_runs_at(h):
    """``nearest_accepted`` (issue 35): diagnosed with a traced height, a height the guards
    reject gets the nearest accepted heights below and above, and one they accept gets none.
    The oracle is the program torch exports with ``Dim.AUTO`` over the user's range (every guard
    kept as a run-time check): at a rejected height it raises there and at every height strictly
    between the two named ones, and runs at both; at an accepted height it runs."""
    m, shapes, dims, code, err = refused("conv_stack_97")
    d = dimguard.diagnose(err, {"x": (1, 3, h, 65)}, spec=code)
    (entry,) = [x for x in d.dims if x.name == "h"]
    auto = {inp: {i: Dim.AUTO(min=lo, max=hi) for i, (_, lo, hi) in dd.items()} for inp, dd in dims.items()}
    oracle = exported(m, shapes, auto).module()

    def runs_at(v):
        try:
            oracle(torch.randn(1, 3, v, 65))
            return True
        except Exception:  # noqa: BLE001 - torch's guard failure is a RuntimeError or an AssertionError
            return False

    if runs_at(h):
        assert "nearest_accepted" not in entry, d
        return
    near = entry.nearest_accepted  # read as an attribute, with no change to the package
    assert near.size == h, d
    assert near.below is not None or near.above is not None
    for v in range((near.below or 31) + 1, (near.above or 257)):
        assert not runs_at(v), (v, near)
    for v in (near.below, near.above):
        if v is not None:
            assert runs_at(v), (v, near)
