#!/usr/bin/env bash
# How hot is the compiler's memory? For the cc1 jobs of a kernel build (linux-source-6.12,
# `make ARCH=x86_64 tinyconfig`, the tree of scripts/measure-kbuild.sh), measures which part of a
# cc1's anonymous memory (heap: [heap] + anonymous mmaps) and of its text (the r-xp mapping of
# the cc1 binary) it references within an interval, with the kernel's referenced bits:
# `echo 1 > /proc/PID/clear_refs` clears the accessed bits of all of a process's pages, and
# /proc/PID/smaps then shows per mapping how much was referenced since (`Referenced:`).
#
# Each kernel C job is re-run alone (one at a time, nothing else of the build running) from its
# kbuild command (`savedcmd_` of the .o.cmd file in a built tree): `gcc -###` gives the cc1 command
# line, the sampler starts cc1 itself under ptrace (PTRACE_TRACEME: t = 0 at its exec;
# PTRACE_O_TRACEEXIT: a last smaps read at its exit, while its memory still exists) and reaps it
# (wait4: its CPU time). cc1 writes its .s and .d into a scratch directory, not into the tree.
# Five runs per job, one after the other:
#   T100, T1000  every T ms: read smaps (Rss and Referenced of the anon mappings, of [heap], of
#                cc1's text), then clear the referenced bits; one more read at exit (a partial
#                interval). A row's referenced figures cover the dt_ms before its t_ms; the first
#                interval starts at exec (no clear: every page faulted in it is referenced).
#   since0       never cleared, read at exit (check: should be ~1.0 of anon).
#   since50/75   cleared once at 50% / 75% of the job's lifetime (the lifetime of its T1000 run),
#                read at exit: the part of the anon memory at exit referenced in the last half /
#                quarter of its life (pages allocated in that time count as referenced).
# Output: OUT/cc1_refs.csv (raw samples) and a section at the end of OUT/README.md (replaced if
# there). Other load on the machine is recorded (it stretches the jobs in wall time, so an
# interval covers less of a job's work; it does not otherwise change the referenced fractions).
#
# Root only (clear_refs, ptrace, apt-get). Installs flex, bison, bc, xz-utils, make, gcc, python3,
# libelf-dev if missing. Needs ~2 GB in /tmp, ~3 minutes to build the tree and ~1.3 s per job.
# Usage: scripts/measure-cc1-refs.sh [--keep] [--jobs N] [--out DIR] [WORKDIR|TREE]
#   --jobs N  N kernel C jobs (20 at least): the 20 largest by CPU time in OUT/jobs.csv and the others
#             evenly spread over that CPU ranking (default: all kernel C jobs of jobs.csv).
#   TREE      an already built tree (a directory holding .config and kernel/.fork.o.cmd): used
#             as it is, never removed, nothing written into it.
#   WORKDIR   a directory under /tmp for a new tree (default: mktemp -d /tmp/cc1-refs.XXXXXX);
#             what the script created is removed at the end unless --keep.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
KEEP=0
NJOBS=0
OUT="$REPO/measurements/kbuild"
ARG=""
while [ $# -gt 0 ]; do
    case "$1" in
        --keep) KEEP=1 ;;
        --jobs) NJOBS=$2; shift ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
        *) ARG=$1 ;;
    esac
    shift
done
TARBALL=/usr/src/linux-source-6.12.tar.xz
ARCHV=x86_64
PY=/usr/bin/python3
[ "$(id -u)" = 0 ] || { echo "root only (clear_refs, ptrace, apt-get)" >&2; exit 2; }
[ -r "$OUT/jobs.csv" ] || { echo "missing $OUT/jobs.csv (scripts/measure-kbuild.sh)" >&2; exit 2; }

# --- tools -------------------------------------------------------------------------------------
need=()
for pair in flex:flex bison:bison bc:bc xz:xz-utils make:make gcc:gcc $PY:python3 \
            /usr/include/libelf.h:libelf-dev /usr/include/gelf.h:libelf-dev; do
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

