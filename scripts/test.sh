#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs (apt packages, the UI's
# npm packages, tauri-driver, the offline models), checks the UI (types, lint, format) and
# the Rust (fmt, clippy, the generated bindings), then runs every test — the ones a plain
# `cargo test` leaves out as `#[ignore]`d included — with a private, unlocked Secret
# Service (gnome-keyring on a private D-Bus session), a private PulseAudio with a virtual
# speaker and microphone, and a virtual display (Xvfb) for the app's WebDriver tests, so
# they use the real OS keychain, real audio devices and the real window without touching
# yours. Every test runs for real here: one whose environment is missing fails.
# Extra arguments go to the test binaries (e.g. a test name filter).
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=true

scripts/install-deps.sh
# Models live outside the clone too (1.3 GB; fetched once, checked against their pins).
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"

# Build output lives outside the clone, so CI's fresh clones reuse it.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

echo "== ui: types, lint, format, build"
(cd ui && npm ci --no-audit --no-fund --silent && npm run lint --silent && npm run build --silent)

echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== the window's bindings match the Rust types"
cargo test --locked -p hark-app --lib bindings -- --exact commands::tests::bindings_match_the_rust_commands_and_types
echo "== build"
cargo test --workspace --locked --no-run
cargo build --workspace --locked
echo "== offline models (whisper tiny.en and base, Qwen2.5-Coder 1.5B, SmolLM2 135M, the Kokoro natural voice)"
HARK_BIN="$CARGO_TARGET_DIR/debug/hark" scripts/fetch-models.sh whisper-tiny.en whisper-base qwen2.5-coder-1.5b qwen2.5-coder-0.5b smollm2-135m kokoro-82m >/dev/null

# A throw-away HOME for the keyring file and D-Bus, removed at the end.
SANDBOX=$(mktemp -d)
trap 'rm -rf "$SANDBOX"' EXIT
mkdir -p "$SANDBOX/home" "$SANDBOX/run"
chmod 700 "$SANDBOX/run"

echo "== cargo test (virtual display, private Secret Service, virtual speaker and microphone)"
HOME="$SANDBOX/home" XDG_RUNTIME_DIR="$SANDBOX/run" XDG_DATA_HOME="$SANDBOX/home/.local/share" \
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c '
    set -euo pipefail
    printf %s hark-test-keyring | gnome-keyring-daemon --unlock --components=secrets >/dev/null
    eval "$(scripts/virtual-audio.sh start "$0/audio")"
    trap "scripts/virtual-audio.sh stop" EXIT
    cargo test --workspace --locked -- --include-ignored "$@"
  ' "$SANDBOX" "$@"
