"""RAFT round trip: export torchvision's raft_small with the spec dimguard suggests for the real
PyTorch 2.11 message (tests/data/messages/torch211_raft_small.txt), and with torch's own
suggested fix, then run both exported programs on sizes each spec admits.

    python3 tools/device/raft_roundtrip.py OUT.json
"""

import json
import os
import sys

import torch
from torch.export import Dim, export

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from fixture_models import Raft  # noqa: E402


dev = "cuda" if torch.cuda.is_available() else "cpu"
m = Raft().eval().to(dev)
img = torch.randn(1, 3, 520, 960, device=dev)
specs = {
    # dimguard diagnose's first suggestions for the two dims.
    "dimguard": (64 * Dim("_dim_2", min=2, max=33) + 8, 64 * Dim("_dim_3", min=3, max=60)),
    # torch's "Suggested fixes".
    "torch": (8 * Dim("_dim_2", min=17, max=270), 16 * Dim("_dim_3", min=9, max=240)),
}
# dimguard's spec (= `dimguard check`'s corrected spec for the torch-fix program): the accepted
# heights must run; heights outside the accepted set (144, 152, 1000, 2160 fail a guard, 137 is
# not even a multiple of 8) must be rejected.
heights = {"dimguard": [136, 200, 520, 1032, 2120, 137, 144, 152, 1000, 2160], "torch": [136, 144, 152, 520, 1000, 2160]}
width = {"dimguard": 960, "torch": 960}
out = {}
for name, (h, w) in specs.items():
    shapes = {"image1": {2: h, 3: w}, "image2": {2: h, 3: w}}
    try:
        ep = export(m, (img, img.clone()), dynamic_shapes=shapes)
    except Exception as e:  # noqa: BLE001
        out[name] = {"export": f"{type(e).__name__}: {str(e)[:300]}"}
        continue
    runs = {}
    for hh in heights[name]:
        x = torch.randn(1, 3, hh, width[name], device=dev)
        try:
            with torch.no_grad():
                ep.module()(x, x.clone())
            runs[hh] = "ran"
        except Exception as e:  # noqa: BLE001
            runs[hh] = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
    out[name] = {"export": "ok", "runs": runs}
    print(name, json.dumps(out[name]), flush=True)
json.dump(out, open(sys.argv[1], "w"), indent=1)
