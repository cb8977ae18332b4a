"""The FastAPI application: routes, MCP at /mcp, errors as JSON bodies.

Every error is a JSON body with a status, and none closes the connection: the caller's
next request on the same keep-alive connection is served (an unexpected error is a 500
with the details in the API log, answered here rather than by the server's last resort,
which drops the connection). ``/docs`` and ``/openapi.json`` hold no data and are open
unless CODENAV_OPEN_DOCS=false.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from codenav import __version__, proc
from codenav.config import Settings
from codenav.errors import CodenavError
from codenav.validate import invalid
from codenav_api.mcp_http import McpGate, build_server
from codenav_api.metrics import RequestMetrics
from codenav_api.routes import admin, health, overlays, publish, repos, tools, usage
from codenav_api.service import Services

log = logging.getLogger("codenav.api")


class CatchAll:
    """ASGI middleware: an unexpected exception becomes a 500 JSON answer here, so the
    server keeps the connection open (its own handler re-raises, and uvicorn then closes
    the connection under the client's next request)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            log.exception("unhandled error", exc_info=exc)
            if started:
                raise
            body = json.dumps({"error": "internal",
                               "message": "internal error; see API logs"}).encode()
            await send({"type": "http.response.start", "status": 500,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})


def server_app() -> FastAPI:
    """The app ``python -m codenav_api`` serves: once started, its heap is settled
    (``codenav.proc.settle_heap``), which an app made inside another process must not do."""
    return create_app(settle_heap=True)


def create_app(settings: Settings | None = None, settle_heap: bool = False) -> FastAPI:
    settings = settings or Settings.load()
    svc = Services(settings)
    mcp_server = build_server(svc)
    mcp_app = mcp_server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                             json_response=True)

    async def flush_usage() -> None:  # usage figures reach the store even when idle
        while True:
            await anyio.sleep(svc.usage.interval_s)
            await anyio.to_thread.run_sync(svc.flush_usage)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc.open()
        async with mcp_server.session_manager.run(), anyio.create_task_group() as tasks:
            tasks.start_soon(flush_usage)
            if settle_heap:
                proc.settle_heap()
            yield
            tasks.cancel_scope.cancel()
        svc.close()

    docs = settings.open_docs
    app = FastAPI(title="codenav", version=__version__, lifespan=lifespan,
                  description="Team-shared code navigation for AI coding agents.",
                  docs_url="/docs" if docs else None, redoc_url="/redoc" if docs else None,
                  openapi_url="/openapi.json" if docs else None)
    app.state.services = svc
    app.include_router(health.router)
    app.include_router(tools.router)
    app.include_router(repos.router)
    app.include_router(admin.router)
    app.include_router(usage.router)
    app.include_router(publish.router)
    app.include_router(overlays.router)
    app.add_middleware(CatchAll)
    app.add_middleware(RequestMetrics)  # outermost: it sees the 500s CatchAll answers

    @app.exception_handler(CodenavError)
    async def codenav_error(_request: Request, exc: CodenavError) -> JSONResponse:
        return JSONResponse(exc.to_dict(), status_code=exc.status, headers=exc.headers())

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        error = invalid(exc.errors())
        return JSONResponse(error.to_dict(), status_code=error.status)

    app.mount("/", McpGate(mcp_app, svc))
    return app
