#!/usr/bin/env bash
# The benchmark suite (bench/README.md): (a) engine throughput, stormglass vs a bare
# BinaryHeap loop (the floor) vs SimPy 4, on M/M/1 (ρ = 0.9) and M/M/8 (ρ = 0.875);
# (b) the promotion surge through the full governor stack vs its own floor; (c) continuous
# batching on four GPU servers vs a bare step loop. Prints one table
# of ratios and writes it to bench/RESULTS.md with the machine line.
#
# Environment:
#   STORMGLASS_BENCH_CUSTOMERS  customers per Rust run (default 2000000)
#   STORMGLASS_BENCH_REPEATS    Rust repetitions, best kept (default 3)
#   SIMPY_CUSTOMERS             customers per SimPy run (default 2000000; SimPy does ~0.1M/s)
#   STORMGLASS_SURGE_SECS       simulated seconds of the surge (default 3600)
#   STORMGLASS_SURGE_LONG_SECS  a second surge run for the RSS-flatness check (default 4 × the
#                               above; 0 = skip)
#   STORMGLASS_GPU_SECS         simulated seconds of the GPU bench (default 600)
#   PYTHON                      Python interpreter (default python3)
#   BENCH_PROFILE               cargo profile of the bench binaries (default bench, i.e.
#                               release; `profiling` = release + line tables, the same code,
#                               reuses what bench/callgrind.sh built)
#   CARGO_TARGET_DIR            honoured by cargo as usual
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
profile=(--profile "${BENCH_PROFILE:-bench}")
PYTHON=${PYTHON:-python3}
SIMPY_CUSTOMERS=${SIMPY_CUSTOMERS:-2000000}

if ! "$PYTHON" -c 'import simpy, sys; sys.exit(0 if simpy.__version__.startswith("4.") else 1)' \
    2>/dev/null; then
    echo "installing simpy 4 …" >&2
    "$PYTHON" -m pip install --quiet --disable-pip-version-check 'simpy==4.*'
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
# The code measured: the commit at the start (and whether the tree had changes).
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit+changes"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== stormglass and floor (cargo bench -p models --bench engine)"
STORMGLASS_BENCH_TSV="$work/rust.tsv" cargo bench "${profile[@]}" -p models --bench engine

SURGE_SECS=${STORMGLASS_SURGE_SECS:-3600}
echo
echo "== promotion surge (cargo bench -p models --bench surge)"
STORMGLASS_SURGE_TSV="$work/surge.tsv" STORMGLASS_SURGE_SECS="$SURGE_SECS" \
    STORMGLASS_SURGE_LONG_SECS="${STORMGLASS_SURGE_LONG_SECS:-$((4 * SURGE_SECS))}" \
    cargo bench "${profile[@]}" -p models --bench surge

echo
echo "== GPU, continuous batching (cargo bench -p models --bench gpu)"
STORMGLASS_GPU_TSV="$work/gpu.tsv" cargo bench "${profile[@]}" -p models --bench gpu

echo
echo "== SimPy $("$PYTHON" -c 'import simpy; print(simpy.__version__)') ($SIMPY_CUSTOMERS customers per model)"
"$PYTHON" bench/peers/simpy_mmc.py 1 9 10 "$SIMPY_CUSTOMERS" | tee "$work/simpy-M-M-1.json"
"$PYTHON" bench/peers/simpy_mmc.py 8 70 10 "$SIMPY_CUSTOMERS" | tee "$work/simpy-M-M-8.json"

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
machine="nproc $(nproc), CPU ${cpu:-unknown}, $(rustc --version), Python $("$PYTHON" -c 'import platform; print(platform.python_version())'), load average before / after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)"

echo
"$PYTHON" bench/results.py "$work" "$machine" "$(date -u +%Y-%m-%dT%H:%MZ)" \
    "$commit" | tee bench/RESULTS.md
