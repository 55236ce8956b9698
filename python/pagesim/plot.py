"""Plots of runs, sweeps and reproduced tables, as matplotlib Figures.

Each function returns a :class:`matplotlib.figure.Figure` made without pyplot (no display,
no global figure list: it works headless and in threads) and, given ``path=``, saves it
there too, in the format the name's extension says (``.png``, ``.svg``, ``.pdf``).
``fig.savefig(...)`` does the same later. :func:`save` writes a figure deterministically:
the same plot of the same data gives the same bytes (SVG's ids and date are fixed).

* :func:`timeline`: a run's timeline (its scenario needs ``sample_interval``): free memory
  and the LRU lists, dirty/writeback pages and swap in use, each memcg's usage, and the
  major faults, swap-ins and swap-outs per second.
* :func:`latency_cdf`: the fault-latency CDF of one run or several, on a log time axis.
* :func:`sweep`: a metric of a sweep against a varied key, the mean over the seeds with a
  band (min-max or one standard deviation), one line per value of another key.
* :func:`reproduce`: a reproduced table, pagesim beside the published figure, a bar pair
  per cell.

matplotlib is imported when this module is (``pagesim.plot`` is loaded on first use, so
``import pagesim`` does not import it).
"""

from __future__ import annotations

import numbers
import os
import re
from typing import Any, Iterable, Mapping, Sequence

try:
    import matplotlib
    from matplotlib.figure import Figure
except ImportError as e:  # a dependency of `pip install pagesim`
    raise ImportError(
        "pagesim.plot needs matplotlib: pip install matplotlib (pip install pagesim installs it)"
    ) from e

from .report import _LATENCIES, Result, _pandas

__all__ = ["latency_cdf", "order", "reproduce", "save", "sweep", "timeline"]

_MIB = 1 << 20
_PAGE = 4096

# timeline(): the panels and the samples' fields each draws, with their labels. A panel
# whose fields the timeline lacks (a report from before they were sampled) is left out.
_MEMORY = (
    ("nr_free_pages", "free"),
    ("nr_inactive_anon", "inactive anon"),
    ("nr_active_anon", "active anon"),
    ("nr_inactive_file", "inactive file"),
    ("nr_active_file", "active file"),
)
_DIRTY_SWAP = (("nr_dirty", "dirty"), ("nr_writeback", "writeback"), ("nr_swap_used", "swap used"))
_RATES = (("pgmajfault", "pgmajfault"), ("pswpin", "pswpin"), ("pswpout", "pswpout"))

# What save() passes so that the bytes depend on the figure alone.
_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}


def save(fig: Figure, path: Any, **kwargs: Any) -> None:
    """Writes ``fig`` to ``path`` (a file name, or a binary file given ``format=``) in the
    format of its extension (png, svg, pdf, ...), deterministically: SVG element ids are
    salted with a fixed string and no date is written, so the same plot of the same data
    gives the same file. (A figure saved twice may differ in its SVG clip-path ids, not in
    what it draws.)"""
    fmt = kwargs.pop("format", None)
    if fmt is None:
        fmt = os.path.splitext(os.fspath(path))[1].lstrip(".").lower() or "png"
    kwargs.setdefault("metadata", _METADATA.get(fmt))
    with matplotlib.rc_context({"svg.hashsalt": "pagesim"}):
        fig.savefig(path, format=fmt, **kwargs)


def _done(fig: Figure, path: str | os.PathLike[str] | None) -> Figure:
    if path is not None:
        save(fig, path)
    return fig


def _result(r: Any, what: str) -> Result:
    if isinstance(r, Result):
        return r
    if isinstance(r, Mapping):
        return Result(dict(r))
    raise TypeError(f"{what}: expected a pagesim.Result (or a report dict), got {type(r).__name__}")


