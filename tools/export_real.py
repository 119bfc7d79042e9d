"""``dimguard.export`` on real models of torchvision, timm and transformers (issue 32), in both APIs
(plain ``Dim`` and torch 2.15's ``ShapesSpec``), each returned program checked by running it.

    LD_LIBRARY_PATH=$PWD/third_party/z3/dist/lib PYTHONPATH=python \\
        python tools/export_real.py [--only raft_small,hf_funnel] [--api dim|spec|both] \\
            [--out tests/data/export_real/models.jsonl] [--table]

Models are built from code or configs (no weights, no hub; tiny configs where the family allows)
with a dynamic batch (1..16) and H, W in 64..512 (images) or a dynamic sequence length 2..512
(text). Per model and API it records: the rounds (outcome, torch seconds, dimguard seconds),
the lines ``dimguard.export`` wrote to stderr (captured at the file-descriptor level), whether the
user's names survive in the final spec, and, at >= 16 sampled shapes (the example, each dynamic
size's range ends and the sizes just outside, sizes the report rejects, random sizes), three
answers: ``report.accepts``, whether the returned program runs, whether the eager model runs
(and, where both run, whether the outputs are equal). A row agrees when ``report.accepts`` is the
program's answer (``None`` — undecided — is counted apart, never as agreement).

``--table`` prints the markdown table of docs/PERFORMANCE.md from the JSON lines written.
"""

import argparse
import json
import os
import random
import re
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))

IMG = (64, 512)
SEQ = (2, 512)
BATCH = (1, 16)


def _tv(name, **kw):
    import torchvision
    import torchvision.models.optical_flow as flow

    build = getattr(torchvision.models, name, None) or getattr(flow, name)
    return build(weights=None, **kw)


def _timm(name):
    import timm

    return timm.create_model(name, pretrained=False)


def _hf(kind):
    import transformers as t

    if kind == "dinov2":
        return t.Dinov2Model(t.Dinov2Config(image_size=224, patch_size=14, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64))
    if kind == "clip":
        return t.CLIPVisionModel(t.CLIPVisionConfig(image_size=224, patch_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64))
    if kind == "funnel":
        return t.FunnelModel(t.FunnelConfig(vocab_size=100, d_model=32, n_head=2, d_head=16, d_inner=64, block_sizes=[1, 1, 1], num_decoder_layers=1))
    if kind == "mobilevit":
        return t.MobileViTModel(t.MobileViTConfig(image_size=256, hidden_sizes=[16, 24, 32], neck_hidden_sizes=[8, 8, 16, 16, 24, 32, 64], num_attention_heads=2))
    if kind == "longformer":
        return t.LongformerModel(t.LongformerConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, attention_window=8, max_position_embeddings=600))
    if kind == "segformer":
        return t.SegformerModel(t.SegformerConfig(hidden_sizes=[8, 16, 24, 32], num_attention_heads=[1, 1, 1, 1], depths=[1, 1, 1, 1], decoder_hidden_size=32))
    if kind == "swin":
        return t.SwinModel(t.SwinConfig(image_size=224, patch_size=4, embed_dim=32, depths=[1, 1, 1, 1], num_heads=[1, 1, 1, 1], window_size=7))
    if kind == "dpt":
        return t.DPTModel(
            t.DPTConfig(image_size=224, patch_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                        backbone_out_indices=[0, 1], neck_hidden_sizes=[8, 16], fusion_hidden_size=16, reassemble_factors=[4, 2]),
            add_pooling_layer=False,
        )
    if kind == "beit":
        return t.BeitModel(t.BeitConfig(image_size=224, patch_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, use_relative_position_bias=True))
    if kind == "vit":
        return t.ViTModel(t.ViTConfig(image_size=224, patch_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64))
    if kind == "convnext":
        return t.ConvNextModel(t.ConvNextConfig(hidden_sizes=[8, 16, 24, 32], depths=[1, 1, 1, 1]))
    if kind == "t5_encoder":
        return Hidden(t.T5EncoderModel(t.T5Config(vocab_size=100, d_model=32, d_kv=16, d_ff=64, num_layers=2, num_heads=2)))
    if kind == "gpt2":
        # Its default cache (use_cache=True) concatenates an empty `(0,)` past state with the
        # new keys; 128 positions.
        return Hidden(t.GPT2Model(t.GPT2Config(vocab_size=100, n_positions=128, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0)))
    if kind == "bert":
        return Hidden(t.BertModel(t.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=512)))
    raise KeyError(kind)


