#!/usr/bin/env python3
"""Generates tests/data/recompiles/: real torch.compile recompile logs (torch 2.15, CPU,
backend="eager"), each with its truth taken from torch itself.

Each scenario runs in a fresh interpreter. It makes every call but the last (the cache entries
the last call will be checked against), then asks torch which sizes those entries accept:

* ``accepted``: each probed size called with ``torch._dynamo.config.error_on_recompile = True``
  (a size no cached graph accepts raises instead of compiling; one that some entry accepts runs);
* ``entries``: each cache entry's guards probed alone (``guard_manager.check`` on the frame's
  locals), in compile order (`0/0`, `0/1`, ...), so the union is checked too.

Then the last call runs with ``TORCH_LOGS`` set (``recompiles``; ``recompiles,guards`` where the
scenario says so) and the log written is what the user would paste: ``<name>.log.txt``, and
``<name>.json`` the truth.

Usage (from the repository root, in the venv with torch 2.15):

    python tools/make_recompile_fixtures.py [NAME ...]
"""

import json
import os
import subprocess
import sys

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data", "recompiles")

# name -> (code defining the compiled functions and `calls`, a list of (function, args) made
# before the last call, the last call, the probes: [(function, source, index of the varying
# argument or None, factory of the args at value v, values)], TORCH_LOGS)
# Each probe varies one size (or one non-size argument) with the rest as in the first call.
SCENARIOS = {
    "static_sizes": dict(
        doc="dynamic=False: one static graph per size 128, 256, 512; then 1024",
        code="""
def f(x):
    return x * 2
c = torch.compile(f, backend="eager", dynamic=False)
""",
        calls=["c(torch.randn(2, 128))", "c(torch.randn(2, 256))", "c(torch.randn(2, 512))"],
        last="c(torch.randn(2, 1024))",
        probes=[("c", "f", "x.size()[1]", "(torch.randn(2, v),)", "list(range(1, 600)) + [1024]")],
    ),
    "static_four": dict(
        doc="dynamic=False, sizes 4, 8, 16, 32 then 64",
        code="""
def f(x):
    return x.sum(0)
c = torch.compile(f, backend="eager", dynamic=False)
""",
        calls=["c(torch.randn(4, 3))", "c(torch.randn(8, 3))", "c(torch.randn(16, 3))", "c(torch.randn(32, 3))"],
        last="c(torch.randn(64, 3))",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v, 3),)", "list(range(1, 80))")],
    ),
    "automatic_dynamic": dict(
        doc="default dynamic: static at 4, automatic dynamic at 8 (a second entry over 2..), then 1",
        code="""
def f(x):
    return x + 1
c = torch.compile(f, backend="eager")
""",
        calls=["c(torch.randn(4))", "c(torch.randn(8))"],
        last="c(torch.randn(1))",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v),)", "list(range(0, 100))")],
    ),
    "mark_dynamic_range": dict(
        doc="mark_dynamic(x, 0, min=4, max=64) at 16, then 100 unmarked",
        code="""
def f(x):
    return x * 3
c = torch.compile(f, backend="eager")
def marked(n):
    x = torch.randn(n, 2)
    torch._dynamo.mark_dynamic(x, 0, min=4, max=64)
    return x
""",
        calls=["c(marked(16))"],
        last="c(torch.randn(100, 2))",
        probes=[("c", "f", "x.size()[0]", "(marked(v) if 4 <= v <= 64 else torch.randn(v, 2),)", "list(range(1, 130))")],
    ),
    "branch_on_size": dict(
        doc="dynamic=True, a branch on x.shape[1] > 64: entries over 2..64 and 65..; then 1",
        code="""
def f(x):
    if x.shape[1] > 64:
        return x * 2
    return x + 1
c = torch.compile(f, backend="eager", dynamic=True)
""",
        calls=["c(torch.randn(3, 32))", "c(torch.randn(3, 100))"],
        last="c(torch.randn(3, 1))",
        probes=[("c", "f", "x.size()[1]", "(torch.randn(3, v),)", "list(range(0, 170))")],
        logs="recompiles",
    ),
    "divisibility": dict(
        doc="dynamic=True, a branch on x.shape[0] % 8: entries over multiples of 8 and the rest; then 1",
        code="""
def f(x):
    if x.shape[0] % 8 == 0:
        return x.view(-1, 8).sum(1)
    return x * 2
c = torch.compile(f, backend="eager", dynamic=True)
""",
        calls=["c(torch.randn(16))", "c(torch.randn(12))"],
        last="c(torch.randn(1))",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v),)", "list(range(0, 100))")],
        logs="recompiles,+dynamic",
    ),
    "divisibility_dynamic_log": dict(
        doc="the divisibility scenario under TORCH_LOGS=+dynamic from the first call (no recompile reasons): each entry's guards in its own [0/0], [0/1] lines",
        code="""
def f(x):
    if x.shape[0] % 8 == 0:
        return x.view(-1, 8).sum(1)
    return x * 2
c = torch.compile(f, backend="eager", dynamic=True)
""",
        calls=["c(torch.randn(16))", "c(torch.randn(12))"],
        last="pass",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v),)", "list(range(0, 100))")],
        logs="+dynamic",
        from_start=True,
    ),
    "two_functions": dict(
        doc="two functions, each compiled static on its own x: f at 4 and 8, g at 16, 32; then f(12), g(12)",
        code="""
def f(x):
    return x * 2
def g(x):
    return x - 1
cf = torch.compile(f, backend="eager", dynamic=False)
cg = torch.compile(g, backend="eager", dynamic=False)
""",
        calls=["cf(torch.randn(4))", "cf(torch.randn(8))", "cg(torch.randn(16))", "cg(torch.randn(32))"],
        last="cf(torch.randn(12)); cg(torch.randn(12))",
        probes=[
            ("cf", "f", "x.size()[0]", "(torch.randn(v),)", "list(range(1, 40))"),
            ("cg", "g", "x.size()[0]", "(torch.randn(v),)", "list(range(1, 40))"),
        ],
    ),
    "non_size_float": dict(
        doc="a float argument c: compiled at c=0.5 and 0.25 (size 4 static), then c=0.75",
        code="""
def f(x, c):
    return x * c
k = torch.compile(f, backend="eager", dynamic=False)
""",
        calls=["k(torch.randn(4), 0.5)", "k(torch.randn(4), 0.25)"],
        last="k(torch.randn(4), 0.75)",
        probes=[
            ("k", "f", "x.size()[0]", "(torch.randn(v), 0.5)", "list(range(1, 20))"),
            ("k", "f", "c", "(torch.randn(4), v)", "[0.25, 0.5, 0.75, 1.0]"),
        ],
    ),
    "zero_one": dict(
        doc="every call at batch 1 (0/1 specialization), then batch 2",
        code="""
def f(x):
    return x.sum(1)
c = torch.compile(f, backend="eager")
""",
        calls=["c(torch.randn(1, 5))"],
        last="c(torch.randn(2, 5))",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v, 5),)", "list(range(0, 40))")],
    ),
    "recompile_limit": dict(
        doc="recompile_limit=2 with fail_on_recompile_limit_hit: static 4 and 8, then 16 raises",
        code="""
torch._dynamo.config.recompile_limit = 2
torch._dynamo.config.fail_on_recompile_limit_hit = True
def f(x):
    return x * 2
c = torch.compile(f, backend="eager", dynamic=False)
""",
        calls=["c(torch.randn(4))", "c(torch.randn(8))"],
        last="c(torch.randn(16))",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v),)", "list(range(1, 40))")],
    ),
    "fullgraph": dict(
        doc="fullgraph=True, dynamic=False: 6 and 10, then 7",
        code="""
def f(x):
    return torch.nn.functional.relu(x).sum()
c = torch.compile(f, backend="eager", fullgraph=True, dynamic=False)
""",
        calls=["c(torch.randn(6, 2))", "c(torch.randn(10, 2))"],
        last="c(torch.randn(7, 2))",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v, 2),)", "list(range(1, 40))")],
    ),
    "guards_listed": dict(
        doc="TORCH_LOGS=recompiles,guards: a branch on x.shape[0] <= 48 compiled dynamic at 20 and 60, then 1",
        code="""
def f(x):
    if x.shape[0] <= 48:
        return x + 1
    return x * 2
c = torch.compile(f, backend="eager", dynamic=True)
""",
        calls=["c(torch.randn(20))", "c(torch.randn(60))"],
        last="c(torch.randn(1))",
        probes=[("c", "f", "x.size()[0]", "(torch.randn(v),)", "list(range(0, 100))")],
        logs="recompiles,guards",
    ),
}

