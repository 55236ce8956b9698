#!/usr/bin/env bash
# Installs pagesim from this checkout, idempotently:
#   - qemu-user from Debian, if missing (pagesim capture runs programs under it);
#   - the CLI, built to ./target/release/pagesim;
#   - for the tests, when CI=true or PAGESIM_TEST_EXTRAS=1: Chromium from Debian, if missing
#     (tests/python/test_html.py renders a report in it headless);
#   - a virtualenv in ./.venv with maturin, pytest, pandas, pyarrow, tqdm and matplotlib, and the
#     pagesim Python package (the Rust extension built in release mode, the Python sources
#     linked editable);
#   - with CI=true or PAGESIM_TEST_EXTRAS=1, the extras the tests exercise: ray.
# Needs the Rust toolchain (cargo) and python3; run as root on a fresh Debian machine it
# installs Debian's python3-venv if the venv module is missing.
set -euo pipefail

. "$(dirname "${BASH_SOURCE[0]}")/env.sh"
command -v cargo >/dev/null 2>&1 || { echo "install.sh: cargo not found; install the Rust toolchain (rustup)" >&2; exit 1; }
command -v python3 >/dev/null 2>&1 || { echo "install.sh: python3 not found" >&2; exit 1; }

step() { printf '\n==> %s\n' "$*"; }

# pagesim capture runs programs under QEMU user-mode emulation (Debian's qemu-user has TCG
# plugin support) and builds its plugin with the C compiler.
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        step "installing qemu-user (for pagesim capture)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user
    else
        echo "install.sh: qemu-x86_64 not found and not root with apt-get: pagesim capture will not work (Debian: apt-get install qemu-user)" >&2
    fi
fi

# The report's browser test needs Chromium; only a test run asks for it (a 300 MB install
# that using pagesim does not need). scripts/test.sh sets PAGESIM_TEST_EXTRAS=1.
if [ "${CI:-}" = true ] || [ "${PAGESIM_TEST_EXTRAS:-}" = 1 ]; then
    if ! command -v chromium >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            step "installing chromium (for the report's browser test)"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
        else
            echo "install.sh: chromium not found and not root with apt-get: the report's browser test will fail in CI and be skipped elsewhere (Debian: apt-get install chromium)" >&2
        fi
    fi
fi

step "building the CLI (cargo build --release -p pagesim-cli)"
cargo build --release -p pagesim-cli

VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then
    step "creating $VENV"
    if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv
        else
            echo "install.sh: python3 has no venv/ensurepip module (Debian: apt-get install python3-venv)" >&2
            exit 1
        fi
    fi
    rm -rf "$VENV"
    python3 -m venv "$VENV"
fi

step "installing maturin, pytest, pandas, pyarrow, tqdm, matplotlib into .venv"
# maturin >= 1.9.4 sets PYO3_BUILD_EXTENSION_MODULE, which crates/pagesim-py relies on.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9.4,<2" pytest pandas pyarrow tqdm \
    "matplotlib>=3.7"

step "building and installing the Python package (maturin develop --release)"
VIRTUAL_ENV="$VENV" PATH="$VENV/bin:$PATH" "$VENV/bin/maturin" develop --release --quiet

# The ray extra (pyproject.toml's optional-dependencies): the Ray backend of pagesim.sweep,
# which its tests run on a local cluster. Only for CI and the tests (scripts/test.sh sets
# PAGESIM_TEST_EXTRAS=1): it is about 200 MB; users install it with pip install 'pagesim[ray]'.
if [ "${CI:-}" = true ] || [ "${PAGESIM_TEST_EXTRAS:-}" = 1 ]; then
    step "installing the ray extra into .venv (CI=true or PAGESIM_TEST_EXTRAS=1)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "ray>=2.9"
fi

"$VENV/bin/python" -c 'import pagesim; print("installed pagesim", pagesim.__version__, "from", pagesim.__file__)'
echo "CLI: $ROOT/target/release/pagesim"
