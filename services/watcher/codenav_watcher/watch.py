"""Watching one repository: events only wake a reconcile of the touched paths.

Only directories the walker would index are watched (non-recursively), so ignored trees
such as ``node_modules`` cost no inotify watches; a new or removed directory re-plans the
watch. ``.git`` is watched too: a change of HEAD or of the index (checkout, pull, rebase,
commit) becomes one diff-based request once git releases ``index.lock``, so a checkout in
progress is never published half-done. When the kernel refuses watches (ENOSPC/EMFILE)
the repository falls back to polling and says so. A periodic full reconcile (driven by the
sidecar) catches anything events missed.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import watchfiles

from codenav.index.gitinfo import changed_since, head_commit, wait_for_checkout
from codenav.index.ignore import IgnoreRules

log = logging.getLogger("codenav.watcher")
MAX_WATCHED_DIRS = 50_000
REPLAN_CATCH_UP_S = 1.0
GIT_FILES = frozenset({"HEAD", "index", "ORIG_HEAD", "FETCH_HEAD", "packed-refs",
                       "MERGE_HEAD"})

Changes = dict[str, str]
"""path -> what happened on disk: ``changed``, ``unindexed`` (new) or ``deleted``."""


def watches_refused(exc: OSError) -> bool:
    """The kernel refused more watches: ENOSPC or EMFILE, or watchfiles' own report of
    them, an ``OSError("OS file watch limit reached...")`` that carries no errno."""
    if exc.errno in (errno.ENOSPC, errno.EMFILE):
        return True
    text = str(exc).lower()
    return "watch limit" in text or "too many open files" in text


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
    return out


_KIND = {watchfiles.Change.added: "unindexed", watchfiles.Change.modified: "changed",
         watchfiles.Change.deleted: "deleted"}


@dataclass
class RepoWatch:
    repo_id: int
    root: Path
    on_changes: Callable[[int, Changes], None]
    """Called with paths to reconcile; an empty dict asks for a full reconcile."""
    debounce_ms: int = 300
    force_polling: bool = False
    poll_delay_ms: int = 2000
    mode: str = "events"
    watched: int = 0
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    rules: IgnoreRules | None = None
    last_head: str | None = None
    catching_up: bool = True
    """Until the full reconcile that follows a watch's start: changes made before the watch
    was up may not be noticed yet (the watcher reports it, and the repository is not fresh)."""

    def classify(self, changes: set[tuple[watchfiles.Change, str]]) -> tuple[Changes, bool,
                                                                             bool]:
        """Paths to reconcile, whether git state moved, whether to re-plan the watch."""
        self.rules = self.rules or IgnoreRules.for_root(self.root)
        out: Changes = {}
        git_moved = False
        replan = False
        for change, raw in changes:
            path = Path(raw)
            try:
                rel = path.relative_to(self.root).as_posix()
            except ValueError:
                continue
            if rel == ".git" or rel.startswith(".git/"):
                git_moved = git_moved or path.name in GIT_FILES
                continue
            if path.name in (".gitignore", ".codenavignore"):
                self.rules = IgnoreRules.for_root(self.root)
                out[rel] = _KIND[change]
                out["."] = "changed"  # ignore rules changed: reconcile everything
                continue
            is_dir = path.is_dir() and not path.is_symlink()
            if self.rules.check_path(rel, is_dir=is_dir) is not None:
                continue  # ignored, secret, lock file...: never indexed, so no work
            if is_dir or change == watchfiles.Change.deleted:
                replan = replan or is_dir or change == watchfiles.Change.deleted
            out[rel] = _KIND[change]
        return out, git_moved, replan

    def git_changes(self) -> Changes | None:
        """After HEAD or the index moved: the paths that differ from what was seen last,
        once no git operation holds the index. None means: reconcile everything."""
        if not wait_for_checkout(self.root, 120):
            return None
        head = head_commit(self.root)
        if head == self.last_head:
            old = head
        else:
            old, self.last_head = self.last_head, head
        paths = changed_since(self.root, old)
        if paths is None:
            return None
        return {p: ("unindexed" if (self.root / p).exists() else "deleted") for p in paths}

    async def run(self) -> None:
        self.last_head = head_commit(self.root)
        while not self.stop.is_set():
            planning = time.monotonic()
            dirs = await asyncio.to_thread(watched_dirs, self.root)
            # Changes made before the watch is up raise no event: those made while it was
            # planned, or re-planned, and at the start those made after the start-up
            # reconcile's scan (a worker may run it at once). Once the watch is surely up,
            # a full reconcile (the scan is the truth) catches them.
            delay = max(REPLAN_CATCH_UP_S, 2 * (time.monotonic() - planning))
            self.catching_up = True
            asyncio.get_running_loop().call_later(delay, self._catch_up)
            git = self.root / ".git"
            targets = dirs + ([git] if git.is_dir() else [])
            self.watched = len(targets)
            try:
                replan = await self._watch(targets)
            except OSError as exc:
                if watches_refused(exc) and not self.force_polling:
                    log.warning("%s: the kernel refused file watches (%s); polling instead",
                                self.root, exc)
                    self._to_polling()
                    self.on_changes(self.repo_id, {})  # events may be lost: reconcile all
                    continue
                raise
            except RuntimeError as exc:  # watchfiles' internal errors (e.g. undecodable names)
                if "limit" in str(exc).lower() or "space" in str(exc).lower():
                    log.warning("%s: %s; polling instead", self.root, exc)
                    self._to_polling()
                else:
                    log.warning("%s: watcher error %s; restarting the watch", self.root, exc)
                self.on_changes(self.repo_id, {})  # events may be lost: reconcile all
                await asyncio.sleep(0.5)
                continue
            if not replan:
                return

    def _catch_up(self) -> None:
        self.catching_up = False
        self.on_changes(self.repo_id, {})

    def _to_polling(self) -> None:
        self.force_polling = True
        self.mode = "polling"

    async def _watch(self, targets: list[Path]) -> bool:
        async for changes in watchfiles.awatch(
                *targets, recursive=False, debounce=self.debounce_ms, step=50,
                stop_event=self.stop, force_polling=self.force_polling,
                poll_delay_ms=self.poll_delay_ms, ignore_permission_denied=True,
                raise_interrupt=False):
            paths, git_moved, replan = self.classify(changes)
            if git_moved:
                git_paths = await asyncio.to_thread(self.git_changes)
                if git_paths is None:
                    self.on_changes(self.repo_id, {})
                else:
                    paths.update(git_paths)
            if paths.pop(".", None):
                self.on_changes(self.repo_id, {})
            if paths:
                self.on_changes(self.repo_id, paths)
            if replan:
                return True
        return False
