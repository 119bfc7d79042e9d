"""PyTorch eager and torch.compile (Inductor, dynamic=False) on every cell of the normalization
benchmark, timed the same way as `norm_bench` (REPS calls captured in a CUDA graph, the median of
SAMPLES replays), then one table with dimguard's numbers, % of copy and the ratios.

    norm_bench REPS SAMPLES cells.jsonl          # dimguard, writes one JSON line per cell
    python3 tools/device/norm_bench_torch.py cells.jsonl [REPS] [SAMPLES] > table.md

Inputs and parameters are the formulas of `dimguard_norm::bench::{input_value, param_value}`,
rounded to the storage type, so both sides normalize the same values.
"""

import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

cells = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
SAMPLES = int(sys.argv[3]) if len(sys.argv) > 3 else 15
DT = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
torch._dynamo.config.cache_size_limit = 256
torch.backends.cudnn.benchmark = False


def param(which, n, dt):
    i = torch.arange(n, dtype=torch.int64, device="cuda")
    if which == "weight":
        v = 0.5 + ((i * 37) % 101).float() / 101.0
    elif which == "bias":
        v = ((i * 53) % 97).float() / 97.0 - 0.5
    elif which == "mean":
        v = ((i * 29) % 89).float() / 89.0 - 0.5
    else:
        v = 0.5 + ((i * 41) % 83).float() / 83.0
    return v.to(dt)


def timed(f):
    """Median ms of one call: REPS calls in a CUDA graph, SAMPLES timed replays."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            f()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(REPS):
            f()
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(SAMPLES):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / REPS)
    return statistics.median(times)


def op_of(cell, x):
    t = cell["torch"]
    shape, dt = cell["shape"], x.dtype
    c = shape[1]
    if t["op"] == "batch_norm":
        rm, rv = param("mean", c, dt), param("var", c, dt)
        w, b = param("weight", c, dt), param("bias", c, dt)
        return lambda x: F.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-5)
    if t["op"] == "layer_norm":
        norm = t["normalized"]
        n = 1
        for d in norm:
            n *= d
        w = param("weight", n, dt).view(norm)
        b = param("bias", n, dt).view(norm)
        return lambda x: F.layer_norm(x, norm, w, b, 1e-5)
    w = param("weight", c, dt) if t["affine"] else None
    b = param("bias", c, dt) if t["affine"] else None
    if t["op"] == "group_norm":
        return lambda x: F.group_norm(x, t["groups"], w, b, 1e-5)
    return lambda x: F.instance_norm(x, weight=w, bias=b, eps=1e-5)


print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}", file=sys.stderr)
# The table is printed row by row as the cells are timed (a run cut short keeps its rows).
print("| set | layer | shape | dtype | params | dimguard ms | eager ms | compile ms | copy ms | % of copy | launch floor ms | vs eager | vs compile | path |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
seen = {}
out = []
with torch.no_grad():
    for cell in cells:
        key = json.dumps([cell["torch"], cell["shape"], cell["dtype"]], sort_keys=True)
        if key not in seen:
            shape, dt = cell["shape"], DT[cell["dtype"]]
            n = 1
            for d in shape:
                n *= d
            i = torch.arange(n, dtype=torch.int64, device="cuda")
            x = (((i * 2654435761) % 1000).float() / 250.0 - 2.0).to(dt).view(shape)
            y = torch.empty_like(x)
            f = op_of(cell, x)
            eager = timed(lambda: f(x))
            t0 = time.time()
            cf = torch.compile(f, dynamic=False)
            cf(x)
            compile_s = time.time() - t0
            compiled = timed(lambda: cf(x))
            copy = timed(lambda: y.copy_(x))
            # The compiled and eager results agree (a sanity check of the comparison itself).
            err = (cf(x).float() - f(x).float()).abs().max().item()
            seen[key] = dict(eager=eager, compiled=compiled, torch_copy=copy, compile_s=compile_s, diff=err)
            del x, y, i
            torch.cuda.empty_cache()
            print(f"{cell['layer']} {shape} {cell['dtype']}: eager {eager:.4f} compiled {compiled:.4f} "
                  f"(compile {compile_s:.1f}s, max diff {err:.2e})", file=sys.stderr, flush=True)
        r = {**cell, **seen[key]}
        out.append(r)
        print(f"| {r['set']} | {r['layer']} | {'x'.join(map(str, r['shape']))} | {r['dtype']} | {r['params']} | "
              f"{r['ms']:.4f} | {r['eager']:.4f} | {r['compiled']:.4f} | {r['copy_ms']:.4f} | {r['pct_copy']:.0f}% | "
              f"{r.get('floor_ms', float('nan')):.4f} | "
              f"{r['eager'] / r['ms']:.2f}x | {r['compiled'] / r['ms']:.2f}x | {r['path']} |", flush=True)

json.dump(out, open(sys.argv[1].rsplit(".", 1)[0] + "_torch.json", "w"), indent=1)
