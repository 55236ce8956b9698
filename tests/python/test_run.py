"""Runs through the binding against the engine's contract (scenarios/quickstart.toml)."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

import pagesim

from scenario_keys import find_key, get_key


def _same_run(a: pagesim.Result, b: pagesim.Result) -> None:
    # Everything but the scenario's name, which may be its origin ("<dict>" or the path).
    da, db = a.to_dict(), b.to_dict()
    da.pop("scenario", None)
    db.pop("scenario", None)
    assert da == db


def _halved(value: Any) -> Any:
    if isinstance(value, int):
        return value // 2
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", str(value))
    assert m, f"cannot halve the RAM size {value!r}"
    return f"{float(m.group(1)) / 2:g}{m.group(2)}"


def test_quickstart_runs(quickstart_result: pagesim.Result) -> None:
    r = quickstart_result
    assert r.counters["pgfault"] > 0
    assert r.elapsed_ns > 0
    assert r.elapsed_s == r.elapsed_ns / 1e9
    assert isinstance(r.seed, int)
    assert r.profile
    assert r.tasks and all(t["elapsed_ns"] > 0 for t in r.tasks)
    assert r.fault_latency["count"] > 0


def test_same_run_twice_gives_identical_counters(
    quickstart_path: Path, quickstart_result: pagesim.Result
) -> None:
    again = pagesim.run(str(quickstart_path))
    assert again.counters == quickstart_result.counters
    assert again == quickstart_result


def test_progress_does_not_change_the_result(
    quickstart_path: Path, quickstart_result: pagesim.Result
) -> None:
    assert pagesim.run(quickstart_path, progress=True) == quickstart_result


def test_dict_scenario_equals_the_file(
    quickstart_dict: dict[str, Any], quickstart_result: pagesim.Result
) -> None:
    _same_run(pagesim.run(quickstart_dict), quickstart_result)


def test_explicit_seed_is_reported_and_reproducible(quickstart_path: Path) -> None:
    a = pagesim.run(quickstart_path, seed=12345)
    assert a.seed == 12345
    assert pagesim.run(quickstart_path, seed=12345) == a


def test_kwargs_and_set_are_the_same_override(quickstart_path: Path) -> None:
    by_kwargs = pagesim.run(quickstart_path, vm__swappiness=100)
    by_set = pagesim.run(quickstart_path, set={"vm.swappiness": 100})
    assert by_kwargs == by_set


def test_less_ram_swaps_more(
    quickstart_path: Path, quickstart_dict: dict[str, Any], quickstart_result: pagesim.Result,
    ram_key: str,
) -> None:
    smaller = _halved(get_key(quickstart_dict, ram_key))
    r = pagesim.run(quickstart_path, vm__swappiness=100, **{ram_key.replace(".", "__"): smaller})
    assert r.counters != quickstart_result.counters
    assert r.counters["pswpout"] > quickstart_result.counters.get("pswpout", 0)


def test_to_pandas_shape(quickstart_result: pagesim.Result) -> None:
    pytest.importorskip("pandas")
    df = quickstart_result.to_pandas()
    assert df.shape == (len(quickstart_result.counters), 2)
    assert list(df.columns) == ["counter", "value"]
    assert int(df.loc[df["counter"] == "pgfault", "value"].iloc[0]) > 0


def test_unknown_override_key_is_named(quickstart_path: Path) -> None:
    with pytest.raises(pagesim.ScenarioError, match="no_such_tunable"):
        pagesim.run(quickstart_path, vm__no_such_tunable=1)


def test_unknown_scenario_key_is_named(quickstart_dict: dict[str, Any]) -> None:
    bad = {**quickstart_dict, "no_such_section": {"x": 1}}
    with pytest.raises(pagesim.ScenarioError, match="no_such_section"):
        pagesim.run(bad)


def test_negative_size_is_named(quickstart_dict: dict[str, Any], ram_key: str) -> None:
    bad = copy.deepcopy(quickstart_dict)
    *parents, leaf = ram_key.split(".")
    table = bad
    for p in parents:
        table = table[p]
    table[leaf] = -1
    with pytest.raises(pagesim.ScenarioError, match=re.escape(leaf)):
        pagesim.run(bad)


def test_negative_size_override_is_named(quickstart_path: Path, ram_key: str) -> None:
    with pytest.raises(pagesim.ScenarioError, match=re.escape(ram_key.split(".")[-1])):
        pagesim.run(quickstart_path, set={ram_key: "-1GiB"})


def test_unknown_profile_is_named(quickstart_path: Path, quickstart_dict: dict[str, Any]) -> None:
    key = find_key(quickstart_dict, ("profile",)) or "profile"
    with pytest.raises(pagesim.ScenarioError, match="linux-0.01-nonexistent|profile"):
        pagesim.run(quickstart_path, set={key: "linux-0.01-nonexistent"})


def test_readahead_windows_by_size_add_up_to_the_counter() -> None:
    # 4 MiB read in 64 KiB records from a device with read_ahead_kb 128: 32-page windows.
    scenario = {
        "machine": {"ram": "64MB", "kernel_reserved": "8MB"},
        "device": {"d": {"model": "nvme", "read_ahead_kb": 128}},
        "file": {"f": {"device": "d", "size": "4MB"}},
        "task": [{"name": "t", "step": [{"file": "f", "op": "read", "pattern": "seq", "record": "64KB"}]}],
    }
    r = pagesim.run(scenario)
    assert r.ra_window_hist == [[32, 32]]
    assert sum(c for _, c in r.ra_window_hist) == r.counters["file_ra_windows"]


# A full memcg whose readers' pages are evicted before they are copied (the file says how).
_LIVELOCK = Path(__file__).resolve().parents[1] / "scenarios" / "livelock-memcg.toml"
# One read(2) that outlasts the watchdog's 100 ms span while the disk works.
_WATCHDOG = Path(__file__).resolve().parents[1] / "scenarios" / "watchdog-long-read.toml"


def test_a_run_stopped_by_the_watchdog_raises_run_error_with_the_report_up_to_the_stop() -> None:
    with pytest.raises(pagesim.RunError, match=r"(?s)stopped \(livelock\).*task reader: runnable, in a read\(2\)") as e:
        pagesim.run(_WATCHDOG)
    assert isinstance(e.value, RuntimeError)
    r = e.value.result
    assert not r.completed and r.stop_reason == "livelock"
    assert r.ops_done == 0 and r.ops_total == 1
    assert r.elapsed_ns >= 100_000_000


def test_a_time_limit_returns_an_unfinished_report_with_real_times() -> None:
    r = pagesim.run(_LIVELOCK, time_limit="5ms", kernel__profile="linux-6.6")
    assert not r.completed and r.stop_reason == "time_limit" and r.stop_detail is None
    # The run stops at the limit; a step that cannot be cut (an access, a reclaim pass)
    # may end a little past it, and the report gives that real time, not 0.
    assert 5_000_000 <= r.elapsed_ns < 5_500_000
    assert all(t["elapsed_ns"] == r.elapsed_ns and not t["completed"] for t in r.tasks)


def test_a_scenario_needing_more_memory_than_allowed_is_refused(quickstart_path: Path) -> None:
    with pytest.raises(pagesim.ScenarioError, match=r"needs about .* more than the 1.0 MiB allowed"):
        pagesim.run(quickstart_path, max_memory=1 << 20)
    with pytest.raises(ValueError, match="max_memory"):
        pagesim.run(quickstart_path, max_memory=-1)


def test_every_key_is_reachable_by_keyword_page_cluster_too(quickstart_path: Path) -> None:
    a = pagesim.run(quickstart_path, vm__page_cluster=0)
    b = pagesim.run(quickstart_path, set={"vm.page-cluster": 0})
    assert a == b
    assert a.counters["pswpin"] > 0 and a != pagesim.run(quickstart_path)


def test_toml_text_is_a_scenario_not_a_path(quickstart_path: Path, quickstart_result: pagesim.Result) -> None:
    _same_run(pagesim.run(quickstart_path.read_text()), quickstart_result)
    with pytest.raises(pagesim.ScenarioError, match=r"^<string> \(line 2\): machine.ram: expected a size") as e:
        pagesim.run("[machine]\nram = 'lots'\n")
    assert "machine.ram" in str(e.value) and len(str(e.value)) < 300


def test_the_timeline_s_columns_are_the_report_s(quickstart_path: Path) -> None:
    pytest.importorskip("pandas")
    from pagesim.report import _TIMELINE_COLUMNS

    r = pagesim.run(quickstart_path, sample_interval="2s")
    assert r.timeline and set(r.timeline[0]) == set(_TIMELINE_COLUMNS)
    df = r.timeline_df()
    assert len(df) == len(r.timeline) and df["pswpout"].sum() <= r.counters["pswpout"]
    assert df["t_ns"].tolist() == [s["t_ns"] for s in r.timeline]
    assert df["t_s"].iloc[0] == 2.0


def test_a_run_releases_the_gil_while_it_runs() -> None:
    # A thread in a run gains CPU time while this thread runs Python: with the GIL held
    # through the native call, this thread would stand still from the run's start to its
    # end, and see the other's CPU time take at most a few values.
    import threading

    small = Path(__file__).resolve().parents[1] / "scenarios" / "sweep-small.toml"
    t = threading.Thread(target=pagesim.run, args=(small,), kwargs={"set": {"task.0.step.1.accesses": 3_000_000}})
    t.start()
    seen = set()
    while t.is_alive():
        try:
            with open(f"/proc/self/task/{t.native_id}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            break
        seen.add(int(fields[11]) + int(fields[12]))
    t.join()
    assert len(seen) >= 10, f"the run's thread's CPU ticks seen from another thread: {sorted(seen)}"
