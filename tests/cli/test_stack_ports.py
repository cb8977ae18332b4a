"""`codenav up` chooses free ports for its store and queue a moment before they bind them;
another process can take one in between (any outgoing connection is given a free port too).
The stack then starts that part again on a new port instead of giving up. The embedder's
port is held by the stack itself, from its start to its stop."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from codenav.config import Settings
from codenav_cli import stack as stack_module
from codenav_cli.stack import Stack
from codenav_cli.stores import free_port, port_taken
from tests.e2e.stackkit import state_home


@pytest.fixture
def home() -> Iterator[Path]:
    with state_home() as path:
        yield path


@pytest.fixture
def taken() -> Iterator[int]:
    """A port another process holds: bound and listening."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


@pytest.mark.parametrize("part", ["store", "queue"])
def test_a_store_or_queue_whose_port_was_taken_starts_on_another(
        part: str, home: Path, taken: int, monkeypatch: pytest.MonkeyPatch) -> None:
    order = ["store", "queue"]  # the order `Stack.start` asks for their ports
    calls: list[int] = []

    def racing_free_port() -> int:
        calls.append(1)
        return taken if len(calls) == order.index(part) + 1 else free_port()

    monkeypatch.setattr(stack_module, "free_port", racing_free_port)
    settings = Settings.load(env={"CODENAV_HOME": str(home),
                                  # an embedder elsewhere: none is started here
                                  "CODENAV_EMBED_URL": f"http://127.0.0.1:{free_port()}"},
                             dotenv=Path("/nonexistent"))
    out = io.StringIO()
    stack = Stack(settings, port=free_port(), workers=0, embed_workers=0, out=out)
    try:
        stack.start()
        assert stack._pg is not None and stack._redis is not None
        moved = stack._pg if part == "store" else stack._redis
        assert moved.port != taken
        assert moved.ready()
        assert f"{part}: port {taken} was taken; starting on {moved.port}" in out.getvalue()
        log = moved.log_path
        assert port_taken(log)  # the first try's lines are in the log
        assert not port_taken(log, [c for c in stack.children if c.name == part][0].log_from)
    finally:
        stack.stop()


def test_a_failure_that_is_not_a_taken_port_is_not_retried(home: Path) -> None:
    log = home / "logs" / "redis.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("Warning: Could not create server TCP listening socket 127.0.0.1:1: "
                   "bind: Address already in use\n")
    assert port_taken(log)
    since = log.stat().st_size
    with log.open("a") as handle:
        handle.write("FATAL CONFIG FILE ERROR (Redis 7.2.4)\n")
    assert not port_taken(log, since)


def _bindable(port: int) -> bool:
    """Whether another process could bind ``port``. SO_REUSEADDR: a connection of the
    stopped embedder's in TIME_WAIT does not count, a socket bound or listening does."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _answers(url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return True
        time.sleep(0.2)
    return False


def test_the_embedders_port_is_held_by_the_stack_from_start_to_stop(home: Path) -> None:
    """The embedder listens on a socket the stack bound and keeps: no other process can
    take its port before it listens, nor while a killed embedder restarts."""
    settings = Settings.load(env={"CODENAV_HOME": str(home)}, dotenv=Path("/nonexistent"))
    out = io.StringIO()
    stack = Stack(settings, port=free_port(), workers=0, embed_workers=0, out=out)
    try:
        stack.start()
        url = stack.env["CODENAV_EMBED_URL"]
        port = int(url.rsplit(":", 1)[1])
        assert not _bindable(port)
        assert _answers(url, 60)
        embedder = next(c for c in stack.children if c.name == "embedder")
        first = embedder.proc
        assert first is not None
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
        assert not _bindable(port)  # still the stack's while no embedder runs
        assert _answers(url, 60)  # the next embedder, on the same URL
        assert embedder.proc is not None and embedder.proc.pid != first.pid
        assert "embedder exited (signal 9)" in out.getvalue()
    finally:
        stack.stop()
    assert _bindable(port)  # let go at the stop


def test_the_embedder_refuses_an_fd_that_is_not_a_socket(tmp_path: Path) -> None:
    with (tmp_path / "f").open("w") as handle:
        done = subprocess.run([sys.executable, "-P", "-m", "codenav_embedder", "--fd",
                               str(handle.fileno())], pass_fds=(handle.fileno(),),
                              capture_output=True, text=True, timeout=120,
                              env={k: v for k, v in os.environ.items()
                                   if not k.startswith("CODENAV_")})
    assert done.returncode == 2
    assert "is not a socket this process inherited" in done.stderr
