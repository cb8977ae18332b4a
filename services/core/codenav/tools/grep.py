"""``grep``: lines of the indexed files matching a literal or an RE2 regex."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool


class GrepArgs(Args):
    pattern: str = Field(min_length=1, max_length=1000,
                         description="a literal, or an RE2 regex with regex=true")
    regex: bool = False
    path: str | None = Field(default=None, max_length=500, description="path glob filter")
    language: str | None = Field(default=None, max_length=40)
    case_sensitive: bool = False
    context: int = Field(default=0, ge=0, le=10, description="lines before and after")
    limit: int = Field(default=50, ge=1, le=500, description="matching lines shown")


def handle(call: Call, args: GrepArgs) -> dict[str, Any]:
    """Exact text search over the indexed files: a literal (default) or an RE2 regex
    (regex=true), within one line; path glob and language filters, context lines. Says
    when the limit cut results and how many matches exist."""
    from codenav.search import grep

    return grep.grep(call.conn, call.target, args.pattern, regex=args.regex,
                     path=args.path or None, language=args.language or None,
                     case_sensitive=args.case_sensitive, context=args.context,
                     limit=args.limit, timeout_ms=call.host.settings.grep_timeout_ms)


def render(data: dict[str, Any]) -> str:
    """matching lines (path, line, column, text, context lines) of a literal or an RE2
    regex, grouped by file; how many lines match in all, whether that count is exact, and
    whether the limit or the time budget cut it"""
    out = []  # grep's own format: path:line:text for a match, path-line-text for context
    for f in data.get("results", []):
        last = 0
        for m in f.get("matches", []):
            before = m.get("before", [])
            first = m["line"] - len(before)
            if last and first > last + 1 and (before or m.get("after") is not None):
                out.append("--")
            out.extend(f"{f['path']}-{first + i}-{text}" for i, text in enumerate(before))
            out.append(f"{f['path']}:{m['line']}:{m['text']}")
            out.extend(f"{f['path']}-{m['line'] + 1 + i}-{text}"
                       for i, text in enumerate(m.get("after", [])))
            last = m["line"] + len(m.get("after", []))
    total = data.get("matches_total", 0)
    exact = "" if data.get("total_exact", True) else "at least "
    out.append(f"[{data.get('matches_shown', 0)} shown of {exact}{total} matching lines in "
               f"{data.get('files_matched', 0)} files; {data.get('files_searched', 0)} of "
               f"{data.get('files_candidate', 0)} candidate files searched; index: "
               f"{data.get('accelerated', '')}]")
    if data.get("capped"):
        out.append(f"(capped: {data['capped']['message']})")
    if data.get("timed_out"):
        out.append(f"(timed out: {data['timed_out']['message']})")
    return "\n".join(out)


TOOL = Tool("grep", "Lines matching a literal or an RE2 regex", GrepArgs, handle, render,
            cli=Cli(positional=("pattern",), also={"case_sensitive": ("-s",),
                                                   "context": ("-C",)},
                    off={"case_sensitive": ("-i", "--ignore-case")},
                    help={"regex": "PATTERN is an RE2 regular expression",
                          "path": "path glob filter, e.g. 'src/**/*.java'",
                          "case_sensitive": "match case exactly (default: ignore case)",
                          "case_sensitive:off": "ignore case (the default)",
                          "context": "lines before and after each match"}))
