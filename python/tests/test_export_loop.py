"""``dimguard.export``'s loop on the data-dependent forms torch 2.15 raises under a ``ShapesSpec``
(issue 32): every expression of one traced pass decided at once (two torch.export rounds), a size
used as a Python int fixed and said so, ``CeilToInt``/``IntTrueDiv`` and ``//`` by the size
itself, and a quiet terminal (one line per round; torch's output in ``report.rounds[i].log``).

The oracles are the returned program itself (run at every sampled size) and the eager model
(where the program runs, its output equals the eager one): ``report.accepts`` must agree with the
program at every size, never undecided here."""

import random

import pytest

try:
    import torch
    from torch import nn
    from torch.export import Dim
    from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec
except ImportError as e:  # never a skip
    raise RuntimeError(f"these tests need torch 2.15 ({e}): pip install -r python/requirements-test.txt") from e

import dimguard
from models import CeilPad, ConvStack, DivBySize, IntUse

assert torch.__version__.startswith("2.15"), torch.__version__


def run(ep, x):
    """The program's output, or None when it rejects the shape."""
    try:
        with torch.no_grad():
            return ep.module()(x)
    except (AssertionError, RuntimeError, ValueError) as e:
        assert any(w in str(e) for w in ("Guard failed", "Runtime assertion failed", "Expected input", "to be")), str(e)
        return None


def agree(model, ep, rep, name, shapes):
    """At every shape: the report's answer is the program's, and the program's output, where it
    runs, is the eager model's."""
    bad = []
    for shape in shapes:
        x = torch.randn(*shape)
        said = rep.verdict({name: list(shape)})["accepted"]
        got = run(ep, x)
        if said is None or said != (got is not None):
            bad.append((shape, said, got is not None))
        elif got is not None:
            with torch.no_grad():
                want = model(x)
            assert torch.allclose(got, want, atol=1e-5), shape
    assert not bad, f"(shape, report.accepts, runs): {bad}"


def reexports(model, x, code):
    ns = {}
    exec(code, ns)  # noqa: S102 - the spec dimguard printed
    return torch.export.export(model, (x,), dynamic_shapes=ns["dynamic_shapes"])


def test_every_expression_of_one_pass_is_decided_at_once():
    """CeilPad meets two expressions (H's ceil, W's ceil-mode pooling) in one pass: round 1
    decides both, round 2 exports; both kept in the spec, which re-exports."""
    torch.manual_seed(0)
    m = CeilPad().eval()
    B, H, W = ShapeVar("B", min=1, max=4), ShapeVar("H", min=16, max=200), ShapeVar("W", min=16, max=200)
    x = torch.randn(2, 3, 60, 64)
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ShapesSpec({"x": TensorSpec([B, 3, H, W])}), verbose=False)
    assert [r["outcome"] for r in rep.rounds] == ["data_dependent", "exported"], [r.get("error") for r in rep.rounds]
    assert rep.rounds[0]["data_dependent"] == 2
    codes = [a["code"] for a in rep.assumptions]
    # H's, its integer twin (torch asserts no true division at run time), and W's.
    assert len(codes) == 3 and "8*math.ceil(H / 8) != H" in codes and "8*(-(-(H) // (8))) != H" in codes and any("W" in c for c in codes), codes
    assert "B = ShapeVar('B', min=1, max=4)" in rep.spec and "TensorSpec([B, 3, H, W])" in rep.spec
    # The H assumption keeps the non-multiples of 8 (the traced 60 resizes); said with its count.
    h_note = next(a["note"] for a in rep.assumptions if "ceil" in a["code"])
    assert f"removes {len([h for h in range(16, 201) if h % 8 == 0])} of the 185 sizes" in h_note, h_note
    reexports(m, x, rep.spec)
    rng = random.Random(0)
    hs = [16, 17, 23, 24, 60, 64, 199, 200] + rng.sample(range(16, 201), 6)
    ws = [16, 17, 64, 200] + rng.sample(range(16, 201), 4)
    agree(m, ep, rep, "x", [(1 + i % 4, 3, h, ws[i % len(ws)]) for i, h in enumerate(hs)] + [(2, 3, 60, 64), (4, 3, 15, 64), (1, 3, 60, 201)])


