#!/usr/bin/env bash
# Regenerates the app's icon set from icons/icon.png (512×512, RGBA): the PNG sizes Linux
# and the bundles use, icon.ico (Windows: 16–256 px) and icon.icns (macOS: 16–1024 px),
# and the tray's state icons. The results are committed; run this after changing the art.
set -euo pipefail
cd "$(dirname "$0")/../icons"
need=()
command -v /usr/bin/convert >/dev/null || need+=(imagemagick)
command -v png2icns >/dev/null || need+=(icnsutils)
if ((${#need[@]})); then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
C=/usr/bin/convert
for s in 16 24 32 48 64 128 256 512 1024; do
  $C icon.png -resize "${s}x${s}" "PNG32:icon-$s.tmp.png"
done
cp icon-32.tmp.png 32x32.png
cp icon-64.tmp.png 64x64.png
cp icon-128.tmp.png 128x128.png
cp icon-256.tmp.png 128x128@2x.png
$C icon-16.tmp.png icon-24.tmp.png icon-32.tmp.png icon-48.tmp.png icon-64.tmp.png icon-256.tmp.png icon.ico
png2icns icon.icns icon-16.tmp.png icon-32.tmp.png icon-128.tmp.png icon-256.tmp.png icon-512.tmp.png icon-1024.tmp.png >/dev/null
rm -f icon-*.tmp.png
# The tray: the microphone on a disc whose colour says the state.
mkdir -p tray
for s in "idle:#64748b" "hands-free:#2563eb" "listening:#dc2626" "thinking:#d97706" "speaking:#16a34a" "error:#7c2d12"; do
  $C -size 64x64 xc:none -fill "${s#*:}" -draw 'circle 32,32 32,4' -fill white -draw 'roundrectangle 25,14 39,38 7,7' \
    -stroke white -strokewidth 4 -fill none -draw 'arc 18,22 46,46 0,180' -draw 'line 32,46 32,52' "PNG32:tray/${s%%:*}.png"
done
# macOS's idle icon, a template image: the same microphone cut out of a black disc (only the
# alpha counts; the menu bar draws it in its own colour, light or dark).
$C -size 64x64 xc:black -fill white -draw 'circle 32,32 32,4' -fill black -draw 'roundrectangle 25,14 39,38 7,7' \
  -stroke black -strokewidth 4 -fill none -draw 'arc 18,22 46,46 0,180' -draw 'line 32,46 32,52' \
  -alpha copy -channel RGB -evaluate set 0 +channel PNG32:tray/template.png
ls -1
