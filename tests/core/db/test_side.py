"""A request's second connection (``codenav.db.side``) on a real Postgres: statements sent
ahead run on the lent connection, or on the request's own (in its thread) when none is
lent; leaving the side waits for them and gives the lent connection back; a statement's
error is raised where its rows are read; without a lender a statement runs when its rows
are asked for. A statement sent ahead on the request's own connection (``ahead``) runs
while the caller works and leaves that connection as it found it."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
import psycopg.adapt
import pytest
from psycopg.abc import Buffer

from codenav.config import Settings
from codenav.db.side import Side, ahead

PID = "SELECT pg_backend_pid()"


class Lender:
    """Lends one connection of its own (or none), and counts what it lent and got back."""

    def __init__(self, settings: Settings, free: bool = True,
                 setup: Callable[[psycopg.Connection], None] | None = None) -> None:
        self.settings = settings
        self.free = free
        self.setup = setup
        self.lent = 0
        self.back = 0
        self.pids: list[int] = []

    @contextmanager
    def __call__(self) -> Iterator[psycopg.Connection | None]:
        if not self.free:
            yield None
            return
        with psycopg.connect(self.settings.database_url, autocommit=True) as spare:
            if self.setup is not None:
                self.setup(spare)
            self.lent += 1
            self.pids.append(spare.info.backend_pid)
            try:
                yield spare
            finally:
                self.back += 1


def test_statements_sent_ahead_run_on_the_lent_connection_and_it_is_given_back(
        settings: Settings, conn: psycopg.Connection) -> None:
    lender = Lender(settings)
    with Side(conn, lender) as side:
        # the lent connection sleeps while the request's own answers
        slow = side.fetch("SELECT pg_backend_pid() FROM pg_sleep(0.3)", {})
        other = side.fetch(PID, {})
        mine = conn.execute(PID).fetchone()
        assert mine is not None
        assert slow.rows() == other.rows() == [(lender.pids[0],)]
        assert lender.pids[0] != mine[0]
        assert side.call(lambda c: c.info.backend_pid).result() == lender.pids[0]
    assert (lender.lent, lender.back) == (1, 1)  # one loan for every statement, returned


def test_leaving_the_side_waits_for_what_is_still_running(settings: Settings,
                                                          conn: psycopg.Connection) -> None:
    lender = Lender(settings)
    with Side(conn, lender) as side:
        pending = side.fetch("SELECT 7 FROM pg_sleep(0.3)", {})
    assert lender.back == 1
    assert pending.rows() == [(7,)]  # done before the connection went back


def test_without_a_free_connection_statements_run_on_the_request_connection_in_its_thread(
        settings: Settings, conn: psycopg.Connection) -> None:
    lender = Lender(settings, free=False)
    with Side(conn, lender) as side:
        assert side.concurrent
        pending = side.fetch(PID, {})
        where = side.call(lambda c: (c is conn, threading.get_ident()))
        assert pending.rows() == [(conn.info.backend_pid,)]
        # run by the request's own thread: its connection is never used by two threads
        assert where.result() == (True, threading.get_ident())


def test_an_error_is_raised_where_the_rows_are_read_and_the_loan_still_ends(
        settings: Settings, conn: psycopg.Connection) -> None:
    lender = Lender(settings)
    with Side(conn, lender) as side:
        failing = side.fetch("SELECT 1 / 0", {})
        fine = side.fetch("SELECT 2", {})
        with pytest.raises(psycopg.errors.DivisionByZero):
            failing.rows()
        assert fine.rows() == [(2,)]
    assert lender.back == 1


def test_without_a_lender_a_statement_runs_when_its_rows_are_asked_for(
        conn: psycopg.Connection) -> None:
    conn.execute("CREATE TEMP SEQUENCE side_order")
    with Side(conn) as side:
        assert not side.concurrent
        later = side.fetch("SELECT nextval('side_order')", {})
        first = conn.execute("SELECT nextval('side_order')").fetchone()
        assert first == (1,)
        assert later.rows() == [(2,)]
        assert later.rows() == [(2,)]  # read once


class _TextInt(psycopg.adapt.Loader):
    """Loads an int4 sent as text so that it shows: the lent connection's rows tell which
    format the server used."""

    def load(self, data: Buffer) -> str:
        return "text:" + bytes(data).decode()


def test_rows_can_come_back_in_binary(settings: Settings, conn: psycopg.Connection) -> None:
    def text_ints(spare: psycopg.Connection) -> None:
        spare.adapters.register_loader("int4", _TextInt)

    with Side(conn, Lender(settings, setup=text_ints)) as side:
        binary = side.fetch("SELECT 7::int4, array['a b', 'c']", {}, binary=True)
        text = side.fetch("SELECT 7::int4", {})
        assert binary.rows() == [(7, ["a b", "c"])]
        assert text.rows() == [("text:7",)]


def test_a_statement_ahead_on_the_own_connection_runs_while_the_caller_works(
        settings: Settings, conn: psycopg.Connection) -> None:
    """The server runs the statement before its rows are asked for (another connection
    sees its effect meanwhile), and the connection is out of pipeline mode afterwards."""
    import time

    conn.execute("CREATE SEQUENCE IF NOT EXISTS ahead_runs")
    try:
        with psycopg.connect(settings.database_url, autocommit=True) as watcher:
            def runs() -> int:
                row = watcher.execute("SELECT last_value, is_called FROM ahead_runs").fetchone()
                assert row is not None
                return int(row[0]) if row[1] else 0

            before = runs()
            with ahead(conn, "SELECT nextval('ahead_runs')", {}) as counted:
                deadline = time.monotonic() + 30
                while runs() == before and time.monotonic() < deadline:
                    time.sleep(0.01)  # the caller's own work, the rows not asked for yet
                assert runs() == before + 1
                assert counted.rows() == [(before + 1,)]
    finally:
        conn.execute("DROP SEQUENCE ahead_runs")
    assert conn.info.pipeline_status == psycopg.pq.PipelineStatus.OFF
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_a_statement_ahead_that_fails_or_is_left_unread_leaves_the_connection_usable(
        conn: psycopg.Connection) -> None:
    with pytest.raises(psycopg.errors.DivisionByZero):
        with ahead(conn, "SELECT 1 / %(zero)s", {"zero": 0}) as failing:
            failing.rows()
    with pytest.raises(KeyError):  # the caller's work fails before the rows are read
        with ahead(conn, "SELECT 3", {}):
            raise KeyError("caller")
    with ahead(conn, "SELECT 4", {}):
        pass  # never read
    with ahead(conn, "SELECT 5", {}, skip=True) as skipped:
        assert skipped.rows() == []
    assert conn.info.pipeline_status == psycopg.pq.PipelineStatus.OFF
    assert conn.execute("SELECT 6").fetchone() == (6,)
