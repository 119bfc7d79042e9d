"""Exports one small model per case with PyTorch 2.15 (CPU) and captures every form in which a user
meets its guards, for the cross-form test (tests/crossform.rs, issue 23):

* `exception.txt`: the `ConstraintViolationError` (a `UserError` in 2.15) that `torch.export.export`
  raises for the case's `Dim(..., min, max)` spec, as a user copies it (`Type: message`);
* `log.txt`: stderr of the same failing export under `TORCH_LOGS="+dynamic"`;
* `trace.log`: the same export's `TORCH_TRACE` file (the one file of the directory), trimmed to
  the records dimguard reads as tools/make_traces.py trims;
* `draft.txt`: `str(ep._report)` of `torch.export.draft_export` with the same spec;
* `program.pt2`: the program exported with `Dim.AUTO(min=..., max=...)` on the same sizes (a spec
  torch accepts: the guards stay in the program), saved by `torch.export.save` and kept as a
  compressed archive holding only its `models/model.json` (no weights, no example inputs);
* `truth.json`: brute force. The exported program (`ep.module()`) is run at every size of each
  dynamic input size's range (the others held at their example size, where it runs), and at
  every pair of a linked pair of sizes over their whole ranges (`joint`); for a case whose sizes
  are not linked, at every pair of a sub-box (the least 64 values of each, `sub_box: true`).
  The eager model is run at the same single sizes, not at pairs (`eager_agrees` says whether it
  accepts exactly the same ones: the program's guards may be narrower than the model).

Cases (`tests/data/crossform/<case>/`):

* `fpn2`: two images, one stride-4 stem each, added (their 1/4 maps must agree:
  `(h1 - 1)//4 == (h2 - 1)//4`, a guard linking two inputs that never raises), then an FPN add of
  the 1/4 map and the upsampled 1/8 map (`(h1 - 1)//4` odd: raises for h1 and w1). Sizes 32..96
  (every pair is run: 4,225 per pair of sizes).
* `tied2`: fpn2's model with a dynamic batch on both inputs (2..8): the batches are tied by an
  equality, the 1/4 maps by a block tie; every size of both inputs has its partner's set.
* `window7`: 4x4 patch embed, padding to a multiple of the 7x7 window, reshape into windows,
  attention per window. Sizes 32..512.
* `ceil2`: two levels of a ceil-mode max-pool beside a floor-mode stride-2 conv, added (H and W
  must be multiples of 4). Sizes 32..512.

Each export runs in a fresh interpreter (TORCH_LOGS and TORCH_TRACE are read at import).

    ~/.cache/dimguard/venv-b1284b1b5f75f294/bin/python tools/export_crossform.py [CASE ...]
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
OUT = os.path.join(ROOT, "tests", "data", "crossform")
sys.path.insert(0, HERE)
from fixture_models import source  # noqa: E402
from make_traces import trim  # noqa: E402

MODELS = r'''
import torch
import torch.nn as nn
import torch.nn.functional as F


class TwoFpn(nn.Module):
    """Two images, one stride-4 stem each, added; then the 1/4 map plus the upsampled 1/8 map."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 2, 3, stride=4, padding=1)
        self.b = nn.Conv2d(3, 2, 3, stride=4, padding=1)
        self.s8 = nn.Conv2d(2, 2, 3, stride=2, padding=1)

    def forward(self, image1, image2):
        f = self.a(image1) + self.b(image2)
        g = f + F.interpolate(self.s8(f), scale_factor=2.0, mode="nearest")
        return g.mean(dim=(2, 3))


''' + source("Window7", c=2) + r'''


class Ceil2(nn.Module):
    """Two levels of a ceil-mode max-pool beside a floor-mode stride-2 conv, added."""

    def __init__(self):
        super().__init__()
        self.p1 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.c1 = nn.Conv2d(3, 3, 2, stride=2)
        self.p2 = nn.MaxPool2d(2, 2, ceil_mode=True)
        self.c2 = nn.Conv2d(3, 3, 2, stride=2)

    def forward(self, x):
        a = self.p1(x) + self.c1(x)
        b = self.p2(a) + self.c2(a)
        return b.mean(dim=(2, 3))
