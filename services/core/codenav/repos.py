"""Registered repositories: a root path with a name. Every indexed row belongs to one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import psycopg

from codenav.db import queries as q
from codenav.errors import InvalidRequest, NotFound

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


@dataclass(frozen=True)
class Repo:
    id: int
    name: str
    root: str
    created_at: datetime
    indexed_at: datetime | None
    indexed_commit: str | None


def _row(row: tuple) -> Repo:
    return Repo(*row)


def list_repos(conn: psycopg.Connection) -> list[Repo]:
    return [_row(r) for r in conn.execute(q.REPO_LIST).fetchall()]


def default_name(root: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", root.name).strip("-.") or "repo"
    return name[:100]


def register(conn: psycopg.Connection, root: str, name: str | None = None) -> Repo:
    """Register (or re-point) a repository. ``root`` must be absolute; the API does not
    check the directory exists, because in team mode only the workers see the disk."""
    if not root or not root.startswith("/"):
        raise InvalidRequest("root must be an absolute path", hint="pass the repository path")
    path = Path(root)
    name = name or default_name(path)
    if not _NAME.match(name):
        raise InvalidRequest(f"invalid repository name {name!r}",
                             hint="letters, digits, '.', '_' and '-' only (max 100)")
    existing = conn.execute(q.REPO_BY_ROOT, (str(path),)).fetchone()
    if existing is not None and existing[1] != name:
        return _row(existing)
    row = conn.execute(q.REPO_INSERT, (name, str(path))).fetchone()
    assert row is not None
    return _row(row)


def resolve(conn: psycopg.Connection, name: str | None) -> Repo:
    """The repository an answer is about: by name, or the only one registered."""
    if name:
        row = conn.execute(q.REPO_BY_NAME, (name,)).fetchone()
        if row is None:
            known = ", ".join(r.name for r in list_repos(conn)) or "none"
            raise NotFound(f"no repository named {name!r}",
                           hint=f"registered repositories: {known}")
        return _row(row)
    repos = list_repos(conn)
    if len(repos) == 1:
        return repos[0]
    if not repos:
        raise NotFound("no repository is registered, so nothing is indexed",
                       hint="run `codenav index PATH` to register and index one")
    names = ", ".join(r.name for r in repos)
    raise InvalidRequest("several repositories are registered; say which one",
                         hint=f"pass repo= one of: {names}")
