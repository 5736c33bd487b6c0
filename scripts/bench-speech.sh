#!/usr/bin/env bash
# Human speech for the benchmarks: Debian's Asterisk prompts (Allison Smith's recordings,
# asterisk-core-sounds-en-wav, and their script, asterisk-core-sounds-en; CC-BY-SA-3.0),
# fetched with apt and unpacked into HARK_BENCH_SPEECH/asterisk rather than installed. The
# script lives in /usr/share/doc, which minimal systems leave out of every install (dpkg's
# path-exclude), and nothing of Asterisk needs to be on the system. Idempotent.
# Usage: HARK_BENCH_SPEECH=DIR scripts/bench-speech.sh
set -euo pipefail
: "${HARK_BENCH_SPEECH:?set HARK_BENCH_SPEECH to where the recordings are kept}"
ASTERISK="$HARK_BENCH_SPEECH/asterisk"
[ -e "$ASTERISK/.unpacked" ] && exit 0
debs=$(mktemp -d)
trap 'rm -rf "$debs"' EXIT
packages=(asterisk-core-sounds-en asterisk-core-sounds-en-wav)
if ! (cd "$debs" && apt-get download -qq "${packages[@]}"); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq   # a fresh system may have no package lists yet
  (cd "$debs" && apt-get download -qq "${packages[@]}")
fi
mkdir -p "$ASTERISK"
for deb in "$debs"/*.deb; do
  dpkg-deb -x "$deb" "$ASTERISK"
done
touch "$ASTERISK/.unpacked"
