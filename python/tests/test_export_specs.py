"""Every spec dimguard prints for real torch 2.15 failures of timm's mobilevit_xxs and
transformers' Swin (fixtures made by fixtures/make_fixtures.py) is one torch can export at the
traced example: it holds the traced sizes, and no Dim a size derives from is traced at 0 or 1
(torch specializes it there and refuses the spec, pytorch#176349). Torch-only: the models are not
needed, the messages are."""

import pathlib

import pytest

try:
    import torch
    from torch.export import Dim
except ImportError as e:  # never a skip
    raise RuntimeError(f"these tests need torch 2.15 ({e})") from e

import dimguard

HERE = pathlib.Path(__file__).resolve().parent / "fixtures"

CASES = [
    ("mobilevit_xxs_215.txt", "x", (1, 3, 256, 256), {0: ("batch", 1, 16), 2: ("h", 96, 512), 3: ("w", 96, 512)}),
    ("hf_swin_215.txt", "pixel_values", (2, 3, 224, 224), {0: ("batch", 1, 16), 2: ("h", 64, 512), 3: ("w", 64, 512)}),
]


def user_spec(inp, dims):
    lines = ["from torch.export import Dim"]
    lines += [f"{n} = Dim({n!r}, min={lo}, max={hi})" for n, lo, hi in dims.values()]
    lines.append("dynamic_shapes = {%r: {%s}}" % (inp, ", ".join(f"{i}: {n}" for i, (n, _, _) in dims.items())))
    return "\n".join(lines)


def sizes_of(v):
    """The sizes a spec value takes (Dim, derived Dim or int), and its root's smallest value."""
    if isinstance(v, int):
        return {v}, None
    root = getattr(v, "root", v)
    lo, hi = int(root.min), int(root.max)
    fn = getattr(v, "fn", lambda k: k)
    return {int(fn(k)) for k in range(lo, hi + 1)}, lo


@pytest.mark.parametrize("fixture,inp,shape,dims", CASES, ids=[c[0] for c in CASES])
def test_every_printed_spec_holds_the_traced_sizes_in_a_form_torch_exports(fixture, inp, shape, dims):
    text = (HERE / fixture).read_text()
    d = dimguard.diagnose(text, {inp: shape}, spec=user_spec(inp, dims))
    assert d.dims, d
    for dim in d.dims:
        if dim.status == "specialized":  # batch traced at 1: said so, with what to do
            assert dim.specialized == 1 and "0: Dim.STATIC" in d.dynamic_shapes
            assert "trace with a size of 2 or more" in d.dynamic_shapes
            continue
        index = int(dim.source.split("[")[-1].rstrip("]"))
        traced = shape[index]
        assert dim.suggestions, dim
        # The first suggestion holds the traced size (when a sound one does: here, one does).
        first = dim.suggestions[0]
        assert first.lo <= traced <= first.hi and (traced - first.lo) % first.modulus == 0, (dim.name, first.code)
        # Every printed suggestion is Python that defines the dimension.
        for s in dim.suggestions:
            ns = {"Dim": Dim}
            exec(s.code, ns)
            assert dim.name in ns, s.code
    # The merged dynamic_shapes block: executable, holds the traced shape, every dimension the
    # user gave is still there (batch 1..16 untouched), and no derived root is at 0 or 1 there.
    ns = {}
    exec(d.dynamic_shapes, ns)
    spec = ns["dynamic_shapes"][inp]
    assert set(spec) == set(dims), d.dynamic_shapes
    for i, v in spec.items():
        if v is Dim.STATIC:
            continue
        taken, root_min = sizes_of(v)
        assert shape[i] in taken, (i, d.dynamic_shapes)
        if getattr(v, "root", None) is not None:
            k = [k for k in range(root_min, int(v.root.max) + 1) if int(v.fn(k)) == shape[i]][0]
            assert k >= 2, f"{inp}[{i}]: the root is {k} at the traced size; torch specializes it ({d.dynamic_shapes})"
    if shape[0] >= 2:
        assert "batch = Dim('batch', min=1, max=16)" in d.dynamic_shapes
