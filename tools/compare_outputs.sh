#!/usr/bin/env bash
# Every output of two dimguard binaries over the fixtures, the shared corpus and the composed
# programs, diffed byte for byte (issue 45: a restructuring changes no output).
#   tools/compare_outputs.sh OLD_BINARY NEW_BINARY [WORKDIR]
# Prints the differing files (and their first lines of diff); exits 1 when any differs.
set -u
old=$1; new=$2; work=${3:-$(mktemp -d)}
root=$(cd "$(dirname "$0")/.." && pwd)
shared=$root/../shared
mkdir -p "$work/texts" "$work/old" "$work/new"
# The corpus records as files (text field as published).
python3 "$root/tools/corpus_texts.py" "$shared" "$work/texts"
texts=$(find "$root/tests/data" -type f \( -name '*.txt' -o -name '*.log' \) | sort; ls "$work"/texts/*.txt)
programs=$(ls "$root"/tests/data/composed/*.model.json "$shared"/programs/composed/*.model.json; find "$root/tests/data/pt2" -name '*.pt2' -o -name '*.model.json' | sort)
run() { # BIN TAG ARGS...
  local bin=$1 tag=$2; shift 2
  local key; key=$(printf '%s' "$*" | sed "s#$root/##g; s#$work/##g; s#$shared/##g; s#[^A-Za-z0-9._-]#_#g")
  timeout 60 "$bin" "$@" > "$work/$tag/$key.out" 2> "$work/$tag/$key.err"
  echo "rc=$?" >> "$work/$tag/$key.out"
}
for bin_tag in "$old:old" "$new:new"; do
  bin=${bin_tag%:*}; tag=${bin_tag##*:}
  for t in $texts; do
    run "$bin" "$tag" diagnose --json "$t"
    run "$bin" "$tag" diagnose "$t"
  done
  for p in $programs; do
    run "$bin" "$tag" check --json "$p"
    run "$bin" "$tag" check "$p"
    run "$bin" "$tag" profile --format json "$p"
  done
  for m in "$root"/tests/data/messages/*.txt; do
    run "$bin" "$tag" profile --format json "$m"
  done
done
# Times differ run to run: drop the keys that hold them.
for tag in old new; do
  sed -i -E 's/"(spent|seconds|elapsed|wall|took)[a-z_]*": *[0-9.e+-]+/"\1": T/g; s/[0-9]+(\.[0-9]+)? ?(ms|s) (wall|CPU)/T/g' "$work/$tag"/*.out 2>/dev/null
done
if diff -rq "$work/old" "$work/new" > "$work/diff.txt"; then
  echo "no output differs ($(ls "$work/old" | wc -l) files; $work)"
else
  cat "$work/diff.txt"
  for f in $(awk '/^Files/{print $2}' "$work/diff.txt" | head -5); do diff "$f" "${f/\/old\//\/new\/}" | head -8; done
  exit 1
fi
