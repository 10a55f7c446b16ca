"""Committed notebooks carry no outputs: check (exit 1 if any has some) or strip them.

Usage: python3 notebooks/nbclean.py check|strip [NOTEBOOK...]   (default: notebooks/*.ipynb)

Standard library only, so `scripts/test` can run the check without the notebooks' virtual
environment. A clean notebook has no outputs, no execution counts and no per-cell or
per-notebook execution metadata; `strip` writes it in nbformat's own layout (one-space
indent, sorted keys, sources as lists of lines), so stripping twice changes nothing.
"""
import json
import sys
from pathlib import Path

KEEP_NB_METADATA = ("kernelspec", "language_info")


def clean(nb: dict) -> dict:
    for cell in nb.get("cells", []):
        src = cell.get("source", "")
        # One JSON string per line (as Jupyter saves), so a diff shows the lines that changed.
        cell["source"] = (src if isinstance(src, str) else "".join(src)).splitlines(keepends=True)
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell["metadata"] = {k: v for k, v in cell.get("metadata", {}).items() if k not in ("execution", "collapsed", "scrolled")}
    meta = nb.get("metadata", {})
    nb["metadata"] = {k: meta[k] for k in KEEP_NB_METADATA if k in meta}
    if "language_info" in nb["metadata"]:
        nb["metadata"]["language_info"] = {"name": nb["metadata"]["language_info"].get("name", "python")}
    return nb


def dump(nb: dict) -> str:
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("check", "strip"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    mode, files = sys.argv[1], sys.argv[2:]
    if not files:
        files = sorted(str(p) for p in (Path(__file__).parent).glob("*.ipynb"))
    dirty = []
    for f in files:
        text = Path(f).read_text(encoding="utf-8")
        try:
            nb = json.loads(text)
        except json.JSONDecodeError as e:
            print(f"{f}:{e.lineno}:{e.colno}: not a notebook (invalid JSON: {e.msg})", file=sys.stderr)
            return 1
        want = dump(clean(json.loads(text)))
        if want != text:
            if mode == "strip":
                Path(f).write_text(want, encoding="utf-8")
                print(f"stripped {f}")
            else:
                outputs = sum(len(c.get("outputs", [])) for c in nb.get("cells", []))
                dirty.append(f"{f}: {outputs} outputs or execution metadata committed")
    if dirty:
        print("\n".join(dirty) + "\nrun `scripts/notebooks strip` and commit again", file=sys.stderr)
        return 1
    if mode == "check":
        print(f"{len(files)} notebooks carry no outputs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
