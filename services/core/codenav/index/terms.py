"""Whole-file term postings (``file_terms``): written with a content, or, for a first index,
by the graph job (``pending_terms``).

The postings feed one feature, find_files' whole-file BM25. Writing them is a quarter of a
first index's CPU (on Apache Kafka 8 of 33 s: the terms of every file, their COPY and 1.5
million entries in two indexes), so a first index leaves them out and the repository is
searchable sooner. The graph job writes them while it builds the graph (``alongside``): in
a forked process on the core the build's one Python process leaves free, each batch
claimed in one transaction, so a content two repositories share gets its postings once.
Until then find_files says that its whole-file statistics are incomplete
(``answers.postings_pending``) and counts those files' terms from their chunks
(``q.FILE_TERM_POSTINGS_PENDING``), and ``status`` counts the files left; find_files'
graph features (centrality, importers, neighbours) wait for the same job.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.batches import fill_batches
from codenav.db.connect import connect, dsn
from codenav.errors import Unavailable
from codenav.logs import setup
from codenav.proc import child_env, die_with_parent, python_argv
from codenav.tokens import file_term_counts, identifier_terms

log = logging.getLogger("codenav.index")

BATCH = 200
"""Contents per claim (one transaction)."""
INLINE_LIMIT = 400
"""Fewer pending contents than this are written by the calling process alone."""


NICE = 10
"""The postings' process yields the CPU to the graph build beside it (its backend does
not)."""


def write_terms(cur: psycopg.Cursor[Any], contents: Iterable[tuple[int, str]]) -> None:
    """COPY the postings of ``(content id, text)`` pairs (the text as stored: redacted)."""
    with cur.copy(q.FILE_TERMS_COPY) as copy:
        for content_id, text in contents:
            for term, tf in file_term_counts(text).items():
                copy.write_row((term, content_id, tf))


def fill_pending(settings: Settings | None, conn: psycopg.Connection, tree_id: int,
                 light: bool = False) -> int:
    """Write the postings of the tree's contents that lack them; returns how many contents
    this call filled (0 when none was pending: one index-only query). Without ``settings``,
    in this process only; ``light``: the identifiers' split cache is emptied after each
    batch (``alongside``'s process: on Apache Kafka it peaked at 59 MB instead of 105 MB,
    for 4% more CPU)."""
    ids = [int(r[0]) for r in conn.execute(q.TERMS_PENDING_IDS, (tree_id,)).fetchall()]
    if not ids:
        return 0
    started = time.monotonic()
    filled = fill_batches(settings, conn, ids, _fill_light if light else fill_batch, BATCH,
                          INLINE_LIMIT, "codenav-terms")
    log.info("tree %s: whole-file terms of %d deferred contents in %.1fs", tree_id, filled,
             time.monotonic() - started)
    return filled


def fill_batch(conn: psycopg.Connection, ids: list[int]) -> int:
    """Postings for the contents of ``ids`` still pending (a concurrent filler's are left to
    it); returns how many this call wrote."""
    bodies = conn.execute(q.TERMS_BODIES, (ids,)).fetchall()
    with conn.transaction():
        # no garbage collection meanwhile: postings have no foreign key to stop them
        # outliving a content collected in the middle of this batch
        conn.execute(q.WRITERS_SHARED_XACT_LOCK)
        claimed = {int(r[0]) for r in conn.execute(q.TERMS_CLAIM, (ids,)).fetchall()}
        with conn.cursor() as cur:
            write_terms(cur, ((int(cid), body) for cid, body in bodies if int(cid) in claimed))
    return len(claimed)


@contextmanager
def alongside(settings: Settings, conn: psycopg.Connection, tree_id: int) -> Iterator[None]:
    """Write the tree's pending postings in a process of their own while the caller works
    (the graph build: one busy Python process, which leaves a core free); waits for it on
    the way out. When the caller's work fails the process is stopped (its batch under way
    rolls back). A failure of its own is logged, not raised: find_files answers from the
    chunks meanwhile, and the next graph job, reconcile or ref build writes what is left.

    The process is started afresh (``python -P -m codenav.index.terms``), not forked: it
    imports this module and psycopg only, 36 MB, where a fork of the graph job's process
    counted about 105 MB more in the stack's summed RSS on Apache Kafka."""
    if conn.execute(q.TERMS_PENDING_IDS, (tree_id,)).fetchone() is None:
        yield  # nothing pending: one index-only query
        return
    env = child_env({**os.environ, "CODENAV_DATABASE_URL": dsn(settings),
                     "CODENAV_LOG_LEVEL": settings.log_level,
                     "CODENAV_LOG_FORMAT": settings.log_format})
    child = subprocess.Popen(python_argv("codenav.index.terms", str(tree_id)), env=env,
                             stdin=subprocess.DEVNULL)
    try:
        yield
    except BaseException:
        child.terminate()
        child.wait()
        raise
    if child.wait() != 0:
        log.warning("tree %s: whole-file terms left for later (their process exited with "
                    "%s)", tree_id, child.returncode)


def main(argv: list[str]) -> int:
    """``python -P -m codenav.index.terms TREE_ID``: the process of ``alongside``."""
    die_with_parent()
    os.nice(NICE)
    settings = Settings.load(env=dict(os.environ), dotenv=None)
    setup(settings.log_level, settings.log_format, "codenav-terms")
    try:
        with connect(settings, application_name="codenav-terms") as conn:
            fill_pending(None, conn, int(argv[0]), light=True)
    except (psycopg.Error, Unavailable) as exc:
        log.warning("tree %s: whole-file terms left for later (%s)", argv[0], exc)
        return 1
    return 0


def _fill_light(conn: psycopg.Connection, ids: list[int]) -> int:
    filled = fill_batch(conn, ids)
    identifier_terms.cache_clear()
    return filled


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
