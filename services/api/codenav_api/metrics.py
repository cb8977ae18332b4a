"""Prometheus metrics at ``/metrics`` (prometheus-client), the operator's view.

Measured as requests go (each API process; with several uvicorn workers they are summed
through ``PROMETHEUS_MULTIPROC_DIR``, which ``codenav-api --workers N`` sets):

- ``codenav_http_request_duration_seconds{route,method}`` latency per route (histogram)
- ``codenav_http_responses_total{route,method,status}`` answers by status (errors: >= 400)
- ``codenav_tool_duration_seconds{tool}`` latency per tool, REST and MCP alike (histogram)
- ``codenav_tool_calls_total{tool,outcome}`` outcome ``ok``, ``empty``, ``timed_out`` or
  the error code (``invalid_request``, ``not_found``, ``forbidden``, ``unavailable``...)
- ``codenav_rate_limited_total{token}`` calls refused for the token's rate limit (which
  token is flooding: its name and id)
- ``codenav_token_waits_total{token}`` calls that waited for a slot of their token
  (``CODENAV_CONCURRENT_CALLS`` of its calls were being served)

Read from the store and the queue at each scrape (every team's: this is the operator's
view, so ``/metrics`` needs an admin token unless ``CODENAV_METRICS_OPEN=true``):

- ``codenav_queue_jobs{lane,state}`` jobs queued and running per worker lane
- ``codenav_workers{lane}`` live workers per lane
- ``codenav_index_pending_paths{team,repo}`` changes seen on disk and not indexed yet
- ``codenav_index_lag_seconds{team,repo}`` age of the oldest of them (0: up to date)
- ``codenav_index_files{team,repo}`` indexed files
- ``codenav_embedding_coverage_ratio{team,repo,model}`` and
  ``codenav_embedding_backlog_chunks{team,repo,model}``
- ``codenav_scrape_errors{source}`` 1 when the store or the queue could not be read
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from codenav import status
from codenav.access import Caller, visible_repos
from codenav.access import Scope as RepoScope
from codenav.embed import vectors as embeddings
from codenav.jobs import coordination, enqueue

if TYPE_CHECKING:
    from codenav_api.service import Services

log = logging.getLogger("codenav.api.metrics")
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0)

HTTP_LATENCY = Histogram("codenav_http_request_duration_seconds",
                         "API request latency by route", ["route", "method"], buckets=_BUCKETS)
HTTP_RESPONSES = Counter("codenav_http_responses_total", "API responses by route and status",
                         ["route", "method", "status"])
TOOL_LATENCY = Histogram("codenav_tool_duration_seconds", "Tool latency (REST and MCP)",
                         ["tool"], buckets=_BUCKETS)
TOOL_CALLS = Counter("codenav_tool_calls_total", "Tool calls by outcome", ["tool", "outcome"])
RATE_LIMITED = Counter("codenav_rate_limited_total",
                       "Calls refused for their token's rate limit (429)", ["token"])


TOKEN_WAITS = Counter("codenav_token_waits_total",
                      "Calls that waited for one of their token's slots (CONCURRENT_CALLS)",
                      ["token"])


def rate_limited(caller: Caller) -> None:
    RATE_LIMITED.labels(caller.actor).inc()


def token_waited(caller: Caller) -> None:
    TOKEN_WAITS.labels(caller.actor).inc()


def observe_tool(tool: str, seconds: float, outcome: str) -> None:
    TOOL_LATENCY.labels(tool).observe(seconds)
    TOOL_CALLS.labels(tool, outcome).inc()


def outcome_of(answer: dict[str, Any]) -> str:
    if answer.get("timed_out"):
        return "timed_out"
    return "empty" if answer.get("empty") else "ok"


def _route(scope: Scope) -> str:
    route = scope.get("route")
    path = getattr(route, "path", None)
    if path:
        return str(path)
    raw = str(scope.get("path", ""))
    return "/mcp" if raw.startswith("/mcp") else "other"


class RequestMetrics:
    """ASGI middleware: latency and status of every HTTP request, by route template
    (never the raw path: unknown paths are ``other``, so the label set stays small)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") == "/metrics":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def tracking_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        finally:
            route, method = _route(scope), str(scope.get("method", ""))
            HTTP_LATENCY.labels(route, method).observe(time.perf_counter() - started)
            HTTP_RESPONSES.labels(route, method, str(status)).inc()


