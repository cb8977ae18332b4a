"""The tool registry: every tool codenav serves, one module each (see ``base``).

This is the one list of tools. MCP (stdio and HTTP), REST (``POST /v1/<tool>``), the HTTP
client, the CLI subcommands, the role table and the README's tool table are made from it.
Adding a tool: a module here declaring ``TOOL``, one line below, and its test.
"""

from __future__ import annotations

from typing import Any

from codenav.errors import InvalidRequest
from codenav.tools import (
    definition,
    dependencies,
    find_files,
    grep,
    impact,
    implementations,
    outline,
    read,
    references,
    reindex,
    search,
    skeleton,
    status,
)
from codenav.tools.base import Tool
from codenav.tools.text import frame

TOOLS: dict[str, Tool] = {m.TOOL.name: m.TOOL for m in (
    search, find_files, grep, outline, read, status, reindex,
    definition, references, dependencies, impact, implementations, skeleton,
)}
TOOL_NAMES = tuple(TOOLS)

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
"""What an MCP client tells its model about codenav as a whole."""


def get(name: str) -> Tool:
    tool = TOOLS.get(name)
    if tool is None:
        raise InvalidRequest(f"unknown tool {name!r}", hint="one of: " + ", ".join(TOOLS))
    return tool


def render(name: str, data: dict[str, Any]) -> str:
    """The compact text of an answer (MCP's text channel, the CLI)."""
    tool = TOOLS.get(name)
    return frame(tool.render(data) if tool else "", data)


def roles() -> dict[str, str]:
    """The role each tool needs."""
    return {t.name: t.role for t in TOOLS.values()}


def table() -> str:
    """The README's tool table."""
    rows = ["| tool | arguments | answer |", "|---|---|---|"]
    rows += [f"| `{t.name}` | `{t.signature()}` | {t.answer} |" for t in TOOLS.values()]
    return "\n".join(rows)
