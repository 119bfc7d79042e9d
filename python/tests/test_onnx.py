"""``dimguard.onnx`` with real clients (torch 2.15, onnx, onnxscript, onnxruntime; CPU): small
models of torchvision, timm and transformers (from configs) and of the shared composed programs
(linked sizes), exported through the audited loop to ONNX. For each model:

* the file carries the report and its symbolic axes carry the user's ``Dim`` names;
* at sampled shapes (at least 16: the accepted set's ends, sizes just outside, random ones),
  ``dimguard.check(file).verdict`` equals the torch program's own verdict (``ep.module()`` runs or
  raises);
* at accepted shapes onnxruntime's outputs equal the torch program's, through ``Session`` too;
* at rejected shapes ``Session.run`` raises ``dimguard.ShapeError`` (the failing condition, the
  nearest accepted sizes), and what plain onnxruntime does there is recorded against the eager
  model: an error inside a node, an output that differs from eager's, or a correct output
  (docs/ONNX.md's table; ``DIMGUARD_ONNX_TABLE=path`` writes the records as JSON lines).
"""

import json
import os
import pathlib
import random
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from torch.export import Dim

import dimguard
import dimguard.onnx

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
COMPOSED = HERE.parents[1] / ".." / "shared" / "programs" / "composed" / "models.py"

from models import ConvStack  # noqa: E402


def _img(c=3):
    return lambda shape: {"x": torch.randn(*shape["x"])}


# name -> () -> (model, args, dynamic_shapes, make inputs from {input: shape}, axes to sample)
def _squeezenet():
    import torchvision

    m = torchvision.models.squeezenet1_1(weights=None, num_classes=10).eval()
    ds = {"x": {0: Dim("batch", min=1, max=4), 2: Dim("h", min=64, max=160), 3: Dim("w", min=64, max=160)}}
    return m, (torch.randn(2, 3, 96, 96),), ds


def _convnext():
    import timm

    m = timm.models.convnext.ConvNeXt(depths=(1, 1, 1, 1), dims=(8, 16, 32, 64), num_classes=10).eval()
    ds = {"x": {2: Dim("h", min=32, max=160), 3: Dim("w", min=32, max=160)}}
    return m, (torch.randn(1, 3, 64, 64),), ds


def _vit():
    import timm

    m = timm.models.vision_transformer.VisionTransformer(img_size=32, patch_size=8, embed_dim=32, depth=1, num_heads=2, num_classes=10).eval()
    ds = {"x": {0: Dim("batch", min=1, max=8), 2: Dim("h", min=16, max=64), 3: Dim("w", min=16, max=64)}}
    return m, (torch.randn(2, 3, 32, 32),), ds


class _Bert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        from transformers import BertConfig, BertModel

        cfg = BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37, max_position_embeddings=64)
        self.bert = BertModel(cfg).eval()

    def forward(self, input_ids):
        return self.bert(input_ids=input_ids).last_hidden_state


def _bert():
    ds = {"input_ids": {0: Dim("batch", min=1, max=8), 1: Dim("seq", min=2, max=128)}}
    return _Bert().eval(), (torch.randint(0, 100, (2, 16)),), ds


