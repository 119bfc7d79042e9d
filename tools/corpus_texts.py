"""Writes the shared corpus's records as files, the text field as published (for the output
comparisons, tools/compare_outputs.sh and tools/compare_verify.sh).

    python3 tools/corpus_texts.py SHARED_DIR OUT_DIR

Each record of SHARED_DIR/corpus/*.jsonl becomes OUT_DIR/<file stem>.<line number>.txt.
"""

import json
import pathlib
import sys


def main(shared: pathlib.Path, out: pathlib.Path) -> None:
    for f in sorted((shared / "corpus").glob("*.jsonl")):
        for i, line in enumerate(f.read_text().splitlines()):
            if line.strip():
                r = json.loads(line)
                t = r.get("text") or r.get("message") or ""
                (out / f"{f.stem}.{i:03d}.txt").write_text(t)


if __name__ == "__main__":
    main(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))
