"""Run-time asserts and implied limits, end to end with real torch 2.15: ``dimguard.check`` of a
program in memory, and ``dimguard.export``'s audit (``report.accepts``), compared with running
the exported program at accepted and rejected sizes, both range ends included.

The models are the fixtures' (tools/export_asserts.py): an FPN whose stride-4 map is added to an
upsampled stride-8 map (torch 2.15 ShapesSpec: the graph asserts
``Eq(((u0 - 1)//4), 2*(((u0 - 1)//8)) + 1)``), and a GPT-2-like model whose 128 position
embeddings are indexed by ``arange(seq)`` (plain ``Dim``: no guard; ``IndexError`` above 128)."""

import pathlib
import sys

try:
    import torch
    from torch.export import Dim
    from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec
except ImportError as e:  # never a skip: the suite fails, saying why
    raise RuntimeError(
        f"the end-to-end tests need torch 2.15 ({e}): pip install -r python/requirements-test.txt"
    ) from e

import dimguard

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
from export_asserts import FPN, GPT2  # noqa: E402  (the fixtures' models)


def runs(module, *args):
    """True when the program runs; False when it raises (a run-time assert, an index out of the
    table, or its input check)."""
    try:
        with torch.no_grad():
            module(*args)
        return True
    except (AssertionError, RuntimeError, IndexError, ValueError):
        return False


def accepted_set(report, k=0):
    return set(report.dims[k].accepted)


def test_fpn_run_time_assert_is_read_from_the_graph():
    torch.manual_seed(0)
    h = ShapeVar("H", min=96, max=1024)
    ep = torch.export.export(
        FPN().eval(), (torch.randn(1, 3, 128, 160),), dynamic_shapes=ShapesSpec({"x": TensorSpec([1, 3, h, 160])})
    )
    rep = dimguard.check(ep, full=False)
    d = rep.dims[0]
    assert d.claimed.count == 929
    asserts = [c for c in rep.runtime if c.kind == "runtime_assert"]
    assert any(c.rejects == 464 for c in asserts), rep.runtime
    acc = accepted_set(rep)
    assert len(acc) == 465
    m = ep.module()
    # Both range ends, every 9th size, and the first sizes on each side of the boundary.
    sizes = sorted({96, 1024, *range(96, 1025, 9), *range(96, 110)})
    for s in sizes:
        ok = runs(m, torch.randn(1, 3, s, 160))
        assert ok == (s in acc), f"H={s}: dimguard says {'accepted' if s in acc else 'rejected'}, the program {'ran' if ok else 'raised'}"
        assert rep.accepts({"x": (1, 3, s, 160)}) == ok


def test_position_table_limit_without_a_guard():
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (1, 16))
    ep = torch.export.export(GPT2().eval(), (ids,), dynamic_shapes={"ids": {1: Dim("seq", min=2, max=512)}})
    assert not getattr(ep, "_guards_code", []), "no guard states the limit"
    rep = dimguard.check(ep, full=False)
    (limit,) = [c for c in rep.runtime if c.kind == "implied_limit"]
    assert limit.target == "torch.ops.aten.embedding.default"
    assert limit.on_inputs == "L['ids'].size()[1] <= 128"
    assert limit.rejects == 384
    assert "wpe(pos)" in limit.stack_trace
    assert accepted_set(rep) == set(range(2, 129))
    m = ep.module()
    for s in (2, 3, 64, 127, 128, 129, 130, 300, 511, 512):
        ok = runs(m, torch.randint(0, 100, (1, s)))
        assert ok == (s <= 128), f"seq={s}"
        assert rep.accepts({"ids": (1, s)}) == ok


def test_export_audit_narrows_to_the_implied_limit():
    """``dimguard.export`` audits the program with its implied limits: the first program claims
    2..512 and fails above 128, so the spec is narrowed; the returned program and
    ``report.accepts`` agree at both ends of the requested range and around the limit."""
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (1, 16))
    ep, rep = dimguard.export(GPT2().eval(), (ids,), dynamic_shapes={"ids": {1: Dim("seq", min=2, max=512)}})
    assert len(rep.rounds) >= 2, rep.rounds
    d = rep.dims[0]
    assert (d.accepted.min, d.accepted.max) == (2, 128)
    m = ep.module()
    for s in (2, 3, 127, 128, 129, 200, 512):
        ok = runs(m, torch.randint(0, 100, (1, s)))
        assert rep.accepts({"ids": (1, s)}) == ok, f"seq={s}: report {rep.accepts({'ids': (1, s)})}, program {ok}"
        assert ok == (s <= 128)
