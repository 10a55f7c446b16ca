#!/usr/bin/env bash
# Engine throughput benchmark: stormglass vs a bare BinaryHeap loop (the floor) vs SimPy 4,
# on M/M/1 (ρ = 0.9) and M/M/8 (ρ = 0.875). See bench/README.md.
#
# Environment:
#   STORMGLASS_BENCH_CUSTOMERS  customers per Rust run (default 2000000)
#   STORMGLASS_BENCH_REPEATS    Rust repetitions, best kept (default 3)
#   SIMPY_CUSTOMERS             customers per SimPy run (default 2000000; SimPy does ~0.1M/s)
#   PYTHON                      Python interpreter (default python3)
#   CARGO_TARGET_DIR            honoured by cargo as usual
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
SIMPY_CUSTOMERS=${SIMPY_CUSTOMERS:-2000000}

if ! "$PYTHON" -c 'import simpy, sys; sys.exit(0 if simpy.__version__.startswith("4.") else 1)' \
    2>/dev/null; then
    echo "installing simpy 4 …" >&2
    "$PYTHON" -m pip install --quiet --disable-pip-version-check 'simpy==4.*'
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "== stormglass and floor (cargo bench -p models --bench engine)"
STORMGLASS_BENCH_TSV="$work/rust.tsv" cargo bench -p models --bench engine

echo
echo "== SimPy $("$PYTHON" -c 'import simpy; print(simpy.__version__)') ($SIMPY_CUSTOMERS customers per model)"
"$PYTHON" bench/peers/simpy_mmc.py 1 9 10 "$SIMPY_CUSTOMERS" | tee "$work/simpy-M-M-1.json"
"$PYTHON" bench/peers/simpy_mmc.py 8 70 10 "$SIMPY_CUSTOMERS" | tee "$work/simpy-M-M-8.json"

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
machine="nproc $(nproc), CPU ${cpu:-unknown}, $(rustc --version), Python $("$PYTHON" -c 'import platform; print(platform.python_version())')"

echo
"$PYTHON" - "$work" "$machine" <<'EOF'
import json, sys
work, machine = sys.argv[1], sys.argv[2]
rows = []
with open(f"{work}/rust.tsv") as f:
    next(f)
    for line in f:
        model, impl, customers, wall, rate = line.rstrip("\n").split("\t")
        rows.append((model, impl, int(customers), float(wall), float(rate)))
for model in ("M/M/1", "M/M/8"):
    s = json.load(open(f"{work}/simpy-{model.replace('/', '-')}.json"))
    rows.append((model, "simpy", s["customers"], s["wall_s"], s["customers_per_s"]))
rate = {(m, i): r for m, i, _, _, r in rows}

print("== combined (best of the Rust repetitions; SimPy one run)")
print(f"{'model':<7} {'impl':<11} {'customers':>10} {'wall s':>9} {'customers/s':>13} "
      f"{'floor/this':>11} {'this/SimPy':>11}")
for m, i, n, wall, r in rows:
    print(f"{m:<7} {i:<11} {n:>10} {wall:>9.3f} {r:>13.0f} "
          f"{rate[(m, 'floor')] / r:>10.2f}x {r / rate[(m, 'simpy')]:>10.1f}x")
print()
print("targets: floor/stormglass ≤ 2 (within 2x of the floor); stormglass/SimPy ≥ 200")
for m in ("M/M/1", "M/M/8"):
    slow = rate[(m, "floor")] / rate[(m, "stormglass")]
    fast = rate[(m, "stormglass")] / rate[(m, "simpy")]
    print(f"{m}: floor/stormglass = {slow:.2f}x ({'met' if slow <= 2 else 'MISSED'}), "
          f"stormglass/SimPy = {fast:.0f}x ({'met' if fast >= 200 else 'MISSED'}), "
          f"floor/SimPy = {rate[(m, 'floor')] / rate[(m, 'simpy')]:.0f}x")
for m in ("M/M/1", "M/M/8"):
    n = {i: c for mm, i, c, _, _ in rows if mm == m}
    if n["simpy"] != n["stormglass"]:
        print(f"note: {m} SimPy ran {n['simpy']} customers, the Rust runs {n['stormglass']}; "
              "rates (customers/s) are compared")
print(f"machine: {machine}")
EOF
