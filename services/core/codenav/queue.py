"""Index jobs on Redis + RQ: queue names, job names, coalescing.

Enqueuers (API, watcher, CLI) name jobs by their import path, so they never import the
worker. Jobs are coalesced per repository: paths to reconcile accumulate in a Redis set,
and at most one job per repository waits in the queue to drain it (plus one running).
Every job is idempotent, so RQ's at-least-once delivery is harmless.
"""

from __future__ import annotations

import contextlib
import json
import time
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
JOB_EMBED = "codenav_worker.jobs.embed_repo"
JOB_GRAPH = "codenav_worker.jobs.build_graph"

RETRY = Retry(max=3, interval=[5, 30, 120])
_PENDING = "codenav:pending:{repo_id}"
"""Hash: path -> what happened on disk, for paths not reconciled yet."""
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


def embed_queue(conn: redis.Redis, settings: Settings) -> Queue:
    return Queue(EMBED_QUEUE, connection=conn, serializer=JSONSerializer,
                 default_timeout=settings.job_timeout_s)


def _enqueue_once(conn: redis.Redis, settings: Settings, kind: str, repo_id: int,
                  func: str) -> str | None:
    """Enqueue ``func(repo_id)`` unless one is already waiting; returns the job id waiting."""
    flag = _QUEUED.format(kind=kind, repo_id=repo_id)
    job_id = f"{kind}-{repo_id}-{uuid.uuid4().hex[:12]}"
    target = embed_queue if kind == "embed" else index_queue
    try:
        if conn.set(flag, job_id, nx=True, ex=settings.job_timeout_s):
            try:
                target(conn, settings).enqueue(func, repo_id, job_id=job_id, retry=RETRY,
                                               failure_ttl=7 * 86400, result_ttl=86400)
            except BaseException:  # no job behind the flag: let the next request enqueue
                with contextlib.suppress(redis.RedisError):
                    conn.delete(flag)
                raise
            return job_id
        waiting = conn.get(flag)
    except redis.RedisError as exc:
        raise Unavailable(f"cannot reach the queue: {exc}",
                          hint="is Redis running? `codenav status` tells") from None
    return waiting.decode() if isinstance(waiting, bytes) else str(waiting)


def request_full(conn: redis.Redis, settings: Settings, repo_id: int) -> str | None:
    """Ask for a whole-repository reconcile."""
    return _enqueue_once(conn, settings, "full", repo_id, JOB_FULL)


CHANGE_KINDS = ("changed", "unindexed", "deleted")


def request_paths(conn: redis.Redis, settings: Settings, repo_id: int,
                  paths: Iterable[str] | dict[str, str]) -> str | None:
    """Ask for the given repo-relative paths to be reconciled (coalesced per repo).

    ``paths`` may map each path to what happened to it on disk (``changed``,
    ``unindexed`` for a new file, ``deleted``); until reconciled, answers flag results from
    these paths as stale and ``status`` lists them."""
    given: dict[str, str] = paths if isinstance(paths, dict) else {p: "changed" for p in paths}
    kinds = {p: k for p, k in given.items() if p}
    if not kinds:
        return None
    try:
        conn.hset(_PENDING.format(repo_id=repo_id), mapping=kinds)  # type: ignore[arg-type]
    except redis.RedisError as exc:
        raise Unavailable(f"cannot reach the queue: {exc}") from None
    return _enqueue_once(conn, settings, "paths", repo_id, JOB_PATHS)


def request_graph(conn: redis.Redis, settings: Settings, repo_id: int) -> str | None:
    """Ask for a full build of the repository's code graph."""
    return _enqueue_once(conn, settings, "graph", repo_id, JOB_GRAPH)


def request_embed(conn: redis.Redis, settings: Settings, repo_id: int) -> str | None:
    """Ask for the repository's missing embeddings (lower priority than indexing)."""
    if not settings.embed_url:
        return None
    return _enqueue_once(conn, settings, "embed", repo_id, JOB_EMBED)


def claim_started(conn: redis.Redis, kind: str, repo_id: int) -> None:
    """Called by a job when it starts: new requests must enqueue a new job."""
    conn.delete(_QUEUED.format(kind=kind, repo_id=repo_id))


_RUNNING = "codenav:running:{kind}:{repo_id}"
RUNNING_TTL_S = 3600


def mark_running(conn: redis.Redis, kind: str, repo_id: int, job_id: str | None) -> None:
    """A job that leaves no index run behind (the graph build) says it is running, so
    ``status`` is not ``fresh`` meanwhile; expires on its own if the worker dies."""
    conn.set(_RUNNING.format(kind=kind, repo_id=repo_id), job_id or "?", ex=RUNNING_TTL_S)


def mark_finished(conn: redis.Redis, kind: str, repo_id: int) -> None:
    conn.delete(_RUNNING.format(kind=kind, repo_id=repo_id))


def _text(value: object) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def pending_changes(conn: redis.Redis, repo_id: int) -> dict[str, str]:
    """Paths seen changing on disk and not reconciled yet, with what happened to them."""
    raw = conn.hgetall(_PENDING.format(repo_id=repo_id))
    return {_text(k): _text(v) for k, v in raw.items()}


def pending_paths(conn: redis.Redis, repo_id: int) -> list[str]:
    return sorted(pending_changes(conn, repo_id))


