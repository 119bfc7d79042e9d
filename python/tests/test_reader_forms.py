"""The Python package reads what the CLI reads (one reader, ``forms::read``), with real torch 2.15:

* torch 2.15 glues its last "Not all values" bullet and "Specializations unexpectedly required
  (batch)!" onto one line; the exception, raised here by a real export, is read (the export loop
  calls the same ``_native.diagnose``), and the spec its answer gives exports with torch and
  runs at both ends;
* every text form of ``tests/data/forms`` (the fixtures the CLI tests read) is read by
  ``dimguard.diagnose`` as its form.
"""

import pathlib

try:
    import torch
    from torch.export import Dim, export
except ImportError as e:  # never a skip: the suite fails, saying why
    raise RuntimeError(
        f"the end-to-end tests need torch 2.15 ({e}): pip install -r python/requirements-test.txt"
    ) from e

import pytest

import dimguard

ROOT = pathlib.Path(__file__).resolve().parents[2]
FORMS = ROOT / "tests" / "data" / "forms"


class Glued(torch.nn.Module):
    """tools/make_form_fixtures.py's case ``glued``: the batch forced to 2 by ``n*n == 4``, the
    length held below 256."""

    def forward(self, x):
        n = x.shape[0]
        y = x.new_ones(n * n).view(4, 1)
        return y.sum() + (x[:, :256].sum() if x.shape[1] != 512 else x.sum())


def test_torch_215s_glued_message_is_read_and_torch_agrees():
    ds = {"x": {0: Dim("batch", min=1, max=16), 1: Dim("seq", min=2, max=512)}}
    with pytest.raises(Exception) as info:
        export(Glued(), (torch.randn(2, 64),), dynamic_shapes=ds)
    text = str(info.value)
    assert "255Specializations unexpectedly required (batch)!" in text
    d = dimguard.diagnose(info.value)
    dims = {x.name: x for x in d.dims}
    assert dims["batch"].specialized == 2
    seq = dims["seq"]
    accepted = set(seq.feasible)
    assert accepted == set(range(2, 256))
    # torch itself: the spec that answer gives (batch static 2, seq 2..255) exports, and the
    # program runs at both ends of it.
    ok = {"x": {0: Dim.STATIC, 1: Dim("seq", min=2, max=255)}}
    ep = export(Glued(), (torch.randn(2, 64),), dynamic_shapes=ok)
    for s in (2, 100, 255):
        ep.module()(torch.randn(2, s))


# The form each fixture is (by its name, as tools/make_form_fixtures.py writes them).
FORM_OF = {
    ".exception.txt": {"constraint_violation", "data_dependent"},
    ".log.txt": {"torch_logs"},
    ".draft.txt": {"draft_export"},
    ".guard_failed.txt": {"guard_failed"},
    ".input_check.txt": {"input_check"},
    ".crash.txt": {"solver_crash"},
    ".program.txt": {"program"},
}


def expected_form(name):
    if name.startswith("recompile_"):
        return {"guard_failed"}
    return next(v for k, v in FORM_OF.items() if name.endswith(k))


@pytest.mark.parametrize(
    "name",
    sorted(
        p.name
        for p in FORMS.glob("*.txt")
        if not p.name.endswith(".draft_clean.txt")
    ),
)
def test_every_text_form_the_cli_reads_is_read_by_the_package(name):
    path = FORMS / name
    d = dimguard.diagnose(path.read_text(), z3="never")
    assert d.form in expected_form(name), (name, d.form)
    assert d.dims or d.data_dependent, name
