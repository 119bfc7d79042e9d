"""HF Longformer (tools/export_real.py's tiny config, example (1, 64)) through ``torch.export.export``
alone, no dimguard: which seq window torch keeps (issue 43: "keep what a hand-written window keeps").

    python tools/export_longformer_alone.py user,mult8,mult8_2 [BUDGET_S] [real]

``user``: ``Dim('seq', 2, 512)``; ``mult8``: ``8*Dim('k', 1, 64)``; ``mult8_2``: ``8*Dim('k', 2, 64)``.
``real`` exports inside ``torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True)``
(without it torch meets a data-dependent expression over the chunk count). Each exported program
is run at several seq and compared with eager.
"""
import contextlib
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import export_real as er  # noqa: E402
import torch  # noqa: E402
from torch.export import Dim  # noqa: E402


class Out(BaseException):
    pass


def alarm(*a):
    raise Out()


def cfg(name):
    if name == "user":
        return {"input_ids": {1: Dim("seq", min=2, max=512)}}
    if name in ("mult8", "mult8_2"):
        return {"input_ids": {1: 8 * Dim("k", min=1 if name == "mult8" else 2, max=64)}}
    raise SystemExit(name)


signal.signal(signal.SIGALRM, alarm)
budget = int(sys.argv[2]) if len(sys.argv) > 2 else 300
spec = er.MODELS["hf_longformer"]
torch.manual_seed(0)
m = spec["build"]().eval()
for name in sys.argv[1].split(","):
    x = torch.randint(0, 100, (1, 64))
    c0 = time.process_time()
    signal.alarm(budget)
    ep = None
    try:
        ctx = torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True) if "real" in sys.argv else contextlib.nullcontext()
        with torch.no_grad(), ctx:
            ep = torch.export.export(m, (x,), dynamic_shapes=cfg(name))
        out = "exported " + str({str(k): (v.lower, v.upper) for k, v in ep.range_constraints.items()})
    except Out:
        out = "budget"
    except Exception as e:  # noqa: BLE001 - recorded
        out = type(e).__name__ + ": " + str(e)[:600].replace("\n", " / ")
    finally:
        signal.alarm(0)
    print(f"{name}: cpu {time.process_time() - c0:.1f} s: {out}", flush=True)
    if ep is not None:
        res = []
        for s in [2, 7, 8, 16, 24, 57, 63, 64, 65, 72, 128, 200, 512]:
            y = torch.randint(0, 100, (1, s))
            try:
                with torch.no_grad():
                    res.append((s, bool(torch.allclose(ep.module()(y).last_hidden_state, m(y).last_hidden_state, atol=1e-4))))
            except Exception as e:  # noqa: BLE001 - the program's refusal
                res.append((s, "refuses " + str(e)[:60]))
        print("  ", res, flush=True)
