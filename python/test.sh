#!/usr/bin/env bash
# The Python suite, as CI runs it:
#  1. torch 2.15 + torchvision + pytest (python/requirements-test.txt) in a venv cached under
#     ~/.cache/dimguard/venv-<hash of the requirements and the Python version> (installed once,
#     about 5 GB; if that fails, this fails and says why — the suite never skips for lack of torch);
#  2. the wheel built by pip (PEP 517, maturin) in a fresh venv (its size printed);
#  3. the wheel installed into another fresh venv, which sees the cached torch through a .pth;
#  4. pytest on the installed wheel, then its Z3-certificate tests again with the source tree's Z3
#     (third_party/z3/dist) moved away, so the wheel must bring its own.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REQ=python/requirements-test.txt
PY=${PYTHON:-python3}
pyver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
KEY=$( (cat "$REQ"; echo "$pyver") | sha256sum | cut -c1-16)
CACHE=${DIMGUARD_CACHE:-$HOME/.cache/dimguard}
DEPS=$CACHE/venv-$KEY

if ! "$DEPS/bin/python" -c "import torch, torchvision, pytest" 2>/dev/null; then
  echo "== installing $REQ into $DEPS (torch 2.15 from PyPI, about 5 GB; cached for later runs)"
  rm -rf "$DEPS"
  mkdir -p "$CACHE"
  "$PY" -m venv "$DEPS"
  if ! "$DEPS/bin/python" -m pip install -q --no-cache-dir -r "$REQ"; then
    rm -rf "$DEPS"
    echo "FAILED: could not install $REQ (torch 2.15 and torchvision from PyPI)."
    echo "The Python suite needs real torch; it does not skip without it."
    exit 1
  fi
fi

WORK=$(mktemp -d)
Z3=third_party/z3/dist
HIDDEN=third_party/z3/dist.hidden-by-python-tests
restore() {
  if [ -d "$ROOT/$HIDDEN" ]; then mv "$ROOT/$HIDDEN" "$ROOT/$Z3"; fi
  rm -rf "$WORK"
}
trap restore EXIT

echo "== building the wheel in a fresh venv (pip's PEP 517 build: what \`pip install .\` runs)"
"$PY" -m venv "$WORK/build"
"$WORK/build/bin/python" -m pip wheel -q --no-deps -w "$WORK/wheels" .
WHEEL=$(ls "$WORK"/wheels/dimguard-*.whl)
echo "wheel: $(basename "$WHEEL"), $(du -k "$WHEEL" | cut -f1) KiB"
# The wheel is built without the facade's `cuda` feature: no GPU code (cudarc, NVRTC) inside.
if "$PY" -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
sys.exit(0 if any(b"nvrtcCompileProgram" in z.read(n) for n in z.namelist() if ".so" in n) else 1)' "$WHEEL"; then
  echo "FAILED: the wheel ships the CUDA kernels' loader (nvrtcCompileProgram); build it without the cuda feature"
  exit 1
fi

echo "== installing it into a fresh venv"
"$PY" -m venv "$WORK/test"
site=$("$WORK/test/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$DEPS/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' >"$site/dimguard-test-deps.pth"
"$WORK/test/bin/python" -m pip install -q --no-deps "$WHEEL"

# A second build from the same checkout (a reinstall after `git pull`): cargo's artifacts must
# not carry the first build's repair (tools/pep517/dimguard_build.py). Only the extension is
# relinked; the suite below runs on this second install.
echo "== installing again from the same checkout (pip install . a second time)"
"$WORK/test/bin/python" -m pip install -q --no-deps --force-reinstall .

echo "== pytest python/tests"
"$WORK/test/bin/python" -m pytest python/tests -p no:cacheprovider -q -k "not self_contained" "$@"

echo "== the wheel on its own: Z3 certificates with the source tree's Z3 moved away"
mv "$Z3" "$HIDDEN"
"$WORK/test/bin/python" -m pytest python/tests/test_surface.py -p no:cacheprovider -q \
  -k "self_contained or z3_is_bundled or verify_gives"
