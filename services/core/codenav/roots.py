"""Which directories may be repository roots.

A root must resolve (symlinks followed, ``..`` removed, on the machine that checks) under
one of ``CODENAV_ALLOWED_ROOTS``. Refused whatever that says: ``/``, system directories,
and the stack's own home (its database, queue, logs, secrets and ``stack.json``), including
any directory that contains it. The API checks at registration; the worker checks again
before every walk, on its own disk, because a symlink can be swapped in later.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath

from codenav.config import Settings
from codenav.errors import Forbidden, InvalidRequest

SYSTEM_DIRS = ("/etc", "/proc", "/sys", "/dev", "/boot", "/usr", "/bin", "/sbin", "/lib",
               "/lib32", "/lib64", "/libx32", "/var", "/run", "/snap", "/lost+found")
"""Never a repository root, nor anything under them."""

SETTING = "CODENAV_ALLOWED_ROOTS"


def resolve(root: str) -> str:
    """The real path of ``root`` as this machine sees it (it need not exist)."""
    if not root or not root.startswith("/"):
        raise InvalidRequest("root must be an absolute path", hint="pass the repository path")
    return os.path.realpath(root)


def _under(path: str, parent: str) -> bool:
    return path == parent or PurePosixPath(path).is_relative_to(parent)


def refusal(settings: Settings, root: str) -> str | None:
    """Why ``root`` may not be a repository root here (None: it may)."""
    real = resolve(root)
    shown = root if real == root else f"{root} (resolves to {real})"
    if real == "/":
        return f"{shown} is the file system root; codenav never indexes it"
    if any(_under(real, d) for d in SYSTEM_DIRS):
        return f"{shown} is a system directory; codenav never indexes it"
    home = os.path.realpath(settings.home_path)
    if _under(real, home) or _under(home, real):
        return f"{shown} holds this codenav stack's own state ({home}); it is never indexed"
    allowed = [os.path.realpath(a) for a in settings.allowed_roots if a.startswith("/")]
    if not allowed:
        return (f"{shown} is not allowed: this server accepts no repository roots yet; "
                f"set {SETTING} to the directories that hold repositories")
    if not any(_under(real, a) for a in allowed):
        return f"{shown} is not under {SETTING} ({', '.join(allowed)})"
    return None


def check(settings: Settings, root: str) -> str:
    """The resolved root, or ``Forbidden`` naming the setting to change."""
    reason = refusal(settings, root)
    if reason is not None:
        hint = (f"add its directory to {SETTING} on the server (and the workers), then "
                "restart them") if SETTING in reason else "register the repository's own " \
            "directory"
        raise Forbidden(reason, hint=hint)
    return resolve(root)
