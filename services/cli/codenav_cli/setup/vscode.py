"""VS Code (GitHub Copilot agent mode): ``.vscode/mcp.json`` in the workspace and a marked
section in ``.github/copilot-instructions.md``.

Source: code.visualstudio.com/docs/copilot/reference/mcp-configuration and
code.visualstudio.com/docs/copilot/customization/custom-instructions. ``mcp.json`` holds
``{"servers": {name: {"type": "stdio", "command", "args", "env"}}, "inputs": [...]}`` (JSON
with comments); a secret is an input variable ``${input:id}`` declared in ``inputs`` as
``{"type": "promptString", "id", "description", "password": true}``: VS Code asks for it
once and keeps it in its secret storage, so the token never reaches a file.
``.github/copilot-instructions.md`` is added to every chat request.
"""

from __future__ import annotations

from pathlib import Path

from codenav_cli.setup import files
from codenav_cli.setup.base import NAME, Context, Harness, shared_rules
from codenav_cli.setup.files import Workspace

INPUT = {"type": "promptString", "id": "codenav-token",
         "description": "codenav API token (codenav token create)", "password": True}


class VSCode(Harness):
    name = "vscode"
    title = "VS Code"
    servers_key = "servers"

    def probes(self, ctx: Context) -> list[Path | str]:
        if ctx.platform == "darwin":
            user = ctx.home / "Library" / "Application Support" / "Code"
        elif ctx.platform.startswith("win"):
            user = ctx.appdata / "Code"
        else:
            user = ctx.config_home / "Code"
        return ["code", user, ctx.project / ".vscode"]

    def mcp_file(self, ctx: Context) -> Path:
        return ctx.project / ".vscode" / "mcp.json"

    def rules_file(self, ctx: Context, ws: Workspace) -> Path | None:
        return ctx.project / ".github" / "copilot-instructions.md"

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        path = self.mcp_file(ctx)
        entry = ctx.server.entry("${input:codenav-token}", first={"type": "stdio"})
        files.json_member(ws, path, ["servers", NAME], entry, remove)
        # the token input exists in team mode only (a local entry takes a stale one out)
        files.json_element(ws, path, ["inputs"], "id", INPUT, remove or not ctx.server.team)
        rules = self.rules_file(ctx, ws)
        assert rules is not None
        return shared_rules(ctx, ws, rules, remove, self)
