"""A run's or a sweep's report as one static HTML file (``pagesim report``).

``pagesim.html.write(source, "report.html")`` writes a page that needs nothing else to be
read: no script, no stylesheet or font fetched, the plots embedded as SVG images
(``data:`` URLs, each its own document). The same input gives the same bytes.

``source`` is one of:

* a run: a :class:`pagesim.Result`, a report dict, or the path of a file ``pagesim run
  --json`` wrote. The page has the run's summary, the scenario (its TOML, given
  ``scenario=``), the kernel profile and the policies it selects, the timeline (when the
  scenario sets ``sample_interval``), the fault-latency CDF, then tables of the tasks, the
  fault latency, the devices, the memcgs and every counter under its /proc/vmstat name.
* a sweep: the ``out`` directory of :func:`pagesim.sweep` (its Parquet files and
  ``_sweep.json``), or the DataFrame it returned. The page has the sweep's scenario (its
  TOML when the file named in ``_sweep.json`` is still what the sweep ran), its overrides
  and varied keys, a plot of each key metric against the first varied key (a line per value
  of the second, the mean over the seeds with a min-max band), the per-combination means
  and every run.

Input that is not one of these raises :class:`ReportError` (a ValueError) naming the file.
This module is ``pagesim.html`` (``pagesim.report`` is the module of :class:`Result`).
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import os
from typing import Any, Mapping, Sequence

from . import __version__
from .report import _LATENCIES, Result, _pandas

__all__ = ["ReportError", "render", "write"]


class ReportError(ValueError):
    """The input of a report is missing, empty or not a pagesim run or sweep; the message
    names the file."""


# A sweep's metrics that the page plots and tabulates, when its runs have them.
SWEEP_METRICS = (
    "elapsed_s",
    "vmstat.pgmajfault",
    "vmstat.pswpin",
    "vmstat.pswpout",
    "vmstat.pgscan_kswapd",
    "vmstat.pgscan_direct",
    "fault_latency.p99_ns",
)

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.6em; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
pre { background: #f7f7f7; padding: 0.8em; overflow-x: auto; font-size: 0.85em; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; }
.note { color: #666; font-size: 0.9em; }
"""


def _esc(x: Any) -> str:
    """Text for an element's content (quotes stay as they are: a TOML reads as written)."""
    return html.escape(str(x), quote=False)


def _attr(x: Any) -> str:
    """Text for a double-quoted attribute."""
    return html.escape(str(x), quote=True)


def _figure(fig: Any, caption: str) -> str:
    """A matplotlib figure as an <img> of an SVG data URL (an SVG of its own: the ids of
    two figures cannot clash, as they could in inline <svg> elements)."""
    from .plot import save

    buf = io.BytesIO()
    save(fig, buf, format="svg")
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (
        f'<figure><img alt="{_attr(caption)}" src="data:image/svg+xml;base64,{data}">'
        f"<figcaption class=\"note\">{_esc(caption)}</figcaption></figure>\n"
    )


def _kv_table(rows: Sequence[tuple[str, Any]]) -> str:
    body = "".join(f'<tr><th class="l">{_esc(k)}</th><td class="l">{_esc(v)}</td></tr>' for k, v in rows)
    return f"<table>{body}</table>\n"


def _df_table(df: Any, float_format: str = "{:,.6g}") -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return "" if v != v else float_format.format(v)
        if isinstance(v, int) and not isinstance(v, bool):
            return f"{v:,}"
        return str(v)

    head = "".join(f"<th>{_esc(c)}</th>" for c in df.columns)
    body = []
    for row in df.itertuples(index=False):
        cells = "".join(
            f'<td class="l">{_esc(fmt(v))}</td>' if isinstance(v, str) else f"<td>{_esc(fmt(v))}</td>" for v in row
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>\n"


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head>\n<body>\n"
        f"<h1>{_esc(title)}</h1>\n{body}"
        f"<p class=\"note\">Written by pagesim {_esc(__version__)} (pagesim.html).</p>\n</body></html>\n"
    )


# --- input ---------------------------------------------------------------------------


def _load_result(path: str) -> Result:
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ReportError(f"{path}: cannot read: {e.strerror or e}") from None
    if not text.strip():
        raise ReportError(f"{path}: empty file: expected the JSON report of `pagesim run --json`")
    try:
        report = json.loads(text)
    except ValueError as e:
        raise ReportError(f"{path}: not JSON ({e}): expected the report of `pagesim run --json`") from None
    return _check_report(report, path)


