"""Refs: every branch, tag or commit of a repository is a tree of its own, indexed from git
without a checkout, sharing every unchanged blob (and its chunks, symbols, facts and
vectors) with the trees before it; each query tool answers for the ref asked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient

from codenav import refs, repos
from codenav.config import Settings
from codenav.db import queries as q
from codenav.embed import vectors
from codenav.errors import InvalidRequest
from codenav.graph import build
from codenav.index import reconcile
from tests.gitkit import MODULES, UTIL, History, commit, git, make_history, module


@pytest.fixture
def history(tmp_path: Path) -> History:
    return make_history(tmp_path / "store")


def _indexed(settings: Settings, conn: psycopg.Connection, h: History,
             asked: dict[str, str] | None = None) -> repos.Repo:
    repo = repos.register(conn, str(h.root), "store")
    reconcile.reconcile(settings, repo.id)
    summary = refs.sync(settings, repo.id, asked if asked is not None else
                        {"main": "", "feature": "", "release/1.0": ""})
    assert not summary.refused, summary.refused
    found = repos.get(conn, repo.id)
    assert found is not None
    return found


def _call(client: TestClient, tool: str, **args: Any) -> dict[str, Any]:
    answer = client.post(f"/v1/{tool}", json={"repo": "store", **args})
    assert answer.status_code == 200, answer.text
    data: dict[str, Any] = answer.json()
    return data


def _paths(answer: dict[str, Any]) -> set[str]:
    return {r["path"] for r in answer.get("results", [])}


def _count(conn: psycopg.Connection, sql: str, *args: object) -> int:
    row = conn.execute(sql, args).fetchone()  # type: ignore[call-overload]
    return int(row[0]) if row else 0


def test_each_ref_answers_with_its_own_content_in_every_tool(
        client: TestClient, settings: Settings, conn: psycopg.Connection,
        history: History) -> None:
    _indexed(settings, conn, history)
    only = {"feature": ("feature_only_fn", "app/feature.py"),
            "main": ("main_only_fn", "app/util.py"),
            "release/1.0": ("release_only_fn", "app/release_notes.py")}
    for ref, (name, path) in only.items():
        for other in only:
            found = _call(client, "search", query=name, ref=other, mode="lexical")
            assert found["ref"]["name"] == other
            assert found["ref"]["commit"] == {"main": history.main[-1],
                                              "feature": history.feature,
                                              "release/1.0": history.release}[other]
            hit = path in _paths(found) and any(r.get("symbol") == name
                                                for r in found["results"])
            assert hit == (other == ref), (name, other, found)
            defined = _call(client, "definition", symbol=name, ref=other)
            assert bool(defined["results"]) == (other == ref), (name, other, defined)
            files = _call(client, "find_files", query=name.replace("_", " "), ref=other,
                          mode="lexical", limit=10)
            assert (path in _paths(files)) == (other == ref or path == "app/util.py"), files
    # the graph follows the ref: only feature calls feature_only_fn, from app/core.py
    used = _call(client, "references", symbol="feature_only_fn", ref="feature")
    assert {(v["path"], v["kind"]) for v in used["verified"]} == {("app/core.py", "call"),
                                                                  ("app/core.py", "import")}
    assert _call(client, "references", symbol="feature_only_fn", ref="main")["verified"] == []
    deps = _call(client, "dependencies", path="app/core.py", ref="feature")
    assert "app/feature.py" in str(deps)
    assert "app/feature.py" not in str(_call(client, "dependencies", path="app/core.py",
                                             ref="main"))
    hit = _call(client, "impact", symbol_or_path="app/feature.py", ref="feature")
    assert "app/core.py" in str(hit)
    # release/1.0 deleted app/legacy.py: read, outline and grep see it elsewhere only
    assert client.post("/v1/read", json={"repo": "store", "path": "app/legacy.py",
                                         "ref": "release/1.0"}).status_code == 404
    assert _call(client, "read", path="app/legacy.py", ref="main")["content"]
    assert _call(client, "grep", pattern="legacy_reporting_job", ref="release/1.0")[
        "results"] == []
    assert _call(client, "grep", pattern="legacy_reporting_job", ref="main")["results"]
    assert "legacy" in str(_call(client, "outline", path="app/legacy.py", ref="feature"))
    # a commit id reaches its tree; the default is the working tree (main checked out)
    by_commit = _call(client, "search", query="main_only_fn", ref=history.main[-1][:9],
                      mode="lexical")
    assert "app/util.py" in _paths(by_commit) and by_commit["ref"]["name"] is None
    default = _call(client, "search", query="main_only_fn", mode="lexical")
    assert default["ref"].get("worktree"), default["ref"]
    assert "app/util.py" in _paths(default)
    assert "app/feature.py" not in _paths(_call(client, "search", query="feature_only_fn",
                                                mode="lexical"))
    status = _call(client, "status")["repos"][0]
    assert {r["name"]: r["commit"] for r in status["refs"]} == {
        "main": history.main[-1], "feature": history.feature, "release/1.0": history.release}
    at = _call(client, "status", ref="feature")["repos"][0]
    assert at["ref"]["name"] == "feature" and at["files"] == 6 + MODULES


def test_an_unknown_ref_is_a_404_naming_the_refs_indexed(
        client: TestClient, settings: Settings, conn: psycopg.Connection,
        history: History) -> None:
    _indexed(settings, conn, history, {"feature": ""})
    missing = client.post("/v1/search", json={"repo": "store", "query": "x", "ref": "nope"})
    assert missing.status_code == 404
    assert "feature" in missing.text
    bad = client.post("/v1/search", json={"repo": "store", "query": "x", "ref": "a" * 300})
    assert bad.status_code == 400 and "ref" in bad.text


def test_a_commit_after_a_known_one_parses_only_its_changed_blobs_and_shares_the_rest(
        settings: Settings, conn: psycopg.Connection, history: History) -> None:
    repo = repos.register(conn, str(history.root), "store")
    first = refs.sync(settings, repo.id, {"main": history.main[0]}).moved[0].summary
    assert first is not None and first.parsed == 5 + MODULES and first.derived_from is None
    contents = _count(conn, "SELECT count(*) FROM contents")
    second = refs.sync(settings, repo.id, {"main": history.main[1]}).moved[0].summary
    assert second is not None and second.derived_from == first.tree_id
    assert (second.parsed, second.changed, second.deleted) == (1, 1, 0)
    assert _count(conn, "SELECT count(*) FROM contents") == contents + 1
    tree = conn.execute("SELECT base_id FROM trees WHERE id = %s", (second.tree_id,)).fetchone()
    assert tree == (first.tree_id,)  # its graph is layered on the first commit's
    layer = {r[0] for r in conn.execute("SELECT path FROM graph_layer WHERE tree_id = %s",
                                        (second.tree_id,))}
    assert layer <= {"app/util.py", "app/core.py"}
    # it holds the row of its changed file only, and reads the others from the first
    assert conn.execute("SELECT path FROM files WHERE tree_id = %s",
                        (second.tree_id,)).fetchall() == [("app/util.py",)]
    assert _count(conn, "SELECT count(*) FROM tree_files(%s)", second.tree_id) == \
        _count(conn, "SELECT count(*) FROM files WHERE tree_id = %s", first.tree_id)
    assert _count(conn, "SELECT count(*) FROM graph_files WHERE tree_id = %s",
                  second.tree_id) < 5
    # the same content is one row whichever tree holds it
    assert _count(conn, "SELECT count(DISTINCT content_id) FROM files WHERE path = "
                        "'app/core.py'") == 1
    # a third commit derived from the layered one keeps one layer (on the same base)
    third = refs.sync(settings, repo.id, {"main": history.main[2]}).moved[0].summary
    assert third is not None and third.parsed == 1
    base = conn.execute("SELECT base_id FROM trees WHERE id = %s", (third.tree_id,)).fetchone()
    assert base == (first.tree_id,)


def _effective_graph(conn: psycopg.Connection, tree: int) -> tuple[set[tuple], ...]:
    return (set(conn.execute("SELECT src_path, ord, spec, line, dst_path FROM tree_imports(%s)",
                             (tree,)).fetchall()),
            set(conn.execute("SELECT src_path, ord, line, src_scope, kind, dst_path, dst_qual, "
                             "verified, how FROM tree_edges(%s)", (tree,)).fetchall()),
            set(conn.execute("SELECT src_path, dst_path, imports, refs FROM tree_links(%s)",
                             (tree,)).fetchall()))


def test_a_layered_graph_equals_a_full_build_of_the_same_commit(
        settings: Settings, conn: psycopg.Connection, history: History) -> None:
    repo = repos.register(conn, str(history.root), "store")
    refs.sync(settings, repo.id, {"main": history.main[0]})
    extra = [commit(history.root, {f"app/step_{i}.py": f"def step_{i}():\n    return {i * 2}\n",
                                   "app/mod_00.py": module(0).replace("'m0'", f"'v{i}'")},
                    f"extra {i}") for i in range(2)]
    depths = set()
    for rev in (history.feature, history.release, *history.main[1:], *extra):
        moved = refs.sync(settings, repo.id, {"main": rev}).moved[0]
        layered = _effective_graph(conn, moved.tree_id)
        files = set(conn.execute("SELECT path, content_id FROM tree_files(%s)",
                                 (moved.tree_id,)).fetchall())
        row = conn.execute("SELECT base_id IS NOT NULL, mid_id IS NOT NULL FROM trees "
                           "WHERE id = %s", (moved.tree_id,)).fetchone()
        assert row is not None and row[0]
        depths.add(row[1])
        with conn.transaction():  # a full build of the same tree, then back as it was
            build.update(conn, moved.tree_id, [], [], full=True)
            assert conn.execute("SELECT base_id FROM trees WHERE id = %s",
                                (moved.tree_id,)).fetchone() == (None,)
            assert _effective_graph(conn, moved.tree_id) == layered
            assert set(conn.execute("SELECT path, content_id FROM tree_files(%s)",
                                    (moved.tree_id,)).fetchall()) == files
            raise psycopg.Rollback()
    assert depths == {False, True}  # on its base alone, and with a mid between


def test_a_followed_branch_moves_keeps_n_commits_and_collects_the_rest(
        client: TestClient, settings: Settings, conn: psycopg.Connection,
        history: History) -> None:
    repo = repos.register(conn, str(history.root), "store")
    conn.execute(q.REPO_SET_FOLLOW, {"follow": ["main", "release/*"], "keep": 1,
                                     "repo": repo.id, "visible": [repo.id]})
    moved = refs.sync(settings, repo.id)
    assert {m.name for m in moved.moved} == {"main", "release/1.0"}
    first = history.main[-1]
    second = commit(history.root, {"app/util.py": UTIL + "def moved_fn():\n    return 2\n"},
                    "two")
    third = commit(history.root, {"app/util.py": UTIL + "def again_fn():\n    return 3\n"},
                   "three")
    git(history.root, "checkout", "-q", "-b", "scratch")  # not followed
    refs.sync(settings, repo.id)
    answer = _call(client, "search", query="again_fn", ref="main", mode="lexical")
    assert answer["ref"]["commit"] == third and "app/util.py" in _paths(answer)
    status = _call(client, "status")["repos"][0]
    main = next(r for r in status["refs"] if r["name"] == "main")
    assert main["kept"] == [first]  # keep 1: the commit before (second was never indexed)
    kept = _call(client, "search", query="main_only_fn", ref=first[:12], mode="lexical")
    assert "app/util.py" in _paths(kept)
    assert "scratch" not in {r["name"] for r in status["refs"]}
    # one more move: the oldest kept commit leaves the history and is no longer reached
    fourth = commit(history.root, {"app/util.py": UTIL + "def fourth_fn():\n    return 4\n"},
                    "four")
    git(history.root, "checkout", "-q", "main")
    git(history.root, "merge", "-q", "--ff-only", "scratch")
    refs.sync(settings, repo.id)
    missing = client.post("/v1/search", json={"repo": "store", "query": "x", "ref": first[:12]})
    assert missing.status_code == 404
    kept = next(r for r in _call(client, "status")["repos"][0]["refs"] if r["name"] == "main")
    assert kept["commit"] == fourth and kept["kept"] == [third]
    # and one more: third leaves the history too, and is no longer reached; a tree no ref
    # keeps stays only while a kept tree is layered on it (first: the base; third: a mid)
    fifth = commit(history.root, {"app/util.py": UTIL + "def fifth_fn():\n    return 5\n"},
                   "five")
    refs.sync(settings, repo.id)
    gone = client.post("/v1/search", json={"repo": "store", "query": "x", "ref": third[:12]})
    assert gone.status_code == 404
    commits = {r[0] for r in conn.execute("SELECT commit FROM trees WHERE kind = 'commit'")}
    assert {fifth, fourth} <= commits and second not in commits
    _no_orphans(conn)
    unreferenced = {r[0] for r in conn.execute(
        "SELECT t.commit FROM trees t WHERE t.kind = 'commit' AND NOT EXISTS "
        "(SELECT 1 FROM repo_refs r WHERE r.tree_id = t.id) AND NOT EXISTS "
        "(SELECT 1 FROM ref_history h WHERE h.tree_id = t.id)")}
    assert unreferenced <= {first, third}
    # a followed branch deleted from git is dropped
    git(history.root, "branch", "-q", "-D", "release/1.0")
    assert refs.sync(settings, repo.id).dropped == ["release/1.0"]
    _no_orphans(conn)


def _no_orphans(conn: psycopg.Connection) -> None:
    """Nothing is left that no ref, kept commit or working tree needs."""
    assert _count(conn, """SELECT count(*) FROM trees t WHERE t.kind = 'commit'
        AND NOT EXISTS (SELECT 1 FROM repo_refs r WHERE r.tree_id = t.id)
        AND NOT EXISTS (SELECT 1 FROM ref_history h WHERE h.tree_id = t.id)
        AND NOT EXISTS (SELECT 1 FROM trees l WHERE t.id IN (l.base_id, l.mid_id))""") == 0
    for table in ("files", "skipped", "graph_imports", "graph_edges", "graph_links",
                  "graph_layer", "graph_files", "graph_state"):
        assert _count(conn, f"SELECT count(*) FROM {table} x WHERE NOT EXISTS "  # noqa: S608
                            "(SELECT 1 FROM trees t WHERE t.id = x.tree_id)") == 0, table
    assert _count(conn, "SELECT count(*) FROM contents c WHERE NOT EXISTS "
                        "(SELECT 1 FROM files f WHERE f.content_id = c.id)") == 0
    assert _count(conn, "SELECT count(*) FROM chunk_texts ct JOIN chunks c ON c.id = ct.chunk_id "
                        "WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.path = ct.path "
                        "AND f.content_id = c.content_id)") == 0
    assert _count(conn, "SELECT count(*) FROM embeddings e WHERE NOT EXISTS "
                        "(SELECT 1 FROM chunk_texts ct WHERE ct.text_hash = e.text_hash)") == 0


def test_dropping_a_ref_collects_what_only_it_used_and_leaves_no_orphan_rows(
        client: TestClient, settings: Settings, conn: psycopg.Connection,
        history: History) -> None:
    repo = _indexed(settings, conn, history)
    trees = [r[0] for r in conn.execute("SELECT id FROM trees ORDER BY id")]
    for tree in trees:
        conn.execute(q.CHUNK_TEXTS_BACKFILL, (tree,))
    model = vectors.ensure_model(conn, "test-vectors", 3)
    hashes = [r[0] for r in conn.execute("SELECT DISTINCT text_hash FROM chunk_texts")]
    vectors.store_vectors(conn, model, hashes, [[1.0, 0.0, 0.0]] * len(hashes))
    feature_only = conn.execute(
        "SELECT content_id FROM files f JOIN trees t ON t.id = f.tree_id "
        "JOIN repo_refs r ON r.tree_id = t.id WHERE r.name = 'feature' AND f.path = "
        "'app/feature.py'").fetchone()
    assert feature_only is not None
    gone = client.delete("/v1/repos/store/refs/feature")
    assert gone.status_code == 200, gone.text
    assert gone.json()["collected"]["trees"] == 1
    assert gone.json()["collected"]["vectors"] > 0
    assert _count(conn, "SELECT count(*) FROM contents WHERE id = %s", feature_only[0]) == 0
    _no_orphans(conn)
    assert client.post("/v1/search", json={"repo": "store", "query": "x",
                                           "ref": "feature"}).status_code == 404
    main = _call(client, "search", query="main_only_fn", ref="main", mode="lexical")
    assert "app/util.py" in _paths(main)
    assert client.delete("/v1/repos/store/refs/feature").status_code == 404
    # dropping the last ref and deleting the repository leave nothing at all
    for name in ("main", "release/1.0"):
        assert client.delete(f"/v1/repos/store/refs/{name}").status_code == 200
    _no_orphans(conn)
    assert client.delete("/v1/repos/store").status_code == 200
    for table in ("trees", "files", "contents", "chunk_texts", "embeddings", "graph_edges"):
        assert _count(conn, f"SELECT count(*) FROM {table}") == 0, table  # noqa: S608
    del repo


def test_a_bare_mirror_is_indexed_from_git_alone_and_answers_its_default_branch(
        client: TestClient, settings: Settings, conn: psycopg.Connection, history: History,
        tmp_path: Path) -> None:
    mirror = tmp_path / "mirror.git"
    subprocess.run(["git", "clone", "-q", "--mirror", str(history.root), str(mirror)],
                   check=True, capture_output=True)
    repo = repos.register(conn, str(mirror), "store")
    summary = reconcile.reconcile(settings, repo.id)
    assert summary.refs_due and not summary.run_id  # no working tree is walked
    refs.sync(settings, repo.id)
    found = repos.get(conn, repo.id)
    assert found is not None
    assert (found.source, found.default_ref, found.follow) == ("git", "main", ("main",))
    answer = _call(client, "search", query="main_only_fn", mode="lexical")
    assert answer["ref"]["name"] == "main" and "app/util.py" in _paths(answer)
    assert _count(conn, "SELECT count(*) FROM files f JOIN trees t ON t.id = f.tree_id "
                        "WHERE t.kind = 'worktree'") == 0
    assert not {p for p, in conn.execute("SELECT path FROM files")} & {"HEAD", "config"}


def test_a_ref_name_git_would_refuse_is_refused() -> None:
    for bad in ("", "a..b", "-x", "a b", "x.lock", "a\0b", "/abs", "a:b"):
        with pytest.raises(InvalidRequest):
            refs.check_name(bad)
    assert refs.check_name("refs/heads/release/1.0") == "release/1.0"



def test_a_ref_git_does_not_have_fails_alone_and_the_others_are_indexed(
        settings: Settings, conn: psycopg.Connection, history: History) -> None:
    repo = repos.register(conn, str(history.root), "store")
    summary = refs.sync(settings, repo.id, {"no-such-branch": "", "feature": "",
                                            "main": "deadbeef" * 5})
    assert set(summary.failed) == {"no-such-branch", "main"}
    assert "no commit" in summary.failed["no-such-branch"]
    assert [m.name for m in summary.moved] == ["feature"]


def test_a_commit_with_a_file_name_that_is_not_utf8_is_indexed_without_it(
        settings: Settings, conn: psycopg.Connection, history: History) -> None:
    """git stores names as bytes: a commit may hold one that is not UTF-8, which used to
    stop the ref's index with an encoding error. It is skipped with a reason."""
    root = history.root
    with open(os.fsencode(root) + b"/bad\xff.py", "wb") as handle:
        handle.write(b"def bad():\n    return 1\n")
    head = commit(root, {"app/late.py": "def late():\n    return 2\n"},
                  "a name git keeps as bytes")
    repo = repos.register(conn, str(root), "store")
    summary = refs.sync(settings, repo.id, {"main": head}).moved[0].summary
    assert summary is not None and summary.skipped >= 1
    paths = {r[0] for r in conn.execute("SELECT path FROM tree_files(%s)", (summary.tree_id,))}
    assert "app/late.py" in paths and not any("bad" in p for p in paths)
    skipped = conn.execute("SELECT reason, detail FROM skipped WHERE tree_id = %s AND "
                           "path = %s", (summary.tree_id, "bad\ufffd.py")).fetchone()
    assert skipped == ("bad_name", "file name is not valid UTF-8")
