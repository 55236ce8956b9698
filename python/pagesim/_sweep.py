"""Sweeps: one scenario run over a grid of overrides and seeds, in parallel, into a
Parquet dataset that a rerun completes (``pagesim.sweep``, ``pagesim.read_sweep``, and the
command line ``pagesim sweep``).

What a sweep does, in order:

1. Cells: the cartesian product of ``grid``'s values, times the rows of ``zip``, times the
   seeds. Each cell is a ``pagesim.run`` of the scenario with the base ``set`` overrides,
   then the cell's own (by key), and its seed.
2. Ids: a cell's id hashes the scenario's content, those overrides and the seed, so it does
   not depend on the grid's order, and a changed scenario gives new ids.
3. Resume: ``out`` holds one ``<id>.parquet`` per finished cell; the cells whose file is
   there are read back, not run. ``out/_sweep.json`` records the scenario's content and the
   base overrides, and a sweep of anything else into the same ``out`` is refused, so that
   the dataset never mixes results of two different scenarios.
4. Runs: a backend (``_backend``: worker processes here, or Ray tasks) runs the other
   cells, ``jobs`` at a time, and hands back each row as it finishes. This process writes
   a finished cell at once, as its own file (a temporary file renamed, so a file is always
   whole): the files are the same whichever backend ran the cells.
   A cell whose worker died is run again, up to ``retries`` times, then recorded as failed;
   a rejected override stops the sweep at once.
"""

from __future__ import annotations

import argparse
import builtins
import itertools
import json
import os
import re
import sys
import warnings
from typing import Any, Iterable, Mapping, Sequence

try:
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    from tqdm import tqdm
except ImportError as e:  # a dependency of `pip install pagesim`; missing only in odd setups
    raise ImportError(
        f"pagesim.sweep needs pandas, pyarrow and tqdm ({e.name} is missing): "
        "pip install pandas pyarrow tqdm (pip install pagesim installs them)"
    ) from e

from . import __version__
from ._backend import BACKENDS
from ._cell import CellRun, Source, cell_id, run_cell
from ._native import ScenarioError
from .scenario import _format_value, overrides_to_sets

MANIFEST = "_sweep.json"

# The columns of every row besides the grid's keys and Result.to_row()'s.
_RUN_COLUMNS = ("seed", "status")
_TAIL_COLUMNS = ("error", "cell_id")


class _Cell:
    """One run of the sweep: its grid values, seed, overrides and id."""

    __slots__ = ("values", "seed", "sets", "id")

    def __init__(self, values: dict[str, Any], seed: int, sets: tuple[str, ...], id: str) -> None:  # noqa: A002
        self.values, self.seed, self.sets, self.id = values, seed, sets, id

    def label(self) -> str:
        shown = " ".join(f"{k}={_format_value(k, v)}" for k, v in self.values.items())
        return f"{shown + ' ' if shown else ''}seed {self.seed}"


def _values(where: str, key: Any, values: Any) -> list[Any]:
    if not isinstance(key, str) or not key:
        raise TypeError(f"{where}: keys are dotted scenario keys (str), got {key!r}")
    if key == "seed":
        raise ValueError(f"{where}: vary the seed with seeds=, not as a key")
    if key in _RUN_COLUMNS + _TAIL_COLUMNS:
        raise ValueError(f"{where}: {key!r} is a result column's name, not a scenario key")
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{where}[{key!r}]: expected a list of values, got {values!r}")
    values = list(values)
    if not values:
        raise ValueError(f"{where}[{key!r}]: no values")
    return values


