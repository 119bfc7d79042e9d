"""What ``dimguard.export`` did on real models that CI's venv does not have (timm's
mobilevit_xxs, transformers' Swin from a small config; torch 2.15, CPU): the runs of
``tools/export_real.py``, committed as ``tests/data/export_real/<name>.json`` (see
tests/data/README.md). Each holds the rounds, the final spec, and per probed shape whether
``report.accepts`` said it runs and whether the returned program ran. Read here: the returned
program takes the user's own example, every shape the report accepts runs, and the user's names
and the batch range are kept where the program keeps them dynamic."""

import json
import pathlib
import re

import pytest

DATA = pathlib.Path(__file__).resolve().parents[2] / "tests" / "data" / "export_real"


def load(name):
    return json.loads((DATA / f"{name}.json").read_text())


@pytest.mark.parametrize("name", ["mvit", "swin"])
def test_the_program_takes_its_own_example_and_every_accepted_shape_runs(name):
    r = load(name)
    assert r["torch"].startswith("2.15"), r["torch"]
    assert r["rounds"][-1]["outcome"] == "exported", r["rounds"][-1]
    own = [c for c in r["checks"] if c["shape"] == r["example"]]
    assert own and all(c["accepts"] and c["runs"] for c in own), own
    # Sound: a shape the report accepts runs.
    bad = [c["shape"] for c in r["checks"] if c["accepts"] and not c["runs"]]
    assert not bad, bad
    # torch's own names never replace the user's.
    assert not any(re.fullmatch(r"s\d+", n) for n in r["spec_names"]), r["spec_names"]
    assert "Dim.AUTO" not in r["spec"], r["spec"]
    for rd in r["rounds"]:
        assert not any("could not read" in n or "could not be read" in n for n in rd["notes"]), rd


def test_mobilevit_keeps_h_w_and_the_batch_and_the_report_matches_every_run():
    r = load("mvit")
    assert r["spec_names"] == ["batch", "h", "w"], r["spec"]
    assert "batch = Dim('batch', min=1, max=16)" in r["spec"], r["spec"]
    assert [c for c in r["checks"] if c["accepts"] != c["runs"]] == []
    # h mod 64 in {57..63, 0} around the traced 256: the largest run of it holding 256.
    assert r["accepted"]["2"]["min"] == 249 and r["accepted"]["2"]["max"] == 256


def test_swin_keeps_the_users_batch_and_the_report_matches_every_run():
    """Round 2's program linked the batch to H, W (batch 1 excluded at 224x224); H, W went static
    and the batch was narrowed to 2..16 with them, though the final program runs at batch 1. The
    batch now keeps the user's 1..16, and report.accepts agrees with every probed run."""
    r = load("swin")
    assert r["spec_names"] == ["batch"], r["spec"]
    assert "batch = Dim('batch', min=1, max=16)" in r["spec"], r["spec"]
    assert [c for c in r["checks"] if c["accepts"] != c["runs"]] == []
    assert any(c["shape"][0] == 1 and c["accepts"] and c["runs"] for c in r["checks"])
