"""dimguard.trace.capture with real torch: records in memory, leaves no file, restores torch's
logger, and its text is a trace dimguard reads (attributing the guard to this file's line)."""

import json
import logging
import os
import shutil
import subprocess
import tempfile

import pytest

import torch  # noqa: E402  (a real torch: this test must fail, not skip, without it)
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.export import Dim, export  # noqa: E402

from dimguard.trace import capture  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class FPN(nn.Module):
    def __init__(self):
        super().__init__()
        self.s4 = nn.Conv2d(3, 4, 3, stride=4, padding=1)
        self.s8 = nn.Conv2d(4, 4, 3, stride=2, padding=1)

    def forward(self, x):
        fa = self.s4(x)
        return fa + F.interpolate(self.s8(fa), scale_factor=2.0, mode="nearest")  # THE LINE


THE_LINE = next(i for i, l in enumerate(open(__file__).read().splitlines(), 1) if l.endswith("# THE LINE"))


def failing_export():
    with pytest.raises(Exception, match="Constraints violated"):
        export(FPN(), (torch.randn(1, 3, 64, 32),), dynamic_shapes={"x": {2: Dim("h", min=16, max=256)}})


def dimguard_binary():
    for p in (os.environ.get("DIMGUARD_BIN"), os.path.join(ROOT, "target", "release", "dimguard"),
              os.path.join(ROOT, "target", "debug", "dimguard"), shutil.which("dimguard")):
        if p and os.path.exists(p):
            return p
    pytest.fail("no dimguard binary: build it (cargo build) or set DIMGUARD_BIN")


def test_records_in_memory_without_files_and_restores_the_logger(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCH_TRACE", raising=False)
    monkeypatch.chdir(tmp_path)
    log = logging.getLogger("torch.__trace")
    # torch's own lazy handler may remove itself on the first record: compare ours only.
    before = (log.level, log.propagate)
    tmp_before = set(os.listdir(tempfile.gettempdir()))
    with capture() as t:
        failing_export()
    assert (log.level, log.propagate) == before
    assert not [h for h in log.handlers if type(h).__module__ == "dimguard.trace"]
    assert os.listdir(tmp_path) == []
    assert set(os.listdir(tempfile.gettempdir())) - tmp_before == set()
    kinds = [next(iter(r)) for r in t.records]
    assert "create_symbol" in kinds and "guard_added_fast" in kinds
    # Records after the block are not captured.
    n = len(t)
    failing_export()
    assert len(t) == n


def test_second_capture_reads_with_the_users_line():
    # The first export interns the file names; the second capture must still resolve them.
    with capture():
        failing_export()
    with capture() as t:
        failing_export()
    assert not any("str" in r for r in t.records), "names were interned by the first capture"
    out = subprocess.run([dimguard_binary(), "diagnose", "--json", "--z3", "never", "-"],
                         input=t.text(), capture_output=True, text=True, check=True)
    report = json.loads(out.stdout)
    assert report["form"] == "torch_trace"
    [dim] = report["dims"]
    assert dim["feasible"]["count"] == sum(1 for h in range(16, 257) if (h - 1) // 4 + 1 == 2 * ((h - 1) // 8) + 2)
    for g in dim["guards"]:
        p = g["provenance"]
        assert p["user"] and p["file"] == __file__ and p["line"] == THE_LINE, p
        assert p["op"] == "infer_size"


def test_exceptions_propagate_and_the_logger_is_restored():
    log = logging.getLogger("torch.__trace")
    with pytest.raises(ZeroDivisionError):
        with capture():
            assert [h for h in log.handlers if type(h).__module__ == "dimguard.trace"]
            1 / 0
    assert not [h for h in log.handlers if type(h).__module__ == "dimguard.trace"]


def test_export_rounds_carry_provenance_without_setting_anything(tmp_path, monkeypatch):
    import dimguard

    monkeypatch.delenv("TORCH_TRACE", raising=False)
    monkeypatch.chdir(tmp_path)
    ep, report = dimguard.export(FPN(), (torch.randn(1, 3, 64, 32),),
                                 dynamic_shapes={"x": {2: Dim("h", min=16, max=256)}}, verbose=False)
    first = report.to_dict()["rounds"][0]
    assert first["outcome"] == "constraint_violation"
    [line] = first["lines"]
    assert (line["file"], line["line"], line["user"]) == (__file__, THE_LINE, True)
    [removed] = line["dims"]
    assert removed["removes"] == sum(1 for h in range(16, 257) if (h - 1) // 4 + 1 != 2 * ((h - 1) // 8) + 2)
    assert first["guards"] and all(g["provenance"]["line"] == THE_LINE for g in first["guards"])
    assert all("lines" in r and "guards" in r for r in report.to_dict()["rounds"])
    assert os.listdir(tmp_path) == [], "no trace file left behind"
    page = report.html(tmp_path / "export.html", title="FPN")
    assert "Round 1: constraint violation" in page and "# THE LINE" in page
    assert (tmp_path / "export.html").read_text() == page


# (patch16 is no longer one: its H and W are solved apart, each count within 64 bits.)
@pytest.mark.parametrize("name", ["two_stem", "window7"])
def test_a_trace_of_unbounded_linked_sizes_is_read_in_python(name):
    """The structured trace of a ``Dim.AUTO`` export with no bounds (torch 2.15, committed by
    tools/export_unbounded.py): its joint counts exceed 64 bits (two sizes up to 2^63 each).
    The Python binding used to fail on them with "number out of range" (serde_json's Value
    holds no such integer), so ``dimguard.export`` logged "the round's trace could not be read";
    the report now comes back with the counts exact."""
    import pathlib

    from dimguard import _native

    path = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "traces" / f"{name}_unbounded.log"
    out = json.loads(_native.diagnose(path.read_text(), [], [], None, "never", 10_000))
    assert out["dims"], out
    big = [v for v in _ints(out) if v >= 1 << 64]
    assert big, "expected a count beyond 64 bits"
    assert all(isinstance(v, int) for v in big)


def _ints(v):
    if isinstance(v, dict):
        for x in v.values():
            yield from _ints(x)
    elif isinstance(v, list):
        for x in v:
            yield from _ints(x)
    elif isinstance(v, int) and not isinstance(v, bool):
        yield v
