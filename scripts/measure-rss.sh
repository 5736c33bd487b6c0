#!/usr/bin/env bash
# Idle memory of the release app next to an empty Tauri app built the same way
# (tools/empty-tauri): each runs 8 s on a virtual display (with virtual audio devices, and
# Hark with its offline speech model loaded), then the resident memory of the app and its
# WebKit processes is summed. Goal: Hark ≤ 1.3× the empty app.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
# Hark as a user runs it: the offline speech model loaded, a speaker and microphone present.
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
scripts/fetch-models.sh whisper-tiny.en >/dev/null
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent)
cargo build --release --locked -p hark-app -p empty-tauri 2>&1 | tail -1
SANDBOX=$(mktemp -d); trap 'rm -rf "$SANDBOX"' EXIT

measure() { # binary → prints "app_kb webkit_kb total_kb"
  HOME="$SANDBOX/home" XDG_RUNTIME_DIR="$SANDBOX/run" HARK_DB="$SANDBOX/hark.db" HARK_CONFIG_DIR="$SANDBOX/cfg" \
    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c '
      eval "$(scripts/virtual-audio.sh start "$(dirname "$XDG_RUNTIME_DIR")/audio")"
      trap "scripts/virtual-audio.sh stop" EXIT
      "$0" >/dev/null 2>&1 & APP=$!
      sleep 8
      kids=$(pgrep -P $APP | tr "\n" " ")
      app=$(ps -o rss= -p $APP | tr -d " ")
      web=0; for k in $kids; do r=$(ps -o rss= -p $k | tr -d " "); web=$((web + ${r:-0})); done
      echo "RSS $app $web $((app + web))"
      kill $APP; wait $APP 2>/dev/null || true' "$1" 2>/dev/null | sed -n 's/^RSS //p'
}
mkdir -p "$SANDBOX/home" "$SANDBOX/run"; chmod 700 "$SANDBOX/run"
read -r e_app e_web e_total < <(measure "$CARGO_TARGET_DIR/release/empty-tauri")
read -r h_app h_web h_total < <(measure "$CARGO_TARGET_DIR/release/hark-app")
printf '%-12s %10s %14s %10s\n' "" "app (MB)" "WebKit (MB)" "total (MB)"
printf '%-12s %10.1f %14.1f %10.1f\n' "empty Tauri" "$(bc -l <<< "$e_app/1024")" "$(bc -l <<< "$e_web/1024")" "$(bc -l <<< "$e_total/1024")"
printf '%-12s %10.1f %14.1f %10.1f\n' "Hark" "$(bc -l <<< "$h_app/1024")" "$(bc -l <<< "$h_web/1024")" "$(bc -l <<< "$h_total/1024")"
ratio=$(bc -l <<< "$h_total/$e_total")
verdict=$(bc -l <<< "$ratio <= 1.3" | grep -q 1 && echo meets || echo MISSES)
printf 'ratio %.2f× (%s goal ≤ 1.3×)\n' "$ratio" "$verdict"
