"""Work a first index left for later, done in batches over several processes.

The graph facts (``codenav.graph.facts``) and the whole-file postings
(``codenav.index.terms``) are filled the same way: each batch of contents is claimed in the
transaction that writes it, by whichever process gets to it, so any number of callers may
run at once and a content is filled once. Many batches are spread over forked processes,
each with a connection of its own, the calling process among them
(``codenav.proc.map_shared``).
"""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from codenav.config import Settings
from codenav.db.connect import connect
from codenav.proc import map_shared

Fill = Callable[[psycopg.Connection, list[int]], int]
"""Fills one batch of content ids on a connection; returns how many it claimed."""


def fill_batches(settings: Settings | None, conn: psycopg.Connection, ids: list[int],
                 fill: Fill, size: int, inline_limit: int, application_name: str) -> int:
    """``fill`` every batch of ``size`` of ``ids``; returns how many contents were claimed.
    Fewer ids than ``inline_limit``, or no ``settings``: in this process only, on
    ``conn``."""
    batches = [ids[i:i + size] for i in range(0, len(ids), size)]
    processes = min(settings.workers(), len(batches)) if settings is not None else 1
    if len(ids) < inline_limit or processes <= 1 or settings is None:
        return sum(fill(conn, batch) for batch in batches)
    return sum(map_shared(processes, _pool_init, (settings, application_name), _pool_fill,
                          [(fill, batch) for batch in batches],
                          lambda task: task[0](conn, task[1])))


# --- in each forked process ---------------------------------------------------------------
_CONN: psycopg.Connection | None = None


def _pool_init(settings: Settings, application_name: str) -> None:
    global _CONN
    _CONN = connect(settings, application_name=application_name)


def _pool_fill(task: tuple[Fill, list[int]]) -> int:
    assert _CONN is not None, "_pool_init did not run"
    fill, batch = task
    return fill(_CONN, batch)
