"""Live-index benchmark (``make bench`` runs it after index_bench): how fast a saved edit
becomes searchable, how fast a branch switch becomes consistent, and (separately) how long
an edit waits for its embedding.

Real processes: Postgres, Redis, the API, a worker and the watcher sidecar, on a generated
git repository. The embedding phase runs a second, smaller stack whose worker embeds (an
embedder at CODENAV_EMBED_URL, or one started here), after its first backlog is done, so
the lag is that of a steady-state edit. Not a test: it prints numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg

from codenav import repos
from codenav.auth import create_token
from codenav.db import migrations
from codenav.db import queries as q
from codenav.embedded import EmbeddedPostgres, EmbeddedRedis, free_port, stop_process
from codenav.gitinfo import head_commit
from codenav.repos import Repo

GIT_ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@e", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@e"}


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, **GIT_ENV})


def make_repo(root: Path, files: int) -> None:
    for i in range(files):
        pkg = root / f"pkg{i % 20}"
        pkg.mkdir(parents=True, exist_ok=True)
        (pkg / f"mod{i}.py").write_text(
            f'"""Module {i}."""\n\n\ndef compute_{i}(value):\n    return value * {i}\n\n\n'
            f"class Holder{i}:\n    def get(self):\n        return {i}\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def ms(values: list[float], pct: float) -> float:
    return round(percentile(values, pct) * 1000, 1)


@dataclass
class Live:
    root: Path
    client: httpx.Client
    conn: psycopg.Connection[Any]
    repo: Repo
    logs: Path


def wait_until(check: Any, what: str, timeout: float, logs: Path) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not done after {timeout:.0f} s; logs in {logs}")
        time.sleep(0.02)


@contextmanager
def stack(base: Path, files: int, embed_url: str = "") -> Iterator[Live]:
    """A generated repo of ``files`` files, indexed by real api/worker/watcher processes."""
    root = base / "repo"
    make_repo(root, files)
    pg, rd = EmbeddedPostgres(base / "home", free_port()), EmbeddedRedis(base / "home",
                                                                          free_port())
    procs = [pg.start(), rd.start()]
    api_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_DATABASE_URL": pg.url, "CODENAV_REDIS_URL": rd.url,
                "CODENAV_HOME": str(base / "home"), "CODENAV_LOG_LEVEL": "WARNING",
                "CODENAV_DEBOUNCE_MS": "100", "PYTHONUNBUFFERED": "1",
                "CODENAV_ALLOWED_ROOTS": str(root)})
    if embed_url:
        env["CODENAV_EMBED_URL"] = embed_url
    services = []
    try:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            migrations.migrate(conn)
            token, _ = create_token(conn, "bench", "admin")
            repo = repos.register(conn, str(root), "live")
        logs = base / "logs"
        logs.mkdir()
        for name, argv in (("api", ["-m", "codenav_api", "--no-migrate", "--port",
                                    str(api_port)]),
                           ("worker", ["-m", "codenav_worker"]),
                           ("watcher", ["-m", "codenav_watcher"])):
            services.append(subprocess.Popen(
                [sys.executable, *argv], env=env, start_new_session=True,
                stdout=(logs / f"{name}.log").open("wb"), stderr=subprocess.STDOUT))
        client = httpx.Client(base_url=f"http://127.0.0.1:{api_port}", timeout=30,
                              headers={"Authorization": f"Bearer {token}"})
        with psycopg.connect(pg.url, autocommit=True) as conn:
            def indexed() -> bool:
                row = conn.execute(q.REPO_COUNTS, (repo.id,)).fetchone()
                return bool(row and row[0] >= files)

            def api_up() -> bool:
                try:
                    return client.get("/healthz").status_code == 200
                except httpx.HTTPError:
                    return False

            wait_until(api_up, "api start", 60, logs)
            wait_until(indexed, "first index", 300, logs)
            yield Live(root, client, conn, repo, logs)
    finally:
        for proc in services:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(30)
        stop_process(procs[1])
        stop_process(procs[0], signal.SIGINT, timeout=30)


def save_edit(live: Live, i: int) -> tuple[str, float]:
    target = live.root / f"pkg{i % 20}" / f"mod{i}.py"
    symbol = f"freshly_saved_symbol_{i}"
    target.write_text(target.read_text() + f"\n\ndef {symbol}():\n    return {i}\n")
    return symbol, time.monotonic()


def lexical_lag(live: Live, symbol: str, saved: float) -> float:
    def found() -> bool:
        body = live.client.post("/v1/search", json={"query": symbol, "limit": 1,
                                                     "mode": "lexical"}).json()
        hits = body.get("results") or []
        return bool(hits and hits[0].get("symbol") == symbol)

    wait_until(found, f"edit {symbol} searchable", 30, live.logs)
    return time.monotonic() - saved


def edits_and_switch(base: Path, files: int, edits: int, switch: int) -> dict[str, Any]:
    with stack(base, files) as live:
        lags = []
        for i in range(edits):
            symbol, saved = save_edit(live, i)
            lags.append(lexical_lag(live, symbol, saved))
        root, conn = live.root, live.conn
        git(root, "add", "-A")
        git(root, "commit", "-qm", "edits")
        git(root, "checkout", "-qb", "feature")
        for i in range(switch):
            path = root / f"pkg{i % 20}" / f"mod{i}.py"
            path.write_text(path.read_text().replace("return value *", "return value + 1 +"))
        git(root, "add", "-A")
        git(root, "commit", "-qm", "feature")
        git(root, "checkout", "-q", "main")
        time.sleep(3)  # let the watcher settle on main before timing the switch
        started = time.monotonic()
        git(root, "checkout", "-q", "feature")
        feature_head = head_commit(root)
        runs_before = conn.execute(q.BENCH_RUN_COUNT).fetchone()[0]  # type: ignore[index]

        def switched() -> bool:
            row = conn.execute(q.REPO_BY_ID, (live.repo.id,)).fetchone()
            changed = conn.execute(q.BENCH_FILES_CONTAINING,
                                   (live.repo.id, "value + 1 +")).fetchone()[0]  # type: ignore[index]
            return bool(row and row[5] == feature_head and changed == switch)

        wait_until(switched, f"branch switch of {switch} files", 120, live.logs)
        switch_s = time.monotonic() - started
        jobs = conn.execute(q.BENCH_RUN_COUNT).fetchone()[0] - runs_before  # type: ignore[index]
    return {"files": files, "edits": edits,
            "edit_to_searchable_p50_ms": ms(lags, 50),
            "edit_to_searchable_p95_ms": ms(lags, 95),
            "edit_to_searchable_max_ms": round(max(lags) * 1000, 1),
            "branch_switch_files": switch, "branch_switch_consistent_s": round(switch_s, 2),
            "branch_switch_index_runs": jobs}


def embedding_lag(base: Path, files: int, edits: int, embed_url: str) -> dict[str, Any]:
    with stack(base, files, embed_url) as live:
        def backlog_done() -> bool:
            total, embedded = live.conn.execute(q.BENCH_EMBED_COVERAGE,
                                                (live.repo.id,)).fetchone()  # type: ignore[misc]
            return bool(total and embedded == total)

        wait_until(backlog_done, "first embedding backlog", 900, live.logs)
        lexical, embedded = [], []
        for i in range(edits):
            symbol, saved = save_edit(live, i)
            lexical.append(lexical_lag(live, symbol, saved))

            def done(symbol: str = symbol) -> bool:
                total, have = live.conn.execute(q.BENCH_SYMBOL_EMBEDDED,
                                                (live.repo.id, symbol)).fetchone()  # type: ignore[misc]
                return bool(total and have == total)

            wait_until(done, f"embedding of {symbol}", 120, live.logs)
            embedded.append(time.monotonic() - saved)
    return {"embed_files": files, "embed_edits": edits,
            "embed_edit_lexical_p50_ms": ms(lexical, 50),
            "edit_to_embedded_p50_ms": ms(embedded, 50),
            "edit_to_embedded_p95_ms": ms(embedded, 95),
            "embedding_lag_after_lexical_p50_ms": round(statistics.median(
                e - x for e, x in zip(embedded, lexical, strict=True)) * 1000, 1)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--switch", type=int, default=500, help="files changed by the branch")
    parser.add_argument("--embed-files", type=int, default=100,
                        help="repo size of the embedding-lag phase")
    parser.add_argument("--embed-edits", type=int, default=20,
                        help="edits timed until embedded (0 skips the phase)")
    parser.add_argument("--out", default="bench/out/live_bench.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codenav-live-") as tmp:
        result = edits_and_switch(Path(tmp) / "lexical", args.files, args.edits, args.switch)
        if args.embed_edits:
            embed_url = os.environ.get("CODENAV_EMBED_URL", "")
            embedder = None
            if not embed_url:
                from embed_pipeline_bench import start_embedder

                embedder, embed_url = start_embedder(
                    {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")})
            try:
                result |= embedding_lag(Path(tmp) / "semantic", args.embed_files,
                                        args.embed_edits, embed_url)
            finally:
                if embedder is not None:
                    os.killpg(embedder.pid, signal.SIGTERM)
                    embedder.wait(30)
    for key, value in result.items():
        print(f"{key:<36} {value}")
    print(f"\nedit-to-searchable p95 {result['edit_to_searchable_p95_ms']} ms (target <= 1000); "
          f"branch switch of {args.switch} files consistent in "
          f"{result['branch_switch_consistent_s']} s (target <= 10) with "
          f"{result['branch_switch_index_runs']} index runs")
    if "edit_to_embedded_p50_ms" in result:
        print(f"embedding lag, reported apart: edit-to-embedded p50 "
              f"{result['edit_to_embedded_p50_ms']} ms / p95 "
              f"{result['edit_to_embedded_p95_ms']} ms")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
