"""Queue bookkeeping against a real Redis: what `status` reads as queued or running."""

from __future__ import annotations

import os

import pytest
import redis

from codenav import freshness
from codenav.config import Settings
from codenav.errors import Unavailable
from codenav.jobs import enqueue


def test_a_running_graph_build_keeps_the_repo_from_being_fresh(settings: Settings) -> None:
    conn = enqueue.connect_redis(settings)
    enqueue.mark_running(conn, "graph", 41, "graph-41-abc")
    waiting = enqueue.waiting(conn, 41)
    assert waiting == {"graph": "running (graph-41-abc)"}
    state = freshness.repo_freshness({}, waiting, {"state": "done"},
                                     {"at": 1e18, "mode": "events"})
    assert state["fresh"] is False
    assert "graph running (graph-41-abc)" in state["reasons"][0]
    enqueue.mark_finished(conn, "graph", 41)
    assert enqueue.waiting(conn, 41) == {}


def test_a_job_clears_only_its_own_running_mark(settings: Settings) -> None:
    """A graph job that queued the next one to go on may end after that one started."""
    conn = enqueue.connect_redis(settings)
    enqueue.mark_running(conn, "graph", 42, "graph-42-next")
    enqueue.mark_finished(conn, "graph", 42, "graph-42-first")
    assert enqueue.waiting(conn, 42) == {"graph": "running (graph-42-next)"}
    enqueue.mark_finished(conn, "graph", 42, "graph-42-next")
    assert enqueue.waiting(conn, 42) == {}


def test_a_failed_enqueue_leaves_no_flag_behind(settings: Settings) -> None:
    """Redis refusing the enqueue after the flag is set (here: an ACL user that may write
    codenav's keys but not RQ's) must not leave a flag that makes every later request
    think a job is already waiting."""
    admin = enqueue.connect_redis(settings)
    admin.acl_setuser("codenav-flags-only", enabled=True, passwords=["+flags-only"],
                      commands=["+@all"], keys=["codenav:*"])
    try:
        kwargs = admin.connection_pool.connection_kwargs
        limited = redis.Redis(host=kwargs["host"], port=kwargs["port"], db=kwargs.get("db", 0),
                              username="codenav-flags-only", password="flags-only")
        with pytest.raises(Unavailable, match="cannot reach the queue"):
            enqueue.request_full(limited, settings, 42)
        assert enqueue.waiting(admin, 42) == {}
        job = enqueue.request_full(admin, settings, 42)
        assert job and enqueue.waiting(admin, 42) == {"full": job}
    finally:
        admin.acl_deluser("codenav-flags-only")


def test_a_change_seen_again_while_a_job_runs_stays_pending(settings: Settings) -> None:
    """A path saved again in the same way (``changed`` twice) after a job read the pending
    set, and before it finished, may hold content newer than what the job indexed: the
    job's ``done_paths`` must leave it for the next job (the lost-save race of editors
    that rename a temporary file over the original a hundred times in a row)."""
    conn = enqueue.connect_redis(settings)
    repo_id = 43
    enqueue.request_paths(conn, settings, repo_id, {"src/a.py": "changed",
                                                    "src/b.py": "unindexed"})
    read_by_job = enqueue.pending_marks(conn, repo_id)
    assert enqueue.pending_changes(conn, repo_id) == {"src/a.py": "changed",
                                                      "src/b.py": "unindexed"}
    enqueue.request_paths(conn, settings, repo_id, {"src/a.py": "changed"})  # saved again
    enqueue.done_paths(conn, repo_id, read_by_job)
    assert enqueue.pending_changes(conn, repo_id) == {"src/a.py": "changed"}
    assert enqueue.pending_kinds(conn, repo_id, ["src/a.py", "src/b.py"]) == {
        "src/a.py": "changed"}
    assert enqueue.pending_counts(conn, repo_id) == {"changed": 1}
    assert enqueue.pending_state(conn, repo_id, ["src/b.py", "src/a.py"]) == (
        {"src/a.py": "changed"}, {"changed": 1})
    enqueue.done_paths(conn, repo_id, enqueue.pending_marks(conn, repo_id))
    assert enqueue.pending_changes(conn, repo_id) == {}
    assert enqueue.pending_state(conn, repo_id, ["src/a.py"]) == ({}, {})
    assert enqueue.pending_since(conn, repo_id) is None


def test_a_path_whose_name_is_not_utf8_is_left_to_the_full_reconcile(
        settings: Settings) -> None:
    """A file name that is not UTF-8 reaches Python as text with surrogates, which Redis
    cannot hold (an encoding error used to fail the watcher's whole request). It is not
    marked, the other paths are; the full reconcile, which walks its folder, reports it
    as skipped (``bad_name``)."""
    conn = enqueue.connect_redis(settings)
    repo_id = 44
    bad = os.fsdecode(b"src/bad\xff.py")
    assert enqueue.request_paths(conn, settings, repo_id, {bad: "unindexed",
                                                           "src/ok.py": "changed"})
    assert enqueue.pending_changes(conn, repo_id) == {"src/ok.py": "changed"}
    assert enqueue.request_paths(conn, settings, repo_id, [bad]) is None
    enqueue.done_paths(conn, repo_id, enqueue.pending_marks(conn, repo_id))
    assert enqueue.pending_changes(conn, repo_id) == {}
