"""Makes real fixtures with PyTorch and checks dimguard's suggestions against torch.export.

Run on a machine with PyTorch and torchvision (the device machine), from the repository root,
with a release build of dimguard at target/release/dimguard:

    python3 tools/device/torch_fixtures.py OUTDIR [messages] [roundtrip] [pt2]

* messages:  exports torchvision models with explicit Dims that their guards do not allow and
             saves the real error texts (OUTDIR/messages/NAME.txt).
* roundtrip: for models whose guards are known, exports with the spec dimguard suggests, then
             runs the exported program on every size of the original range: sizes the
             suggestion admits must run, all others must be rejected (OUTDIR/roundtrip.json).
* pt2:       exports programs and saves their model.json (weights left out) (OUTDIR/pt2/).

Everything is logged to OUTDIR/log.txt.
"""

import json
import os
import signal
import subprocess
import sys
import time
import traceback
import zipfile

import torch
import torchvision
from torch.export import Dim, export

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fixture_models import Raft  # noqa: E402

OUT = sys.argv[1]
WHAT = set(sys.argv[2:]) or {"messages", "roundtrip", "pt2"}
DIMGUARD = os.path.abspath("target/release/dimguard")
DEV = "cuda" if torch.cuda.is_available() else "cpu"
os.makedirs(f"{OUT}/messages", exist_ok=True)
os.makedirs(f"{OUT}/pt2", exist_ok=True)
LOG = open(f"{OUT}/log.txt", "a")


def say(*a):
    print(*a, flush=True)
    print(*a, file=LOG, flush=True)


class Timeout(Exception):
    pass


def _alarm(*_):
    raise Timeout()


signal.signal(signal.SIGALRM, _alarm)


def try_export(model, args, shapes, seconds=150):
    """(exported program, None) or (None, error text as a user would paste it)."""
    signal.alarm(seconds)
    try:
        return export(model, args, dynamic_shapes=shapes), None
    except Timeout:
        return None, "TIMEOUT"
    except Exception as e:  # noqa: BLE001 - we want the text of any export failure
        return None, f"{type(e).__module__}.{type(e).__name__}: {e}"
    finally:
        signal.alarm(0)


# --- torchvision classification / segmentation / optical flow -------------------------------


def image_model(name):
    if name == "googlenet":
        return torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=False)
    if name == "inception_v3":
        return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False)
    if name.startswith("lraspp") or name.startswith("deeplab") or name.startswith("fcn"):
        return getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None)
    return getattr(torchvision.models, name)(weights=None)


MESSAGE_CASES = [
    # name, H/W range, example size
    ("densenet121", (100, 1000), 224),
    ("mobilenet_v2", (100, 1000), 224),
    ("efficientnet_b0", (100, 1000), 224),
    ("googlenet", (100, 1000), 224),
    ("squeezenet1_1", (100, 1000), 224),
    ("regnet_y_400mf", (100, 1000), 224),
    ("convnext_tiny", (100, 1000), 224),
    ("swin_t", (100, 1000), 224),
    ("mnasnet0_5", (100, 1000), 224),
    ("lraspp_mobilenet_v3_large", (200, 1000), 520),
]


def messages():
    for name, (lo, hi), ex in MESSAGE_CASES:
        t = time.time()
        try:
            m = image_model(name).eval()
        except Exception as e:  # noqa: BLE001
            say(f"{name}: cannot build: {e}")
            continue
        h, w = Dim("height", min=lo, max=hi), Dim("width", min=lo, max=hi)
        x = torch.randn(1, 3, ex, ex)
        _, err = try_export(m, (x,), {"x": {2: h, 3: w}})
        if err is None:
            say(f"{name}: exported without error ({time.time() - t:.0f}s)")
            continue
        open(f"{OUT}/messages/{name}.txt", "w").write(err + "\n")
        say(f"{name}: message saved ({time.time() - t:.0f}s): {err.splitlines()[0][:100]}")
    # RAFT: both images share the dims.
    t = time.time()
    m = Raft().eval()
    h, w = Dim("dim_2", min=135, max=2160), Dim("dim_3", min=135, max=3840)
    img = torch.randn(1, 3, 520, 960)
    shapes = {"image1": {2: h, 3: w}, "image2": {2: h, 3: w}}
    _, err = try_export(m, (img, img.clone()), shapes, seconds=300)
    if err is not None:
        open(f"{OUT}/messages/raft_small.txt", "w").write(err + "\n")
        say(f"raft_small: message saved ({time.time() - t:.0f}s): {err.splitlines()[0][:100]}")
    else:
        say("raft_small: exported without error")


