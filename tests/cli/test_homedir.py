"""The embedded store started again and again on one home, as the user CI runs as: each part
of the home gets the mode it needs on every start, whatever an earlier start left."""

from __future__ import annotations

import os
import signal
import stat
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from codenav_cli import homedir
from codenav_cli.stores import EmbeddedPostgres, free_port, stop_process
from tests.e2e.stackkit import state_home


@pytest.fixture
def home() -> Iterator[Path]:
    with state_home() as path:
        yield path


def _start_and_stop(home: Path) -> None:
    pg = EmbeddedPostgres(home, free_port())
    proc = pg.start()
    try:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        stop_process(proc, signal.SIGINT, timeout=30)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_store_starts_again_on_its_home_after_an_earlier_start_locked_it(
        home: Path) -> None:
    _start_and_stop(home)
    os.chmod(home, 0o700)  # what `codenav up` used to do on every start
    for _ in range(2):
        _start_and_stop(home)
    user = homedir.store_user()
    pgdata = home / "pgdata"
    assert (pgdata.stat().st_uid, _mode(pgdata)) == (user.uid, 0o700)
    assert (home / "run").stat().st_uid == user.uid
    for private in ("secrets", "logs", "redis"):
        assert _mode(home / private) == 0o700, private
    assert {_mode(p) for p in (home / "secrets").iterdir()} == {0o600}
    if user.is_other:  # as root: the store's user passes through the home, nothing more
        assert (home.stat().st_gid, _mode(home)) == (user.gid, 0o710)
    else:
        assert _mode(home) == 0o700


def test_a_leftover_pid_file_naming_another_live_process_does_not_block_a_start(
        home: Path) -> None:
    _start_and_stop(home)
    pidfile = home / "pgdata" / "postmaster.pid"
    pidfile.write_text(f"{os.getpid()}\n{home / 'pgdata'}\n")  # a reused pid: not postgres
    _start_and_stop(home)
