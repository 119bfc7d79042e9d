"""The spec ``dimguard check`` prints for each composed torch 2.15 program of issue 34
(tests/data/pt2/<name>_composed.pt2, made by tools/export_composed.py with ``Dim.AUTO`` and no
bounds) re-exports in torch 2.15 with the same model, and the program runs at every corner of the
spec (each root at its minimum and far up its range); ``accepts`` says so too. A spec that
dropped a dynamic size, or tied sizes the program does not tie, fails here."""

import importlib.util
import pathlib

import pytest
import torch

import dimguard
from reexport import corners, entries, runs

ROOT = pathlib.Path(__file__).resolve().parents[2]
PT2 = ROOT / "tests" / "data" / "pt2"


def _tool():
    spec = importlib.util.spec_from_file_location("export_composed", ROOT / "tools" / "export_composed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    models = {}
    exec(mod.MODELS, models)  # noqa: S102 - the tool's own model source, run as the tool runs it
    return mod.CASES, models


CASES, MODELS = _tool()
NAMES = sorted(n for n in CASES if (PT2 / f"{n}_composed.pt2").exists())


def test_every_composed_program_is_here():
    assert len(NAMES) >= 8, NAMES


@pytest.mark.parametrize("name", NAMES)
def test_composed_spec_reexports_and_runs_at_its_corners(name):
    cls, shapes, dyn, _ = CASES[name]
    report = dimguard.check(PT2 / f"{name}_composed.pt2")
    code = report.dynamic_shapes
    ns = {}
    exec(code, ns)  # noqa: S102 - the spec dimguard printed
    spec = ns["dynamic_shapes"]
    # No dynamic size of the program is dropped from the spec (kept, tied, or as it was claimed).
    dynamic = {(d["input"], d["index"]) for d in report.to_dict()["dims"]}
    assert dynamic == {(i, k) for i, k, _ in entries(spec)}, code
    torch.manual_seed(0)
    model = MODELS[cls]().eval()
    names = list(dyn)
    example = tuple(torch.randn(*s) for s in shapes)
    ep = torch.export.export(model, example, dynamic_shapes=spec)
    module = ep.module()
    typed = list(zip(names, shapes))
    if any(d.get("undecided") for d in report.to_dict()["dims"]):
        # An undecided size keeps its claimed range (a spec that re-exports, not a sound one):
        # its corners are not promised to run.
        return
    if any(j.get("defined") for j in report.to_dict().get("joint") or []):
        # A size the others define is Dim.AUTO in the spec (torch derives it): its value at a
        # corner is its definition's, not a corner of its own; run at the box's corners with it
        # derived by test_tokens2_box_reexports_and_runs_at_its_corners.
        return
    seen = 0
    for sizes in corners(spec, top=lambda r: int(r.min) + 40):
        assert runs(module, typed, sizes), (name, sizes, code)
        shapes_at = {n: [sizes.get((n, i), s[i]) for i in range(len(s))] for n, s in typed}
        assert report.accepts(shapes_at), (name, shapes_at, report.verdict(shapes_at).to_dict())
        seen += 1
    assert seen >= 2


def test_tokens2_box_reexports_and_runs_at_its_corners():
    """tokens2 (``tokens_1 == (image_2 // 16)*(image_3 // 16)``): the image sizes' spec is a
    sound box of theirs (issue 34, last review), the tokens written ``Dim.AUTO`` with the
    relation; it re-exports in torch 2.15 and the re-exported program runs at every corner of
    the box with the tokens at the product (on the meta device: the top corner is 48592007999;
    the one corner whose image holds more than 2^63 elements, which no tensor can, is judged by
    ``accepts`` only). One step outside the box, or tokens off the product, raises."""
    cls, shapes, dyn, _ = CASES["tokens2"]
    report = dimguard.check(PT2 / "tokens2_composed.pt2")
    code = report.dynamic_shapes
    ns = {}
    exec(code, ns)  # noqa: S102 - the spec dimguard printed
    spec = ns["dynamic_shapes"]
    dynamic = {(d["input"], d["index"]) for d in report.to_dict()["dims"]}
    assert dynamic == {(i, k) for i, k, _ in entries(spec)}, code
    for n in ("image_2", "image_3"):
        assert isinstance(ns[n], torch.export.dynamic_shapes._Dim), code
    torch.manual_seed(0)
    model = MODELS[cls]().eval()
    example = tuple(torch.randn(*s) for s in shapes)
    ep = torch.export.export(model, example, dynamic_shapes=spec)
    module = ep.module().to("meta")

    def run(b, h, w, n):
        try:
            with torch.no_grad():
                module(torch.empty(b, 3, h, w, device="meta"), torch.empty(b, n, 8, device="meta"))
            return True
        except Exception:  # noqa: BLE001
            return False

    h2, h3 = ns["image_2"], ns["image_3"]
    seen = 0
    for b in (2, 42):
        for h in (h2.min, h2.max):
            for w in (h3.min, h3.max):
                n = (h // 16) * (w // 16)
                shapes_at = {"image": [b, 3, h, w], "tokens": [b, n, 8]}
                assert report.accepts(shapes_at), (shapes_at, report.verdict(shapes_at).to_dict())
                if b * 3 * h * w < 1 << 63:
                    assert run(b, h, w, n), (b, h, w, n, code)
                    assert not run(b, h, w, n + 1), (b, h, w)
                    seen += 1
    assert seen >= 6
    for h, w in ((h2.min - 1, h3.min), (h2.max + 1, h3.min), (h2.min, h3.max + 1)):
        assert not run(2, h, w, (h // 16) * (w // 16)), (h, w)
    # Every size decided (issue 34, last review); the tokens' values with some partner are the
    # products of the factors, said in Python's summary too.
    dims = {(d["input"], d["index"]): d for d in report.to_dict()["dims"]}
    assert not any(d.get("undecided") for d in dims.values()), dims
    assert dims[("tokens", 1)]["defined_values"]["form"] == "products"
    assert "every composite number from 4" in repr(report), repr(report)