def Hidden(model):
    """The model's ``last_hidden_state`` only (its cache object is no pytree torch.export returns)."""
    import torch

    class Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids):
            return self.m(input_ids).last_hidden_state

    return Hidden(model)


def image(build, inputs=("x",), example=(2, 3, 224, 224), h=IMG, w=IMG, hand=None):
    out = {"build": build, "inputs": inputs, "example": example, "dims": {0: ("batch",) + BATCH, 2: ("h",) + h, 3: ("w",) + w}, "kind": "image"}
    if hand:
        out["hand"] = hand
    return out


def text(build, example=(2, 64), seq=SEQ):
    return {"build": build, "inputs": ("input_ids",), "example": example, "dims": {0: ("batch",) + BATCH, 1: ("seq",) + seq}, "kind": "text"}


MODELS = {
    "raft_small": image(lambda: _tv("raft_small"), inputs=("image1", "image2"), example=(1, 3, 256, 320), h=(128, 512), w=(128, 512)),
    "squeezenet1_1": image(lambda: _tv("squeezenet1_1")),
    "swin_t": image(lambda: _tv("swin_t")),
    "swin_v2_t": image(lambda: _tv("swin_v2_t")),
    "shufflenet_v2_x0_5": image(lambda: _tv("shufflenet_v2_x0_5")),
    "tiny_vit_5m_224": image(lambda: _timm("tiny_vit_5m_224")),
    "efficientformerv2_s0": image(lambda: _timm("efficientformerv2_s0")),
    "mobilevit_xxs": image(lambda: _timm("mobilevit_xxs"), example=(1, 3, 256, 256), h=(96, 512), w=(96, 512)),
    "pvt_v2_b0": image(lambda: _timm("pvt_v2_b0")),
    "hf_dinov2": image(lambda: _hf("dinov2"), inputs=("pixel_values",)),
    "hf_clip_vision": image(lambda: _hf("clip"), inputs=("pixel_values",)),
    "hf_mobilevit": image(lambda: _hf("mobilevit"), inputs=("pixel_values",), example=(2, 3, 256, 256)),
    "hf_segformer": image(lambda: _hf("segformer"), inputs=("pixel_values",)),
    "hf_swin": image(lambda: _hf("swin"), inputs=("pixel_values",)),
    "hf_funnel": text(lambda: _hf("funnel")),
    "hf_longformer": text(lambda: _hf("longformer"), example=(1, 64)),
    # Issue 43: the models whose reports gave sizes up, contradicted themselves or were never
    # audited, and more families.
    "hf_dpt": image(lambda: _hf("dpt"), inputs=("pixel_values",)),
    "hf_beit": image(lambda: _hf("beit"), inputs=("pixel_values",), hand=((224, 239), (224, 239))),
    "hf_vit": image(lambda: _hf("vit"), inputs=("pixel_values",)),
    "hf_convnext": image(lambda: _hf("convnext"), inputs=("pixel_values",)),
    "hf_gpt2_cache": text(lambda: _hf("gpt2"), seq=(2, 256)),
    "hf_t5_encoder": text(lambda: _hf("t5_encoder")),
    "hf_bert": text(lambda: _hf("bert")),
    "mobilevitv2_050": image(lambda: _timm("mobilevitv2_050"), example=(1, 3, 256, 256), h=(96, 512), w=(96, 512)),
    "convnext_atto": image(lambda: _timm("convnext_atto")),
    "repvit_m1": image(lambda: _timm("repvit_m1")),
    "fastvit_t8": image(lambda: _timm("fastvit_t8")),
    "efficientvit_b0": image(lambda: _timm("efficientvit_b0")),
    "edgenext_xx_small": image(lambda: _timm("edgenext_xx_small")),
    "mobilenetv3_small_050": image(lambda: _timm("mobilenetv3_small_050"), example=(1, 3, 224, 224)),
    "resnet18": image(lambda: _tv("resnet18")),
}
# A hand-written window a careful engineer writes for the models whose guards fix the grid
# (HF Dinov2: `(h//14)**2 == 256` and h == w: one Dim 224..237 for both).
MODELS["hf_dinov2"]["hand"] = ((224, 237), (224, 237))
# HF CLIP vision (no interpolate_pos_encoding) compares H and W with its image size: torch
# specializes them at 224 whatever the window (its error: "your code specialized it to be a
# constant (224)"), so its hand-written spec is static.
MODELS["hf_clip_vision"]["hand"] = ((224, 224), (224, 224))
# HF Longformer: torch fixes seq at the example's 64 under any window (measured, torch alone:
# Dim('seq', 2, 512), 8*Dim('k', 1, 64) and 8*Dim('k', 2, 64) with real tensors propagated all
# end "your code specialized it to be a constant (64)"; without, each fails data-dependent).
MODELS["hf_longformer"]["hand"] = ((64, 64),)
# timm efficientformerv2_s0: a window through 224 for each of H and W, as separate Dims, exports
# and runs 209x209, 224x209, 215x220 equal to eager (measured, torch alone, 24.9 CPU s); one
# shared Dim ties them (the program then refuses 224x209).
MODELS["efficientformerv2_s0"]["hand"] = ((209, 224), (209, 224))
# timm mobilevitv2_050 (plain Dim): its math.ceil patch grid holds over one contiguous run of
# H (and W) through 256, 249..256; ShapesSpec keeps more (unbacked sizes take assumptions).
MODELS["mobilevitv2_050"]["hand"] = ((249, 256), (249, 256))
# timm tiny_vit_5m_224 and HF MobileViT (torch alone, tools/export_window_alone.py): 217..224 and
# 249..256 per side export; one size more on either side does not.
MODELS["tiny_vit_5m_224"]["hand"] = ((217, 224), (217, 224))
MODELS["hf_mobilevit"]["hand"] = ((249, 256), (249, 256))

