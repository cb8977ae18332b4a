"""Batching across concurrent callers: one model thread drains a queue of requests.

Each request is a list of texts and a future. The worker takes the oldest request and then
every request waiting behind it while the group stays within ``max_batch`` texts, encodes
the whole group in one call (the encoder sorts it by length), and hands each caller its own
slice. Requests that arrive during an encode wait for the next group: under load, groups
fill up by themselves, with no timer and no added latency when idle.

Queries must not wait behind bulk work: a request of more than ``slice_size`` texts (an
index worker's backlog) is cut into slices encoded one group at a time, and small requests
(a search query) jump the queue, so a query waits for at most one slice. With a query lane
(``query_encode``: its own runtime, see ``app.Runtime``) small requests never wait for bulk
work at all: a thread of their own encodes them while a slice runs.

Stopping cancels the bulk work still queued (its callers get an error at once) and lets the
group in progress finish, so a shutdown takes at most one slice.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

log = logging.getLogger("codenav.embedder")

Encode = Callable[[list[str]], np.ndarray]


@dataclass
class Stats:
    requests: int = 0
    """Embedding requests answered (a request holds one or more texts)."""
    texts: int = 0
    batches: int = 0
    """encode calls; fewer than ``requests`` means requests were grouped"""
    largest_batch: int = 0
    releases: int = 0
    """Times the bulk runtime was closed after idling (``release_after_s``)."""


URGENT_TEXTS = 4
"""Requests this small (search queries) are served before bulk slices."""


class Batcher:
    def __init__(self, encode: Encode, *, max_batch: int = 256, slice_size: int = 64,
                 query_encode: Encode | None = None, bulk_nice: int = 0,
                 bulk_setup: Callable[[], object] | None = None,
                 bulk_release: Callable[[], object] | None = None,
                 release_after_s: float = 0.0) -> None:
        self._encode = encode
        self._bulk_setup = bulk_setup
        self._bulk_release = bulk_release if release_after_s > 0 else None
        """Called by the bulk thread after ``release_after_s`` seconds without bulk work
        (the runtime gives its memory back); ``bulk_setup`` runs again before the next."""
        self._release_after = release_after_s
        self._query_encode = query_encode
        self._bulk_nice = bulk_nice
        self._max_batch = max_batch
        self._slice = max(1, min(slice_size, max_batch))
        self._pending: deque[tuple[list[str], Future[np.ndarray]]] = deque()
        self._urgent: deque[tuple[list[str], Future[np.ndarray]]] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="codenav-embed-model", daemon=True)
        self._query_thread = threading.Thread(target=self._run_queries, daemon=True,
                                              name="codenav-embed-queries")
        self._stats_lock = threading.Lock()
        self.stats = Stats()

    def start(self) -> None:
        if self._query_encode is not None:
            self._query_thread.start()
        self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Cancel the bulk work still queued, finish the groups in progress, end."""
        with self._cond:
            self._stopping = True
            cancelled = list(self._pending)
            self._pending.clear()
            self._cond.notify_all()
        for _texts, future in cancelled:
            if future.set_running_or_notify_cancel():
                future.set_exception(RuntimeError("the embedder is shutting down"))
        for thread in (self._thread, self._query_thread):
            if thread.is_alive():
                thread.join(timeout)

    @property
    def slice_size(self) -> int:
        """Most texts of bulk work encoded in one call (a larger request is cut)."""
        return self._slice

    def submit(self, texts: list[str]) -> Future[np.ndarray]:
        """Queue ``texts``; the future resolves to their vectors, one row per text."""
        future: Future[np.ndarray] = Future()
        if len(texts) <= self._slice:
            self._queue([(texts, future)], urgent=len(texts) <= URGENT_TEXTS)
            return future
        parts = [texts[i:i + self._slice] for i in range(0, len(texts), self._slice)]
        results: list[np.ndarray | None] = [None] * len(parts)
        left = [len(parts)]
        lock = threading.Lock()

        def gather(index: int, part: Future[np.ndarray]) -> None:
            error = part.exception()
            with lock:
                if future.done():
                    return
                if error is not None:
                    future.set_exception(error)
                    return
                results[index] = part.result()
                left[0] -= 1
                if left[0] == 0:
                    future.set_result(np.vstack([r for r in results if r is not None]))

        slices: list[tuple[list[str], Future[np.ndarray]]] = []
        for i, part_texts in enumerate(parts):
            part: Future[np.ndarray] = Future()
            part.add_done_callback(lambda f, i=i: gather(i, f))  # type: ignore[misc]
            slices.append((part_texts, part))
        self._queue(slices, urgent=False)
        return future

    def _queue(self, items: list[tuple[list[str], Future[np.ndarray]]], urgent: bool) -> None:
        with self._cond:
            if self._stopping:
                raise RuntimeError("the embedder is shutting down")
            (self._urgent if urgent else self._pending).extend(items)
            self._cond.notify_all()  # two threads wait: each for its own queue

    def _take(self, queries_only: bool = False, idle_s: float | None = None,
              ) -> list[tuple[list[str], Future[np.ndarray]]] | None:
        """The next group to encode: urgent requests first (all of them, up to
        ``max_batch`` texts), else one slice of bulk work; None once stopping and empty;
        an empty group after ``idle_s`` seconds with nothing to take. With a query lane,
        the bulk thread never takes urgent requests and the query thread takes nothing
        else."""
        lane = self._query_encode is not None
        deadline = None if idle_s is None else time.monotonic() + idle_s
        with self._cond:
            while True:
                if queries_only:
                    queue = self._urgent
                elif self._urgent and not lane:
                    queue = self._urgent
                else:
                    queue = self._pending
                if queue or self._stopping:
                    break
                if deadline is None:
                    self._cond.wait()
                elif (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
                else:
                    return []
            if not queue:
                return None
            limit = self._max_batch if queue is self._urgent else self._slice
            group = [queue.popleft()]
            size = len(group[0][0])
            while queue and size + len(queue[0][0]) <= max(limit, len(group[0][0])):
                group.append(queue.popleft())
                size += len(group[-1][0])
            return group

    def _run(self) -> None:
        if self._bulk_nice:
            lower_priority(self._bulk_nice)
        idle = self._release_after if self._bulk_release is not None else None
        group: list[tuple[list[str], Future[np.ndarray]]] | None = None
        while True:
            if self._bulk_setup is not None:  # runs at the bulk priority (threads inherit it)
                self._bulk_setup()
            if group:
                self._encode_group(group, self._encode)
            while group := self._take(idle_s=idle):
                self._encode_group(group, self._encode)
            if group is None:
                return
            assert self._bulk_release is not None
            self._bulk_release()  # idle that long: the runtime gives its memory back
            with self._stats_lock:
                self.stats.releases += 1
            if (group := self._take()) is None:  # no runtime until there is work again
                return

    def _run_queries(self) -> None:
        assert self._query_encode is not None
        while (group := self._take(queries_only=True)) is not None:
            self._encode_group(group, self._query_encode)

    def _encode_group(self, group: list[tuple[list[str], Future[np.ndarray]]],
                      encode: Encode) -> None:
        group = [(texts, fut) for texts, fut in group if fut.set_running_or_notify_cancel()]
        if not group:
            return
        texts = [text for batch, _ in group for text in batch]
        try:
            vectors = encode(texts)
        except Exception as exc:  # handed to every caller of the group
            log.exception("encoding %d texts failed", len(texts))
            for _, fut in group:
                fut.set_exception(exc)
            return
        with self._stats_lock:
            self.stats.requests += len(group)
            self.stats.texts += len(texts)
            self.stats.batches += 1
            self.stats.largest_batch = max(self.stats.largest_batch, len(texts))
        offset = 0
        for batch, fut in group:
            fut.set_result(vectors[offset:offset + len(batch)])
            offset += len(batch)


def lower_priority(nice: int) -> None:
    """Lower the calling thread's CPU priority (Linux: per thread), so that queries, index
    jobs and searches run first when the cores are busy; threads it starts inherit it."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(),
                       min(19, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
                           + nice))
    except OSError as exc:
        log.warning("could not lower the bulk embedding priority: %s", exc)
