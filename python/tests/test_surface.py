"""The Python surface without torch: real message texts and real exported programs
(tests/data), every answer checked against a brute-force evaluation of the guards in Python."""

import json
import re

import pytest

import dimguard
from conftest import guard_env, run_spec

SEED_GUARD = "Eq(Mod(((L['image1'].size()[2] - 1)//4) - 1, 2), 0)"


def holds(guard, sizes):
    return bool(eval(guard, guard_env(sizes)))  # noqa: S307 - fixture guard text


def _compiles(guard):
    try:
        compile(guard, "<guard>", "eval")
        return True
    except SyntaxError:  # a guard glued to the next sentence in a wrapped paste
        return False


def test_diagnose_text_matches_brute_force(messages):
    text = (messages / "seed_raft_sympy_syntax.txt").read_text()
    d = dimguard.diagnose(text, examples={"image1": (1, 3, 520, 960)})
    dim = d.dims[0]
    assert dim.source == "L['image1'].size()[2]"
    lo, hi = dim.range
    brute = [h for h in range(lo, hi + 1) if holds(SEED_GUARD, {"image1": [1, 3, h, 960]})]
    assert list(dim.feasible) == brute
    assert len(dim.feasible) == dim.feasible.count == len(brute)
    for h in (lo, hi, 520, 521, 137):
        assert (h in dim.feasible) == (h in brute)
    best = dim.suggestions[0]
    values = range(best.lo, best.hi + 1)
    admitted = [v for v in values if v % best.modulus == best.residue]
    assert admitted and all(v in brute for v in admitted), "the first suggestion is sound"
    assert 520 in admitted, "the traced size is preferred"
    assert best.certificate in ("enumeration", "z3")


def test_diagnose_accepts_the_exception_object(messages):
    text = (messages / "torch211_toy_raft_seed.txt").read_text()
    err = RuntimeError(text.split("UserError: ", 1)[1])
    from_exc = dimguard.diagnose(err)
    from_text = dimguard.diagnose(text)
    assert from_exc.dims[0].feasible == from_text.dims[0].feasible
    assert from_exc.to_dict()["dims"][0]["suggestions"] == from_text.to_dict()["dims"][0]["suggestions"]


def test_to_json_is_the_contract(messages):
    d = dimguard.diagnose((messages / "torch211_googlenet.txt").read_text())
    data = json.loads(d.to_json())
    assert data == d.to_dict()
    for dim in data["dims"]:
        for key in ("name", "source", "range", "feasible", "suggestions"):
            assert key in dim
        seg = dim["feasible"]["segments"][0]
        assert set(seg) >= {"lo", "hi", "modulus", "residues"}
        assert {"lo", "hi", "modulus", "residue", "count", "code", "certificate"} <= set(dim["suggestions"][0])
    assert "Diagnosis(2 dims)" in repr(d) and "dynamic_shapes = {" in repr(d)


def test_every_fixture_message_diagnoses_soundly(messages):
    """Every real message: each dimension's first suggestion passes every guard the message
    lists for it (Python's evaluation of the guard text)."""
    for path in sorted(messages.glob("*.txt")):
        text = path.read_text()
        d = dimguard.diagnose(text, z3="never")
        guards = re.findall(r"satisfy the generated guard (.*?)\.?\n", text)
        for dim in d.dims:
            if not dim.suggestions or not dim.source or "math.trunc" in "".join(guards):
                continue
            m = re.match(r"L\['(\w+)'\]\.size\(\)\[(\d+)\]", dim.source)
            if m is None:
                continue
            inp, idx = m.group(1), int(m.group(2))
            own = [g for g in guards if dim.source in g and g.count("L['") == g.count(dim.source) and _compiles(g)]
            s = dim.suggestions[0]
            for v in list(range(s.lo, s.hi + 1, s.modulus))[:400]:
                shape = [1] * (idx + 1)
                shape[idx] = v
                for g in own:
                    assert holds(g, {inp: shape}), f"{path.name}: {dim.name}={v} fails {g}"


