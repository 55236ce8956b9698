"""``python -m pagesim sweep ...`` and ``python -m pagesim report ...``: the commands of the
Python side (``pagesim sweep`` and ``pagesim report`` run this, see
crates/pagesim-cli/src/python.rs)."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["sweep"]:
        from ._sweep import main as sweep_main

        return sweep_main(argv[1:])
    if argv[:1] == ["report"]:
        from .html import main as report_main

        return report_main(argv[1:])
    print(
        "usage: python -m pagesim sweep FILE [options] | python -m pagesim report INPUT -o FILE  (--help)",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
