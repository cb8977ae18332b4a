"""Coordination on Redis: one watcher per repository (leases), the sidecars' and
workers' heartbeats, and running again the jobs of workers that died (``requeue_abandoned``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import redis
from rq import worker_registration
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
from codenav.jobs import keys
from codenav.jobs.enqueue import LANES, QUEUES, decode, queue_for
from codenav.proc import pid_alive

log = logging.getLogger("codenav.jobs")

# --- watcher coordination ----------------------------------------------------------------
LEADER_TTL_S = 6


def claim_leadership(conn: redis.Redis, repo_id: int, me: str) -> bool:
    """One watcher per repository: take or renew the lease; False if another holds it."""
    key = keys.LEADER.format(repo_id=repo_id)
    if conn.set(key, me, nx=True, ex=LEADER_TTL_S):
        return True
    if decode(conn.get(key) or b"") == me:
        conn.expire(key, LEADER_TTL_S)
        return True
    return False


def release_leadership(conn: redis.Redis, repo_id: int, me: str) -> None:
    key = keys.LEADER.format(repo_id=repo_id)
    if decode(conn.get(key) or b"") == me:
        conn.delete(key)




def watcher_heartbeat(conn: redis.Redis, me: str) -> None:
    """A sidecar's own heartbeat (whatever it watches), for container healthchecks."""
    conn.set(keys.ALIVE.format(me=me), str(time.time()), ex=LEADER_TTL_S * 2)


def watcher_alive(conn: redis.Redis, host_prefix: str) -> bool:
    """True if a sidecar whose id starts with ``host_prefix`` beat recently."""
    return any(True for _ in conn.scan_iter(match=keys.ALIVE.format(me=host_prefix + "*"),
                                            count=100))


def report_watcher(conn: redis.Redis, repo_id: int, state: dict[str, Any]) -> None:
    conn.set(keys.WATCHER.format(repo_id=repo_id), json.dumps(state), ex=LEADER_TTL_S * 2)


def watcher_state(conn: redis.Redis, repo_id: int) -> dict[str, Any] | None:
    raw = conn.get(keys.WATCHER.format(repo_id=repo_id))
    if raw is None:
        return None
    state: dict[str, Any] = json.loads(decode(raw))
    return state


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
    keys = sorted(decode(k) for k in conn.smembers(worker_registration.REDIS_WORKER_KEYS))
    out = []
    for key in keys:
        data = {decode(k): decode(v) for k, v in conn.hgetall(key).items()}
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
            if queues[-1] in worker.queues:  # a lane's own queue (its others are shared)
                out[lane].append(worker.name)
    return out


def _stale(conn: redis.Redis) -> Callable[[str], bool]:
    alive = {w.name for w in workers(conn) if w.heartbeat_age_s <= STALE_AFTER_S}
    return lambda name: name not in alive


def _register_death(conn: redis.Redis, name: str) -> None:
    """What RQ's ``Worker.register_death`` does, for a worker that could not do it."""
    key = _WORKER_PREFIX + name
    queues = decode(conn.hget(key, "queues") or b"")
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
            composite = decode(raw)
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
            scheduler = RQScheduler.fetch(decode(owner), conn)
            gone = everyone or (scheduler.hostname == host and not pid_alive(scheduler.pid))
        except SchedulerNotFound:  # its heartbeat hash expired
            gone = True
        if gone:
            _release_lock(conn, key, decode(owner))


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
    match = keys.JOB_ID.match(job.id)
    if match:  # the flags of a running job: it waits again, and nothing runs meanwhile
        kind, repo_id = match.group(1), int(match.group(2))
        conn.delete(keys.RUNNING.format(kind=kind, repo_id=repo_id))
        if requeue:
            conn.set(keys.QUEUED.format(kind=kind, repo_id=repo_id), job.id, nx=True,
                     ex=settings.job_timeout_s)
    log.warning("job %s of dead worker %s %s", job.id, execution.worker_name or "(gone)",
                "requeued" if requeue else "failed: no retries left")
    return requeue


