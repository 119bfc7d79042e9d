"""Exports small vision models whose input sizes are *linked* by guards (window attention,
relative-position tables, patch grids, conv-attention hybrids), plus torchvision's swin_t
(`swin_t_auto`: Dim.AUTO over batch 1..32, H and W 96..1024) and maxvit_t when they export with
dynamic batch, H and W, and writes each program's `model.json` (extracted from the .pt2 archive;
a large one as a compressed .pt2 holding only it) to tests/data/pt2/, with a brute-force oracle
file `<name>.oracle.json`: every guard of `guards_code` evaluated (Python, the guard code itself)
at every (batch, H, W) of the claimed box, or of a sub-box of it (`SUB_BOX`).

    /work/venvs/torch215/bin/python tools/export_linked.py [NAME ...]
    /work/venvs/torch215/bin/python tools/export_linked.py --oracle-only NAME ...   # oracle again
"""
import json
import sys
import time
import zipfile
import io
import pathlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "pt2"


class WindowAttention(nn.Module):
    """Swin-style: 4x4 patch embed, pad to a multiple of the 7x7 window, attention per window."""

    def __init__(self, c=32, win=7):
        super().__init__()
        self.win = win
        self.embed = nn.Conv2d(3, c, 4, 4)
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)

    def forward(self, x):
        x = self.embed(x)  # B C h w
        b, c, h, w = x.shape
        ws = self.win
        ph = (ws - h % ws) % ws
        pw = (ws - w % ws) % ws
        x = F.pad(x, (0, pw, 0, ph))
        hp, wp = h + ph, w + pw
        x = x.permute(0, 2, 3, 1)
        x = x.reshape(b, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(-1, ws * ws, c)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(-1, -2) / c**0.5, dim=-1)
        x = self.proj(a @ v)
        x = x.reshape(b, hp // ws, wp // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(b, hp, wp, c)[:, :h, :w]
        return x.mean(dim=(1, 2))


class PatchGrid(nn.Module):
    """ViT-style: 16x16 patches plus a learned position table for a 14x14 grid (196 tokens)."""

    def __init__(self, c=32):
        super().__init__()
        self.embed = nn.Conv2d(3, c, 16, 16)
        self.pos = nn.Parameter(torch.zeros(1, 196, c))
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)  # B N C
        x = x + self.pos
        return self.fc(x.mean(1))


