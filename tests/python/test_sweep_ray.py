"""pagesim.sweep(backend="ray") on a real Ray cluster on this machine: the same rows and
files as the local backend, bit for bit; resume across backends; a killed Ray worker's run
rerun or recorded failed; `pagesim sweep --backend ray --address`; and, without Ray, the
error that says how to install it.

One cluster for the module, started by `ray.init()` in this process with two worker
processes, bound to 127.0.0.1, in a temporary directory; the command line's sweep connects
to it by its address. Ray is the `ray`
extra (scripts/install.sh installs it when CI=true or PAGESIM_TEST_EXTRAS=1): without it the
cluster tests skip, except in CI, where they fail.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

import pagesim  # noqa: E402
from waiting import wait_for  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "tests" / "scenarios" / "sweep-small.toml"
PAGESIM = REPO / "target" / "release" / "pagesim"
ACCESSES = "task.0.step.1.accesses"
FAST, SLOW = 20_000, 6_000_000
GRID = {"machine.ram": ["36MB", "40MB"]}
# The cluster and this process: no token file in ~/.ray, no usage report sent anywhere.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def _ray_or_skip() -> Any:
    try:
        import ray
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail("Ray is not installed, and CI must run the Ray backend's tests: scripts/install.sh "
                        "installs the ray extra when CI=true")
        pytest.skip("Ray is not installed (pip install 'pagesim[ray]', or PAGESIM_TEST_EXTRAS=1 bash scripts/install.sh)")
    return ray


class Cluster(NamedTuple):
    address: str
    temp: str  # its temporary directory, which its processes' command lines name


def _processes_naming(text: str) -> list[int]:
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                pids.append(int(cmdline.parent.name))
        except OSError:
            continue
    return pids


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """A Ray cluster on this machine, started and connected to by this process, with two
    worker processes (two CPUs), on 127.0.0.1. The sweeps of this process use this
    connection; the command line's connects by its address."""
    ray = _ray_or_skip()
    # Short: Ray's unix sockets live under it, and their paths may not exceed 107 bytes.
    temp = tempfile.mkdtemp(prefix="pagesim-ray-", dir="/tmp")
    try:
        with pytest.MonkeyPatch.context() as mp:
            for k, v in RAY_ENV.items():
                mp.setenv(k, v)
            mp.delenv("RAY_ADDRESS", raising=False)
            ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp, _node_ip_address="127.0.0.1",
                     logging_level="ERROR")
            try:
                yield Cluster(ray.get_runtime_context().gcs_address, temp)
            finally:
                ray.shutdown()
    finally:
        # ray.shutdown() stops the cluster's processes; any it left are ended by pid.
        for pid in _processes_naming(temp):
            os.kill(pid, signal.SIGKILL)
        wait_for("the Ray processes to end", lambda: not _processes_naming(temp), timeout=15)
        shutil.rmtree(temp, ignore_errors=True)


def _contents(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir()) if not p.name.startswith(".")}


