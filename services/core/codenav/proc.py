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
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.pool import ExceptionWithTraceback  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any, Generic, TypeVar

from codenav.errors import ProcessLost

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


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collection of reference cycles while the block runs; reference counting
    still frees everything else. For work that builds millions of long-lived objects and
    few cycles: each of the collector's full passes walks them all, and they grow the heap by
    the quarter that triggers the next. A full graph build of Apache Kafka used 3.0-3.5 s
    less of its 13 s of CPU without them at Python's default thresholds (about 0.6 s less
    at the worker's, ``settle_heap``), and peaked no higher. Process-wide: other threads'
    cycles wait for the end of the block too."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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


# --- supervised processes -------------------------------------------------------------------
# Work spread over forked processes that are watched: one that dies (killed, out of memory)
# or holds one item of its task too long (a parser that hangs) is replaced, and its task is
# handed out again, changed by the caller if it wants (``on_stall``). With a plain
# ``multiprocessing.Pool``, a process killed mid-task lost that task's result for good, and
# whoever waited for it waited for ever.

_SLOT: tuple[Any, Any, int] | None = None
"""In a supervised process: the shared arrays it marks its item in, and its place in them."""

RETRIES = 3
"""How often a task is handed out again after its process died outside any marked item."""


def mark(item: int) -> None:
    """In a supervised process: item ``item`` of the current task is in hand from now on
    (-1: none); a process that holds one item longer than the supervisor's timeout is
    killed, and the stall names that item. Elsewhere a no-op."""
    if _SLOT is not None:
        items, since, slot = _SLOT
        if item < 0:
            since[slot] = 0.0
            items[slot] = -1
        else:
            items[slot] = item
            since[slot] = time.monotonic()


@dataclass(frozen=True)
class Stall(Generic[T]):
    """A task whose process ended without its result."""

    task: T
    item: int
    """The item of the task the process had in hand (``mark``), -1 when none."""
    timed_out: bool
    """True: it held that item longer than the timeout and was killed. False: it died."""
    count: int
    """How many times this task has stalled, this time included."""


def _stall_default(stall: Stall[T]) -> T:
    if stall.timed_out or stall.count > RETRIES:
        what = (f"held item {stall.item} past its time" if stall.timed_out
                else f"died {stall.count} times")
        raise ProcessLost(f"a forked process {what} on the same task")
    return stall.task


def _child_main(conn: Connection, slot: int, shared: tuple[Any, Any],
                init: Callable[..., None], args: tuple[object, ...],
                func: Callable[[Any], Any]) -> None:
    global _SLOT
    try:
        _pool_start(init, args)
    except Exception as exc:  # noqa: BLE001 - the caller raises it (a store that refused)
        conn.send((False, ExceptionWithTraceback(exc, exc.__traceback__)))
        return
    _SLOT = (shared[0], shared[1], slot)
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        try:
            out: tuple[bool, object] = (True, func(task))
        except BaseException as exc:  # noqa: BLE001 - it is the caller's to raise
            out = (False, ExceptionWithTraceback(exc, exc.__traceback__))
        finally:
            mark(-1)
        try:
            conn.send(out)
        except Exception as exc:  # noqa: BLE001 - a result or error that does not pickle
            conn.send((False, ExceptionWithTraceback(
                RuntimeError(f"{type(exc).__name__}: {exc}"), exc.__traceback__)))


class _Child:
    """One supervised process and the tasks handed to it, in the order it runs them."""

    def __init__(self, slot: int, shared: tuple[Any, Any], init: Callable[..., None],
                 args: tuple[object, ...], func: Callable[[Any], Any]) -> None:
        ctx = multiprocessing.get_context("fork")
        self.slot = slot
        shared[0][slot], shared[1][slot] = -1, 0.0
        self.conn, theirs = ctx.Pipe()
        self.process = ctx.Process(target=_child_main, daemon=True,
                                   args=(theirs, slot, shared, init, args, func))
        held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:  # SIGTERM held back until the child restored its default (``_pool_start``)
            self.process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
        theirs.close()
        self.tasks: deque[tuple[int, Any]] = deque()

    def send(self, seq: int, task: object) -> None:
        self.tasks.append((seq, task))
        with contextlib.suppress(OSError):  # it died: its tasks are handed out again
            self.conn.send(task)

    def results(self) -> Iterator[Any]:
        """The answers waiting in the pipe, each taking its task off; a failed task's
        exception is raised."""
        while self.tasks and self.conn.poll():
            try:
                ok, value = self.conn.recv()
            except (EOFError, OSError):
                return
            self.tasks.popleft()
            if not ok:
                raise value
            yield value

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.process.kill()
        self.process.join(5)

    def kill(self) -> None:
        self.stop()
        self.conn.close()


