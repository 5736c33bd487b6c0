#!/usr/bin/env bash
# The environment an installer is built in, as NAME=value lines: the release workflow appends
# them to $GITHUB_ENV, scripts/bundle.sh exports them. One place, so a local bundle and a
# release are built alike.
#
# - GGML_NATIVE=OFF: whisper.cpp's build (whisper-rs-sys passes GGML_* to CMake) targets the
#   build machine's CPU by default. An installer runs on other computers: x86-64 gets ggml's
#   portable baseline (SSE4.2, AVX, AVX2, BMI2, FMA, F16C: ggml/CMakeLists.txt's INS_ENB),
#   Apple silicon the compiler's default CPU (apple-m1) instead of `-mcpu=native`, which on
#   an M2 or later runner would use instructions an M1 lacks. llama.cpp's build in hark-llm
#   already turns it off (llama-cpp-sys-2 build.rs). Hark checks the CPU at run time before
#   it starts either engine (hark_core::cpu).
# - MACOSX_DEPLOYMENT_TARGET (macOS): the app's minimum macOS (tauri.conf.json's
#   bundle.macOS.minimumSystemVersion) for every compiler in the build. tauri-build passes it
#   to the app crate only; without it whisper.cpp, llama.cpp and hark-llm target the runner's
#   macOS and may not start on an older one.
#
# Usage: scripts/build-env.sh [OS]   (OS as `uname -s` says it; default: this one)
set -euo pipefail
cd "$(dirname "$0")/.."
os=${1:-$(uname -s)}
echo "GGML_NATIVE=OFF"
case "$os" in
  Darwin)
    min=$(node -p 'require("./src-tauri/tauri.conf.json").bundle.macOS.minimumSystemVersion')
    echo "MACOSX_DEPLOYMENT_TARGET=$min"
    ;;
esac
