#!/usr/bin/env bash
# A private PulseAudio with a virtual speaker ("spk", a null sink) and a virtual microphone
# ("mic", fed by the speaker's monitor): what is played to spk is heard on mic.
#   eval "$(scripts/virtual-audio.sh start DIR)"   # exports PULSE_SERVER, PULSE_COOKIE, HARK_PULSE_PIDS
#   scripts/virtual-audio.sh stop
set -euo pipefail
case "${1:-}" in
start)
  DIR="${2:?usage: virtual-audio.sh start DIR}"
  mkdir -p "$DIR/run" "$DIR/home"; chmod 700 "$DIR/run"
  export XDG_RUNTIME_DIR="$DIR/run" HOME="$DIR/home"
  pulseaudio --daemonize=no --system=false --exit-idle-time=-1 -n --log-target=file:"$DIR/pulse.log" \
    -L 'module-native-protocol-unix' \
    -L 'module-null-sink sink_name=spk sink_properties=device.description=VirtualSpeaker' \
    -L 'module-virtual-source source_name=mic master=spk.monitor' >/dev/null 2>&1 &
  PA=$!
  for _ in $(seq 100); do pactl info >/dev/null 2>&1 && break; sleep 0.1; done
  pactl info >/dev/null 2>&1 || { echo "echo 'pulseaudio did not start (see $DIR/pulse.log)' >&2; exit 1"; exit 1; }
  pactl set-default-sink spk; pactl set-default-source mic
  # Keep the null sink at low latency: otherwise a new recorder waits for its 2 s block.
  parec -d spk.monitor --latency-msec=20 --raw >/dev/null 2>&1 &
  KEEP=$!
  sleep 2.2
  # The server's cookie: libpulse also gets in by passing its user id, a client of the
  # native protocol without libpulse (cpal's PulseAudio host, Hark's microphone) needs it.
  echo "export PULSE_SERVER=unix:$DIR/run/pulse/native PULSE_COOKIE=$HOME/.config/pulse/cookie HARK_PULSE_PIDS='$PA $KEEP'"
  ;;
stop)
  # shellcheck disable=SC2086
  [ -n "${HARK_PULSE_PIDS:-}" ] && kill $HARK_PULSE_PIDS 2>/dev/null || true
  ;;
*) echo "usage: $0 start DIR | stop" >&2; exit 2 ;;
esac
