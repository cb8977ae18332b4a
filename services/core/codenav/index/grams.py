"""The grep index a first index left for later (``contents.grep_ready``).

Keeping the trigram index on bodies current while a first index inserts its contents was a
third of the store's CPU before the repository could be searched, for an index only grep
reads. A first index inserts its contents outside the index; the graph job puts them in
while it builds the graph: resolution keeps one Python process busy and leaves a core to the
backend extracting trigrams. grep matches a body not in the index yet without it, so it
answers the same either way (``codenav.db.queries.grep_candidates``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg

from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.errors import Unavailable

log = logging.getLogger("codenav.index")

BATCH = 500
"""Contents per update (one transaction): a killed job loses at most one batch's work."""


def fill(conn: psycopg.Connection, stop: Callable[[], bool] = lambda: False) -> int:
    """Put every content the grep index lacks into it, a batch per transaction, until
    none is left or ``stop()``; returns how many this call put in (one index-only query
    when none is missing). Any number of callers may run at once: a content is updated
    once."""
    done, last = 0, None
    while not stop():
        ids = [int(r[0]) for r in conn.execute(q.GREP_PENDING, (BATCH,)).fetchall()]
        if not ids or ids == last:  # nothing left, or a batch the update did not change
            return done
        with conn.transaction():
            done += conn.execute(q.GREP_READY, (ids,)).rowcount
        last = ids
    return done


@contextmanager
def alongside(settings: Settings) -> Iterator[None]:
    """Fill the grep index on a connection of its own, in a thread, while the caller
    works; waits for it on the way out (after the batch under way, when the caller's work
    failed). A failure is logged, not raised: grep answers without the index, and the
    next graph job fills what is left."""
    failed = threading.Event()

    def run() -> None:
        started = time.monotonic()
        try:
            with connect(settings, application_name="codenav-grams") as conn:
                done = fill(conn, failed.is_set)
        except (psycopg.Error, Unavailable, OSError) as exc:
            log.warning("grep index: left for the next graph job (%s)", exc)
            return
        if done:
            log.info("grep index: %d contents in %.1fs", done, time.monotonic() - started)

    thread = threading.Thread(target=run, name="codenav-grams", daemon=True)
    thread.start()
    try:
        yield
    except BaseException:
        failed.set()
        raise
    finally:
        thread.join()
