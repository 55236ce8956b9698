"""Shared fixtures: the quickstart scenario (written by the engine) and key lookup in it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pagesim
from scenario_keys import find_key, load_toml

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = REPO / "scenarios" / "quickstart.toml"


@pytest.fixture(scope="session")
def quickstart_path() -> Path:
    if not QUICKSTART.exists():
        pytest.fail(f"{QUICKSTART} is missing: the engine's quickstart scenario is part of the contract")
    return QUICKSTART


@pytest.fixture(scope="session")
def quickstart_dict(quickstart_path: Path) -> dict[str, Any]:
    return load_toml(quickstart_path)


@pytest.fixture(scope="session")
def quickstart_result(quickstart_path: Path) -> pagesim.Result:
    return pagesim.run(quickstart_path)


@pytest.fixture(scope="session")
def ram_key(quickstart_dict: dict[str, Any]) -> str:
    key = find_key(quickstart_dict, ("ram", "ram_bytes", "memory", "mem"))
    if key is None:
        pytest.fail("scenarios/quickstart.toml names no RAM size (looked for ram, memory, mem)")
    return key


REPORT_SMALL = REPO / "tests" / "scenarios" / "report-small.toml"


@pytest.fixture(scope="session")
def small_result() -> pagesim.Result:
    """A run of tests/scenarios/report-small.toml (tens of milliseconds): a timeline, a
    memcg, swap-outs and major faults, for the plot and report tests."""
    return pagesim.run(REPORT_SMALL)
