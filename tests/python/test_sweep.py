"""pagesim.sweep: the grid's cells, the rows, resume, determinism across worker counts, a
worker killed mid-run, the sweep itself killed, a rejected override, and `pagesim sweep`.

The runs are tests/scenarios/sweep-small.toml (tens of milliseconds each); a run that must
still be going when a test kills its worker takes about a second and a half
(`task.0.step.1.accesses` = 6 M).
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import pagesim  # noqa: E402
from waiting import wait_for  # noqa: E402
from pagesim._sweep import expand  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "tests" / "scenarios" / "sweep-small.toml"
PAGESIM = REPO / "target" / "release" / "pagesim"
ACCESSES = "task.0.step.1.accesses"
FAST, SLOW = 20_000, 6_000_000


def test_the_grid_is_a_product_and_zip_lists_go_together() -> None:
    assert expand({"a": [1, 2], "b": ["x", "y", "z"]}) == [
        {"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"},
        {"a": 2, "b": "x"}, {"a": 2, "b": "y"}, {"a": 2, "b": "z"},
    ]
    assert expand(zip={"a": [1, 2], "b": [3, 4]}) == [{"a": 1, "b": 3}, {"a": 2, "b": 4}]
    assert expand({"c": [0, 1]}, zip={"a": [1, 2], "b": [3, 4]}) == [
        {"c": 0, "a": 1, "b": 3}, {"c": 0, "a": 2, "b": 4},
        {"c": 1, "a": 1, "b": 3}, {"c": 1, "a": 2, "b": 4},
    ]
    assert expand() == [{}]
    assert expand({"r": range(3)}) == [{"r": 0}, {"r": 1}, {"r": 2}]


@pytest.mark.parametrize(
    "grid,zip_,message",
    [
        ({"a": [1]}, {"a": [2]}, "both in grid and in zip"),
        (None, {"a": [1, 2], "b": [1]}, "one length"),
        ({"seed": [1, 2]}, None, "seeds="),
        ({"status": [1]}, None, "result column"),
        ({"a": "256MB"}, None, "a list of values"),
        ({"a": []}, None, "no values"),
    ],
)
def test_a_grid_that_cannot_be_expanded_says_why(grid: Any, zip_: Any, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        expand(grid, zip_)


def test_each_row_is_its_run_s_result_with_the_grid_s_values(tmp_path: Path) -> None:
    df = pagesim.sweep(SMALL, {"machine.ram": ["36MB", "40MB"]}, zip={"vm.swappiness": [0, 100], "vm.page-cluster": [0, 3]},
                       seeds=[1, 7], jobs=2, progress=False)
    assert len(df) == 2 * 2 * 2
    assert list(df.columns[:5]) == ["machine.ram", "vm.swappiness", "vm.page-cluster", "seed", "status"]
    assert list(df.columns[-2:]) == ["error", "cell_id"]
    assert df[["machine.ram", "vm.swappiness", "seed"]].values.tolist()[:4] == [
        ["36MB", 0, 1], ["36MB", 0, 7], ["36MB", 100, 1], ["36MB", 100, 7],
    ]
    assert df["vm.swappiness"].dtype == "int64" and (df["status"] == "ok").all() and df["error"].isna().all()
    assert df["cell_id"].is_unique
    # A row is what pagesim.run gives for its overrides and seed.
    row = df.iloc[5]
    r = pagesim.run(SMALL, seed=7, set={"machine.ram": "40MB", "vm.swappiness": 0, "vm.page-cluster": 0})
    assert row[["machine.ram", "vm.swappiness", "seed"]].tolist() == ["40MB", 0, 7]
    for k, v in r.to_row().items():
        assert row[k] == v, k
    for column in ("elapsed_s", "vmstat.pswpout", "task.toucher.cpu_s", "fault_latency.p99_ns", "major_fault_latency.median_ns"):
        assert column in df.columns, column


def test_two_workers_give_what_one_gives(tmp_path: Path) -> None:
    grid = {"machine.ram": ["36MB", "40MB"], "vm.swappiness": [0, 100]}
    one = pagesim.sweep(SMALL, grid, seeds=2, jobs=1, progress=False)
    two = pagesim.sweep(SMALL, grid, seeds=2, jobs=2, out=tmp_path / "out", progress=False)
    pd.testing.assert_frame_equal(one, two, check_exact=True)
    assert one["vmstat.pswpin"].nunique() > 1, "the cells differ"


def _files(out: Path) -> dict[str, tuple[int, int]]:
    """Each cell file's (inode, mtime): a rewritten file changes both."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("*.parquet")}


