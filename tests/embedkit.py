"""The embedder as a real process, for tests that need semantic search."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx

from codenav_cli.stores import free_port


def start_embedder(env_extra: dict[str, str] | None = None,
                   timeout: float = 240.0) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update(env_extra or {})
    proc = subprocess.Popen([sys.executable, "-m", "codenav_embedder", "--port", str(port)],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, "embedder exited"
        try:
            if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError("embedder did not become ready")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
