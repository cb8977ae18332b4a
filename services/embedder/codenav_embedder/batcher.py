"""Batching across concurrent callers: one model thread drains a queue of requests.

Each request is a list of texts and a future. The worker takes the oldest request and then
every request waiting behind it while the group stays within ``max_batch`` texts (a request
is never split; one larger than ``max_batch`` goes alone), encodes the whole group in one
call (the encoder sorts it by length), and hands each caller its own slice. Requests that
arrive during an encode wait for the next group: under load, groups fill up by themselves,
with no timer and no added latency when idle.
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


class Batcher:
    def __init__(self, encode: Encode, *, max_batch: int = 256) -> None:
        self._encode = encode
        self._max_batch = max_batch
        self._pending: deque[tuple[list[str], Future[np.ndarray]]] = deque()
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
        with self._cond:
            if self._stopping:
                raise RuntimeError("the embedder is shutting down")
            self._pending.append((texts, future))
            self._cond.notify()
        return future

    def _take(self) -> list[tuple[list[str], Future[np.ndarray]]] | None:
        with self._cond:
            while not self._pending and not self._stopping:
                self._cond.wait()
            if not self._pending:
                return None
            group = [self._pending.popleft()]
            size = len(group[0][0])
            while self._pending and size + len(self._pending[0][0]) <= self._max_batch:
                group.append(self._pending.popleft())
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
