"""Eight more composed programs (issue 41), of families not in ../shared/programs/composed/ nor
in tools/export_composed.py's set, written in the shared set's format by the shared set's own code:

  tests/data/composed/NAME.model.json   the program as `dimguard check` reads it
  tests/data/composed/NAME.truth.json   whether ep.module() runs or raises at >= 1,000 sampled
                                        shape tuples (meta tensors, checked against real ones)

Export, program JSON, path neutralisation, truth recording and the file format are
../shared/programs/composed/make.py's (imported and called, not copied); this file adds the
models, their dynamic dims and a sampler per model (so that enough samples run). Dim.AUTO, no
bounds, on the batch and every spatial / sequence size; channels and feature sizes static.

Models (1-4 channels, random init, eval):

* `pixel_shuffle`: pixel_unshuffle(2), a 3x3 conv, a stride-2 conv (ceil), a 1x1 conv to 16
  channels, pixel_shuffle(2), added to the unshuffled map: H, W each 0 mod 4.
* `reflect_pad`: reflect padding 3, a 7x7 stride-2 conv, reflect padding 1, a 3x3 stride-2 conv,
  nearest x2 and an add: the padding must be smaller than the size at each level.
* `unfold_fold`: unfold (kernel 3, stride 2, padding 1: ceil(H/2)*ceil(W/2) tokens), a Linear
  over the 27 features to 16, fold back to (H, W) with kernel 2, stride 2 ((H//2)*(W//2) blocks).
* `wav2vec_text`: audio (B, 1, T) through a wav2vec-style conv stack (k10 s5, k3 s2, k3 s2,
  k2 s2), frames added to a text embedding (B, L, 4): L equals the frame count of T.
* `image_mask`: an image (B, 3, H, W) through a 4x4 stride-4 patch conv, multiplied by a mask
  (B, 1, H//4, W//4), then a ceil-mode 2x2 average pool: the mask's sizes are image // 4.
* `patch_pos`: 16x16 patches plus a fixed 8x8 position table sliced to the patch grid
  (pos[:, :, :H//16, :W//16]): H, W each in 16..143 (a window of sizes).
* `unet_ceil`: a 3-level U-Net, max pools in ceil mode, nearest x2 upsampling concatenated with
  each skip: H, W each 0 mod 8.
* `tokens_two`: two images of different sizes whose 16x16 patch tokens are added:
  (H1//16)*(W1//16) = (H2//16)*(W2//16).

    PYTHONPATH=<dimguard site> nice -n 10 python tools/export_composed_truths.py [NAME ...] [--n N]

(`--n`: samples per box, two boxes; default 600. It re-executes itself with PYTHONHASHSEED=0,
as make.py does.)
"""

import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(ROOT, "..", "shared", "programs", "composed")
OUT = os.path.join(ROOT, "tests", "data", "composed")

if __name__ == "__main__" and os.environ.get("PYTHONHASHSEED") != "0":
    os.environ["PYTHONHASHSEED"] = "0"
    os.execv(sys.executable, [sys.executable, os.path.abspath(__file__)] + sys.argv[1:])

import importlib.util  # noqa: E402