def _check_report(report: Any, where: str) -> Result:
    if not isinstance(report, Mapping):
        raise ReportError(f"{where}: not a pagesim run's report: expected a JSON object, got {type(report).__name__}")
    missing = [k for k in ("scenario", "elapsed_ns", "counters") if k not in report]
    if missing:
        hint = " (that is `pagesim run --seeds`' output, not one run's)" if "metrics" in report else ""
        raise ReportError(
            f"{where}: not a pagesim run's report{hint}: no {', '.join(missing)} "
            "(expected what `pagesim run --json` writes)"
        )
    return Result(dict(report))


def _load_sweep(path: str) -> tuple[Any, dict[str, Any]]:
    from ._sweep import MANIFEST, read_sweep

    names = os.listdir(path)
    manifest: dict[str, Any] = {}
    if MANIFEST in names:
        try:
            with open(os.path.join(path, MANIFEST), encoding="utf-8") as f:
                manifest = json.load(f)
        except (OSError, ValueError) as e:
            raise ReportError(f"{os.path.join(path, MANIFEST)}: cannot read the sweep's manifest: {e}") from None
    if not any(n.endswith(".parquet") and not n.startswith((".", "_")) for n in names):
        what = "a sweep with no finished run" if manifest else "not a sweep's out directory"
        raise ReportError(f"{path}: {what}: no Parquet files (expected the out directory of pagesim sweep)")
    try:
        df = read_sweep(path)
    except (OSError, ValueError) as e:
        raise ReportError(f"{path}: cannot read the sweep's Parquet files: {e}") from None
    if "seed" not in df.columns or "status" not in df.columns:
        raise ReportError(f"{path}: the Parquet files are not a pagesim sweep's (no seed and status columns)")
    return df, manifest


def _source(source: Any) -> tuple[str, Any, dict[str, Any]]:
    """("run", Result, {}) or ("sweep", DataFrame, manifest) of what write() was given."""
    pd = _pandas()
    if isinstance(source, Result):
        return "run", source, {}
    if isinstance(source, pd.DataFrame):
        if "seed" not in source.columns or "status" not in source.columns:
            raise ReportError("the DataFrame is not a sweep's (no seed and status columns)")
        return "sweep", source, {}
    if isinstance(source, Mapping):
        return "run", _check_report(source, "the report dict"), {}
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            df, manifest = _load_sweep(path)
            return "sweep", df, manifest
        if not os.path.exists(path):
            raise ReportError(f"{path}: no such file or directory")
        return "run", _load_result(path), {}
    raise TypeError(f"expected a Result, a report dict, a sweep DataFrame or a path, got {type(source).__name__}")


def _scenario_text(scenario: str | os.PathLike[str] | None) -> str | None:
    if scenario is None:
        return None
    path = os.fspath(scenario)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError as e:
        raise ReportError(f"{path}: cannot read the scenario: {e.strerror or e}") from None


# --- a run ---------------------------------------------------------------------------


def _profile_section(name: str) -> str:
    from .scenario import profiles

    for p in profiles():
        if p.get("name") == name:
            rows = [("name", name), ("description", p.get("description", ""))]
            rows += [(k, v) for k, v in p.items() if k not in ("name", "description") and isinstance(v, (str, int, float))]
            return _kv_table(rows)
    return f'<p class="note">{_esc(name)}: not a profile of this pagesim ({_esc(__version__)}).</p>\n'


