"""What a tool is. Each module of ``codenav.tools`` declares one ``Tool``: its name, its
description, its argument model (types, defaults, bounds and docs, in one place), the
handler that answers it on the server, the text renderer and its CLI flags. The stdio
adapter, MCP over HTTP, the REST routes, the HTTP client, the CLI and the README's tool
table are all made from these declarations.

This module and the tool modules stay light: the stdio adapter imports them with nothing but
``mcp``, ``httpx`` and ``pydantic`` installed, so a handler imports the engine modules it
runs (psycopg, redis, tree-sitter behind them) when it is called, on the server.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import Field

from codenav.validate import StrictModel

if TYPE_CHECKING:
    import psycopg
    import redis

    from codenav.access import Caller, Scope
    from codenav.config import Settings
    from codenav.search.semantic import QueryEmbedder
    from codenav.usage import UsageBuffer

Mode = Literal["hybrid", "lexical", "semantic"]
COMMON = ("repo", "ref")
"""The arguments every tool takes (``Args``), listed last."""
"""How search and find_files rank: fused, lexical only, or vectors only."""


class Args(StrictModel):
    """The arguments every tool takes, declared once: which repository the call is about,
    and at which ref; both are resolved into the ``Call``'s scope before a handler runs."""

    repo: str | None = Field(default=None, max_length=201,
                             description="repository name (default: the only one); "
                             "team/name when teams share a name")
    ref: str | None = Field(default=None, max_length=255,
                            description="branch, tag or commit (default: the repository's "
                            "default branch, or its working tree)")


class Host(Protocol):
    """The server's long-lived clients a handler may use (the API's ``Services``)."""

    settings: Settings
    redis: redis.Redis
    semantic: QueryEmbedder
    usage: UsageBuffer

    def spare(self) -> AbstractContextManager[psycopg.Connection | None]:
        """A second pooled connection while one is free, else None (``codenav.db.side``)."""


@dataclass
class Call:
    """One call of a tool on the server: the caller, the repository it resolved to (within
    what the caller may see) and a pooled connection."""

    conn: psycopg.Connection
    caller: Caller
    scope: Scope | None
    """None only for a tool declared with ``scoped=False`` (``status`` spans repositories)."""
    host: Host

    @property
    def target(self) -> Scope:
        assert self.scope is not None, "an unscoped tool asked for its scope"
        return self.scope


@dataclass(frozen=True)
class Cli:
    """How the ``codenav`` subcommand of a tool reads its arguments: every field of the
    model is a ``--flag`` named like it (``include_tests``: ``--include-tests``), except
    the positional ones; ``flags`` renames a flag (a boolean defaulting to true gets
    ``--no-...``)."""

    positional: tuple[str, ...] = ()
    flags: dict[str, str] = field(default_factory=dict)
    also: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """More option strings for a field's flag (a short form: ``-C`` for ``--context``)."""
    off: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Option strings that set a boolean field false (``-i`` for ``case_sensitive``); its
    help is ``help["<field>:off"]``."""
    aliases: tuple[str, ...] = ()
    help: dict[str, str] = field(default_factory=dict)
    """Help for a flag, when the field's description is not what a terminal user needs."""


Handler = Callable[[Call, Any], dict[str, Any]]


@dataclass(frozen=True)
class Tool:
    """A tool: its ``handler``'s docstring is the description MCP gives the model, its
    ``render``'s docstring what the README's table says the answer holds."""

    name: str
    summary: str
    """One line: the REST summary, the CLI's help."""
    args: type[Args]
    handler: Handler
    render: Callable[[dict[str, Any]], str]
    role: str = "read"
    """The role a token needs (``codenav.roles.REQUIRED`` takes it from here)."""
    cli: Cli = Cli()
    scoped: bool = True
    """The call is about one repository, resolved before the handler runs."""
    fresh: bool = True
    """The answer carries freshness signals (stale results, runs in progress)."""
    counted: bool = True
    """The answer is added to the usage figures (``codenav stats``)."""
    graph: bool = False
    """The answer reads the code graph: with an overlay whose graph is being rebuilt, the
    call waits for it (up to ``CODENAV_OVERLAY_WAIT_S``)."""

    @property
    def description(self) -> str:
        """What the model reads in MCP's tool list."""
        return " ".join((self.handler.__doc__ or "").split())

    @property
    def answer(self) -> str:
        """What the answer holds (the README's tool table)."""
        return " ".join((self.render.__doc__ or "").split())

    def signature(self) -> str:
        """The arguments as the README writes them: ``query, limit=10, ..., repo=None``."""
        fields = self.args.model_fields
        names = [n for n in fields if n not in COMMON] + list(COMMON)
        parts = []
        for name in names:
            info = fields[name]
            if info.is_required():
                parts.append(name)
            else:
                default = info.default
                parts.append(f"{name}=" + (f'"{default}"' if isinstance(default, str)
                                           else repr(default)))
        return ", ".join(parts)
