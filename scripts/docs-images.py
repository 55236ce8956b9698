"""Regenerates the README's pictures: docs/img/sweep-ram.png (a sweep of the quickstart
scenario, major faults against RAM) and docs/img/report.png (Chromium's screenshot of the
HTML report of one quickstart run). Deterministic runs; the pictures change only when the
model, matplotlib or Chromium does.

    .venv/bin/python scripts/docs-images.py

Needs the venv of scripts/install.sh and, for the screenshot, chromium
(PAGESIM_TEST_EXTRAS=1 bash scripts/install.sh installs it, as root).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pagesim

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = REPO / "scenarios" / "quickstart.toml"
IMG = REPO / "docs" / "img"


def sweep_plot() -> None:
    df = pagesim.sweep(
        QUICKSTART,
        grid={"machine.ram": ["224MB", "256MB", "288MB", "320MB"], "vm.swappiness": [60, 100]},
        seeds=3,
    )
    pagesim.plot.sweep(
        df, x="machine.ram", y="vmstat.pgmajfault", hue="vm.swappiness",
        title="quickstart: major faults against RAM (3 seeds each)", path=IMG / "sweep-ram.png",
    )


def report_screenshot() -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("docs-images.py: chromium not found (PAGESIM_TEST_EXTRAS=1 bash scripts/install.sh, as root)")
    r = pagesim.run(QUICKSTART, sample_interval="100ms")
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        pagesim.html.write(r, page, scenario=QUICKSTART)
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             f"--user-data-dir={Path(tmp) / 'profile'}", "--window-size=1100,1500",
             f"--screenshot={IMG / 'report.png'}", page.as_uri()],
            check=True, capture_output=True,
        )


if __name__ == "__main__":
    IMG.mkdir(parents=True, exist_ok=True)
    sweep_plot()
    report_screenshot()
    print(f"wrote {IMG / 'sweep-ram.png'} and {IMG / 'report.png'}")
