"""Request dependencies: the services object, and the caller behind a bearer token with the
role an action needs (``codenav.roles.REQUIRED``, the one map of roles).

Both run on the event loop (``async``), so a request does not hop to a worker thread for
them: a token verified in the last minute is answered from the verifier's cache, and only
a token to look up goes to a thread for its database read. Every call of a token counts
against its rate limit (``codenav.ratelimit``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
from fastapi import Request

from codenav.access import Caller
from codenav.roles import REQUIRED, authorize
from codenav_api.service import Services


def services_of(request: Request) -> Services:
    svc: Services = request.app.state.services
    return svc


async def services(request: Request) -> Services:
    return services_of(request)


def require_token(request: Request) -> Caller:
    """The caller, from a synchronous route (it may read the database); the call counts
    against the token's rate limit."""
    svc = services_of(request)
    caller = svc.tokens.verify(svc.connection, request.headers.get("authorization"))
    svc.limits.check(caller)
    return caller


async def caller_of(request: Request) -> Caller:
    svc = services_of(request)
    header = request.headers.get("authorization")
    caller = svc.tokens.cached(header)
    if caller is None:
        caller = await anyio.to_thread.run_sync(svc.tokens.verify, svc.connection, header)
    svc.limits.check(caller)  # a refusal costs no thread and no database
    return caller


def allowed(action: str) -> Callable[[Request], AsyncIterator[Caller]]:
    """A dependency: the caller, if its token's role allows ``action``, holding one of its
    token's slots (``codenav.ratelimit.InFlight``) until the answer is sent."""
    if action not in REQUIRED:
        raise KeyError(f"no role is defined for action {action!r} (codenav.roles.REQUIRED)")

    async def dependency(request: Request) -> AsyncIterator[Caller]:
        caller = await caller_of(request)
        authorize(caller, action)
        async with services_of(request).in_flight.slot(caller):
            yield caller

    dependency.action = action  # type: ignore[attr-defined]
    return dependency