# The models CI runs (a few minutes on 2 cores, both APIs): small configs that reach each
# capability of issue 43 (a window before Dim.STATIC, an integer square root, a cache's empty
# cat, an implied limit, the T5 encoder's relative-position buckets: an index bounded through
# `abs`, `log`, `where` and `min`, every size decided).
CI = ("hf_dinov2", "hf_clip_vision", "hf_dpt", "hf_gpt2_cache", "hf_beit", "hf_t5_encoder")


def make_inputs(spec, shape):
    import torch

    g = torch.Generator().manual_seed(0)
    if spec["kind"] == "text":
        return tuple(torch.randint(0, 100, tuple(shape), generator=g) for _ in spec["inputs"])
    return tuple(torch.randn(*shape, generator=g) for _ in spec["inputs"])


def dynamic_shapes(spec, api):
    from torch.export import Dim

    if api == "dim":
        dims = {i: Dim(n, min=lo, max=hi) for i, (n, lo, hi) in spec["dims"].items()}
        return {inp: dict(dims) for inp in spec["inputs"]}
    from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec

    vars_ = {i: ShapeVar(n, min=lo, max=hi) for i, (n, lo, hi) in spec["dims"].items()}
    slots = [vars_.get(i, s) for i, s in enumerate(spec["example"])]
    return ShapesSpec({inp: TensorSpec(slots) for inp in spec["inputs"]})


def tensors(out):
    import torch
    import torch.utils._pytree as pytree

    if hasattr(out, "to_tuple"):
        out = out.to_tuple()
    return [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def call(fn, args):
    """The outputs, or the first line of the error."""
    import torch

    try:
        with torch.no_grad():
            return tensors(fn(*args)), None
    except Exception as e:  # noqa: BLE001 - any refusal counts
        return None, f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}"


def samples(spec, rep, n_random=4, seed=0):
    """>= 16 shapes: the example, each dynamic size's range ends and the sizes just outside, sizes
    the report rejects inside the range (up to 3 per size), and random shapes in the box."""
    rng = random.Random(seed)
    ex = list(spec["example"])
    out = [tuple(ex)]
    for i, (_, lo, hi) in spec["dims"].items():
        for v in (lo, hi, lo - 1 if lo > 1 else None, hi + 1):
            if v is not None:
                s = list(ex)
                s[i] = v
                out.append(tuple(s))
        rejected = []
        for v in rng.sample(range(lo, hi + 1), min(60, hi - lo + 1)):
            s = list(ex)
            s[i] = v
            if rep.verdict({k: s for k in spec["inputs"]})["accepted"] is False:
                rejected.append(tuple(s))
            if len(rejected) == 3:
                break
        out.extend(rejected)
    for _ in range(n_random):
        s = list(ex)
        for i, (_, lo, hi) in spec["dims"].items():
            s[i] = rng.randint(lo, min(hi, 4 * lo if i == 0 else hi))
        out.append(tuple(s))
    while len(out) < 16:
        s = list(ex)
        for i, (_, lo, hi) in spec["dims"].items():
            s[i] = rng.randint(lo, hi)
        out.append(tuple(s))
    return list(dict.fromkeys(out))


