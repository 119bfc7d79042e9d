#!/bin/bash
# One device command for docs/PERFORMANCE.md's normalization table: the GPU tests (f64 CPU
# reference) first, then `dimguard norm-bench` and PyTorch (eager, torch.compile) on its cells.
#
#   norm_device.sh DIR OUT
#
# DIR holds what was built on an x86-64 machine and carried over: `dimguard` (cargo build
# --release), the test binaries `gpu-*` and `dimguard_norm-*` (cargo test --release -p
# dimguard-norm --no-run, from target/release/deps), libz3 if dimguard links it dynamically, and
# optionally `cache.tgz` (a tar of Inductor's and Triton's caches, ind/ and tri/, from an earlier
# run: compiles then take seconds). OUT receives tests.log, bench.md, cells.jsonl, table.md,
# cells_torch.json and torch.log.
set -u
DIR=$(cd "$1" && pwd); OUT=$2; HERE=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$DIR:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT" /tmp/ind /tmp/tri
( for t in "$DIR"/gpu-* "$DIR"/dimguard_norm-*; do "$t" --test-threads 1; echo "exit $t $?"; done ) > "$OUT/tests.log" 2>&1
grep "^exit " "$OUT/tests.log"
grep "^exit " "$OUT/tests.log" | grep -qv " 0$" && { echo "GPU tests failed: $OUT/tests.log"; exit 1; }
"$DIR/dimguard" norm-bench --iters 20 --samples 15 --json /tmp/cells.jsonl > "$OUT/bench.md" 2>&1 || exit 1
cp /tmp/cells.jsonl "$OUT/"
[ -f "$DIR/cache.tgz" ] && tar xzf "$DIR/cache.tgz" -C /tmp
TORCHINDUCTOR_CACHE_DIR=/tmp/ind TRITON_CACHE_DIR=/tmp/tri \
    python3 "$HERE/norm_bench_torch.py" /tmp/cells.jsonl 20 15 > "$OUT/table.md" 2> "$OUT/torch.log"
cp /tmp/cells_torch.json "$OUT/"
python3 - "$OUT/cells_torch.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
behind = [r for r in rows if r["compiled"] < r["ms"]]
print(f"{len(rows)} cells, {len(behind)} behind torch.compile")
for r in behind:
    print(f"  {r['set']} {r['layer']} {r['shape']} {r['dtype']}: {r['ms']:.4f} ms against {r['compiled']:.4f} ms")
PY
