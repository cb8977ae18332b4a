"""Queue bookkeeping against a real Redis: what `status` reads as queued or running."""

from __future__ import annotations

import pytest
import redis

from codenav import freshness, queue
from codenav.config import Settings
from codenav.errors import Unavailable


def test_a_running_graph_build_keeps_the_repo_from_being_fresh(settings: Settings) -> None:
    conn = queue.connect_redis(settings)
    queue.mark_running(conn, "graph", 41, "graph-41-abc")
    waiting = queue.waiting(conn, 41)
    assert waiting == {"graph": "running (graph-41-abc)"}
    state = freshness.repo_freshness({}, waiting, {"state": "done"},
                                     {"at": 1e18, "mode": "events"})
    assert state["fresh"] is False
    assert "graph running (graph-41-abc)" in state["reasons"][0]
    queue.mark_finished(conn, "graph", 41)
    assert queue.waiting(conn, 41) == {}


def test_a_failed_enqueue_leaves_no_flag_behind(settings: Settings,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The connection dropping between setting the flag and enqueueing (injected) must not
    leave a flag that makes every later request think a job is already waiting."""
    conn = queue.connect_redis(settings)

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise redis.ConnectionError("queue went away")

    monkeypatch.setattr("rq.Queue.enqueue", refuse)
    with pytest.raises(Unavailable, match="queue went away"):
        queue.request_full(conn, settings, 42)
    assert queue.waiting(conn, 42) == {}
    monkeypatch.undo()
    job = queue.request_full(conn, settings, 42)
    assert job and queue.waiting(conn, 42) == {"full": job}