def test_a_size_used_as_a_python_int_is_fixed_and_the_report_says_why():
    torch.manual_seed(0)
    m = IntUse()
    b, seq = ShapeVar("b", min=1, max=8), ShapeVar("seq", min=2, max=512)
    x = torch.randn(2, 64)
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ShapesSpec({"x": TensorSpec([b, seq])}), verbose=False)
    assert len(rep.rounds) == 2 and rep.exported
    assert [a["code"] for a in rep.assumptions] == ["seq == 64"]
    note = rep.assumptions[0]["note"]
    assert "as a Python int" in note and "keeps 1 of the 511 sizes" in note, note
    [n] = rep.narrowed
    assert (n["name"], n["input"], n["index"], n["kept"], n["of"]) == ("seq", "x", 1, 1, 511)
    assert "cover=True" in n["why"] and "510 sizes" in n["why"], n["why"]
    assert "cover=True" in repr(rep)
    reexports(m, x, rep.spec)
    agree(m, ep, rep, "x", [(b_, s) for b_ in (1, 2, 8) for s in (2, 63, 64, 65, 512)] + [(9, 64)])


def test_a_floor_division_by_the_size_itself():
    torch.manual_seed(0)
    m = DivBySize()
    b, n = ShapeVar("b", min=1, max=8), ShapeVar("n", min=1, max=512)
    ep, rep = dimguard.export(m, (torch.randn(2, 64),), dynamic_shapes=ShapesSpec({"x": TensorSpec([b, n])}), verbose=False)
    assert len(rep.rounds) == 2
    # (3n - 1) // n == 2 at every n >= 1 (brute force): the assumption removes nothing.
    assert all((3 * k - 1) // k == 2 for k in range(1, 513))
    assert "removes nothing" in rep.assumptions[0]["note"]
    agree(m, ep, rep, "x", [(2, k) for k in (1, 2, 3, 100, 511, 512)] + [(2, 513)])


def _lines(err):
    return [ln for ln in err.splitlines() if ln.strip()]


def test_the_terminal_shows_one_line_per_round_and_torch_goes_to_the_log(capfd):
    """At the file-descriptor level (torch's logging, warnings and C++ output included)."""
    torch.manual_seed(0)
    m = CeilPad().eval()
    B, H, W = ShapeVar("B", min=1, max=4), ShapeVar("H", min=16, max=200), ShapeVar("W", min=16, max=200)
    capfd.readouterr()
    _, rep = dimguard.export(m, (torch.randn(2, 3, 60, 64),), dynamic_shapes=ShapesSpec({"x": TensorSpec([B, 3, H, W])}))
    out, err = capfd.readouterr()
    lines = _lines(err)
    assert len(lines) == len(rep.rounds) == 2, lines
    assert all(ln.startswith("dimguard.export: round ") for ln in lines), lines
    assert out == ""
    # torch warned about each expression it decided at the example: in the round's log.
    assert "propagate_real_tensors" in rep.rounds[0]["log"]

    # The plain-Dim loop too: ConvStack's first round fails with a constraint violation.
    x = torch.randn(2, 3, 64, 48)
    ds = {"x": {0: Dim("batch", max=64), 2: Dim("h", min=32, max=512), 3: Dim("w", min=32, max=512)}}
    _, rep = dimguard.export(ConvStack().eval(), (x,), dynamic_shapes=ds)
    out, err = capfd.readouterr()
    lines = _lines(err)
    assert len(lines) == len(rep.rounds) and len(lines) >= 2, lines
    assert all(ln.startswith("dimguard.export: round ") for ln in lines), lines
    assert all("log" in r for r in rep.rounds)


class _Padding(nn.Module):
    """Warns through transformers' own logger at every call, as Longformer's `_pad_to_window_size`
    does ("Input ids are automatically padded ..."), then pads its input to a multiple of 8."""

    def forward(self, x):
        from transformers.utils import logging as hf_logging

        hf_logging.get_logger("transformers.models.longformer.modeling_longformer").warning(
            "Input ids are automatically padded to be a multiple of `config.attention_window`: 8"
        )
        pad = (8 - x.shape[-1] % 8) % 8
        return torch.nn.functional.pad(x, (0, pad)).view(x.shape[0], -1, 8).sum(-1)


@pytest.mark.parametrize("cover", [False, True])
def test_a_foreign_library_line_never_reaches_the_terminal_when_quiet(capfd, cover):
    """verbose=False: nothing at all on the terminal, a library's logger included (transformers'
    handler holds the stderr it found at import), in every pass the loop makes (the rounds, the
    real-tensor pass, cover's runs of the program); the line is kept in the round's log."""
    torch.manual_seed(0)
    capfd.readouterr()
    ds = {"x": {1: Dim("seq", min=2, max=64)}}
    d = dimguard.export(_Padding(), (torch.randn(2, 20),), dynamic_shapes=ds, verbose=False, cover=cover)
    out, err = capfd.readouterr()
    assert err == "" and out == "", (out, err)
    if cover:
        # The Dispatch serves the user's own example.
        assert d.accepts({"x": [2, 20]})
        return
    rounds = d[1].rounds
    assert any("automatically padded" in (r.log or "") for r in rounds), [r.log for r in rounds]


def test_an_unreadable_error_changes_nothing(monkeypatch):
    """A message dimguard cannot read is never answered by switching the sizes to Dim.AUTO (the
    raft_small wrong answer came from that path): the loop stops and says why."""
    import importlib

    ex = importlib.import_module("dimguard.export")

    def refuse(*a, **k):
        raise ValueError("cannot read the guard (test)")

    monkeypatch.setattr(ex._native, "diagnose", refuse)
    x = torch.randn(2, 3, 64, 48)
    ds = {"x": {0: Dim("batch", max=64), 2: Dim("h", min=32, max=512), 3: Dim("w", min=32, max=512)}}
    with pytest.raises(dimguard.ExportError) as e:
        dimguard.export(ConvStack().eval(), (x,), dynamic_shapes=ds, verbose=False)
    rounds = e.value.report.rounds
    assert len(rounds) == 1 and "could not read the error" in rounds[0]["notes"][-1]
    assert "Dim.AUTO" not in e.value.report.spec


def _forms():
    """Each form of ConstraintViolationError torch 2.15 raises, from a small model: (model, inputs
    by name, dynamic_shapes, sampled shapes)."""
    from models import RangeGlued, SharedSeq

    b, n = Dim("batch", min=1, max=8), Dim("n", min=2, max=512)
    h, w = Dim("h", min=2, max=512), Dim("w", min=2, max=512)
    conv = {"x": {0: Dim("batch", max=64), 2: Dim("h", min=32, max=512), 3: Dim("w", min=32, max=512)}}
    return [
        # "Not all values of h ... satisfy the generated guard ..." bullets.
        ("bullets", ConvStack().eval(), {"x": (2, 3, 64, 48)}, conv, [(2, 3, v, 48) for v in (32, 33, 64, 65, 68, 200, 512, 513)]),
        # "... == 2.Specializations unexpectedly required (n)!" glued onto the guard's line.
        ("glued", DivBySize(), {"x": (2, 64)}, {"x": {0: b, 1: n}}, [(2, v) for v in (2, 3, 63, 64, 65, 512)] + [(1, 64), (8, 64)]),
        # "The values of w ... and h ... must always be equal." and a glued specialization.
        ("equal+glued", SharedSeq(), {"x": (4, 64), "y": (4, 64)}, {"x": {0: b, 1: h}, "y": {0: b, 1: w}}, [(k, v) for k in (1, 4, 8) for v in (2, 64, 100, 512)]),
        # "... <= 512Specializations unexpectedly required (batch)!": a range bullet (no period)
        # glued to the next line (needs the reader of issue 32's item 3).
        ("range+glued", RangeGlued(), {"x": (4, 64)}, {"x": {0: Dim("batch", min=1, max=16), 1: Dim("w", min=2, max=512)}}, [(k, v) for k in (1, 4, 16) for v in (2, 31, 32, 64, 512)]),
    ]


@pytest.mark.parametrize("form", [f[0] for f in _forms()])
def test_each_violation_form_torch_raises_is_read_by_the_loop(form):
    """The loop reads every form (torch raising it for real, never a re-typed text): no round says
    it could not read the error, at most two rounds, the user's names kept, and report.accepts
    is the program's answer at every sampled shape (oracle: running it), the outputs the eager
    model's where it runs."""
    _, model, inputs, ds, shapes = next(f for f in _forms() if f[0] == form)
    torch.manual_seed(0)
    args = tuple(torch.randn(*s) for s in inputs.values())
    ep, rep = dimguard.export(model, args, dynamic_shapes=ds, verbose=False)
    notes = [n for r in rep.rounds for n in r["notes"]]
    assert not any("could not read" in n for n in notes), notes
    # ConvStack's batch Dim(max=64) takes 0, which its program rejects: one more round narrows
    # the spec to 1..64 (the audit's narrowing, not a reading).
    # Where torch's solver asked to specialize a size whose guards leave a window through the
    # traced size, the window is tried first, once: one round more when torch specializes it
    # again (issue 43).
    tried = any("trying the diagnosis's sound window first" in n for n in notes)
    assert len(rep.rounds) <= (3 if form == "bullets" else 2) + tried, [r["outcome"] for r in rep.rounds]
    for d in ds.values():
        for v in d.values():
            root = getattr(v, "__name__", None)
            if root and all(s["input"] != k for k in ds for s in rep.static):
                assert root in rep.spec, rep.spec
    bad = []
    for shape in shapes:
        a = tuple(torch.randn(*([shape[0]] + list(shape[1:]))) for _ in inputs)
        said = rep.verdict({k: list(shape) for k in inputs})["accepted"]
        try:
            with torch.no_grad():
                got = ep.module()(*a)
        except (AssertionError, RuntimeError, ValueError):
            got = None
        if said is None or said != (got is not None):
            bad.append((shape, said, got is not None))
        elif got is not None:
            with torch.no_grad():
                assert torch.allclose(got, model(*a), atol=1e-5), shape
    assert not bad, f"(shape, report.accepts, runs): {bad}"
    own = {k: list(s) for k, s in inputs.items()}
    assert rep.accepts(own) is True


def test_a_value_read_back_from_a_tensor_is_decided_by_a_real_pass():
    """No example value exists for ``.item()`` of a size: the next pass propagates real tensors,
    torch decides the branch at the example and asserts it, and the program comes back; the
    report never accepts a shape the program rejects (it may leave one undecided: the assert is
    over a value computed from data)."""
    from models import ItemOfSize

    torch.manual_seed(0)
    m = ItemOfSize()
    b, n = ShapeVar("b", min=1, max=4), ShapeVar("n", min=8, max=64)
    ep, rep = dimguard.export(m, (torch.randn(2, 20),), dynamic_shapes=ShapesSpec({"x": TensorSpec([b, n])}), verbose=False)
    assert rep.exported and len(rep.rounds) <= 3, [r["outcome"] for r in rep.rounds]
    assert any("propagates real tensors" in note for r in rep.rounds for note in r["notes"])
    wrong = []
    for shape in [(2, 20), (1, 20), (4, 20), (2, 8), (2, 16), (2, 17), (2, 63), (2, 64)]:
        said = rep.verdict({"x": list(shape)})["accepted"]
        got = run(ep, torch.randn(*shape))
        if said is True and got is None:
            wrong.append(shape)
        if got is not None:
            x = torch.randn(*shape)
            assert torch.allclose(run(ep, x), m(x)), shape
    assert not wrong, f"accepted, but the program raised: {wrong}"
    assert run(ep, torch.randn(2, 20)) is not None


def test_a_shapes_spec_from_a_real_tensor_pass_is_never_printed_as_a_spec_that_fails():
    """Issue 43 (HF Longformer, ``ShapesSpec``): a program from a pass that propagates real tensors
    (a value read back from a tensor) has no ``ShapesSpec`` torch exports again with the example:
    the report says why (``no_reexport``) and prints that spec only as comments, so that pasted it
    defines nothing. The oracle is torch: the spec uncommented raises on the data-dependent
    expression plainly and in the real-tensor context, and ``draft_export`` refuses it (if a
    torch ever exports it, this test fails and the report must print it). Before, the report
    printed the spec as code, and pasting it failed."""
    import contextlib

    from models import ItemOfSize

    m = ItemOfSize()
    x = torch.randn(2, 20)
    b, n = ShapeVar("b", min=1, max=4), ShapeVar("n", min=8, max=64)
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ShapesSpec({"x": TensorSpec([b, n])}), verbose=False)
    assert rep.exported and rep.rounds[-1]["real"], [(r["outcome"], r["real"]) for r in rep.rounds]
    assert rep.no_reexport and "draft_export" in rep.no_reexport, rep.no_reexport
    ns = {}
    exec(rep.spec, ns)  # noqa: S102 - dimguard's printed text: comments only
    assert "dynamic_shapes" not in ns, rep.spec
    assert rep.spec.splitlines()[0].startswith("# No spec to paste:"), rep.spec
    code = "\n".join(ln.split("#     ", 1)[1] for ln in rep.spec.splitlines() if ln.startswith("#     "))
    for context in (contextlib.nullcontext(), torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True)):
        ns = {}
        exec(code, ns)  # noqa: S102 - the spec the program was exported with
        with pytest.raises(Exception, match="data-dependent"), context:
            torch.export.export(m, (x,), dynamic_shapes=ns["dynamic_shapes"])
    with pytest.raises(NotImplementedError, match="ShapesSpec"):
        torch.export.draft_export(m, (x,), dynamic_shapes=ns["dynamic_shapes"])
    # The program itself stands: it runs the example, equal to eager.
    assert torch.allclose(run(ep, x), m(x))


