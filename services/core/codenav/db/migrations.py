"""Schema migrations: numbered SQL files applied in order, one transaction each.

A database whose schema is newer than this code is refused with both versions named; an
older one is migrated forward (``migrate``) by whoever starts first, under an advisory lock.
"""

from __future__ import annotations

import re
from importlib import resources

import psycopg

from codenav.db import queries as q
from codenav.errors import SchemaMismatch
from codenav.versions import SCHEMA_VERSION

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def available() -> list[tuple[int, str]]:
    """(version, sql) of every migration shipped with this code, in order."""
    found = []
    for entry in resources.files("codenav.db").joinpath("migrations").iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.read_text(encoding="utf-8")))
    return sorted(found)


def current_version(conn: psycopg.Connection) -> int:
    row = conn.execute(q.SCHEMA_TABLE_EXISTS).fetchone()
    if not row or not row[0]:
        return 0
    row = conn.execute(q.SCHEMA_CURRENT).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _refuse_newer(db_version: int) -> None:
    if db_version > SCHEMA_VERSION:
        raise SchemaMismatch(
            f"the database schema is version {db_version}, newer than this codenav "
            f"(schema version {SCHEMA_VERSION})",
            hint="upgrade codenav to the version that built this database",
        )


def migrate(conn: psycopg.Connection) -> int:
    """Apply missing migrations; returns the schema version afterwards."""
    with conn.transaction():
        conn.execute(q.MIGRATION_LOCK)
        conn.execute(q.SCHEMA_TABLE_CREATE)
        version = current_version(conn)
    _refuse_newer(version)
    for number, sql in available():
        if number <= version:
            continue
        with conn.transaction():
            conn.execute(q.MIGRATION_LOCK)
            if current_version(conn) >= number:
                continue
            conn.execute(sql.encode("utf-8"))
            conn.execute(q.SCHEMA_RECORD, (number,))
        version = number
    return version


def check(conn: psycopg.Connection) -> int:
    """Raise ``SchemaMismatch`` unless the database is exactly at this code's version."""
    version = current_version(conn)
    _refuse_newer(version)
    if version < SCHEMA_VERSION:
        raise SchemaMismatch(
            f"the database schema is version {version}, this codenav needs version "
            f"{SCHEMA_VERSION}",
            hint="run `codenav migrate` (the stack does it at start-up)",
        )
    return version
