"""The "real system" of docs/replay-your-system.md: a service with 2 worker threads and a
bounded queue of 3 waiting places, driven by an open-loop client, recorded call by call.

Each request's work is a sleep (its service time). The client sends at planned instants
(exponential gaps, mean 100 ms; service times log-normal, mean 180 ms: offered load
1.8 / 2 servers = 0.9) and a request that finds the queue full is refused at once (503).
Every time is read from the monotonic clock, so the recording holds what really
happened: when each request arrived, when a worker started it, when it finished.

    python3 experiments/examples/replay/record.py > experiments/examples/replay/recorded.csv

Columns (integer microseconds from the first arrival): arrival_us, start_us (empty when
refused), end_us, service_us (the measured work: end - start; empty when refused),
status (200 served, 503 refused).
"""

import math
import queue
import random
import threading
import time

WORKERS, WAITING, REQUESTS, SEED = 2, 3, 60, 7


def main():
    rng = random.Random(SEED)
    at, plan = 0.0, []
    sigma = math.sqrt(math.log(1 + 0.5**2))  # log-normal with CV 0.5, mean 180 ms
    for _ in range(REQUESTS):
        plan.append((at, rng.lognormvariate(math.log(0.180) - sigma**2 / 2, sigma)))
        at += rng.expovariate(1 / 0.100)
    waiting = queue.Queue(maxsize=WAITING)
    rows, lock = [], threading.Lock()

    def worker():
        while True:
            item = waiting.get()
            if item is None:
                return
            arrival, work = item
            start = time.perf_counter()
            time.sleep(work)
            end = time.perf_counter()
            with lock:
                rows.append((arrival, start, end, 200))

    threads = [threading.Thread(target=worker) for _ in range(WORKERS)]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    for planned, work in plan:
        time.sleep(max(0.0, t0 + planned - time.perf_counter()))
        arrival = time.perf_counter()
        try:
            waiting.put_nowait((arrival, work))
        except queue.Full:
            with lock:
                rows.append((arrival, None, arrival, 503))
    for _ in threads:
        waiting.put(None)
    for t in threads:
        t.join()
    first = min(r[0] for r in rows)
    us = lambda t: "" if t is None else str(round((t - first) * 1e6))
    print("arrival_us,start_us,end_us,service_us,status")
    for a, s, e, code in sorted(rows):
        service = "" if s is None else str(round((e - s) * 1e6))
        print(f"{us(a)},{us(s)},{us(e)},{service},{code}")


main()
