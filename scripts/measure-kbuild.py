#!/usr/bin/env python3
"""Reduces the raw data of scripts/measure-kbuild.sh into measurements/kbuild/.

Inputs (in --raw): meta.txt, config, time{A,B,C}.txt (/usr/bin/time -v of the three builds),
wrapB/*.json (one record per compiler / linker run of build B, from the kbw wrapper),
strace.log (build C, strace -f -y -e trace=execve,openat,open), smaps.jsonl (build C, one line
per cc1 process: its peak-Rss smaps sample). --src is the built tree (for file sizes).

Outputs (in --out): jobs.csv, links.csv, headers.csv, job_headers.txt.xz, cc1_smaps.csv,
summary.json, README.md, config. Standard library only.
"""
import argparse
import collections
import csv
import json
import lzma
import math
import os
import re
import statistics

# gcc / cc1 options whose value is the next argument
OPT_ARG = {
    "-o", "-include", "-imacros", "-isystem", "-idirafter", "-iprefix", "-iwithprefix",
    "-iquote", "-isysroot", "-I", "-D", "-U", "-A", "-MF", "-MT", "-MQ", "-MD", "-MMD", "-x",
    "-dumpbase", "-dumpbase-ext", "-dumpdir", "-auxbase", "-auxbase-strip", "-Xpreprocessor",
    "-Xassembler", "-Xlinker", "-T", "-L", "-main-file-name", "-fdiagnostics-color",
}
SRC_SUFFIX = (".c", ".S", ".s")
SKIP_PREFIX = ("/etc/", "/proc/", "/sys/", "/dev/", "/usr/lib/locale", "/usr/share/locale",
               "/usr/lib/x86_64-linux-gnu/gconv/", "/tmp/cc")
SO_RE = re.compile(r"\.so(\.\d+)*$")


def pct(xs, p):
    """Linear-interpolated percentile of sorted xs, p in [0, 100]."""
    if not xs:
        return None
    k = (len(xs) - 1) * p / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def dist(values, nd=4):
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    r = lambda v: round(v, nd) if isinstance(v, float) else v
    d = dict(n=len(xs), mean=r(statistics.fmean(xs)), median=r(pct(xs, 50)), p10=r(pct(xs, 10)),
             p90=r(pct(xs, 90)), p99=r(pct(xs, 99)), min=r(xs[0]), max=r(xs[-1]),
             sum=r(math.fsum(xs)))
    logs = [math.log(x) for x in xs if x > 0]
    if len(logs) >= 2:
        d["lognormal"] = dict(mu=round(statistics.fmean(logs), 4),
                              sigma=round(statistics.pstdev(logs), 4), n=len(logs))
    return d


def read_kv(path):
    d = {}
    if os.path.exists(path):
        for line in open(path):
            k, sep, v = line.rstrip("\n").partition("=")
            if sep:
                d[k] = v
    return d


def read_time_v(path):
    """/usr/bin/time -v output -> dict."""
    d = {}
    if not os.path.exists(path):
        return d
    for line in open(path):
        k, _, v = line.strip().rpartition(": ")
        v = v.strip()
        if k.startswith("Elapsed (wall clock) time"):
            s = 0.0
            for part in v.split(":"):
                s = s * 60 + float(part)
            d["wall_s"] = round(s, 2)
        elif k == "User time (seconds)":
            d["user_s"] = float(v)
        elif k == "System time (seconds)":
            d["sys_s"] = float(v)
        elif k == "Maximum resident set size (kbytes)":
            d["maxrss_kb"] = int(v)
        elif k == "Percent of CPU this job got":
            d["cpu_percent"] = int(v.rstrip("%"))
        elif k == "Exit status":
            d["exit_status"] = int(v)
    if "user_s" in d:
        d["cpu_s"] = round(d["user_s"] + d["sys_s"], 2)
    return d


class Tree:
    def __init__(self, src):
        self.src = os.path.realpath(src)
        self._size = {}

    def abs(self, cwd, p):
        return os.path.normpath(os.path.join(cwd or self.src, p))

    def rel(self, a):
        if a == self.src or a.startswith(self.src + "/"):
            return os.path.relpath(a, self.src)
        return a

    def size(self, a):
        if a not in self._size:
            try:
                self._size[a] = os.stat(a).st_size
            except OSError:
                self._size[a] = None
        return self._size[a]


def source_arg(argv):
    """The input file of a gcc / cc1 command line (first non-option .c/.S/.s)."""
    prev = None
    for a in argv[1:]:
        if prev not in OPT_ARG and not a.startswith("-") and a.endswith(SRC_SUFFIX):
            return a
        prev = a
    return None


def dep_object(argv):
    """Object named by cc1's -MMD/-MD dep file (dir/.name.o.d -> dir/name.o)."""
    for i, a in enumerate(argv[:-1]):
        if a in ("-MMD", "-MD"):
            d, b = os.path.split(argv[i + 1])
            if b.startswith(".") and b.endswith(".d"):
                return os.path.join(d, b[1:-2])
        if a.startswith("-Wp,-MMD,") or a.startswith("-Wp,-MD,"):
            d, b = os.path.split(a.split(",", 2)[2])
            if b.startswith(".") and b.endswith(".d"):
                return os.path.join(d, b[1:-2])
    return None


def classify(tag, argv):
    if tag in ("ld", "hostld"):
        return tag
    src = source_arg(argv)
    if src is None:
        return "other"
    if "-E" in argv:
        return "cpp"
    if "-S" in argv:
        return "c_to_s"
    if "-c" in argv:
        if tag == "hostcc":
            return "hostc"
        return "c" if src.endswith(".c") else "asm"
    return "hostlink" if tag == "hostcc" else "other"


