#!/usr/bin/env bash
# Writes the updater's configuration for an installer build to FILE, for the Tauri CLI to
# merge (`--config`). With HARK_UPDATE_ENDPOINT (where latest.json is) and HARK_UPDATE_PUBKEY
# (`tauri signer generate`'s public key) both set: the plugin's endpoint and key, and
# `createUpdaterArtifacts`, so the bundles come with their signed updater archives (.sig,
# .app.tar.gz); that signing needs TAURI_SIGNING_PRIVATE_KEY, checked here rather than
# after a whole build. With neither set: an empty configuration, and the build has no
# updater (src-tauri/src/update.rs reads the same configuration). One of the two alone is
# a mistake, and stops the build.
#
# Usage: scripts/updater-config.sh FILE
set -euo pipefail
out=${1:?usage: scripts/updater-config.sh FILE}
endpoint=${HARK_UPDATE_ENDPOINT:-}
pubkey=${HARK_UPDATE_PUBKEY:-}
if [ -z "$endpoint" ] && [ -z "$pubkey" ]; then
  echo '{}' >"$out"
  echo "updater-config: no HARK_UPDATE_ENDPOINT or HARK_UPDATE_PUBKEY: this build does not look for updates" >&2
  exit 0
fi
if [ -z "$endpoint" ] || [ -z "$pubkey" ]; then
  echo "updater-config: set both HARK_UPDATE_ENDPOINT and HARK_UPDATE_PUBKEY, or neither" >&2
  exit 1
fi
if [ -z "${TAURI_SIGNING_PRIVATE_KEY:-}" ]; then
  echo "updater-config: updates are on, but TAURI_SIGNING_PRIVATE_KEY is not set: the updater archives could not be signed" >&2
  exit 1
fi
node -e '
  const [endpoint, pubkey] = process.argv.slice(1);
  const config = {
    bundle: { createUpdaterArtifacts: true },
    plugins: { updater: { endpoints: [endpoint], pubkey } },
  };
  process.stdout.write(JSON.stringify(config, null, 2) + "\n");
' "$endpoint" "$pubkey" >"$out"
echo "updater-config: updates from $endpoint" >&2
