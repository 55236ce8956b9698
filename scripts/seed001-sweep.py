#!/usr/bin/env python3
"""Seed 001: how far do the estimates and what the seed leaves unknown move its figures?

Runs `pagesim run scenarios/seed-001-swap-scalability/base.toml --json` under linux-4.8 and
linux-4.11 once per point of a one-at-a-time sweep, and prints the kernel part of a swap-in
fault (median) under each, their ratio (the seed: 15 us / 4 us = 3.75), the share of CPU
time spent spinning on locks under 4.8 (the seed: 35 %) and 4.8's three most contended
locks. No point is a proposal for the defaults: the sweep says which unknowns the seed's
figures depend on and how far the plausible range reaches (docs/model.md, "Seed 001").

The points, and why each value is plausible:
  tree=150, tree=300, tree=450   cpu.swap_tree_ns (default 200): the 4.8 source review put
                  a radix-tree insert or delete under tree_lock at 150-450 ns
  map=90          cpu.swap_map_ns (default 60): a swap_map byte a local DRAM miss every time
  lines+50%       cpu.line_*_ns x 1.5 (68 / 173 ns): the transfer of a modified line under
                  home snooping or a busy interconnect, above Molka et al.'s idle figures
  one-socket      the eight threads on one socket's cores (a machine, or a placement, the
                  seed does not exclude): lines move within the L3 only
  reads           the random pass reads instead of writing: swap-ins keep their swap copy
                  and reclaim drops clean swap-cache pages without writing
  ram=2GB         2 GB of RAM and 512 MB a thread (the seed gives only the ratio, 2x)

With --grid, instead: cpu.swap_tree_ns 200, 300, 450, 600 against the work outside the locks
(cpu.fault_ns, swapin_ns, swapout_ns, scan_ns, reclaim_ns) at 0.5, 1 and 1.5 times their
defaults, the two estimates that set how deep the queues at the locks get.

Usage: scripts/seed001-sweep.py [--only NAME,...] [--grid] [PAGESIM]
(default target/release/pagesim). A point takes two runs of a few seconds, run side by side.
"""
import argparse
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from reproduce_cells import chosen_points

SCENARIO = "scenarios/seed-001-swap-scalability/base.toml"
POINTS = {
    "default": [],
    "tree=150": ["cpu.swap_tree_ns=150"],
    "tree=300": ["cpu.swap_tree_ns=300"],
    "tree=450": ["cpu.swap_tree_ns=450"],
    "map=90": ["cpu.swap_map_ns=90"],
    "lines+50%": ["cpu.line_same_socket_ns=68", "cpu.line_cross_socket_ns=173"],
    "one-socket": ["machine.sockets=1"],
    "reads": ['task.0.step.1.op="read"'],
    "ram=2GB": ['machine.ram="2GB"', 'region.ws.size="512MB"', "task.0.step.1.accesses=262144"],
}
PROFILES = ["linux-4.8", "linux-4.11"]
OUTSIDE = {"fault_ns": 500, "swapin_ns": 2500, "swapout_ns": 2000, "scan_ns": 150, "reclaim_ns": 400}


def grid():
    """The --grid points: (name, sets) for tree-lock holds against the work outside."""
    for tree in (200, 300, 450, 600):
        for k in (0.5, 1.0, 1.5):
            sets = [f"cpu.swap_tree_ns={tree}"] + [f"cpu.{n}={int(v * k)}" for n, v in OUTSIDE.items()]
            yield f"tree={tree}, outside x{k}", sets


def run(bin_, profile, sets):
    """One run's report (JSON), or an error message naming the point."""
    cmd = [bin_, "run", SCENARIO, "--json", "--set", f"kernel.profile={profile}"]
    for s in sets:
        cmd += ["--set", s]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"seed001-sweep: {' '.join(cmd)} failed:\n{p.stderr.strip()}")
    return json.loads(p.stdout)


def summary(r):
    locks = r["locks"]
    cpu = max(locks["cpu_ns"], 1)
    top = sorted(locks["classes"], key=lambda c: -c["wait_total_ns"])[:3]
    return {
        "median_us": r["major_fault_latency_kernel"]["median_ns"] / 1000,
        "lock_pct": 100 * locks["wait_ns"] / cpu,
        "top": ", ".join(f"{c['name']} {100 * c['wait_total_ns'] / cpu:.1f}" for c in top),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated point names")
    ap.add_argument("--grid", action="store_true", help="tree-lock holds against the work outside the locks")
    ap.add_argument("pagesim", nargs="?", default="target/release/pagesim")
    a = ap.parse_args()
    if a.grid and a.only:
        sys.exit("seed001-sweep: --grid runs its own points; --only chooses among the others")
    if a.grid:
        points = list(grid())
    else:
        points = [(n, POINTS[n]) for n in chosen_points("seed001-sweep", POINTS, a.only)]
    print("| point | 4.8 swap-in kernel median | 4.11 | ratio (seed 3.75) | 4.8 lock share (seed 35 %) | 4.8 top locks, % of CPU |")
    print("|---|---|---|---|---|---|")
    start = time.time()
    with ThreadPoolExecutor(max_workers=2) as pool:
        for n, sets in points:
            old, new = pool.map(lambda p: summary(run(a.pagesim, p, sets)), PROFILES)
            ratio = old["median_us"] / max(new["median_us"], 1e-9)
            print(
                f"| {n} | {old['median_us']:.1f} us | {new['median_us']:.1f} us | {ratio:.2f} "
                f"| {old['lock_pct']:.1f} % | {old['top']} |",
                flush=True,
            )
    print(f"({len(points)} points in {time.time() - start:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
