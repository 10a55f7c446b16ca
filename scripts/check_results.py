"""Reads a stormglass results folder with Python polars and checks the contract.

Usage: python3 scripts/check_results.py RESULTS_DIR EXPECTED_RUNS
"""
import sys

import polars as pl

RUN_COLUMNS = ["run_id", "run_index", "experiment", "variant", "point", "seed", "status", "error",
               "fingerprint", "events", "duration_s", "warmup_s", "scenario"]


def main() -> int:
    folder, expected_runs = sys.argv[1], int(sys.argv[2])
    # One folder per table, hive-partitioned by shard: a split batch reads as one table.
    runs = pl.scan_parquet(f"{folder}/runs/").collect().sort("run_index")
    assert runs.height == expected_runs, f"{runs.height} runs, expected {expected_runs}"
    assert runs.columns[: len(RUN_COLUMNS)] == RUN_COLUMNS, runs.columns[: len(RUN_COLUMNS)]
    assert (runs["status"] == "ok").all(), runs.select("seed", "status", "error")
    assert runs["fingerprint"].n_unique() == expected_runs
    src = [c for c in runs.columns if c.startswith(("source.", "class.")) and c.endswith(".offered")]
    assert src, "at least one source"
    for c in src:
        p = c.removesuffix(".offered")
        total = runs[f"{p}.completed"] + runs[f"{p}.failed"] + runs[f"{p}.rejected"] + runs[f"{p}.in_flight_end"]
        assert (runs[c] == total).all(), f"conservation broken for {p}"
    assert "shard" in runs.columns, "hive partition column"
    ts = pl.scan_parquet(f"{folder}/timeseries/").collect()
    assert ts.columns == ["run_id", "bucket_start_s", "metric", "value", "shard"], ts.columns
    assert set(ts["run_id"].unique()) == set(runs["run_id"])
    timings = pl.scan_parquet(f"{folder}/timings/").collect()
    assert timings.columns == ["run_id", "wall_seconds", "events", "events_per_second", "shard"], timings.columns
    events = pl.scan_parquet(f"{folder}/events/").collect()
    assert events.columns == ["run_id", "time_s", "component", "kind", "from", "to", "shard"], events.columns
    summary = pl.read_parquet(f"{folder}/summary.parquet")
    assert summary["runs"].sum() == expected_runs, summary.select("variant", "point", "runs")
    requests_dir = f"{folder}/requests/"
    import os
    if os.path.isdir(requests_dir):
        req = pl.scan_parquet(requests_dir).collect()
        measured = req.filter(pl.col("measured")).group_by("run_id", "source").len()
        for row in measured.iter_rows(named=True):
            offered = runs.filter(pl.col("run_id") == row["run_id"])[f"source.{row['source']}.offered"][0]
            assert row["len"] == offered, f"requests.parquet has {row['len']} measured rows, runs says {offered}"
        assert req.select("run_id", "request_id").is_duplicated().sum() == 0, "a request appears twice"
        print(f"requests.parquet: {req.height} rows, consistent with runs.parquet")
    print(f"python polars {pl.__version__}: {runs.height} runs, {runs.width} run columns, "
          f"{ts.height} time-series rows: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
