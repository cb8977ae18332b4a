"""One tool surface: the tool list and each tool's arguments (names, types, which are
required, defaults) are the same over stdio MCP (the adapter, started as agents start it),
MCP over HTTP, REST (the OpenAPI document) and the CLI (its argparse parsers)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

import anyio
import httpx
import psycopg
from mcp import Client, StdioServerParameters

from codenav.auth import create_token
from codenav.config import Settings
from codenav.tools import TOOL_NAMES
from codenav_cli import cli
from codenav_cli.stores import free_port
from tests.teamkit import serve

Signature = dict[str, tuple[str, bool, Any]]
"""argument -> (type, required, default)"""


def _json_type(schema: dict[str, Any]) -> str:
    if "anyOf" in schema:
        kinds = [_json_type(s) for s in schema["anyOf"] if s.get("type") != "null"]
        return kinds[0] if len(kinds) == 1 else "|".join(sorted(kinds))
    if "enum" in schema and "type" not in schema:
        return "string"
    return str(schema.get("type", "?"))


def _from_schema(schema: dict[str, Any], defs: dict[str, Any] | None = None) -> Signature:
    if "$ref" in schema and defs is not None:
        schema = defs[schema["$ref"].rsplit("/", 1)[-1]]
    required = set(schema.get("required", []))
    return {name: (_json_type(prop), name in required, prop.get("default"))
            for name, prop in schema.get("properties", {}).items()}


def _from_parser(parser: argparse.ArgumentParser) -> Signature:
    out: Signature = {}
    for action in parser._actions:
        if action.dest in ("help", "json") or isinstance(action, argparse._HelpAction):
            continue
        if action.dest in out:  # -i and --case-sensitive share one argument
            continue
        if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction |
                      argparse.BooleanOptionalAction):
            kind = "boolean"
        elif action.nargs == "*":
            kind = "array"
        elif action.type is int:
            kind = "integer"
        else:
            kind = "string"
        required = not action.option_strings and action.nargs not in ("?", "*")
        out[action.dest] = (kind, required, None if required else action.default)
    return out


def _cli() -> dict[str, Signature]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions
               if isinstance(a, argparse._SubParsersAction))
    found = {}
    for tool in TOOL_NAMES:
        command = tool.replace("_", "-")
        assert command in sub.choices, f"no CLI command {command}"
        if tool != command:
            assert sub.choices[tool] is sub.choices[command]  # the tool's own name works too
        found[tool] = _from_parser(sub.choices[command])
    assert sub.choices["find"] is sub.choices["find-files"]  # the old name stays
    return found


async def _mcp_tools(client: Client) -> dict[str, Signature]:
    listed = await client.list_tools()
    return {t.name: _from_schema(t.input_schema) for t in listed.tools}


def _stdio() -> dict[str, Signature]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_URL": f"http://127.0.0.1:{free_port()}", "CODENAV_TOKEN": "cnv_x"})
    params = StdioServerParameters(command=sys.executable, args=["-m", "codenav_adapter"],
                                   env=env)
    found: dict[str, Signature] = {}

    async def go() -> None:
        async with Client(params) as client:
            found.update(await _mcp_tools(client))

    anyio.run(go)
    return found


def _http(url: str, token: str) -> tuple[dict[str, Signature], dict[str, Signature]]:
    mcp: dict[str, Signature] = {}

    async def go() -> None:
        from mcp.client.streamable_http import streamable_http_client

        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"})
        async with Client(streamable_http_client(f"{url}/mcp", http_client=http)) as client:
            mcp.update(await _mcp_tools(client))
        await http.aclose()

    anyio.run(go)
    spec = httpx.get(f"{url}/openapi.json").json()
    defs = spec["components"]["schemas"]
    rest = {}
    for tool in TOOL_NAMES:
        body = spec["paths"][f"/v1/{tool}"]["post"]["requestBody"]["content"]
        rest[tool] = _from_schema(body["application/json"]["schema"], defs)
    return mcp, rest


def test_every_tool_has_the_same_arguments_over_stdio_http_rest_and_the_cli(
        settings: Settings, conn: psycopg.Connection) -> None:
    token, _ = create_token(conn, "parity", "read")
    with serve(settings) as url:
        http_mcp, rest = _http(url, token)
    stdio = _stdio()
    command_line = _cli()
    assert set(stdio) == set(http_mcp) == set(rest) == set(command_line) == set(TOOL_NAMES)
    assert "grep" in TOOL_NAMES and "references" in TOOL_NAMES
    # the adapter and the CLI send each call to POST /v1/<tool> (codenav.client.ApiClient
    # names the route from the registry), and _http read each of those routes' body above
    for tool in TOOL_NAMES:
        assert stdio[tool] == http_mcp[tool], tool
        assert rest[tool] == stdio[tool], (tool, rest[tool], stdio[tool])
        assert command_line[tool] == stdio[tool], (tool, command_line[tool], stdio[tool])
    assert stdio["grep"] == {
        "pattern": ("string", True, None), "regex": ("boolean", False, False),
        "path": ("string", False, None), "language": ("string", False, None),
        "case_sensitive": ("boolean", False, False), "context": ("integer", False, 0),
        "limit": ("integer", False, 50), "repo": ("string", False, None),
        "ref": ("string", False, None)}


def test_the_comparison_sees_a_difference() -> None:
    """Not vacuous: a CLI argument with another default is a difference."""
    parser = argparse.ArgumentParser()
    parser.add_argument("pattern")
    parser.add_argument("--limit", type=int, default=51)
    assert _from_parser(parser) == {"pattern": ("string", True, None),
                                    "limit": ("integer", False, 51)}
    assert _from_parser(parser) != {"pattern": ("string", True, None),
                                    "limit": ("integer", False, 50)}
