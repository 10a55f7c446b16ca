#!/usr/bin/env bash
# (e) The first build: a clean `cargo build --release -p experiments` (the CLI) in a scratch
# target directory — wall time, the binary's size and the load average beside them.
#
# usage: bench/first_build.sh [SCRATCH_DIR]   (default /tmp/stormglass-cleanbuild)
# --timings: the per-crate report lands in SCRATCH_DIR/cargo-timings/ (the critical path).
# The scratch directory is deleted first and left in place afterwards (its
# release/stormglass can serve bench/sweep.sh via STORMGLASS_BIN); delete it when done.
# Besides the wall time it prints the CPU time of the build (user + sys of every rustc and
# linker): on a machine shared with other builds the wall time says little, the CPU time
# stays close to what an idle machine spends; an idle 2-core machine needs at least half of
# it as wall time (more where the crate graph serialises, e.g. polars-core).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-/tmp/stormglass-cleanbuild}
rm -rf "$dir"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
TIMEFORMAT='%U %S'
cpu=$( { time CARGO_TARGET_DIR="$dir" cargo build --release --locked -p experiments --timings >&2; } 2>&1 | tail -1)
t1=$(date +%s)
cpu_s=$(echo "$cpu" | awk '{printf "%d", $1 + $2}')
bin="$dir/release/stormglass"
size=$(stat -c %s "$bin")
echo "clean release build of the CLI: $((t1 - t0)) s ($(( (t1 - t0) / 60 )) min $(( (t1 - t0) % 60 )) s), target ≤ 8 min"
echo "CPU time of the build: ${cpu_s} s user+sys (${cpu_s} / 2 = $((cpu_s / 2)) s is the floor of its wall time on 2 idle cores)"
echo "binary $bin: $((size / 1024 / 1024)) MB ($size bytes), target ≤ 80 MB"
echo "nproc $(nproc), load average before / after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)"
