"""The MCP tools over streamable HTTP at ``/mcp``: same tools as the stdio adapter,
run in-process. Every request needs a bearer token and, if it carries an Origin header,
an allowed origin (loopback, or one listed in CODENAV_ALLOWED_ORIGINS): this stops DNS
rebinding and cross-site calls from browsers. The token's caller is carried to the tool
call, which checks its role and answers within what it may see, as REST does."""

from __future__ import annotations

import contextvars
import json
from typing import Any
from urllib.parse import urlparse

import anyio
from mcp.server import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from codenav.access import Caller
from codenav.errors import CodenavError, Unauthorized
from codenav.tools import INSTRUCTIONS
from codenav.tools.mcp_tools import register_tools
from codenav_api.service import Services

_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]"}
CALLER: contextvars.ContextVar[Caller | None] = contextvars.ContextVar("codenav_caller",
                                                                       default=None)
"""The caller of the MCP request being served (set by ``McpGate``)."""


class InProcessBackend:
    def __init__(self, svc: Services) -> None:
        self.svc = svc

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        caller = CALLER.get()
        if caller is None:  # never: the gate verifies every request first
            raise Unauthorized("missing bearer token")
        return await anyio.to_thread.run_sync(self.svc.run, caller, tool, args)


def build_server(svc: Services) -> MCPServer:
    server: MCPServer = MCPServer(name="codenav", instructions=INSTRUCTIONS)
    register_tools(server, InProcessBackend(svc))
    return server


def origin_allowed(origin: str | None, allowed: tuple[str, ...]) -> bool:
    if not origin:
        return True  # not a browser
    if origin in allowed:
        return True
    host = urlparse(origin).hostname or ""
    return host in _LOOPBACK


class McpGate:
    """ASGI wrapper: Origin check, then bearer token and its rate limit, then the MCP
    app (a call in one of the token's slots)."""

    def __init__(self, app: ASGIApp, svc: Services) -> None:
        self.app = app
        self.svc = svc

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        if not origin_allowed(headers.get("origin"), self.svc.settings.allowed_origins):
            await _json(send, 403, {"error": "forbidden", "message": "origin not allowed"})
            return
        try:
            caller = self.svc.tokens.cached(headers.get("authorization"))
            if caller is None:
                caller = await anyio.to_thread.run_sync(
                    self.svc.tokens.verify, self.svc.connection, headers.get("authorization"))
            self.svc.limits.check(caller)
        except CodenavError as exc:
            await _json(send, exc.status, exc.to_dict(), exc.headers())
            return
        token = CALLER.set(caller)
        try:
            if scope.get("method") == "POST":  # a call, served in one of the token's slots
                async with self.svc.in_flight.slot(caller):
                    await self.app(scope, receive, send)
            else:  # a GET holds an event stream open: it must not hold a slot meanwhile
                await self.app(scope, receive, send)
        finally:
            CALLER.reset(token)


async def _json(send: Send, status: int, body: dict[str, Any],
                headers: dict[str, str] | None = None) -> None:
    data = json.dumps(body).encode()
    extra = [(k.lower().encode("latin-1"), v.encode("latin-1"))
             for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(data)).encode()), *extra]})
    await send({"type": "http.response.body", "body": data})
