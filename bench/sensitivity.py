"""Issue 21: how much the setup parameters the seeds leave unstated move the two seed cells
pagesim does not reproduce, and where the published figure falls in that envelope.

The cells (docs/model.md, "Seed 000" and "Seed 004"):

* seed 000, HDD Seq Anon and HDD Seq Shmem: elapsed time of HughPC0 (page_cluster 0) over
  HughNew (page_cluster 3), both under Hugh Dickins' adaptive swap-in readahead; published
  121542/76904 = 1.58 (Anon) and 118322/72947 = 1.62 (Shmem).
* seed 004, readahead thrashing, max throughput: the largest aggregate read throughput over
  10-second windows, legacy (2.6.20) and on-demand readahead; published 5 and 15 MiB/s.

Each parameter is varied one at a time around the scenario's defaults (the default run is
shared), then, with --joint, a small grid of the parameters that moved the cell. Nothing here
changes a scenario: every run is the published table's scenario with `--set` overrides.

Seed 000 runs through `pagesim.sweep` (a Parquet dataset per parameter under OUT/s000/,
resumed by running the script again). Seed 004's metric is a maximum over the run's
timeline, which a sweep's rows do not carry, so its cells run as `pagesim reproduce` of the
table (the metric computed by pagesim exactly as the table defines it) with the `modern`
column left out, one Parquet file per parameter value under OUT/s004/, skipped when present.

    .venv/bin/python bench/sensitivity.py [--out DIR] [--jobs N] [--seeds N] [--only 000|004]
                                          [--joint] [--docs]

Writes OUT/values.csv (every point), OUT/summary.csv and OUT/summary.md (per cell and
parameter: the metric at each value, its envelope and whether the published figure is
inside) and, with --docs, docs/sensitivity-values.csv and docs/img/sensitivity-*.png.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
PAGESIM = ROOT / "target" / "release" / "pagesim"
S000 = ROOT / "scenarios" / "seed-000-swapin-readahead" / "base.toml"
S004_TABLE = ROOT / "scenarios" / "seed-004-readahead" / "2-thrashing-throughput" / "reproduce.toml"


@dataclass(frozen=True)
class Param:
    """A setup parameter the seed does not state: its scenario key, the scenario's value
    (`default`, as text for the report) and the other values of its plausible range
    (docs/sensitivity.md gives each range's source)."""

    name: str
    key: str
    default: str
    values: tuple
    why: str = ""


# Seed 000: the swap disk (device "hdd") and the machine. Ranges: docs/sensitivity.md.
PARAMS_000 = [
    Param("write_cache", "device.hdd.write_cache", "false", (True,), "drive WCE bit (hdparm -W)"),
    Param("nr_requests", "device.hdd.nr_requests", "128", (32, 64, 256, 512), "queue/nr_requests"),
    Param("scheduler", "device.hdd.scheduler", "cfq", ("mq-deadline", "none"), "3.6 elevators: cfq, deadline, noop"),
    Param("slice_idle", "device.hdd.iosched.slice_idle", "8ms", ("0ms",), "cfq tunable"),
    Param("kernel_reserved", "machine.kernel_reserved", "ram/64+32MiB", ("24MB", "100MB", "200MB", "300MB"),
          "kernel and other processes"),
    Param("max_sectors_kb", "device.hdd.max_sectors_kb", "512", (128, 256), "queue/max_sectors_kb"),
    Param("queue_depth", "device.hdd.queue_depth", "31", (1,), "NCQ off (IDE mode, broken-NCQ list)"),
    Param("cache_size", "device.hdd.cache_size", "8MiB", ("16MiB", "64MiB"), "drive buffer of a 2012 disk"),
]
# The rows of the cell and the two columns its ratio is made of (reproduce.toml).
SET_000 = {"kernel.swap_readahead": "adaptive-2012", "swap.0.device": "hdd", "task.0.step.0.pattern": "seq"}
ROWS_000 = {"anon": "HDD Seq Anon", "shmem": "HDD Seq Shmem"}
PUBLISHED_000 = {  # centiseconds: (HughNew, HughPC0)
    "anon": (76904, 121542),
    "shmem": (72947, 118322),
}
# The parameters that moved the cell one at a time (docs/sensitivity.md), crossed; Anon only.
JOINT_000 = {
    "device.hdd.queue_depth": [1, 31],
    "device.hdd.iosched.slice_idle": ["0ms", "8ms"],
    "device.hdd.max_sectors_kb": [128, 512],
    "device.hdd.write_cache": [False, True],
    "device.hdd.nr_requests": [128, 512],
}

# Seed 004: the disk ("disk"), the machine and the streams.
PARAMS_004 = [
    Param("pace", "task.0.step.0.pace", "catch-up", ("steady",), "stream pacing"),
    Param("record", "task.0.step.0.record", "4KB", ("16KB", "64KB"), "read(2) size of a stream"),
    Param("scheduler", "device.disk.scheduler", "mq-deadline", ("cfq", "none"), "2.6.20 elevators"),
    Param("nr_requests", "device.disk.nr_requests", "128", (64, 256, 512), "queue/nr_requests"),
    Param("kernel_reserved", "machine.kernel_reserved", "12MB", ("8MB", "20MB", "32MB"),
          "kernel and other processes"),
    Param("queue_depth", "device.disk.queue_depth", "31", (1,), "NCQ off"),
    Param("max_sectors_kb", "device.disk.max_sectors_kb", "512", (128,), "queue/max_sectors_kb"),
    Param("cache_segments", "device.disk.cache_segments", "16", (4, 32), "drive cache segmentation"),
    Param("write_cache", "device.disk.write_cache", "false", (True,), "drive WCE bit (no writes here)"),
]
PUBLISHED_004 = {"legacy": 5.0, "ondemand": 15.0}
JOINT_004 = {
    "task.0.step.0.pace": ["catch-up", "steady"],
    "device.disk.scheduler": ["mq-deadline", "cfq"],
    "device.disk.nr_requests": [128, 512],
    "device.disk.queue_depth": [1, 31],
}


def text(v) -> str:
    """A value as `--set` and the report write it."""
    return str(v).lower() if isinstance(v, bool) else str(v)


# ---------------------------------------------------------------------------------------
# Seed 000: pagesim.sweep


def sweep_000(out: Path, grid: dict, seeds: int, jobs: int, rows: list[str]) -> pd.DataFrame:
    import pagesim

    grid = {**grid, "region.map.kind": rows, "vm.page-cluster": [3, 0]}
    return pagesim.sweep(S000, grid=grid, seeds=seeds, set=SET_000, jobs=jobs, out=str(out), progress=True)


def ratios_000(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """PC0/HughNew per combination of `keys`, map kind and seed, with both elapsed times (cs)."""
    bad = df[df["status"] != "ok"]
    if len(bad):
        raise SystemExit(f"sensitivity: {len(bad)} seed 000 runs did not complete: {bad[keys + ['status']].to_dict('records')}")
    df = df.assign(elapsed_cs=df["elapsed_s"] * 100)
    idx = keys + ["region.map.kind", "seed"]
    wide = df.pivot_table(index=idx, columns="vm.page-cluster", values="elapsed_cs").reset_index()
    wide = wide.rename(columns={3: "hughnew_cs", 0: "pc0_cs"})
    wide["ratio"] = wide["pc0_cs"] / wide["hughnew_cs"]
    return wide


def run_000(out: Path, seeds: int, jobs: int, rows: list[str], joint: bool) -> list[dict]:
    records = []
    # The default runs with at least two seeds, to show how much the seed alone moves the cell.
    base = ratios_000(sweep_000(out / "s000" / "default", {}, max(seeds, 2), jobs, rows), [])
    for kind in rows:
        b = base[base["region.map.kind"] == kind]
        records.append(rec000(kind, "default", "-", "default", b))
    for p in PARAMS_000:
        r = ratios_000(sweep_000(out / "s000" / p.name, {p.key: list(p.values)}, seeds, jobs, rows), [p.key])
        for kind in rows:
            records.append(rec000(kind, p.name, p.key, p.default, base[base["region.map.kind"] == kind], default=True))
            for v in p.values:
                sel = r[(r["region.map.kind"] == kind) & (r[p.key].map(text) == text(v))]
                records.append(rec000(kind, p.name, p.key, text(v), sel))
    if joint:
        keys = list(JOINT_000)
        r = ratios_000(sweep_000(out / "s000" / "joint", JOINT_000, seeds, jobs, ["anon"]), keys)
        for combo, sel in r.groupby(keys):
            label = " ".join(f"{k.rsplit('.', 1)[1]}={text(v)}" for k, v in zip(keys, combo))
            records.append(rec000("anon", "joint", "+".join(keys), label, sel))
    return records


def rec000(kind, param, key, value, sel, default=False) -> dict:
    new, pc0 = PUBLISHED_000[kind]
    return {
        "cell": f"seed 000 {ROWS_000[kind]} PC0/HughNew",
        "param": param,
        "key": key,
        "value": value + (" (default)" if default else ""),
        "metric": sel["ratio"].mean(),
        "metric_sd": sel["ratio"].std(ddof=1) if len(sel) > 1 else 0.0,
        "n": len(sel),
        "published": round(pc0 / new, 3),
        "hughnew_cs": sel["hughnew_cs"].mean(),
        "pc0_cs": sel["pc0_cs"].mean(),
    }


# ---------------------------------------------------------------------------------------
# Seed 004: pagesim reproduce of the thrashing table, legacy and ondemand columns


def table_004(out: Path) -> Path:
    """The thrashing table without its `modern` column (not in the seed), its scenario
    path made absolute; written under OUT so the original stays as it is."""
    src = S004_TABLE.read_text()
    blocks = re.split(r"(?m)^(?=\[\[)", src)
    kept = [b for b in blocks if not (b.startswith("[[column]]") and re.search(r'(?m)^name = "modern"', b))]
    assert len(kept) == len(blocks) - 1, "the thrashing table has a modern column"
    scenario = (S004_TABLE.parent / "../thrashing.toml").resolve()
    head = re.sub(r'(?m)^scenario = ".*"$', f'scenario = "{scenario}"', kept[0])
    d = out / "s004" / "table"
    d.mkdir(parents=True, exist_ok=True)
    (d / "reproduce.toml").write_text(head + "".join(kept[1:]))
    return d


def reproduce_cells(table: str, key: str, sets: dict, seeds: int, jobs: int) -> list[dict]:
    """`pagesim reproduce TABLE --json` with `sets`: one dict per cell."""
    cmd = [str(PAGESIM), "reproduce", table, "--json", "--quiet", "-j", str(jobs), "--seeds", str(seeds)]
    for k, v in sets.items():
        cmd += ["--set", f"{k}={text(v)}"]
    print(f"sensitivity: {key}", " ".join(f"{k}={text(v)}" for k, v in sets.items()) or "(defaults)",
          file=sys.stderr, flush=True)
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"sensitivity: {' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")
    return [json.loads(x) for x in done.stdout.splitlines()]


def cached(out: Path, key: str, what: list, make) -> pd.DataFrame:
    """OUT/<key>/<hash of what>.parquet, made by `make()` when absent (written whole or not
    at all), so that a second run of the script reads what the first ran."""
    tag = hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]
    path = out / key / f"{tag}.parquet"
    if path.exists():
        return pd.read_parquet(path)
    df = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    df.to_parquet(tmp)
    os.replace(tmp, path)
    return df


