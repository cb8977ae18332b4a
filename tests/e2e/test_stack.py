"""The whole stack as a user starts it (`codenav up`), driven by the official MCP client
over stdio through `codenav mcp`, and by the CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest

from codenav.tools import TOOL_NAMES
from tests.e2e.stackkit import CODENAV, RunningStack, mcp_calls, running_stack, settled
from tests.polyglot import make_polyglot


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    base = tmp_path_factory.mktemp("e2e")
    with running_stack(make_polyglot(base), base) as running:
        yield running


def _mcp(stack: RunningStack, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    return mcp_calls(stack.home, calls)


def test_up_prints_the_address_token_and_client_configuration(stack: RunningStack) -> None:
    text = Path(str(stack.log)).read_text()
    assert f"http://127.0.0.1:{stack.port}" in text
    assert "token: cnv_" in text
    assert "claude mcp add codenav" in text
    assert '"mcpServers"' in text
    assert "indexed polyglot" in text


def test_an_agent_finds_code_through_the_stdio_adapter(stack: RunningStack) -> None:
    # the status is read once the stack has settled: the watch's start is followed by a
    # full reconcile (changes made before it was up raise no event), "updating" meanwhile
    settled(stack.home)
    tools, search, find, outline, read, status = _mcp(stack, [
        ("search", {"query": "retry failed upload", "limit": 3}),
        ("find_files", {"query": "[invoice|billing] discount"}),
        ("outline", {"path": "cmd/Main.java"}),
        ("read", {"symbol": "TokenStore.verify"}),
        ("status", {}),
    ])
    assert tools == set(TOOL_NAMES)
    top = search.structured_content["results"][0]
    assert (top["path"], top["symbol"]) == ("web/server.go", "retryFailedUpload")
    assert "attempts" in top["content"]
    assert find.structured_content["results"][0]["path"] == "src/billing/invoice.ts"
    assert find.structured_content["results"][0]["reason"]
    main = outline.structured_content["symbols"][0]
    assert main["name"] == "Main" and [c["name"] for c in main["children"]] == \
        ["Main", "run", "dispatch"]
    assert read.structured_content["path"] == "src/auth/tokens.py"
    assert "return token in self._issued" in read.structured_content["content"]
    repo = status.structured_content["repos"][0]
    assert repo["index_status"] == "ready"
    assert repo["skipped"]["by_reason"]["binary"] == 2


def test_tool_errors_reach_the_agent_as_tool_errors(stack: RunningStack) -> None:
    _tools, traversal, missing = _mcp(stack, [("read", {"path": "../../etc/passwd"}),
                                              ("outline", {"path": "no/such/file.py"})])
    assert traversal.is_error and "inside" in traversal.content[0].text
    assert missing.is_error and "not indexed" in missing.content[0].text


def _embedded(stack: RunningStack, timeout: float = 300.0) -> None:
    """Until every chunk has its vector: a hybrid answer then stays the same from call to
    call (while the embedder loads or embeds, coverage and ranks move between two calls)."""
    info = json.loads((stack.home / "stack.json").read_text())
    deadline = time.monotonic() + timeout
    while True:
        status = httpx.post(f"{info['url']}/v1/status", json={}, timeout=30,
                            headers={"Authorization": f"Bearer {info['token']}"}).json()
        coverage = [r["embeddings"] for r in status["repos"]]
        if coverage and all(c.get("available") and c["embedded"] == c["total"]
                            for c in coverage):
            return
        assert time.monotonic() < deadline, coverage
        time.sleep(0.5)


def test_cli_json_prints_exactly_what_the_mcp_tool_returns(stack: RunningStack) -> None:
    _embedded(stack)
    env = dict(stack.env)
    cli = subprocess.run([CODENAV, "search", "token store verify", "--json"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert cli.returncode == 0, cli.stderr
    _tools, via_mcp = _mcp(stack, [("search", {"query": "token store verify"})])
    from_cli = json.loads(cli.stdout)
    for answer in (from_cli, via_mcp.structured_content):
        answer.pop("_stats")
    assert from_cli == via_mcp.structured_content


def test_grep_and_the_graph_tools_answer_alike_from_the_cli_and_the_agent(
        stack: RunningStack) -> None:
    env = dict(stack.env)
    commands = [(["grep", "TokenStore", "--json"], ("grep", {"pattern": "TokenStore"})),
                (["grep", r"def \w+\(self", "--regex", "-C", "1", "--path", "src/**", "--json"],
                 ("grep", {"pattern": r"def \w+\(self", "regex": True, "context": 1,
                           "path": "src/**"})),
                (["references", "TokenStore", "--json"], ("references", {"symbol": "TokenStore"})),
                (["skeleton", "src", "--json"], ("skeleton", {"path": "src"})),
                (["impact", "TokenStore", "--depth", "2", "--json"],
                 ("impact", {"symbol_or_path": "TokenStore", "depth": 2}))]
    _tools, *answers = _mcp(stack, [call for _argv, call in commands])
    for (argv, _call), via_mcp in zip(commands, answers, strict=True):
        cli = subprocess.run([CODENAV, *argv], env=env, capture_output=True, text=True,
                             timeout=60)
        assert cli.returncode == 0, (argv, cli.stderr)
        from_cli = json.loads(cli.stdout)
        assert not via_mcp.is_error
        for answer in (from_cli, via_mcp.structured_content):
            answer.pop("_stats")
        assert from_cli == via_mcp.structured_content, argv
    grep_answer = json.loads(subprocess.run(
        [CODENAV, "grep", "TokenStore", "--json"], env=env, capture_output=True, text=True,
        timeout=60).stdout)
    assert {f["path"] for f in grep_answer["results"]} >= {"src/auth/tokens.py",
                                                            "src/billing/invoice.ts"}
    text = subprocess.run([CODENAV, "grep", "class TokenStore", "-C", "1"], env=env,
                          capture_output=True, text=True, timeout=60).stdout
    assert "src/auth/tokens.py:7:class TokenStore:" in text
    assert "src/auth/tokens.py-8-" in text and "matching lines" in text


def test_cli_errors_are_one_line_with_a_hint(stack: RunningStack) -> None:
    env = dict(stack.env)
    r = subprocess.run([CODENAV, "read", "../x"], env=env, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1
    assert r.stderr.startswith("codenav: ") and "Traceback" not in r.stderr
    unconfigured = {**env, "CODENAV_HOME": "/nonexistent-codenav-home"}
    r = subprocess.run([CODENAV, "status"], env=unconfigured, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and "hint:" in r.stderr and "Traceback" not in r.stderr


def test_index_registers_a_second_repository_and_waits(stack: RunningStack,
                                                       tmp_path: Path) -> None:
    env = dict(stack.env)
    other = tmp_path / "other"
    other.mkdir()
    (other / "solo.py").write_text("def only_in_the_other_repo():\n    return 7\n")
    r = subprocess.run([CODENAV, "index", str(other), "--name", "other", "--quiet"], env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    found = subprocess.run([CODENAV, "search", "only in the other repo", "--repo", "other",
                            "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(found.stdout)["results"][0]["path"] == "solo.py"


def test_ctrl_c_stops_every_process(stack: RunningStack) -> None:
    proc = stack.proc
    assert isinstance(proc, subprocess.Popen)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) >= 5  # store, queue, api, worker, watcher (and their helpers)
    os.killpg(proc.pid, signal.SIGINT)
    proc.wait(90)
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, [p.pid for p in alive]
    assert not (Path(str(stack.home)) / "stack.json").exists()
