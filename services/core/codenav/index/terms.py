"""Whole-file term postings (``file_terms``): written with a content, or, for a first index,
by the graph job (``pending_terms``).

The postings feed one feature, find_files' whole-file BM25. Writing them is a quarter of a
first index's CPU (on Apache Kafka 8 of 33 s: the terms of every file, their COPY and 1.5
million entries in two indexes), so a first index leaves them out and the repository is
searchable sooner. The graph job writes them before anything else, in parser processes
when there are many (``codenav.db.batches``), each batch claimed in one transaction, so a
content two repositories share gets its postings once. Until then find_files says that its
whole-file statistics are incomplete (``answers.postings_pending``) and counts those files'
terms from their chunks (``q.FILE_TERM_POSTINGS_PENDING``), and ``status`` counts the files
left.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

import psycopg

from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.batches import fill_batches
from codenav.tokens import file_term_rows, identifier_terms

log = logging.getLogger("codenav.index")

BATCH = 200
"""Contents per claim (one transaction)."""
INLINE_LIMIT = 400
"""Fewer pending contents than this are written by the calling process alone."""


def write_terms(cur: psycopg.Cursor[Any], contents: Iterable[tuple[int, str]]) -> None:
    """COPY the postings of ``(content id, text)`` pairs (the text as stored: redacted), a
    file's rows at once (``write_row`` per posting was a third of this step's CPU)."""
    with cur.copy(q.FILE_TERMS_COPY) as copy:
        for content_id, text in contents:
            copy.write(file_term_rows(text, content_id))


def fill_pending(settings: Settings | None, conn: psycopg.Connection, tree_id: int) -> int:
    """Write the postings of the tree's contents that lack them; returns how many contents
    this call filled (0 when none was pending: one index-only query). Without ``settings``,
    in this process only. The identifiers' split cache is emptied afterwards: the graph job
    extracts the graph facts next in the same process, and writing all of Apache Kafka's
    postings grew it by about 45 MB (a process's peak: 105 MB with it kept, 59 MB with it
    emptied after each batch)."""
    ids = [int(r[0]) for r in conn.execute(q.TERMS_PENDING_IDS, (tree_id,)).fetchall()]
    if not ids:
        return 0
    started = time.monotonic()
    filled = fill_batches(settings, conn, ids, fill_batch, BATCH, INLINE_LIMIT,
                          "codenav-terms")
    identifier_terms.cache_clear()
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
