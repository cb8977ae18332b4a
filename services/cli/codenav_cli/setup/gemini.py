"""Gemini CLI: ``.gemini/settings.json`` in the project and a marked section in
``GEMINI.md``.

Source: geminicli.com/docs/tools/mcp-server and geminicli.com/docs/cli/configuration. The
project settings file (``~/.gemini/settings.json`` for the user) holds ``{"mcpServers": {name:
{"command", "args", "env", "cwd", "timeout", "trust"}}}``; string values expand ``$VAR`` and
``${VAR}``, and Gemini CLI keeps variables that look like secrets out of a server's
environment unless ``env`` names them, so the token is ``"CODENAV_TOKEN": "${CODENAV_TOKEN}"``.
``GEMINI.md`` at the project root is its context (instructions) file.
"""

from __future__ import annotations

from pathlib import Path

from codenav_cli.setup import files
from codenav_cli.setup.base import NAME, Context, Harness, shared_rules
from codenav_cli.setup.files import Workspace


class Gemini(Harness):
    name = "gemini"
    title = "Gemini CLI"

    own = ("gemini", ".gemini")
    project_mcp = ".gemini/settings.json"

    def rules_file(self, ctx: Context, ws: Workspace) -> Path | None:
        return ctx.project / "GEMINI.md"

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        entry = ctx.server.entry("${CODENAV_TOKEN}")
        files.json_member(ws, self.mcp_file(ctx), ["mcpServers", NAME], entry, remove)
        rules = self.rules_file(ctx, ws)
        assert rules is not None
        return shared_rules(ctx, ws, rules, remove, self)