def expand(grid: Mapping[str, Iterable[Any]] | None = None, zip: Mapping[str, Iterable[Any]] | None = None) -> list[dict[str, Any]]:  # noqa: A002
    """The override sets a sweep runs, each as ``{key: value}``, in the order it runs them:
    the cartesian product of ``grid``'s lists (the first key varies slowest), each
    combination with every row of ``zip`` (its lists are taken together, element by
    element, and must have one length). No grid and no zip: one empty set."""
    grid, zip_ = dict(grid or {}), dict(zip or {})
    both = sorted(set(grid) & set(zip_))
    if both:
        raise ValueError(f"{both[0]!r} is both in grid and in zip")
    product = [(k, _values("grid", k, v)) for k, v in grid.items()]
    zipped = [(k, _values("zip", k, v)) for k, v in zip_.items()]
    lengths = {k: len(v) for k, v in zipped}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"zip: the lists must have one length, got {lengths}")
    rows = list(builtins.zip(*(v for _, v in zipped))) if zipped else [()]
    out = []
    for combination in itertools.product(*(v for _, v in product)):
        for row in rows:
            cell = dict(builtins.zip([k for k, _ in product], combination))
            cell.update(builtins.zip([k for k, _ in zipped], row))
            out.append(cell)
    return out


def _seeds(seeds: int | Iterable[int]) -> list[int]:
    if isinstance(seeds, bool):
        raise TypeError(f"seeds: expected a count or a list of seeds, got {seeds!r}")
    if isinstance(seeds, int):
        if seeds < 1:
            raise ValueError(f"seeds: expected at least 1 run, got {seeds}")
        return list(range(1, seeds + 1))
    out = list(seeds)
    if not out or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in out):
        raise ValueError(f"seeds: expected non-negative integers, got {out!r}")
    if len(set(out)) != len(out):
        raise ValueError(f"seeds: a seed is given twice in {out!r}")
    return out


def _jobs(jobs: int | None) -> int | None:
    """``jobs`` checked; None stays None, the backend's default."""
    if jobs is None:
        return None
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs: expected a positive number of workers, got {jobs!r}")
    return jobs


def _arrow_type(values: Iterable[Any]) -> pa.DataType:
    """One type for every value of a grid key, so that every cell's file has the same
    schema: bool, int64, float64 (ints and floats mixed) or, for anything else, the
    override's text."""
    kinds = {type(v) for v in values}
    if kinds == {bool}:
        return pa.bool_()
    if kinds == {int}:
        return pa.int64()
    if kinds <= {int, float}:
        return pa.float64()
    return pa.string()


def _value_type(v: Any) -> pa.DataType:
    if isinstance(v, bool):
        return pa.bool_()
    if isinstance(v, int):
        return pa.int64()
    if isinstance(v, float):
        return pa.float64()
    return pa.string()  # str, and None (the error of a run without one)


def _table(row: dict[str, Any], grid_types: dict[str, pa.DataType]) -> pa.Table:
    """One row as a one-row table with explicit types (an all-None column would otherwise
    be of Arrow's null type, which later files could not agree with)."""
    fields = []
    values = []
    for k, v in row.items():
        t = grid_types.get(k) or _value_type(v)
        if pa.types.is_string(t) and v is not None and not isinstance(v, str):
            v = _format_value(k, v)
        fields.append(pa.field(k, t))
        values.append(pa.array([v], type=t))
    return pa.Table.from_arrays(values, schema=pa.schema(fields))


