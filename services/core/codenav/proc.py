"""Process plumbing shared by the supervisor and the services: starting Python children
that cannot be shadowed by the current directory, process groups, dying with a parent.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import multiprocessing
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.pool import AsyncResult, Pool
from pathlib import Path
from typing import TypeVar

_PR_SET_PDEATHSIG = 1

T = TypeVar("T")
R = TypeVar("R")

GC_THRESHOLD = (10_000, 20, 20)
"""The collector's thresholds in a serving process (Python's default: 700, 10, 10). A query
allocates tens of thousands of short-lived rows and tuples; with the default, a request
every so often paid for a full collection of the whole heap. Measured over HTTP on Kafka
(bench/README, "The slow tail was the garbage collector"): search p99 99-156 -> 69 ms,
find_files p99 163-192 -> 90 ms."""


def settle_heap() -> None:
    """For a long-running server once it has started: what start-up allocated (modules,
    the app, pools: about 150,000 objects in the API) leaves the collector's view for good
    (``gc.freeze``), and young objects are collected less often (``GC_THRESHOLD``)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)


def python_argv(module: str, *args: str) -> list[str]:
    """``python -P -m module args``: with ``-P`` the current directory is not put first on
    ``sys.path``, so a folder named like a package (``codenav/`` in the parent of a clone)
    cannot shadow the installed one."""
    return [sys.executable, "-P", "-m", module, *args]


def child_env(env: dict[str, str]) -> dict[str, str]:
    """The environment for Python children: the same safe path for their own children
    (RQ's spawned horses, multiprocessing), and unbuffered logs."""
    return {**env, "PYTHONSAFEPATH": "1", "PYTHONUNBUFFERED": "1"}


def trim_heap() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim``): memory that
    C libraries freed (ONNX Runtime's tensors) otherwise stays resident. Elsewhere a
    no-op."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux), so a killed
    worker never leaves its job's process running unsupervised."""
    parent = os.getppid()
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the request: follow it now
        os._exit(1)


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        stat = ""
    if stat:
        return stat[stat.rfind(")") + 2:].split()[0] != "Z"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_members(pgid: int) -> list[int] | None:
    """Live (non-zombie) processes of a process group, or None without /proc."""
    proc = Path("/proc")
    if not proc.is_dir():
        return None
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def group_alive(pgid: int) -> bool:
    members = _group_members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def kill_group(pgid: int, sig: int = signal.SIGKILL, wait: float = 5.0) -> bool:
    """Signal every process of a group and wait (bounded) until none is left alive;
    True when the group is gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    return poll_until(lambda: not group_alive(pgid), wait, 0.02)


def poll_until(done: Callable[[], bool], timeout: float, interval: float) -> bool:
    """Check ``done`` every ``interval`` seconds until it holds (True) or ``timeout`` has
    passed (False)."""
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True


def _pool_start(init: Callable[..., None], args: tuple[object, ...]) -> None:
    # the parent's handlers (a service's graceful SIGTERM, an ignored one) are not ours;
    # a SIGTERM that came before this (held back since the fork) ends the process now
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    die_with_parent()
    init(*args)


@contextlib.contextmanager
def fork_pool(processes: int, init: Callable[..., None],
              args: tuple[object, ...] = ()) -> Iterator[Pool]:
    """A pool of forked processes (each runs ``init(*args)`` first), terminated when the
    block ends. Each process restores SIGTERM's default action first: a parent that
    ignores SIGTERM or handles it gracefully (a service, a stopping stack) would otherwise
    pass that on, and ``Pool.terminate`` would wait forever for a process it cannot stop.
    (The processes are not SIGKILLed: one killed while it holds the task queue's lock
    would leave ``terminate`` waiting for that lock.)

    SIGTERM is held back from the fork until the default is restored: a process
    terminated before that, as a pool ended at once on a loaded machine, ran the parent's
    handler and lived on. The pool's thread that replaces a dead process is started with
    it held back too."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        pool = multiprocessing.get_context("fork").Pool(processes, initializer=_pool_start,
                                                        initargs=(init, args))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
    try:
        yield pool
    finally:
        pool.terminate()


def map_shared(processes: int, init: Callable[..., None], args: tuple[object, ...],
               func: Callable[[T], R], tasks: Iterable[T],
               local: Callable[[T], R]) -> Iterator[R]:
    """``processes`` working through ``tasks``, this one among them: ``processes - 1``
    forked ones run ``func`` (after ``init(*args)``), and this process runs ``local``
    between handing out tasks. Results come as they are ready, in no set order.

    The process that hands out the tasks mostly waited for them. Filling Apache Kafka's
    deferred graph facts, it waited at 64 MB beside two parser processes of about 105 MB
    each (45 MB of it shared with it); parsing a share itself with one parser process, the
    stack's summed RSS in that phase peaked at 1,001 MB instead of 1,064 MB.
    Each forked process has up to two tasks handed to it, so it does not wait for this
    one to finish a task before it gets its next."""
    children = processes - 1
    todo = iter(tasks)
    if children < 1:
        yield from map(local, todo)
        return
    with fork_pool(children, init, args) as pool:
        handed: deque[AsyncResult[R]] = deque()
        while True:
            while len(handed) < 2 * children and (task := next(todo, _END)) is not _END:
                handed.append(pool.apply_async(func, (task,)))
            for _ in range(len(handed)):
                result = handed.popleft()
                if result.ready():
                    yield result.get()
                else:
                    handed.append(result)
            task = next(todo, _END)
            if task is _END:
                break
            yield local(task)  # type: ignore[arg-type]
        while handed:
            yield handed.popleft().get()


_END = object()
