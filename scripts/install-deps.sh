#!/usr/bin/env bash
# Installs what building and testing Hark needs on Debian/Ubuntu; a no-op when present.
set -euo pipefail

APT_PACKAGES=(
  build-essential pkg-config      # C toolchain for the bundled SQLite
  libdbus-1-dev                   # keyring's Secret Service client (libdbus)
  dbus dbus-x11 gnome-keyring     # a real Secret Service for the keychain tests
  libsecret-tools                 # secret-tool, to cross-check what is in the keychain
  libasound2-dev                  # cpal (ALSA)
  cmake clang libclang-dev        # whisper.cpp and llama.cpp, the offline speech and language models
  espeak-ng                       # the OS voice on Linux
  pulseaudio pulseaudio-utils libasound2-plugins  # sound server (virtual devices in tests)
  libwebkit2gtk-4.1-dev libxdo-dev libayatana-appindicator3-dev librsvg2-dev  # the Tauri app
  xvfb xauth webkit2gtk-driver     # the app's WebDriver tests on a virtual display
  xdotool x11-utils                # ... pressing the global shortcut with another window focused
  imagemagick                      # screenshots
  libglib2.0-bin                   # gdbus: the tray menu as the desktop reads it (D-Bus)
  fonts-ipafont-gothic fonts-wqy-microhei  # Japanese and Chinese in the window (its tests and screenshots)
  xdg-desktop-portal python3-dbus python3-gi weston  # Wayland: the desktop's GlobalShortcuts portal, a test backend for it, a headless compositor
)
command -v npm >/dev/null || APT_PACKAGES+=(nodejs npm)   # building the UI (Node 18+)
# The tests' MCP servers: the npm reference server (node) and PyPI's mcp-server-time (a venv).
python3 -c 'import venv, ensurepip' 2>/dev/null || APT_PACKAGES+=(python3 python3-venv)

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  for attempt in 1 2 3; do   # another apt may hold the dpkg lock for a while
    if $SUDO apt-get update -qq && \
       DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
      break
    fi
    [ "$attempt" = 3 ] && { echo "apt-get install failed" >&2; exit 1; }
    sleep 30
  done
fi

if ! command -v cargo >/dev/null; then
  echo "cargo is missing: install Rust from https://rustup.rs (stable, 1.85 or newer)" >&2
  exit 1
fi
# tauri-driver bridges WebDriver to the app (WebKitWebDriver underneath).
if ! command -v tauri-driver >/dev/null; then
  cargo install tauri-driver --version '^2' --locked --quiet
fi
if command -v rustup >/dev/null; then
  rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy
  rustup component list --installed 2>/dev/null | grep -q '^rustfmt' || rustup component add rustfmt
fi
