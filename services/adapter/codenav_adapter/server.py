"""The stdio MCP server: the codenav tools, each forwarded to the API over HTTP.

Nothing but protocol is written to stdout; logs go to stderr.
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from codenav.client import ApiClient, endpoint
from codenav.config import Settings
from codenav.errors import Unauthorized, Unavailable
from codenav.tools import INSTRUCTIONS
from codenav.tools.mcp_tools import register_tools


class HttpBackend:
    """Creates the API client on first use, so the adapter starts even when the API is not
    up yet (the first call then says the API is unreachable, and how to start it).

    Without CODENAV_URL it follows the local stack through stack.json: a restarted
    ``codenav up`` has a new token (and maybe a new port), so a call that is refused or
    cannot connect re-reads the file and, if it changed, is sent once more."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._client: ApiClient | None = None

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self._client = ApiClient.from_settings(self.settings)
        try:
            return await self._client.call(tool, args)
        except (Unauthorized, Unavailable):
            if self.settings.url:
                raise
            fresh = endpoint(self.settings)
            if fresh == (self._client.base_url, self._client.token):
                raise
        await self._client.aclose()
        self._client = ApiClient(*fresh)
        return await self._client.call(tool, args)


def build_server(settings: Settings) -> MCPServer:
    server: MCPServer = MCPServer(name="codenav", instructions=INSTRUCTIONS)
    register_tools(server, HttpBackend(settings), default_repo=lambda: settings.repo or None)
    return server