def _write_atomically(path: str, write: Any) -> None:
    """Writes through a temporary file in the same directory, renamed over `path`: a
    reader (or a rerun) sees the whole file or none. The temporary name starts with a dot,
    which Parquet datasets skip."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _open_out(out: str, source: Source, sets: list[str]) -> set[str]:
    """Creates or checks `out` for this scenario and base overrides; returns the ids of
    the cells already in it."""
    os.makedirs(out, exist_ok=True)
    manifest = {"scenario": source.origin, "scenario_sha256": source.digest, "set": sets, "pagesim": __version__}
    path = os.path.join(out, MANIFEST)
    names = os.listdir(out)
    done = {n[: -len(".parquet")] for n in names if n.endswith(".parquet") and not n.startswith((".", "_"))}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            old = json.load(f)
        if old.get("scenario_sha256") != source.digest:
            raise ValueError(
                f"{out} holds a sweep of {old.get('scenario')} as it was then (content sha256 "
                f"{str(old.get('scenario_sha256'))[:12]}...), and {source.origin} differs now "
                f"({source.digest[:12]}...): its results are not this scenario's. Give another out, or "
                f"remove {out} to start over"
            )
        if old.get("set") != sets:
            raise ValueError(
                f"{out} holds a sweep with set={old.get('set')}, not set={sets}: give another out, or "
                f"remove {out} to start over"
            )
    elif done:
        raise ValueError(f"{out} holds Parquet files but no {MANIFEST}: not a pagesim sweep's directory")
    else:
        def write(tmp: str) -> None:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(manifest, f, indent=1)
                f.write("\n")

        _write_atomically(path, write)
    # What a sweep killed while writing left behind.
    for n in names:
        m = re.fullmatch(r"\..*\.(\d+)\.tmp", n)
        if m and not _alive(int(m.group(1))):
            os.remove(os.path.join(out, n))
    return done


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ordered(df: pd.DataFrame, grid_keys: Sequence[str]) -> pd.DataFrame:
    """Columns in their documented order: the grid's keys, seed, status, the results,
    error, cell_id."""
    head = [*grid_keys, *_RUN_COLUMNS]
    tail = list(_TAIL_COLUMNS)
    middle = [c for c in df.columns if c not in head and c not in tail]
    return df[[c for c in head if c in df.columns] + middle + [c for c in tail if c in df.columns]]


def _concat(tables: list[pa.Table], where: str) -> pa.Table:
    try:
        return pa.concat_tables(tables, promote_options="default")
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        raise ValueError(f"{where}: the cells' columns do not agree: {e}") from e


def sweep(
    scenario: Any,
    grid: Mapping[str, Iterable[Any]] | None = None,
    *,
    zip: Mapping[str, Iterable[Any]] | None = None,  # noqa: A002 - the zip of the lists
    seeds: int | Iterable[int] = 1,
    set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002 - mirrors `--set`
    jobs: int | None = None,
    out: str | os.PathLike[str] | None = None,
    backend: str = "local",
    address: str | None = None,
    retries: int = 2,
    progress: bool = True,
) -> pd.DataFrame:
    """Runs ``scenario`` over a grid of overrides and seeds, ``jobs`` runs at a time, and
    returns one row per run as a pandas DataFrame.

    ``scenario`` is what :func:`pagesim.run` takes: a path, TOML text or a dict.
    ``grid`` maps dotted scenario keys to lists of values, and every combination runs
    (the cartesian product: ``{"machine.ram": ["256MB", "512MB"], "vm.swappiness": [0, 60,
    100]}`` is 6 combinations). ``zip`` maps keys to lists of one length taken together,
    element by element (``zip={"machine.ram": ["256MB", "512MB"], "swap.0.size":
    ["512MB", "1GB"]}`` is 2 combinations), each combined with every one of the grid's.
    ``seeds=N`` runs each combination with seeds 1..N; a list runs those seeds (the
    scenario's own ``seed`` is not used). ``set`` overrides keys in every run, as
    :func:`pagesim.run`'s ``set``; a run applies it first, then its combination's values,
    by key.

    ``out`` (a directory) makes the sweep durable and resumable: every finished run is
    written at once as its own Parquet file, so the directory is a Parquet dataset
    (:func:`read_sweep`, or ``pandas.read_parquet(out)`` when every run has the same
    columns). Run again with the same ``out``, a sweep runs only the cells whose file is
    missing: a sweep interrupted, killed, or grown by new values or seeds completes. A
    cell is recognized by the scenario's content, its overrides and its seed, whatever the
    grid's order; ``out`` belongs to one scenario and ``set``, and a sweep of a changed
    scenario into it is refused (ValueError). Without ``out`` nothing is kept.

    ``jobs`` runs go at once, each in a worker process; ``backend`` says where:
    ``"local"``, worker processes on this machine (``jobs`` default: the CPUs this process
    may use), or ``"ray"``, Ray tasks on a Ray cluster (``jobs`` default: as many as the
    cluster has CPUs), connected to with ``ray.init(address=address)``: ``address`` None
    is ``RAY_ADDRESS``, else the cluster ``ray start`` started last on this machine, else a
    new one on this machine for this sweep; in a process that called ``ray.init`` already,
    the sweep uses that connection. Either backend gives the same rows and files, so a
    sweep one began the other completes. A run whose worker dies (killed, out of memory,
    its node lost) is run again, up to ``retries`` times, and then recorded as failed; the
    other runs go on.
    ``progress`` shows a progress bar with the time left on stderr (tqdm).

    The DataFrame's columns, in order: each key of ``grid`` and ``zip`` (named by its
    dotted key), ``seed``, ``status`` (``ok``; ``time_limit``, ``livelock`` or ``deadlock``
    for a run stopped first, whose values are those up to the stop; ``failed`` when its
    worker died every time, or pagesim failed), ``elapsed_s`` (simulated),
    ``completed``, ``ops_done``, ``ops_total``, ``fault_latency.count`` / ``.median_ns`` /
    ``.p99_ns`` / ``.mean_ns`` and the same of ``major_fault_latency``, per task
    ``task.<name>.elapsed_s`` / ``.cpu_s`` / ``.faults`` / ``.major_faults``, every
    /proc/vmstat counter as ``vmstat.<name>``, ``error`` (why a run failed, or what its
    tasks waited on when it was stopped; else empty) and ``cell_id``. A failed row has only
    the grid's values, seed, status, error and cell_id; its other columns are empty (NaN).
    Rows come in the grid's order, the seeds of a combination together.

    Raises :class:`pagesim.ScenarioError` at once, naming the key, when pagesim rejects a
    run's scenario or override (runs finished by then are kept in ``out``); ValueError or
    TypeError for arguments it cannot use; ImportError, saying how to install it, for
    ``backend="ray"`` without Ray.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend {backend!r}: expected one of {', '.join(sorted(BACKENDS))}")
    options = {k: v for k, v in {"address": address}.items() if v is not None}
    for k in options:
        if k not in BACKENDS[backend].OPTIONS:
            takes = sorted(n for n, b in BACKENDS.items() if k in b.OPTIONS)
            raise ValueError(f"{k}= is an option of backend {' or '.join(map(repr, takes))}, not of {backend!r}")
    BACKENDS[backend].check()
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ValueError(f"retries: expected a non-negative integer, got {retries!r}")
    jobs = _jobs(jobs)
    source = Source.of(scenario)
    base = overrides_to_sets(set)
    combinations = expand(grid, zip)
    seed_list = _seeds(seeds)
    grid_keys = list(combinations[0])
    cells: list[_Cell] = []
    for values in combinations:
        own = tuple(f"{k}={_format_value(k, values[k])}" for k in sorted(values))
        for seed in seed_list:
            sets = (*base, *own)
            cells.append(_Cell(values, seed, sets, cell_id(source.digest, sets, seed)))
    ids = [c.id for c in cells]
    if len(builtins.set(ids)) != len(ids):
        seen: dict[str, _Cell] = {}
        for c in cells:
            if c.id in seen:
                raise ValueError(f"the grid gives the run {c.label()} twice")
            seen[c.id] = c
    grid_types = {k: _arrow_type(v[k] for v in combinations) for k in grid_keys}

    out_dir = os.fspath(out) if out is not None else None
    done_before = _open_out(out_dir, source, base) if out_dir is not None else builtins.set()
    tables: dict[str, pa.Table] = {}
    failed: dict[str, str] = {}
    todo = [c for c in cells if c.id not in done_before]
    by_id = {c.id: c for c in cells}

    bar = tqdm(
        total=len(cells),
        initial=len(cells) - len(todo),
        desc="sweep",
        unit="run",
        file=sys.stderr,
        disable=not progress,
        smoothing=0,  # the mean rate since the start: runs of a grid differ in length
    )

    def note(text: str) -> None:
        if progress:
            bar.write(f"pagesim sweep: {text}", file=sys.stderr)

    def finish(c: _Cell, row: dict[str, Any]) -> None:
        row = dict(row)
        status, error = row.pop("status"), row.pop("error")
        row = {**c.values, "seed": c.seed, "status": status, **row, "error": error, "cell_id": c.id}
        table = _table(row, grid_types)
        if out_dir is not None:
            _write_atomically(os.path.join(out_dir, f"{c.id}.parquet"), lambda tmp: pq.write_table(table, tmp))
        else:
            tables[c.id] = table
        bar.update()

    def fail(c: _Cell, why: str) -> None:
        failed[c.id] = why
        note(f"{c.label()} failed: {why}")
        bar.set_postfix(failed=len(failed))
        bar.update()

    cwd = os.getcwd()
    runner = BACKENDS[backend](run_cell, jobs, **options) if todo else None
    try:
        attempts: dict[str, int] = {}
        for c in todo:
            runner.submit(c.id, CellRun(source, c.sets, c.seed, cwd))  # type: ignore[union-attr]
        while runner is not None and runner.pending:
            ended = runner.wait(timeout=1.0)
            if not ended:
                bar.refresh()  # the elapsed time and the estimate move while runs are long
            for o in ended:
                c = by_id[o.token]  # type: ignore[index]
                if o.lost is not None:
                    attempts[c.id] = attempts.get(c.id, 0) + 1
                    if attempts[c.id] <= retries:
                        note(f"{c.label()}: {o.lost}; running it again")
                        runner.submit(c.id, CellRun(source, c.sets, c.seed, cwd))
                    else:
                        fail(c, f"{o.lost} (run {attempts[c.id]} of {1 + retries} times)")
                elif isinstance(o.error, ScenarioError):
                    raise ScenarioError(f"{c.label()}: {o.error}") from None
                elif o.error is not None:
                    fail(c, f"{type(o.error).__name__}: {o.error}")
                else:
                    finish(c, o.value)
    finally:
        if runner is not None:
            runner.close()
        bar.close()

    parts = []
    for c in cells:
        if c.id in failed:
            row = {**c.values, "seed": c.seed, "status": "failed", "error": failed[c.id], "cell_id": c.id}
            parts.append(_table(row, grid_types))
        elif out_dir is not None:
            parts.append(pq.read_table(os.path.join(out_dir, f"{c.id}.parquet")))
        else:
            parts.append(tables[c.id])
    df = _ordered(_concat(parts, out_dir or "sweep").to_pandas(), grid_keys)
    if failed:
        warnings.warn(
            f"{len(failed)} of {len(cells)} runs failed (status 'failed', the reason in 'error'); "
            + ("a rerun with the same out runs them again" if out_dir else "they have no results"),
            RuntimeWarning,
            stacklevel=2,
        )
    return df


