"""Who is asking, what they may do, and which repositories they may see.

A request is made by a ``Caller``: a token's role (``read`` < ``write`` < ``admin``) in a
team, restricted to explicit repositories when the token was granted some, or the operator
(the CLI with direct database access, as in ``docker compose exec api codenav ...``).
``REQUIRED`` maps every action (each tool, route and CLI command goes through one) to the
role it needs; ``authorize`` is the one check.

A request about a repository is answered within a ``Scope``: the repository, resolved once
by name among the repositories the caller may see, and that visible set, which every SQL
statement returning repository rows takes as ``%(visible)s`` (``f.repo_id =
ANY(%(visible)s::int[])``). A repository of another team is answered exactly like one that
does not exist. Later request dimensions (a branch ``ref``, a developer's overlay) belong in
the scope too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from codenav.db import queries as q
from codenav.errors import Forbidden, InvalidRequest, NotFound

ROLES = ("read", "write", "admin")
"""In increasing order: each role can do everything the ones before it can."""
DEFAULT_TEAM = "default"

READ_TOOLS = ("search", "find_files", "grep", "outline", "read", "status", "definition",
              "references", "dependencies", "impact", "implementations", "skeleton")
REQUIRED: dict[str, str] = {
    **{tool: "read" for tool in READ_TOOLS},
    "repo.list": "read",
    "job.status": "read",
    "stats": "read",
    "metrics": "admin",
    "reindex": "write",
    "repo.register": "write",
    "repo.delete": "admin",
    "token.create": "admin",
    "token.list": "admin",
    "token.revoke": "admin",
    "team.list": "admin",
    "audit.list": "admin",
    "snapshot.export": "admin",
    "snapshot.import": "admin",
}
"""The role each action needs, for REST, MCP and the CLI alike."""


@dataclass(frozen=True)
class Caller:
    token_id: int | None
    name: str
    role: str
    team_id: int | None
    """None for the operator, who sees every team."""
    team: str
    restricted: bool = False
    """The token sees only the repositories granted to it."""
    expires_at: datetime | None = None

    @classmethod
    def operator(cls) -> Caller:
        return cls(None, "operator (database)", "admin", None, "")

    @property
    def is_operator(self) -> bool:
        return self.team_id is None

    @property
    def actor(self) -> str:
        """How the audit trail names the caller."""
        return self.name if self.token_id is None else f"{self.name} (token {self.token_id})"


def authorize(caller: Caller, action: str) -> None:
    """Raise ``Forbidden`` unless the caller's role allows ``action``."""
    needed = REQUIRED[action]
    if ROLES.index(caller.role) < ROLES.index(needed):
        article = "an" if needed == "admin" else "a"
        raise Forbidden(f"{action} needs {article} {needed} token; this one is {caller.role}",
                        hint=f"ask an admin: codenav token create --role {needed} "
                        f"--team {caller.team or DEFAULT_TEAM}")


@dataclass(frozen=True)
class Repo:
    id: int
    name: str
    root: str
    created_at: datetime
    indexed_at: datetime | None
    indexed_commit: str | None
    team: str = DEFAULT_TEAM
    index_enabled: bool = True


def repo_row(row: Any) -> Repo:
    return Repo(*row)


def visible_repos(conn: psycopg.Connection, caller: Caller) -> list[Repo]:
    """The repositories ``caller`` may see: granted ones if restricted, else its team's
    (the operator: all)."""
    if caller.is_operator:
        return [repo_row(r) for r in conn.execute(q.REPO_LIST).fetchall()]
    rows = conn.execute(q.REPOS_VISIBLE, {"token": caller.token_id, "team": caller.team_id,
                                          "restricted": caller.restricted}).fetchall()
    return [repo_row(r) for r in rows]


@dataclass(frozen=True)
class Scope:
    """One request's view of the index: the repository it is about, and every repository
    the caller may see (which each statement filters on)."""

    caller: Caller
    repo: Repo
    visible: tuple[int, ...] = field(default=())

    @property
    def id(self) -> int:
        return self.repo.id

    @property
    def name(self) -> str:
        return self.repo.name

    def params(self, **extra: Any) -> dict[str, Any]:
        """Bound parameters of a repository-scoped statement."""
        return {"repo": self.repo.id, "visible": list(self.visible), **extra}

    @classmethod
    def system(cls, repo: Repo) -> Scope:
        """The scope of codenav's own jobs (workers): one repository."""
        return cls(Caller.operator(), repo, (repo.id,))


def _matches(repo: Repo, name: str) -> bool:
    team, _slash, short = name.rpartition("/")
    return repo.name == short and (not team or repo.team == team)


def describe(repos: list[Repo], qualified: bool = False) -> str:
    return ", ".join(f"{r.team}/{r.name}" if qualified else r.name for r in repos) or "none"


def resolve(conn: psycopg.Connection, caller: Caller, name: str | None) -> Scope:
    """The scope of a request about repository ``name`` (or the only visible one). A name
    the caller may not see gets the answer a name that does not exist gets."""
    repos = visible_repos(conn, caller)
    visible = tuple(r.id for r in repos)
    qualified = len({r.team for r in repos}) > 1
    if name:
        found = [r for r in repos if _matches(r, name)]
        if len(found) == 1:
            return Scope(caller, found[0], visible)
        if not found:
            raise NotFound(f"no repository named {name!r}",
                           hint=f"registered repositories: {describe(repos, qualified)}")
        raise InvalidRequest(f"several teams have a repository named {name!r}",
                             hint=f"say which: {describe(found, True)}")
    if len(repos) == 1:
        return Scope(caller, repos[0], visible)
    if not repos:
        raise NotFound("no repository is registered, so nothing is indexed",
                       hint="run `codenav index PATH` to register and index one")
    raise InvalidRequest("several repositories are registered; say which one",
                         hint=f"pass repo= one of: {describe(repos, qualified)}")
