#!/usr/bin/env bash
# The engine benchmark of two builds in the same run (#10's "no slower than before, same run,
# ratio to the floor"): each engine bench binary measures stormglass and its own bare-heap
# floor in one process; the binaries run alternately, ROUNDS times, each under
# bench/foreground.sh, and the medians of the ratios are printed.
#
# usage: bench/pairs.sh ROUNDS NAME=BIN NAME=BIN ...
#   BIN: an engine bench executable, e.g. built with
#   `cargo bench --profile profiling -p models --bench engine --no-run` in each checkout
#   (for an old commit, copy today's models/benches/engine.rs and models/benches/common/ in).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rounds=${1:?usage: bench/pairs.sh ROUNDS NAME=BIN NAME=BIN ...}
shift
[ $# -ge 2 ] || { echo "bench/pairs.sh: give at least two NAME=BIN" >&2; exit 2; }
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for i in $(seq 1 "$rounds"); do
    for spec in "$@"; do
        name=${spec%%=*}
        bin=${spec#*=}
        load=$(cut -d' ' -f1 /proc/loadavg)
        out=$("$here/foreground.sh" "$bin" --bench 2>&1)
        r1=$(echo "$out" | awk '$1=="M/M/1" && $2=="stormglass" {print $NF}')
        r8=$(echo "$out" | awk '$1=="M/M/8" && $2=="stormglass" {print $NF}')
        [ -n "$r1" ] && [ -n "$r8" ] || { echo "$bin: no M/M/1 or M/M/8 row in its output" >&2; exit 1; }
        echo "$i $name load=$load mm1=$r1 mm8=$r8" | tee -a "$log"
    done
done
python3 - "$log" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    p = line.split()
    kv = dict(x.split("=") for x in p[2:])
    for k in ("mm1", "mm8"):
        d[p[1]][k].append(float(kv[k].rstrip("x")))
for name, m in d.items():
    print(f"{name}: " + "; ".join(
        f"{k} ratio to its floor, median {statistics.median(v):.2f} (n={len(v)}, {min(v):.2f}-{max(v):.2f})"
        for k, v in m.items()))
PY