def _by_path(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _load_make():
    """../shared/programs/composed/make.py, and the `models` it imports, under names of their
    own: under pytest another `make` (tests/data/forms/shapesspec/make.py) or `models`
    (python/tests/models.py) may be in sys.modules already."""
    models = _by_path("shared_composed_models", os.path.join(SHARED, "models.py"))
    before = sys.modules.get("models")
    sys.modules["models"] = models
    try:
        return _by_path("shared_composed_make", os.path.join(SHARED, "make.py"))
    finally:
        if before is None:
            del sys.modules["models"]
        else:
            sys.modules["models"] = before


make = _load_make()
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.export import Dim  # noqa: E402


# --------------------------------------------------------------------------------------------
# models


class PixelShuffle(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = nn.Conv2d(12, 4, 3, padding=1)
        self.down = nn.Conv2d(4, 4, 3, stride=2, padding=1)
        self.expand = nn.Conv2d(4, 16, 1)

    def forward(self, x):
        a = self.inp(F.pixel_unshuffle(x, 2))          # H/2 (H even)
        b = F.pixel_shuffle(self.expand(self.down(a)), 2)  # 2*ceil(H/4)
        return a + b


class ReflectPad(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 7, stride=2)
        self.c2 = nn.Conv2d(4, 4, 3, stride=2)

    def forward(self, x):
        a = self.c1(F.pad(x, (3, 3, 3, 3), mode="reflect"))   # ceil(H/2)
        b = self.c2(F.pad(a, (1, 1, 1, 1), mode="reflect"))   # ceil(ceil(H/2)/2)
        return a + F.interpolate(b, scale_factor=2, mode="nearest")


class UnfoldFold(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(27, 16)

    def forward(self, x):
        h, w = x.shape[2], x.shape[3]
        t = F.unfold(x, kernel_size=3, stride=2, padding=1)   # B, 27, ceil(h/2)*ceil(w/2)
        t = self.mix(t.transpose(1, 2)).transpose(1, 2)     # B, 16, L
        y = F.fold(t, output_size=(h, w), kernel_size=2, stride=2)  # needs L = (h//2)*(w//2)
        return y + x[:, :1]


class Wav2VecText(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1, c, 10, 5), nn.Conv1d(c, c, 3, 2),
                                    nn.Conv1d(c, c, 3, 2), nn.Conv1d(c, c, 2, 2)])
        self.proj = nn.Linear(c, 4)

    def forward(self, audio, text):
        a = audio
        for conv in self.convs:
            a = F.gelu(conv(a))
        frames = self.proj(a.transpose(1, 2))   # B, F(T), 4
        return frames + text                    # text: B, L, 4 with L = F(T)


class ImageMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = nn.Conv2d(3, 4, 4, stride=4)

    def forward(self, image, mask):
        f = self.patch(image) * mask              # mask: B, 1, H//4, W//4
        return F.avg_pool2d(f, 2, ceil_mode=True)


class PatchPos(nn.Module):
    def __init__(self, c=4, grid=8):
        super().__init__()
        self.patch = nn.Conv2d(3, c, 16, stride=16)
        self.pos = nn.Parameter(torch.randn(1, c, grid, grid) * 0.02)

    def forward(self, x):
        p = self.patch(x)
        h, w = p.shape[2], p.shape[3]
        p = p + self.pos[:, :, :h, :w]
        return p.flatten(2).transpose(1, 2)


class UNetCeil(nn.Module):
    def __init__(self):
        super().__init__()
        c = lambda i, o: nn.Conv2d(i, o, 3, padding=1)  # noqa: E731
        self.d0, self.d1, self.d2, self.d3 = c(3, 4), c(4, 4), c(4, 4), c(4, 4)
        self.u2, self.u1, self.u0 = c(8, 4), c(8, 4), c(8, 4)

    def forward(self, x):
        pool = lambda t: F.max_pool2d(t, 2, ceil_mode=True)  # noqa: E731
        up = lambda t: F.interpolate(t, scale_factor=2, mode="nearest")  # noqa: E731
        s0 = self.d0(x)
        s1 = self.d1(pool(s0))
        s2 = self.d2(pool(s1))
        y = self.d3(pool(s2))
        y = self.u2(torch.cat([up(y), s2], 1))
        y = self.u1(torch.cat([up(y), s1], 1))
        return self.u0(torch.cat([up(y), s0], 1))


class TokensTwo(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.pa = nn.Conv2d(3, c, 16, stride=16)
        self.pb = nn.Conv2d(3, c, 16, stride=16)

    def forward(self, x, y):
        ta = self.pa(x).flatten(2).transpose(1, 2)
        tb = self.pb(y).flatten(2).transpose(1, 2)
        return ta + tb


def img(h=64, w=96, c=3):
    return torch.randn(2, c, h, w)


def build():
    """name -> (model, example_args, input names), as make.py's models.build."""
    torch.manual_seed(0)
    return {
        "pixel_shuffle": (PixelShuffle(), (img(),), ["x"]),
        "reflect_pad": (ReflectPad(), (img(),), ["x"]),
        "unfold_fold": (UnfoldFold(), (img(),), ["x"]),
        # T = 16000: frames 3199 -> 1599 -> 799 -> 399
        "wav2vec_text": (Wav2VecText(), (torch.randn(2, 1, 16000), torch.randn(2, 399, 4)), ["audio", "text"]),
        "image_mask": (ImageMask(), (img(), torch.randn(2, 1, 16, 24)), ["image", "mask"]),
        "patch_pos": (PatchPos(), (img(),), ["x"]),
        "unet_ceil": (UNetCeil(), (img(),), ["x"]),
        "tokens_two": (TokensTwo(), (img(), img(96, 64)), ["x", "y"]),
    }


# Dynamic dims per input (Dim.AUTO): images' batch, H, W; audio's batch and length; text's batch
# and length. Channels and feature sizes static.
DYNAMIC = {"audio": (0, 2), "text": (0, 1)}


def dynamic_shapes(args, names):
    return {n: {i: Dim.AUTO for i in DYNAMIC.get(n, (0, 2, 3))} for n, a in zip(names, args)}


# --------------------------------------------------------------------------------------------
# sampling: make.truth calls make.draw(name, names, example, rng, box)


def frames(t):
    for k, s in ((10, 5), (3, 2), (3, 2), (2, 2)):
        t = (t - k) // s + 1
    return t


def _side(rng, box, example, period):
    """One spatial size: make.py's modes (uniform, 16*k + offset, example + 16*k) or, 30% of the
    time, a multiple of `period` plus an offset in -2..2."""
    lo, hi = box["spatial"]
    mode = make._pick(rng, (("uniform", 0.25), ("lattice", 0.2), ("aligned", 0.2), ("period", 0.35)))
    if mode == "period":
        return mode, min(hi, max(lo, period * rng.randint(1, hi // period) + rng.choice([0, 0, 0, -2, -1, 1, 2])))
    return mode, make._size(rng, box, mode, example)


def draw(name, names, example, rng, box):
    b = rng.randint(*box["batch"])
    partner_b = lambda: b if rng.random() < 0.9 else rng.randint(*box["batch"])  # noqa: E731
    lo, hi = box["spatial"]
    if name == "wav2vec_text":
        # audio length: 16*spatial box (small 32..2560, wide 32..65536); uniform or near a
        # stride-40 lattice; text: the frame count (45%), that + offset in -3..3 (35%), uniform
        tlo, thi = 16 * lo, 16 * hi
        if rng.random() < 0.5:
            t, tm = rng.randint(tlo, thi), "uniform"
        else:
            t, tm = min(thi, max(tlo, 40 * rng.randint(1, thi // 40) + rng.randint(-12, 12))), "lattice"
        f = max(frames(t), 1)
        u = rng.random()
        if u < 0.45:
            L, lm = f, "equal"
        elif u < 0.8:
            L, lm = max(1, f + rng.randint(-3, 3)), "near"
        else:
            L, lm = rng.randint(1, max(2, frames(thi))), "independent"
        return {"audio": [b, 1, t], "text": [partner_b(), L, 4]}, f"{tm}/{lm}"
    period = {"pixel_shuffle": 4, "unfold_fold": 2, "unet_ceil": 8, "reflect_pad": 4,
              "image_mask": 4, "patch_pos": 16, "tokens_two": 16}[name]
    first = names[0]
    if name == "patch_pos" and rng.random() < 0.5:
        # half the draws in and near the window 16..143 (every box)
        h, w, mode = rng.randint(2, 170), rng.randint(2, 170), "window"
    else:
        mode, h = _side(rng, box, example[first][2], period)
        _, w = _side(rng, box, example[first][3], period)
    shapes = {first: [b, 3, h, w]}
    how = [mode]
    if name == "image_mask":
        u = rng.random()
        if u < 0.45:
            hm, wm, pm = h // 4, w // 4, "quarter"
        elif u < 0.8:
            hm, wm, pm = max(1, h // 4 + rng.randint(-2, 2)), max(1, w // 4 + rng.randint(-2, 2)), "near"
        else:
            hm, wm, pm = rng.randint(1, hi // 4), rng.randint(1, hi // 4), "independent"
        shapes["mask"] = [partner_b(), 1, hm, wm]
        how.append(pm)
    elif name == "tokens_two":
        u = rng.random()
        if u < 0.3:
            h2, w2, pm = h, w, "equal"
        elif u < 0.5:
            h2, w2, pm = w, h, "swapped"
        elif u < 0.65:
            # the same token count through another factorisation: (2a, b/2) when b is even
            a, c = h // 16, w // 16
            if c % 2 == 0 and c > 0:
                a, c = 2 * a, c // 2
            h2, w2, pm = 16 * a + rng.randint(0, 15), 16 * c + rng.randint(0, 15), "refactored"
        elif u < 0.85:
            h2, w2, pm = make._near(rng, h, box), make._near(rng, w, box), "near"
        else:
            _, h2 = _side(rng, box, example["y"][2], 16)
            _, w2 = _side(rng, box, example["y"][3], 16)
            pm = "independent"
        shapes["y"] = [partner_b(), 3, max(lo, h2), max(lo, w2)]
        how.append(pm)
    return shapes, "/".join(how)


SAMPLING = (
    "two boxes, equally many samples each: small (batch 1..4, spatial 2..160) and wide (batch 1..64, "
    "spatial 2..4096); batch uniform; an image's H, W: uniform in the box (25%), 16*k + offset in "
    "-8..8 (20%), the traced example's size + 16*k (20%) or a multiple of the model's period (4, 2, 8, "
    "16) + offset in -2..2 (35%); patch_pos: half the draws uniform in 2..170; wav2vec_text: audio "
    "length uniform in 16x the box (50%) or 40*k + offset in -12..12, text length = the frame count "
    "(45%), that + offset in -3..3 (35%) or uniform; image_mask: mask = image // 4 (45%), that + "
    "offset in -2..2 (35%) or independent; tokens_two: y = x (30%), swapped (20%), the same token "
    "count refactored (15%), near (20%) or independent; partners share the batch 90%; `draw` says "
    "which; duplicates removed (tools/export_composed_truths.py)")


def _prefixes(orig=make._prefixes):
    """make.py's path prefixes plus this checkout's (the models live in tools/ here)."""
    pairs = dict(orig())
    for p in {ROOT, os.path.realpath(ROOT)}:
        pairs[p.rstrip("/") + "/"] = make.NEUTRAL
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def main():
    os.makedirs(OUT, exist_ok=True)
    make.HERE = OUT  # where make.main writes NAME.model.json and NAME.truth.json
    make.build = build
    make.dynamic_shapes = dynamic_shapes
    make.draw = draw
    make.SAMPLING = SAMPLING
    make._prefixes = _prefixes
    if "--n" not in sys.argv:
        sys.argv += ["--n", "600"]
    names = [a for a in sys.argv[1:] if a in build()] or list(build())
    make.main()
    # make.main names the shared set's dynamic dims; say these programs' own
    for name in names:
        path = os.path.join(OUT, name + ".truth.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            text = f.read()
        text = text.replace(
            '"Dim.AUTO on the batch and every spatial size (and t\'s length); channels static"',
            '"Dim.AUTO on the batch and every spatial size (audio\'s and text\'s length); channels '
            'and feature sizes static"', 1)
        with open(path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
