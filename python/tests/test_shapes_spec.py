"""``dimguard.export`` with torch 2.15's ShapesSpec, and ``dimguard.diagnose`` of its
data-dependent failures. The models are those of tests/data/forms/shapesspec/make.py (which made
the committed messages). Every printed ShapesSpec is executed and re-exported with torch, and the
program is run at the ends of its range and at every size of a small window, against what the
report says."""

import pathlib
import sys

import pytest
import torch
from torch.fx.experimental.dynamic_spec import ParamsSpec, ShapesSpec, ShapeVar, TensorSpec, dynamic_spec

import dimguard

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "data" / "forms" / "shapesspec"))
from make import Checked, Stem, Swin, TwoInputs  # noqa: E402  (the fixtures' models)


def image_vars(lo):
    return ShapeVar("B", min=1, max=8), ShapeVar("H", min=lo, max=1024), ShapeVar("W", min=lo, max=1024)


def reexport(model, args, code):
    """Executes a printed ShapesSpec and exports with it: torch must accept it as is."""
    ns = {}
    exec(code, ns)  # noqa: S102 - the spec dimguard printed
    return torch.export.export(model, args, dynamic_shapes=ns["dynamic_shapes"])


def runs(ep, *shape):
    try:
        ep.module()(torch.randn(*shape))
        return True
    except Exception:  # noqa: BLE001 - a run-time assert of the program
        return False


