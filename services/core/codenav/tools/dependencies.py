"""``dependencies``: a file's imports and importers."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool


class DependenciesArgs(Args):
    path: str = Field(min_length=1, max_length=1000)
    direction: Literal["imports", "importers", "both"] = "both"
    depth: int = Field(default=1, ge=1, le=3)


def handle(call: Call, args: DependenciesArgs) -> dict[str, Any]:
    """A file's imports and importers to depth 1-3 (direction imports, importers or both), each
    file with language, exports and importer count; plus its external imports."""
    from codenav.graph import impact

    return impact.dependencies(call.conn, call.target, args.path, args.direction, args.depth)


def _files(title: str, files: list[dict[str, Any]]) -> list[str]:
    if not files:
        return []
    out = [f"{title}:"]
    for f in files:
        exports = ", ".join(f.get("exports", [])[:5])
        extra = f" exports {exports}" if exports else ""
        via = f" via {f['via']}" if f.get("via") and f.get("via") != "reference" else \
            (" (reference, no import)" if f.get("via") == "reference" else "")
        out.append(f"  {'  ' * (f.get('depth', 1) - 1)}{f['path']} ({f.get('language', '')}, "
                   f"imported by {f.get('imported_by', 0)}){via}{extra}")
    return out


def render(data: dict[str, Any]) -> str:
    """imports and importers to depth 1-3, each file with language, first exports, importer
    count; external imports"""
    out = [f"{data.get('path')} ({data.get('language')})"]
    out += _files("imports", data.get("imports", []))
    out += _files("imported by", data.get("importers", []))
    if data.get("external"):
        out.append("external: " + ", ".join(data["external"][:30]))
    return "\n".join(out)


TOOL = Tool("dependencies", "A file's imports and importers", DependenciesArgs, handle, render,
            cli=Cli(positional=("path",)), graph=True)
