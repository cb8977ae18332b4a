"""Opening database connections from the settings."""

from __future__ import annotations

import psycopg

from codenav.config import Settings
from codenav.errors import ConfigError, Unavailable

PREPARE_THRESHOLD = None
"""Never prepare statements: codenav's queries are selective on their parameters (a rare
term, one repository), and the generic plan of a prepared statement can be orders of
magnitude slower (measured: search p50 150 ms prepared vs 12 ms not)."""


def dsn(settings: Settings) -> str:
    if not settings.database_url:
        raise ConfigError(
            "CODENAV_DATABASE_URL is not set",
            hint="start the embedded stack with `codenav up`, or point it at your Postgres",
        )
    return settings.database_url


def connect(settings: Settings, *, autocommit: bool = True,
            application_name: str = "codenav") -> psycopg.Connection:
    try:
        return psycopg.connect(dsn(settings), autocommit=autocommit,
                               application_name=application_name, connect_timeout=10,
                               prepare_threshold=PREPARE_THRESHOLD)
    except psycopg.OperationalError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "connection failed"
        raise Unavailable(f"cannot reach the database: {first}",
                          hint="is the store running? `codenav status` tells") from None
