"""NUL bytes and invalid Unicode in any field of any route: a clear 400 on REST and a tool
error over MCP, never a 500, and the keep-alive connection stays usable (one httpx client
makes the bad request, then a good one, over a real uvicorn server)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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

BAD = {"NUL": "a\x00b", "lone surrogate": "a\ud800b", "NUL alone": "\x00"}
REQUIRED = {"query": "token", "path": "src/auth/tokens.py", "symbol": "TokenStore",
            "symbol_or_path": "TokenStore", "root": "/tmp/x", "name": "n", "role": "read",
            "pattern": "token"}


@pytest.fixture
def api(settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> Iterator[tuple[str, str]]:
    root = make_polyglot(tmp_path)
    repo = repos.register(conn, str(root), "polyglot")
    reconcile.reconcile(settings, repo.id)
    token, _ = create_token(conn, "bad-strings", "admin")
    with serve(settings) as url:
        yield url, token


def _schema(spec: dict[str, Any], ref: str) -> dict[str, Any]:
    found: dict[str, Any] = spec["components"]["schemas"][ref.rsplit("/", 1)[1]]
    return found


def _string_fields(schema: dict[str, Any]) -> list[tuple[str, bool]]:
    """(field, is a list of strings) for every string-typed property."""
    out = []
    for name, prop in schema.get("properties", {}).items():
        kinds = [prop] + prop.get("anyOf", [])
        if any(k.get("type") == "string" for k in kinds):
            out.append((name, False))
        if any(k.get("type") == "array" and k.get("items", {}).get("type") == "string"
               for k in kinds):
            out.append((name, True))
    return out


def _port(response: httpx.Response) -> int:
    stream = response.extensions["network_stream"]
    return int(stream.get_extra_info("socket").getsockname()[1])


def test_bad_text_in_every_field_of_every_route_is_a_400_and_the_connection_lives_on(
        api: tuple[str, str]) -> None:
    url, token = api
    headers = {"Authorization": f"Bearer {token}"}
    checked = 0
    with httpx.Client(base_url=url, headers=headers, timeout=30,
                      limits=httpx.Limits(max_connections=1, max_keepalive_connections=1)) as http:
        spec = http.get("/openapi.json").json()
        first = http.get("/healthz")
        port = _port(first)
        for path, ops in spec["paths"].items():
            for method, op in ops.items():
                targets: list[tuple[str, str, Any]] = []  # (what, url path, json body)
                body_ref = op.get("requestBody", {}).get("content", {}).get(
                    "application/json", {}).get("schema", {}).get("$ref")
                if body_ref:
                    schema = _schema(spec, body_ref)
                    base = {f: REQUIRED[f] for f in schema.get("required", [])}
                    for field, is_list in _string_fields(schema):
                        for label, bad in BAD.items():
                            value = [bad] if is_list else bad
                            targets.append((f"{field} ({label})", path, {**base, field: value}))
                    targets.append(("a key", path, {**base, "k\x00\ud800": "v"}))
                for param in op.get("parameters", []):
                    if param["in"] == "path":
                        bad_path = path.replace("{" + param["name"] + "}", "a%00b")
                        targets.append((f"{param['name']} (NUL)", bad_path, None))
                    elif param["in"] == "query":
                        targets.append((f"{param['name']} (NUL)", f"{path}?{param['name']}="
                                        "%00", None))
                for what, target, body in targets:
                    content = json.dumps(body).encode() if body is not None else None
                    r = http.request(method.upper(), target, content=content,
                                     headers={"content-type": "application/json"})
                    assert r.status_code in (400, 404, 422) and r.status_code != 500, \
                        (method, target, what, r.status_code, r.text)
                    if body is not None and what != "a key":
                        assert r.status_code == 400, (method, target, what, r.text)
                        message = r.json()["message"]
                        assert what.split(" ")[0] in message, (what, message)
                        assert "NUL" in message or "Unicode" in message, message
                    good = http.get("/v1/repos")
                    assert good.status_code == 200
                    assert _port(good) == port, f"{method} {target} {what}: new connection"
                    checked += 1
    assert checked > 100


def test_bad_text_in_tool_arguments_over_mcp_is_a_tool_error(api: tuple[str, str]) -> None:
    url, token = api
    args = {"search": {"query": "a\x00b"}, "find_files": {"query": "\x00"},
            "outline": {"path": "src/\x00.py"}, "read": {"symbol": "Token\x00Store"},
            "status": {"repo": "poly\x00glot"}, "reindex": {"paths": ["src/\x00"]},
            "definition": {"symbol": "\x00"}, "references": {"symbol": "a\x00"},
            "dependencies": {"path": "\x00"}, "impact": {"symbol_or_path": "\x00x"},
            "implementations": {"symbol": "x\x00"}, "skeleton": {"path": "s\x00rc"},
            "grep": {"pattern": "a\x00b"}}
    assert set(args) == set(TOOL_NAMES)

    async def go() -> None:
        from mcp.client.streamable_http import streamable_http_client

        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as c:
            for tool, arguments in args.items():
                result = await c.call_tool(tool, arguments)
                assert result.is_error, tool
                assert "NUL byte" in result.content[0].text, tool  # type: ignore[union-attr]
                ok = await c.call_tool("status", {})
                assert not ok.is_error
        await http.aclose()

    anyio.run(go)
    # a lone surrogate sent as raw JSON-RPC: a JSON-RPC answer, not a server error
    body = ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search",'
            ' "arguments": {"query": "a\\ud800b"}}}')
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as http:
        r = http.post("/mcp", content=body.encode(), headers={
            "content-type": "application/json", "accept": "application/json, text/event-stream",
            "mcp-protocol-version": "2025-06-18"})
        assert r.status_code < 500, r.text
        answer = r.json()
        assert answer.get("error") or answer["result"]["isError"], answer
        assert http.get("/v1/repos").status_code == 200