def reproduce_004(table: Path, out: Path, sets: dict, seeds: int, jobs: int) -> pd.DataFrame:
    """The table's cells with `sets`, from OUT/s004/<hash>.parquet when a previous run left
    it (the file's name hashes the overrides, the seeds and the table's text)."""
    what = [[f"{k}={text(v)}" for k, v in sets.items()], seeds, (table / "reproduce.toml").read_text()]
    return cached(out, "s004", what, lambda: frame_004(reproduce_cells(str(table), "seed 004", sets, seeds, jobs), sets))


def frame_004(cells: list[dict], sets: dict) -> pd.DataFrame:
    rows = []
    for c in cells:
        values = c.get("values") or [c["value"]]
        for seed, v in enumerate(values, 1):
            rows.append({**{k: text(v2) for k, v2 in sets.items()}, "column": c["column"], "seed": seed, "max_read_mibps": v})
    return pd.DataFrame(rows)


def table_000(out: Path, runs: pd.DataFrame, jobs: int) -> pd.DataFrame:
    """Seed 000's whole table at the default and at the joint points that bring HDD Seq Anon
    within 0.1 of its published ratio: does such a setup contradict the table's other cells?
    Per point, the sum over the 40 published cells of |ratio - published ratio| (the HDD rows'
    part of it too) and the HDD rows' ratios. The SSD rows do not use device hdd."""
    near = runs[(runs["param"] == "joint") & runs["cell"].str.contains("Anon")
                & ((runs["metric"] - runs["published"]).abs() <= 0.1)]
    points = [{}] + [dict(kv.split("=", 1) for kv in v.split()) for v in near["value"]]
    rows = []
    for pt in points:
        full = {k.rsplit(".", 1)[1]: k for k in JOINT_000}
        sets = {full[k]: v for k, v in pt.items()}
        what = [[f"{k}={v}" for k, v in sets.items()], "seed-000 table"]

        def make(sets=sets):
            cells = reproduce_cells("seed-000", "seed 000 table", sets, 1, jobs)
            return pd.DataFrame([{"row": c["row"], "column": c["column"], "ratio": c["ratio"],
                                  "published_ratio": c["published_ratio"]} for c in cells])

        df = cached(out, "s000-table", what, make)
        df = df.dropna(subset=["ratio", "published_ratio"])
        dev = (df["ratio"] - df["published_ratio"]).abs()
        hdd = df["row"].str.startswith("HDD")
        rec = {"point": " ".join(f"{k}={v}" for k, v in pt.items()) or "default", "cells": len(df),
               "sum_abs_dev": dev.sum(), "sum_abs_dev_hdd": dev[hdd].sum()}
        for _, c in df[hdd].iterrows():
            rec[f"{c['row']} {c['column']}"] = c["ratio"]
        rows.append(rec)
    return pd.DataFrame(rows)


