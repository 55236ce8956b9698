#!/usr/bin/env python3
"""Markdown tables of a `pagesim validate --json FILE` run, as docs/validation.md shows them.

    python3 scripts/validation-tables.py FILE.json [LATER.json ...]

With several files (a whole-suite run, then re-runs of some scenarios), a scenario's entry in
a later file replaces its entry in an earlier one, and the acceptance statistic is counted
again over the merged rows.

Prints: the counted pairs (kernel median (min-max), pagesim, error, within 15 %), the slow-fault
latency table, the elapsed times, and the elapsed-time ratios page-cluster 0 / 3 of the pairs of
scenarios that differ only in vm.page-cluster. Standard library only.
"""
import json
import statistics
import sys

# (page-cluster 0 scenario, page-cluster 3 scenario): the elapsed-time ratio check.
PC_PAIRS = [
    ("shmem-seq-pc0", "shmem-seq-pc3"),
    ("shmem-seq-pc0-256", "shmem-seq-pc3-256"),
    ("shmem-random-pc0", "shmem-random-pc3"),
    ("shmem-random-pc0-256", "shmem-random-pc3-256"),
    ("anon-seq-ro-50-pc0", "anon-seq-ro-50"),
    ("anon-random-ro-50-pc0", "anon-random-ro-50"),
]


def main(paths):
    by_name = {}
    for path in paths:
        d = json.load(open(path))
        print(f"{path}: remote wakeup {d.get('host_remote_wakeup_ns')} ns, disk {d.get('host_disk_timing', {})}")
        for s in d["scenarios"]:
            if "comparison" in s:
                by_name[s["scenario"]] = s
    scenarios = sorted(by_name.values(), key=lambda s: s["scenario"])
    rows = [r for s in scenarios for r in s["comparison"] if r["counted"]]
    within = sum(r["within"] for r in rows)
    print(f"acceptance: {within} of {len(rows)} counted pairs within 15 %: {100 * within / max(len(rows), 1):.1f} %\n")
    print("| scenario | counter | kernel median (min-max) | pagesim | error |")
    print("|---|---|---|---|---|")
    for s in scenarios:
        for r in s["comparison"]:
            if not r["counted"]:
                continue
            mark = "✓" if r["within"] else "✗"
            print(
                f"| {s['scenario']} | {r['counter']} | {r['kernel_median']:.0f} ({r['kernel_min']}-{r['kernel_max']}) "
                f"| {r['pagesim']} | {100 * r['rel_error']:+.1f}% {mark} |"
            )
    print("\n| scenario | slow faults, kernel | pagesim | median µs, kernel | pagesim | p99 µs, kernel | pagesim |")
    print("|---|---|---|---|---|---|---|")
    for s in scenarios:
        rows = {r["what"].strip(): r for r in s.get("fault_latency", [])}
        if not rows:
            continue
        c, m, p = (rows.get(k) for k in ("faults >= 10 us (count)", "their median (us)", "their p99 (us)"))
        print(
            f"| {s['scenario']} | {c['kernel_median']:.0f} | {c['pagesim']:.0f} | {m['kernel_median']:.0f} "
            f"| {m['pagesim']:.0f} | {p['kernel_median']:.0f} | {p['pagesim']:.0f} |"
        )
    elapsed = {}
    for s in scenarios:
        k = statistics.median(r["load"]["wall_ns"] for r in s["host"]["runs"]) / 1e9
        elapsed[s["scenario"]] = (k, s["pagesim"]["elapsed_ns"] / 1e9)
    print("\n| scenario | elapsed s, kernel | pagesim | error |")
    print("|---|---|---|---|")
    for name, (k, p) in elapsed.items():
        print(f"| {name} | {k:.2f} | {p:.2f} | {100 * (p / k - 1):+.0f}% |")
    print("\n| pc0 / pc3 | kernel | pagesim | error |")
    print("|---|---|---|---|")
    for a0, a3 in PC_PAIRS:
        if a0 in elapsed and a3 in elapsed:
            (k0, p0), (k3, p3) = elapsed[a0], elapsed[a3]
            print(
                f"| {a0.replace('-pc0', '')} | {k0:.2f} / {k3:.2f} s = {k0 / k3:.2f} "
                f"| {p0:.2f} / {p3:.2f} s = {p0 / p3:.2f} | {100 * ((p0 / p3) / (k0 / k3) - 1):+.0f} % |"
            )


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: validation-tables.py FILE.json [LATER.json ...] (from pagesim validate --json)")
    main(sys.argv[1:])
