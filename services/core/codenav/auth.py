"""API tokens: random secrets shown once, stored only as SHA-256 hashes, each with a role,
a team, optional repository grants and an optional expiry.

A verified token is trusted for up to ``CACHE_SECONDS`` without asking the database again
(never past its expiry): a revocation takes effect within that window. A refused token is
refused again for ``REFUSED_SECONDS`` without asking either, so a client looping on a
revoked or mistyped token costs the store nothing (no caller, so no rate limit applies).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import datetime

import psycopg

from codenav.access import DEFAULT_TEAM, ROLES, Caller
from codenav.db import queries as q
from codenav.errors import InvalidRequest, NotFound, Unauthorized

TOKEN_PREFIX = "cnv_"
CACHE_SECONDS = 30.0
"""How long a verified token is trusted without asking the database (revocation delay)."""
REFUSED_SECONDS = 10.0
"""How long a refused token is refused without asking the database. A token never becomes
valid later: the server makes each one, and it is in the store before anyone has it."""
CACHE_MAX = 10_000
_NAME_MAX = 100


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def ensure_team(conn: psycopg.Connection, team: str, created_by: str) -> tuple[int, bool]:
    """The team's id, creating it if missing; and whether it was created."""
    if not team or len(team) > _NAME_MAX or not team.replace("-", "").replace("_", "") \
            .replace(".", "").isalnum() or not team.isascii():
        raise InvalidRequest(f"invalid team name {team!r}",
                             hint="letters, digits, '.', '_' and '-' only (max 100)")
    row = conn.execute(q.TEAM_INSERT, (team, created_by)).fetchone()
    if row is not None:
        return int(row[0]), True
    found = conn.execute(q.TEAM_GET, (team,)).fetchone()
    assert found is not None
    return int(found[0]), False


def create_token(conn: psycopg.Connection, name: str, role: str, team: str = DEFAULT_TEAM,
                 repos: Iterable[str] = (), expires_at: datetime | None = None,
                 created_by: str = "") -> tuple[str, int]:
    """A new token (shown once) and its id. ``repos``: names of the team's repositories it
    is limited to (none: every repository of the team). The team is created if missing."""
    if role not in ROLES:
        raise InvalidRequest(f"unknown role {role!r}", hint="read, write or admin")
    if not name or len(name) > _NAME_MAX:
        raise InvalidRequest("a token name is 1 to 100 characters")
    wanted = sorted(set(repos))
    with conn.transaction():
        team_id, _created = ensure_team(conn, team, created_by)
        grants: dict[int, str] = dict(conn.execute(
            q.REPO_BY_TEAM_NAMES, (team_id, wanted)).fetchall()) if wanted else {}
        missing = [n for n in wanted if n not in grants.values()]
        if missing:
            raise NotFound(f"team {team!r} has no repository named {', '.join(missing)}",
                           hint="codenav repo list shows the team's repositories")
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        row = conn.execute(q.TOKEN_INSERT, (name, hash_token(token), role, team_id,
                                            bool(wanted), expires_at, created_by)).fetchone()
        assert row is not None
        if grants:
            conn.execute(q.TOKEN_GRANT, (int(row[0]), sorted(grants)))
    return token, int(row[0])


def revoke_token(conn: psycopg.Connection, token_id: int) -> bool:
    return conn.execute(q.TOKEN_REVOKE, (token_id,)).rowcount > 0


ConnectionFactory = Callable[[], AbstractContextManager[psycopg.Connection]]


def _bearer(header: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header."""
    if not header or not header.lower().startswith("bearer "):
        raise Unauthorized("missing bearer token",
                           hint="send 'Authorization: Bearer <token>' (codenav token create)")
    return header.split(" ", 1)[1].strip()


class TokenVerifier:
    """Checks bearer tokens against the database, caching the answer briefly."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[float, Caller]] = {}
        self._refused: dict[str, tuple[float, Unauthorized]] = {}

    def cached(self, header: str | None) -> Caller | None:
        """The caller of a token verified moments ago, without the database; None when it
        has to be checked (``verify``). A header that is not a bearer token, or a token
        refused moments ago, is refused."""
        return self._hit(hash_token(_bearer(header)))

    def _hit(self, digest: str) -> Caller | None:
        refused = self._refused.get(digest)
        if refused is not None and refused[0] > time.monotonic():
            raise Unauthorized(refused[1].message, hint=refused[1].hint)
        cached = self._cache.get(digest)
        if cached is not None and cached[0] > time.monotonic() and (
                cached[1].expires_at is None or cached[1].expires_at.timestamp() > time.time()):
            return cached[1]
        return None

    def verify(self, conn_factory: ConnectionFactory, header: str | None) -> Caller:
        digest = hash_token(_bearer(header))
        caller = self._hit(digest)
        if caller is not None:
            return caller
        now = time.monotonic()
        with conn_factory() as conn:
            row = conn.execute(q.TOKEN_CHECK, (digest,)).fetchone()
            state = conn.execute(q.TOKEN_STATE, (digest,)).fetchone() if row is None else None
        if row is None:
            self._cache.pop(digest, None)
            if state is not None and state[0] is None and state[1] is not None:
                error = Unauthorized(f"token expired at {state[1]:%Y-%m-%d %H:%M %Z}".strip(),
                                     hint="ask an admin for a new one (codenav token create)")
            else:
                error = Unauthorized("unknown or revoked token",
                                     hint="create one with `codenav token create`")
            if len(self._refused) > CACHE_MAX:
                self._refused.clear()
            self._refused[digest] = (now + REFUSED_SECONDS, error)
            raise error
        token_id, name, role, team_id, team, restricted, expires_at = row
        caller = Caller(int(token_id), str(name), str(role), int(team_id), str(team),
                        bool(restricted), expires_at)
        if len(self._cache) > CACHE_MAX:
            self._cache.clear()
        self._cache[digest] = (now + CACHE_SECONDS, caller)
        return caller
