"""Claude Code: ``.mcp.json`` at the project root (project scope) and a marked section in
``CLAUDE.md``.

Source: code.claude.com/docs/en/mcp. ``.mcp.json`` holds ``{"mcpServers": {name: {"type":
"stdio", "command", "args", "env"}}}``; ``${VAR}`` and ``${VAR:-default}`` are expanded in
``command``, ``args``, ``env``, ``url`` and ``headers``, so the token is ``${CODENAV_TOKEN}``.
``claude mcp add --scope project`` writes this same file; setup writes it itself, so that
``--dry-run``, re-runs and ``--remove`` touch exactly one member. Claude Code reads
``CLAUDE.md`` at the project root as its instructions.
"""

from __future__ import annotations

from codenav_cli.setup.base import Harness


class ClaudeCode(Harness):
    name = "claude-code"
    title = "Claude Code"

    own = ("claude", ".claude")
    project_mcp = ".mcp.json"

    rules_md = "CLAUDE.md"
    entry_first = {"type": "stdio"}
