"""Whole-file postings a first index leaves to the graph job (``codenav.index.terms``),
against a real Postgres: the same postings, and the same find_files answers, as an index
that writes them with its contents; said while missing; written once whoever writes them;
carried by a snapshot taken meanwhile."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
from fastapi.testclient import TestClient

from codenav import admin, repos
from codenav.access import Caller, Scope
from codenav.config import Settings
from codenav.graph import build, facts
from codenav.index import reconcile, terms
from codenav.search import find
from codenav.tokens import file_term_counts
from tests.polyglot import make_polyglot

PENDING = "SELECT count(*) FROM pending_terms"
POSTINGS = """SELECT t.term, c.sha, c.language, t.tf FROM file_terms t
JOIN contents c ON c.id = t.content_id ORDER BY 1, 2, 3"""
QUERIES = ("token store refresh", "billing invoice total", "parse config file",
           "TokenStore", "http client retry", "user session")


def _answers(conn: psycopg.Connection, repo: repos.Repo) -> list[dict[str, Any]]:
    out = []
    for text in QUERIES:
        answer = find.find_files(conn, Scope.system(repo), text, 10, mode="lexical")
        out.append({k: answer.get(k) for k in ("results", "match_confidence", "file_terms")})
    return out


def test_a_first_index_leaves_the_postings_to_the_graph_job_and_ranks_the_same_after(
        settings: Settings, conn: psycopg.Connection, client: TestClient,
        tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    # an index that writes the postings with its contents, then gone with its contents
    inline = repos.register(conn, str(root), "inline")
    reconcile.reconcile(settings, inline.id)
    expected_postings = conn.execute(POSTINGS).fetchall()
    expected = _answers(conn, inline)
    assert expected_postings and all(a["results"] for a in expected[:3])
    assert all(a["file_terms"] is None for a in expected)
    repos.delete(conn, Scope.system(inline))
    assert conn.execute("SELECT count(*) FROM contents").fetchone() == (0,)

    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id, defer_graph=True)
    contents = conn.execute("SELECT count(*) FROM contents").fetchone()
    assert contents is not None and contents[0] > 0
    assert conn.execute(PENDING).fetchone() == contents
    assert conn.execute("SELECT count(*) FROM file_terms").fetchone() == (0,)
    status = client.post("/v1/status", json={"repo": "polyglot"}).json()["repos"][0]
    assert status["file_terms"]["files_pending"] == status["files"] > 0
    meanwhile = find.find_files(conn, Scope.system(repo), QUERIES[0], 10, mode="lexical")
    assert meanwhile["file_terms"]["files_pending"] == status["files"]
    assert "graph job" in meanwhile["file_terms"]["message"]
    assert meanwhile["results"]  # ranked without them, and says so
    found = client.post("/v1/search", json={"query": "token store"}).json()
    assert any(r["path"] == "src/auth/tokens.py" for r in found["results"])

    tree = reconcile.worktree(conn, repo.id)
    assert terms.fill_pending(settings, conn, tree) == contents[0]
    assert terms.fill_pending(settings, conn, tree) == 0
    assert conn.execute(PENDING).fetchone() == (0,)
    assert conn.execute(POSTINGS).fetchall() == expected_postings
    # the rest of the graph job, whose ranks find_files reads too
    facts.fill_pending(settings, conn, tree)
    build.update(conn, tree, [], [])
    assert _answers(conn, repo) == expected
    assert "file_terms" not in client.post("/v1/status", json={"repo": "polyglot"}).json()[
        "repos"][0]
    # the postings are those of the stored (redacted) bodies
    for cid, body in conn.execute("SELECT id, body FROM contents").fetchall():
        rows = conn.execute("SELECT term, tf FROM file_terms WHERE content_id = %s",
                            (cid,)).fetchall()
        assert dict(rows) == file_term_counts(body)


def test_two_fillers_at_once_write_each_contents_postings_once(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    n = terms.BATCH * 2 + 13
    conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, body) "
                 "SELECT 'c' || i, 'text', 0, 40, 1, 'alpha beta_' || i "
                 "FROM generate_series(1, %s) i", (n,))
    conn.execute("INSERT INTO pending_terms (content_id) SELECT id FROM contents")
    ids = [int(r[0]) for r in conn.execute("SELECT id FROM contents ORDER BY id")]
    batches = [ids[i:i + terms.BATCH] for i in range(0, n, terms.BATCH)]
    done: list[int] = []

    def filler(order: list[list[int]]) -> None:
        with psycopg.connect(settings.database_url, autocommit=True) as own:
            done.append(sum(terms.fill_batch(own, batch) for batch in order))

    threads = [threading.Thread(target=filler, args=(order,))
               for order in (batches, batches[::-1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(done) == n
    assert conn.execute(PENDING).fetchone() == (0,)
    # 'alpha', 'beta_i' and its parts 'beta' and the number (when it has 3+ digits)
    assert conn.execute("SELECT count(*) FROM file_terms WHERE term = 'alpha'").fetchone() == (n,)
    assert conn.execute("SELECT count(*) FROM (SELECT term, content_id FROM file_terms "
                        "GROUP BY 1, 2 HAVING count(*) > 1) d").fetchone() == (0,)


def test_a_snapshot_taken_before_the_graph_job_carries_every_posting(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    repo = repos.register(conn, str(make_polyglot(tmp_path)), "polyglot")
    reconcile.reconcile(settings, repo.id, defer_graph=True)
    pending = conn.execute(PENDING).fetchone()
    assert pending is not None and pending[0] > 0
    out = admin.snapshot_export(conn, Caller.operator(), tmp_path / "first.snap")
    assert conn.execute(PENDING).fetchone() == (0,)
    postings = conn.execute("SELECT count(*) FROM file_terms").fetchone()
    assert postings is not None and postings[0] > 0
    assert out["rows"]["file_terms"] == postings[0]


def test_a_collected_content_takes_its_pending_postings_with_it(
        conn: psycopg.Connection) -> None:
    """Schema 19: pending_terms rows have no foreign key; garbage collection deletes them
    with their content, and a claim takes a content once."""
    from codenav.db import queries as q

    conn.execute("INSERT INTO contents (sha, language, chunker, size, line_count, body) "
                 "VALUES ('gone', 'text', 0, 5, 1, 'alpha'), ('kept', 'text', 0, 5, 1, 'beta')")
    conn.execute("INSERT INTO pending_terms (content_id) SELECT id FROM contents")
    repo = repos.register(conn, "/nonexistent/r", "r")
    tree = conn.execute("INSERT INTO trees (repo_id, kind) VALUES (%s, 'commit') RETURNING id",
                        (repo.id,)).fetchone()
    assert tree is not None
    conn.execute("INSERT INTO files (repo_id, tree_id, path, content_id, sha, language, size, "
                 "mtime_ns, path_tsv) SELECT %s, %s, 'a.txt', id, sha, language, 5, 0, 'a' "
                 "FROM contents WHERE sha = 'kept'", (repo.id, tree[0]))
    assert conn.execute(q.GC_DELETE).fetchone() == (1,)
    kept = conn.execute("SELECT id FROM contents").fetchall()
    assert conn.execute("SELECT content_id FROM pending_terms").fetchall() == kept
    assert conn.execute(q.TERMS_CLAIM, ([kept[0][0]],)).fetchall() == kept
    assert conn.execute(q.TERMS_CLAIM, ([kept[0][0]],)).fetchall() == []


def test_past_the_inline_limit_the_postings_are_written_in_a_pool_each_once(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """Past ``INLINE_LIMIT`` the batches are spread over forked processes and this one
    (``codenav.db.batches``), as for the graph facts."""
    import dataclasses

    root = tmp_path / "many"
    root.mkdir()
    for i in range(terms.INLINE_LIMIT + 20):
        (root / f"mod{i}.py").write_text(f"def handler_{i}(request):\n    return {i} + 1\n")
    repo = repos.register(conn, str(root), "many")
    reconcile.reconcile(settings, repo.id, defer_graph=True)
    pending = conn.execute(PENDING).fetchone()
    assert pending is not None and pending[0] >= terms.INLINE_LIMIT + 20
    pooled = dataclasses.replace(settings, parse_processes=2)
    tree = reconcile.worktree(conn, repo.id)
    assert terms.fill_pending(pooled, conn, tree) == pending[0]
    assert conn.execute(PENDING).fetchone() == (0,)
    for cid, body in conn.execute("SELECT id, body FROM contents").fetchall():
        rows = conn.execute("SELECT term, tf FROM file_terms WHERE content_id = %s",
                            (cid,)).fetchall()
        assert dict(rows) == file_term_counts(body)
