"""The API's long-lived clients (a connection pool, Redis, the query embedder) and its one
entry to the core: run a tool by name (``codenav.serve``).

REST routes and the MCP endpoint both call ``Services.run``, so they cannot disagree.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import redis
from psycopg_pool import ConnectionPool, PoolTimeout

from codenav import serve, usage
from codenav.access import Caller
from codenav.auth import TokenVerifier
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import API_PREPARE_THRESHOLD, dsn
from codenav.embed.client import EmbedClient
from codenav.errors import CodenavError, Unavailable
from codenav.jobs import enqueue
from codenav.ratelimit import InFlight, RateLimiter
from codenav.roles import authorize
from codenav.search.semantic import QueryEmbedder
from codenav.tools import TOOLS
from codenav.tools.base import Args
from codenav_api import metrics

POOL_TIMEOUT_S = 3.0
SPARE_WAIT_S = 0.001
"""How long a request waits for a second connection (``Services.spare``): one that is free
comes at once; when none is, its statements run on the request's own."""


def _configure(conn: psycopg.Connection) -> None:
    conn.execute(q.SESSION_SETUP)
    conn.execute(q.SESSION_PLANS)  # before any statement is prepared


class Services:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        # two kept open, so that an idle API lends a request its second (``spare``)
        self.pool = ConnectionPool(dsn(settings), min_size=2, max_size=12, open=False,
                                   kwargs={"autocommit": True, "application_name": "codenav-api",
                                           "prepare_threshold": API_PREPARE_THRESHOLD},
                                   # a request waits this long for a connection, then
                                   # answers 503 (the store is down, or overloaded)
                                   configure=_configure, timeout=POOL_TIMEOUT_S,
                                   # a connection broken by a store restart is replaced
                                   # before use, not handed to a request
                                   check=ConnectionPool.check_connection)
        self.redis: redis.Redis = enqueue.connect_redis(settings)
        self.tokens = TokenVerifier()
        self.limits = RateLimiter(settings.rate_limit_per_s, settings.rate_limit_burst,
                                  on_refuse=metrics.rate_limited)
        self.in_flight = InFlight(settings.concurrent_calls, on_wait=metrics.token_waited)
        self.semantic = QueryEmbedder(EmbedClient.from_settings(
            settings, timeout=settings.embed_query_budget_ms / 1000))
        self.usage = usage.UsageBuffer()

    def open(self) -> None:
        self.pool.open(wait=False)

    def close(self) -> None:
        self.flush_usage()
        self.pool.close()
        self.redis.close()
        if self.semantic.client is not None:
            self.semantic.client.close()

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        try:
            with self.pool.connection() as conn:
                yield conn
        except PoolTimeout:
            raise Unavailable(f"database unavailable: no connection within {POOL_TIMEOUT_S:g}s",
                              hint="the store is down or overloaded; `codenav up` restarts "
                              "it, and answers resume by themselves") from None
        except psycopg.OperationalError as exc:
            raise Unavailable(f"database unavailable: {str(exc).splitlines()[0]}") from None

    @contextmanager
    def spare(self) -> Iterator[psycopg.Connection | None]:
        """A second pooled connection for statements a request can run beside its own
        (``codenav.db.side``), when one is free right now; None otherwise (a busy pool grows
        for the next request meanwhile)."""
        try:
            conn = self.pool.getconn(timeout=SPARE_WAIT_S)
        except (PoolTimeout, psycopg.OperationalError):
            yield None
            return
        try:
            yield conn
        finally:
            self.pool.putconn(conn)

    def run(self, caller: Caller, tool: str, args: Args | dict[str, Any],
            overlay: str | None = None) -> dict[str, Any]:
        """Run a tool for ``caller`` (``codenav.serve``): its role is checked, its
        arguments validated by the tool's model, and the answer comes from the
        repositories it may see. Its latency and outcome go to the metrics, its ``_stats``
        to the usage figures (``serve.run`` records them)."""
        if tool not in TOOLS:  # unknown names are refused, not counted
            return serve.run(self, self.connection, caller, tool, args, overlay)
        started = time.perf_counter()
        try:
            answer = serve.run(self, self.connection, caller, tool, args, overlay)
        except CodenavError as exc:
            metrics.observe_tool(tool, time.perf_counter() - started, exc.code)
            raise
        metrics.observe_tool(tool, time.perf_counter() - started, metrics.outcome_of(answer))
        return answer

    def flush_usage(self) -> None:
        if not self.usage.pending():
            return
        try:
            with self.connection() as conn:
                self.usage.flush(conn)
        except CodenavError:
            pass  # the store is down: the figures wait for the next flush

    def stats(self, caller: Caller, days: int) -> dict[str, Any]:
        """Usage figures the caller may see (this process's latest answers included)."""
        authorize(caller, "stats")
        with self.connection() as conn:
            self.usage.flush(conn)
            return usage.summary(conn, caller, days)