def test_a_rerun_runs_only_the_missing_cells_whatever_the_grid_s_order(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = pagesim.sweep(SMALL, {"machine.ram": ["36MB", "40MB"], "vm.swappiness": [0, 100]}, seeds=2, out=out, progress=False)
    files = _files(out)
    assert len(files) == 8 and (out / "_sweep.json").exists()
    gone = f"{first['cell_id'].iloc[3]}.parquet"
    (out / gone).unlink()
    again = pagesim.sweep(SMALL, {"vm.swappiness": [100, 0], "machine.ram": ["40MB", "36MB"]}, seeds=2, out=out, progress=False)
    after = _files(out)
    assert sorted(after) == sorted(files)
    assert [n for n in after if after[n] != files.get(n)] == [gone], "only the missing cell ran"
    key = ["machine.ram", "vm.swappiness", "seed"]
    pd.testing.assert_frame_equal(
        first.sort_values(key).reset_index(drop=True),
        again[first.columns].sort_values(key).reset_index(drop=True),
        check_exact=True,
    )
    pd.testing.assert_frame_equal(
        pd.read_parquet(out).sort_values(key).reset_index(drop=True),
        first.sort_values(key).reset_index(drop=True),
        check_exact=True,
    )
    # Grown by a seed: only the new seed's cells run.
    pagesim.sweep(SMALL, {"machine.ram": ["36MB", "40MB"], "vm.swappiness": [0, 100]}, seeds=3, out=out, progress=False)
    grown = _files(out)
    assert len(grown) == 12 and all(grown[n] == after[n] for n in after)
    assert len(pagesim.read_sweep(out)) == 12


def test_out_belongs_to_one_scenario_and_set(tmp_path: Path) -> None:
    scenario = tmp_path / "s.toml"
    scenario.write_text(SMALL.read_text())
    out = tmp_path / "out"
    pagesim.sweep(scenario, {"vm.swappiness": [0]}, out=out, progress=False)
    with pytest.raises(ValueError, match="set="):
        pagesim.sweep(scenario, {"vm.swappiness": [0]}, set={"vm.page-cluster": 0}, out=out, progress=False)
    scenario.write_text(SMALL.read_text().replace('ram = "40MB"', 'ram = "38MB"'))
    with pytest.raises(ValueError, match=r"s\.toml differs now.*not this scenario's"):
        pagesim.sweep(scenario, {"vm.swappiness": [0]}, out=out, progress=False)
    assert len(list(out.glob("*.parquet"))) == 1


@pytest.mark.parametrize(
    "grid,named",
    [({"vm.swapiness": [0, 60]}, "vm.swapiness"), ({"machine.ram": ["40MB", "lots"]}, "machine.ram: expected a size")],
)
def test_a_rejected_key_or_value_stops_the_sweep_naming_it(tmp_path: Path, grid: dict, named: str) -> None:
    with pytest.raises(pagesim.ScenarioError, match=named):
        pagesim.sweep(SMALL, grid, seeds=2, jobs=2, out=tmp_path / "out", progress=False)
    # A rejected cell is not written as a run (only the two seeds of a valid value may be);
    # the sweep raised rather than recording it and going on.
    assert len(list((tmp_path / "out").glob("*.parquet"))) <= (2 if "40MB" in str(grid) else 0)


def test_a_run_the_watchdog_stops_is_a_row_with_its_status() -> None:
    df = pagesim.sweep(REPO / "tests" / "scenarios" / "watchdog-long-read.toml", jobs=1, progress=False)
    (row,) = df.to_dict("records")
    assert (row["status"], row["completed"]) == ("livelock", False)
    assert "task reader: runnable" in row["error"] and row["elapsed_s"] > 0.1


def _children(pid: int) -> list[int]:
    out = []
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(stat.split("/")[2]))
    return out


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return -1
    return int(fields[11]) + int(fields[12])


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _kill_a_busy_worker(parent: int) -> int:
    """SIGKILLs a worker of `parent` in the middle of a run, found by the CPU time it
    gains (an idle worker sleeps on its pipe); returns its pid."""
    def busy() -> int | None:
        before = {p: _cpu_ticks(p) for p in _children(parent)}
        time.sleep(0.2)
        gained = [p for p, t in before.items() if t >= 0 and _cpu_ticks(p) - t >= 2]
        return gained[0] if gained else None

    pid = wait_for("a worker in a run", busy)
    os.kill(pid, signal.SIGKILL)
    return pid


def _sweep_in_a_thread(**kwargs: Any) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def go() -> None:
        result["df"] = pagesim.sweep(SMALL, {ACCESSES: [FAST, SLOW]}, seeds=2, jobs=2, progress=False, **kwargs)

    t = threading.Thread(target=go)
    t.start()
    return t, result


