"""Faults during a full index, on the whole stack as a user starts it (`codenav up`): a
worker SIGKILLed three times, Redis once, the embedder once. The API answers throughout
and says what is degraded; afterwards the index is exactly the files on disk."""

from __future__ import annotations

import functools
import json
import signal
import sysconfig
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg
import pytest

from codenav.config import Settings
from codenav.index.blob import git_blob_sha
from codenav.index.walk import walk
from tests.e2e.stackkit import RunningStack, ctrl_c, start_stack, state_home

STDLIB = Path(sysconfig.get_paths()["stdlib"])
"""The Python standard library of this interpreter: about 2300 files (site-packages and
__pycache__ are skipped by the default rules)."""
QUERIES = ["parse command line arguments", "HTTPConnection request", "decimal context",
           "json decoder scanstring"]


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"{what} not within {timeout:.0f}s"
        time.sleep(0.1)


@dataclass
class Traffic:
    """Agents using the API while the faults happen: one searching (lexical and hybrid in
    turn), one asking for the status, a health check asking for readiness; every answer is
    recorded."""

    client: httpx.Client
    searches: int = 0
    failures: list[str] = field(default_factory=list)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    readiness: list[dict[str, str]] = field(default_factory=list)
    asked_at: list[float] = field(default_factory=list)
    """When each readiness probe was sent (monotonic), one per entry of ``readiness``."""
    stop: threading.Event = field(default_factory=threading.Event)

    def search(self) -> None:
        i = 0
        while not self.stop.is_set():
            mode = "lexical" if i % 2 == 0 else "hybrid"
            body = {"query": QUERIES[i % len(QUERIES)], "limit": 5, "mode": mode}
            i += 1
            try:
                r = self.client.post("/v1/search", json=body)
                answer = r.json()
                if r.status_code != 200 or not (answer.get("results") or answer.get("empty")):
                    self.failures.append(f"search {mode}: {r.status_code} {r.text[:200]}")
                self.searches += 1
            except httpx.HTTPError as exc:
                self.failures.append(f"search {mode}: {type(exc).__name__}: {exc}")

    def status(self) -> None:
        while not self.stop.is_set():
            try:
                r = self.client.post("/v1/status", json={})
                if r.status_code != 200:
                    self.failures.append(f"status: {r.status_code} {r.text[:200]}")
                else:
                    self.statuses.append(r.json())
            except httpx.HTTPError as exc:
                self.failures.append(f"status: {type(exc).__name__}: {exc}")

    def ready(self) -> None:
        while not self.stop.is_set():
            try:
                asked = time.monotonic()
                r = self.client.get("/readyz")
                self.readiness.append(r.json()["checks"])
                self.asked_at.append(asked)
            except httpx.HTTPError as exc:
                self.failures.append(f"readyz: {type(exc).__name__}: {exc}")
            self.stop.wait(0.02)

    def degraded_seen(self, word: str) -> bool:
        return any(word in reason for st in self.statuses
                   for reason in st.get("services", {}).get("degraded", []))


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[RunningStack]:
    with state_home() as home:
        running = start_stack(["--repo", str(STDLIB), "--no-wait"], home, tmp_path / "up.log",
                              timeout=240)
        try:
            yield running
        finally:
            ctrl_c(running, 90)


def _child(stack: RunningStack, needle: str) -> psutil.Process:
    for child in psutil.Process(stack.proc.pid).children():
        try:
            if needle in " ".join(child.cmdline()):
                return child
        except psutil.NoSuchProcess:
            continue
    raise AssertionError(f"no running child matches {needle!r}")


def _latest_run(conn: psycopg.Connection) -> tuple[int, str, int]:
    row = conn.execute("SELECT id, state, files_done FROM index_runs "
                       "ORDER BY id DESC LIMIT 1").fetchone()
    return (int(row[0]), str(row[1]), int(row[2])) if row else (0, "", 0)


def _kill_worker(stack: RunningStack, conn: psycopg.Connection, after_run: int) -> int:
    """SIGKILL the index worker while it runs an index run newer than ``after_run``: its
    job's processes die with it, the supervisor starts a worker of another name, and the
    job runs again (a newer run starts). Returns the killed run's id."""
    run_id, _state, _done = wait_until(
        lambda: (r := _latest_run(conn))[0] > after_run and r[1] == "running" and r[2] > 0
        and r, 240, "an index run making progress")
    worker = _child(stack, "--lane index")
    old_name = worker.cmdline()[-1]
    tree = worker.children(recursive=True)
    worker.send_signal(signal.SIGKILL)
    _gone, alive = psutil.wait_procs(tree, timeout=20)
    assert not alive, f"a killed worker left {[p.cmdline() for p in alive]} running"
    new = wait_until(lambda: _maybe_child(stack, "--lane index"), 60, "a new index worker")
    assert new.cmdline()[-1] != old_name  # a name of its own: RQ refuses a reused one
    wait_until(lambda: _latest_run(conn)[0] > run_id, 120, "the killed job running again")
    return run_id


def _maybe_child(stack: RunningStack, needle: str) -> psutil.Process | None:
    try:
        return _child(stack, needle)
    except AssertionError:
        return None


