"""``pagesim.reproduce``: a seed's tables (``pagesim reproduce NAME``) as a DataFrame.

The tables are run by the library (crates/pagesim/src/reproduce.rs, through
``_native.reproduce``): the same cells, overrides and JSON per cell as ``pagesim reproduce
--json``. This module only makes a DataFrame of them and shows a progress bar.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping

try:
    import pandas as pd
    from tqdm import tqdm
except ImportError as e:  # dependencies of `pip install pagesim`
    raise ImportError(
        f"pagesim.reproduce needs pandas and tqdm ({e.name} is missing): pip install pandas tqdm "
        "(pip install pagesim installs them)"
    ) from e

from . import _native
from .scenario import overrides_to_sets

# The columns every cell has, in this order after the labels; `stdev` and `values` only with
# several seeds.
_HEAD = ("table", "row", "column")
_VALUES = ("metric", "value", "published", "ratio", "published_ratio", "reference", "stdev", "values", "seeds")
_TAIL = ("set", "devices")


def reproduce(
    name: str | os.PathLike[str],
    *,
    set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002 - mirrors `--set`
    seeds: int | None = None,
    jobs: int | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Runs a seed's tables, as ``pagesim reproduce NAME`` does, and returns one row per
    cell: pagesim's value beside the published one, and both as ratios to the table's
    reference column.

    ``name`` is a seed (``"seed-000"``, looked for as ``scenarios/seed-000-*/`` in the
    current directory, then in the checkout pagesim was built from) or a directory holding a
    ``reproduce.toml`` (or one per experiment in its subdirectories). ``set`` overrides keys
    in every cell, after the row's and the column's (a scaled-down table:
    ``set={"machine.ram": "90MB", ...}``); ``seeds=N`` makes each cell the mean of seeds
    1..N (default: the table's own); ``jobs`` cells run at once, each on a thread (default:
    the CPUs this process may use). A full seed takes seconds to minutes (seed 002 about 20
    minutes on 2 cores): ``progress`` shows a bar of the cells done on stderr.

    Columns, in order: ``table`` (its title), ``row``, ``column``, the table's, row's and
    column's labels (seed 000: ``device``, ``pattern``, ``mapping``), ``metric`` (its name,
    with its unit: ``elapsed_cs``), ``value`` (pagesim's; the mean over the seeds),
    ``published`` (NaN where the seed has no figure), ``ratio`` and ``published_ratio`` (to
    the reference column of the same row), ``reference`` (that column's name), with several
    seeds ``stdev``, ``values`` and ``seeds``, then every vmstat counter of the cell's run
    (its first seed's) as ``vmstat.<name>``, and ``set`` (the overrides that made the cell)
    and ``devices`` (the devices that did I/O, as the report gives them).

    Raises :class:`pagesim.ScenarioError` (a ValueError) for an unknown seed or a table or
    override pagesim rejects; the message names the file and the key.
    """
    if seeds is not None and (isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1):
        raise ValueError(f"seeds: expected a positive number of runs per cell, got {seeds!r}")
    if jobs is None:
        try:
            jobs = len(os.sched_getaffinity(0))
        except AttributeError:  # not Linux
            jobs = os.cpu_count() or 1
    elif isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected a positive number of cells at once, got {jobs!r}")
    sets = overrides_to_sets(set)
    bar = None

    def done(k: int, total: int, row: str, column: str) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc="reproduce", unit="cell", smoothing=0)
        bar.set_postfix_str(f"{row} / {column}", refresh=False)
        bar.update(k - bar.n)

    try:
        text = _native.reproduce(os.fspath(name), sets, seeds, jobs, done if progress else None)
    finally:
        if bar is not None:
            bar.close()
    return _frame(json.loads(text))


def _frame(tables: list[dict[str, Any]]) -> pd.DataFrame:
    """The native function's tables as one DataFrame, a row per cell."""
    rows = []
    for t in tables:
        for cell in t["cells"]:
            cell = dict(cell)
            unit = cell["metric"].rsplit("_", 1)[-1]
            # The metric's value is also under its own name; the DataFrame keeps one copy.
            cell.pop(cell["metric"], None)
            cell.pop(f"published_{unit}", None)
            counters = cell.pop("counters", {})
            row = {"table": t["title"], "reference": t["reference"], **cell}
            row.update({f"vmstat.{k}": v for k, v in counters.items()})
            rows.append(row)
    df = pd.DataFrame(rows)
    if df.empty:
        return df
    labels = [c for c in df.columns if c not in (*_HEAD, *_VALUES, *_TAIL) and not c.startswith("vmstat.")]
    order = [*_HEAD, *labels, *_VALUES, *(c for c in df.columns if c.startswith("vmstat.")), *_TAIL]
    df = df[[c for c in order if c in df.columns]]
    return df.astype({"value": "float64", "published": "float64", "ratio": "float64", "published_ratio": "float64"})