def kept(spec, rep):
    """Per named size (not the batch): how many sizes of the user's range the returned program
    accepts (for a linked size, with some partner), or None where the report cannot say."""
    out = {}
    for i, (nm, lo, hi) in spec["dims"].items():
        if nm == "batch":
            continue
        try:
            acc = rep.accepted(spec["inputs"][0], i)
            out[nm] = sum(1 for v in acc if lo <= v <= hi)
        except (ValueError, KeyError):
            out[nm] = None
    return out


def reexport(spec, model, args, code, no_reexport=None):
    """Whether the printed final spec, pasted in front of ``torch.export.export`` with the user's
    own example (or at the sizes the spec names as ``export_shapes``, where torch fixes the
    example's 0 or 1 even in its ``export_context``; the row's ``reexport_at`` says so), exports:
    None when it does, else the error's first line."""
    import torch

    if not code:
        return "no spec printed"
    import contextlib

    if no_reexport:
        # The report says torch cannot export the spec again (printed as comments): checked
        # here, the spec uncommented, plainly and in the real-tensor context.
        body = "\n".join(ln.split("#     ", 1)[1] for ln in code.splitlines() if ln.startswith("#     "))
        errors = []
        for context in (contextlib.nullcontext(), torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True)):
            ns = {}
            try:
                exec(body, ns)  # noqa: S102 - the spec the program was exported with
                with torch.no_grad(), context:
                    torch.export.export(model, args, dynamic_shapes=ns["dynamic_shapes"])
                return "the report says torch cannot export it again, yet it does: " + no_reexport[:80]
            except Exception as e:  # noqa: BLE001 - recorded
                errors.append(f"{type(e).__name__}")
        return "not printed as code: torch cannot export it again (the report says so; confirmed: " + ", ".join(errors) + ")"

    ns = {}
    try:
        exec(code, ns)  # noqa: S102 - dimguard's printed spec
        if ns.get("export_shapes"):
            args = tuple(make_inputs(spec, ns["export_shapes"][n])[0] for n in spec["inputs"])
        # The context the printed spec says to export in (a size of 0 or 1 kept dynamic).
        with torch.no_grad(), ns.get("export_context") or contextlib.nullcontext():
            torch.export.export(model, args, dynamic_shapes=ns["dynamic_shapes"])
        return None
    except Exception as e:  # noqa: BLE001 - recorded
        return f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:200]}"


def contradictions(spec, rep, d, log_text, checks):
    """The lines of one report that contradict another line, or the program (issue 43 item 4),
    read from the report's own text: the progress lines (``log_text``), every round's notes,
    ``narrowed``'s reasons and the printed spec's comments. Returns one string per contradiction:

    * a line saying "accepts every claimed size" while the audit is undecided somewhere (a dim's
      ``undecided`` sizes, an ``unaudited`` program) or a sampled shape's verdict is undecided;
    * the example line: a line saying the program does not accept, or is undecided at, the
      user's example while its verdict accepts it (or none saying so while it does not), and a
      "traced at" naming the very sizes it says it does not accept;
    * "torch specialized it" for a size the returned program does not hold as a number
      (``report.static``).
    """
    out = []
    notes = [n for r in d.get("rounds") or [] for n in (r.get("notes") or [])]
    lines = [ln for ln in log_text.splitlines() if ln.strip()] + notes + [n.get("why") or "" for n in d.get("narrowed") or []]
    lines += [ln for ln in (d.get("spec") or "").splitlines() if "#" in ln]
    undecided_dims = [f"{x.get('input')}[{x.get('index')}]" for x in d.get("dims") or [] if isinstance(x.get("undecided"), dict) and (x["undecided"].get("count") or 0) > 0]
    undecided_shapes = [c["shape"] for c in checks if c["accepts"] is None]
    if any("accepts every claimed size" in ln for ln in lines) and (undecided_dims or undecided_shapes or d.get("unaudited")):
        out.append(f"'accepts every claimed size' beside undecided sizes ({', '.join(undecided_dims) or undecided_shapes[:2] or d.get('unaudited')})")
    example = {n: list(spec["example"]) for n in spec["inputs"]}
    own = rep.verdict(example)["accepted"]
    says_no = [ln for ln in lines if "does not accept your example inputs" in ln]
    says_undecided = [ln for ln in lines if "accepts your example inputs" in ln and "is undecided" in ln]
    if own is True and (says_no or says_undecided):
        out.append(f"the example is accepted, yet a line says otherwise: {(says_no or says_undecided)[0][:120]}")
    if own is False and not says_no:
        out.append("the example is rejected and no line says so")
    if own is None and not says_undecided:
        out.append("the example is undecided and no line says so")
    ex_text = ", ".join(f"{n}={tuple(v)}" for n, v in example.items())
    for ln in says_no:
        if f"it was traced at {ex_text}" in ln:
            out.append(f"'traced at' names the very example it does not accept: {ln[:120]}")
    static = {(s_["input"], int(s_["index"])) for s_ in d.get("static") or []}
    for n in d.get("narrowed") or []:
        if "torch specialized it" in (n.get("why") or "") and (n.get("input"), int(n.get("index", -1))) not in static:
            out.append(f"'torch specialized it' for {n.get('name')}, which the program keeps dynamic")
    return out