def run_004(out: Path, seeds: int, jobs: int, joint: bool) -> list[dict]:
    table = table_004(out)
    records = []
    base = reproduce_004(table, out, {}, max(seeds, 2), jobs)
    records += rec004("default", "-", "default", base)
    for p in PARAMS_004:
        records += rec004(p.name, p.key, p.default + " (default)", base)
        for v in p.values:
            records += rec004(p.name, p.key, text(v), reproduce_004(table, out, {p.key: v}, seeds, jobs))
    if joint:
        import itertools

        keys = list(JOINT_004)
        for combo in itertools.product(*JOINT_004.values()):
            sets = dict(zip(keys, combo))
            label = " ".join(f"{k.rsplit('.', 1)[1]}={text(v)}" for k, v in sets.items())
            records += rec004("joint", "+".join(keys), label, reproduce_004(table, out, sets, seeds, jobs))
    return records


def rec004(param, key, value, df) -> list[dict]:
    mean = df.groupby("column")["max_read_mibps"].mean()
    per_seed = df.pivot_table(index="seed", columns="column", values="max_read_mibps")
    ratio = per_seed["ondemand"] / per_seed["legacy"]
    out = []
    for col, pub in PUBLISHED_004.items():
        out.append({"cell": f"seed 004 thrashing max throughput {col} (MiB/s)", "param": param, "key": key,
                    "value": value, "metric": mean[col], "metric_sd": df[df["column"] == col]["max_read_mibps"].std(ddof=1),
                    "n": int((df["column"] == col).sum()), "published": pub})
    out.append({"cell": "seed 004 thrashing max throughput ondemand/legacy", "param": param, "key": key,
                "value": value, "metric": ratio.mean(), "metric_sd": ratio.std(ddof=1), "n": len(ratio),
                "published": PUBLISHED_004["ondemand"] / PUBLISHED_004["legacy"]})
    return out


