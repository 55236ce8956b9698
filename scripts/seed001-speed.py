#!/usr/bin/env python3
"""Seed 001's speed claim: a run with 32 threads costs at most 2x the wall time per simulated
access of a 1-thread run (issue 19).

Runs the scaling table's 1-thread and 32-thread rows (the same load: 2 GB written in order,
then 1 M random writes in all) of `scenarios/seed-001-swap-scalability/base.toml` under
linux-4.8, linux-4.11 and linux-6.18, each binary given `--repeats` times, the binaries
interleaved so that they share the machine's state, and prints each one's best CPU time
(user + system of the child) and the 32/1 ratio. A benchmark: run it and record the figures
(docs/model.md, "Seed 001"), not a test.

Usage: scripts/seed001-speed.py [--repeats N] [--profiles P,...] [PAGESIM ...]
(default target/release/pagesim; give two binaries to compare a change in one run).
"""
import argparse
import os
import resource
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = os.path.join(ROOT, "scenarios/seed-001-swap-scalability/base.toml")
ROWS = {
    1: ["task.0.count=1", "region.ws.size=2GB", "task.0.step.1.accesses=1048576"],
    32: ["task.0.count=32", "region.ws.size=64MB", "task.0.step.1.accesses=32768"],
}


def cpu_seconds(binary, profile, threads):
    argv = [binary, "run", SCENARIO, "--quiet", "--json", "--set", f"kernel.profile={profile}"]
    for s in ROWS[threads]:
        argv += ["--set", s]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"seed001-speed: {' '.join(argv)} failed: {r.stderr.strip()}")
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="runs of each cell (the best counts)")
    p.add_argument("--profiles", default="linux-4.8,linux-4.11,linux-6.18")
    p.add_argument("binaries", nargs="*", default=[os.path.join(ROOT, "target/release/pagesim")])
    a = p.parse_args()
    if a.repeats < 1:
        p.error("--repeats must be at least 1")
    for b in a.binaries:
        if not os.access(b, os.X_OK):
            p.error(f"{b}: not an executable (build it: cargo build --release -p pagesim-cli)")
    for profile in a.profiles.split(","):
        best = {}
        for _ in range(a.repeats):
            for b in a.binaries:
                for n in (1, 32):
                    t = cpu_seconds(b, profile, n)
                    best[b, n] = min(best.get((b, n), t), t)
        for b in a.binaries:
            one, many = best[b, 1], best[b, 32]
            print(f"{profile:11} {b}: 1 thread {one:.2f} s, 32 threads {many:.2f} s, ratio {many / one:.2f}", flush=True)


if __name__ == "__main__":
    main()
