#!/usr/bin/env bash
# The cost of the user's tools (issue 25): a tool round trip through the MCP SDK to
# server-everything's echo, and through Hark's tool, side by side (p50/p95); and the time
# until 5 servers have started and listed their tools. Installs the server first.
# Usage: scripts/bench-mcp.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/hark/target}"
eval "$(scripts/mcp-servers.sh)"
exec cargo bench --locked -q -p hark-core --bench mcp