def test_a_shapes_spec_from_a_real_tensor_pass_names_the_model_check_that_makes_it_export():
    """The third way out of ``no_reexport``: ``report.model_checks`` gives, per expression over a
    value read from data, the ``torch._check`` torch itself suggests for the branch it took at
    the example, at the line it blames. The oracle is torch: the model's source with each check
    inserted before its line exports with the commented spec plainly, and that program accepts
    exactly the sizes the returned one accepts (every n of the range, at two batches), with
    equal outputs; a model given the other branch's check would not."""
    import inspect
    import textwrap

    import models
    from models import ItemOfSize

    m = ItemOfSize()
    x = torch.randn(2, 20)
    b, n = ShapeVar("b", min=1, max=4), ShapeVar("n", min=8, max=64)
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ShapesSpec({"x": TensorSpec([b, n])}), verbose=False)
    assert rep.no_reexport and rep.model_checks, (rep.no_reexport, rep.model_checks)
    for c in rep.model_checks:
        assert f"#   {c['check']}  before {c['file']}:{c['line']} (`{c['source']}`)" in rep.spec.splitlines(), rep.spec
    # Insert each check before its line in forward's source (the blamed lines are forward's).
    lines, first = inspect.getsourcelines(ItemOfSize.forward)
    for c in sorted(rep.model_checks, key=lambda c: -c["line"]):
        assert c["file"] == inspect.getsourcefile(models), c
        i = c["line"] - first
        assert lines[i].strip() == c["source"], (lines[i], c)
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines.insert(i, f"{indent}{c['check']}\n")
    ns = {"torch": torch}
    exec(textwrap.dedent("".join(lines)), ns)  # noqa: S102 - the test's own model, with the checks
    checked = type("Checked", (ItemOfSize,), {"forward": ns["forward"]})()
    code = "\n".join(ln.split("#     ", 1)[1] for ln in rep.spec.splitlines() if ln.startswith("#     "))
    spec_ns = {}
    exec(code, spec_ns)  # noqa: S102 - the spec the program was exported with
    ep2 = torch.export.export(checked, (x,), dynamic_shapes=spec_ns["dynamic_shapes"])
    for batch in (1, 3):
        for k in range(8, 65):
            xk = torch.randn(batch, k)
            got, want = run(ep2, xk), run(ep, xk)
            assert (got is None) == (want is None), (batch, k, got is None, want is None)
            if got is not None:
                assert torch.allclose(got, want) and torch.allclose(got, m(xk)), (batch, k)
            assert (want is not None) == rep.accepts({"x": (batch, k)}), (batch, k)


