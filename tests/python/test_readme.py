"""The README's code blocks work as printed.

Every fenced block is checked by its kind:

* ``sh``: each command runs from the repository's root and exits 0 (the quick start's
  ``reproduce seed-000`` prints its table). ``bash scripts/test.sh`` is the suite that runs
  this test, so it is only checked to exist.
* ``text`` starting with ``$ COMMAND``: the command runs, and every line the README shows
  appears in its output, in order (``...`` stands for lines left out).
* ``python``: the block runs as a script in a scratch directory whose ``scenarios`` links the
  repository's, so that what it writes (a sweep's ``results/``) stays out of the checkout.
* a block without a language (the command-line summary): every ``pagesim SUBCOMMAND`` line
  names a subcommand, and every ``--option`` it shows is one ``pagesim SUBCOMMAND --help``
  documents.
* ``toml`` (a scenario fragment): it parses, and every key of its tasks is one
  ``pagesim describe`` lists (``task[].KEY``, ``task[].program.KEY``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGESIM = REPO / "target" / "release" / "pagesim"


def _blocks() -> list[tuple[str, int, str]]:
    """(language, line number, text) of every fenced block."""
    out = []
    lang, start, lines = None, 0, []
    for n, line in enumerate(README.read_text().splitlines(), 1):
        if line.startswith("```"):
            if lang is None:
                lang, start, lines = line[3:].strip(), n, []
            else:
                out.append((lang, start, "\n".join(lines)))
                lang = None
        elif lang is not None:
            lines.append(line)
    assert lang is None, f"README.md:{start}: a block is not closed"
    return out


BLOCKS = _blocks()


def _ids(kind: str) -> list[tuple[int, str]]:
    return [(n, text) for lang, n, text in BLOCKS if lang == kind]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # The README's commands run where install.sh puts things: the venv first on PATH.
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


def test_the_readme_has_the_blocks_this_test_knows() -> None:
    assert {lang for lang, _, _ in BLOCKS} <= {"sh", "text", "python", "toml", ""}, BLOCKS
    assert _ids("sh") and _ids("text") and _ids("python") and _ids("")


@pytest.mark.parametrize("line,block", _ids("sh"), ids=lambda v: str(v)[:40])
def test_shell_blocks_run(line: int, block: str) -> None:
    for cmd in [c for c in block.splitlines() if c.strip()]:
        cmd = cmd.split("  #")[0].strip()
        if cmd == "bash scripts/test.sh":
            assert (REPO / "scripts" / "test.sh").exists()  # this suite itself
            continue
        r = subprocess.run(
            ["bash", "-c", cmd], cwd=REPO, env=_env(), capture_output=True, text=True, timeout=600
        )
        assert r.returncode == 0, f"README.md:{line}: {cmd}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        if "reproduce seed-000" in cmd:
            assert "HughNew" in r.stdout, r.stdout[-2000:]


@pytest.mark.parametrize("line,block", _ids("text"), ids=lambda v: str(v)[:40])
def test_example_output_is_what_the_command_prints(line: int, block: str) -> None:
    first, *shown = block.splitlines()
    assert first.startswith("$ "), f"README.md:{line}: an output block starts with `$ COMMAND`"
    r = subprocess.run(
        ["bash", "-c", first[2:]], cwd=REPO, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    i = 0
    for want in shown:
        if want.strip() == "...":
            continue
        while i < len(out) and out[i] != want:
            i += 1
        assert i < len(out), f"README.md:{line}: `{first[2:]}` no longer prints, in this order:\n{want}"
        i += 1


@pytest.mark.parametrize("line,block", _ids("python"), ids=lambda v: str(v)[:40])
def test_python_blocks_run(line: int, block: str, tmp_path: Path) -> None:
    (tmp_path / "scenarios").symlink_to(REPO / "scenarios")
    r = subprocess.run(
        [sys.executable, "-c", block], cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, f"README.md:{line}:\n{r.stderr[-3000:]}"


@pytest.mark.parametrize("line,block", _ids(""), ids=lambda v: str(v)[:40])
def test_the_command_summary_names_real_commands_and_options(line: int, block: str) -> None:
    helps: dict[str, str] = {}
    for text in block.splitlines():
        m = re.match(r"pagesim ([\w-]+)(.*)", text)
        if not m:
            continue
        sub, rest = m.groups()
        if sub not in helps:
            r = subprocess.run([PAGESIM, sub, "--help"], capture_output=True, text=True)
            assert r.returncode == 0, f"README.md:{line}: `pagesim {sub}` is not a command: {r.stderr}"
            helps[sub] = r.stdout
        for opt in re.findall(r"--[a-z][a-z-]*", rest):
            assert opt in helps[sub], f"README.md:{line}: `pagesim {sub} --help` has no {opt}"


@pytest.mark.parametrize("line,block", _ids("toml"), ids=lambda v: str(v)[:40])
def test_scenario_fragments_use_keys_pagesim_knows(line: int, block: str) -> None:
    import tomllib

    doc = tomllib.loads(block)
    described = subprocess.run([PAGESIM, "describe"], capture_output=True, text=True, check=True).stdout
    keys = set()
    for task in doc.get("task", []):
        for k, v in task.items():
            if isinstance(v, dict):
                keys |= {f"task[].{k}.{k2}" for k2 in v}
            else:
                keys.add(f"task[].{k}")
    assert keys, f"README.md:{line}: a scenario fragment without tasks"
    for k in sorted(keys):
        assert k in described, f"README.md:{line}: `pagesim describe` has no {k}"
