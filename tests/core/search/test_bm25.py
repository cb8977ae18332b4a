"""Whole-file BM25 (``codenav.search.bm25``) on a small indexed repository: each file's score
is Okapi BM25 over the postings the index holds, recomputed here term by term from the
store; a group's alternatives and its path match add up before saturation; copies of one
file score alike and rank by path."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from codenav import repos
from codenav.access import Scope
from codenav.answers import glob_to_regex
from codenav.config import Settings
from codenav.index import reconcile
from codenav.search import bm25
from codenav.search import weights as W
from codenav.search.query import Group
from codenav.tokens import path_terms
from tests.teamkit import write_tree

RETRY = ("package acme;\npublic class Retry {\n  int attempts;\n"
         "  boolean retry(int attempt) { return attempt < attempts; }\n}\n")
FILES = {
    "src/acme/Retry.java": RETRY,
    "src/copies/a/Retry.java": RETRY,
    "src/copies/b/Retry.java": RETRY,
    "src/acme/Upload.java": "package acme;\npublic class Upload {\n  Retry retry;\n"
                            "  void upload(byte[] data) { retry.retry(1); send(data); }\n"
                            "  void send(byte[] data) {}\n}\n",
    "src/acme/Uploads.java": "package acme;\npublic class Uploads {\n  int uploads;\n}\n",
    "src/acme/Strings.java": "package acme;\npublic class Strings {\n"
                             "  static String join(String a, String b) { return a + b; }\n}\n",
}


@pytest.fixture
def scope(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> Scope:
    r = repos.register(conn, str(write_tree(tmp_path / "acme", FILES)), "acme")
    reconcile.reconcile(settings, r.id)
    return Scope.system(r)


def _expected(conn: psycopg.Connection, scope: Scope, groups: list[Group],
              keep: Callable[[str], bool] = lambda path: True) -> dict[str, float]:
    """BM25 of every file (those ``keep`` keeps), from the rows of ``files`` and
    ``file_terms``, one term at a time."""
    files = {path: size for path, size in conn.execute(
        "SELECT path, size FROM files WHERE tree_id = %s", (scope.at.id,)).fetchall()
        if keep(path)}
    avg = sum(files.values()) / len(files)
    tf: dict[tuple[str, int], float] = {}
    for i, g in enumerate(groups):
        for term in g.terms:
            for path, count in conn.execute(
                    "SELECT f.path, t.tf FROM file_terms t JOIN files f ON f.content_id = "
                    "t.content_id WHERE f.tree_id = %s AND t.term = %s",
                    (scope.at.id, term)).fetchall():
                if path in files:
                    tf[path, i] = tf.get((path, i), 0.0) + count
        for path in files:  # the path's words count too
            if set(path_terms(path)) & set(g.terms):
                tf[path, i] = tf.get((path, i), 0.0) + W.PATH_TF
    out: dict[str, float] = {}
    for i, g in enumerate(groups):
        df = sum(1 for (_p, j) in tf if j == i)
        idf = math.log(1 + (len(files) - df + 0.5) / (df + 0.5))
        for (path, j), f in tf.items():
            if j == i:
                norm = W.BM25_K1 * (1 - W.BM25_B + W.BM25_B * files[path] / avg)
                out[path] = out.get(path, 0.0) + min(g.count, 10) * idf * f * \
                    (W.BM25_K1 + 1) / (f + norm)
    return out


def test_each_file_scores_okapi_bm25_over_its_postings_and_path(
        conn: psycopg.Connection, scope: Scope) -> None:
    groups = [Group(("upload", "uploads"), "upload", count=2), Group(("retry",), "retry"),
              Group(("send",), "send")]
    scores = bm25.score_files(conn, scope, groups)
    expected = _expected(conn, scope, groups)
    assert set(scores.paths()) == set(expected) and "src/acme/Strings.java" not in expected
    for path, value in expected.items():
        assert scores.score(path) == pytest.approx(value, rel=1e-12), path
    upload = scores.get("src/acme/Upload.java")
    assert upload is not None and upload.score == scores.best
    assert set(upload.counts) == {0, 1, 2} and upload.path_groups == {0}
    uploads = scores.get("src/acme/Uploads.java")  # "uploads" is the first group's too
    assert uploads is not None and 0 in uploads.path_groups and uploads.counts[0] > W.PATH_TF
    assert scores.get("src/acme/Strings.java") is None and scores.score("nowhere.java") == 0.0
    assert [f.path for f in bm25.rank_files(conn, scope, groups, 2)] == \
        list(scores.paths(2))


def test_within_a_filter_only_its_files_are_ranked_and_counted(
        conn: psycopg.Connection, scope: Scope) -> None:
    """A search's path and language filters: BM25 over the files they let through, its
    file count, mean size and document frequencies theirs (a term common outside the
    folder is still rare inside it)."""
    groups = [Group(("upload", "uploads"), "upload"), Group(("retry",), "retry")]
    everywhere = bm25.score_files(conn, scope, groups)
    for glob, language in (("src/acme/**", None), ("src/acme/U*", "java")):
        pattern = glob_to_regex(glob)
        within = bm25.Within(language, pattern)
        scores = bm25.score_files(conn, scope, groups, within=within)
        inside = re.compile(pattern)
        expected = _expected(conn, scope, groups, lambda path, k=inside: bool(k.search(path)))
        assert set(scores.paths()) == set(expected) and expected, glob
        for path, value in expected.items():
            assert scores.score(path) == pytest.approx(value, rel=1e-12), path
            assert value != pytest.approx(everywhere.score(path), rel=1e-6), path
        assert [f.path for f in bm25.rank_files(conn, scope, groups, 9, within=within)] == \
            list(scores.paths())
    assert not list(bm25.score_files(conn, scope, groups,
                                     within=bm25.Within("python")).paths())


def test_copies_of_a_file_score_alike_and_rank_by_path(
        conn: psycopg.Connection, scope: Scope) -> None:
    groups = [Group(("retry",), "retry"), Group(("attempts",), "attempts")]
    scores = bm25.score_files(conn, scope, groups)
    copies = ["src/acme/Retry.java", "src/copies/a/Retry.java", "src/copies/b/Retry.java"]
    assert len({scores.score(p) for p in copies}) == 1
    order = list(scores.paths())
    assert sorted(order, key=lambda p: (-scores.score(p), p)) == order
    assert [p for p in order if p in copies] == copies


def test_a_term_in_two_groups_counts_in_each(conn: psycopg.Connection, scope: Scope) -> None:
    groups = [Group(("send",), "send"), Group(("send", "sends"), "sends")]
    scores = bm25.score_files(conn, scope, groups)
    hit = scores.get("src/acme/Upload.java")
    assert hit is not None and hit.counts[0] == hit.counts[1] > 0
    assert scores.score("src/acme/Upload.java") == pytest.approx(
        _expected(conn, scope, groups)["src/acme/Upload.java"], rel=1e-12)


def test_the_order_read_part_way_or_past_its_first_sort_is_the_whole_order() -> None:
    """``FileScores`` sorts the best files at the first read and the rest only when a
    caller reads past them; either way the order is by score, ties by path, and files tied
    across the first sort's edge keep that rule."""
    import numpy as np

    n = 3 * bm25.FileScores.FIRST_SORT
    paths = [f"src/f{(i * 7919) % n:04d}.java" for i in range(n)]
    scores = np.array([float(i % 5) for i in range(n)])  # hundreds of ties per score
    fid = {p: i for i, p in enumerate(paths)}
    expected = sorted(paths, key=lambda p: (-scores[fid[p]], p))

    def fresh() -> bm25.FileScores:
        return bm25.FileScores(scores, paths, fid, list(range(n + 1)), [0] * n, [1.0] * n,
                               [False] * n)

    assert list(fresh().paths(10)) == expected[:10]
    assert [r.path for r in fresh().top(5)] == expected[:5]
    part = fresh()
    it = part.paths()
    first = [next(it) for _ in range(20)]  # read part way, then past the first sort
    assert first + list(it) == expected
    assert list(part.paths(bm25.FileScores.FIRST_SORT + 1)) == \
        expected[:bm25.FileScores.FIRST_SORT + 1]
    assert fresh().best == 4.0 and bm25.FileScores.empty().best == 0.0
    assert list(bm25.FileScores.empty().paths()) == []
    assert fresh().score("nowhere.java") == 0.0 and fresh().get("nowhere.java") is None