def test_a_spec_from_a_real_tensor_pass_names_its_context_and_re_exports_pasted_as_printed():
    """Issue 43 (HF Longformer, plain ``Dim``): a program from a pass that propagates real tensors
    (a value read back from a tensor) is exported again only in that context; the printed spec
    names it (``export_context``), and, where the example's batch of 1 was traced at 2, the sizes
    to export at (``export_shapes``). Pasted as printed it re-exports, and the re-exported program
    equals eager where the returned one runs. Before, the spec named no context, and its paste
    failed on the data-dependent expression."""
    from models import ItemOfSize

    m = ItemOfSize()
    ep, rep = dimguard.export(m, (torch.randn(1, 20),), dynamic_shapes={"x": {0: Dim("b", min=1, max=4), 1: Dim("n", min=8, max=64)}}, verbose=False)
    assert rep.exported and rep.export_context is not None and "propagate_real_tensors" in rep.export_context, rep.spec
    ns = {}
    exec(rep.spec, ns)  # noqa: S102 - dimguard's printed spec
    assert ns.get("export_context") is not None, rep.spec
    shapes = ns.get("export_shapes") or {"x": [1, 20]}
    assert shapes == rep.to_dict()["export_shapes"], (shapes, rep.to_dict()["export_shapes"])
    with ns["export_context"]:
        again = torch.export.export(m, (torch.randn(*shapes["x"]),), dynamic_shapes=ns["dynamic_shapes"])
    for shape in [(1, 20), (2, 20), (4, 20)]:
        x = torch.randn(*shape)
        got = run(ep, x)
        if got is not None:
            assert torch.allclose(run(again, x), m(x)), shape


