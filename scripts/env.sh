# Sourced by the scripts in this folder: goes to the checkout's root (ROOT), builds into
# ./target whatever the caller's shell says (the README's commands use ./target/release),
# and finds a rustup-installed cargo that is not on PATH yet.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
export CARGO_TARGET_DIR="$ROOT/target"
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
