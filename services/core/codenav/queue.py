"""Index jobs on Redis + RQ: queue names, lanes, job names, coalescing, recovery.

Enqueuers (API, watcher, CLI) name jobs by their import path, so they never import the
worker. Jobs are coalesced per repository: paths to reconcile accumulate in a Redis set,
and at most one job per repository waits in the queue to drain it (plus one running).
Every job is idempotent, so RQ's at-least-once delivery is harmless, and so is running
again a job whose worker died under it (``requeue_abandoned``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry as RedisRetry
from rq import Queue, Retry, worker_registration
from rq.exceptions import NoSuchJobError, SchedulerNotFound
from rq.executions import Execution
from rq.job import Job, JobStatus
from rq.job_lifecycle import record_job_failure
from rq.registry import StartedJobRegistry
from rq.scheduler import RQScheduler
from rq.scripts import release_lock as _release_lock
from rq.serializers import JSONSerializer
from rq.utils import utcformat, utcparse
from rq.worker import Worker

from codenav.config import Settings
from codenav.errors import ConfigError, Unavailable
from codenav.proc import pid_alive

INDEX_QUEUE = "codenav-index"
"""Parsing and writing the index."""
EMBED_QUEUE = "codenav-embed"
"""Embedding work: lower priority, never blocks lexical indexing."""
QUEUES = (INDEX_QUEUE, EMBED_QUEUE)
LANES: dict[str, tuple[str, ...]] = {"index": (INDEX_QUEUE,), "embed": (EMBED_QUEUE,)}
"""What a worker of each lane (``python -m codenav_worker --lane index|embed``) takes:
index and graph jobs never share a process with embedding, so an edit never waits behind
an embedding slice, and each lane scales apart."""

JOB_FULL = "codenav_worker.jobs.reconcile_repo"
JOB_PATHS = "codenav_worker.jobs.reconcile_pending"
JOB_EMBED = "codenav_worker.jobs.embed_repo"
JOB_GRAPH = "codenav_worker.jobs.build_graph"

RETRY = Retry(max=3, interval=[5, 30, 120])
_PENDING = "codenav:pending:{repo_id}"
_PENDING_SINCE = "codenav:pending-since:{repo_id}"
"""When the oldest change still pending was seen (unix time): the repository's index lag."""
"""Hash: path -> what happened on disk, for paths not reconciled yet."""
_QUEUED = "codenav:queued:{kind}:{repo_id}"
_JOB_ID = re.compile(r"^(full|paths|graph|embed)-(\d+)-[0-9a-f]+$")
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


def _enqueue_once(conn: redis.Redis, settings: Settings, kind: str, repo_id: int,
                  func: str) -> str | None:
    """Enqueue ``func(repo_id)`` unless one is already waiting; returns the job id waiting."""
    flag = _QUEUED.format(kind=kind, repo_id=repo_id)
    job_id = f"{kind}-{repo_id}-{uuid.uuid4().hex[:12]}"
    target = embed_queue if kind == "embed" else index_queue
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
            if waiting is None or _waits(conn, _text(waiting)):
                break
            # The flag outlived its job (a Redis restart kept one and not the other):
            # drop it, unless it changed meanwhile, and enqueue.
            _release_lock(conn, flag, _text(waiting))
    except redis.RedisError as exc:
        raise Unavailable(f"cannot reach the queue: {exc}",
                          hint="is Redis running? `codenav status` tells") from None
    return _text(waiting) if waiting is not None else None


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
    kinds = {p: k for p, k in given.items() if p}
    if not kinds:
        return None
    try:
        pipe = conn.pipeline(transaction=False)
        pipe.hset(_PENDING.format(repo_id=repo_id), mapping=kinds)  # type: ignore[arg-type]
        pipe.set(_PENDING_SINCE.format(repo_id=repo_id), f"{time.time():.3f}", nx=True)
        pipe.execute()
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
    if not conn.hlen(key):
        conn.delete(_PENDING_SINCE.format(repo_id=repo_id))