def pending_kinds(conn: redis.Redis, repo_id: int, paths: list[str]) -> dict[str, str]:
    """Which of ``paths`` changed on disk since they were indexed (for ``stale`` flags)."""
    if not paths:
        return {}
    values = conn.hmget(_PENDING.format(repo_id=repo_id), paths)
    return {p: _text(v) for p, v in zip(paths, values, strict=True) if v is not None}


def pending_counts(conn: redis.Redis, repo_id: int) -> dict[str, int]:
    """How many pending paths of each kind (exact for small sets, total otherwise)."""
    key = _PENDING.format(repo_id=repo_id)
    total = int(conn.hlen(key))
    if total == 0:
        return {}
    if total > 2000:
        return {"changed": total}
    counts: dict[str, int] = {}
    for value in conn.hvals(key):
        kind = _text(value)
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def done_paths(conn: redis.Redis, repo_id: int, changes: dict[str, str]) -> None:
    """Forget reconciled paths, unless they changed again while the job ran."""
    if not changes:
        return
    key = _PENDING.format(repo_id=repo_id)
    current = conn.hmget(key, list(changes))
    stale = [p for (p, kind), now in zip(changes.items(), current, strict=True)
             if now is not None and _text(now) == kind]
    if stale:
        conn.hdel(key, *stale)


def waiting(conn: redis.Redis, repo_id: int) -> dict[str, str]:
    """Job ids waiting in the queue for this repo, by kind (``full``, ``paths``)."""
    out = {}
    for kind in ("full", "paths", "graph", "embed"):
        value = conn.get(_QUEUED.format(kind=kind, repo_id=repo_id))
        if value is not None:
            out[kind] = _text(value)
    running = conn.get(_RUNNING.format(kind="graph", repo_id=repo_id))
    if running is not None and "graph" not in out:
        out["graph"] = f"running ({_text(running)})"
    return out


def forget_repo(conn: redis.Redis, repo_id: int) -> None:
    """Drop a deleted repository's queue state: pending paths, waiting and running flags,
    the watcher's lease and report. (A job already queued finds no repository and ends.)"""
    keys = [_PENDING.format(repo_id=repo_id), _LEADER.format(repo_id=repo_id),
            _WATCHER.format(repo_id=repo_id)]
    keys += [_QUEUED.format(kind=k, repo_id=repo_id) for k in ("full", "paths", "graph", "embed")]
    keys += [_RUNNING.format(kind=k, repo_id=repo_id) for k in ("graph",)]
    with contextlib.suppress(redis.RedisError):
        conn.delete(*keys)


# --- watcher coordination ----------------------------------------------------------------
_LEADER = "codenav:watch-leader:{repo_id}"
_WATCHER = "codenav:watcher:{repo_id}"
LEADER_TTL_S = 6


def claim_leadership(conn: redis.Redis, repo_id: int, me: str) -> bool:
    """One watcher per repository: take or renew the lease; False if another holds it."""
    key = _LEADER.format(repo_id=repo_id)
    if conn.set(key, me, nx=True, ex=LEADER_TTL_S):
        return True
    if _text(conn.get(key) or b"") == me:
        conn.expire(key, LEADER_TTL_S)
        return True
    return False


def release_leadership(conn: redis.Redis, repo_id: int, me: str) -> None:
    key = _LEADER.format(repo_id=repo_id)
    if _text(conn.get(key) or b"") == me:
        conn.delete(key)


_ALIVE = "codenav:watcher-alive:{me}"


def watcher_heartbeat(conn: redis.Redis, me: str) -> None:
    """A sidecar's own heartbeat (whatever it watches), for container healthchecks."""
    conn.set(_ALIVE.format(me=me), str(time.time()), ex=LEADER_TTL_S * 2)


def watcher_alive(conn: redis.Redis, host_prefix: str) -> bool:
    """True if a sidecar whose id starts with ``host_prefix`` beat recently."""
    return any(True for _ in conn.scan_iter(match=_ALIVE.format(me=host_prefix + "*"),
                                            count=100))


def report_watcher(conn: redis.Redis, repo_id: int, state: dict[str, Any]) -> None:
    conn.set(_WATCHER.format(repo_id=repo_id), json.dumps(state), ex=LEADER_TTL_S * 2)


def watcher_state(conn: redis.Redis, repo_id: int) -> dict[str, Any] | None:
    raw = conn.get(_WATCHER.format(repo_id=repo_id))
    if raw is None:
        return None
    state: dict[str, Any] = json.loads(_text(raw))
    return state


def job_info(conn: redis.Redis, job_id: str) -> dict[str, Any] | None:
    try:
        job = Job.fetch(job_id, connection=conn, serializer=JSONSerializer)
    except Exception:  # noqa: BLE001 - rq raises NoSuchJobError or deserialization errors
        return None
    status = job.get_status(refresh=True)
    info: dict[str, Any] = {"job_id": job_id, "state": str(status.value if status else "unknown")}
    result = job.return_value() if status is not None and status.value == "finished" else None
    if isinstance(result, dict):
        info["result"] = result
    if job.exc_info:
        info["error"] = job.exc_info.strip().splitlines()[-1][:300]
    return info


def queue_depth(conn: redis.Redis, settings: Settings) -> dict[str, int]:
    q = index_queue(conn, settings)
    e = embed_queue(conn, settings)
    return {"queued": q.count, "running": q.started_job_registry.count,
            "embed_queued": e.count, "embed_running": e.started_job_registry.count}
