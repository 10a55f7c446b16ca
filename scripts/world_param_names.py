#!/usr/bin/env python3
"""Counts parameter-name string literals in the world's run-time change paths.

The sibling of `apply_param_names.py` (which counts them in `fn apply_param` bodies): a
parameter's name is written once, in its `declare_params!` row; the world hands a change to
the component by kind only. This lists every string literal in the world's change code
(`world/changes.rs`, `world/entry_report.rs`, `world/network.rs`; tests excluded) that
equals the name of a declared parameter row (any `declare_params!` row in models/src), e.g.
`("rate_multiplier", ParamValue::Float(x))` or `param == "servers"`.

    python3 scripts/world_param_names.py [models/src]
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "models/src")
FILES = ["world/changes.rs", "world/entry_report.rs", "world/network.rs"]

# The ParamType variants (a row is `name: Variant …`).
params = (root / "params.rs").read_text()
enum = params[params.index("pub enum ParamType") :]
enum = enum[: enum.index("\n}")]
variants = set(re.findall(r"^\s+([A-Z][A-Za-z]*)\b", enum, re.M))

# Every declared row name: `name: Variant` at a line start inside a `declare_params!` call.
names = set()
for f in sorted(root.rglob("*.rs")):
    src = f.read_text()
    for m in re.finditer(r"declare_params!\s*\{", src):
        depth, k = 0, m.end() - 1
        while True:
            c = src[k]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        for n, v in re.findall(r"^\s*([a-z][a-z0-9_]*)\s*:\s*([A-Z][A-Za-z]*)\b", src[m.end() : k], re.M):
            if v in variants:
                names.add(n)

total = 0
for rel in FILES:
    src = (root / rel).read_text().split("#[cfg(test)]")[0]
    hits = []
    for m in re.finditer(r'"([a-z][a-z0-9_]*)"', src):
        if m.group(1) in names:
            hits.append((src[: m.start()].count("\n") + 1, m.group(1)))
    total += len(hits)
    print(f"{root / rel}: {len(hits)}" + "".join(f"\n  {l}: {n}" for l, n in hits))
print(f"declared parameter names: {len(names)}; name literals in the world's change paths: {total}")
