"""``codenav up``: the whole stack as local processes on embedded defaults.

Store (Postgres) and queue (Redis) come from wheels; api, workers and watcher are the same
entrypoints the containers run. State lives in ``$CODENAV_HOME``; ``stack.json`` tells
clients (CLI, adapter) where the API is. Stopping the stack stops every child.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from codenav import roots
from codenav.access import DEFAULT_TEAM
from codenav.auth import create_token, revoke_token
from codenav.config import Settings
from codenav.db import migrations
from codenav.db.connect import connect
from codenav.embedded import EmbeddedPostgres, EmbeddedRedis, free_port, stop_process
from codenav.errors import Unavailable
from codenav.repos import list_repos


@dataclass
class Child:
    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None
    restarts: int = 0


@dataclass
class Stack:
    settings: Settings
    port: int
    workers: int = 1
    children: list[Child] = field(default_factory=list)
    store: subprocess.Popen[bytes] | None = None
    queue: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    token: str = ""
    repos: list[str] = field(default_factory=list)
    """Directories ``codenav up --repo`` registers: allowed roots of this stack."""
    _token_id: int = 0
    _lock: IO[str] | None = None

    @property
    def home(self) -> Path:
        return self.settings.home_path

    def _acquire_home(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        os.chmod(self.home, 0o700)
        self._lock = (self.home / "stack.lock").open("w")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Unavailable(f"another `codenav up` is running with {self.home}",
                              hint="stop it first, or set CODENAV_HOME to another "
                              "directory") from None
        self._lock.write(str(os.getpid()))
        self._lock.flush()

    def start(self, log: IO[str] = sys.stderr) -> None:
        self._acquire_home()
        (self.home / "logs").mkdir(exist_ok=True)
        log.write(f"codenav: state in {self.home}\n")
        pg = EmbeddedPostgres(self.home, free_port())
        self.store = pg.start()
        rd = EmbeddedRedis(self.home, free_port())
        self.queue = rd.start()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "CODENAV_DATABASE_URL": pg.url, "CODENAV_REDIS_URL": rd.url,
                    "CODENAV_HOME": str(self.home), "CODENAV_API_PORT": str(self.port),
                    "CODENAV_API_HOST": "127.0.0.1", "PYTHONUNBUFFERED": "1"}
        py = sys.executable
        self.children = []
        if not self.settings.embed_url and importlib.util.find_spec("codenav_embedder"):
            # The embedder loads its model in the background; until it is ready, answers are
            # lexical and say so, and embedding jobs wait and retry.
            embed_port = free_port()
            self.env["CODENAV_EMBED_URL"] = f"http://127.0.0.1:{embed_port}"
            self.children.append(Child("embedder", [py, "-m", "codenav_embedder",
                                                    "--port", str(embed_port)]))
        settings = Settings.load(env=self.env)
        with connect(settings) as conn:
            migrations.migrate(conn)
            self._rotate_token(conn)
            allowed = local_roots(settings, self.repos, [r.root for r in list_repos(conn)])
        self.env["CODENAV_ALLOWED_ROOTS"] = ",".join(allowed)
        self.children.append(Child("api", [py, "-m", "codenav_api", "--no-migrate"]))
        self.children += [Child(f"worker-{i + 1}", [py, "-m", "codenav_worker",
                                                    "--name", f"codenav-{os.getpid()}-{i + 1}"])
                          for i in range(self.workers)]
        self.children.append(Child("watcher", [py, "-m", "codenav_watcher"]))
        for child in self.children:
            self._spawn(child)
        self._wait_ready()
        self._write_stack_file(pg.url)

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

    def _spawn(self, child: Child) -> None:
        child.log = (self.home / "logs" / f"{child.name}.log").open("ab")
        child.proc = subprocess.Popen(child.argv, env=self.env, stdout=child.log,
                                      stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True)

    def _wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check_children()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/readyz", timeout=1.0).status_code == 200:
                    return
            time.sleep(0.1)
        raise Unavailable("the API did not become ready",
                          hint=f"see {self.home / 'logs' / 'api.log'}")

    def _write_stack_file(self, database_url: str) -> None:
        path = self.home / "stack.json"
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"url": self.url, "token": self.token, "token_id": self._token_id,
                       "pid": os.getpid(), "database_url": database_url,
                       "redis_url": self.env["CODENAV_REDIS_URL"],
                       "started_at": time.time()}, handle, indent=2)
        os.replace(tmp, path)

    def check_children(self) -> None:
        """Restart a worker, watcher or embedder that died; a dead API or store stops the
        stack."""
        for proc, name in ((self.store, "store"), (self.queue, "queue")):
            if proc is not None and proc.poll() is not None:
                raise Unavailable(f"the {name} exited (code {proc.returncode})",
                                  hint=f"see {self.home / 'logs'}")
        for child in self.children:
            if child.proc is None or child.proc.poll() is None:
                continue
            if child.name == "api" or child.restarts >= 5:
                raise Unavailable(f"{child.name} exited (code {child.proc.returncode})",
                                  hint=f"see {self.home / 'logs' / (child.name + '.log')}")
            child.restarts += 1
            self._spawn(child)

    def stop(self) -> None:
        for child in reversed(self.children):
            if child.proc is not None:
                stop_process(child.proc, signal.SIGTERM, timeout=20)
            if child.log is not None:
                child.log.close()
        if self.queue is not None:
            stop_process(self.queue, signal.SIGTERM)
        if self.store is not None:
            stop_process(self.store, signal.SIGINT, timeout=30)
        with contextlib.suppress(OSError):
            data = json.loads((self.home / "stack.json").read_text(encoding="utf-8"))
            if data.get("pid") == os.getpid():
                (self.home / "stack.json").unlink()
        if self._lock is not None:
            self._lock.close()


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


def wait_forever(stack: Stack, tick: Callable[[], None] | None = None) -> None:
    """Supervise the children until SIGINT/SIGTERM; ``tick`` runs every half second."""
    stop = {"now": False}

    def handler(_signum: int, _frame: Any) -> None:
        stop["now"] = True

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    while not stop["now"]:
        stack.check_children()
        if tick is not None:
            tick()
        time.sleep(0.5)
