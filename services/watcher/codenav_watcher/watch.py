"""Watching one repository: events only wake a reconcile of the touched paths.

Only directories the walker would index are watched (non-recursively), so ignored trees
such as ``node_modules`` cost no inotify watches. A new or removed directory re-plans the
watch. When the kernel refuses watches (ENOSPC/EMFILE) the repository falls back to
polling. A periodic full reconcile catches anything events missed.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import watchfiles

from codenav.ignore import IgnoreRules

log = logging.getLogger("codenav.watcher")
MAX_WATCHED_DIRS = 20000


def watched_dirs(root: Path, limit: int = MAX_WATCHED_DIRS) -> list[Path]:
    """Directories to watch: the root and every directory the walker would enter."""
    rules = IgnoreRules.for_root(root)
    out = [root]
    stack = [""]
    while stack and len(out) < limit:
        rel = stack.pop()
        rules.enter_dir(rel)
        base = root / rel if rel else root
        try:
            entries = list(os.scandir(base))
        except OSError:
            continue
        for entry in entries:
            if not entry.is_dir(follow_symlinks=False):
                continue
            child = f"{rel}/{entry.name}" if rel else entry.name
            if rules.check(child, is_dir=True):
                continue
            out.append(root / child)
            stack.append(child)
    git = root / ".git"
    if git.is_dir():
        out.append(git)  # HEAD and index changes: branch switches, commits
    return out


@dataclass
class RepoWatch:
    repo_id: int
    root: Path
    on_paths: Callable[[int, list[str]], None]
    debounce_ms: int = 300
    force_polling: bool = False
    mode: str = "events"
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def _relative(self, changes: set[tuple[watchfiles.Change, str]]) -> tuple[list[str], bool]:
        paths: set[str] = set()
        replan = False
        for change, raw in changes:
            path = Path(raw)
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                continue
            if rel.startswith(".git/") or rel == ".git":
                continue
            if change != watchfiles.Change.modified and (path.is_dir() or
                                                         change == watchfiles.Change.deleted):
                replan = replan or path.is_dir() or change == watchfiles.Change.deleted
            paths.add(rel)
        return sorted(paths), replan

    async def run(self) -> None:
        while not self.stop.is_set():
            dirs = await asyncio.to_thread(watched_dirs, self.root)
            try:
                replan = await self._watch(dirs)
            except OSError as exc:
                if exc.errno in (errno.ENOSPC, errno.EMFILE) and not self.force_polling:
                    log.warning("%s: kernel refused file watches (%s); polling instead",
                                self.root, os.strerror(exc.errno or 0))
                    self.force_polling = True
                    self.mode = "polling"
                    continue
                raise
            except RuntimeError as exc:  # watchfiles' internal errors (e.g. undecodable names)
                log.warning("%s: watcher error %s; restarting the watch", self.root, exc)
                self.on_paths(self.repo_id, [])  # ask for a full reconcile
                await asyncio.sleep(1.0)
                continue
            if not replan:
                return

    async def _watch(self, dirs: list[Path]) -> bool:
        async for changes in watchfiles.awatch(
                *dirs, recursive=False, debounce=self.debounce_ms, step=50,
                stop_event=self.stop, force_polling=self.force_polling,
                ignore_permission_denied=True, raise_interrupt=False):
            paths, replan = self._relative(changes)
            if paths:
                self.on_paths(self.repo_id, paths)
            if replan:
                return True
        return False
