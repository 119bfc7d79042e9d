#!/usr/bin/env python3
"""The shape of the code, measured for issue 45's plan (docs/RESTRUCTURE.md): lines per crate
and per top-level module, every function over a length limit (Rust and the Python package, test
code left out), and the ``Result<_, String>`` sites.

A Rust function runs from its ``fn`` line to the line of the brace that closes its body (braces
in strings, chars and comments skipped); test code is the ``#[cfg(test)]`` module at a file's
end, files named ``tests.rs`` or under a ``tests/`` folder, and ``#[test]`` functions. A Python
function's length is ``end_lineno - lineno + 1`` of its ``def`` (decorators left out).

    python3 tools/code_shape.py [--limit 150] [--json]
"""

import argparse
import ast
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FN = re.compile(r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?(?:extern\s+\"[^\"]*\"\s+)?fn\s+(\w+)")
RESULT_STRING = re.compile(r"Result<[^;{}]*?,\s*String\s*>")


def rust_files():
    for top in ["src"] + [os.path.join("crates", c, "src") for c in sorted(os.listdir(os.path.join(ROOT, "crates")))]:
        base = os.path.join(ROOT, top)
        if not os.path.isdir(base):
            continue
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if x != "tests")
            for f in sorted(files):
                if f.endswith(".rs") and f != "tests.rs":
                    yield os.path.relpath(os.path.join(d, f), ROOT)


def code_chars(line, state):
    """The line with strings, chars and comments blanked; `state` carries an open block comment
    or raw/plain string across lines."""
    out = []
    i = 0
    while i < len(line):
        if state["block"]:
            j = line.find("*/", i)
            if j < 0:
                return "".join(out)
            state["block"] = False
            i = j + 2
            continue
        if state["str"]:
            end = state["str"]
            j = i
            while j < len(line):
                if end == '"' and line[j] == "\\":
                    j += 2
                    continue
                if line.startswith(end, j):
                    break
                j += 1
            if j >= len(line):
                return "".join(out)
            state["str"] = None
            i = j + len(end)
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            state["block"] = True
            i += 2
            continue
        m = re.match(r'(?:b)?r(#*)"', line[i:]) if (i == 0 or not (line[i - 1].isalnum() or line[i - 1] == "_")) else None
        if m:
            state["str"] = '"' + m.group(1)
            i += len(m.group(0))
            continue
        if c == '"':
            state["str"] = '"'
            i += 1
            continue
        if c == "'":
            m = re.match(r"'(?:\\.|[^\\'])'|'\\u\{[0-9a-fA-F]+\}'|'\\x[0-9a-fA-F]{2}'", line[i:])
            if m:
                i += len(m.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out)


def rust_functions(path):
    """(name, first line, length) of each non-test function of a file, nested ones included."""
    lines = open(os.path.join(ROOT, path), encoding="utf-8").read().split("\n")
    # The trailing test module.
    end = len(lines)
    for k, l in enumerate(lines):
        if l.strip() == "#[cfg(test)]" and k + 1 < len(lines) and re.match(r"\s*(pub\s+)?mod\s+\w+", lines[k + 1]):
            end = k
            break
    state = {"block": False, "str": None}
    code = [code_chars(l, state) for l in lines[:end]]
    out = []
    for k, l in enumerate(code):
        m = FN.match(l)
        if not m:
            continue
        if k > 0 and lines[k - 1].strip() in ("#[test]", "#[tokio::test]"):
            continue
        depth, opened, j = 0, False, k
        while j < len(code):
            for c in code[j]:
                if c == "{":
                    depth += 1
                    opened = True
                elif c == "}":
                    depth -= 1
                elif c == ";" and not opened and depth == 0:
                    depth = -1  # a declaration without a body
                    break
            if depth < 0 or (opened and depth == 0):
                break
            j += 1
        if opened:
            out.append((m.group(1), k + 1, j - k + 1))
    return out, code


def python_functions():
    base = os.path.join(ROOT, "python", "dimguard")
    for f in sorted(os.listdir(base)):
        if f.endswith(".py"):
            path = os.path.join(base, f)
            tree = ast.parse(open(path, encoding="utf-8").read())
            for n in ast.walk(tree):
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    yield os.path.relpath(path, ROOT), n.name, n.lineno, n.end_lineno - n.lineno + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=150)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    long, results, lines_by = [], [], {}
    for path in rust_files():
        fns, code = rust_functions(path)
        text = open(os.path.join(ROOT, path), encoding="utf-8").read()
        parts = path.split(os.sep)
        unit = os.sep.join(parts[:3] if parts[0] == "crates" else parts[:1])
        mod = parts[3] if parts[0] == "crates" and len(parts) > 4 else (parts[1] if parts[0] == "src" and len(parts) > 2 else os.path.splitext(parts[-1])[0])
        lines_by.setdefault(unit, {}).setdefault(mod, 0)
        lines_by[unit][mod] += text.count("\n")
        long += [(n, path, line, length) for n, line, length in fns if length > a.limit]
        for k, l in enumerate(code):
            for m in RESULT_STRING.finditer(l):
                results.append((path, k + 1, m.group(0)))
    long += [(n, path, line, length) for path, n, line, length in python_functions() if length > a.limit]
    long.sort(key=lambda r: -r[3])
    if a.json:
        json.dump({"limit": a.limit, "long_functions": long, "result_string": results, "lines": lines_by}, sys.stdout, indent=1)
        print()
        return
    print(f"# lines per crate (source, tests included in-file), then per top-level module")
    for unit, mods in lines_by.items():
        print(f"{unit}: {sum(mods.values())}")
        for m, n in sorted(mods.items(), key=lambda x: -x[1]):
            print(f"    {m}: {n}")
    print(f"\n# functions over {a.limit} lines outside tests: {len(long)}")
    for n, path, line, length in long:
        print(f"{length:5}  {path}:{line}  {n}")
    print(f"\n# Result<_, String> outside tests: {len(results)}")
    for path, line, text in results:
        print(f"{path}:{line}  {text}")


if __name__ == "__main__":
    main()
