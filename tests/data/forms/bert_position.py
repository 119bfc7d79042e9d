# A tiny torch-only model like BERT's embeddings: a 128-entry position embedding indexed by
# arange(seq). Exported with Dim('seq', min=2, max=512): torch refuses and suggests max=128.
import torch
from torch.export import Dim, export

class Emb(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(100, 8)
        self.pos = torch.nn.Embedding(128, 8)
        self.register_buffer("position_ids", torch.arange(128).expand((1, -1)), persistent=False)

    def forward(self, ids):
        seq = ids.shape[1]
        pos = self.position_ids[:, :seq]
        return self.tok(ids) + self.pos(pos)

ids = torch.randint(0, 100, (2, 16))
try:
    export(Emb(), (ids,), dynamic_shapes={"ids": {1: Dim("seq", min=2, max=512)}})
    print("EXPORTED")
except Exception as e:
    print(f"{type(e).__module__}.{type(e).__name__}: {e}")
