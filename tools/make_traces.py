"""Makes the TORCH_TRACE fixtures in tests/data/traces/ (PyTorch 2.15 on CPU).

Each case exports a small model with dynamic sizes under TORCH_TRACE (set per case in a child
process, so every trace starts from a fresh string-intern table), keeps the structured-trace log
(trimmed to the records dimguard reads: str, create_symbol, create_unbacked_symbol, guard_added,
guard_added_fast, symbolic_shape_specialization, propagate_real_tensors, guard_on_data_dependent_error,
artifact torch_version), and writes next to it `<case>.expect.json`: the user line each guard
must be attributed to (the line of the model source below that carries the marker comment).

Run:  /work/venvs/torch215/bin/python tools/make_traces.py [OUT_DIR]
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Models live in their own file so frames carry a stable, short file name (models.py) and lines.
MODELS = r'''
import torch
import torch.nn as nn
import torch.nn.functional as F


class FPN(nn.Module):
    """A 1/4 map plus the upsampled 1/8 map: H and W must be 0, 5, 6 or 7 mod 8."""

    def __init__(self):
        super().__init__()
        self.s4 = nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.s8 = nn.Conv2d(8, 8, 3, stride=2, padding=1)

    def forward(self, x):
        fa = self.s4(x)
        f = fa + F.interpolate(self.s8(fa), scale_factor=2.0, mode="nearest")  # LINE:fpn
        return f


class Broadcast(nn.Module):
    """A sequence plus a learned table of 4 rows repeated: the length must be a multiple of 4."""

    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(4, 16))

    def forward(self, x):
        n = x.shape[1]
        pos = self.table.repeat(n // 4, 1)
        return x + pos  # LINE:broadcast


class CeilPool(nn.Module):
    """Ceil-mode pooling: the last window must start inside the input."""

    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(3, stride=2, ceil_mode=True)

    def forward(self, x):
        y = self.pool(x)  # LINE:pool
        return y


class View(nn.Module):
    """Splits the height into groups of 4 rows."""

    def forward(self, x):
        b, c, h, w = x.shape
        y = x.view(b, c, h // 4, 4, w)  # LINE:view
        return y.sum(3)


class Linked(nn.Module):
    """Every 4th sample of one signal plus every 2nd of another: (H+3)//4 == (W+1)//2."""

    def forward(self, a, b):
        return a[:, ::4] + b[:, ::2]  # LINE:linked


class Related(nn.Module):
    """b is one longer than a, and pairs of samples are taken: W = H + 1 with H even."""

    def forward(self, a, b):
        return (a + b[:, 1:]).view(1, -1, 2)  # LINE:related
'''

CASES = {
    # name: (model, input shape(s), dynamic_shapes as {dim index: (name, min, max)} for one input
    # `x`, or {input: {dim index: ...}} for several inputs named in CASE order, strict)
    "fpn_nonstrict": ("FPN", [1, 3, 256, 256], {2: ("h", 96, 1024)}, False),
    "fpn_strict": ("FPN", [1, 3, 256, 256], {2: ("h", 96, 1024)}, True),
    "broadcast": ("Broadcast", [1, 32, 16], {1: ("n", 4, 512)}, False),
    "ceil_pool": ("CeilPool", [1, 3, 64, 64], {2: ("h", 8, 300)}, False),
    "view_strict": ("View", [1, 3, 64, 20], {2: ("h", 8, 512)}, True),
    "linked": ("Linked", [[1, 24], [1, 12]], {"a": {1: ("h", 4, 64)}, "b": {1: ("w", 4, 64)}}, False),
    "related": ("Related", [[1, 24], [1, 25]], {"a": {1: ("h", 4, 200)}, "b": {1: ("w", 5, 201)}}, False),
}

# The marker of the line each model's guards come from.
MARKER = {"FPN": "fpn", "Broadcast": "broadcast", "CeilPool": "pool", "View": "view", "Linked": "linked", "Related": "related"}

KEEP = {
    "str",
    "create_symbol",
    "create_unbacked_symbol",
    "guard_added",
    "guard_added_fast",
    "symbolic_shape_specialization",
    "propagate_real_tensors",
    "guard_on_data_dependent_error",
}

RUN = r'''
import json, sys, torch
sys.path.insert(0, sys.argv[1])
import models
from torch.export import Dim, export
model, shape, dims, strict = json.loads(sys.argv[2])
m = getattr(models, model)()
if isinstance(shape[0], list):
    args = tuple(torch.randn(*s) for s in shape)
    spec = {k: {int(i): Dim(n, min=lo, max=hi) for i, (n, lo, hi) in v.items()} for k, v in dims.items()}
