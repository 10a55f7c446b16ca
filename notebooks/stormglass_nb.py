"""Notebook helper: run an experiment through the stormglass CLI, load its tables as polars.

Every notebook starts with

    import stormglass_nb as sg, polars as pl
    res = sg.run("quickstart")

`sg.run` runs the experiment (a bundled name, or a path relative to the repository) with
the CLI and returns a `Results`: `res.runs`, `res.timeseries`, `res.events`,
`res.requests`, `res.timings` are polars LazyFrames with the run metadata joined (run_index,
variant, point, seed and the swept `param.*` columns), `res.summary` the across-seed means
and 95% CIs. Only the runs of the current plan (`manifest.ron`) are read, so a results
folder left by an older version of the file never mixes in.

The binary: `$STORMGLASS_BIN` if set (scripts/notebooks and CI set it), else
`cargo build --release -p experiments --bin stormglass` in the repository. Results go to
`results/notebooks/` (`results/notebooks-small/` in small mode; `$STORMGLASS_NB_OUT`
overrides); a second call reuses the runs already there when the binary and the experiment are
unchanged, and starts from an empty folder otherwise.

Small mode (`STORMGLASS_NB_SMALL=1`, used by CI): each notebook passes `small=` overrides
(fewer seeds, shorter runs) to `sg.run`, so the five notebooks run in minutes.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

IMAGES = os.environ.get("STORMGLASS_NB_IMAGES")  # directory for README images, when set
if IMAGES:
    # polars' multi-threaded aggregations add floats in a varying order (last-bit differences
    # between processes); one thread makes the README images byte-identical run to run.
    os.environ.setdefault("POLARS_MAX_THREADS", "1")

import polars as pl  # noqa: E402 - after POLARS_MAX_THREADS

import ron  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SMALL = os.environ.get("STORMGLASS_NB_SMALL", "") not in ("", "0")
STRICT = os.environ.get("STORMGLASS_NB_STRICT", "") not in ("", "0")


# ---------------------------------------------------------------------------------------
# Running the CLI


_binary: Path | None = None


def binary() -> Path:
    """The stormglass executable: $STORMGLASS_BIN, else a release build of the repository."""
    global _binary
    if _binary is not None:
        return _binary
    env = os.environ.get("STORMGLASS_BIN")
    if env:
        _binary = Path(env)
        if not _binary.is_file():
            raise FileNotFoundError(f"STORMGLASS_BIN={env}: no such file")
        return _binary
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "experiments", "--bin", "stormglass"],
                   cwd=REPO, check=True)
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=REPO,
                          check=True, capture_output=True, text=True)
    _binary = Path(json.loads(meta.stdout)["target_directory"]) / "release" / "stormglass"
    return _binary


def cli(*args: str, check: bool = True) -> str:
    """Runs `stormglass ARGS...` and returns its standard output (raises with stderr on failure)."""
    p = subprocess.run([str(binary()), *args], cwd=REPO, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"stormglass {' '.join(args)} exited {p.returncode}:\n{p.stderr}{p.stdout}")
    return p.stdout


def validate(path) -> str | None:
    """`stormglass validate FILE`: None when the file loads, else the CLI's error message."""
    p = subprocess.run([str(binary()), "validate", str(path)], cwd=REPO, capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr or p.stdout).strip()


def _source_file(spec: str) -> Path | None:
    """The experiment file behind `spec`: a path (absolute or from the repository), or the
    file of a bundled experiment (experiments/<name>.ron); None if neither exists."""
    for p in (Path(spec), REPO / spec, REPO / "experiments" / f"{spec}.ron"):
        if p.is_file():
            return p.resolve()
    return None


def _ron_value(key: str, v) -> str:
    if key == "seeds" and isinstance(v, int):
        return f"Range(0, {v})"
    if isinstance(v, str) and key in ("duration", "warmup", "sample_every"):
        return json.dumps(v)
    return str(v)


