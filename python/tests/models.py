"""Models for the end-to-end tests of ``dimguard.export`` (real torch; small, random weights)."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def conv(cin, cout, stride=1, padding=1, k=3):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride=stride, padding=padding), nn.ReLU())


class ConvStack(nn.Module):
    """Two stride-2 convolutions and a valid 3x3 one: the feature map is ``(h-1)//4 - 1`` high.
    An even feature map takes a pooled fast path, so torch records the guard
    ``Eq(Mod(((h-1)//4) - 1, 2), 0)`` of the original report."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(conv(3, 8, 2), conv(8, 8, 2), conv(8, 8, 1, 0))

    def forward(self, x):
        y = self.net(x)
        if y.shape[2] % 2 == 0:
            return F.max_pool2d(y, (2, 1))
        return y


class FlowNet(nn.Module):
    """Optical-flow style: a shared encoder (stride 8) on two frames, a correlation, a flow head,
    and an 8x upsampling added to the first frame: both frames share H and W, and H, W must be
    multiples of 8."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(conv(3, 16, 2), conv(16, 16, 2), conv(16, 16, 2))
        self.head = nn.Conv2d(17, 2, 3, padding=1)

    def forward(self, image1, image2):
        f1, f2 = self.enc(image1), self.enc(image2)
        corr = (f1 * f2).mean(1, keepdim=True)
        flow = self.head(torch.cat([f1, corr], 1))
        up = 8 * F.interpolate(flow, scale_factor=8.0, mode="bilinear", align_corners=False)
        return up + image1[:, :2] - image2[:, :2]


class UNet(nn.Module):
    """A small UNet: two stride-2 downsamplings; one upsampling by ``pixel_shuffle``, one by
    ``interpolate``; skip connections add/concatenate at each level."""

    def __init__(self, c=8):
        super().__init__()
        self.e1 = conv(3, c)
        self.e2 = conv(c, c, 2)
        self.e3 = conv(c, c, 2)
        self.up3 = nn.Conv2d(c, 4 * c, 3, padding=1)
        self.out = nn.Conv2d(2 * c, 3, 3, padding=1)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(e1)
        e3 = self.e3(e2)
        u2 = F.pixel_shuffle(self.up3(e3), 2) + e2
        u1 = F.interpolate(u2, scale_factor=2.0, mode="nearest")
        return self.out(torch.cat([u1, e1], 1))


class Decoder(nn.Module):
    """Decoder style: a start token is prepended, so the sequence the blocks see is ``s0 + 1``
    long; learned positions cover ``max_len`` positions."""

    def __init__(self, vocab=100, d=32, max_len=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.bos = nn.Parameter(torch.randn(1, 1, d))
        self.pos = nn.Parameter(torch.randn(1, max_len, d))
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.out = nn.Linear(d, vocab)

    def forward(self, ids):
        h = self.emb(ids)
        h = torch.cat([self.bos.expand(h.shape[0], -1, -1), h], 1)
        n = h.shape[1]
        h = h + self.pos[:, :n]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=h.device), 1)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        return self.out(h + a)


class NearDiagonal(nn.Module):
    """Two sequences whose lengths differ by at most one and add up to at most 21 take a joint
    path: three guards link the two lengths. One `Dim` for both (x == y, 2..10) admits more
    pairs than any box, but the traced pair (10, 11) is not on it, so a sound spec is a box
    through (10, 11); a spec that mixed the shared `Dim` for one length with the box for the
    other admitted (2, 11)."""

    def forward(self, x, y):
        a, b = x.shape[0], y.shape[0]
        if a - b <= 1 and b - a <= 1 and a + b <= 21:
            return torch.cat([x, y]).sum(0)
        return x.sum(0)


class OddTiles(nn.Module):
    """Takes tiles of 16 columns and needs an odd number of them: W % 32 == 16, whose sound spec
    is the derived ``32*_w + 16`` (torch refuses it when traced at 48, the root's 1)."""

    def forward(self, x):
        B, C, H, W = x.shape
        if W % 32 != 16:
            raise ValueError("needs an odd number of 16-column tiles")
        t = x.reshape(B, C, H, W // 16, 16)
        return t[:, :, :, ::2].sum(-1)


class IntUse(nn.Module):
    """Uses its sequence length as a Python int (``int(x.shape[1])``): under a ShapesSpec torch
    stops with ``Could not extract specialized integer from data-dependent expression u1``."""

    def forward(self, x):
        n = int(x.shape[1])
        return x[:, : n // 2] * n


class CeilPad(nn.Module):
    """MobileViT style: rounds H up to a multiple of 8 with ``math.ceil(h / 8)`` and resizes
    when it differs (``Ne(8*CeilToInt(IntTrueDiv(u1, 8)), u1)``), then pools W in ceil mode
    (``2*(((W - 3) // 2 - 1) // 2) < ...`` for W): two expressions of one traced pass."""

    def forward(self, x):
        h = x.shape[2]
        nh = math.ceil(h / 8) * 8
        if nh != h:
            x = F.interpolate(x, size=(nh, x.shape[3]), mode="nearest")
        return F.max_pool2d(x, (1, 3), (1, 2), ceil_mode=True) * 2


class DivBySize(nn.Module):
    """A floor division by the size itself: ``Eq(((3*u1 - 1)//u1), 2)`` (raft_small's form)."""

    def forward(self, x):
        n = x.shape[1]
        if (3 * n - 1) // n == 2:
            return x * 2
        return x


class SharedSeq(nn.Module):
    """Two inputs added together (their lengths must be equal) and a floor division by the batch
    torch's solver cannot solve (``(3*b - 1) // b == 2``, true at every batch): torch 2.15's
    message holds an equality bullet and a guard bullet glued to "Specializations unexpectedly
    required (batch)!"."""

    def forward(self, x, y):
        b = x.shape[0]
        z = x + y
        if (3 * b - 1) // b == 2:
            return z * 2
        return z


class RangeGlued(nn.Module):
    """Refuses a sequence shorter than 32 (torch narrows the range: "satisfy the generated guard
    32 <= L['x'].size()[1] and L['x'].size()[1] <= 512", with no period) and divides by the batch
    (``(3*b - 1) // b == 2``, which torch's solver specializes): torch 2.15 glues the range
    bullet to "Specializations unexpectedly required (batch)!" (``...<= 512Specializations``),
    the form of HF MobileViT, Dinov2, CLIP and raft_small (issue 32)."""

    def forward(self, x):
        b, w = x.shape
        if w < 32:
            raise ValueError("too short")
        if (3 * b - 1) // b == 2:
            return x * 2
        return x


class ItemOfSize(nn.Module):
    """Reads a size back from a tensor (HF Longformer's ``torch.div(seq, 8, rounding_mode="trunc")``
    then ``.item()``): the value is unbacked with no example value, and a branch on it stops a
    ShapesSpec export (``8*u1 < u0``)."""

    def forward(self, x):
        chunks = torch.div(torch.tensor(x.shape[1]), 8, rounding_mode="trunc").item()
        if 8 * chunks < x.shape[1]:
            return x[:, : 8 * chunks] * 2
        return x * 3


class FixedGrid(nn.Module):
    """EfficientFormerV2's attention stage in small: five stride-2 convolutions down to a
    ``((h-1)//32 + 1) x ((w-1)//32 + 1)`` map, reshaped to a fixed 7x7 grid (its ``self.N``,
    ``self.resolution``). Over H, W 64..512 at 224x224, torch 2.15's error prints only H's guard
    and says W "resulted in a specialized value of 224" with no guard of W: only the round's
    whole trace shows that W keeps 193..224 the way H does (issue 43)."""

    def __init__(self):
        super().__init__()
        self.convs = nn.Sequential(*[nn.Conv2d(3 if i == 0 else 4, 4, 3, stride=2, padding=1) for i in range(5)])

    def forward(self, x):
        y = self.convs(x)
        b = y.shape[0]
        q = y.reshape(b, 2, -1, 49)
        return q.reshape(b, 4, 7, 7) + y