'''

# case: (class, example shapes, {input: {dim: (name, lo, hi)}}, linked pairs [(input, dim), ...]);
# while sizes are swept, every other dynamic size is held at its example (where the program runs)
CASES = {
    "fpn2": (
        "TwoFpn",
        [[1, 3, 64, 96], [1, 3, 64, 96]],
        {
            "image1": {2: ("h1", 32, 96), 3: ("w1", 32, 96)},
            "image2": {2: ("h2", 32, 96), 3: ("w2", 32, 96)},
        },
        [(("image1", 2), ("image2", 2)), (("image1", 3), ("image2", 3))],
    ),
    # fpn2's model with a dynamic batch on both inputs: the batches must be equal (a tie torch
    # states as an equality), and the 1/4 maps tied as in fpn2.
    "tied2": (
        "TwoFpn",
        [[2, 3, 64, 96], [2, 3, 64, 96]],
        {
            "image1": {0: ("b1", 2, 8), 2: ("h1", 32, 96), 3: ("w1", 32, 96)},
            "image2": {0: ("b2", 2, 8), 2: ("h2", 32, 96), 3: ("w2", 32, 96)},
        },
        [
            (("image1", 0), ("image2", 0)),
            (("image1", 2), ("image2", 2)),
            (("image1", 3), ("image2", 3)),
        ],
    ),
    "window7": ("Window7", [[1, 3, 224, 224]], {"x": {2: ("h", 32, 512), 3: ("w", 32, 512)}}, []),
    "ceil2": ("Ceil2", [[1, 3, 224, 224]], {"x": {2: ("h", 32, 512), 3: ("w", 32, 512)}}, []),
}

# The failing export with the case's Dims (run under TORCH_LOGS and TORCH_TRACE): prints the
# exception as a user copies it.
FAIL = r'''
import json, sys, traceback, torch
sys.path.insert(0, sys.argv[1])
import models
from torch.export import Dim, export
model, shapes, dyn = json.loads(sys.argv[2])
torch.manual_seed(0)
m = getattr(models, model)().eval()
args = tuple(torch.randn(*s) for s in shapes)
ds = {n: {int(i): Dim(d[0], min=d[1], max=d[2]) for i, d in dims.items()} for n, dims in dyn.items()}
try:
    export(m, args, dynamic_shapes=ds)
except Exception as e:  # noqa: BLE001
    sys.stdout.write("".join(traceback.format_exception_only(type(e), e)))
    sys.exit(0)
sys.exit("the export did not fail")
'''

# Draft export with the same Dims, the program with Dim.AUTO, and the brute force.
REST = r'''
import io, json, sys, zipfile, torch
sys.path.insert(0, sys.argv[1])
import models
from torch.export import Dim, draft_export, export
model, shapes, dyn, linked, outdir = json.loads(sys.argv[2])
torch.manual_seed(0)
m = getattr(models, model)().eval()
args = tuple(torch.randn(*s) for s in shapes)
names = list(dyn)
ds = {n: {int(i): Dim(d[0], min=d[1], max=d[2]) for i, d in dims.items()} for n, dims in dyn.items()}
draft = draft_export(m, args, dynamic_shapes=ds)
with open(f"{outdir}/draft.txt", "w") as f:
    f.write(str(draft._report))
auto = {n: {int(i): Dim.AUTO(min=d[1], max=d[2]) for i, d in dims.items()} for n, dims in dyn.items()}
ep = export(m, args, dynamic_shapes=auto)
buf = io.BytesIO()
torch.export.save(ep, buf)
with zipfile.ZipFile(buf) as z:
    mj = [n for n in z.namelist() if n.endswith("models/model.json")][0]
    text = z.read(mj)
