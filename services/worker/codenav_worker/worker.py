"""RQ's forking worker, made to survive faults and to stop quickly.

- The work horse (the process running a job) dies with its worker, so a killed worker never
  leaves a job running unsupervised; the job runs again (``queue.requeue_abandoned``: by
  the supervisor at once, or by any worker's maintenance once the heartbeat is stale).
- A busy worker beats every ``HEARTBEAT_S`` seconds; maintenance runs every 30 s.
- Redis going away is waited out (retried every 2 s at most), not fatal.
- One scheduler serves every lane: each worker's scheduler asks for the locks of all the
  queues in one order, so the first one to start takes them all and the others start none
  (RQ's would run one per lane, each a forked copy of its worker). When its worker dies, its
  locks expire and another worker's maintenance takes them over. It runs in a thread of its
  worker, not in a forked copy (RQ's): a copy held 45 MB resident (20 MB of its own) to
  wake once a second and look at a few Redis keys.
- A stop (SIGTERM, SIGINT) is passed to the horse: the job stops at its next checkpoint
  and asks to be run again (``codenav.jobs.tasks.resumable``); a job still running
  ``HARD_STOP_S`` later is killed and put back at the front of its queue. Either way
  nothing is lost or failed.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from datetime import datetime
from typing import Any

import redis
from rq import Queue
from rq.defaults import DEFAULT_LOGGING_DATE_FORMAT, DEFAULT_LOGGING_FORMAT
from rq.job import Job
from rq.scheduler import RQScheduler
from rq.scripts import acquire_or_refresh_lock
from rq.worker import Worker

from codenav.config import Settings
from codenav.graph.extract import compiled_queries, preload_queries
from codenav.jobs import coordination, enqueue, keys
from codenav.jobs.enqueue import decode
from codenav.parse.chunker import languages_met, preload_grammars
from codenav.proc import die_with_parent

log = logging.getLogger("codenav.worker")

SOFT_STOP_S = 2.0
"""After a stop request, a job that has not reached a checkpoint is interrupted."""
HARD_STOP_S = 4.0
"""...and a horse still alive this long after the request is killed (its job requeued)."""
STOP_SIGNAL = signal.SIGUSR1
"""Worker -> horse: stop at the next checkpoint."""
INTERRUPT_SIGNAL = signal.SIGUSR2
"""Horse, to itself: interrupt the job where it is."""


LISTEN_S = 1.0
"""How long the listener for RQ's worker commands waits for one at a time."""


class ThreadScheduler(RQScheduler):
    """RQ's scheduler, run in a thread of its worker. Its worker's signal handlers stop it
    (``CodenavWorker.stop_scheduler``); it has its own Redis connection, as RQ's process
    has; it dies with its worker, and its pid (the worker's) tells the others so."""

    def start(self) -> threading.Thread:
        self._status = self.Status.STARTED
        self._stop_requested = False
        self._connection = None  # its own connection, made in the thread
        thread = threading.Thread(target=self._run, name="codenav-scheduler", daemon=True)
        # RQ's worker checks ``_process.is_alive()`` in its maintenance and restarts it
        self._process = thread  # type: ignore[assignment]
        thread.start()
        return thread

    def _install_signal_handlers(self) -> None:
        """None: signals belong to the main thread (the worker's)."""

    def acquire_locks(self, auto_start: bool = False) -> set[str]:
        """RQ's, in one order for every scheduler and stopping at the first lock another
        one holds. RQ's walks a set, whose order differs between processes: two workers
        starting together split the locks, and each kept its share until RQ's fallback
        (120 s) let it ask again.

        Its hash (pid, host) is written before it takes a lock: the supervisor frees the
        locks of a scheduler without one as a dead scheduler's, and RQ wrote it only when
        the scheduler's loop began, after the locks were taken."""
        running = self._process is not None and self._process.is_alive()
        if not running:  # a running one's loop keeps its hash
            self.register_birth()
        held: set[str] = set()
        for name in sorted(self._queue_names):
            outcome = acquire_or_refresh_lock(
                self.connection, self.get_locking_key(name), self.name, self.interval + 60)
            if outcome == "taken":
                break
            held.add(name)
        self._scheduled_job_registries = []
        self._acquired_locks = held
        self.lock_acquisition_time = datetime.now()  # type: ignore[assignment]  # RQ: None
        if not held and not running:
            self.register_death()
        if held and auto_start and not running:
            self.start()
        return held

    @property
    def should_reacquire_locks(self) -> bool:
        """Every round (once a second) while it holds fewer than all: the locks of a
        scheduler that died are freed by the supervisor or expire, and are taken at once."""
        return self._acquired_locks != self._queue_names

    def _run(self) -> None:
        try:
            self.work()
        except Exception:  # RQ's maintenance (every 30 s) starts another: read, not tested
            log.exception("scheduler %s stopped on an error", self.name)


