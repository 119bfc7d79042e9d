"""timm ``mobilevitv2_050`` (pretrained=False) through ``torch.export.export`` alone, no dimguard:
which plain-``Dim`` spec makes torch slow (docs/PERFORMANCE.md, issue 43, fourth session).

    python tools/export_torch_alone.py user,round2,hand_shared [BUDGET_S]
    python tools/export_torch_alone.py round2_oblivious --run

Each spec is exported at 2x3x256x256 under a SIGALRM budget (default 240 s); a name ending in
``_oblivious`` exports inside ``torch.fx.experimental._config.patch(backed_size_oblivious=True)``.
Prints wall and CPU seconds and the outcome; ``--run`` also runs each program at batch 1, 2, 16
and H, W inside the window and compares it with eager.
"""
import contextlib
import signal
import sys
import time

import timm
import torch
from torch.export import Dim

class Out(BaseException):
    pass

def alarm(*a):
    raise Out()

signal.signal(signal.SIGALRM, alarm)
args = [a for a in sys.argv[1:] if a != "--run"]
run = "--run" in sys.argv
budget = int(args[1]) if len(args) > 1 else 240
m = timm.create_model("mobilevitv2_050", pretrained=False).eval()
def cfg(name):
    b = Dim("batch", min=1, max=16)
    if name == "user":        # the user's spec, traced at batch 2
        return (2, {"x": {0: b, 2: Dim("h", min=96, max=512), 3: Dim("w", min=96, max=512)}})
    if name == "round2":      # dimguard's round-2 spec (models43.jsonl), traced at batch 2
        return (2, {"x": {0: b, 2: Dim("h", min=249, max=256), 3: Dim("w", min=249, max=256)}})
    if name == "hand_shared":  # a hand window: one Dim for H and W, batch dynamic
        h = Dim("h", min=249, max=256)
        return (2, {"x": {0: b, 2: h, 3: h}})
    if name == "hand_static_batch":  # the hand window with a static batch
        return (2, {"x": {2: Dim("h", min=249, max=256), 3: Dim("w", min=249, max=256)}})
    if name == "batch_only":  # batch dynamic, H and W static
        return (2, {"x": {0: b}})
    if name.endswith("_oblivious"):  # the same spec traced under backed_size_oblivious
        return cfg(name[: -len("_oblivious")])
    raise SystemExit(name)
for name in args[0].split(","):
    bs, ds = cfg(name)
    x = torch.randn(bs, 3, 256, 256)
    t0 = time.perf_counter(); c0 = time.process_time()
    signal.alarm(budget)
    ctx = torch.fx.experimental._config.patch(backed_size_oblivious=True) if name.endswith("_oblivious") else contextlib.nullcontext()
    try:
        with ctx:
            ep = torch.export.export(m, (x,), dynamic_shapes=ds)
        out = "exported " + str({str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()})
    except Out:
        out = f"stopped at the {budget} s budget"
    except Exception as e:
        out = type(e).__name__ + ": " + str(e).splitlines()[0][:300]
    finally:
        signal.alarm(0)
    print(f"{name}: wall {time.perf_counter()-t0:.1f} s, cpu {time.process_time()-c0:.1f} s: {out}", flush=True)
    if run and out.startswith("exported"):
        for shape in [(1, 3, 249, 249), (1, 3, 256, 250), (2, 3, 256, 256), (16, 3, 249, 256), (3, 3, 252, 253)]:
            x = torch.randn(*shape)
            with torch.no_grad():
                try:
                    same = torch.allclose(ep.module()(x), m(x), atol=1e-4, rtol=1e-4)
                    print(f"  {shape}: runs, equal to eager: {same}", flush=True)
                except Exception as err:  # noqa: BLE001 - the program's refusal, printed
                    print(f"  {shape}: the program refuses: {str(err).splitlines()[0][:150]}", flush=True)