def _queue_probed(stack: RunningStack, traffic: Traffic, probed: int,
                  restarted: list[float]) -> str:
    """"down" once a readiness probe after the first ``probed`` found the queue unreachable;
    "back" once a probe sent after Redis restarted found it up (none saw it down)."""
    answers = traffic.readiness[probed:]
    if any(c["queue"].startswith("unreachable") for c in answers):
        return "down"
    if not restarted and _maybe_child(stack, "redis-server"):
        restarted.append(time.monotonic())
    sent = traffic.asked_at[probed:]
    if restarted and any(c["queue"] == "ok" and at > restarted[0]
                         for c, at in zip(answers, sent, strict=False)):
        return "back"
    return ""


def _kill_queue_until_seen(stack: RunningStack, traffic: Traffic) -> None:
    """SIGKILL Redis until a readiness probe sees it down. The supervisor starts it again
    after 0.5 s, and a probe's ping retries for about 0.35 s, so on a loaded machine a
    probe can straddle the whole gap and find Redis back. Each quick death doubles the
    backoff (0.5, 1, 2 s), so by the third kill the gap is long enough to be seen; three
    stays under the five quick deaths that stop the stack."""
    for _ in range(3):
        queue = wait_until(lambda: _maybe_child(stack, "redis-server"), 60, "Redis running")
        probed = len(traffic.readiness)
        queue.send_signal(signal.SIGKILL)
        queue.wait(10)
        outcome = wait_until(functools.partial(_queue_probed, stack, traffic, probed, []), 60,
                             "readiness saying the queue is unreachable")
        if outcome == "down":
            return
    raise AssertionError("Redis was killed three times; no readiness probe found it down")


def _disk(root: Path, settings: Settings) -> dict[str, str]:
    return {f.path: git_blob_sha((root / f.path).read_bytes())
            for f in walk(root, settings.max_file_bytes).files}


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_the_index_converges_and_the_api_answers_through_killed_workers_redis_and_embedder(
        stack: RunningStack) -> None:
    info = json.loads((stack.home / "stack.json").read_text())
    settings = Settings.load(env={}, dotenv=Path("/nonexistent"))
    client = httpx.Client(base_url=info["url"], timeout=60,
                          headers={"Authorization": f"Bearer {info['token']}"})
    traffic = Traffic(client)
    agents = [threading.Thread(target=traffic.search, daemon=True),
              threading.Thread(target=traffic.status, daemon=True),
              threading.Thread(target=traffic.ready, daemon=True)]
    for agent in agents:
        agent.start()
    with psycopg.connect(info["database_url"], autocommit=True) as conn:
        try:
            killed = 0
            for _ in range(3):
                killed = _kill_worker(stack, conn, killed)
            assert traffic.degraded_seen("no index worker is running")

            _kill_queue_until_seen(stack, traffic)
            wait_until(lambda: _maybe_child(stack, "redis-server"), 60, "Redis restarted")
            wait_until(lambda: traffic.readiness[-1]["queue"] == "ok", 60, "Redis back")

            embedder = wait_until(lambda: _maybe_child(stack, "codenav_embedder"), 60,
                                  "the embedder")
            wait_until(lambda: client.post("/v1/status", json={}).json()["services"].get(
                "embedder") == "ok", 600, "the embedder serving")
            embedder.send_signal(signal.SIGKILL)
            embedder.wait(10)
            wait_until(lambda: traffic.degraded_seen("embedder unavailable"), 60,
                       "status saying the embedder is unavailable")
            wait_until(lambda: client.post("/v1/status", json={}).json()["services"].get(
                "embedder") == "ok", 600, "the embedder back")

            def fresh() -> dict[str, Any] | None:
                body = client.post("/v1/status", json={}).json()
                return body if body["repos"][0]["freshness"]["fresh"] else None

            status = wait_until(fresh, 600, "a fresh index")
        finally:
            traffic.stop.set()
            for agent in agents:
                agent.join(60)

        assert traffic.failures == []
        assert traffic.searches > 0
        assert status["services"]["degraded"] == []
        disk = _disk(STDLIB, settings)
        indexed = dict(conn.execute("SELECT path, sha FROM files").fetchall())
        skipped = {p for (p,) in conn.execute("SELECT path FROM skipped")}
        assert set(indexed) | (set(disk) & skipped) == set(disk)
        assert not set(indexed) & skipped
        assert {p: disk[p] for p in indexed} == indexed  # each file's content, as on disk
        duplicates = conn.execute("SELECT count(*) FROM (SELECT content_id, ord FROM chunks "
                                  "GROUP BY 1, 2 HAVING count(*) > 1) d").fetchone()
        assert duplicates == (0,)
        orphans = conn.execute("SELECT count(*) FROM contents c WHERE NOT EXISTS "
                               "(SELECT 1 FROM files f WHERE f.content_id = c.id)").fetchone()
        assert orphans == (0,)
        running = conn.execute("SELECT count(*) FROM index_runs WHERE state = 'running'")
        assert running.fetchone() == (0,)
    log = stack.log.read_text(errors="replace")
    assert log.count("worker-1 exited (signal 9)") == 3
    assert "queue exited (signal 9)" in log and "embedder exited (signal 9)" in log
    assert "Traceback" not in log
