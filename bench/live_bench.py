"""Live-index benchmark (``make bench`` runs it after index_bench): how fast a saved edit
becomes searchable, and how fast a branch switch becomes consistent.

Real processes: Postgres, Redis, the API, a worker and the watcher sidecar, on a generated
git repository. Not a test: it prints numbers.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--switch", type=int, default=500, help="files changed by the branch")
    parser.add_argument("--out", default="bench/out/live_bench.json")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="codenav-live-") as tmp:
        base = Path(tmp)
        root = base / "repo"
        make_repo(root, args.files)
        pg, rd = EmbeddedPostgres(base / "home", free_port()), EmbeddedRedis(base / "home",
                                                                              free_port())
        procs = [pg.start(), rd.start()]
        api_port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
        env.update({"CODENAV_DATABASE_URL": pg.url, "CODENAV_REDIS_URL": rd.url,
                    "CODENAV_HOME": str(base / "home"), "CODENAV_LOG_LEVEL": "WARNING",
                    "CODENAV_DEBOUNCE_MS": "100", "PYTHONUNBUFFERED": "1"})
        services = []
        try:
            with psycopg.connect(pg.url, autocommit=True) as conn:
                migrations.migrate(conn)
                token, _ = create_token(conn, "bench")
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
            conn = psycopg.connect(pg.url, autocommit=True)
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                row = conn.execute(q.REPO_COUNTS, (repo.id,)).fetchone()
                if row and row[0] >= args.files:
                    break
                time.sleep(0.1)
            lags = []
            for i in range(args.edits):
                target = root / f"pkg{i % 20}" / f"mod{i}.py"
                symbol = f"freshly_saved_symbol_{i}"
                target.write_text(target.read_text() + f"\n\ndef {symbol}():\n    return {i}\n")
                saved = time.monotonic()
                while True:
                    body = client.post("/v1/search", json={"query": symbol, "limit": 1,
                                                            "mode": "lexical"}).json()
                    hits = body.get("results") or []
                    if hits and hits[0].get("symbol") == symbol:
                        break
                    if time.monotonic() - saved > 30:
                        raise RuntimeError(f"edit {i} not searchable after 30 s")
                    time.sleep(0.01)
                lags.append(time.monotonic() - saved)
            git(root, "add", "-A")
            git(root, "commit", "-qm", "edits")
            git(root, "checkout", "-qb", "feature")
            for i in range(args.switch):
                path = root / f"pkg{i % 20}" / f"mod{i}.py"
                path.write_text(path.read_text().replace("return value *",
                                                         "return value + 1 +"))
            git(root, "add", "-A")
            git(root, "commit", "-qm", "feature")
            git(root, "checkout", "-q", "main")
            time.sleep(3)  # let the watcher settle on main before timing the switch
            main_head = head_commit(root)
            started = time.monotonic()
            git(root, "checkout", "-q", "feature")
            feature_head = head_commit(root)
            runs_before = conn.execute(q.BENCH_RUN_COUNT).fetchone()[0]  # type: ignore[index]
            while True:
                row = conn.execute(q.REPO_BY_ID, (repo.id,)).fetchone()
                changed = conn.execute(q.BENCH_FILES_CONTAINING,
                                       (repo.id, "value + 1 +")).fetchone()[0]  # type: ignore[index]
                if row and row[5] == feature_head and changed == args.switch:
                    break
                if time.monotonic() - started > 120:
                    raise RuntimeError(f"branch switch not consistent after 120 s: indexed "
                                       f"{row[5] if row else None} vs {feature_head}, "
                                       f"{changed}/{args.switch} files switched; logs in "
                                       f"{logs}")
                time.sleep(0.05)
            switch_s = time.monotonic() - started
            jobs = conn.execute(q.BENCH_RUN_COUNT).fetchone()[0] - runs_before  # type: ignore[index]
        finally:
            for proc in services:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)
            stop_process(procs[1])
            stop_process(procs[0], signal.SIGINT, timeout=30)
    result: dict[str, Any] = {
        "files": args.files, "edits": args.edits,
        "edit_to_searchable_p50_ms": round(statistics.median(lags) * 1000, 1),
        "edit_to_searchable_p95_ms": round(percentile(lags, 95) * 1000, 1),
        "edit_to_searchable_max_ms": round(max(lags) * 1000, 1),
        "branch_switch_files": args.switch, "branch_switch_consistent_s": round(switch_s, 2),
        "branch_switch_index_runs": jobs, "main_head": main_head,
    }
    for key, value in result.items():
        print(f"{key:<30} {value}")
    print(f"\nedit-to-searchable p95 {result['edit_to_searchable_p95_ms']} ms (target <= 1000); "
          f"branch switch of {args.switch} files consistent in "
          f"{result['branch_switch_consistent_s']} s (target <= 10) with {jobs} index runs")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
