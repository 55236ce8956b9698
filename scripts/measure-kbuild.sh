#!/usr/bin/env bash
# Measures a real Linux kernel build on this machine, for the parameters of pagesim's
# simulated "kernel build" workload: per compiler job CPU time, wall time, max RSS, object and
# source size, the headers each job reads; the compiler's text vs anon heap (from
# /proc/PID/smaps of cc1); the link steps; the whole build's wall and CPU time at -j2.
#
# The tree is /usr/src/linux-source-6.12.tar.xz, configured with `make ARCH=x86_64 tinyconfig`
# (plain `make tinyconfig` on x86 gives a 32-bit i386 kernel; ARCH=x86_64 gives a 64-bit one
# with ~480 kernel C units, enough that no option is added). Three builds, each from
# `make mrproper` + tinyconfig, nothing else changed:
#   A  plain `make -j2` under /usr/bin/time -v: the build's wall and CPU time;
#   B  `make -j2 CC="kbw cc gcc" HOSTCC="kbw hostcc gcc" LD="kbw ld ld" HOSTLD="kbw hostld ld"`:
#      kbw (a small python3 wrapper) spawns the tool and takes wait4()'s rusage (user, sys,
#      max RSS, µs resolution) and the wall time, and the size of the -o output;
#   C  plain `make -j2` under `strace -f -y -e trace=execve,openat,open` (files opened by each
#      cc1 and ld, with the resolved paths), with a sampler reading /proc/PID/smaps of every
#      cc1 process every 50 ms (cc1 text mapping size and Rss vs anonymous memory).
# Then scripts/measure-kbuild.py reduces the raw data into OUT (measurements/kbuild/):
# jobs.csv, links.csv, headers.csv, job_headers.txt.xz, cc1_smaps.csv, summary.json, README.md.
#
# Other load spoils the times: before each build the script waits for an idle machine
# (QUIET_WAIT s at most, default 900), and a timing build (A, B) during which anything else used
# more than OTHER_MAX_PCT (default 5) % of the build's CPU is run again (BUILD_TRIES in all,
# default 3).
#
# Root only (apt-get). Installs flex, bison, time, strace, bc, xz-utils, libelf-dev (objtool
# needs it) if missing. Needs ~3 GB in /tmp and takes ~6 minutes on 2 cores.
# Usage: scripts/measure-kbuild.sh [--keep] [--out DIR] [WORKDIR]
#   WORKDIR  a directory under /tmp (default: a new mktemp -d /tmp/kbuild-measure.XXXXXX);
#            what the script created is removed at the end unless --keep.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
KEEP=0
OUT="$REPO/measurements/kbuild"
WORK=""
while [ $# -gt 0 ]; do
    case "$1" in
        --keep) KEEP=1 ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
        *) WORK=$1 ;;
    esac
    shift
done
TARBALL=/usr/src/linux-source-6.12.tar.xz
JOBS=2
ARCHV=x86_64
[ "$(id -u)" = 0 ] || { echo "root only (apt-get)" >&2; exit 2; }
[ -r "$TARBALL" ] || { echo "missing $TARBALL" >&2; exit 2; }

