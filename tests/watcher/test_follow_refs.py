"""Following refs with real processes: the watcher reads the followed refs of a repository's
git, a ref that moved queues a refs job, and a real worker indexes the new commit from git
and moves the ref; a followed branch deleted from git is dropped. A bare mirror is followed
the same way, with no working tree to watch."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from codenav.config import Settings
from codenav.db import queries as q
from tests.gitkit import UTIL, commit, git, make_history
from tests.watcher.test_live_index import Live, wait_until


def _refs(conn: psycopg.Connection, repo_id: int) -> dict[str, str]:
    return dict(conn.execute("SELECT name, commit FROM repo_refs WHERE repo_id = %s",
                             (repo_id,)).fetchall())


@pytest.fixture
def env(service_env: dict[str, str]) -> dict[str, str]:
    return {**service_env, "CODENAV_DEBOUNCE_MS": "100", "CODENAV_RECONCILE_INTERVAL_S": "3600"}


@pytest.fixture
def followed(settings: Settings, env: dict[str, str], conn: psycopg.Connection,
             tmp_path: Path) -> Iterator[Live]:
    history = make_history(tmp_path / "store")
    live = Live(settings, env, conn, history.root)
    conn.execute(q.REPO_SET_FOLLOW, {"follow": ["main", "release/*"], "keep": 1,
                                     "repo": live.repo.id, "visible": [live.repo.id]})
    live.start("worker")
    live.start("watcher")
    yield live
    live.stop()


def test_a_followed_branch_that_moves_in_git_is_re_pointed_and_one_deleted_is_dropped(
        followed: Live) -> None:
    conn, root, repo_id = followed.conn, followed.root, followed.repo.id
    head = git(root, "rev-parse", "main")
    release = git(root, "rev-parse", "release/1.0")
    wait_until(lambda: _refs(conn, repo_id) == {"main": head, "release/1.0": release},
               what="the followed refs to be indexed")
    moved = commit(root, {"app/util.py": UTIL + "def watched_fn():\n    return 1\n"}, "moved")
    wait_until(lambda: _refs(conn, repo_id).get("main") == moved, what="main to move")
    kept = conn.execute("SELECT commit FROM ref_history WHERE repo_id = %s AND name = 'main'",
                        (repo_id,)).fetchall()
    assert kept == [(head,)]  # keep 1
    found = conn.execute(
        "SELECT count(*) FROM symbols s JOIN files f ON f.content_id = s.content_id "
        "JOIN repo_refs r ON r.tree_id = f.tree_id WHERE r.name = 'main' "
        "AND s.name = 'watched_fn'").fetchone()
    assert found == (1,)
    git(root, "branch", "-q", "release/2.0", head)
    wait_until(lambda: _refs(conn, repo_id).get("release/2.0") == head,
               what="a new followed branch to be indexed")
    git(root, "branch", "-q", "-D", "release/1.0")
    wait_until(lambda: "release/1.0" not in _refs(conn, repo_id),
               what="a deleted followed branch to be dropped")
    git(root, "checkout", "-q", "-b", "scratch")  # a branch not followed
    commit(root, {"app/scratch.py": "def scratch():\n    return 0\n"}, "scratch")
    followed.wait_converged()  # the working tree follows the checkout as before
    assert set(_refs(conn, repo_id)) == {"main", "release/2.0"}


def test_a_bare_mirror_is_followed_without_a_working_tree(
        settings: Settings, env: dict[str, str], conn: psycopg.Connection,
        tmp_path: Path) -> None:
    history = make_history(tmp_path / "store")
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(history.root), str(mirror)],
                   check=True, capture_output=True)
    live = Live(settings, env, conn, mirror)
    live.start("worker")
    live.start("watcher")
    try:
        wait_until(lambda: _refs(conn, live.repo.id).get("main") == history.main[-1],
                   what="the mirror's default branch to be indexed")
        moved = commit(history.root, {"app/util.py": UTIL + "def mirrored():\n    return 2\n"},
                       "moved")
        git(mirror, "fetch", "-q", "origin", "+refs/heads/*:refs/heads/*")
        wait_until(lambda: _refs(conn, live.repo.id).get("main") == moved,
                   what="the mirror's branch to move")
        assert conn.execute("SELECT count(*) FROM trees WHERE repo_id = %s AND "
                            "kind = 'worktree'", (live.repo.id,)).fetchone() == (1,)
        assert conn.execute("SELECT count(*) FROM files f JOIN trees t ON t.id = f.tree_id "
                            "WHERE t.kind = 'worktree'").fetchone() == (0,)
    finally:
        live.stop()