# --- round trips on toy models with known guards ---------------------------------------------


class Branch(torch.nn.Module):
    """A model whose shape branch produces exactly one guard on dim 2 of x."""

    def __init__(self, cond):
        super().__init__()
        self.cond = cond

    def forward(self, x):
        if self.cond(x.shape[2]):
            return x * 2
        return x * 3


TOYS = [
    # name, condition (taken at the example), range, example
    ("raft_seed", lambda h: ((h - 1) // 4 - 1) % 2 == 0, (135, 2160), 520),
    ("root_min_zero", lambda h: ((h - 1) // 8) % 8 == 1, (8, 600), 9 + 64 * 3),
    ("two_guards_mod4", lambda h: ((h - 1) // 2) % 2 != 0 and h % 2 == 0, (100, 1000), 224),
    ("spurious", lambda h: 1 % (96 * (h // 4)) != 0, (100, 1000), 224),
]


def run_ok(ep, x):
    try:
        ep.module()(x)
        return True
    except Exception:  # noqa: BLE001 - any rejection counts
        return False


def dimguard(text_path, *extra):
    out = subprocess.run([DIMGUARD, "diagnose", "--json", *extra, text_path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def roundtrip():
    results = []
    for name, cond, (lo, hi), ex in TOYS:
        rec = {"name": name, "range": [lo, hi], "example": ex}
        m = Branch(cond)
        x = torch.randn(1, 1, ex, 1)
        _, err = try_export(m, (x,), {"x": {2: Dim("h", min=lo, max=hi)}})
        rec["original_export"] = "ok" if err is None else err.splitlines()[0]
        if err is None:
            say(f"{name}: the original range exported; nothing to diagnose")
            results.append(rec)
            continue
        path = f"{OUT}/messages/toy_{name}.txt"
        open(path, "w").write(err + "\n")
        rep = dimguard(path, "--example", str(ex))
        d = rep["dims"][0]
        rec["status"] = d["status"]
        rec["feasible_count"] = d["feasible"]["count"] if d["feasible"] else None
        ns = {"Dim": Dim}
        if d["status"] == "spurious":
            spec = Dim.AUTO
            rec["spec"] = "Dim.AUTO"
            admitted = lambda v: True  # noqa: E731 - every size of the range passes
        else:
            s = d["suggestions"][0]
            exec(s["code"], ns)
            spec = ns[d["name"]]
            rec["spec"] = s["code"]
            admitted = lambda v, s=s: s["lo"] <= v <= s["hi"] and v % s["modulus"] == s["residue"]  # noqa: E731
        ep, err2 = try_export(m, (x,), {"x": {2: spec}})
        rec["suggested_export"] = "ok" if err2 is None else err2
        if ep is not None:
            bad = []
            for v in range(lo, hi + 1):
                ran = run_ok(ep, torch.randn(1, 1, v, 1))
                if ran != admitted(v):
                    bad.append([v, ran])
            rec["sizes_checked"] = hi - lo + 1
            rec["mismatches"] = bad[:20]
            rec["mismatch_count"] = len(bad)
            # Are the rejected-in-range sizes really failing the guard (not just the spec)?
            rec["guard_true_count"] = sum(1 for v in range(lo, hi + 1) if cond(v) == cond(ex))
        say(f"{name}: {json.dumps(rec)[:400]}")
        results.append(rec)
    # The same on real models: resnet18 (guards on H and W), sampled sizes.
    for name, (lo, hi), ex in [("resnet18", (100, 1000), 224)]:
        rec = {"name": name}
        m = image_model(name).eval().to(DEV)
        x = torch.randn(1, 3, ex, ex, device=DEV)
        _, err = try_export(m, (x,), {"x": {2: Dim("height", min=lo, max=hi), 3: Dim("width", min=lo, max=hi)}})
        path = f"{OUT}/messages/rt_{name}.txt"
        open(path, "w").write((err or "") + "\n")
        rep = dimguard(path, "--example", str(ex))
        ns = {"Dim": Dim}
        sug = {}
        for d in rep["dims"]:
            s = d["suggestions"][0]
            exec(s["code"], ns)
            sug[d["name"]] = s
        rec["spec"] = {k: v["code"] for k, v in sug.items()}
        ep, err2 = try_export(m, (x,), {"x": {2: ns["height"], 3: ns["width"]}})
        rec["suggested_export"] = "ok" if err2 is None else err2
        if ep is not None:
            s = sug["height"]
            adm = [v for v in range(lo, hi + 1) if s["lo"] <= v <= s["hi"] and v % s["modulus"] == s["residue"]]
            rej = [v for v in range(lo, hi + 1) if v not in adm]
            checks = []
            for v in adm[:: max(1, len(adm) // 8)] + [adm[-1]]:
                checks.append([v, True, run_ok(ep, torch.randn(1, 3, v, ex, device=DEV))])
            for v in rej[:: max(1, len(rej) // 6)]:
                checks.append([v, False, run_ok(ep, torch.randn(1, 3, v, ex, device=DEV))])
            rec["checks"] = checks
            rec["mismatch_count"] = sum(1 for c in checks if c[1] != c[2])
        say(f"{name}: {json.dumps(rec)[:600]}")
        results.append(rec)
    json.dump(results, open(f"{OUT}/roundtrip.json", "w"), indent=1)


# --- .pt2 model.json -------------------------------------------------------------------------


def save_model_json(ep, name, keep_archive=False):
    path = f"/tmp/{name}.pt2"
    torch.export.save(ep, path)
    if keep_archive:
        import shutil

        shutil.copy(path, f"{OUT}/pt2/{name}.pt2")
        say(f"pt2 {name}: archive kept ({os.path.getsize(path)} bytes)")
    with zipfile.ZipFile(path) as z:
        for n in z.namelist():
            if n.endswith("models/model.json") or n.endswith("serialized_exported_program.json"):
                data = z.read(n)
                if b'"graph_module"' in data:
                    open(f"{OUT}/pt2/{name}.model.json", "wb").write(data)
                    say(f"pt2 {name}: {len(data)} bytes from {n}")
                    return
    say(f"pt2 {name}: no model json in {z.namelist()[:20]}")


def pt2():
    # RAFT exported with torch's own suggested fix: claims 8*k, accepts far fewer.
    m = Raft().eval()
    img = torch.randn(1, 3, 520, 960)
    k = Dim("_dim_2", min=17, max=270)
    kw = Dim("_dim_3", min=17, max=480)
    shapes = {"image1": {2: 8 * k, 3: 8 * kw}, "image2": {2: 8 * k, 3: 8 * kw}}
    ep, err = try_export(m, (img, img.clone()), shapes, seconds=300)
    if ep is not None:
        save_model_json(ep, "raft_small_torchfix", keep_archive=True)
    else:
        say(f"raft torch fix did not export: {err[:300]}")
    for name, ex in [("densenet121", 224), ("mobilenet_v2", 224)]:
        m = image_model(name).eval()
        ep, err = try_export(m, (torch.randn(2, 3, ex, ex),), {"x": {0: Dim.AUTO, 2: Dim.AUTO, 3: Dim.AUTO}})
        if ep is not None:
            save_model_json(ep, f"{name}_auto")
        else:
            say(f"{name} AUTO failed: {err[:300]}")


say(f"torch {torch.__version__} torchvision {torchvision.__version__} device {DEV} what {sorted(WHAT)}")
for step in ["roundtrip", "messages", "pt2"]:
    if step in WHAT:
        t = time.time()
        try:
            globals()[step]()
        except Exception:  # noqa: BLE001
            say(f"{step} failed:\n{traceback.format_exc()}")
        say(f"== {step} done in {time.time() - t:.0f}s")
