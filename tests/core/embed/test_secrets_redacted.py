"""Secrets inside files never enter the index: canaries (an AWS key in settings.py, a
GitHub token in token.ts, a private key in a Python string) are redacted before parsing,
so no tool finds them in any mode (lexical, semantic, hybrid), no table holds them, and
the files keep their line numbers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient

from codenav import repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.embed import vectors
from codenav.embed.client import EmbedClient
from codenav.index import reconcile
from codenav.index.redact import MARK, redact
from tests.conftest import ALLOWED_ROOTS, NO_RATE_LIMIT
from tests.embedkit import start_embedder, stop

AWS_KEY_ID = "AKIAZ4TB7K5Q9RMVX3PL"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8mPk3b9D"
GITHUB_TOKEN = "ghp_Zx9Kq2Lm4Np6Rt8Vw1Yb3Cd5Ef7Gh0Jk2Mn4"
KEY_BODY = "MIIEowIBAAKCAQEAv3Fq9ZkQd0mYc7Tn2Lp5Xw8Rj4Hs6Gb1Ve3Ku9Oa7Ni2Me5Ld"
CANARIES = (AWS_KEY_ID, AWS_KEY_ID[4:], AWS_SECRET, GITHUB_TOKEN, GITHUB_TOKEN[4:], KEY_BODY)

SETTINGS_PY = f'''"""Service settings."""

import os

DEBUG = False
AWS_ACCESS_KEY_ID = "{AWS_KEY_ID}"
aws_secret_access_key = "{AWS_SECRET}"


def storage_settings():
    """Where uploads go (six lines: shorter chunks get no vector)."""
    bucket = os.environ.get("BUCKET", "uploads")
    region = os.environ.get("REGION", "eu-west-1")
    return {{"bucket": bucket, "region": region,
             "key_id": AWS_ACCESS_KEY_ID}}
'''
TOKEN_TS = f'''// Calls the GitHub API for release notes.
export const GITHUB_TOKEN = "{GITHUB_TOKEN}";

export function releaseNotesHeaders(): Record<string, string> {{
  return {{ Authorization: `token ${{GITHUB_TOKEN}}` }};
}}
'''
DEPLOY_PY = f'''DEPLOY_KEY = """
-----BEGIN RSA PRIVATE KEY-----
{KEY_BODY}
9ZkQd0mYc7Tn2Lp5Xw8Rj4Hs6Gb1Ve3Ku9Oa7Ni2Me5LdAbCdEfGhIjKlMnOpQrStUvWx
-----END RSA PRIVATE KEY-----
"""


def deploy_with_key(host):
    return (host, DEPLOY_KEY)
'''


@pytest.fixture(scope="module")
def embedder() -> Iterator[str]:
    proc, url = start_embedder()
    yield url
    stop(proc)


@pytest.fixture
def indexed(settings: Settings, conn: psycopg.Connection, tmp_path: Path,
            embedder: str) -> Iterator[tuple[TestClient, Path, Settings]]:
    from codenav_api.app import create_app

    root = tmp_path / "canary"
    (root / "app").mkdir(parents=True)
    (root / "app" / "settings.py").write_text(SETTINGS_PY)
    (root / "web").mkdir()
    (root / "web" / "token.ts").write_text(TOKEN_TS)
    (root / "app" / "deploy.py").write_text(DEPLOY_PY)
    s = Settings.load(env={"CODENAV_DATABASE_URL": settings.database_url,
                           "CODENAV_REDIS_URL": settings.redis_url, "CODENAV_HOME": settings.home,
                           "CODENAV_EMBED_URL": embedder, "CODENAV_ALLOWED_ROOTS": ALLOWED_ROOTS,
                           "CODENAV_RATE_LIMIT_PER_S": NO_RATE_LIMIT},
                      dotenv=Path("/nonexistent"))
    repo = repos.register(conn, str(root), "canary")
    reconcile.reconcile(s, repo.id)
    client = EmbedClient.from_settings(s)
    assert client is not None
    run = vectors.embed_backlog(conn, client, repo.id, budget_s=300)
    assert run.remaining == 0 and run.embedded > 0
    client.close()
    token, _ = create_token(conn, "canary-reader", "read")
    with TestClient(create_app(s)) as api:
        api.headers["Authorization"] = f"Bearer {token}"
        yield api, root, s


def _holds_canary(value: object) -> list[str]:
    text = json.dumps(value, ensure_ascii=False)
    return [c for c in CANARIES if c in text]


def test_the_detectors_find_each_canary_and_keep_the_lines() -> None:
    for path, text, secrets in (("app/settings.py", SETTINGS_PY, (AWS_KEY_ID, AWS_SECRET)),
                                ("web/token.ts", TOKEN_TS, (GITHUB_TOKEN,)),
                                ("app/deploy.py", DEPLOY_PY, (KEY_BODY,))):
        out, found = redact(text, path)
        assert out.count("\n") == text.count("\n")
        assert found and MARK in out
        assert not [s for s in secrets if s in out], path
    kinds = {f.type for f in redact(SETTINGS_PY, "app/settings.py")[1]}
    assert kinds == {"AWS Access Key"}


def test_no_tool_finds_a_canary_secret_in_any_mode(
        indexed: tuple[TestClient, Path, Settings]) -> None:
    api, root, _s = indexed
    queries = [AWS_KEY_ID, AWS_KEY_ID[4:], GITHUB_TOKEN, "AKIA", "ghp", "aws access key id",
               "github token authorization header", "secret access key", "RSA PRIVATE KEY",
               KEY_BODY[:30], "deploy key"]
    seen: list[str] = []
    answers = 0
    for text in queries:
        for mode in ("lexical", "semantic", "hybrid"):
            for tool in ("search", "find_files"):
                r = api.post(f"/v1/{tool}", json={"query": text, "mode": mode, "limit": 20})
                assert r.status_code == 200, r.text
                body = r.json()
                body.pop("query")  # the caller's own words
                seen += _holds_canary(body)
                answers += bool(body["results"])
    for path in ("app/settings.py", "web/token.ts", "app/deploy.py"):
        for tool, args in (("read", {"path": path}), ("outline", {"path": path}),
                           ("dependencies", {"path": path}), ("impact", {"symbol_or_path": path}),
                           ("skeleton", {"path": path.split("/")[0]})):
            r = api.post(f"/v1/{tool}", json=args)
            assert r.status_code == 200, r.text
            seen += _holds_canary(r.json())
    for symbol in ("AWS_ACCESS_KEY_ID", "aws_secret_access_key", "GITHUB_TOKEN", "DEPLOY_KEY",
                   "storage_settings", "releaseNotesHeaders", "deploy_with_key"):
        for tool in ("definition", "references", "implementations"):
            r = api.post(f"/v1/{tool}", json={"symbol": symbol})
            assert r.status_code == 200, r.text
            seen += _holds_canary(r.json())
        r = api.post("/v1/read", json={"symbol": symbol})
        assert r.status_code in (200, 404)
        seen += _holds_canary(r.json())
    assert answers > 20  # the files are there and searchable, only their secrets are not
    assert not seen, seen


def test_a_redacted_file_keeps_its_lines_and_says_what_was_removed(
        indexed: tuple[TestClient, Path, Settings]) -> None:
    api, root, _s = indexed
    for path, line in (("app/settings.py", 6), ("web/token.ts", 2)):
        disk = (root / path).read_text().split("\n")
        got = api.post("/v1/read", json={"path": path}).json()
        lines = got["content"].split("\n")
        assert got["total_lines"] == len(disk) - (1 if disk[-1] == "" else 0)
        assert MARK in lines[line - 1]
        assert [i for i, text in enumerate(lines) if MARK in text] == \
            [i for i, text in enumerate(disk[:len(lines)]) if text != lines[i]]
        assert line in got["redacted"]["lines"]
    found = api.post("/v1/search", json={"query": "storage settings bucket"}).json()
    assert found["results"][0]["symbol"] == "storage_settings"
    status = api.post("/v1/status", json={}).json()["repos"][0]["redacted"]
    by_file = {f["path"]: f for f in status["by_file"]}
    assert by_file["app/settings.py"]["count"] == 2
    assert by_file["app/settings.py"]["lines"] == [6, 7]
    assert by_file["web/token.ts"]["kinds"] == ["GitHub Token"]
    assert by_file["app/deploy.py"]["kinds"] == ["Private Key"]
    assert status["files"] == 3 and status["secrets"] == 4


def test_no_table_of_the_database_holds_a_canary(
        indexed: tuple[TestClient, Path, Settings], conn: psycopg.Connection) -> None:
    """Like a pg_dump: every row of every table, as text (embedded texts are rebuilt too)."""
    tables = [r[0] for r in conn.execute(
        "SELECT schemaname || '.' || tablename FROM pg_tables "
        "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')").fetchall()]
    assert {"public.contents", "public.chunks", "public.file_terms", "public.symbols",
            "public.refs", "public.embeddings", "public.chunk_texts"} <= set(tables)
    dump = bytearray()
    with conn.cursor() as cur:
        for table in tables:
            with cur.copy(f"COPY {table} TO STDOUT") as copy:
                for data in copy:
                    dump += bytes(data)
    text = dump.decode("utf-8", "replace")
    assert "storage_settings" in text and MARK in text  # the files are in the dump
    assert not [c for c in CANARIES if c in text]
    embedded = conn.execute(
        "SELECT string_agg(f.path || c.kind || coalesce(c.symbol, '') || c.signature || c.doc "
        "|| c.body, '') FROM files f JOIN chunks c ON c.content_id = f.content_id").fetchone()
    assert embedded is not None and not [c for c in CANARIES if c in embedded[0]]