def test_spec_merge_keeps_every_input_and_shares_dims(messages):
    text = (messages / "seed_raft_sympy_syntax.txt").read_text()
    spec = (
        "from torch.export import Dim\n"
        "b = Dim('b', min=1, max=16)\n"
        "_2 = Dim('_2', min=135, max=2160)\n"
        "w = Dim('w', min=135, max=3840)\n"
        'dynamic_shapes = {"image1": {0: b, 2: _2, 3: w}, "image2": {0: b, 2: _2, 3: w}}\n'
    )
    d = dimguard.diagnose(text, examples={"image1": (1, 3, 520, 960)}, spec=spec)
    ds = run_spec(d.dynamic_shapes.split("\n\n", 1)[1] if d.dynamic_shapes.startswith("#") else d.dynamic_shapes)
    assert set(ds) == {"image1", "image2"}
    assert set(ds["image1"]) == set(ds["image2"]) == {0, 2, 3}
    for i in (0, 2, 3):
        assert ds["image1"][i] is ds["image2"][i], "shared Dims stay shared"
    heights = ds["image1"][2].values()
    assert heights and all(holds(SEED_GUARD, {"image1": [1, 3, h, 960]}) for h in heights)
    assert 520 in heights
    assert ds["image1"][3].values() == list(range(135, 3841)), "dims the message does not name are kept"
    assert d.dynamic_shapes.endswith(d.spec.code)