def run(spec: str, *, small: dict | None = None, requests: bool = False, jobs: int | None = None,
        **overrides) -> "Results":
    """Runs an experiment and returns its results.

    spec: a bundled name (`quickstart`) or a file (`experiments/incidents/01-x.ron`).
    overrides: top-level fields of the experiment to replace, as Python values or RON text:
        `seeds=3` (= `Range(0, 3)`), `duration="2m"`, `warmup="10s"`, `sample_every="1s"`.
    small: more overrides, applied only in small mode (STORMGLASS_NB_SMALL=1).
    requests: also write the `requests` table (one row per request).
    """
    if SMALL and small:
        overrides = {**overrides, **small}
    src = _source_file(spec)
    derived = None
    if src is None:
        if overrides:
            raise FileNotFoundError(f"{spec}: no such file (overrides need the experiment's file)")
        target = spec
    else:
        target = str(src)
        if overrides:
            text = src.read_text(encoding="utf-8")
            text = ron.replace_fields(text, {k: _ron_value(k, v) for k, v in overrides.items()}, str(src))
            # Beside the original, so paths relative to it (scenario files, traces) still resolve.
            derived = src.with_name(f".{src.stem}.nb-{os.getpid()}.ron")
            derived.write_text(text, encoding="utf-8")
            target = str(derived)
    out = Path(os.environ.get("STORMGLASS_NB_OUT") or REPO / "results" / ("notebooks-small" if SMALL else "notebooks"))
    out.mkdir(parents=True, exist_ok=True)
    try:
        name = _experiment_name(Path(target)) if src else spec
        root = out / name
        # The folder is reused (--resume) only for the same binary and the same experiment
        # text; otherwise it is emptied first: parts of an older plan would otherwise stay
        # beside the new ones (and the CLI's summary would average them in).
        text = Path(target).read_text(encoding="utf-8") if src else spec
        stamp = _binary_stamp() + "\n" + hashlib.sha256(text.encode()).hexdigest() + f" requests={requests}"
        stamp_file = out / f".{name}.stamp"
        if root.exists() and (not stamp_file.exists() or stamp_file.read_text() != stamp):
            shutil.rmtree(root)
        args = ["run", target, "--out", str(out), "--progress", "none", "--resume"]
        if requests:
            args.append("--requests")
        if jobs:
            args += ["--jobs", str(jobs)]
        stamp_file.unlink(missing_ok=True)
        cli(*args)
        stamp_file.write_text(stamp)
    finally:
        if derived is not None:
            derived.unlink(missing_ok=True)
    return Results(root)


def _experiment_name(path: Path) -> str:
    """The results folder's name: the experiment's `name` (a bare scenario's, for one)."""
    return ron.load(path)["name"]


def _binary_stamp() -> str:
    st = binary().stat()
    return f"{binary()} {st.st_size} {st.st_mtime_ns}"


# ---------------------------------------------------------------------------------------
# Loading results


