"""describe() and profiles() hand back the library's JSON, parsed."""

from __future__ import annotations

import json

import pagesim
from pagesim import _native


def test_describe_is_the_library_json_and_names_the_tunables() -> None:
    described = pagesim.describe()
    assert described == json.loads(_native.describe())
    text = json.dumps(described)
    for tunable in ("vm.swappiness", "vm.page-cluster", "vm.min_free_kbytes"):
        assert tunable in text


def test_profiles_lists_kernel_profiles() -> None:
    profiles = pagesim.profiles()
    assert profiles == json.loads(_native.profiles())
    assert profiles, "no kernel profiles"
    assert "linux-" in json.dumps(profiles)
