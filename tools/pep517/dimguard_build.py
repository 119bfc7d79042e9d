"""The PEP 517 backend of `pip install .`: maturin's, asked for a manylinux wheel.

maturin's backend builds with `--compatibility off` unless told otherwise, and then skips the
auditwheel repair that copies libz3 into the wheel (`dimguard.libs/`) — the extension would look
for the library in a directory that does not exist. `MATURIN_PEP517_ARGS` (maturin's own setting)
asks for the manylinux tag, so `pip install .` gives the same self-contained wheel as
`maturin build`. Set MATURIN_PEP517_ARGS yourself to override.

Installing twice from one checkout: maturin's repair rewrites the extension's `DT_NEEDED`
(`libz3.so.5.3` -> `libz3-<hash>.so.5.3`) in `target/maturin/`, a hard link to cargo's own
artifact, so cargo's copy is patched too; cargo sees nothing to rebuild, and the next build's
repair looks for `libz3-<hash>.so.5.3`, which exists nowhere ("maturin failed"). Before and after
every wheel build, any extension in the target directory whose bytes name the hashed library is
removed, so cargo links a clean one (a few seconds: only the extension crate is relinked) and
the repair always starts from unpatched bytes.
"""

import os
import re
from pathlib import Path

os.environ.setdefault("MATURIN_PEP517_ARGS", "--compatibility manylinux_2_34")

import maturin as _maturin  # noqa: E402
from maturin import *  # noqa: E402,F401,F403 - the PEP 517 hooks

# What the repair writes into the extension: the bundled library's hashed name.
_PATCHED = re.compile(rb"libz3-[0-9a-f]{8}\.so")


def _target_dir() -> Path:
    root = Path(__file__).resolve().parents[2]
    target = Path(os.environ.get("CARGO_TARGET_DIR", "target"))
    return target if target.is_absolute() else root / target


def remove_patched_artifacts(target: Path = None) -> list:
    """Removes every build of the extension (`lib_native.so`) under `target` that a repair
    patched; returns the paths removed."""
    target = target or _target_dir()
    if not target.is_dir():
        return []
    removed = []
    # target/maturin/, target/<profile>/ and its deps/, and the same under a target triple.
    places = ["*", "*/deps", "*/*", "*/*/deps"]
    for so in {p for place in places for p in target.glob(place + "/lib_native*.so")}:
        try:
            if _PATCHED.search(so.read_bytes()):
                so.unlink()
                removed.append(so)
        except OSError:
            continue
    return removed


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    """maturin's `build_wheel`, from unpatched cargo artifacts, leaving none patched."""
    remove_patched_artifacts()
    try:
        return _maturin.build_wheel(wheel_directory, config_settings, metadata_directory)
    finally:
        remove_patched_artifacts()