def timeline(result: Result, *, path: str | os.PathLike[str] | None = None, title: str | None = None) -> Figure:
    """The run's timeline, one panel per kind of value, against simulated seconds: memory
    (free pages and the four LRU lists, MiB), dirty and writeback pages and swap in use
    (MiB), each memcg's usage (MiB; only with memcgs), and major faults, swap-ins and
    swap-outs per second. The memory values are those at each interval's end; the rates
    are the interval's counts over its length.

    Raises ValueError when the run has no timeline (its scenario sets no
    ``sample_interval``: ``pagesim.run(..., sample_interval="100ms")`` gives one)."""
    r = _result(result, "timeline")
    df = r.timeline_df()
    if df.empty:
        raise ValueError(
            f"the run of {r.scenario or 'this scenario'} has no timeline: set sample_interval "
            "(for example pagesim.run(..., sample_interval=\"100ms\"))"
        )
    t = df["t_s"]
    # Each interval's length: the first one's is its end (the timeline starts at 0).
    dt = t.diff().fillna(t.iloc[0])
    panels: list[tuple[str, list[tuple[Any, str]]]] = []

    def pages(fields: Sequence[tuple[str, str]]) -> list[tuple[Any, str]]:
        return [(df[f] * _PAGE / _MIB, label) for f, label in fields if f in df]

    if any(f in df for f, _ in _MEMORY):
        panels.append(("memory (MiB)", pages(_MEMORY)))
    if any(f in df for f, _ in _DIRTY_SWAP):
        panels.append(("dirty, writeback, swap (MiB)", pages(_DIRTY_SWAP)))
    memcgs = [c for c in df.columns if c.startswith("memcg.") and c.endswith(".usage_bytes")]
    if memcgs:
        panels.append(("memcg usage (MiB)", [(df[c] / _MIB, c[len("memcg."):-len(".usage_bytes")]) for c in memcgs]))
    panels.append(("events per second", [(df[f] / dt, label) for f, label in _RATES if f in df]))

    fig = Figure(figsize=(8, 2.2 * len(panels) + 0.6), layout="constrained")
    axes = fig.subplots(len(panels), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (ylabel, series) in zip(axes, panels):
        for values, label in series:
            ax.plot(t, values, label=label, linewidth=1.2)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(loc="upper left", fontsize="small", ncols=min(len(series), 5), frameon=False)
    axes[-1].set_xlabel("simulated time (s)")
    fig.suptitle(title or f"{r.scenario}: timeline ({r.profile}, seed {r._report.get('seed')})")
    return _done(fig, path)


def _labelled(results: Any) -> list[tuple[str, Result]]:
    """Results as (label, Result) pairs: a dict of Results gives its keys as labels, else
    each run's scenario and seed (numbered when two are alike)."""
    if isinstance(results, Mapping) and results and all(isinstance(v, Result) for v in results.values()):
        return [(str(k), v) for k, v in results.items()]
    if isinstance(results, (Result, Mapping)):
        results = [results]
    runs = [_result(r, "latency_cdf") for r in results]
    labels = [f"{r.scenario} seed {r._report.get('seed')}" for r in runs]
    if len(set(labels)) < len(labels):
        labels = [f"{i + 1}: {label}" for i, label in enumerate(labels)]
    return list(zip(labels, runs))


def latency_cdf(
    results: Result | Iterable[Result] | Mapping[str, Result],
    *,
    histogram: str = "fault_latency",
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """The CDF of the fault latency of one run or several (a list, or a dict whose keys
    label the lines), against latency on a log axis: the fraction of faults that took at
    most that long (the histogram's buckets, powers of two of nanoseconds).

    ``histogram`` is one of the report's: ``fault_latency`` (every fault),
    ``fault_latency_kernel`` (its kernel part), ``major_fault_latency`` or
    ``major_fault_latency_kernel``. A run with no fault in it draws no line."""
    if histogram not in _LATENCIES:
        raise ValueError(f"histogram {histogram!r}: expected one of {', '.join(_LATENCIES)}")
    runs = _labelled(results)
    if not runs:
        raise ValueError("latency_cdf: no results given")
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.subplots()
    for label, r in runs:
        df = r.latency_df()
        df = df[df["histogram"] == histogram]
        if df.empty:
            continue
        ax.step(df["upper_ns"] / 1e3, df["cdf"], where="post", label=label, linewidth=1.4)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"{histogram} (µs, bucket upper bound)")
    ax.set_ylabel("fraction of faults")
    ax.grid(True, which="both", alpha=0.3)
    if ax.lines:
        ax.legend(loc="lower right", fontsize="small")
    fig.suptitle(title or f"{histogram}: CDF")
    return _done(fig, path)


_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([kmgtp]?)(i?)b?\s*", re.IGNORECASE)


def _size(value: Any) -> float | None:
    """The bytes a size such as ``"256MB"`` or ``"1GiB"`` stands for (only to order sizes:
    MB and MiB are both taken as powers of 1024 here), None for anything else."""
    m = _SIZE.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        return None
    return float(m.group(1)) * 1024 ** "kmgtp".find(m.group(2).lower()) if m.group(2) else float(m.group(1))


def order(values: Iterable[Any]) -> list[Any]:
    """The distinct values of a varied key in a sensible order: numbers ascending, sizes
    (``"256MB"``) by the bytes they stand for, anything else in the order it first appears."""
    distinct = list(dict.fromkeys(values))
    if distinct and all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in distinct):
        return sorted(distinct)
    sizes = [_size(v) for v in distinct]
    if distinct and all(s is not None for s in sizes):
        return [v for _, v in sorted(zip(sizes, distinct), key=lambda p: p[0])]
    return distinct


def _positions(values: Any) -> tuple[Any, list[Any] | None]:
    """An x axis for a column: numbers as they are; anything else as categories, sizes
    (``"256MB"``) by their bytes, other text in the order it first appears (a sweep's rows
    are in the grid's order)."""
    pd = _pandas()
    if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
        return values, None
    categories = order(values)
    return values.map({v: i for i, v in enumerate(categories)}), categories


