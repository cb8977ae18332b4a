"""``references``: who uses a symbol, verified apart from name-only matches."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool
from codenav.tools.text import loc


class ReferencesArgs(Args):
    symbol: str = Field(min_length=1, max_length=500, description="name or Class.member")
    path: str | None = Field(default=None, max_length=1000, description="the declaring file")
    include_potential: bool = Field(default=True,
                                    description="also list name-only matches, with why")


def handle(call: Call, args: ReferencesArgs) -> dict[str, Any]:
    """Who uses a symbol: verified references (file, line, enclosing symbol, how it resolved)
    apart from potential name-only matches (with why), with counts."""
    from codenav.graph import lookup

    return lookup.references(call.conn, call.target, args.symbol, args.path or None,
                             args.include_potential)


def render(data: dict[str, Any]) -> str:
    """verified references (file, line, enclosing symbol, how it resolved) apart from potential
    name-only matches (why each did not resolve), with counts"""
    s = data.get("summary", {})
    out = [f"{s.get('verified', 0)} verified, {s.get('potential', 0)} potential reference(s) "
           f"in {s.get('files', 0)} file(s)"]
    for v in data.get("verified", []):
        scope = f" in {v['scope']}" if v.get("scope") else ""
        out.append(f"  {loc(v)} {v['kind']}{scope} [{v.get('how', '')}]")
    if data.get("potential"):
        out.append("potential (name only):")
        for p in data["potential"]:
            scope = f" in {p['scope']}" if p.get("scope") else ""
            out.append(f"  {loc(p)} {p['kind']}{scope} -- {p.get('reason', '')}")
    return "\n".join(out)


TOOL = Tool("references", "Verified references to a symbol, and potential ones",
            ReferencesArgs, handle, render,
            cli=Cli(positional=("symbol",), flags={"include_potential": "--no-potential"},
                    also={"include_potential": ("--no-include-potential",)},
            help={"include_potential": "leave out the name-only matches"}), graph=True)
