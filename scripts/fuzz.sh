#!/usr/bin/env bash
# Fuzzes Hark's parsers with cargo-fuzz (libFuzzer, AddressSanitizer, nightly Rust): the SSE
# parser, every import format, the sentence splitter, the WAV decoders and the
# JSON-with-comments reader. Runs each target for SECONDS (default 60) and prints the
# executions and crashes of each. A crash leaves its input in fuzz/artifacts/TARGET/;
# turn it into a unit test, fix, run again.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
SECS="${1:-60}"
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(sse import sentences wav jsonc)

scripts/install-deps.sh
command -v rustup >/dev/null || { echo "rustup is needed for the nightly toolchain" >&2; exit 1; }
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
# Build output outside the clone, like the rest of the build.
export CARGO_TARGET_DIR="${HARK_FUZZ_TARGET_DIR:-$HOME/.cache/hark/fuzz-target}"

printf '%-10s %14s %10s %8s\n' target executions exec/s crashes
total=0
crashed=0
for t in "${TARGETS[@]}"; do
  corpus="fuzz/corpus/$t"
  mkdir -p "$corpus"
  log=$(mktemp)
  status=0
  cargo +nightly fuzz run --fuzz-dir fuzz "$t" "$corpus" "fuzz/seeds/$t" -- \
    -max_total_time="$SECS" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 >"$log" 2>&1 || status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  crashes=0
  if [ "$status" -ne 0 ]; then
    crashes=1
    crashed=1
    grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$log" | head -5 >&2 || tail -20 "$log" >&2
  fi
  printf '%-10s %14s %10s %8s\n' "$t" "${execs:-?}" "${rate:-?}" "$crashes"
  total=$((total + ${execs:-0}))
  rm -f "$log"
done
printf '%-10s %14s\n' total "$total"
exit "$crashed"
