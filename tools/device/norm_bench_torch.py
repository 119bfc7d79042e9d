"""PyTorch's time for the normalization benchmark matrix of `dimguard norm-bench`, in the same
run (same shapes, types, parameters; bandwidth counts one read and one write).

    python3 tools/device/norm_bench_torch.py [ITERS]
"""

import sys

import torch
import torch.nn.functional as F

iters = int(sys.argv[1]) if len(sys.argv) > 1 else 20
shapes = [(8, 64, 256, 256), (1, 256, 135, 240), (32, 32, 64, 64), (4096, 4096)]
dtypes = [("fp32", torch.float32), ("fp16", torch.float16), ("bf16", torch.bfloat16)]


def timed(f):
    f()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        f()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / iters


print("| layer | shape | dtype | torch ms | torch GB/s |")
print("|---|---|---|---|---|")
for shape in shapes:
    for name, dt in dtypes:
        x = (torch.arange(torch.Size(shape).numel(), device="cuda") * 2654435761 % 1000).float().div(250).sub(2).to(dt).view(shape)
        c = shape[1]
        w = torch.full((c,), 0.9, device="cuda", dtype=dt)
        b = torch.full((c,), 0.2, device="cuda", dtype=dt)
        rm = torch.full((c,), 0.1, device="cuda", dtype=dt)
        rv = torch.full((c,), 1.5, device="cuda", dtype=dt)
        ops = {"batch_norm": lambda: F.batch_norm(x, rm, rv, w, b, False, 0.1, 1e-5)}
        if len(shape) >= 3:
            ops["instance_norm"] = lambda: F.instance_norm(x, weight=w, bias=b, eps=1e-5)
            if c % 8 == 0:
                ops["group_norm(8)"] = lambda: F.group_norm(x, 8, w, b, 1e-5)
            lw = torch.full(shape[1:], 0.9, device="cuda", dtype=dt)
            lb = torch.full(shape[1:], 0.2, device="cuda", dtype=dt)
            ops["layer_norm(C,H,W)"] = lambda: F.layer_norm(x, shape[1:], lw, lb, 1e-5)
        if shape[-1] == 4096:
            lw4 = torch.full((4096,), 0.9, device="cuda", dtype=dt)
            lb4 = torch.full((4096,), 0.2, device="cuda", dtype=dt)
            ops["layer_norm(last 4096)"] = lambda: F.layer_norm(x, (4096,), lw4, lb4, 1e-5)
        with torch.no_grad():
            for lname, f in ops.items():
                ms = timed(f)
                gbps = 2 * x.numel() * x.element_size() / (ms * 1e-3) / 1e9
                print(f"| {lname} | {list(shape)} | {name} | {ms:.4f} | {gbps:.0f} |", flush=True)
