"""Worker entrypoint: ``python -m codenav_worker``.

Preloads every grammar before RQ forks a work horse per job, so horses share them; waits
for the database schema to be current; then works the index queue (with the scheduler, so
retries with intervals run).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from rq import Worker
from rq.serializers import JSONSerializer

from codenav import queue
from codenav.config import Settings
from codenav.db import migrations
from codenav.db.connect import connect
from codenav.errors import CodenavError
from codenav.graph.extract import preload_queries
from codenav.parse.chunker import preload_grammars

log = logging.getLogger("codenav.worker")


def wait_for_schema(settings: Settings, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with connect(settings) as conn:
                migrations.check(conn)
                return
        except CodenavError as exc:
            if time.monotonic() > deadline:
                raise
            log.info("waiting for the database: %s", exc.message)
            time.sleep(1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codenav-worker", description=__doc__)
    parser.add_argument("--burst", action="store_true", help="exit when the queue is empty")
    parser.add_argument("--name", default=None, help="worker name (default: generated)")
    args = parser.parse_args(argv)
    try:
        settings = Settings.load()
        logging.basicConfig(level=settings.log_level, stream=sys.stderr,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
        preload_grammars()
        preload_queries()
        wait_for_schema(settings)
        conn = queue.connect_redis(settings)
        # Queues in priority order: indexing first, embedding when nothing is to index.
        worker = Worker([queue.INDEX_QUEUE, queue.EMBED_QUEUE], connection=conn,
                        serializer=JSONSerializer, name=args.name)
        worker.work(burst=args.burst, with_scheduler=True, logging_level=settings.log_level)
    except CodenavError as exc:
        print(f"codenav-worker: {exc.message}" + (f"\n  hint: {exc.hint}" if exc.hint else ""),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
