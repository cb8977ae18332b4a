"""``read``: exact code from the index, by lines or by symbol."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool


class ReadArgs(Args):
    path: str | None = Field(default=None, max_length=1000)
    start_line: int | None = Field(default=None, ge=1)
    end_line: int | None = Field(default=None, ge=1)
    symbol: str | None = Field(default=None, max_length=500)


def handle(call: Call, args: ReadArgs) -> dict[str, Any]:
    """Code from the index by path and line range, or by symbol name (e.g. 'Class.method')."""
    from codenav import navigate

    return navigate.read(call.conn, call.target, args.path or None, args.start_line,
                         args.end_line, args.symbol or None)


def render(data: dict[str, Any]) -> str:
    """exact code from the index by lines or by symbol (`Class.method`)"""
    head = f"{data.get('path')}:{data.get('start_line')}-{data.get('end_line')} " \
           f"of {data.get('total_lines')}"
    tail = f"\n({data['truncated']})" if data.get("truncated") else ""
    redacted = data.get("redacted")
    if redacted:
        tail += f"\n(secrets redacted on lines {', '.join(map(str, redacted['lines']))})"
    return f"{head}\n{data.get('content', '')}{tail}"


TOOL = Tool("read", "Code by path and lines, or by symbol", ReadArgs, handle, render,
            cli=Cli(positional=("path",), also={"start_line": ("--start",),
                                                "end_line": ("--end",)}))
