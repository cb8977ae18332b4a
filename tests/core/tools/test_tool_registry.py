"""The tool registry is the one description of the tools: MCP, REST, the CLI, the roles and
the README are all made from it, and arguments are checked by each tool's model."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.server import MCPServer

from codenav.config import Settings
from codenav.roles import REQUIRED
from codenav.tools import TOOLS, table
from codenav.tools.mcp_tools import register_tools
from codenav_cli.cli import _tool_body, build_parser

ROOT = Path(__file__).resolve().parents[3]


def test_the_readme_tool_table_is_the_registry() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert table() in readme, "regenerate the README's table with codenav.tools.table()"


def test_every_tool_has_its_role_from_its_module() -> None:
    for tool in TOOLS.values():
        assert REQUIRED[tool.name] == tool.role
    assert TOOLS["reindex"].role == "write"


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        self.calls.append((tool, args))
        return {"results": []}


def test_mcp_schemas_carry_the_models_defaults_and_bounds_and_calls_are_checked_by_them(
        ) -> None:
    backend = _Recorder()
    server: MCPServer = MCPServer(name="t")
    register_tools(server, backend)

    async def go() -> None:
        async with Client(server) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            assert list(listed) == list(TOOLS)
            limit = listed["search"].input_schema["properties"]["limit"]
            assert limit["default"] == 10 and limit["maximum"] == 50 and limit["minimum"] == 1
            assert listed["search"].input_schema["required"] == ["query"]
            too_many = await client.call_tool("search", {"query": "x", "limit": 51})
            assert too_many.is_error
            nul = await client.call_tool("definition", {"symbol": "a\x00"})
            assert nul.is_error and "symbol: contains a NUL byte" in nul.content[0].text  # type: ignore
            deep = await client.call_tool("dependencies", {"path": "a.py", "depth": 4})
            assert deep.is_error
            ok = await client.call_tool("references", {"symbol": "A",
                                                       "include_potential": False})
            assert not ok.is_error

    anyio.run(go)
    assert backend.calls == [("references", {"symbol": "A", "include_potential": False})]


def _body(*argv: str) -> dict[str, Any]:
    args = build_parser().parse_args(list(argv))
    return _tool_body(args, TOOLS[args.tool], Settings.load(env={}))


def test_every_tool_is_a_cli_subcommand_named_like_it_with_its_arguments() -> None:
    parser = build_parser()
    commands = set(re.findall(r"^    ([\w-]+)", parser.format_help(), re.M))
    assert {name.replace("_", "-") for name in TOOLS} <= commands
    assert _body("find", "retry logic", "--include-tests", "--limit", "3") == {
        "query": "retry logic", "include_tests": True, "limit": 3}
    assert _body("find_files", "x") == {"query": "x"}
    assert _body("find", "x", "--path", "src/**") == {"query": "x", "path": "src/**"}
    assert _body("find", "x", "--language", "go") == {"query": "x", "language": "go"}
    assert _body("search", "Token", "--exported", "--mode", "lexical", "--repo", "r") == {
        "query": "Token", "exported": True, "mode": "lexical", "repo": "r"}
    assert _body("read", "a.py", "--start", "2", "--end", "4") == {
        "path": "a.py", "start_line": 2, "end_line": 4}
    assert _body("read", "--symbol", "A.b") == {"symbol": "A.b"}
    assert _body("references", "Foo", "--no-potential") == {"symbol": "Foo",
                                                             "include_potential": False}
    assert _body("reindex", "a.py", "b.py") == {"paths": ["a.py", "b.py"]}
    assert _body("dependencies", "a.py", "--direction", "importers", "--depth", "2") == {
        "path": "a.py", "direction": "importers", "depth": 2}
    assert _body("skeleton") == {}
    assert _body("status", "--json") == {}
    assert _body("grep", "new Foo(", "-C", "2", "-s", "--limit", "5") == {
        "pattern": "new Foo(", "context": 2, "case_sensitive": True, "limit": 5}
    assert _body("grep", "x", "--case-sensitive", "-i", "--regex") == {"pattern": "x",
                                                                        "regex": True}
    assert _body("find-files", "x", "--mode", "hybrid") == {"query": "x"}  # the default
    assert _body("read", "a.py", "--start-line", "2") == {"path": "a.py", "start_line": 2}
    assert _body("references", "Foo", "--no-include-potential") == {
        "symbol": "Foo", "include_potential": False}
