"""Index jobs through real Redis, real RQ workers and a real Postgres."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time
from pathlib import Path

import psutil
import psycopg
import pytest
import redis
from rq import Worker
from rq.serializers import JSONSerializer

from codenav import repos
from codenav.config import Settings
from codenav.index import reconcile
from codenav.index.walk import walk
from codenav.jobs import enqueue
from codenav.tokens import file_term_counts
from tests.polyglot import BAD_FILES, make_polyglot


@pytest.fixture
def job_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Jobs read their settings from the environment, as in a real worker process."""
    for key, value in (("CODENAV_DATABASE_URL", settings.database_url),
                       ("CODENAV_REDIS_URL", settings.redis_url),
                       ("CODENAV_HOME", settings.home), ("CODENAV_PARSE_PROCESSES", "2"),
                       ("CODENAV_ALLOWED_ROOTS", settings.allowed_roots[0])):
        monkeypatch.setenv(key, value)
    import codenav.jobs.tasks as jobs

    monkeypatch.setattr(jobs, "_SETTINGS", None)
    return settings


def _work(settings: Settings) -> None:
    conn = enqueue.connect_redis(settings)
    Worker([enqueue.INDEX_QUEUE], connection=conn, serializer=JSONSerializer).work(burst=True)


def _indexed_paths(conn: psycopg.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT path FROM files")}


def test_a_full_index_job_runs_on_a_real_worker(job_env: Settings, conn: psycopg.Connection,
                                                tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    r = enqueue.connect_redis(job_env)
    job_id = enqueue.request_full(r, job_env, repo.id)
    assert job_id is not None
    _work(job_env)
    info = enqueue.job_info(r, job_id)
    assert info is not None and info["state"] == "finished"
    walked = {f.path for f in walk(root, job_env.max_file_bytes).files}
    assert _indexed_paths(conn) == walked - set(BAD_FILES)
    run = conn.execute("SELECT state, job_id FROM index_runs ORDER BY id DESC LIMIT 1").fetchone()
    assert run == ("done", job_id)


def test_requests_are_coalesced_into_one_waiting_job(job_env: Settings,
                                                     conn: psycopg.Connection,
                                                     tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    r = enqueue.connect_redis(job_env)
    ids = {enqueue.request_full(r, job_env, repo.id) for _ in range(50)}
    assert len(ids) == 1
    path_ids = {enqueue.request_paths(r, job_env, repo.id, [f"src/f{i}.py"]) for i in range(200)}
    assert len(path_ids) == 1
    assert enqueue.queue_depth(r, job_env)["queued"] == 2
    _work(job_env)
    assert enqueue.pending_paths(r, repo.id) == []
    assert enqueue.queue_depth(r, job_env)["queued"] == 0


def test_path_jobs_pick_up_edits_and_deletes(job_env: Settings, conn: psycopg.Connection,
                                             tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(job_env, repo.id)
    (root / "src" / "auth" / "tokens.py").write_text("def brand_new_function():\n    pass\n")
    (root / "lib" / "worker.rb").unlink()
    (root / "src" / "added.go").write_text("package src\n\nfunc AddedLater() {}\n")
    r = enqueue.connect_redis(job_env)
    enqueue.request_paths(r, job_env, repo.id, ["src/auth/tokens.py", "lib/worker.rb",
                                              "src/added.go"])
    _work(job_env)
    symbols = {row[0] for row in conn.execute(
        "SELECT c.symbol FROM chunks c JOIN files f ON f.content_id = c.content_id "
        "WHERE f.path IN ('src/auth/tokens.py', 'src/added.go') AND c.symbol IS NOT NULL")}
    assert symbols == {"brand_new_function", "AddedLater"}
    assert "lib/worker.rb" not in _indexed_paths(conn)


def test_running_the_same_job_twice_at_once_converges(job_env: Settings,
                                                      conn: psycopg.Connection,
                                                      tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    threads = [threading.Thread(target=reconcile.reconcile, args=(job_env, repo.id))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    once = _indexed_paths(conn)
    counts = conn.execute("SELECT count(*), count(DISTINCT (sha, language)) FROM contents")
    total, distinct = counts.fetchone()  # type: ignore[misc]
    assert total == distinct
    reconcile.reconcile(job_env, repo.id)
    assert _indexed_paths(conn) == once


def _stdlib_sample(dest: Path, limit: int = 900) -> Path:
    """A real corpus: part of the Python standard library of this interpreter."""
    src = Path(sysconfig.get_paths()["stdlib"])
    root = dest / "stdlib"
    copied = 0
    for path in sorted(src.rglob("*.py")):
        if "site-packages" in path.parts or "test" in path.parts:
            continue
        target = root / path.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied += 1
        if copied >= limit:
            break
    return root


def test_a_worker_killed_mid_job_loses_nothing(job_env: Settings, conn: psycopg.Connection,
                                               service_env: dict[str, str],
                                               tmp_path: Path) -> None:
    root = _stdlib_sample(tmp_path)
    repo = repos.register(conn, str(root), "stdlib")
    r = enqueue.connect_redis(job_env)
    enqueue.request_full(r, job_env, repo.id)
    proc = subprocess.Popen([sys.executable, "-m", "codenav_worker", "--burst"],
                            env=service_env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        row = conn.execute("SELECT files_done, files_total FROM index_runs").fetchone()
        if row and 0 < row[0] < row[1] and conn.execute("SELECT count(*) FROM files").fetchone()[0]:  # type: ignore[index]
            break
        time.sleep(0.05)
    # RQ runs each job in a work horse in its own session: kill the whole tree at once.
    tree = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGKILL)
    for child in tree:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    proc.wait(10)
    partial = len(_indexed_paths(conn))
    expected = {f.path for f in walk(root, job_env.max_file_bytes).files}
    assert partial < len(expected)
    summary = reconcile.reconcile(job_env, repo.id)
    assert _indexed_paths(conn) == expected
    assert summary.files_parsed <= len(expected) - partial + 64
    states = [s for (s,) in conn.execute("SELECT state FROM index_runs ORDER BY id")]
    assert states == ["failed", "done"]
    dangling = conn.execute("SELECT count(*) FROM contents c WHERE NOT EXISTS "
                            "(SELECT 1 FROM files f WHERE f.content_id = c.id)").fetchone()
    assert dangling == (0,)
    redis.Redis.from_url(job_env.redis_url).flushdb()


def test_a_graph_job_that_fills_many_facts_leaves_the_build_to_a_job_of_its_own(
        job_env: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """A first index defers the graph and its facts to a graph job. A run while that job
    waits leaves them to it as well. The graph job parses a share of the facts itself; with
    many, the build goes on in the next job, so its process starts without that memory."""
    from codenav.graph import build, facts

    repo = repos.register(conn, str(_stdlib_sample(tmp_path, limit=400)), "stdlib")
    r = enqueue.connect_redis(job_env)
    first = enqueue.request_full(r, job_env, repo.id)
    Worker([enqueue.INDEX_QUEUE], connection=r,
           serializer=JSONSerializer).work(burst=True, max_jobs=1)
    info = enqueue.job_info(r, first or "")
    assert info is not None and info["state"] == "finished"
    graph_job = info["result"]["graph_job"]
    tree = reconcile.worktree(conn, repo.id)
    assert build.awaits_build(conn, tree)
    # the grep index is left to the graph job too
    outside = "SELECT count(*) FROM contents WHERE NOT grep_ready"
    contents = conn.execute("SELECT count(*) FROM contents").fetchone()
    assert contents is not None and contents[0] > 0
    assert conn.execute(outside).fetchone() == contents
    # and the whole-file postings (find_files meanwhile counts those files' chunks)
    assert conn.execute("SELECT count(*) FROM pending_terms").fetchone() == contents
    # another full run while the graph job waits: it leaves the build to that job
    again = reconcile.reconcile(job_env, repo.id, None, defer_graph=True)
    assert again.graph_deferred
    assert build.awaits_build(conn, tree)
    _work(job_env)
    filling = enqueue.job_info(r, graph_job)
    assert filling is not None and filling["state"] == "finished", filling
    assert filling["result"]["facts"] >= facts.INLINE_LIMIT
    building = enqueue.job_info(r, filling["result"]["graph_job"])
    assert building is not None and building["state"] == "finished", building
    assert building["result"]["files"] > 0 and "facts" not in building["result"]
    assert build.is_current(conn, tree)
    assert conn.execute("SELECT count(*) FROM pending_facts").fetchone() == (0,)
    assert conn.execute("SELECT count(*) FROM pending_terms").fetchone() == (0,)
    for cid, body in conn.execute("SELECT id, body FROM contents").fetchall():
        assert dict(conn.execute("SELECT term, tf FROM file_terms WHERE content_id = %s",
                                 (cid,)).fetchall()) == file_term_counts(body), cid
    assert conn.execute(outside).fetchone() == (0,)
    assert enqueue.waiting(r, repo.id) == {}
