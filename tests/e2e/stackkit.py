"""Starting the stack as a user does (`codenav up`) and driving `codenav mcp` with the
official MCP client over stdio; shared by the end-to-end tests."""

from __future__ import annotations

import os
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
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from codenav.embedded import free_port

CODENAV = str(Path(sys.executable).with_name("codenav"))


@dataclass
class RunningStack:
    root: Path
    home: Path
    env: dict[str, str]
    port: int
    proc: subprocess.Popen[bytes]
    log: Path


@contextmanager
def running_stack(root: Path, base: Path, timeout: float = 180.0) -> Iterator[RunningStack]:
    """``codenav up --repo root`` until it prints the client set-up; Ctrl-C at the end."""
    home = base / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    # repositories may be registered under the temporary directory (codenav.roots), where
    # the tests make them; `--repo root` is allowed by `codenav up` itself
    env.update({"CODENAV_HOME": str(home), "PYTHONUNBUFFERED": "1",
                "CODENAV_ALLOWED_ROOTS": os.path.realpath(tempfile.gettempdir())})
    port = free_port()
    log_path = base / "up.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([CODENAV, "up", "--repo", str(root), "--port", str(port)],
                                env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        deadline = time.monotonic() + timeout
        ready = False
        while time.monotonic() < deadline and proc.poll() is None:
            if (home / "stack.json").exists() and \
                    "Press Ctrl-C" in log_path.read_text(errors="replace"):
                ready = True
                break
            time.sleep(0.1)
        assert ready, log_path.read_text(errors="replace")[-3000:]
        try:
            yield RunningStack(root, home, env, port, proc, log_path)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                proc.wait(90)


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