# --- (a) tools -------------------------------------------------------------------------------
need=()
for pair in flex:flex bison:bison /usr/bin/time:time strace:strace bc:bc xz:xz-utils \
            make:make gcc:gcc python3:python3 /usr/include/libelf.h:libelf-dev \
            /usr/include/gelf.h:libelf-dev; do
    what=${pair%%:*} pkg=${pair#*:}
    if [[ $what == /* ]]; then [ -e "$what" ] && continue; else command -v "$what" >/dev/null && continue; fi
    need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
    mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u)
    echo "installing: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends "${need[@]}" >/dev/null ||
        { apt-get update -qq && apt-get install -y --no-install-recommends "${need[@]}" >/dev/null; }
fi

# --- work dir ---------------------------------------------------------------------------------
CREATED_WORK=0
if [ -z "$WORK" ]; then
    WORK=$(mktemp -d /tmp/kbuild-measure.XXXXXX); CREATED_WORK=1
else
    case "$(realpath -m "$WORK")" in /tmp/*) ;; *) echo "WORKDIR must be under /tmp" >&2; exit 2 ;; esac
    if [ ! -d "$WORK" ]; then mkdir -p "$WORK"; CREATED_WORK=1; fi
fi
WORK=$(cd "$WORK" && pwd)
SRC="$WORK/linux-source-6.12"
RAW="$WORK/raw"
BIN="$WORK/bin"
SAMPLER_PID=""
cleanup() {
    if [ -n "$SAMPLER_PID" ] && kill -0 "$SAMPLER_PID" 2>/dev/null; then
        kill "$SAMPLER_PID" 2>/dev/null || true; wait "$SAMPLER_PID" 2>/dev/null || true
    fi
    if [ "$KEEP" = 1 ]; then echo "kept $WORK"; return; fi
    if [ "$CREATED_WORK" = 1 ]; then rm -rf "$WORK"; else rm -rf "$SRC" "$RAW" "$BIN"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
rm -rf "$SRC" "$RAW" "$BIN"
mkdir -p "$RAW" "$BIN" "$OUT"

# kbw TAG PROG ARGS...: runs PROG ARGS, writes one record per run into $KBW_DIR (if set).
cat > "$BIN/kbw" <<'PY'
#!/usr/bin/python3 -S
import os, sys, time
tag, cmd = sys.argv[1], sys.argv[2:]
t0 = time.monotonic_ns()
pid = os.posix_spawnp(cmd[0], cmd, os.environ)
while True:
    try:
        _, st, ru = os.wait4(pid, 0)
        break
    except InterruptedError:
        continue
t1 = time.monotonic_ns()
rc = os.waitstatus_to_exitcode(st)
d = os.environ.get("KBW_DIR")
if d:
    out = None
    for i, a in enumerate(cmd):
        if a == "-o" and i + 1 < len(cmd):
            out = cmd[i + 1]
        elif a.startswith("-o") and len(a) > 2 and not a.startswith("-o="):
            out = a[2:]
    ob = -1
    if out:
        try:
            ob = os.stat(out).st_size
        except OSError:
            pass
    import json
    rec = dict(tag=tag, argv=cmd, cwd=os.getcwd(), rc=rc, t0_ns=t0, wall_s=(t1 - t0) / 1e9,
               user_s=ru.ru_utime, sys_s=ru.ru_stime, maxrss_kb=ru.ru_maxrss,
               minflt=ru.ru_minflt, majflt=ru.ru_majflt, out=out, out_bytes=ob)
    with open(f"{d}/{t0}-{os.getpid()}.json", "w") as f:
        json.dump(rec, f)
sys.exit(rc if rc >= 0 else 128 - rc)
PY
chmod +x "$BIN/kbw"

# sampler OUTFILE INTERVAL_S: every INTERVAL reads /proc/PID/smaps of each cc1; on SIGTERM
# writes one row per cc1 process (its peak-Rss sample, and max text Rss seen).
cat > "$BIN/sampler" <<'PY'
#!/usr/bin/python3
import os, signal, sys, time
out, interval = sys.argv[1], float(sys.argv[2])
stop = False
def on_term(*_):
    global stop
    stop = True
signal.signal(signal.SIGTERM, on_term)
CC1 = os.path.realpath(sys.argv[3])
FIELDS = ("rss_kb anon_kb heap_kb file_kb cc1_text_size_kb cc1_text_rss_kb cc1_text_pss_kb "
          "cc1_other_file_rss_kb lib_text_rss_kb lib_other_rss_kb private_dirty_kb "
          "shared_clean_kb private_clean_kb vsz_kb n_maps").split()
def smaps(pid):
    s = dict.fromkeys(FIELDS, 0)
    path = perms = None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            k = line.partition(":")[0]
            parts = line.split()
            if len(parts) >= 5 and "-" in parts[0] and ":" in parts[3]:
                perms, path = parts[1], (parts[5] if len(parts) > 5 else "")
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                s["n_maps"] += 1
                s["vsz_kb"] += (hi - lo) // 1024
                if path == CC1 and "x" in perms:
                    s["cc1_text_size_kb"] += (hi - lo) // 1024
                continue
            if len(parts) < 2 or not parts[1].isdigit():
                continue
            n = int(parts[1])
            if k == "Rss":
                s["rss_kb"] += n
                if path == CC1:
                    s["cc1_text_rss_kb" if "x" in perms else "cc1_other_file_rss_kb"] += n
                elif path.startswith("/"):
                    s["lib_text_rss_kb" if "x" in perms else "lib_other_rss_kb"] += n
                if path == "[heap]":
                    s["heap_kb"] += n
            elif k == "Pss" and path == CC1 and "x" in perms:
                s["cc1_text_pss_kb"] += n
            elif k == "Anonymous":
                s["anon_kb"] += n
            elif k == "Private_Dirty":
                s["private_dirty_kb"] += n
            elif k == "Shared_Clean":
                s["shared_clean_kb"] += n
            elif k == "Private_Clean":
                s["private_clean_kb"] += n
    s["file_kb"] = s["rss_kb"] - s["anon_kb"]
    return s
procs = {}
while not stop:
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() != "cc1":
                    continue
            with open(f"/proc/{p}/stat") as f:
                start = f.read().rsplit(")", 1)[1].split()[19]
            key = (p, start)
            s = smaps(p)
            if s["rss_kb"] == 0:
                continue
            r = procs.get(key)
            if r is None:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    argv = f.read().decode(errors="replace").split("\0")
                r = procs[key] = dict(pid=p, cwd=os.readlink(f"/proc/{p}/cwd"), argv=argv,
                                      n=0, peak=s, max_text_rss_kb=0)
            r["n"] += 1
            if s["rss_kb"] >= r["peak"]["rss_kb"]:
                r["peak"] = s
            r["max_text_rss_kb"] = max(r["max_text_rss_kb"], s["cc1_text_rss_kb"])
        except (OSError, IndexError, ValueError):
            continue
    time.sleep(interval)
import json
with open(out, "w") as f:
    for r in procs.values():
        f.write(json.dumps(r) + "\n")
PY
chmod +x "$BIN/sampler"

# --- (b) source ------------------------------------------------------------------------------
echo "extracting $TARBALL into $WORK"
tar -C "$WORK" -xJf "$TARBALL"
[ -d "$SRC" ] || { echo "no $SRC after extraction" >&2; exit 1; }
cd "$SRC"
export LC_ALL=C
export KBUILD_BUILD_TIMESTAMP="2024-01-01" KBUILD_BUILD_USER=pagesim KBUILD_BUILD_HOST=measure

{
    echo "date=$(date -u +%FT%TZ)"
    echo "uname=$(uname -r)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "nproc=$(nproc)"
    echo "mem_total_kb=$(awk '/MemTotal/{print $2}' /proc/meminfo)"
    echo "gcc=$(gcc --version | head -1)"
    echo "ld=$(ld --version | head -1)"
    echo "make=$(make --version | head -1)"
    echo "strace=$(strace -V | head -1)"
    echo "cc1=$(gcc -print-prog-name=cc1)"
    echo "src=$SRC"
    echo "tarball=$TARBALL"
    echo "arch=$ARCHV"
    echo "jobs=$JOBS"
    echo "clk_tck=$(getconf CLK_TCK)"
} > "$RAW/meta.txt"

busy_ticks() { awk '/^cpu /{print $2+$3+$4+$7+$8+$9}' /proc/stat; }   # user nice system irq softirq steal
# Waits (at most QUIET_WAIT s, default 900) until the machine is idle: busy < 10% of one CPU
# over 5 s. Other sessions may be running cargo builds; the build's figures are only as good
# as the machine is quiet. How long it waited is kept in meta.txt.
wait_quiet() { # NAME
    local t0=$SECONDS b0 b1
    while :; do
        b0=$(busy_ticks); sleep 5; b1=$(busy_ticks)
        [ $(( b1 - b0 )) -lt $(( $(getconf CLK_TCK) * 5 / 10 )) ] && break
        [ $(( SECONDS - t0 )) -ge "${QUIET_WAIT:-900}" ] && { echo "machine not quiet, going on" >&2; break; }
    done
    echo "quiet_wait_s_$1=$(( SECONDS - t0 ))" >> "$RAW/meta.txt"
}
# note_load NAME start|end: load average, top CPU users, and busy CPU ticks of the whole machine
# (the reducer subtracts the build's own CPU time: what is left is other load during the build).
note_load() {
    echo "loadavg_$1_$2=$(cut -d' ' -f1-3 /proc/loadavg)" >> "$RAW/meta.txt"
    echo "busy_ticks_$1_$2=$(busy_ticks)" >> "$RAW/meta.txt"
    [ "$2" = start ] && ps -eo pcpu,comm --sort=-pcpu --no-headers | head -5 | tr -s ' ' |
        sed 's/^ //' | paste -sd';' | sed "s/^/topcpu_$1=/" >> "$RAW/meta.txt"
    return 0
}
now_ns() { python3 -c 'import time; print(time.monotonic_ns())'; }
configure() { # extra make args...
    make -s mrproper
    make -s ARCH=$ARCHV "$@" tinyconfig > /dev/null
}

# --- (c) configure and count ------------------------------------------------------------------
configure
cp .config "$RAW/config"
echo "config: ARCH=$ARCHV tinyconfig ($(grep -c '=y$' .config) options =y)"

# --- (d) builds -------------------------------------------------------------------------------
W="$BIN/kbw"
WRAPVARS=(CC="$W cc gcc" HOSTCC="$W hostcc gcc" LD="$W ld ld" HOSTLD="$W hostld ld")
build_once() { # NAME: one attempt of build A, B or C, from mrproper + tinyconfig
    local n=$1
    if [ "$n" = B ]; then
        rm -rf "$RAW/wrapB" "$RAW/wrapcfg"; mkdir -p "$RAW/wrapB" "$RAW/wrapcfg"
        KBW_DIR="$RAW/wrapcfg" configure "${WRAPVARS[@]}"
        rm -rf "$RAW/wrapcfg"
    else
        configure
    fi
    cmp -s .config "$RAW/config" || echo "warning: the .config of build $n differs" >&2
    wait_quiet "$n"
    note_load "$n" start
    case $n in
    A)  /usr/bin/time -v -o "$RAW/timeA.txt" make ARCH=$ARCHV -j$JOBS > "$RAW/buildA.log" 2>&1 ;;
    B)  echo "b_start_ns=$(now_ns)" >> "$RAW/meta.txt"
        KBW_DIR="$RAW/wrapB" /usr/bin/time -v -o "$RAW/timeB.txt" \
            make ARCH=$ARCHV -j$JOBS "${WRAPVARS[@]}" > "$RAW/buildB.log" 2>&1 ;;
    C)  rm -f "$RAW/smaps.jsonl"
        "$BIN/sampler" "$RAW/smaps.jsonl" 0.05 "$(gcc -print-prog-name=cc1)" &
        SAMPLER_PID=$!
        /usr/bin/time -v -o "$RAW/timeC.txt" \
            strace -f -qq --seccomp-bpf -y -s 4096 -e trace=execve,openat,open -e signal=none \
            -o "$RAW/strace.log" make ARCH=$ARCHV -j$JOBS > "$RAW/buildC.log" 2>&1
        # the sampler's own CPU ticks (utime + stime), not counted as other load
        echo "sampler_ticks_C=$(awk '{print $14 + $15}' /proc/$SAMPLER_PID/stat)" >> "$RAW/meta.txt"
        kill "$SAMPLER_PID"; wait "$SAMPLER_PID" || true; SAMPLER_PID="" ;;
    esac
    note_load "$n" end
}
other_pct() { # NAME: CPU the machine spent on anything else during build NAME, in % of the build's
    local n=$1 b0 b1 st
    b0=$(grep "^busy_ticks_${n}_start=" "$RAW/meta.txt" | tail -1 | cut -d= -f2)
    b1=$(grep "^busy_ticks_${n}_end=" "$RAW/meta.txt" | tail -1 | cut -d= -f2)
    st=0; [ "$n" = C ] && st=$(grep "^sampler_ticks_C=" "$RAW/meta.txt" | tail -1 | cut -d= -f2)
    awk -v b0="$b0" -v b1="$b1" -v st="$st" -v t="$(getconf CLK_TCK)" \
        '/User time|System time/ {c += $NF}
         END {o = (b1 - b0 - st) / t - c; if (o < 0) o = 0; printf "%d\n", o * 100 / c}' "$RAW/time$n.txt"
}
# Builds A and B are tried again (BUILD_TRIES times in all, default 3) while other load on the
# machine during them was over OTHER_MAX_PCT (default 5) % of their own CPU time. C is not: other
# load does not change the files a job opens nor, much, its memory.
for n in A B C; do
    case $n in
    A) echo "build A: plain make -j$JOBS" ;;
    B) echo "build B: compiler and linker wrapped" ;;
    C) echo "build C: strace -f, cc1 smaps sampler" ;;
    esac
    for try in $(seq 1 "${BUILD_TRIES:-3}"); do
        build_once "$n"
        pct=$(other_pct "$n")
        echo "  try $try: $(grep -m1 Elapsed "$RAW/time$n.txt" | awk '{print $NF}') wall, other load $pct% of the build's CPU"
        echo "tries_$n=$try" >> "$RAW/meta.txt"
        [ "$pct" -le "${OTHER_MAX_PCT:-5}" ] || [ "$n" = C ] && break   # C: files and memory only
    done
done
grep -cE '^\s+CC\s' "$RAW/buildA.log" | sed 's/^/cc_lines_A=/' >> "$RAW/meta.txt"

# --- (e) reduce -------------------------------------------------------------------------------
python3 "$HERE/measure-kbuild.py" --raw "$RAW" --src "$SRC" --out "$OUT"
du -sh "$OUT"
