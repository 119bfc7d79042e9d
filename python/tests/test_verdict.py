"""``accepts`` is the program's own answer: a property test over a family of programs exported
here with torch 2.15 (random stems of strided convs and pools, upsample skips, window reshapes,
two inputs added after their stems, derived and fixed sizes, sizes sharing a symbol, ShapesSpec
run-time asserts), each run at random shapes inside and around what it claims. The oracle is
running the program (``ep.module()``): ``accepts`` must never say True where it raises, nor
False where it runs, and must decide every shape of these programs (their conditions are all on
sizes)."""

import random

import pytest
import torch
import torch.nn.functional as F
from torch.export import Dim
from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec

import dimguard


class Stem(torch.nn.Module):
    """A random chain of strided convs and pools (floor or ceil mode), optionally with the deep
    map upsampled back onto the first one and added (an FPN/UNet add: their sizes must agree)
    and a window reshape at the end. ``strides`` fixes the chain's strides (two stems that must
    meet)."""

    def __init__(self, rng, strides=None):
        super().__init__()
        self.strides = strides or [rng.choice([2, 2, 3]) for _ in range(rng.randint(1, 3))]
        layers = []
        for s in self.strides:
            kind = rng.choice(["conv", "pool", "pool_ceil"])
            if kind == "conv":
                layers.append(torch.nn.Conv2d(2, 2, 3, stride=s, padding=1))
            else:
                layers.append(torch.nn.MaxPool2d(s, s, ceil_mode=kind == "pool_ceil"))
        self.layers = torch.nn.ModuleList(layers)
        self.up = 1
        for s in self.strides[1:]:
            self.up *= s
        self.skip = self.up > 1 and rng.random() < 0.6
        self.window = rng.choice([0, 0, 2, 4])

    def traced(self):
        """A size every layer divides exactly (so the example exports)."""
        n = 4 * max(self.window, 1)
        for s in self.strides:
            n *= s
        return n

    def forward(self, x):
        first = self.layers[0](x)
        y = first
        for layer in self.layers[1:]:
            y = layer(y)
        if self.skip:
            y = first + F.interpolate(y, scale_factor=self.up)
        if self.window:
            b, c, h, w = y.shape
            k = self.window
            y = y.view(b, c, h // k, k, w // k, k).sum(dim=(3, 5))
        return y


class Two(torch.nn.Module):
    """Two images through stems of the same strides (other layers), added: their maps must
    agree in size."""

    def __init__(self, rng):
        super().__init__()
        self.a = Stem(rng)
        self.b = Stem(rng, strides=list(self.a.strides))
        self.b.window = self.a.window
        if self.b.skip != self.a.skip:
            self.b.skip = False
            self.a.skip = False

    def traced(self):
        return self.a.traced()

    def forward(self, x, y):
        return self.a(x) + self.b(y)


def runs(ep, tensors):
    try:
        ep.module()(*tensors)
        return True
    except Exception:  # noqa: BLE001 - a guard, a run-time assert, or an operator's failure
        return False


def shapes_around(report, traced, rng, n):
    """Random shapes: fixed sizes kept (sometimes off by one), symbolic sizes at the traced
    value, small values, values around the claimed ends and random ones; sizes sharing a symbol
    usually equal."""
    ranges = {s["symbol"]: (s["min"], s.get("max")) for s in report["symbols"]}
    out = []
    for _ in range(n):
        by_symbol = {}
        shapes = {}
        for inp in report["inputs"]:
            shape = []
            for k, e in enumerate(inp["shape"]):
                t = traced[inp["input"]][k]
                if isinstance(e, int):
                    shape.append(e + 1 if rng.random() < 0.1 else e)
                    continue
                if e in by_symbol and rng.random() < 0.8:
                    shape.append(by_symbol[e])
                    continue
                lo, hi = ranges.get(e, (2, None))
                hi = min(hi or 256, 256)
                v = rng.choice([t, t + rng.randint(-3, 3), rng.randint(1, 40), rng.randint(2, 160), lo, lo - 1, lo + 1, hi, hi + 1, rng.randint(max(lo, 2), max(lo, hi))])
                v = max(v, 1)
                by_symbol.setdefault(e, v)
                shape.append(v)
            shapes[inp["input"]] = shape
        out.append(shapes)
    return out


def check_family(ep, traced, rng, n=40):
    """Runs the program at ``n`` random shapes; returns (decided, agreements, wrong)."""
    report = dimguard.check(ep)
    wrong = []
    for shapes in shapes_around(report.to_dict(), traced, rng, n):
        v = report.verdict(shapes)
        tensors = [torch.randn(*shapes[name]) for name in traced]
        got = runs(ep, tensors)
        if v["accepted"] is None or v["accepted"] != got:
            wrong.append((shapes, v.to_dict(), got))
    return wrong


@pytest.mark.parametrize("seed", range(8))
def test_accepts_is_the_programs_answer_on_generated_programs(seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    two = seed % 2 == 1
    m = (Two(rng) if two else Stem(rng)).eval()
    # Sizes the stems divide, so the traced example exports.
    n = m.traced()
    args = (torch.randn(2, 2, n, 2 * n), torch.randn(2, 2, n, 2 * n)) if two else (torch.randn(2, 2, n, 2 * n),)
    names = ["x", "y"] if two else ["x"]
    auto = {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}
    if seed % 4 == 2:
        auto = {2: Dim.AUTO, 3: Dim.AUTO}  # the batch left static: a fixed size
    spec = {n: dict(auto) for n in names}
    ep = torch.export.export(m, args, dynamic_shapes=spec)
    traced = {n: list(a.shape) for n, a in zip(names, args)}
    wrong = check_family(ep, traced, rng)
    assert not wrong, f"seed {seed}: {len(wrong)} disagreements, e.g. {wrong[:3]}"


class Halves(torch.nn.Module):
    """``y`` is half of ``x`` along the width (a derived size ``2*w``) and shares its height."""

    def forward(self, x, y):
        return x[..., ::2] + y


def test_accepts_on_derived_and_shared_sizes():
    w = Dim("w", min=4, max=64)
    h = Dim("h", min=4, max=64)
    args = (torch.randn(1, 3, 20, 24), torch.randn(1, 3, 20, 12))
    ep = torch.export.export(Halves(), args, dynamic_shapes={"x": {2: h, 3: 2 * w}, "y": {2: h, 3: w}})
    report = dimguard.check(ep)
    # Sizes the program ties: the verdict says which, and running agrees.
    for shapes, expect in [
        ({"x": [1, 3, 20, 24], "y": [1, 3, 20, 12]}, True),
        ({"x": [1, 3, 20, 24], "y": [1, 3, 22, 12]}, False),  # heights share one symbol
        ({"x": [1, 3, 20, 25], "y": [1, 3, 20, 12]}, False),  # 25 is not 2*w
        ({"x": [1, 3, 20, 26], "y": [1, 3, 20, 12]}, False),  # 2*w with w = 12 is 24
        ({"x": [2, 3, 20, 24], "y": [2, 3, 20, 12]}, False),  # the batch is fixed at 1
        ({"x": [1, 3, 20, 130], "y": [1, 3, 20, 65]}, False),  # w above 64
    ]:
        v = report.verdict(shapes)
        assert v["accepted"] is expect, (shapes, v.to_dict())
        assert runs(ep, [torch.randn(*shapes["x"]), torch.randn(*shapes["y"])]) is expect, shapes
        if not expect:
            assert v["reason"], shapes
    wrong = check_family(ep, {"x": [1, 3, 20, 24], "y": [1, 3, 20, 12]}, random.Random(7), n=60)
    assert not wrong, wrong[:3]


class Square(torch.nn.Module):
    """Needs H == W at run time (a token grid flattened against a square position table)."""

    def __init__(self):
        super().__init__()
        self.pos = torch.nn.Parameter(torch.randn(1, 2, 1, 1))

    def forward(self, x):
        h, w = x.shape[2], x.shape[3]
        torch._check(h == w)
        return (x + self.pos).flatten(2).transpose(1, 2)


def test_accepts_reads_shapesspec_run_time_asserts_on_the_right_sizes():
    # A ShapesSpec export: the equality becomes a run-time assert over two different input
    # sizes; reading it as one size compared with itself accepted (2, 2, 25, 24).
    B, H, W = ShapeVar("B", min=1, max=8), ShapeVar("H", min=8, max=64), ShapeVar("W", min=8, max=64)
    args = (torch.randn(2, 2, 24, 24),)
    ep = torch.export.export(Square(), args, dynamic_shapes=ShapesSpec({"x": TensorSpec([B, 2, H, W])}))
    report = dimguard.check(ep)
    for h, w in [(24, 24), (25, 24), (24, 25), (8, 8), (64, 64), (64, 8)]:
        shapes = {"x": [2, 2, h, w]}
        got = runs(ep, [torch.randn(*shapes["x"])])
        assert got is (h == w)
        assert report.accepts(shapes) is got, (shapes, report.verdict(shapes).to_dict())
    wrong = check_family(ep, {"x": [2, 2, 24, 24]}, random.Random(3), n=40)
    assert not wrong, wrong[:3]


def test_undecided_is_a_third_answer():
    args = (torch.randn(2, 2, 24, 24),)
    ep = torch.export.export(Stem(random.Random(1)).eval(), args, dynamic_shapes={"x": {2: Dim.AUTO}})
    report = dimguard.check(ep)
    # A shape with an input the program does not have is rejected, with the reason.
    v = report.verdict({"z": [1]})
    assert v["accepted"] is False and "no tensor input" in v["reason"]
    # A report without program facts (older JSON) cannot decide: accepts raises, never False.
    old = dimguard.CheckReport({k: v for k, v in report.to_dict().items() if k != "inputs"})
    with pytest.raises(dimguard.Undecided):
        old.accepts({"x": [2, 2, 24, 24]})


def test_an_example_the_program_leaves_undecided_is_said_never_raised():
    # HF Longformer (tiny config, plain Dim): the returned program's run-time asserts name values
    # read back from tensors, so whether it accepts the user's own example is undecided. The
    # export returns its program and says so in a note; it never raises dimguard.Undecided.
    import transformers as t
    from torch.export import Dim

    torch.manual_seed(0)
    m = t.LongformerModel(t.LongformerConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, attention_window=8, max_position_embeddings=600)).eval()
    ids = torch.randint(0, 100, (1, 64))
    spec = {"input_ids": {0: Dim("batch", min=1, max=16), 1: Dim("seq", min=2, max=512)}}
    ep, rep = dimguard.export(m, (ids,), dynamic_shapes=spec, verbose=False)
    assert rep.exported
    # Two rounds: the data-dependent `8*u1 < s70` compares a value read from data with seq, so
    # the pass with real tensors takes seq as Dim.AUTO, where torch fixes it at 64 (under the
    # named Dim that was a third round); the report reads that from the program.
    assert len(rep.rounds) == 2, [r.outcome for r in rep.rounds]
    assert {"input": "input_ids", "index": 1, "size": 64} in [dict(s.to_dict()) for s in rep.static], rep.static
    assert "# seq: the returned program fixes it at 64" in rep.spec, rep.spec
    for seq in (32, 72, 128):
        assert rep.verdict({"input_ids": [1, seq]})["accepted"] is False
        assert not runs(ep, [torch.randint(0, 100, (1, seq))]), seq
    v = rep.verdict({"input_ids": [1, 64]})
    assert runs(ep, [ids])
    assert v["accepted"] in (True, None), v.to_dict()
    if v["accepted"] is None:
        assert any("is undecided" in n for n in rep.rounds[-1]["notes"]), rep.rounds[-1]["notes"]
        with pytest.raises(dimguard.Undecided):
            rep.accepts({"input_ids": [1, 64]})


class ItemAsSize(torch.nn.Module):
    """Reads a length back from a tensor and makes a tensor of that length: torch records the
    value's range as [0, oo] in ``range_constraints`` *because* it asserts ``u0 >= 0`` at run
    time."""

    def forward(self, x, t):
        k = t.max().item()
        torch._check(k >= 0)
        return x.sum() + torch.zeros(k).sum()


def test_an_assert_on_a_value_read_from_data_stays_undecided():
    # The range [0, oo] torch keeps for u0 is the assert itself, not a fact independent of it:
    # deciding `u0 >= 0` from it would accept shapes whose data the program rejects (below).
    # The verdict leaves it undecided, naming the value; it decides everything on sizes.
    args = (torch.randn(4), torch.tensor([3, 1]))
    ep = torch.export.export(ItemAsSize(), args, dynamic_shapes=({0: Dim("n")}, {0: Dim("m")}))
    assert any(str(k) == "u0" and int(v.lower) == 0 for k, v in ep.range_constraints.items()), ep.range_constraints
    report = dimguard.check(ep)
    v = report.verdict({"x": [4], "t": [2]})
    assert v["accepted"] is None and "u0" in v["reason"], v.to_dict()
    assert runs(ep, [torch.randn(4), torch.tensor([3, 1])])
    assert not runs(ep, [torch.randn(4), torch.tensor([-2, -5])])
    assert report.verdict({"x": [4, 1], "t": [2]})["accepted"] is False


class ChunksOfSize(torch.nn.Module):
    """HF Longformer's chunking: the count of chunks read back from a tensor made from the size
    (``torch.div(seq, k, rounding_mode='trunc').item()``), then used as a size."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        n = torch.div(x.shape[1], self.k, rounding_mode="trunc").item()
        torch._check(n >= 1)
        return x[:, : self.k * n].reshape(x.shape[0], n, self.k).sum(-1)


@pytest.mark.parametrize("k", [3, 8])
def test_a_value_read_from_a_tensor_made_of_sizes_is_decided_exactly(k):
    # The run-time asserts over u = item(trunc(seq / k)) are decided from that expression (the
    # program's own value of u), never from torch's recorded range for u: every seq in and
    # around the range is decided, and each answer is the program's (before, every one was
    # undecided).
    spec = ShapesSpec({"x": TensorSpec([ShapeVar("b", min=1, max=8), ShapeVar("s", min=2, max=100)])})
    ep, rep = dimguard.export(ChunksOfSize(k), (torch.randn(2, 64),), dynamic_shapes=spec, verbose=False)
    for s in range(1, 108, 3 if k == 8 else 1):
        accepted = rep.verdict({"x": [2, s]})["accepted"]
        assert accepted is not None, (s, rep.verdict({"x": [2, s]}).to_dict())
        assert accepted == runs(ep, [torch.randn(2, s)]), s