class CodenavWorker(Worker):
    max_connection_wait_time = 2.0

    def __init__(self, *args: Any, settings: Settings, **kwargs: Any) -> None:
        kwargs.setdefault("job_monitoring_interval", coordination.HEARTBEAT_S)
        kwargs.setdefault("maintenance_interval", 30)
        super().__init__(*args, **kwargs)
        self.settings = settings
        self._requeue_on_death: str | None = None
        self.learns_languages = False
        """Index and overlay lanes (``preload_languages``)."""
        self._preloaded: set[str] = set()
        self._hard_stop: threading.Timer | None = None

    def subscribe(self) -> None:
        """RQ's, with a listener that wakes every ``LISTEN_S``. RQ's waits up to 60 s for a
        command, and redis-py 8.2 waits for the listener to end when it is stopped,
        so an idle worker took up to a minute to stop."""
        self.pubsub = self.connection.pubsub()
        self.pubsub.subscribe(**{self.pubsub_channel_name: self.handle_payload})
        self.pubsub_thread = self.pubsub.run_in_thread(  # type: ignore[assignment]  # RQ: None
            sleep_time=LISTEN_S, daemon=True, exception_handler=self._pubsub_exception_handler)

    # --- grammars and queries ----------------------------------------------------------
    def preload_languages(self) -> None:
        """Load the grammars and compile the queries of the languages jobs have met
        (``keys.LANGUAGES``) in this process, so the job processes it forks, and their
        parser processes, inherit them. Compiling all 14 languages' queries took 0.5 s and
        left each lane with 50 MB of grammar pages resident; a repository needs a few."""
        self.learns_languages = True
        try:
            learned = {decode(m) for m in self.connection.smembers(keys.LANGUAGES)}
        except redis.RedisError as exc:
            log.warning("worker %s: could not read the languages to preload: %s",
                        self.name, exc)
            return
        new = learned - self._preloaded
        if new:
            preload_grammars(new)
            preload_queries(new)
            self._preloaded |= new

    def fork_work_horse(self, job: Job, queue: Queue) -> None:
        if self.learns_languages:
            self.preload_languages()
        super().fork_work_horse(job, queue)

    # --- the horse ---------------------------------------------------------------------
    def main_work_horse(self, job: Job, queue: Queue) -> None:
        die_with_parent()
        super().main_work_horse(job, queue)

    def perform_job(self, job: Job, queue: Queue, execution: Any) -> bool:
        try:
            return super().perform_job(job, queue, execution)
        finally:
            if self.learns_languages:
                self._record_languages()

    def _record_languages(self) -> None:
        """A language this job's process had to load itself is preloaded from now on."""
        met = (languages_met() | compiled_queries()) - self._preloaded
        if met:
            with contextlib.suppress(redis.RedisError):
                self.connection.sadd(keys.LANGUAGES, *sorted(met))

    def setup_work_horse_signals(self) -> None:
        super().setup_work_horse_signals()
        from codenav.jobs import tasks

        main = threading.main_thread().ident

        def stop(_signum: int, _frame: Any) -> None:
            if tasks.STOP.is_set():
                return
            tasks.STOP.set()
            timer = threading.Timer(SOFT_STOP_S, signal.pthread_kill,
                                    (main, INTERRUPT_SIGNAL))
            timer.daemon = True
            timer.start()

        def interrupt(_signum: int, _frame: Any) -> None:
            tasks.interrupt_now()

        signal.signal(STOP_SIGNAL, stop)
        signal.signal(INTERRUPT_SIGNAL, interrupt)

    @property
    def dequeue_timeout(self) -> int:
        """An idle worker wakes at least every maintenance interval, so its maintenance
        (abandoned jobs, taking over a dead worker's scheduler) runs on time: RQ's waits
        ``worker_ttl - 15`` (405 s) for a job between two rounds."""
        return min(super().dequeue_timeout, int(self.maintenance_interval))

    # --- the scheduler -----------------------------------------------------------------
    def _start_scheduler(self, burst: bool = False, logging_level: str | None = "INFO",
                         date_format: str = DEFAULT_LOGGING_DATE_FORMAT,
                         log_format: str = DEFAULT_LOGGING_FORMAT) -> None:
        """RQ's, with the scheduler asking for every queue's lock, not only this lane's
        (see the module's docstring)."""
        self.scheduler = ThreadScheduler(
            list(enqueue.QUEUES), connection=self.connection,
            logging_level=logging_level if logging_level is not None else self.log.level,
            date_format=date_format, log_format=log_format, serializer=self.serializer)
        self.scheduler.acquire_locks()
        if not self.scheduler.acquired_locks:
            return  # another worker's scheduler serves them (maintenance asks again)
        if burst:
            try:
                self.scheduler.register_birth()
                self.scheduler.enqueue_scheduled_jobs()
            finally:
                self.scheduler.release_locks()
                self.scheduler.register_death()
        else:
            self.scheduler.start()

    def stop_scheduler(self) -> None:
        """Ask the scheduler thread to stop and wait for it (it releases its locks): RQ's
        signals a process."""
        scheduler = self.scheduler
        thread = scheduler._process if scheduler is not None else None
        if scheduler is None or thread is None or thread is threading.current_thread():
            return
        scheduler.request_stop()
        thread.join(timeout=scheduler.interval + 5.0)

    # --- the worker --------------------------------------------------------------------
    def handle_warm_shutdown_request(self) -> None:
        horse = self.horse_pid
        if not horse:
            log.info("worker %s: stopping", self.name)
            return
        job_id = self.get_current_job_id()
        log.info("worker %s: stopping; job %s stops at its next checkpoint", self.name, job_id)
        with contextlib.suppress(ProcessLookupError):
            os.kill(horse, STOP_SIGNAL)

        def kill() -> None:
            if self.horse_pid == horse:
                log.warning("worker %s: job %s did not stop in %.0fs; it is killed and "
                            "runs again at the next start", self.name, job_id, HARD_STOP_S)
                self._requeue_on_death = job_id
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(horse, signal.SIGKILL)

        self._hard_stop = threading.Timer(HARD_STOP_S, kill)
        self._hard_stop.daemon = True
        self._hard_stop.start()

    def handle_job_failure(self, job: Job, queue: Queue, started_job_registry: Any = None,
                           exc_string: str = "", execution: Any = None) -> None:
        if job.id != self._requeue_on_death:
            super().handle_job_failure(job, queue, started_job_registry, exc_string, execution)
            return
        self._requeue_on_death = None  # killed on purpose at a stop: back to the front
        with self.connection.pipeline() as pipe:
            self.cleanup_execution(job, pipeline=pipe, execution=execution)
            queue.enqueue_job(job, pipeline=pipe, at_front=True)
            pipe.execute()

    def maintain_heartbeats(self, job: Job, execution: Any) -> None:
        try:
            super().maintain_heartbeats(job, execution)
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            log.warning("worker %s: heartbeat missed, the queue is unreachable (%s)",
                        self.name, type(exc).__name__)

    def run_maintenance_tasks(self) -> None:
        super().run_maintenance_tasks()
        try:
            coordination.requeue_abandoned(self.connection, self.settings)
        except redis.RedisError as exc:
            log.warning("worker %s: could not look for abandoned jobs: %s", self.name, exc)

    def teardown(self) -> None:
        if self._hard_stop is not None:
            self._hard_stop.cancel()
        super().teardown()
