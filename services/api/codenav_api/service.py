"""The API's one entry to the core: run a tool by name with a pooled connection.

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

from codenav import (
    access,
    embeddings,
    find,
    freshness,
    grep,
    navigate,
    queue,
    roots,
    search,
    status,
    usage,
)
from codenav.access import Caller, Scope
from codenav.auth import TokenVerifier
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import PREPARE_THRESHOLD, dsn
from codenav.embed_client import EmbedClient
from codenav.errors import CodenavError, InvalidRequest, Unavailable
from codenav.graph import tools as graph_tools
from codenav.graph.tools import GRAPH_TOOLS
from codenav.semantic import QueryEmbedder
from codenav.validate import check_value
from codenav_api import metrics

POOL_TIMEOUT_S = 3.0


def _configure(conn: psycopg.Connection) -> None:
    conn.execute(q.SESSION_SETUP)


class Services:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.pool = ConnectionPool(dsn(settings), min_size=1, max_size=12, open=False,
                                   kwargs={"autocommit": True, "application_name": "codenav-api",
                                           "prepare_threshold": PREPARE_THRESHOLD},
                                   # a request waits this long for a connection, then
                                   # answers 503 (the store is down, or overloaded)
                                   configure=_configure, timeout=POOL_TIMEOUT_S,
                                   # a connection broken by a store restart is replaced
                                   # before use, not handed to a request
                                   check=ConnectionPool.check_connection)
        self.redis: redis.Redis = queue.connect_redis(settings)
        self.tokens = TokenVerifier()
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

    def run(self, caller: Caller, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Run a tool for ``caller``: its role is checked, its arguments must be text, and
        the answer comes from the repositories it may see. Its latency and outcome go to
        the metrics, its ``_stats`` to the usage figures."""
        if tool not in access.READ_TOOLS and tool != "reindex":
            raise InvalidRequest(f"unknown tool {tool!r}")
        started = time.perf_counter()
        try:
            answer = self._run(caller, tool, args)
        except CodenavError as exc:
            metrics.observe_tool(tool, time.perf_counter() - started, exc.code)
            raise
        metrics.observe_tool(tool, time.perf_counter() - started, metrics.outcome_of(answer))
        return answer

    def _run(self, caller: Caller, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        access.authorize(caller, tool)
        check_value(args, "")
        with self.connection() as conn:
            if tool == "status":
                answer = self.status(conn, caller, args.get("repo") or None)
                self._count(conn, caller, answer.get("_repo_id"), tool, answer)
                answer.pop("_repo_id", None)
                return answer
            scope = access.resolve(conn, caller, args.get("repo") or None)
            answer = self._dispatch(conn, scope, tool, args)
            if tool != "reindex":
                self._annotate(conn, scope, answer)
                self._count(conn, caller, scope.id, tool, answer)
            return answer

    def _count(self, conn: psycopg.Connection, caller: Caller, repo_id: int | None,
               tool: str, answer: dict[str, Any]) -> None:
        """Add the answer to the usage figures; write them if they are due (one statement
        on this connection, at most every few seconds)."""
        self.usage.record(caller, repo_id, tool, answer)
        if self.usage.due():
            self.usage.flush(conn)

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
        access.authorize(caller, "stats")
        with self.connection() as conn:
            self.usage.flush(conn)
            return usage.summary(conn, caller, days)

    def _annotate(self, conn: psycopg.Connection, scope: Scope,
                  answer: dict[str, Any]) -> None:
        """Freshness signals on every answer: stale results, runs in progress."""
        paths = freshness.answer_paths(answer)
        run = status.run_info(conn.execute(q.RUN_LATEST, scope.params()).fetchone())
        try:
            stale = queue.pending_kinds(self.redis, scope.id, paths)
            pending = queue.pending_counts(self.redis, scope.id)
        except redis.RedisError:
            stale, pending = {}, {}
        freshness.annotate(answer, stale, sum(pending.values()), pending.get("unindexed", 0),
                           run)

    def status(self, conn: psycopg.Connection, caller: Caller,
               repo_name: str | None) -> dict[str, Any]:
        scopes = [access.resolve(conn, caller, repo_name)] if repo_name else \
            status.scopes_of(conn, caller)
        visible = {s.id: s for s in scopes}
        answer = status.status(conn, scopes)
        if repo_name:
            answer["_repo_id"] = scopes[0].id
        answer["usage"] = self._usage_summary(conn, caller)
        error = None
        workers = None
        depth: dict[str, Any] = {}
        try:  # the queue first: its state is what changes fastest
            if caller.role == "admin":  # lane depths span every team: admins only
                depth = queue.queue_depth(self.redis, self.settings)
            workers = {lane: len(names) for lane, names in
                       queue.live_workers(self.redis).items()}
        except redis.RedisError as exc:
            error = type(exc).__name__
        embedder = self._probe_embedder()
        answer["services"] = status.health(error, workers, embedder)
        jobs = 0
        for entry in answer["repos"]:
            repo_id = entry.pop("id")
            pending: dict[str, str] = {}
            waiting: dict[str, str] = {}
            watcher = None
            if error is None:
                try:
                    pending = queue.pending_changes(self.redis, repo_id)
                    waiting = queue.waiting(self.redis, repo_id)
                    watcher = queue.watcher_state(self.redis, repo_id)
                except redis.RedisError as exc:
                    error = type(exc).__name__
            entry["freshness"] = freshness.repo_freshness(pending, waiting,
                                                          entry.get("last_run"), watcher, error)
            entry["embeddings"] = self._embedding_status(conn, visible[repo_id], embedder)
            if pending and entry["index_status"] == "ready":
                entry["index_status"] = "stale"
            jobs += len(waiting)
        # Only this caller's repositories: other teams' activity is theirs.
        answer["queue"] = {"error": "queue unreachable"} if error else \
            {"jobs": jobs, "of": "the repositories this token sees", **depth}
        return answer

    def _usage_summary(self, conn: psycopg.Connection, caller: Caller) -> dict[str, Any]:
        """The last week's token economy, compact (``codenav stats`` has the detail)."""
        self.usage.flush(conn)
        week = usage.summary(conn, caller, 7)
        return {"days": 7, **week["total"],
                "by_tool": {t["tool"]: {"calls": t["calls"],
                                        "tokens_returned": t["tokens_returned"],
                                        "tokens_full_files": t["tokens_full_files"]}
                            for t in week["by_tool"]}}

    def _probe_embedder(self) -> str | None:
        """``ok``, or why the embedder does not serve (None: none is configured)."""
        client = self.semantic.client
        if client is None:
            return None
        try:
            client.reset()  # ask now: it may have died or come back since
            client.info()
        except CodenavError as exc:
            return exc.message
        return "ok"

    def _embedding_status(self, conn: psycopg.Connection, scope: Scope,
                          embedder: str | None) -> dict[str, Any]:
        """Embedding coverage of a repo for the configured model (embedded / total)."""
        client = self.semantic.client
        if client is None:
            return {"configured": False, "note": "semantic search is off (CODENAV_EMBED_URL)"}
        if embedder != "ok":
            return {"configured": True, "available": False, "note": embedder}
        info = client.info()
        model = embeddings.find_model(conn, info.name)
        return {"configured": True, "available": True,
                **embeddings.coverage(conn, model, scope)}

    def _dispatch(self, conn: psycopg.Connection, scope: Scope, tool: str,
                  args: dict[str, Any]) -> dict[str, Any]:
        if tool in ("search", "find_files"):
            mode = args.get("mode") or "hybrid"
            ctx = self.semantic.context(conn, scope, args["query"], mode)
            if tool == "find_files":
                return find.find_files(conn, scope, args["query"], int(args.get("limit", 7)),
                                       bool(args.get("include_tests", False)), mode, ctx)
            filters = search.Filters(language=args.get("language") or None,
                                     path=args.get("path") or None,
                                     kind=args.get("kind") or None,
                                     exported=bool(args.get("exported", False)))
            return search.search(conn, scope, args["query"], int(args.get("limit", 10)),
                                 filters, mode, ctx)
        if tool == "outline":
            return navigate.outline(conn, scope, args["path"])
        if tool == "read":
            return navigate.read(conn, scope, args.get("path") or None, args.get("start_line"),
                                 args.get("end_line"), args.get("symbol") or None)
        if tool == "reindex":
            return self.reindex(conn, scope, args.get("paths"))
        if tool == "grep":
            return grep.grep(conn, scope, args["pattern"], regex=bool(args.get("regex")),
                             path=args.get("path") or None,
                             language=args.get("language") or None,
                             case_sensitive=bool(args.get("case_sensitive")),
                             context=int(args.get("context") or 0),
                             limit=int(args.get("limit") or 50),
                             timeout_ms=self.settings.grep_timeout_ms)
        if tool in GRAPH_TOOLS:
            return graph_tools.run(conn, scope, tool, args)
        raise InvalidRequest(f"unknown tool {tool!r}")

    def reindex(self, conn: psycopg.Connection, scope: Scope,
                paths: list[str] | None) -> dict[str, Any]:
        """Queue a reindex; a repository registered with ``index: false`` is indexed from
        now on (it was asked)."""
        roots.check(self.settings, scope.repo.root)
        if not scope.repo.index_enabled:
            conn.execute(q.REPO_ENABLE_INDEX, scope.params())
        if paths:
            clean = [navigate.clean_path(p) for p in paths]
            job_id = queue.request_paths(self.redis, self.settings, scope.id, clean)
            return {"repo": scope.name, "scope": "paths", "paths": clean, "job_id": job_id}
        job_id = queue.request_full(self.redis, self.settings, scope.id)
        return {"repo": scope.name, "scope": "full", "job_id": job_id}