# ---------------------------------------------------------------------------------------------
# strace
ESC = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", '"': '"', "\\": "\\"}
QSTR = re.compile(r'"((?:[^"\\]|\\.)*)"')
RES = re.compile(r"\)\s+=\s+(-?\d+)(?:<([^>]*)>)?(?:\s+(E[A-Z0-9]+))?")
DIRFD = re.compile(r"^(?:AT_FDCWD|\d+)<([^>]*)>")


def unq(s):
    return re.sub(r"\\(x[0-9a-fA-F]{2}|[0-7]{1,3}|.)", lambda m: ESC.get(
        m.group(1), chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "x" else
        chr(int(m.group(1), 8)) if m.group(1)[0].isdigit() else m.group(1)), s)


def parse_strace(path, tree):
    procs = []            # every successful execve: dict(pid, exe, argv, cwd, reads, writes, fails)
    cur = {}
    pending = {}
    execs = collections.Counter()
    keep_opens = ("cc1", "ld", "ld.bfd", "as", "objtool")
    with open(path, errors="replace") as f:
        for line in f:
            pid, _, rest = line.rstrip("\n").partition(" ")
            if not pid.isdigit():
                continue
            rest = rest.lstrip()
            if rest.endswith("<unfinished ...>"):
                pending[pid] = rest[: -len("<unfinished ...>")]
                continue
            if rest.startswith("<... "):
                head = pending.pop(pid, None)
                if head is None:
                    continue
                rest = head + rest.split(">", 1)[1]
            if rest.startswith("execve("):
                m = RES.search(rest[rest.rfind(")"):]) if ")" in rest else None
                if not m or m.group(1) != "0":
                    continue
                strs = [unq(s) for s in QSTR.findall(rest[: rest.rfind("]") + 1])]
                if not strs:
                    continue
                exe, argv = strs[0], strs[1:]
                base = os.path.basename(exe)
                execs[base] += 1
                p = dict(pid=int(pid), exe=exe, base=base, argv=argv, cwd=None,
                         reads=[], writes=[], fails=0, track=base in keep_opens)
                procs.append(p)
                cur[pid] = p
                continue
            if rest.startswith("openat(") or rest.startswith("open("):
                p = cur.get(pid)
                if p is None or not p["track"]:
                    continue
                args = rest[rest.index("(") + 1:]
                cwd = None
                if rest.startswith("openat("):
                    m = DIRFD.match(args)
                    if m:
                        cwd = m.group(1)
                    if p["cwd"] is None and args.startswith("AT_FDCWD<"):
                        p["cwd"] = cwd
                m = QSTR.search(args)
                if not m:
                    continue
                req = unq(m.group(1))
                tail = args[m.end():]
                flags = tail.split(",")[1].strip().split(")")[0] if "," in tail else ""
                r = RES.search(tail)
                if not r:
                    continue
                if int(r.group(1)) < 0:
                    a = tree.abs(cwd, req)
                    if not a.startswith(SKIP_PREFIX) and not SO_RE.search(a):
                        p["fails"] += 1
                    continue
                a = r.group(2) or tree.abs(cwd, req)
                if "O_WRONLY" in flags or "O_RDWR" in flags:
                    p["writes"].append(a)
                else:
                    p["reads"].append(a)
    for p in procs:
        p["cwd"] = p["cwd"] or tree.src
    return procs, execs


def input_files(p, exclude):
    seen = []
    s = set()
    for a in p["reads"]:
        if a in s or a == exclude or a.startswith(SKIP_PREFIX) or SO_RE.search(a):
            continue
        if a.endswith((".so", ".a")) and a.startswith("/usr/"):
            continue
        s.add(a)
        seen.append(a)
    return seen


def origin(rel):
    if rel.startswith("/"):
        return "system"
    if "/generated/" in "/" + rel or rel.startswith("include/config/"):
        return "generated"
    return "tree"


