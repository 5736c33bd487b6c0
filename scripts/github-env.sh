#!/usr/bin/env bash
# Prints the named variables that are set and not empty in $GITHUB_ENV's multi-line form,
# for a workflow step to append there. A secret that is not configured reaches a step as an
# empty variable, and the Tauri bundler takes an empty APPLE_CERTIFICATE or
# APPLE_SIGNING_IDENTITY as one that is set (and fails, or overrides the ad hoc signature
# that tauri.conf.json asks for): only the secrets that exist are passed on.
#
# Usage: scripts/github-env.sh NAME...
set -euo pipefail
for name in "$@"; do
  value=${!name:-}
  [ -n "$value" ] || continue
  delimiter="HARK_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
  printf '%s<<%s\n%s\n%s\n' "$name" "$delimiter" "$value" "$delimiter"
done
