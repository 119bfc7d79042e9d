"""Writes tests/data/onnx/: the shared composed raft_pair (linked sizes) exported by
``dimguard.onnx.export`` (``raft_pair.onnx``, report stored), the same program by plain
``torch.onnx.export`` (``raft_pair_plain.onnx``, no report), and ``raft_pair.runs.json``: at 40
sampled shapes, whether the torch program runs (its own verdict), for tests/onnx.rs to hold
``dimguard check FILE --at`` to. Needs torch 2.15, onnx, onnxscript and the dimguard package.

    python tools/onnx_fixtures.py
"""

import json
import pathlib
import random
import sys

import torch
from torch.export import Dim

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / ".." / "shared" / "programs" / "composed"))

import dimguard  # noqa: E402
import dimguard.onnx  # noqa: E402
from models import build  # noqa: E402

OUT = ROOT / "tests" / "data" / "onnx"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    model, args, _ = build()["raft_pair"]
    model.eval()
    b = Dim("batch", min=1, max=4)
    ds = {
        "image1": {0: b, 2: Dim("h1", min=9, max=128), 3: Dim("w1", min=9, max=128)},
        "image2": {0: b, 2: Dim("h2", min=9, max=128), 3: Dim("w2", min=9, max=128)},
    }
    report = dimguard.onnx.export(model, args, OUT / "raft_pair.onnx", dynamic_shapes=ds, external_data=False)
    program = report.program.module()
    plain = torch.export.export(model, args, dynamic_shapes=ds)
    torch.onnx.export(plain, args, str(OUT / "raft_pair_plain.onnx"), dynamo=True, external_data=False, verbose=False)
    rng = random.Random(0)
    runs = []
    # Around the accepted sets (and beyond them), from the file's own report.
    acc = {(d.input, d.index): d.accepted for d in dimguard.check(OUT / "raft_pair.onnx").dims}
    (hlo, hhi), (wlo, whi) = [(acc[("image1", i)].min, acc[("image1", i)].max) for i in (2, 3)]
    for _ in range(40):
        h1, w1 = rng.randint(hlo - 3, hhi + 3), rng.randint(wlo - 3, whi + 3)
        h2 = h1 if rng.random() < 0.6 else rng.randint(max(1, h1 - 6), h1 + 6)
        w2 = w1 if rng.random() < 0.6 else rng.randint(max(1, w1 - 6), w1 + 6)
        bs = rng.randint(1, 5)
        shapes = {"image1": [bs, 3, h1, w1], "image2": [bs, 3, h2, w2]}
        try:
            with torch.no_grad():
                program(torch.randn(*shapes["image1"]), torch.randn(*shapes["image2"]))
            ok = True
        except Exception as e:  # noqa: BLE001 - the program's refusal
            ok = False
            print(shapes, type(e).__name__, str(e).splitlines()[0][:120])
        runs.append({"shapes": shapes, "runs": ok})
    (OUT / "raft_pair.runs.json").write_text(json.dumps({"model": "raft_pair", "runs": runs}, indent=1) + "\n")
    print(f"{sum(r['runs'] for r in runs)} of {len(runs)} sampled shapes run")


if __name__ == "__main__":
    main()
