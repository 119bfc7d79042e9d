#!/usr/bin/env python3
"""Makes tests/data/pt2/branchy.dispatch: a ``dimguard.Dispatch`` archive (two programs of a model
that takes another path at H >= 200, H in 96..300), and ``branchy.dispatch.truth.json``: the
heights at which the model itself runs in eager mode (one call per size), for ``dimguard check``'s
union. Needs torch 2.15 and dimguard (the wheel, or ``PYTHONPATH=python`` with the extension).

    python tools/export_dispatch.py
"""

import json
import os
import sys

import torch
from torch.export import Dim

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python", "tests"))
import dimguard  # noqa: E402
from test_cover import Branchy  # noqa: E402

OUT = os.path.join(HERE, "..", "tests", "data", "pt2")


def main():
    torch.manual_seed(0)
    m = Branchy().eval()
    d = dimguard.export(m, (torch.randn(1, 3, 128, 16),), dynamic_shapes={"x": {2: Dim("h", min=96, max=300)}}, cover=True, verbose=False)
    d.save(os.path.join(OUT, "branchy.dispatch"))
    runs = []
    for h in range(90, 311):
        try:
            with torch.no_grad():
                m(torch.randn(1, 3, h, 16))
            runs.append(h)
        except RuntimeError:
            pass
    with open(os.path.join(OUT, "branchy.dispatch.truth.json"), "w") as f:
        json.dump({"input": "x", "index": 2, "range": [96, 300], "runs": [h for h in runs if 96 <= h <= 300], "programs": len(d.pieces)}, f)
    print(d.coverage.summary)


if __name__ == "__main__":
    main()
