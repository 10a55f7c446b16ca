#!/usr/bin/env bash
# Instruction counts (callgrind), the load-independent before → after metric of
# bench/NOTES.md: on a shared machine wall time measures the other builds, instructions do
# not. Builds the bench binaries with `--profile profiling` (release + line tables and
# symbols), runs one measurement under valgrind and prints the instructions of the world
# and of its floor, per customer / per upstream call / per output token, and the top
# functions by self cost.
#
#   bench/callgrind.sh mm1   [CUSTOMERS]   M/M/1 (default 200,000 customers)
#   bench/callgrind.sh mm8   [CUSTOMERS]   M/M/8
#   bench/callgrind.sh surge [SECS]        the promotion surge (default 20 simulated s)
#   bench/callgrind.sh gpu   [SECS]        continuous batching (default 60 simulated s)
#
# Environment: TOP (functions listed, default 25), KEEP=1 keeps the callgrind.out file
# (its path is printed), CARGO_TARGET_DIR as usual. Installs valgrind with apt if missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what=${1:?usage: bench/callgrind.sh mm1|mm8|surge|gpu [SIZE]}
top=${TOP:-25}
if ! command -v valgrind > /dev/null; then
    echo "installing valgrind …" >&2
    sudo apt-get install -y -qq valgrind > /dev/null
fi
target=${CARGO_TARGET_DIR:-target}
bench_bin() { # bench name → the newest profiling executable of it
    cargo bench -p models --profile profiling --bench "$1" --no-run --quiet 2>&1 >/dev/null | true
    ls -t "$target"/profiling/deps/"$1"-* | grep -v '\.d$' | head -1
}
out=$(mktemp /tmp/callgrind.XXXXXX)
# Removed on any exit (a failing pipe under pipefail ended the script before a last-line rm).
if [ "${KEEP:-0}" = 1 ]; then trap 'echo "kept $out" >&2' EXIT; else trap 'rm -f "$out" "$out.stdout"' EXIT; fi
case "$what" in
    mm1 | mm8)
        n=${2:-200000}
        bin=$(bench_bin engine)
        model=$([ "$what" = mm1 ] && echo M/M/1 || echo M/M/8)
        STORMGLASS_BENCH_MODEL=$model STORMGLASS_BENCH_CUSTOMERS=$n STORMGLASS_BENCH_REPEATS=1 \
            valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --bench > /dev/null 2>&1
        world='engine::run_stormglass'
        floor='engine::run_floor'
        unit=customer
        ;;
    surge)
        n=${2:-20}
        bin=$(bench_bin surge)
        STORMGLASS_SURGE_CHILD=both STORMGLASS_SURGE_SECS=$n \
            valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" > "$out.stdout" 2>/dev/null
        world='surge::run_stormglass'
        floor='surge::run_floor'
        unit='upstream call'
        ;;
    gpu)
        n=${2:-60}
        bin=$(bench_bin gpu)
        STORMGLASS_BENCH_REPEATS=1 STORMGLASS_GPU_SECS=$n \
            valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --bench > "$out.stdout" 2>/dev/null
        world='gpu::run_stormglass'
        floor='gpu::run_floor'
        unit='output token'
        ;;
    *)
        echo "unknown measurement $what (mm1, mm8, surge, gpu)" >&2
        exit 2
        ;;
esac
incl=$(callgrind_annotate --inclusive=yes "$out" 2>/dev/null)
ir_of() { # function name → its inclusive instructions
    echo "$incl" | grep -F "$1" | head -1 | awk '{gsub(",", "", $1); print $1}'
}
w=$(ir_of "$world")
f=$(ir_of "$floor")
# The unit count: customers for the engine; for the surge and GPU, the children's line.
case "$what" in
    mm1 | mm8) units=$n; funits=$n ;;
    *)
        units=$(awk '/^stormglass / && $2 ~ /^[0-9]+$/ {print $2}' "$out.stdout")
        funits=$(awk '/^floor / && $2 ~ /^[0-9]+$/ {print $2}' "$out.stdout")
        ;;
esac
python3 - "$what" "$n" "$w" "$f" "$units" "$funits" "$unit" <<'PY'
import sys
what, n, w, f, u, fu, unit = sys.argv[1:]
w, f, u, fu = int(w), int(f), int(u), int(fu)
print(f"{what} (size {n}): stormglass {w:,} instructions for {u:,} {unit}s = {w / u:,.0f} per {unit}")
print(f"{what} (size {n}): floor      {f:,} instructions for {fu:,} {unit}s = {f / fu:,.0f} per {unit}")
print(f"stormglass / floor per {unit}: {(w / u) / (f / fu):.2f}x")
PY
echo "top $top functions by self cost (whole process; inlined code counted in its caller):"
callgrind_annotate "$out" 2>/dev/null | python3 -c '
import re, sys, collections
top = int(sys.argv[1])
cost, total, listing = collections.Counter(), 0, False
for line in sys.stdin:
    # The function list runs from its "file:function" header to the first blank line
    # (the auto-annotated sources after it repeat inclusive costs).
    if "file:function" in line:
        listing = True
        continue
    if listing and not line.strip():
        break
    m = re.match(r"^ *([0-9,]+) \([ 0-9.]+%\)  (.*)$", line)
    if not m:
        continue
    ir, what = int(m.group(1).replace(",", "")), m.group(2)
    if what.startswith("PROGRAM TOTALS"):
        total = ir
        continue
    if not listing:
        continue
    # "file:function [object]": the function, whatever file its inlined lines came from.
    fn = re.sub(r" \[[^]]*\]$", "", what)
    fn = fn.split(":", 1)[1] if re.match(r"^[^:]*\.(rs|S|c)[:]", fn) else fn
    cost[fn] += ir
for fn, ir in cost.most_common(top):
    print(f"{ir:>14,} {100 * ir / total:5.1f}%  {fn}")
' "$top"
