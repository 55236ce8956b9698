"""The cells of a `pagesim reproduce TABLE --json` run, for the sweep scripts beside it."""
import json
import subprocess


def reproduce_cells(pagesim, table, sets, seeds=None):
    """Runs `pagesim reproduce TABLE --json --quiet` with `--set` for each of `sets` (and
    `--seeds N` if given) and returns its cells, one dict per JSON line."""
    args = [pagesim, "reproduce", table, "--json", "--quiet"]
    if seeds is not None:
        args += ["--seeds", str(seeds)]
    for s in sets:
        args += ["--set", s]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def chosen_points(prog, points, only):
    """The names of `points` that `--only` (comma-separated, empty for all) selects, in
    their order; exits naming the unknown ones."""
    asked = {n for n in only.split(",") if n}
    unknown = asked - set(points)
    if unknown:
        raise SystemExit(f"{prog}: unknown point(s) {', '.join(sorted(unknown))}; known: {', '.join(points)}")
    return [n for n in points if not asked or n in asked]
