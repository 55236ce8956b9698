#!/usr/bin/env python3
"""pagesim.sweep on Ray against the local backend (issue 21: the Ray backend on a local
cluster takes at most 1.5x the local backend's time): bench/sweep-speedup.py's sweep (a 3x3
grid with 3 seeds of scenarios/quickstart.toml, 27 CPU-bound runs of about 0.3 s), jobs=2,
on a Ray cluster of this machine with two CPUs.

The cluster is `ray start --head --block` (two CPUs, 127.0.0.1, a temporary directory, its
own process group in this process's session), timed apart: its start, until a driver can connect. Then ROUNDS rounds
(default 5) of two phases, each measurement interleaved with a local one of the same sweep:

* `address`: `pagesim.sweep(..., backend="ray", address=ADDR)` from a process not connected
  to Ray, as `pagesim sweep --backend ray --address ADDR` does: each sweep connects, Ray
  starts the workers of its job, and the sweep disconnects at its end;
* `connected`: this process connected once (`ray.init(address=ADDR)`), as a script or a
  notebook that runs several sweeps is: the job's workers, started by the first sweep, serve
  the others.

Each measurement prints the CPU time the rest of the machine used meanwhile (as
sweep-speedup.py does). The cluster's processes are not this process's children, so for a
Ray sweep that figure includes the runs themselves (about 8 s of CPU) and Ray's daemons: the
local sweep's figure beside it says how busy the machine was. Each phase prints the ratio
Ray / local of every round and of the medians.

    .venv/bin/python bench/sweep-ray.py [ROUNDS]

Needs the ray extra (PAGESIM_TEST_EXTRAS=1 bash scripts/install.sh).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pagesim

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("sweep_speedup", ROOT / "bench" / "sweep-speedup.py")
speedup = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(speedup)  # type: ignore[union-attr]

# No token file in ~/.ray, no usage report sent anywhere: for the cluster and this driver.
RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def sweep(**backend: object) -> None:
    df = pagesim.sweep(speedup.SCENARIO, speedup.GRID, seeds=list(speedup.SEEDS), jobs=2, progress=False, **backend)
    assert len(df) == 27 and (df["status"] == "ok").all()


def start_cluster(temp: str) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    head = subprocess.Popen(
        [sys.executable, "-c", "from ray.scripts.scripts import main; main()", "start", "--head", "--block",
         "--num-cpus=2", "--node-ip-address=127.0.0.1", f"--port={port}", f"--temp-dir={temp}",
         "--include-dashboard=false", "--disable-usage-stats"],
        stdin=subprocess.DEVNULL, stdout=open(os.path.join(temp, "ray-start.log"), "wb"), stderr=subprocess.STDOUT,
        # A process group of its own, to stop it by, in this process's session: with
        # CONFIG_SCHED_AUTOGROUP the CPU is shared between sessions, and a cluster in a
        # session of its own got a share of its own beside other sessions' load, which made
        # Ray look faster than the local workers (0.55-0.95 of their time on a busy VM).
        preexec_fn=os.setpgrp,
    )
    return head, f"127.0.0.1:{port}"


def stop_cluster(head: subprocess.Popen[bytes]) -> None:
    head.send_signal(signal.SIGTERM)  # `ray start` stops its processes
    try:
        head.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(head.pid, signal.SIGKILL)  # whatever is left of its group
    except ProcessLookupError:
        pass
    head.wait()


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    os.environ.update(RAY_ENV)
    os.environ.pop("RAY_ADDRESS", None)
    import ray

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs; ray {ray.__version__}")
    temp = tempfile.mkdtemp(prefix="pagesim-ray-", dir="/tmp")  # short: Ray's socket paths
    start = time.perf_counter()
    head, address = start_cluster(temp)
    try:
        while True:
            try:
                ray.init(address=address, logging_level="ERROR")
                break
            except ConnectionError:
                assert head.poll() is None, Path(temp, "ray-start.log").read_text(errors="replace")
                time.sleep(0.2)
        print(f"cluster start (ray start until a driver connects): {time.perf_counter() - start:.2f} s")
        ray.shutdown()

        phases = {"address": {}, "connected": {}}  # phase -> {"ray"/"local": [(wall, others)]}
        for phase in phases:
            if phase == "connected":
                t = time.perf_counter()
                ray.init(address=address, logging_level="ERROR")
                print(f"connect: {time.perf_counter() - t:.2f} s")
            backend = {"backend": "ray", "address": address} if phase == "address" else {"backend": "ray"}
            runs = phases[phase] = {"local": [], "ray": []}
            for k in range(rounds):
                runs["local"].append(speedup.measure(sweep))
                runs["ray"].append(speedup.measure(lambda: sweep(**backend)))
                (lw, lo), (rw, ro) = runs["local"][-1], runs["ray"][-1]
                print(f"{phase} round {k + 1}: local {lw:.2f} s (others {lo:.2f} s), ray {rw:.2f} s (others {ro:.2f} s), "
                      f"ratio {rw / lw:.2f}")
            if phase == "connected":
                ray.shutdown()
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        for phase, runs in phases.items():
            ratios = [r[0] / lo[0] for lo, r in zip(runs["local"], runs["ray"])]
            local = statistics.median(w for w, _ in runs["local"])
            ray_ = statistics.median(w for w, _ in runs["ray"])
            print(f"{phase:<9} median local {local:.2f} s, ray {ray_:.2f} s, ratio of medians {ray_ / local:.2f}; "
                  f"per round {', '.join(f'{x:.2f}' for x in ratios)} (the issue asks for at most 1.5)")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        stop_cluster(head)
        shutil.rmtree(temp, ignore_errors=True)


if __name__ == "__main__":
    main()
