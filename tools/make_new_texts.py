#!/usr/bin/env python3
"""Generates tests/data/new_texts/: texts torch 2.15 prints (CPU) for small models written for
this folder (none is a corpus model), each saved verbatim with its truth taken from torch.

Each case runs in a fresh interpreter and writes ``<name>.txt`` (what the user would paste:
the exception as ``traceback.format_exception_only`` prints it, a ``TORCH_LOGS`` log, a
printed program) and ``<name>.json`` (the truth):

* ``sizes``: per input size, the probed sizes and those torch accepts. The model is exported
  with ``Dim.AUTO`` over the range the case states, at the case's example, and
  ``ep.module()`` is called at each probed size (the eager model must run there too): a size
  is accepted when both run. For a printed program, the printed program itself is probed.
* ``equal``: pairs of sizes torch ties (the AUTO program's placeholders share one symbol).
* ``data_dependent``: the expression torch could not guard on (``GuardOnDataDependentSymNode``'s
  ``cond``, as torch holds it).

Usage (from the repository root, in the venv with torch 2.15):

    python tools/make_new_texts.py [NAME ...]
"""

import json
import os
import subprocess
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "new_texts")

PRELUDE = r'''
import json, sys, io, logging, traceback, contextlib
import torch
from torch.export import Dim, export
truth = {"torch": torch.__version__, "sizes": [], "equal": [], "data_dependent": []}
text = []

def error_text(e):
    return "".join(traceback.format_exception_only(type(e), e))

def runs(f, args):
    try:
        f(*args)
        return True
    except Exception:
        return False

def probe(model, make, example, auto, sources, values, ep=None):
    """Sizes accepted by the program exported with Dim.AUTO (or `ep`), eager too."""
    if ep is None:
        ep = export(model, make(example), dynamic_shapes=auto)
    m = ep.module()
    # Each input's placeholder, for the symbol torch gives its size (`8*s56`).
    inputs = list(ep.graph_signature.user_inputs)
    vals = {n.name: n.meta.get("val") for n in ep.graph.nodes if n.op == "placeholder"}
    for k, src in enumerate(sources):
        ok = [v for v in values if runs(model, make(v, k)) and runs(m, make(v, k))]
        name, i = src.split(".size()[")
        val = vals.get(inputs[[n.split("_")[0] for n in inputs].index(name)] if name in [n.split("_")[0] for n in inputs] else name)
        symbol = str(val.shape[int(i.rstrip("]"))]) if val is not None else None
        truth["sizes"].append({"source": src, "symbol": symbol, "probes": list(values), "accepted": ok})
    return ep

def datadep(e):
    cond = getattr(e, "cond", None)
    if cond is not None:
        truth["data_dependent"].append(str(cond))

def export_error(model, args, ds, log=False):
    buf = io.StringIO()
    h = None
    if log:
        torch._logging.set_logs(dynamic=logging.DEBUG)
        h = logging.StreamHandler(buf)
        logging.getLogger("torch").addHandler(h)
    try:
        export(model, args, dynamic_shapes=ds)
        raise SystemExit("no error")
    except SystemExit:
        raise
    except Exception as e:
        if log:
            torch._logging.set_logs()
        text.append(buf.getvalue() + error_text(e))
        return e
'''

