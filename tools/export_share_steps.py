"""dimguard's share of ``dimguard.export`` in CPU seconds, per step (issue 43 item 6): as
tools/export_share.py (``time.process_time`` around torch.export.export against the whole call),
with each of the audit's steps timed apart (``program_json``, ``_native.check``,
``_native.diagnose``, ``provenance``, the report), ``REPS`` exports per row in one process (the
first one pays what a process pays once).

    REPS=2 LD_LIBRARY_PATH=$PWD/third_party/z3/dist/lib python tools/export_share_steps.py hf_t5_encoder:dim hf_dinov2:spec
"""
import sys, os, time, functools
sys.path.insert(0, os.path.dirname(__file__)); sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import dimguard, export_real as er, torch
import dimguard._program as P, dimguard._native as N; E = sys.modules["dimguard.export"]
acc = {}
def wrap(mod, name, label=None):
    f = getattr(mod, name)
    label = label or name
    @functools.wraps(f)
    def g(*a, **k):
        c = time.process_time()
        try: return f(*a, **k)
        finally: acc[label] = acc.get(label, 0) + time.process_time() - c
    setattr(mod, name, g)
wrap(torch.export, "export", "torch.export")
wrap(P, "program_json"); wrap(N, "check"); wrap(N, "diagnose"); wrap(E, "provenance"); wrap(E, "_audited")
wrap(E._DimLoop, "report", "report") ; wrap(E, "_static")
reps = int(os.environ.get("REPS", "2"))
for arg in sys.argv[1:]:
    name, api = arg.split(":")
    spec = er.MODELS[name]; torch.manual_seed(0)
    model = spec["build"]().eval(); args = er.make_inputs(spec, spec["example"])
    for i in range(reps):
        acc.clear()
        c = time.process_time()
        ep, rep = dimguard.export(model, args, dynamic_shapes=er.dynamic_shapes(spec, api), verbose=False)
        total = time.process_time() - c
        t = acc.pop("torch.export")
        print(f"{name}:{api} run {i}: torch {t:.3f} dimguard {total-t:.3f} share {100*(total-t)/t:.1f}% | " + " ".join(f"{k} {v:.3f}" for k, v in acc.items()), flush=True)