else:
    args = (torch.randn(*shape),)
    spec = {"x": {int(i): Dim(n, min=lo, max=hi) for i, (n, lo, hi) in dims.items()}}
try:
    export(m, args, dynamic_shapes=spec, strict=strict)
    print("exported")
except Exception as e:
    print(type(e).__name__)
    print(str(e).split("\n\nThe error above")[0])
'''


# The same FPN export run twice in one process under dimguard.trace.capture() (no TORCH_TRACE):
# the second capture's text, whose file names torch interned during the first.
CAPTURE = r'''
import sys, torch
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[2])
import models
from dimguard.trace import capture
from torch.export import Dim, export
for _ in range(2):
    with capture() as t:
        try:
            export(models.FPN(), (torch.randn(1, 3, 256, 256),),
                   dynamic_shapes={"x": {2: Dim("h", min=96, max=1024)}})
        except Exception as e:
            err = type(e).__name__
sys.stdout.write(t.text())
'''


def trim(lines):
    """Keeps the records dimguard reads (and the torch_version artifact with its payload)."""
    out, keep_payload = [], False
    for line in lines:
        if line.startswith("\t"):
            if keep_payload:
                out.append(line)
            continue
        keep_payload = False
        brace = line.find("{")
        if brace < 0:
            continue
        try:
            rec = json.loads(line[brace:])
        except json.JSONDecodeError:
            continue
        key = next(iter(rec), None)
        if key in KEEP:
            out.append(line)
        elif key == "artifact" and rec["artifact"].get("name") == "torch_version":
            out.append(line)
            keep_payload = True
    return out


def marker_lines(source):
    return {
        line.split("# LINE:")[1].strip(): no
        for no, line in enumerate(source.splitlines(), 1)
        if "# LINE:" in line
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "traces")
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "models.py"), "w") as f:
            f.write(MODELS)
        markers = marker_lines(MODELS)
        for case, (model, shape, dims, strict) in CASES.items():
            tdir = os.path.join(tmp, "trace_" + case)
            env = dict(os.environ, TORCH_TRACE=tdir)
            arg = json.dumps([model, shape, dims, strict])
            res = subprocess.run(
                [sys.executable, "-c", RUN, tmp, arg],
                env=env, capture_output=True, text=True, cwd=tmp, timeout=600,
            )
            if res.returncode != 0:
                sys.exit(f"{case}: {res.stderr[-3000:]}")
            lines = []
            for name in sorted(os.listdir(tdir)):
                with open(os.path.join(tdir, name)) as f:
                    lines.extend(f.read().splitlines())
            kept = trim(lines)
            # The temporary directory's path is not reproducible: name the model file models.py.
            text = "\n".join(kept).replace(tmp + "/", "") + "\n"
            with open(os.path.join(out, case + ".log"), "w") as f:
                f.write(text)
            want = {
                "file": "models.py",
                "line": markers[MARKER[model]],
                "model": model,
                "strict": strict,
                "export": res.stdout.strip(),
            }
            with open(os.path.join(out, case + ".expect.json"), "w") as f:
                json.dump(want, f, indent=1)
                f.write("\n")
            print(f"{case}: {len(lines)} lines -> {len(kept)} kept, {len(text)} bytes; {res.stdout.splitlines()[0]}")
        res = subprocess.run(
            [sys.executable, "-c", CAPTURE, tmp, os.path.join(ROOT, "python")],
            capture_output=True, text=True, cwd=tmp, timeout=600,
            env={k: v for k, v in os.environ.items() if k != "TORCH_TRACE"},
        )
        if res.returncode != 0:
            sys.exit(f"captured: {res.stderr[-3000:]}")
        kept = trim(res.stdout.splitlines())
        text = "\n".join(kept).replace(tmp + "/", "") + "\n"
        with open(os.path.join(out, "captured_fpn.log"), "w") as f:
            f.write(text)
        with open(os.path.join(out, "captured_fpn.expect.json"), "w") as f:
            json.dump({"file": "models.py", "line": markers["fpn"], "model": "FPN", "strict": False,
                       "export": "captured in-process by dimguard.trace.capture (second of two exports)"}, f, indent=1)
            f.write("\n")
        print(f"captured_fpn: {len(kept)} records, {len(text)} bytes")


if __name__ == "__main__":
    main()
