"""Deleting a repository (admin): its rows go, content it shares with another repository
stays, and what no repository references any more is collected (contents with their
chunks, symbols, refs and terms; vectors no chunk is embedded as)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import redis
from fastapi.testclient import TestClient

from codenav import repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.db import queries as q
from codenav.embed import vectors
from codenav.index import reconcile
from codenav.jobs import enqueue

# six lines: shorter chunks get no text to embed
SHARED = ("def shared_helper(x):\n    if x is None:\n        return 0\n    y = x + 1\n"
          "    y *= 2\n    return y\n")


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _count(conn: psycopg.Connection, sql: str, *args: object) -> int:
    row = conn.execute(sql, args).fetchone()  # type: ignore[call-overload]
    return int(row[0]) if row else 0


def test_deleting_a_repository_collects_what_nothing_else_references(
        client: TestClient, settings: Settings, conn: psycopg.Connection,
        tmp_path: Path) -> None:
    one = repos.register(conn, str(_tree(tmp_path / "one", {
        "lib/shared.py": SHARED,
        "lib/only_one.py": "class OnlyInOne:\n    def unique_to_one(self):\n        n = 1\n"
                           "        if self:\n            n += 1\n        return n\n",
        "README.md": "# one\n"})), "one")
    two = repos.register(conn, str(_tree(tmp_path / "two", {
        "lib/shared.py": SHARED, "lib/only_two.py": "def unique_to_two():\n    return 2\n"})),
        "two")
    for repo in (one, two):
        reconcile.reconcile(settings, repo.id)
        conn.execute(q.CHUNK_TEXTS_BACKFILL, (repo.default_tree,))
    model = vectors.ensure_model(conn, "test-vectors", 3)
    hashes = [r[0] for r in conn.execute("SELECT DISTINCT text_hash FROM chunk_texts")]
    vectors.store_vectors(conn, model, hashes, [[1.0, 0.0, 0.0]] * len(hashes))
    of_repo = ("SELECT ct.text_hash FROM files f JOIN chunks c ON c.content_id = f.content_id "
               "JOIN chunk_texts ct ON ct.chunk_id = c.id AND ct.path = f.path "
               "WHERE f.repo_id = %s")
    shared_hashes = {r[0] for r in conn.execute(
        f"{of_repo} INTERSECT {of_repo}", (one.id, two.id))}
    assert shared_hashes  # lib/shared.py: same path and content, so the same texts
    only_one = conn.execute(
        "SELECT array_agg(DISTINCT f.content_id) FROM files f WHERE f.repo_id = %s AND "
        "f.content_id NOT IN (SELECT content_id FROM files WHERE repo_id = %s)",
        (one.id, two.id)).fetchone()[0]  # type: ignore[index]
    shared_content = _count(conn, "SELECT content_id FROM files WHERE repo_id = %s AND "
                                  "path = 'lib/shared.py'", two.id)
    r = redis.Redis.from_url(settings.redis_url)
    enqueue.request_paths(r, settings, one.id, ["lib/only_one.py"])
    assert enqueue.pending_changes(r, one.id)

    gone = client.delete("/v1/repos/one")
    assert gone.status_code == 200, gone.text
    assert gone.json()["deleted"] == "one"
    assert gone.json()["collected"]["contents"] == len(only_one)
    assert gone.json()["collected"]["vectors"] > 0

    for table in ("trees", "files", "skipped", "index_runs", "graph_imports",
                  "graph_edges", "graph_links", "graph_files", "graph_state"):
        assert _count(conn, f"SELECT count(*) FROM {table} WHERE repo_id = %s",  # noqa: S608
                      one.id) == 0, table
    assert _count(conn, "SELECT count(*) FROM repos WHERE id = %s", one.id) == 0
    assert _count(conn, "SELECT count(*) FROM chunk_texts ct JOIN chunks c ON c.id = ct.chunk_id "
                        "WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.path = ct.path "
                        "AND f.content_id = c.content_id)") == 0
    for table in ("contents", "chunks", "symbols", "refs", "file_terms"):
        column = "id" if table == "contents" else "content_id"
        assert _count(conn, f"SELECT count(*) FROM {table} WHERE {column} = ANY(%s)",  # noqa: S608
                      only_one) == 0, table
    assert _count(conn, "SELECT count(*) FROM contents WHERE id = %s", shared_content) == 1
    assert _count(conn, "SELECT count(*) FROM chunks WHERE content_id = %s", shared_content) > 0
    left = {r[0] for r in conn.execute("SELECT text_hash FROM embeddings")}
    assert shared_hashes <= left
    assert left == {r[0] for r in conn.execute("SELECT DISTINCT text_hash FROM chunk_texts")}
    assert enqueue.pending_changes(r, one.id) == {}

    missing = client.post("/v1/search", json={"query": "unique_to_one", "repo": "one"})
    assert missing.status_code == 404
    still = client.post("/v1/search", json={"query": "shared_helper", "repo": "two"}).json()
    assert still["results"][0]["path"] == "lib/shared.py"
    audit = client.get("/v1/audit").json()["entries"]
    assert audit[0]["action"] == "repo.delete" and audit[0]["target"] == "one"
    assert audit[0]["actor"].startswith("test (token ")


def test_only_an_admin_deletes_and_a_queued_job_of_a_deleted_repository_ends_quietly(
        client: TestClient, settings: Settings, conn: psycopg.Connection,
        tmp_path: Path) -> None:
    repo = repos.register(conn, str(_tree(tmp_path / "r", {"a.py": "x = 1\n"})), "r")
    writer, _ = create_token(conn, "writer", "write")
    refused = client.delete("/v1/repos/r", headers={"Authorization": f"Bearer {writer}"})
    assert refused.status_code == 403
    assert client.delete("/v1/repos/r").status_code == 200
    summary = reconcile.reconcile(settings, repo.id)  # the job RQ may still run
    assert summary.refused.startswith("no repository")
