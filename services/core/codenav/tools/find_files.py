"""``find_files``: files ranked for a task description."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Mode, Tool


class FindFilesArgs(Args):
    query: str = Field(min_length=1, max_length=8000)
    limit: int = Field(default=7, ge=1, le=50)
    include_tests: bool = False
    path: str | None = Field(default=None, max_length=500,
                             description="path glob filter, e.g. 'src/server/**'")
    language: str | None = Field(default=None, max_length=40)
    mode: Mode = "hybrid"


def handle(call: Call, args: FindFilesArgs) -> dict[str, Any]:
    """Rank files relevant to a task description. Words are ANDed softly; [a|b] means either;
    plurals match. Each result says why it matched."""
    from codenav.db.side import Side
    from codenav.search import find

    ctx = call.host.semantic.context(call.conn, call.target, args.query, args.mode)
    with Side(call.conn, call.host.spare) as side:
        return find.find_files(call.conn, call.target, args.query, args.limit,
                               args.include_tests, args.mode, ctx, side, args.path or None,
                               args.language or None)


def render(data: dict[str, Any]) -> str:
    r"""files ranked for a task description, each with the reason it matched (`[a\|b]` = either,
    plurals fold)"""
    return "\n".join(f"{r['path']}  -- {r.get('reason', '')}" for r in data.get("results", []))


TOOL = Tool("find_files", "Files relevant to a task description", FindFilesArgs, handle, render,
            cli=Cli(positional=("query",), aliases=("find",)))