def run_one(name, api, budget=None):
    """One row. ``budget``: dimguard.export's ``time_budget`` in seconds (None: its default);
    the row's ``budget`` says whether it ran out and where."""
    import torch

    import dimguard
    from dimguard._round import quiet

    spec = MODELS[name]
    torch.manual_seed(0)
    model = spec["build"]().eval()
    args = make_inputs(spec, spec["example"])
    row = {"model": name, "api": api, "torch": torch.__version__}
    t0 = time.perf_counter()
    with quiet() as log:
        try:
            with torch.no_grad():
                kw = {} if budget is None else {"time_budget": budget}
                ep, rep = dimguard.export(model, args, dynamic_shapes=dynamic_shapes(spec, api), **kw)
            err = None
        except dimguard.ExportError as e:
            ep, rep, err = None, e.report, str(e)
        except Exception as e:  # noqa: BLE001 - recorded: the row says what went wrong
            ep, rep, err = None, None, f"{type(e).__name__}: {e}\n{traceback.format_exc()[-2000:]}"
    row["wall_seconds"] = time.perf_counter() - t0
    row["stderr_lines"] = len([ln for ln in log.text.splitlines() if ln.strip()])
    row["stderr_head"] = log.text.splitlines()[:8]
    row["error"] = err
    if rep is None:
        return row
    d = rep.to_dict()
    row["rounds"] = [{k: r.get(k) for k in ("round", "outcome", "error", "notes", "torch_seconds", "dimguard_seconds")} for r in d["rounds"]]
    row["torch_seconds"] = d.get("torch_seconds")
    row["dimguard_seconds"] = d.get("dimguard_seconds")
    row["spec"] = d.get("spec")
    row["budget"] = d.get("budget")
    names = [n for n, _, _ in spec["dims"].values()]
    # A name is kept where the spec defines it (at a line's start) or, for a size torch gives no
    # name (Dim.AUTO, static, tied), names it in the comment on its entry.
    row["names_kept"] = [n for n in names if d.get("spec") and re.search(rf"(?m)^{n} = |# {n}: ", d["spec"])]
    row["narrowed"] = d.get("narrowed")
    row["static"] = d.get("static")
    if ep is None:
        return row
    row["kept"] = kept(spec, rep)
    if spec.get("hand"):
        row["hand"] = {nm: hi - lo + 1 for nm, (lo, hi) in zip([n for n, _, _ in spec["dims"].values() if n != "batch"], spec["hand"])}
    row["reexport"] = reexport(spec, model, args, d.get("spec"), d.get("no_reexport"))
    row["reexport_at"] = d.get("export_shapes")
    checks = []
    for shape in samples(spec, rep):
        a = make_inputs(spec, shape)
        said = rep.verdict({k: list(shape) for k in spec["inputs"]})["accepted"]
        got, perr = call(ep.module(), a)
        want, eerr = call(model, a)
        same = None
        if got is not None and want is not None:
            same = len(got) == len(want) and all(g.shape == w.shape and torch.allclose(g, w, atol=1e-4, rtol=1e-3) for g, w in zip(got, want))
        checks.append({"shape": list(shape), "accepts": said, "runs": got is not None, "eager_runs": want is not None, "equal": same, "program_error": perr, "eager_error": eerr})
    row["checks"] = checks
    row["agree"] = sum(1 for c in checks if c["accepts"] is not None and c["accepts"] == c["runs"])
    row["undecided"] = sum(1 for c in checks if c["accepts"] is None)
    row["wrong_accepts"] = [c["shape"] for c in checks if c["accepts"] is True and not c["runs"]]
    row["wrong_rejects"] = [c["shape"] for c in checks if c["accepts"] is False and c["runs"]]
    row["unequal"] = [c["shape"] for c in checks if c["equal"] is False]
    own = checks[0]
    row["example_accepted"] = own["accepts"] is True or not own["eager_runs"]
    row["contradictions"] = contradictions(spec, rep, d, log.text, checks)
    return row


