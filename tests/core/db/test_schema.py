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


def test_a_version_7_database_migrates_to_teams_with_its_tokens_as_default_admins(
        pg: object, tmp_path: object) -> None:
    """Existing repositories and tokens go to the team ``default``; existing tokens become
    its admins, so current users keep working."""
    import contextlib
    import uuid
    from contextlib import contextmanager

    from psycopg import sql

    from codenav import access
    from codenav.auth import TokenVerifier, hash_token

    base = pg.url.rsplit("/", 1)[0]  # type: ignore[attr-defined]
    name = f"t_old_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base + "/postgres", autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(f"{base}/{name}", autocommit=True) as conn:
            conn.execute("CREATE TABLE codenav_schema (version integer PRIMARY KEY, "
                         "applied_at timestamptz NOT NULL DEFAULT now())")
            for number, text in migrations.available():
                if number <= 7:
                    conn.execute(text.encode())
                    conn.execute("INSERT INTO codenav_schema (version) VALUES (%s)", (number,))
            conn.execute("INSERT INTO repos (name, root) VALUES ('legacy', '/srv/legacy')")
            conn.execute("INSERT INTO api_tokens (name, token_hash) VALUES ('old', %s)",
                         (hash_token("cnv_old-token"),))
            assert migrations.migrate(conn) == SCHEMA_VERSION
            repo = access.visible_repos(conn, access.Caller.operator())[0]
            assert (repo.name, repo.team, repo.index_enabled) == ("legacy", "default", True)

            @contextmanager
            def factory():  # type: ignore[no-untyped-def]
                yield conn

            caller = TokenVerifier().verify(factory, "Bearer cnv_old-token")
            assert (caller.role, caller.team, caller.restricted) == ("admin", "default", False)
            scope = access.resolve(conn, caller, None)
            assert scope.name == "legacy" and scope.visible == (repo.id,)
    finally:
        with contextlib.suppress(psycopg.Error), \
                psycopg.connect(base + "/postgres", autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                sql.Identifier(name)))