def _composed(name):
    """One of the shared composed programs' models (../shared/programs/composed/models.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("composed_models", COMPOSED)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.build()[name]


def _raft():
    m, args, _ = _composed("raft_pair")
    b = Dim("batch", min=1, max=4)
    ds = {"image1": {0: b, 2: Dim("h1", min=9, max=128), 3: Dim("w1", min=9, max=128)}, "image2": {0: b, 2: Dim("h2", min=9, max=128), 3: Dim("w2", min=9, max=128)}}
    return m.eval(), args, ds


def _unet():
    m, args, _ = _composed("unet_skip")
    return m.eval(), args, {"x": {2: Dim("h", min=27, max=200), 3: Dim("w", min=27, max=200)}}


def _mixed():
    m, args, _ = _composed("mixed_batch")
    b = Dim("batch", min=1, max=4)
    ds = {"x": {0: b, 2: Dim("h", min=32, max=128), 3: Dim("w", min=32, max=128)}, "t": {0: b, 1: Dim("L", min=4, max=64)}}
    return m.eval(), args, ds


def _convstack():
    return ConvStack().eval(), (torch.randn(2, 3, 64, 48),), {"x": {0: Dim("batch", max=8), 2: Dim("h", min=32, max=256), 3: Dim("w", min=32, max=256)}}


MODELS = {
    "torchvision_squeezenet1_1": _squeezenet,
    "timm_convnext": _convnext,
    "timm_vit": _vit,
    "transformers_bert": _bert,
    "composed_raft_pair": _raft,
    "composed_unet_skip": _unet,
    "composed_mixed_batch": _mixed,
    "tests_convstack": _convstack,
}


def _inputs(model, args, shapes):
    """Inputs of the given shapes, of the example's dtypes (token ids below the vocabulary)."""
    names = dimguard.onnx._arg_names(model, args, {})
    out = {}
    for n, a in zip(names, args):
        s = shapes[n]
        if a.dtype in (torch.int64, torch.int32):
            out[n] = torch.randint(0, 100, tuple(s), dtype=a.dtype)
        else:
            out[n] = torch.randn(*s, dtype=a.dtype)
    return out


def _outputs(v):
    if isinstance(v, torch.Tensor):
        return [v.detach().numpy()]
    if isinstance(v, (list, tuple)):
        return [x for t in v for x in _outputs(t)]
    return [x for t in getattr(v, "values", lambda: [])() for x in _outputs(t)]


def _samples(report, args, names, rng, n=20):
    """Shapes around the program's accepted sets: each dynamic size a member of its accepted set,
    an end of it, just outside it (a member plus or minus one, beyond an end), or at random in
    and a little beyond its claimed range; a second input of the same rank often the first's."""
    base = {nm: list(a.shape) for nm, a in zip(names, args)}
    dims = {(d["input"], d["index"]): d for d in report["dims"]}
    out = []
    while len(out) < n:
        shapes = {k: list(v) for k, v in base.items()}
        inside = rng.random() < 0.4  # every size a member of its set
        for (inp, i), d in dims.items():
            acc = d.get("with_some_partner") or d.get("accepted") or d["claimed"]
            members = list(dimguard.SizeSet(acc)) if acc.get("segments") is not None and acc["count"] <= 4096 else []
            claimed = d["claimed"]
            lo, hi = claimed.get("min") or 2, claimed.get("max") or 64
            choice = rng.random()
            if members and (inside or choice < 0.4):
                v = rng.choice(members)
            elif members and choice < 0.6:
                v = rng.choice(members) + rng.choice([-1, 1])
            elif choice < 0.85:
                v = rng.choice([max(1, lo - 1), hi + 1, hi + rng.randint(2, 16)])
            else:
                v = rng.randint(max(1, lo - 8), hi + 8)
            shapes[inp][i] = max(1, v)
        for p in report.get("inputs") or []:  # a size the program fixes, sometimes moved
            for i, e in enumerate(p["shape"]):
                if isinstance(e, int) and i >= 2 and rng.random() < 0.15:
                    shapes[p["input"]][i] = e + rng.choice([-8, -1, 1, 8])
        if rng.random() < 0.5 and len(shapes) > 1:  # the second input like the first
            first, *rest = list(shapes)
            for r in rest:
                if len(shapes[r]) == len(shapes[first]):
                    shapes[r] = list(shapes[first])
        out.append(shapes)
    return out


_RECORDS = []


