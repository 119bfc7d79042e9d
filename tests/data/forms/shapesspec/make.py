"""Makes the ShapesSpec (torch 2.15) data-dependent failures in this folder.

Run with the test venv's python (torch 2.15, torchvision), from this folder:

    python make.py            # *.exception.txt: the traceback a user pastes
    TORCH_LOGS=+dynamic python make.py cnn 2> cnn.log.txt   # the log form
    TORCH_TRACE=DIR python make.py cnn                       # DIR/*.log is cnn.trace.log

Each model is exported under a ShapesSpec whose sizes are unbacked (u0, u1, ...); what torch
cannot decide stops the export with GuardOnDataDependentSymNode.
"""
import os
import sys
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.fx.experimental.dynamic_spec import ShapesSpec, ShapeVar, TensorSpec


class Stem(nn.Module):
    """A torchvision-like stem: conv stride 2, then a ceil-mode max-pool."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2)
        self.pool = nn.MaxPool2d(3, 2, ceil_mode=True)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        return self.conv2(self.pool(self.conv(x)))


class Swin(nn.Module):
    """Patch embedding, then torchvision's shifted-window block (window padding)."""

    def __init__(self):
        super().__init__()
        from torchvision.models.swin_transformer import SwinTransformerBlock

        self.proj = nn.Conv2d(3, 16, 4, stride=4)
        self.blk = SwinTransformerBlock(16, 2, [7, 7], [3, 3])

    def forward(self, x):
        return self.blk(self.proj(x).permute(0, 2, 3, 1))


class Checked(nn.Module):
    """A model with a torch._check of its own, then a branch on the size."""

    def forward(self, x):
        n = x.shape[1]
        torch._check(n % 8 == 0)
        y = x.view(x.shape[0], n // 8, 8)
        if y.shape[1] > 16:
            return y.sum(1)
        return y.mean(1)


class TwoInputs(nn.Module):
    """A branch on two inputs' sizes at once."""

    def forward(self, x, y):
        if x.shape[1] >= 2 * y.shape[1]:
            return x[:, : y.shape[1]] * 2
        return x.sum(1, keepdim=True) + y


def image_spec(lo):
    B = ShapeVar("B", min=1, max=8)
    H = ShapeVar("H", min=lo, max=1024)
    W = ShapeVar("W", min=lo, max=1024)
    return ShapesSpec({"x": TensorSpec([B, 3, H, W])})


def cases():
    yield "cnn", Stem().eval(), (torch.randn(2, 3, 224, 224),), image_spec(96)
    yield "swin", Swin().eval(), (torch.randn(2, 3, 224, 224),), image_spec(16)
    B = ShapeVar("B", min=1, max=8)
    N = ShapeVar("N", min=8, max=512)
    yield "check", Checked(), (torch.randn(2, 64),), ShapesSpec({"x": TensorSpec([B, N])})
    N, M = ShapeVar("N", min=2, max=64), ShapeVar("M", min=1, max=64)
    spec = ShapesSpec({"x": TensorSpec([B, N]), "y": TensorSpec([B, M])})
    yield "two", TwoInputs(), (torch.randn(2, 17), torch.randn(2, 16)), spec


def main():
    only = sys.argv[1:]
    for name, model, args, spec in cases():
        if only and name not in only:
            continue
        try:
            torch.export.export(model, args, dynamic_shapes=spec)
            text = "exported\n"
        except Exception:
            text = traceback.format_exc()
        if only:
            sys.stderr.write(text)
        else:
            with open(f"{name}.exception.txt", "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
