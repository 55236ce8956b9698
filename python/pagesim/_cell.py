"""One run of a sweep (a cell: the grid's values and a seed): its scenario text, its
overrides, its stable id, and :func:`run_cell`, what a worker process calls.

Kept apart from ``_sweep`` so that a worker imports only this and the extension: pandas and
pyarrow would add about a second to each worker's start.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from typing import Any, Mapping

from . import _looks_like_toml, _native
from .report import Result


@dataclass(frozen=True)
class Source:
    """A scenario as the sweep read it once, at its start: a file edited while the sweep
    runs does not change the cells still to run, and the id of every cell is that of what
    it ran. ``kind`` is ``"toml"`` or ``"json"``; ``origin`` names it in messages and, for
    a file, is its path, so that relative trace paths resolve beside it as ``run`` does."""

    kind: str
    text: str
    origin: str

    @staticmethod
    def of(scenario: Any) -> "Source":
        if isinstance(scenario, Mapping):
            # Key order does not change a scenario, so it does not change the id.
            return Source("json", json.dumps(scenario, sort_keys=True), "<dict>")
        if isinstance(scenario, str) and _looks_like_toml(scenario):
            return Source("toml", scenario, "<string>")
        if isinstance(scenario, (str, os.PathLike)):
            path = os.fspath(scenario)
            try:
                with open(path, encoding="utf-8") as f:
                    return Source("toml", f.read(), path)
            except OSError as e:
                raise _native.ScenarioError(f"{path}: cannot read: {e.strerror or e}") from None
        raise TypeError(f"scenario must be a path (str or os.PathLike) or a dict, got {type(scenario).__name__}")

    @property
    def digest(self) -> str:
        """sha256 of the scenario's content (not of its name or path)."""
        return hashlib.sha256(f"{self.kind}\0{self.text}".encode()).hexdigest()


def cell_id(source_digest: str, sets: tuple[str, ...], seed: int) -> str:
    """A cell's id: the hash of what the run depends on, the scenario's content, the
    overrides in the order they are applied, and the seed. 16 hex digits name its file."""
    blob = json.dumps([source_digest, list(sets), seed])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CellRun:
    """What a worker gets: everything ``run_cell`` needs, picklable. ``cwd`` is the sweep's
    working directory, where a relative scenario path (``origin``) and the relative paths
    it gives (a task's ``trace``) resolve."""

    source: Source
    sets: tuple[str, ...]
    seed: int
    cwd: str | None = None


def _enter(cwd: str | None) -> None:
    """Moves this worker to the sweep's working directory, so that relative paths resolve
    as they would in the sweep's process. A local worker is there already; a Ray worker
    starts where its node's Ray was started. A directory this node does not have is left
    alone: the scenario then runs as long as it needs no relative path."""
    if cwd is None:
        return
    try:
        here = os.getcwd()
    except OSError:  # the worker's directory was removed
        here = None
    if here != cwd and os.path.isdir(cwd):
        os.chdir(cwd)


def run_cell(cell: CellRun) -> dict[str, Any]:
    """Runs one cell and returns its row: ``status`` (``"ok"``; for an unfinished run its
    ``stop_reason``: ``"time_limit"``, ``"livelock"`` or ``"deadlock"``), ``error`` (for a
    livelock or deadlock, what each task was waiting on; else None), then
    :meth:`Result.to_row`. A rejected scenario or override raises ``ScenarioError``."""
    _enter(cell.cwd)
    run = _native.run_toml if cell.source.kind == "toml" else _native.run_json
    report = run(cell.source.text, cell.source.origin, seed=cell.seed, sets=list(cell.sets))
    result = Result(json.loads(report))
    status = "ok" if result.completed else (result.stop_reason or "stopped")
    return {"status": status, "error": result.stop_detail, **result.to_row()}
