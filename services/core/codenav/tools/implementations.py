"""``implementations``: classes behind an interface or extending a class."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool
from codenav.tools.text import loc


class ImplementationsArgs(Args):
    symbol: str = Field(min_length=1, max_length=500, description="an interface or class")


def handle(call: Call, args: ImplementationsArgs) -> dict[str, Any]:
    from codenav.graph import lookup

    return lookup.implementations(call.conn, call.target, args.symbol)


def render(data: dict[str, Any]) -> str:
    out = []
    for r in data.get("results", []):
        via = f" via {r['via']}" if r.get("via") else ""
        methods = ", ".join(m["name"] for m in r.get("methods", [])[:12])
        out.append(f"{r['relation']} {r['qualname']} ({loc(r)}){via}: {methods}")
    for p in data.get("potential", []):
        out.append(f"potential: {p['qualname']} ({loc(p)}) -- {p['reason']}")
    return "\n".join(out)


TOOL = Tool(
    name="implementations", summary="Classes implementing or extending a type",
    description="Classes that implement an interface or extend a class (directly or "
                "through others), with their methods.",
    answer="classes implementing an interface or extending a class (directly or not), with "
           "their methods; Go types by method set",
    args=ImplementationsArgs, handler=handle, render=render, cli=Cli(positional=("symbol",)))