# --- tree --------------------------------------------------------------------------------------
WORK="" CREATED_WORK=0 TREE="" OWN_TREE=0
if [ -n "$ARG" ] && [ -f "$ARG/.config" ] && [ -f "$ARG/kernel/.fork.o.cmd" ]; then
    TREE=$(cd "$ARG" && pwd)
    WORK=$(mktemp -d /tmp/cc1-refs.XXXXXX); CREATED_WORK=1
else
    if [ -z "$ARG" ]; then
        WORK=$(mktemp -d /tmp/cc1-refs.XXXXXX); CREATED_WORK=1
    else
        case "$(realpath -m "$ARG")" in /tmp/*) ;; *) echo "WORKDIR must be under /tmp" >&2; exit 2 ;; esac
        WORK=$ARG
        if [ ! -d "$WORK" ]; then mkdir -p "$WORK"; CREATED_WORK=1; fi
        WORK=$(cd "$WORK" && pwd)
    fi
    TREE="$WORK/linux-source-6.12"; OWN_TREE=1
fi
RAW="$WORK/raw"
SAMPLER_PID=""
cleanup() {
    if [ -n "$SAMPLER_PID" ] && kill -0 "$SAMPLER_PID" 2>/dev/null; then
        kill "$SAMPLER_PID" 2>/dev/null || true; wait "$SAMPLER_PID" 2>/dev/null || true
    fi
    if [ "$KEEP" = 1 ]; then echo "kept $WORK"; return; fi
    if [ "$CREATED_WORK" = 1 ]; then rm -rf "$WORK"
    else rm -rf "$RAW"; [ "$OWN_TREE" = 1 ] && rm -rf "$TREE"; fi
    return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM
mkdir -p "$RAW/scratch"
export LC_ALL=C
if [ "$OWN_TREE" = 1 ]; then
    [ -r "$TARBALL" ] || { echo "missing $TARBALL (apt-get install linux-source-6.12)" >&2; exit 2; }
    rm -rf "$TREE"
    echo "extracting $TARBALL into $WORK"
    tar -C "$WORK" -xJf "$TARBALL"
    export KBUILD_BUILD_TIMESTAMP="2024-01-01" KBUILD_BUILD_USER=pagesim KBUILD_BUILD_HOST=measure
    echo "building ARCH=$ARCHV tinyconfig (make -j$(nproc); for the .o.cmd files and generated headers)"
    (cd "$TREE" && make -s ARCH=$ARCHV tinyconfig > /dev/null &&
        make ARCH=$ARCHV -j"$(nproc)" > "$RAW/build.log" 2>&1) ||
        { tail -20 "$RAW/build.log" >&2; exit 1; }
else
    echo "using the built tree $TREE (read only)"
fi

{
    echo "date=$(date -u +%FT%TZ)"
    echo "uname=$(uname -r)"
    echo "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
    echo "nproc=$(nproc)"
    echo "mem_total_kb=$(awk '/MemTotal/{print $2}' /proc/meminfo)"
    echo "thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo none)"
    echo "gcc=$(gcc --version | head -1)"
    echo "cc1=$(realpath "$(gcc -print-prog-name=cc1)")"
    echo "tree=$TREE"
    for k in /sys/kernel/mm/damon/admin/kdamonds/*/; do   # DAMON (e.g. proactive reclaim of the VM)
        [ "$(cat "$k/state" 2>/dev/null)" = on ] || continue
        echo "damon=$(cat "$k"/contexts/*/operations 2>/dev/null | paste -sd,) $(cat "$k"/contexts/*/schemes/*/action 2>/dev/null | paste -sd,) sample_us=$(cat "$k"/contexts/*/monitoring_attrs/intervals/sample_us 2>/dev/null | paste -sd,) min_age=$(cat "$k"/contexts/*/schemes/*/access_pattern/age/min 2>/dev/null | paste -sd,)"
    done
    echo "clk_tck=$(getconf CLK_TCK)"
    echo "topcpu_start=$(ps -eo pcpu,comm --sort=-pcpu --no-headers | head -5 | tr -s ' ' | sed 's/^ //' | paste -sd';')"
} > "$RAW/meta.txt"

