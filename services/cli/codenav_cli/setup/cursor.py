"""Cursor: ``.cursor/mcp.json`` in the project and the rule ``.cursor/rules/codenav.mdc``.

Source: cursor.com/docs/context/mcp and cursor.com/docs/context/rules. ``mcp.json`` holds
``{"mcpServers": {name: {"command", "args", "env"}}}``; ``${env:NAME}`` is interpolated in
``command``, ``args``, ``env``, ``url`` and ``headers``, so the token is
``${env:CODENAV_TOKEN}``. A project rule is an ``.mdc`` file under ``.cursor/rules/`` with
frontmatter ``description``, ``globs`` and ``alwaysApply``; ``alwaysApply: true`` puts it in
every request. The rule file belongs to codenav by its name.
"""

from __future__ import annotations

from codenav_cli.setup import files
from codenav_cli.setup.base import NAME, Context, Harness
from codenav_cli.setup.files import Workspace
from codenav_cli.setup.rules import CURSOR_MDC


class Cursor(Harness):
    name = "cursor"
    title = "Cursor"

    own = ("cursor", ".cursor")
    project_mcp = ".cursor/mcp.json"

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        entry = ctx.server.entry("${env:CODENAV_TOKEN}")
        files.json_member(ws, self.mcp_file(ctx), ["mcpServers", NAME], entry, remove)
        rule = ctx.project / ".cursor" / "rules" / f"{NAME}.mdc"
        files.owned_file(ws, rule, CURSOR_MDC, remove)
        return []