class _ItemChunks(torch.nn.Module):
    """:class:`models.ItemOfSize` with chunks of ``k``: the slice ``x[:, : k * chunks]`` ends at a
    value read back from a tensor, so torch records its length as one more value read from data
    (``u1``) and asserts ``u1 >= 0`` and ``u1 <= n`` on it."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        chunks = torch.div(torch.tensor(x.shape[1]), self.k, rounding_mode="trunc").item()
        if self.k * chunks < x.shape[1]:
            return x[:, : self.k * chunks] * 2
        return x * 3


@pytest.mark.parametrize("k,example", [(8, (1, 20)), (3, (2, 13))])
def test_a_slice_ending_at_a_value_read_from_data_is_decided_at_every_size(k, example):
    """Issue 43 (plain ``Dim``, ItemOfSize): the user's example, which eager runs, is decided and
    accepted, and so is every size of the range: the slice's length (``u1`` in torch's asserts) is
    what the slice computes from its end ``k * trunc(n / k)``, read through the graph. The oracle
    is the returned program, run at every n of the range (batch 1 and 2), and eager where it runs.
    Before, the example and 49 of 57 sizes were undecided (``u1 >= 0`` names a value computed from
    data)."""
    m = _ItemChunks(k)
    ep, rep = dimguard.export(m, (torch.randn(*example),), dynamic_shapes={"x": {0: Dim("b", min=1, max=4), 1: Dim("n", min=8, max=64)}}, verbose=False)
    assert rep.verdict({"x": list(example)})["accepted"] is True, rep.verdict({"x": list(example)})
    agree(m, ep, rep, "x", [(b, n) for b in (1, 2) for n in range(8, 65)])
    assert rep.accepts({"x": [1, 4 * k + 1]}) and not rep.accepts({"x": [1, 4 * k]})


class _FixedRows(torch.nn.Module):
    """Broadcasts against a table of 16 rows: torch specializes the rows' size to 16."""

    def forward(self, x):
        return x * torch.arange(16.0).reshape(16, 1)


