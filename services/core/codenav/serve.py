"""Running a tool on the server (REST and MCP over HTTP alike): the caller's role is
checked, the arguments are validated by the tool's model, the repository and ref are
resolved within what the caller may see, the answer says which ref it is for and carries
its freshness, and it is added to the
usage figures (``codenav.usage``)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import psycopg
from pydantic import ValidationError

from codenav import access, freshness, overlays, roles, status
from codenav.access import Caller
from codenav.tools import get
from codenav.tools.base import Args, Call, Host
from codenav.validate import invalid


def parse(name: str, args: Args | dict[str, Any]) -> Args:
    """The tool's arguments checked by its model (REST has done it already)."""
    model = get(name).args
    if isinstance(args, model):
        return args
    try:
        return model.model_validate(args if isinstance(args, dict) else args.model_dump())
    except ValidationError as exc:
        raise invalid(exc.errors()) from None


def run(host: Host, connection: Callable[[], AbstractContextManager[psycopg.Connection]],
        caller: Caller, name: str, args: Args | dict[str, Any],
        overlay: str | None = None) -> dict[str, Any]:
    """Run tool ``name``; with ``overlay`` (the caller's adapter's) a call without a ``ref``
    reads the caller's uncommitted edits over the overlay's base, and the results from
    them say ``source: "local"``."""
    tool = get(name)
    roles.authorize(caller, tool.name)
    parsed = parse(name, args)
    with connection() as conn:
        scope = access.resolve(conn, caller, parsed.repo or None, parsed.ref or None,
                               overlay) if tool.scoped else None
        if scope is not None and tool.graph and scope.at.overlay is not None and \
                scope.at.overlay.graph < scope.at.overlay.version:
            scope = overlays.wait_graph(conn, scope, host.settings.overlay_wait_s)
        answer = tool.handler(Call(conn, caller, scope, host), parsed)
        if scope is not None:
            answer.setdefault("ref", scope.at.describe())
            if scope.at.overlay is not None:
                freshness.mark_local(answer, overlays.local_paths(conn, scope))
        if tool.fresh and scope is not None:
            status.annotate(conn, scope, host.redis, answer)
        if tool.counted:
            repo_id = scope.id if scope is not None else \
                (access.resolve(conn, caller, parsed.repo).id if parsed.repo else None)
            host.usage.record(caller, repo_id, tool.name, answer)
            if host.usage.due():  # one statement, at most every few seconds
                host.usage.flush(conn)
        return answer