# --- sampler -------------------------------------------------------------------------------------
cat > "$RAW/sampler.py" <<'PY'
import csv, ctypes, json, os, shlex, signal, subprocess, sys, time
tree, jobs_csv, njobs, scratch, out_csv, meta_out = sys.argv[1:7]
njobs = int(njobs)
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long
PTRACE_TRACEME, PTRACE_CONT, PTRACE_SETOPTIONS = 0, 7, 0x4200
PTRACE_O_TRACEEXIT, PTRACE_O_EXITKILL, PTRACE_EVENT_EXIT = 0x40, 0x100000, 6
def ptrace(req, pid, data=0):
    if libc.ptrace(req, pid, None, ctypes.c_void_p(data)) == -1:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))

# jobs: kernel C units of the kbuild measurement, by CPU time
rows = [r for r in csv.DictReader(open(jobs_csv)) if r["kind"] == "c"]
rows.sort(key=lambda r: -float(r["cpu_s"]))
if 0 < njobs < len(rows):
    top, rest = rows[:20], rows[20:]
    k = max(0, njobs - 20)
    rows = top + [rest[round(i * (len(rest) - 1) / max(1, k - 1))] for i in range(k)] if k else top
jobs = []
for r in rows:
    src = r["source"]
    d, b = os.path.split(r["object"])
    cmdf = os.path.join(tree, d, "." + b + ".cmd")
    try:
        line = next(l for l in open(cmdf) if l.startswith("savedcmd_"))
    except (OSError, StopIteration):
        print(f"skip {src}: no {cmdf}", file=sys.stderr); continue
    cmd = line.split(":=", 1)[1].strip().split(" ; ")[0]
    argv = shlex.split(cmd) + ["-###"]
    p = subprocess.run(argv, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    cc1 = None
    for l in p.stderr.splitlines():
        if l.startswith(" ") and "/cc1" in l.split()[0]:
            cc1 = shlex.split(l)
            break
    if not cc1:
        print(f"skip {src}: no cc1 line in gcc -###", file=sys.stderr); continue
    tag = src.replace("/", "_")
    for i, a in enumerate(cc1[:-1]):
        if a == "-o":
            cc1[i + 1] = f"{scratch}/{tag}.s"
        elif a in ("-MD", "-MMD"):
            cc1[i + 1] = f"{scratch}/{tag}.d"
    jobs.append((src, r["cpu_s"], cc1))
if not jobs:
    sys.exit("no jobs")
CC1 = os.path.realpath(jobs[0][2][0]).encode()
print(f"{len(jobs)} jobs; cc1 {CC1.decode()}", flush=True)

HEX = set(b"0123456789abcdef")
def smaps(pid):
    """(anon_rss, anon_ref, heap_rss, heap_ref, text_rss, text_ref) in kB"""
    with open(f"/proc/{pid}/smaps", "rb") as f:
        data = f.read()
    v = [0] * 6
    cls = -1
    for line in data.split(b"\n"):
        if not line:
            continue
        if line[0] in HEX:
            parts = line.split(None, 5)
            path = parts[5].strip() if len(parts) > 5 else b""
            if path == b"[heap]":
                cls = 2
            elif path == b"":
                cls = 0
            elif path == CC1 and b"x" in parts[1]:
                cls = 4
            else:
                cls = -1
        elif cls >= 0:
            if line.startswith(b"Rss:"):
                n = int(line.split()[1]); v[cls] += n
                if cls == 2: v[0] += n
            elif line.startswith(b"Referenced:"):
                n = int(line.split()[1]); v[cls + 1] += n
                if cls == 2: v[1] += n
    return v

def clear_refs(pid):
    fd = os.open(f"/proc/{pid}/clear_refs", os.O_WRONLY)
    try:
        os.write(fd, b"1")
    finally:
        os.close(fd)

devnull = os.open(os.devnull, os.O_RDWR)
def spawn(argv):
    pid = os.fork()
    if pid == 0:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, [])
            os.dup2(devnull, 0); os.dup2(devnull, 1); os.dup2(devnull, 2)
            os.chdir(tree)
            if libc.ptrace(PTRACE_TRACEME, 0, None, None) == -1:
                os._exit(126)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    _, st = os.waitpid(pid, 0)                       # stopped at exec (SIGTRAP)
    if not (os.WIFSTOPPED(st) and os.WSTOPSIG(st) == signal.SIGTRAP):
        raise RuntimeError(f"cc1 did not stop at exec: status {st:#x}")
    ptrace(PTRACE_SETOPTIONS, pid, PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)
    t0 = time.monotonic()
    ptrace(PTRACE_CONT, pid)
    return pid, t0

signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGCHLD])
INF = float("inf")
def run(src, mode, argv, life_ref):
    """One cc1 run; returns (rows, life_s, cpu_s, rc)."""
    pid, t0 = spawn(argv)
    out = []
    last_clear, prev_anon, k = 0.0, "", 0
    if mode.startswith("T"):
        T = int(mode[1:]) / 1000
        nxt = T
    elif mode == "since0":
        nxt = INF
    else:
        nxt = int(mode[5:]) / 100 * life_ref
    def row(t, v, final):
        return [mode, src, k, round(t * 1000, 1), round((t - last_clear) * 1000, 1), final,
                v[0], v[1], v[2], v[3], v[4], v[5], prev_anon]
    while True:
        now = time.monotonic() - t0
        if nxt - now > 0:
            signal.sigtimedwait([signal.SIGCHLD], min(nxt - now, 5.0))
        wp, st = os.waitpid(pid, os.WNOHANG)
        if wp == pid and os.WIFSTOPPED(st):
            if os.WSTOPSIG(st) == signal.SIGTRAP and (st >> 16) == PTRACE_EVENT_EXIT:
                t = time.monotonic() - t0
                try:
                    out.append(row(t, smaps(pid), 1))
                except OSError:
                    pass
                ptrace(PTRACE_CONT, pid)
                _, st, ru = os.wait4(pid, 0)
                return out, t, ru.ru_utime + ru.ru_stime, os.waitstatus_to_exitcode(st)
            sig = os.WSTOPSIG(st)
            ptrace(PTRACE_CONT, pid, 0 if sig == signal.SIGTRAP else sig)
            continue
        if wp == pid:                                  # gone without an exit stop
            return out, time.monotonic() - t0, None, os.waitstatus_to_exitcode(st)
        now = time.monotonic() - t0
        if now < nxt:
            continue
        try:
            v = smaps(pid)
        except OSError:
            nxt = INF; continue
        if mode.startswith("T"):
            out.append(row(now, v, 0))
        clear_refs(pid)
        last_clear, prev_anon = time.monotonic() - t0, v[0]
        k += 1
        if mode.startswith("T"):
            nxt = (k + 1) * T
            while nxt <= last_clear:                   # skip deadlines already missed
                nxt += T
        else:
            nxt = INF

def busy_ticks():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return v[0] + v[1] + v[2] + v[5] + v[6] + v[7]      # user nice system irq softirq steal
def loadavg():
    return " ".join(open("/proc/loadavg").read().split()[:3])

MODES = ["T1000", "T100", "since0", "since50", "since75"]
cols = ["mode", "job", "sample", "t_ms", "dt_ms", "final", "anon_rss_kb", "anon_referenced_kb",
        "heap_rss_kb", "heap_referenced_kb", "text_rss_kb", "text_referenced_kb",
        "anon_rss_at_clear_kb", "life_ms", "cpu_ms"]
meta = dict(runs=0, failed=[], cc1_cpu_s=0.0, cc1_life_s=0.0, loadavg_start=loadavg(),
            busy_ticks_start=busy_ticks())
