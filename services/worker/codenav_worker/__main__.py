"""Worker entrypoint: ``python -m codenav_worker [--lane index|overlay|embed]``.

A worker serves one lane: ``index`` (reconciling repositories and building their code
graph; the default), ``overlay`` (developers' uncommitted edits only, so they never wait
behind bulk indexing; index workers take them first too) or ``embed`` (embedding chunks).
Indexing and embedding never share a process, so an edit never waits behind an embedding
slice, and each lane scales apart (compose: ``worker``, ``overlay-worker`` and
``embed-worker``).

An index or overlay worker preloads the secret detectors, and the grammars and queries of the
languages jobs have met, before RQ forks a work horse per job, so horses share them. Every
worker waits for the database schema and the queue (an embed worker also for the embedder's
model) before it takes a job, then works its lane's queue with the scheduler (a thread of
one worker: ``worker.ThreadScheduler``), so retries with intervals run.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable

import redis
from rq.serializers import JSONSerializer

from codenav import logs, proc
from codenav.config import Settings
from codenav.db import migrations
from codenav.db.connect import connect
from codenav.embed.client import EmbedClient
from codenav.errors import CodenavError, Unavailable
from codenav.jobs import coordination, enqueue
from codenav_worker.worker import CodenavWorker

log = logging.getLogger("codenav.worker")


def _wait_for(what: str, check: Callable[[], object], timeout: float) -> None:
    """Retry ``check`` until it passes (one log line while waiting), or give up."""
    deadline = time.monotonic() + timeout
    delay, told = 0.2, ""
    while True:
        try:
            check()
            if told:
                log.info("%s: ready", what)
            return
        except (CodenavError, redis.RedisError) as exc:
            reason = exc.message if isinstance(exc, CodenavError) else type(exc).__name__
            if time.monotonic() > deadline:
                raise CodenavError(f"{what} not ready after {timeout:.0f}s: {reason}") from None
            if reason != told:
                log.info("waiting for %s: %s", what, reason)
                told = reason
            time.sleep(delay)
            delay = min(delay * 1.5, 2.0)


def wait_for_schema(settings: Settings, timeout: float = 300.0) -> None:
    def check() -> None:
        with connect(settings) as conn:
            migrations.check(conn)

    _wait_for("the database", check, timeout)


def wait_for_embedder(settings: Settings, timeout: float = 1800.0) -> None:
    """An embed worker takes no job before the embedder serves (its model loads for
    seconds to minutes), so no job fails or logs "unreachable" meanwhile."""
    client = EmbedClient.from_settings(settings, timeout=10.0)
    if client is None:
        return
    def check() -> None:
        try:
            client.info()
        except Unavailable as exc:  # not listening yet: it is starting, not broken
            raise Unavailable("no answer yet" if "unreachable" in exc.message else
                              exc.message) from None

    try:
        _wait_for(f"the embedder at {settings.embed_url}", check, timeout)
    finally:
        client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codenav-worker", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lane", choices=sorted(enqueue.LANES), default="index",
                        help="the work this worker takes (default: index)")
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--name", default=None,
                        help="worker name (default: unique per process)")
    args = parser.parse_args(argv)
    try:
        settings = Settings.load()
        logs.setup(settings.log_level, settings.log_format, f"worker-{args.lane}")
        if args.lane in ("index", "overlay"):
            import codenav.jobs.tasks
            import codenav.overlays  # noqa: F401 (imported once here, not in every horse)
            from codenav import tokens
            from codenav.index import redact

            redact.preload()
            if not tokens.NATIVE:
                log.warning("codenav._native is not built (no C compiler when the core was "
                            "installed): indexing counts words in Python, several times "
                            "slower; reinstall the core with gcc present")
        wait_for_schema(settings)
        conn = enqueue.connect_redis(settings)
        _wait_for("the queue", lambda: bool(conn.ping()), 300.0)
        if args.lane == "embed":
            wait_for_embedder(settings)
        worker = CodenavWorker(list(enqueue.LANES[args.lane]), connection=conn,
                               serializer=JSONSerializer, settings=settings,
                               name=args.name or coordination.worker_name(args.lane))
        if args.lane in ("index", "overlay"):
            worker.preload_languages()  # and before each job, what jobs met meanwhile
        proc.settle_heap()  # before the parser pool forks: its processes inherit it
        worker.work(burst=args.burst, with_scheduler=True, logging_level=settings.log_level)
    except CodenavError as exc:
        print(f"codenav-worker: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else ""),
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # stopped while still waiting for a dependency
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