def run_cover(name, api, budget=None, max_programs=2):
    """One ``cover=True`` row: whether the Dispatch serves the user's example (its ``accepts``,
    the piece it routes to accepting it, the call's output equal to eager's), and at the row's
    sampled shapes whether the Dispatch's answer is what it does (a refusal or a run)."""
    import torch

    import dimguard
    from dimguard._round import quiet

    spec = MODELS[name]
    torch.manual_seed(0)
    model = spec["build"]().eval()
    args = make_inputs(spec, spec["example"])
    row = {"model": name, "api": api, "cover": True, "max_programs": max_programs}
    t0 = time.perf_counter()
    with quiet():
        try:
            with torch.no_grad():
                kw = {} if budget is None else {"time_budget": budget}
                d = dimguard.export(model, args, dynamic_shapes=dynamic_shapes(spec, api), cover=True, max_programs=max_programs, verbose=False, **kw)
        except Exception as e:  # noqa: BLE001 - recorded
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
            row["wall_seconds"] = time.perf_counter() - t0
            return row
    row["wall_seconds"] = time.perf_counter() - t0
    row["pieces"] = len(d.pieces)
    own = {k: list(spec["example"]) for k in spec["inputs"]}
    row["serves_example"] = bool(d.accepts(own))
    try:
        i = d.route(own)
        row["routed_piece_accepts"] = bool(d.pieces[i].accepts(own))
    except Exception as e:  # noqa: BLE001 - recorded
        row["routed_piece_accepts"] = f"{type(e).__name__}: {str(e)[:200]}"
    got, err = call(d, args)
    want, _ = call(model, args)
    row["example_error"] = err
    row["example_equal"] = err is None and len(got) == len(want) and all(g.shape == w.shape and torch.allclose(g, w, atol=1e-4, rtol=1e-3) for g, w in zip(got, want))
    checks = []
    rng = random.Random(1)
    shapes = [tuple(spec["example"])]
    for _ in range(6):
        s_ = list(spec["example"])
        for i_, (_, lo, hi) in spec["dims"].items():
            s_[i_] = rng.randint(lo, min(hi, 4 * lo if i_ == 0 else hi))
        shapes.append(tuple(s_))
    for shape in dict.fromkeys(shapes):
        a = make_inputs(spec, shape)
        try:
            said = bool(d.accepts({k: list(shape) for k in spec["inputs"]}))
        except Exception:  # noqa: BLE001 - undecided
            said = None
        got, perr = call(d, a)
        checks.append({"shape": list(shape), "accepts": said, "runs": got is not None, "error": perr})
    row["checks"] = checks
    row["wrong"] = [c["shape"] for c in checks if c["accepts"] is not None and c["accepts"] != c["runs"]]
    return row


