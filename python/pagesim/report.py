"""The result of a run; mirrors crates/pagesim/src/report (the report is built in Rust)."""

from __future__ import annotations

import copy
from typing import Any

# Counters shown by repr(), when the report has them.
_REPR_COUNTERS = ("pgfault", "pgmajfault", "pswpin", "pswpout", "pgscan_kswapd", "pgscan_direct")


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
        read_bytes, dev_reads, dev_read_bytes, pgmajfault, pswpin, pswpout, ra_evicted_unused."""
        return self._report.get("timeline", [])

    def to_dict(self) -> dict[str, Any]:
        """The whole report as a dict (a copy)."""
        return copy.deepcopy(self._report)

    def to_pandas(self) -> Any:
        """The counters as a pandas DataFrame, one row per counter, columns ``counter, value``."""
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError(
                "Result.to_pandas() needs pandas: pip install pandas (or pip install 'pagesim[pandas]')"
            ) from e
        items = list(self.counters.items())
        return pd.DataFrame(
            {"counter": [k for k, _ in items], "value": [v for _, v in items]},
            columns=["counter", "value"],
        )

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
