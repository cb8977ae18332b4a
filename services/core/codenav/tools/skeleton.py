"""``skeleton``: a directory's exported declarations, by file."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool


class SkeletonArgs(Args):
    path: str | None = Field(default=None, max_length=1000, description="a directory")
    depth: int | None = Field(default=None, ge=0, le=50, description="subdirectory levels")


def handle(call: Call, args: SkeletonArgs) -> dict[str, Any]:
    """Exported declarations grouped by file for a directory (depth limits the subdirectories),
    to orient in a subsystem without opening files."""
    from codenav.graph import skeleton

    return skeleton.skeleton(call.conn, call.target, args.path or None, args.depth)


def render(data: dict[str, Any]) -> str:
    """exported declarations grouped by file for a directory"""
    out = []
    for f in data.get("files", []):
        names = ", ".join(e["name"] for e in f.get("exports", []))
        more = f" (+{f['exports_total'] - len(f['exports'])})" if f.get("exports_total") else ""
        out.append(f"{f['path']}: {names}{more}")
    return "\n".join(out)


TOOL = Tool("skeleton", "Exported declarations of a directory, by file",
            SkeletonArgs, handle, render, cli=Cli(positional=("path",)), graph=True)
