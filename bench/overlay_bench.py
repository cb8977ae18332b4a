"""Overlay benchmark: how soon a developer's saved edit shows in that developer's next
query, over a large shared base.

    python bench/overlay_bench.py [--corpus GIT_REPO] [--trials 10] [--json out.json]
    CORPUS=/path/to/kafka python bench/overlay_bench.py

The base is the corpus's HEAD (a checkout or a bare mirror; ``CORPUS`` works as
``--corpus``), published to a server of real processes (API, index worker, overlay worker
on embedded Postgres and Redis) with ``codenav publish``. Without a corpus, a slice of the
Python standard library committed into a temporary repository stands in (its figures say
so). A developer's clone then runs the stdio adapter's own overlay session (the code
``codenav mcp`` runs, in this process, over HTTP): for 1, 10 and 50 dirty files, each trial
saves a new function into every one of them and times from the save to a lexical search
through the adapter answering with the last one (after an unreported warm-up round).
Reports, all measured in this run: p50 and p95 per size (target: p95 <= 1 s for 10 files
on 2 cores) and the bytes the adapter sent per trial (blobs and file lists, as sent: gzip
where the adapter compresses).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx
import psycopg

import bench_queries as bq
import benchkit
from codenav import overlays
from codenav.auth import create_token
from codenav.client import ApiClient
from codenav.config import Settings
from codenav.index import gitread
from codenav_adapter.overlay import Checkout, OverlaySession
from codenav_cli.stores import free_port

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@codenav",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@codenav",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
SIZES = (1, 10, 50)
WARM_FILES, WARM_TRIALS = 10, 3
"""An unreported first round: the server's caches and plans warm, as in a day's use."""


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(root), *args],
                          check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    return done.stdout.decode().strip()


def stdlib_repo(work: Path) -> Path:
    root = work / "stdlib-base"
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in ("json", "email", "http", "asyncio", "logging", "unittest", "importlib",
                 "xml", "urllib", "concurrent", "multiprocessing", "collections"):
        shutil.copytree(stdlib / name, root / name,
                        ignore=shutil.ignore_patterns("__pycache__", "test*"))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "stdlib slice")
    return root


def clone(source: Path, dest: Path) -> Path:
    subprocess.run(["git", "-c", "safe.directory=*", "clone", "-q", "--shared", str(source),
                    str(dest)], check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    return dest


def editable(root: Path) -> list[str]:
    """Source files a trial can add a function to (Python modules; Java classes)."""
    out = []
    for rel in git(root, "ls-files").splitlines():
        if "test" in rel.lower():
            continue
        if rel.endswith(".py"):
            out.append(rel)
        elif rel.endswith(".java"):
            text = (root / rel).read_text(errors="replace")
            if "class " in text and text.rstrip().endswith("}"):
                out.append(rel)
    return sorted(out)


def save(root: Path, rel: str, symbol: str) -> None:
    path = root / rel
    text = path.read_text(errors="replace")
    if rel.endswith(".java"):
        cut = text.rstrip().rfind("}")
        path.write_text(text[:cut] + f"    public int {symbol}() {{ return 1; }}\n}}\n")
    else:
        path.write_text(text + f"\n\ndef {symbol}():\n    return 1\n")


async def trials(url: str, token: str, root: Path, files: list[str], n_trials: int
                 ) -> dict[str, Any]:
    run = uuid.uuid4().hex[:6]  # new contents each run: nothing is found by address
    settings = Settings.load(env={"CODENAV_URL": url, "CODENAV_TOKEN": token},
                             dotenv=Path("/nonexistent"))
    session = OverlaySession(settings, Checkout(root, settings.max_file_bytes))
    client = ApiClient(url, token)
    sent = [0]

    spent: dict[str, float] = {}

    async def count(request: httpx.Request) -> None:
        sent[0] += len(request.content)
        request.extensions["bench_started"] = time.perf_counter()

    async def timed(response: httpx.Response) -> None:
        kind = f"{response.request.method} {response.request.url.path.rsplit('/', 1)[-1]}"
        kind = "PUT overlay" if kind.startswith("PUT") else kind
        spent[kind] = spent.get(kind, 0.0) + time.perf_counter() - \
            response.request.extensions["bench_started"]

    client._client.event_hooks["request"].append(count)  # the bytes each request sends
    client._client.event_hooks["response"].append(timed)
    out: dict[str, Any] = {}
    try:
        await session.ensure(client)  # opens the overlay, reads the base's file list once
        for size in (0, *SIZES):  # 0: a warm-up round of 10 files (3 saves), not reported
            git(root, "checkout", "-q", "--", ".")
            warm = size == 0
            size = WARM_FILES if warm else size
            chosen = files[:size]
            lags, sizes, syncs, queries = [], [], [], []
            spent.clear()
            for t in range(WARM_TRIALS if warm else n_trials):
                symbols = [f"overlay_bench_{run}_{'w' if warm else size}_{t}_{i}"
                           for i in range(len(chosen))]
                before = sent[0]
                started = time.perf_counter()
                for rel, symbol in zip(chosen, symbols, strict=True):
                    save(root, rel, symbol)
                found = False
                for _ in range(50):
                    lap = time.perf_counter()
                    oid = await session.ensure(client)
                    syncs.append(time.perf_counter() - lap)
                    lap = time.perf_counter()
                    answer = await client.call("search", {"query": symbols[-1],
                                                          "mode": "lexical", "limit": 1}, oid)
                    queries.append(time.perf_counter() - lap)
                    hits = answer.get("results") or []
                    if hits and hits[0].get("symbol") == symbols[-1]:
                        found = True
                        break
                    await anyio.sleep(0.05)
                if not found:
                    raise SystemExit(f"{symbols[-1]} never showed; see the logs")
                lags.append(time.perf_counter() - started)
                sizes.append(sent[0] - before)
            # the same query without the overlay (the base alone), and with it, settled
            plain, over = [], []
            for _ in range(WARM_TRIALS if warm else n_trials):
                for ref, into in ((None, over), ("main", plain)):
                    lap = time.perf_counter()
                    await client.call("search", {"query": symbols[-1], "mode": "lexical",
                                                 "limit": 1, **({"ref": ref} if ref else {})},
                                      None if ref else oid)
                    into.append(time.perf_counter() - lap)
            if warm:
                spent.clear()
                continue
            lags.sort()
            out[str(size)] = {
                "search_settled_p50_ms": round(statistics.median(over) * 1000, 1),
                "search_base_only_p50_ms": round(statistics.median(plain) * 1000, 1),
                "p50_ms": round(statistics.median(lags) * 1000, 1),
                "p95_ms": round(lags[min(len(lags) - 1, int(0.95 * len(lags)))] * 1000, 1),
                "max_ms": round(lags[-1] * 1000, 1),
                "bytes_sent_median": int(statistics.median(sizes)), "trials": len(lags),
                "adapter_sync_p50_ms": round(statistics.median(syncs) * 1000, 1),
                "query_p50_ms": round(statistics.median(queries) * 1000, 1),
                "queries": len(queries),
                "requests_ms_per_save": {k: round(v * 1000 / len(lags), 1)
                                         for k, v in sorted(spent.items())}}
            print(f"  {size:>2} dirty files: p50 {out[str(size)]['p50_ms']} ms, p95 "
                  f"{out[str(size)]['p95_ms']} ms (the adapter's check and send: p50 "
                  f"{out[str(size)]['adapter_sync_p50_ms']} ms; the search p50 "
                  f"{out[str(size)]['query_p50_ms']} ms, {len(queries)} for {len(lags)} saves; "
                  f"settled: {out[str(size)]['search_settled_p50_ms']} ms with the overlay, "
                  f"{out[str(size)]['search_base_only_p50_ms']} ms on the base alone), "
                  f"{out[str(size)]['bytes_sent_median']} bytes sent per trial; ms per save in "
                  f"requests: {out[str(size)]['requests_ms_per_save']}", flush=True)
    finally:
        await client.aclose()
    return out



def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=os.environ.get("CORPUS") or None,
                        help="a git repository (checkout or bare mirror); default $CORPUS")
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the server's store, clones and logs here, and reuse a base "
                        "published there by an earlier run (default: a temporary directory)")
    parser.add_argument("--log-level", default="WARNING", help="the services' log level")
    args = parser.parse_args()
    keep = args.workdir is not None
    work = args.workdir.resolve() if keep else Path(tempfile.mkdtemp(
        prefix="codenav-overlay-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        source = Path(args.corpus).resolve() if args.corpus else None
        if source is None or gitread.git_dir(source) is None:
            if source is not None:
                print(f"overlay_bench: {source} is not a git repository; a standard-library "
                      "slice stands in", flush=True)
            source = work / "stdlib-base" if (work / "stdlib-base").is_dir() else \
                stdlib_repo(work)
            label = "a standard-library slice"
        else:
            label = str(source)
        publisher = work / "ci-checkout" if (work / "ci-checkout").is_dir() else \
            clone(source, work / "ci-checkout")
        dev = work / "developer" if (work / "developer").is_dir() else \
            clone(source, work / "developer")
        git(dev, "checkout", "-q", "--", ".")
        files = editable(dev)
        print(f"overlay_bench: base {label} at {git(dev, 'rev-parse', 'HEAD')[:12]}, "
              f"{len(git(dev, 'ls-files').splitlines())} files", flush=True)
        home = work / "server"
        result: dict[str, Any] = {"corpus": label}
        with benchkit.stores(home) as st:
            assert st.rd is not None
            env = {**{k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")},
                   "CODENAV_DATABASE_URL": st.pg.url, "CODENAV_REDIS_URL": st.rd.url,
                   "CODENAV_HOME": str(home), "CODENAV_LOG_LEVEL": args.log_level,
                   "CODENAV_ALLOWED_ROOTS": str(work), **benchkit.NO_RATE_LIMIT}
            port = free_port()
            logs = work / "logs"
            procs = [benchkit.service("api", ["codenav_api", "--port", str(port)], env, logs),
                     benchkit.service("worker", ["codenav_worker", "--lane", "index"], env,
                                      logs),
                     benchkit.service("overlay-worker", ["codenav_worker", "--lane",
                                                         "overlay"], env, logs)]
            try:
                url = f"http://127.0.0.1:{port}"
                benchkit.wait_ready(url)
                with psycopg.connect(st.pg.url, autocommit=True) as conn:
                    ci, _ = create_token(conn, "bench-ci", "write")
                    dev_token, _ = create_token(conn, "bench-dev", "read")
                    # overlays an earlier run left (a reused --workdir) go first
                    conn.execute(bq.BENCH_OVERLAYS_AGE)
                    overlays.expire(Settings.load(env={"CODENAV_DATABASE_URL": st.pg.url},
                                                  dotenv=Path("/nonexistent")), conn)
                started = time.monotonic()
                done = subprocess.run(
                    [sys.executable, "-P", "-m", "codenav_cli.cli", "publish", str(publisher),
                     "--url", url, "--token", ci, "--repo", "bench", "--ref", "main",
                     "--default", "--cache", str(work / "ci-cache")],
                    capture_output=True, text=True, env=env, timeout=7200)
                if done.returncode != 0:
                    raise SystemExit(f"publish failed: {done.stderr}")
                result["publish_s"] = round(time.monotonic() - started, 1)
                print(f"  base published in {result['publish_s']} s", flush=True)
                result["sizes"] = anyio.run(trials, url, dev_token, dev, files, args.trials)
            finally:
                benchkit.stop_services(procs)
        ten = result["sizes"]["10"]
        print(f"\nedit to visible in the developer's next query, 10 dirty files: p50 "
              f"{ten['p50_ms']} ms, p95 {ten['p95_ms']} ms (target p95 <= 1000 ms on 2 cores)"
              f"; {ten['bytes_sent_median']} bytes sent per save of the 10")
        if args.json:
            Path(args.json).write_text(json.dumps(result, indent=1))
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
