"""The model classes more than one fixture script or test uses, each written once.

Import a class (``from fixture_models import Window7``, with ``tools/`` on ``sys.path``, or the
file loaded by path from a test). A script that writes its models into a ``models.py`` of its
own for a fresh interpreter to export (so that the lines torch's logs and traces cite are that
file's: tools/export_unbounded.py) splices a class's text with :func:`source`, read from this
file's text: the file it writes is the same bytes as when the class was typed there.

* ``TwoStem``, ``Window7``, ``Patch16``: tools/export_unbounded.py's two_stem, window7 and
  patch16 (tests/data/pt2/*_unbounded.pt2), re-exported by python/tests/test_tied_specs.py and
  test_unbounded_reexport.py.
  tools/export_crossform.py splices ``Window7`` with two channels.
* ``Raft``: torchvision's raft_small with two flow updates (tools/device/raft_roundtrip.py and
  torch_fixtures.py).
"""

import ast
import os
import re

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

__all__ = ["TwoStem", "Window7", "Patch16", "Raft", "source"]


def source(name, **defaults):
    """The text of this module's class ``name``, from ``class`` to its last line, with the
    default values its ``__init__`` line gives replaced by ``defaults`` (``source("Window7",
    c=2)``: the same model with two channels)."""
    with open(os.path.abspath(__file__)) as f:
        text = f.read()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            segment = ast.get_source_segment(text, node)
            head, sep, rest = segment.partition("def __init__(")
            line, nl, tail = rest.partition("\n")
            for key, value in defaults.items():
                line, n = re.subn(rf"\b{key}=[^,)]*", f"{key}={value!r}", line)
                if n != 1:
                    raise KeyError(f"{name}.__init__ has no default {key}")
            return head + sep + line + nl + tail
    raise KeyError(f"fixture_models has no class {name}")


class TwoStem(nn.Module):
    """Two images, one stride-4 stem each, added: the stems' outputs must agree."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(3, 8, 3, stride=4, padding=1)
        self.b = nn.Conv2d(3, 8, 3, stride=4, padding=1)

    def forward(self, image1, image2):
        return (self.a(image1) + self.b(image2)).mean(dim=(2, 3))


class Window7(nn.Module):
    """4x4 patch embed, pad to a multiple of the 7x7 window, attention per window."""

    def __init__(self, c=16, win=7):
        super().__init__()
        self.win = win
        self.embed = nn.Conv2d(3, c, 4, 4)
        self.qkv = nn.Linear(c, 3 * c)

    def forward(self, x):
        x = self.embed(x)
        b, c, h, w = x.shape
        ws = self.win
        ph = (ws - h % ws) % ws
        pw = (ws - w % ws) % ws
        x = F.pad(x, (0, pw, 0, ph))
        hp, wp = h + ph, w + pw
        x = x.permute(0, 2, 3, 1)
        x = x.reshape(b, hp // ws, ws, wp // ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(-1, ws * ws, c)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(-1, -2), dim=-1)
        x = (a @ v).reshape(b, hp // ws, wp // ws, ws, ws, c).permute(0, 1, 3, 2, 4, 5)
        x = x.reshape(b, hp, wp, c)[:, :h, :w]
        return x.mean(dim=(1, 2))


class Patch16(nn.Module):
    """16x16 conv patches, flattened to tokens, mixed, and reshaped back to the grid."""

    def __init__(self, c=16):
        super().__init__()
        self.embed = nn.Conv2d(3, c, 16, 16)
        self.mix = nn.Linear(c, c)

    def forward(self, x):
        x = self.embed(x)
        b, c, h, w = x.shape
        t = self.mix(x.flatten(2).transpose(1, 2))
        g = t.transpose(1, 2).reshape(b, c, h, w)
        return F.avg_pool2d(g, 2, ceil_mode=True).flatten(1).sum(1)


class Raft(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.m = torchvision.models.optical_flow.raft_small(weights=None)

    def forward(self, image1, image2):
        return self.m(image1, image2, num_flow_updates=2)[-1]
