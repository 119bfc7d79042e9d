#!/usr/bin/env python3
"""Generates the guard-form fixtures in tests/data/forms/ with real PyTorch (2.15 on CPU).

Every form in which a user meets a guard, from models written here and torchvision models:

* ``<case>.log.txt``        -- stderr of the failing export under ``TORCH_LOGS="+dynamic"``
                               (the exception itself is caught, so the log stands alone);
* ``<case>.exception.txt``  -- the exception as the user sees it (type and message);
* ``<case>.draft.txt``      -- ``print(ep._report)`` of ``torch.export.draft_export``;
* ``<case>.guard_failed.txt`` / ``<case>.input_check.txt`` -- the traceback of calling
                               ``ep.module()`` at a size the program rejects;
* ``<case>.crash.txt``      -- PyTorch 2.15's own solver crash (``Expected op to be '=='``);
* ``<case>.expected.json``  -- the oracle: the sizes in the range at which the draft-exported
                               program really runs (each size tried, one call per size), so the
                               answer dimguard reads from the text is checked against torch itself.

Usage (from the repository root; needs torch and torchvision):

    /work/venvs/torch215/bin/python tools/make_form_fixtures.py [CASE ...]

Each case runs in a fresh interpreter, because ``TORCH_LOGS`` is read when torch is imported.
"""

import json
import os
import subprocess
import sys
import traceback

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "forms")

CASES = [
    "fpn",
    "fpn_strict",
    "two_input",
    "shared_size",
    "window_attention",
    "product_reshape",
    "specialize",
    "glued",
    "printed",
    "recompile",
    "recompile_guards",
    "data_dependent",
    "googlenet",
]


def write(name, text):
    if text is None:
        return
    with open(os.path.join(OUT, name), "w") as f:
        f.write(text)


def exception_text(e):
    """The last lines of a traceback: `Type: message`, as a user copies them (None: no error)."""
    if e is None:
        return None
    return "".join(traceback.format_exception_only(type(e), e))


