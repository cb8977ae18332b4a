"""Watcher entrypoint: ``python -m codenav_watcher``.

For every registered repository whose root exists here: ask for a full reconcile at start
(catching up on anything changed while down), watch it, turn events into path reconciles,
and ask for a full reconcile every CODENAV_RECONCILE_INTERVAL_S seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from codenav import queue, repos
from codenav.config import Settings
from codenav.db.connect import connect
from codenav.errors import CodenavError
from codenav_watcher.watch import RepoWatch

log = logging.getLogger("codenav.watcher")
REPO_REFRESH_S = 10.0


class Sidecar:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.redis = queue.connect_redis(settings)
        self.watches: dict[int, tuple[RepoWatch, asyncio.Task[None]]] = {}
        self.stopping = asyncio.Event()

    def on_paths(self, repo_id: int, paths: list[str]) -> None:
        try:
            if paths:
                queue.request_paths(self.redis, self.settings, repo_id, paths)
            else:
                queue.request_full(self.redis, self.settings, repo_id)
        except CodenavError as exc:
            log.warning("could not queue reconcile for repo %s: %s", repo_id, exc.message)

    def _repos(self) -> list[repos.Repo]:
        with connect(self.settings) as conn:
            return repos.list_repos(conn)

    async def sync_repos(self) -> None:
        current = await asyncio.to_thread(self._repos)
        wanted = {r.id: r for r in current if Path(r.root).is_dir()}
        for repo_id in list(self.watches):
            if repo_id not in wanted:
                watch, task = self.watches.pop(repo_id)
                watch.stop.set()
                task.cancel()
        for repo_id, repo in wanted.items():
            if repo_id in self.watches:
                continue
            self.on_paths(repo_id, [])  # reconcile before watching
            watch = RepoWatch(repo_id, Path(repo.root), self.on_paths, self.settings.debounce_ms,
                              force_polling=self.settings.watch_mode == "polling")
            self.watches[repo_id] = (watch, asyncio.create_task(watch.run()))
            log.info("watching %s (%s)", repo.name, repo.root)

    async def run(self) -> None:
        last_full = asyncio.get_running_loop().time()
        while not self.stopping.is_set():
            try:
                await self.sync_repos()
            except CodenavError as exc:
                log.warning("cannot list repositories: %s", exc.message)
            now = asyncio.get_running_loop().time()
            if now - last_full >= self.settings.reconcile_interval_s:
                last_full = now
                for repo_id in list(self.watches):
                    self.on_paths(repo_id, [])
            try:
                await asyncio.wait_for(self.stopping.wait(), REPO_REFRESH_S)
            except TimeoutError:
                pass
        for watch, task in self.watches.values():
            watch.stop.set()
            task.cancel()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="codenav-watcher", description=__doc__)
    parser.parse_args(argv)
    try:
        settings = Settings.load()
        logging.basicConfig(level=settings.log_level, stream=sys.stderr,
                            format="%(asctime)s %(name)s %(levelname)s %(message)s")
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
