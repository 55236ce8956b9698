"""The type stubs (python/pagesim/_native.pyi) must match the compiled module."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from pagesim import _native

STUB = Path(__file__).resolve().parents[2] / "python" / "pagesim" / "_native.pyi"


def _stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text(), filename=str(STUB))


def _stub_functions() -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in _stub_tree().body if isinstance(n, ast.FunctionDef)}


def _stub_names() -> set[str]:
    names = set()
    for node in _stub_tree().body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _module_names() -> set[str]:
    return {n for n in vars(_native) if not n.startswith("_") or n == "__version__"}


def test_stub_names_match_module() -> None:
    stub, module = _stub_names(), _module_names()
    assert stub - module == set(), "in _native.pyi but not in the compiled module"
    assert module - stub == set(), "in the compiled module but not in _native.pyi"


def _stub_parameters(fn: ast.FunctionDef) -> list[tuple[str, object]]:
    """(name, default) per parameter; the default is `inspect.Parameter.empty` when there is none."""
    args = fn.args.posonlyargs + fn.args.args
    positional = [inspect.Parameter.empty] * (len(args) - len(fn.args.defaults))
    positional += [ast.literal_eval(d) for d in fn.args.defaults]
    keyword = [inspect.Parameter.empty if d is None else ast.literal_eval(d) for d in fn.args.kw_defaults]
    return list(zip([a.arg for a in args + fn.args.kwonlyargs], positional + keyword))


@pytest.mark.parametrize("name", sorted(_stub_functions()))
def test_stub_parameters_match_module(name: str) -> None:
    sig = inspect.signature(getattr(_native, name))
    compiled = [(p.name, p.default) for p in sig.parameters.values()]
    assert compiled == _stub_parameters(_stub_functions()[name])


def test_scenario_error_is_a_value_error() -> None:
    assert issubclass(_native.ScenarioError, ValueError)
