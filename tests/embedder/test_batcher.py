"""The batcher's scheduling: bulk work is sliced, queries jump the queue."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

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


def test_with_a_query_lane_a_query_is_answered_while_a_bulk_slice_is_still_encoding() -> None:
    bulk_started, release = threading.Event(), threading.Event()

    def bulk(texts: list[str]) -> np.ndarray:
        bulk_started.set()
        release.wait(10)  # a long slice, still running when the query comes
        return np.ones((len(texts), 1))

    def queries(texts: list[str]) -> np.ndarray:
        return np.full((len(texts), 1), 2.0)

    batcher = Batcher(bulk, max_batch=256, slice_size=32, query_encode=queries)
    batcher.start()
    try:
        backlog = batcher.submit([f"chunk {i}" for i in range(64)])
        assert bulk_started.wait(10)
        query = batcher.submit(["where do we retry uploads"])
        assert query.result(10).tolist() == [[2.0]]  # answered with the slice in progress
        assert not backlog.done()
        release.set()
        assert backlog.result(10).shape == (64, 1)
    finally:
        release.set()
        batcher.stop()


def test_stopping_cancels_the_queued_bulk_work_and_finishes_the_slice_in_hand() -> None:
    bulk_started, release = threading.Event(), threading.Event()
    encoded: list[int] = []

    def bulk(texts: list[str]) -> np.ndarray:
        bulk_started.set()
        release.wait(10)
        encoded.append(len(texts))
        return np.zeros((len(texts), 1))

    batcher = Batcher(bulk, max_batch=256, slice_size=16)
    batcher.start()
    in_hand = batcher.submit([f"chunk {i}" for i in range(16)])
    assert bulk_started.wait(10)
    queued = batcher.submit([f"later {i}" for i in range(64)])
    stopper = threading.Thread(target=batcher.stop)
    stopper.start()
    with pytest.raises(RuntimeError, match="shutting down"):
        queued.result(10)  # its callers hear at once, not after the backlog
    release.set()
    stopper.join(10)
    assert in_hand.result(10).shape == (16, 1)
    assert encoded == [16]


def test_an_idle_bulk_runtime_is_released_and_opened_again_for_the_next_bulk_work() -> None:
    """After ``release_after_s`` without bulk work the bulk thread releases its runtime;
    queries (their own lane) do not open it; the next bulk work opens it first."""
    events: list[str] = []
    released = threading.Event()

    def bulk(texts: list[str]) -> np.ndarray:
        assert events[-1] in ("setup", "encode"), events  # never on a released runtime
        events.append("encode")
        return np.ones((len(texts), 1))

    def release() -> None:
        events.append("release")
        released.set()

    batcher = Batcher(bulk, slice_size=8, query_encode=lambda t: np.zeros((len(t), 1)),
                      bulk_setup=lambda: events.append("setup"), bulk_release=release,
                      release_after_s=0.2)
    batcher.start()
    try:
        assert batcher.submit([f"chunk {i}" for i in range(20)]).result(10).shape == (20, 1)
        assert released.wait(10)
        assert batcher.submit(["a query"]).result(10).shape == (1, 1)
        assert events == ["setup", "encode", "encode", "encode", "release"]
        assert batcher.submit(["chunk"] * 9).result(10).shape == (9, 1)
        assert events[5:] == ["setup", "encode", "encode"]
        assert batcher.stats.releases == 1
    finally:
        batcher.stop()


def test_a_bulk_runtime_that_is_busy_or_unconfigured_is_never_released() -> None:
    released: list[int] = []
    gate = threading.Event()

    def slow(texts: list[str]) -> np.ndarray:
        gate.wait(10)
        return np.ones((len(texts), 1))

    busy = Batcher(slow, slice_size=8, bulk_release=lambda: released.append(1),
                   release_after_s=0.05)
    never = Batcher(lambda t: np.ones((len(t), 1)), bulk_release=lambda: released.append(2))
    work = busy.submit(["chunk"] * 8)  # queued before its thread starts: never idle
    for b in (busy, never):
        b.start()
    try:
        assert never.submit(["chunk"] * 8).result(10).shape == (8, 1)
        time.sleep(0.3)  # a slice longer than the idle time is not idle time
        assert released == []
        gate.set()
        assert work.result(10).shape == (8, 1)
    finally:
        for b in (busy, never):
            b.stop()
