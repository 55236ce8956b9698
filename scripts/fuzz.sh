#!/usr/bin/env bash
# Fuzzes pagesim with cargo-fuzz (libFuzzer) on the nightly toolchain: the scenario parser and
# a bounded run (`scenario`), `--set` overrides (`set`), structure-aware generated scenarios
# (`generated`) and the reproduce-table loader (`reproduce`); fuzz/fuzz_targets/ has them.
# Not part of CI: a long run is something to start, leave and record.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]   run each target for SECONDS (default 7200) or
#                                           10 million executions, two at a time; logs in
#                                           target/fuzz/TARGET.log, crashes in
#                                           fuzz/artifacts/TARGET/
#   scripts/fuzz.sh --cmin [TARGET...]      minimise the corpora kept in fuzz/corpus/
#
# A crash found becomes a regression test in the normal suite (see docs/testing.md).
# -timeout=120: a run is bounded in simulated time, not in wall time, and the fuzz builds
# keep debug assertions and the invariant checker, so a large input takes seconds alone and
# more than 30 s while other fuzzers share the CPUs (a memcg scenario did: 4.5 s alone, 34 s
# under load). A real hang (time not advancing) exceeds any bound.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/env.sh"

TARGETS_ALL=(scenario set generated reproduce)
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
    echo "fuzz.sh: installing the nightly toolchain (libFuzzer needs it)" >&2
    rustup toolchain install nightly --profile minimal
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz.sh: installing cargo-fuzz" >&2
    cargo install cargo-fuzz --locked
fi
cd "$ROOT/fuzz"
LOGS="$ROOT/target/fuzz"
mkdir -p "$LOGS"

if [ "${1:-}" = "--cmin" ]; then
    shift
    for t in "${@:-${TARGETS_ALL[@]}}"; do
        cargo +nightly fuzz cmin "$t" "corpus/$t" -- -rss_limit_mb=4096 -timeout=120
    done
    exit 0
fi

SECONDS_EACH=7200
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
    SECONDS_EACH=$1
    shift
fi
targets=("${@:-${TARGETS_ALL[@]}}")
cargo +nightly fuzz build

run_one() {
    local t=$1
    mkdir -p "corpus/$t"
    cargo +nightly fuzz run "$t" "corpus/$t" -- -runs=10000000 -max_total_time="$SECONDS_EACH" \
        -rss_limit_mb=4096 -timeout=120 -print_final_stats=1 >"$LOGS/$t.log" 2>&1 &&
        echo "fuzz.sh: $t: $(grep -E '^Done|stat::number_of_executed_units' "$LOGS/$t.log" | tr '\n' ' ')" ||
        echo "fuzz.sh: $t: FAILED (crash or error), see $LOGS/$t.log and fuzz/artifacts/$t/"
}

# Two targets at a time: the machine has two cores.
running=0
for t in "${targets[@]}"; do
    run_one "$t" &
    running=$((running + 1))
    if [ "$running" -ge 2 ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
