"""Combines the benchmark parts that bench/run.sh collected into one Markdown table of
ratios (printed, and written by run.sh to bench/RESULTS.md).

usage: results.py WORKDIR MACHINE WHEN COMMIT
WORKDIR holds rust.tsv (engine bench), simpy-M-M-{1,8}.json, surge.tsv (surge bench) and,
when run, gpu.tsv (GPU bench).
"""
import json
import os
import sys

work, machine, when, commit = sys.argv[1:5]
# rows: (bench, impl, work done, unit, wall s, events/s or None, peak RSS kB or None)
rows = []
with open(f"{work}/rust.tsv") as f:
    next(f)
    for line in f:
        model, impl, customers, wall, _rate = line.rstrip("\n").split("\t")
        rows.append((model, impl, int(customers), "customers", float(wall), None, None))
for model in ("M/M/1", "M/M/8"):
    with open(f"{work}/simpy-{model.replace('/', '-')}.json") as f:
        s = json.load(f)
    rows.append((model, "simpy", s["customers"], "customers", s["wall_s"], None, None))
with open(f"{work}/surge.tsv") as f:
    next(f)
    for line in f:
        impl, sim_s, calls, events, _requests, wall, rss = line.rstrip("\n").split("\t")
        secs = int(sim_s)
        bench = f"surge {secs // 3600} h" if secs % 3600 == 0 else f"surge {secs} s"
        rows.append((bench, impl, int(calls), "upstream calls", float(wall),
                     int(events) / float(wall), int(rss)))
gpu_tsv = f"{work}/gpu.tsv"
if os.path.exists(gpu_tsv):
    with open(gpu_tsv) as f:
        next(f)
        for line in f:
            impl, sim_s, tokens, steps, wall = line.rstrip("\n").split("\t")
            rows.append((f"GPU {sim_s} s", impl, int(tokens), "output tokens", float(wall),
                         None, None))
rate = {(b, i): n / w for b, i, n, _, w, _, _ in rows}
surge_floor = next(r for r in rows if r[0].startswith("surge") and r[1] == "floor")
surge_floor_rate = surge_floor[2] / surge_floor[4]


def floor_rate(bench):
    return surge_floor_rate if bench.startswith("surge") else rate[(bench, "floor")]


def verdict(ok):
    return "met" if ok else "MISSED"


print("# Benchmark results")
print()
print(f"Written by `bench/run.sh` at commit `{commit}`, {when}. Machine: {machine}.")
print()
print("Rust rows: best of the repetitions; each surge row runs in its own process (peak RSS =")
print("its VmHWM). SimPy: one run. `floor/this` = the floor's rate ÷ this row's rate, i.e. the")
print("slowdown against the bare loop of the same model, measured in the same run.")
print()
print("| bench | impl | work | wall s | rate /s | events /s | peak RSS MB | floor/this | this/SimPy |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
for b, i, n, unit, wall, ev, rss in rows:
    r = n / wall
    simpy = f"{r / rate[(b, 'simpy')]:.1f}x" if (b, "simpy") in rate else ""
    evs = "" if ev is None else f"{ev:,.0f}"
    mb = "" if rss is None else f"{rss / 1024:.1f}"
    print(f"| {b} | {i} | {n:,} {unit} | {wall:.3f} | {r:,.0f} | {evs} | {mb} | "
          f"{floor_rate(b) / r:.2f}x | {simpy} |")
print()
print("## Targets")
print()
for m in ("M/M/1", "M/M/8"):
    slow = rate[(m, "floor")] / rate[(m, "stormglass")]
    fast = rate[(m, "stormglass")] / rate[(m, "simpy")]
    print(f"- (a) {m}: floor/stormglass = {slow:.2f}x, target ≤ 2 ({verdict(slow <= 2)}); "
          f"stormglass/SimPy = {fast:.0f}x, target ≥ 200 ({verdict(fast >= 200)}; "
          f"the floor itself is {rate[(m, 'floor')] / rate[(m, 'simpy')]:.0f}x SimPy)")
surge = [r for r in rows if r[0].startswith("surge") and r[1] == "stormglass"]
main = surge[0]
calls_s = main[2] / main[4]
slow = surge_floor_rate / calls_s
print(f"- (b) {main[0]}: {calls_s / 1e6:.3f} M upstream calls/s, target ≥ 2 M "
      f"({verdict(calls_s >= 2e6)}); floor/stormglass = {slow:.2f}x, target ≤ 3 "
      f"({verdict(slow <= 3)}); peak RSS {main[6] / 1024:.1f} MB, target ≤ 300 "
      f"({verdict(main[6] <= 300 * 1024)})")
if len(surge) > 1:
    long = surge[1]
    growth = long[6] / main[6] - 1
    print(f"- (b) RSS flat in simulated time: {long[0]} {long[6] / 1024:.1f} MB vs {main[0]} "
          f"{main[6] / 1024:.1f} MB = {100 * growth:+.1f}%, target within ±10% "
          f"({verdict(abs(growth) <= 0.10)})")
for b in sorted({r[0] for r in rows if r[0].startswith("GPU")}):
    slow = rate[(b, "floor")] / rate[(b, "stormglass")]
    print(f"- (c) {b}: {rate[(b, 'stormglass')] / 1e6:.3f} M output tokens/s; floor/stormglass "
          f"= {slow:.2f}x, target ≤ 3 ({verdict(slow <= 3)})")
for m in ("M/M/1", "M/M/8"):
    n = {i: c for mm, i, c, *_ in rows if mm == m}
    if n["simpy"] != n["stormglass"]:
        print(f"- note: {m} SimPy ran {n['simpy']:,} customers, the Rust runs "
              f"{n['stormglass']:,}; rates are compared")