with zipfile.ZipFile(f"{outdir}/program.pt2", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    z.writestr(mj, text)
prog = ep.module()
sizes = [(n, int(i), d) for n, dims in dyn.items() for i, d in dims.items()]


def shapes_at(vals):
    """The example shapes with the given {(input, dim): value} and every other dynamic size held."""
    out = []
    for k, n in enumerate(names):
        s = list(shapes[k])
        for i in dyn[n]:
            s[int(i)] = vals.get((n, int(i)), s[int(i)])
        out.append(s)
    return out


def runs(f, vals):
    try:
        with torch.no_grad():
            f(*[torch.randn(*s) for s in shapes_at(vals)])
        return True
    except Exception:  # noqa: BLE001 -- any rejection counts
        return False


eager_agrees = True
pairs_done = {}
joint = []
for (a, b) in linked:
    a, b = tuple(a), tuple(b)
    da, db = dyn[a[0]][str(a[1])], dyn[b[0]][str(b[1])]
    ok = []
    for x in range(da[1], da[2] + 1):
        for y in range(db[1], db[2] + 1):
            # The program only: the eager model takes ~0.1 s to raise at a pair that fails.
            r = runs(prog, {a: x, b: y})
            if r:
                ok.append([x, y])
    joint.append({"dims": [da[0], db[0]], "box": [[da[1], da[2]], [db[1], db[2]]],
                  "count": len(ok), "tuples": ok, "sub_box": False})
    pairs_done[a] = sorted({p[0] for p in ok})
    pairs_done[b] = sorted({p[1] for p in ok})
# Sizes not linked by the case: the program at every pair of a sub-box of the first two (their
# least 64 values), so the test sees whether each form's answer is a product there.
if not linked:
    (na, ia, da), (nb, ib, db) = sizes[0], sizes[1]
    box = [[da[1], min(da[2], da[1] + 63)], [db[1], min(db[2], db[1] + 63)]]
    ok = [[x, y] for x in range(box[0][0], box[0][1] + 1) for y in range(box[1][0], box[1][1] + 1)
          if runs(prog, {(na, ia): x, (nb, ib): y})]
    joint.append({"dims": [da[0], db[0]], "box": box, "count": len(ok), "tuples": ok, "sub_box": True})
per = {}
for n, i, d in sizes:
    if (n, i) in pairs_done:
        acc = pairs_done[(n, i)]
    else:
        acc = []
        for x in range(d[1], d[2] + 1):
            r = runs(prog, {(n, i): x})
            if r != runs(m, {(n, i): x}):
                eager_agrees = False
            if r:
                acc.append(x)
    per[d[0]] = {"source": f"L['{n}'].size()[{i}]", "range": [d[1], d[2]], "accepted": acc,
                 "count": len(acc), "linked": (n, i) in pairs_done}
print(json.dumps({"torch": torch.__version__, "model": model, "held": "example", "sizes": per,
                  "joint": joint, "eager_agrees": eager_agrees,
                  "range_constraints": {str(k): [str(v.lower), str(v.upper)]
                                        for k, v in ep.range_constraints.items()}}))
'''


def main(names):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "models.py"), "w") as f:
            f.write(MODELS)
        for case in names:
            model, shapes, dyn, linked = CASES[case]
            out = os.path.join(OUT, case)
            os.makedirs(out, exist_ok=True)
            tdir = os.path.join(tmp, "trace_" + case)
            env = dict(os.environ, TORCH_TRACE=tdir, TORCH_LOGS="+dynamic")
            arg = json.dumps([model, shapes, dyn])
            res = subprocess.run([sys.executable, "-c", FAIL, tmp, arg], env=env,
                                 capture_output=True, text=True, cwd=tmp, timeout=1200)
            if res.returncode != 0:
                sys.exit(f"{case}: {res.stderr[-3000:]}")
            with open(os.path.join(out, "exception.txt"), "w") as f:
                f.write(res.stdout.replace(tmp + "/", ""))
            # lru_cache statistics are printed at exit and say nothing about guards.
            log = "".join(line + "\n" for line in res.stderr.splitlines() if "lru_cache_stats" not in line)
            with open(os.path.join(out, "log.txt"), "w") as f:
                f.write(log.replace(tmp + "/", ""))
            traces = sorted(os.listdir(tdir))
            if len(traces) != 1:
                sys.exit(f"{case}: {len(traces)} trace files: {traces}")
            with open(os.path.join(tdir, traces[0])) as f:
                trace = "".join(line + "\n" for line in trim(f.read().splitlines()))
            with open(os.path.join(out, "trace.log"), "w") as f:
                f.write(trace.replace(tmp + "/", ""))
            env = {k: v for k, v in os.environ.items() if k not in ("TORCH_TRACE", "TORCH_LOGS")}
            arg = json.dumps([model, shapes, dyn, linked, out])
            res = subprocess.run([sys.executable, "-c", REST, tmp, arg], env=env,
                                 capture_output=True, text=True, cwd=tmp, timeout=3600)
            if res.returncode != 0:
                sys.exit(f"{case}: {res.stderr[-3000:]}")
            truth = json.loads(res.stdout.strip().splitlines()[-1])
            with open(os.path.join(out, "truth.json"), "w") as f:
                json.dump(truth, f, separators=(",", ":"))
                f.write("\n")
            print(f"{case}: log {len(log)} bytes, trace {len(trace)} bytes, "
                  + ", ".join(f"{k} {v['count']}/{v['range'][1] - v['range'][0] + 1}"
                              for k, v in truth["sizes"].items())
                  + "".join(f", joint {j['dims']} {j['count']}" for j in truth["joint"])
                  + f", eager agrees: {truth['eager_agrees']}, ranges {truth['range_constraints']}")


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
