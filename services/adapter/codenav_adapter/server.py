"""The stdio MCP server: the codenav tools, each forwarded to the API over HTTP.

Nothing but protocol is written to stdout; logs go to stderr.
"""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

from codenav.client import ApiClient, endpoint
from codenav.config import Settings
from codenav.errors import Gone, Unauthorized, Unavailable
from codenav.tools import INSTRUCTIONS, TOOLS
from codenav.tools.mcp_tools import register_tools
from codenav_adapter.overlay import Checkout, OverlaySession, find_root, overlay_id


class HttpBackend:
    """Creates the API client on first use, so the adapter starts even when the API is not
    up yet (the first call then says the API is unreachable, and how to start it).

    Without CODENAV_URL it follows the local stack through stack.json: a restarted
    ``codenav up`` has a new token (and maybe a new port), so a call that is refused or
    cannot connect re-reads the file and, if it changed, is sent once more."""

    def __init__(self, settings: Settings, overlay: OverlaySession | None = None) -> None:
        self.settings = settings
        self.overlay = overlay
        self._client: ApiClient | None = None

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        if self._client is None:
            self._client = ApiClient.from_settings(self.settings)
        try:
            return await self._with_overlay(self._client, tool, args)
        except (Unauthorized, Unavailable):
            if self.settings.url:
                raise
            fresh = endpoint(self.settings)
            if fresh == (self._client.base_url, self._client.token):
                raise
        await self._client.aclose()
        self._client = ApiClient(*fresh)
        if self.overlay is not None:  # a new stack: a new overlay
            self.overlay.reset()
        return await self._with_overlay(self._client, tool, args)

    async def _with_overlay(self, client: ApiClient, tool: str,
                            args: dict[str, Any]) -> dict[str, Any]:
        """The call, with this session's local edits unless it names a ``ref``."""
        session = self.overlay if TOOLS[tool].scoped and not args.get("ref") else None
        for _attempt in range(2):
            oid, why = await overlay_id(session, client)
            try:
                data = await client.call(tool, args, oid)
            except Gone:  # dropped since it was sent (unused too long): made again
                assert session is not None
                session.reset()
                continue
            if why and isinstance(data.get("ref"), dict):
                data["ref"]["overlay"] = {"files": 0, "not_included": why}
            return data
        return await client.call(tool, args)


def build_server(settings: Settings) -> MCPServer:
    server: MCPServer = MCPServer(name="codenav", instructions=INSTRUCTIONS)
    session = None
    if settings.overlay:
        root = find_root(settings)
        if root is not None:
            session = OverlaySession(settings, Checkout(root, settings.max_file_bytes))
    register_tools(server, HttpBackend(settings, session),
                   default_repo=lambda: settings.repo or None)
    return server
