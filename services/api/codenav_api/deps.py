"""Request dependencies: the services object and bearer-token auth."""

from __future__ import annotations

from fastapi import Request

from codenav_api.service import Services


def services(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


def require_token(request: Request) -> str:
    svc = services(request)
    return svc.tokens.verify(svc.connection, request.headers.get("authorization"))
