#!/usr/bin/env python3
"""The cost of routing a call through ``dimguard.Dispatch`` against calling the chosen program's
module directly, on a model small enough that the call itself is cheap (docs/PERFORMANCE.md),
and the export time of a cover against the export loop alone.

    python tools/python/dispatch_overhead.py [REPS]

Interleaved rounds (direct, dispatched) so a loaded machine slows both alike; the median of each.
"""

import os
import statistics
import sys
import time

import torch
from torch.export import Dim

import dimguard

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "tests"))
from test_cover import Branchy  # noqa: E402  (the tests' model)


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    torch.manual_seed(0)
    m = Branchy().eval()
    ex = (torch.randn(1, 3, 128, 8),)
    spec = {"x": {2: Dim("h", min=96, max=300)}}
    dimguard.export(m, ex, dynamic_shapes=spec, verbose=False)  # warm-up: torch's first export pays its imports
    t0 = time.perf_counter()
    dimguard.export(m, ex, dynamic_shapes=spec, verbose=False)
    t_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    d = dimguard.export(m, ex, dynamic_shapes=spec, cover=True, verbose=False)
    t_cover = time.perf_counter() - t0
    x = torch.randn(1, 3, 250, 8)
    direct = d.pieces[d.route({"x": list(x.shape)})].module
    shapes = {"x": list(x.shape)}
    fresh = dimguard.Dispatch(d.pieces, d.names, d.target, d.one_dim)
    with torch.no_grad():
        for _ in range(50):
            direct(x)
            d(x)
        a, b, r, c = [], [], [], []
        for _ in range(reps):
            t = time.perf_counter_ns(); direct(x); a.append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns(); d(x); b.append(time.perf_counter_ns() - t)
            t = time.perf_counter_ns(); d.route(shapes); r.append(time.perf_counter_ns() - t)
            fresh._cache.clear()
            t = time.perf_counter_ns(); fresh.route(shapes); c.append(time.perf_counter_ns() - t)
    ma, mb, mr, mc = (statistics.median(v) / 1000 for v in (a, b, r, c))
    print(f"torch {torch.__version__}, {reps} interleaved calls, input {tuple(x.shape)}, {len(d.pieces)} programs")
    print(f"direct call of the program's module   {ma:9.1f} us")
    print(f"through the Dispatch                   {mb:9.1f} us  (ratio {mb / ma:.3f}, +{mb - ma:.1f} us)")
    print(f"route() alone, cached shape            {mr:9.1f} us")
    print(f"route() alone, first time (no cache)   {mc:9.1f} us")
    print(f"export: the loop alone {t_one:.2f} s, with cover=True {t_cover:.2f} s (ratio {t_cover / t_one:.2f})")


if __name__ == "__main__":
    main()