class _Square(torch.nn.Module):
    """Adds its input to its transpose: torch ties the two sizes."""

    def forward(self, x):
        return x + x.transpose(1, 2)


@pytest.mark.parametrize(
    "model,example,name,says",
    [(_FixedRows(), (2, 16, 20), "h", "the returned program fixes it at 16"), (_Square(), (2, 12, 12), "w", "the returned program takes it as h")],
)
def test_a_size_torch_makes_static_or_ties_keeps_the_users_name_in_a_comment(model, example, name, says):
    """torch gives ``Dim.STATIC``, an int or a tie no name: the printed spec keeps the user's name
    in a comment on that entry, says what the program does with it, defines every name once, and
    re-exports to a program that agrees with the report."""
    b, h, w = Dim("b", min=1, max=8), Dim("h", min=4, max=64), Dim("w", min=4, max=64)
    x = torch.randn(*example)
    ep, rep = dimguard.export(model, (x,), dynamic_shapes={"x": {0: b, 1: h, 2: w}}, verbose=False)
    assert rep.exported, [r.get("error") for r in rep.rounds]
    line = next((ln for ln in rep.spec.splitlines() if f"# {name}: " in ln), None)
    assert line is not None and says in line, rep.spec
    defined = [ln.split(" = ")[0] for ln in rep.spec.splitlines() if " = " in ln and not ln.startswith((" ", "#", "dynamic_shapes"))]
    assert len(defined) == len(set(defined)), rep.spec
    again = reexports(model, x, rep.spec)
    rng = random.Random(0)
    shapes = [example] + [(rng.randint(1, 8), rng.choice([example[1], rng.randint(4, 64)]), rng.choice([example[2], rng.randint(4, 64)])) for _ in range(10)]
    agree(model, again, rep, "x", shapes)


