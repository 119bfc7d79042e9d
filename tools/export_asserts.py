"""Exports small torch-only models whose accepted sizes are decided by *run-time asserts* in the
graph (torch 2.15 ShapesSpec: `_assert_scalar` nodes) or by limits no guard states (an index
`arange(seq)` into a 128-row position table), and writes each program to tests/data/pt2/ as
`<name>.pt2` (a zip holding only `<name>/models/model.json`, what dimguard reads), with the truth
`<name>.truth.json`: the sizes at which `ep.module()` runs, found by running it at every size of
the claimed range (an exception of any kind is a rejected size).

    ~/.cache/dimguard/venv-*/bin/python tools/export_asserts.py [NAME ...]

Models:
- fpn_assert: three convs (stride 4, then 2, a 1x1 lateral); the stride-4 map is added to the
  stride-8 map upsampled by 2. ShapesSpec H in 96..1024 (W static 160). The graph asserts
  Eq(((u0 - 1)//4), 2*(((u0 - 1)//8)) + 1).
- bert_positions: token + position embeddings (a 128-row table sliced by a `position_ids` buffer
  `[:, :seq]`), one attention layer. ShapesSpec seq in 2..512: the broadcasting add asserts
  Eq(u0, Min(128, u0)) | Eq(Min(128, u0), 1).
- gpt2_positions: `wpe(arange(seq))` with a 128-row table, exported with plain
  Dim('seq', min=2, max=512): no guard, an IndexError at every seq above 128.
- relpos_derived: a relative-position bias `table[arange(n)[:, None] - arange(n)[None, :] + 63]`
  over a 127-row table, plain Dim('seq', min=2, max=160): no guard, an IndexError above 64. The
  index is computed from sizes through `sub`, which dimguard does not follow: `check` must say
  undecided, never accepted.
- square_positions: `embedding(table[1024, d], arange(n) * arange(n))`, plain
  Dim('seq', min=2, max=64): an IndexError above 32. The index is computed from sizes through
  an elementwise `mul`, which dimguard does not follow: `check` must say undecided, never
  accepted.
- data_assert: `n = k.item()` with `torch._check_is_size(n)` and `torch._check(n <= x.shape[1])`,
  plain Dim('n', min=2, max=64) (truth with k = 3): the asserts name a value computed from data,
  so `check` must call the sizes undecided.
- hf_bert_positions, hf_gpt2_positions: transformers' BertModel (ShapesSpec seq 2..512) and
  GPT2Model (plain Dim, use_cache=False) built from small configs with 128 positions (no
  weights, no hub; transformers is imported only for these two).
- select_gather: `index_select(table[100, 8], 0, arange(n))` and `gather(g[1, 90], 1,
  arange(n)[None])`, plain Dim('seq', min=2, max=128): no guard, an error above 90.
- assert_async: `torch._assert_async(torch.scalar_tensor(x.shape[1] % 3 == 0))`, plain
  Dim('n', min=2, max=64): the graph's `_assert_async` of a `scalar_tensor` of the condition.
- t5_buckets: T5's bidirectional relative-position buckets (32 buckets, max distance 128:
  `where(|d| < 8, |d|, min(8 + trunc(log(|d| / 8) / log(16) * 8), 15)) + 16 * (d > 0)`) index a
  32-row table, plain Dim('seq', min=2, max=300): every size runs; the index is bounded through
  `abs`, `log`, `where` and `min`, so `check` decides every size accepted.
- t5_buckets_unclamped: the same buckets without the `min(..., 15)`, over the same table: an
  IndexError from seq 129 on; `check` must never accept a size it cannot bound (undecided).
- own_check: a conv model whose forward says `torch._check(x.shape[2] % 4 == 0)` and
  `torch._check(x.shape[2] <= 200)`; ShapesSpec H in 32..256.
"""
import io
import json
import pathlib
import sys
import time
import zipfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim
from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "pt2"


class FPN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.lat = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        a = self.c1(x)
        b = self.c2(a)
        return self.lat(a) + F.interpolate(b, scale_factor=2, mode="nearest")


class Attention(nn.Module):
    def __init__(self, d=32, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v)
        return self.out(y.transpose(1, 2).reshape(b, s, d))