def sweep(
    df: Any,
    *,
    x: str,
    y: str,
    hue: str | None = None,
    band: str | None = "minmax",
    ax: Any = None,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """A sweep's metric ``y`` against key ``x``: the mean over the rows of each ``x`` (its
    seeds), with a band over them: ``band="minmax"`` (their min and max), ``"sd"`` (one
    sample standard deviation around the mean) or None. With ``hue``, a line per value of
    that column. ``df`` is what :func:`pagesim.sweep` or :func:`pagesim.read_sweep`
    returns; failed runs (status ``failed``, no values) are left out. A numeric ``x`` is an
    axis; any other a category per value: sizes (``"256MB"``) in the order of their bytes,
    other text in the order it first appears. ``ax`` draws
    into an existing Axes (its figure is returned)."""
    pd = _pandas()
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"sweep: expected a DataFrame (pagesim.sweep's), got {type(df).__name__}")
    for what, col in (("x", x), ("y", y), ("hue", hue)):
        if col is not None and col not in df.columns:
            near = [c for c in df.columns if col.split(".")[-1] in c][:5]
            raise ValueError(f"sweep: {what}={col!r} is not a column" + (f" (did you mean {', '.join(near)}?)" if near else ""))
    if band not in ("minmax", "sd", None):
        raise ValueError(f"sweep: band={band!r}: expected 'minmax', 'sd' or None")
    if "status" in df.columns:
        df = df[df["status"] != "failed"]
    df = df[df[y].notna()]
    if df.empty:
        raise ValueError(f"sweep: no run has a value of {y}")
    xs, categories = _positions(df[x])
    data = df.assign(_x=xs)
    if ax is None:
        fig = Figure(figsize=(7, 4), layout="constrained")
        ax = fig.subplots()
    else:
        fig = ax.figure
    groups = [(None, data)] if hue is None else list(data.groupby(hue, sort=False))
    for key, g in groups:
        stats = g.groupby("_x")[y].agg(["mean", "min", "max", "std", "count"]).sort_index()
        label = None if hue is None else f"{hue}={key}"
        line = ax.plot(stats.index, stats["mean"], marker="o", label=label)[0]
        if band == "minmax":
            ax.fill_between(stats.index, stats["min"], stats["max"], color=line.get_color(), alpha=0.2, linewidth=0)
        elif band == "sd":
            sd = stats["std"].fillna(0)
            ax.fill_between(stats.index, stats["mean"] - sd, stats["mean"] + sd, color=line.get_color(), alpha=0.2, linewidth=0)
    if categories is not None:
        ax.set_xticks(range(len(categories)), [str(c) for c in categories])
    ax.set_xlabel(x)
    seeds = df.groupby([x] + ([hue] if hue else []))[y].count()
    n = f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}-{seeds.max()}"
    what = {"minmax": ", band: min-max", "sd": ", band: ±1 sd", None: ""}[band]
    ax.set_ylabel(f"{y} (mean of {n} runs{what})")
    ax.grid(True, alpha=0.3)
    if hue is not None:
        ax.legend(fontsize="small")
    if title is not None or ax.get_title() == "":
        ax.set_title(title or f"{y} against {x}")
    return _done(fig, path)


def reproduce(
    table: Any,
    *,
    path: str | os.PathLike[str] | None = None,
    title: str | None = None,
) -> Figure:
    """A reproduced table (what :func:`pagesim.reproduce` returns), a bar pair per cell:
    pagesim's value and the published one (hatched; absent where the seed has no figure),
    one panel per table (their metrics differ), the cells labelled ``row / column``."""
    pd = _pandas()
    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"reproduce: expected a DataFrame (pagesim.reproduce's), got {type(table).__name__}")
    missing = [c for c in ("table", "row", "column", "metric", "value", "published") if c not in table.columns]
    if missing:
        raise ValueError(f"reproduce: not a pagesim.reproduce table: no column {', '.join(missing)}")
    if table.empty:
        raise ValueError("reproduce: the table has no cells")
    tables = list(table.groupby("table", sort=False))
    widths = [max(4.0, 0.45 * len(t) + 1.5) for _, t in tables]
    fig = Figure(figsize=(min(max(widths), 24), 4.2 * len(tables)), layout="constrained")
    axes = fig.subplots(len(tables), 1, squeeze=False)[:, 0]
    for ax, (name, t) in zip(axes, tables):
        n = range(len(t))
        ax.bar([i - 0.2 for i in n], t["value"], width=0.4, label="pagesim")
        ax.bar([i + 0.2 for i in n], t["published"].fillna(0), width=0.4, label="published", hatch="//",
               edgecolor="white", color="C1")
        ax.set_xticks(list(n), [f"{r} / {c}" for r, c in zip(t["row"], t["column"])], rotation=60, ha="right",
                      fontsize="small")
        ax.set_ylabel(str(t["metric"].iloc[0]))
        ax.set_title(str(name), fontsize="medium")
        ax.grid(True, axis="y", alpha=0.3)
        ax.legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return _done(fig, path)
