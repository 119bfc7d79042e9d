"""The PEP 517 backend of `pip install .`: maturin's, asked for a manylinux wheel.

maturin's backend builds with `--compatibility off` unless told otherwise, and then skips the
auditwheel repair that copies libz3 into the wheel (`dimguard.libs/`) — the extension would look
for the library in a directory that does not exist. `MATURIN_PEP517_ARGS` (maturin's own setting)
asks for the manylinux tag, so `pip install .` gives the same self-contained wheel as
`maturin build`. Set MATURIN_PEP517_ARGS yourself to override.
"""

import os

os.environ.setdefault("MATURIN_PEP517_ARGS", "--compatibility manylinux_2_34")

from maturin import *  # noqa: E402,F401,F403 - the PEP 517 hooks, unchanged
