"""Schema migrations against a real Postgres."""

from __future__ import annotations

import psycopg
import pytest

from codenav.db import migrations
from codenav.errors import SchemaMismatch
from codenav.versions import SCHEMA_VERSION


def test_the_newest_migration_is_the_schema_version() -> None:
    assert migrations.available()[-1][0] == SCHEMA_VERSION
    numbers = [n for n, _ in migrations.available()]
    assert numbers == list(range(1, SCHEMA_VERSION + 1))


def test_migrating_twice_changes_nothing(conn: psycopg.Connection) -> None:
    assert migrations.migrate(conn) == SCHEMA_VERSION
    assert migrations.migrate(conn) == SCHEMA_VERSION
    assert migrations.check(conn) == SCHEMA_VERSION


def test_a_database_built_by_a_newer_schema_is_refused_naming_both_versions(
        conn: psycopg.Connection) -> None:
    conn.execute("INSERT INTO codenav_schema (version) VALUES (%s)", (SCHEMA_VERSION + 7,))
    for action in (migrations.migrate, migrations.check):
        with pytest.raises(SchemaMismatch) as err:
            action(conn)
        assert str(SCHEMA_VERSION + 7) in err.value.message
        assert str(SCHEMA_VERSION) in err.value.message


def test_an_older_database_is_reported_until_migrated(conn: psycopg.Connection) -> None:
    conn.execute("DELETE FROM codenav_schema WHERE version = %s", (SCHEMA_VERSION,))
    with pytest.raises(SchemaMismatch) as err:
        migrations.check(conn)
    assert "codenav migrate" in (err.value.hint or "")
