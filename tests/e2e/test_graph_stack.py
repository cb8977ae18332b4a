"""The code graph through the whole stack as a user starts it (`codenav up`), driven by the
official MCP client over stdio through `codenav mcp`: the six graph tools, and an edit that
the watcher and worker turn into re-resolved edges."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from codenav.embedded import free_port

CODENAV = str(Path(sys.executable).with_name("codenav"))
FIXTURE = Path(__file__).parents[1] / "fixtures" / "graph" / "python"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    base = tmp_path_factory.mktemp("graph-e2e")
    root = base / "shop"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("expected.json"))
    home = base / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_HOME": str(home), "PYTHONUNBUFFERED": "1"})
    port = free_port()
    log_path = base / "up.log"
    log = log_path.open("wb")
    proc = subprocess.Popen([CODENAV, "up", "--repo", str(root), "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 180
    ready = False
    while time.monotonic() < deadline and proc.poll() is None:
        if (home / "stack.json").exists() and "Press Ctrl-C" in \
                log_path.read_text(errors="replace"):
            ready = True
            break
        time.sleep(0.1)
    assert ready, log_path.read_text(errors="replace")[-3000:]
    yield {"root": root, "home": home, "proc": proc}
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(60)
    log.close()


def _mcp(stack: dict[str, Any], calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    params = StdioServerParameters(command=CODENAV, args=["mcp"],
                                   env={"CODENAV_HOME": str(stack["home"]),
                                        "PATH": os.environ.get("PATH", "")})
    results: list[Any] = []

    async def go() -> None:
        async with Client(params) as client:
            tools = await client.list_tools()
            results.append({t.name for t in tools.tools})
            for name, args in calls:
                results.append(await client.call_tool(name, args))

    anyio.run(go)
    return results


def test_an_agent_navigates_the_graph_through_the_stdio_adapter(stack: dict[str, Any]) -> None:
    tools, definition, references, dependencies, impact, implementations, skeleton = _mcp(
        stack, [("definition", {"symbol": "Service.register"}),
                ("references", {"symbol": "User.greet"}),
                ("dependencies", {"path": "app/service.py"}),
                ("impact", {"symbol_or_path": "User.greet", "depth": 3}),
                ("implementations", {"symbol": "Base"}),
                ("skeleton", {"path": "app"})])
    assert {"definition", "references", "dependencies", "impact", "implementations",
            "skeleton"} <= tools
    found = definition.structured_content["results"][0]
    assert found["types"][0]["qualname"] == "User"
    assert "uses class User" in definition.content[0].text
    refs = references.structured_content
    assert refs["summary"] == {"verified": 3, "potential": 1, "files": 3}
    assert "potential (name only)" in references.content[0].text
    assert dependencies.structured_content["external"] == ["json"]
    assert "Service.register" in {d["qualname"] for d in impact.structured_content["dependents"]}
    assert {r["qualname"] for r in implementations.structured_content["results"]} == \
        {"User", "Admin"}
    assert "app/models.py: Base, User, Admin" in skeleton.content[0].text


def test_an_edit_on_disk_reaches_the_graph_through_watcher_and_worker(
        stack: dict[str, Any]) -> None:
    util = Path(stack["root"]) / "app" / "util.py"
    util.write_text(util.read_text() + "\n\ndef shout(text):\n    return helper(text).upper()\n")
    deadline = time.monotonic() + 90
    callers: list[Any] = []
    while time.monotonic() < deadline:
        (_tools, refs) = _mcp(stack, [("references", {"symbol": "helper"})])
        callers = [(v["path"], v["scope"]) for v in refs.structured_content["verified"]]
        if ("app/util.py", "shout") in callers:
            break
        time.sleep(0.5)
    assert ("app/util.py", "shout") in callers
