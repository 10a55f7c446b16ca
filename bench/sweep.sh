#!/usr/bin/env bash
# Sweep throughput (d): the same 64-run batch (bench/sweep/mid.ron) with --jobs 1 and --jobs 2,
# and the share of wall time spent outside the runs themselves (loading, writing every
# result part, the summary). Prints a table; targets: speed-up ≥ 1.8 on 2 cores, overhead
# < 5% of run time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# STORMGLASS_BIN: a CLI already built (e.g. by the clean-build measurement); else cargo builds it.
if [ -n "${STORMGLASS_BIN:-}" ]; then
    bin=$STORMGLASS_BIN
else
    cargo build --release --quiet -p experiments
    bin=${CARGO_TARGET_DIR:-target}/release/stormglass
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
measure() { # jobs [command prefix] → "wall user sys" seconds of the CLI process
    local out="$work/j$1${2:+-pinned}"
    local TIMEFORMAT='%R %U %S'
    { time ${2:-} "$bin" run bench/sweep/mid.ron --jobs "$1" --out "$out" --progress none > /dev/null 2>&1; } 2>&1
}
python3 -c "import polars" 2>/dev/null || python3 -m pip install --quiet --disable-pip-version-check "polars>=1.0"
w1=$(measure 1)
w2=$(measure 2)
# One core, literally: the process pinned to CPU 0 (with --jobs 1 the CLI still uses more
# than one core: the parquet writer compresses on polars' own threads).
wc=$(measure 1 "taskset -c 0")
python3 - "$work" "$w1" "$w2" "$wc" <<'PY'
import sys, os
import polars as pl
work = sys.argv[1]
w1, u1, s1 = map(float, sys.argv[2].split())
w2, u2, s2 = map(float, sys.argv[3].split())
wc, uc, sc = map(float, sys.argv[4].split())
t = pl.scan_parquet(f"{work}/j1/bench-sweep/timings/").collect()
runs_s = t["wall_seconds"].sum()
events = t["events"].sum()
print(f"batch: {t.height} runs, {events:,} events in all, {runs_s:.2f} s of simulation (sum over runs, --jobs 1)")
t2 = pl.scan_parquet(f"{work}/j2/bench-sweep/timings/").collect()
# Σ run wall ÷ batch wall: how many runs were in flight on average.
print(f"{'jobs':>4} {'wall s':>8} {'runs/s':>8} {'speed-up':>9} {'user+sys s':>11} {'CPU %':>6} {'in flight':>9}")
print(f"{1:>4} {w1:>8.2f} {t.height / w1:>8.2f} {1.0:>8.2f}x {u1 + s1:>11.2f} {100 * (u1 + s1) / w1:>5.0f}% {runs_s / w1:>9.2f}")
print(f"{2:>4} {w2:>8.2f} {t.height / w2:>8.2f} {w1 / w2:>8.2f}x {u2 + s2:>11.2f} {100 * (u2 + s2) / w2:>5.0f}% {t2['wall_seconds'].sum() / w2:>9.2f}")
print(f"one core (taskset -c 0, --jobs 1): {wc:.2f} s wall, {uc + sc:.2f} s user+sys; "
      f"two cores with --jobs 2 are {wc / w2:.2f}x faster")
overhead = (w1 - runs_s) / runs_s
print(f"outside the runs (process start, load, writing {t.height} × 4 parts, summary): "
      f"{w1 - runs_s:.3f} s = {100 * overhead:.1f}% of run time (--jobs 1)")
print(f"targets: speed-up ≥ 1.8 (--jobs 2 vs --jobs 1: {'met' if w1 / w2 >= 1.8 else 'MISSED'}; "
      f"2 cores vs 1: {'met' if wc / w2 >= 1.8 else 'MISSED'}); "
      f"overhead < 5% ({'met' if overhead < 0.05 else 'MISSED'})")
print(f"machine: nproc {os.cpu_count()}, load average now {open('/proc/loadavg').read().split()[:3]}")
PY
