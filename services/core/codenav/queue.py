"""Index jobs on Redis + RQ: queue names, job names, coalescing.

Enqueuers (API, watcher, CLI) name jobs by their import path, so they never import the
worker. Jobs are coalesced per repository: paths to reconcile accumulate in a Redis set,
and at most one job per repository waits in the queue to drain it (plus one running).
Every job is idempotent, so RQ's at-least-once delivery is harmless.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

import redis
from rq import Queue, Retry
from rq.job import Job
from rq.serializers import JSONSerializer

from codenav.config import Settings
from codenav.errors import ConfigError, Unavailable

INDEX_QUEUE = "codenav-index"
"""Parsing and writing the index."""
EMBED_QUEUE = "codenav-embed"
"""Embedding work: lower priority, never blocks lexical indexing."""
QUEUES = (INDEX_QUEUE, EMBED_QUEUE)

JOB_FULL = "codenav_worker.jobs.reconcile_repo"
JOB_PATHS = "codenav_worker.jobs.reconcile_pending"

RETRY = Retry(max=3, interval=[5, 30, 120])
_PENDING = "codenav:pending:{repo_id}"
_QUEUED = "codenav:queued:{kind}:{repo_id}"


def connect_redis(settings: Settings) -> redis.Redis:
    if not settings.redis_url:
        raise ConfigError("CODENAV_REDIS_URL is not set",
                          hint="start the embedded stack with `codenav up`, or point it at Redis")
    return redis.Redis.from_url(settings.redis_url, socket_timeout=10, socket_connect_timeout=5,
                                health_check_interval=30)


def index_queue(conn: redis.Redis, settings: Settings) -> Queue:
    return Queue(INDEX_QUEUE, connection=conn, serializer=JSONSerializer,
                 default_timeout=settings.job_timeout_s)


def _enqueue_once(conn: redis.Redis, settings: Settings, kind: str, repo_id: int,
                  func: str) -> str | None:
    """Enqueue ``func(repo_id)`` unless one is already waiting; returns the job id waiting."""
    flag = _QUEUED.format(kind=kind, repo_id=repo_id)
    job_id = f"{kind}-{repo_id}-{uuid.uuid4().hex[:12]}"
    try:
        if conn.set(flag, job_id, nx=True, ex=settings.job_timeout_s):
            index_queue(conn, settings).enqueue(func, repo_id, job_id=job_id, retry=RETRY,
                                                 failure_ttl=7 * 86400, result_ttl=86400)
            return job_id
        waiting = conn.get(flag)
    except redis.RedisError as exc:
        raise Unavailable(f"cannot reach the queue: {exc}",
                          hint="is Redis running? `codenav status` tells") from None
    return waiting.decode() if isinstance(waiting, bytes) else str(waiting)


def request_full(conn: redis.Redis, settings: Settings, repo_id: int) -> str | None:
    """Ask for a whole-repository reconcile."""
    return _enqueue_once(conn, settings, "full", repo_id, JOB_FULL)


def request_paths(conn: redis.Redis, settings: Settings, repo_id: int,
                  paths: Iterable[str]) -> str | None:
    """Ask for the given repo-relative paths to be reconciled (coalesced per repo)."""
    items = [p for p in paths if p]
    if not items:
        return None
    try:
        conn.sadd(_PENDING.format(repo_id=repo_id), *items)
    except redis.RedisError as exc:
        raise Unavailable(f"cannot reach the queue: {exc}") from None
    return _enqueue_once(conn, settings, "paths", repo_id, JOB_PATHS)


def claim_started(conn: redis.Redis, kind: str, repo_id: int) -> None:
    """Called by a job when it starts: new requests must enqueue a new job."""
    conn.delete(_QUEUED.format(kind=kind, repo_id=repo_id))


def pending_paths(conn: redis.Redis, repo_id: int) -> list[str]:
    return sorted(p.decode() if isinstance(p, bytes) else str(p)
                  for p in conn.smembers(_PENDING.format(repo_id=repo_id)))


def done_paths(conn: redis.Redis, repo_id: int, paths: list[str]) -> None:
    if paths:
        conn.srem(_PENDING.format(repo_id=repo_id), *paths)


def job_info(conn: redis.Redis, job_id: str) -> dict[str, Any] | None:
    try:
        job = Job.fetch(job_id, connection=conn, serializer=JSONSerializer)
    except Exception:  # noqa: BLE001 - rq raises NoSuchJobError or deserialization errors
        return None
    status = job.get_status(refresh=True)
    info: dict[str, Any] = {"job_id": job_id, "state": str(status.value if status else "unknown")}
    if job.exc_info:
        info["error"] = job.exc_info.strip().splitlines()[-1][:300]
    return info


def queue_depth(conn: redis.Redis, settings: Settings) -> dict[str, int]:
    q = index_queue(conn, settings)
    return {"queued": q.count, "running": q.started_job_registry.count}