class Bert(nn.Module):
    def __init__(self, vocab=100, d=32, positions=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(positions, d)
        self.register_buffer(
            "position_ids", torch.arange(positions).expand(1, -1), persistent=False
        )
        self.ln = nn.LayerNorm(d)
        self.attn = Attention(d)

    def forward(self, ids):
        seq = ids.shape[1]
        pos = self.position_ids[:, :seq]
        x = self.ln(self.tok(ids) + self.pos(pos))
        return x + self.attn(x)


class GPT2(nn.Module):
    def __init__(self, vocab=100, d=32, positions=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(positions, d)
        self.ln = nn.LayerNorm(d)
        self.attn = Attention(d)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.ln(self.wte(ids) + self.wpe(pos))
        return x + self.attn(x)


class OwnCheck(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        torch._check(x.shape[2] % 4 == 0)
        torch._check(x.shape[2] <= 200)
        return self.conv(x).view(x.shape[0], 4, x.shape[2] // 4, 4, x.shape[3]).sum(3)


class RelPos(nn.Module):
    def __init__(self, positions=64, d=8):
        super().__init__()
        self.positions = positions
        self.table = nn.Parameter(torch.randn(2 * positions - 1, d))

    def forward(self, x):
        n = x.shape[1]
        r = torch.arange(n, device=x.device)
        bias = self.table[r[:, None] - r[None, :] + (self.positions - 1)]
        return x + bias.sum(1)[None]


def relpos():
    spec = {"x": {1: Dim("seq", min=2, max=160)}}
    return RelPos(), (torch.randn(1, 16, 8),), spec, (2, 160), lambda n: (torch.randn(1, n, 8),)


class SquarePositions(nn.Module):
    def __init__(self, d=8):
        super().__init__()
        self.table = nn.Embedding(1024, d)

    def forward(self, x):
        r = torch.arange(x.shape[1], device=x.device)
        return x + self.table(r * r)[None]


def square():
    spec = {"x": {1: Dim("seq", min=2, max=64)}}
    return SquarePositions(), (torch.randn(1, 16, 8),), spec, (2, 64), lambda n: (torch.randn(1, n, 8),)


class T5Buckets(nn.Module):
    """transformers' `T5Attention._relative_position_bucket` (bidirectional), as written there."""

    def __init__(self, clamp=True, buckets=32, max_distance=128, d=4):
        super().__init__()
        self.clamp, self.buckets, self.max_distance = clamp, buckets, max_distance
        self.table = nn.Embedding(buckets, d)

    def forward(self, x):
        import math

        n = x.shape[1]
        ctx = torch.arange(n, dtype=torch.long)[:, None]
        mem = torch.arange(n, dtype=torch.long)[None, :]
        rel = mem - ctx
        nb = self.buckets // 2
        out = (rel > 0).to(torch.long) * nb
        rel = torch.abs(rel)
        exact = nb // 2
        small = rel < exact
        large = exact + (torch.log(rel.float() / exact) / math.log(self.max_distance / exact) * (nb - exact)).to(torch.long)
        if self.clamp:
            large = torch.min(large, torch.full_like(large, nb - 1))
        out = out + torch.where(small, rel, large)
        return x + self.table(out).sum(1)[None]


def t5_buckets(clamp=True):
    spec = {"x": {1: Dim("seq", min=2, max=300)}}
    return T5Buckets(clamp), (torch.randn(1, 16, 4),), spec, (2, 300), lambda n: (torch.randn(1, n, 4),)


class DataAssert(nn.Module):
    def forward(self, x, k):
        n = k.item()
        torch._check_is_size(n)
        torch._check(n <= x.shape[1])
        return x[:, :n].sum(1)


def data_assert():
    spec = {"x": {1: Dim("n", min=2, max=64)}, "k": None}
    return DataAssert(), (torch.randn(2, 16), torch.tensor(3)), spec, (2, 64), lambda n: (torch.randn(2, n), torch.tensor(3))


def hf_bert():
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=100, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128,
    )
    s = ShapeVar("seq", min=2, max=512)
    spec = ShapesSpec({"input_ids": TensorSpec([1, s])})
    return BertModel(cfg), (torch.randint(0, 100, (1, 16)),), spec, (2, 512), lambda n: (torch.randint(0, 100, (1, n)),)


def hf_gpt2():
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(vocab_size=100, n_embd=32, n_layer=1, n_head=2, n_positions=128, use_cache=False)
    spec = {"input_ids": {1: Dim("seq", min=2, max=512)}}
    return GPT2Model(cfg), (torch.randint(0, 100, (1, 16)),), spec, (2, 512), lambda n: (torch.randint(0, 100, (1, n)),)


class SelectGather(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = nn.Parameter(torch.randn(100, 8))
        self.g = nn.Parameter(torch.randn(1, 90))

    def forward(self, x):
        r = torch.arange(x.shape[1], device=x.device)
        a = torch.index_select(self.table, 0, r)
        b = torch.gather(self.g, 1, r[None])
        return x + a[None] + b[..., None]


def select_gather():
    spec = {"x": {1: Dim("seq", min=2, max=128)}}
    return SelectGather(), (torch.randn(1, 16, 8),), spec, (2, 128), lambda n: (torch.randn(1, n, 8),)


class AssertAsync(nn.Module):
    def forward(self, x):
        torch._assert_async(torch.scalar_tensor(x.shape[1] % 3 == 0))
        return x * 2


def assert_async():
    spec = {"x": {1: Dim("n", min=2, max=64)}}
    return AssertAsync(), (torch.randn(1, 12),), spec, (2, 64), lambda n: (torch.randn(1, n),)


def fpn():
    h = ShapeVar("H", min=96, max=1024)
    spec = ShapesSpec({"x": TensorSpec([1, 3, h, 160])})
    return FPN(), (torch.randn(1, 3, 128, 160),), spec, (96, 1024), lambda n: (torch.randn(1, 3, n, 160),)


def bert():
    s = ShapeVar("seq", min=2, max=512)
    spec = ShapesSpec({"ids": TensorSpec([1, s])})
    return Bert(), (torch.randint(0, 100, (1, 16)),), spec, (2, 512), lambda n: (torch.randint(0, 100, (1, n)),)


def gpt2():
    spec = {"ids": {1: Dim("seq", min=2, max=512)}}
    return GPT2(), (torch.randint(0, 100, (1, 16)),), spec, (2, 512), lambda n: (torch.randint(0, 100, (1, n)),)


def own_check():
    h = ShapeVar("H", min=32, max=256)
    spec = ShapesSpec({"x": TensorSpec([1, 3, h, 20])})
    return OwnCheck(), (torch.randn(1, 3, 64, 20),), spec, (32, 256), lambda n: (torch.randn(1, 3, n, 20),)


MODELS = {
    "fpn_assert": fpn,
    "bert_positions": bert,
    "gpt2_positions": gpt2,
    "own_check": own_check,
    "relpos_derived": relpos,
    "square_positions": square,
    "data_assert": data_assert,
    "select_gather": select_gather,
    "assert_async": assert_async,
    "t5_buckets": t5_buckets,
    "t5_buckets_unclamped": lambda: t5_buckets(clamp=False),
    "hf_bert_positions": hf_bert,
    "hf_gpt2_positions": hf_gpt2,
}


def runs(mod, args):
    try:
        with torch.no_grad():
            mod(*args)
        return True
    except Exception as e:  # noqa: BLE001 - any failure is a rejected size
        return type(e).__name__


def main(names):
    torch.manual_seed(0)
    for name in names or MODELS:
        model, example, spec, (lo, hi), make = MODELS[name]()
        model.eval()
        t = time.time()
        ep = torch.export.export(model, example, dynamic_shapes=spec)
        buf = io.BytesIO()
        torch.export.save(ep, buf)
        with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
            entry = next(n for n in z.namelist() if n.endswith("models/model.json"))
            text = z.read(entry)
        with zipfile.ZipFile(OUT / f"{name}.pt2", "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"{name}/models/model.json", text)
        m = ep.module()
        accepted, errors = [], {}
        for n in range(lo, hi + 1):
            r = runs(m, make(n))
            if r is True:
                accepted.append(n)
            else:
                errors[r] = errors.get(r, 0) + 1
        truth = {
            "model": name,
            "torch": torch.__version__,
            "claimed": [lo, hi],
            "accepted": accepted,
            "rejected_count": hi - lo + 1 - len(accepted),
            "errors": errors,
            "seconds": round(time.time() - t, 1),
        }
        if "transformers" in sys.modules:
            truth["transformers"] = sys.modules["transformers"].__version__
        (OUT / f"{name}.truth.json").write_text(json.dumps(truth) + "\n")
        print(name, len(accepted), "of", hi - lo + 1, "run;", errors, f"{truth['seconds']} s")


if __name__ == "__main__":
    main(sys.argv[1:])
