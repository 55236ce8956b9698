"""The Python API's own mechanics: argument conversion, errors, the Result wrapper.

These do not need a working engine: the Result tests build a report of the documented shape.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import pagesim
from pagesim import _native

REPORT = {
    "scenario": "unit",
    "profile": "linux-6.6",
    "seed": 7,
    "elapsed_ns": 2_500_000_000,
    "counters": {"pgfault": 1000, "pgmajfault": 10, "pswpin": 3, "pswpout": 5},
    "memcg": {"root": {"counters": {"pgfault": 1000}, "usage_bytes": 4096, "max_bytes": None}},
    "tasks": [
        {"name": "t0", "elapsed_ns": 2_500_000_000, "cpu_ns": 1_000, "faults": 1000,
         "major_faults": 10, "oom_killed": False}
    ],
    "fault_latency": {"count": 1000, "median_ns": 100, "p99_ns": 90_000, "mean_ns": 500,
                      "buckets": [[128, 900], [131072, 100]]},
    "major_fault_latency": {"count": 10, "median_ns": 131072, "p99_ns": 131072, "mean_ns": 100_000,
                            "buckets": [[131072, 10]]},
    "devices": [{"name": "ssd0", "model": "sata-ssd", "reads": 3, "writes": 5, "read_bytes": 12288,
                 "write_bytes": 20480, "busy_ns": 50_000, "read_wait_ns": 3_000, "read_service_ns": 30_000,
                 "write_wait_ns": 0, "write_service_ns": 50_000, "io_size_hist": [[4096, 8]]},
                {"name": "idle", "model": "nvme", "reads": 0, "writes": 0, "read_bytes": 0,
                 "write_bytes": 0, "busy_ns": 0, "read_wait_ns": 0, "read_service_ns": 0,
                 "write_wait_ns": 0, "write_service_ns": 0, "io_size_hist": []}],
    "ra_window_hist": [[32, 4]],
    "timeline": [{"t_ns": 1_000_000_000, "read_bytes": 4096, "dev_reads": 1, "dev_read_bytes": 4096,
                  "pgmajfault": 0, "pswpin": 0, "pswpout": 0, "ra_evicted_unused": 0,
                  "nr_free_pages": 900, "nr_inactive_anon": 10, "nr_active_anon": 20, "nr_inactive_file": 30,
                  "nr_active_file": 40, "nr_dirty": 1, "nr_writeback": 2, "nr_swap_used": 3,
                  "memcg_usage_bytes": {"box": 8192}}],
}


def test_scenario_error_is_exported_value_error() -> None:
    assert pagesim.ScenarioError is _native.ScenarioError
    assert issubclass(pagesim.ScenarioError, ValueError)
    assert pagesim.ScenarioError.__module__ == "pagesim"


def test_version_is_the_crate_version() -> None:
    assert pagesim.__version__ == _native.__version__
    assert pagesim.__version__.count(".") == 2


def test_overrides_become_set_strings_in_order() -> None:
    sets = pagesim.overrides_to_sets(
        {"vm.swappiness": 100, "swap.zswap": True},
        {"vm__page_cluster": 0, "ram": "512MiB", "vm__dirty_ratio": 12.5},
    )
    assert sets == [
        "vm.swappiness=100",
        "swap.zswap=true",
        "vm.page_cluster=0",
        "ram=512MiB",
        "vm.dirty_ratio=12.5",
    ]


def test_set_accepts_key_value_strings() -> None:
    assert pagesim.overrides_to_sets(["vm.swappiness=60"]) == ["vm.swappiness=60"]
    with pytest.raises(ValueError, match="KEY=VALUE"):
        pagesim.overrides_to_sets(["vm.swappiness"])


def test_override_of_unsupported_type_is_rejected() -> None:
    with pytest.raises(TypeError, match="vm.swappiness"):
        pagesim.overrides_to_sets(None, {"vm__swappiness": object()})


@pytest.mark.parametrize("scenario", [42, b"scenario.toml", ["a"]])
def test_run_rejects_a_scenario_of_the_wrong_type(scenario: object) -> None:
    with pytest.raises(TypeError, match="path .* or a dict"):
        pagesim.run(scenario)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_run_rejects_a_bad_seed(seed: object) -> None:
    with pytest.raises(ValueError, match="seed"):
        pagesim.run({}, seed=seed)  # type: ignore[arg-type]


def test_invalid_json_text_is_a_scenario_error_naming_the_origin() -> None:
    with pytest.raises(pagesim.ScenarioError, match="my-origin"):
        _native.run_json("{not json", "my-origin")


def test_missing_scenario_file_is_a_scenario_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-scenario.toml"
    with pytest.raises(pagesim.ScenarioError, match="no-such-scenario"):
        pagesim.run(missing)


def test_result_attributes_follow_the_report() -> None:
    r = pagesim.Result(REPORT)
    assert r.counters["pgfault"] == 1000
    assert (r.elapsed_ns, r.elapsed_s) == (2_500_000_000, 2.5)
    assert (r.seed, r.profile, r.scenario) == (7, "linux-6.6", "unit")
    assert r.memcg["root"]["max_bytes"] is None
    assert r.tasks[0]["name"] == "t0"
    assert r.fault_latency["buckets"][0] == [128, 900]
    assert r.devices[0]["io_size_hist"] == [[4096, 8]]
    assert r.ra_window_hist == [[32, 4]]
    assert pagesim.Result({}).ra_window_hist == []
    assert r.timeline[0]["t_ns"] == 1_000_000_000
    assert pagesim.Result({}).timeline == []


def test_to_dict_is_a_copy() -> None:
    r = pagesim.Result(REPORT)
    d = r.to_dict()
    assert d == REPORT
    d["counters"]["pgfault"] = 0
    assert r.counters["pgfault"] == 1000


def test_repr_names_the_run_and_key_counters() -> None:
    text = repr(pagesim.Result(REPORT))
    assert text.startswith("<pagesim.Result ")
    for part in ("'unit'", "'linux-6.6'", "seed=7", "elapsed=2.5s", "pgfault=1000", "pswpout=5"):
        assert part in text


def test_results_compare_by_report() -> None:
    assert pagesim.Result(REPORT) == pagesim.Result(REPORT)
    other = {**REPORT, "seed": 8}
    assert pagesim.Result(REPORT) != pagesim.Result(other)


def test_to_pandas_has_one_row_per_counter() -> None:
    pytest.importorskip("pandas")
    df = pagesim.Result(REPORT).to_pandas()
    assert list(df.columns) == ["counter", "value"]
    assert df.shape == (len(REPORT["counters"]), 2)
    assert dict(zip(df["counter"], df["value"])) == REPORT["counters"]


def test_to_pandas_without_pandas_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        pagesim.Result(REPORT).to_pandas()


def test_timeline_df_has_one_row_per_interval_and_seconds_first() -> None:
    pytest.importorskip("pandas")
    df = pagesim.Result(REPORT).timeline_df()
    fields = [k for k in REPORT["timeline"][0] if k != "memcg_usage_bytes"]
    assert list(df.columns) == ["t_s", *fields, "memcg.box.usage_bytes"]
    assert df["t_s"].tolist() == [1.0] and df["read_bytes"].tolist() == [4096]
    assert df["nr_free_pages"].tolist() == [900] and df["memcg.box.usage_bytes"].tolist() == [8192]
    empty = pagesim.Result({}).timeline_df()
    assert empty.empty and list(empty.columns) == ["t_s", *fields]
    # A report from before the gauges were sampled: the columns it has.
    old = {k: v for k, v in REPORT["timeline"][0].items() if k in fields[:8]}
    assert list(pagesim.Result({"timeline": [old]}).timeline_df().columns) == ["t_s", *fields[:8]]


def test_latency_df_is_every_histogram_s_buckets_with_their_cdf() -> None:
    pytest.importorskip("pandas")
    df = pagesim.Result(REPORT).latency_df()
    assert list(df.columns) == ["histogram", "upper_ns", "count", "cdf"]
    assert df.values.tolist() == [
        ["fault_latency", 128, 900, 0.9],
        ["fault_latency", 131072, 100, 1.0],
        ["major_fault_latency", 131072, 10, 1.0],
    ]
    assert pagesim.Result({}).latency_df().empty


def test_io_df_has_a_row_per_device_with_means_per_request() -> None:
    pytest.importorskip("pandas")
    df = pagesim.Result(REPORT).io_df().set_index("name")
    ssd, idle = df.loc["ssd0"], df.loc["idle"]
    assert (ssd["reads"], ssd["model"]) == (3, "sata-ssd")
    assert ssd["read_request_bytes"] == 4096 and ssd["write_request_bytes"] == 4096
    assert ssd["read_service_ms"] == pytest.approx(0.01) and ssd["r_await_ms"] == pytest.approx(0.011)
    assert ssd["w_await_ms"] == pytest.approx(0.01)
    assert idle[["read_request_bytes", "read_service_ms", "r_await_ms"]].isna().all(), "a mean over no request"
    assert "io_size_hist" not in df.columns
    sizes = pagesim.Result(REPORT).io_size_df()
    assert sizes.values.tolist() == [["ssd0", 4096, 8]]


def test_to_row_is_flat_with_units_and_prefixes() -> None:
    row = pagesim.Result(REPORT).to_row()
    assert row["elapsed_s"] == 2.5 and row["completed"] is True
    assert row["fault_latency.p99_ns"] == 90_000 and row["major_fault_latency.median_ns"] == 131072
    assert row["task.t0.elapsed_s"] == 2.5 and row["task.t0.cpu_s"] == 1e-6
    assert row["task.t0.major_faults"] == 10
    assert {k: v for k, v in row.items() if k.startswith("vmstat.")} == {
        f"vmstat.{k}": v for k, v in REPORT["counters"].items()
    }
