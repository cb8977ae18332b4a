"""The MCP tool surface, defined once: names, arguments, descriptions, rendering.

The stdio adapter registers these tools with a backend that calls the API over HTTP; the
API registers the same tools at ``/mcp`` with a backend that runs them in-process. Names and
arguments are a public contract: change them only by adding optional arguments.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, TextContent

from codenav import render
from codenav.errors import CodenavError, UserError

INSTRUCTIONS = (
    "codenav is a shared code index. Prefer find_files to locate files for a task, search to "
    "get exact code (functions, classes) for identifiers or descriptions, outline to see a "
    "file's shape, grep for exact strings or regexes, and read for precise line ranges or "
    "a symbol's body, instead of shell grep or reading whole files. For structure, "
    "definition gives a symbol's declaration and "
    "the types it uses, references who uses it, impact what a change breaks, dependencies "
    "a file's imports and importers, implementations the classes behind an interface, and "
    "skeleton a directory's exports. An empty answer says why it is empty; 'no match' is "
    "not proof that code is absent if files are skipped or not indexed (see status and each "
    "answer's 'unseen')."
)

DESCRIPTIONS = {
    "search": "Find code chunks (functions, classes, methods, blocks) matching identifiers "
              "or a description. Returns exact code with path and lines. mode: hybrid "
              "(default), lexical or semantic.",
    "find_files": "Rank files relevant to a task description. Words are ANDed softly; "
                  "[a|b] means either; plurals match. Each result says why it matched.",
    "grep": "Exact text search over the indexed files: a literal (default) or an RE2 "
            "regex (regex=true), within one line; path glob and language filters, "
            "context lines. Says when the limit cut results and how many matches exist.",
    "outline": "A file's symbols with line ranges (methods nested under classes) and its "
               "imports, without the code.",
    "read": "Code from the index by path and line range, or by symbol name "
            "(e.g. 'Class.method').",
    "status": "What is indexed: files, languages, skipped files with reasons, last run.",
    "reindex": "Ask the index to refresh: whole repo, or just the given paths.",
    "definition": "A symbol's declaration(s): signature, doc, location, and the signatures "
                  "of the types its signature mentions, resolved through the file's imports.",
    "references": "Who uses a symbol: verified references (file, line, enclosing symbol, "
                  "how it resolved) apart from potential name-only matches (with why), "
                  "with counts.",
    "dependencies": "A file's imports and importers to depth 1-3 (direction imports, "
                    "importers or both), each file with language, exports and importer "
                    "count; plus its external imports.",
    "impact": "Everything that transitively depends on a symbol or a file (calls, type "
              "uses, extends, implements, overrides, imports): chains, affected files, and "
              "re-exports to update. The blast radius of a change or a rename.",
    "implementations": "Classes that implement an interface or extend a class (directly or "
                       "through others), with their methods.",
    "skeleton": "Exported declarations grouped by file for a directory (depth limits the "
                "subdirectories), to orient in a subsystem without opening files.",
}


class Backend(Protocol):
    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]: ...


def _result(tool: str, data: dict[str, Any]) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=render.render(tool, data))],
                          structured_content=data)


def _clean(args: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in args.items() if v is not None}


def register_tools(server: MCPServer, backend: Backend,
                   default_repo: Callable[[], str | None] = lambda: None) -> None:
    """Add the codenav tools to ``server``; each one forwards to ``backend``."""

    async def run(tool: str, args: dict[str, Any]) -> CallToolResult:
        args = _clean(args)
        if not args.get("repo") and default_repo():
            args["repo"] = default_repo()
        try:
            data = await backend.call(tool, args)
        except UserError as exc:  # the model can fix these: bad query, unknown path
            raise ToolError(f"{exc.message}" + (f" ({exc.hint})" if exc.hint else "")) from None
        except CodenavError as exc:  # the model cannot: API or database unreachable
            raise MCPError(code=-32603, message=exc.message +
                           (f" ({exc.hint})" if exc.hint else "")) from None
        return _result(tool, data)

    def tool(name: str) -> Callable[[Callable[..., Awaitable[CallToolResult]]],
                                    Callable[..., Awaitable[CallToolResult]]]:
        return server.tool(name=name, description=DESCRIPTIONS[name])

    @tool("search")
    async def search(query: str, limit: int = 10, path: str | None = None,
                     language: str | None = None, kind: str | None = None,
                     exported: bool = False, repo: str | None = None,
                     mode: str = "hybrid") -> CallToolResult:
        return await run("search", {"query": query, "limit": limit, "path": path,
                                    "language": language, "kind": kind,
                                    "exported": exported or None, "repo": repo,
                                    "mode": mode})

    @tool("find_files")
    async def find_files(query: str, limit: int = 7, include_tests: bool = False,
                         repo: str | None = None, mode: str = "hybrid") -> CallToolResult:
        return await run("find_files", {"query": query, "limit": limit,
                                        "include_tests": include_tests, "repo": repo,
                                        "mode": mode})

    @tool("grep")
    async def grep(pattern: str, regex: bool = False, path: str | None = None,
                   language: str | None = None, case_sensitive: bool = False,
                   context: int = 0, limit: int = 50,
                   repo: str | None = None) -> CallToolResult:
        return await run("grep", {"pattern": pattern, "regex": regex, "path": path,
                                  "language": language, "case_sensitive": case_sensitive,
                                  "context": context, "limit": limit, "repo": repo})

    @tool("outline")
    async def outline(path: str, repo: str | None = None) -> CallToolResult:
        return await run("outline", {"path": path, "repo": repo})

    @tool("read")
    async def read(path: str | None = None, start_line: int | None = None,
                   end_line: int | None = None, symbol: str | None = None,
                   repo: str | None = None) -> CallToolResult:
        return await run("read", {"path": path, "start_line": start_line,
                                  "end_line": end_line, "symbol": symbol, "repo": repo})

    @tool("status")
    async def status(repo: str | None = None) -> CallToolResult:
        return await run("status", {"repo": repo})

    @tool("reindex")
    async def reindex(paths: list[str] | None = None, repo: str | None = None) -> CallToolResult:
        return await run("reindex", {"paths": paths, "repo": repo})

    @tool("definition")
    async def definition(symbol: str, path: str | None = None,
                         repo: str | None = None) -> CallToolResult:
        return await run("definition", {"symbol": symbol, "path": path, "repo": repo})

    @tool("references")
    async def references(symbol: str, path: str | None = None, include_potential: bool = True,
                         repo: str | None = None) -> CallToolResult:
        return await run("references", {"symbol": symbol, "path": path,
                                        "include_potential": include_potential, "repo": repo})

    @tool("dependencies")
    async def dependencies(path: str, direction: str = "both", depth: int = 1,
                           repo: str | None = None) -> CallToolResult:
        return await run("dependencies", {"path": path, "direction": direction,
                                          "depth": depth, "repo": repo})

    @tool("impact")
    async def impact(symbol_or_path: str, depth: int = 3,
                     repo: str | None = None) -> CallToolResult:
        return await run("impact", {"symbol_or_path": symbol_or_path, "depth": depth,
                                    "repo": repo})

    @tool("implementations")
    async def implementations(symbol: str, repo: str | None = None) -> CallToolResult:
        return await run("implementations", {"symbol": symbol, "repo": repo})

    @tool("skeleton")
    async def skeleton(path: str | None = None, depth: int | None = None,
                       repo: str | None = None) -> CallToolResult:
        return await run("skeleton", {"path": path, "depth": depth, "repo": repo})

    del search, find_files, grep, outline, read, status, reindex
    del definition, references, dependencies, impact, implementations, skeleton


TOOL_NAMES = tuple(DESCRIPTIONS)
