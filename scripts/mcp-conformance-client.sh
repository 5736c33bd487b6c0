#!/usr/bin/env bash
# One client scenario of the MCP conformance kit, played by Hark's own MCP client through
# `hark mcp`: the kit runs this with its server's URL as the last argument and the
# scenario's name in MCP_CONFORMANCE_SCENARIO, and judges the requests it receives.
# HARK_BIN is the `hark` binary (scripts/mcp-conformance.sh sets it).
set -euo pipefail
url="${!#}"
hark="${HARK_BIN:?HARK_BIN names the hark binary}"
# A server list of its own, removed at the end: the user's is never touched.
HARK_CONFIG_DIR=$(mktemp -d)
export HARK_CONFIG_DIR
trap 'rm -rf "$HARK_CONFIG_DIR"' EXIT
"$hark" mcp add conformance --url "$url" >/dev/null
case "${MCP_CONFORMANCE_SCENARIO:?}" in
  initialize) "$hark" mcp test conformance --json ;;
  tools_call) "$hark" mcp call conformance add_numbers --args '{"a": 2, "b": 3}' ;;
  sse-retry) "$hark" mcp call conformance test_reconnection ;;
  json-schema-2020-12-preservation)
    # What Hark offers the model for the tool, echoed back for the kit to compare.
    schema=$("$hark" mcp schema conformance json_schema_2020_12_tool)
    "$hark" mcp call conformance json_schema_echo --args "{\"schema\": $schema}"
    ;;
  *)
    echo "hark: no client part for the scenario $MCP_CONFORMANCE_SCENARIO" >&2
    exit 2
    ;;
esac
