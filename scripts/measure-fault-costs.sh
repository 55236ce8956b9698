#!/usr/bin/env bash
# Measures the per-page costs of anonymous page faults on this machine's kernel (first-touch
# write, zero-page read, a write that hits, copy-on-write after fork, munmap): what pagesim's
# CPU cost table (docs/model.md, "CPU costs") charges as access_ns, fault_ns, zero_page_ns,
# unmap_page_ns and the copy of a CoW fault. The measuring program is
# scripts/measure-fault-costs.c; it runs pinned to CPU 0, first in the root memory cgroup,
# then in a memory cgroup of its own with a limit above its needs (cgroup v1, as validate
# uses: the charge to a memcg is then part of every fault). The cgroup is removed on exit.
#
# Root only for the memcg part (without root, only the first run). Usage:
#   scripts/measure-fault-costs.sh [MIB] [ROUNDS]   (default 256 MiB, 9 rounds)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
MIB=${1:-256}
ROUNDS=${2:-9}
BIN=$ROOT/target/measure-fault-costs
mkdir -p "$ROOT/target"
cc -O2 -Wall -Wextra -o "$BIN" "$ROOT/scripts/measure-fault-costs.c"
CG=""
cleanup() {
    if [ -n "$CG" ] && [ -d "$CG" ]; then
        # Move ourselves out first; the measuring process has exited.
        echo $$ > /sys/fs/cgroup/memory/cgroup.procs 2>/dev/null || true
        rmdir "$CG" 2>/dev/null || true
    fi
}
trap cleanup EXIT INT TERM
echo "== $(uname -r), $(nproc) CPUs, root memory cgroup"
taskset -c 0 "$BIN" "$MIB" "$ROUNDS"
if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/memory ]; then
    CG=/sys/fs/cgroup/memory/pagesim-fault-costs.$$
    mkdir "$CG"
    echo $(((2 * MIB + 64) << 20)) > "$CG/memory.limit_in_bytes"
    echo "== in a memory cgroup (v1) with a $((2 * MIB + 64)) MiB limit"
    # A subshell joins the cgroup and execs the program: only it is charged there.
    (echo "$BASHPID" > "$CG/cgroup.procs" && exec taskset -c 0 "$BIN" "$MIB" "$ROUNDS")
fi
