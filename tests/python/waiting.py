"""Waiting for a condition in the tests that watch processes (sweep workers, Ray's)."""

from __future__ import annotations

import time
from typing import Any, Callable

import pytest


def wait_for(what: str, ok: Callable[[], Any], timeout: float = 60, poll: float = 0.02) -> Any:
    """`ok()`'s first true value, polled every `poll` seconds; the test fails, naming `what`,
    if none comes within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = ok()
        if value:
            return value
        time.sleep(poll)
    pytest.fail(f"timed out waiting for {what}")