def read_sweep(out: str | os.PathLike[str]) -> pd.DataFrame:
    """Every run a sweep wrote into ``out``, as :func:`sweep` returns them (finished runs:
    failed ones are not written), ordered by cell id. Runs whose columns differ (a task
    that only some runs have, a grid key added later) are read together, the columns they
    lack empty (NaN), where ``pandas.read_parquet(out)`` takes the first file's columns."""
    out = os.fspath(out)
    names = sorted(n for n in os.listdir(out) if n.endswith(".parquet") and not n.startswith((".", "_")))
    if not names:
        return pd.DataFrame()
    table = _concat([pq.read_table(os.path.join(out, n)) for n in names], out)
    # The grid's keys are the columns before `seed`.
    columns = table.column_names
    grid_keys = columns[: columns.index("seed")] if "seed" in columns else []
    return _ordered(table.to_pandas(), grid_keys)


# What `pagesim sweep` prints of each run besides the grid's values, seed, status and
# elapsed_s, unless --stat says otherwise.
_DEFAULT_STATS = ("pgmajfault", "pswpin", "pswpout")


def _cli_value(text: str) -> Any:
    """A --vary value as the Python API would be given it: an integer, a float, a boolean,
    else the text itself ("256MB", "linux-6.6"), so that the column has a numeric type
    where it can and the cell the same id either way."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", text):
        return float(text)
    if text in ("true", "false"):
        return text == "true"
    return text


def _key_values(option: str, text: str) -> tuple[str, list[Any]]:
    key, eq, values = text.partition("=")
    if not eq or not key or not values:
        raise argparse.ArgumentTypeError(f"{option} {text}: expected KEY=A,B,...")
    return key, [_cli_value(v) for v in values.split(",")]


def _parser() -> argparse.ArgumentParser:
    # The Rust CLI (crates/pagesim-cli/src/sweep.rs) documents these options for
    # `pagesim sweep --help` and passes them on as they are.
    p = argparse.ArgumentParser(
        prog="pagesim sweep",
        description="Run a scenario over a grid of overrides and seeds, in parallel; print a "
        "table and keep every run in a Parquet dataset that a rerun completes.",
    )
    p.add_argument("file", help="the scenario file (TOML)")
    p.add_argument("--vary", action="append", default=[], metavar="KEY=A,B,...",
                   type=lambda t: _key_values("--vary", t), help="values of a key; every combination runs")
    p.add_argument("--zip", action="append", default=[], metavar="KEY=A,B,...",
                   type=lambda t: _key_values("--zip", t), help="values taken together with the other --zip keys'")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets",
                   help="override a key in every run")
    p.add_argument("--seeds", type=int, default=1, metavar="N", help="runs of each combination, seeds 1..N")
    p.add_argument("-j", "--jobs", type=int, metavar="N", help="runs at once [default: the CPUs]")
    p.add_argument("--out", metavar="DIR", help="the Parquet dataset to write, and to resume from")
    p.add_argument("--retries", type=int, default=2, metavar="N", help="reruns of a run whose worker died")
    p.add_argument("--backend", choices=sorted(BACKENDS), default="local", help="where the runs execute [default: local]")
    p.add_argument("--address", metavar="ADDR", help="the Ray cluster's address (--backend ray) [default: RAY_ADDRESS, "
                   "else the cluster `ray start` started on this machine, else a new local one]")
    p.add_argument("--stat", action="append", default=[], metavar="COUNTER", dest="stats",
                   help="a counter to print per run [default: pgmajfault, pswpin, pswpout]")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """``pagesim sweep``: runs the sweep, prints one line per run (the grid's values,
    seed, status, elapsed_s and the --stat counters) on stdout. Exit status 0; 1 when a run
    failed; 2 for a usage error or a scenario pagesim rejects."""
    a = _parser().parse_args(argv)
    for option, pairs in (("--vary", a.vary), ("--zip", a.zip)):
        keys = [k for k, _ in pairs]
        dup = next((k for k in keys if keys.count(k) > 1), None)
        if dup is not None:
            print(f"pagesim: {option} {dup} is given twice", file=sys.stderr)
            return 2
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the summary below says it
            df = sweep(
                a.file,
                dict(a.vary),
                zip=dict(a.zip),
                seeds=a.seeds,
                set=a.sets,
                jobs=a.jobs,
                out=a.out,
                backend=a.backend,
                address=a.address,
                retries=a.retries,
                progress=not a.quiet,
            )
    except (ScenarioError, ValueError, TypeError, ImportError, ConnectionError) as e:
        print(f"pagesim: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        kept = f"; the finished runs are in {a.out}, and a rerun completes the rest" if a.out else ""
        print(f"pagesim: interrupted{kept}", file=sys.stderr)
        return 130
    stats = a.stats or list(_DEFAULT_STATS)
    unknown = [s for s in stats if f"vmstat.{s}" not in df.columns]
    if unknown and (df["status"] != "failed").any():
        print(f"pagesim: --stat {unknown[0]}: not a counter", file=sys.stderr)
        return 2
    grid_keys = [k for k, _ in a.vary] + [k for k, _ in a.zip]
    shown = [*grid_keys, "seed", "status", "elapsed_s", *(f"vmstat.{s}" for s in stats)]
    table = df[[c for c in shown if c in df.columns]].rename(columns=lambda c: c.removeprefix("vmstat."))
    print(table.to_string(index=False))
    failed = df[df["status"] == "failed"]
    for _, r in failed.iterrows():
        print(f"pagesim: {r['cell_id']} failed: {r['error']}", file=sys.stderr)
    if a.out:
        print(f"results: {a.out} ({len(df)} runs; pagesim.read_sweep or pandas.read_parquet reads it)", file=sys.stderr)
    return 1 if len(failed) else 0
