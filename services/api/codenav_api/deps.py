"""Request dependencies: the services object, and the caller behind a bearer token with the
role an action needs (``codenav.roles.REQUIRED``, the one map of roles)."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import Request

from codenav.access import Caller
from codenav.roles import REQUIRED, authorize
from codenav_api.service import Services


def services(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


def require_token(request: Request) -> Caller:
    svc = services(request)
    return svc.tokens.verify(svc.connection, request.headers.get("authorization"))


def allowed(action: str) -> Callable[[Request], Caller]:
    """A dependency: the caller, if its token's role allows ``action``."""
    if action not in REQUIRED:
        raise KeyError(f"no role is defined for action {action!r} (codenav.roles.REQUIRED)")

    def dependency(request: Request) -> Caller:
        caller = require_token(request)
        authorize(caller, action)
        return caller

    dependency.action = action  # type: ignore[attr-defined]
    return dependency