RUNNER = r'''
import json, logging, sys, io
import torch
import torch._dynamo
from torch._dynamo.eval_frame import _debug_get_cache_entry_list
{code}
for call in {calls!r}:
    eval(call)
truth = {{"torch": torch.__version__, "sizes": []}}
torch._dynamo.config.error_on_recompile = True
# Failed probes count toward the frame's compile ids: never let a limit turn them into eager runs.
torch._dynamo.config.accumulated_recompile_limit = 10**9
for fn_name, py_name, source, args, values in {probes!r}:
    fn = eval(fn_name)
    orig = globals()[py_name]
    values = eval(values)
    ok = []
    for v in values:
        try:
            fn(*eval(args))
            ok.append(v)
        except Exception as e:
            pass
    entries = list(reversed(_debug_get_cache_entry_list(orig.__code__)))
    per_entry = []
    names = orig.__code__.co_varnames[: orig.__code__.co_argcount]
    for e in entries:
        acc = []
        for v in values:
            a = eval(args)
            try:
                if e.guard_manager.check(dict(zip(names, a))):
                    acc.append(v)
            except Exception:
                pass
        per_entry.append(acc)
    truth["sizes"].append({{"function": py_name, "source": source, "probes": values, "accepted": ok, "entries": per_entry}})
print(json.dumps(truth))
'''

