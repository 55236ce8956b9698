"""Where a sweep's runs execute: the backends, behind one small interface, and their registry.

A backend runs ``fn(arg)`` for each submitted ``(token, arg)`` somewhere and hands back an
:class:`Outcome` for each as it ends: the value, the exception ``fn`` raised, or that the
worker running it died (``lost``). The sweep (``_sweep``) owns everything else: which cells
to run, retrying lost ones, writing results (so the rows and files of a sweep are the same
whichever backend ran it). Adding a backend is one class here and one line in
:data:`BACKENDS`: ``LocalBackend``, worker processes on this machine, and ``RayBackend``,
tasks on a Ray cluster.

The local backend is a small pool of its own rather than ``concurrent.futures``'
``ProcessPoolExecutor``, for two reasons:

* A worker that dies (killed, out of memory, a crash in the extension). The executor then
  marks the whole pool broken, terminates every other worker and fails every pending future:
  it cannot say which run killed the worker, and the other workers' runs die with it. Here
  every worker has pipes of its own and at most one run in flight, so the parent knows which
  run a dead worker held, and the others go on.
* How workers start. ``spawn`` and ``forkserver`` import the caller's ``__main__`` again in
  every worker, so a script that calls ``pagesim.sweep`` without an
  ``if __name__ == "__main__":`` guard would start a sweep in each of them; ``fork`` copies a
  process that may hold threads (tqdm's, pyarrow's, the caller's) and can deadlock. A worker
  here is ``python -m pagesim._backend``, a fresh interpreter that imports only pagesim.

::

    parent (the sweep)                         worker i (python -m pagesim._backend)
    submit(token, arg) -> queue
    idle worker? ------- (token, arg) -------> fn(arg)
    wait() <------------ (token, ok, value) -- one run at a time
    EOF on its pipe: the worker died; the token it held comes back as Outcome(lost=...)
"""

from __future__ import annotations

import importlib
import logging
import os
import pickle
import signal
import site
import subprocess
import sys
import sysconfig
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Hashable


@dataclass
class Outcome:
    """How one submitted run ended: ``error`` set if ``fn`` raised, ``lost`` (why) if the
    worker running it died, else ``value`` is what ``fn`` returned."""

    token: Hashable
    value: Any = None
    error: BaseException | None = None
    lost: str | None = None


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def _stderr_fd() -> int:
    """Where a worker's stdout goes: the parent's stderr, so that nothing a worker might
    print mixes with what the parent prints on stdout."""
    try:
        return sys.__stderr__.fileno()  # type: ignore[union-attr]
    except (AttributeError, OSError, ValueError):
        return subprocess.DEVNULL