class _Sleeps(nn.Module):
    """Its trace takes ``seconds`` (a model torch.export takes long on: timm's mobilevitv2_050
    ran over an hour on 2 loaded cores)."""

    def __init__(self, seconds):
        super().__init__()
        self.seconds = seconds

    def forward(self, x):
        import time

        time.sleep(self.seconds)
        return x * 2


@pytest.mark.parametrize("api", ["dim", "spec"])
@pytest.mark.parametrize("budget", [1.0, 3.0])
def test_a_time_budget_interrupts_a_long_torch_export_and_the_report_says_where(api, budget):
    import time

    x = torch.randn(2, 8)
    spec = {"x": {0: Dim("b", min=1, max=16)}} if api == "dim" else ShapesSpec({"x": TensorSpec([ShapeVar("b", min=1, max=16), 8])})
    t0 = time.perf_counter()
    with pytest.raises(dimguard.ExportError) as e:
        dimguard.export(_Sleeps(600), (x,), dynamic_shapes=spec, verbose=False, time_budget=budget)
    wall = time.perf_counter() - t0
    # Interrupted inside torch.export: far from the trace's 600 s (margin for a loaded machine).
    assert wall < budget + 60, wall
    d = e.value.report.to_dict()
    assert d["budget"] == {"seconds": budget, "spent": True, "round": 1, "where": d["budget"]["where"]}, d["budget"]
    assert "round 1's torch.export" in d["budget"]["where"]
    assert [r["outcome"] for r in d["rounds"]] == ["budget"]
    assert d["rounds"][0]["torch_seconds"] >= budget * 0.9
    # A trace inside the budget: exported, nothing spent, and the alarm is off afterwards.
    ep, rep = dimguard.export(_Sleeps(0), (x,), dynamic_shapes=spec, verbose=False, time_budget=budget + 600)
    assert rep.to_dict()["budget"]["spent"] is False and rep.accepts({"x": [5, 8]})
    import signal

    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("bad", [0, -1.0, "10"])
