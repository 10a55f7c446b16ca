"""Runs every bundled experiment in a small mode and reads each of its tables with Python
polars as a user would: `pl.scan_parquet("<results>/<table>/").collect()`, no options.

The schema of a table must not depend on the variant or sweep point a part belongs to
(docs/results.md, "One schema for every part"): a scan takes the first part's schema and
refuses a part with other columns or types. Small mode: one seed, a short duration, no
warm-up (the column set is a function of the configuration, never of the run's length or
luck), set on a copy of the file written beside it, as the notebooks' small mode does.

Usage: python3 scripts/check_schemas.py STORMGLASS_BIN OUT_DIR [DURATION]
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import polars as pl

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "notebooks"))
import ron  # noqa: E402  (the notebooks' RON helper: top-level field replacement)

GROUPS = ["", "incidents", "studies"]
TABLES = ["runs", "timeseries", "events", "timings", "requests"]


def bundled() -> list[Path]:
    """The bundled experiments, as `experiments::catalog::entries` lists them: every
    `*.ron` of experiments/, incidents/ and studies/ that no sibling names with `File(...)`."""
    out = []
    for g in GROUPS:
        d = REPO / "experiments" / g
        files = sorted(p for p in d.glob("*.ron") if not p.name.startswith("."))
        texts = [p.read_text(encoding="utf-8") for p in files]
        for p in files:
            if not any(f'File("{p.name}")' in t for t in texts):
                out.append(p)
    return out


def is_experiment(text: str) -> bool:
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S).lstrip()
    return body.startswith("Experiment")


def run_small(binary: str, path: Path, out: Path, duration: str | None) -> str:
    """Runs `path` shortened (one seed; `duration` unless None); returns its results
    folder's name. A trace replay refused for covering too little of its trace keeps its
    own duration."""
    try:
        return run_once(binary, path, out, duration)
    except RuntimeError as e:
        if duration is None or "partial: true" not in str(e):
            raise SystemExit(str(e))
        return run_once(binary, path, out, None)


def run_once(binary: str, path: Path, out: Path, duration: str | None) -> str:
    text = path.read_text(encoding="utf-8")
    args = [binary, "run", "--out", str(out), "--progress", "none"]
    derived = None
    if is_experiment(text):
        small = {"warmup": '"0s"', "seeds": "Range(0, 1)"}
        if duration is not None:
            small["duration"] = f'"{duration}"'
        derived = path.with_name(f".{path.stem}.schema-{os.getpid()}.ron")
        derived.write_text(ron.replace_fields(text, small, str(path)), encoding="utf-8")
        args.insert(2, str(derived))
        name = ron.load(derived)["name"]
    else:
        args[2:2] = [str(path), "--warmup", "0s", "--seeds", "0..1"]
        if duration is not None:
            args += ["--duration", duration]
        name = ron.load(path)["name"]
    try:
        done = subprocess.run(args, capture_output=True, text=True)
    finally:
        if derived is not None:
            derived.unlink(missing_ok=True)
    if done.returncode != 0:
        raise RuntimeError(f"{path}: stormglass run failed ({done.returncode}):\n{done.stderr}")
    return name


def check(folder: Path) -> str:
    """Scans every table of one results folder; returns a one-line account."""
    planned = len(ron.load(folder / "manifest.ron")["runs"])
    account = []
    for t in TABLES:
        d = folder / t
        if not d.is_dir() or not any(d.glob("shard=*/*.parquet")):
            continue
        try:
            df = pl.scan_parquet(f"{d}/").collect()
        except Exception as e:  # noqa: BLE001 (polars' schema errors have several types)
            raise SystemExit(f"{d}: pl.scan_parquet(...).collect() failed: {type(e).__name__}: {e}")
        if t == "runs":
            assert df.height == planned, f"{d}: {df.height} rows for {planned} planned runs"
            assert (df["status"] == "ok").all(), df.filter(pl.col("status") != "ok").select("run_id", "error")
            bad = [c for c in df.columns if c.startswith("param.") and df[c].dtype == pl.String
                   and df[c].is_in(["None", "null"]).any()]
            assert not bad, f"{d}: a swept parameter written as text for a missing value: {bad}"
        account.append(f"{t} {df.height}x{df.width}")
    pl.read_parquet(folder / "summary.parquet")
    return ", ".join(account)


def main() -> int:
    binary, out = sys.argv[1], Path(sys.argv[2])
    duration = sys.argv[3] if len(sys.argv) > 3 else "10s"
    start = time.monotonic()
    files = bundled()
    for path in files:
        t0 = time.monotonic()
        name = run_small(binary, path, out, duration)
        account = check(out / name)
        print(f"{path.relative_to(REPO)}: {account} ({time.monotonic() - t0:.1f} s)")
    print(f"python polars {pl.__version__}: every table of {len(files)} bundled experiments "
          f"scans ({time.monotonic() - start:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
