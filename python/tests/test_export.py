"""``dimguard.export`` end to end with real torch 2.15 and torchvision: each returned program runs
at sizes the report accepts (min and max included) and raises at sizes it rejects."""

import pathlib
import re
import sys

import pytest

try:
    import torch
    import torchvision
    from torch import nn
    from torch.export import Dim
except ImportError as e:  # never a skip: the suite fails, saying why
    raise RuntimeError(
        f"the end-to-end tests need torch 2.15 and torchvision ({e}): pip install -r python/requirements-test.txt"
    ) from e

import dimguard
from models import ConvStack, Decoder, FlowNet, NearDiagonal, OddTiles, UNet

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
from export_linked import ConvAttention, RelativePosition  # noqa: E402  (the fixtures' models)

assert torch.__version__.startswith("2.15"), f"torch {torch.__version__}: the suite is for 2.15"


def runs(ep, *args):
    """True when the program runs on these inputs, False when it rejects them (any other error
    is a test failure)."""
    try:
        with torch.no_grad():
            ep.module()(*args)
        return True
    except (AssertionError, RuntimeError, ValueError) as e:
        msg = str(e)
        assert any(w in msg for w in ("Guard failed", "guard", "Expected input", "to be", "range", "shape")), msg
        return False


def ends(size_set):
    return sorted({size_set.min, size_set.max})


def check_sizes(ep, rep, make, accepted, rejected):
    """``make(size)`` builds the inputs for one size; every accepted size must run, every rejected
    one must raise, and the report must agree with both."""
    for s in accepted:
        assert runs(ep, *make(s)), f"size {s}: the report accepts it but the program raised"
    for s in rejected:
        assert not runs(ep, *make(s)), f"size {s}: the report rejects it but the program ran"


