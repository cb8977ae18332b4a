"""The embedded stack's state directory, and the mode each part of it needs.

Modes are set on every start, not only when a part is created, so a start never depends on
what an earlier one left behind::

    $CODENAV_HOME      0700; as root 0710 with the group of the store's user, who may pass
                       through to pgdata/ and run/ and see nothing else
    ├── pgdata/        0700, owned by the user Postgres runs as
    ├── run/           0700, same owner: Postgres's socket and lock file
    ├── secrets/       0700, files 0600: generated passwords
    ├── redis/         0700: the queue's append-only file and its config (0600)
    ├── logs/          0700: one log per process, written through descriptors we open
    ├── stack.json     0600: where clients find the API, and this run's token
    └── stack.lock     0600: held while ``codenav up`` runs

Postgres refuses to run as root, so as root it runs as the system user ``codenav-store``
(created on first use); as anyone else it runs as that user.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
from dataclasses import dataclass
from pathlib import Path

from codenav.errors import ConfigError

STORE_USER = "codenav-store"
PRIVATE = 0o700
PASS_THROUGH = 0o710
"""The home as root: its group (the store's) may traverse it, not list it."""


@dataclass(frozen=True)
class StoreUser:
    """Who Postgres runs as: ``None`` fields mean "this process's own user"."""

    name: str | None
    uid: int
    gid: int

    @property
    def is_other(self) -> bool:
        return self.name is not None


def store_user() -> StoreUser:
    if os.geteuid() != 0:
        return StoreUser(None, os.geteuid(), os.getegid())
    try:
        entry = pwd.getpwnam(STORE_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                        "/usr/sbin/nologin", STORE_USER], check=True, capture_output=True)
        entry = pwd.getpwnam(STORE_USER)
    return StoreUser(STORE_USER, entry.pw_uid, entry.pw_gid)


def _owner_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def private_dir(path: Path, uid: int | None = None, gid: int | None = None,
                mode: int = PRIVATE) -> None:
    """``path`` exists with ``mode`` (and owner, when given), whoever made it."""
    path.mkdir(parents=True, exist_ok=True)
    if uid is not None and gid is not None:
        st = path.stat()
        if (st.st_uid, st.st_gid) != (uid, gid):
            os.chown(path, uid, gid)
    os.chmod(path, mode)


def _chown_tree(path: Path, uid: int, gid: int) -> None:
    """Give a data directory made by another user to the store's user (as root)."""
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            with contextlib.suppress(FileNotFoundError):
                os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)
    os.chown(path, uid, gid)


def _make_traversable(path: Path) -> None:
    """Let the store's user reach ``path`` from ``/`` (the search bit only, no listing)."""
    for parent in path.parents:
        with contextlib.suppress(OSError):
            mode = parent.stat().st_mode
            if not mode & 0o001:
                os.chmod(parent, mode | 0o001)


def prepare(home: Path, user: StoreUser) -> None:
    """Create what is missing under ``home`` and give every part its owner and mode (the
    store's start calls this every time, restarts included)."""
    home.mkdir(parents=True, exist_ok=True)
    st = home.stat()
    if os.geteuid() != 0 and st.st_uid != os.geteuid():
        raise ConfigError(f"{home} belongs to {_owner_name(st.st_uid)}, not to you",
                          hint="set CODENAV_HOME to a directory of your own")
    pgdata = home / "pgdata"
    if pgdata.exists() and not user.is_other and pgdata.stat().st_uid != user.uid:
        raise ConfigError(f"{pgdata} belongs to {_owner_name(pgdata.stat().st_uid)} (made "
                          "by a start as root?)",
                          hint="start as that user again, or set CODENAV_HOME elsewhere")
    if user.is_other:
        _make_traversable(home)
        os.chown(home, st.st_uid, user.gid)
        os.chmod(home, PASS_THROUGH)
        if pgdata.exists() and pgdata.stat().st_uid != user.uid:
            _chown_tree(pgdata, user.uid, user.gid)
        private_dir(pgdata, user.uid, user.gid)
        private_dir(home / "run", user.uid, user.gid)
    else:
        os.chmod(home, PRIVATE)
        private_dir(pgdata)
        private_dir(home / "run")
    for name in ("secrets", "redis", "logs"):
        private_dir(home / name)
    for path in [*(home / "secrets").glob("*"), home / "stack.json", home / "stack.lock",
                 home / "redis" / "redis.conf"]:
        with contextlib.suppress(FileNotFoundError):
            os.chmod(path, 0o600)
