"""Claude Desktop: ``claude_desktop_config.json`` in the app's folder (user level).

Source: modelcontextprotocol.io/quickstart/user and support.claude.com (Claude Desktop MCP):
``~/Library/Application Support/Claude/`` on macOS, ``%APPDATA%\\Claude\\`` on Windows
(``~/.config/Claude/`` for the Linux builds), ``{"mcpServers": {name: {"command", "args",
"env"}}}``. The file expands no variables, so a team entry names CODENAV_URL only and the
adapter takes CODENAV_TOKEN from the environment Claude Desktop starts it with. Claude Desktop
reads no rules file: the server's MCP ``instructions`` are its rules.
"""

from __future__ import annotations

from pathlib import Path

from codenav_cli.setup import files
from codenav_cli.setup.base import NAME, TOKEN_VAR, Context, Harness
from codenav_cli.setup.files import Workspace


class ClaudeDesktop(Harness):
    name = "claude-desktop"
    title = "Claude Desktop"

    def folder(self, ctx: Context) -> Path:
        if ctx.platform == "darwin":
            return ctx.home / "Library" / "Application Support" / "Claude"
        if ctx.platform.startswith("win"):
            return ctx.appdata / "Claude"
        return ctx.config_home / "Claude"

    def probes(self, ctx: Context) -> list[Path | str]:
        return [self.folder(ctx)]

    def mcp_file(self, ctx: Context) -> Path:
        return self.folder(ctx) / "claude_desktop_config.json"

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        entry = ctx.server.entry(None, project_level=False)
        files.json_member(ws, self.mcp_file(ctx), ["mcpServers", NAME], entry, remove)
        notes = []
        if ctx.server.team and not remove:
            notes.append(f"Claude Desktop expands no variables in its config, so no token is "
                         f"written: start it with {TOKEN_VAR} in its environment (macOS: "
                         f"`launchctl setenv {TOKEN_VAR} ...`)")
        return notes