def table(path):
    rows = [json.loads(ln) for ln in open(path) if ln.strip()]
    out = [
        "| model | API | rounds | torch s | dimguard s | share | stderr lines | agreement | sizes kept (hand window) | spec re-exports | contradictions | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rounds = r.get("rounds") or []
        outcome = " → ".join(x["outcome"] for x in rounds) or "-"
        if r.get("checks") is not None:
            agree = f"{r['agree']}/{len(r['checks'])}" + (f", {r['undecided']} undecided" if r["undecided"] else "")
        else:
            agree = "no program"
        notes = []
        if r.get("wrong_accepts"):
            notes.append(f"wrong accepts {r['wrong_accepts'][:2]}")
        if r.get("wrong_rejects"):
            notes.append(f"wrong rejects {r['wrong_rejects'][:2]}")
        if r.get("unequal"):
            notes.append(f"output differs from eager at {r['unequal'][:2]}")
        if r.get("checks") is not None and not r.get("example_accepted"):
            example = list(MODELS[r["model"]]["example"]) if r["model"] in MODELS else None
            own = next((c for c in r["checks"] if c["shape"] == example), None)
            notes.append("example undecided" if own is not None and own["accepts"] is None else "example not accepted")
        if (r.get("budget") or {}).get("spent"):
            notes.append(f"time budget {r['budget']['seconds']:g} s spent {r['budget']['where']}")
        elif r.get("error"):
            notes.append(r["error"].splitlines()[0][:120].replace("|", "/"))
        if r.get("contradictions"):
            notes.append(f"{len(r['contradictions'])} contradiction(s): {r['contradictions'][0][:100]}")
        if r.get("predates_verdict"):
            notes.append("old row: agreement by the loop's accepts of then, before the program's verdict")
        ts = r.get("torch_seconds")
        ds = r.get("dimguard_seconds")
        hand = r.get("hand") or {}
        kept = ", ".join(f"{k} {v if v is not None else '?'}" + (f" ({hand[k]})" if k in hand else "") for k, v in (r.get("kept") or {}).items()) or "-"
        re_ = "-" if "reexport" not in r else ("yes" if r["reexport"] is None else f"no: {r['reexport'][:80]}".replace("|", "/"))
        if r.get("reexport_at") and r.get("reexport") is None:
            re_ += " (at " + ", ".join(f"{n}={tuple(v)}" for n, v in r["reexport_at"].items()) + ", in its export_context)"
        share = f"{100 * ds / ts:.1f}%" if ts and ds is not None else "-"
        model = r["model"] + (f" ({r['mark']})" if r.get("mark") else "")
        contra = str(len(r["contradictions"])) if "contradictions" in r else "-"
        out.append(
            f"| {model} | {r['api']} | {len(rounds)} ({outcome}) | {ts:.1f} | {ds:.2f} | {share} | {r['stderr_lines']} | {agree} | {kept} | {re_} | {contra} | {'; '.join(notes)} |"
            if ts is not None
            else f"| {model} | {r['api']} | - | - | - | - | {r['stderr_lines']} | - | - | - | - | {'; '.join(notes)} |"
        )
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--only", help="comma-separated model names (default: all)")
    p.add_argument("--api", choices=["dim", "spec", "both"], default="both")
    p.add_argument("--out", default="tests/data/export_real/models.jsonl")
    p.add_argument("--table", action="store_true", help="print the table of the rows in --out and exit")
    p.add_argument("--ci", action="store_true", help="only the models CI runs (CI)")
    p.add_argument("--budget", type=float, help="dimguard.export's time_budget per row, seconds (default: its own)")
    p.add_argument("--cover", action="store_true", help="cover=True rows (max_programs=2): does the Dispatch serve the example")
    a = p.parse_args()
    if a.table:
        print(table(a.out))
        return
    names = a.only.split(",") if a.only else list(CI) if a.ci else list(MODELS)
    apis = ["dim", "spec"] if a.api == "both" else [a.api]
    for name in names:
        for api in apis:
            if a.cover:
                row = run_cover(name, api, a.budget)
                with open(a.out, "a") as f:
                    f.write(json.dumps(row) + "\n")
                print(
                    f"{name} [{api}] cover: {row.get('pieces')} pieces, serves the example {row.get('serves_example')}, "
                    f"routed piece accepts it {row.get('routed_piece_accepts')}, output equal {row.get('example_equal')}, "
                    f"wrong at {row.get('wrong')}, {row['wall_seconds']:.0f} s" + (f"; error {row['error']}" if row.get("error") else ""),
                    flush=True,
                )
                continue
            row = run_one(name, api, a.budget)
            with open(a.out, "a") as f:
                f.write(json.dumps(row) + "\n")
            c = row.get("checks")
            print(
                f"{name} [{api}]: {len(row.get('rounds') or [])} rounds, torch {row.get('torch_seconds') or 0:.1f} s, "
                f"dimguard {row.get('dimguard_seconds') or 0:.2f} s, {row['stderr_lines']} stderr lines, "
                + (f"{row['agree']}/{len(c)} agree, {row['undecided']} undecided, wrong accepts {row['wrong_accepts']}, wrong rejects {row['wrong_rejects']}" if c is not None else f"no program: {(row.get('error') or '').splitlines()[0][:200] if row.get('error') else ''}"),
                flush=True,
            )


if __name__ == "__main__":
    main()
