#!/usr/bin/env bash
# Captures the real programs whose traces validation/traces/*.toml replay, into traces/
# (their inputs in traces/data/): each program runs once natively (--native: its CPU time
# per instruction) and once under pagesim capture. The traces are large (tens of MB each)
# and depend on this machine's binaries and libraries, so they are made here rather than
# kept in the repository. Needs qemu-user (scripts/install.sh) and sqlite3.
#
#   gzip    gzip -6 of 16 MB of text (a file twice the scenario's 8 MB memcg)
#   sort    sort of 16 MB of lines with a 4 MB buffer: an external merge sort through
#           temporary files in traces/data/tmp
#   zstd    zstd -T2 -6 of the same 16 MB of text as gzip: a multi-threaded program (the main
#           thread reads, two workers compress, each in a task of its own in the replay)
#   sqlite  sqlite3 on a 35 MB database: 20,000 point reads and 2,000 updates of rows
#           scattered over it (ids from a multiplicative sequence: the same on every run,
#           so that the host runs the accesses the trace has; the new values random, so that
#           every run changes the rows: SQLite does not write a row that stays the same), in
#           one transaction
#
# Usage: scripts/capture-traces.sh [gzip|sort|zstd|sqlite]...   (default: all four)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
PAGESIM=${PAGESIM:-$ROOT/target/release/pagesim}
[ -x "$PAGESIM" ] || cargo build --release -p pagesim-cli
command -v qemu-x86_64 >/dev/null || { echo "capture-traces.sh: qemu-x86_64 missing: run scripts/install.sh as root" >&2; exit 1; }
mkdir -p traces/data/tmp

# Deterministic inputs (the same bytes on every machine).
text() { # BYTES FILE: lines of words from a seeded generator
    python3 - "$1" "$2" <<'PY'
import random, sys
n, path = int(sys.argv[1]), sys.argv[2]
r = random.Random(20)
words = ["".join(r.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(r.randint(2, 9))) for _ in range(5000)]
with open(path, "w") as f:
    size = 0
    while size < n:
        line = " ".join(r.choice(words) for _ in range(r.randint(3, 12))) + "\n"
        f.write(line)
        size += len(line)
PY
}

capture() { # NAME CMD...
    local name=$1
    shift
    echo "==> $name: $*" >&2
    "$PAGESIM" capture --native -o "traces/$name.pgt" -- "$@" >/dev/null
}

for what in "${@:-gzip sort zstd sqlite}"; do
    for w in $what; do
        case "$w" in
            gzip)
                [ -f traces/data/gzip-in.txt ] || text $((16 << 20)) traces/data/gzip-in.txt
                capture gzip gzip -6 -c traces/data/gzip-in.txt
                ;;
            sort)
                [ -f traces/data/sort-in.txt ] || text $((16 << 20)) traces/data/sort-in.txt
                capture sort sort --parallel=1 -S 4M -T traces/data/tmp -o traces/data/sorted.txt traces/data/sort-in.txt
                ;;
            zstd)
                command -v zstd >/dev/null || { echo "capture-traces.sh: zstd missing (apt-get install zstd)" >&2; exit 1; }
                [ -f traces/data/gzip-in.txt ] || text $((16 << 20)) traces/data/gzip-in.txt
                capture zstd zstd -q -T2 -6 -c traces/data/gzip-in.txt
                ;;
            sqlite)
                command -v sqlite3 >/dev/null || { echo "capture-traces.sh: sqlite3 missing (apt-get install sqlite3)" >&2; exit 1; }
                if [ ! -f traces/data/sqlite.db ]; then
                    sqlite3 traces/data/sqlite.db <<'SQL'
PRAGMA page_size = 4096;
CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
INSERT INTO t SELECT i, printf('%0150d', i) FROM n;
SQL
                fi
                cat > traces/data/sqlite-work.sql <<'SQL'
PRAGMA cache_size = -2000;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
SELECT sum(length(v)) FROM n JOIN t ON t.id = 1 + ((i * 48271) % 200000);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
UPDATE t SET v = printf('%0150d', abs(random())) WHERE id IN (SELECT 1 + ((i * 69621) % 200000) FROM n);
COMMIT;
SQL
                capture sqlite sqlite3 traces/data/sqlite.db ".read traces/data/sqlite-work.sql"
                ;;
            *) echo "capture-traces.sh: unknown program $w (gzip, sort, zstd, sqlite)" >&2; exit 2 ;;
        esac
    done
done
ls -la traces/*.pgt
