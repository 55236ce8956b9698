#!/usr/bin/env bash
# Runs every check the project has: rustfmt, clippy, the Rust tests and the Python tests.
# Installs first (scripts/install.sh, idempotent), so the Python tests always run against
# an extension built from the current sources. Exits non-zero if any step failed; all steps
# run so that one report shows every failure.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
export CARGO_TARGET_DIR="$ROOT/target"
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi

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
run "cargo test" cargo test --workspace
# pytest exits 5 when it collected no test: that is a failure here, as any non-zero exit is.
if run "install" bash scripts/install.sh; then
    run "pytest" "$ROOT/.venv/bin/python" -m pytest tests/python -q -ra
else
    failed+=("pytest (not run: install failed)")
fi

echo
if [ ${#failed[@]} -gt 0 ]; then
    printf 'test.sh: FAILED: %s\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
    exit 1
fi
echo "test.sh: all checks passed"
