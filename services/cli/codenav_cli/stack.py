"""``codenav up``: the whole stack as local processes on embedded defaults, supervised.

Store (Postgres) and queue (Redis) come from wheels; api, workers, watcher and embedder are
the entrypoints the containers run, started as ``python -P -m ...`` so the current directory
never shadows an installed package. State lives in ``$CODENAV_HOME`` (``codenav_cli.homedir``
sets each part's mode on every start); ``stack.json`` tells clients where the API is.

The supervisor (a thread) restarts every child that dies, after a backoff that doubles with
each quick death (0.5 s up to 30 s): Postgres and Redis come back on the same port, so every
client keeps its URL, and the embedder listens on a socket the stack bound and holds until
it stops (no other process can take its port); the jobs a dead worker was running go back
to the front of their queue at once, and each worker incarnation has a name of its own. The
API keeps answering while a worker or the embedder is down (lexical results, ``status`` says
what is degraded) and says 503 with the reason for what needs a store or queue that is down.
Only a crash loop (a child dying ``CRASH_LOOP`` times in a row, each soon after its start)
stops the stack, with the reason and the child's last log line.

Stopping takes a few seconds: the watcher, API and workers first (a job in hand stops at its
next checkpoint and is queued again), then the embedder, then the queue and the store.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar

import httpx
import redis

from codenav import roots
from codenav.access import DEFAULT_TEAM
from codenav.auth import create_token, revoke_token
from codenav.config import Settings
from codenav.db import migrations
from codenav.db.connect import connect
from codenav.errors import CodenavError, Unavailable
from codenav.jobs import coordination, enqueue
from codenav.proc import child_env, group_alive, kill_group, python_argv
from codenav.repos import list_repos
from codenav_cli import homedir, pgseed
from codenav_cli.stores import (
    EmbeddedPostgres,
    EmbeddedRedis,
    free_port,
    port_taken,
    stop_process,
)

TICK_S = 0.2
STABLE_S = 20.0
"""A child that ran this long before dying starts its backoff over."""
BACKOFF_S = (0.5, 30.0)
CRASH_LOOP = 5
"""Quick deaths in a row that stop the stack."""
PORT_TRIES = 3
"""Starts of the store or the queue on a fresh port when the one chosen was taken."""
DataStore = TypeVar("DataStore", EmbeddedPostgres, EmbeddedRedis)
SERVICES_STOP_S = 5.5
"""Watcher, API and workers get this long to stop before they are killed (a worker's own
hard stop comes first, at 4 s); then the embedder and the data stores: at most 10 s."""
EMBEDDER_STOP_S = 1.5
DATA_STOP_S = 3.0


class CrashLoop(Unavailable):
    """A child keeps dying right after its start."""


@dataclass
class Child:
    name: str
    spawn: Callable[[Child], subprocess.Popen[bytes]]
    ready: Callable[[], bool] | None = None
    """Whether a started child serves (None: once started)."""
    lane: str | None = None
    """The worker lane of a worker: its jobs are recovered when it dies."""
    log_path: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    worker_name: str = ""
    started_at: float = 0.0
    restarts: int = 0
    quick_deaths: int = 0
    restart_at: float = 0.0
    is_ready: bool = False
    down_since: float = 0.0
    log_from: int = 0
    """The size of its log when it was last started: what this incarnation wrote follows."""

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class Stack:
    settings: Settings
    port: int
    workers: int = 1
    embed_workers: int = 1
    out: IO[str] = field(default=sys.stderr)
    children: list[Child] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    token: str = ""
    repos: list[str] = field(default_factory=list)
    """Directories ``codenav up --repo`` registers: allowed roots of this stack."""
    seed: Path | None = None
    """A snapshot imported before the first index (``codenav up --seed``)."""
    seeded: dict[str, Any] = field(default_factory=dict)
    """What the seed import did (empty: no seed, or skipped)."""
    fatal: str = ""
    """Why the supervisor stopped the stack (a crash loop), if it did."""
    _token_id: int = 0
    _lock: IO[str] | None = None
    _pg: EmbeddedPostgres | None = None
    _redis: EmbeddedRedis | None = None
    _supervisor: threading.Thread | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _say_lock: threading.Lock = field(default_factory=threading.Lock)
    _dead_workers: set[str] = field(default_factory=set)
    _queue_conn: redis.Redis | None = None
    _embed_sock: socket.socket | None = None

    @property
    def home(self) -> Path:
        return self.settings.home_path

    def say(self, line: str) -> None:
        with self._say_lock:
            self.out.write(f"codenav: {line}\n")
            self.out.flush()

    # --- start -------------------------------------------------------------------------
    def _acquire_home(self) -> None:
        homedir.prepare(self.home, homedir.store_user())
        self._lock = (self.home / "stack.lock").open("a+")
        os.chmod(self.home / "stack.lock", 0o600)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock.close()
            self._lock = None
            raise Unavailable(f"another `codenav up` is running with {self.home}",
                              hint="stop it first, or set CODENAV_HOME to another "
                              "directory") from None
        self._lock.seek(0)
        self._lock.truncate()
        self._lock.write(str(os.getpid()))
        self._lock.flush()

    def start(self) -> None:
        self._acquire_home()
        self.say(f"state in {self.home}")
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = child_env({**os.environ, "CODENAV_HOME": str(self.home),
                              "CODENAV_API_PORT": str(self.port),
                              "CODENAV_API_HOST": "127.0.0.1"})
        embed_url = self.settings.embed_url
        services: list[Child] = []
        if not embed_url and importlib.util.find_spec("codenav_embedder"):
            # The embedder loads its model in the background; until it is ready, answers are
            # lexical and say so, and embed workers wait for it.
            # Its socket is bound here and inherited: no other process can take the port
            # before the embedder listens, nor while a dead one restarts.
            self._embed_sock = sock = _reserved_socket()
            embed_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
            self.env["CODENAV_EMBED_URL"] = embed_url
            services.append(self._service("embedder", ["codenav_embedder", "--fd",
                                                       str(sock.fileno())],
                                          ready=lambda: _http_ok(f"{embed_url}/readyz"),
                                          pass_fds=(sock.fileno(),)))
        embedder = next((c for c in services if c.name == "embedder"), None)
        if embedder is not None:  # its model loads while the store starts, migrates, seeds
            self._start(embedder)
            self.children = [embedder]  # stopped with the rest if the start fails
        if self.seed is not None and pgseed.is_physical(self.seed):
            self._restore_seed()
        # Ports chosen once: a restarted store or queue comes back on the same one.
        pg = self._pg = EmbeddedPostgres(self.home, free_port())
        rd = self._redis = EmbeddedRedis(self.home, free_port())
        store = Child("store", _spawner(pg), pg.ready, log_path=pg.log_path)
        queue_child = Child("queue", _spawner(rd), rd.ready, log_path=rd.log_path)
        self.children += [store, queue_child]
        for child in (store, queue_child):  # both at once, then wait for both
            self._start(child)
        store, pg = self._serve_on_free_port(store, pg, 60.0)
        queue_child, rd = self._serve_on_free_port(queue_child, rd, 30.0)
        self._pg, self._redis = pg, rd
        pg.ensure_database()
        self.env.update({"CODENAV_DATABASE_URL": pg.url, "CODENAV_REDIS_URL": rd.url})
        settings = Settings.load(env=self.env)
        with connect(settings) as conn:
            migrations.migrate(conn)
            self._rotate_token(conn)
            if self.seed is not None and not pgseed.is_physical(self.seed):
                self._import_seed(conn, settings, embedder, embed_url)
            allowed = local_roots(settings, self.repos, [r.root for r in list_repos(conn)])
        self.env["CODENAV_ALLOWED_ROOTS"] = ",".join(allowed)
        self._queue_conn = enqueue.connect_redis(settings)
        recovered = coordination.requeue_abandoned(self._queue_conn, settings, everyone=True)
        if recovered:
            self.say(f"{len(recovered)} job(s) interrupted by the last stop run again")
        services.append(self._service("api", ["codenav_api", "--no-migrate"],
                                      ready=lambda: _http_ok(f"{self.url}/readyz")))
        services += [self._service(f"worker-{i + 1}", ["codenav_worker", "--lane", "index"],
                                   lane="index") for i in range(self.workers)]
        # developers' overlays never wait behind a bulk index job of the index workers
        services.append(self._service("overlay-worker", ["codenav_worker", "--lane", "overlay"],
                                      lane="overlay"))
        if embed_url:
            services += [self._service(f"embed-worker-{i + 1}", ["codenav_worker", "--lane",
                                                                  "embed"], lane="embed")
                         for i in range(self.embed_workers)]
        services.append(self._service("watcher", ["codenav_watcher"]))
        self.children += [child for child in services if child is not embedder]
        for child in services:
            if child is not embedder:
                self._start(child)
        self._supervisor = threading.Thread(target=self._supervise, name="codenav-supervisor",
                                            daemon=True)
        self._supervisor.start()
        api = next(c for c in self.children if c.name == "api")
        self._wait_for(api, 60.0)
        self._write_stack_file(pg.url)

    def _restore_seed(self) -> None:
        """A physical seed becomes the store of an empty home before the store starts."""
        assert self.seed is not None
        self.seeded = pgseed.restore(self.home, self.seed, homedir.store_user())
        if self.seeded.get("skipped"):
            self.say(f"seed {self.seed.name} skipped: {self.seeded['skipped']}")
            return
        names = ", ".join(r["name"] for r in self.seeded["repos"]) or "no repository"
        self.say(f"seeded the store from {self.seed.name} ({names}; "
                 f"{self.seeded['bytes'] / 1e6:.0f} MB of data files) in "
                 f"{self.seeded['seconds']}s")

    def _import_seed(self, conn: Any, settings: Settings, embedder: Child | None,
                     embed_url: str) -> None:
        """Import the seed snapshot before anything indexes: the first reconcile then reads
        and hashes the files, and parses only what differs from the seed. Skipped when the
        store already holds one of its repositories (a restart with the same ``--seed``)."""
        from codenav import admin, snapshot
        from codenav.access import Caller

        assert self.seed is not None
        manifest = snapshot.read_manifest(self.seed)
        mapped = snapshot.map_roots(manifest, self.repos)
        allowed = Settings.load(env={**self.env, "CODENAV_ALLOWED_ROOTS": ",".join(
            local_roots(settings, self.repos, []))}, dotenv=Path("/nonexistent"))

        def model() -> tuple[str, int] | None:
            """The embedder's model, once it has loaded (it loads meanwhile)."""
            if embedder is None and not embed_url:
                return None
            if embedder is not None:
                try:
                    self._wait_for(embedder, 180.0)
                except Unavailable as exc:  # it is restarted later; the model is unknown
                    self.say(f"seed: the embedder is not ready ({exc.message}); the seed's "
                             "vectors are imported without checking its model")
                    return None
            from codenav.embed.client import served_model

            return served_model(embed_url, settings.embed_model, settings.embed_key, 60.0)

        self.seeded = admin.snapshot_import(conn, allowed, Caller.operator(), self.seed,
                                            mapped, model=model, skip_existing=True)
        if self.seeded.get("skipped"):
            self.say(f"seed {self.seed.name} skipped: {self.seeded['skipped']}")
        phases = ", ".join(f"{k} {v}s" for k, v in self.seeded.get("phases", {}).items())
        for repo in self.seeded["repos"]:
            self.say(f"seeded {repo['team']}/{repo['name']} at {repo['root']} from "
                     f"{self.seed.name} in {self.seeded['seconds']}s "
                     f"({self.seeded['rows']['files']} files, "
                     f"{self.seeded['rows']['embeddings']} vectors; {phases})")

    def _service(self, name: str, module_args: list[str], *, lane: str | None = None,
                 ready: Callable[[], bool] | None = None,
                 pass_fds: tuple[int, ...] = ()) -> Child:
        log_path = self.home / "logs" / f"{name}.log"

        def spawn(child: Child) -> subprocess.Popen[bytes]:
            argv = python_argv(*module_args)
            if child.lane:  # a name of its own per incarnation: RQ refuses a reused one
                child.worker_name = coordination.worker_name(child.lane)
                argv += ["--name", child.worker_name]
            with log_path.open("ab") as log:
                return subprocess.Popen(argv, env=self.env, stdout=log,
                                        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                        start_new_session=True, pass_fds=pass_fds)

        return Child(name, spawn, ready, lane=lane, log_path=log_path)

    def _start(self, child: Child) -> None:
        log = child.log_path
        child.log_from = log.stat().st_size if log is not None and log.is_file() else 0
        child.proc = child.spawn(child)
        child.started_at = time.monotonic()
        child.is_ready = child.ready is None

    def _wait_for(self, child: Child, timeout: float) -> None:
        """Block until ``child`` is ready (the supervisor, if running, restarts it)."""
        deadline = time.monotonic() + timeout
        delay = 0.02
        while time.monotonic() < deadline:
            if self.fatal:
                raise CrashLoop(self.fatal)
            if self._supervisor is None:  # before the supervisor runs: fail fast
                assert child.proc is not None
                if child.proc.poll() is not None:
                    raise Unavailable(f"{child.name} exited with code {child.proc.returncode} "
                                      "while starting", hint=_last_line(child.log_path))
                if child.ready is None or child.ready():
                    child.is_ready = True
                    return
            elif child.is_ready:
                return
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)
        raise Unavailable(f"{child.name} did not become ready in {timeout:.0f}s",
                          hint=f"see {child.log_path}")

    def _serve_on_free_port(self, child: Child, data: DataStore,
                            timeout: float) -> tuple[Child, DataStore]:
        """Wait for the store or queue, started on a port that was free a moment before.
        Another process can take that port first (any outgoing connection is given a free
        port too): then it starts again on a new one, ``PORT_TRIES`` times at most."""
        for attempt in range(1, PORT_TRIES + 1):
            try:
                self._wait_for(child, timeout)
                return child, data
            except Unavailable:
                if attempt == PORT_TRIES or child.log_path is None or \
                        not port_taken(child.log_path, child.log_from):
                    raise
            taken = data.port
            data = type(data)(self.home, free_port())
            fresh = Child(child.name, _spawner(data), data.ready, log_path=data.log_path)
            self.children[self.children.index(child)] = fresh
            child = fresh
            self.say(f"{child.name}: port {taken} was taken; starting on {data.port}")
            self._start(child)
        raise AssertionError("unreachable")  # pragma: no cover

    def _rotate_token(self, conn: Any) -> None:
        previous = self.home / "stack.json"
        if previous.is_file():
            with contextlib.suppress(ValueError, OSError, KeyError):
                old = json.loads(previous.read_text(encoding="utf-8"))
                if old.get("token_id"):
                    revoke_token(conn, int(old["token_id"]))
        # the default team's admin: this machine's user administers the local stack
        self.token, self._token_id = create_token(conn, "codenav up (local stack)", "admin",
                                                  DEFAULT_TEAM, created_by="codenav up")

    def _write_stack_file(self, database_url: str) -> None:
        path = self.home / "stack.json"
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"url": self.url, "token": self.token, "token_id": self._token_id,
                       "pid": os.getpid(), "database_url": database_url,
                       "redis_url": self.env["CODENAV_REDIS_URL"],
                       "embed_url": self.env.get("CODENAV_EMBED_URL", ""),
                       "started_at": time.time()}, handle, indent=2)
        os.replace(tmp, path)

    # --- supervision -------------------------------------------------------------------
    def _supervise(self) -> None:
        while not self._stopping.wait(TICK_S):
            try:
                self.check()
            except CrashLoop as exc:
                self.fatal = exc.message + (f" ({exc.hint})" if exc.hint else "")
                os.kill(os.getpid(), signal.SIGTERM)  # the main thread stops the stack
                return
            except Exception as exc:  # noqa: BLE001 - supervision must go on
                self.say(f"supervisor: {type(exc).__name__}: {exc}")

    def check(self) -> None:
        """One round: note deaths, restart what is due, notice what became ready."""
        now = time.monotonic()
        for child in self.children:
            if self._stopping.is_set():
                return
            if child.proc is None:
                if now >= child.restart_at:
                    self._start(child)
            elif child.proc.poll() is not None:
                self._died(child, now)
            elif not child.is_ready:
                if child.ready is not None and child.ready():
                    child.is_ready = True
                    if child.restarts:
                        self.say(f"{child.name} is back ({now - child.down_since:.1f}s after "
                                 "it died)")
            elif child.quick_deaths and now - child.started_at > STABLE_S:
                child.quick_deaths = 0
        if self._dead_workers:
            self._recover_jobs()

    def _died(self, child: Child, now: float) -> None:
        assert child.proc is not None
        code = child.proc.returncode
        how = f"signal {-code}" if code < 0 else f"code {code}"
        # Whatever it started in its session goes too (Postgres' backends, a worker's
        # horse and its parser processes), so the next incarnation starts clean.
        kill_group(child.proc.pid, signal.SIGKILL, wait=5.0)
        if child.lane and child.worker_name:
            self._dead_workers.add(child.worker_name)
        child.quick_deaths = child.quick_deaths + 1 if now - child.started_at < STABLE_S else 1
        if child.quick_deaths >= CRASH_LOOP:
            raise CrashLoop(f"{child.name} keeps dying ({child.quick_deaths} times in a row, "
                            f"last with {how})", hint=_last_line(child.log_path))
        delay = min(BACKOFF_S[0] * 2 ** (child.quick_deaths - 1), BACKOFF_S[1])
        self.say(f"{child.name} exited ({how}); restarting it in {delay:.1f}s")
        child.proc = None
        child.restarts += 1
        child.is_ready = False
        child.down_since = now
        child.restart_at = now + delay

    def _recover_jobs(self) -> None:
        """Jobs of dead workers back to the front of their queue (once Redis answers)."""
        conn, dead = self._queue_conn, set(self._dead_workers)
        if conn is None:
            return
        try:
            again = coordination.requeue_abandoned(conn, Settings.load(env=self.env), dead=dead)
        except (redis.RedisError, CodenavError):
            return  # the queue is down too: try again next round
        self._dead_workers -= dead
        if again:
            self.say(f"requeued {', '.join(again)} (its worker died)")

    def state(self, name: str) -> str:
        """``ready``, ``starting``, ``down`` or ``off`` (no such child)."""
        child = next((c for c in self.children if c.name == name), None)
        if child is None:
            return "off"
        if child.proc is None:
            return "down"
        return "ready" if child.is_ready else "starting"

    def run(self, tick: Callable[[], None] | None = None) -> None:
        """Until SIGINT/SIGTERM (KeyboardInterrupt) or a crash loop; ``tick`` every 0.5 s."""
        while not self.fatal:
            if tick is not None:
                tick()
            time.sleep(0.5)

    # --- stop --------------------------------------------------------------------------
    def stop(self) -> float:
        """Stop every child, in order; returns how long it took."""
        started = time.monotonic()
        self._stopping.set()
        if self._supervisor is not None and self._supervisor is not threading.current_thread():
            self._supervisor.join(5)
        by_name = {c.name: c for c in self.children}
        front = [c for c in self.children if c.name not in ("embedder", "store", "queue")]
        _stop_all(front, signal.SIGTERM, SERVICES_STOP_S)
        _stop_all([c for c in [by_name.get("embedder")] if c], signal.SIGTERM,
                  EMBEDDER_STOP_S)
        if self._embed_sock is not None:
            self._embed_sock.close()
            self._embed_sock = None
        data = [c for c in (by_name.get("queue"), by_name.get("store")) if c]
        for child in data:
            if child.running:
                assert child.proc is not None
                child.proc.send_signal(signal.SIGINT if child.name == "store" else
                                       signal.SIGTERM)
        _stop_all(data, None, DATA_STOP_S)
        if self._queue_conn is not None:
            self._queue_conn.close()
        with contextlib.suppress(OSError, ValueError):
            data_file = json.loads((self.home / "stack.json").read_text(encoding="utf-8"))
            if data_file.get("pid") == os.getpid():
                (self.home / "stack.json").unlink()
        if self._lock is not None:
            self._lock.close()
            self._lock = None
        return time.monotonic() - started


