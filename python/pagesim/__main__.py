"""``python -m pagesim sweep ...``: the commands of the Python side (``pagesim sweep`` runs
this, see crates/pagesim-cli/src/sweep.rs)."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if argv[:1] == ["sweep"]:
        from ._sweep import main as sweep_main

        return sweep_main(argv[1:])
    print("usage: python -m pagesim sweep FILE [options]  (python -m pagesim sweep --help)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
