"""Opening database connections from the settings."""

from __future__ import annotations

import psycopg
from psycopg.adapt import Buffer, Dumper
from psycopg.pq import Format

from codenav.config import Settings
from codenav.errors import ConfigError, Unavailable

PREPARE_THRESHOLD = None
"""Never prepare statements: codenav's queries are selective on their parameters (a rare
term, one repository), and the generic plan of a prepared statement can be orders of
magnitude slower (measured: search p50 150 ms prepared vs 12 ms not)."""
API_PREPARE_THRESHOLD = 1
"""The API's pooled connections prepare a statement the second time they run it, and plan
every execution for its parameters all the same (``queries.SESSION_PLANS``): what preparing
saves is parsing and analysing the text again, never the custom plan. On Apache Kafka,
search p50 over HTTP fell by 1.2-2.9 ms (5 %) in four alternated pairs; find_files did not
move."""


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


TSVECTOR_OID = 3614
"""``tsvector``'s type oid, fixed in every Postgres (``pg_type.dat``)."""


class _TsvectorBinary(Dumper):
    """A tsvector already in binary COPY format (``tokens.chunk_tsvector_binary``), passed
    through as it is."""

    format = Format.BINARY
    oid = TSVECTOR_OID

    def dump(self, obj: bytes) -> Buffer:
        return obj


def binary_tsvectors(conn: psycopg.Connection) -> None:
    """Let binary COPYs on ``conn`` take tsvector columns as the bytes
    ``tokens.chunk_tsvector_binary`` makes (with ``Copy.set_types``)."""
    conn.adapters.register_dumper(None, _TsvectorBinary)