def test_conv_stack_mod_guard():
    """The original report's guard: Eq(Mod(((h-1)//4) - 1, 2), 0)."""
    torch.manual_seed(0)
    m = ConvStack().eval()
    x = torch.randn(2, 3, 64, 48)
    h = Dim("h", min=32, max=512)
    ds = {"x": {0: Dim("batch", max=64), 2: h, 3: Dim("w", min=32, max=512)}}
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ds)
    assert rep.exported and rep.rounds[0].outcome == "constraint_violation"
    guard = rep.rounds[0].diagnosis["dims"]
    assert any("% 2) == 0" in g["text"] for d in guard for g in d["guards"])
    hs = rep.accepted("x", 2)
    valid = [v for v in range(32, 513) if (((v - 1) // 4) - 1) % 2 == 0]
    assert set(hs) <= set(valid), "every accepted height passes the guard"
    assert 64 in hs, "the traced height is kept"
    assert len(hs) >= 61
    ws = rep.accepted("x", 3)
    assert (ws.min, ws.max) == (32, 512)
    # Batch and width ride along: the user's spec is kept whole.
    assert "batch" in rep.spec and "w = Dim('w', min=32, max=512)" in rep.spec
    make = lambda v: (torch.randn(2, 3, v, 48),)  # noqa: E731
    rejected = [v for v in (33, 35, 36, 60, 100) if v not in hs] + [hs.max + 8]
    check_sizes(ep, rep, make, ends(hs) + [64, 200 if 200 in hs else hs.min], rejected)
    check_sizes(ep, rep, lambda v: (torch.randn(2, 3, 64, v),), ends(ws) + [33], [31, 513])
    check_sizes(ep, rep, lambda b: (torch.randn(b, 3, 64, 48),), ends(rep.accepted("x", 0)), [65])
    assert rep.accepts({"x": (2, 3, 64, 48)}) and not rep.accepts({"x": (2, 3, 33, 48)})


@pytest.mark.parametrize("name", ["googlenet", "squeezenet1_0"])
def test_torchvision_solver_crash(name):
    """PyTorch 2.15's own solver crashes on these (no guards reported); dimguard falls back to
    Dim.AUTO and audits the program."""
    torch.manual_seed(0)
    if name == "googlenet":
        m = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=False)
    else:
        m = torchvision.models.squeezenet1_0(weights=None)
    m = m.eval()
    x = torch.randn(1, 3, 224, 224)
    h, w = Dim("h", min=64, max=320), Dim("w", min=64, max=320)
    ep, rep = dimguard.export(m, (x,), dynamic_shapes={"x": {2: h, 3: w}})
    outcomes = [r.outcome for r in rep.rounds]
    assert outcomes[0] == "solver_crash", outcomes
    assert outcomes[-1] == "exported"
    assert "Dim.AUTO" in rep.rounds[-1].spec
    hs, ws = rep.accepted("x", 2), rep.accepted("x", 3)
    assert hs.min >= 64 and hs.max <= 320
    make_h = lambda v: (torch.randn(1, 3, v, 224),)  # noqa: E731
    check_sizes(ep, rep, make_h, ends(hs) + [224], [hs.min - 1, hs.max + 1])
    check_sizes(ep, rep, lambda v: (torch.randn(1, 3, 224, v),), ends(ws), [ws.max + 1])
    # The claimed and accepted sets agree, or the report says which sizes work.
    for d in rep.dims:
        assert d.accepted is not None


def test_flow_two_inputs_share_h_and_w():
    torch.manual_seed(0)
    m = FlowNet().eval()
    a = torch.randn(1, 3, 96, 128)
    h, w = Dim("h", min=32, max=512), Dim("w", min=32, max=512)
    ds = {"image1": {2: h, 3: w}, "image2": {2: h, 3: w}}
    ep, rep = dimguard.export(m, (a, a.clone()), dynamic_shapes=ds)
    assert rep.rounds[0].outcome == "constraint_violation" and rep.exported
    assert '"image2": {2: h, 3: w}' in rep.spec and '"image1": {2: h, 3: w}' in rep.spec
    hs, ws = rep.accepted("image1", 2), rep.accepted("image1", 3)
    assert list(hs) == list(rep.accepted("image2", 2))
    assert set(hs) == {v for v in range(32, 513) if v % 8 == 0}

    def make(hh, ww=128):
        x = torch.randn(1, 3, hh, ww)
        return x, x.clone()

    check_sizes(ep, rep, make, ends(hs) + [96], [36, 100, 520])
    check_sizes(ep, rep, lambda v: make(96, v), ends(ws), [44, 520])
    # The inputs must share the sizes.
    assert not runs(ep, torch.randn(1, 3, 96, 128), torch.randn(1, 3, 104, 128))


def test_unet_pixel_shuffle_interpolate():
    torch.manual_seed(0)
    m = UNet().eval()
    x = torch.randn(1, 3, 96, 128)
    ds = {"x": {0: Dim("batch", min=1, max=8), 2: Dim("h", min=16, max=512), 3: Dim("w", min=16, max=512)}}
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ds)
    assert rep.exported
    # Given batch 1, which torch would specialize: dimguard exports under backed_size_oblivious
    # at the user's batch 1, the batch keeps the user's 1..8, and the spec says so.
    assert "batch = Dim('batch', min=1, max=8)" in rep.spec, rep.spec
    assert "export_context = torch.fx.experimental._config.patch(backed_size_oblivious=True)" in rep.spec, rep.spec
    assert any("x[0]: a size of 0 or 1 in your example, kept dynamic" in n for r in rep.rounds for n in r.notes)
    assert tuple(ep.example_inputs[0][0].shape) == (1, 3, 96, 128)
    assert list(rep.accepted("x", 0)) == list(range(1, 9))
    hs, ws = rep.accepted("x", 2), rep.accepted("x", 3)
    assert set(hs) == {v for v in range(16, 513) if v % 4 == 0}
    check_sizes(ep, rep, lambda v: (torch.randn(1, 3, v, 128),), ends(hs) + [100], [18, 98, 516])
    check_sizes(ep, rep, lambda v: (torch.randn(1, 3, 96, v),), ends(ws), [126, 516])
    assert runs(ep, torch.randn(8, 3, 96, 128)) and runs(ep, x)
    assert not runs(ep, torch.randn(9, 3, 96, 128))


def test_decoder_sequence_plus_one():
    torch.manual_seed(0)
    m = Decoder(max_len=64).eval()
    ids = torch.randint(0, 100, (2, 10))
    ds = {"ids": {0: Dim("batch", min=1, max=16), 1: Dim("seq", min=1, max=128)}}
    ep, rep = dimguard.export(m, (ids,), dynamic_shapes=ds)
    assert rep.exported and rep.rounds[0].outcome == "constraint_violation"
    seq = rep.accepted("ids", 1)
    # The sequence the blocks see is seq + 1 long and positions cover 64: seq <= 63.
    assert seq.max == 63
    bs = rep.accepted("ids", 0)
    check_sizes(ep, rep, lambda s: (torch.randint(0, 100, (2, s)),), ends(seq) + [10], [64, 100])
    check_sizes(ep, rep, lambda b: (torch.randint(0, 100, (b, 10)),), ends(bs), [17])


def test_nothing_works_raises_with_the_report():
    class Bad(torch.nn.Module):
        def forward(self, x):
            return x.view(-1, 7)

    with pytest.raises(dimguard.ExportError) as e:
        dimguard.export(Bad(), (torch.randn(3, 5),), dynamic_shapes={"x": {0: Dim("n", min=2, max=9)}}, max_rounds=2, verbose=False)
    assert e.value.report.exported is False
    assert e.value.report.rounds


def test_round_context_wraps_each_export(monkeypatch):
    import contextlib
    import sys

    dx = sys.modules["dimguard.export"]  # `dimguard.export` itself is the function

    seen = []

    @contextlib.contextmanager
    def spy(n):
        seen.append(n)
        yield

    monkeypatch.setattr(dx, "round_context", spy)
    m = ConvStack().eval()
    ep, rep = dimguard.export(m, (torch.randn(2, 3, 64, 48),), dynamic_shapes={"x": {2: Dim("h", min=32, max=512)}}, verbose=False)
    assert seen == [r.round for r in rep.rounds]


def test_check_of_a_program_in_memory_matches_the_saved_program(tmp_path):
    """The audit's fast path (inputs, ranges, guards only) gives the same accepted sets as the
    whole serialized program."""
    m = ConvStack().eval()
    x = torch.randn(2, 3, 64, 48)
    ep = torch.export.export(m, (x,), dynamic_shapes={"x": {2: Dim.AUTO(min=32, max=512)}})
    fast = dimguard.check(ep, full=False)
    full = dimguard.check(ep, full=True)
    path = tmp_path / "p.pt2"
    torch.export.save(ep, path)
    saved = dimguard.check(path)
    for a, b, c in zip(fast.dims, full.dims, saved.dims):
        assert a.accepted == b.accepted == c.accepted
        assert a.claimed.count == c.claimed.count
    d = fast.dims[0]
    assert d.accepted.count < d.claimed.count, "Dim.AUTO keeps the Mod guard as a run-time check"
    assert set(d.accepted) == {v for v in range(32, 513) if (((v - 1) // 4) - 1) % 2 == 0}


def test_linked_sizes_only_one_pair_works_export_it_static():
    """A conv-attention hybrid: a 7x7 position table after a /32 stem. torch exports it as
    `32*_h x 32*_w` for every batch, but only 224x224 runs: the audit finds the joint set, the
    spec becomes static 224x224 with the batch kept dynamic, and the program runs there."""
    torch.manual_seed(0)
    ds = {"x": {0: Dim("batch", min=1, max=32), 2: 32 * Dim("_h", min=1, max=16), 3: 32 * Dim("_w", min=1, max=16)}}
    ep, rep = dimguard.export(ConvAttention().eval(), (torch.randn(2, 3, 224, 224),), dynamic_shapes=ds)
    first = rep.rounds[0]
    assert first.outcome == "exported"
    assert any("accepts 1 (x[2], x[3]) pair, 224x224" in n for n in first.notes), first.notes
    assert "2: 224,  # _h: the returned program fixes it at 224" in rep.spec and "3: 224,  # _w: the returned program fixes it at 224" in rep.spec, rep.spec
    assert "batch = Dim('batch', min=1, max=32)" in rep.spec
    check_sizes(ep, rep, lambda b: (torch.randn(b, 3, 224, 224),), [1, 2, 32], [])
    check_sizes(ep, rep, lambda s: (torch.randn(2, 3, s, s),), [224], [192, 256])
    assert rep.accepts({"x": (5, 3, 224, 224)}) and not rep.accepts({"x": (5, 3, 256, 224)})


def test_linked_sizes_narrow_to_a_sound_box_through_the_example():
    """A relative-position table for an 8x8 grid: 56 (H, W) pairs work over 8..512. The largest
    sound box (61..64 x 13..16) leaves out the traced 32x32, which torch would refuse, so the
    spec narrows to a sound box through it; every corner runs, sizes outside raise."""
    torch.manual_seed(0)
    ds = {"x": {0: Dim("batch", min=1, max=32), 2: Dim("h", min=8, max=512), 3: Dim("w", min=8, max=512)}}
    ep, rep = dimguard.export(RelativePosition().eval(), (torch.randn(2, 3, 32, 32),), dynamic_shapes=ds)
    assert [r.outcome for r in rep.rounds] == ["exported", "exported"]
    assert any("accepts 56 (x[2], x[3]) pairs" in n for n in rep.rounds[0].notes)
    hs, ws = rep.accepted("x", 2), rep.accepted("x", 3)
    assert 32 in hs and 32 in ws
    for h in ends(hs):
        for w in ends(ws):
            for b in (1, 32):
                assert rep.accepts({"x": (b, 3, h, w)})
                assert runs(ep, torch.randn(b, 3, h, w)), (b, h, w)
    # A pair the original program accepts but the narrowed spec does not claim, and one outside.
    for h, w in [(64, 16), (hs.max + 1, ws.min)]:
        assert not rep.accepts({"x": (2, 3, h, w)})
        assert not runs(ep, torch.randn(2, 3, h, w)), (h, w)


def test_a_linked_group_takes_one_spec_for_all_its_sizes():
    """`check`'s corrected dynamic_shapes for two lengths linked by three guards, exported by
    torch with Dim.AUTO at (10, 11): read as Python runs it, every pair the spec admits passes
    the model's condition (brute force) and runs on the exported program, and torch re-exports
    with it. Before, one length took the shared Dim (2..10) and the other the box through the
    traced pair (9..11): (2, 11) was admitted and raised."""
    args = (torch.randn(10, 3), torch.randn(11, 3))
    ep = torch.export.export(NearDiagonal(), args, dynamic_shapes={"x": {0: Dim.AUTO}, "y": {0: Dim.AUTO}})
    rep = dimguard.check(ep)
    assert len(rep.joint) == 1, rep
    ns = {}
    exec(rep.dynamic_shapes, ns)
    spec = ns["dynamic_shapes"]

    def sizes(d):
        return [d] if isinstance(d, int) else list(range(d.min, d.max + 1))

    pairs = [(a, b) for a in sizes(spec["x"][0]) for b in sizes(spec["y"][0])]
    assert (10, 11) in pairs
    for a, b in pairs:
        assert a - b <= 1 and b - a <= 1 and a + b <= 21, (a, b, rep.dynamic_shapes)
        assert runs(ep, torch.randn(a, 3), torch.randn(b, 3)), (a, b)
        assert rep.accepts({"x": (a, 3), "y": (b, 3)})
    again = torch.export.export(NearDiagonal(), args, dynamic_shapes=spec)
    assert runs(again, *args)


def reexport(model, args, spec_code):
    """Executes a printed spec and exports with it in torch, inside the context it says to export
    in (``export_context``, where it keeps a size of 0 or 1 of the example dynamic); raises when
    torch refuses it."""
    import contextlib

    ns = {}
    exec(spec_code, ns)
    with ns.get("export_context") or contextlib.nullcontext():
        return torch.export.export(model, args, dynamic_shapes=ns["dynamic_shapes"])


def test_a_derived_spec_torch_would_specialize_is_written_so_it_exports():
    """W % 32 == 16: the sound spec is 32*_w + 16, which torch refuses when traced at 48 (its
    root would be 1: "You marked 32*_w + 16 as dynamic but your code specialized it to be a
    constant (48)", pytorch#176349). dimguard writes the same sizes as 32*_w - 16 with _w from 2:
    the traced 48 stays in, the batch the user gave stays 1..16, the printed spec re-exports, and
    the program runs at every size it accepts and raises at the others (brute force, 16..200)."""
    m = OddTiles().eval()
    x = torch.randn(2, 3, 4, 48)
    ds = {"x": {0: Dim("batch", min=1, max=16), 3: Dim("w", min=16, max=512)}}
    # What torch does with the plain form of the same sizes.
    with pytest.raises(Exception, match="specialized it to be a constant"):
        torch.export.export(m, (x,), dynamic_shapes={"x": {0: Dim("batch", min=1, max=16), 3: 32 * Dim("_w", min=1, max=15) + 16}})
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ds)
    assert rep.rounds[-1].outcome == "exported"
    assert "32*_w - 16" in rep.spec and "batch = Dim('batch', min=1, max=16)" in rep.spec, rep.spec
    ws = rep.accepted("x", 3)
    assert 48 in ws and ws.min == 48 and ws.max == 496
    assert list(rep.accepted("x", 0)) == list(range(1, 17))
    for w in range(16, 201):
        ok = w % 32 == 16 and w >= 48
        assert rep.accepts({"x": (2, 3, 4, w)}) == ok, w
        assert runs(ep, torch.randn(2, 3, 4, w)) == ok, w
    assert runs(ep, torch.randn(1, 3, 4, 48)) and runs(ep, torch.randn(16, 3, 4, 496))
    again = reexport(m, (x,), rep.spec)
    assert runs(again, x) and runs(again, torch.randn(1, 3, 4, 80))


def test_a_batch_traced_at_1_stays_dynamic_and_the_program_takes_its_example():
    """Traced at batch 1, torch specializes the batch (0/1 specialization) and the spec 1..16
    used to become static. dimguard exports at batch 1 under torch 2.15's backed_size_oblivious
    instead: the batch keeps the user's 1..16, the user's own example runs on the returned
    program, and the spec, exported in the context it names, re-exports with that example."""
    m = ConvStack().eval()
    x = torch.randn(1, 3, 64, 48)
    ds = {"x": {0: Dim("batch", min=1, max=16), 2: Dim("h", min=32, max=512), 3: Dim("w", min=32, max=512)}}
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ds)
    assert any("x[0]: a size of 0 or 1 in your example, kept dynamic" in n for r in rep.rounds for n in r.notes)
    assert rep.to_dict()["export_context"] == "torch.fx.experimental._config.patch(backed_size_oblivious=True)"
    assert "batch = Dim('batch', min=1, max=16)" in rep.spec, rep.spec
    assert list(rep.accepted("x", 0)) == list(range(1, 17))
    assert runs(ep, x) and rep.accepts({"x": tuple(x.shape)})
    assert runs(ep, torch.randn(16, 3, 64, 48))
    hs = rep.accepted("x", 2)
    for h in range(32, 100):
        if h in hs:
            assert runs(ep, torch.randn(1, 3, h, 48)), h
    assert not any("could not be read" in n for r in rep.rounds for n in r.notes), rep
    # Traced at the user's own example, and re-exported with it.
    own = ep.example_inputs[0]
    assert tuple(own[0].shape) == (1, 3, 64, 48)
    again = reexport(m, (x,), rep.spec)
    assert runs(again, x) and runs(again, torch.randn(16, 3, 64, 48))


def test_a_derived_size_torch_specializes_at_the_bound_is_traced_inside_and_nothing_else_changes(monkeypatch):
    """torch's "You marked 32*_w + 16 as dynamic but your code specialized it to be a constant
    (48)" (pytorch#176349: the example sits on the bound of the root). The loop normally never
    traces there (the root is written to start at 2); here that step is switched off and the first
    round traces at the user's 48, so torch raises it for real. dimguard reads it: the spec stays
    (no Dim.AUTO, the batch the user gave stays Dim('batch', 1..16)), the next round traces
    inside the root's range, and where the program claims less than the spec the report says so."""
    ex = sys.modules["dimguard.export"]
    choose = ex._choose_point

    def on_the_bound(sheet, traced, inside=(), small=()):
        if inside:
            return choose(sheet, traced, inside, small)
        point, _ = choose(sheet, traced, (), small)
        return {k: traced[k[0]][k[1]] for k in point}, []

    monkeypatch.setattr(ex, "_torch_form", lambda s: (s, []))
    monkeypatch.setattr(ex, "_choose_point", on_the_bound)
    m = OddTiles().eval()
    x = torch.randn(2, 3, 4, 48)
    ds = {"x": {0: Dim("batch", min=1, max=16), 3: 32 * Dim("_w", min=1, max=15) + 16}}
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ds)
    first, last = rep.rounds[0], rep.rounds[-1]
    assert first.outcome == "constraint_violation", first
    assert any("torch specialized 32*_w + 16 at 48" in n and "bound of _w" in n for n in first.notes), first.notes
    assert last.outcome == "exported" and len(rep.rounds) == 2
    w_traced = last.example["x"][3]
    assert w_traced > 80 and w_traced % 32 == 16, last.example
    assert "Dim.AUTO" not in rep.spec and "batch = Dim('batch', min=1, max=16)" in rep.spec and "32*_w + 16" in rep.spec, rep.spec
    assert list(rep.accepted("x", 0)) == list(range(1, 17))
    # torch's program starts _w at 2: the spec's 48 is not claimed, and the report says so.
    ws = rep.accepted("x", 3)
    assert 48 not in ws and ws.min == 80 and ws.max == 496
    assert any(line.startswith("x[3]: the spec takes 15 sizes in 48..496") for line in rep.spec_vs_program), rep.spec_vs_program
    # The user's own 48 is out of what the program claims, but the program runs there (torch
    # checks no minimum of 2 or less: _w = 1 passes): accepts is what the program does.
    assert runs(ep, x) and rep.accepts({"x": (2, 3, 4, 48)})
    for w in (80, 81, 112, 496, 497):
        assert runs(ep, torch.randn(1, 3, 4, w)) == (w in ws), w
        assert rep.accepts({"x": (1, 3, 4, w)}) == (w in ws), w


def test_the_dims_torch_names_are_found_by_dim_name_derived_root_or_source():
    """When dimguard cannot act on an error it turns the dims torch names into Dim.AUTO, never
    every dim. torch names a derived size by its expression (`32*_w + 16`, no Dim of that name)
    or by its source: both lead to the root `_w`, and the batch torch did not name is not in it."""
    ex = sys.modules["dimguard.export"]
    m = OddTiles().eval()
    x = torch.randn(2, 3, 4, 48)
    ds = {"x": {0: Dim("batch", min=1, max=16), 3: 32 * Dim("_w", min=1, max=15) + 16}}
    with pytest.raises(Exception) as info:
        torch.export.export(m, (x,), dynamic_shapes=ds)
    text = dimguard._text(info.value)
    assert "You marked 32*_w + 16 as dynamic" in text, text
    sheet = ex._Layout(ds, ["x"]).sheet()
    assert ex._named_roots(sheet, text) == ["_w"]
    assert ex._marked_constant(text) == [("32*_w + 16", 48)]
    assert ex._named_roots(sheet, "Not all values of L['x'].size()[3] satisfy") == ["_w"]
    assert ex._named_roots(sheet, "Could not guard on L['x'].size()[0]") == ["batch"]
    assert ex._named_roots(sheet, "Constraints violated! something else") == []
    # The fallback keeps what torch did not name.
    auto = ex._auto(sheet, ex._named_roots(sheet, text))
    kinds = {(e["input"], e["index"]): e["value"]["kind"] for e in auto["entries"]}
    assert kinds == {("x", 0): "dim", ("x", 3): "auto"}


class PatchStages(nn.Module):
    """mobilevit's shape rule in small: stride-2 convs (padding 1: ceil(H/2) each), each of the
    last two followed by a split into 2x2 patches, which needs an even size there. Valid H:
    ceil(H/4) and ceil(H/8) even, i.e. H mod 16 in {9..15, 0}: 7 of every 16 sizes, in runs
    that end on a multiple of 16 (timm's mobilevit_xxs: H mod 64 in {57..63, 0})."""

    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(3 if i == 0 else 4, 4, 3, stride=2, padding=1) for i in range(3))

    def forward(self, x):
        for i, c in enumerate(self.convs):
            x = c(x)
            if i >= 1:
                B, C, H, W = x.shape
                x = x.reshape(B, C, H // 2, 2, W // 2, 2).permute(0, 1, 3, 5, 2, 4).reshape(B, C, H, W)
        return x.mean((2, 3))


def test_a_patch_model_keeps_the_traced_size_the_batch_and_the_names():
    """The mobilevit case of issue 24 in small (timm's real run: tests/data/export_real/mvit.json).
    dimguard keeps H and W at the sets the program accepts, which hold the traced 64, keeps the batch the user gave
    (traced at 1: the round traces at 2 and the batch stays 1..16) and the names h, w; the program
    runs its own example and the user's, and at every H of 32..128 it runs where the report
    accepts and never where the model cannot (brute force)."""
    nn_ = PatchStages().eval()
    x = torch.randn(1, 3, 64, 64)
    ds = {"x": {0: Dim("batch", min=1, max=16), 2: Dim("h", min=32, max=128), 3: Dim("w", min=32, max=128)}}
    ep, rep = dimguard.export(nn_, (x,), dynamic_shapes=ds)
    assert rep.rounds[-1].outcome == "exported"
    # One round: its program accepts H and W 0, 13, 14, 15 (mod 16) of 32..128, 25 sizes each,
    # exactly; the largest sound progression (step 16, 7 sizes) would give 18 of them up, so the
    # loop keeps the program (issue 43: keep what torch allows). Before: narrowed to step 16.
    assert len(rep.rounds) == 1, [(r.outcome, r.notes) for r in rep.rounds]
    assert len(rep.accepted("x", 2)) > len(range(32, 129, 16)), sorted(rep.accepted("x", 2))
    assert "batch = Dim('batch', min=1, max=16)" in rep.spec and "Dim.AUTO" not in rep.spec, rep.spec
    assert re.search(r"^h = ", rep.spec, re.M) and re.search(r"^w = ", rep.spec, re.M), rep.spec
    assert not re.search(r"\bs\d+\b", rep.spec), rep.spec
    assert runs(ep, x) and rep.accepts({"x": (1, 3, 64, 64)})
    assert runs(ep, *ep.example_inputs[0])
    valid = {h for h in range(32, 129) if h % 16 in set(range(9, 16)) | {0}}
    hs = rep.accepted("x", 2)
    assert 64 in hs and set(hs) <= valid, sorted(hs)
    for h in range(32, 129):
        ran = runs(ep, torch.randn(1, 3, h, 64))
        assert rep.accepts({"x": (1, 3, h, 64)}) == (h in hs), h
        # Sound: what the report accepts runs, and no size the model cannot take runs. (A valid
        # size outside the derived spec, 61 with h = 16*_h, runs too: torch does not check the
        # divisibility at run time.)
        assert ran if h in hs else (ran <= (h in valid)), h
    assert list(rep.accepted("x", 0)) == list(range(1, 17))
    assert runs(ep, torch.randn(16, 3, 64, 64))


def test_a_size_linked_only_to_sizes_that_become_static_is_not_narrowed_that_round():
    """A Swin (transformers, tools/export_real.py) exported with H, W in {224, 448}: the audit
    linked the batch to H, W through a guard that ruled out batch 1 at 224x224, and the loop
    narrowed the user's batch 1..16 to 2..16 while making H, W static, although the next program
    (H, W static) runs at batch 1. The batch now waits for the next round's audit; H, W still go
    static, and a size linked to a partner that stays dynamic is still narrowed."""
    from dimguard.export import _defer_linked_to_static

    def dim(i, linked):
        return {"input": "x", "index": i, "source": f"L['x'].size()[{i}]", "linked_with": [f"L['x'].size()[{j}]" for j in linked]}

    def narrow(i, lo, hi):
        return {"input": "x", "index": i, "name": f"x_{i}", "lo": lo, "hi": hi, "modulus": 1, "residue": 0}

    audit = {"dims": [dim(0, [2, 3]), dim(2, [0, 3]), dim(3, [0, 2])]}
    notes = []
    short = [narrow(0, 2, 16), narrow(2, 224, 224), narrow(3, 224, 224)]
    kept = _defer_linked_to_static(audit, short, notes)
    assert [e["index"] for e in kept] == [2, 3], kept
    assert any("x[0]: not narrowed this round" in n for n in notes), notes
    # H stays dynamic (224..448): the batch's narrowing stands.
    notes = []
    short = [narrow(0, 2, 16), narrow(2, 224, 448), narrow(3, 224, 224)]
    assert _defer_linked_to_static(audit, short, notes) == short and not notes


def test_narrowed_says_undecided_where_the_program_s_answer_is_undecided():
    """``report.narrowed`` for a plain Dim whose audit decided nothing (``accepted`` empty, every
    claimed size in ``undecided``) says undecided, never "accepts 0 of 449"; where part is
    decided, it counts the accepted sizes and the undecided ones apart. A decided shortfall reads
    as before."""
    from dimguard.export import _Layout, _narrowed, _named_entries

    user = _Layout({"x": {2: Dim("h", min=64, max=512)}}, ["x"]).sheet()

    def seg(lo, hi):
        return {"count": hi - lo + 1, "min": lo, "max": hi, "segments": [{"lo": lo, "hi": hi, "modulus": 1, "residues": [0]}]}

    def audit(accepted, undecided=None):
        d = {"input": "x", "index": 2, "source": "L['x'].size()[2]", "claimed": seg(64, 512), "accepted": accepted}
        if undecided is not None:
            d["undecided"] = {**undecided, "reason": "a run-time assert over a value read from data"}
        return {"dims": [d]}

    empty = {"count": 0, "min": None, "max": None, "segments": []}
    [n] = _narrowed(user, [], audit(empty, seg(64, 512)), [])
    assert (n["kept"], n["undecided"], n["of"]) == (0, 449, 449), n
    assert "accepts 0" not in n["why"] and "undecided at 449" in n["why"] and "run-time assert" in n["why"], n["why"]
    [n] = _narrowed(user, [], audit(seg(64, 128), seg(129, 512)), [])
    assert (n["kept"], n["undecided"]) == (65, 384), n
    assert "accepts 65 of them and is undecided at 384" in n["why"], n["why"]
    final = _named_entries({**user, "entries": [{**user["entries"][0], "value": {"kind": "auto", "min": 64, "max": 512}}]}, {("x", 2): "h"}, [], [n], {})
    assert "accepts 65 of the 449 sizes asked for and is undecided at 384" in final["entries"][0]["comment"], final
    [n] = _narrowed(user, [], audit(seg(64, 128)), [])
    assert (n["kept"], n["undecided"]) == (65, 0) and "accepts 65 of them (" in n["why"], n
    assert _narrowed(user, [], audit(seg(64, 512)), []) == []


class BatchTiedAttention(ConvAttention):
    """ConvAttention with a branch on `batch * h * w == 49` (one image of 7x7 tokens; both
    branches compute the same): traced at batch 2, torch records a guard linking the batch to
    H and W that rules out batch 1 at 224x224, and drops it once H and W are static."""

    def forward(self, x):
        y = self.stem(x)
        b, _, h, w = y.shape
        if b * h * w == 49:
            y = y + 0.0
        t = y.flatten(2).transpose(1, 2) + self.pos
        t, _ = self.attn(t, t, t)
        return t.mean(1)


class BatchTiedPatches(nn.Module):
    """hf_swin's shape on a small model, plain ``Dim``: 32x32 patches (``H % 32 == 0``: the only
    guards torch's error prints), a 7x7 position table (``(H // 32) * (W // 32) == 49``, a guard
    over H and W together that the error leaves out) and a branch on ``batch * tokens == 49``
    (both branches compute the same) that, traced at batch 2, ties the batch to H and W."""

    def __init__(self, c=16):
        super().__init__()
        self.proj = nn.Linear(3 * 32 * 32, c)
        self.pos = nn.Parameter(torch.zeros(49, c))
        self.attn = nn.MultiheadAttention(c, 2, batch_first=True)

    def forward(self, x):
        b, c, h, w = x.shape
        t = x.view(b, c, h // 32, 32, w // 32, 32).permute(0, 2, 4, 1, 3, 5).reshape(b, (h // 32) * (w // 32), c * 32 * 32)
        t = self.proj(t)
        if b * t.shape[1] == 49:
            t = t + 0.0
        t = t + self.pos
        t, _ = self.attn(t, t, t)
        return t.mean(1)


@pytest.mark.parametrize(
    "model, ds, outcomes",
    [
        # Derived sizes: round 1 exports; its audit makes H, W static and leaves the batch alone.
        (BatchTiedAttention, {"x": {0: Dim("batch", min=1, max=32), 2: 32 * Dim("_h", min=1, max=16), 3: 32 * Dim("_w", min=1, max=16)}}, ["exported", "exported"]),
        # Plain Dims (hf_swin's case): round 1 fails; its error's guards allow H, W in 64..512
        # step 32, its whole trace only 224x224 with the batch tied to them. Decided at once from
        # the trace, round 2 is the static program at batch 1..16 (3 rounds before).
        (BatchTiedPatches, {"x": {0: Dim("batch", min=1, max=16), 2: Dim("h", min=64, max=512), 3: Dim("w", min=64, max=512)}}, ["constraint_violation", "exported"]),
    ],
    ids=["derived", "plain_dim"],
)
def test_a_batch_linked_to_sizes_that_become_static_keeps_the_users_range(model, ds, outcomes):
    """Only 224x224 runs, and the traced guards tie the batch to H and W: H and W go static, the
    batch keeps the user's range (batch 1 included: the static program runs it), in at most two
    rounds; the program runs at every sampled size the report accepts, with the eager model's
    results, and raises at every size it rejects."""
    torch.manual_seed(0)
    model = model().eval()
    ep, rep = dimguard.export(model, (torch.randn(2, 3, 224, 224),), dynamic_shapes=ds, verbose=False)
    assert [r.outcome for r in rep.rounds] == outcomes, [(r.outcome, r.notes) for r in rep.rounds]
    hi = ds["x"][0].max
    assert "2: 224,  # " in rep.spec and "3: 224,  # " in rep.spec, rep.spec
    assert f"batch = Dim('batch', min=1, max={hi})" in rep.spec, rep.spec
    seen = {True: 0, False: 0}
    for b in (1, 2, hi, hi + 1):
        for h, w in ((224, 224), (192, 224), (224, 256), (448, 448), (512, 512), (64, 64)):
            x = torch.randn(b, 3, h, w)
            acc = rep.accepts({"x": tuple(x.shape)})
            assert runs(ep, x) is acc, (tuple(x.shape), acc)
            if acc:
                assert torch.allclose(ep.module()(x), model(x), atol=1e-5), tuple(x.shape)
            seen[acc] += 1
    assert seen[True] == 3 and seen[False] == 21, seen


def test_torch_refusing_the_example_itself_is_read_as_that():
    """torch 2.15's refusal of an example outside the spec it was given ("256 not in range [121,
    128]", raised here for real) is read as the example's size and the spec's range (the loop then
    says so and changes nothing), not as an error it cannot read."""
    ex = sys.modules["dimguard.export"]

    class Double(nn.Module):
        def forward(self, x):
            return x * 2

    with pytest.raises(Exception) as info:
        torch.export.export(Double(), (torch.randn(1, 3, 256, 8),), dynamic_shapes={"x": {2: Dim("h", min=121, max=128)}})
    text = dimguard._text(info.value)
    assert ex._range_error(text) == (256, 121, 128), text
    assert ex._range_error("Not all values of h = L['x'].size()[2] in the specified range satisfy") is None