# ---------------------------------------------------------------------------------------
# Summary and plot


def envelopes(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell and parameter: the metric's range over the parameter's values (the default
    included) and whether the published figure lies in it."""
    rows = []
    for (cell, param), g in runs[runs["param"] != "default"].groupby(["cell", "param"], sort=False):
        lo, hi = g["metric"].min(), g["metric"].max()
        pub = g["published"].iloc[0]
        rows.append({"cell": cell, "param": param, "values": len(g), "min": lo, "max": hi, "published": pub,
                     "inside": lo <= pub <= hi,
                     "at_min": g.loc[g["metric"].idxmin(), "value"], "at_max": g.loc[g["metric"].idxmax(), "value"]})
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame, floatfmt: str = "{:.3g}") -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for _, r in df.iterrows():
        cells = [floatfmt.format(v) if isinstance(v, float) else str(v) for v in r]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(runs: pd.DataFrame, img_dir: Path) -> list[Path]:
    """One PNG per cell: for each parameter a horizontal range of the metric over its values
    (a dot per value), the default as a vertical line and the published figure as another.
    Kept to this one function so it can become pagesim.plot.sweep when that exists."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for cell, g in runs.groupby("cell", sort=False):
        g = g[g["param"] != "default"]
        params = list(dict.fromkeys(g["param"]))
        fig, ax = plt.subplots(figsize=(7, 0.45 * len(params) + 1.4))
        for i, p in enumerate(params):
            s = g[g["param"] == p]
            ax.hlines(i, s["metric"].min(), s["metric"].max(), color="tab:blue", lw=3, alpha=0.5)
            ax.plot(s["metric"], [i] * len(s), "o", color="tab:blue", ms=4)
        default = runs[(runs["cell"] == cell) & (runs["param"] == "default")]["metric"].iloc[0]
        ax.axvline(default, color="grey", ls="--", label=f"pagesim default {default:.3g}")
        pub = g["published"].iloc[0]
        ax.axvline(pub, color="tab:red", label=f"published {pub:.3g}")
        ax.set_yticks(range(len(params)), params)
        ax.invert_yaxis()
        ax.set_title(cell, fontsize=10)
        ax.legend(fontsize=8, loc="best")
        fig.tight_layout()
        name = re.sub(r"[^a-z0-9]+", "-", cell.lower()).strip("-")
        path = img_dir / f"sensitivity-{name}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(ROOT / "target" / "sensitivity"), help="results directory (resumed)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--seeds", type=int, default=1, help="seeds 1..N per run")
    ap.add_argument("--only", choices=["000", "004"], help="one seed's cell")
    ap.add_argument("--rows", default="anon,shmem", help="seed 000 rows (anon, shmem)")
    ap.add_argument("--joint", action="store_true", help="also the small joint grid")
    ap.add_argument("--docs", action="store_true",
                    help="write docs/img/sensitivity-*.png and docs/sensitivity-values.csv (every point)")
    a = ap.parse_args()
    if a.jobs < 1 or a.seeds < 1:
        ap.error("--jobs and --seeds must be at least 1")
    rows = [r for r in a.rows.split(",") if r]
    if not rows or set(rows) - set(ROWS_000):
        ap.error(f"--rows: expected some of {', '.join(ROWS_000)}, got {a.rows!r}")
    if not PAGESIM.exists():
        raise SystemExit(f"sensitivity: {PAGESIM} not found (bash scripts/install.sh)")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    if a.only in (None, "000"):
        records += run_000(out, a.seeds, a.jobs, rows, a.joint)
    if a.only in (None, "004"):
        records += run_004(out, a.seeds, a.jobs, a.joint)
    runs = pd.DataFrame(records)
    env = envelopes(runs)
    if a.joint and a.only in (None, "000") and "anon" in rows:
        table = table_000(out, runs, a.jobs)
        table.to_csv(out / "table000.csv", index=False)
        print(markdown(table[["point", "cells", "sum_abs_dev", "sum_abs_dev_hdd"]]))
    runs.to_csv(out / "values.csv", index=False)
    env.to_csv(out / "summary.csv", index=False)
    (out / "summary.md").write_text("## Values\n\n" + markdown(runs) + "\n## Envelopes\n\n" + markdown(env))
    print(markdown(env))
    if a.docs:
        runs.to_csv(ROOT / "docs" / "sensitivity-values.csv", index=False, float_format="%.4g")
        if a.joint and (out / "table000.csv").exists():
            pd.read_csv(out / "table000.csv").to_csv(ROOT / "docs" / "sensitivity-table000.csv", index=False,
                                                     float_format="%.4g")
        for p in plot(runs, ROOT / "docs" / "img"):
            print("wrote", p.relative_to(ROOT))


if __name__ == "__main__":
    main()
