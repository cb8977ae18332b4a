"""The grep index a first index leaves for later (``codenav.index.grams``), against a real
Postgres: filled once whoever fills it, and left alone when the work beside it fails."""

from __future__ import annotations

import threading

import psycopg
import pytest

from codenav.config import Settings
from codenav.index import grams

OUTSIDE = "SELECT count(*) FROM contents WHERE NOT grep_ready"


def _contents_outside(conn: psycopg.Connection, n: int) -> None:
    conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, body, "
                 "grep_ready) SELECT 'c' || i, 'text', 0, 40, 1, 'body of ' || i, false "
                 "FROM generate_series(1, %s) i", (n,))


def test_two_fillers_at_once_put_each_content_in_once(
        settings: Settings, conn: psycopg.Connection) -> None:
    n = grams.BATCH * 3 + 17
    _contents_outside(conn, n)
    done: list[int] = []

    def filler() -> None:
        with psycopg.connect(settings.database_url, autocommit=True) as own:
            done.append(grams.fill(own))

    threads = [threading.Thread(target=filler) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(done) == n and len(done) == 2
    assert conn.execute(OUTSIDE).fetchone() == (0,)
    # the index answers for every one of them now
    assert conn.execute("SELECT count(*) FROM contents WHERE grep_ready "
                        "AND body LIKE 'body of %%'").fetchone() == (n,)


def test_work_that_fails_beside_a_fill_stops_it_after_its_batch(
        settings: Settings, conn: psycopg.Connection) -> None:
    """The caller's error propagates, the fill stops at a batch's end (a stopped job does
    not wait for the whole index), and what it left is filled by the next fill."""
    n = grams.BATCH * 4
    _contents_outside(conn, n)
    with pytest.raises(RuntimeError, match="the build failed"), grams.alongside(settings):
        raise RuntimeError("the build failed")
    left = conn.execute(OUTSIDE).fetchone()
    assert left is not None and left[0] % grams.BATCH == 0 and left[0] > 0
    with grams.alongside(settings):
        pass
    assert conn.execute(OUTSIDE).fetchone() == (0,)
