"""The result of a run; mirrors crates/pagesim/src/report (the report is built in Rust)."""

from __future__ import annotations

import copy
from typing import Any

# Counters shown by repr(), when the report has them.
_REPR_COUNTERS = ("pgfault", "pgmajfault", "pswpin", "pswpout", "pgscan_kswapd", "pgscan_direct")

# The fields of a timeline sample (report::Sample), for the columns of an empty timeline and
# their order; tests/python/test_run.py checks them against a real run's. The first eight
# count what happened in the interval; the gauges (_TIMELINE_GAUGES) are the values at its
# end, in pages. A sample also has `memcg_usage_bytes` ({memcg: bytes}) when the scenario
# has memcgs, which timeline_df() spreads into a column per memcg.
_TIMELINE_EVENTS = (
    "t_ns", "read_bytes", "dev_reads", "dev_read_bytes", "pgmajfault", "pswpin", "pswpout",
    "ra_evicted_unused",
)
_TIMELINE_GAUGES = (
    "nr_free_pages", "nr_inactive_anon", "nr_active_anon", "nr_inactive_file", "nr_active_file",
    "nr_dirty", "nr_writeback", "nr_swap_used",
)
_TIMELINE_COLUMNS = _TIMELINE_EVENTS + _TIMELINE_GAUGES
_MEMCG_USAGE = "memcg_usage_bytes"

# The report's fault-latency histograms (report::LatencyReport), in latency_df()'s order.
_LATENCIES = ("fault_latency", "fault_latency_kernel", "major_fault_latency", "major_fault_latency_kernel")

# What to_row() takes of a latency histogram.
_LATENCY_STATS = ("count", "median_ns", "p99_ns", "mean_ns")


def _pandas() -> Any:
    try:
        import pandas as pd
    except ImportError as e:
        raise ImportError(
            "pagesim's DataFrames need pandas: pip install pandas (a dependency of pip install pagesim)"
        ) from e
    return pd