# The log: a fresh interpreter makes the same calls, then the last one with TORCH_LOGS on
# (probing in the same interpreter would count toward the frame's compile ids and limits).
LOGGER = r'''
import logging, sys
import torch
import torch._dynamo
{code}
if {from_start}:
    torch._logging.set_logs(**{logs})
for call in {calls!r}:
    eval(call)
torch._logging.set_logs(**{logs})
try:
    {last}
except Exception as e:
    import traceback
    sys.stderr.write("".join(traceback.format_exception_only(type(e), e)))
    print(type(e).__name__)
'''


def run(name, s):
    spec = s.get("logs", "recompiles")
    kw = {}
    for part in spec.split(","):
        part = part.strip()
        kw["dynamic" if part == "+dynamic" else part] = "logging.DEBUG" if part == "+dynamic" else "True"
    logs = "dict(" + ", ".join(f"{k}={v}" for k, v in kw.items()) + ")"
    code = RUNNER.format(code=s["code"], calls=s["calls"], probes=s["probes"])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"{name}: failed")
    truth = json.loads(p.stdout.strip().splitlines()[-1])
    code = LOGGER.format(
        code=s["code"], calls=s["calls"], last=s["last"], logs=logs, from_start=s.get("from_start", False)
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write(p.stderr)
        raise SystemExit(f"{name}: failed")
    if p.stdout.strip():
        truth["raised"] = p.stdout.strip()
    truth["name"] = name
    truth["doc"] = s["doc"]
    truth["logs"] = spec
    with open(os.path.join(OUT, f"{name}.log.txt"), "w") as f:
        f.write(p.stderr)
    with open(os.path.join(OUT, f"{name}.json"), "w") as f:
        f.write(json.dumps(truth, indent=1) + "\n")
    print(name, [(x["source"], x["accepted"][:12], [e[:6] for e in x["entries"]]) for x in truth["sizes"]])


def main():
    os.makedirs(OUT, exist_ok=True)
    names = sys.argv[1:] or list(SCENARIOS)
    for n in names:
        run(n, SCENARIOS[n])


if __name__ == "__main__":
    main()
