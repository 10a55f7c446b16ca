#!/usr/bin/env python3
"""M/M/c in SimPy 4: the peer the stormglass engine benchmark compares against.

Usage: simpy_mmc.py SERVERS LAMBDA MU CUSTOMERS [--seed N]

A source process issues CUSTOMERS customers with exponential inter-arrival times
(rate LAMBDA per second); each customer requests one unit of a simpy.Resource with
SERVERS capacity (FIFO), holds it for an exponential service time (rate MU per second)
and releases it. Time is in float seconds (SimPy's own clock).

Prints one JSON object: customers simulated per wall-clock second of env.run(), plus the
measured mean wait next to the closed form (Erlang C) as a sanity check that this is the
same model as models/benches/engine.rs.
"""

import argparse
import json
import platform
import random
import sys
import time

import simpy


def erlang_c_wait(servers: int, lam: float, mu: float) -> float:
    """Mean wait in queue (seconds) of M/M/c, by Erlang C."""
    a = lam / mu
    term, total = 1.0, 1.0
    for k in range(1, servers):
        term *= a / k
        total += term
    last = term * a / servers * (servers / (servers - a))
    p_wait = last / (total + last)
    return p_wait / (servers * mu - lam)


def run(servers: int, lam: float, mu: float, customers: int, seed: int) -> dict:
    env = simpy.Environment()
    station = simpy.Resource(env, capacity=servers)
    rng = random.Random(seed)
    stats = {"completed": 0, "wait_sum": 0.0}

    def customer(env):
        arrived = env.now
        with station.request() as req:
            yield req
            stats["wait_sum"] += env.now - arrived
            yield env.timeout(rng.expovariate(mu))
        stats["completed"] += 1

    def source(env):
        for i in range(customers):
            env.process(customer(env))
            if i + 1 < customers:
                yield env.timeout(rng.expovariate(lam))

    env.process(source(env))
    t0 = time.perf_counter()
    env.run()
    wall = time.perf_counter() - t0
    completed = stats["completed"]
    if completed != customers:
        sys.exit(f"only {completed} of {customers} customers completed")
    return {
        "impl": "simpy",
        "simpy_version": simpy.__version__,
        "python": platform.python_version(),
        "servers": servers,
        "lambda": lam,
        "mu": mu,
        "customers": customers,
        "wall_s": wall,
        "customers_per_s": customers / wall,
        "mean_wait_ms": stats["wait_sum"] / completed * 1e3,
        "erlang_c_wait_ms": erlang_c_wait(servers, lam, mu) * 1e3,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("servers", type=int)
    p.add_argument("lam", metavar="lambda", type=float, help="arrival rate per second")
    p.add_argument("mu", type=float, help="service rate per second (per server)")
    p.add_argument("customers", type=int)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.servers < 1 or a.customers < 1 or a.lam <= 0 or a.mu <= 0:
        p.error("servers and customers must be ≥ 1, lambda and mu > 0")
    if a.lam >= a.servers * a.mu:
        p.error("unstable: lambda must be < servers × mu")
    print(json.dumps(run(a.servers, a.lam, a.mu, a.customers, a.seed)))


if __name__ == "__main__":
    main()
