"""The batcher's scheduling: bulk work is sliced, queries jump the queue."""

from __future__ import annotations

import threading

import numpy as np

from codenav_embedder.batcher import Batcher


def test_a_query_waits_for_at_most_one_slice_of_bulk_work() -> None:
    calls: list[int] = []
    gate = threading.Event()

    def encode(texts: list[str]) -> np.ndarray:
        gate.wait(10)  # the first slice is "running" until the query has been queued
        calls.append(len(texts))
        return np.array([[float(len(t))] for t in texts])

    batcher = Batcher(encode, max_batch=256, slice_size=32)
    batcher.start()
    try:
        bulk = batcher.submit([f"chunk {i}" for i in range(256)])
        query = batcher.submit(["where do we retry uploads"])
        gate.set()
        vector = query.result(10)
        assert vector.shape == (1, 1)
        bulk_vectors = bulk.result(10)
        assert bulk_vectors.shape == (256, 1)
        assert list(bulk_vectors[:3, 0]) == [7.0, 7.0, 7.0]  # rows stay in request order
        # the query ran right after the slice in progress, not after all 256 texts
        assert calls.index(1) <= 1
        assert max(calls) <= 32
    finally:
        batcher.stop()
