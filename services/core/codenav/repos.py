"""Registered repositories: a root path with a name, in a team. Every indexed row belongs to
one. Who may see or change which is ``codenav.access``; which roots are allowed is
``codenav.roots``."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

from codenav.access import DEFAULT_TEAM, Repo, Scope, repo_row
from codenav.db import queries as q
from codenav.errors import InvalidRequest, NotFound

__all__ = ["Repo", "check_name", "collect", "default_name", "delete", "get", "list_repos",
           "register", "team_id"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def list_repos(conn: psycopg.Connection) -> list[Repo]:
    """Every repository of every team (codenav's own services: watcher, operator)."""
    return [repo_row(r) for r in conn.execute(q.REPO_LIST).fetchall()]


def get(conn: psycopg.Connection, repo_id: int) -> Repo | None:
    row = conn.execute(q.REPO_BY_ID, (repo_id,)).fetchone()
    return repo_row(row) if row else None


def default_name(root: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.") or "repo"
    return name[:100]


def check_name(name: str) -> str:
    """A repository name: letters, digits, '.', '_' and '-' (max 100), or ``InvalidRequest``."""
    if not _NAME.match(name):
        raise InvalidRequest(f"invalid repository name {name!r}",
                             hint="letters, digits, '.', '_' and '-' only (max 100)")
    return name


def team_id(conn: psycopg.Connection, team: str = DEFAULT_TEAM) -> int:
    row = conn.execute(q.TEAM_GET, (team,)).fetchone()
    if row is None:
        raise NotFound(f"no team named {team!r}", hint="codenav team list")
    return int(row[0])


def register(conn: psycopg.Connection, root: str, name: str | None = None,
             team: int | None = None, index: bool = True) -> Repo:
    """Register (or re-point) a repository of a team (default: ``default``). ``root`` must
    be absolute; the API does not check the directory exists, because in team mode only
    the workers see the disk. A root the team has under another name is that repository."""
    if not root or not root.startswith("/"):
        raise InvalidRequest("root must be an absolute path", hint="pass the repository path")
    path = Path(root)
    name = check_name(name or default_name(path))
    owner = team if team is not None else team_id(conn)
    existing = conn.execute(q.REPO_BY_ROOT, (str(path), owner)).fetchone()
    if existing is not None and existing[1] != name:
        return repo_row(existing)
    row = conn.execute(q.REPO_INSERT, (name, str(path), owner, index)).fetchone()
    assert row is not None
    return repo_row(row)


def delete(conn: psycopg.Connection, scope: Scope) -> dict[str, int]:
    """Delete a repository and everything indexed for it (every tree and ref). Contents
    other repositories share stay; contents no file points at any more go (with their
    chunks, symbols, refs and terms), and so do texts and vectors nothing holds."""
    with conn.transaction():
        pairs = conn.execute(q.REPO_FILE_PAIRS, (scope.id,)).fetchall()
        deleted = conn.execute(q.REPO_DELETE, scope.params()).rowcount
    if not deleted:
        raise NotFound(f"no repository named {scope.name!r}")
    return collect(conn, pairs)


def collect(conn: psycopg.Connection, pairs: list[tuple[str, int]]) -> dict[str, int]:
    """After files went: release the texts of the (path, content) pairs no file holds any
    more, the contents no file points at, and the vectors no text is embedded as."""
    out = {"contents": 0, "texts": 0, "vectors": 0}
    hashes: set[bytes] = set()
    if pairs:
        rows = conn.execute(q.CHUNK_TEXTS_RELEASE, ([p for p, _ in pairs],
                                                    [c for _, c in pairs])).fetchall()
        hashes = {bytes(r[0]) for r in rows}
        out["texts"] = len(rows)
    with conn.transaction():
        got = conn.execute(q.GC_TRY_LOCK).fetchone()
        if got and got[0]:  # else an indexer is mid-run: the last one to finish collects
            row = conn.execute(q.GC_DELETE).fetchone()
            out["contents"] = int(row[0]) if row else 0
    if hashes:
        out["vectors"] = conn.execute(q.EMBED_GC, (sorted(hashes),)).rowcount
    return out