# name -> (kind, doc, code). `code` writes `text` and `truth`.
CASES = {
    "cve_groups_of_four": ("constraint_violation", "reshape into groups of 4 over Dim('rows', 2..64): the batch must be a multiple of 4", r'''
class M(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1, 4, x.shape[1]).sum(1)
make = lambda v, k=0: (torch.randn(v, 3),)
export_error(M(), make(8), {"x": {0: Dim("rows", min=2, max=64)}})
probe(M(), make, 8, {"x": {0: Dim.AUTO(min=2, max=64)}}, ["x.size()[0]"], range(0, 70))
'''),
    "cve_branch_width": ("constraint_violation", "a branch on width > 40 traced at 64 over Dim('w', 2..128)", r'''
class M(torch.nn.Module):
    def forward(self, x):
        if x.shape[1] > 40:
            return x[:, :40] * 2
        return x + 1
make = lambda v, k=0: (torch.randn(2, v),)
export_error(M(), make(64), {"x": {1: Dim("w", min=2, max=128)}})
probe(M(), make, 64, {"x": {1: Dim.AUTO(min=2, max=128)}}, ["x.size()[1]"], range(0, 140))
'''),
    "cve_two_inputs_equal": ("constraint_violation", "x @ y.T with separate Dims for the shared feature size: they must be equal", r'''
class M(torch.nn.Module):
    def forward(self, x, y):
        return x @ y.t()
make = lambda v, k=0: (torch.randn(3, v), torch.randn(5, v))
e = export_error(M(), make(16), {"x": {1: Dim("fx", min=2, max=64)}, "y": {1: Dim("fy", min=2, max=64)}})
truth["equal"].append(["x.size()[1]", "y.size()[1]"])
probe(M(), make, 16, {"x": {1: Dim.AUTO}, "y": {1: Dim.AUTO}}, ["x.size()[1]"], range(0, 70))
'''),
    "cve_stride_conv": ("constraint_violation", "a stride-2 conv then a skip add: the height must be even", r'''
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(1, 1, 3, stride=2, padding=1)
        self.up = torch.nn.Upsample(scale_factor=2)
    def forward(self, x):
        return x + self.up(self.down(x))
make = lambda v, k=0: (torch.randn(1, 1, v, 8),)
export_error(M(), make(16), {"x": {2: Dim("h", min=4, max=64)}})
probe(M(), make, 16, {"x": {2: Dim.AUTO(min=4, max=64)}}, ["x.size()[2]"], range(0, 70))
'''),
    "cve_dynamic_log": ("constraint_violation_log", "the groups-of-4 model (by 3) under TORCH_LOGS=+dynamic: the log and the error", r'''
class M(torch.nn.Module):
    def forward(self, x):
        return x.reshape(-1, 3, 5).mean(1)
make = lambda v, k=0: (torch.randn(v, 5),)
export_error(M(), make(9), {"x": {0: Dim("n", min=2, max=60)}}, log=True)
probe(M(), make, 9, {"x": {0: Dim.AUTO(min=2, max=60)}}, ["x.size()[0]"], range(0, 66))
'''),
    "specialized_value": ("specialization", "x * a (8,) buffer under Dim('n', 2..64): torch specializes n to 8", r'''
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.ones(8))
    def forward(self, x):
        return x * self.w
make = lambda v, k=0: (torch.randn(3, v),)
export_error(M(), make(8), {"x": {1: Dim("n", min=2, max=64)}})
probe(M(), make, 8, {"x": {1: Dim.AUTO(min=2, max=64)}}, ["x.size()[1]"], range(0, 70))
'''),
    "inferred_static": ("specialization", "Dim.DYNAMIC on a size a Linear(12, ...) fixes: tracing infers a static 12", r'''
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(12, 4)
    def forward(self, x):
        return self.fc(x)
make = lambda v, k=0: (torch.randn(2, v),)
export_error(M(), make(12), {"x": {1: Dim.DYNAMIC}})
probe(M(), make, 12, {"x": {1: Dim.AUTO}}, ["x.size()[1]"], range(0, 40))
'''),
    "datadep_guard": ("data_dependent", "a branch on the number of positive entries (.item())", r'''
class M(torch.nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        if n > 3:
            return x * 2
        return x
datadep(export_error(M(), (torch.randn(10),), None))
'''),
    "datadep_extract": ("data_dependent", "torch.arange(k) over a k read from a tensor, then a Python range over it", r'''
class M(torch.nn.Module):
    def forward(self, x, k):
        out = x
        for i in range(k.item()):
            out = out + i
        return out
datadep(export_error(M(), (torch.randn(4), torch.tensor(3)), None))
'''),
    "datadep_nonzero_eq": ("data_dependent", "nonzero's count compared with the input's length", r'''
class M(torch.nn.Module):
    def forward(self, x):
        idx = torch.nonzero(x)
        if idx.shape[0] + 1 == x.shape[0]:
            return idx.float().sum()
        return x.sum()
datadep(export_error(M(), (torch.randn(6),), {"x": {0: Dim("n")}}))
'''),
    "draft_export_report": ("draft_export", "draft_export of the branch on a count: its report", r'''
class M(torch.nn.Module):
    def forward(self, x):
        n = (x > 0).sum().item()
        if n > 3:
            return x * 2
        return x
ep = torch.export.draft_export(M(), (torch.randn(10),))
text.append(str(ep._report))
for f in ep._report.failures:
    d = getattr(f, "data", {}) or {}
    if isinstance(d, dict) and d.get("expr"):
        truth["data_dependent"].append(str(d["expr"]))
'''),
    "printed_program_derived": ("printed_program", "print(ep) of a model over x: 2*h, y: h (h in 3..40)", r'''
class M(torch.nn.Module):
    def forward(self, x, y):
        return x.reshape(-1, 2).sum(1) + y
h = Dim("h", min=3, max=40)
def make(v, k=0):
    return (torch.randn(v), torch.randn(v // 2)) if k == 0 else (torch.randn(2 * v), torch.randn(v))
ep = export(M(), make(10, 1), dynamic_shapes={"x": {0: 2 * h}, "y": {0: h}})
text.append(str(ep))
probe(M(), make, 10, None, ["x.size()[0]", "y.size()[0]"], range(0, 90), ep=ep)
'''),
    "printed_range_constraints": ("printed_program", "print(ep.range_constraints) of a model over seq in 8..512 (a multiple of 8)", r'''
class M(torch.nn.Module):
    def forward(self, x):
        return x.reshape(x.shape[0], -1, 8).sum(-1)
s = Dim("_s", min=1, max=64)
make = lambda v, k=0: (torch.randn(2, v),)
ep = export(M(), make(64), dynamic_shapes={"x": {1: 8 * s}})
text.append("range_constraints: " + str(ep.range_constraints))
probe(M(), make, 64, None, ["x.size()[1]"], range(0, 600), ep=ep)
'''),
}

