#!/usr/bin/env bash
# pagesim's cache-only LRU against libCacheSim's LRU (issue 20), on one core each, in one run:
# a zipf(1.0) trace of 4 KiB objects in libCacheSim's oracleGeneral format (10 M requests over
# 1 M objects by default), the cache at 1 %, 10 % and 50 % of the working set (the distinct
# objects' bytes). Prints each side's miss ratio and time, and pagesim's speed-up; then the
# whole kernel model on the same trace (`pagesim cache --policy linux-6.6`: the page cache,
# its LRU lists and workingset detection in a memcg of the size) with its time against
# libCacheSim's LRU.
#
#   bench/vs-libcachesim.sh [REQUESTS] [OBJECTS] [REPEATS]
#
# Each size is timed REPEATS times (3 by default), the tools taking turns, and each time is
# the median of its repeats: this VM's speed moves by up to 2x between minutes, for both
# tools, and a single pass compares one tool's slow minute with the other's fast one.
#
# PAGESIM=BINARY times that CLI instead of target/release/pagesim. If scripts/build-pgo.sh has
# built target/pgo/release/pagesim (the profile-guided build, trained on other workloads), the
# whole model is timed with it too, in the same run.
#
# libCacheSim's Python package goes into a benchmark venv (target/bench-venv, or
# $PAGESIM_BENCH_VENV), not into the project's: the test suite never needs it. Needs the release CLI (cargo build --release -p
# pagesim-cli) and the package index (pip install libcachesim).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REQUESTS=${1:-10000000}
OBJECTS=${2:-1000000}
REPEATS=${3:-3}
case "$REPEATS" in '' | *[!0-9]* | 0) echo "vs-libcachesim: REPEATS must be a positive number, got $REPEATS" >&2; exit 2 ;; esac
VENV=${PAGESIM_BENCH_VENV:-$ROOT/target/bench-venv}
PAGESIM=${PAGESIM:-$ROOT/target/release/pagesim}
[ -x "$PAGESIM" ] || { echo "vs-libcachesim: $PAGESIM not found: build the CLI first: cargo build --release -p pagesim-cli" >&2; exit 2; }
PGO=$ROOT/target/pgo/release/pagesim
[ -x "$PGO" ] && [ "$PGO" != "$PAGESIM" ] || PGO="" 
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import libcachesim, numpy' 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q libcachesim numpy
fi
TRACE=$ROOT/target/bench-zipf-$REQUESTS-$OBJECTS.oracleGeneral.bin
exec "$VENV/bin/python" - "$PAGESIM" "$TRACE" "$REQUESTS" "$OBJECTS" "$PGO" "$REPEATS" <<'PY'
import json, os, statistics, subprocess, sys, time
import numpy as np
import libcachesim as lcs

pagesim, trace, n, objects, pgo = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
repeats = int(sys.argv[6])
if not os.path.exists(trace):
    # zipf(1.0) over `objects` ids by inverse CDF, seeded; records <IQIq: time, id, size, next.
    rng = np.random.default_rng(1)
    cdf = np.cumsum(1.0 / np.arange(1, objects + 1))
    cdf /= cdf[-1]
    ids = np.searchsorted(cdf, rng.random(n)).astype(np.uint64)
    rec = np.zeros(n, dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])
    rec["t"] = np.arange(n) // 1000
    rec["id"] = ids
    rec["size"] = 4096
    rec["next"] = -1
    tmp = trace + ".tmp"
    rec.tofile(tmp)
    os.replace(tmp, trace)
distinct = len(np.unique(np.fromfile(trace, dtype=[("t", "<u4"), ("id", "<u8"), ("size", "<u4"), ("next", "<i8")])["id"]))
print(f"trace {trace}: {n} requests, {distinct} distinct 4 KiB objects (zipf 1.0)")
print(f"pagesim: {pagesim}" + (f"; profile-guided build: {pgo}" if pgo else "")
      + f"; times: the median of {repeats} turns")


def timed(binary, size, *policy):
    """pagesim cache's miss ratio and wall time at `size` bytes."""
    t0 = time.perf_counter()
    out = subprocess.run([binary, "cache", trace, "--ram", str(size), *policy, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)["sizes"][0]["miss_ratio"], time.perf_counter() - t0


head = (f"{'cache':>8} {'size':>10} {'libCacheSim LRU':>16} {'time':>8} {'pagesim cache':>14} {'time':>8} {'speed-up':>9}"
        f" {'linux-6.6 model':>16} {'time':>8} {'vs LRU':>7}")
print(head + (f" {'pgo build':>9} {'vs LRU':>7}" if pgo else ""))


def lcs_lru(size):
    """libCacheSim's LRU miss ratio and time at `size` bytes."""
    reader = lcs.TraceReader(trace=trace, trace_type=lcs.TraceType.ORACLE_GENERAL_TRACE)
    cache = lcs.LRU(cache_size=size)
    t0 = time.perf_counter()
    mr, _ = cache.process_trace(reader)
    return mr, time.perf_counter() - t0


for pct in (1, 10, 50):
    size = distinct * 4096 * pct // 100
    runs = [("lcs", lambda: lcs_lru(size)), ("lru", lambda: timed(pagesim, size)),
            ("model", lambda: timed(pagesim, size, "--policy", "linux-6.6"))]
    if pgo:
        runs.append(("pgo", lambda: timed(pgo, size, "--policy", "linux-6.6")))
    mr, times = {}, {name: [] for name, _ in runs}
    for _ in range(repeats):
        for name, run in runs:
            r, t = run()
            if mr.setdefault(name, r) != r:
                sys.exit(f"{name}: miss ratio {r} in one turn, {mr[name]} in another")
            times[name].append(t)
    t = {name: statistics.median(ts) for name, ts in times.items()}
    row = (f"{pct:>7}% {size:>10} {mr['lcs']:>16.6f} {t['lcs']:>7.2f}s {mr['lru']:>14.6f} {t['lru']:>7.2f}s"
           f" {t['lcs'] / t['lru']:>8.2f}x {mr['model']:>16.6f} {t['model']:>7.2f}s {t['lcs'] / t['model']:>6.2f}x")
    if pgo:
        if mr["pgo"] != mr["model"]:
            sys.exit(f"the profile-guided build's miss ratio {mr['pgo']} is not the release build's {mr['model']}")
        row += f" {t['pgo']:>8.2f}s {t['lcs'] / t['pgo']:>6.2f}x"
    print(row, flush=True)
PY
