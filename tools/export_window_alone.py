"""An image model of tools/export_real.py through ``torch.export.export`` alone, no dimguard: does
torch export it with one window per side (issue 43: "no size given up that a window keeps")?

    python tools/export_window_alone.py MODEL H_LO H_HI [W_LO W_HI] [BUDGET_S]

The batch keeps its row's range; H and W get ``Dim('h', H_LO, H_HI)`` and ``Dim('w', W_LO, W_HI)``
(W as H when not given). An exported program is run at the window's corners and compared with
eager. Prints one line: CPU seconds and the outcome.
"""
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import export_real as er  # noqa: E402
import torch  # noqa: E402
from torch.export import Dim  # noqa: E402
from torch.utils._pytree import tree_leaves  # noqa: E402


def main():
    a = sys.argv[1:]
    name, (h_lo, h_hi) = a[0], map(int, a[1:3])
    w_lo, w_hi = map(int, a[3:5]) if len(a) >= 5 else (h_lo, h_hi)
    budget = int(a[5]) if len(a) >= 6 else (int(a[3]) if len(a) == 4 else 600)
    spec = er.MODELS[name]
    (bn, blo, bhi) = spec["dims"][0]
    shapes = {spec["inputs"][0]: {0: Dim(bn, min=blo, max=bhi), 2: Dim("h", min=h_lo, max=h_hi), 3: Dim("w", min=w_lo, max=w_hi)}}
    torch.manual_seed(0)
    model = spec["build"]().eval()
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError(f"over {budget} s")))
    c0 = time.process_time()
    signal.alarm(budget)
    try:
        with torch.no_grad():
            ep = torch.export.export(model, er.make_inputs(spec, spec["example"]), dynamic_shapes=shapes)
            worst = 0.0
            for hw in {(h_lo, w_lo), (h_lo, w_hi), (h_hi, w_lo), (h_hi, w_hi)}:
                x = er.make_inputs(spec, (spec["example"][0], spec["example"][1]) + hw)
                got, want = (tree_leaves(y) for y in (ep.module()(*x), model(*x)))
                worst = max([worst] + [float((g - w).abs().max()) for g, w in zip(got, want)])
        out = f"exported; corners run, max |program - eager| {worst:.2e}"
    except Exception as e:  # noqa: BLE001 - the outcome is the measurement
        out = type(e).__name__ + ": " + str(e)[:400].replace("\n", " / ")
    finally:
        signal.alarm(0)
    print(f"{name} h {h_lo}..{h_hi} w {w_lo}..{w_hi}: cpu {time.process_time() - c0:.1f} s: {out}", flush=True)


if __name__ == "__main__":
    main()