def _run_body(r: Result, scenario_text: str | None) -> str:
    pd = _pandas()
    from . import plot

    out = []
    state = "completed" if r.completed else f"stopped: {r.stop_reason}"
    out.append(_kv_table([
        ("scenario", r.scenario),
        ("profile", r.profile),
        ("seed", r._report.get("seed")),
        ("elapsed (simulated)", f"{r.elapsed_s:.6g} s"),
        ("state", state),
        ("operations", f"{r.ops_done:,} of {r.ops_total:,}"),
    ]))
    if r.stop_detail:
        out.append(f"<pre>{_esc(r.stop_detail)}</pre>\n")
    out.append("<h2>Plots</h2>\n")
    if r.timeline:
        out.append(_figure(plot.timeline(r), "Timeline: memory and swap at each interval's end, events per second"))
    else:
        out.append('<p class="note">No timeline: the scenario sets no sample_interval.</p>\n')
    if r.fault_latency.get("count"):
        runs = {"every fault": r}
        fig = plot.latency_cdf(runs, histogram="fault_latency")
        if r._report.get("major_fault_latency", {}).get("count"):
            df = r.latency_df()
            major = df[df["histogram"] == "major_fault_latency"]
            fig.axes[0].step(major["upper_ns"] / 1e3, major["cdf"], where="post", label="major faults", linewidth=1.4)
            fig.axes[0].legend(loc="lower right", fontsize="small")
        out.append(_figure(fig, "Fault latency: the fraction of faults that took at most that long"))

    out.append("<h2>Scenario</h2>\n")
    if scenario_text is not None:
        out.append('<p class="note">The file as it is now; the overrides (--set) the run had are not in '
                   "its report.</p>\n")
        out.append(f"<pre>{_esc(scenario_text)}</pre>\n")
    else:
        out.append(f'<p class="note">{_esc(r.scenario)} (its file was not given: pagesim report --scenario FILE '
                   "includes it).</p>\n")
    out.append("<h2>Kernel profile</h2>\n")
    out.append(_profile_section(r.profile))

    if r.tasks:
        out.append("<h2>Tasks</h2>\n")
        tasks = pd.DataFrame([
            {"task": t["name"], "elapsed_s": t["elapsed_ns"] / 1e9, "cpu_s": t.get("cpu_ns", 0) / 1e9,
             "faults": t.get("faults", 0), "major_faults": t.get("major_faults", 0),
             "completed": str(t.get("completed", True)), "oom_killed": str(t.get("oom_killed", False))}
            for t in r.tasks
        ])
        out.append(_df_table(tasks))
    out.append("<h2>Fault latency</h2>\n")
    lat = pd.DataFrame([
        {"histogram": name, **{k: r._report.get(name, {}).get(k, 0) for k in ("count", "median_ns", "p99_ns", "mean_ns")}}
        for name in _LATENCIES
    ])
    out.append(_df_table(lat))
    io_df = r.io_df()
    if not io_df.empty:
        out.append("<h2>Devices</h2>\n")
        cols = ["name", "model", "reads", "writes", "read_bytes", "write_bytes", "busy_ns", "r_await_ms", "w_await_ms"]
        out.append(_df_table(io_df[[c for c in cols if c in io_df.columns]]))
    if r.memcg:
        out.append("<h2>Memory cgroups</h2>\n")
        rows = []
        for name, m in r.memcg.items():
            row = {"memcg": name, "parent": m.get("parent") or "", "usage_bytes": m.get("usage_bytes", 0),
                   "max_bytes": "" if m.get("max_bytes") is None else m["max_bytes"], "swap_bytes": m.get("swap_bytes", 0)}
            row.update({f"{k} (pages)": v for k, v in m.get("lru", {}).items()})
            rows.append(row)
        out.append(_df_table(pd.DataFrame(rows)))
    out.append("<h2>Counters</h2>\n")
    out.append('<p class="note">Every counter and gauge of the run under its kernel name, as /proc/vmstat '
               "prints it (gauges are their values at the end of the run, in pages).</p>\n")
    counters = pd.DataFrame({"/proc/vmstat name": list(r.counters), "value": list(r.counters.values())})
    out.append(_df_table(counters.sort_values("/proc/vmstat name", kind="stable")))
    return "".join(out)


# --- a sweep -------------------------------------------------------------------------


