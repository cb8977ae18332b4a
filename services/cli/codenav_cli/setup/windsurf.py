"""Windsurf (Cascade): ``~/.codeium/windsurf/mcp_config.json`` (user level) and the rule
``.windsurf/rules/codenav.md`` in the project.

Source: docs.windsurf.com/windsurf/cascade/mcp and docs.windsurf.com/windsurf/cascade/memories.
``mcp_config.json`` holds ``{"mcpServers": {name: {"command", "args", "env"}}}`` and
interpolates ``${env:NAME}`` (and ``${file:path}``) in ``command``, ``args``, ``env``,
``serverUrl``, ``url`` and ``headers``, so the token is ``${env:CODENAV_TOKEN}``. Workspace
rules are Markdown files in ``.windsurf/rules/`` whose frontmatter ``trigger: always_on``
applies them to every request (a rule file is limited to 12,000 characters). The rule file
belongs to codenav by its name.
"""

from __future__ import annotations

from pathlib import Path

from codenav_cli.setup import files
from codenav_cli.setup.base import NAME, Context, Harness
from codenav_cli.setup.files import Workspace
from codenav_cli.setup.rules import WINDSURF_MD


class Windsurf(Harness):
    name = "windsurf"
    title = "Windsurf"

    def probes(self, ctx: Context) -> list[Path | str]:
        return ["windsurf", ctx.home / ".codeium" / "windsurf", ctx.project / ".windsurf"]

    def mcp_file(self, ctx: Context) -> Path:
        return ctx.home / ".codeium" / "windsurf" / "mcp_config.json"

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        entry = ctx.server.entry("${env:CODENAV_TOKEN}", project_level=False)
        files.json_member(ws, self.mcp_file(ctx), ["mcpServers", NAME], entry, remove)
        files.owned_file(ws, ctx.project / ".windsurf" / "rules" / f"{NAME}.md", WINDSURF_MD,
                         remove)
        return []
