"""The worker's and watcher's healthchecks, run against a real Redis (and Postgres)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
import redis
from rq import Worker

from codenav.config import Settings
from tests.deploy.deploykit import (
    ROOT,
    _healthcheck_argv,
    _native_env,
    _python_c,
    _service,
)


def _run_healthcheck(service: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = _python_c(_healthcheck_argv(_service(service)))
    assert code is not None
    return subprocess.run([sys.executable, "-c", code], env={**_native_env(), **env},
                          capture_output=True, text=True, timeout=60, check=False,
                          cwd=ROOT / "tests")


def test_worker_healthcheck_passes_only_while_a_worker_of_this_host_is_registered(
        redis_url: str) -> None:
    env = {"CODENAV_REDIS_URL": redis_url}
    assert _run_healthcheck("worker", env).returncode != 0
    conn = redis.Redis.from_url(redis_url)
    other = Worker(["codenav-index"], connection=conn, name="elsewhere")
    other.register_birth()
    conn.hset(other.key, "hostname", "another-container")
    assert _run_healthcheck("worker", env).returncode != 0
    mine = Worker(["codenav-index"], connection=conn, name="here")
    assert mine.hostname == socket.gethostname()
    mine.register_birth()
    try:
        result = _run_healthcheck("worker", env)
        assert result.returncode == 0, result.stderr
        conn.delete(mine.key)  # what the key's expiry does once the heartbeat stops
        assert _run_healthcheck("worker", env).returncode != 0
    finally:
        mine.register_death()
        other.register_death()


@pytest.mark.slow
def test_watcher_healthcheck_follows_the_sidecar_heartbeat(settings: Settings,
                                                          service_env: dict[str, str]) -> None:
    argv = _healthcheck_argv(_service("watcher"))
    assert argv[-3:] == ["-m", "codenav_watcher", "--check"]
    check = [sys.executable, "-m", "codenav_watcher", "--check"]
    assert subprocess.run(check, env=service_env, timeout=60).returncode == 1  # none running
    watcher = subprocess.Popen([sys.executable, "-m", "codenav_watcher"], env=service_env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while subprocess.run(check, env=service_env, timeout=60).returncode != 0:
            assert time.monotonic() < deadline, "no heartbeat from a running watcher"
            assert watcher.poll() is None
    finally:
        watcher.terminate()
        watcher.wait(30)
