"""Enqueueing index jobs on Redis + RQ: queue names, lanes, job names, coalescing, the
paths waiting to be reconciled.

Enqueuers (API, watcher, CLI) name jobs by the import path of their function in
``codenav.jobs.tasks`` (a worker imports it; an enqueuer need not). Jobs are coalesced per
repository: paths to reconcile accumulate in a Redis set, and at most one job per
repository waits in the queue to drain it (plus one running). Every job is idempotent, so
RQ's at-least-once delivery is harmless, and so is running again a job whose worker died
under it (``codenav.jobs.coordination.requeue_abandoned``).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import Iterable
from typing import Any

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry as RedisRetry
from rq import Queue, Retry
from rq.exceptions import NoSuchJobError
from rq.job import Job, JobStatus
from rq.scripts import release_lock as _release_lock
from rq.serializers import JSONSerializer

from codenav.config import Settings
from codenav.errors import ConfigError, Unavailable
from codenav.index.defaults import name_problem
from codenav.jobs import keys

INDEX_QUEUE = "codenav-index"
"""Parsing and writing the index."""
EMBED_QUEUE = "codenav-embed"
"""Embedding work: lower priority, never blocks lexical indexing."""
OVERLAY_QUEUE = "codenav-overlay"
"""Developers' overlays (uncommitted edits): small, and waited for by an agent's call."""
QUEUES = (OVERLAY_QUEUE, INDEX_QUEUE, EMBED_QUEUE)
LANES: dict[str, tuple[str, ...]] = {"index": (OVERLAY_QUEUE, INDEX_QUEUE),
                                     "overlay": (OVERLAY_QUEUE,), "embed": (EMBED_QUEUE,)}
"""What a worker of each lane (a worker started with ``--lane index|overlay|embed``) takes:
index and graph jobs never share a process with embedding, so an edit never waits behind
an embedding slice, and each lane scales apart. An overlay worker takes overlays only, so
a developer's edits never wait behind bulk indexing; index workers take them first too.
A lane's own queue is its last: status counts a worker for each lane whose own queue it
serves."""

JOB_FULL = "codenav.jobs.tasks.reconcile_repo"
JOB_PATHS = "codenav.jobs.tasks.reconcile_pending"
JOB_EMBED = "codenav.jobs.tasks.embed_repo"
JOB_GRAPH = "codenav.jobs.tasks.build_graph"
JOB_REFS = "codenav.jobs.tasks.sync_refs"
JOB_PUBLISH = "codenav.jobs.tasks.publish_refs"
JOB_OVERLAY = "codenav.jobs.tasks.build_overlays"

RETRY = Retry(max=3, interval=[5, 30, 120])
log = logging.getLogger("codenav.queue")


def connect_redis(settings: Settings) -> redis.Redis:
    if not settings.redis_url:
        raise ConfigError("CODENAV_REDIS_URL is not set",
                          hint="start the embedded stack with `codenav up`, or point it at Redis")
    # A refused connection is retried a few times within a second (a restarting Redis is
    # back in about that), not with redis-py's default backoff of up to 10 s per try.
    return redis.Redis.from_url(settings.redis_url, socket_timeout=10, socket_connect_timeout=5,
                                health_check_interval=30,
                                retry=RedisRetry(ExponentialWithJitterBackoff(base=0.05, cap=0.4),
                                            3))


def index_queue(conn: redis.Redis, settings: Settings) -> Queue:
    return Queue(INDEX_QUEUE, connection=conn, serializer=JSONSerializer,
                 default_timeout=settings.job_timeout_s)


def embed_queue(conn: redis.Redis, settings: Settings) -> Queue:
    return Queue(EMBED_QUEUE, connection=conn, serializer=JSONSerializer,
                 default_timeout=settings.job_timeout_s)


def overlay_queue(conn: redis.Redis, settings: Settings) -> Queue:
    return Queue(OVERLAY_QUEUE, connection=conn, serializer=JSONSerializer,
                 default_timeout=settings.job_timeout_s)


def _enqueue_once(conn: redis.Redis, settings: Settings, kind: str, repo_id: int,
                  func: str) -> str | None:
    """Enqueue ``func(repo_id)`` unless one is already waiting; returns the job id waiting."""
    flag = keys.QUEUED.format(kind=kind, repo_id=repo_id)
    job_id = f"{kind}-{repo_id}-{uuid.uuid4().hex[:12]}"
    target = {"embed": embed_queue, "overlay": overlay_queue}.get(kind, index_queue)
    try:
        for _attempt in range(2):
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
            if waiting is None or _waits(conn, decode(waiting)):
                break
            # The flag outlived its job (a Redis restart kept one and not the other):
            # drop it, unless it changed meanwhile, and enqueue.
            _release_lock(conn, flag, decode(waiting))
    except redis.RedisError as exc:
        raise Unavailable(f"cannot reach the queue: {exc}",
                          hint="is Redis running? `codenav status` tells") from None
    return decode(waiting) if waiting is not None else None


def _waits(conn: redis.Redis, job_id: str) -> bool:
    """Whether a job is still going to run (waiting, scheduled for a retry, or running)."""
    try:
        status = Job.fetch(job_id, connection=conn, serializer=JSONSerializer).get_status()
    except NoSuchJobError:
        return False
    return status in (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED,
                      JobStatus.STARTED)


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
    # Each request marks its paths anew, so a job that read a path before this change
    # cannot take it for the one it reconciled (see ``done_paths``).
    mark = uuid.uuid4().hex[:10]
    # A name the index can never hold (not UTF-8: then not a Redis key either) is left
    # to the full reconcile, which walks its folder and reports it as skipped (bad_name).
    marks = {p: f"{k}@{mark}" for p, k in given.items() if p and name_problem(p) is None}
    if not marks:
        return None
    try:
        pipe = conn.pipeline(transaction=False)
        pipe.hset(keys.PENDING.format(repo_id=repo_id), mapping=marks)  # type: ignore[arg-type]
        pipe.set(keys.PENDING_SINCE.format(repo_id=repo_id), f"{time.time():.3f}", nx=True)
        pipe.execute()
    except redis.RedisError as exc:
        raise Unavailable(f"cannot reach the queue: {exc}") from None
    return _enqueue_once(conn, settings, "paths", repo_id, JOB_PATHS)


def request_refs(conn: redis.Redis, settings: Settings, repo_id: int,
                 asked: dict[str, str] | None = None) -> str | None:
    """Ask for the repository's followed refs to be brought up to date, and for the refs
    ``asked`` (name -> revision, "" for the ref's own commit) to be indexed."""
    if asked:
        try:
            conn.hset(keys.REFS.format(repo_id=repo_id), mapping=asked)  # type: ignore[arg-type]
        except redis.RedisError as exc:
            raise Unavailable(f"cannot reach the queue: {exc}") from None
    return _enqueue_once(conn, settings, "refs", repo_id, JOB_REFS)


def asked_refs(conn: redis.Redis, repo_id: int) -> dict[str, str]:
    """The refs asked for and not indexed yet."""
    raw = conn.hgetall(keys.REFS.format(repo_id=repo_id))
    return {decode(k): decode(v) for k, v in raw.items()}


def done_refs(conn: redis.Redis, repo_id: int, asked: dict[str, str]) -> None:
    """Forget refs indexed, unless asked again for another revision meanwhile."""
    key = keys.REFS.format(repo_id=repo_id)
    current = conn.hmget(key, list(asked)) if asked else []
    done = [n for (n, rev), now in zip(asked.items(), current, strict=True)
            if now is not None and decode(now) == rev]
    if done:
        conn.hdel(key, *done)


PUBLISH_TTL_S = 86400


def request_publish(conn: redis.Redis, settings: Settings, repo_id: int, ref: str,
                    payload: bytes) -> str | None:
    """Queue the tree of a commit CI published for ``ref`` (its file list in ``payload``);
    a later publish of the same ref replaces one not built yet."""
    key = keys.PUBLISHES.format(repo_id=repo_id)
    try:
        pipe = conn.pipeline(transaction=False)
        pipe.hset(key, ref, payload)
        pipe.expire(key, PUBLISH_TTL_S)
        pipe.execute()
    except redis.RedisError as exc:
        raise Unavailable(f"cannot reach the queue: {exc}") from None
    return _enqueue_once(conn, settings, "publish", repo_id, JOB_PUBLISH)


def pending_publishes(conn: redis.Redis, repo_id: int) -> dict[str, bytes]:
    raw = conn.hgetall(keys.PUBLISHES.format(repo_id=repo_id))
    return {decode(k): v if isinstance(v, bytes) else str(v).encode("utf-8", "surrogateescape")
            for k, v in raw.items()}


def done_publish(conn: redis.Redis, repo_id: int, ref: str, payload: bytes) -> None:
    """Forget a publish built, unless the ref was published again meanwhile."""
    key = keys.PUBLISHES.format(repo_id=repo_id)
    if conn.hget(key, ref) == payload:
        conn.hdel(key, ref)


def request_overlay(conn: redis.Redis, settings: Settings, repo_id: int) -> str | None:
    """Ask for the repository's overlays with work left to be built (the overlay lane)."""
    return _enqueue_once(conn, settings, "overlay", repo_id, JOB_OVERLAY)


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
    conn.delete(keys.QUEUED.format(kind=kind, repo_id=repo_id))


RUNNING_TTL_S = 3600


def mark_running(conn: redis.Redis, kind: str, repo_id: int, job_id: str | None) -> None:
    """A job that leaves no index run behind (the graph build) says it is running, so
    ``status`` is not ``fresh`` meanwhile; expires on its own if the worker dies."""
    conn.set(keys.RUNNING.format(kind=kind, repo_id=repo_id), job_id or "?", ex=RUNNING_TTL_S)


_DELETE_IF_SAME = "if redis.call('get', KEYS[1]) == ARGV[1] then " \
    "return redis.call('del', KEYS[1]) end return 0"


def mark_finished(conn: redis.Redis, kind: str, repo_id: int, job_id: str | None = None) -> None:
    """The job is no longer running; with ``job_id``, only if the mark is still its own
    (the job it queued to go on may have started and marked itself already)."""
    key = keys.RUNNING.format(kind=kind, repo_id=repo_id)
    if job_id is None:
        conn.delete(key)
    else:
        conn.eval(_DELETE_IF_SAME, 1, key, job_id)


def decode(value: object) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _kind(mark: bytes | str) -> str:
    """What happened to a pending path, from its mark (``changed@<request>``)."""
    return decode(mark).split("@", 1)[0]


def pending_marks(conn: redis.Redis, repo_id: int) -> dict[str, str]:
    """Pending paths with the mark of the request that last saw each change: a job reads
    these before it reconciles and hands them to ``done_paths`` after."""
    raw = conn.hgetall(keys.PENDING.format(repo_id=repo_id))
    return {decode(k): decode(v) for k, v in raw.items()}


def pending_changes(conn: redis.Redis, repo_id: int) -> dict[str, str]:
    """Paths seen changing on disk and not reconciled yet, with what happened to them."""
    return {path: _kind(mark) for path, mark in pending_marks(conn, repo_id).items()}


def pending_paths(conn: redis.Redis, repo_id: int) -> list[str]:
    return sorted(pending_changes(conn, repo_id))


def pending_kinds(conn: redis.Redis, repo_id: int, paths: list[str]) -> dict[str, str]:
    """Which of ``paths`` changed on disk since they were indexed (for ``stale`` flags)."""
    return pending_state(conn, repo_id, paths)[0] if paths else {}


def pending_counts(conn: redis.Redis, repo_id: int) -> dict[str, int]:
    """How many pending paths of each kind (exact for small sets, total otherwise)."""
    return pending_state(conn, repo_id, [])[1]


def pending_state(conn: redis.Redis, repo_id: int,
                  paths: list[str]) -> tuple[dict[str, str], dict[str, int]]:
    """``pending_kinds`` and ``pending_counts`` in one round trip (a second one only while
    a few paths are pending, to tell their kinds apart)."""
    key = keys.PENDING.format(repo_id=repo_id)
    pipe = conn.pipeline(transaction=False)
    pipe.hlen(key)
    if paths:
        pipe.hmget(key, paths)
    replies = pipe.execute()
    total = int(replies[0])
    kinds = {p: _kind(v) for p, v in zip(paths, replies[1], strict=True)
             if v is not None} if paths else {}
    if total == 0:
        return kinds, {}
    if total > 2000:
        return kinds, {"changed": total}
    counts: dict[str, int] = {}
    for value in conn.hvals(key):
        kind = _kind(value)
        counts[kind] = counts.get(kind, 0) + 1
    return kinds, counts


def done_paths(conn: redis.Redis, repo_id: int, marks: dict[str, str]) -> None:
    """Forget reconciled paths (``marks`` as ``pending_marks`` read them before the job
    read the disk), unless a request marked them again while the job ran: that change
    may be newer than what the job saw, so the path stays pending for the next job."""
    if not marks:
        return
    key = keys.PENDING.format(repo_id=repo_id)
    current = conn.hmget(key, list(marks))
    stale = [p for (p, mark), now in zip(marks.items(), current, strict=True)
             if now is not None and decode(now) == mark]
    if stale:
        conn.hdel(key, *stale)
    if not conn.hlen(key):
        conn.delete(keys.PENDING_SINCE.format(repo_id=repo_id))


def pending_since(conn: redis.Redis, repo_id: int) -> float | None:
    """When the oldest change not reconciled yet was seen (None: nothing is pending)."""
    raw = conn.get(keys.PENDING_SINCE.format(repo_id=repo_id))
    if raw is None or not conn.hlen(keys.PENDING.format(repo_id=repo_id)):
        return None
    return float(decode(raw))


def waiting(conn: redis.Redis, repo_id: int) -> dict[str, str]:
    """Job ids waiting in the queue for this repo, by kind (``full``, ``paths``)."""
    out = {}
    for kind in ("full", "paths", "graph", "refs", "publish", "embed"):
        value = conn.get(keys.QUEUED.format(kind=kind, repo_id=repo_id))
        if value is not None:
            out[kind] = decode(value)
    running = conn.get(keys.RUNNING.format(kind="graph", repo_id=repo_id))
    if running is not None and "graph" not in out:
        out["graph"] = f"running ({decode(running)})"
    return out


def forget_repo(conn: redis.Redis, repo_id: int) -> None:
    """Drop a deleted repository's queue state: pending paths, waiting and running flags,
    the watcher's lease and report. (A job already queued finds no repository and ends.)"""
    gone = [keys.PENDING.format(repo_id=repo_id), keys.PENDING_SINCE.format(repo_id=repo_id),
            keys.LEADER.format(repo_id=repo_id), keys.REFS.format(repo_id=repo_id),
            keys.PUBLISHES.format(repo_id=repo_id),
            keys.WATCHER.format(repo_id=repo_id)]
    gone += [keys.QUEUED.format(kind=k, repo_id=repo_id) for k in ("full", "paths", "graph",
                                                                  "refs", "publish", "embed")]
    gone += [keys.RUNNING.format(kind=k, repo_id=repo_id) for k in ("graph",)]
    with contextlib.suppress(redis.RedisError):
        conn.delete(*gone)


def job_info(conn: redis.Redis, job_id: str) -> dict[str, Any] | None:
    try:
        job = Job.fetch(job_id, connection=conn, serializer=JSONSerializer)
    except Exception:  # noqa: BLE001 - rq raises NoSuchJobError or deserialization errors
        return None
    status = job.get_status(refresh=True)
    info: dict[str, Any] = {"job_id": job_id, "state": str(status.value if status else "unknown")}
    if job.args and isinstance(job.args[0], int):
        info["repo_id"] = job.args[0]
    result = job.return_value() if status is not None and status.value == "finished" else None
    if isinstance(result, dict):
        info["result"] = result
    if job.exc_info:
        info["error"] = job.exc_info.strip().splitlines()[-1][:300]
    return info


def queue_for(conn: redis.Redis, settings: Settings, name: str) -> Queue:
    return Queue(name, connection=conn, serializer=JSONSerializer,
                 default_timeout=settings.job_timeout_s)


def request_again(conn: redis.Redis, settings: Settings, kind: str, repo_id: int) -> str | None:
    """A job that stopped before its end (a shutdown) asks to be run again."""
    funcs = {"full": JOB_FULL, "paths": JOB_PATHS, "graph": JOB_GRAPH, "embed": JOB_EMBED,
             "refs": JOB_REFS, "publish": JOB_PUBLISH, "overlay": JOB_OVERLAY}
    return _enqueue_once(conn, settings, kind, repo_id, funcs[kind])


def queue_depth(conn: redis.Redis, settings: Settings) -> dict[str, int]:
    q = index_queue(conn, settings)
    e = embed_queue(conn, settings)
    return {"queued": q.count, "running": q.started_job_registry.count,
            "embed_queued": e.count, "embed_running": e.started_job_registry.count}