def _stamps(out: Path) -> dict[str, tuple[int, int]]:
    """Each cell file's (inode, mtime): a file written again changes both."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("*.parquet")}


def test_ray_gives_the_local_backend_s_rows_and_files_bit_for_bit(cluster: Cluster, tmp_path: Path) -> None:
    local = pagesim.sweep(SMALL, GRID, seeds=2, jobs=2, out=tmp_path / "local", progress=False)
    ray_df = pagesim.sweep(SMALL, GRID, seeds=2, jobs=2, out=tmp_path / "ray", backend="ray", progress=False)
    pd.testing.assert_frame_equal(local, ray_df, check_exact=True)
    assert local["vmstat.pswpin"].nunique() > 1, "the cells differ"
    # The same files, byte for byte: every cell's Parquet file and the manifest.
    local_files, ray_files = _contents(tmp_path / "local"), _contents(tmp_path / "ray")
    assert sorted(local_files) == sorted(ray_files) == sorted([*(f"{c}.parquet" for c in local["cell_id"]), "_sweep.json"])
    assert local_files == ray_files


def test_a_sweep_one_backend_began_the_other_completes(cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = pagesim.sweep(SMALL, GRID, seeds=1, out=out, backend="ray", progress=False)
    before = _stamps(out)
    both = pagesim.sweep(SMALL, GRID, seeds=2, jobs=2, out=out, progress=False)
    after, written = _stamps(out), _contents(out)
    assert len(after) == len(before) + 2 and all(after[n] == before[n] for n in before), "only the new seed ran"
    pd.testing.assert_frame_equal(both[both["seed"] == 1].reset_index(drop=True), first, check_exact=True)
    # And back: a cell removed from the local sweep's files is run again on Ray, from the
    # command line, and its file is the one the local backend wrote.
    if not PAGESIM.exists():
        pytest.skip("target/release/pagesim is not built (scripts/install.sh)")
    gone = f"{both['cell_id'].iloc[3]}.parquet"
    (out / gone).unlink()
    r = subprocess.run(
        [str(PAGESIM), "sweep", str(SMALL), "--vary", "machine.ram=36MB,40MB", "--seeds", "2", "--out", str(out),
         "--backend", "ray", "--address", cluster.address, "--stat", "pswpin"],
        env={**os.environ, **RAY_ENV, "PAGESIM_PYTHON": sys.executable}, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["machine.ram", "seed", "status", "elapsed_s", "pswpin"]
    assert len(lines) == 1 + 4 and all(" ok " in line for line in lines[1:])
    assert [n for n, stamp in _stamps(out).items() if stamp != after[n]] == [gone], "only the missing cell ran"
    assert _contents(out) == written


def test_a_trace_by_a_relative_path_is_found_as_the_local_backend_finds_it(
    cluster: Cluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ray's workers run in the directory their node's Ray started in (here, where this
    # test process was), not the sweep's; a task moves to the sweep's, where the scenario's
    # relative path and its trace's resolve.
    (tmp_path / "t.csv").write_text("time,op,page\n" + "".join(f"{i * 1000},r,{i * 7 % 500}\n" for i in range(2000)))
    (tmp_path / "s.toml").write_text(
        'name = "trace-small"\n[machine]\nram = "64MB"\ncpus = 1\n[device.disk]\nmodel = "nvme"\n'
        '[[task]]\nname = "replay"\nprogram = { trace = "t.csv", format = "plain" }\n'
    )
    monkeypatch.chdir(tmp_path)
    grid = {"machine.ram": ["48MB", "64MB"]}
    ray_df = pagesim.sweep("s.toml", grid, backend="ray", progress=False)
    pd.testing.assert_frame_equal(ray_df, pagesim.sweep("s.toml", grid, jobs=1, progress=False), check_exact=True)
    assert (ray_df["vmstat.pgmajfault"] == 500).all(), "the trace's 500 pages, each read once"


def _raylet(temp: str) -> int:
    """The pid of the raylet whose command line names `temp` (our cluster's)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if args and args[0].endswith(b"/raylet") and any(temp.encode() in a for a in args):
            return int(cmdline.parent.name)
    raise LookupError("no raylet")


def _cpu_ticks(pid: int) -> int:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return -1
    return int(fields[11]) + int(fields[12])


def _running_task(raylet: int, name: str) -> int | None:
    """A worker of `raylet` in the middle of task `name`: Ray titles a worker `ray::NAME`
    while it runs one, and it gains CPU time (a worker just done may not be retitled yet)."""
    titled = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            title = (stat.parent / "cmdline").read_bytes().split(b"\0")[0]
        except (OSError, IndexError, ValueError):
            continue
        if ppid == raylet and title == f"ray::{name}".encode():
            titled.append(int(stat.parent.name))
    before = {p: _cpu_ticks(p) for p in titled}
    time.sleep(0.2)
    busy = [p for p, t in before.items() if t >= 0 and _cpu_ticks(p) - t >= 2]
    return busy[0] if busy else None


@pytest.mark.filterwarnings("ignore:1 of 2 runs failed:RuntimeWarning")
def test_a_killed_ray_worker_s_run_runs_again_or_is_recorded_failed(cluster: Cluster, tmp_path: Path) -> None:
    raylet = _raylet(cluster.temp)

    def killed(retries: int) -> pd.DataFrame:
        result: dict[str, Any] = {}
        out = tmp_path / f"retries-{retries}"
        t = threading.Thread(target=lambda: result.update(df=pagesim.sweep(
            SMALL, {ACCESSES: [FAST, SLOW]}, jobs=2, out=out, backend="ray", retries=retries,
            progress=False)))
        t.start()
        # The short run written, the long one is the only task running.
        wait_for("the short run", lambda: len(list(out.glob("*.parquet"))) >= 1)
        pid = wait_for("the long run's worker", lambda: _running_task(raylet, "run_cell"))
        os.kill(pid, signal.SIGKILL)
        t.join(timeout=120)
        assert not t.is_alive()
        return result["df"]

    df = killed(retries=0)
    failed = df[df["status"] == "failed"]
    assert failed[ACCESSES].tolist() == [SLOW] and failed["elapsed_s"].isna().all(), df[["status", "error"]]
    assert failed["error"].iloc[0].startswith("Ray task lost: WorkerCrashedError"), failed["error"].iloc[0]
    assert "(run 1 of 1 times)" in failed["error"].iloc[0]
    assert df.loc[df[ACCESSES] == FAST, "status"].tolist() == ["ok"]

    df = killed(retries=1)
    assert (df["status"] == "ok").all() and df["completed"].all(), df[["status", "error"]]


def test_without_ray_the_ray_backend_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(ImportError, match=r"backend='ray' needs Ray.*pip install 'pagesim\[ray\]'"):
        pagesim.sweep(SMALL, GRID, out=tmp_path / "out", backend="ray", progress=False)
    assert not (tmp_path / "out").exists(), "refused before anything was written"
    # The command line's Python side: a message and status 2.
    code = "import sys; sys.modules['ray'] = None; from pagesim.__main__ import main; sys.exit(main(sys.argv[1:]))"
    r = subprocess.run([sys.executable, "-c", code, "sweep", str(SMALL), "--backend", "ray", "-q"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and "pip install 'pagesim[ray]'" in r.stderr, r.stderr


def test_address_is_the_ray_backend_s_option() -> None:
    with pytest.raises(ValueError, match="address= is an option of backend 'ray', not of 'local'"):
        pagesim.sweep(SMALL, GRID, address="127.0.0.1:1", progress=False)
