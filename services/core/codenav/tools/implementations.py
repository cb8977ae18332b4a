"""``implementations``: classes behind an interface or extending a class."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool
from codenav.tools.text import loc


class ImplementationsArgs(Args):
    symbol: str = Field(min_length=1, max_length=500, description="an interface or class")


def handle(call: Call, args: ImplementationsArgs) -> dict[str, Any]:
    """Classes that implement an interface or extend a class (directly or through others), with
    their methods."""
    from codenav.graph import lookup

    return lookup.implementations(call.conn, call.target, args.symbol)


def render(data: dict[str, Any]) -> str:
    """classes implementing an interface or extending a class (directly or not), with their
    methods; Go types by method set"""
    out = []
    for r in data.get("results", []):
        via = f" via {r['via']}" if r.get("via") else ""
        methods = ", ".join(m["name"] for m in r.get("methods", [])[:12])
        out.append(f"{r['relation']} {r['qualname']} ({loc(r)}){via}: {methods}")
    for p in data.get("potential", []):
        out.append(f"potential: {p['qualname']} ({loc(p)}) -- {p['reason']}")
    return "\n".join(out)


TOOL = Tool("implementations", "Classes implementing or extending a type",
            ImplementationsArgs, handle, render, cli=Cli(positional=("symbol",)), graph=True)
