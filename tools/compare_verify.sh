#!/usr/bin/env bash
# `verify`'s outputs of two dimguard binaries, diffed byte for byte (tools/compare_outputs.sh
# does diagnose, check and profile). The specs are made from every message, new text, form,
# trace, recompile and cross-form text of tests/data and the shared corpus: each text's paste
# block (the old binary's diagnose) and two specs giving every size a Dim of its own (2..4096,
# 2..64); --json and text, with long Z3 and time limits so that a loaded machine's timeouts do
# not show as differences.
#   tools/compare_verify.sh OLD_BINARY NEW_BINARY [WORKDIR] [SAMPLE]
# SAMPLE N keeps about N of the texts, evenly spread over their sorted list (every k-th, the
# same ones each run): a quick deterministic subset; the whole run takes more than 20 minutes.
set -u
old=$1; new=$2; work=${3:-$(mktemp -d)}; sample=${4:-0}
root=$(cd "$(dirname "$0")/.." && pwd); shared=$root/../shared
mkdir -p "$work/texts" "$work/specs" "$work/old" "$work/new"
python3 "$root/tools/corpus_texts.py" "$shared" "$work/texts"
texts=$( (ls $root/tests/data/messages/*.txt $root/tests/data/new_texts/*.txt; find $root/tests/data/crossform $root/tests/data/forms $root/tests/data/traces $root/tests/data/recompiles -type f \( -name "*.txt" -o -name "*.log" \) | sort; ls "$work"/texts/*.txt) )
if [ "$sample" -gt 0 ]; then
  total=$(echo "$texts" | wc -w)
  step=$(( (total + sample - 1) / sample ))
  texts=$(echo "$texts" | tr ' ' '\n' | awk -v k="$step" 'NF && (NR - 1) % k == 0')
fi
n=0
for t in $texts; do
  k=$(echo "$t" | sed "s#$root/tests/data/##; s#$work/texts/##; s#[^A-Za-z0-9._-]#_#g"); n=$((n+1))
  timeout 120 "$old" diagnose --json "$t" > "$work/specs/$k.json" 2>/dev/null
  python3 - "$work/specs/$k.json" "$work/specs/$k" <<'PY'
import json, re, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
ds = r.get("dynamic_shapes") or ""
if "Dim" in ds:
    open(sys.argv[2] + ".paste.py", "w").write(ds)
lines, dd = [], {}
for i, d in enumerate(r.get("dims", [])):
    m = re.match(r"L\['(\w+)'\]\.size\(\)\[(\d+)\]$", d.get("source") or "")
    if m:
        lines.append(f"w{i} = Dim('w{i}', min=2, max=4096)")
        dd.setdefault(m.group(1), {})[int(m.group(2))] = f"w{i}"
if lines:
    body = ", ".join(f"'{k}': {{" + ", ".join(f"{i}: {v}" for i, v in sorted(x.items())) + "}" for k, x in dd.items())
    open(sys.argv[2] + ".wide.py", "w").write("\n".join(lines) + f"\ndynamic_shapes = {{{body}}}\n")
    small = [l.replace("max=4096", "max=64") for l in lines]
    open(sys.argv[2] + ".small.py", "w").write("\n".join(small) + f"\ndynamic_shapes = {{{body}}}\n")
PY
  for s in "$work/specs/$k".*.py; do
    [ -f "$s" ] || continue
    sk=$(basename "$s" .py)
    for b in old new; do
      bin=$old; [ $b = new ] && bin=$new
      timeout 300 "$bin" verify --json --z3-timeout-ms 60000 --time-budget 600 "$t" "$s" > "$work/$b/$sk.json" 2> "$work/$b/$sk.json.err"; echo "rc=$?" >> "$work/$b/$sk.json"
      timeout 300 "$bin" verify --z3-timeout-ms 60000 --time-budget 600 "$t" "$s" > "$work/$b/$sk.txt" 2> "$work/$b/$sk.txt.err"; echo "rc=$?" >> "$work/$b/$sk.txt"
    done
  done
done
for tag in old new; do
  sed -i -E 's/"(spent|seconds|elapsed|wall|took)[a-z_]*": *[0-9.e+-]+/"\1": T/g; s/[0-9]+(\.[0-9]+)? ?(ms|s) (wall|CPU)/T/g' "$work/$tag"/* 2>/dev/null
done
echo "texts: $n; specs: $(ls $work/specs/*.py | wc -l)"
if diff -rq "$work/old" "$work/new" > "$work/diff.txt"; then
  echo "no verify output differs ($(ls "$work/old" | wc -l) files; $work)"
else
  cat "$work/diff.txt"; exit 1
fi
