"""Finding keys in a scenario loaded from TOML, so tests need not hard-code its layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import pytest


def load_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    with path.open("rb") as f:
        return tomllib.load(f)


def find_key(tree: dict[str, Any], names: Iterable[str]) -> str | None:
    """Dotted path of the shallowest key in `tree` named one of `names` (a scalar leaf)."""
    names = tuple(names)
    level: list[tuple[str, dict[str, Any]]] = [("", tree)]
    while level:
        nxt = []
        for prefix, table in level:
            for name in names:
                if name in table and not isinstance(table[name], (dict, list)):
                    return prefix + name
            nxt.extend((f"{prefix}{k}.", v) for k, v in table.items() if isinstance(v, dict))
        level = nxt
    return None


def get_key(tree: dict[str, Any], dotted: str) -> Any:
    for part in dotted.split("."):
        tree = tree[part]
    return tree
