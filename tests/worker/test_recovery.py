"""Workers under faults, with real worker processes, a real Redis and a real Postgres: a
killed worker's job runs again, a stopped worker's job stops at a checkpoint and queues
itself again, and the lanes keep their work apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
import redis
from rq.job import Job, JobStatus
from rq.scheduler import RQScheduler
from rq.serializers import JSONSerializer

from codenav import repos
from codenav.config import Settings
from codenav.index.walk import walk
from codenav.jobs import coordination, enqueue, keys
from codenav.proc import kill_group
from tests.core.jobs.test_tasks import _stdlib_sample


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        assert time.monotonic() < deadline, f"{what} not within {timeout:.0f}s"
        time.sleep(0.05)
    return value


def _worker(env: dict[str, str], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "codenav_worker", *args], env=env,
                            start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def _progress(conn: psycopg.Connection) -> bool:
    row = conn.execute("SELECT files_done, files_total FROM index_runs WHERE state = "
                       "'running' ORDER BY id DESC LIMIT 1").fetchone()
    return bool(row and 0 < row[0] < row[1])


def _job(r: redis.Redis, job_id: str) -> Job:
    return Job.fetch(job_id, connection=r, serializer=JSONSerializer)


def _indexed(conn: psycopg.Connection) -> set[str]:
    return {p for (p,) in conn.execute("SELECT path FROM files")}


@pytest.fixture
def sample(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> repos.Repo:
    return repos.register(conn, str(_stdlib_sample(tmp_path, limit=600)), "stdlib")


def _kill_mid_job(settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
                  repo: repos.Repo) -> tuple[str, str]:
    """A worker SIGKILLed (the worker process only, as the OOM killer does) during a job;
    its job's processes die with it. Returns (job id, worker name)."""
    r = redis.Redis.from_url(settings.redis_url)
    job_id = enqueue.request_full(r, settings, repo.id)
    assert job_id is not None
    name = "victim"
    proc = _worker(service_env, "--name", name)
    wait_until(lambda: _progress(conn), 120, "the job making progress")
    tree = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    kill_group(proc.pid)  # what the supervisor does: its scheduler goes too
    _gone, alive = psutil.wait_procs(tree, timeout=20)
    assert not alive, [p.cmdline() for p in alive]  # the horse and its parsers died with it
    assert _job(r, job_id).get_status() == JobStatus.STARTED  # what RQ alone leaves
    return job_id, name


def test_a_killed_workers_job_goes_back_to_the_front_of_its_queue_and_converges(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        sample: repos.Repo) -> None:
    job_id, name = _kill_mid_job(settings, service_env, conn, sample)
    r = redis.Redis.from_url(settings.redis_url)
    enqueue.request_paths(r, settings, sample.id, ["a_path_saved_meanwhile.py"])
    assert coordination.requeue_abandoned(r, settings, dead=[name]) == [job_id]
    job = _job(r, job_id)
    assert job.get_status() == JobStatus.QUEUED and job.retries_left == enqueue.RETRY.max - 1
    assert enqueue.index_queue(r, settings).job_ids[0] == job_id  # ahead of later work
    assert enqueue.request_full(r, settings, sample.id) == job_id  # still coalesces onto it
    assert not any(w.name == name for w in coordination.workers(r))  # its death is registered
    _worker(service_env, "--burst").wait(300)
    assert _job(r, job_id).get_status() == JobStatus.FINISHED
    expected = {f.path for f in walk(Path(sample.root), settings.max_file_bytes).files}
    assert _indexed(conn) == expected
    assert conn.execute("SELECT count(*) FROM index_runs WHERE state = 'running'"
                        ).fetchone() == (0,)


def test_a_job_that_kills_its_worker_every_time_ends_failed_with_the_reason(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        sample: repos.Repo) -> None:
    job_id, name = _kill_mid_job(settings, service_env, conn, sample)
    r = redis.Redis.from_url(settings.redis_url)
    job = _job(r, job_id)
    job.retries_left = 0  # as after its earlier deaths
    job.save()
    assert coordination.requeue_abandoned(r, settings, dead=[name]) == []
    job = _job(r, job_id)
    assert job.get_status() == JobStatus.FAILED
    assert "its worker died every time it ran" in (job.exc_info or "")
    assert enqueue.request_full(r, settings, sample.id) != job_id  # a new request is queued


