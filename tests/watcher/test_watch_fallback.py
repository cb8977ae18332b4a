"""The watch of one repository when the kernel refuses file watches.

The refusal is injected (a host's inotify limits are global state no test should lower):
the first watch raises exactly what watchfiles raises at the limit, and everything after
it — the switch to polling, the reconcile it asks for, the polling watch itself — is real.
"""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path

import pytest

from codenav_watcher.watch import Changes, RepoWatch, watches_refused

WATCHFILES_LIMIT = OSError("OS file watch limit reached. See the notify crate docs.")


@pytest.mark.parametrize("exc", [WATCHFILES_LIMIT, OSError(errno.ENOSPC, "No space left"),
                                 OSError(errno.EMFILE, "Too many open files")])
def test_watch_refusals_are_recognised(exc: OSError) -> None:
    assert watches_refused(exc)


def test_other_os_errors_are_not_refusals() -> None:
    assert not watches_refused(OSError(errno.EACCES, "Permission denied"))


class RefusedWatch(RepoWatch):
    refusals = 0

    async def _watch(self, targets: list[Path]) -> bool:
        if not self.force_polling:
            self.refusals += 1
            raise WATCHFILES_LIMIT
        return await super()._watch(targets)


def test_a_refused_watch_falls_back_to_polling_and_keeps_following_the_disk(
        tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    calls: list[Changes] = []

    async def scenario() -> RefusedWatch:
        watch = RefusedWatch(1, tmp_path, lambda _repo, changes: calls.append(changes),
                             debounce_ms=50, poll_delay_ms=100)
        task = asyncio.create_task(watch.run())
        for _ in range(100):
            if watch.mode == "polling":
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the polling watch takes its first snapshot
        (tmp_path / "src" / "b.py").write_text("y = 2\n")
        for _ in range(100):
            if any("src/b.py" in c for c in calls):
                break
            await asyncio.sleep(0.05)
        watch.stop.set()
        await asyncio.wait_for(task, 10)
        return watch

    watch = asyncio.run(scenario())
    assert watch.refusals == 1 and watch.mode == "polling" and watch.force_polling
    assert calls[0] == {}, "the switch asks for a full reconcile: events may have been lost"
    assert any(c.get("src/b.py") == "unindexed" for c in calls), calls


class LateWatch(RepoWatch):
    """A watch that comes up late, as in a loaded watcher: a file is written after the
    start-up reconcile's scan and before the watch is up, so it raises no event."""

    def __init__(self, *args: object, write: Path, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.write = write

    async def _watch(self, targets: list[Path]) -> bool:
        self.write.write_text("z = 3\n")
        return await super()._watch(targets)


def test_a_change_made_before_the_watch_is_up_is_caught_by_a_full_reconcile(
        tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    calls: list[Changes] = []

    async def scenario() -> None:
        watch = LateWatch(1, tmp_path, lambda _repo, changes: calls.append(changes),
                          debounce_ms=50, poll_delay_ms=100, write=tmp_path / "src" / "c.py")
        assert watch.catching_up  # reported by the watcher: the repository is not fresh
        task = asyncio.create_task(watch.run())
        for _ in range(100):
            if calls:
                break
            await asyncio.sleep(0.05)
        assert not watch.catching_up
        watch.stop.set()
        await asyncio.wait_for(task, 10)

    asyncio.run(scenario())
    assert {} in calls, "the watch, once up, asks for a full reconcile"
