"""pagesim.reproduce: a seed's table as a DataFrame, from the library's own reproduce (the
same cells and numbers as `pagesim reproduce --json`), on a two-by-two table of
tests/scenarios/sweep-small.toml written here (a run takes tens of milliseconds)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

import pagesim  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PAGESIM = REPO / "target" / "release" / "pagesim"

TABLE = """
title = "small"
source = "made up for the test"
scenario = "{base}"
metric = "elapsed_cs"
reference = "cluster3"
[[column]]
name = "cluster3"
labels = {{ policy = "pc3" }}
set = ["vm.page-cluster=3"]
[[column]]
name = "cluster0"
labels = {{ policy = "pc0" }}
set = ["vm.page-cluster=0"]
[[row]]
name = "zipf"
labels = {{ pattern = "zipf" }}
set = []
published = {{ cluster3 = 10, cluster0 = 30 }}
[[row]]
name = "longer"
labels = {{ pattern = "longer" }}
set = ["task.0.step.1.accesses=40000"]
published = {{ cluster3 = 20 }}
"""


@pytest.fixture(scope="module")
def table_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("table")
    (d / "reproduce.toml").write_text(TABLE.format(base=REPO / "tests" / "scenarios" / "sweep-small.toml"))
    return d


@pytest.fixture(scope="module")
def table(table_dir: Path) -> "pd.DataFrame":
    return pagesim.reproduce(table_dir, jobs=2, progress=False)


def test_a_row_per_cell_with_the_published_values_and_ratios(table: "pd.DataFrame") -> None:
    assert list(table.columns[:9]) == ["table", "row", "column", "pattern", "policy", "metric", "value", "published", "ratio"]
    assert table[["row", "column"]].values.tolist() == [
        ["zipf", "cluster3"], ["zipf", "cluster0"], ["longer", "cluster3"], ["longer", "cluster0"],
    ]
    assert (table["table"] == "small").all() and (table["metric"] == "elapsed_cs").all()
    assert table["published"].tolist()[:3] == [10, 30, 20] and pd.isna(table["published"].iloc[3])
    ref = table.groupby("row", sort=False)["value"].transform("first")
    assert table["ratio"].tolist() == pytest.approx((table["value"] / ref).tolist())
    assert table["published_ratio"].iloc[:2].tolist() == [1.0, 3.0]
    assert (table["reference"] == "cluster3").all()
    assert table["vmstat.pswpout"].gt(0).all() and "vmstat.pgmajfault" in table.columns
    assert table["set"].iloc[3] == ["task.0.step.1.accesses=40000", "vm.page-cluster=0"]


def test_the_numbers_are_the_cli_s(table: "pd.DataFrame", table_dir: Path) -> None:
    if not PAGESIM.exists():
        pytest.fail(f"{PAGESIM} is missing: scripts/install.sh builds it")
    out = subprocess.run([PAGESIM, "reproduce", table_dir, "--json", "--quiet"], capture_output=True, text=True,
                         check=True).stdout
    cells = [json.loads(line) for line in out.splitlines()]
    assert [c["value"] for c in cells] == table["value"].tolist()
    assert [c["counters"]["pgmajfault"] for c in cells] == table["vmstat.pgmajfault"].tolist()


def test_seeds_and_set_are_passed_on_and_progress_counts_the_cells(
    table_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    t = pagesim.reproduce(table_dir, seeds=2, set={"task.0.step.1.accesses": 5000}, jobs=2)
    assert (t["seeds"] == 2).all() and t["values"].map(len).eq(2).all()
    assert t["value"].tolist() == pytest.approx(t["values"].map(lambda v: sum(v) / 2).tolist())
    assert t["set"].iloc[0] == ["vm.page-cluster=3", "task.0.step.1.accesses=5000"]
    assert "4/4" in capsys.readouterr().err


def test_an_unknown_seed_or_a_bad_override_is_a_scenario_error(table_dir: Path) -> None:
    with pytest.raises(pagesim.ScenarioError, match='no table named "seed-999"'):
        pagesim.reproduce("seed-999", progress=False)
    with pytest.raises(pagesim.ScenarioError, match="vm.swapiness"):
        pagesim.reproduce(table_dir, set=["vm.swapiness=1"], progress=False)
    with pytest.raises(ValueError, match="seeds"):
        pagesim.reproduce(table_dir, seeds=0)