def _ort_outcome(sess, feed, eager):
    """What plain onnxruntime does: ("error", the node), ("wrong", how), or ("correct", "")."""
    try:
        got = sess.run(None, feed)
    except Exception as e:  # noqa: BLE001 - onnxruntime's own errors, recorded
        msg = str(e).replace("\n", " ")
        node = msg.split("while running ")[1].split(". Name:")[0] if "while running " in msg else type(e).__name__
        return "error", node, msg[:300]
    if eager is None:
        return "output where eager raises", "", ""
    if isinstance(eager, Exception):
        return "output where eager raises", "", f"{type(eager).__name__}: {str(eager).splitlines()[0][:160]}"
    exp = _outputs(eager)
    if len(exp) != len(got) or any(a.shape != b.shape for a, b in zip(exp, got)):
        return "wrong output", "shape", f"{[a.shape for a in got]} vs eager {[a.shape for a in exp]}"
    err = max(float(np.max(np.abs(a - b))) if a.size else 0.0 for a, b in zip(exp, got))
    if err > 1e-3:
        return "wrong output", "values", f"max |diff| {err:.3g}"
    return "correct output", "", f"max |diff| {err:.2g}"


@pytest.fixture(scope="module", params=sorted(MODELS))
def exported(request, tmp_path_factory):
    name = request.param
    torch.manual_seed(0)
    model, args, ds = MODELS[name]()
    path = tmp_path_factory.mktemp("onnx") / f"{name}.onnx"
    t0 = time.process_time()
    report = dimguard.onnx.export(model, args, path, dynamic_shapes=ds, verbose=False)
    cpu = time.process_time() - t0
    # The program the file came from, as the export returns it.
    return name, model, args, ds, path, report, report.program.module(), cpu


def test_the_file_carries_the_report_and_the_users_names(exported):
    name, model, args, ds, path, report, _, _ = exported
    # The report is dimguard.export's, with the program the file was written from beside it.
    assert isinstance(report, dimguard.ExportReport)
    assert isinstance(report.program, torch.export.ExportedProgram)
    assert "program" not in report.to_dict()
    proto = onnx.load(str(path))
    meta = {p.key: p.value for p in proto.metadata_props}
    stored = json.loads(meta[dimguard.onnx.REPORT_KEY])
    audit = report.to_dict()["audit"]
    assert stored["audit"] == audit
    assert stored["spec"] == report["spec"]
    names = set(dimguard.onnx._dim_names(model, args, {}, ds).values())
    params = {d.dim_param for i in proto.graph.input for d in i.type.tensor_type.shape.dim if d.HasField("dim_param")}
    # Every symbolic input axis of a size the user named carries a user name; no torch symbol
    # (s83) is left where the user gave a name.
    program = {p["input"]: p["shape"] for p in audit["inputs"]}
    for i in proto.graph.input:
        for k, d in enumerate(i.type.tensor_type.shape.dim):
            if d.HasField("dim_param"):
                expr = program[i.name][k]
                user = [v for (inp, j), v in dimguard.onnx._dim_names(model, args, {}, ds).items() if inp == i.name and j == k]
                if user:
                    assert d.dim_param in names, (i.name, k, d.dim_param, expr)
    assert params, "the program keeps some size dynamic"
    c = dimguard.check(path)
    assert c.onnx.file == str(path)
    assert [d.to_dict() for d in c.dims] == audit["dims"]