def test_a_stopped_worker_interrupts_its_job_at_a_checkpoint_and_queues_it_again(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        sample: repos.Repo) -> None:
    r = redis.Redis.from_url(settings.redis_url)
    job_id = enqueue.request_full(r, settings, sample.id)
    assert job_id is not None
    proc = _worker(service_env)
    wait_until(lambda: _progress(conn), 120, "the job making progress")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    job = _job(r, job_id)
    assert job.get_status() == JobStatus.FINISHED  # not failed, no retry used
    result = job.return_value()
    assert isinstance(result, dict) and result["interrupted"] is True
    again = result["again"]
    assert again and again != job_id and enqueue.waiting(r, sample.id)["full"] == again
    run = conn.execute("SELECT state, error FROM index_runs ORDER BY id DESC LIMIT 1"
                       ).fetchone()
    assert run is not None and run[0] == "stopped" and "runs again" in run[1]
    kept = _indexed(conn)  # a first index keeps what it published before it stopped
    _worker(service_env, "--burst").wait(300)
    expected = {f.path for f in walk(Path(sample.root), settings.max_file_bytes).files}
    assert kept <= _indexed(conn) == expected
    parsed = conn.execute("SELECT files_parsed FROM index_runs ORDER BY id DESC LIMIT 1"
                          ).fetchone()
    assert parsed is not None and parsed[0] <= len(expected) - len(kept) + 64


def test_an_embed_lane_worker_leaves_index_jobs_to_the_index_lane(
        settings: Settings, service_env: dict[str, str], sample: repos.Repo) -> None:
    r = redis.Redis.from_url(settings.redis_url)
    job_id = enqueue.request_full(r, settings, sample.id)
    assert job_id is not None
    env = {k: v for k, v in service_env.items() if k != "CODENAV_EMBED_URL"}
    assert _worker(env, "--lane", "embed", "--burst").wait(120) == 0
    assert _job(r, job_id).get_status() == JobStatus.QUEUED
    assert enqueue.index_queue(r, settings).job_ids == [job_id]


def test_a_coalescing_flag_whose_job_is_gone_does_not_hold_back_new_requests(
        settings: Settings, sample: repos.Repo) -> None:
    r = redis.Redis.from_url(settings.redis_url)
    r.set(f"codenav:queued:full:{sample.id}", "full-1-000000000000")  # its job was lost
    job_id = enqueue.request_full(r, settings, sample.id)
    assert job_id is not None and job_id != "full-1-000000000000"
    assert enqueue.index_queue(r, settings).job_ids == [job_id]
    assert enqueue.request_full(r, settings, sample.id) == job_id


def test_workers_of_a_stack_that_died_whole_are_all_recovered_at_the_next_start(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        sample: repos.Repo) -> None:
    job_id, _name = _kill_mid_job(settings, service_env, conn, sample)
    r = redis.Redis.from_url(settings.redis_url)
    assert coordination.requeue_abandoned(r, settings, everyone=True) == [job_id]
    assert coordination.workers(r) == []
    assert r.keys("rq:scheduler-lock:*") == []  # the next workers' schedulers take over


