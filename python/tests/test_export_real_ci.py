"""Issue 43, run in CI: ``tools/export_real.py``'s representative models (``CI``: HF Dinov2 and
CLIP vision, whose guards torch's solver specializes while one shared window exports; HF DPT,
whose position grid is an integer square root; GPT-2 with its default cache, whose `cat` takes an
empty ``(0,)`` tensor and whose 128 positions are an implied limit; the T5 encoder, whose
relative-position buckets index a 32-row table through ``abs``, ``log``, ``where`` and ``min``), small
configs from transformers, both APIs. Each row is the harness's own: the returned program run at
>= 16 sampled shapes against ``report.accepts`` and the eager model, and the printed spec pasted
in front of ``torch.export.export`` with the user's example. The whole harness (30 models) runs
locally for docs/PERFORMANCE.md."""

import importlib.util
import pathlib

import pytest

TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "export_real.py"


def harness():
    spec = importlib.util.spec_from_file_location("export_real", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


H = harness()


@pytest.mark.parametrize("api", ["dim", "spec"])
@pytest.mark.parametrize("name", H.CI)
def test_a_real_model_is_decided_at_its_example_with_no_wrong_accept_and_its_spec_reexports(name, api):
    row = H.run_one(name, api)
    assert row.get("error") is None, row.get("error")
    checks = row["checks"]
    # Sound: every shape the report accepts runs, and the report is the program's answer.
    assert row["wrong_accepts"] == [], row["wrong_accepts"]
    assert row["wrong_rejects"] == [], row["wrong_rejects"]
    assert row["unequal"] == [], row["unequal"]
    # The user's own example: decided and accepted, since eager runs it.
    own = checks[0]
    assert own["eager_runs"] and own["accepts"] is True, own
    # At most one extra round.
    assert len(row["rounds"]) <= 3, [r["outcome"] for r in row["rounds"]]
    # The printed spec re-exports with the user's example.
    assert row["reexport"] is None, row["reexport"]
    # Never fewer sizes than the hand-written window keeps.
    for k, n in (row.get("hand") or {}).items():
        assert row["kept"][k] is not None and row["kept"][k] >= n, (k, row["kept"], row["hand"], row["spec"])
    # No line of the report contradicts another, or the program (issue 43 item 4).
    assert row["contradictions"] == [], row["contradictions"]


# cover=True on each CI model, one API per model (alternating, to keep CI's time): the Dispatch
# serves the user's own example: routed to a piece whose audit accepts it, and its output there
# equal to the eager model's.
COVER = [(name, "dim" if i % 2 == 0 else "spec") for i, name in enumerate(H.CI)]


@pytest.mark.parametrize("name,api", COVER)
def test_cover_serves_the_users_example_on_a_real_model(name, api):
    import torch

    import dimguard

    spec = H.MODELS[name]
    torch.manual_seed(0)
    model = spec["build"]().eval()
    args = H.make_inputs(spec, spec["example"])
    with torch.no_grad():
        d = dimguard.export(model, args, dynamic_shapes=H.dynamic_shapes(spec, api), cover=True, max_programs=2, verbose=False)
    own = {k: list(spec["example"]) for k in spec["inputs"]}
    assert d.accepts(own), (d.notes, d.coverage)
    i = d.route(own)
    assert d.pieces[i].accepts(own)
    got, err = H.call(d, args)
    want, _ = H.call(model, args)
    assert err is None and len(got) == len(want), err
    assert all(g.shape == w.shape and torch.allclose(g, w, atol=1e-4, rtol=1e-3) for g, w in zip(got, want))
