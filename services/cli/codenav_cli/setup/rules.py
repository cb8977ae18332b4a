"""The agent rules: the one text every harness's rules file carries, in its own wrapper."""

from __future__ import annotations

RULES = """\
## codenav: code navigation (MCP server `codenav`)

- Start a task with `find_files`, describing the task in words: it ranks the files that
  matter and says why each matched.
- Use `search` for code by identifier or description: it returns the exact function, method
  or class, not the whole file. `outline` shows a file's shape, `read` a line range or one
  symbol's body (`Class.method`).
- Use `grep` only for an exact string or regular expression (codenav's `grep` tool where it
  is listed, otherwise your own).
- For structure, use the graph tools: `definition` (declaration and the types it uses),
  `references` (who uses it), `impact` (what a change breaks), `dependencies` (imports and
  importers), `implementations` (classes behind an interface), `skeleton` (a directory's
  exports).
- Prefer these to reading whole files: answers carry only the code you need.
- An empty answer says why (not indexed, still indexing, no match). "No match" is not proof
  that the code is absent when files are skipped or listed as `unseen`; `status` shows what
  is indexed.
"""

CURSOR_MDC = f"""\
---
description: When and how to use the codenav MCP tools to navigate this codebase
alwaysApply: true
---
{RULES}"""

WINDSURF_MD = f"""\
---
trigger: always_on
---
{RULES}"""
