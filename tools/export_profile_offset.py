"""Exports `two_stem` (tools/export_unbounded.py's model) with `Dim.AUTO` and no bounds, traced
with image2 smaller than image1 inside one stride-4 block (image1 64 x 96, image2 62 x 95): the
tied spec writes image2 at an offset (`image2_2 = image1_2 - 2`). Writes
`tests/data/pt2/two_stem_offset_unbounded.pt2` (only its `models/model.json`) and
`two_stem_offset_unbounded.runs.json`: the program run at every (H1, H2) with H1 in 5..24 and H2
in 3..26 (W 96 and 95), for `tests/profile.rs`.

    ~/.cache/dimguard/venv-b1284b1b5f75f294/bin/python tools/export_profile_offset.py
"""

import io
import json
import os
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import export_unbounded  # noqa: E402


def main():
    import torch
    from torch.export import Dim, export

    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "models.py"), "w") as f:
            f.write(export_unbounded.MODELS)
        sys.path.insert(0, tmp)
        import models

        torch.manual_seed(0)
        m = models.TwoStem().eval()
        args = (torch.randn(1, 3, 64, 96), torch.randn(1, 3, 62, 95))
        auto = {2: Dim.AUTO, 3: Dim.AUTO}
        ep = export(m, args, dynamic_shapes={"image1": auto, "image2": auto})
    buf = io.BytesIO()
    torch.export.save(ep, buf)
    out = os.path.join(ROOT, "tests", "data", "pt2", "two_stem_offset_unbounded")
    with zipfile.ZipFile(buf) as z:
        mj = [n for n in z.namelist() if n.endswith("models/model.json")][0]
        text = z.read(mj)
    with zipfile.ZipFile(out + ".pt2", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr(mj, text)
    runs = []
    for h1 in range(5, 25):
        for h2 in range(3, 27):
            try:
                with torch.no_grad():
                    ep.module()(torch.randn(1, 3, h1, 96), torch.randn(1, 3, h2, 95))
                runs.append([h1, h2, True])
            except Exception:  # noqa: BLE001
                runs.append([h1, h2, False])
    with open(out + ".runs.json", "w") as f:
        json.dump({"torch": torch.__version__, "w": [96, 95], "runs": runs}, f)
        f.write("\n")
    print(f"{sum(r[2] for r in runs)}/{len(runs)} runs pass")


if __name__ == "__main__":
    main()
