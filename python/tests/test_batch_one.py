"""Issue 43: a user's example with batch 1 (the size torch specializes) under a spec whose batch
starts at 1. The printed spec re-exports with that very example, in both APIs: for plain ``Dim``
it says to export inside ``export_context`` (torch 2.15's ``backed_size_oblivious``), the
context every round of ``dimguard.export`` ran in. Family: real torchvision and timm models
(MobileNetV3, EfficientNet) × both APIs; the oracle is the eager model: the re-exported program
run at every corner of the printed spec's box equals eager there, and ``report.accepts`` is what
the returned program does at the corners and just outside them."""

import contextlib
import itertools

import pytest
import torch

import dimguard

# Small ranges: the corners run on CPU in CI.
BATCH = (1, 4)
SIDE = (64, 96)


def _tv(name):
    import torchvision

    return getattr(torchvision.models, name)(weights=None)


def _timm(name):
    import timm

    return timm.create_model(name, pretrained=False)


MODELS = {
    "mobilenet_v3_small": lambda: _tv("mobilenet_v3_small"),
    "efficientnet_b0": lambda: _tv("efficientnet_b0"),
    "timm_mobilenetv3_small_050": lambda: _timm("mobilenetv3_small_050"),
}


def spec_for(api):
    if api == "dim":
        from torch.export import Dim

        return {"x": {0: Dim("batch", min=BATCH[0], max=BATCH[1]), 2: Dim("h", min=SIDE[0], max=SIDE[1]), 3: Dim("w", min=SIDE[0], max=SIDE[1])}}
    from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec

    return ShapesSpec({"x": TensorSpec([ShapeVar("batch", min=BATCH[0], max=BATCH[1]), 3, ShapeVar("h", min=SIDE[0], max=SIDE[1]), ShapeVar("w", min=SIDE[0], max=SIDE[1])])})


def same(a, b):
    return a.shape == b.shape and torch.allclose(a, b, atol=1e-4, rtol=1e-3)


def runs(module, x):
    try:
        with torch.no_grad():
            return module(x)
    except Exception:  # noqa: BLE001 - any refusal counts
        return None


