"""Exports small models with `Dim.AUTO` and no bounds (every dynamic size claims 2..int_oo, or
0/1.. for the batch) whose sizes torch links by guards, in every form dimguard reads:

* `tests/data/pt2/<name>_unbounded.pt2`: the saved program (`torch.export.save`), kept as a
  compressed archive holding only its `models/model.json` (no weights, no example inputs);
* `tests/data/forms/<name>_unbounded.log.txt`: stderr of the same export under
  `TORCH_LOGS="+dynamic"`;
* `tests/data/traces/<name>_unbounded.log`: the same export's `TORCH_TRACE`, trimmed to the records
  dimguard reads (as tools/make_traces.py trims);
* `tests/data/pt2/<name>_unbounded.runs.json`: the program run (`ep.module()(...)`) at a few small
  sizes near the corner and a few larger ones: which run and which raise, the brute-force oracle the
  tests compare dimguard's joint answer with (besides evaluating the guards themselves).

Models:

* `two_stem`: two images through one stride-4 conv stem each, then added: their H and W must agree
  after the stem (`(h1 - 1)//4 == (h2 - 1)//4`, not `h1 == h2`).
* `window7`: Swin-style 4x4 patch embed, pad to a multiple of the 7x7 window, attention per window.
* `patch16`: ViT-style conv patch 16, flatten to tokens, reshape back to the grid.
* `swin_t`: torchvision's Swin-T (weights=None), the issue's own case: 815 guards, about 4 minutes
  to export on 2 cores. Only its program and runs are written (`PROGRAM_ONLY`): its log and trace
  would be megabytes, and the small models above cover those forms.

Each export runs in a fresh interpreter (TORCH_LOGS and TORCH_TRACE are read at import).

    ~/.cache/dimguard/venv-b1284b1b5f75f294/bin/python tools/export_unbounded.py [NAME ...]
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from fixture_models import source  # noqa: E402
from make_traces import trim  # noqa: E402

MODELS = r'''
import torch
import torch.nn as nn
import torch.nn.functional as F


''' + source("TwoStem") + r'''


''' + source("Window7") + r'''


''' + source("Patch16") + r'''


def SwinT():
    import torchvision

    return torchvision.models.swin_t(weights=None)
'''

# Cases written as their program and runs only (no TORCH_LOGS log, no TORCH_TRACE).
PROGRAM_ONLY = {"swin_t"}

# name: (class, input shapes, dynamic sizes per input (dim indices), sizes run: list of shapes)
CASES = {
    "two_stem": ("TwoStem", [[1, 3, 64, 96], [1, 3, 64, 96]], {"image1": [2, 3], "image2": [2, 3]}),
    "window7": ("Window7", [[2, 3, 224, 224]], {"x": [0, 2, 3]}),
    "patch16": ("Patch16", [[2, 3, 224, 224]], {"x": [0, 2, 3]}),
    "swin_t": ("SwinT", [[2, 3, 224, 224]], {"x": [0, 2, 3]}),
}

RUN = r'''
import io, json, sys, zipfile, torch
sys.path.insert(0, sys.argv[1])
import models
from torch.export import Dim, export
model, shapes, dyn, out, probes = json.loads(sys.argv[2])
torch.manual_seed(0)
m = getattr(models, model)().eval()
args = tuple(torch.randn(*s) for s in shapes)
names = list(dyn)
ds = {n: {int(i): Dim.AUTO for i in dims} for n, dims in dyn.items()}
ep = export(m, args, dynamic_shapes=ds)
buf = io.BytesIO()
torch.export.save(ep, buf)
# Only the program (models/model.json), compressed: the weights and example inputs are not read.
with zipfile.ZipFile(buf) as z:
    mj = [n for n in z.namelist() if n.endswith("models/model.json")][0]
    text = z.read(mj)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    z.writestr(mj, text)
runs = []
for shp in probes:
    try:
        with torch.no_grad():
            ep.module()(*[torch.randn(*s) for s in shp])
        runs.append([shp, True])
    except Exception as e:  # noqa: BLE001
        runs.append([shp, False])
print(json.dumps({"runs": runs, "torch": torch.__version__,
                  "ranges": {str(k): [str(v.lower), str(v.upper)] for k, v in ep.range_constraints.items()}}))
'''


def probes(case):
    """Shapes the program is run at: near the small corner, and a few larger sizes."""
    model, shapes, dyn = CASES[case]
    out = []
    if case == "two_stem":
        for h1 in range(2, 14):
            for h2 in range(2, 14):
                out.append([[1, 3, h1, 9], [1, 3, h2, 9]])
        for h1, h2, w1, w2 in [(101, 104, 99, 97), (101, 105, 99, 97), (257, 260, 255, 256), (256, 257, 64, 64)]:
            out.append([[1, 3, h1, w1], [1, 3, h2, w2]])
    elif case == "window7":
        for h in range(24, 120, 4):
            for w in (31, 56, 59, 60, 112):
                out.append([[2, 3, h, w]])
        for b, h, w in [(3, 224, 200), (3, 224, 227), (2, 4, 225), (2, 1120, 56)]:
            out.append([[b, 3, h, w]])
    elif case == "swin_t":
        # Around the traced 224 (H and W 224..227 pass: the patch grid's padding to the 7x7
        # windows of every stage), and the batch from 1 up.
        for h in range(220, 233):
            for w in (223, 224, 227, 228):
                out.append([[2, 3, h, w]])
        for b, h, w in [(1, 224, 224), (3, 224, 227), (7, 226, 225), (2, 448, 448), (2, 231, 224)]:
            out.append([[b, 3, h, w]])
    else:
        for h in range(16, 80, 4):
            for w in (16, 32, 47, 48, 64):
                out.append([[2, 3, h, w]])
        for b, h, w in [(3, 224, 200), (2, 16, 16), (2, 17, 1000), (2, 1000, 48)]:
            out.append([[b, 3, h, w]])
    return out


def main(names):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "models.py"), "w") as f:
            f.write(MODELS)
        for case in names:
            model, shapes, dyn = CASES[case]
            base = f"{case}_unbounded"
            pt2 = os.path.join(ROOT, "tests", "data", "pt2", base + ".pt2")
            tdir = os.path.join(tmp, "trace_" + case)
            env = dict(os.environ, TORCH_TRACE=tdir, TORCH_LOGS="+dynamic")
            if case in PROGRAM_ONLY:
                env = dict(os.environ)
            arg = json.dumps([model, shapes, dyn, pt2, probes(case)])
            res = subprocess.run([sys.executable, "-c", RUN, tmp, arg], env=env,
                                 capture_output=True, text=True, cwd=tmp, timeout=1200)
            if res.returncode != 0:
                sys.exit(f"{case}: {res.stderr[-3000:]}")
            log, kept = res.stderr.replace(tmp + "/", ""), []
            if case not in PROGRAM_ONLY:
                with open(os.path.join(ROOT, "tests", "data", "forms", base + ".log.txt"), "w") as f:
                    f.write(log)
                lines = []
                for name in sorted(os.listdir(tdir)):
                    with open(os.path.join(tdir, name)) as f:
                        lines.extend(f.read().splitlines())
                kept = trim(lines)
                with open(os.path.join(ROOT, "tests", "data", "traces", base + ".log"), "w") as f:
                    f.write("\n".join(kept).replace(tmp + "/", "") + "\n")
            rec = json.loads(res.stdout.strip().splitlines()[-1])
            rec["model"] = model
            rec["inputs"] = dyn
            with open(os.path.join(ROOT, "tests", "data", "pt2", base + ".runs.json"), "w") as f:
                json.dump(rec, f)
                f.write("\n")
            ok = sum(1 for _, r in rec["runs"] if r)
            print(f"{case}: log {len(log)} bytes, trace {len(kept)} records, ranges {rec['ranges']}, "
                  f"runs {ok}/{len(rec['runs'])} pass")


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