r0 = __import__("resource").getrusage(__import__("resource").RUSAGE_SELF)
c0 = time.monotonic()
with open(out_csv, "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(cols)
    for n, (src, cpu_ref, argv) in enumerate(jobs):
        life_ref = None
        for mode in MODES:
            rows_, life, cpu, rc = run(src, mode, argv, life_ref or 0)
            meta["runs"] += 1
            if rc != 0:
                meta["failed"].append([src, mode, rc])
                print(f"  {src} {mode}: cc1 exit {rc}", file=sys.stderr)
            if mode == "T1000":
                life_ref = life
            if cpu is not None:
                meta["cc1_cpu_s"] += cpu
            meta["cc1_life_s"] += life
            for r in rows_:
                w.writerow(r + [round(life * 1000, 1), round(cpu * 1000, 1) if (r[5] and cpu is not None) else ""])
        if n % 25 == 0 or n == len(jobs) - 1:
            print(f"  {n + 1}/{len(jobs)} {src} ({time.monotonic() - c0:.0f} s)", flush=True)
meta["jobs"] = len(jobs)
meta["wall_s"] = time.monotonic() - c0
meta["busy_ticks_end"], meta["loadavg_end"] = busy_ticks(), loadavg()
ru = __import__("resource").getrusage(__import__("resource").RUSAGE_SELF)
meta["sampler_cpu_s"] = ru.ru_utime + ru.ru_stime - r0.ru_utime - r0.ru_stime
json.dump(meta, open(meta_out, "w"))
PY

# --- reducer ------------------------------------------------------------------------------------
cat > "$RAW/reduce.py" <<'PY'
import csv, json, math, sys, statistics
csv_path, meta_path, meta_txt, readme, rerun = sys.argv[1:6]
HEAD = "## Compiler memory: how much of it is referenced (clear_refs)"
meta = json.load(open(meta_path))
kv = dict(l.rstrip("\n").split("=", 1) for l in open(meta_txt) if "=" in l)
rows = list(csv.DictReader(open(csv_path)))
for r in rows:
    for k in ("t_ms", "dt_ms", "life_ms"):
        r[k] = float(r[k])
    for k in ("anon_rss_kb", "anon_referenced_kb", "heap_rss_kb", "heap_referenced_kb",
              "text_rss_kb", "text_referenced_kb", "final"):
        r[k] = int(r[k])

def pct(xs, p):
    k = (len(xs) - 1) * p / 100
    lo = math.floor(k); hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)
