"""``definition``: a symbol's declarations and the types its signature mentions."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool
from codenav.tools.text import loc


class DefinitionArgs(Args):
    symbol: str = Field(min_length=1, max_length=500, description="name or Class.member")
    path: str | None = Field(default=None, max_length=1000, description="the declaring file")


def handle(call: Call, args: DefinitionArgs) -> dict[str, Any]:
    """A symbol's declaration(s): signature, doc, location, and the signatures of the types its
    signature mentions, resolved through the file's imports."""
    from codenav.graph import lookup

    return lookup.definition(call.conn, call.target, args.symbol, args.path or None)


def render(data: dict[str, Any]) -> str:
    """the declaration(s): signature, doc, location, and the declarations of the types its
    signature mentions"""
    out = []
    for r in data.get("results", []):
        out.append(f"{r['kind']} {r['qualname']}  {loc(r)}-{r['end_line']}")
        out.append(f"  {r['signature']}")
        if r.get("doc"):
            out.append(f"  \"{r['doc'][:300]}\"")
        for t in r.get("types", []):
            out.append(f"  uses {t['kind']} {t['qualname']} ({loc(t)}): {t['signature']}")
        if r.get("unresolved_types"):
            out.append("  unresolved types: " + ", ".join(r["unresolved_types"]))
    return "\n".join(out)


TOOL = Tool("definition", "A symbol's declaration and the types it mentions",
            DefinitionArgs, handle, render, cli=Cli(positional=("symbol",)), graph=True)
