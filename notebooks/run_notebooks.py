"""Executes notebooks top to bottom with nbclient; fails on a cell error or a notebook without figures.

Usage: python notebooks/run_notebooks.py [--executed DIR] [--timeout S] [NOTEBOOK...]
(default: every notebooks/*.ipynb, in name order). Executed copies (with outputs) go to
DIR (default results/notebooks-executed/), never over the committed files.
Environment: STORMGLASS_BIN, STORMGLASS_NB_SMALL, STORMGLASS_NB_OUT, STORMGLASS_NB_IMAGES
(see stormglass_nb.py) pass through to the kernels.
"""
import argparse
import re
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

# README images made by a script rather than a notebook: name → the script that writes it.
MADE_BY_SCRIPTS = {"workbench": "scripts/gui-screenshot"}

HERE = Path(__file__).resolve().parent


def images(nb) -> list[dict]:
    """The PNG outputs of an executed notebook, with the figure name `sg.show` attached."""
    return [o.get("metadata", {}).get("image/png", {}).get("stormglass", {})
            for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
            if "image/png" in o.get("data", {})]


def readme_images(readme: Path) -> set[str]:
    """Names of the docs/img/*.png images README.md shows."""
    return set(re.findall(r"\(docs/img/([A-Za-z0-9_.-]+)\.png\)", readme.read_text(encoding="utf-8")))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="*")
    ap.add_argument("--executed", default=str(HERE.parent / "results" / "notebooks-executed"))
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    a = ap.parse_args()
    files = [Path(f) for f in a.notebooks] or sorted(HERE.glob("*.ipynb"))
    out = Path(a.executed)
    out.mkdir(parents=True, exist_ok=True)
    failed, total, readme_made = [], time.monotonic(), set()
    for f in files:
        nb = nbformat.read(f, as_version=4)
        t0 = time.monotonic()
        client = NotebookClient(nb, timeout=a.timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(HERE)}})
        try:
            client.execute()
            figs = images(nb)
            if not figs:
                raise AssertionError("no figure (image/png output) in the executed notebook")
            readme_made |= {m["figure"] for m in figs if m.get("readme")}
            print(f"{f.name}: ok, {len(figs)} figures, {time.monotonic() - t0:.1f} s", flush=True)
        except (CellExecutionError, AssertionError, Exception) as e:  # noqa: BLE001 - report any failure
            failed.append(f.name)
            print(f"{f.name}: FAILED after {time.monotonic() - t0:.1f} s\n{e}", file=sys.stderr, flush=True)
        nbformat.write(nb, out / f.name)
    print(f"notebooks: {len(files) - len(failed)} of {len(files)} ran clean in {time.monotonic() - total:.1f} s "
          f"(executed copies in {out})")
    if not a.notebooks and not failed:
        # Every image the README shows is a figure a notebook marks readme=True (and exists),
        # or one a script of its own makes (never by hand).
        shown = readme_images(HERE.parent / "README.md")
        missing = sorted(n for n in shown if not (HERE.parent / "docs" / "img" / f"{n}.png").is_file())
        orphan = sorted(shown - readme_made - set(MADE_BY_SCRIPTS))
        if missing or orphan:
            print(f"README images: missing files {missing}; not made by any notebook {orphan}", file=sys.stderr)
            return 1
        print(f"README images: all {len(shown)} are notebook figures (regenerate: scripts/notebooks images) "
              f"or made by scripts ({', '.join(f'{k}: {v}' for k, v in MADE_BY_SCRIPTS.items())})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
