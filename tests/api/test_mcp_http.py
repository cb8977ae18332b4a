"""MCP over streamable HTTP at /mcp: the same tools, token and Origin checked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import psycopg
import pytest
from mcp import Client

from codenav import repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.index import reconcile
from codenav.tools import TOOL_NAMES
from tests.polyglot import make_polyglot
from tests.teamkit import serve


@pytest.fixture
def api(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> Iterator[tuple[str, str]]:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    token, _ = create_token(conn, "mcp-test", "admin")
    with serve(settings) as url:
        yield url, token


def test_mcp_over_http_lists_and_runs_the_tools(api: tuple[str, str]) -> None:
    url, token = api

    async def go() -> None:
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            tools = await client.list_tools()
            assert {t.name for t in tools.tools} == set(TOOL_NAMES)
            result = await client.call_tool("search", {"query": "retry failed upload"})
            assert not result.is_error
            assert result.structured_content["results"][0]["path"] == "web/server.go"
            assert "retryFailedUpload" in result.content[0].text
            bad = await client.call_tool("read", {"path": "../../etc/passwd"})
            assert bad.is_error
        await http.aclose()

    anyio.run(go)


def test_mcp_without_a_token_gets_401(api: tuple[str, str]) -> None:
    url, _ = api
    r = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"Accept": "application/json, text/event-stream"})
    assert r.status_code == 401


def test_mcp_refuses_foreign_origins(api: tuple[str, str]) -> None:
    url, token = api
    r = httpx.post(f"{url}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                   headers={"Authorization": f"Bearer {token}", "Origin": "http://evil.example",
                            "Accept": "application/json, text/event-stream"})
    assert r.status_code == 403
    assert r.headers.get("access-control-allow-origin") is None
