"""An MCP server whose list of tools changes while it runs, for Hark's test of
`notifications/tools/list_changed`. It is built on the official Python SDK (PyPI `mcp`,
installed with mcp-server-time by scripts/mcp-servers.sh): calling `unlock` adds the tool
`secret` and announces the change, as a server does when the user signs in or enables a
feature. Run: python3 changing_server.py (stdio)."""

import anyio
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server

server = MCPServer("changing")


def secret() -> str:
    """Tells the secret word."""
    return "the secret word is marmalade"


@server.tool()
async def unlock(ctx: Context) -> str:
    """Adds the tool `secret` to this server's tools."""
    server.add_tool(secret)
    await ctx.session.send_tool_list_changed()
    return "unlocked: the tool secret is listed now"


async def main() -> None:
    # As MCPServer.run_stdio_async, but declaring `tools.listChanged` (MCPServer has no
    # setting for it; its low-level server takes the options).
    low = server._lowlevel_server
    options = low.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read, write):
        await low.run(read, write, options)


if __name__ == "__main__":
    anyio.run(main)
