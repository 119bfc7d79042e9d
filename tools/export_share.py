"""dimguard's share of ``dimguard.export`` in CPU seconds, per model of tools/export_real.py
(issue 43 item 6). ``time.process_time``: on a shared, loaded machine wall seconds mostly measure
the other processes. torch.export.export's CPU (wrapped) against everything else the call does
(the rounds' own work, the audit, the report).

    LD_LIBRARY_PATH=$PWD/third_party/z3/dist/lib python tools/export_share.py hf_t5_encoder:dim fastvit_t8:spec
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import dimguard  # noqa: E402
import export_real as er  # noqa: E402
import torch  # noqa: E402

real = torch.export.export
spent = []
def timed(*a, **k):
    c = time.process_time()
    try:
        return real(*a, **k)
    finally:
        spent.append(time.process_time() - c)
torch.export.export = timed
for name, api in [(a.split(":")[0], a.split(":")[1]) for a in sys.argv[1:]]:
    spec = er.MODELS[name]
    model = spec["build"]().eval()
    args = er.make_inputs(spec, spec["example"])
    spent.clear()
    c = time.process_time(); w = time.perf_counter()
    ep, rep = dimguard.export(model, args, dynamic_shapes=er.dynamic_shapes(spec, api), verbose=False)
    total = time.process_time() - c; wall = time.perf_counter() - w
    t = sum(spent); ours = total - t
    print(f"{name} [{api}]: {len(spent)} exports; CPU: torch {t:.2f} s, dimguard {ours:.2f} s, share {100*ours/t:.1f}%; wall: torch {rep['torch_seconds']:.1f} s, dimguard {rep['dimguard_seconds']:.2f} s (rounds), whole call {wall:.1f} s", flush=True)
