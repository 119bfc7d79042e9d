"""Exports two small torch-only programs with an unbacked size (`u0 = k.item()`, the row count of
a tensor made in the model, what Torch-TensorRT reports as "has no max bound"), for
`dimguard diagnose TRT_ERROR --program MODEL.pt2`:

- trt_bounded: `torch._check(n >= 0)` and `torch._check(n <= 64)`: the program's range for u0
  is 0..64, and it raises at n = 65 (the run-time assert).
- trt_unbounded: only `torch._check(n >= 0)`: torch records no upper bound for u0.

Each is written to tests/data/pt2/<name>.pt2 (a zip holding only `<name>/models/model.json`, what
dimguard reads) with `<name>.bound.json`: the row counts n in 0..TOP at which `ep.module()` runs
(an exception of any kind is a rejected n), and torch's range for u0 as
`ep.range_constraints` prints it.

    ~/.cache/dimguard/venv-*/bin/python tools/export_trt_bound.py
"""
import io
import json
import pathlib
import zipfile

import torch

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "pt2"
TOP = 100


class Rows(torch.nn.Module):
    def __init__(self, bound):
        super().__init__()
        self.bound = bound

    def forward(self, x, k):
        n = k.item()
        torch._check(n >= 0)
        if self.bound is not None:
            torch._check(n <= self.bound)
        rows = x.new_ones(n, 4)
        return rows * x[0]


def main():
    for name, bound in [("trt_bounded", 64), ("trt_unbounded", None)]:
        m = Rows(bound)
        args = (torch.ones(2, 4), torch.tensor(3))
        ep = torch.export.export(m, args)
        buf = io.BytesIO()
        torch.export.save(ep, buf)
        with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:
            entry = next(n for n in z.namelist() if n.endswith("models/model.json"))
            text = z.read(entry)
        with zipfile.ZipFile(OUT / f"{name}.pt2", "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(f"{name}/models/model.json", text)
        mod = ep.module()
        accepted = []
        for n in range(0, TOP + 1):
            try:
                mod(torch.ones(2, 4), torch.tensor(n))
                accepted.append(n)
            except Exception:  # noqa: BLE001 - any exception is a rejected size
                pass
        truth = {
            "model": name,
            "torch": torch.__version__,
            "checked": [0, TOP],
            "accepted": accepted,
            "range_constraints": {str(k): str(v) for k, v in ep.range_constraints.items()},
        }
        (OUT / f"{name}.bound.json").write_text(json.dumps(truth, indent=1) + "\n")
        print(name, truth["range_constraints"], "accepted", accepted[0], "..", accepted[-1], len(accepted))


if __name__ == "__main__":
    main()