class StateCollector(Collector):
    """Gauges read at scrape time: queue depths, index lag, embedding coverage."""

    def __init__(self, svc: Services) -> None:
        self.svc = svc

    def collect(self) -> Iterator[GaugeMetricFamily]:
        errors = GaugeMetricFamily("codenav_scrape_errors",
                                   "1 when a source could not be read at this scrape",
                                   labels=["source"])
        yield from self._queue(errors)
        yield from self._repos(errors)
        yield errors

    def _queue(self, errors: GaugeMetricFamily) -> Iterator[GaugeMetricFamily]:
        jobs = GaugeMetricFamily("codenav_queue_jobs", "Jobs per worker lane and state",
                                 labels=["lane", "state"])
        workers = GaugeMetricFamily("codenav_workers", "Live workers per lane", labels=["lane"])
        try:
            depth = enqueue.queue_depth(self.svc.redis, self.svc.settings)
            live = coordination.live_workers(self.svc.redis)
        except Exception as exc:  # noqa: BLE001 - a scrape reports, never fails
            log.warning("metrics: queue unreadable: %s", exc)
            errors.add_metric(["queue"], 1)
            return
        errors.add_metric(["queue"], 0)
        jobs.add_metric(["index", "queued"], depth["queued"])
        jobs.add_metric(["index", "running"], depth["running"])
        jobs.add_metric(["embed", "queued"], depth["embed_queued"])
        jobs.add_metric(["embed", "running"], depth["embed_running"])
        for lane in sorted(set(enqueue.LANES) | set(live)):
            workers.add_metric([lane], len(live.get(lane, ())))
        yield jobs
        yield workers

    def _repos(self, errors: GaugeMetricFamily) -> Iterator[GaugeMetricFamily]:
        labels = ["team", "repo"]
        pending = GaugeMetricFamily("codenav_index_pending_paths",
                                    "Changes seen on disk, not indexed yet", labels=labels)
        lag = GaugeMetricFamily("codenav_index_lag_seconds",
                                "Age of the oldest change not indexed yet", labels=labels)
        files = GaugeMetricFamily("codenav_index_files", "Indexed files", labels=labels)
        ratio = GaugeMetricFamily("codenav_embedding_coverage_ratio",
                                  "Share of chunks with a vector", labels=[*labels, "model"])
        backlog = GaugeMetricFamily("codenav_embedding_backlog_chunks",
                                    "Chunks waiting for a vector", labels=[*labels, "model"])
        now = time.time()
        try:
            with self.svc.connection() as conn:
                caller = Caller.operator()
                repos = visible_repos(conn, caller)
                visible = tuple(r.id for r in repos)
                models = [m for m in (embeddings.find_model(conn, name) for name in
                                      embeddings.model_names(conn)) if m is not None]
                for repo in repos:
                    scope = RepoScope(caller, repo, visible)
                    key = [repo.team, repo.name]
                    files.add_metric(key, status.file_count(conn, scope))
                    for model in models:
                        cov = embeddings.coverage(conn, model, scope)
                        ratio.add_metric([*key, model.name], cov["ratio"])
                        backlog.add_metric([*key, model.name], cov["backlog"])
                    self._lag(repo.id, key, now, pending, lag, errors)
        except Exception as exc:  # noqa: BLE001 - a scrape reports, never fails
            log.warning("metrics: store unreadable: %s", exc)
            errors.add_metric(["store"], 1)
            return
        errors.add_metric(["store"], 0)
        yield from (pending, lag, files, ratio, backlog)

    def _lag(self, repo_id: int, key: list[str], now: float, pending: GaugeMetricFamily,
             lag: GaugeMetricFamily, errors: GaugeMetricFamily) -> None:
        try:
            count = sum(enqueue.pending_counts(self.svc.redis, repo_id).values())
            since = enqueue.pending_since(self.svc.redis, repo_id)
        except Exception:  # noqa: BLE001 - reported with the queue's error
            return
        pending.add_metric(key, count)
        lag.add_metric(key, max(0.0, now - since) if since is not None and count else 0.0)


def registry(svc: Services) -> CollectorRegistry:
    """This process's metrics, or every worker's when PROMETHEUS_MULTIPROC_DIR is set,
    plus the scrape-time gauges."""
    reg = CollectorRegistry(auto_describe=False)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(reg)
    else:
        for metric in (HTTP_LATENCY, HTTP_RESPONSES, TOOL_LATENCY, TOOL_CALLS, RATE_LIMITED,
                       TOKEN_WAITS):
            reg.register(metric)
    reg.register(StateCollector(svc))
    return reg


def render(svc: Services) -> tuple[bytes, str]:
    return generate_latest(registry(svc)), CONTENT_TYPE_LATEST
