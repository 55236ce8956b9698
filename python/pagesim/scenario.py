"""Scenario helpers; mirrors crates/pagesim/src/scenario (the schema lives in Rust)."""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from . import _native


def describe() -> Any:
    """Every scenario field and tunable with its unit and default (parsed JSON)."""
    return json.loads(_native.describe())


def profiles() -> Any:
    """The kernel profiles (parsed JSON): per profile its name, description and, under each
    kind's name (``swap_readahead``, ``scan_balance``, ``file_readahead``), the policy it
    selects."""
    return json.loads(_native.profiles())


def registries() -> Any:
    """Every kind of policy and model (parsed JSON): per kind its ``kind``, the
    ``scenario_key`` that selects one, ``what`` an entry is, and its ``entries``, each a
    ``name`` and a ``description``."""
    return json.loads(_native.registries())


def _format_value(key: str, value: Any) -> str:
    # Values are written as the CLI's `--set KEY=VALUE` takes them: TOML scalars, or a bare
    # string such as "4GiB" or "linux-6.6".
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value) if not isinstance(value, float) else repr(value)
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value))
    raise TypeError(f"override {key!r}: cannot pass a value of type {type(value).__name__}")


def overrides_to_sets(
    set: Mapping[str, Any] | Iterable[str] | None = None,  # noqa: A002 - mirrors `--set`
    overrides: Mapping[str, Any] | None = None,
) -> list[str]:
    """Turns ``set={"vm.swappiness": 100}`` and ``vm__swappiness=100`` into ``KEY=VALUE``
    strings, in that order (a later one wins, as repeated ``--set`` options do).

    ``set`` may also be a list of ``"KEY=VALUE"`` strings.
    """
    sets: list[str] = []
    if isinstance(set, Mapping):
        sets.extend(f"{k}={_format_value(k, v)}" for k, v in set.items())
    elif set is not None:
        for item in set:
            if not isinstance(item, str) or "=" not in item:
                raise ValueError(f"set: expected a dict or \"KEY=VALUE\" strings, got {item!r}")
            sets.append(item)
    for name, value in (overrides or {}).items():
        key = name.replace("__", ".")
        sets.append(f"{key}={_format_value(key, value)}")
    return sets
