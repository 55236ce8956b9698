# Type stubs for the compiled module crates/pagesim-py/src/lib.rs.
# tests/python/test_stubs.py checks that these names and parameters match the compiled module.
import os
from typing import Callable, Sequence

__version__: str

class ScenarioError(ValueError):
    """A scenario, override or argument rejected by pagesim; the message names the key."""

class RunError(RuntimeError):
    """A run stopped as livelocked or deadlocked, or an internal error of pagesim."""

def run_file(
    path: str | os.PathLike[str],
    seed: int | None = None,
    sets: Sequence[str] | None = None,
    progress: bool = False,
    max_memory: int | None = None,
) -> str: ...
def run_toml(
    text: str,
    origin: str,
    seed: int | None = None,
    sets: Sequence[str] | None = None,
    progress: bool = False,
    max_memory: int | None = None,
) -> str: ...
def run_json(
    json_text: str,
    origin: str,
    seed: int | None = None,
    sets: Sequence[str] | None = None,
    progress: bool = False,
    max_memory: int | None = None,
) -> str: ...
def reproduce(
    name: str,
    sets: Sequence[str] | None = None,
    seeds: int | None = None,
    jobs: int = 1,
    progress: Callable[[int, int, str, str], object] | None = None,
) -> str: ...
def describe() -> str: ...
def profiles() -> str: ...
def registries() -> str: ...
