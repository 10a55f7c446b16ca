"""Executes notebooks top to bottom with nbclient; fails on a cell error or a notebook without figures.

Usage: python notebooks/run_notebooks.py [--executed DIR] [--timeout S] [NOTEBOOK...]
(default: every notebooks/*.ipynb, in name order). Executed copies (with outputs) go to
DIR (default results/notebooks-executed/), never over the committed files.
Environment: STORMGLASS_BIN, STORMGLASS_NB_SMALL, STORMGLASS_NB_OUT, STORMGLASS_NB_IMAGES
(see stormglass_nb.py) pass through to the kernels.
"""
import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

HERE = Path(__file__).resolve().parent


def images(nb) -> int:
    return sum(1 for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
               if "image/png" in o.get("data", {}))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebooks", nargs="*")
    ap.add_argument("--executed", default=str(HERE.parent / "results" / "notebooks-executed"))
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per cell")
    a = ap.parse_args()
    files = [Path(f) for f in a.notebooks] or sorted(HERE.glob("*.ipynb"))
    out = Path(a.executed)
    out.mkdir(parents=True, exist_ok=True)
    failed, total = [], time.monotonic()
    for f in files:
        nb = nbformat.read(f, as_version=4)
        t0 = time.monotonic()
        client = NotebookClient(nb, timeout=a.timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(HERE)}})
        try:
            client.execute()
            n = images(nb)
            if n == 0:
                raise AssertionError("no figure (image/png output) in the executed notebook")
            print(f"{f.name}: ok, {n} figures, {time.monotonic() - t0:.1f} s", flush=True)
        except (CellExecutionError, AssertionError, Exception) as e:  # noqa: BLE001 - report any failure
            failed.append(f.name)
            print(f"{f.name}: FAILED after {time.monotonic() - t0:.1f} s\n{e}", file=sys.stderr, flush=True)
        nbformat.write(nb, out / f.name)
    print(f"notebooks: {len(files) - len(failed)} of {len(files)} ran clean in {time.monotonic() - total:.1f} s "
          f"(executed copies in {out})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
