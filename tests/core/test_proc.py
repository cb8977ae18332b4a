"""Process plumbing: work shared between this process and forked ones."""

from __future__ import annotations

import os
import time

import psutil
import pytest

from codenav.proc import map_shared

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
