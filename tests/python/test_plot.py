"""pagesim.plot: each plot draws the numbers it is given (read back from the Figure's
artists), saves PNG and SVG, and refuses what it cannot draw
with a message naming it. Sweeps and reproduced tables are small frames made here; the
timeline and latency plots use one small run (conftest's small_result)."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

import pagesim  # noqa: E402
from pagesim import plot  # noqa: E402

MIB = 1 << 20


def _lines(ax) -> dict[str, list[float]]:
    return {line.get_label(): list(line.get_ydata()) for line in ax.get_lines()}


def test_import_pagesim_does_not_import_matplotlib() -> None:
    code = "import sys, pagesim; pagesim.run; sys.exit('matplotlib' in sys.modules or 'pandas' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_timeline_draws_the_gauges_the_memcgs_and_the_rates(small_result: pagesim.Result, tmp_path: Path) -> None:
    df = small_result.timeline_df()
    fig = plot.timeline(small_result, path=tmp_path / "t.svg")
    memory, dirty_swap, memcg, rates = fig.axes
    assert _lines(memory)["free"] == pytest.approx(list(df["nr_free_pages"] * 4096 / MIB))
    assert _lines(dirty_swap)["swap used"] == pytest.approx(list(df["nr_swap_used"] * 4096 / MIB))
    assert max(_lines(dirty_swap)["swap used"]) > 0, "the run swaps"
    assert _lines(memcg)["box"] == pytest.approx(list(df["memcg.box.usage_bytes"] / MIB))
    # Rates are each interval's count over its length (10 ms).
    assert _lines(rates)["pswpout"] == pytest.approx(list(df["pswpout"] / 0.01))
    assert b"<svg" in (tmp_path / "t.svg").read_bytes()
    # test_html.py checks that the same run gives the same bytes, these SVGs included.


def test_timeline_of_a_run_without_one_says_to_set_sample_interval() -> None:
    with pytest.raises(ValueError, match="sample_interval"):
        plot.timeline(pagesim.Result({"scenario": "x", "timeline": []}))


def test_latency_cdf_draws_one_line_per_run_ending_at_one(small_result: pagesim.Result) -> None:
    fig = plot.latency_cdf({"a": small_result, "b": small_result}, histogram="major_fault_latency")
    lines = _lines(fig.axes[0])
    assert list(lines) == ["a", "b"]
    lat = small_result.latency_df()
    assert lines["a"] == pytest.approx(list(lat[lat["histogram"] == "major_fault_latency"]["cdf"]))
    assert lines["a"][-1] == 1.0
    # One run, unlabelled: named by its scenario and seed.
    assert list(_lines(plot.latency_cdf(small_result).axes[0])) == ["report-small seed 1"]
    with pytest.raises(ValueError, match="histogram 'p99'"):
        plot.latency_cdf(small_result, histogram="p99")


# Rows in no particular order, as read_sweep gives them (by cell id).
SWEEP = pd.DataFrame({
    "machine.ram": ["1GB", "512MB", "512MB", "1GB", "512MB", "512MB", "1GB", "1GB", "1GB"],
    "vm.swappiness": [0, 0, 0, 0, 100, 100, 100, 100, 100],
    "seed": [1, 2, 1, 2, 1, 2, 1, 2, 3],
    "status": ["ok"] * 8 + ["failed"],
    "vmstat.pgmajfault": [1, 20, 10, 3, 30, 50, 5, 7, math.nan],
})


def test_sweep_draws_the_mean_over_seeds_with_a_min_max_band_per_hue() -> None:
    fig = plot.sweep(SWEEP, x="machine.ram", y="vmstat.pgmajfault", hue="vm.swappiness")
    ax = fig.axes[0]
    assert _lines(ax) == {"vm.swappiness=0": [15, 2], "vm.swappiness=100": [40, 6]}
    # Sizes are categories in the order of their bytes, whatever the rows' order.
    assert [t.get_text() for t in ax.get_xticklabels()] == ["512MB", "1GB"]
    # The band's outline: the min (10, 1) and max (20, 3) of each x's seeds.
    assert sorted(set(ax.collections[0].get_paths()[0].vertices[:, 1])) == [1, 3, 10, 20]
    assert "mean of 2 runs" in ax.get_ylabel(), "the failed run is left out"


def test_varied_values_are_ordered_numbers_and_sizes_by_value_text_as_it_comes() -> None:
    assert plot.order([100, 0, 60, 0]) == [0, 60, 100]
    assert plot.order(["2GiB", "256MB", "512M", "1GB", "256MB"]) == ["256MB", "512M", "1GB", "2GiB"]
    assert plot.order(["linux-6.6", "linux-3.6", "256MB"]) == ["linux-6.6", "linux-3.6", "256MB"]


def test_sweep_band_sd_is_one_standard_deviation_and_numbers_are_an_axis() -> None:
    df = SWEEP[SWEEP["vm.swappiness"] == 0].assign(ram_mb=[1024, 512, 512, 1024])
    ax = plot.sweep(df, x="ram_mb", y="vmstat.pgmajfault", band="sd").axes[0]
    assert list(ax.get_lines()[0].get_xdata()) == [512, 1024]
    sd = pd.Series([10, 20]).std(), pd.Series([1, 3]).std()
    expected = [2 - sd[1], 2 + sd[1], 15 - sd[0], 15 + sd[0]]
    assert sorted(set(ax.collections[0].get_paths()[0].vertices[:, 1])) == pytest.approx(expected)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"x": "machine.rom", "y": "vmstat.pgmajfault"}, "x='machine.rom' is not a column"),
        ({"x": "machine.ram", "y": "pgmajfault"}, "did you mean vmstat.pgmajfault"),
        ({"x": "machine.ram", "y": "vmstat.pgmajfault", "band": "iqr"}, "band='iqr'"),
    ],
)
def test_sweep_names_what_it_cannot_draw(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        plot.sweep(SWEEP, **kwargs)


TABLE = pd.DataFrame({
    "table": ["t1", "t1", "t2"],
    "row": ["hdd", "hdd", "r"],
    "column": ["A", "B", "A"],
    "metric": ["elapsed_cs", "elapsed_cs", "read_kibps"],
    "value": [100.0, 50.0, 7.0],
    "published": [120.0, math.nan, 8.0],
})


def test_reproduce_draws_a_bar_pair_per_cell_and_a_panel_per_table(tmp_path: Path) -> None:
    fig = plot.reproduce(TABLE, path=tmp_path / "r.png")
    assert len(fig.axes) == 2
    ours, published = fig.axes[0].containers
    assert [b.get_height() for b in ours] == [100, 50]
    assert [b.get_height() for b in published] == [120, 0], "no published figure: no bar"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["hdd / A", "hdd / B"]
    assert fig.axes[1].get_ylabel() == "read_kibps"
    assert (tmp_path / "r.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no column published"):
        plot.reproduce(TABLE.drop(columns="published"))