def test_one_scheduler_thread_serves_the_queues_of_every_lane(
        settings: Settings, service_env: dict[str, str]) -> None:
    """Workers of two lanes: the first scheduler takes every queue's lock (the embed
    queue's too, though no embed worker runs). It runs in a thread of its worker: neither
    worker forks a process for it. It moves a job due later onto its queue. When the
    worker holding the locks is killed, the other one's maintenance takes them over; a
    worker that stops releases them."""
    r = redis.Redis.from_url(settings.redis_url)
    workers = [_worker(service_env, "--lane", "index"), _worker(service_env, "--lane", "overlay")]
    keys = [RQScheduler.get_locking_key(name) for name in enqueue.QUEUES]
    try:
        owners = wait_until(lambda: all(o := r.mget(keys)) and o, 60, "every queue's lock")
        assert len(set(owners)) == 1, owners
        wait_until(lambda: len(coordination.workers(r)) == 2,
                   60, "both workers registered")
        time.sleep(1.0)  # a scheduler process, if one were forked, would be there by now
        children = [c for w in workers for c in psutil.Process(w.pid).children()]
        assert children == [], [c.cmdline() for c in children]
        holder = RQScheduler.fetch(owners[0].decode(), r).pid
        owner = next(w for w in workers if w.pid == holder)
        other = next(w for w in workers if w is not owner)
        # a job due in a second on the embed queue (no worker takes it): only a running
        # scheduler moves it onto the queue
        queue = enqueue.queue_for(r, settings, enqueue.EMBED_QUEUE)
        due = queue.enqueue_in(timedelta(seconds=1), "builtins.len", "due")
        wait_until(lambda: due.id in queue.job_ids, 30, "the due job queued")
        queue.empty()
        # the owner is killed (with its process group, as the supervisor does); the
        # supervisor frees the dead scheduler's locks, and the other worker takes them
        owner.send_signal(signal.SIGKILL)
        owner.wait(10)
        kill_group(owner.pid)
        coordination.requeue_abandoned(r, settings)
        # its maintenance runs every 30 s, idle or not
        taken = wait_until(lambda: all(o := r.mget(keys)) and len(set(o)) == 1
                           and o[0] != owners[0] and o, 75, "every lock taken over")
        assert RQScheduler.fetch(taken[0].decode(), r).pid == other.pid
        other.send_signal(signal.SIGTERM)
        assert other.wait(30) == 0
        assert r.mget(keys) == [None] * len(keys)  # released at the stop, not left to expire
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait(30)
            kill_group(w.pid)


def test_schedulers_take_the_locks_in_one_order_and_a_freed_one_at_once(
        settings: Settings) -> None:
    """Two schedulers asking together cannot split the locks: both ask in one order and
    stop at the first one another holds. One holding fewer than all asks again every
    round, so a lock freed by a dead scheduler is taken within a second, not after RQ's
    120 s fallback."""
    from codenav_worker.worker import ThreadScheduler

    r = redis.Redis.from_url(settings.redis_url)
    names = sorted(enqueue.QUEUES)
    keys_ = [RQScheduler.get_locking_key(name) for name in names]
    first = ThreadScheduler(list(reversed(names)), connection=r)
    second = ThreadScheduler(names, connection=r)
    assert first.acquire_locks() == set(names)
    assert second.acquire_locks() == set()
    first.release_locks()
    # a dead scheduler still holds the middle lock: the next one takes those before it
    r.set(keys_[1], "dead-scheduler", ex=60)
    assert second.acquire_locks() == {names[0]}
    second.start()
    try:
        r.delete(keys_[1])  # the supervisor frees it
        wait_until(lambda: r.mget(keys_) == [second.name.encode()] * len(keys_), 5,
                   "every lock taken by the running scheduler")
    finally:
        second.request_stop()
        thread = second._process
        assert thread is not None
        thread.join(10)
    assert r.mget(keys_) == [None] * len(keys_)


def test_a_scheduler_that_has_just_taken_its_locks_is_not_freed_as_dead(
        settings: Settings) -> None:
    """The supervisor frees the locks of a scheduler that has no hash. A worker's
    maintenance takes the locks and then starts the scheduler's loop: the hash is written
    before the locks are taken, not by the loop (it was, and a sweep in between freed a
    live scheduler's locks). One that took none leaves no hash behind."""
    from codenav_worker.worker import ThreadScheduler

    r = redis.Redis.from_url(settings.redis_url)
    names = sorted(enqueue.QUEUES)
    keys_ = [RQScheduler.get_locking_key(name) for name in names]
    first = ThreadScheduler(names, connection=r)
    second = ThreadScheduler(names, connection=r)
    try:
        assert first.acquire_locks() == set(names)
        coordination.requeue_abandoned(r, settings)
        assert r.mget(keys_) == [first.name.encode()] * len(keys_)
        assert RQScheduler.fetch(first.name, r).pid == os.getpid()
        assert second.acquire_locks() == set()
        assert not r.exists(second.key)
    finally:
        first.release_locks()
        first.register_death()


