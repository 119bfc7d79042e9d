"""torch's own answer to the point question, timed: for each program of
../shared/programs/composed (rebuilt from its models.py, exported as make.py does) or, given
tests/data/composed, of issue 41's eight (rebuilt by tools/export_composed_truths.py), `ep.module()`
called at the traced shapes on meta tensors (the module checks the program's guards on every call,
then runs the graph on meta tensors), and, where torch 2.15 builds one, the module's guard
function `_guards_fn` alone. Median of N calls after a warm-up. Run by `cargo bench --bench
composed` (the same command as dimguard's numbers); prints one JSON object.
"""
import json
import os
import statistics
import sys
import time

SHARED = sys.argv[1]
N = int(sys.argv[2]) if len(sys.argv) > 2 else 200

import torch  # noqa: E402
from torch.export import Dim  # noqa: E402

if os.path.exists(os.path.join(SHARED, "models.py")):
    sys.path.insert(0, SHARED)
    from models import build  # noqa: E402

    def dynamic_shapes(args, names):
        ds = {}
        for n, a in zip(names, args):
            ds[n] = {i: Dim.AUTO for i in range(a.dim()) if not (a.dim() == 4 and i == 1)}
        return ds
else:
    # tests/data/composed (issue 41's eight): the models and dynamic dims of the tool that
    # exported them, loaded by path.
    import importlib.util  # noqa: E402
    import types  # noqa: E402

    try:
        import dimguard._program  # noqa: F401  (the shared make.py imports it)
    except ImportError:
        # Without the built package: make.py's program_json writes programs, which timing
        # never does; a stand-in that says so if called.
        def _no_program_json(*_a, **_k):
            raise RuntimeError("dimguard is not installed: program_json is not available")

        _pkg = types.ModuleType("dimguard")
        _pkg.__path__ = []
        _prog = types.ModuleType("dimguard._program")
        _prog.program_json = _no_program_json
        sys.modules.setdefault("dimguard", _pkg)
        sys.modules.setdefault("dimguard._program", _prog)

    _tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "export_composed_truths.py")
    _spec = importlib.util.spec_from_file_location("export_composed_truths", _tool)
    _mod = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_mod)
    build, dynamic_shapes = _mod.build, _mod.dynamic_shapes


def median_call(f, args):
    for _ in range(5):
        f(*args)
    times = []
    for _ in range(N):
        t = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


out = {}
for name, (model, args, names) in build().items():
    model.eval()
    ep = torch.export.export(model, args, dynamic_shapes=dynamic_shapes(args, names))
    m = ep.module().to("meta")
    meta = tuple(torch.empty(a.shape, device="meta") for a in args)
    row = {"module_call_s": median_call(m, meta), "shapes": [list(a.shape) for a in args]}
    g = getattr(m, "_guards_fn", None)
    if callable(g):
        try:
            row["guards_fn_s"] = median_call(g, meta)
        except Exception as e:  # the guard function's signature differs: say so
            row["guards_fn_error"] = str(e)[:200]
    out[name] = row
print(json.dumps({"torch": torch.__version__, "n": N, "programs": out}))