def test_a_time_budget_that_is_not_a_positive_number_is_refused(bad):
    with pytest.raises(ValueError, match="time_budget"):
        dimguard.export(_Sleeps(0), (torch.randn(2, 8),), dynamic_shapes={"x": {0: Dim("b", min=1, max=16)}}, time_budget=bad)


def test_a_program_torch_export_save_refuses_for_math_ceil_is_still_checked_from_memory(tmp_path):
    """timm's MobileViTv2 under a ShapesSpec: the program's size arithmetic calls ``math.ceil``,
    which torch's serializer refuses (``op ceil is not in _SYM_OPS``), so ``torch.export.save``
    cannot write it. The audit checks it from memory all the same: decided at every H of a brute
    force (16..90) against the program itself, and torch's serializer is left as it was."""
    import math as _math

    torch.manual_seed(0)
    m = CeilPad().eval()
    B, H, W = ShapeVar("B", min=1, max=4), ShapeVar("H", min=16, max=200), ShapeVar("W", min=16, max=200)
    x = torch.randn(2, 3, 60, 64)
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ShapesSpec({"x": TensorSpec([B, 3, H, W])}), verbose=False)
    assert any(n.op == "call_function" and n.target is _math.ceil for n in ep.graph.nodes), "no math.ceil node: the test no longer reaches the case"
    with pytest.raises(Exception, match="_SYM_OPS"):
        torch.export.save(ep, str(tmp_path / "p.pt2"))
    assert rep.to_dict()["unaudited"] is None, rep.to_dict()["unaudited"]
    agree(m, ep, rep, "x", [(1, 3, h, 64) for h in range(16, 91)] + [(2, 3, 60, w) for w in (16, 17, 33, 200)])


def test_a_size_torch_fixes_without_a_printed_guard_keeps_the_window_its_trace_allows():
    """FixedGrid (EfficientFormerV2's fixed 7x7 grid): torch's error prints H's guard only and
    asks to specialize both H and W at 224. The loop tries the window the round's whole trace
    keeps for W before Dim.STATIC (it made W static before, keeping 1 size): two rounds, W a
    named Dim, and report.accepts agrees with the program and the eager model at every W
    around the window and at H, W pairs (oracle: running them); the printed spec re-exports."""
    from models import FixedGrid

    torch.manual_seed(0)
    m = FixedGrid().eval()
    x = torch.randn(2, 3, 224, 224)
    ds = {"x": {0: Dim("batch", min=1, max=16), 2: Dim("h", min=64, max=512), 3: Dim("w", min=64, max=512)}}
    ep, rep = dimguard.export(m, (x,), dynamic_shapes=ds, verbose=False)
    assert [r["outcome"] for r in rep.rounds] == ["constraint_violation", "exported"], [r.get("error") for r in rep.rounds]
    assert any("trying the window the round's whole trace keeps first" in n for n in rep.rounds[0]["notes"]), rep.rounds[0]["notes"]
    assert not [s for s in rep.static if s["index"] == 3], rep.static
    # The report never says torch fixed a size the program keeps dynamic.
    assert not [n["why"] for n in rep.narrowed if "torch specialized it" in n["why"]], rep.narrowed
    ws = list(range(186, 236))
    # Eager alone says which W run (the window is the oracle's, not the report's).
    runs_eager = []
    for w in ws:
        try:
            with torch.no_grad():
                m(torch.randn(1, 3, 224, w))
            runs_eager.append(w)
        except RuntimeError:
            pass
    kept = [w for w in ws if rep.verdict({"x": [2, 3, 224, w]})["accepted"] is True]
    assert kept == runs_eager and len(kept) >= 2, (kept, runs_eager)
    rng = random.Random(0)
    agree(m, ep, rep, "x", [(2, 3, 224, w) for w in (192, 193, 208, 209, 224, 225)] + [(rng.randint(1, 16), 3, rng.randint(186, 236), rng.randint(186, 236)) for _ in range(6)] + [(1, 3, 209, 224), (16, 3, 224, 209)])
    reexports(m, x, rep.spec)
