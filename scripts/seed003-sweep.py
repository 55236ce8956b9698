#!/usr/bin/env python3
"""Seed 003: how the table's orderings depend on what the seed leaves unknown.

Runs `pagesim reproduce scenarios/seed-003-writeback/1-sysbench --json` (the SYSBENCH table) over a grid of the machine and load parameters the
seed does not give (memory, number of backends, CPU time per shared-buffer access) and prints,
per grid point, the rows the acceptance is about and whether each of the seed's relations
holds. Usage: scripts/seed003-sweep.py [PAGESIM]  (default target/release/pagesim).
"""
import itertools
import sys

from reproduce_cells import reproduce_cells

BIN = sys.argv[1] if len(sys.argv) > 1 else "target/release/pagesim"
GRID = {
    "machine.ram": ["768MB", "1GB", "1536MB"],
    "task.0.count": [2, 4, 8],
    "task.0.step.1.think": ['"5us"', '"20us"', '"80us"'],
}
ROWS = {
    "dwf": "Direct reclaim write file async I/O",
    "kwf": "Kswapd reclaim write file async I/O",
    "kwa": "Kswapd reclaim write anon async I/O",
    "dwa": "Direct reclaim write anon async I/O",
    "stall": "Time stalled direct reclaim (ms)",
    "dscan": "Direct reclaim pages scanned",
    "kscan": "Kswapd pages scanned",
}
COLS = ["traceonly", "nodirect", "flusholdest", "flushforward"]


def run(sets):
    cells = reproduce_cells(BIN, "scenarios/seed-003-writeback/1-sysbench", sets)
    return {(c["row"], c["column"]): c["value"] for c in cells}


def main():
    keys = list(GRID)
    print("ram count think | kswapd share of scans | dwf(trace) kwf t/n/o/f | kwa t/f | stall t/n/o/f | relations")
    held = {}
    for combo in itertools.product(*(GRID[k] for k in keys)):
        sets = [f"{k}={v}" for k, v in zip(keys, combo)]
        v = run(sets)
        g = {r: [v[(ROWS[r], c)] for c in COLS] for r in ROWS}
        share = g["kscan"][0] / max(1.0, g["kscan"][0] + g["dscan"][0])
        rel = {
            "nodirect no direct file writes": all(x == 0 for x in g["dwf"][1:]),
            "flushforward kswapd file writes <= 0.4 x traceonly": g["kwf"][3] <= 0.4 * g["kwf"][0],
            "flushforward anon writes within 25 %": abs(g["kwa"][3] - g["kwa"][0]) <= 0.25 * max(1.0, g["kwa"][0]),
            "flushforward all anon writes within 25 %": abs(g["kwa"][3] + g["dwa"][3] - g["kwa"][0] - g["dwa"][0])
            <= 0.25 * max(1.0, g["kwa"][0] + g["dwa"][0]),
            "stall flushforward < traceonly": g["stall"][3] < g["stall"][0],
            "kswapd file writes: traceonly > flusholdest > nodirect > flushforward": g["kwf"][0] > g["kwf"][2] > g["kwf"][1] > g["kwf"][3],
            "all reclaim file writes (direct + kswapd): traceonly > flusholdest > nodirect > flushforward": (
                lambda t: t[0] > t[2] > t[1] > t[3]
            )([g["dwf"][i] + g["kwf"][i] for i in range(4)]),
            "stall: traceonly > nodirect > flusholdest > flushforward": g["stall"][0] > g["stall"][1] > g["stall"][2] > g["stall"][3],
        }
        # Only points where reclaim met dirty pages say anything about the relations.
        active = g["dwf"][0] + g["kwf"][0] > 1000
        for k, ok in rel.items():
            if active:
                held.setdefault(k, []).append(ok)
        fmt = lambda xs: "/".join(f"{x:.0f}" for x in xs)
        marks = "".join("Y" if ok else "." for ok in rel.values()) if active else "(no reclaim writes)"
        print(f"{combo[0]:>6} {combo[1]} {combo[2]:>6} | {share:5.2f} | {g['dwf'][0]:.0f} {fmt(g['kwf'])} | "
              f"{g['kwa'][0]:.0f}/{g['kwa'][3]:.0f} | {fmt(g['stall'])} | {marks}", flush=True)
    print()
    print("points where reclaim wrote file pages:")
    for k, oks in held.items():
        print(f"{sum(oks):2d} of {len(oks)}: {k}")


if __name__ == "__main__":
    main()
