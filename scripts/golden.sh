#!/usr/bin/env bash
# Shows what a change moved: records the `--json` output of every scenario in scenarios/ and
# validation/ (seed 1; not validation/traces/, whose traces are made on each machine) and of
# `reproduce seed-000` and `reproduce seed-004`, and compares two such records counter by
# counter.
#
#   scripts/golden.sh record NAME    build the release CLI and record into target/golden/NAME
#   scripts/golden.sh compare NAME   record the working tree into target/golden/NAME.now and
#                                    list every value that differs from target/golden/NAME
#                                    (exit 1 if any does, 0 if the outputs are byte-identical)
#
# PAGESIM=BINARY records with that CLI instead of building the working tree's (a build of the
# same source another way, such as scripts/build-pgo.sh's, must compare identical).
#
# Typical use around a change: `golden.sh record before` on the parent commit, then
# `golden.sh compare before` after the change. A restructuring must compare identical; a fix
# that moves numbers is listed, value by value, so its note can explain each.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

usage() { echo "usage: scripts/golden.sh record NAME | compare NAME" >&2; exit 2; }
[ $# -eq 2 ] || usage
mode=$1
name=$2
case "$name" in */* | .* | "") echo "golden.sh: NAME is a plain name (no /), got \"$name\"" >&2; exit 2 ;; esac

record() { # DIR
    local dir=$1
    rm -rf "$dir"
    mkdir -p "$dir"
    local bin=${PAGESIM:-}
    if [ -z "$bin" ]; then
        cargo build --release -q -p pagesim-cli
        bin=$ROOT/target/release/pagesim
    fi
    [ -x "$bin" ] || { echo "golden.sh: PAGESIM=$bin is not an executable" >&2; exit 2; }
    local n=0
    local f out
    while IFS= read -r f; do
        out=$dir/$(echo "${f%.toml}" | tr / _).json
        "$bin" run "$f" --seed 1 --json --quiet >"$out" 2>"$out.err" || echo "exit $?" >>"$out.err"
        [ -s "$out.err" ] || rm -f "$out.err"
        n=$((n + 1))
    done < <(find scenarios validation -name '*.toml' ! -name reproduce.toml ! -path 'validation/traces/*' | LC_ALL=C sort)
    for seed in seed-000 seed-004; do
        "$bin" reproduce "$seed" --json --quiet >"$dir/reproduce_$seed.json" 2>"$dir/reproduce_$seed.json.err" \
            || echo "exit $?" >>"$dir/reproduce_$seed.json.err"
        [ -s "$dir/reproduce_$seed.json.err" ] || rm -f "$dir/reproduce_$seed.json.err"
        n=$((n + 1))
    done
    echo "golden.sh: recorded $n outputs in ${dir#"$ROOT"/}"
}

case "$mode" in
record)
    record "$ROOT/target/golden/$name"
    ;;
compare)
    ref=$ROOT/target/golden/$name
    [ -d "$ref" ] || { echo "golden.sh: no record $ref (run: scripts/golden.sh record $name)" >&2; exit 2; }
    now=$ref.now
    record "$now"
    python3 - "$ref" "$now" <<'PY'
import json, os, sys

ref, now = sys.argv[1], sys.argv[2]

def load(path):
    # A run prints one JSON document; reproduce prints one object per line.
    text = open(path).read()
    try:
        return json.loads(text)
    except ValueError:
        return [json.loads(l) for l in text.splitlines() if l.strip()]

def walk(a, b, path, out):
    if type(a) is not type(b):
        out.append((path, a, b))
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            walk(a.get(k, "<absent>"), b.get(k, "<absent>"), f"{path}.{k}" if path else k, out)
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append((f"{path}[len]", len(a), len(b)))
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append((path, a, b))

names = sorted(set(os.listdir(ref)) | set(os.listdir(now)))
moved = 0
for n in names:
    p, q = os.path.join(ref, n), os.path.join(now, n)
    if not os.path.exists(p) or not os.path.exists(q):
        print(f"{n}: only in {'the record' if os.path.exists(p) else 'the working tree'}")
        moved += 1
        continue
    if open(p, "rb").read() == open(q, "rb").read():
        continue
    moved += 1
    if n.endswith(".err"):
        print(f"{n}: the error output differs")
        continue
    diffs = []
    walk(load(p), load(q), "", diffs)
    print(f"{n}: {len(diffs)} values differ" if diffs else f"{n}: same values, different bytes")
    for path, a, b in diffs[:20]:
        rel = f" ({(b - a) / a:+.2%})" if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a else ""
        print(f"  {path}: {a} -> {b}{rel}")
    if len(diffs) > 20:
        print(f"  ... and {len(diffs) - 20} more")
if moved:
    print(f"golden.sh: {moved} of {len(names)} outputs differ from the record")
    sys.exit(1)
print(f"golden.sh: all {len(names)} outputs byte-identical to the record")
PY
    ;;
*) usage ;;
esac
