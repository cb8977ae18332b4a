"""`codenav index` waits for the work, not for one job: against a real API (uvicorn in a
thread), a real Postgres and Redis, with no worker taking the queued job."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
import redis

from codenav import repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.errors import CodenavError
from codenav.index import reconcile
from codenav.jobs import enqueue
from codenav_cli.cli import EmbeddingProgress, _api, _check_done, _session, wait_for_job
from tests.embedkit import start_embedder, stop
from tests.polyglot import make_polyglot
from tests.teamkit import serve, write_tree


@pytest.fixture
def client_settings(settings: Settings, conn: psycopg.Connection) -> Iterator[Settings]:
    token, _ = create_token(conn, "cli-test", "write")
    with serve(settings) as url:
        yield Settings.load(env={"CODENAV_URL": url, "CODENAV_TOKEN": token},
                            dotenv=Path("/nonexistent"))


def test_waiting_ends_once_a_newer_full_run_covers_the_request_of_a_queued_job(
        settings: Settings, conn: psycopg.Connection, client_settings: Settings,
        tmp_path: Path) -> None:
    repo = repos.register(conn, str(make_polyglot(tmp_path)), "polyglot")
    job_id = enqueue.request_full(redis.Redis.from_url(settings.redis_url), settings, repo.id)
    assert job_id is not None  # queued, and no worker will take it
    summary = reconcile.reconcile(settings, repo.id)  # another request's run does the work
    info = wait_for_job(client_settings, job_id, "polyglot", quiet=True, timeout=60,
                        baseline=0)
    assert info["state"] == "queued"
    assert info["run"]["id"] == summary.run_id and info["run"]["state"] == "done"
    assert _check_done(info, "indexing")["files_total"] == summary.files_total


def test_waiting_does_not_end_on_a_run_older_than_the_request(
        settings: Settings, conn: psycopg.Connection, client_settings: Settings,
        tmp_path: Path) -> None:
    repo = repos.register(conn, str(make_polyglot(tmp_path)), "polyglot")
    summary = reconcile.reconcile(settings, repo.id)  # before the request: it proves nothing
    job_id = enqueue.request_full(redis.Redis.from_url(settings.redis_url), settings, repo.id)
    assert job_id is not None
    info = wait_for_job(client_settings, job_id, "polyglot", quiet=True, timeout=1.5)
    assert "covered_by" not in info  # it kept waiting for its own job, to the time limit
    assert info["state"] == "queued" and info["repo_run"]["id"] == summary.run_id


def test_polling_keeps_one_client_and_one_connection_while_the_endpoint_stays(
        settings: Settings, conn: psycopg.Connection, client_settings: Settings,
        tmp_path: Path) -> None:
    """Waiting polls four times a second: one client and one kept-alive connection for all
    of it (a client made for each poll cost 30 ms of CPU, a tenth of a core). A token or
    address that changes (the stack started again) gets a client of its own."""
    repo = repos.register(conn, str(make_polyglot(tmp_path)), "polyglot")
    job_id = enqueue.request_full(redis.Redis.from_url(settings.redis_url), settings, repo.id)
    assert job_id is not None
    _session.close()
    assert _api(client_settings, "GET", "/v1/repos")["repos"]
    client = _session._client
    assert client is not None
    wait_for_job(client_settings, job_id, "polyglot", quiet=True, timeout=1.5)  # ~6 polls
    assert _session._client is client
    assert len(client._client._transport._pool.connections) == 1  # httpx's pool: kept alive
    token, _ = create_token(conn, "cli-test-2", "read")
    other = Settings.load(env={"CODENAV_URL": client_settings.url, "CODENAV_TOKEN": token},
                          dotenv=Path("/nonexistent"))
    assert _api(other, "GET", "/v1/repos")["repos"]
    assert _session._client is not client
    assert client._client.is_closed
    _session.close()


def test_a_job_that_stopped_with_the_stack_is_reported_as_stopped() -> None:
    info = {"state": "finished", "result": {"interrupted": True,
                                           "reason": "stopped after 12 of 40 files"},
            "run": {"state": "stopped", "error": "stopped after 12 of 40 files; it runs again"}}
    with pytest.raises(CodenavError, match="stopped before its end") as err:
        _check_done(info, "indexing")
    assert err.value.hint == "it resumes when the stack runs again"


def test_waiting_for_embeddings_ends_when_no_chunk_is_long_enough_to_embed(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """`codenav index --embeddings` on a repository of one-line functions: nothing will ever
    be embedded, so waiting ends at once and says why (it used to wait for ever)."""
    import dataclasses

    root = write_tree(tmp_path / "tiny", {f"m{i}.py": f"def f{i}(x):\n    return x + {i}\n"
                                          for i in range(3)})
    repo = repos.register(conn, str(root), "tiny")
    reconcile.reconcile(settings, repo.id)
    proc, embed_url = start_embedder()
    try:
        token, _ = create_token(conn, "cli-test", "write")
        with serve(dataclasses.replace(settings, embed_url=embed_url)) as url:
            client = Settings.load(env={"CODENAV_URL": url, "CODENAV_TOKEN": token},
                                   dotenv=Path("/nonexistent"))
            assert EmbeddingProgress(client, "tiny").poll()
    finally:
        stop(proc)
    assert "no chunk of tiny has 6 lines or more; nothing to embed" in capsys.readouterr().err
