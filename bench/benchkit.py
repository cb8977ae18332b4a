"""What the benchmarks share: the embedded stores a run starts (migrated) and stops, and
the services started as real processes.

Every benchmark that needs a store (and a queue) starts them here, in a directory of its
own, so none of them reaches a developer's ``~/.codenav`` or another run's data.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg

from codenav.db import migrations
from codenav_cli.stores import EmbeddedPostgres, EmbeddedRedis, free_port, stop_process

QUOTED = "quoted, not measured in this run"
NO_RATE_LIMIT = {"CODENAV_RATE_LIMIT_PER_S": "0"}
"""For the API of a benchmark whose client sends its calls back to back: with the per-token
limit on (20 a second by default) it would time the limiter's waits, not the calls."""
"""How a benchmark labels a figure it did not measure itself (with where it comes from)."""


def medians(runs: Sequence[dict[str, Any]], spread: Sequence[str] = ()) -> dict[str, Any]:
    """One result of several runs of the same measurement: each number the median of its
    runs, anything else as the first run had it; the keys in ``spread`` also as
    ``KEY_runs``, every run's value in run order. A ratio is the median of each run's
    ratio (paired within the run), so compute it per run before this."""
    if len(runs) == 1:
        return dict(runs[0])
    out: dict[str, Any] = {}
    for key, first in runs[0].items():
        values = [r[key] for r in runs if key in r]
        if isinstance(first, (int, float)) and not isinstance(first, bool) and all(
                isinstance(v, (int, float)) for v in values):
            median = statistics.median(values)
            out[key] = round(median, 2) if isinstance(median, float) else median
        else:
            out[key] = first
        if key in spread:
            out[f"{key}_runs"] = values
    out["runs"] = len(runs)
    return out


@dataclass
class Stores:
    pg: EmbeddedPostgres
    rd: EmbeddedRedis | None


@contextlib.contextmanager
def stores(home: Path, queue: bool = True) -> Iterator[Stores]:
    """An embedded Postgres (migrated) and, with ``queue``, an embedded Redis in ``home``;
    both stopped on the way out."""
    pg = EmbeddedPostgres(home, free_port())
    rd = EmbeddedRedis(home, free_port()) if queue else None
    pg_proc = pg.start()
    rd_proc = rd.start() if rd is not None else None
    try:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            migrations.migrate(conn)
        yield Stores(pg, rd)
    finally:
        if rd_proc is not None:
            stop_process(rd_proc)
        stop_process(pg_proc, signal.SIGINT, timeout=30)


def service(name: str, argv: list[str], env: dict[str, str], logs: Path
            ) -> subprocess.Popen[bytes]:
    """A codenav service started as its image starts it (``python -m <package> ...``), in
    a session of its own, logging to ``logs/<name>.log``."""
    logs.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([sys.executable, "-m", *argv], env=env, start_new_session=True,
                            stdout=(logs / f"{name}.log").open("ab"),
                            stderr=subprocess.STDOUT)


def stop_services(procs: list[subprocess.Popen[bytes]], timeout: float = 30) -> None:
    """SIGTERM each service's process group, and wait for it."""
    for proc in procs:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout)


def wait_ready(url: str, timeout: float = 120) -> None:
    """Until the API at ``url`` answers ``/readyz``."""
    import time

    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit("the API did not become ready")