class Result:
    """A run's report: /proc/vmstat counters, memcgs, tasks, fault latency and devices.

    Attributes mirror the report's JSON keys; :meth:`to_dict` returns the whole report.
    """

    __slots__ = ("_report",)

    def __init__(self, report: dict[str, Any]) -> None:
        self._report = report

    @property
    def scenario(self) -> str:
        return self._report.get("scenario", "")

    @property
    def profile(self) -> str:
        return self._report.get("profile", "")

    @property
    def seed(self) -> int:
        return self._report["seed"]

    @property
    def elapsed_ns(self) -> int:
        """Simulated elapsed time, nanoseconds."""
        return self._report["elapsed_ns"]

    @property
    def elapsed_s(self) -> float:
        """Simulated elapsed time, seconds."""
        return self.elapsed_ns / 1e9

    @property
    def completed(self) -> bool:
        """Every task finished (or was OOM-killed); ``False`` when the run was stopped first."""
        return self._report.get("completed", True)

    @property
    def stop_reason(self) -> str | None:
        """Why an unfinished run stopped: ``"time_limit"``, ``"livelock"`` or ``"deadlock"``."""
        return self._report.get("stop_reason")

    @property
    def stop_detail(self) -> str | None:
        """For a livelock or deadlock: what each unfinished task was waiting on."""
        return self._report.get("stop_detail")

    @property
    def ops_done(self) -> int:
        """Operations (accesses and read calls) done."""
        return self._report.get("ops_done", 0)

    @property
    def ops_total(self) -> int:
        """Operations the workload makes in total."""
        return self._report.get("ops_total", 0)

    @property
    def counters(self) -> dict[str, int]:
        """vmstat counters by their /proc/vmstat names."""
        return self._report.get("counters", {})

    @property
    def memcg(self) -> dict[str, dict[str, Any]]:
        """Per memory cgroup: ``counters`` (its own events), ``lru`` (its own LRU sizes, pages),
        ``total`` (its subtree's sums, for a memcg with children), ``events`` (memory.events:
        low, high, max, oom; absent when all are zero), ``high_delay_ns``, ``parent``,
        ``usage_bytes``, ``max_bytes`` (None: no limit), ``swap_bytes``."""
        return self._report.get("memcg", {})

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """Per task: name, elapsed_ns, completed, cpu_ns, faults, major_faults, oom_killed, and ``steps``
        (per program step: start_ns, end_ns or None, ops, read_bytes)."""
        return self._report.get("tasks", [])

    @property
    def fault_latency(self) -> dict[str, Any]:
        """count, median_ns, p99_ns, mean_ns and ``buckets`` as [upper_ns, count] pairs."""
        return self._report.get("fault_latency", {})

    @property
    def devices(self) -> list[dict[str, Any]]:
        """Per block device: reads, writes, bytes, merges, busy_ns, read_congested_ns, the
        sums of queue wait and service time per direction (``read_wait_ns``,
        ``read_service_ns``, ``write_wait_ns``, ``write_service_ns``) and ``io_size_hist``."""
        return self._report.get("devices", [])

    @property
    def ra_window_hist(self) -> list[list[int]]:
        """File readahead windows by the size the policy gave them, as [pages, count] pairs:
        pages is a power of two, the bucket's upper bound; the counts add up to the
        ``file_ra_windows`` counter."""
        return self._report.get("ra_window_hist", [])

    @property
    def timeline(self) -> list[dict[str, Any]]:
        """Per ``sample_interval`` of the run (empty without one): t_ns (end of the interval),
        what happened in the interval (read_bytes, dev_reads, dev_read_bytes, pgmajfault,
        pswpin, pswpout, ra_evicted_unused), the gauges at its end in pages (nr_free_pages,
        nr_inactive_anon, nr_active_anon, nr_inactive_file, nr_active_file, nr_dirty,
        nr_writeback, nr_swap_used) and, with memcgs, ``memcg_usage_bytes`` (each memcg's
        memory.current at its end, bytes, by name)."""
        return self._report.get("timeline", [])

    def to_dict(self) -> dict[str, Any]:
        """The whole report as a dict (a copy)."""
        return copy.deepcopy(self._report)

    def to_pandas(self) -> Any:
        """The counters as a pandas DataFrame, one row per counter, columns ``counter, value``."""
        pd = _pandas()
        items = list(self.counters.items())
        return pd.DataFrame(
            {"counter": [k for k, _ in items], "value": [v for _, v in items]},
            columns=["counter", "value"],
        )

    def timeline_df(self) -> Any:
        """The timeline (:attr:`timeline`) as a DataFrame, one row per ``sample_interval``:
        ``t_s`` (the interval's end, simulated seconds), then the report's fields: ``t_ns``,
        what happened in the interval (``read_bytes``, ``dev_reads``, ``dev_read_bytes``,
        ``pgmajfault``, ``pswpin``, ``pswpout``, ``ra_evicted_unused``), the gauges at its end
        in pages (``nr_free_pages``, ``nr_inactive_anon``, ``nr_active_anon``,
        ``nr_inactive_file``, ``nr_active_file``, ``nr_dirty``, ``nr_writeback``,
        ``nr_swap_used``), and with memcgs one ``memcg.<name>.usage_bytes`` column per memcg
        (memory.current at the interval's end). No rows when the scenario sets no
        ``sample_interval``. A report written before the gauges were sampled has only the
        columns it has."""
        pd = _pandas()
        rows = self.timeline
        first = rows[0] if rows else {}
        columns = [c for c in _TIMELINE_COLUMNS if not rows or c in first]
        columns += [k for k in first if k not in columns and k != _MEMCG_USAGE]
        df = pd.DataFrame(rows, columns=columns).astype("int64")
        memcgs = list(dict.fromkeys(m for r in rows for m in r.get(_MEMCG_USAGE, {})))
        for m in memcgs:
            df[f"memcg.{m}.usage_bytes"] = pd.array([r.get(_MEMCG_USAGE, {}).get(m, 0) for r in rows], dtype="int64")
        df.insert(0, "t_s", df["t_ns"] / 1e9)
        return df

    def latency_df(self) -> Any:
        """The fault-latency histograms as one long DataFrame, one row per non-empty bucket:
        ``histogram`` (``fault_latency``: every fault; ``fault_latency_kernel``: its kernel
        part, less the time waiting for devices; ``major_fault_latency`` and
        ``major_fault_latency_kernel``: the same of major faults alone), ``upper_ns`` (the
        bucket's upper bound), ``count`` and ``cdf`` (the fraction of that histogram's faults
        at or under ``upper_ns``)."""
        pd = _pandas()
        rows = []
        for name in _LATENCIES:
            buckets = self._report.get(name, {}).get("buckets", [])
            total = sum(c for _, c in buckets)
            seen = 0
            for upper, count in buckets:
                seen += count
                rows.append((name, upper, count, seen / total))
        df = pd.DataFrame(rows, columns=["histogram", "upper_ns", "count", "cdf"])
        return df.astype({"upper_ns": "int64", "count": "int64", "cdf": "float64"})

    def io_df(self) -> Any:
        """Per block device (:attr:`devices`), one row: its counts and sums as the report
        gives them (``name``, ``model``, ``reads``, ``writes``, ``read_bytes``,
        ``write_bytes``, ``busy_ns``, ``read_service_ns``, ...), then per request the mean
        size (``read_request_bytes``, ``write_request_bytes``), the mean service time
        (``read_service_ms``, ``write_service_ms``) and iostat's ``r_await_ms`` and
        ``w_await_ms`` (queue wait plus service). A mean over no request is NaN.
        :meth:`io_size_df` gives the request sizes' histogram."""
        pd = _pandas()
        df = pd.DataFrame([{k: v for k, v in d.items() if k != "io_size_hist"} for d in self.devices])
        if df.empty:
            return df
        for d in ("read", "write"):
            n = df[f"{d}s"].where(df[f"{d}s"] > 0)  # NaN where there was no request
            df[f"{d}_request_bytes"] = df[f"{d}_bytes"] / n
            df[f"{d}_service_ms"] = df[f"{d}_service_ns"] / n / 1e6
            df[f"{d[0]}_await_ms"] = (df[f"{d}_wait_ns"] + df[f"{d}_service_ns"]) / n / 1e6
        return df

    def io_size_df(self) -> Any:
        """The devices' request sizes as a long DataFrame, one row per device and non-empty
        bucket: ``device``, ``upper_bytes`` (the bucket's upper bound, a power of two) and
        ``count`` (requests dispatched, reads and writes)."""
        pd = _pandas()
        rows = [(d["name"], upper, count) for d in self.devices for upper, count in d.get("io_size_hist", [])]
        df = pd.DataFrame(rows, columns=["device", "upper_bytes", "count"])
        return df.astype({"upper_bytes": "int64", "count": "int64"})

    def to_row(self) -> dict[str, Any]:
        """The run as one flat dict, the columns :func:`pagesim.sweep` records per run:
        ``elapsed_s``, ``completed``, ``ops_done``, ``ops_total``; per fault-latency histogram
        (``fault_latency``, ``major_fault_latency``) ``.count``, ``.median_ns``, ``.p99_ns``
        and ``.mean_ns``; per task ``task.<name>.elapsed_s``, ``.cpu_s``, ``.faults`` and
        ``.major_faults``; and every counter as ``vmstat.<name>``."""
        row: dict[str, Any] = {
            "elapsed_s": self.elapsed_s,
            "completed": self.completed,
            "ops_done": self.ops_done,
            "ops_total": self.ops_total,
        }
        for name in ("fault_latency", "major_fault_latency"):
            hist = self._report.get(name, {})
            for stat in _LATENCY_STATS:
                row[f"{name}.{stat}"] = hist.get(stat, 0)
        for t in self.tasks:
            prefix = f"task.{t['name']}."
            row[prefix + "elapsed_s"] = t["elapsed_ns"] / 1e9
            row[prefix + "cpu_s"] = t.get("cpu_ns", 0) / 1e9
            row[prefix + "faults"] = t.get("faults", 0)
            row[prefix + "major_faults"] = t.get("major_faults", 0)
        for name, value in self.counters.items():
            row[f"vmstat.{name}"] = value
        return row

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Result):
            return NotImplemented
        return self._report == other._report

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        shown = " ".join(f"{k}={self.counters[k]}" for k in _REPR_COUNTERS if k in self.counters)
        head = f"scenario={self.scenario!r} profile={self.profile!r} seed={self._report.get('seed')!r}"
        elapsed = self._report.get("elapsed_ns")
        if elapsed is not None:
            head += f" elapsed={elapsed / 1e9:.6g}s"
        return f"<pagesim.Result {head}{' ' + shown if shown else ''}>"