@dataclass
class Results:
    """One experiment's results folder, read as polars frames (see docs/results.md)."""

    root: Path

    @cached_property
    def manifest(self) -> dict:
        return ron.load(self.root / "manifest.ron")

    @cached_property
    def experiment(self) -> dict:
        """The resolved experiment (experiment.ron): scenario, seeds, variants, sweep."""
        return ron.load(self.root / "experiment.ron")

    @property
    def name(self) -> str:
        return self.manifest["experiment"]

    @cached_property
    def variants(self) -> list[str]:
        """Variant names in plan order."""
        seen: list[str] = []
        for r in self.manifest["runs"]:
            if r["variant"] not in seen:
                seen.append(r["variant"])
        return seen

    @property
    def variant_dtype(self) -> pl.Enum:
        return pl.Enum(self.variants)

    def _scan(self, table: str) -> pl.LazyFrame:
        d = self.root / table
        if not d.is_dir():
            raise FileNotFoundError(f"{self.root}: no table `{table}`"
                                    + (" (run with requests=True)" if table == "requests" else ""))
        return pl.scan_parquet(f"{d}/", hive_partitioning=True, missing_columns="insert")

    @cached_property
    def _runs(self) -> pl.DataFrame:
        # The plan's own position columns (run_index, variant, point, seed) come from the
        # manifest: a part reused by --resume after the plan changed keeps its old ones.
        plan_cols = ["run_index", "variant", "point", "seed"]
        planned = pl.DataFrame([{k: r[k] for k in ["run_id", *plan_cols]} for r in self.manifest["runs"]],
                               schema={"run_id": pl.String, "run_index": pl.UInt64, "variant": pl.String,
                                       "point": pl.UInt64, "seed": pl.UInt64})
        # One part per run; a variant that changes structure has columns others lack, so the
        # parts are read one by one and stacked by name (a scan takes the first part's schema).
        parts = sorted((self.root / "runs").glob("shard=*/*.parquet"))
        if not parts:
            raise FileNotFoundError(f"{self.root}: no runs parts")
        raw = pl.concat([pl.read_parquet(p).with_columns(pl.lit(int(p.parent.name.split("=")[1]), dtype=pl.Int64).alias("shard"))
                         for p in parts], how="diagonal_relaxed")
        df = (raw.drop(plan_cols).join(planned, on="run_id", how="inner")
              .select(raw.columns)
              .with_columns(pl.col("variant").cast(self.variant_dtype))
              .sort("run_index"))
        if df.height != planned.height or df["run_id"].n_unique() != df.height:
            raise RuntimeError(f"{self.root}: {df.height} result rows for the {planned.height} planned runs "
                               f"({df['run_id'].n_unique()} distinct)")
        bad = df.filter(pl.col("status") != "ok")
        if bad.height:
            raise RuntimeError(f"{self.root}: runs failed:\n{bad.select('run_index', 'variant', 'seed', 'error')}")
        return df

    @property
    def runs(self) -> pl.LazyFrame:
        """One row per run, in plan order; `variant` is an Enum in plan order."""
        return self._runs.lazy()

    @property
    def params(self) -> list[str]:
        """The swept parameters' columns (`param.<path>`)."""
        return [c for c in self._runs.columns if c.startswith("param.")]

    @property
    def meta(self) -> pl.DataFrame:
        """run_id → run_index, variant, point, seed and the param.* columns."""
        return self._runs.select("run_id", "run_index", "variant", "point", "seed", *self.params)

    def table(self, name: str) -> pl.LazyFrame:
        """A per-run table with the run metadata joined (only runs of the current plan)."""
        lf = self._scan(name)
        if "shard" in lf.collect_schema().names():
            lf = lf.drop("shard")
        return self.meta.lazy().join(lf, on="run_id", how="inner")

    @property
    def timeseries(self) -> pl.LazyFrame:
        return self.table("timeseries")

    @property
    def events(self) -> pl.LazyFrame:
        return self.table("events")

    @property
    def timings(self) -> pl.LazyFrame:
        return self.table("timings")

    @property
    def requests(self) -> pl.LazyFrame:
        """One row per request, plus `class` and `latency_ms` (null while unfinished)."""
        classes = pl.DataFrame({"source": list(self.source_class), "class": list(self.source_class.values())})
        return (self.table("requests").join(classes.lazy(), on="source", how="left")
                .with_columns(((pl.col("end_ns") - pl.col("arrival_ns")).cast(pl.Float64) / 1e6).alias("latency_ms")))

    @cached_property
    def summary(self) -> pl.DataFrame:
        """Across-seed means (`<metric>.mean`) and 95% CI half-widths (`<metric>.ci95`)."""
        return pl.read_parquet(self.root / "summary.parquet").with_columns(pl.col("variant").cast(self.variant_dtype))

    def series(self, metric: str, every: float | None = None) -> pl.DataFrame:
        """One time-series metric: run metadata, bucket_start_s, value.

        every: re-bucket to windows of this many seconds (a multiple of the sampling
        interval): counters (`arrivals`, `completed`, `count`, ...) are summed, time-weighted
        gauges (`.mean`) averaged (exact for equal buckets), `.max` maximised. Quantiles
        (`p50_ms`...) cannot be merged: re-bucketing them is refused.
        """
        df = self.timeseries.filter(pl.col("metric") == metric).drop("metric").collect()
        if every is None:
            return df
        last = metric.rsplit(".", 1)[-1]
        if last.endswith("_ms") and last.startswith("p"):
            raise ValueError(f"{metric}: quantiles of different buckets cannot be merged; "
                             "compute them from the requests table instead")
        agg = {"mean": pl.col("value").mean(), "max": pl.col("value").max()}.get(last, pl.col("value").sum())
        keys = [c for c in df.columns if c not in ("bucket_start_s", "value")]
        return (df.with_columns((pl.col("bucket_start_s") / every).floor().mul(every).alias("bucket_start_s"))
                .group_by(*keys, "bucket_start_s", maintain_order=True).agg(agg.alias("value")))

    @property
    def experiment_duration_s(self) -> float:
        return duration_ms(self.experiment["duration"]) / 1000

    @cached_property
    def scenario(self) -> dict:
        return self.experiment["scenario"]

    @cached_property
    def classes(self) -> list[str]:
        return [c["name"] for c in self.scenario.get("classes", [])] or ["P0"]

    @cached_property
    def source_class(self) -> dict[str, str]:
        """Traffic source → its class (a source without one is in the first class)."""
        return {s["name"]: s.get("class") or self.classes[0] for s in self.scenario.get("sources", [])}

    def summary_table(self, metrics: list[str], by: list[str] | None = None) -> pl.DataFrame:
        """The summary's `metrics` as "mean ± ci95" text, one row per variant × sweep point."""
        s = self.summary
        by = by or ["variant", *[c for c in s.columns if c.startswith("param.")]]
        cols = {m: [fmt_ci(a, b) for a, b in zip(s[f"{m}.mean"], s[f"{m}.ci95"])] for m in metrics}
        return s.select(*by, "runs").with_columns(pl.Series(m, v, dtype=pl.String) for m, v in cols.items())


