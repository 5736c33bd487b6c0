#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs, checks formatting and
# lints, then runs every test with a private, unlocked Secret Service (gnome-keyring on a
# private D-Bus session) so keychain tests use the real OS keychain without touching yours.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

scripts/install-deps.sh

# Build output lives outside the clone, so CI's fresh clones reuse it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== build"
cargo test --workspace --locked --no-run

# A throw-away HOME for the keyring file and D-Bus, removed at the end.
SANDBOX=$(mktemp -d)
trap 'rm -rf "$SANDBOX"' EXIT
mkdir -p "$SANDBOX/home" "$SANDBOX/run"
chmod 700 "$SANDBOX/run"

echo "== cargo test (with a private Secret Service)"
HOME="$SANDBOX/home" XDG_RUNTIME_DIR="$SANDBOX/run" XDG_DATA_HOME="$SANDBOX/home/.local/share" \
  dbus-run-session -- bash -c '
    set -euo pipefail
    printf %s hark-test-keyring | gnome-keyring-daemon --unlock --components=secrets >/dev/null
    cargo test --workspace --locked "$@"
  ' bash "$@"
