"""The live index with real processes: a watcher sidecar, an RQ worker, Postgres, Redis.

Every test waits on observable state with a bound (no fixed sleeps): the index converges
to what is on disk, or the test fails at its deadline."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import redis
from rq import Queue
from rq.registry import StartedJobRegistry

from codenav import repos
from codenav.access import Caller
from codenav.config import Settings
from codenav.index.blob import git_blob_sha
from codenav.index.walk import walk
from codenav.jobs import coordination, enqueue

DEADLINE_S = 60.0

OPERATOR = Caller.operator()
"""Services called in-process answer for the operator (every repository)."""


def wait_until(predicate: Callable[[], bool], timeout: float = DEADLINE_S,
               what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"})


def disk_state(root: Path, settings: Settings) -> dict[str, str]:
    return {f.path: git_blob_sha((root / f.path).read_bytes())
            for f in walk(root, settings.max_file_bytes).files}


def index_state(conn: psycopg.Connection, repo_id: int) -> dict[str, str]:
    """The repository's working tree as indexed."""
    return dict(conn.execute("SELECT f.path, f.sha FROM files f JOIN trees t ON t.id = f.tree_id "
                             "WHERE f.repo_id = %s AND t.kind = 'worktree'",
                             (repo_id,)).fetchall())


class Live:
    """A repository under a real watcher and worker."""

    def __init__(self, settings: Settings, env: dict[str, str], conn: psycopg.Connection,
                 root: Path) -> None:
        self.settings, self.env, self.conn, self.root = settings, env, conn, root
        self.repo = repos.register(conn, str(root), root.name)
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.redis = redis.Redis.from_url(settings.redis_url)

    def start(self, name: str) -> subprocess.Popen[bytes]:
        module = "codenav_worker" if name.startswith("worker") else "codenav_watcher"
        log = (self.root.parent / f"{name}.log").open("ab")
        proc = subprocess.Popen([sys.executable, "-m", module], env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in self.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)

    def converged(self) -> bool:
        return index_state(self.conn, self.repo.id) == disk_state(self.root, self.settings)

    def wait_converged(self, timeout: float = DEADLINE_S) -> None:
        wait_until(self.converged, timeout, "the index to equal the disk")

    def settled(self) -> bool:
        """The watch has caught up (its catch-up reconcile, a second after the watch is up,
        is queued before the watcher reports it) and no index job is queued or running."""
        state = coordination.watcher_state(self.redis, self.repo.id) or {}
        queue = Queue(enqueue.INDEX_QUEUE, connection=self.redis)
        started = StartedJobRegistry(enqueue.INDEX_QUEUE, connection=self.redis)
        running = self.conn.execute("SELECT count(*) FROM index_runs WHERE repo_id = %s AND "
                                    "state = 'running'", (self.repo.id,)).fetchone()
        return (state.get("catching_up") is False and not queue.count and not started.count
                and not (running and running[0]))

    def wait_settled(self) -> None:
        """Until ``settled`` and converged on two polls in a row (a job leaves the queue an
        instant before it is registered as started). A test that counts runs starts here:
        under load, the catch-up's full reconcile came after a test had read its count."""
        polls = [False]

        def twice() -> bool:
            now = self.settled() and self.converged()
            polls.append(now)
            return now and polls[-2]

        wait_until(twice, DEADLINE_S, "the watch to catch up and the queue to empty")

    def runs(self) -> int:
        row = self.conn.execute("SELECT count(*) FROM index_runs WHERE repo_id = %s",
                                (self.repo.id,)).fetchone()
        return int(row[0]) if row else 0


@pytest.fixture
def live(settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
         tmp_path: Path) -> Iterator[Live]:
    root = tmp_path / "live"
    (root / "src").mkdir(parents=True)
    for i in range(5):
        (root / "src" / f"mod{i}.py").write_text(f"def function_{i}():\n    return {i}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")
    env = {**service_env, "CODENAV_DEBOUNCE_MS": "100", "CODENAV_RECONCILE_INTERVAL_S": "3600"}
    lv = Live(settings, env, conn, root)
    lv.start("worker")
    lv.start("watcher")
    lv.wait_settled()
    yield lv
    lv.stop()


def _write_in_place(path: Path, text: str) -> None:
    with path.open("r+") as handle:
        handle.seek(0)
        handle.write(text)
        handle.truncate()


def _truncate_then_write(path: Path, text: str) -> None:
    path.write_text("")
    path.write_text(text)


