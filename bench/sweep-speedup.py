#!/usr/bin/env python3
"""pagesim.sweep on one local worker against two (issue 21: two workers take at most 0.6x
the wall time of one): a 3x3 grid with 3 seeds of scenarios/quickstart.toml (machine.ram x
vm.swappiness, 27 runs of about 0.3 s each, CPU-bound), with jobs=1 and jobs=2 alternately,
ROUNDS times each (default 5), in one process. Nothing is written: no out=.

Beside each sweep, the ceiling of this machine at that moment: the same 27 runs with
pagesim.run in one thread, then in two (a run releases the GIL): no processes, no Parquet.

On a shared machine other processes take CPU time too, and a figure means little then: each
measurement prints the CPU time the rest of the machine used meanwhile (/proc/stat's busy
time less this process's and its workers'), and the summary gives the ratio of the medians
over every round, and each round's ratio where both of its measurements were quiet (the rest
of the machine used at most 5 % of the CPU time there was).

    .venv/bin/python bench/sweep-speedup.py [ROUNDS]
"""

from __future__ import annotations

import os
import resource
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Callable

import pagesim

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "quickstart.toml"
GRID = {"machine.ram": ["256MB", "288MB", "320MB"], "vm.swappiness": [0, 60, 100]}
SEEDS = (1, 2, 3)
QUIET = 0.05


def machine_busy_s() -> float:
    """CPU seconds every CPU of the machine has been busy since boot."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (sum(v) - v[3] - v[4]) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU seconds of this process and of its children that ended (the sweep's workers)."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def measure(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall seconds of fn, CPU seconds the rest of the machine used meanwhile)."""
    busy, own, start = machine_busy_s(), own_cpu_s(), time.perf_counter()
    fn()
    wall = time.perf_counter() - start
    others = (machine_busy_s() - busy) - (own_cpu_s() - own)
    return wall, max(others, 0.0)


def sweep(jobs: int) -> None:
    df = pagesim.sweep(SCENARIO, GRID, seeds=list(SEEDS), jobs=jobs, progress=False)
    assert len(df) == 27 and (df["status"] == "ok").all()


def threads(n: int) -> None:
    runs = [({"machine.ram": r, "vm.swappiness": w}, s) for r in GRID["machine.ram"] for w in GRID["vm.swappiness"] for s in SEEDS]
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda a: pagesim.run(SCENARIO, seed=a[1], set=a[0]), runs))


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs")
    kinds = {"sweep": sweep, "threads": threads}
    results = []  # per round: {(kind, n): (wall, others)}
    for k in range(rounds):
        r = {(kind, n): measure(lambda: fn(n)) for kind, fn in kinds.items() for n in (1, 2)}
        results.append(r)
        print(f"round {k + 1}: " + ", ".join(
            f"{kind} {n}: {wall:.2f} s (others {others:.2f} s)" for (kind, n), (wall, others) in r.items()))
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cpus = os.cpu_count() or 1

    def quiet(m: tuple[float, float]) -> bool:
        wall, others = m
        return others <= QUIET * wall * cpus

    for kind in kinds:
        one = statistics.median(r[(kind, 1)][0] for r in results)
        two = statistics.median(r[(kind, 2)][0] for r in results)
        print(f"{kind:<7} every round: median 1: {one:.2f} s, 2: {two:.2f} s, ratio {two / one:.2f}")
        pairs = [(r[(kind, 1)][0], r[(kind, 2)][0]) for r in results if quiet(r[(kind, 1)]) and quiet(r[(kind, 2)])]
        shown = ", ".join(f"{two:.2f} / {one:.2f} s = {two / one:.2f}" for one, two in pairs) or "none"
        print(f"{kind:<7} quiet rounds (2 / 1): {shown}")


if __name__ == "__main__":
    main()
