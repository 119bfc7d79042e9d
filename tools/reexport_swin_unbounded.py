"""Re-exports torchvision's Swin-T with the spec `dimguard check` prints for
tests/data/pt2/swin_t_unbounded.pt2 (pasted below as printed) and runs the program at its corners
and just outside them (about 4 minutes on 2 cores; torch 2.15, torchvision). docs/PERFORMANCE.md
reports its output.

    ~/.cache/dimguard/venv-b1284b1b5f75f294/bin/python tools/reexport_swin_unbounded.py
"""

import time, torch, torchvision
from torch.export import Dim
x_0 = Dim('x_0', min=2)
x_2 = Dim('x_2', min=224, max=227)
x_3 = Dim('x_3', min=224, max=227)
dynamic_shapes = {"x": {0: x_0, 2: x_2, 3: x_3}}
torch.manual_seed(0)
m = torchvision.models.swin_t(weights=None).eval()
t0 = time.time()
ep = torch.export.export(m, (torch.randn(2, 3, 224, 224),), dynamic_shapes=dynamic_shapes)
print("re-exported in %.0f s" % (time.time() - t0), flush=True)
for b, h, w in [(2, 224, 224), (2, 227, 227), (2, 224, 227), (2, 227, 224), (5, 226, 225), (2, 228, 224), (2, 224, 223)]:
    try:
        with torch.no_grad():
            ep.module()(torch.randn(b, 3, h, w))
        print((b, h, w), "runs", flush=True)
    except Exception as e:
        print((b, h, w), "raises", type(e).__name__, str(e)[:100].replace("\n", " "), flush=True)
