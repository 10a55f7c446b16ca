#!/usr/bin/env python3
"""Counts parameter-name string literals in the bodies of `fn apply_param` in models/src."""
import re, sys, pathlib
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "models/src")
total = 0; fns = 0
for f in sorted(root.rglob("*.rs")):
    src = f.read_text()
    for m in re.finditer(r"fn apply_param\b", src):
        i = src.find("{", m.end()); j = src.find(";", m.end())
        if j != -1 and j < i:  # trait declaration without body
            continue
        depth = 0; k = i
        while True:
            c = src[k]
            if c == "{": depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0: break
            k += 1
        body = src[i:k]
        # strip format strings: only count literals that look like parameter names used as patterns
        names = re.findall(r'\(\s*"([a-z][a-z0-9_]*)"|[|(]\s*"([a-z][a-z0-9_]*)"\s*[,|)]|^\s*"([a-z][a-z0-9_]*)"\s*[=|]', body, re.M)
        lits = re.findall(r'"([a-z][a-z0-9_]*)"', body)
        fns += 1; total += len(lits)
        if lits: print(f"{f}:{src[:m.start()].count(chr(10))+1}: {len(lits)} {lits}")
print(f"functions with a body: {fns}, name literals: {total}")
