#!/usr/bin/env bash
# Measures, on this machine's kernel, what zram does with a 4 KiB page for each of its
# compressors: the compressed size (mm_stat compr_data_size / pages), the pool pages
# (mem_used_total), and the CPU cost of a write and a read of one page, by timing 4 KiB
# O_DIRECT writes and reads of three kinds of content against zero-filled pages (which zram
# stores as "same" pages without compressing): the difference is the cost of compressing
# (resp. decompressing) plus the zsmalloc copy.
#
#   word:   one non-zero 8-byte word at the start of each page, the rest zero: what pagesim's
#           workloads and pagesim-load store (docs/model.md, "Page content").
#   binary: consecutive 4 KiB pieces of this machine's shared libraries, a stand-in for
#           program memory (compresses about 2-3x).
#
# Root only. Uses a zram device of its own (hot_add), never zram0, and removes it on exit.
# Usage: scripts/measure-compressors.sh [PAGES]   (default 65536 = 256 MiB per content)
set -euo pipefail
PAGES=${1:-65536}
[ "$(id -u)" = 0 ] || { echo "root only" >&2; exit 2; }
CTL=/sys/class/zram-control
[ -w $CTL/hot_remove ] || { echo "no zram-control" >&2; exit 2; }
TMP=$(mktemp -d /dev/shm/zmeasure.XXXXXX)
DEV=""
cleanup() {
    if [ -n "$DEV" ]; then
        echo 1 > /sys/block/zram$DEV/reset 2>/dev/null || true
        echo "$DEV" > $CTL/hot_remove 2>/dev/null || true
    fi
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM
python3 - "$TMP" "$PAGES" <<'PY'
import os, struct, sys
d, n = sys.argv[1], int(sys.argv[2])
with open(f"{d}/zero", "wb") as f:
    f.write(bytes(4096 * n))
with open(f"{d}/word", "wb") as f:
    z = bytes(4088)
    for i in range(n):
        f.write(struct.pack("<Q", (i * 2654435761) & 0xFFFFFFFFFFFF | 1) + z)
libdir = "/usr/lib/x86_64-linux-gnu"
out, need = open(f"{d}/binary", "wb"), 4096 * n
for name in sorted(os.listdir(libdir)):
    p = os.path.join(libdir, name)
    if not name.endswith((".so", ".a")) and ".so." not in name or not os.path.isfile(p) or os.path.islink(p):
        continue
    b = open(p, "rb").read(need)
    b = b[: len(b) // 4096 * 4096]
    out.write(b)
    need -= len(b)
    if need == 0:
        break
out.close()
assert need == 0, "not enough library data"
PY
DEV=$(cat $CTL/hot_add)
Z=/sys/block/zram$DEV
ms() { python3 -c 'import time; print(time.perf_counter_ns())'; }
run() { # dd args...; prints ns per page (best of 5)
    local best=
    for _ in 1 2 3 4 5; do
        local t0 t1
        t0=$(date +%s%N); dd "$@" bs=4096 count="$PAGES" status=none; t1=$(date +%s%N)
        local v=$(( (t1 - t0) / PAGES ))
        if [ -z "$best" ] || [ "$v" -lt "$best" ]; then best=$v; fi
    done
    echo "$best"
}
printf "%-8s %-7s %10s %10s %10s %10s\n" algo content bytes/page pool_pages write_ns read_ns
for algo in $(tr -d '[]' < $Z/comp_algorithm); do
    declare -A W R
    for content in zero word binary; do
        echo 1 > $Z/reset
        echo "$algo" > $Z/comp_algorithm
        echo $((PAGES * 4096)) > $Z/disksize
        W[$content]=$(run if="$TMP/$content" of=/dev/zram$DEV oflag=direct conv=notrunc)
        R[$content]=$(run if=/dev/zram$DEV of=/dev/null iflag=direct)
        read -r orig compr used _ < $Z/mm_stat
        printf "%-8s %-7s %10d %10d %10d %10d\n" "$algo" "$content" $((compr / PAGES)) $((used / 4096)) \
            "${W[$content]}" "${R[$content]}"
    done
    printf "%-8s %-7s compress ~%d ns/page (word), ~%d ns/page (binary); decompress ~%d (word), ~%d (binary)\n" \
        "$algo" delta $((W[word] - W[zero])) $((W[binary] - W[zero])) $((R[word] - R[zero])) $((R[binary] - R[zero]))
    unset W R
done
