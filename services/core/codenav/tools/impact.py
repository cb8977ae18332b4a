"""``impact``: everything that transitively depends on a symbol or a file."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool


class ImpactArgs(Args):
    symbol_or_path: str = Field(min_length=1, max_length=1000)
    depth: int = Field(default=3, ge=1, le=10)


def handle(call: Call, args: ImpactArgs) -> dict[str, Any]:
    """Everything that transitively depends on a symbol or a file (calls, type uses, extends,
    implements, overrides, imports): chains, affected files, and re-exports to update. The
    blast radius of a change or a rename."""
    from codenav.graph import impact

    return impact.impact(call.conn, call.target, args.symbol_or_path, args.depth)


def render(data: dict[str, Any]) -> str:
    """everything that transitively depends on it (calls, type uses, extends, implements,
    overrides, imports), the chains, the affected files, and re-exports to update"""
    s = data.get("summary", {})
    if data.get("target_kind") == "file":
        out = [f"{s.get('files', 0)} file(s) depend on {data.get('target')}"]
        out += [f"  {'  ' * (f['depth'] - 1)}{f['path']} ({f['via']})"
                for f in data.get("files", [])]
    else:
        out = [f"{s.get('dependents', 0)} dependent(s) in {s.get('files', 0)} file(s) of "
               f"{data.get('target')}: " + ", ".join(f"{k} {v}" for k, v in
                                                    s.get("by_relation", {}).items())]
        for d in data.get("dependents", []):
            name = d["qualname"] or "(file level)"
            out.append(f"  {'  ' * (d['depth'] - 1)}{name} {d['relation']} {d['depends_on']} "
                       f"({d['path']}:{d['line']})")
        if data.get("reexports"):
            out.append("re-exported by: " + ", ".join(f"{r['path']}:{r['line']}"
                                                      for r in data["reexports"]))
    if data.get("chains"):
        out.append("chains:")
        out += [f"  {c}" for c in data["chains"][:10]]
    return "\n".join(out)


TOOL = Tool("impact", "What transitively depends on a symbol or file", ImpactArgs, handle, render,
            cli=Cli(positional=("symbol_or_path",)), graph=True)
