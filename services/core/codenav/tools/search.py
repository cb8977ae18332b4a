"""``search``: code chunks matching identifiers or a description."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Mode, Tool


class SearchArgs(Args):
    query: str = Field(min_length=1, max_length=8000)
    limit: int = Field(default=10, ge=1, le=50)
    path: str | None = Field(default=None, max_length=500,
                             description="path glob filter, e.g. 'src/**/*.py'")
    language: str | None = Field(default=None, max_length=40)
    kind: str | None = Field(default=None, max_length=40,
                             description="function, method, class, interface, ...")
    exported: bool = Field(default=False, description="only exported/public declarations")
    mode: Mode = "hybrid"


def handle(call: Call, args: SearchArgs) -> dict[str, Any]:
    """Find code chunks (functions, classes, methods, blocks) matching identifiers or a
    description. Returns exact code with path and lines. mode: hybrid (default), lexical or
    semantic."""
    from codenav.db.side import Side
    from codenav.search import chunks

    ctx = call.host.semantic.context(call.conn, call.target, args.query, args.mode)
    filters = chunks.Filters(language=args.language or None, path=args.path or None,
                              kind=args.kind or None, exported=args.exported)
    with Side(call.conn, call.host.spare) as side:
        return chunks.search(call.conn, call.target, args.query, args.limit, filters,
                              args.mode, ctx, side)


def render(data: dict[str, Any]) -> str:
    """code chunks (function, method, class shell, block...) with path, lines, kind, symbol,
    score, content"""
    out = []
    for r in data.get("results", []):
        sym = f" {r['kind']} {r['symbol']}" if r.get("symbol") else f" {r.get('kind', '')}"
        if r.get("parent"):
            sym += f" (in {r['parent']})"
        flags = " [STALE]" if r.get("stale") else ""
        out.append(f"{r['path']}:{r['start_line']}-{r['end_line']}{sym}{flags}")
        out.append(r.get("content", ""))
        if r.get("truncated"):
            out.append(f"... ({r['truncated']})")
        out.append("")
    return "\n".join(out)


TOOL = Tool("search", "Code chunks matching a query", SearchArgs, handle, render,
            cli=Cli(positional=("query",)))