def supervised(processes: int, init: Callable[..., None], args: tuple[object, ...],
               func: Callable[[T], R], tasks: Iterable[T], *,
               local: Callable[[T], R] | None = None, timeout_s: float | None = None,
               on_stall: Callable[[Stall[T]], T] | None = None, depth: int = 2) -> Iterator[R]:
    """``func(task)`` for every task, in ``processes`` processes; results come as they are
    ready, in no set order.

    The processes are forked, and each runs ``init(*args)`` first. With ``local``, this
    process is one of them: it runs ``local(task)`` between handing out tasks, and
    ``processes - 1`` are forked. Each forked process holds up to ``depth`` tasks, so it
    does not wait for this one before its next.

    A forked process that dies, or that holds one marked item (``mark``) longer than
    ``timeout_s`` (it is killed then), is replaced. Its task goes back to the front of the
    queue as ``on_stall`` returns it. By default it goes back unchanged after a death, up to
    ``RETRIES`` times, and a timeout raises ``ProcessLost``. A task that raises ends the
    others, and its exception reaches the caller."""
    todo: deque[tuple[int, T]] = deque(enumerate(tasks))
    children_n = processes - (1 if local is not None else 0)
    if children_n < 1 or not todo:
        run = local if local is not None else func
        yield from (run(task) for _, task in todo)
        return
    children_n = min(children_n, len(todo))
    stall = on_stall if on_stall is not None else _stall_default
    ctx = multiprocessing.get_context("fork")
    shared = (ctx.RawArray("i", children_n), ctx.RawArray("d", children_n))
    stalls: dict[int, int] = {}
    children: list[_Child] = []
    pending = len(todo)
    ended = False
    try:
        children = [_Child(slot, shared, init, args, func) for slot in range(children_n)]
        while pending:
            for child in children:
                while len(child.tasks) < depth and todo:
                    child.send(*todo.popleft())
            if local is not None and todo:
                pending -= 1
                yield local(todo.popleft()[1])
            busy = [c for c in children if c.tasks]
            if busy and (local is None or not todo):
                tick = None if timeout_s is None else min(1.0, timeout_s / 4)
                wait([c.conn for c in busy] + [c.process.sentinel for c in busy], tick)
            for i, child in enumerate(children):
                for value in child.results():
                    pending -= 1
                    yield value
                if not child.tasks:
                    continue
                items, since = shared
                started = since[child.slot]
                timed_out = (timeout_s is not None and started > 0
                             and time.monotonic() - started > timeout_s)
                if not timed_out and child.process.is_alive():
                    continue
                head = child.tasks[0][0]
                child.stop()  # what it answered before it ended is read, then its item
                for value in child.results():
                    pending -= 1
                    yield value
                item = items[child.slot]
                if child.tasks and child.tasks[0][0] != head:
                    timed_out = False  # the slow task ended as it was killed: not this one
                child.conn.close()
                if not child.tasks:  # it ended after its last answer
                    children[i] = _Child(child.slot, shared, init, args, func)
                    continue
                seq, task = child.tasks.popleft()
                stalls[seq] = stalls.get(seq, 0) + 1
                todo.extendleft(reversed(child.tasks))
                todo.appendleft((seq, stall(Stall(task, item, timed_out, stalls[seq]))))
                children[i] = _Child(child.slot, shared, init, args, func)
        ended = True
    finally:
        for child in children:
            if ended:
                with contextlib.suppress(OSError, ValueError):
                    child.conn.send(None)
        for child in children:
            if ended:
                child.process.join(5)
            child.kill()


def map_shared(processes: int, init: Callable[..., None], args: tuple[object, ...],
               func: Callable[[T], R], tasks: Iterable[T],
               local: Callable[[T], R]) -> Iterator[R]:
    """``processes`` working through ``tasks``, this one among them (``supervised`` with
    ``local``): ``processes - 1`` forked ones run ``func`` (after ``init(*args)``), and this
    process runs ``local`` between handing out tasks.

    The process that hands out the tasks mostly waited for them. Filling Apache Kafka's
    deferred graph facts, it waited at 64 MB beside two parser processes of about 105 MB
    each (45 MB of it shared with it); parsing a share itself with one parser process, the
    stack's summed RSS in that phase peaked at 1,001 MB instead of 1,064 MB."""
    return supervised(processes, init, args, func, tasks, local=local)