def test_a_stop_during_a_graph_build_interrupts_it_without_a_failure_and_it_runs_again(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        tmp_path: Path) -> None:
    repo = repos.register(conn, str(_stdlib_sample(tmp_path, limit=1200)), "stdlib")
    r = redis.Redis.from_url(settings.redis_url)
    enqueue.request_full(r, settings, repo.id)
    proc = _worker(service_env)
    # The graph job has no checkpoint: the stop interrupts it where it is (or kills it).
    wait_until(lambda: r.exists(f"codenav:running:graph:{repo.id}"), 300, "the graph build")
    graph_job = enqueue.waiting(r, repo.id)["graph"].removeprefix("running (").rstrip(")")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    assert _job(r, graph_job).get_status() != JobStatus.FAILED
    waiting = enqueue.waiting(r, repo.id)
    assert "graph" in waiting and not waiting["graph"].startswith("running")
    _worker(service_env, "--burst").wait(300)
    built = conn.execute("SELECT files_resolved FROM graph_state WHERE repo_id = %s",
                         (repo.id,)).fetchone()
    assert built is not None and built[0] > 0
    assert enqueue.waiting(r, repo.id) == {}



def test_a_stopping_worker_does_not_wait_for_its_command_listener(settings: Settings) -> None:
    """RQ's command listener, once unsubscribed, waited up to a minute for a command, and
    redis-py (from 8.2) waits for it to end when stopping it: a worker's stop hung there.
    The listener is put in that state, then the worker unsubscribes as a stop does."""
    import threading

    from codenav_worker.worker import HARD_STOP_S, CodenavWorker

    r = redis.Redis.from_url(settings.redis_url)
    worker = CodenavWorker(["listener-test"], connection=r, settings=settings)
    worker.subscribe()
    pubsub = worker.pubsub
    assert pubsub is not None
    wait_until(lambda: pubsub.subscribed, 10, "the listener subscribing")
    pubsub.unsubscribe()
    wait_until(lambda: not pubsub.subscribed, 10, "the listener reading its unsubscription")
    time.sleep(0.3)  # back in its wait for a message, now unsubscribed
    stopping = threading.Thread(target=worker.unsubscribe, daemon=True)
    stopping.start()
    stopping.join(HARD_STOP_S)
    assert not stopping.is_alive(), "the worker's stop waits for its command listener"


def _grammars_mapped(pid: int) -> set[str]:
    """The language-pack grammars a process has loaded (their libraries in its maps)."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {Path(line.split()[-1]).name.removesuffix(".abi3.so") for line in maps.splitlines()
            if "tree_sitter_language_pack/bindings/" in line}


def test_an_index_worker_preloads_only_the_languages_jobs_have_met(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        tmp_path: Path) -> None:
    """A worker loads no grammar for a language no job has met. A job's process records
    the languages it had to load; the next worker (and the next job's fork) loads them
    before forking, so its jobs inherit them."""
    r = redis.Redis.from_url(settings.redis_url)
    r.delete(keys.LANGUAGES)
    root = tmp_path / "poly"
    root.mkdir()
    (root / "app.py").write_text("def main():\n    return helper()\n\n\ndef helper():\n"
                                 "    return 1\n")
    (root / "Main.java").write_text("class Main {\n  int run() { return new Main().hashCode(); }\n"
                                    "}\n")
    repo = repos.register(conn, str(root), "poly")
    idle = _worker(service_env, "--lane", "overlay", "--name", "idle")
    try:
        wait_until(lambda: any(w.name == "idle" for w in coordination.workers(r)), 60,
                   "the worker registered")  # it loads what it preloads before that
        assert _grammars_mapped(idle.pid) == set()
    finally:
        idle.send_signal(signal.SIGTERM)
        idle.wait(30)
    enqueue.request_full(r, settings, repo.id)
    assert _worker(service_env, "--burst").wait(300) == 0
    assert {"python", "java"} <= {m.decode() for m in r.smembers(keys.LANGUAGES)}
    assert conn.execute("SELECT count(*) FROM graph_edges").fetchone() != (0,)
    warm = _worker(service_env, "--lane", "overlay")
    try:
        loaded = wait_until(lambda: {"python", "java"} <= (g := _grammars_mapped(warm.pid))
                            and g, 60, "the grammars loaded")
        assert "ruby" not in loaded, loaded
    finally:
        warm.send_signal(signal.SIGTERM)
        warm.wait(30)