def _sweep_scenario(manifest: Mapping[str, Any]) -> str | None:
    """The sweep's scenario text, when the file the manifest names still has the content
    the sweep ran (the same sha256 as pagesim.sweep computes)."""
    origin = manifest.get("scenario")
    if not isinstance(origin, str) or not os.path.isfile(origin):
        return None
    try:
        with open(origin, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None
    digest = hashlib.sha256(f"toml\0{text}".encode()).hexdigest()
    return text if digest == manifest.get("scenario_sha256") else None


def _sweep_body(df: Any, manifest: Mapping[str, Any], scenario_text: str | None) -> str:
    from . import plot

    keys = list(df.columns[: list(df.columns).index("seed")])
    # Rows by the keys' values (read_sweep gives them in cell-id order), then seed.
    ranks = {k: {v: i for i, v in enumerate(plot.order(df[k]))} for k in keys}
    df = df.sort_values([*keys, "seed"], key=lambda c: c.map(ranks[c.name]) if c.name in ranks else c, kind="stable")
    ok = df[df["status"] != "failed"]
    metrics = [m for m in SWEEP_METRICS if m in df.columns and ok[m].notna().any()]
    out = []
    statuses = ", ".join(f"{n} {s}" for s, n in df["status"].value_counts(sort=False).items())
    out.append(_kv_table([
        ("scenario", manifest.get("scenario", "")),
        ("set (every run)", " ".join(manifest.get("set", [])) or "none"),
        ("varied keys", "; ".join(f"{k} = {', '.join(map(str, ranks[k]))}" for k in keys) or "none"),
        ("seeds", ", ".join(str(s) for s in sorted(set(df["seed"].dropna().astype(int))))),
        ("runs", f"{len(df)} ({statuses})"),
    ]))
    out.append("<h2>Scenario</h2>\n")
    text = scenario_text if scenario_text is not None else _sweep_scenario(manifest)
    if text is not None:
        out.append(f"<pre>{_esc(text)}</pre>\n")
    else:
        out.append('<p class="note">The scenario file is not at hand or has changed since the sweep '
                   "(pagesim report --scenario FILE includes it).</p>\n")
    if keys and metrics:
        out.append("<h2>Plots</h2>\n")
        x, hue = keys[0], (keys[1] if len(keys) > 1 else None)
        for m in metrics:
            if ok[m].nunique() < 2 and len(ok) > 1 and m != "elapsed_s":
                continue  # a counter that no run moved says nothing against the keys
            fig = plot.sweep(ok, x=x, y=m, hue=hue, band="minmax")
            out.append(_figure(fig, f"{m} against {x}" + (f", a line per {hue}" if hue else "")))
    out.append("<h2>Mean per combination</h2>\n")
    if keys:
        g = ok.groupby(keys, sort=False)
        means = g[metrics].mean().reset_index()
        means.insert(len(keys), "runs", g.size().values)
    else:
        means = ok[metrics].mean().to_frame().T
        means.insert(0, "runs", len(ok))
    out.append(_df_table(means))
    out.append("<h2>Every run</h2>\n")
    cols = [*keys, "seed", "status", *metrics]
    runs = df[[c for c in cols if c in df.columns]]
    out.append(_df_table(runs))
    failed = df[df["status"] == "failed"]
    if len(failed):
        out.append("<h2>Failed runs</h2>\n")
        out.append(_df_table(failed[[*keys, "seed", "error"]]))
    return "".join(out)


# --- the API -------------------------------------------------------------------------


def render(
    source: Any,
    *,
    scenario: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> str:
    """The report page of ``source`` (see the module's doc) as HTML text. ``scenario``
    names the scenario file, whose TOML the page then shows (a sweep finds its own when the
    file is unchanged); ``title`` replaces the page's title."""
    kind, data, manifest = _source(source)
    text = _scenario_text(scenario)
    if kind == "run":
        return _page(title or f"pagesim run: {data.scenario}", _run_body(data, text))
    name = os.path.basename(str(manifest.get("scenario", ""))) or "sweep"
    return _page(title or f"pagesim sweep: {name}", _sweep_body(data, manifest, text))


def write(
    source: Any,
    path: str | os.PathLike[str],
    *,
    scenario: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> str:
    """Writes :func:`render`'s page to ``path`` (UTF-8) and returns the path."""
    page = render(source, scenario=scenario, title=title)
    path = os.fspath(path)
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(page)
    except OSError as e:
        raise ReportError(f"{path}: cannot write the report: {e.strerror or e}") from None
    return path


def main(argv: Sequence[str] | None = None) -> int:
    """``pagesim report INPUT -o OUT``: exit status 0, or 2 with a message naming the file
    for input that is not a run's report or a sweep's directory."""
    import argparse
    import sys

    # The Rust CLI (crates/pagesim-cli/src/report.rs) documents these options for
    # `pagesim report --help` and passes them on as they are.
    p = argparse.ArgumentParser(prog="pagesim report", description="Write a run's or a sweep's report as one HTML file.")
    p.add_argument("input", help="RESULT.json (pagesim run --json) or a sweep's out directory")
    p.add_argument("-o", "--out", required=True, metavar="FILE", help="the HTML file to write")
    p.add_argument("--scenario", metavar="FILE", help="the scenario file, shown in the report")
    p.add_argument("--title", help="the page's title")
    a = p.parse_args(argv)
    try:
        write(a.input, a.out, scenario=a.scenario, title=a.title)
    except (ReportError, ImportError) as e:
        print(f"pagesim: {e}", file=sys.stderr)
        return 2
    print(f"report: {a.out}", file=sys.stderr)
    return 0