# ---------------------------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    raw, out = a.raw, a.out
    tree = Tree(a.src)
    os.makedirs(out, exist_ok=True)
    meta = read_kv(os.path.join(raw, "meta.txt"))
    times = {k: read_time_v(os.path.join(raw, f"time{k}.txt")) for k in "ABC"}
    tck = int(meta.get("clk_tck", 100))
    for k, t in times.items():  # whole-machine busy CPU during the build, and what was not ours
        b0, b1 = meta.get(f"busy_ticks_{k}_start"), meta.get(f"busy_ticks_{k}_end")
        if b0 and b1 and "cpu_s" in t:
            t["machine_busy_s"] = round((int(b1) - int(b0)) / tck, 2)
            samp = int(meta.get("sampler_ticks_C", 0)) / tck if k == "C" else 0
            if samp:
                t["sampler_cpu_s"] = round(samp, 2)
            t["other_cpu_s"] = round(t["machine_busy_s"] - t["cpu_s"] - samp, 2)
        t["tries"] = int(meta.get(f"tries_{k}", 1))
        t["quiet_wait_s"] = meta.get(f"quiet_wait_s_{k}")
        t["loadavg_start"] = meta.get(f"loadavg_{k}_start")
        t["loadavg_end"] = meta.get(f"loadavg_{k}_end")

    # --- build B: wrapper records
    recs = []
    wdir = os.path.join(raw, "wrapB")
    for name in sorted(os.listdir(wdir)):
        with open(os.path.join(wdir, name)) as f:
            recs.append(json.load(f))
    b_start = int(meta.get("b_start_ns", min(r["t0_ns"] for r in recs)))
    jobs, links, failed = [], [], 0
    for r in recs:
        kind = classify(r["tag"], r["argv"])
        out_abs = tree.abs(r["cwd"], r["out"]) if r["out"] else None
        if not out_abs or not out_abs.startswith(tree.src + "/"):
            kind = "other"  # version queries, cc-option / ld-option probes
        if r["rc"] != 0:
            failed += kind != "other"
            continue
        base = dict(kind=kind, t_start_s=round((r["t0_ns"] - b_start) / 1e9, 4),
                    user_s=round(r["user_s"], 4), sys_s=round(r["sys_s"], 4),
                    cpu_s=round(r["user_s"] + r["sys_s"], 4), wall_s=round(r["wall_s"], 4),
                    maxrss_kb=r["maxrss_kb"], minflt=r["minflt"],
                    out_abs=out_abs,
                    out_bytes=r["out_bytes"] if r["out_bytes"] >= 0 else None, argv=r["argv"])
        if kind in ("ld", "hostld"):
            links.append(base)
        elif kind != "other":
            s = source_arg(r["argv"])
            base["src_abs"] = tree.abs(r["cwd"], s)
            jobs.append(base)
    jobs.sort(key=lambda j: j["t_start_s"])
    links.sort(key=lambda j: j["t_start_s"])
    other_count = collections.Counter(j["kind"] for j in jobs + links)
    other_count["other"] = len(recs) - len(jobs) - len(links) - failed

    # --- build C: strace
    procs, execs = parse_strace(os.path.join(raw, "strace.log"), tree)
    cc1s = [p for p in procs if p["base"] == "cc1"]
    by_key, by_src = {}, collections.defaultdict(list)
    for p in cc1s:
        s = source_arg(p["argv"])
        if s is None:
            continue
        sa = tree.abs(p["cwd"], s)
        o = dep_object(p["argv"])
        p["src_abs"] = sa
        if o:
            by_key[(sa, tree.abs(p["cwd"], o))] = p
        by_src[sa].append(p)
    matched = 0
    for j in jobs:
        p = by_key.get((j["src_abs"], j["out_abs"]))
        if p is None and len(by_src.get(j["src_abs"], [])) == 1:
            p = by_src[j["src_abs"]][0]
        j["cc1"] = p
        if p is None:
            continue
        matched += 1
        inc = input_files(p, j["src_abs"])
        j["includes"] = inc
        j["headers_read"] = len(inc)
        j["header_bytes"] = sum(tree.size(x) or 0 for x in inc)
        j["failed_opens"] = p["fails"]

    # --- smaps samples (build C)
    smaps = []
    sp = os.path.join(raw, "smaps.jsonl")
    if os.path.exists(sp):
        for line in open(sp):
            r = json.loads(line)
            s = source_arg(r["argv"])
            if s is None:
                continue
            o = dep_object(r["argv"])
            r["src_abs"] = tree.abs(r["cwd"], s)
            r["obj_abs"] = tree.abs(r["cwd"], o) if o else None
            smaps.append(r)
    sm_by_key = {(r["src_abs"], r["obj_abs"]): r for r in smaps}
    for j in jobs:
        j["smaps"] = sm_by_key.get((j["src_abs"], j["out_abs"]))

    for j in jobs:
        j["source_bytes"] = tree.size(j["src_abs"])
        j["source"] = tree.rel(j["src_abs"])
        j["object"] = tree.rel(j["out_abs"]) if j["out_abs"] else ""

    C = [j for j in jobs if j["kind"] == "c"]

    # --- headers
    hdr_jobs = collections.Counter()
    hdr_jobs_all = collections.Counter()
    for j in jobs:
        for x in j.get("includes", []):
            hdr_jobs_all[x] += 1
            if j["kind"] == "c":
                hdr_jobs[x] += 1
    hdrs = sorted(hdr_jobs_all, key=lambda x: (-hdr_jobs[x], -hdr_jobs_all[x], tree.rel(x)))
    hid = {x: i for i, x in enumerate(hdrs)}
    nC = len(C)
    C_inc = [j for j in C if "includes" in j]
    nCi = len(C_inc)
    hset = [x for x in hdrs if hdr_jobs[x] > 0]

    def hbytes(xs):
        return sum(tree.size(x) or 0 for x in xs)

    def share_count(lo):
        xs = [x for x in hset if hdr_jobs[x] >= lo * nCi]
        return dict(headers=len(xs), bytes=hbytes(xs))

    buckets = collections.OrderedDict()
    edges = [(1, 1, "1 job"), (2, 4, "2-4 jobs"), (5, 9, "5-9 jobs"), (10, 49, "10-49 jobs")]
    for lo, hi, name in edges:
        xs = [x for x in hset if lo <= hdr_jobs[x] <= hi]
        buckets[name] = dict(headers=len(xs), bytes=hbytes(xs))
    for lo_f, hi_f in ((0, 0.1), (0.1, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 0.9), (0.9, 1.01)):
        xs = [x for x in hset if hdr_jobs[x] >= 50 and lo_f * nCi <= hdr_jobs[x] < hi_f * nCi]
        buckets[f">=50 jobs and {int(lo_f * 100)}-{min(100, int(hi_f * 100))}% of jobs"] = dict(
            headers=len(xs), bytes=hbytes(xs))
    by_origin = collections.defaultdict(lambda: [0, 0])
    for x in hset:
        o = origin(tree.rel(x))
        by_origin[o][0] += 1
        by_origin[o][1] += tree.size(x) or 0
    # bytes each job reads from headers that >=90% of jobs also read
    common = {x for x in hset if hdr_jobs[x] >= 0.9 * nCi}
    common_per_job = [sum(tree.size(x) or 0 for x in j["includes"] if x in common) for j in C_inc]
    total_hdr_read = sum(j["header_bytes"] for j in C_inc)
    headers_summary = dict(
        jobs_with_strace=nCi,
        distinct_files=len(hset),
        distinct_h_files=sum(1 for x in hset if x.endswith(".h")),
        distinct_bytes=hbytes(hset),
        by_origin={k: dict(files=v[0], bytes=v[1]) for k, v in sorted(by_origin.items())},
        per_job_files=dist([j["headers_read"] for j in C_inc]),
        per_job_bytes=dist([j["header_bytes"] for j in C_inc]),
        per_job_failed_opens=dist([j["failed_opens"] for j in C_inc]),
        total_bytes_read_all_jobs=total_hdr_read,
        reuse_factor=round(total_hdr_read / max(1, hbytes(hset)), 2),
        jobs_per_header=dist([hdr_jobs[x] for x in hset]),
        read_by_ge_90pct_jobs=share_count(0.9),
        read_by_ge_50pct_jobs=share_count(0.5),
        read_by_ge_10pct_jobs=share_count(0.1),
        read_by_1_job=dict(headers=sum(1 for x in hset if hdr_jobs[x] == 1),
                           bytes=hbytes([x for x in hset if hdr_jobs[x] == 1])),
        reuse_buckets=buckets,
        per_job_bytes_from_ge_90pct_headers=dist(common_per_job),
        top50=[dict(path=tree.rel(x), bytes=tree.size(x), jobs=hdr_jobs[x],
                    share=round(hdr_jobs[x] / nCi, 3)) for x in hset[:50]],
    )

    # --- links (build B wrapper + build C strace)
    ld_by_out = {}
    for p in procs:
        if p["base"] in ("ld", "ld.bfd"):
            o = None
            for i, x in enumerate(p["argv"][:-1]):
                if x == "-o":
                    o = tree.abs(p["cwd"], p["argv"][i + 1])
            if o:
                ld_by_out[o] = p
    for l in links:
        p = ld_by_out.get(l["out_abs"])
        ins = input_files(p, None) if p else []
        ins = [x for x in ins if x != l["out_abs"]]
        l["in_files"] = len(ins) if p else None
        l["in_bytes"] = sum(tree.size(x) or 0 for x in ins) if p else None
        l["output"] = tree.rel(l["out_abs"]) if l["out_abs"] else ""

    # --- write jobs.csv
    def fmt(v):
        return "" if v is None else v

    cols = ["kind", "source", "object", "t_start_s", "user_s", "sys_s", "cpu_s", "wall_s",
            "maxrss_kb", "minflt", "object_bytes", "source_bytes", "headers_read", "header_bytes",
            "failed_opens", "smaps_peak_rss_kb", "smaps_anon_kb", "smaps_file_kb",
            "smaps_cc1_text_rss_kb"]
    with open(os.path.join(out, "jobs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for j in jobs:
            s = j["smaps"]["peak"] if j.get("smaps") else {}
            w.writerow([j["kind"], j["source"], j["object"], j["t_start_s"], j["user_s"],
                        j["sys_s"], j["cpu_s"], j["wall_s"], j["maxrss_kb"], j["minflt"],
                        fmt(j["out_bytes"]), fmt(j["source_bytes"]), fmt(j.get("headers_read")),
                        fmt(j.get("header_bytes")), fmt(j.get("failed_opens")),
                        fmt(s.get("rss_kb")), fmt(s.get("anon_kb")), fmt(s.get("file_kb")),
                        fmt(s.get("cc1_text_rss_kb"))])
    with open(os.path.join(out, "links.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "output", "t_start_s", "user_s", "sys_s", "cpu_s", "wall_s",
                    "maxrss_kb", "out_bytes", "in_files", "in_bytes"])
        for l in links:
            w.writerow([l["kind"], l["output"], l["t_start_s"], l["user_s"], l["sys_s"],
                        l["cpu_s"], l["wall_s"], l["maxrss_kb"], fmt(l["out_bytes"]),
                        fmt(l["in_files"]), fmt(l["in_bytes"])])
    with open(os.path.join(out, "headers.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "path", "bytes", "c_jobs", "all_jobs", "origin"])
        for x in hdrs:
            r = tree.rel(x)
            w.writerow([hid[x], r, fmt(tree.size(x)), hdr_jobs[x], hdr_jobs_all[x], origin(r)])
    with lzma.open(os.path.join(out, "job_headers.txt.xz"), "wt", preset=9) as f:
        f.write("# kind<TAB>object<TAB>header ids (headers.csv id) in first-open order\n")
        for j in jobs:
            if "includes" in j:
                f.write(f"{j['kind']}\t{j['object']}\t"
                        + " ".join(str(hid[x]) for x in j["includes"]) + "\n")
    sm_cols = ["rss_kb", "anon_kb", "heap_kb", "file_kb", "cc1_text_size_kb", "cc1_text_rss_kb",
               "cc1_text_pss_kb", "cc1_other_file_rss_kb", "lib_text_rss_kb",
               "lib_other_rss_kb", "private_dirty_kb", "shared_clean_kb", "private_clean_kb",
               "vsz_kb", "n_maps"]
    with open(os.path.join(out, "cc1_smaps.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["source", "object", "samples", "max_text_rss_kb"] + ["peak_" + c for c in sm_cols])
        for r in sorted(smaps, key=lambda r: r["src_abs"]):
            w.writerow([tree.rel(r["src_abs"]), tree.rel(r["obj_abs"]) if r["obj_abs"] else "",
                        r["n"], r["max_text_rss_kb"]] + [r["peak"].get(c) for c in sm_cols])
    src_cfg = os.path.join(raw, "config")
    if os.path.exists(src_cfg):
        with open(src_cfg) as fi, open(os.path.join(out, "config"), "w") as fo:
            fo.write(fi.read())

    # --- summary
    cc1_path = meta.get("cc1", "")
    cc1_size = os.stat(cc1_path).st_size if cc1_path and os.path.exists(cc1_path) else None
    cc1_text_seg = None
    try:  # the cc1 ELF's executable PT_LOAD segment (file size, memory size)
        import struct
        with open(cc1_path, "rb") as f:
            hdr = f.read(64)
            phoff, = struct.unpack_from("<Q", hdr, 32)
            phentsize, phnum = struct.unpack_from("<HH", hdr, 54)
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
        for i in range(phnum):
            ptype, pflags, _, _, _, filesz, memsz, _ = struct.unpack_from("<IIQQQQQQ", ph, i * phentsize)
            if ptype == 1 and pflags & 1:
                cc1_text_seg = dict(filesz=filesz, memsz=memsz)
    except Exception:
        pass
    smC = [j["smaps"] for j in C if j.get("smaps")]
    smCp = [r["peak"] for r in smC]
    pk = lambda k: dist([s[k] for s in smCp], 1)
    anon_frac = [s["anon_kb"] / s["rss_kb"] for s in smCp if s["rss_kb"]]
    big = [s for s in smCp if s["rss_kb"] >= pct(sorted(x["rss_kb"] for x in smCp), 50)] if smCp else []
    memory = dict(
        note="smaps peak sample of each cc1 (50 ms sampling, build C under strace); maxrss from "
             "wait4 rusage of the gcc driver (build B: max over gcc, cc1, as)",
        wrapper_maxrss_kb=dist([j["maxrss_kb"] for j in C], 1),
        cc1_processes_sampled=len(smCp),
        samples_per_process=dist([r["n"] for r in smC], 1),
        peak_rss_kb=pk("rss_kb"),
        peak_anon_kb=pk("anon_kb"),
        peak_heap_brk_kb=pk("heap_kb"),
        peak_file_backed_kb=pk("file_kb"),
        cc1_text_rss_kb=pk("cc1_text_rss_kb"),
        cc1_text_pss_kb=pk("cc1_text_pss_kb"),
        cc1_max_text_rss_kb=dist([r["max_text_rss_kb"] for r in smC], 1),
        cc1_other_file_rss_kb=pk("cc1_other_file_rss_kb"),
        shared_lib_text_rss_kb=pk("lib_text_rss_kb"),
        shared_lib_other_rss_kb=pk("lib_other_rss_kb"),
        anon_fraction_of_rss=dist(anon_frac, 3),
        anon_fraction_of_rss_upper_half=dist([s["anon_kb"] / s["rss_kb"] for s in big], 3),
        vsz_kb=pk("vsz_kb"),
        sampler_peak_over_wrapper_maxrss=dist(
            [j["smaps"]["peak"]["rss_kb"] / j["maxrss_kb"] for j in C if j.get("smaps") and j["maxrss_kb"]], 3),
    )
    kinds = collections.Counter(j["kind"] for j in jobs)
    cpu_by_kind = collections.defaultdict(float)
    for j in jobs + links:
        cpu_by_kind[j["kind"]] += j["cpu_s"]
    tB = times["B"]
    summary = dict(
        host=dict(kernel=meta.get("uname"), cpu=meta.get("cpu"), nproc=meta.get("nproc"),
                  mem_total_kb=meta.get("mem_total_kb"), date=meta.get("date"),
                  top_cpu={k[7:]: v for k, v in meta.items() if k.startswith("topcpu_")}),
        tools=dict(gcc=meta.get("gcc"), ld=meta.get("ld"), make=meta.get("make"),
                   strace=meta.get("strace")),
        workload=dict(tree=os.path.basename(meta.get("tarball", "")), config="make ARCH=%s tinyconfig"
                      % meta.get("arch"), options_y=None, make_jobs=int(meta.get("jobs", 2))),
        compile_units=dict(c=kinds["c"], asm=kinds["asm"], c_to_s=kinds["c_to_s"], cpp=kinds["cpp"],
                           host_c=kinds["hostc"], host_compile_and_link=kinds["hostlink"],
                           failed_runs=failed, kbuild_CC_lines_build_A=meta.get("cc_lines_A"),
                           matched_to_strace=matched, note="c = target .c -> .o; asm = target .S "
                           "-> .o; host_c = HOSTCC -c (objtool, arch/x86/tools/relocs)"),
        per_job_c=dict(cpu_s=dist([j["cpu_s"] for j in C]), user_s=dist([j["user_s"] for j in C]),
                       sys_s=dist([j["sys_s"] for j in C]), wall_s=dist([j["wall_s"] for j in C]),
                       maxrss_kb=dist([j["maxrss_kb"] for j in C], 1),
                       minflt=dist([j["minflt"] for j in C], 1),
                       source_bytes=dist([j["source_bytes"] for j in C], 1),
                       object_bytes=dist([j["out_bytes"] for j in C], 1),
                       object_over_source=dist([j["out_bytes"] / j["source_bytes"] for j in C
                                                if j["out_bytes"] and j["source_bytes"]], 3)),
        per_job_asm=dict(cpu_s=dist([j["cpu_s"] for j in jobs if j["kind"] == "asm"]),
                         maxrss_kb=dist([j["maxrss_kb"] for j in jobs if j["kind"] == "asm"], 1)),
        per_job_host_c=dict(cpu_s=dist([j["cpu_s"] for j in jobs if j["kind"] == "hostc"]),
                            maxrss_kb=dist([j["maxrss_kb"] for j in jobs if j["kind"] == "hostc"], 1)),
        memory=memory,
        compiler_text=dict(cc1=cc1_path, cc1_file_bytes=cc1_size, cc1_exec_segment=cc1_text_seg,
                           cc1_rxp_mapping_kb=pk("cc1_text_size_kb"),
                           cc1_text_rss_kb_at_peak=pk("cc1_text_rss_kb")),
        headers=headers_summary,
        links=[dict(kind=l["kind"], output=l["output"], cpu_s=l["cpu_s"], wall_s=l["wall_s"],
                    maxrss_kb=l["maxrss_kb"], out_bytes=l["out_bytes"], in_files=l["in_files"],
                    in_bytes=l["in_bytes"]) for l in links],
        link_totals=dict(count=len([l for l in links if l["kind"] == "ld"]),
                         cpu_s=round(sum(l["cpu_s"] for l in links if l["kind"] == "ld"), 3),
                         host_count=len([l for l in links if l["kind"] == "hostld"])),
        build=dict(A_plain=times["A"], B_wrapped=tB, C_strace=times["C"],
                   cpu_by_kind_B={k: round(v, 2) for k, v in sorted(cpu_by_kind.items())},
                   compiler_share_of_cpu_B=round(sum(j["cpu_s"] for j in jobs) / tB["cpu_s"], 3)
                   if tB.get("cpu_s") else None,
                   mean_parallel_compiler_jobs_B=round(sum(j["wall_s"] for j in jobs) / tB["wall_s"], 2)
                   if tB.get("wall_s") else None,
                   processes_execed_C=sum(execs.values()),
                   execs_by_program_C=dict(execs.most_common(25)),
                   wrapper_runs_not_jobs_B=other_count["other"]),
    )
    cfg = os.path.join(raw, "config")
    if os.path.exists(cfg):
        summary["workload"]["options_y"] = sum(1 for l in open(cfg) if l.rstrip().endswith("=y"))
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    write_readme(out, summary)
    print(f"jobs {len(jobs)} (c {kinds['c']}), matched to strace {matched}, smaps {len(smCp)}, "
          f"headers {len(hset)}, links {len(links)}")


def notes(S):
    pj, h, m, b = S["per_job_c"], S["headers"], S["memory"], S["build"]
    A, C = b["A_plain"], b["C_strace"]
    r = []
    try:
        r.append(f"- A job reads {h['per_job_bytes']['mean'] / pj['source_bytes']['mean']:.0f}x "
                 f"more header bytes than source bytes (means {h['per_job_bytes']['mean']:.0f} vs "
                 f"{pj['source_bytes']['mean']:.0f}); the header set of the whole build "
                 f"({h['distinct_bytes'] / 2**20:.1f} MiB) is read {h['reuse_factor']:.0f} times over, so "
                 "after the first few jobs headers are page cache hits.")
        r.append(f"- cc1 probes the include path: {h['per_job_failed_opens']['mean']:.0f} failed opens"
                 f" (ENOENT) per job against {h['per_job_files']['mean']:.0f} files found.")
        r.append(f"- Memory of a cc1 at its peak: {m['peak_anon_kb']['mean'] / 1024:.1f} MiB anon "
                 f"(private, dies with the job) and {m['peak_file_backed_kb']['mean'] / 1024:.1f} MiB "
                 f"file-backed, of which cc1's text {m['cc1_text_rss_kb']['mean'] / 1024:.1f} MiB "
                 f"(shared by the concurrent cc1s: its Pss is {m['cc1_text_pss_kb']['mean'] / 1024:.1f} "
                 "MiB). Small jobs are mostly file-backed; large ones ~70% anon.")
        r.append(f"- Per-job CPU is heavy-tailed (p90/median {pj['cpu_s']['p90'] / pj['cpu_s']['median']:.1f},"
                 f" max/median {pj['cpu_s']['max'] / pj['cpu_s']['median']:.1f}) while max RSS is not "
                 f"(lognormal sigma {pj['maxrss_kb']['lognormal']['sigma']:.2f}).")
        r.append(f"- Under strace the build's sys time grew {C['sys_s'] / A['sys_s']:.1f}x and its wall time "
                 f"{C['wall_s'] / A['wall_s']:.1f}x: use A and B for times, C only for files and memory.")
        r.append(f"- Compiler jobs are {b['compiler_share_of_cpu_B']:.0%} of the build's CPU; kernel link "
                 f"steps are negligible at tinyconfig ({S['link_totals']['cpu_s']} s).")
    except (KeyError, TypeError, ZeroDivisionError):
        pass
    return r


def write_readme(out, S):
    def d(x, unit="", f="{:.3g}"):
        if not x:
            return "n/a"
        g = lambda v: f.format(v)
        s = (f"mean {g(x['mean'])}{unit}, median {g(x['median'])}, p10 {g(x['p10'])}, "
             f"p90 {g(x['p90'])}, max {g(x['max'])}")
        if "lognormal" in x:
            s += f"; lognormal mu {x['lognormal']['mu']:.3f}, sigma {x['lognormal']['sigma']:.3f}"
        return s

    cu, pj, m, h, b, ct = (S["compile_units"], S["per_job_c"], S["memory"], S["headers"],
                           S["build"], S["compiler_text"])
    KiB = lambda v: f"{v / 1024:.1f} MiB" if v is not None else "n/a"
    lines = [
        "# Kernel build measurements (pagesim \"kernel build\" workload)",
        "",
        "Generated by `scripts/measure-kbuild.sh` (raw data reduced by `scripts/measure-kbuild.py`).",
        "Rerun: `scripts/measure-kbuild.sh` (root; about 6 minutes on 2 cores; `--keep` keeps the",
        "work tree and raw logs under /tmp).",
        "",
        "## Setup",
        "",
        f"- Host: {S['host']['cpu']}, {S['host']['nproc']} CPUs, "
        f"{int(S['host']['mem_total_kb'] or 0) // 1048576} GiB, kernel {S['host']['kernel']}; {S['host']['date']}.",
        "- Load: the script waits before each build until the machine is idle (<10% of a CPU"
        " busy over 5 s, at most 15 min). Load average (1/5/15 min) at the start of each build: "
        + "; ".join(f"{k} {S['build'][n].get('loadavg_start')}" for k, n in
                    (("A", "A_plain"), ("B", "B_wrapped"), ("C", "C_strace"))) + ". CPU time used "
        "on the machine during each build by anything but the build (whole-machine busy time "
        "minus the build's): " + "; ".join(f"{k} {S['build'][n].get('other_cpu_s')} s" for k, n in
                    (("A", "A_plain"), ("B", "B_wrapped"), ("C", "C_strace")))
        + " (strace is counted in build C, its smaps sampler is not). Tries (A and B are run again, "
        "3 times at most, while other load was over 5% of their CPU): "
        + ", ".join(f"{k} {S['build'][n].get('tries')}" for k, n in
                    (("A", "A_plain"), ("B", "B_wrapped"), ("C", "C_strace"))) + ".",
        f"- Tools: {S['tools']['gcc']}; {S['tools']['ld']}; {S['tools']['make']}.",
        f"- Tree: {S['workload']['tree']}, `{S['workload']['config']}` "
        f"({S['workload']['options_y']} options =y; the exact .config is `config`). Plain "
        "`make tinyconfig` on x86 makes a 32-bit i386 kernel; ARCH=x86_64 makes the 64-bit one, "
        "which also builds objtool (host C) and runs it on vmlinux.o. No option was added: the "
        f"build has {cu['c']} kernel C units (over the ~250 asked for).",
        "- Three builds, each after `make mrproper` + tinyconfig, all `make -j2`:",
        "  A plain, under `/usr/bin/time -v` (the build's wall and CPU time);",
        "  B with `CC`, `HOSTCC`, `LD`, `HOSTLD` set to a python3 wrapper that spawns the tool and",
        "  records wait4() rusage (user, sys, max RSS: the max over gcc, cc1 and as), wall time and",
        "  the size of the `-o` output (per job figures below come from B);",
        "  C plain, under `strace -f -y -e trace=execve,openat,open` (files each cc1 / ld opened)",
        "  with a sampler reading /proc/PID/smaps of every cc1 every 50 ms (memory split).",
        "",
        "## Compile units",
        "",
        f"- Kernel C units (.c -> .o): **{cu['c']}**; kernel .S -> .o: {cu['asm']}; .c -> .s "
        f"(asm-offsets etc.): {cu['c_to_s']}; preprocessor-only runs (linker scripts): {cu['cpp']};"
        f" host C units (HOSTCC -c: objtool, relocs): {cu['host_c']}; host compile+link in one (fixdep etc.): "
        f"{cu['host_compile_and_link']}.",
        "",
        "## Per kernel C job (build B)",
        "",
        f"- CPU time (user+sys) s: {d(pj['cpu_s'])}.",
        f"- user s: {d(pj['user_s'])}.",
        f"- sys s: {d(pj['sys_s'])}.",
        f"- wall s: {d(pj['wall_s'])}.",
        f"- max RSS KiB: {d(pj['maxrss_kb'], '', '{:.0f}')}.",
        f"- minor faults: {d(pj['minflt'], '', '{:.0f}')}.",
        f"- source bytes: {d(pj['source_bytes'], '', '{:.0f}')}.",
        f"- object bytes: {d(pj['object_bytes'], '', '{:.0f}')}.",
        f"- object/source ratio: {d(pj['object_over_source'])}.",
        f"- .S jobs CPU s: {d(S['per_job_asm']['cpu_s'])}; objtool host C jobs CPU s: "
        f"{d(S['per_job_host_c']['cpu_s'])}.",
        "",
        "## Compiler memory: anon heap vs text (cc1 smaps, build C)",
        "",
        f"- cc1 processes sampled: {m['cc1_processes_sampled']} (samples per process: "
        f"{d(m['samples_per_process'], '', '{:.0f}')}).",
        f"- Peak Rss KiB: {d(m['peak_rss_kb'], '', '{:.0f}')}.",
        f"- of which anonymous (private heap: brk + mmap'd GC pages + COW'd data) KiB: "
        f"{d(m['peak_anon_kb'], '', '{:.0f}')}; [heap] (brk) alone: {d(m['peak_heap_brk_kb'], '', '{:.0f}')}.",
        f"- of which file-backed KiB: {d(m['peak_file_backed_kb'], '', '{:.0f}')}.",
        f"- cc1 text (r-xp of the cc1 binary) resident KiB at the peak sample: "
        f"{d(m['cc1_text_rss_kb'], '', '{:.0f}')}; max over samples: {d(m['cc1_max_text_rss_kb'], '', '{:.0f}')}.",
        f"- cc1 text Pss KiB (shared between the concurrent cc1s): {d(m['cc1_text_pss_kb'], '', '{:.0f}')}.",
        f"- cc1 rodata/data (other cc1 mappings) resident KiB: {d(m['cc1_other_file_rss_kb'], '', '{:.0f}')}.",
        f"- shared-library text resident KiB: {d(m['shared_lib_text_rss_kb'], '', '{:.0f}')}; "
        f"other library mappings: {d(m['shared_lib_other_rss_kb'], '', '{:.0f}')}.",
        f"- anon share of Rss: {d(m['anon_fraction_of_rss'])} (jobs at or above the median Rss: "
        f"{d(m['anon_fraction_of_rss_upper_half'])}).",
        f"- Sampled peak / wrapper max RSS: {d(m['sampler_peak_over_wrapper_maxrss'])} (sampling "
        "every 50 ms misses part of the peak of short jobs).",
        "",
        "## Compiler text",
        "",
        f"- cc1: `{ct['cc1']}`, file {ct['cc1_file_bytes']} bytes ({KiB((ct['cc1_file_bytes'] or 0) / 1024)}); "
        f"executable PT_LOAD segment: {ct['cc1_exec_segment']}.",
        f"- r-xp mapping of cc1 KiB: {d(ct['cc1_rxp_mapping_kb'], '', '{:.0f}')}.",
        f"- resident text at the peak KiB: {d(ct['cc1_text_rss_kb_at_peak'], '', '{:.0f}')}.",
        "",
        "## Headers (build C, strace; kernel C jobs)",
        "",
        f"A job's headers are the files its cc1 opened for reading other than its source, shared "
        f"libraries and /etc, /proc, locale and gconv files (almost all .h; a few .c / .lds.h / generated "
        f"files); bytes are file sizes. Jobs with strace data: {h['jobs_with_strace']}.",
        "",
        f"- Distinct files over the build: **{h['distinct_files']}** ({h['distinct_h_files']} .h), "
        f"**{h['distinct_bytes']}** bytes ({KiB(h['distinct_bytes'] / 1024)}). By origin: "
        + ", ".join(f"{k} {v['files']} files / {v['bytes']} B" for k, v in h["by_origin"].items()) + ".",
        f"- Per job, files: {d(h['per_job_files'], '', '{:.0f}')}.",
        f"- Per job, bytes: {d(h['per_job_bytes'], '', '{:.0f}')}.",
        f"- Per job, failed opens (include-path misses): {d(h['per_job_failed_opens'], '', '{:.0f}')}.",
        f"- Bytes read over all jobs {h['total_bytes_read_all_jobs']}: each distinct header byte is "
        f"read {h['reuse_factor']} times.",
        f"- Jobs per header: {d(h['jobs_per_header'], '', '{:.0f}')}.",
        f"- Read by >=90% of jobs: {h['read_by_ge_90pct_jobs']['headers']} files, "
        f"{h['read_by_ge_90pct_jobs']['bytes']} B; >=50%: {h['read_by_ge_50pct_jobs']['headers']} "
        f"files, {h['read_by_ge_50pct_jobs']['bytes']} B; >=10%: {h['read_by_ge_10pct_jobs']['headers']}"
        f" files, {h['read_by_ge_10pct_jobs']['bytes']} B; by one job only: "
        f"{h['read_by_1_job']['headers']} files, {h['read_by_1_job']['bytes']} B.",
        f"- Bytes per job from the >=90% set: {d(h['per_job_bytes_from_ge_90pct_headers'], '', '{:.0f}')}.",
        "",
        "| jobs reading a header | headers | bytes |",
        "| --- | ---: | ---: |",
    ] + [f"| {k} | {v['headers']} | {v['bytes']} |" for k, v in h["reuse_buckets"].items()] + [
        "",
        "Top 50 headers (share of jobs reading them):",
        "",
        "| header | bytes | jobs | share |",
        "| --- | ---: | ---: | ---: |",
    ] + [f"| {t['path']} | {t['bytes']} | {t['jobs']} | {t['share']:.3f} |" for t in h["top50"]] + [
        "",
        "## Link steps (build B wrapper; inputs from build C strace)",
        "",
        "| kind | output | CPU s | wall s | max RSS KiB | out bytes | input files | input bytes |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ] + [f"| {l['kind']} | {l['output']} | {l['cpu_s']:.3f} | {l['wall_s']:.3f} | {l['maxrss_kb']} | "
         f"{l['out_bytes']} | {l['in_files']} | {l['in_bytes']} |" for l in S["links"]] + [
        "",
        f"Kernel ld runs: {S['link_totals']['count']}, {S['link_totals']['cpu_s']} s CPU in all; "
        f"host ld runs (objtool's `ld -r`): {S['link_totals']['host_count']}. Input bytes are sizes "
        "of the files ld opened (thin archives resolve to their member objects), at the end of the build"
        " (temporary files removed by then count 0).",
        "",
        "## Whole build (make -j2)",
        "",
        "| build | wall s | user s | sys s | CPU s | CPU % | largest process max RSS KiB | other CPU s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ] + [f"| {k} | {v.get('wall_s')} | {v.get('user_s')} | {v.get('sys_s')} | {v.get('cpu_s')} | "
         f"{v.get('cpu_percent')} | {v.get('maxrss_kb')} | {v.get('other_cpu_s')} |"
         for k, v in (("A plain", b["A_plain"]), ("B wrapped", b["B_wrapped"]),
                      ("C strace", b["C_strace"]))] + [
        "",
        f"- CPU by kind in B (s): " + ", ".join(f"{k} {v}" for k, v in b["cpu_by_kind_B"].items())
        + f"; compiler jobs are {b['compiler_share_of_cpu_B']} of B's CPU (the rest: make, sh, "
        "fixdep, objtool, ar, objcopy, the wrapper itself ...).",
        f"- Mean number of compiler jobs running at once in B: {b['mean_parallel_compiler_jobs_B']}.",
        f"- Processes exec'd in C: {b['processes_execed_C']}; by program: "
        + ", ".join(f"{k} {v}" for k, v in b["execs_by_program_C"].items()) + ".",
        "",
        "## Notes",
        "",
    ] + notes(S) + [
        "",
        "## Files",
        "",
        "- `jobs.csv`: one row per compiler run of build B that compiles a file (kind c, asm, "
        "c_to_s, cpp, hostc, hostlink): times, max RSS, minor faults, object and source bytes, "
        "headers read and their bytes and failed opens (build C), smaps peak split (build C).",
        "- `links.csv`: ld runs. `headers.csv`: every file read by a compiler job, with its size "
        "and how many kernel C jobs (c_jobs) and compiler jobs (all_jobs) read it; ids are used by",
        "  `job_headers.txt.xz` (per job, the ids in first-open order).",
        "- `cc1_smaps.csv`: per cc1 process, the peak-Rss smaps sample split into anon / file / cc1 "
        "text / libraries. `summary.json`: all figures above. `config`: the kernel .config.",
    ]
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
