"""The stdio MCP server: the codenav tools, each forwarded to the API over HTTP.

Nothing but protocol is written to stdout; logs go to stderr.
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from codenav.client import ApiClient
from codenav.config import Settings
from codenav.tools import INSTRUCTIONS, register_tools


class HttpBackend:
    """Creates the API client on first use, so the adapter starts even when the API is not
    up yet (the first call then says the API is unreachable, and how to start it)."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: ApiClient | None = None

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self._client = ApiClient.from_settings(self.settings)
        return await self._client.call(tool, args)


def build_server(settings: Settings) -> MCPServer:
    server: MCPServer = MCPServer(name="codenav", instructions=INSTRUCTIONS)
    register_tools(server, HttpBackend(settings), default_repo=lambda: settings.repo or None)
    return server
