"""Exports small models that *compose* the guard families torch 2.15 emits (stride chains,
upsample adds, skip concatenations, inputs tied after stems of different strides, window and patch
divisibility, reshape products, products `!= 1`, batch ties), all with `Dim.AUTO` and no bounds,
and runs each exported program at sampled shapes (issue 34):

* `tests/data/pt2/<name>_composed.pt2`: the saved program, a compressed archive holding only its
  `models/model.json` (no weights, no example inputs);
* `tests/data/traces/<name>_composed.log` (for `TRACED` only): the same export's `TORCH_TRACE`,
  trimmed to the records dimguard reads (as tools/make_traces.py trims);
* `tests/data/pt2/<name>_composed.runs.json`: the program run (`ep.module()(...)`) at about 1,000
  sampled shapes each (near the small corner, partners drawn near each other so that ties are hit,
  and a few large sizes): which ran and which raised. tests/composed.rs compares dimguard's answer
  with these runs.

Models:

* `pyramid2` (the issue's own): images `a`, `b`; `a` through a stride-4 stem (two stride-2
  convs) and a third stride-2 conv, its stride-8 map upsampled x2 and added to its stride-4 map,
  the sum multiplied by `b`'s stride-4 map.
* `flow2`: a two-frame flow encoder: one encoder (7x7/2, 3x3/2, 3x3/2) per frame, the frames'
  stride-8 maps correlated, the correlation upsampled x2 onto frame 1's stride-4 map.
* `unet3`: a UNet with three max-pool levels, upsampled x2 and concatenated with each skip.
* `winpatch`: Swin-style 4x4 patch embed, padded to 7x7 windows, patch merging (pad to even,
  2x2 gather), windows again on the merged grid. Its answer is H, W = 56*k from 112; its runs
  draw most sizes on that lattice and next to it (one process, the program made once).
* `tokens2`: an image's 16x16 patch tokens added to a second input's token sequence (`h*w == n`
  across inputs), the batch shared.
* `pyramid3`: three images, two through stride-4 stems and one through a stride-8 stem
  upsampled x2, all added: three inputs tied, one through a different stride.
* `skip3`: three inputs joined by a skip concatenation: `a`'s stride-4 map upsampled x2
  against `b`'s and `c`'s stride-2 maps (`a` tied to both through different strides).
* `fusion2`: an RGB branch (stride-4 stem) and a depth branch (3x3/2 conv then a 2x2 max-pool in
  ceil mode), added: the inputs tied through different strides.

Each export runs in a fresh interpreter.

    ~/.cache/dimguard/venv-<hash>/bin/python tools/export_composed.py [NAME ...]
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from make_traces import trim  # noqa: E402

# Cases whose TORCH_TRACE is written too (diagnose reads it: tests/composed.rs).
TRACED = {"pyramid2"}

MODELS = r'''
import torch
import torch.nn as nn
import torch.nn.functional as F


def c3(i, o, s=2):
    return nn.Conv2d(i, o, 3, s, 1)


class Pyramid2(nn.Module):
    def __init__(self):
        super().__init__()
        self.a1, self.a2, self.a3 = c3(3, 4), c3(4, 4), c3(4, 4)
        self.b1, self.b2 = c3(3, 4), c3(4, 4)

    def forward(self, a, b):
        f4 = self.a2(self.a1(a))
        f8 = self.a3(f4)
        p = f4 + F.interpolate(f8, scale_factor=2, mode="nearest")
        return p * self.b2(self.b1(b))


class Flow2(nn.Module):
    def __init__(self):
        super().__init__()
        self.e1 = nn.Conv2d(3, 4, 7, 2, 3)
        self.e2, self.e3 = c3(4, 4), c3(4, 4)

    def forward(self, frame1, frame2):
        f4a = self.e2(self.e1(frame1))
        f8a = self.e3(f4a)
        f8b = self.e3(self.e2(self.e1(frame2)))
        corr = (f8a * f8b).sum(1, keepdim=True)
        return f4a + F.interpolate(corr, scale_factor=2, mode="nearest")


class UNet3(nn.Module):
    def __init__(self):
        super().__init__()
        self.d0, self.d1, self.d2, self.d3 = c3(3, 4, 1), c3(4, 4, 1), c3(4, 4, 1), c3(4, 4, 1)
        self.u2, self.u1, self.u0 = c3(8, 4, 1), c3(8, 4, 1), c3(8, 4, 1)

    def forward(self, x):
        s0 = self.d0(x)
        s1 = self.d1(F.max_pool2d(s0, 2))
        s2 = self.d2(F.max_pool2d(s1, 2))
        y = self.d3(F.max_pool2d(s2, 2))
        y = self.u2(torch.cat([F.interpolate(y, scale_factor=2), s2], 1))
        y = self.u1(torch.cat([F.interpolate(y, scale_factor=2), s1], 1))
        return self.u0(torch.cat([F.interpolate(y, scale_factor=2), s0], 1))


class WinPatch(nn.Module):
    def __init__(self, c=8, win=7):
        super().__init__()
        self.win = win
        self.embed = nn.Conv2d(3, c, 4, 4)
        self.qkv = nn.Linear(c, 3 * c)
        self.merge = nn.Linear(4 * c, c)

    def windows(self, x):
        b, h, w, c = x.shape
        ws = self.win
        ph = (ws - h % ws) % ws
        pw = (ws - w % ws) % ws
        x = F.pad(x, (0, 0, 0, pw, 0, ph))
        hp, wp = h + ph, w + pw
        x = x.reshape(b, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(-1, ws * ws, c)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        x = torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v
        x = x.reshape(b, hp // ws, wp // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(b, hp, wp, c)[:, :h, :w]

    def forward(self, x):
        x = self.embed(x).permute(0, 2, 3, 1)
        x = self.windows(x)
        b, h, w, c = x.shape
        x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        x = self.windows(self.merge(x))
        return x.mean(dim=(1, 2))


class Tokens2(nn.Module):
    def __init__(self, c=8):
        super().__init__()
        self.embed = nn.Conv2d(3, c, 16, 16)

    def forward(self, image, tokens):
        t = self.embed(image).flatten(2).transpose(1, 2)
        return (t + tokens).mean(1)


class Pyramid3(nn.Module):
    def __init__(self):
        super().__init__()
        self.a1, self.a2 = c3(3, 4), c3(4, 4)
        self.b1, self.b2 = c3(3, 4), c3(4, 4)
        self.c1, self.c2, self.c3 = c3(3, 4), c3(4, 4), c3(4, 4)

    def forward(self, a, b, c):
        fa = self.a2(self.a1(a))
        fb = self.b2(self.b1(b))
        fc = F.interpolate(self.c3(self.c2(self.c1(c))), scale_factor=2, mode="nearest")
        return fa + fb + fc


class Skip3(nn.Module):
    """Three inputs joined by a skip concatenation: `a` through a stride-4 stem upsampled x2,
    `b` and `c` each through one stride-2 conv, concatenated (`a` tied to `b` and `c` through
    different strides)."""

    def __init__(self):
        super().__init__()
        self.a1, self.a2 = c3(3, 4), c3(4, 4)
        self.b1, self.c1 = c3(3, 4), c3(2, 2)
        self.out = c3(10, 4, 1)

    def forward(self, a, b, c):
        fa = F.interpolate(self.a2(self.a1(a)), scale_factor=2, mode="nearest")
        return self.out(torch.cat([fa, self.b1(b), self.c1(c)], 1))


class Fusion2(nn.Module):
    def __init__(self):
        super().__init__()
        self.r1, self.r2 = c3(3, 4), c3(4, 4)
        self.d1 = c3(1, 4)

    def forward(self, rgb, depth):
        r = self.r2(self.r1(rgb))
        d = F.max_pool2d(self.d1(depth), 2, ceil_mode=True)
        return r + d
'''

# name: (class, example shapes, dynamic dims per input, sampler)
CASES = {
    "pyramid2": ("Pyramid2", [[2, 3, 64, 64], [2, 3, 64, 64]], {"a": [0, 2, 3], "b": [0, 2, 3]}, "tied"),
    "flow2": ("Flow2", [[2, 3, 64, 96], [2, 3, 64, 96]], {"frame1": [0, 2, 3], "frame2": [0, 2, 3]}, "tied"),
    "unet3": ("UNet3", [[2, 3, 64, 64]], {"x": [0, 2, 3]}, "one"),
    "winpatch": ("WinPatch", [[2, 3, 224, 224]], {"x": [0, 2, 3]}, "win"),
    "tokens2": ("Tokens2", [[2, 3, 64, 96], [2, 24, 8]], {"image": [0, 2, 3], "tokens": [0, 1]}, "tokens"),
    "pyramid3": ("Pyramid3", [[2, 3, 64, 64]] * 3, {"a": [0, 2, 3], "b": [0, 2, 3], "c": [0, 2, 3]}, "tied"),
    "skip3": ("Skip3", [[2, 3, 64, 64], [2, 3, 64, 64], [2, 2, 64, 64]],
              {"a": [0, 2, 3], "b": [0, 2, 3], "c": [0, 2, 3]}, "tied"),
    "fusion2": ("Fusion2", [[2, 3, 64, 64], [2, 1, 64, 64]], {"rgb": [0, 2, 3], "depth": [0, 2, 3]}, "tied"),
}

RUN = r'''
import io, json, random, sys, zipfile, torch
sys.path.insert(0, sys.argv[1])
import models
from torch.export import Dim, export
model, shapes, dyn, out, sampler, n = json.loads(sys.argv[2])
torch.manual_seed(0)
m = getattr(models, model)().eval()
args = tuple(torch.randn(*s) for s in shapes)
ds = {k: {int(i): Dim.AUTO for i in dims} for k, dims in dyn.items()}
ep = export(m, args, dynamic_shapes=ds)
buf = io.BytesIO()
torch.export.save(ep, buf)
with zipfile.ZipFile(buf) as z:
    mj = [k for k in z.namelist() if k.endswith("models/model.json")][0]
    text = z.read(mj)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    z.writestr(mj, text)
rng = random.Random(34)


def size(big):
    r = rng.random()
    if r < 0.3:
        return 8 * rng.randint(1, 16) + rng.choice([0, 0, 0, 1, -1, 5, 6, 7])
    if big and r < 0.05:
        return rng.randint(200, 1100 if sampler != "one" else 300)
    if r < 0.6:
        return rng.randint(2, 40)
    return rng.randint(2, 130)


def near(x):
    r = rng.random()
    if r < 0.4:
        return x
    if r < 0.85:
        return max(2, x + rng.randint(-3, 3))
    return size(True)


def sample():
    batch = rng.randint(1, 4)
    if sampler == "tied":
        h, w = size(True), size(True)
        out = [[batch, shapes[0][1], h, w]]
        for s in shapes[1:]:
            b2 = batch if rng.random() < 0.9 else rng.randint(1, 4)
            out.append([b2, s[1], near(h), near(w)])
        return out
    if sampler == "tokens":
        h, w = rng.randint(2, 200), rng.randint(2, 200)
        n = (h // 16) * (w // 16)
        n = n if rng.random() < 0.6 else max(1, n + rng.randint(-3, 3))
        return [[batch, 3, h, w], [batch, max(n, 1), shapes[1][2]]]
    if sampler == "win":
        # Windows of 7 on a stride-4 grid and again after merging: sizes pass from 112; half the
        # draws near there, half anywhere small (running is cheap at these sizes).
        # The answer is H, W = 56*k from 112: draws on that lattice, next to it, and anywhere.
        def side():
            r = rng.random()
            if r < 0.55:
                return 56 * rng.randint(2, 5)
            if r < 0.75:
                return 56 * rng.randint(1, 5) + rng.choice([-7, -4, -1, 1, 4, 7, 28])
            return size(False)
        return [[batch, shapes[0][1], side(), side()]]
    return [[batch, shapes[0][1], size(True), size(True)]]


runs, seen = [], set()
module = ep.module()
while len(runs) < n:
    shp = sample()
    key = json.dumps(shp)
    if key in seen:
        continue
    seen.add(key)
    try:
        with torch.no_grad():
            module(*[torch.randn(*s) for s in shp])
        runs.append([shp, True])
    except Exception:  # noqa: BLE001
        runs.append([shp, False])
print(json.dumps({"runs": runs, "torch": torch.__version__,
                  "ranges": {str(k): [str(v.lower), str(v.upper)] for k, v in ep.range_constraints.items()}}))
'''


def main(names):
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "models.py"), "w") as f:
            f.write(MODELS)
        for case in names:
            model, shapes, dyn, sampler = CASES[case]
            base = f"{case}_composed"
            pt2 = os.path.join(ROOT, "tests", "data", "pt2", base + ".pt2")
            arg = json.dumps([model, shapes, dyn, pt2, sampler, 1000])
            tdir = os.path.join(tmp, "trace_" + case)
            env = dict(os.environ, TORCH_TRACE=tdir) if case in TRACED else dict(os.environ)
            res = subprocess.run([sys.executable, "-c", RUN, tmp, arg], capture_output=True,
                                 text=True, cwd=tmp, timeout=1800, env=env)
            if res.returncode != 0:
                sys.exit(f"{case}: {res.stderr[-3000:]}")
            if case in TRACED:
                lines = []
                for name in sorted(os.listdir(tdir)):
                    with open(os.path.join(tdir, name)) as f:
                        lines.extend(f.read().splitlines())
                with open(os.path.join(ROOT, "tests", "data", "traces", base + ".log"), "w") as f:
                    f.write("\n".join(trim(lines)).replace(tmp + "/", "") + "\n")
            rec = json.loads(res.stdout.strip().splitlines()[-1])
            rec["model"] = model
            rec["inputs"] = dyn
            with open(os.path.join(ROOT, "tests", "data", "pt2", base + ".runs.json"), "w") as f:
                json.dump(rec, f)
                f.write("\n")
            ok = sum(1 for _, r in rec["runs"] if r)
            print(f"{case}: ranges {rec['ranges']}, runs {ok}/{len(rec['runs'])} pass", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(CASES))
