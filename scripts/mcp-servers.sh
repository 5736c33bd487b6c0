#!/usr/bin/env bash
# Installs the MCP servers the tests and the benchmark run against, pinned: the npm
# reference servers (@modelcontextprotocol/server-everything, MIT, and server-filesystem,
# by their lock file's integrity hashes) and PyPI's mcp-server-time (MIT, every
# distribution pinned), into $HARK_MCP_SERVERS (default ~/.cache/hark/mcp-servers). Prints
# the programs' paths as `export` lines for the tests:
#   HARK_TEST_MCP_EVERYTHING  the server-everything program (stdio; `streamableHttp` + PORT for HTTP)
#   HARK_TEST_MCP_FILESYSTEM  the server-filesystem program (stdio; the folders it may use as arguments)
#   HARK_TEST_MCP_TIME        mcp-server-time
#   HARK_TEST_MCP_PYTHON      the venv's python, with the official SDK (PyPI `mcp`), for
#                             tests/mcp/changing_server.py
# Run again, it reinstalls only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${HARK_MCP_SERVERS:-$HOME/.cache/hark/mcp-servers}"
mkdir -p "$dir/npm"

if ! cmp -s tests/mcp/package-lock.json "$dir/npm/package-lock.json" || [ ! -x "$dir/npm/node_modules/.bin/mcp-server-everything" ] || [ ! -x "$dir/npm/node_modules/.bin/mcp-server-filesystem" ]; then
  cp tests/mcp/package.json tests/mcp/package-lock.json "$dir/npm/"
  (cd "$dir/npm" && npm ci --no-audit --no-fund --silent >&2)
fi

if ! cmp -s tests/mcp/requirements-time.txt "$dir/requirements-time.txt" || [ ! -x "$dir/venv/bin/mcp-server-time" ]; then
  rm -rf "$dir/venv"
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install -q --disable-pip-version-check --no-deps -r tests/mcp/requirements-time.txt >&2
  cp tests/mcp/requirements-time.txt "$dir/requirements-time.txt"
fi

echo "export HARK_TEST_MCP_EVERYTHING=$dir/npm/node_modules/.bin/mcp-server-everything"
echo "export HARK_TEST_MCP_FILESYSTEM=$dir/npm/node_modules/.bin/mcp-server-filesystem"
echo "export HARK_TEST_MCP_TIME=$dir/venv/bin/mcp-server-time"
echo "export HARK_TEST_MCP_PYTHON=$dir/venv/bin/python"
