"""What every harness writer shares: the server to launch, where things are on this
machine, and the small protocol a writer follows (detect, plan, is it configured)."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from codenav_cli.setup import blocks, files
from codenav_cli.setup.files import Workspace
from codenav_cli.setup.rules import RULES

NAME = "codenav"
"""The server's name in every harness's config: the entry setup owns."""
TOKEN_VAR = "CODENAV_TOKEN"
MARKDOWN = blocks.Style.markdown()


@dataclass(frozen=True)
class Server:
    """The stdio MCP server entry: ``codenav mcp`` by its absolute path.

    Local stack: ``env`` holds at most CODENAV_HOME (when not the default) and CODENAV_REPO;
    the adapter finds the stack through ``stack.json``. Team server: ``env`` holds
    CODENAV_URL, and ``team`` asks each writer for its harness's reference to the token
    variable. The token's value is never written anywhere."""

    command: str
    env: dict[str, str] = field(default_factory=dict)
    team: bool = False
    args: tuple[str, ...] = ("mcp",)

    def entry(self, token_ref: str | None, project_level: bool = True,
              first: dict[str, Any] | None = None) -> dict[str, Any]:
        env = {k: v for k, v in self.env.items() if project_level or k != "CODENAV_REPO"}
        if self.team and token_ref:
            env[TOKEN_VAR] = token_ref
        entry: dict[str, Any] = dict(first or {})
        entry.update({"command": self.command, "args": list(self.args)})
        if env:
            entry["env"] = env
        return entry


@dataclass(frozen=True)
class Context:
    project: Path
    home: Path
    env: Mapping[str, str]
    platform: str
    server: Server

    def which(self, name: str) -> str | None:
        return shutil.which(name, path=self.env.get("PATH", ""))

    @property
    def config_home(self) -> Path:
        """``$XDG_CONFIG_HOME`` or ``~/.config``."""
        xdg = self.env.get("XDG_CONFIG_HOME", "")
        return Path(xdg) if xdg else self.home / ".config"

    @property
    def appdata(self) -> Path:
        """``%APPDATA%`` on Windows."""
        return Path(self.env.get("APPDATA") or self.home / "AppData" / "Roaming")

    def show(self, path: Path) -> str:
        """A path as the user reads it: relative to the project, else from ``~``."""
        for base, prefix in ((self.project, ""), (self.home, "~/")):
            try:
                return prefix + str(path.relative_to(base))
            except ValueError:
                continue
        return str(path)


class Harness:
    """One agent harness. Subclasses name it, say how to find it, and plan its edits."""

    name: ClassVar[str]
    title: ClassVar[str]
    servers_key: ClassVar[str] = "mcpServers"
    """The JSON member of its MCP file that holds the servers, codenav's among them."""

    own: ClassVar[tuple[str, str] | None] = None
    """The command and the dot folder of its own, for a harness that has both
    (``dot_folder``): its probes."""
    project_mcp: ClassVar[str | None] = None
    """Its MCP file, relative to the project, for a harness configured per project."""

    def probes(self, ctx: Context) -> list[Path | str]:
        """Directories (Path) and executables (str) whose presence means it is installed."""
        if self.own is None:
            raise NotImplementedError
        return dot_folder(ctx, *self.own)

    def mcp_file(self, ctx: Context) -> Path:
        """The file holding its MCP entries."""
        if self.project_mcp is None:
            raise NotImplementedError
        return ctx.project / self.project_mcp

    def detect(self, ctx: Context) -> str | None:
        """What shows it is here, or None."""
        for probe in self.probes(ctx):
            if isinstance(probe, Path):
                if probe.is_dir():
                    return f"{ctx.show(probe)} exists"
            elif ctx.which(probe):
                return f"`{probe}` is on PATH"
        return None

    def looked_for(self, ctx: Context) -> str:
        parts = [ctx.show(p) if isinstance(p, Path) else f"`{p}` on PATH"
                 for p in self.probes(ctx)]
        return "no " + ", no ".join(parts)

    entry_first: ClassVar[dict[str, str] | None] = None
    """Members its MCP entry starts with (``{"type": "stdio"}`` where the harness wants it)."""

    def plan(self, ctx: Context, ws: Workspace, remove: bool) -> list[str]:
        """Set (or remove) the MCP entry and the rules on ``ws``; returns notes to print.
        Unless a harness says otherwise: the entry, naming the token as
        ``${CODENAV_TOKEN}``, in its MCP file, and the rules block in its shared Markdown
        file (``rules_md``)."""
        if self.rules_md is None:
            raise NotImplementedError
        entry = ctx.server.entry("${CODENAV_TOKEN}", first=self.entry_first)
        files.json_member(ws, self.mcp_file(ctx), [self.servers_key, NAME], entry, remove)
        rules = self.rules_file(ctx, ws)
        assert rules is not None
        return shared_rules(ctx, ws, rules, remove, self)

    def configured(self, ctx: Context, ws: Workspace) -> bool:
        """Whether its MCP config holds codenav's entry (in the planned state)."""
        return files.json_has(ws, self.mcp_file(ctx), [self.servers_key, NAME])

    rules_md: ClassVar[str | None] = None
    """Its Markdown rules file in the project, when it shares one with others."""

    def rules_file(self, ctx: Context, ws: Workspace) -> Path | None:
        """The Markdown file holding its rules block, when it shares one with others."""
        return ctx.project / self.rules_md if self.rules_md else None


def dot_folder(ctx: Context, command: str, folder: str) -> list[Path | str]:
    """The probes of a harness with a command and a folder of its own, in the home and in
    the project (``claude``, ``~/.claude``, ``.claude``)."""
    return [command, ctx.home / folder, ctx.project / folder]


def shared_rules(ctx: Context, ws: Workspace, path: Path, remove: bool,
                 harness: Harness) -> list[str]:
    """The rules block in a Markdown file several harnesses may read (CLAUDE.md, AGENTS.md):
    on removal it stays while another configured harness still reads that file."""
    from codenav_cli.setup.registry import HARNESSES

    if remove:
        users = [h.title for h in HARNESSES
                 if h is not harness and h.rules_file(ctx, ws) == path and h.configured(ctx, ws)]
        if users and files.has_block(ws, path, MARKDOWN):
            return [f"kept the rules in {ctx.show(path)}: {', '.join(users)} reads them too"]
    files.text_block(ws, path, RULES, MARKDOWN, remove)
    return []