def models():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Fpn(nn.Module):
        """Conv stride 2, ceil-mode max-pool (1/4 map), conv stride 2 (1/8 map), and the
        FPN-style add of the 1/4 map and the upsampled 1/8 map."""

        def __init__(self):
            super().__init__()
            self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
            self.pool = nn.MaxPool2d(2, ceil_mode=True)
            self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)

        def forward(self, x):
            a = self.pool(self.c1(x))
            b = self.c2(a)
            f = a + F.interpolate(b, scale_factor=2.0, mode="nearest")
            return f

    class TwoInput(nn.Module):
        """Optical-flow style: two images that must share H and W, each through a ceil-mode
        pooled stem, then a correlation-like product."""

        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(
                nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.MaxPool2d(3, 2, ceil_mode=True)
            )

        def forward(self, image1, image2):
            f1 = self.stem(image1)
            f2 = self.stem(image2)
            return f1 * f2

    class SharedSize(nn.Module):
        """Two inputs added elementwise after a strided conv: their H and W must be equal."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)

        def forward(self, image1, image2):
            return self.conv(image1) + self.conv(image2)

    class WindowAttention(nn.Module):
        """Swin-style window partition: a view that needs H and W to be multiples of 7."""

        def forward(self, x):
            b, h, w, c = x.shape
            x = x.view(b, h // 7, 7, w // 7, 7, c)
            x = x.permute(0, 1, 3, 2, 4, 5).reshape(-1, 49, c)
            attn = torch.softmax(x @ x.transpose(1, 2), dim=-1)
            return attn @ x

    class ProductReshape(nn.Module):
        """An attention-style reshape of a whole tensor into rows of 2560: links three sizes."""

        def forward(self, t):
            return t.reshape(-1, 2560).sum(-1)

    class Specialize(nn.Module):
        """Adds a constant-size bias: the dynamic length is specialized to 6."""

        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.ones(6))

        def forward(self, x):
            return x + self.bias

    class Glued(nn.Module):
        """A batch forced to 2 by a non-linear guard (n*n == 4) and a length held below 256:
        torch 2.15 glues "Specializations unexpectedly required (batch)!" onto the last
        "Not all values" bullet (`... <= 255Specializations unexpectedly required (batch)!`)."""

        def forward(self, x):
            n = x.shape[0]
            y = x.new_ones(n * n).view(4, 1)
            return y.sum() + (x[:, :256].sum() if x.shape[1] != 512 else x.sum())

    class DataDependent(nn.Module):
        """Branches on the number of non-zero entries (an unbacked size)."""

        def forward(self, x):
            n = x.nonzero().shape[0]
            if n % 8 == 0:
                return x * 2
            return x

    return dict(
        Fpn=Fpn,
        TwoInput=TwoInput,
        SharedSize=SharedSize,
        WindowAttention=WindowAttention,
        ProductReshape=ProductReshape,
        Specialize=Specialize,
        Glued=Glued,
        DataDependent=DataDependent,
    )


def oracle(ep, make, dims):
    """Sizes at which the exported program runs: one call per value of the (single) range."""
    import torch

    (name, lo, hi) = dims
    mod = ep.module()
    accepted = []
    for v in range(lo, hi + 1):
        try:
            with torch.no_grad():
                mod(*make(v))
            accepted.append(v)
        except Exception as e:  # noqa: BLE001 -- any rejection counts
            if "Guard failed" not in str(e) and "Expected input" not in str(e):
                raise
    return {"dim": name, "range": [lo, hi], "accepted": accepted}


def run_case(case):
    import torch
    from torch.export import Dim, draft_export, export

    M = models()
    log_only = os.environ.get("FORMS_LOG_ONLY") == "1"

    def separate_dims():
        """One Dim per size of two images the model needs to share H and W."""
        return {
            "image1": {2: Dim("h1", min=32, max=256), 3: Dim("w1", min=32, max=256)},
            "image2": {2: Dim("h2", min=32, max=256), 3: Dim("w2", min=32, max=256)},
        }

    def try_export(model, args, ds, strict=False):
        try:
            export(model, args, dynamic_shapes=ds, strict=strict)
        except Exception as e:  # noqa: BLE001
            return e
        return None

    if case in ("fpn", "fpn_strict"):
        strict = case == "fpn_strict"
        h = Dim("h", min=32, max=512)
        ds = {"x": {2: h}}
        x = torch.randn(1, 3, 224, 224)
        e = try_export(M["Fpn"](), (x,), ds, strict=strict)
        if log_only:
            return
        write(f"{case}.exception.txt", exception_text(e))
        if strict:
            return
        ep = draft_export(M["Fpn"](), (x,), dynamic_shapes=ds)
        write("fpn.draft.txt", str(ep._report))
        make = lambda v: (torch.randn(1, 3, v, 224),)  # noqa: E731
        write("fpn.expected.json", json.dumps(oracle(ep, make, ("h", 32, 512))))
        try:
            ep.module()(torch.randn(1, 3, 33, 224))
        except Exception:  # noqa: BLE001
            write("fpn.guard_failed.txt", traceback.format_exc())
        try:
            ep.module(check_guards=False)(torch.randn(1, 3, 1000, 224))
        except Exception:  # noqa: BLE001
            write("fpn.input_check.txt", traceback.format_exc())
    elif case == "two_input":
        # Separate Dims for sizes the model needs equal: PyTorch 2.15's solver crashes here.
        ds, a = separate_dims(), torch.randn(1, 3, 96, 128)
        e = try_export(M["TwoInput"](), (a, a.clone()), ds)
        if log_only:
            return
        write("two_input.crash.txt", exception_text(e))
        auto = {2: Dim.AUTO, 3: Dim.AUTO}
        ep = export(M["TwoInput"](), (a, a.clone()), dynamic_shapes={"image1": auto, "image2": auto})
        try:
            ep.module()(torch.randn(1, 3, 96, 128), torch.randn(1, 3, 104, 128))
        except Exception:  # noqa: BLE001
            write("two_input.guard_failed.txt", traceback.format_exc())
    elif case == "shared_size":
        ds, a = separate_dims(), torch.randn(1, 3, 96, 128)
        e = try_export(M["SharedSize"](), (a, a.clone()), ds)
        if log_only:
            return
        write("shared_size.exception.txt", exception_text(e))
    elif case == "window_attention":
        ds = {"x": {1: Dim("h", min=14, max=448), 2: Dim("w", min=14, max=448)}}
        x = torch.randn(2, 56, 56, 16)
        e = try_export(M["WindowAttention"](), (x,), ds)
        if log_only:
            return
        write("window_attention.exception.txt", exception_text(e))
    elif case == "product_reshape":
        ds = {"t": {0: Dim("b", min=1, max=64), 1: Dim("n", min=2, max=512), 2: Dim("c", min=2, max=1024)}}
        t = torch.randn(2, 40, 64)
        e = try_export(M["ProductReshape"](), (t,), ds)
        if log_only:
            return
        write("product_reshape.exception.txt", exception_text(e))
        # The export succeeds (torch 2.15 keeps the linking guards as run-time checks): the draft
        # report says "no issues", which dimguard must recognize as not a guard.
        ep = draft_export(M["ProductReshape"](), (t,), dynamic_shapes=ds)
        write("product_reshape.draft_clean.txt", str(ep._report))
    elif case == "specialize":
        ds = {"x": {0: Dim("batch", min=1, max=64), 1: Dim("n", min=2, max=64)}}
        x = torch.randn(4, 6)
        e = try_export(M["Specialize"](), (x,), ds)
        if log_only:
            return
        write("specialize.exception.txt", exception_text(e))
    elif case == "glued":
        ds = {"x": {0: Dim("batch", min=1, max=16), 1: Dim("seq", min=2, max=512)}}
        x = torch.randn(2, 64)
        e = try_export(M["Glued"](), (x,), ds)
        if log_only:
            return
        write("glued.exception.txt", exception_text(e))
    elif case == "printed":
        # print(ep) of a program with a derived size (x = d + 2) and a static one; beside it the
        # program's own facts (the inputs' sizes and range constraints as torch holds them).
        class Shifted(torch.nn.Module):
            def forward(self, x, y):
                return x[2:] + y

        d = Dim("d", min=2, max=100)
        ep = export(Shifted(), (torch.randn(7, 3), torch.randn(5, 3)), dynamic_shapes={"x": {0: d + 2}, "y": {0: d}})
        if log_only:
            return
        write("printed.program.txt", str(ep))
        facts = {}
        for node in ep.graph.nodes:
            if node.op == "placeholder":
                facts[node.name] = [str(s) for s in node.meta["val"].shape]
        ranges = {str(k): [int(v.lower), int(v.upper)] for k, v in ep.range_constraints.items()}
        write("printed.expected.json", json.dumps({"shapes": facts, "ranges": ranges}, indent=1) + "\n")
    elif case == "recompile":
        # torch.compile's recompile reasons under TORCH_LOGS="recompiles": a size compiled static
        # (5, then 3), and a size marked dynamic in 2..8 then called with 16.
        if log_only:
            return
        prog = {
            "static": "c(torch.randn(5, 3)); c(torch.randn(3, 3))",
            "dynamic": "x = torch.randn(5, 3); torch._dynamo.mark_dynamic(x, 0, min=2, max=8); c(x); c(torch.randn(16, 3))",
        }
        for kind, calls in prog.items():
            code = f"import torch\ndef f(x):\n    return x * 2\nc = torch.compile(f, backend='eager')\n{calls}\n"
            env = dict(os.environ, TORCH_LOGS="recompiles")
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            write(f"recompile_{kind}.log.txt", p.stderr)
    elif case == "recompile_guards":
        # The same under TORCH_LOGS="recompiles,guards": the guard list of each compiled frame
        # is printed too. A size compiled static (5, 3), called with (3, 3); and a branch on
        # x.shape[0] % 4 compiled dynamic at 8, called with 6.
        if log_only:
            return
        prog = {
            "static": "def f(x):\n    return x * 2\nc = torch.compile(f, backend='eager')\nc(torch.randn(5, 3)); c(torch.randn(3, 3))",
            "branch": "def f(x):\n    if x.shape[0] % 4 == 0:\n        return x[: x.shape[0] // 2] * 2\n    return x.view(-1, 2).sum()\nc = torch.compile(f, backend='eager', dynamic=True)\nc(torch.randn(8)); c(torch.randn(6))",
        }
        for kind, calls in prog.items():
            code = f"import torch\n{calls}\n"
            env = dict(os.environ, TORCH_LOGS="recompiles,guards")
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
            write(f"recompile_guards_{kind}.log.txt", p.stderr)
        # The oracle: the first sizes at which the graph compiled at the first call runs
        # without a recompile (torch raises on any recompile once error_on_recompile is set).
        oracle = {
            "static": ("torch.randn(5, 3)", "torch.randn(n, 3)"),
            "branch": ("torch.randn(8)", "torch.randn(n)"),
        }
        accepted = {}
        for kind, (first, at) in oracle.items():
            code = (
                f"import torch, json\n{prog[kind].rsplit(chr(10), 1)[0]}\nc({first})\n"
                "torch._dynamo.config.error_on_recompile = True\nok = []\n"
                f"for n in range(1, 41):\n    try:\n        c({at}); ok.append(n)\n"
                "    except Exception:\n        pass\nprint(json.dumps(ok))\n"
            )
            p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
            accepted[kind] = {"x.size()[0]": {"range": [1, 40], "accepted": json.loads(p.stdout)}}
        write("recompile_guards.expected.json", json.dumps(accepted, indent=1) + "\n")
    elif case == "data_dependent":
        x = torch.randn(16)
        e = try_export(M["DataDependent"](), (x,), None)
        if log_only:
            return
        write("data_dependent.exception.txt", exception_text(e))
    elif case == "googlenet":
        import torchvision

        m = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=False).eval()
        ds = {"x": {2: Dim("height", min=64, max=512), 3: Dim("width", min=64, max=512)}}
        x = torch.randn(1, 3, 224, 224)
        try:
            export(m, (x,), dynamic_shapes=ds)
        except Exception:  # noqa: BLE001
            if not log_only:
                write("googlenet.crash.txt", traceback.format_exc())
    else:
        raise SystemExit(f"unknown case {case}; cases: {', '.join(CASES)}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        run_case(sys.argv[2])
        return
    os.makedirs(OUT, exist_ok=True)
    for case in sys.argv[1:] or CASES:
        print(f"== {case}", flush=True)
        # The exception, draft report, oracle and run-time errors, without logs.
        subprocess.run([sys.executable, __file__, "--child", case], check=True)
        # The same export under TORCH_LOGS="+dynamic": stderr is the log a user pastes.
        env = dict(os.environ, TORCH_LOGS="+dynamic", FORMS_LOG_ONLY="1")
        p = subprocess.run(
            [sys.executable, __file__, "--child", case], env=env, capture_output=True, text=True, check=True
        )
        # lru_cache statistics are printed at exit and say nothing about guards.
        log = "".join(line + "\n" for line in p.stderr.splitlines() if "lru_cache_stats" not in line)
        write(f"{case}.log.txt", log)


if __name__ == "__main__":
    main()
