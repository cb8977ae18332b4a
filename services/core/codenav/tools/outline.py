"""``outline``: a file's symbols and imports, without the code."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool


class OutlineArgs(Args):
    path: str = Field(min_length=1, max_length=1000)


def handle(call: Call, args: OutlineArgs) -> dict[str, Any]:
    """A file's symbols with line ranges (methods nested under classes) and its imports,
    without the code."""
    from codenav import navigate

    return navigate.outline(call.conn, call.target, args.path)


def _nodes(nodes: list[dict[str, Any]], depth: int, out: list[str]) -> None:
    for n in nodes:
        exp = " *" if n.get("exported") else ""
        bases = f" : {', '.join(n['bases'])}" if n.get("bases") else ""
        out.append(f"{'  ' * depth}{n['kind']} {n['name']}{bases} "
                   f"[{n['start_line']}-{n['end_line']}]{exp}")
        _nodes(n.get("children", []), depth + 1, out)


def render(data: dict[str, Any]) -> str:
    """the file's symbols with line ranges, methods nested under classes, and its imports"""
    out = [f"{data.get('path')} ({data.get('language')}, {data.get('lines')} lines)"]
    _nodes(data.get("symbols", []), 1, out)
    if data.get("imports"):
        out.append("imports: " + ", ".join(data["imports"][:30]))
    return "\n".join(out)


TOOL = Tool("outline", "A file's symbols and imports", OutlineArgs, handle, render,
            cli=Cli(positional=("path",)))
