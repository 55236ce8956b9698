"""pagesim.html and `pagesim report`: a run's page (written by the CLI, from the JSON of
`pagesim run --json`), a sweep's page, bad input named without a traceback, and the run's
page in headless Chromium: no console error, the plots on screen.

One small run (conftest's small_result), one sweep of four short runs, one `pagesim report`
process and two Chromium launches (the report; a page with a planted error, which checks
that an error would be seen)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

import pagesim  # noqa: E402
from pagesim import html  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PAGESIM = REPO / "target" / "release" / "pagesim"
SMALL = REPO / "tests" / "scenarios" / "report-small.toml"
SWEEP_SMALL = REPO / "tests" / "scenarios" / "sweep-small.toml"
IN_CI = os.environ.get("CI", "").lower() == "true"


@pytest.fixture(scope="module")
def run_page(small_result: pagesim.Result, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's page as `pagesim report RESULT.json -o FILE --scenario FILE` writes it."""
    d = tmp_path_factory.mktemp("run")
    (d / "result.json").write_text(json.dumps(small_result.to_dict()))
    if not PAGESIM.exists():
        pytest.fail(f"{PAGESIM} is missing: scripts/install.sh builds it")
    p = subprocess.run([PAGESIM, "report", d / "result.json", "-o", d / "report.html", "--scenario", SMALL],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return d / "report.html"


def test_the_run_page_has_the_plots_tables_scenario_and_profile(run_page: Path, small_result: pagesim.Result) -> None:
    page = run_page.read_text()
    # Two plots, embedded SVG documents: the timeline and the fault-latency CDF.
    assert page.count('<img ') == 2 and page.count('src="data:image/svg+xml;base64,') == 2
    # Offline: nothing fetched, nothing run.
    assert "<script" not in page and not re.search(r"(src|href)=\"(?!data:)", page)
    assert 'memcg = "box"' in page, "the scenario's TOML"
    assert "linux-6.6" in page and "scan_balance" in page, "the profile and its policies"
    assert f"<td class=\"l\">pgmajfault</td><td>{small_result.counters['pgmajfault']:,}</td>" in page
    assert "/proc/vmstat name" in page and "toucher" in page and "nvme0" in page


def test_the_same_run_gives_the_same_page(small_result: pagesim.Result, run_page: Path) -> None:
    assert html.render(small_result, scenario=SMALL) == run_page.read_text()


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sweep") / "out"
    pagesim.sweep(SWEEP_SMALL, grid={"machine.ram": ["36MB", "44MB"], "vm.swappiness": [0, 100]},
                  jobs=2, out=out, progress=False)
    return out


def test_the_sweep_page_plots_the_metrics_against_the_keys_and_tabulates_them(sweep_dir: Path) -> None:
    page = html.render(sweep_dir)
    df = pagesim.read_sweep(sweep_dir)
    moved = [m for m in html.SWEEP_METRICS if m in df and (m == "elapsed_s" or df[m].nunique() > 1)]
    assert len(moved) >= 4 and page.count('src="data:image/svg+xml;base64,') == len(moved)
    assert "machine.ram = 36MB, 44MB" in page and "vm.swappiness = 0, 100" in page
    assert 'name = "sweep-small"' in page, "the manifest's scenario, unchanged, is shown"
    means = page.split("<h2>Mean per combination</h2>")[1].split("<h2>")[0]
    assert means.count("<tr>") == 1 + 4, "a header and a row per combination"


def test_bad_input_is_named_with_exit_status_2_and_no_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "batch.json").write_text('{"scenario": "x", "metrics": {}}')
    (tmp_path / "text.json").write_text("not json")
    cases = {
        tmp_path / "missing.json": "no such file or directory",
        tmp_path / "empty": "not a sweep's out directory",
        tmp_path / "batch.json": "pagesim run --seeds",
        tmp_path / "text.json": "not JSON",
    }
    for path, says in cases.items():
        assert html.main([str(path), "-o", str(tmp_path / "r.html")]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"pagesim: {path}") and says in err and "Traceback" not in err, err
    assert not (tmp_path / "r.html").exists()
    with pytest.raises(html.ReportError, match="no seed and status columns"):
        html.render(pd.DataFrame({"a": [1]}))


# --- in a browser --------------------------------------------------------------------------

# matplotlib's first two colours (tab:blue, tab:orange): the page's own style has neither,
# so pixels of them on the screenshot are the plots'.
PLOT_COLOURS = ((31, 119, 180), (255, 127, 14))


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if IN_CI:
            pytest.fail("chromium is missing in CI: scripts/install.sh installs it when CI=true or PAGESIM_TEST_EXTRAS=1")
        pytest.skip("chromium is not installed (PAGESIM_TEST_EXTRAS=1 bash scripts/install.sh installs it, as root)")
    return found


def _browse(chromium: str, page: Path, shot: Path, tmp: Path) -> list[str]:
    """Loads `page` in headless Chromium, screenshots it, and returns the console's messages
    (Chromium logs each as `...:CONSOLE...] "message", source: ...` on stderr)."""
    p = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         f"--user-data-dir={tmp / 'profile'}", "--enable-logging=stderr", "--v=0",
         "--window-size=1200,1800", f"--screenshot={shot}", page.as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.exists(), f"no screenshot (exit {p.returncode}): {p.stderr[-2000:]}"
    return [line for line in p.stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]


def _plot_pixels(shot: Path) -> list[int]:
    from PIL import Image  # matplotlib's dependency

    img = Image.open(shot).convert("RGB")
    counts = [0] * len(PLOT_COLOURS)
    for n, colour in img.getcolors(maxcolors=1 << 24) or []:
        for i, c in enumerate(PLOT_COLOURS):
            if all(abs(a - b) <= 8 for a, b in zip(colour, c)):
                counts[i] += n
    return counts


def test_the_page_loads_in_chromium_without_errors_and_shows_the_plots(run_page: Path, tmp_path: Path) -> None:
    chromium = _chromium()
    # The detector first: a page with a console error and an uncaught exception, and no plot.
    planted = tmp_path / "planted.html"
    planted.write_text('<!DOCTYPE html><p>x</p><script>console.error("planted-error");'
                       'throw new Error("planted-throw");</script>')
    console = _browse(chromium, planted, tmp_path / "planted.png", tmp_path)
    assert any("planted-error" in m for m in console) and any("planted-throw" in m for m in console), console
    assert _plot_pixels(tmp_path / "planted.png") == [0, 0]

    console = _browse(chromium, run_page, tmp_path / "report.png", tmp_path)
    assert console == []
    blue, orange = _plot_pixels(tmp_path / "report.png")
    assert blue > 500 and orange > 200, (blue, orange)