def _worker_env() -> dict[str, str] | None:
    """The environment of a worker, so that it imports the pagesim this process runs: when
    that comes from a directory a fresh interpreter does not search (a checkout put on
    sys.path by hand), the directory goes first on PYTHONPATH. A site-packages directory is
    searched anyway, and is not put there, ahead of the standard library."""
    root = os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    searched = [*getattr(site, "getsitepackages", list)(), site.getusersitepackages()]
    searched += [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    if root in {os.path.realpath(p) for p in searched}:
        return None
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    return env


class _Worker:
    """One worker process, the parent's ends of its two pipes, and the run it holds."""

    def __init__(self, target: str) -> None:
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pagesim._backend", str(to_child_r), str(from_child_w), target],
                pass_fds=(to_child_r, from_child_w),
                stdin=subprocess.DEVNULL,
                stdout=_stderr_fd(),
                env=_worker_env(),
            )
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.inbox = Connection(from_child_r, writable=False)
        self.outbox = Connection(to_child_w, readable=False)
        self.token: Hashable | None = None
        self.busy = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def death(self) -> str:
        """Why the process ended, once it has (its pipe's EOF says so)."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            return f"worker pid {self.pid} closed its pipe and was killed"
        if code < 0:
            return f"worker pid {self.pid} was killed by {_signal_name(-code)}"
        return f"worker pid {self.pid} exited with status {code}"

    def close(self) -> None:
        self.inbox.close()
        self.outbox.close()


def _local_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class LocalBackend:
    """Up to ``jobs`` worker processes on this machine, started as runs need them. A worker
    that dies is replaced by the next run that needs one; its own run comes back as
    ``Outcome(lost=...)``. ``fn`` must be a module-level function (workers import it by
    name). ``jobs`` None: the CPUs this process may use."""

    OPTIONS: tuple[str, ...] = ()

    @staticmethod
    def check() -> None:
        """Nothing to check: this backend needs only what pagesim needs."""

    def __init__(self, fn: Callable[[Any], Any], jobs: int | None) -> None:
        self._target = f"{fn.__module__}:{fn.__qualname__}"
        self._jobs = jobs or _local_cpus()
        self._workers: list[_Worker] = []
        self._queue: deque[tuple[Hashable, Any]] = deque()
        self._ended: list[Outcome] = []

    def submit(self, token: Hashable, arg: Any) -> None:
        self._queue.append((token, arg))
        self._dispatch()

    @property
    def pending(self) -> int:
        """Runs submitted and not handed back yet."""
        return len(self._queue) + sum(w.busy for w in self._workers) + len(self._ended)

    def _dispatch(self) -> None:
        while self._queue:
            w = next((w for w in self._workers if not w.busy), None)
            if w is None:
                if len(self._workers) >= self._jobs:
                    return
                w = _Worker(self._target)
                self._workers.append(w)
            token, arg = self._queue.popleft()
            w.token, w.busy = token, True
            try:
                w.outbox.send((token, arg))
            except OSError:
                # It died since: the run counts as lost, so that workers that die at every
                # start end in failed runs rather than in a loop.
                self._ended.append(Outcome(token, lost=w.death()))
                self._remove(w)

    def _remove(self, w: _Worker) -> None:
        self._workers.remove(w)
        w.close()

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        """The runs that ended, after blocking until one has or ``timeout`` seconds have
        passed (then maybe none). Every worker's pipe is watched, an idle one's too: its
        EOF is a death to clean up before it is handed a run."""
        if not self._ended and self._workers:
            ready = wait([w.inbox for w in self._workers], timeout)
            for w in [w for w in self._workers if w.inbox in ready]:
                try:
                    token, ok, value = w.inbox.recv()
                except (EOFError, OSError):
                    if w.busy:
                        self._ended.append(Outcome(w.token, lost=w.death()))
                    else:
                        w.death()
                    self._remove(w)
                else:
                    w.busy = False
                    self._ended.append(Outcome(token, value=value) if ok else Outcome(token, error=value))
            self._dispatch()
        ended, self._ended = self._ended, []
        return ended

    def pids(self) -> list[int]:
        """The worker processes' pids."""
        return [w.pid for w in self._workers]

    def close(self) -> None:
        """Stops every worker, a run in flight too."""
        self._queue.clear()
        for w in self._workers:
            w.close()  # an idle worker reads EOF and exits
            if w.busy:
                w.process.terminate()
        for w in self._workers:
            try:
                w.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                w.process.kill()
                w.process.wait()
        self._workers.clear()




RAY_MISSING = (
    "backend='ray' needs Ray, which is not installed in this Python ({python}): "
    "pip install 'pagesim[ray]' (or pip install ray); in a checkout, "
    "PAGESIM_TEST_EXTRAS=1 bash scripts/install.sh puts it in .venv"
)


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ImportError(RAY_MISSING.format(python=sys.executable), name="ray") from e
    return ray


def _call(target: str, arg: Any) -> tuple[bool, Any]:
    """What a Ray task runs: ``target`` (``module:function``) on ``arg``, its exception
    returned rather than raised (as a local worker sends it back), so that an exception Ray
    raises at ``ray.get`` always means the task's worker or node was lost."""
    module, name = target.split(":")
    fn = getattr(importlib.import_module(module), name)
    try:
        return True, fn(arg)
    except Exception as e:  # noqa: BLE001 - every failure goes back to the sweep
        return False, _picklable(e)


