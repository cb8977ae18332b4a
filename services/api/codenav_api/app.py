"""The FastAPI application: routes, MCP at /mcp, errors as JSON bodies."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from codenav import __version__
from codenav.config import Settings
from codenav.errors import CodenavError
from codenav_api.mcp_http import McpGate, build_server
from codenav_api.routes import health, repos, tools
from codenav_api.service import Services

log = logging.getLogger("codenav.api")


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or Settings.load()
    svc = Services(settings)
    mcp_server = build_server(svc)
    mcp_app = mcp_server.streamable_http_app(streamable_http_path="/mcp", stateless_http=True,
                                             json_response=True)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        svc.open()
        async with mcp_server.session_manager.run():
            yield
        svc.close()

    app = FastAPI(title="codenav", version=__version__, lifespan=lifespan,
                  description="Team-shared code navigation for AI coding agents.")
    app.state.services = svc
    app.include_router(health.router)
    app.include_router(tools.router)
    app.include_router(repos.router)

    @app.exception_handler(CodenavError)
    async def codenav_error(_request: Request, exc: CodenavError) -> JSONResponse:
        return JSONResponse(exc.to_dict(), status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        message = f"{where}: {first.get('msg', 'invalid request')}" if where else \
            str(first.get("msg", "invalid request"))
        return JSONResponse({"error": "invalid_request", "message": message}, status_code=400)

    @app.exception_handler(Exception)
    async def internal_error(_request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error", exc_info=exc)
        return JSONResponse({"error": "internal", "message": "internal error; see API logs"},
                            status_code=500)

    app.mount("/", McpGate(mcp_app, svc))
    return app