def test_check_agrees_with_the_program_and_onnxruntime_with_torch(exported):
    name, model, args, ds, path, report, program, cpu = exported
    names = dimguard.onnx._arg_names(model, args, {})
    c = dimguard.check(path)
    quiet = ort.SessionOptions()
    quiet.log_severity_level = 4  # its node errors are recorded, not logged
    plain = ort.InferenceSession(str(path), sess_options=quiet, providers=["CPUExecutionProvider"])
    sess = dimguard.onnx.Session(path, providers=["CPUExecutionProvider"])
    rng = random.Random(name)
    audit = report.to_dict()["audit"]
    samples = _samples(audit, args, names, rng)
    accepted = rejected = 0
    for shapes in samples:
        verdict = c.verdict(shapes)
        feed_t = _inputs(model, args, shapes)
        try:  # the program's own verdict: it runs or raises
            with torch.no_grad():
                want = program(*feed_t.values())
            runs = True
        except Exception as e:  # noqa: BLE001 - the program's refusal
            want, runs = e, False
        if runs and verdict["accepted"] is False:
            # torch 2.15 does not check a derived size's form (`8*s16`) at call time when no
            # other input holds its symbol: the program runs, but its guards over `s16` were
            # never evaluated. The verdict holds it to the form (never a wrong accept): refused.
            assert "is not of the form" in verdict["reason"], (name, shapes, verdict["reason"])
            runs = False
        else:
            assert verdict["accepted"] is runs, (name, shapes, verdict["reason"], None if runs else str(want)[:200])
        feed = {k: v.numpy() for k, v in feed_t.items()}
        if runs:
            accepted += 1
            got = sess.run(None, feed)
            exp = _outputs(want)
            assert len(got) == len(exp)
            for a, b in zip(got, exp):
                np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-4)
        else:
            rejected += 1
            with pytest.raises(dimguard.ShapeError) as info:
                sess.run(None, feed)
            assert info.value.reason == verdict["reason"]
            for (inp, k), near in info.value.nearest.items():
                assert near["size"] == shapes[inp][k]
                for side in ("below", "above"):
                    if near[side] is not None:
                        probe = {x: list(s) for x, s in shapes.items()}
                        probe[inp][k] = near[side]
                        # The nearest size passes this size's own conditions (its set).
                        assert dimguard.onnx._nearest_per_size(audit, [], probe).get((inp, k)) is None
            try:
                with torch.no_grad():
                    eager = model(*feed_t.values())
            except Exception as e:  # noqa: BLE001 - the eager model's own failure
                eager = e
            outcome, where, detail = _ort_outcome(plain, feed, eager)
            _RECORDS.append({"model": name, "shapes": shapes, "reason": verdict["reason"], "ort": outcome, "node": where, "detail": detail, "session": "ShapeError"})
    assert len(samples) >= 16 and accepted >= 3 and rejected >= 3, (name, accepted, rejected)


def test_zz_write_the_table():
    out = os.environ.get("DIMGUARD_ONNX_TABLE")
    if out:
        with open(out, "w") as f:
            for r in _RECORDS:
                f.write(json.dumps(r) + "\n")


def test_shapes_spec_export_stores_its_assumptions_and_names(tmp_path):
    """torch 2.15's ``ShapesSpec`` API: the loop adds the branch the example takes of a
    size-dependent ``if`` as an assumption, the file's axes carry the ``ShapeVar`` names, and
    ``Session`` refuses the sizes the assumption removes (the program asserts it at run time;
    the ONNX graph holds only the traced branch)."""
    from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec

    model = ConvStack().eval()
    B, H, W = ShapeVar("B", min=1, max=4), ShapeVar("H", min=32, max=128), ShapeVar("W", min=32, max=128)
    path = tmp_path / "convstack_spec.onnx"
    report = dimguard.onnx.export(model, (torch.randn(2, 3, 64, 48),), path, dynamic_shapes=ShapesSpec({"x": TensorSpec([B, 3, H, W])}), verbose=False)
    assert report["assumptions"], report["spec"]
    proto = onnx.load(str(path))
    axes = [d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim if d.HasField("dim_param")]
    assert axes == ["B", "H", "W"], axes
    program = report.program.module()
    sess = dimguard.onnx.Session(path, providers=["CPUExecutionProvider"])
    c = dimguard.check(path)
    seen = set()
    for h in range(32, 129, 3):
        shape = [2, 3, h, 48]
        try:
            with torch.no_grad():
                want = program(torch.randn(*shape))
            runs = True
        except Exception:  # noqa: BLE001 - the program's run-time assert
            runs = False
        assert c.verdict({"x": shape})["accepted"] is runs, h
        feed = {"x": np.random.randn(*shape).astype(np.float32)}
        if runs:
            got = sess.run(None, {"x": feed["x"]})
            want = program(torch.from_numpy(feed["x"]))
            np.testing.assert_allclose(got[0], want.detach().numpy(), rtol=1e-3, atol=1e-4)
        else:
            with pytest.raises(dimguard.ShapeError):
                sess.run(None, feed)
        seen.add(runs)
    assert seen == {True, False}
