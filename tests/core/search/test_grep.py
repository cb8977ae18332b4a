"""grep over the REST API in-process, on the polyglot fixture indexed for real (Postgres
with pg_trgm, Redis), and its engine's pure parts."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from codenav import repos
from codenav.config import Settings
from codenav.db import queries as q
from codenav.index import grams, reconcile
from codenav.search import grep
from tests.polyglot import make_polyglot


@pytest.fixture
def indexed(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> repos.Repo:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    return repo


@pytest.fixture
def first_index(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> repos.Repo:
    """The fixture as a first index leaves it: graph facts and the grep index for later."""
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id, defer_graph=True)
    return repo


def _grep(client: TestClient, **body: object) -> dict:
    r = client.post("/v1/grep", json=body)
    assert r.status_code == 200, r.text
    return r.json()


def _lines(answer: dict) -> list[tuple[str, int, str]]:
    return [(f["path"], m["line"], m["text"]) for f in answer["results"] for m in f["matches"]]


def test_a_literal_finds_every_line_that_holds_it_with_exact_counts(
        client: TestClient, indexed: repos.Repo) -> None:
    body = _grep(client, pattern="TokenStore")
    lines = _lines(body)
    assert ("src/auth/tokens.py", 7, "class TokenStore:") in lines
    assert any(p == "src/billing/invoice.ts" and "import { TokenStore }" in t
               for p, _, t in lines)
    assert body["matches_total"] == body["matches_shown"] == len(lines)
    assert body["total_exact"] is True and "capped" not in body
    assert body["accelerated"].startswith("trigram index")
    assert body["_stats"]["tokens_returned"] > 0 and body["_stats"]["files_referenced"] >= 2
    # the literal is literal: regex characters match themselves
    dots = _grep(client, pattern='line.partition(":")')
    assert _lines(dots) == [("src/auth/tokens.py", 25,
                             '    name, _, value = line.partition(":")')]


def test_case_is_ignored_unless_asked(client: TestClient, indexed: repos.Repo) -> None:
    loose = {(p, n) for p, n, _ in _lines(_grep(client, pattern="tokenstore"))}
    assert ("src/auth/tokens.py", 7) in loose
    exact = _grep(client, pattern="tokenstore", case_sensitive=True)
    assert exact["results"] == [] and exact["empty"]["code"] == "no_match"
    assert "case-sensitive" in exact["empty"]["message"]


def test_a_regex_matches_within_lines_and_bad_syntax_is_a_clear_400(
        client: TestClient, indexed: repos.Repo) -> None:
    body = _grep(client, pattern=r"def \w+\(self, token", regex=True)
    assert _lines(body) == [("src/auth/tokens.py", 19,
                             "    def verify(self, token: str) -> bool:")]
    assert "'(self, token'" in body["accelerated"]
    anchored = _lines(_grep(client, pattern=r"^class \w+:$", regex=True, language="python"))
    assert ("src/auth/tokens.py", 7, "class TokenStore:") in anchored  # ^ and $ per line
    r = client.post("/v1/grep", json={"pattern": r"(a)\1", "regex": True})
    assert r.status_code == 400
    assert "RE2" in r.json()["message"] and "backreferences" in r.json()["hint"]
    r = client.post("/v1/grep", json={"pattern": "a", "limit": 0})
    assert r.status_code == 400 and "limit" in r.json()["message"]


def test_path_and_language_filters_narrow_and_empty_answers_say_why(
        client: TestClient, indexed: repos.Repo) -> None:
    everywhere = {p for p, _, _ in _lines(_grep(client, pattern="token"))}
    assert len(everywhere) > 1
    py = {p for p, _, _ in _lines(_grep(client, pattern="token", language="python"))}
    assert py and all(p.endswith(".py") for p in py)
    in_auth = {p for p, _, _ in _lines(_grep(client, pattern="token", path="src/auth/**"))}
    assert in_auth and all(p.startswith("src/auth/") for p in in_auth)
    assert _grep(client, pattern="token", language="cobol")["empty"]["code"] == \
        "language_not_indexed"
    assert _grep(client, pattern="token", path="nope/**")["empty"]["code"] == \
        "path_not_indexed"
    # a secret file is never indexed, so its value is never found
    secret = _grep(client, pattern="canary-do-not-index")
    assert secret["results"] == [] and secret["empty"]["code"] == "no_match"


def test_a_capped_answer_says_so_and_how_many_matches_exist(
        client: TestClient, indexed: repos.Repo) -> None:
    full = _grep(client, pattern="return", limit=500)
    assert full["matches_total"] > 3 and full["total_exact"]
    capped = _grep(client, pattern="return", limit=2)
    assert capped["matches_shown"] == 2 == len(_lines(capped))
    assert capped["matches_total"] == full["matches_total"]
    assert capped["capped"]["limit"] == 2
    assert f"of {full['matches_total']} matching lines" in capped["capped"]["message"]


def test_context_lines_come_with_each_match(client: TestClient, indexed: repos.Repo) -> None:
    body = _grep(client, pattern="class TokenStore", context=2)
    match = body["results"][0]["matches"][0]
    assert match["line"] == 7
    assert match["before"] == ["", ""] and match["after"][0].strip().startswith('"""Keeps')


