"""Batching across concurrent callers: one model thread drains a queue of requests.

Each request is a list of texts and a future. The worker takes the oldest request and then
every request waiting behind it while the group stays within ``max_batch`` texts, encodes
the whole group in one call (the encoder sorts it by length), and hands each caller its own
slice. Requests that arrive during an encode wait for the next group: under load, groups
fill up by themselves, with no timer and no added latency when idle.

Queries must not wait behind bulk work: a request of more than ``slice_size`` texts (an
index worker's backlog) is cut into slices encoded one group at a time, and small requests
(a search query) jump the queue, so a query waits for at most one slice.
"""

from __future__ import annotations

import logging
import threading
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
    texts: int = 0
    batches: int = 0
    """encode calls; fewer than ``requests`` means requests were grouped"""
    largest_batch: int = 0


URGENT_TEXTS = 4
"""Requests this small (search queries) are served before bulk slices."""


class Batcher:
    def __init__(self, encode: Encode, *, max_batch: int = 256, slice_size: int = 64) -> None:
        self._encode = encode
        self._max_batch = max_batch
        self._slice = max(1, min(slice_size, max_batch))
        self._pending: deque[tuple[list[str], Future[np.ndarray]]] = deque()
        self._urgent: deque[tuple[list[str], Future[np.ndarray]]] = deque()
        self._cond = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="codenav-embed-model", daemon=True)
        self.stats = Stats()

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        """Finish what is queued, then end the worker thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

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
            self._cond.notify()

    def _take(self) -> list[tuple[list[str], Future[np.ndarray]]] | None:
        with self._cond:
            while not self._pending and not self._urgent and not self._stopping:
                self._cond.wait()
            queue = self._urgent if self._urgent else self._pending
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
        while (group := self._take()) is not None:
            group = [(texts, fut) for texts, fut in group if fut.set_running_or_notify_cancel()]
            if not group:
                continue
            texts = [text for batch, _ in group for text in batch]
            try:
                vectors = self._encode(texts)
            except Exception as exc:  # handed to every caller of the group
                log.exception("encoding %d texts failed", len(texts))
                for _, fut in group:
                    fut.set_exception(exc)
                continue
            self.stats.requests += len(group)
            self.stats.texts += len(texts)
            self.stats.batches += 1
            self.stats.largest_batch = max(self.stats.largest_batch, len(texts))
            offset = 0
            for batch, fut in group:
                fut.set_result(vectors[offset:offset + len(batch)])
                offset += len(batch)
