#!/usr/bin/env bash
# Runs every check the project has: rustfmt, clippy, the Rust tests and the Python tests.
# Installs first (scripts/install.sh, idempotent), so that the Python tests run against an
# extension built from the current sources and the capture tests find qemu-user. Exits non-zero if any step failed; all steps
# run so that one report shows every failure.
set -uo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
# CI builds from a clean checkout: incremental compilation's caches would only be written,
# never read, so it is off there (locally, repeated runs keep it).
if [ "${CI:-}" = true ]; then
    export CARGO_INCREMENTAL=0
fi
# install.sh installs what only the tests need too (Ray, Chromium), so that their tests run
# rather than skip.
export PAGESIM_TEST_EXTRAS=1

failed=()
run() {
    local name=$1
    shift
    printf '\n==> %s\n' "$name"
    local start=$SECONDS
    if "$@"; then
        printf '<== %s: ok (%ds)\n' "$name" $((SECONDS - start))
    else
        printf '<== %s: FAILED (%ds)\n' "$name" $((SECONDS - start))
        failed+=("$name")
        return 1
    fi
}

run "cargo fmt" cargo fmt --all -- --check
run "cargo clippy" cargo clippy --workspace --all-targets -- -D warnings
# Installed first: the Rust tests of pagesim capture need qemu-user, the report's browser
# test Chromium.
installed=true
run "install" bash scripts/install.sh || installed=false
run "cargo test" cargo test --workspace
# pytest exits 5 when it collected no test: that is a failure here, as any non-zero exit is.
if $installed; then
    run "pytest" "$ROOT/.venv/bin/python" -m pytest tests/python -q -ra
else
    failed+=("pytest (not run: install failed)")
fi

# One small scenario on the real kernel (docs/validation.md), when this machine allows it:
# root, no swap area already active (the kernel would swap to it too), a memory cgroup.
validation_skip_reason() {
    [ "$(id -u)" = 0 ] || { echo "not root (swap files and memory cgroups need root)"; return; }
    [ -r /proc/swaps ] || { echo "no /proc/swaps (kernel without swap)"; return; }
    [ "$(wc -l </proc/swaps)" -le 1 ] || { echo "a swap area is already active: $(tail -n +2 /proc/swaps | awk '{print $1}' | tr '\n' ' ')"; return; }
    local fs
    fs=$(stat -f -c %T "${TMPDIR:-/tmp}" 2>/dev/null)
    case "$fs" in
        ext2/ext3|ext4|xfs|btrfs) ;;
        *) echo "the temp dir ${TMPDIR:-/tmp} is on ${fs:-an unknown filesystem}, which cannot hold a swap file"; return ;;
    esac
    [ -d /sys/fs/cgroup/memory ] || grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null \
        || grep -qw memory /sys/fs/cgroup/unified/cgroup.subtree_control 2>/dev/null \
        || { echo "no usable memory cgroup (v1 memory controller or v2 with memory enabled)"; return; }
}
reason=$(validation_skip_reason)
if [ -z "$reason" ]; then
    run "validation (host kernel vs pagesim, validation/ci/anon-seq-small.toml)" \
        bash -c 'cargo build --release -q -p pagesim-cli -p pagesim-host &&
                 ./target/release/pagesim validate validation/ci/anon-seq-small.toml --repeats 3 --check'
else
    printf '\n==> validation: SKIPPED: %s\n' "$reason"
fi

echo
if [ ${#failed[@]} -gt 0 ]; then
    printf 'test.sh: FAILED: %s\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
    exit 1
fi
echo "test.sh: all checks passed"
