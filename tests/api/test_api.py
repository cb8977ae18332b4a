"""The REST API in-process (TestClient) over a real Postgres and Redis."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from codenav import repos
from codenav.config import Settings
from codenav.index import reconcile
from tests.polyglot import make_polyglot


@pytest.fixture
def indexed(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> repos.Repo:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    return repo


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    ready = client.get("/readyz")
    assert ready.status_code == 200
    assert ready.json()["status"] == "ready"


def test_requests_without_a_valid_token_are_refused(client: TestClient,
                                                    indexed: repos.Repo) -> None:
    for headers in ({}, {"Authorization": "Bearer nope"}, {"Authorization": "Basic x"}):
        r = client.post("/v1/search", json={"query": "token"}, headers=headers | {
            "Authorization": headers.get("Authorization", "")})
        assert r.status_code == 401
        assert r.json()["error"] == "unauthorized"


def test_search_finds_the_declaration_with_its_code(client: TestClient,
                                                    indexed: repos.Repo) -> None:
    body = client.post("/v1/search", json={"query": "parse http header"}).json()
    top = body["results"][0]
    assert top["path"] == "src/auth/tokens.py"
    assert top["symbol"] == "parse_http_header"
    assert top["kind"] == "function"
    assert "partition" in top["content"]
    assert body["_stats"]["tokens_returned"] > 0
    assert body["_stats"]["tokens_full_files"] >= body["_stats"]["tokens_returned"] // 10


def test_camel_case_identifiers_match_words(client: TestClient, indexed: repos.Repo) -> None:
    body = client.post("/v1/search", json={"query": "invoice calculator total"}).json()
    symbols = [r["symbol"] for r in body["results"][:3]]
    assert "InvoiceCalculator" in symbols or "totalCents" in symbols


def test_search_filters_by_language_kind_and_path(client: TestClient,
                                                  indexed: repos.Repo) -> None:
    go = client.post("/v1/search", json={"query": "payment", "language": "go"}).json()
    assert go["results"] and {r["path"] for r in go["results"]} == {"web/server.go"}
    cls = client.post("/v1/search", json={"query": "cache", "kind": "class"}).json()
    assert all(r["kind"] == "class" for r in cls["results"])
    in_lib = client.post("/v1/search", json={"query": "ring push", "path": "lib/**"}).json()
    assert in_lib["results"] and all(r["path"].startswith("lib/") for r in in_lib["results"])


def test_empty_answers_say_why(client: TestClient, indexed: repos.Repo) -> None:
    cobol = client.post("/v1/search", json={"query": "payment", "language": "cobol"}).json()
    assert cobol["results"] == []
    assert cobol["empty"]["code"] == "language_not_indexed"
    nowhere = client.post("/v1/search", json={"query": "payment", "path": "nope/**"}).json()
    assert nowhere["empty"]["code"] == "path_not_indexed"
    nothing = client.post("/v1/search", json={"query": "zyzzyvaquux"}).json()
    assert nothing["empty"]["code"] == "no_match"


def test_find_files_ranks_files_and_explains(client: TestClient, indexed: repos.Repo) -> None:
    body = client.post("/v1/find_files", json={"query": "[auth|login] token"}).json()
    assert body["results"][0]["path"] == "src/auth/tokens.py"
    assert "auth" in body["results"][0]["reason"]
    paths = [r["path"] for r in body["results"]]
    assert "src/auth/test_tokens.py" not in paths  # tests excluded by default
    with_tests = client.post("/v1/find_files", json={"query": "[auth|login] token",
                                                     "include_tests": True}).json()
    assert "src/auth/test_tokens.py" in [r["path"] for r in with_tests["results"]]
    only_billing = client.post("/v1/find_files", json={"query": "[auth|login] token",
                                                       "path": "src/billing/**"}).json()
    assert only_billing["results"] and all(
        r["path"].startswith("src/billing/") for r in only_billing["results"])
    assert "src/auth/tokens.py" not in [r["path"] for r in only_billing["results"]]
    python = client.post("/v1/find_files", json={"query": "[auth|login] token",
                                                 "language": "python"}).json()
    assert "src/auth/tokens.py" in [r["path"] for r in python["results"]]
    assert all(r["path"].endswith(".py") for r in python["results"]), python
    kotlin = client.post("/v1/find_files", json={"query": "[auth|login] token",
                                                 "language": "kotlin"}).json()
    assert kotlin["results"] == [] and kotlin["empty"]["code"] == "language_not_indexed"


def test_find_files_matches_plurals(client: TestClient, indexed: repos.Repo) -> None:
    body = client.post("/v1/find_files", json={"query": "invoices"}).json()
    assert body["results"][0]["path"] == "src/billing/invoice.ts"


def test_find_files_says_how_much_to_trust_its_first_file(client: TestClient,
                                                          indexed: repos.Repo) -> None:
    named = client.post("/v1/find_files", json={"query": "TokenStore"}).json()
    assert named["results"][0]["path"] == "src/auth/tokens.py"
    assert named["match_confidence"]["level"] == "high"
    assert "declares" in named["match_confidence"]["reason"]
    nothing = client.post("/v1/find_files", json={"query": "zyzzyvaquux"}).json()
    assert nothing["results"] == [] and "match_confidence" not in nothing


def test_outline_nests_methods_under_their_class(client: TestClient,
                                                 indexed: repos.Repo) -> None:
    body = client.post("/v1/outline", json={"path": "src/auth/tokens.py"}).json()
    top = {s["name"]: s for s in body["symbols"]}
    assert set(top) == {"TokenStore", "parse_http_header"}
    methods = [c["name"] for c in top["TokenStore"]["children"]]
    assert methods == ["__init__", "issue", "verify"]
    assert body["imports"] == ["hashlib", "hmac"]


def test_read_returns_exact_lines_and_symbols(client: TestClient, indexed: repos.Repo,
                                              tmp_path: Path) -> None:
    source = (tmp_path / "polyglot" / "web" / "server.go").read_text().splitlines()
    body = client.post("/v1/read", json={"path": "web/server.go", "start_line": 3,
                                         "end_line": 6}).json()
    assert body["content"].splitlines() == source[2:6]
    by_symbol = client.post("/v1/read", json={"symbol": "LruCache.new"}).json()
    assert by_symbol["path"] == "lib/cache.rs"
    assert "HashMap::new()" in by_symbol["content"]


@pytest.mark.parametrize("path", ["../etc/passwd", "/etc/passwd", "src/../../x",
                                  "%2e%2e/etc/passwd", "..\\windows", "src/\x00.py",
                                  "\uff0e\uff0e/etc"])
def test_path_traversal_is_refused(client: TestClient, indexed: repos.Repo, path: str) -> None:
    for route in ("/v1/read", "/v1/outline"):
        r = client.post(route, json={"path": path})
        assert r.status_code == 400, (route, path, r.text)
        assert "/etc" not in r.json()["message"]


def test_unknown_paths_and_skipped_files_get_404_with_a_reason(client: TestClient,
                                                               indexed: repos.Repo) -> None:
    skipped = client.post("/v1/outline", json={"path": "data/huge.txt"})
    assert skipped.status_code == 404
    assert "too_large" in skipped.json()["message"]
    missing = client.post("/v1/outline", json={"path": "src/auth/token.py"})
    assert missing.status_code == 404
    assert "src/auth/tokens.py" in missing.json().get("hint", "")


def test_malformed_requests_get_a_clear_400(client: TestClient, indexed: repos.Repo) -> None:
    cases = [{"query": ""}, {"query": "x", "limit": 0}, {"query": "x", "limit": 1000},
             {"query": "a" * 9000}, {"nope": 1}, {"query": "'; DROP TABLE chunks; --"}]
    for body in cases:
        r = client.post("/v1/search", json=body)
        assert r.status_code in (200, 400), (body, r.text)
        if r.status_code == 400:
            assert r.json()["message"]
    weird = client.post("/v1/search", json={"query": "a & b | !c :* ' \\ %_"})
    assert weird.status_code in (200, 400)
    assert client.post("/v1/search", json={"query": "token"}).status_code == 200


def test_status_lists_skipped_files_with_reasons(client: TestClient,
                                                 indexed: repos.Repo) -> None:
    body = client.post("/v1/status", json={}).json()
    repo = body["repos"][0]
    assert repo["index_status"] == "ready"
    by_reason = repo["skipped"]["by_reason"]
    assert by_reason["binary"] == 2 and by_reason["minified"] == 2
    assert by_reason["too_large"] == 1 and by_reason["secret"] == 1
    assert by_reason["symlink"] == 1
    assert {"python", "typescript", "go", "java", "rust", "c", "ruby"} <= set(repo["languages"])


def test_nothing_indexed_says_so(client: TestClient, conn: psycopg.Connection,
                                 tmp_path: Path) -> None:
    repos.register(conn, str(tmp_path), "empty")
    body = client.post("/v1/search", json={"query": "anything", "repo": "empty"}).json()
    assert body["empty"]["code"] == "not_indexed"
    unknown = client.post("/v1/search", json={"query": "x", "repo": "nope"})
    assert unknown.status_code == 404


def test_openapi_describes_the_tools(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    for route in ("/v1/search", "/v1/find_files", "/v1/outline", "/v1/read", "/v1/status",
                  "/v1/reindex", "/v1/repos"):
        assert route in spec["paths"]


def test_answers_with_a_second_connection_are_the_engines_own(
        client: TestClient, indexed: repos.Repo, conn: psycopg.Connection) -> None:
    """The served API sends a request's independent statements ahead on a second pooled
    connection (``codenav.db.side``); its answers are those of the engine on one
    connection."""
    from codenav.access import Scope
    from codenav.db import queries as q
    from codenav.search import chunks, find

    svc = client.app.state.services  # type: ignore[attr-defined]
    lent: list[bool] = []
    spare = svc.spare

    @contextmanager
    def counted() -> Iterator[psycopg.Connection | None]:
        with spare() as c:
            lent.append(c is not None)
            yield c

    svc.spare = counted
    svc.pool.wait(timeout=30)  # both of the pool's first connections are open
    conn.execute(q.SESSION_SETUP)  # the API's connections' settings (trigram threshold)
    scope = Scope.system(indexed)
    for query in ("[auth|login] token", "invoices", "TokenStore", "parse http header",
                  "calculate total cents for an invoice", "zyzzyvaquux"):
        for tool, engine in (("find_files", find.find_files), ("search", chunks.search)):
            served = client.post(f"/v1/{tool}", json={"query": query,
                                                      "mode": "lexical"}).json()
            alone = engine(conn, scope, query, mode="lexical")
            assert [(r["path"], r["score"]) for r in served["results"]] == \
                [(r["path"], r["score"]) for r in alone["results"]], (tool, query)
    assert lent and all(lent)  # a connection was free each time, and lent


def test_pooled_connections_prepare_repeated_statements_but_plan_each_run_for_its_parameters(
        client: TestClient, indexed: repos.Repo) -> None:
    """The API's connections prepare what they run again (no second parse), and never let a
    prepared statement fall back to a generic plan: every execution gets a plan for its own
    parameters (a generic plan made search more than ten times slower)."""
    for _ in range(4):  # each query's statements, many more times than Postgres needs (5)
        for query in ("[auth|login] token", "invoices", "TokenStore", "zyzzyvaquux",
                      "parse http header", "calculate total cents for an invoice"):
            for tool in ("find_files", "search"):
                assert client.post(f"/v1/{tool}", json={"query": query, "mode": "lexical"}
                                   ).status_code == 200
    svc = client.app.state.services  # type: ignore[attr-defined]
    rows = []
    with svc.pool.connection() as one, svc.pool.connection() as two:  # both, whichever served
        for conn in (one, two):
            assert conn.execute("SHOW plan_cache_mode").fetchone() == ("force_custom_plan",)
            rows += conn.execute("SELECT statement, generic_plans, custom_plans "
                                 "FROM pg_prepared_statements").fetchall()
    assert rows, "the API's connections prepare statements they repeat"
    # (a statement without parameters has one plan, the generic one, either way)
    assert all(generic == 0 for text, generic, _c in rows if "$1" in text), rows
    assert max(c for _t, _g, c in rows) >= 6  # past the five after which a generic may come


def test_many_requests_at_once_share_the_pool_without_waiting_on_each_other(
        client: TestClient, indexed: repos.Repo) -> None:
    """Each request may borrow a second connection, but only one that is free at once: with
    more requests than the pool has connections, every one is answered, as when alone."""
    from concurrent.futures import ThreadPoolExecutor

    queries = ["[auth|login] token", "invoices", "parse http header", "TokenStore"]
    calls = [(tool, query) for tool in ("find_files", "search") for query in queries]
    alone = {call: client.post(f"/v1/{call[0]}", json={"query": call[1],
                                                       "mode": "lexical"}).json()
             for call in calls}

    def ask(call: tuple[str, str]) -> tuple[tuple[str, str], int, dict]:
        r = client.post(f"/v1/{call[0]}", json={"query": call[1], "mode": "lexical"})
        return call, r.status_code, r.json()

    with ThreadPoolExecutor(max_workers=24) as pool:
        answers = list(pool.map(ask, calls * 6))
    for call, status, body in answers:
        assert status == 200, body
        assert [r["path"] for r in body["results"]] == \
            [r["path"] for r in alone[call]["results"]], call