def fmt_ci(mean: float | None, ci: float | None) -> str:
    """`mean ± ci` with the mean rounded to the CI's second significant digit."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    if ci is None or math.isnan(ci) or ci == 0:
        return f"{mean:.4g}" if ci is None or math.isnan(ci) else f"{mean:.6g} ± 0"
    digits = max(0, 1 - math.floor(math.log10(abs(ci))))
    return f"{mean:.{digits}f} ± {ci:.{digits}f}"


_UNITS_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "m": 6e4, "h": 3.6e6, "d": 8.64e7}


def duration_ms(text: str) -> float:
    """A stormglass duration (`"250us"`, `"1.5s"`, `"5m"`...) in milliseconds."""
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?)\s*(ns|us|µs|ms|s|m|h|d)\s*", text)
    if not m:
        raise ValueError(f"`{text}` is not a duration with a unit")
    return float(m.group(1)) * _UNITS_MS[m.group(2)]


def incident_files() -> list[Path]:
    """experiments/incidents/*.ron in name order; `STORMGLASS_NB_INCIDENTS=05,13` keeps the
    files whose names start with one of those prefixes."""
    files = sorted((REPO / "experiments" / "incidents").glob("*.ron"))
    only = [x.strip() for x in os.environ.get("STORMGLASS_NB_INCIDENTS", "").split(",") if x.strip()]
    if only:
        files = [f for f in files if f.name.startswith(tuple(only))]
    return files


def leading_comment(path: Path) -> str:
    """The `//` comment block at the top of a file, as Markdown paragraphs."""
    lines = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.startswith("//"):
            lines.append(line[2:].strip())
        elif not line.strip() and lines:
            lines.append("")
        else:
            break
    return "\n".join(lines).strip()


# ---------------------------------------------------------------------------------------
# Statistics: across-seed means and Student-t confidence intervals

# Two-sided 95% Student-t critical values t(0.975, df) for df = 1..30.
_T975 = [12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004,
         2.262157, 2.228139, 2.200985, 2.178813, 2.160369, 2.144787, 2.131450, 2.119905,
         2.109816, 2.100922, 2.093024, 2.085963, 2.079614, 2.073873, 2.068658, 2.063899,
         2.059539, 2.055529, 2.051831, 2.048407, 2.045230, 2.042272]


def t975(df: int) -> float:
    """t(0.975, df); beyond 30 the Cornish–Fisher expansion (error < 1e-4)."""
    if df < 1:
        return math.nan
    if df <= 30:
        return _T975[df - 1]
    z = 1.959964
    return (z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)
            + (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / (384 * df**3))


def mean_ci(df: pl.DataFrame | pl.LazyFrame, by: list[str], value: str = "value") -> pl.DataFrame:
    """Across-seed mean, 95% CI half-width (`ci95`), `lo`, `hi` and `n` per group of `by`.

    Rows are summed in a fixed order (by `by`, then run_index or seed), so the same results
    give the same bits (and the same figures) whatever order a join or scan produced."""
    lf = df.lazy()
    names = lf.collect_schema().names()
    order = [c for c in ("run_index", "seed") if c in names and c not in by][:1]
    out = (lf.sort(*by, *order, maintain_order=True).group_by(by, maintain_order=True)
           .agg(pl.col(value).mean().alias("mean"), pl.col(value).std(1).alias("sd"),
                pl.col(value).count().alias("n"))
           .collect())
    crit = pl.Series([t975(int(n) - 1) for n in out["n"]], dtype=pl.Float64)
    out = out.with_columns((crit * pl.col("sd") / pl.col("n").sqrt()).alias("ci95"))
    return out.with_columns((pl.col("mean") - pl.col("ci95")).alias("lo"),
                            (pl.col("mean") + pl.col("ci95")).alias("hi")).sort(by)


def pareto_front(df: pl.DataFrame, x: str, y: str) -> pl.DataFrame:
    """Rows not dominated when both `x` and `y` are to be minimised, sorted by `x`."""
    rows = df.sort([x, y])
    keep, best_y = [], math.inf
    for i, yv in enumerate(rows[y]):
        if yv < best_y:
            keep.append(i)
            best_y = yv
    return rows[keep]


# ---------------------------------------------------------------------------------------
# Figures

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
_figures: dict[str, int] = {}


# The figure style, one file read by matplotlib itself (its colour cycle is PALETTE).
MATPLOTLIBRC = Path(__file__).resolve().parent / "matplotlibrc"


def style() -> None:
    """Table printing for polars, and the figure style for matplotlib without importing it:
    $MATPLOTLIBRC points at `matplotlibrc` (unless set), so matplotlib's first import reads
    it; when matplotlib was imported before this module, the file is applied now."""
    pl.Config.set_tbl_rows(60)
    pl.Config.set_fmt_str_lengths(80)
    pl.Config.set_tbl_width_chars(160)
    if MATPLOTLIBRC.is_file():
        os.environ.setdefault("MATPLOTLIBRC", str(MATPLOTLIBRC))
        if "matplotlib" in sys.modules:
            sys.modules["matplotlib"].rc_file(MATPLOTLIBRC, use_default_template=False)


def colors(keys) -> dict:
    """A stable colour per key (variant, class...)."""
    return {k: PALETTE[i % len(PALETTE)] for i, k in enumerate(keys)}


def band(ax, stats: pl.DataFrame, x: str, label: str | None = None, color=None, step: bool = False,
         floor: float | None = 0.0):
    """Plots a `mean_ci` frame: the mean as a line, the 95% CI as a shaded band (its lower
    edge clipped at `floor`, 0 by default: counts, latencies and queues are never negative)."""
    import numpy as np
    xs, m = stats[x].to_numpy(), stats["mean"].to_numpy()
    lo, hi = stats["lo"].to_numpy(), stats["hi"].to_numpy()
    if floor is not None:
        lo = np.maximum(lo, floor)
    kw = {"where": "post"} if step else {}
    (line,) = (ax.step(xs, m, label=label, color=color, **kw) if step else ax.plot(xs, m, label=label, color=color))
    ax.fill_between(xs, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0, step="post" if step else None)
    return line


BREAKER_COLORS = {"CLOSED": "#2ca02c", "OPEN": "#d62728", "HALF_OPEN": "#ff7f0e",
                  "FORCED_OPEN": "#7f0000", "DISABLED": "#bbbbbb", "METRICS_ONLY": "#bbbbbb"}


def state_strip(ax, events: pl.DataFrame, t_end: float, initial: str = "CLOSED") -> None:
    """A breaker's state over time from its `state_change` events (one run): coloured spans."""
    t, state = 0.0, initial
    for row in events.sort("time_s").iter_rows(named=True):
        ax.axvspan(t, row["time_s"], color=BREAKER_COLORS.get(state, "#bbbbbb"), linewidth=0)
        t, state = row["time_s"], row["to"]
    ax.axvspan(t, t_end, color=BREAKER_COLORS.get(state, "#bbbbbb"), linewidth=0)
    ax.set_xlim(0, t_end)
    ax.set_yticks([])
    ax.grid(False)


def show(fig, name: str, readme: bool = False) -> None:
    """Displays a figure and records it under `name` (checked by `check_figures`).

    readme=True: the figure is one of the README's images; with STORMGLASS_NB_IMAGES=DIR
    (scripts/notebooks images) it is written to DIR/<name>.png.
    """
    if not fig.axes or not any(ax.has_data() for ax in fig.axes):
        raise AssertionError(f"figure {name} has no data")
    _figures[name] = _figures.get(name, 0) + 1
    if readme and IMAGES:
        Path(IMAGES).mkdir(parents=True, exist_ok=True)
        fig.savefig(Path(IMAGES) / f"{name}.png", metadata={"Software": None}, bbox_inches="tight")
    if "ipykernel" in sys.modules:
        from IPython.display import display
        # The name travels with the image, so run_notebooks.py can check the README's images.
        display(fig, metadata={"image/png": {"stormglass": {"figure": name, "readme": readme}}})
    import matplotlib.pyplot as plt
    plt.close(fig)


def check_figures(*names: str) -> None:
    """Fails unless every named figure was shown (the last cell of each notebook)."""
    missing = [n for n in names if n not in _figures]
    if missing:
        raise AssertionError(f"figures not made: {missing}; made: {sorted(_figures)}")
    print(f"{len(_figures)} figures: {', '.join(sorted(_figures))}")


style()
