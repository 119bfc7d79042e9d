"""The model of docs/WALKTHROUGH.md: an FPN-style head whose export fails, and its fix.

    TORCH_TRACE=/tmp/fpn_trace python tools/walkthrough/fpn.py broken   # fails; writes the trace
    dimguard diagnose /tmp/fpn_trace --html fpn.html                     # names line 26
    python tools/walkthrough/fpn.py spec     # the model as is, with dimguard's spec: exports
    python tools/walkthrough/fpn.py fixed    # the model fixed at line 26: every H in 96..1024
"""

import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim, export


class FPN(nn.Module):
    def __init__(self):
        super().__init__()
        self.s4 = nn.Conv2d(3, 8, 3, stride=4, padding=1)   # 1/4 of the input
        self.s8 = nn.Conv2d(8, 8, 3, stride=2, padding=1)   # 1/8 of the input

    def forward(self, x):
        fa = self.s4(x)
        return fa + F.interpolate(self.s8(fa), scale_factor=2.0, mode="nearest")


class FixedFPN(FPN):
    def forward(self, x):
        fa = self.s4(x)
        return fa + F.interpolate(self.s8(fa), size=fa.shape[-2:], mode="nearest")


def main(which):
    x = torch.randn(1, 3, 256, 64)
    h = Dim("h", min=96, max=1024)
    if which == "broken":
        export(FPN(), (x,), dynamic_shapes={"x": {2: h}})
        return
    if which == "spec":
        # What dimguard printed: H a multiple of 8 (one of the four classes that pass).
        _x_2 = Dim("_x_2", min=12, max=128)
        ep = export(FPN(), (x,), dynamic_shapes={"x": {2: 8 * _x_2}})
        sizes = range(96, 1025, 8)
    else:
        ep = export(FixedFPN(), (x,), dynamic_shapes={"x": {2: h}})
        sizes = range(96, 1025)
    t = time.time()
    m = ep.module()
    for n in sizes:
        y = m(torch.randn(1, 3, n, 64))
        assert y.shape[2] == (n - 1) // 4 + 1, (n, y.shape)
    print(f"{which}: exported; ran the program at all {len(sizes)} sizes H in {sizes.start}..{sizes.stop - 1}"
          f"{' step ' + str(sizes.step) if sizes.step != 1 else ''} ({time.time() - t:.1f} s)")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "broken")
