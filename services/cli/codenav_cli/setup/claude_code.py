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

from pathlib import Path

from codenav_cli.setup import files
from codenav_cli.setup.base import NAME, Context, Harness, shared_rules
from codenav_cli.setup.files import Workspace


class ClaudeCode(Harness):
    name = "claude-code"
    title = "Claude Code"

    own = ("claude", ".claude")
    project_mcp = ".mcp.json"

    def rules_file(self, ctx: Context, ws: Workspace) -> Path | None:
        return ctx.project / "CLAUDE.md"

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        entry = ctx.server.entry("${CODENAV_TOKEN}", first={"type": "stdio"})
        files.json_member(ws, self.mcp_file(ctx), ["mcpServers", NAME], entry, remove)
        rules = self.rules_file(ctx, ws)
        assert rules is not None
        return shared_rules(ctx, ws, rules, remove, self)