class RayBackend:
    """Runs as Ray tasks on a Ray cluster, at most ``jobs`` at once (None: every run is
    submitted, and Ray runs as many at a time as the cluster has CPUs, one CPU each).

    Connects with ``ray.init(address=address)`` unless this process already did (then the
    sweep uses that connection and leaves it open). ``address`` None is Ray's own default:
    ``RAY_ADDRESS``, else the cluster ``ray start`` started last on this machine, else a
    new cluster on this machine, which ``close`` stops. A task's worker process imports
    ``fn`` by name, so the nodes need the same pagesim installed; the argument travels with
    the task (the scenario's text, not its path).

    Ray does not retry a task here (``max_retries=0``): a task whose worker or node died
    comes back as ``Outcome(lost=...)``, and the sweep runs it again as it does a local
    worker's, up to its ``retries``, with the same message and count whichever backend ran
    it. ``fn``'s own exceptions are not retried by either."""

    OPTIONS: tuple[str, ...] = ("address",)

    @staticmethod
    def check() -> None:
        """Raises ImportError, saying how to install it, when Ray is not installed."""
        _import_ray()

    def __init__(self, fn: Callable[[Any], Any], jobs: int | None, address: str | None = None) -> None:
        ray = self._ray = _import_ray()
        self._owner = not ray.is_initialized()
        if self._owner:
            try:
                # Ray's INFO lines (the cluster it started or found) would mix with the
                # progress bar; its warnings and the tasks' own output still show.
                ray.init(address=address, logging_level=logging.WARNING)
            except ConnectionError as e:
                where = address or os.environ.get("RAY_ADDRESS") or "the local cluster"
                raise ConnectionError(f"backend='ray': cannot connect to the Ray cluster at {where}: {e}") from e
        self._target = f"{fn.__module__}:{fn.__qualname__}"
        self._task = ray.remote(_call).options(max_retries=0, num_cpus=1, name=fn.__qualname__)
        self._jobs = jobs
        self._queue: deque[tuple[Hashable, Any]] = deque()
        self._running: dict[Any, Hashable] = {}  # ObjectRef -> token
        self._ended: list[Outcome] = []

    def submit(self, token: Hashable, arg: Any) -> None:
        self._queue.append((token, arg))
        self._dispatch()

    @property
    def pending(self) -> int:
        """Runs submitted and not handed back yet."""
        return len(self._queue) + len(self._running) + len(self._ended)

    def _dispatch(self) -> None:
        while self._queue and (self._jobs is None or len(self._running) < self._jobs):
            token, arg = self._queue.popleft()
            self._running[self._task.remote(self._target, arg)] = token

    def wait(self, timeout: float | None = None) -> list[Outcome]:
        """The runs that ended, after blocking until one has or ``timeout`` seconds have
        passed (then maybe none): every task that is done, in no particular order."""
        ray = self._ray
        if not self._ended and self._running:
            refs = list(self._running)
            ready, rest = ray.wait(refs, num_returns=1, timeout=timeout)
            if ready and rest:
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0]
            for ref in ready:
                token = self._running.pop(ref)
                try:
                    ok, value = ray.get(ref)
                except ray.exceptions.RayError as e:
                    # WorkerCrashedError, NodeDiedError, OutOfMemoryError...: the first line
                    # says what; the rest is Ray's advice, in its logs and on stderr.
                    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
                    self._ended.append(Outcome(token, lost=f"Ray task lost: {type(e).__name__}: {first}".rstrip(": ")))
                else:
                    self._ended.append(Outcome(token, value=value) if ok else Outcome(token, error=value))
            self._dispatch()
        ended, self._ended = self._ended, []
        return ended

    def close(self) -> None:
        """Cancels the tasks still running (their workers are killed) and disconnects, when
        the connection was this backend's: a cluster it started on this machine stops."""
        self._queue.clear()
        for ref in self._running:
            self._ray.cancel(ref, force=True)
        self._running.clear()
        if self._owner:
            self._ray.shutdown()


# Every backend by the name `sweep(backend=...)` takes. Each is built as
# `Backend(fn, jobs, **options)`, `jobs` None for the backend's default and `options` the
# names in its OPTIONS (`address=`), and has `check()` (a static method: raises when the
# backend cannot run here, before the sweep starts), `submit(token, arg)`, `pending`,
# `wait(timeout) -> list[Outcome]` and `close()`.
BACKENDS: dict[str, type] = {
    "local": LocalBackend,
    "ray": RayBackend,
}


def _exit_with_parent(parent: int) -> None:
    """Ends this worker when the sweep that started it is gone (killed, say): a worker in
    the middle of a run would otherwise go on to its end unseen. A dead parent's children
    are handed to another process, so the parent pid changes."""
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(1)


def _picklable(e: BaseException) -> BaseException:
    """``e`` if it survives pickling (the parent re-raises or records it), else a
    RuntimeError with its type, message and traceback."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:  # noqa: BLE001 - any failure to pickle
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__))
        return RuntimeError(f"{type(e).__name__}: {e}\n{text}")


def _worker_main(inbox_fd: int, outbox_fd: int, target: str) -> None:
    # Ctrl-C reaches the whole process group; the parent stops its workers itself.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    module, name = target.split(":")
    fn = getattr(importlib.import_module(module), name)
    inbox = Connection(inbox_fd, writable=False)
    outbox = Connection(outbox_fd, readable=False)
    while True:
        try:
            token, arg = inbox.recv()
        except (EOFError, OSError):
            return  # the parent closed the pipe: done
        try:
            reply = (token, True, fn(arg))
        except Exception as e:  # noqa: BLE001 - every failure goes back to the parent
            reply = (token, False, _picklable(e))
        try:
            outbox.send(reply)
        except OSError:
            return


if __name__ == "__main__":
    _worker_main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