@pytest.mark.filterwarnings("ignore:1 of 4 runs failed:RuntimeWarning")
def test_a_killed_worker_loses_only_its_run_which_runs_again_or_is_rerun(tmp_path: Path) -> None:
    # The two short runs first, one per worker; once both are written, each worker is in a
    # long run.
    out = tmp_path / "out"
    t, result = _sweep_in_a_thread(out=out, retries=0)
    wait_for("the short runs", lambda: len(list(out.glob("*.parquet"))) >= 2)
    killed = _kill_a_busy_worker(os.getpid())
    t.join(timeout=120)
    df = result["df"]
    failed = df[df["status"] == "failed"]
    assert len(failed) == 1, df[["seed", "status", "error"]]
    (reason,) = failed["error"]
    assert f"worker pid {killed} was killed by SIGKILL" in reason
    assert failed[ACCESSES].tolist() == [SLOW] and failed["elapsed_s"].isna().all()
    assert (df.loc[df["status"] != "failed", "status"] == "ok").all()
    kept = _files(out)
    assert len(kept) == 3 and set(kept) == {f"{c}.parquet" for c in df.loc[df["status"] == "ok", "cell_id"]}

    rerun = pagesim.sweep(SMALL, {ACCESSES: [FAST, SLOW]}, seeds=2, jobs=2, out=out, progress=False)
    assert (rerun["status"] == "ok").all() and len(rerun) == 4
    after = _files(out)
    assert all(after[n] == kept[n] for n in kept), "finished runs are not run again"

    # With retries, the killed run runs again in a new worker and the sweep completes.
    t, result = _sweep_in_a_thread(out=tmp_path / "retried", retries=1)
    wait_for("the short runs", lambda: len(list((tmp_path / "retried").glob("*.parquet"))) >= 2)
    _kill_a_busy_worker(os.getpid())
    t.join(timeout=120)
    pd.testing.assert_frame_equal(result["df"], rerun, check_exact=True)


def test_a_killed_sweep_leaves_its_finished_runs_and_no_worker(tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["-m", "pagesim", "sweep", str(SMALL), "--vary", f"{ACCESSES}={FAST},{SLOW}", "--seeds", "2",
            "--jobs", "2", "--out", str(out), "--quiet"]
    sweep = subprocess.Popen([sys.executable, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_for("the short runs", lambda: len(list(out.glob("*.parquet"))) >= 2)
        workers = _children(sweep.pid)
        assert len(workers) == 2
    finally:
        sweep.kill()
        sweep.wait()
    wait_for("the workers to exit", lambda: not any(_running(p) for p in workers), timeout=10)
    kept = _files(out)
    assert len(kept) == 2
    df = pagesim.sweep(SMALL, {ACCESSES: [FAST, SLOW]}, seeds=2, jobs=2, out=out, progress=False)
    assert (df["status"] == "ok").all() and len(_files(out)) == 4
    assert all(_files(out)[n] == kept[n] for n in kept)


@pytest.mark.skipif(not PAGESIM.exists(), reason="target/release/pagesim is not built (scripts/install.sh)")
def test_the_cli_runs_the_sweep_and_writes_the_dataset(tmp_path: Path) -> None:
    env = {**os.environ, "PAGESIM_PYTHON": sys.executable}
    out = tmp_path / "out"
    cmd = [str(PAGESIM), "sweep", str(SMALL), "--vary", "machine.ram=36MB,40MB", "--zip", "vm.swappiness=0,100",
           "--zip", "vm.page-cluster=0,3", "--seeds", "2", "-j", "2", "--out", str(out), "--stat", "pgsteal_kswapd"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["machine.ram", "vm.swappiness", "vm.page-cluster", "seed", "status", "elapsed_s",
                                "pgsteal_kswapd"]
    assert len(lines) == 1 + 8 and all(" ok " in line for line in lines[1:])
    assert "sweep: 100%" in r.stderr and "8/8" in r.stderr, "the progress bar"
    df = pd.read_parquet(out)
    assert len(df) == 8 and set(df["vm.swappiness"]) == {0, 100}
    # The same sweep from Python finds every run done.
    api = pagesim.sweep(SMALL, {"machine.ram": ["36MB", "40MB"]}, zip={"vm.swappiness": [0, 100], "vm.page-cluster": [0, 3]},
                        seeds=2, out=out, progress=False)
    assert sorted(api["cell_id"]) == sorted(df["cell_id"])

    r = subprocess.run([*cmd[:3], "--vary", "vm.swapiness=1,2", "-q"], env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "vm.swapiness" in r.stderr, r.stderr
    r = subprocess.run([*cmd[:3], "--vary", "vm.swappiness"], env=env, capture_output=True, text=True)
    assert r.returncode == 2 and "expected KEY=A,B,..." in r.stderr, r.stderr
