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


def test_registries_list_every_kind_with_its_scenario_key() -> None:
    registries = pagesim.registries()
    assert registries == json.loads(_native.registries())
    kinds = {r["kind"]: r for r in registries}
    for kind in ("swap_readahead", "scan_balance", "file_readahead", "device_model", "io_scheduler"):
        assert kind in kinds, kind
        assert kinds[kind]["entries"], kind
    assert kinds["file_readahead"]["scenario_key"] == "kernel.file_readahead"
    assert "modern" in [e["name"] for e in kinds["file_readahead"]["entries"]]
    keys = [t["key"] for t in pagesim.describe()]
    for r in registries:
        if r["scenario_key"].startswith("kernel."):
            assert r["scenario_key"] in keys


def test_profiles_name_a_registered_policy_of_every_kind_they_choose() -> None:
    names = {r["kind"]: {e["name"] for e in r["entries"]} for r in pagesim.registries()}
    for profile in pagesim.profiles():
        for kind in ("swap_readahead", "scan_balance", "file_readahead"):
            assert profile[kind] in names[kind], (profile["name"], kind, profile[kind])