@pytest.mark.parametrize("api", ["dim", "spec"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_batch_one_example_keeps_batch_dynamic_and_the_printed_spec_reexports_with_it(name, api):
    torch.manual_seed(0)
    model = MODELS[name]().eval()
    x = torch.randn(1, 3, 80, 80)
    with torch.no_grad():
        ep, rep = dimguard.export(model, (x,), dynamic_shapes=spec_for(api), verbose=False)
    # The example is decided and accepted, and the batch keeps the user's whole range.
    assert rep.accepts({"x": [1, 3, 80, 80]}) is True, rep
    assert [v for v in rep.accepted("x", 0) if v <= 64] == list(range(BATCH[0], BATCH[1] + 1)), rep
    # Plain Dim: the spec says which context to export in (it is the one the rounds used).
    d = rep.to_dict()
    assert (d["export_context"] is not None) == (api == "dim"), d["export_context"]
    ns = {}
    exec(rep.spec, ns)  # noqa: S102 - dimguard's printed spec
    assert ("export_context" in ns) == (api == "dim"), rep.spec
    with torch.no_grad(), ns.get("export_context") or contextlib.nullcontext():
        again = torch.export.export(model, (x,), dynamic_shapes=ns["dynamic_shapes"])
    # The re-exported program and the returned one at every corner of the box (and the example):
    # equal to eager, and accepted by the report.
    for b, h, w in itertools.chain([(1, 80, 80)], itertools.product(BATCH, SIDE, SIDE)):
        y = torch.randn(b, 3, h, w)
        with torch.no_grad():
            want = model(y)
        for prog in (again, ep):
            got = runs(prog.module(), y)
            assert got is not None and same(got, want), (name, api, (b, h, w))
        assert rep.accepts({"x": [b, 3, h, w]}) is True, (b, h, w)
    # Just outside the box: the report says no, and the program refuses.
    for b, h, w in ((BATCH[1] + 1, 64, 64), (1, SIDE[0] - 1, 64), (1, 64, SIDE[1] + 1)):
        assert rep.accepts({"x": [b, 3, h, w]}) is False, (b, h, w)
        assert runs(ep.module(), torch.randn(b, 3, h, w)) is None, (b, h, w)


class _MobileVitV2Stem(torch.nn.Module):
    """A convolution and timm's own ``MobileVitV2Block`` (timm ``mobilevitv2_050``'s block, small
    channels): at a batch of 1, even under ``backed_size_oblivious``, torch's trace fixes the batch
    (its whole guard set holds ``Eq(batch, 1)``), and its ``math.ceil`` patch grid narrows H, W."""

    def __init__(self):
        super().__init__()
        from timm.models.mobilevit import MobileVitV2Block

        self.stem = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.block = MobileVitV2Block(16, 16, transformer_depth=1, patch_size=2)

    def forward(self, x):
        return self.block(self.stem(x))


def test_a_batch_one_that_torch_fixes_even_under_oblivious_is_traced_at_two_inside_it_and_the_spec_says_so():
    """Issue 43 (timm ``mobilevitv2_050``, plain ``Dim``): the batch torch fixes at the example's 1
    even under ``backed_size_oblivious`` is traced at 2 *inside* that context (outside it, torch's
    export of that model ran past 15 minutes), and the printed spec names the sizes to export at
    (``export_shapes``) with the context: pasted as it says, it re-exports, and the re-exported and
    the returned program equal eager at every corner of the box the report accepts, batch 1 among
    them. Before, the round traced at 2 outside the context, and the printed spec, pasted with the
    user's batch-1 example, did not re-export (torch specialized the batch)."""
    torch.manual_seed(0)
    model = _MobileVitV2Stem().eval()
    x = torch.randn(1, 3, 40, 40)
    from torch.export import Dim

    spec = {"x": {0: Dim("batch", min=1, max=4), 2: Dim("h", min=32, max=48), 3: Dim("w", min=32, max=48)}}
    with torch.no_grad():
        ep, rep = dimguard.export(model, (x,), dynamic_shapes=spec, verbose=False)
    d = rep.to_dict()
    assert rep.accepts({"x": [1, 3, 40, 40]}) is True, rep
    assert list(rep.accepted("x", 0)) == [1, 2, 3, 4], rep
    sides = list(rep.accepted("x", 2))
    assert 40 in sides and sides == list(rep.accepted("x", 3)), rep
    # Pasted as printed: in the context it names, at the sizes it names.
    ns = {}
    exec(rep.spec, ns)  # noqa: S102 - dimguard's printed spec
    assert d["export_context"] is not None and ns.get("export_context") is not None, rep.spec
    shapes = ns.get("export_shapes") or {"x": [1, 3, 40, 40]}
    assert shapes == d["export_shapes"], (shapes, d["export_shapes"])
    with torch.no_grad(), ns["export_context"]:
        again = torch.export.export(model, (torch.randn(*shapes["x"]),), dynamic_shapes=ns["dynamic_shapes"])
    for b, h, w in itertools.product((1, 4), (sides[0], sides[-1]), (sides[0], sides[-1])):
        y = torch.randn(b, 3, h, w)
        with torch.no_grad():
            want = model(y)
        for prog in (again, ep):
            got = runs(prog.module(), y)
            assert got is not None and same(got, want), (b, h, w)
        assert rep.accepts({"x": [b, 3, h, w]}) is True, (b, h, w)
    # A side the report rejects: the program refuses it too.
    off = next(v for v in range(33, 48) if v not in sides)
    assert rep.accepts({"x": [1, 3, off, 40]}) is False
    assert runs(ep.module(), torch.randn(1, 3, off, 40)) is None
