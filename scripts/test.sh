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
#
# Every test binary runs even when one fails (`--no-fail-fast`), and the run ends with one
# line of counts (`N passed, N failed`) after the failing tests' names.
#
#   scripts/test.sh --repeat N [FILTER]   the flake finder: after the same checks and build,
#                                         the app, audio, hands-free and first-run tests N
#                                         times in a row, then each test's pass count (N/N
#                                         or not).
set -euo pipefail
cd "$(dirname "$0")/.."
export CI=true
REPEAT=0
if [ "${1:-}" = "--repeat" ]; then
  REPEAT="${2:?usage: scripts/test.sh --repeat N [FILTER]}"
  shift 2
fi

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
echo "== offline models (whisper tiny.en and base, Moonshine tiny, Qwen2.5-Coder 1.5B and 0.5B, SmolLM2 135M, the Kokoro natural voice, Silero VAD, Smart Turn)"
HARK_BIN="$CARGO_TARGET_DIR/debug/hark" scripts/fetch-models.sh whisper-tiny.en whisper-base qwen2.5-coder-1.5b qwen2.5-coder-0.5b smollm2-135m kokoro-82m piper-joe hibari-heart moonshine-tiny minilm-l6 silero-vad smart-turn-v3 >/dev/null

echo "== the MCP servers the tool tests talk to (server-everything and server-filesystem from npm, mcp-server-time from PyPI)"
eval "$(scripts/mcp-servers.sh)"
echo "== the OpenAI clients hark-llm's tests use (openai from PyPI; openai, ai and @ai-sdk/openai-compatible from npm)"
eval "$(scripts/llm-clients.sh)"

# A throw-away HOME for the keyring file and D-Bus, removed at the end.
SANDBOX=$(mktemp -d)
trap 'rm -rf "$SANDBOX"' EXIT
mkdir -p "$SANDBOX/home" "$SANDBOX/run"
chmod 700 "$SANDBOX/run"

if [ "$REPEAT" -gt 0 ]; then
  echo "== the app, audio and first-run tests, $REPEAT times (virtual display, Secret Service, audio)"
  TESTS='cargo test --locked -p hark-app --test app --test resident --test first_run --test languages --test sidebar --test portal -- --include-ignored
cargo test --locked -p hark-e2e --test audio --test hands_free -- --include-ignored'
else
  echo "== cargo test (virtual display, private Secret Service, virtual speaker and microphone), then the MCP conformance kit's client scenarios"
  TESTS='cargo test --workspace --locked --no-fail-fast -- --include-ignored
scripts/mcp-conformance.sh'
  REPEAT=1
fi
# Each run's output is kept for the counts below (cargo's `test NAME ... ok|FAILED` lines).
LOGS="$SANDBOX/logs"
mkdir -p "$LOGS"
status=0
HOME="$SANDBOX/home" XDG_RUNTIME_DIR="$SANDBOX/run" XDG_DATA_HOME="$SANDBOX/home/.local/share" \
  xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c '
    set -euo pipefail
    sandbox=$1 repeat=$2 tests=$3 logs=$4
    shift 4
    printf %s hark-test-keyring | gnome-keyring-daemon --unlock --components=secrets >/dev/null
    eval "$(scripts/virtual-audio.sh start "$sandbox/audio")"
    trap "scripts/virtual-audio.sh stop" EXIT
    mapfile -t commands <<< "$tests"
    failed=0
    for run in $(seq "$repeat"); do
      [ "$repeat" -gt 1 ] && echo "-- run $run of $repeat"
      for n in "${!commands[@]}"; do
        # The output goes to a log that is followed until the command ends, not through a
        # pipe: a process a failing test leaves behind (a recorder, a window) keeps what it
        # inherited open, and `| tee` would wait for it for ever.
        log="$logs/run-$run-$n.txt"
        : > "$log"
        # shellcheck disable=SC2086
        ${commands[$n]} "$@" > "$log" 2>&1 &
        pid=$!
        tail -n +1 -f --pid="$pid" "$log"
        wait "$pid" || failed=1
      done
    done
    exit $failed
  ' bash "$SANDBOX" "$REPEAT" "$TESTS" "$LOGS" "$@" || status=$?

if [ "$REPEAT" -gt 1 ]; then
  echo "== passes per test, of $REPEAT runs"
  cat "$LOGS"/run-*.txt | sed -n 's/^test \(.*\) \.\.\. \(ok\|FAILED\)$/\2 \1/p' | awk -v n="$REPEAT" '
    { if ($1 == "ok") ok[$2]++; else ok[$2] += 0 }
    END { for (t in ok) printf "%3d/%d  %s\n", ok[t], n, t }' | sort -k2
fi
failures=$(cat "$LOGS"/run-*.txt | sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' | sort | uniq -c)
if [ -n "$failures" ]; then
  echo "== failed (times, test):"
  echo "$failures"
fi
# One closing line: the counts over every test binary (and every run with --repeat).
cat "$LOGS"/run-*.txt | awk '
  /^test result:/ {
    for (i = 2; i <= NF; i++) {
      if ($(i) ~ /^passed;?$/) p += $(i - 1)
      if ($(i) ~ /^failed;?$/) f += $(i - 1)
    }
  }
  END { printf "%d passed, %d failed\n", p, f }'
exit "$status"