def test_ceil_mode_cnn_assumptions_remove_nothing():
    m = Stem().eval()
    args = (torch.randn(2, 3, 224, 224),)
    B, H, W = image_vars(96)
    ep, rep = dimguard.export(m, args, dynamic_shapes=ShapesSpec({"x": TensorSpec([B, 3, H, W])}), verbose=False)
    assert rep.exported
    # One traced pass meets both expressions (H's and W's); both are decided at once.
    assert [r["outcome"] for r in rep.rounds] == ["data_dependent", "exported"]
    # One assumption per size, each false at every size of the range in torch's branch: it costs nothing.
    assert [a["code"] for a in rep.assumptions] == [
        "2*(((H - 3) // 2 - 1) // 2) < (H - 3) // 2 + 1",
        "2*(((W - 3) // 2 - 1) // 2) < (W - 3) // 2 + 1",
    ]
    assert all("removes nothing" in a["note"] for a in rep.assumptions)
    assert len(rep.rounds[0]["diagnosis"]["data_dependent"]) == 2
    for d in rep.rounds[0]["diagnosis"]["data_dependent"]:
        assert d["always"] is False and d["removes"] == 0 and d["when_true"]["count"] == 0
        # Brute force over the expression: false at every size of the range.
        assert not any(2 * (((h - 3) // 2 - 1) // 2) >= (h - 3) // 2 + 1 for h in range(96, 1025))
    # The printed spec exports in torch as it is, and the program runs at both range ends.
    again = reexport(m, args, rep.spec)
    for prog in (ep, again):
        for b in (1, 8):
            for h in (96, 1024):
                assert runs(prog, b, 3, h, 1024 + 96 - h)
    # Every size of a window: the program runs, as the report says.
    for h in range(96, 140):
        assert runs(ep, 1, 3, h, 97)
        assert rep.accepts({"x": [1, 3, h, 97]})
    assert rep.accepts({"x": [8, 3, 1024, 96]})


def test_params_spec_and_dynamic_spec_decorator():
    args = (torch.randn(2, 3, 224, 224),)
    B, H, W = image_vars(96)
    _, rep = dimguard.export(Stem().eval(), args, dynamic_shapes=ParamsSpec({"x": TensorSpec([B, 3, H, W])}), verbose=False)
    assert len(rep.assumptions) == 2

    B2, H2, W2 = image_vars(96)

    class Decorated(Stem):
        @dynamic_spec(ShapesSpec({"x": TensorSpec([B2, 3, H2, W2])}))
        def forward(self, x):
            return super().forward(x)

    m = Decorated().eval()
    ep, rep2 = dimguard.export(m, args, verbose=False)
    assert [a["code"] for a in rep2.assumptions] == [a["code"] for a in rep.assumptions]
    # The decorator is back in place, and the printed spec re-exports.
    assert getattr(Decorated.forward, "_dynamic_spec", None) is not None
    assert runs(ep, 8, 3, 1024, 96)
    assert runs(reexport(Stem().eval(), args, rep2.spec), 1, 3, 96, 1024)


def test_window_padding_takes_the_example_branch_and_says_its_cost():
    m = Swin().eval()
    args = (torch.randn(2, 3, 224, 224),)
    B, H, W = image_vars(16)
    ep, rep = dimguard.export(m, args, dynamic_shapes=ShapesSpec({"x": TensorSpec([B, 3, H, W])}), verbose=False)
    assert rep.exported
    # The padded window test is true only for H in 16..31 (brute force), so the branch the
    # traced 224 takes removes those 16 sizes of H (and of W).
    true_at = [h for h in range(16, 1025) if h // 4 + (7 - (h // 4) % 7) % 7 <= 7]
    assert true_at == list(range(16, 32))
    first = rep.rounds[0]["diagnosis"]["data_dependent"][0]
    assert first["always"] is None and first["example"] == 224 and first["example_branch"] is False
    assert first["removes"] == 16 and first["when_true"]["count"] == 16
    assert "removes 16 of the 1009 sizes" in rep.assumptions[0]["note"]
    # The program rejects exactly the removed sizes and runs the rest (a window of H).
    for h in range(16, 40):
        assert runs(ep, 1, 3, h, 224) == (h >= 32), h
        assert rep.accepts({"x": [1, 3, h, 224]}) == (h >= 32), h
    again = reexport(m, args, rep.spec)
    assert runs(again, 1, 3, 32, 1024) and runs(again, 8, 3, 1024, 32)
    assert not runs(again, 1, 3, 31, 224)


def test_own_torch_check():
    m = Checked()
    B, N = ShapeVar("B", min=1, max=8), ShapeVar("N", min=8, max=512)
    ep, rep = dimguard.export(m, (torch.randn(2, 64),), dynamic_shapes=ShapesSpec({"x": TensorSpec([B, N])}), verbose=False)
    assert [a["code"] for a in rep.assumptions] == ["N // 8 <= 16"]
    d = rep.rounds[0]["diagnosis"]["data_dependent"][0]
    assert d["removes"] == sum(1 for n in range(8, 513) if n // 8 > 16)
    for n in range(8, 200):
        assert runs(ep, 2, n) == (n % 8 == 0 and n // 8 <= 16), n
    assert runs(reexport(m, (torch.randn(2, 64),), rep.spec), 1, 128)


def test_diagnose_reads_the_shapes_spec_failure():
    text = (ROOT / "tests/data/forms/shapesspec/cnn.exception.txt").read_text()
    r = dimguard.diagnose(text, 224, ranges={"x.shape[2]": (96, 1024)})
    d = r.data_dependent[0]
    assert r.form == "data_dependent" and d["source"] == "x.shape[2]" and d["always"] is False
    assert "ShapesSpec" in r.dynamic_shapes and "assumptions = [" in r.dynamic_shapes
    assert "1 data-dependent" in repr(r) and "false at every size of 96..1024" in repr(r)


def test_a_derived_slot_without_its_bare_var_is_refused_before_export():
    B, H, W = image_vars(96)
    Hk = ShapeVar("Hk", min=3, max=32)
    spec = ShapesSpec({"x": TensorSpec([B, 3, 32 * Hk, W])})
    with pytest.raises(Exception, match="bare"):
        torch.export.export(Stem().eval(), (torch.randn(2, 3, 224, 224),), dynamic_shapes=spec)


def test_printed_blocks_export_in_torch():
    """The paste blocks of ``diagnose`` (your ShapesSpec given, or not) are taken by torch: the
    expression of the message is decided, and the export goes on to the next one (W's)."""
    text = (ROOT / "tests/data/forms/shapesspec/cnn.exception.txt").read_text()
    args = (torch.randn(2, 3, 224, 224),)
    spec = (
        "from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec\n"
        'B = ShapeVar("B", min=1, max=8)\nH = ShapeVar("H", min=96, max=1024)\nW = ShapeVar("W", min=96, max=1024)\n'
        'dynamic_shapes = ShapesSpec({"x": TensorSpec([B, 3, H, W])})\n'
    )
    r = dimguard.diagnose(text, 224, spec=spec)
    with pytest.raises(Exception, match=r"data-dependent expression .*u2"):
        reexport(Stem().eval(), args, r.dynamic_shapes)
    r2 = dimguard.diagnose(text, 224, ranges={"u1": (96, 1024)})
    ns = {}
    exec(r2.dynamic_shapes, ns)  # noqa: S102 - the block dimguard printed
    B, _, W = image_vars(96)
    full = ShapesSpec({"x": TensorSpec([B, 3, ns["x_2"], W])}, assumptions=ns["assumptions"])
    with pytest.raises(Exception, match=r"data-dependent expression .*u2"):
        torch.export.export(Stem().eval(), args, dynamic_shapes=full)


def test_a_branch_on_two_inputs():
    B, N, M = ShapeVar("B", min=1, max=8), ShapeVar("N", min=2, max=64), ShapeVar("M", min=1, max=64)
    args = (torch.randn(2, 17), torch.randn(2, 16))
    spec = ShapesSpec({"x": TensorSpec([B, N]), "y": TensorSpec([B, M])})
    ep, rep = dimguard.export(TwoInputs(), args, dynamic_shapes=spec, verbose=False)
    assert [a["code"] for a in rep.assumptions] == ["N < 2*M"]
    d = rep.rounds[0]["diagnosis"]["data_dependent"][0]
    # Brute force over the box: the traced (17, 16) takes the false branch, which removes the
    # combinations where N >= 2*M.
    assert d["removes"] == sum(1 for n in range(2, 65) for m in range(1, 65) if n >= 2 * m) == 1024
    for n in range(2, 20):
        for m in range(1, 12):
            shapes = {"x": [2, n], "y": [2, m]}
            try:
                ep.module()(torch.randn(2, n), torch.randn(2, m))
                ran = True
            except Exception:  # noqa: BLE001 - the program's run-time assert
                ran = False
            assert ran == (n < 2 * m) == rep.accepts(shapes), (n, m)
    again = reexport(TwoInputs(), args, rep.spec)
    again.module()(torch.randn(1, 2), torch.randn(1, 64))
    again.module()(torch.randn(8, 64), torch.randn(8, 64))
