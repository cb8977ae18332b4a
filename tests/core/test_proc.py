"""Process plumbing: work shared between this process and forked ones."""

from __future__ import annotations

import gc
import os
import signal
import threading
import time
from pathlib import Path

import psutil
import pytest

from codenav.errors import ProcessLost
from codenav.proc import Stall, collector_paused, map_shared, mark, supervised

_BASE = 0


def _init(base: int) -> None:
    global _BASE
    _BASE = base


def _square(n: int) -> tuple[int, int, int]:
    time.sleep(0.002)  # long enough for every process to get tasks
    return n, n * n + _BASE, os.getpid()


def _children() -> set[int]:
    return {c.pid for c in psutil.Process().children()}


def _fail(n: int) -> tuple[int, int, int]:
    raise ValueError(f"task {n}")


def test_every_task_runs_once_in_this_process_and_in_the_forked_ones() -> None:
    here = os.getpid()
    before = _children()
    out = list(map_shared(3, _init, (1,), _square, range(200),
                          lambda n: (n, n * n + 1, here)))
    assert sorted(n for n, _, _ in out) == list(range(200))
    assert all(v == n * n + 1 for n, v, _ in out)
    pids = {pid for _, _, pid in out}
    # this one and forked ones (the first tasks are handed out before this one takes any)
    assert here in pids and 2 <= len(pids) <= 3
    assert not _children() - before  # gone once the work is done


def test_one_process_is_this_one_alone() -> None:
    here = os.getpid()
    before = _children()
    out = list(map_shared(1, _init, (0,), _square, range(5), lambda n: (n, -n, here)))
    assert out == [(n, -n, here) for n in range(5)]
    assert not _children() - before


def test_a_failure_in_a_forked_process_reaches_the_caller_and_ends_the_others() -> None:
    before = _children()
    with pytest.raises(ValueError, match="task"):
        list(map_shared(2, _init, (0,), _fail, range(20), lambda n: (n, n, 0)))
    assert not _children() - before


def test_a_caller_that_stops_early_ends_the_forked_processes() -> None:
    before = _children()
    results = map_shared(2, _init, (0,), _square, range(1000), lambda n: (n, n, 0))
    assert next(results)
    results.close()
    assert not _children() - before


def test_forked_processes_stop_at_once_though_the_parent_handles_sigterm() -> None:
    """A parent that handles SIGTERM (an RQ worker, a service) passes its handler on at
    the fork. A process terminated before it restored the default action ran that handler
    and lived on, and the pool's end waited for it forever. SIGTERM is held back until
    the default action is restored."""
    global _SLOW_START
    before = _children()
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    _SLOW_START = True  # the processes start slowly, as on a loaded machine
    try:
        for _ in range(3):
            ended = threading.Event()
            threading.Thread(target=_start_and_end, args=(ended,), daemon=True).start()
            if not ended.wait(20):
                for pid in _children() - before:  # let the test end
                    os.kill(pid, signal.SIGKILL)
                pytest.fail("the pool's end waited for a process that outlived SIGTERM")
    finally:
        _SLOW_START = False
        signal.signal(signal.SIGTERM, previous)
    assert not _children() - before


_SLOW_START = False


def _start_and_end(ended: threading.Event) -> None:
    results = supervised(2, _init, (0,), _square, range(4))
    next(results)
    results.close()  # the processes are ended at once
    ended.set()


def _start_slowly() -> None:
    if _SLOW_START:
        time.sleep(0.5)


os.register_at_fork(after_in_child=_start_slowly)


# --- supervised processes: deaths and stalls ------------------------------------------------
def _die_once(task: tuple[int, str]) -> int:
    n, flag = task
    if n == 5 and not os.path.exists(flag):
        open(flag, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return n


def _always_die(n: int) -> int:
    if n == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return n


def _hang_on(task: tuple[int, int]) -> int:
    """Marks each of its 4 items; hangs on item ``task[1]``."""
    for item in range(4):
        mark(item)
        if item == task[1]:
            time.sleep(600)
    mark(-1)
    return task[0]


def test_a_killed_process_is_replaced_and_its_task_runs_again(tmp_path: Path) -> None:
    before = _children()
    flag = str(tmp_path / "died")
    out = list(supervised(2, _init, (0,), _die_once, [(n, flag) for n in range(12)]))
    assert os.path.exists(flag)  # one process did die
    assert sorted(out) == list(range(12))
    assert not _children() - before


def test_a_task_that_kills_every_process_ends_the_run_with_the_reason() -> None:
    before = _children()
    with pytest.raises(ProcessLost, match="died 4 times"):
        list(supervised(2, _init, (0,), _always_die, range(6)))
    assert not _children() - before


def test_a_process_that_holds_one_item_past_the_timeout_is_killed_and_the_stall_names_it(
        ) -> None:
    before = _children()
    stalls: list[Stall[tuple[int, int]]] = []

    def retry_without_hanging(stall: Stall[tuple[int, int]]) -> tuple[int, int]:
        stalls.append(stall)
        return stall.task[0], -1

    started = time.monotonic()
    out = list(supervised(2, _init, (0,), _hang_on, [(0, -1), (1, 2), (2, -1), (3, -1)],
                          timeout_s=0.5, on_stall=retry_without_hanging))
    assert sorted(out) == [0, 1, 2, 3]
    assert [(s.task, s.item, s.timed_out, s.count) for s in stalls] == [((1, 2), 2, True, 1)]
    assert time.monotonic() - started < 30
    assert not _children() - before


def _refuse(base: int) -> None:
    raise ConnectionError(f"store refused ({base})")


def test_a_process_that_cannot_start_reports_why() -> None:
    """Its start failed the same way each time: the caller gets that error, at once."""
    before = _children()
    with pytest.raises(ConnectionError, match="store refused"):
        list(supervised(2, _refuse, (7,), _square, range(6)))
    assert not _children() - before


def test_the_collector_is_paused_in_the_block_and_left_as_it_was_found() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the outer block still holds it
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failed build")
    assert gc.isenabled()
    gc.disable()  # a caller that had it off keeps it off
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