def test_a_pathological_pattern_is_bounded_and_reported(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """A pattern that backtracks exponentially in a backtracking engine runs in linear time
    under RE2; a scan past its budget stops and says so, with what it found."""
    root = tmp_path / "big"
    root.mkdir()
    for i in range(40):
        (root / f"f{i:02d}.txt").write_text(("a" * 60 + "\n") * 400)
    repo = repos.register(conn, str(root), "big")
    reconcile.reconcile(settings, repo.id)
    from codenav.access import Caller, resolve

    scope = resolve(conn, Caller.operator(), "big")
    answer = grep.grep(conn, scope, "(a|aa)*c", regex=True)
    assert answer["results"] == [] and answer["total_exact"] is True
    assert answer["files_searched"] == 40 and answer["accelerated"].startswith("none")
    tiny = grep.grep(conn, scope, "(a+)+$", regex=True, timeout_ms=10, limit=500)
    if tiny.get("timed_out"):  # a 10 ms budget on 1 MB of text: stopped, and says so
        assert tiny["total_exact"] is False
        assert tiny["timed_out"]["budget_ms"] == 10
        assert "partial" in tiny["timed_out"]["message"]
    else:  # a fast machine: all of it within 10 ms
        assert tiny["files_searched"] == 40
    assert conn.execute("SHOW statement_timeout").fetchone()[0] == "0"  # SET LOCAL only


def test_required_literals_come_from_the_mandatory_parts_of_a_regex() -> None:
    assert grep.required_literals(r"new\s+KafkaProducer<") == ("new", "KafkaProducer<")
    assert grep.required_literals(r"(foo|bar)baz") == ("baz",)
    assert grep.required_literals(r"x(abc)?yz") == ("x", "yz")
    assert grep.required_literals(r"\bgetName\b") == ("getName",)
    assert grep.required_literals(r"(?:handle)+Event") == ("handle", "Event")
    assert grep.required_literals(r"[[:alpha:]]+foo") == ()  # RE2-only syntax: no guess
    assert grep.compile_pattern("ab", False).literals == ()  # too short for a trigram
    assert grep.like_pattern("100%_a\\b") == "%100\\%\\_a\\\\b%"


def test_a_first_indexs_files_are_found_before_the_grep_index_holds_them_and_after(
        client: TestClient, conn: psycopg.Connection, first_index: repos.Repo) -> None:
    """A first index inserts its contents outside the trigram index (the graph job puts
    them in): grep matches their bodies without it and answers the same before and after."""
    outside = "SELECT count(*) FROM contents WHERE NOT grep_ready"
    contents = conn.execute("SELECT count(*) FROM contents").fetchone()
    assert contents is not None and contents[0] > 0
    assert conn.execute(outside).fetchone() == contents
    asks: list[dict[str, object]] = [
        {"pattern": "TokenStore"}, {"pattern": "tokenstore", "case_sensitive": True},
        {"pattern": r"def \w+\(self", "regex": True},
        {"pattern": "TokenStore", "path": "src/billing/*"}, {"pattern": "import"}]
    status = client.post("/v1/status", json={"repo": "polyglot"}).json()["repos"][0]
    assert status["grep_index"]["files_pending"] == status["files"] > 0
    before = [_grep(client, **ask) for ask in asks]
    assert ("src/auth/tokens.py", 7, "class TokenStore:") in _lines(before[0])
    assert before[1]["results"] == [] and before[2]["results"]
    assert grams.fill(conn) == contents[0]
    assert conn.execute(outside).fetchone() == (0,)
    assert grams.fill(conn) == 0
    after = [_grep(client, **ask) for ask in asks]
    assert "grep_index" not in client.post("/v1/status", json={"repo": "polyglot"}).json()[
        "repos"][0]
    for ask, old, new in zip(asks, before, after, strict=True):
        assert _lines(new) == _lines(old), ask
        assert new["files_candidate"] == old["files_candidate"], ask


def test_the_trigram_index_answers_for_the_contents_it_holds(
        conn: psycopg.Connection, indexed: repos.Repo) -> None:
    """The index is partial (grep_ready): the candidates' statement names its predicate, so
    the planner can use it."""
    tree = reconcile.worktree(conn, indexed.id)
    # The fixture's few files are cheapest read one by one; the plan a large repository
    # gets (contents found through a condition, then joined) is asked for here.
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_indexscan = off")
    conn.execute("SET enable_nestloop = off")
    conn.execute("SET enable_mergejoin = off")
    plan = "\n".join(r[0] for r in conn.execute(
        psycopg.sql.SQL("EXPLAIN ") + q.grep_candidates(1, True),
        {"tree": tree, "visible": [indexed.id], "language": None, "path_re": None,
         "cap": 100, "lit0": "%TokenStore%"}).fetchall())
    assert "contents_body_trgm_idx" in plan, plan
