#!/usr/bin/env bash
# Installs the OpenAI clients hark-llm's tests run against it, pinned: PyPI `openai` (every
# distribution in tests/llm-clients/requirements.txt, installed without resolving), and npm
# `openai`, the Vercel AI SDK (`ai`, `@ai-sdk/openai-compatible`) and the Node 22 they need
# (by tests/llm-clients/package-lock.json's integrity hashes), into
# $HARK_MCP_SERVERS/llm-clients (default ~/.cache/hark/mcp-servers/llm-clients). Prints
# `export` lines for the tests:
#   HARK_TEST_LLM_PYTHON   the venv's python, with `openai`
#   HARK_TEST_LLM_NODE     Node 22
#   HARK_TEST_LLM_CLIENTS  the folder whose node_modules holds the npm clients
# Run again, it reinstalls only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."
dir="${HARK_MCP_SERVERS:-$HOME/.cache/hark/mcp-servers}/llm-clients"
mkdir -p "$dir"

if ! cmp -s tests/llm-clients/package-lock.json "$dir/package-lock.json" || [ ! -x "$dir/node_modules/.bin/node" ]; then
  cp tests/llm-clients/package.json tests/llm-clients/package-lock.json "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --silent >&2)
fi

if ! cmp -s tests/llm-clients/requirements.txt "$dir/requirements.txt" || [ ! -x "$dir/venv/bin/python" ]; then
  rm -rf "$dir/venv"
  python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install -q --disable-pip-version-check --no-deps -r tests/llm-clients/requirements.txt >&2
  cp tests/llm-clients/requirements.txt "$dir/requirements.txt"
fi

echo "export HARK_TEST_LLM_PYTHON=$dir/venv/bin/python"
echo "export HARK_TEST_LLM_NODE=$dir/node_modules/.bin/node"
echo "export HARK_TEST_LLM_CLIENTS=$dir"
