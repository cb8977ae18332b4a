"""Starting the stack as a user does (`codenav up`) and driving `codenav mcp` with the
official MCP client over stdio; shared by the end-to-end tests."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from codenav_cli.stores import free_port
from tests.conftest import NO_RATE_LIMIT

CODENAV = str(Path(sys.executable).with_name("codenav"))


@dataclass
class RunningStack:
    root: Path
    home: Path
    env: dict[str, str]
    port: int
    proc: subprocess.Popen[bytes]
    log: Path


def start_stack(args: list[str], home: Path, log_path: Path, cwd: Path | None = None,
                port: int | None = None, timeout: float = 180.0,
                env_extra: dict[str, str] | None = None) -> RunningStack:
    """``codenav up ARGS`` as a user starts it, until it prints the client set-up."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    # repositories may be registered under the temporary directory (codenav.roots), where
    # the tests make them; `--repo root` is allowed by `codenav up` itself
    env.update({"CODENAV_HOME": str(home), "PYTHONUNBUFFERED": "1",
                "CODENAV_ALLOWED_ROOTS": os.path.realpath(tempfile.gettempdir()),
                "CODENAV_RATE_LIMIT_PER_S": NO_RATE_LIMIT, **(env_extra or {})})
    port = port or free_port()
    with log_path.open("wb") as log:
        proc = subprocess.Popen([CODENAV, "up", *args, "--port", str(port)], env=env,
                                stdout=log, stderr=subprocess.STDOUT, cwd=cwd,
                                start_new_session=True)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if (home / "stack.json").exists() and \
                "Press Ctrl-C" in log_path.read_text(errors="replace"):
            return RunningStack(Path(args[args.index("--repo") + 1]) if "--repo" in args
                                else home, home, env, port, proc, log_path)
        time.sleep(0.1)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError(log_path.read_text(errors="replace")[-3000:])


def ctrl_c(stack: RunningStack, timeout: float = 60.0) -> None:
    """What Ctrl-C in its terminal does: SIGINT to ``codenav up``, then wait for it."""
    if stack.proc.poll() is None:
        os.killpg(stack.proc.pid, signal.SIGINT)
        stack.proc.wait(timeout)


@contextmanager
def state_home() -> Iterator[Path]:
    """A ``CODENAV_HOME`` for one stack, outside pytest's temporary tree: pytest resets
    that tree's root to 0700 when a session starts, which would lock the store's user out
    of a stack running as root."""
    base = Path(tempfile.mkdtemp(prefix="codenav-e2e-"))
    try:
        yield base / "home"
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def running_stack(root: Path, base: Path, timeout: float = 180.0) -> Iterator[RunningStack]:
    """``codenav up --repo root`` until it prints the client set-up; Ctrl-C at the end."""
    with state_home() as home:
        stack = start_stack(["--repo", str(root)], home, base / "up.log", timeout=timeout)
        try:
            yield stack
        finally:
            ctrl_c(stack, 90)


def mcp_calls(home: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The tool names the adapter lists, then the result of each call, in order."""
    params = StdioServerParameters(command=CODENAV, args=["mcp"],
                                   env={"CODENAV_HOME": str(home),
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


def settled(home: Path, timeout: float = 180.0) -> int:
    """The last index run once the stack is idle (no run in progress, no job queued, and
    every repository fresh: its watcher has ticked, and the full reconcile that follows the
    start of its watch is done too). A stop that follows interrupts nothing (a run a stop
    interrupts is recorded as stopped and runs again at the next start: the chaos test
    covers that case), and answers are a settled store's."""
    info = json.loads((home / "stack.json").read_text())
    deadline = time.monotonic() + timeout
    with psycopg.connect(info["database_url"], autocommit=True) as conn:
        while True:
            row = conn.execute("SELECT coalesce(max(id), 0), count(*) FILTER "
                               "(WHERE state = 'running') FROM index_runs").fetchone()
            assert row is not None
            status = httpx.post(f"{info['url']}/v1/status", json={}, timeout=30,
                                headers={"Authorization": f"Bearer {info['token']}"}).json()
            if row[1] == 0 and status["queue"].get("jobs") == 0 and \
                    all(r["freshness"]["fresh"] for r in status["repos"]):
                return int(row[0])
            assert time.monotonic() < deadline, (row, status["queue"])
            time.sleep(0.2)