def pending_since(conn: redis.Redis, repo_id: int) -> float | None:
    """When the oldest change not reconciled yet was seen (None: nothing is pending)."""
    raw = conn.get(_PENDING_SINCE.format(repo_id=repo_id))
    if raw is None or not conn.hlen(_PENDING.format(repo_id=repo_id)):
        return None
    return float(_text(raw))


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
    keys = [_PENDING.format(repo_id=repo_id), _PENDING_SINCE.format(repo_id=repo_id),
            _LEADER.format(repo_id=repo_id),
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
    funcs = {"full": JOB_FULL, "paths": JOB_PATHS, "graph": JOB_GRAPH, "embed": JOB_EMBED}
    return _enqueue_once(conn, settings, kind, repo_id, funcs[kind])


# --- workers and their abandoned jobs ----------------------------------------------------
HEARTBEAT_S = 10
"""How often a busy worker proves it is alive (RQ's job monitoring interval)."""
STALE_AFTER_S = 60.0
"""A busy worker silent this long is dead: its job is run again."""


def worker_name(lane: str) -> str:
    """A name no other incarnation ever had: RQ refuses a second live worker of one name."""
    return f"codenav-{lane}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


def _age_s(when: datetime | None) -> float:
    if when is None:
        return float("inf")
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return (datetime.now(UTC) - when).total_seconds()


@dataclass(frozen=True)
class WorkerInfo:
    """A registered RQ worker, read from its hash (RQ's ``Worker.all`` would raise the
    socket timeout of the connection it is given to RQ's 7 minutes)."""

    name: str
    queues: tuple[str, ...]
    busy: bool
    heartbeat_age_s: float


_WORKER_PREFIX = Worker.redis_worker_namespace_prefix


def workers(conn: redis.Redis) -> list[WorkerInfo]:
    keys = sorted(_text(k) for k in conn.smembers(worker_registration.REDIS_WORKER_KEYS))
    out = []
    for key in keys:
        data = {_text(k): _text(v) for k, v in conn.hgetall(key).items()}
        if not data or "death" in data:
            continue
        beat = data.get("last_heartbeat")
        out.append(WorkerInfo(key[len(_WORKER_PREFIX):], tuple(data.get("queues", "").split(",")),
                              data.get("state") == "busy",
                              _age_s(utcparse(beat) if beat else None)))
    return out


def live_workers(conn: redis.Redis) -> dict[str, list[str]]:
    """Registered workers with a recent heartbeat, by lane (``index``, ``embed``)."""
    out: dict[str, list[str]] = {lane: [] for lane in LANES}
    for worker in workers(conn):
        # An idle worker beats once per blocking dequeue (~7 min): registered is enough.
        if worker.busy and worker.heartbeat_age_s > STALE_AFTER_S:
            continue
        for lane, queues in LANES.items():
            if set(worker.queues) & set(queues):
                out[lane].append(worker.name)
    return out


def _stale(conn: redis.Redis) -> Callable[[str], bool]:
    alive = {w.name for w in workers(conn) if w.heartbeat_age_s <= STALE_AFTER_S}
    return lambda name: name not in alive


def _register_death(conn: redis.Redis, name: str) -> None:
    """What RQ's ``Worker.register_death`` does, for a worker that could not do it."""
    key = _WORKER_PREFIX + name
    queues = _text(conn.hget(key, "queues") or b"")
    with conn.pipeline() as pipe:
        pipe.srem(worker_registration.REDIS_WORKER_KEYS, key)
        for queue_name in filter(None, queues.split(",")):
            pipe.srem(worker_registration.WORKERS_BY_QUEUE_KEY % queue_name, key)
        pipe.hset(key, "death", utcformat(datetime.now(UTC)))
        pipe.expire(key, 60)
        pipe.delete(f"{key}:executions")
        pipe.execute()


def requeue_abandoned(conn: redis.Redis, settings: Settings, *,
                      dead: Iterable[str] | None = None, everyone: bool = False) -> list[str]:
    """Put the jobs that dead workers were running back at the front of their queue.

    ``dead`` names workers known to be dead (the supervisor saw them exit); ``everyone``
    means no worker of this queue is alive (a stack starting); otherwise a worker counts as
    dead when its heartbeat is older than ``STALE_AFTER_S`` (any worker's maintenance).
    Each recovery uses one of the job's retries; a job out of retries (it kills its worker
    every time) is failed with the reason. Returns the requeued job ids."""
    if everyone:
        is_dead: Callable[[str], bool] = lambda _name: True  # noqa: E731
    elif dead is not None:
        names = set(dead)
        is_dead = names.__contains__
    else:
        is_dead = _stale(conn)
    requeued = []
    for name in QUEUES:
        registry = StartedJobRegistry(name, connection=conn, serializer=JSONSerializer)
        for raw in conn.zrange(registry.key, 0, -1):
            composite = _text(raw)
            execution = Execution.from_composite_key(composite, conn)
            try:
                execution.refresh()
            except ValueError:  # its hash expired with the worker's heartbeats
                execution.worker_name = ""
            if execution.worker_name and not is_dead(execution.worker_name):
                continue
            if _recover(conn, settings, registry, name, execution):
                requeued.append(execution.job_id)
    if everyone:
        for worker in workers(conn):
            _register_death(conn, worker.name)
    elif dead is not None:
        for name in set(dead):
            _register_death(conn, name)
    _release_dead_schedulers(conn, everyone)
    return requeued


def _release_dead_schedulers(conn: redis.Redis, everyone: bool) -> None:
    """A scheduler killed with its worker keeps its queue's lock for a minute, and retries
    wait for a scheduler: free the locks of schedulers that are gone."""
    host = socket.gethostname()
    for name in QUEUES:
        key = RQScheduler.get_locking_key(name)
        owner = conn.get(key)
        if owner is None:
            continue
        try:
            scheduler = RQScheduler.fetch(_text(owner), conn)
            gone = everyone or (scheduler.hostname == host and not pid_alive(scheduler.pid))
        except SchedulerNotFound:  # its heartbeat hash expired
            gone = True
        if gone:
            _release_lock(conn, key, _text(owner))


def _recover(conn: redis.Redis, settings: Settings, registry: StartedJobRegistry,
             queue_name: str, execution: Execution) -> bool:
    try:
        job = Job.fetch(execution.job_id, connection=conn, serializer=JSONSerializer)
    except NoSuchJobError:
        conn.zrem(registry.key, execution.composite_key)
        return False
    lost = job.get_status() == JobStatus.STARTED  # else a leftover entry, not a lost job
    requeue = lost and bool(job.retries_left and job.retries_left > 0)
    if requeue:  # queued first: a crash right here leaves it queued, never lost
        job.retries_left = int(job.retries_left or 0) - 1
        queue_for(conn, settings, queue_name).enqueue_job(job, at_front=True)
    with conn.pipeline() as pipe:
        execution.delete(job, pipe)
        if lost and not requeue:
            record_job_failure(job, "its worker died every time it ran (no retries left)",
                               pipe)
        pipe.execute()
    if not lost:
        return False
    match = _JOB_ID.match(job.id)
    if match:  # the flags of a running job: it waits again, and nothing runs meanwhile
        kind, repo_id = match.group(1), int(match.group(2))
        conn.delete(_RUNNING.format(kind=kind, repo_id=repo_id))
        if requeue:
            conn.set(_QUEUED.format(kind=kind, repo_id=repo_id), job.id, nx=True,
                     ex=settings.job_timeout_s)
    log.warning("job %s of dead worker %s %s", job.id, execution.worker_name or "(gone)",
                "requeued" if requeue else "failed: no retries left")
    return requeue


def queue_depth(conn: redis.Redis, settings: Settings) -> dict[str, int]:
    q = index_queue(conn, settings)
    e = embed_queue(conn, settings)
    return {"queued": q.count, "running": q.started_job_registry.count,
            "embed_queued": e.count, "embed_running": e.started_job_registry.count}
