"""pagesim: a deterministic simulator of the Linux kernel's memory-management subsystem.

>>> import pagesim
>>> r = pagesim.run("scenarios/quickstart.toml", vm__swappiness=100)
>>> r.counters["pswpout"], r.elapsed_s
>>> df = pagesim.sweep("scenarios/quickstart.toml", grid={"vm.swappiness": [0, 60, 100]}, seeds=3)
>>> pagesim.plot.sweep(df, x="vm.swappiness", y="vmstat.pgmajfault", path="majfaults.png")
>>> pagesim.html.write(r, "report.html")
>>> table = pagesim.reproduce("seed-000")

The simulation runs in Rust (the ``pagesim._native`` extension); this package converts
arguments, calls it and wraps the JSON report it returns.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterable, Mapping, Union

from . import _native
from ._native import RunError, ScenarioError, __version__
from .report import Result
from .scenario import describe, overrides_to_sets, profiles, registries

__all__ = [
    "Result",
    "RunError",
    "ScenarioError",
    "__version__",
    "describe",
    "html",
    "overrides_to_sets",
    "plot",
    "profiles",
    "read_sweep",
    "registries",
    "reproduce",
    "run",
    "sweep",
]

# Loaded on first use (PEP 562): a sweep needs pandas and pyarrow, plots matplotlib, a second
# or more of imports that `pagesim.run` and the sweep's worker processes do without.
_LAZY = {"sweep": "_sweep", "read_sweep": "_sweep", "reproduce": "_reproduce"}
# Submodules loaded on first use: `pagesim.plot.timeline(...)`, `pagesim.html.write(...)`.
_LAZY_MODULES = ("plot", "html")


def __getattr__(name: str) -> Any:
    import importlib

    if name in _LAZY:
        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    if name in _LAZY_MODULES:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES))

Scenario = Union[str, "os.PathLike[str]", Mapping[str, Any]]


def _looks_like_toml(text: str) -> bool:
    """A string that is scenario text rather than a path: several lines, or a key = value,
    and no file of that name."""
    return ("\n" in text or "=" in text) and not os.path.exists(text)


def run(
    scenario: Scenario,
    seed: int | None = None,
    set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002 - mirrors `--set`
    progress: bool = False,
    max_memory: int | None = None,
    **overrides: Any,
) -> Result:
    """Runs a scenario and returns its :class:`Result`.

    ``scenario`` is the path of a scenario file (TOML), the TOML text itself, or a dict of
    the same shape.
    ``seed`` replaces the scenario's RNG seed. ``set`` overrides scenario fields by dotted
    key, as the CLI's ``--set``: ``{"vm.swappiness": 100}``; keyword arguments do the same
    with ``__`` for a dot: ``vm__swappiness=100``. ``progress=True`` prints a progress line
    to stderr during long runs. A scenario that needs more host memory to simulate than
    ``max_memory`` bytes (default: the host's available memory) is refused before it runs.

    Raises :class:`ScenarioError` (a ``ValueError``) when pagesim rejects the scenario or an
    override; the message names the key. Raises :class:`RunError` (a ``RuntimeError``) when
    the watchdog stops the run as livelocked (or it deadlocks): the message says what each
    task was waiting on, and the exception's ``result`` is the report up to the stop. A run
    cut off by the scenario's ``time_limit`` returns normally, with ``completed`` false.
    """
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if max_memory is not None and (isinstance(max_memory, bool) or not isinstance(max_memory, int) or max_memory <= 0):
        raise ValueError(f"max_memory must be a positive number of bytes, got {max_memory!r}")
    sets = overrides_to_sets(set, overrides)
    if isinstance(scenario, Mapping):
        text = json.dumps(scenario)
        report = _native.run_json(
            text, "<dict>", seed=seed, sets=sets, progress=progress, max_memory=max_memory
        )
    elif isinstance(scenario, str) and _looks_like_toml(scenario):
        report = _native.run_toml(
            scenario, "<string>", seed=seed, sets=sets, progress=progress, max_memory=max_memory
        )
    elif isinstance(scenario, (str, os.PathLike)):
        report = _native.run_file(
            os.fspath(scenario), seed=seed, sets=sets, progress=progress, max_memory=max_memory
        )
    else:
        raise TypeError(
            f"scenario must be a path (str or os.PathLike) or a dict, got {type(scenario).__name__}"
        )
    result = Result(json.loads(report))
    if result.stop_reason in ("livelock", "deadlock"):
        err = RunError(f"the run was stopped ({result.stop_reason}): {result.stop_detail}")
        err.result = result  # type: ignore[attr-defined]
        raise err
    return result
