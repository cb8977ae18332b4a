"""The code graph through the whole stack as a user starts it (`codenav up`), driven by the
official MCP client over stdio through `codenav mcp`: the six graph tools, and an edit that
the watcher and worker turn into re-resolved edges."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.stackkit import RunningStack, mcp_calls, running_stack

FIXTURE = Path(__file__).parents[1] / "fixtures" / "graph" / "python"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    base = tmp_path_factory.mktemp("graph-e2e")
    root = base / "shop"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("expected.json"))
    with running_stack(root, base) as running:
        yield running


def _mcp(stack: RunningStack, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    return mcp_calls(stack.home, calls)


def test_an_agent_navigates_the_graph_through_the_stdio_adapter(stack: RunningStack) -> None:
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
        stack: RunningStack) -> None:
    util = Path(stack.root) / "app" / "util.py"
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
