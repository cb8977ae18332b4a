"""Graph facts a first index left for later (``pending_facts``).

A first index whose graph build is deferred also skips reference extraction, a third of
its CPU, so the repository is searchable sooner. Before a graph is built or updated, the
facts of this repository's pending contents are extracted here: in parser processes when
there are many, each batch claimed in one transaction, so a content two repositories share
is filled once.
"""

from __future__ import annotations

import logging
import time

import psycopg

from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.batches import fill_batches
from codenav.graph.extract import extract
from codenav.parse.model import Symbol

log = logging.getLogger("codenav.graph")

BATCH = 100
"""Contents per claim (one transaction)."""
INLINE_LIMIT = 200
"""Fewer pending contents than this are filled in the calling process."""


def fill_pending(settings: Settings, conn: psycopg.Connection, tree_id: int) -> int:
    """Extract and store the facts of the tree's contents that lack them; returns how
    many this call filled (0 when none was pending: one index-only query)."""
    ids = [int(r[0]) for r in conn.execute(q.FACTS_PENDING_IDS, (tree_id,)).fetchall()]
    if not ids:
        return 0
    started = time.monotonic()
    filled = fill_batches(settings, conn, ids, fill_batch, BATCH, INLINE_LIMIT,
                          "codenav-facts")
    if len(ids) >= INLINE_LIMIT:
        # the graph build reads these refs next: with statistics from before they were
        # written, the planner scanned all of refs in parallel for every batch of files
        conn.execute(q.FACTS_ANALYZE)
    log.info("tree %s: graph facts of %d deferred contents in %.1fs", tree_id, filled,
             time.monotonic() - started)
    return filled


def fill_batch(conn: psycopg.Connection, ids: list[int]) -> int:
    # The symbols the first index stored, not a second structure pass: extraction needs
    # the syntax tree and where each declaration is, and the tree is all it parses again.
    symbols: dict[int, list[Symbol]] = {}
    for cid, name, kind, qualname, parent, start, end, signature, doc, exported, depth, \
            bases in conn.execute(q.FACTS_SYMBOLS, (ids,)).fetchall():
        symbols.setdefault(int(cid), []).append(Symbol(
            name, kind, qualname, parent, start, end, signature, doc, exported, depth,
            tuple(bases or ())))
    extracted = []
    for content_id, language, body, failed in conn.execute(q.FACTS_BODIES, (ids,)).fetchall():
        # a file whose structure could not be read has no symbols, and no facts
        rows = [] if failed else extract(body, language, symbols.get(int(content_id), []))
        extracted.append((int(content_id), rows))
    with conn.transaction():
        # no garbage collection meanwhile: a content's refs have no foreign key to stop
        # them outliving a content collected in the middle of this batch
        conn.execute(q.WRITERS_SHARED_XACT_LOCK)
        claimed = {int(r[0]) for r in conn.execute(q.FACTS_CLAIM, (ids,)).fetchall()}
        with conn.cursor().copy(q.REFS_COPY) as copy:
            copy.set_types(q.REFS_TYPES)
            for content_id, rows in extracted:
                if content_id in claimed:
                    for ord_, ref in enumerate(rows):
                        copy.write_row((content_id, ord_, *ref))
    return len(claimed)
