#!/usr/bin/env bash
# (e) The first build: a clean `cargo build --release -p experiments` (the CLI) in a scratch
# target directory — wall time, the binary's size and the load average beside them.
#
# usage: bench/first_build.sh [SCRATCH_DIR]   (default /tmp/stormglass-cleanbuild)
# The scratch directory is deleted first and left in place afterwards (its
# release/stormglass can serve bench/sweep.sh via STORMGLASS_BIN); delete it when done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${1:-/tmp/stormglass-cleanbuild}
rm -rf "$dir"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
t0=$(date +%s)
CARGO_TARGET_DIR="$dir" cargo build --release --locked -p experiments
t1=$(date +%s)
bin="$dir/release/stormglass"
size=$(stat -c %s "$bin")
echo "clean release build of the CLI: $((t1 - t0)) s ($(( (t1 - t0) / 60 )) min $(( (t1 - t0) % 60 )) s), target ≤ 8 min"
echo "binary $bin: $((size / 1024 / 1024)) MB ($size bytes), target ≤ 80 MB"
echo "nproc $(nproc), load average before / after: $load_before / $(cut -d' ' -f1-3 /proc/loadavg)"
