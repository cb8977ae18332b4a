"""Watcher entrypoint: ``python -m codenav_watcher``.

For every registered repository whose root exists here, is allowed (CODENAV_ALLOWED_ROOTS),
is to be indexed, and whose leadership this sidecar holds (one watcher per repository,
however many run): ask for a full reconcile at start (catching up on anything changed while
down), watch it, turn events into coalesced path
reconciles, and ask for a full reconcile every CODENAV_RECONCILE_INTERVAL_S seconds.
Its mode (events or polling) is reported in Redis for ``status``.

Refs are followed too: every tick, the refs a repository follows (``main``, ``release/*``)
are read from its git directory, and a ref that moved asks for a refs job (a diff-based
run: only the blobs that changed are parsed). A bare repository (a mirror) has no working
tree to watch: only its refs are followed.

The database or the queue going away is waited out: watching goes on, and once the queue
answers again every watched repository gets a full reconcile (events seen meanwhile could
not be queued, and a restarted Redis may have lost its last second).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import time
import uuid
from pathlib import Path

import redis

from codenav import logs, repos, roots
from codenav.config import Settings
from codenav.db.connect import connect
from codenav.errors import CodenavError
from codenav.index import gitread
from codenav.index.gitread import is_bare
from codenav.jobs import coordination, enqueue
from codenav_watcher.watch import Changes, RepoWatch

log = logging.getLogger("codenav.watcher")
TICK_S = 2.0
"""How often leases are renewed, repositories re-listed and heartbeats written."""


class Sidecar:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.redis = enqueue.connect_redis(settings)
        self.me = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.watches: dict[int, tuple[RepoWatch, asyncio.Task[None]]] = {}
        self.mirrors: set[int] = set()
        """Bare repositories this sidecar leads: refs only, no file watch."""
        self.heads: dict[int, dict[str, str]] = {}
        """The commits of each followed ref, as last read from git."""
        self.last_full: dict[int, float] = {}
        self.stopping = asyncio.Event()
        self.outage: str | None = None
        """Why the last tick failed (the queue or the database is down), until one works."""

    def on_changes(self, repo_id: int, changes: Changes) -> None:
        try:
            if changes:
                enqueue.request_paths(self.redis, self.settings, repo_id, changes)
            else:
                enqueue.request_full(self.redis, self.settings, repo_id)
                self.last_full[repo_id] = time.monotonic()
        except CodenavError as exc:
            if self.outage is None:
                log.warning("could not queue reconcile for repo %s: %s", repo_id, exc.message)
            self.outage = self.outage or exc.message

    def _repos(self) -> list[repos.Repo]:
        with connect(self.settings) as conn:
            return repos.list_repos(conn)

    def _stop_watch(self, repo_id: int) -> None:
        watch, task = self.watches.pop(repo_id)
        watch.stop.set()
        task.cancel()

    async def tick(self) -> None:
        """Renew leases, start and stop watches, report state, run periodic reconciles."""
        current = await asyncio.to_thread(self._repos)
        # Only what the workers would index: a repository registered with index: false, or
        # whose root is not an allowed root here, is neither watched nor reconciled.
        here = {r.id: r for r in current if r.index_enabled and r.source != "remote"
                and Path(r.root).is_dir() and roots.refusal(self.settings, r.root) is None}
        for repo_id, (_watch, task) in list(self.watches.items()):
            if task.done():  # a watch that died is restarted below, after a reconcile
                error = None if task.cancelled() else task.exception()
                log.warning("watch of repository %s ended%s; restarting it", repo_id,
                            f": {error!r}" if error else "")
                del self.watches[repo_id]
        for repo_id in list(self.watches):
            if repo_id not in here or \
                    not coordination.claim_leadership(self.redis, repo_id, self.me):
                self._stop_watch(repo_id)
        for repo_id in list(self.mirrors):
            if repo_id not in here or \
                    not coordination.claim_leadership(self.redis, repo_id, self.me):
                self.mirrors.discard(repo_id)
        for repo_id, repo in here.items():
            if repo_id in self.mirrors:
                continue
            if repo.source == "git" or is_bare(Path(repo.root)):
                if coordination.claim_leadership(self.redis, repo_id, self.me):
                    self.on_changes(repo_id, {})  # its refs are brought up to date
                    self.mirrors.add(repo_id)
                    log.info("following the refs of %s (%s)", repo.name, repo.root)
                continue
            if repo_id not in self.watches:
                if not coordination.claim_leadership(self.redis, repo_id, self.me):
                    continue  # another sidecar (or a CI run's) watches this repository
                self.on_changes(repo_id, {})  # reconcile before watching
                watch = RepoWatch(repo_id, Path(repo.root), self.on_changes,
                                  self.settings.debounce_ms,
                                  force_polling=self.settings.watch_mode == "polling",
                                  poll_delay_ms=int(self.settings.poll_interval_s * 1000))
                if watch.force_polling:
                    watch.mode = "polling"
                self.watches[repo_id] = (watch, asyncio.create_task(watch.run()))
                log.info("watching %s (%s)", repo.name, repo.root)
        coordination.watcher_heartbeat(self.redis, self.me)
        now = time.monotonic()
        for repo_id, (watch, _task) in self.watches.items():
            coordination.report_watcher(self.redis, repo_id, {
                "mode": watch.mode, "watcher": self.me, "watched_dirs": watch.watched,
                "catching_up": watch.catching_up, "at": time.time()})
            if now - self.last_full.get(repo_id, now) >= self.settings.reconcile_interval_s:
                self.on_changes(repo_id, {})
        for repo_id in self.mirrors:
            coordination.report_watcher(self.redis, repo_id, {
                "mode": "refs", "watcher": self.me, "watched_dirs": 0, "at": time.time()})
            if now - self.last_full.get(repo_id, now) >= self.settings.reconcile_interval_s:
                self.on_changes(repo_id, {})
        for repo_id in sorted(set(self.watches) | self.mirrors):
            repo = here[repo_id]
            if (repo.follow or repo_id in self.mirrors) and \
                    await asyncio.to_thread(self._refs_moved, repo):
                enqueue.request_refs(self.redis, self.settings, repo_id)

    def _refs_moved(self, repo: repos.Repo) -> bool:
        """Whether a followed ref moved in git since the last tick (the first look only
        remembers: the reconcile asked for at start brings refs up to date)."""
        gdir = gitread.git_dir(Path(repo.root))
        if gdir is None:
            return False
        try:
            patterns = list(repo.follow) or [b for b in [gitread.head_branch(gdir)] if b]
            now = gitread.matching(gitread.branches_and_tags(gdir), patterns)
        except CodenavError as exc:
            log.warning("cannot read the refs of %s: %s", repo.root, exc.message)
            return False
        before = self.heads.get(repo.id)
        self.heads[repo.id] = now
        return before is not None and now != before

    def _failed(self, reason: str) -> None:
        if self.outage is None:
            log.warning("%s; watching goes on, and every repository is reconciled once it "
                        "is back", reason)
        self.outage = reason

    def _recovered(self) -> None:
        log.info("back after an outage (%s): reconciling every watched repository",
                 self.outage)
        self.outage = None
        for repo_id in sorted(set(self.watches) | self.mirrors):
            self.on_changes(repo_id, {})

    async def run(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.tick()
                if self.outage is not None:
                    self._recovered()
            except CodenavError as exc:
                self._failed(f"cannot refresh repositories: {exc.message}")
            except redis.RedisError as exc:
                self._failed(f"the queue is unreachable ({type(exc).__name__})")
            except Exception:
                log.exception("watcher tick failed")
            try:
                await asyncio.wait_for(self.stopping.wait(), TICK_S)
            except TimeoutError:
                pass
        for repo_id in list(self.watches):
            self._stop_watch(repo_id)
            with contextlib.suppress(redis.RedisError):
                coordination.release_leadership(self.redis, repo_id, self.me)
        for repo_id in self.mirrors:
            with contextlib.suppress(redis.RedisError):
                coordination.release_leadership(self.redis, repo_id, self.me)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codenav-watcher", description=__doc__)
    parser.add_argument("--check", action="store_true",
                        help="exit 0 if a watcher on this host sent a heartbeat recently "
                        "(for container healthchecks)")
    args = parser.parse_args(argv)
    try:
        settings = Settings.load()
        if args.check:
            alive = coordination.watcher_alive(enqueue.connect_redis(settings),
                                               socket.gethostname() + ":")
            return 0 if alive else 1
        logs.setup(settings.log_level, settings.log_format, "watcher")
        sidecar = Sidecar(settings)
    except CodenavError as exc:
        print(f"codenav-watcher: {exc.message}", file=sys.stderr)
        return 1

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, sidecar.stopping.set)
        await sidecar.run()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