class RelativePosition(nn.Module):
    """Attention over a 4x-downsampled grid with a relative-position bias table indexed for a
    fixed 8x8 grid: the bias is (heads, 64, 64), so the grid must have 64 tokens."""

    def __init__(self, c=16, heads=2, g=8):
        super().__init__()
        self.heads = heads
        self.embed = nn.Conv2d(3, c, 3, 2, 1)
        self.down = nn.Conv2d(c, c, 3, 2, 1)
        self.qkv = nn.Linear(c, 3 * c)
        table = torch.zeros((2 * g - 1) * (2 * g - 1), heads)
        coords = torch.stack(torch.meshgrid(torch.arange(g), torch.arange(g), indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (g - 1)
        self.register_buffer("index", rel[..., 0] * (2 * g - 1) + rel[..., 1])
        self.table = nn.Parameter(table)

    def forward(self, x):
        x = self.down(self.embed(x))
        b, c, h, w = x.shape
        x = x.flatten(2).transpose(1, 2)
        q, k, v = self.qkv(x).reshape(b, h * w, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        bias = self.table[self.index.flatten()].reshape(64, 64, -1).permute(2, 0, 1)
        a = torch.softmax(q @ k.transpose(-1, -2) + bias, dim=-1)
        return (a @ v).mean(dim=(1, 2))


class ConvAttention(nn.Module):
    """Conv stem downsampling by 32, then attention with a 7x7 position table (49 tokens) and
    tokens regrouped in chunks of 49 across the batch."""

    def __init__(self, c=16):
        super().__init__()
        layers = []
        cin = 3
        for _ in range(5):
            layers += [nn.Conv2d(cin, c, 3, 2, 1), nn.ReLU()]
            cin = c
        self.stem = nn.Sequential(*layers)
        self.pos = nn.Parameter(torch.zeros(49, c))
        self.attn = nn.MultiheadAttention(c, 2, batch_first=True)

    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        x = x + self.pos
        x, _ = self.attn(x, x, x)
        return x.mean(1)


def tv(name):
    import torchvision

    return getattr(torchvision.models, name)(weights=None)


# name -> (module factory, example input shape, dynamic_shapes for x)
B = Dim("batch", min=1, max=32)
MODELS = {
    "window_attention": (
        WindowAttention,
        (2, 3, 224, 224),
        {0: Dim.AUTO(min=1, max=32), 2: Dim.AUTO(min=32, max=512), 3: Dim.AUTO(min=32, max=512)},
    ),
    "window_attention_auto": (
        WindowAttention,
        (2, 3, 224, 224),
        {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO},
    ),
    "patch_grid": (
        PatchGrid,
        (2, 3, 224, 224),
        {0: Dim.AUTO(min=1, max=32), 2: Dim.AUTO(min=16, max=1024), 3: Dim.AUTO(min=16, max=1024)},
    ),
    "relative_position": (
        RelativePosition,
        (2, 3, 32, 32),
        {0: B, 2: Dim("h", min=8, max=512), 3: Dim("w", min=8, max=512)},
    ),
    "conv_attention": (
        ConvAttention,
        (2, 3, 224, 224),
        {0: B, 2: 32 * Dim("_h", min=1, max=16), 3: 32 * Dim("_w", min=1, max=16)},
    ),
    # torchvision's Swin-T, the hierarchical ViT: explicit Dims fail (ConstraintViolation on the
    # window guards); Dim.AUTO with the same ranges exports (669 guards, ~5 min on one CPU).
    "swin_t_auto": (
        lambda: tv("swin_t"),
        (2, 3, 224, 224),
        {0: Dim.AUTO(min=1, max=32), 2: Dim.AUTO(min=96, max=1024), 3: Dim.AUTO(min=96, max=1024)},
    ),
    "swin_t": (
        lambda: tv("swin_t"),
        (2, 3, 224, 224),
        {0: B, 2: Dim("h", min=96, max=512), 3: Dim("w", min=96, max=512)},
    ),
    "maxvit_t": (
        lambda: tv("maxvit_t"),
        (2, 3, 224, 224),
        {0: B, 2: 32 * Dim("_h", min=3, max=16), 3: 32 * Dim("_w", min=3, max=16)},
    ),
}


# Programs whose claimed box is too large for the Python oracle: it covers a sub-box (values per
# side: batch, H, W, from the low end), and the program is kept as a compressed .pt2 archive.
SUB_BOX = {"swin_t_auto": (8, 320, 320)}


def model_json(pt2_bytes):
    with zipfile.ZipFile(io.BytesIO(pt2_bytes)) as z:
        for n in z.namelist():
            if n.endswith("models/model.json"):
                return json.loads(z.read(n))
    raise RuntimeError("no models/model.json in the archive")


class Sizes:
    def __init__(self, s):
        self.s = s

    def size(self):
        return self.s


def oracle(guards, box):
    """Every (batch, H, W) of the claimed box that passes every guard, by evaluating the guard
    code itself (plain Python ints: PyTorch's own semantics; a guard that raises fails). Guards
    that do not mention the batch are evaluated once per (H, W); the answer is the same as
    evaluating all of them at every tuple."""
    import math

    code = [(compile(g, "<guard>", "eval"), "size()[0]" in g) for g in guards]
    (blo, bhi), (hlo, hhi, hstep), (wlo, whi, wstep) = box

    def holds(c, b, h, w):
        env = {"L": {"x": Sizes([b, 3, h, w])}, "torch": torch, "math": math}
        try:
            return bool(eval(c, env))
        except (ZeroDivisionError, ValueError, OverflowError):
            return False

    hw_guards = [c for c, uses_b in code if not uses_b]
    b_guards = [c for c, uses_b in code if uses_b]
    passing = []
    for h in range(hlo, hhi + 1, hstep):
        for w in range(wlo, whi + 1, wstep):
            if not all(holds(c, blo, h, w) for c in hw_guards):
                continue
            for b in range(blo, bhi + 1):
                if all(holds(c, b, h, w) for c in b_guards):
                    passing.append((b, h, w))
    return passing


def claimed_box(ep, dyn):
    """(batch lo, hi), (H lo, hi, step), (W lo, hi, step) from the program's range_constraints."""
    x = [n for n in ep.graph.nodes if n.op == "placeholder" and n.name == "x"][0]
    sizes = x.meta["val"].shape
    out = []
    for i in (0, 2, 3):
        s = sizes[i]
        expr = s.node.expr if isinstance(s, torch.SymInt) else None
        if expr is None:
            out.append((int(s), int(s)) if i == 0 else (int(s), int(s), 1))
            continue
        syms = list(expr.free_symbols)
        assert len(syms) == 1, expr
        r = ep.range_constraints[syms[0]]
        lo = int(r.lower)
        try:
            hi = int(r.upper)
        except Exception:  # int_oo: unbounded
            hi = None
        k = int(expr.coeff(syms[0])) if expr != syms[0] else 1
        hi = None if hi is None else k * hi
        out.append((k * lo, hi) if i == 0 else (k * lo, hi, k))
    return out


def main(names):
    OUT.mkdir(parents=True, exist_ok=True)
    for name in names:
        make, shape, dyn = MODELS[name]
        torch.manual_seed(0)
        m = make().eval()
        x = torch.randn(*shape)
        t0 = time.time()
        try:
            ep = torch.export.export(m, (x,), dynamic_shapes={"x": dyn})
        except Exception as e:  # report and go on: the docs list what exported
            print(f"{name}: export failed: {type(e).__name__}: {str(e)[:2000]}")
            continue
        buf = io.BytesIO()
        torch.export.save(ep, buf)
        mj = model_json(buf.getvalue())
        guards = mj.get("guards_code") or []
        if name in SUB_BOX:
            with zipfile.ZipFile(OUT / f"{name}.pt2", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
                z.writestr(f"{name}/models/model.json", json.dumps(mj))
        else:
            (OUT / f"{name}.model.json").write_text(json.dumps(mj))
        print(f"{name}: exported in {time.time() - t0:.1f}s, {len(guards)} guards")
        box = claimed_box(ep, dyn)
        if any(r[1] is None for r in box):
            print(f"{name}: unbounded claimed range {box}: no brute force")
            continue
        extra = {}
        if name in SUB_BOX:
            nb, nh, nw = SUB_BOX[name]
            (bl, bh), (hl, hh, hs), (wl, wh, ws) = box
            extra = {"claimed_box": box, "sub_box": True}
            box = [(bl, min(bh, bl + nb - 1)), (hl, min(hh, hl + hs * (nh - 1)), hs), (wl, min(wh, wl + ws * (nw - 1)), ws)]
        write_oracle(name, guards, box, torch.__version__, extra)


def write_oracle(name, guards, box, version, extra=None):
    t0 = time.time()
    passing = oracle(guards, box)
    dt = time.time() - t0
    total = (box[0][1] - box[0][0] + 1) * len(range(box[1][0], box[1][1] + 1, box[1][2])) * len(
        range(box[2][0], box[2][1] + 1, box[2][2])
    )
    hw = sorted({(h, w) for _, h, w in passing})
    batches = sorted({b for b, _, _ in passing})
    rec = {
        "model": name,
        "torch": version,
        "guards": len(guards),
        "box": {"batch": box[0], "h": box[1], "w": box[2]},
        "claimed": total,
        "passing": len(passing),
        # True when the passing tuples are exactly batch_values x hw_pairs_all.
        "factors": len(passing) == len(batches) * len(hw),
        "hw_pairs": len(hw),
        "batch_values": batches,
        "h_values": sorted({h for _, h, _ in passing}),
        "w_values": sorted({w for _, _, w in passing}),
        "hw_pairs_all": hw,
        "brute_force_seconds": round(dt, 2),
        **(extra or {}),
    }
    (OUT / f"{name}.oracle.json").write_text(json.dumps(rec) + "\n")
    print(f"{name}: claimed {total}, pass {len(passing)} ({len(hw)} (H, W) pairs), brute force {dt:.1f}s")


def refresh(names):
    """Recomputes the oracle files from the saved model.json and the recorded box."""
    for name in names:
        if (OUT / f"{name}.pt2").exists():
            guards = model_json((OUT / f"{name}.pt2").read_bytes()).get("guards_code") or []
        else:
            guards = json.loads((OUT / f"{name}.model.json").read_text()).get("guards_code") or []
        old = json.loads((OUT / f"{name}.oracle.json").read_text())
        box = (tuple(old["box"]["batch"]), tuple(old["box"]["h"]), tuple(old["box"]["w"]))
        extra = {k: old[k] for k in ("claimed_box", "sub_box") if k in old}
        write_oracle(name, guards, box, old["torch"], extra)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--oracle-only"]:
        refresh(sys.argv[2:])
    else:
        main(sys.argv[1:] or list(MODELS))
