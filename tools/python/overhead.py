"""Time of dimguard.export beyond torch's own export time, on the test models.

    python tools/python/overhead.py        (with torch 2.15, torchvision and dimguard installed)

Prints one row per model: rounds, torch.export seconds (all rounds), dimguard seconds (diagnosis,
spec merge, audit of the program; wall clock, as ExportReport records them), and dimguard's share;
then one row per round (``--rounds``): torch's seconds, dimguard's, the part of dimguard's spent
reading the round's structured trace (``provenance_seconds``), and dimguard's share.
"""

import os
import sys

import torch
import torchvision
from torch.export import Dim

import dimguard

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "tests"))
from models import ConvStack, Decoder, FlowNet, OddTiles, UNet  # noqa: E402


def cases():
    a = torch.randn(1, 3, 96, 128)
    yield "conv stack (Mod guard)", ConvStack(), (torch.randn(2, 3, 64, 48),), {"x": {2: Dim("h", min=32, max=512)}}
    yield "googlenet (solver crash)", torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=False), (torch.randn(1, 3, 224, 224),), {"x": {2: Dim("h", min=64, max=320), 3: Dim("w", min=64, max=320)}}
    yield "squeezenet1_0 (solver crash)", torchvision.models.squeezenet1_0(weights=None), (torch.randn(1, 3, 224, 224),), {"x": {2: Dim("h", min=64, max=320), 3: Dim("w", min=64, max=320)}}
    h, w = Dim("h", min=32, max=512), Dim("w", min=32, max=512)
    yield "flow, shared H/W", FlowNet(), (a, a.clone()), {"image1": {2: h, 3: w}, "image2": {2: h, 3: w}}
    yield "UNet pixel_shuffle", UNet(), (a,), {"x": {2: Dim("h", min=16, max=512), 3: Dim("w", min=16, max=512)}}
    yield "odd tiles (32*_w - 16)", OddTiles(), (torch.randn(2, 3, 4, 48),), {"x": {0: Dim("batch", min=1, max=16), 3: Dim("w", min=16, max=512)}}
    yield "decoder s0+1", Decoder(), (torch.randint(0, 100, (2, 10)),), {"ids": {1: Dim("seq", min=1, max=128)}}


# Warm torch up once, so the first model does not pay for its imports.
torch.export.export(torch.nn.Linear(2, 2), (torch.randn(3, 2),))

print(f"load average before: {os.getloadavg()[0]:.1f}")
print("| model | rounds | torch.export s | dimguard s | dimguard's share |")
print("|---|---|---|---|---|")
tot_t = tot_d = 0.0
per_round = []
for name, m, args, ds in cases():
    m = m.eval()
    ep, rep = dimguard.export(m, args, dynamic_shapes=ds, verbose=False)
    t, d = rep.torch_seconds, rep.dimguard_seconds
    tot_t, tot_d = tot_t + t, tot_d + d
    print(f"| {name} | {len(rep.rounds)} | {t:.2f} | {d:.3f} | {100 * d / t:.2f}% |", flush=True)
    for r in rep.to_dict()["rounds"]:
        per_round.append((name, r["round"], r["outcome"], r["torch_seconds"], r["dimguard_seconds"], r.get("provenance_seconds", 0.0)))
print(f"| all | | {tot_t:.2f} | {tot_d:.3f} | {100 * tot_d / tot_t:.2f}% |")
if "--rounds" in sys.argv:
    print()
    print("| model | round | outcome | torch.export s | dimguard s | of which trace s | dimguard's share |")
    print("|---|---|---|---|---|---|---|")
    for name, n, out, t, d, p in per_round:
        print(f"| {name} | {n} | {out} | {t:.2f} | {d:.3f} | {p:.3f} | {100 * d / t:.1f}% |")