def test_bad_input_is_a_clear_error():
    with pytest.raises(ValueError) as e:
        dimguard.diagnose("hello, no guards here")
    assert "dimguard" in str(e.value) or "no" in str(e.value).lower()
    with pytest.raises(TypeError):
        dimguard.diagnose(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        dimguard.check(3.5)
    with pytest.raises(ValueError):
        dimguard.diagnose("x", spec="dynamic_shapes = 7")


def _brute_accepted(program, inputs, dims):
    """Per (input, index): the claimed sizes at which every guard holds, the other sizes at their
    traced values (single-size programs) — Python's own evaluation of guards_code."""
    guards = program["guards_code"]
    traced = {}
    for name in inputs:
        sizes = program["graph_module"]["graph"]["tensor_values"][name]["sizes"]
        traced[name] = [s.get("as_int") or s["as_expr"]["hint"]["as_int"] for s in sizes]
    out = {}
    for d in dims:
        acc = []
        for v in range(d["claimed"]["min"], d["claimed"]["max"] + 1):
            sizes = {k: list(s) for k, s in traced.items()}
            sizes[d["input"]][d["index"]] = v
            # Sizes with the same symbolic expression move together.
            for o in dims:
                if o["expr"] == d["expr"]:
                    sizes[o["input"]][o["index"]] = v
            if all(holds(g, sizes) for g in guards):
                acc.append(v)
        out[(d["input"], d["index"])] = acc
    return out


def test_check_matches_brute_force(programs):
    path = programs / "unetish_exact.model.json"
    program = json.loads(path.read_text())
    by_path = dimguard.check(path)
    by_bytes = dimguard.check(path.read_bytes())
    assert by_path == by_bytes
    brute = _brute_accepted(program, ["x"], by_path.to_dict()["dims"])
    for d in by_path.dims:
        claimed = [v for v in range(d.claimed.min, d.claimed.max + 1) if v % 4 == 0]
        want = [v for v in brute[(d.input, d.index)] if v in claimed]
        assert list(d.accepted) == want
    # The program fixes the batch at 21 (its graph's input shape): accepts holds it there.
    assert by_path.to_dict()["inputs"][0]["shape"][:2] == [21, 3]
    assert by_path.accepts({"x": (21, 3, 224, 224)}) == (224 in brute[("x", 2)] and 224 in brute[("x", 3)])
    v = by_path.verdict({"x": (1, 3, 224, 224)})
    assert v.accepted is False and "fixed at 21" in v.reason
    assert "CheckReport(2 dynamic dims)" in repr(by_path)


def test_check_of_shared_inputs(programs):
    """FlowNet exported by torch 2.15 with shared 8*_h, 8*_w: every claimed size works."""
    path = programs / "flownet_shared_hw.model.json"
    program = json.loads(path.read_text())
    r = dimguard.check(path)
    brute = _brute_accepted(program, ["image1", "image2"], r.to_dict()["dims"])
    for d in r.dims:
        assert list(d.accepted) == [v for v in brute[(d.input, d.index)] if v % 8 == 0]
        assert d.accepted.count == d.claimed.count == 61


def test_verify_gives_real_counterexamples(messages):
    text = (messages / "seed_raft_sympy_syntax.txt").read_text()
    spec = "_2 = Dim('_2', min=135, max=2160)\n"
    v = dimguard.verify(text, spec)
    assert v.sound is False
    dim = v.dims[0]
    assert dim.counterexamples
    for h in dim.counterexamples:
        assert 135 <= h <= 2160 and not holds(SEED_GUARD, {"image1": [1, 3, h, 960]})
    admitted = list(range(135, 2161))
    assert dim.failing == sum(not holds(SEED_GUARD, {"image1": [1, 3, h, 960]}) for h in admitted)
    good = dimguard.verify(text, "_h = Dim('_h', min=2, max=33)\n_2 = 64*_h + 8\n")
    assert good.sound is True and good.dims[0].certificate in ("z3", "enumeration")
    assert "Verification(sound=True)" in repr(good)


def test_z3_is_bundled_and_certifies():
    assert dimguard.z3_version().startswith("5.3")
    # A range too wide to enumerate: the certificate can only come from Z3.
    text = (
        "torch._dynamo.exc.UserError: Constraints violated (h)!\n"
        "  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 4611686018427387904 "
        "satisfy the generated guard Eq(Mod(L['x'].size()[2], 8), 0).\n"
    )
    d = dimguard.diagnose(text, z3="always")
    assert d.dims[0].suggestions[0].certificate == "z3"


def test_profile_covers_every_example_input(messages, programs):
    text = (messages / "seed_raft_sympy_syntax.txt").read_text()
    ex = {"image1": (1, 3, 520, 960), "image2": (1, 3, 520, 960)}
    with pytest.raises(ValueError, match="--spec"):
        dimguard.profile(text, examples=ex)
    spec = 'h = Dim("h", min=135, max=2160)\ndynamic_shapes = {"image1": {2: h}, "image2": {2: h}}\n'
    p = dimguard.profile(text, examples=ex, spec=spec)
    prof = p.profiles[0].inputs
    assert set(prof.keys()) == {"image1", "image2"}
    feasible = dimguard.diagnose(text).dims[0].feasible
    for which in ("min", "opt", "max"):
        assert prof["image1"][which] == prof["image2"][which]
        assert prof["image1"][which][2] in feasible
    # From a program: every min/opt/max is accepted.
    path = programs / "raft_small_torchfix.model.json"
    c = dimguard.check(path)
    p = dimguard.profile(path)
    for prof in p.profiles:
        shapes = prof.inputs.to_dict()
        for which in ("min", "opt", "max"):
            assert c.accepts({k: v[which] for k, v in shapes.items()})
    assert "--minShapes=image1:" in dimguard.profile(path, format="trtexec")


def test_size_set_against_segments():
    s = dimguard.SizeSet({"count": 6, "min": 5, "max": 23, "segments": [{"lo": 5, "hi": 23, "modulus": 8, "residues": [5, 7]}]})
    assert list(s) == [5, 7, 13, 15, 21, 23]
    assert len(s) == 6 and 13 in s and 14 not in s and "x" not in s
    assert s.describe() == "5..23 mod 8 ∈ {5, 7}"
    assert repr(s) == "SizeSet(6 sizes: 5..23 mod 8 ∈ {5, 7})"


def test_the_installed_wheel_is_self_contained():
    """Run by python/test.sh on the installed wheel, with the source tree's Z3 moved away: the
    package is not imported from the source tree, its extension names no path into it, and the
    Z3 it loads is the one bundled in dimguard.libs."""
    import pathlib

    from conftest import ROOT

    pkg = pathlib.Path(dimguard.__file__).resolve().parent
    assert ROOT not in pkg.parents, f"dimguard imported from the source tree ({pkg}): run python/test.sh"
    ext = next(pkg.glob("_native*.so"))
    assert str(ROOT).encode() not in ext.read_bytes(), "the extension carries a path into the build tree"
    assert not (ROOT / "third_party" / "z3" / "dist").exists(), "python/test.sh hides the source tree's Z3"
    libs = list((pkg.parent / "dimguard.libs").glob("libz3*.so*"))
    assert libs, "libz3 is bundled"
    maps = pathlib.Path("/proc/self/maps").read_text()
    assert str(libs[0]) in maps or libs[0].name in maps, "the bundled libz3 is the one loaded"


def test_accepts_looks_up_linked_sizes_in_their_joint_set(programs):
    """relative_position (torch 2.15): H and W are linked (the token grid must have 64 cells).
    `accepts` must say yes for exactly the (H, W) pairs the brute-force oracle found, though no
    single H is accepted with every W."""
    r = dimguard.check(programs / "relative_position.model.json")
    oracle = json.loads((programs / "relative_position.oracle.json").read_text())
    listed = oracle["hw_pairs_all"]
    pairs = {tuple(p) for p in (json.loads(listed) if isinstance(listed, str) else listed)}
    assert len(pairs) == oracle["hw_pairs"] == 56
    assert all(d.accepted.count == 0 for d in r.dims if d.index in (2, 3))
    for h in range(8, 140):
        for w in range(8, 140):
            assert r.accepts({"x": (2, 3, h, w)}) == ((h, w) in pairs), (h, w)
    assert not r.accepts({"x": (33, 3, 32, 32)}), "batch 33 is outside the claimed range"
    assert "accepts 56 (x[2], x[3]) pairs" in repr(r)


def test_a_budget_bounds_every_call_and_the_answer_says_so():
    """A guard with no periodic structure over 2..20,000,000 (44 s and 563 MB of JSON before
    budgets existed): under a small budget the answer comes back at once, undecided, naming the
    budget and how to raise it from Python."""
    import time

    text = "AssertionError: Guard failed: (x.size()[0] * x.size()[0]) // 1000 % 2 == 0"
    with pytest.raises(ValueError, match="positive"):
        dimguard.set_budget(time=0)
    dimguard.set_budget(time=0.2, output=4096)
    try:
        t0 = time.perf_counter()
        r = dimguard.diagnose(text, ranges={"x_0": (2, 20_000_000)}, z3="never")
        elapsed = time.perf_counter() - t0
    finally:
        dimguard.set_budget()
    assert elapsed < 10, elapsed
    [d] = r.dims
    assert d.status == "undecided"
    assert "dimguard.set_budget" in d.undecided, d.undecided
    # The default budget again: a small range is decided exactly. The text holds one of the
    # program's guards (the first that failed): the exact set it leaves, never claimed accepted.
    r = dimguard.diagnose(text, ranges={"x_0": (2, 2000)}, z3="never")
    want = [v for v in range(2, 2001) if (v * v) // 1000 % 2 == 0]
    assert r.partial is not None and r.dims[0].feasible is None
    assert list(r.dims[0].undecided_values) == want


def test_the_memory_budget_is_set_from_python_and_bounds_the_work():
    """`set_budget(memory=...)`: below 16 MiB is refused; a budget the work runs into makes the
    answer partial, naming the memory budget (10,000 non-periodic guards over 2..100,000)."""
    with pytest.raises(ValueError, match="16 MiB"):
        dimguard.set_budget(memory=1 << 20)
    x = "L['x'].size()[2]"
    text = "".join(
        f"  - Not all values of h = {x} in the specified range 2 <= h <= 100000 satisfy the generated guard ({x} * {x}) % {k + 7} != {k % 5}.\n"
        for k in range(10_000)
    )
    dimguard.set_budget(time=30, memory=64 << 20)
    try:
        r = dimguard.diagnose(text, z3="never")
    finally:
        dimguard.set_budget()
    [d] = r.dims
    assert d.status == "undecided"
    assert "memory budget" in d.undecided and "set_budget(memory=" in d.undecided, d.undecided


def test_export_report_accepted_for_linked_and_static_sizes():
    """``ExportReport.accepted`` gives a linked size the sizes that pass with some partner (not
    its empty own set), a fixed size its one value, and ``print(report)`` lists the fixed sizes."""
    from dimguard import ExportReport

    seg = lambda lo, hi: {"count": hi - lo + 1, "min": lo, "max": hi, "segments": [{"lo": lo, "hi": hi, "modulus": 1, "residues": [0]}]}  # noqa: E731
    rep = ExportReport({
        "exported": True, "rounds": [], "spec": "",
        "dims": [
            {"input": "x", "index": 2, "claimed": seg(8, 40), "accepted": {"count": 0, "min": None, "max": None, "segments": []},
             "linked_with": ["L['x'].size()[3]"], "with_some_partner": seg(8, 32), "source": "L['x'].size()[2]"},
            {"input": "x", "index": 0, "claimed": seg(1, 8), "accepted": seg(1, 8), "source": "L['x'].size()[0]"},
        ],
        "joint": [], "static": [{"input": "x", "index": 1, "size": 3}],
    })
    assert list(rep.accepted("x", 2)) == list(range(8, 33))
    assert list(rep.accepted("x", 0)) == list(range(1, 9))
    assert list(rep.accepted("x", 1)) == [3]
    with pytest.raises(KeyError):
        rep.accepted("x", 5)
    assert "x: static [1]=3" in repr(rep)
