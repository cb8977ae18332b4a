"""The graph tools by name, with their arguments checked: one entry for the API."""

from __future__ import annotations

from typing import Any

import psycopg

from codenav.access import Scope
from codenav.errors import InvalidRequest
from codenav.graph import impact, lookup, skeleton

GRAPH_TOOLS = ("definition", "references", "dependencies", "impact", "implementations",
               "skeleton")


def _int(args: dict[str, Any], key: str, default: int | None) -> int | None:
    value = args.get(key, default)
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise InvalidRequest(f"{key} must be an integer") from None


def run(conn: psycopg.Connection, scope: Scope, tool: str, args: dict[str, Any]) -> dict[str, Any]:
    if tool == "definition":
        return lookup.definition(conn, scope, str(args.get("symbol") or ""),
                                 args.get("path") or None)
    if tool == "references":
        return lookup.references(conn, scope, str(args.get("symbol") or ""),
                                 args.get("path") or None,
                                 bool(args.get("include_potential", True)))
    if tool == "dependencies":
        return impact.dependencies(conn, scope, str(args.get("path") or ""),
                                   str(args.get("direction") or "both"),
                                   _int(args, "depth", 1) or 1)
    if tool == "impact":
        return impact.impact(conn, scope, str(args.get("symbol_or_path") or ""),
                             _int(args, "depth", 3) or 3)
    if tool == "implementations":
        return lookup.implementations(conn, scope, str(args.get("symbol") or ""))
    if tool == "skeleton":
        return skeleton.skeleton(conn, scope, args.get("path") or None, _int(args, "depth", None))
    raise InvalidRequest(f"unknown tool {tool!r}")