def dist(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return "| 0 | | | | |"
    return (f"| {len(xs)} | {statistics.fmean(xs):.3f} | {pct(xs, 50):.3f} | {pct(xs, 10):.3f} | "
            f"{pct(xs, 90):.3f} |")
def frac(a, b):
    return a / b if b > 0 else None
def third(r):
    m = (r["t_ms"] - r["dt_ms"] / 2) / r["life_ms"] if r["life_ms"] > 0 else 0
    return "early" if m < 1 / 3 else ("middle" if m < 2 / 3 else "late")

L = []
w = L.append
jobs = sorted({r["job"] for r in rows})
lives = sorted(r["life_ms"] for r in rows if r["mode"] == "T1000" and r["final"])
cpus = [(float(r["cpu_ms"]), r["life_ms"]) for r in rows if r["final"] and r["cpu_ms"]]
clk = int(kv["clk_tck"])
busy = (meta["busy_ticks_end"] - meta["busy_ticks_start"]) / clk
wall = meta["wall_s"]
other = busy - meta["cc1_cpu_s"] - meta["sampler_cpu_s"]
w(HEAD)
w("")
w(f"Generated by `scripts/measure-cc1-refs.sh` ({kv['date']}). Rerun: `{rerun}` (root; builds its own")
w("tree under /tmp first, ~3 min, or give it a built tree; then ~1.3 s per job; `--jobs N` for fewer jobs).")
w("")
w("Method. Each kernel C job of the build above is re-run alone, one at a time, from its kbuild command")
w("(`savedcmd_` in the .o.cmd file of a built tinyconfig tree; `gcc -###` gives the cc1 command).")
w("The sampler starts cc1 itself under ptrace (t = 0 at its exec; a last read at its exit, before its")
w("memory is freed). `echo 1 > /proc/PID/clear_refs` clears the accessed bits (ptes and the pages'")
w("referenced flags); /proc/PID/smaps `Referenced:` then counts, per mapping, the resident pages accessed")
w("since. anon = [heap] (brk) + the pathless mappings (GCC's GC pages, malloc arenas' mmaps, .bss);")
w("text = the r-xp mapping of the cc1 binary. Five runs per job:")
w("T100 / T1000 read smaps every T ms and clear again (the first interval starts at exec, without a clear:")
w("every page faulted in during it counts; the last, partial interval ends at exit); since0 never clears")
w("(check); since50 / since75 clear once at 50% / 75% of the job's lifetime (taken from its T1000 run) and")
w("read at exit. Raw rows: `cc1_refs.csv`.")
w("")
w(f"- Host: {kv['cpu']}, {kv['nproc']} CPUs, {int(kv['mem_total_kb']) // 1048576} GiB, kernel {kv['uname']}; "
  f"{kv['gcc']}; THP `{kv['thp']}` (cc1 does not madvise: no huge pages).")
if kv.get("damon"):
    w(f"- DAMON was on (kdamond: {kv['damon']}): it clears the accessed bit of a sampled page now and then "
      "but keeps it in the page's young flag, which smaps counts and clear_refs clears; its pageout needs "
      "regions idle for min_age aggregation intervals (seconds), far longer than a cc1 lives.")
w(f"- Jobs: {meta['jobs']} kernel C units (the 20 largest by CPU time in `jobs.csv` among them), "
  f"{meta['runs']} cc1 runs, {len(rows)} rows; failed runs: {len(meta['failed'])}.")
w(f"- Job lifetime (T1000 runs) ms: mean {statistics.fmean(lives):.0f}, median {pct(lives, 50):.0f}, "
  f"p10 {pct(lives, 10):.0f}, p90 {pct(lives, 90):.0f}, max {lives[-1]:.0f}; "
  f"cc1 CPU / lifetime over all runs: {sum(c for c, _ in cpus) / sum(l for _, l in cpus):.3f}.")
w(f"- Load: loadavg (1/5/15 min) at start {meta['loadavg_start']}, at end {meta['loadavg_end']}; "
  f"top CPU users at start: {kv['topcpu_start'].replace(';', '; ')}. Over the {wall:.0f} s of sampling "
  f"the machine was busy {busy:.0f} CPU s: cc1 {meta['cc1_cpu_s']:.0f}, the sampler (python) "
  f"{meta['sampler_cpu_s']:.0f}, everything else {other:.0f} (= {other / wall:.2f} CPUs on average "
  f"of {kv['nproc']}).")
w("")

for mode in ("T100", "T1000"):
    T = int(mode[1:])
    rs = [r for r in rows if r["mode"] == mode]
    full = [r for r in rs if r["dt_ms"] >= 0.9 * T]
    part = [r for r in rs if r["dt_ms"] < 0.9 * T]
    njob_full = len({r["job"] for r in full})
    w(f"### Interval T = {T} ms")
    w("")
    w(f"Samples: {len(rs)}; full intervals (dt >= 0.9 T): {len(full)} from {njob_full} jobs; partial "
      f"(the last interval of a job, ended by its exit; all of it for a job shorter than T): {len(part)}. "
      "Ratios per sample; the thirds are by the middle of the sample's interval over the job's lifetime; "
      "`not the first`: without the interval that starts at exec (all its pages are new, so referenced).")
    w("")
    w("| samples | ratio | n | mean | median | p10 | p90 |")
    w("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    nf = [r for r in full if r["sample"] != "0"]
    nfb = [r for r in nf if r["life_ms"] >= 500]
    for name, sel in (("full", full), ("full, not the first", nf),
                      (f"full, not the first, jobs living >= 500 ms ({len({r['job'] for r in nfb})})", nfb),
                      ("partial (last)", part)):
        for ph in ("all", "early", "middle", "late"):
            ss = sel if ph == "all" else [r for r in sel if third(r) == ph]
            for lab, a, b in (("anon ref/rss", "anon_referenced_kb", "anon_rss_kb"),
                              ("text ref/rss", "text_referenced_kb", "text_rss_kb")):
                w(f"| {name}, {ph} | {lab} " + dist([frac(r[a], r[b]) for r in ss]))
    sa = sum(r["anon_referenced_kb"] for r in full); sr = sum(r["anon_rss_kb"] for r in full)
    ta = sum(r["text_referenced_kb"] for r in full); tr = sum(r["text_rss_kb"] for r in full)
    ha = sum(r["heap_referenced_kb"] for r in full); hr = sum(r["heap_rss_kb"] for r in full)
    if full:
        w("")
        w(f"Full intervals, weighted by size (sum referenced / sum rss): anon {frac(sa, sr):.3f}, "
          f"[heap] alone {frac(ha, hr):.3f}, text {frac(ta, tr):.3f}. Mean anon rss per sample "
          f"{sr / len(full):.0f} kB, referenced {sa / len(full):.0f} kB; text rss {tr / len(full):.0f} kB, "
          f"referenced {ta / len(full):.0f} kB.")
    w("")

w("### Referenced since mid-life, read at exit")
w("")
w("Per job: the part of its anon memory at exit that was referenced (or allocated) after the clear. "
  "`clear at` is the clear's actual time over the run's own lifetime (the lifetime varies from run to run).")
w("")
w("| run | ratio | n | mean | median | p10 | p90 |")
w("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
for mode in ("since0", "since50", "since75"):
    rs = [r for r in rows if r["mode"] == mode and r["final"]]
    if mode != "since0":
        rs = [r for r in rs if r["dt_ms"] < r["t_ms"]]            # the clear happened
    w(f"| {mode} | anon ref/rss " + dist([frac(r["anon_referenced_kb"], r["anon_rss_kb"]) for r in rs]))
    if mode != "since0":
        w(f"| {mode} | anon rss at exit / at clear " + dist([frac(r["anon_rss_kb"], float(r["anon_rss_at_clear_kb"])) for r in rs]))
        w(f"| {mode} | clear at (fraction of life) " + dist([1 - r["dt_ms"] / r["t_ms"] for r in rs]))
    w(f"| {mode} | text ref/rss " + dist([frac(r["text_referenced_kb"], r["text_rss_kb"]) for r in rs]))
    if mode != "since0":
        big = [r for r in rs if r["life_ms"] >= 300]
        w(f"| {mode}, jobs living >= 300 ms | anon ref/rss " + dist([frac(r["anon_referenced_kb"], r["anon_rss_kb"]) for r in big]))
w("")
w("`cc1_refs.csv`: mode (T100, T1000, since0, since50, since75), job (source file), sample (clears so far), "
  "t_ms (read time since exec), dt_ms (since the previous clear, or exec), final (1: read at exit), "
  "anon_rss_kb, anon_referenced_kb (anon includes [heap]), heap_rss_kb, heap_referenced_kb, text_rss_kb, "
  "text_referenced_kb, anon_rss_at_clear_kb (anon rss at the previous clear), life_ms (exec to exit), "
  "cpu_ms (cc1 user+sys, on final rows).")
sec = "\n".join(L) + "\n"
txt = open(readme).read()
i = txt.find(HEAD)
if i >= 0:
    j = txt.find("\n## ", i + len(HEAD))
    txt = txt[:i] + (txt[j + 1:] if j >= 0 else "")
txt = txt.rstrip("\n") + "\n\n" + sec
open(readme, "w").write(txt)
print(sec)
PY

# --- run -----------------------------------------------------------------------------------------
echo "sampling cc1 jobs one at a time (T1000, T100, since0, since50, since75 each)"
$PY "$RAW/sampler.py" "$TREE" "$OUT/jobs.csv" "$NJOBS" "$RAW/scratch" "$RAW/cc1_refs.csv" \
    "$RAW/sampler.json" &
SAMPLER_PID=$!
wait "$SAMPLER_PID"; SAMPLER_PID=""
cp "$RAW/cc1_refs.csv" "$OUT/cc1_refs.csv"
RERUN="scripts/measure-cc1-refs.sh"; [ "$NJOBS" != 0 ] && RERUN="$RERUN --jobs $NJOBS"
$PY "$RAW/reduce.py" "$OUT/cc1_refs.csv" "$RAW/sampler.json" "$RAW/meta.txt" "$OUT/README.md" "$RERUN"
ls -l "$OUT/cc1_refs.csv"
