"""API tokens: random secrets shown once, stored only as SHA-256 hashes."""

from __future__ import annotations

import hashlib
import secrets
import time

import psycopg

from codenav.db import queries as q
from codenav.errors import Unauthorized

TOKEN_PREFIX = "cnv_"
CACHE_SECONDS = 30.0
"""How long a verified token is trusted without asking the database (revocation delay)."""


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(conn: psycopg.Connection, name: str) -> tuple[str, int]:
    """A new token (shown once) and its id."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = conn.execute(q.TOKEN_INSERT, (name, hash_token(token))).fetchone()
    assert row is not None
    return token, int(row[0])


def revoke_token(conn: psycopg.Connection, token_id: int) -> bool:
    return conn.execute(q.TOKEN_REVOKE, (token_id,)).rowcount > 0


class TokenVerifier:
    """Checks bearer tokens against the database, caching successes briefly."""

    def __init__(self) -> None:
        self._cache: dict[str, float] = {}

    def verify(self, conn_factory: object, header: str | None) -> str:
        if not header or not header.lower().startswith("bearer "):
            raise Unauthorized("missing bearer token",
                               hint="send 'Authorization: Bearer <token>' (codenav token create)")
        token = header.split(" ", 1)[1].strip()
        digest = hash_token(token)
        now = time.monotonic()
        expiry = self._cache.get(digest)
        if expiry is not None and expiry > now:
            return digest
        with conn_factory() as conn:  # type: ignore[operator]
            row = conn.execute(q.TOKEN_CHECK, (digest,)).fetchone()
        if row is None:
            self._cache.pop(digest, None)
            raise Unauthorized("unknown or revoked token",
                               hint="create one with `codenav token create`")
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[digest] = now + CACHE_SECONDS
        return digest
