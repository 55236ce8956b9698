#!/usr/bin/env bash
# Builds a profile-guided CLI, target/pgo/release/pagesim, for long runs (sweeps, `pagesim
# cache` over large traces, benchmarks): the same program as `cargo build --release` (its
# outputs are byte-identical: `PAGESIM=target/pgo/release/pagesim scripts/golden.sh compare
# NAME`), laid out by the compiler from where a training run spent its time.
#
#   scripts/build-pgo.sh
#
# 1. builds an instrumented CLI into target/pgo-gen;
# 2. trains it on workloads of every kind the model runs, none of them a benchmark's input:
#    every scenario of validation/ and scenarios/ (anonymous memory, shmem, file reads and
#    writes, mmap, swap devices, zram and zswap, memcg trees, processes that come and go),
#    the captured programs' replays of validation/traces/ that this machine has, and
#    `pagesim cache` (LRU and two kernel profiles) over a zipf(0.9) trace it writes itself;
# 3. merges the profiles with the toolchain's llvm-profdata (rustup's llvm-tools component,
#    added here if missing) and builds the optimised CLI into target/pgo.
#
# About 10 minutes on a 2-CPU machine (two release builds). The normal build and the tests
# do not use it.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
command -v cargo >/dev/null 2>&1 || { echo "build-pgo.sh: cargo not found; install the Rust toolchain (rustup)" >&2; exit 1; }
command -v rustup >/dev/null 2>&1 || { echo "build-pgo.sh: rustup not found: it provides llvm-profdata (llvm-tools)" >&2; exit 1; }

step() { printf '\n==> %s\n' "$*"; }

sysroot=$(rustc --print sysroot)
host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$sysroot/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
    step "adding rustup's llvm-tools (llvm-profdata, the version of rustc's LLVM)"
    rustup component add llvm-tools
fi
[ -x "$profdata" ] || { echo "build-pgo.sh: $profdata not found after rustup component add llvm-tools" >&2; exit 1; }

work=$ROOT/target/pgo-data
rm -rf "$work"
mkdir -p "$work/raw"

step "building the instrumented CLI (target/pgo-gen)"
RUSTFLAGS="-Cprofile-generate=$work/raw" cargo build --release -p pagesim-cli --target-dir "$ROOT/target/pgo-gen"
bin=$ROOT/target/pgo-gen/release/pagesim
# The build scripts and proc macros were instrumented too: train from a clean directory.
rm -f "$work"/raw/*.profraw

step "training: the scenarios of validation/ and scenarios/"
n=0
while IFS= read -r f; do
    "$bin" run "$f" --seed 1 --quiet >/dev/null 2>&1 || echo "build-pgo.sh: $f failed (training goes on)" >&2
    n=$((n + 1))
done < <(find validation scenarios -maxdepth 1 -name '*.toml' | LC_ALL=C sort)
echo "$n scenarios"

traces=()
for f in validation/traces/*.toml; do
    [ -e "$f" ] || continue
    # A replay needs its trace, which scripts/capture-traces.sh makes on each machine.
    t=$(sed -n 's/.*trace *= *"\([^"]*\)".*/\1/p' "$f" | head -1)
    if [ -n "$t" ] && [ -e "$(dirname "$f")/$t" ]; then
        traces+=("$f")
    fi
done
if [ ${#traces[@]} -gt 0 ]; then
    step "training: the captured programs' replays (${traces[*]})"
    for f in "${traces[@]}"; do
        "$bin" run "$f" --seed 1 --quiet >/dev/null 2>&1 || echo "build-pgo.sh: $f failed (training goes on)" >&2
    done
else
    echo "(no captured traces on this machine: scripts/capture-traces.sh makes them)"
fi

step "training: pagesim cache over a zipf(0.9) trace"
trace=$work/zipf-0.9.oracleGeneral.bin
python3 - "$trace" <<'PY'
# 2 M requests of 4 KiB objects over 200 k ids, zipf(0.9) by inverse CDF, seeded; records
# <IQIq (time, id, size, next) as libCacheSim's oracleGeneral.
import bisect, random, struct, sys
n, objects = 2_000_000, 200_000
cdf, s = [], 0.0
for i in range(1, objects + 1):
    s += i ** -0.9
    cdf.append(s)
rng = random.Random(7)
rec = struct.Struct("<IQIq")
with open(sys.argv[1], "wb") as out:
    buf = bytearray()
    for t in range(n):
        buf += rec.pack(t // 1000, bisect.bisect_left(cdf, rng.random() * s), 4096, -1)
        if len(buf) >= 1 << 20:
            out.write(buf)
            buf.clear()
    out.write(buf)
PY
"$bin" cache "$trace" --sizes 8M,80M,400M >/dev/null
for p in linux-6.6 linux-6.18; do
    "$bin" cache "$trace" --sizes 8M,80M --policy "$p" >/dev/null
done

step "merging the profiles"
"$profdata" merge -o "$work/merged.profdata" "$work/raw"

step "building the optimised CLI (target/pgo/release/pagesim)"
RUSTFLAGS="-Cprofile-use=$work/merged.profdata" cargo build --release -p pagesim-cli --target-dir "$ROOT/target/pgo"
pgo=$ROOT/target/pgo/release/pagesim

# The same source built two ways must give the same numbers: the optimised CLI against the
# instrumented one, on a scenario and on the trace (golden.sh with PAGESIM= checks them all).
step "checking the optimised CLI against the instrumented one"
for b in "$bin" "$pgo"; do
    "$b" run validation/file-mmap-random.toml --seed 1 --json --quiet
    "$b" cache "$trace" --sizes 8M,80M --policy linux-6.18 --json | sed 's/"seconds":[^,}]*//'
done >"$work/check.out" 2>&1
half=$(($(wc -l <"$work/check.out") / 2))
if ! cmp -s <(head -n "$half" "$work/check.out") <(tail -n +"$((half + 1))" "$work/check.out"); then
    echo "build-pgo.sh: $pgo and the instrumented CLI disagree (outputs in $work/check.out)" >&2
    exit 1
fi
rm -rf "$work/raw"
echo "built $pgo: outputs identical to the instrumented build's"