def local_roots(settings: Settings, repos: list[str], registered: list[str]) -> list[str]:
    """The allowed roots of a local stack: CODENAV_ALLOWED_ROOTS, the ``--repo``
    directories, and the roots already registered in its database (a restart with another
    ``--repo`` keeps the earlier ones indexed), except what is refused anyway."""
    out = list(dict.fromkeys([*settings.allowed_roots, *repos]))
    for root in registered:
        alone = Settings.load(env={"CODENAV_HOME": settings.home,
                                   "CODENAV_ALLOWED_ROOTS": root}, dotenv=Path("/nonexistent"))
        if root not in out and roots.refusal(alone, root) is None:
            out.append(root)
    return out


def _stop_all(children: list[Child], sig: int | None, timeout: float) -> None:
    """Signal all at once, wait for all (bounded), then kill what is left, groups too."""
    live = [c for c in children if c.proc is not None]
    if sig is not None:
        for child in live:
            if child.running:
                assert child.proc is not None
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(sig)
    deadline = time.monotonic() + timeout
    for child in live:
        assert child.proc is not None
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.proc.wait(max(0.0, deadline - time.monotonic()))
    for child in live:
        assert child.proc is not None
        if child.proc.poll() is None or group_alive(child.proc.pid):
            stop_process(child.proc, signal.SIGKILL, timeout=2)


def _reserved_socket() -> socket.socket:
    """A TCP socket bound to a free loopback port, for a child to listen on. Until one
    does, a connection to it is refused; while a child that listened is down and restarts,
    connections wait in its queue for the next one."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    return sock


def _spawner(data: EmbeddedPostgres | EmbeddedRedis) -> Callable[[Child],
                                                                  subprocess.Popen[bytes]]:
    return lambda _child: data.spawn()


def _http_ok(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def _last_line(path: Path | None) -> str | None:
    if path is None or not path.exists():
        return None
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 2000))
        lines = [ln for ln in handle.read().decode(errors="replace").splitlines() if ln.strip()]
    return f"{path.name}: {lines[-1].strip()[:300]}" if lines else f"see {path}"
