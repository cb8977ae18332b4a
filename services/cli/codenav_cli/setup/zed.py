"""Zed: ``context_servers`` in the user's ``settings.json`` and codenav's rules in the
project's instructions file.

Source: zed.dev/docs/ai/mcp, zed.dev/docs/configuring-zed and zed.dev/docs/ai/instructions.
The settings file is ``~/.config/zed/settings.json`` on macOS and Linux
(``$XDG_CONFIG_HOME/zed``), ``%APPDATA%\\Zed\\settings.json`` on Windows, JSON with ``//``
comments; a custom server is ``{"context_servers": {name: {"command", "args", "env"}}}``.
Zed expands no variables there, so a team entry names CODENAV_URL only and the adapter takes
CODENAV_TOKEN from Zed's environment. For project instructions Zed reads the *first* file
that exists of ``.rules``, ``.cursorrules``, ``.windsurfrules``, ``.clinerules``,
``.github/copilot-instructions.md``, ``AGENT.md``, ``AGENTS.md``, ``CLAUDE.md``,
``GEMINI.md``: the rules go in that one, or in a new ``AGENTS.md`` when none exists.
"""

from __future__ import annotations

from pathlib import Path

from codenav_cli.setup import files
from codenav_cli.setup.base import NAME, TOKEN_VAR, Context, Harness, shared_rules
from codenav_cli.setup.files import Workspace

INSTRUCTION_FILES = (".rules", ".cursorrules", ".windsurfrules", ".clinerules",
                     ".github/copilot-instructions.md", "AGENT.md", "AGENTS.md", "CLAUDE.md",
                     "GEMINI.md")


class Zed(Harness):
    name = "zed"
    title = "Zed"
    servers_key = "context_servers"

    def folder(self, ctx: Context) -> Path:
        if ctx.platform.startswith("win"):
            return ctx.appdata / "Zed"
        return ctx.config_home / "zed"

    def probes(self, ctx: Context) -> list[Path | str]:
        return ["zed", "zeditor", self.folder(ctx), ctx.project / ".zed"]

    def mcp_file(self, ctx: Context) -> Path:
        return self.folder(ctx) / "settings.json"

    def rules_file(self, ctx: Context, ws: Workspace) -> Path | None:
        candidates = [ctx.project / name for name in INSTRUCTION_FILES]
        for path in candidates:
            if ws.exists(path):
                return path
        return ctx.project / "AGENTS.md"

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        entry = ctx.server.entry(None, project_level=False)
        files.json_member(ws, self.mcp_file(ctx), ["context_servers", NAME], entry, remove)
        rules = self.rules_file(ctx, ws)
        assert rules is not None
        notes = shared_rules(ctx, ws, rules, remove, self)
        if not remove:
            notes.append(f"rules in {ctx.show(rules)}: Zed reads the first instructions file "
                         "that exists")
        if ctx.server.team and not remove:
            notes.append(f"Zed expands no variables in settings.json, so no token is written: "
                         f"start Zed with {TOKEN_VAR} in its environment")
        return notes