RUNNER = PRELUDE + r'''
@CODE@
sys.stdout.write(json.dumps({"text": "\n".join(text), "truth": truth}))
'''


def run(name, case):
    kind, doc, code = case
    p = subprocess.run([sys.executable, "-c", RUNNER.replace("@CODE@", code)], capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr[-3000:])
        raise SystemExit(f"{name}: failed")
    out = json.loads(p.stdout.strip().splitlines()[-1])
    truth = out["truth"]
    truth.update(name=name, kind=kind, doc=doc)
    with open(os.path.join(OUT, f"{name}.txt"), "w") as f:
        f.write(out["text"])
    with open(os.path.join(OUT, f"{name}.json"), "w") as f:
        f.write(json.dumps(truth) + "\n")
    print(name, [(s["source"], s["accepted"][:10], len(s["accepted"])) for s in truth["sizes"]], truth["equal"], truth["data_dependent"])


# torch.compile recompile logs of models new to this folder, made and probed as
# tools/make_recompile_fixtures.py makes its own (and checked by tests/recompiles.rs): in
# new_texts/recompiles/.
RECOMPILES = {
    "mark_dynamic_past_max": dict(
        doc="mark_dynamic(x, 1, min=4, max=32) on a softmax, then a call at 48",
        code="""
def f(x):
    return torch.softmax(x, dim=-1)
c = torch.compile(f, backend="eager")
a = torch.randn(2, 16)
torch._dynamo.mark_dynamic(a, 1, min=4, max=32)
""",
        calls=["c(a)"],
        last="c(torch.randn(2, 48))",
        probes=[("c", "f", "x.size()[1]", "(torch.randn(2, v),)", "list(range(0, 60))")],
    ),
    "two_inputs_dynamic_log": dict(
        doc="dynamic=True over x and y with a branch on x.shape[0] + y.shape[0] > 20, TORCH_LOGS=recompiles,+dynamic",
        code="""
def f(x, y):
    if x.shape[0] > 20:
        return x.sum() + y.sum()
    return x.mean() - y.mean()
c = torch.compile(f, backend="eager", dynamic=True)
""",
        calls=["c(torch.randn(8), torch.randn(3))"],
        last="c(torch.randn(30), torch.randn(3))",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v), torch.randn(3))", "list(range(0, 40))")],
        logs="recompiles,+dynamic",
    ),
    "static_pair_then_third": dict(
        doc="dynamic=False layer norm over widths 24 and 40, then 33",
        code="""
ln = {24: torch.nn.LayerNorm(24), 40: torch.nn.LayerNorm(40), 33: torch.nn.LayerNorm(33)}
def f(x):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],))
c = torch.compile(f, backend="eager", dynamic=False)
""",
        calls=["c(torch.randn(3, 24))", "c(torch.randn(3, 40))"],
        last="c(torch.randn(3, 33))",
        probes=[("c", "f", "x.size()[1]", "(torch.randn(3, v),)", "list(range(1, 60))")],
    ),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    names = sys.argv[1:] or list(CASES) + list(RECOMPILES)
    for n in names:
        if n in CASES:
            run(n, CASES[n])
    recompiles = [n for n in names if n in RECOMPILES]
    if recompiles:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import make_recompile_fixtures as fixtures

        fixtures.OUT = os.path.join(OUT, "recompiles")
        os.makedirs(fixtures.OUT, exist_ok=True)
        for n in recompiles:
            fixtures.run(n, RECOMPILES[n])


if __name__ == "__main__":
    main()
