"""``dimguard.export`` on real models (torch 2.15, CPU, no weights): timm's ``mobilevit_xxs`` and
transformers' Swin built from a small config, each with a dynamic batch (1..16) and dynamic H, W.

    LD_LIBRARY_PATH=$PWD/third_party/z3/dist/lib PYTHONPATH=python \\
        python tools/export_real.py mvit|swin [--out tests/data/export_real/<name>.json]

Needs timm / transformers (not in CI's test venv): the results are committed as
``tests/data/export_real/<name>.json`` and read by ``python/tests/test_export_real.py``.

Prints each round (what torch said, what dimguard did, torch's seconds and dimguard's, of which
reading the trace), the final spec and what the returned program does, checked by running it:

* its own example input (the user's) and the sizes it was traced at;
* for H, W on a grid of sizes of the user's range (and the batch at 1 and 16): whether
  ``report.accepts`` says it runs, against whether it does (``ep.module()(x)``).

The JSON keeps, per round, the outcome, torch's first error line, the notes, the example shapes
and the timings; the final spec; and every (shape, accepts, runs) triple.
"""

import argparse
import json
import os
import re
import sys
import time

import torch
from torch.export import Dim

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import dimguard  # noqa: E402


def model(which):
    torch.manual_seed(0)
    if which == "mvit":
        import timm

        m = timm.create_model("mobilevit_xxs", pretrained=False).eval()
        x = torch.randn(1, 3, 256, 256)
        ds = {"x": {0: Dim("batch", min=1, max=16), 2: Dim("h", min=96, max=512), 3: Dim("w", min=96, max=512)}}
        return m, (x,), ds, "x", (96, 512)
    from transformers import SwinConfig, SwinModel

    cfg = SwinConfig(image_size=224, patch_size=4, embed_dim=32, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], window_size=7)
    m = SwinModel(cfg).eval()
    x = torch.randn(2, 3, 224, 224)
    ds = {"pixel_values": {0: Dim("batch", min=1, max=16), 2: Dim("h", min=64, max=512), 3: Dim("w", min=64, max=512)}}
    return m, (x,), ds, "pixel_values", (64, 512)


def runs(ep, x):
    try:
        with torch.no_grad():
            ep.module()(x)
        return True
    except Exception:  # noqa: BLE001 - any refusal counts
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("which", choices=["mvit", "swin"])
    p.add_argument("--out")
    p.add_argument("--grid", type=int, default=6, help="H and W values probed per axis")
    a = p.parse_args()
    m, args, ds, inp, (lo, hi) = model(a.which)
    print(f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    t0 = time.perf_counter()
    ep, rep = dimguard.export(m, args, dynamic_shapes=ds)
    wall = time.perf_counter() - t0
    d = rep.to_dict()
    print(rep)
    print(f"wall {wall:.1f} s; torch {d['torch_seconds']:.2f} s; dimguard {d['dimguard_seconds']:.3f} s ({100 * d['overhead']:.1f}%)")
    rounds = [
        {k: r.get(k) for k in ("round", "outcome", "error", "notes", "example", "torch_seconds", "dimguard_seconds", "provenance_seconds", "example_seconds", "diagnose_seconds", "audit_seconds", "spec")}
        for r in d["rounds"]
    ]
    for r in rounds:
        parts = ", ".join(f"{k.split('_')[0]} {r[k]:.3f} s" for k in ("provenance_seconds", "example_seconds", "diagnose_seconds", "audit_seconds") if r.get(k) is not None)
        print(f"round {r['round']}: {r['outcome']}: torch {r['torch_seconds']:.2f} s, dimguard {r['dimguard_seconds']:.3f} s ({parts})")
    # What the returned program does, checked by running it.
    x = args[0]
    own = tuple(x.shape)
    checks = []

    def probe(shape):
        acc = bool(rep.accepts({inp: shape}))
        ran = runs(ep, torch.randn(*shape))
        checks.append({"shape": list(shape), "accepts": acc, "runs": ran})
        print(f"  {shape}: report.accepts={acc} runs={ran}" + ("" if acc == ran else "   <-- MISMATCH"), flush=True)

    print("the user's example input:")
    probe(own)
    traced = [tuple(t.shape) for t in ep.example_inputs[0]]
    print("the program's own example inputs:", traced)
    for t in traced:
        probe(t)
    hs = sorted({lo, hi, own[2], *[lo + (hi - lo) * i // (a.grid - 1) for i in range(a.grid)]})
    # Sizes the report accepts (so the grid is not all refusals): the ends of each set.
    for idx in (2, 3):
        try:
            s = rep.accepted(inp, idx)
            hs += [s.min, s.max]
        except (KeyError, ValueError):
            pass
    hs = sorted(set(hs))
    for h in hs:
        probe((1, 3, h, own[3]))
    for w in hs:
        probe((1, 3, own[2], w))
    for b in (1, 16):
        probe((b, 3, own[2], own[3]))
    spec = d["spec"]
    names = sorted(set(re.findall(r"^(\w+) = Dim\(", spec, re.M)))
    result = {
        "model": a.which,
        "torch": torch.__version__,
        "user_spec": {k: {str(i): (v.__name__, int(v.min), int(v.max)) for i, v in dims.items()} for k, dims in ds.items()},
        "example": list(own),
        "rounds": rounds,
        "spec": spec,
        "spec_vs_program": d.get("spec_vs_program"),
        "spec_names": names,
        "accepted": {str(i): _set(rep, inp, i) for i in range(len(own))},
        "static": d.get("static"),
        "torch_seconds": d["torch_seconds"],
        "dimguard_seconds": d["dimguard_seconds"],
        "checks": checks,
    }
    bad = [c for c in checks if c["accepts"] != c["runs"]]
    print(f"spec names: {names}; {len(checks)} shapes probed, {len(bad)} mismatches")
    if a.out:
        with open(a.out, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")


def _set(rep, inp, i):
    try:
        return rep.accepted(inp, i).to_dict()
    except (KeyError, ValueError) as e:
        return str(e)


if __name__ == "__main__":
    main()