def _temp_then_rename(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.swp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _delete_then_create(path: Path, text: str) -> None:
    path.unlink()
    path.write_text(text)


def _sed_in_place(path: Path, text: str) -> None:
    """sed -i writes a temporary file and renames it over the original."""
    first, second = text.rstrip("\n").split("\n")
    subprocess.run(["sed", "-i", "-e", f"1s/.*/{first}/", "-e", f"2s/.*/{second}/", str(path)],
                   check=True, timeout=10)


SAVES = {"write_in_place": _write_in_place, "truncate_then_write": _truncate_then_write,
         "temp_then_rename": _temp_then_rename, "delete_then_create": _delete_then_create,
         "sed_in_place": _sed_in_place}


@pytest.mark.parametrize("pattern", list(SAVES))
def test_editor_save_patterns_end_with_the_index_equal_to_disk(live: Live, pattern: str) -> None:
    target = live.root / "src" / "mod0.py"
    save = SAVES[pattern]
    most_queued = 0
    for i in range(100):
        save(target, f"def saved_{pattern}_{i}():\n    return {i}\n")
        if i % 10 == 0:
            most_queued = max(most_queued, enqueue.queue_depth(live.redis, live.settings)["queued"])
    live.wait_converged()
    body = live.conn.execute(
        "SELECT c.body FROM contents c JOIN files f ON f.content_id = c.id "
        "WHERE f.repo_id = %s AND f.path = 'src/mod0.py'", (live.repo.id,)).fetchone()
    assert body == (target.read_text(),)
    assert most_queued <= 2  # coalesced: at most one waiting job per kind


def test_deletes_renames_and_directory_deletes_leave_no_ghosts(live: Live) -> None:
    (live.root / "pkg").mkdir()
    (live.root / "pkg" / "inner.py").write_text("def ghost_in_dir():\n    pass\n")
    (live.root / "src" / "old_name.py").write_text("def ghost_renamed():\n    pass\n")
    (live.root / "src" / "moved.py").write_text("def ghost_git_mv():\n    pass\n")
    live.wait_converged()
    git(live.root, "add", "-A")
    git(live.root, "commit", "-qm", "more")
    shutil.rmtree(live.root / "pkg")
    os.rename(live.root / "src" / "old_name.py", live.root / "src" / "new_name.py")
    git(live.root, "mv", "src/moved.py", "src/elsewhere.py")
    (live.root / "src" / "mod1.py").unlink()
    live.wait_converged()
    paths = set(index_state(live.conn, live.repo.id))
    assert {"src/new_name.py", "src/elsewhere.py"} <= paths
    assert not paths & {"pkg/inner.py", "src/old_name.py", "src/moved.py", "src/mod1.py"}
    ghosts = live.conn.execute(
        "SELECT count(*) FROM chunks c JOIN files f ON f.content_id = c.content_id "
        "WHERE c.symbol IN ('ghost_in_dir', 'function_1')").fetchone()
    assert ghosts == (0,)


def test_a_branch_switch_converges_with_few_jobs(live: Live) -> None:
    git(live.root, "checkout", "-qb", "feature")
    (live.root / "feature").mkdir()
    for i in range(300):
        (live.root / "feature" / f"f{i}.go").write_text(
            f"package feature\n\nfunc Feature{i}() int {{ return {i} }}\n")
    for i in range(5):
        (live.root / "src" / f"mod{i}.py").write_text(f"def changed_{i}():\n    pass\n")
    git(live.root, "add", "-A")
    git(live.root, "commit", "-qm", "feature")
    live.wait_converged()
    before = live.runs()
    git(live.root, "checkout", "-q", "main")
    live.wait_converged()
    jobs = live.runs() - before
    assert 1 <= jobs <= 305  # jobs never exceed changed files; coalescing makes it a few
    assert jobs <= 10, jobs
    assert not any(p.startswith("feature/") for p in index_state(live.conn, live.repo.id))
    head = subprocess.run(["git", "-C", str(live.root), "rev-parse", "HEAD"],
                          capture_output=True, text=True, check=True).stdout.strip()

    def indexed_commit() -> str | None:
        row = live.conn.execute("SELECT commit FROM trees WHERE repo_id = %s "
                                "AND kind = 'worktree'", (live.repo.id,)).fetchone()
        return row[0] if row else None

    # the index also records the commit it now matches (the last job after the switch)
    wait_until(lambda: indexed_commit() == head, what="the indexed commit to be HEAD")


def test_a_killed_watcher_restarts_and_loses_nothing(live: Live) -> None:
    watcher = live.procs["watcher"]
    os.killpg(watcher.pid, signal.SIGKILL)
    watcher.wait(10)
    (live.root / "src" / "while_down.py").write_text("def written_while_down():\n    pass\n")
    (live.root / "src" / "mod2.py").unlink()
    live.redis.delete(f"codenav:watch-leader:{live.repo.id}")  # the dead leader's lease
    live.start("watcher")
    live.wait_converged()
    assert "src/while_down.py" in index_state(live.conn, live.repo.id)


def test_events_in_ignored_directories_create_no_jobs(live: Live) -> None:
    (live.root / ".gitignore").write_text("build_output/\n")
    live.wait_converged()
    before = live.runs()
    for name in ("node_modules/dep", "build_output/x", ".venv/lib"):
        (live.root / name).mkdir(parents=True)
        for i in range(50):
            (live.root / name / f"f{i}.js").write_text(f"module.exports = {i}\n")
    (live.root / "src" / "sentinel.py").write_text("def sentinel():\n    pass\n")
    live.wait_converged()
    assert live.runs() - before == 1  # the sentinel's job only
    indexed = set(index_state(live.conn, live.repo.id))
    assert not any(p.startswith(("node_modules/", "build_output/", ".venv/")) for p in indexed)
    def watched() -> int:
        state = coordination.watcher_state(live.redis, live.repo.id) or {}
        assert state.get("mode") == "events"
        return int(state.get("watched_dirs") or 0)

    # the root, src and .git: the ignored trees cost no inotify watches
    wait_until(lambda: watched() == 3, 10, "the watcher to report its watches")


def test_only_one_watcher_leads_a_repository(live: Live) -> None:
    second = live.start("watcher-2")
    first = live.procs["watcher"]
    leader_key = f"codenav:watch-leader:{live.repo.id}"
    leader = live.redis.get(leader_key)
    assert leader is not None
    (live.root / "src" / "one.py").write_text("def one():\n    pass\n")
    live.wait_converged()
    assert live.redis.get(leader_key) == leader
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(10)
    wait_until(lambda: live.redis.get(leader_key) not in (None, leader), 20,
               "the second watcher to take over")
    (live.root / "src" / "two.py").write_text("def two():\n    pass\n")
    live.wait_converged()
    assert second.poll() is None


def test_answers_flag_stale_results_and_status_is_never_fresh_with_work_pending(
        live: Live) -> None:
    from codenav_api.service import Services

    svc = Services(live.settings)
    svc.open()
    try:
        wait_until(lambda: svc.run(OPERATOR, "status", {})["repos"][0]["freshness"]["fresh"], 20,
                   "a fresh index")
        worker = live.procs["worker"]
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)
        (live.root / "src" / "mod3.py").write_text("def function_3():\n    return 'edited'\n")
        (live.root / "src" / "brand_new.py").write_text("def brand_new():\n    pass\n")
        wait_until(lambda: len(enqueue.pending_changes(live.redis, live.repo.id)) >= 2, 20,
                   "the watcher to notice the edits")
        answer = svc.run(OPERATOR, "search", {"query": "function_3"})
        hit = next(r for r in answer["results"] if r["path"] == "src/mod3.py")
        assert hit["stale"] is True
        assert answer["unindexed_files"] >= 1
        repo = svc.run(OPERATOR, "status", {})["repos"][0]
        assert repo["freshness"]["fresh"] is False
        assert repo["index_status"] == "stale"
        changed = repo["freshness"]["changed"]
        assert "src/mod3.py" in changed["changed"]["paths"]
        assert "src/brand_new.py" in changed["unindexed"]["paths"]
        assert repo["freshness"]["queued_jobs"]  # the waiting job is visible
        live.start("worker")
        live.wait_converged()
        wait_until(lambda: svc.run(OPERATOR, "status", {})["repos"][0]["freshness"]["fresh"], 30,
                   "fresh again once the work is done")
        again = svc.run(OPERATOR, "search", {"query": "function_3"})
        assert not any(r.get("stale") for r in again["results"])
    finally:
        svc.close()


def test_polling_mode_keeps_the_index_current_and_says_so(
        settings: Settings, service_env: dict[str, str], conn: psycopg.Connection,
        tmp_path: Path) -> None:
    """Where file events do not arrive (network filesystems, Docker Desktop, or when the
    kernel refuses watches) the watcher polls; the index still follows the disk."""
    root = tmp_path / "polled"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def before():\n    pass\n")
    env = {**service_env, "CODENAV_WATCH_MODE": "polling", "CODENAV_POLL_INTERVAL_S": "0.3",
           "CODENAV_DEBOUNCE_MS": "100", "CODENAV_RECONCILE_INTERVAL_S": "3600"}
    lv = Live(settings, env, conn, root)
    lv.start("worker")
    lv.start("watcher")
    try:
        lv.wait_converged()
        (root / "src" / "a.py").write_text("def after_polling():\n    pass\n")
        (root / "src" / "b.py").write_text("def added_while_polling():\n    pass\n")
        lv.wait_converged()
        state = coordination.watcher_state(lv.redis, lv.repo.id)
        assert state is not None and state["mode"] == "polling"
    finally:
        lv.stop()
