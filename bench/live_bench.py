"""Live-index benchmark (``make bench`` runs it after index_bench): how fast a saved edit
becomes searchable, how fast a branch switch becomes consistent, how long an edit waits for
its embedding, and the realistic case: edits and hybrid searches while the embedding
backlog of a large corpus runs.

Real processes: Postgres, Redis, the API, an index worker and the watcher sidecar, on a
generated git repository. The embedding phase runs a second, smaller stack with an embedding
worker too (an embedder at CODENAV_EMBED_URL, or one started here), after its first backlog
is done, so the lag is that of a steady-state edit. The backlog phase starts the whole
stack as a user does (``codenav up``) on a copy of ``--corpus`` (default: this
interpreter's standard library), waits for its first index and code graph, and measures
while the embedding backlog is still running: edit to searchable (and again with the
backlog paused, as a control), and hybrid search over HTTP with a new query each time
(query vectors are cached, so repeats would skip the embedder). Not a test: it prints what
it measured.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

import bench_queries as bq
from benchkit import NO_RATE_LIMIT, service, stop_services, stores
from codenav import repos
from codenav.access import Scope
from codenav.auth import create_token
from codenav.db import queries as q
from codenav.index.gitinfo import head_commit
from codenav.repos import Repo
from codenav.search.fusion import is_generated_path, is_test_path
from codenav_cli.stores import free_port

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
    started = contextlib.ExitStack()
    both = started.enter_context(stores(base / "home"))
    pg, rd = both.pg, both.rd
    assert rd is not None
    api_port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_DATABASE_URL": pg.url, "CODENAV_REDIS_URL": rd.url,
                "CODENAV_HOME": str(base / "home"), "CODENAV_LOG_LEVEL": "WARNING",
                "CODENAV_DEBOUNCE_MS": "100", "PYTHONUNBUFFERED": "1",
                "CODENAV_ALLOWED_ROOTS": str(root), **NO_RATE_LIMIT})
    if embed_url:
        env["CODENAV_EMBED_URL"] = embed_url
    services = []
    try:
        with psycopg.connect(pg.url, autocommit=True) as conn:
            token, _ = create_token(conn, "bench", "admin")
            repo = repos.register(conn, str(root), "live")
        logs = base / "logs"
        logs.mkdir()
        lanes = [("worker", ["codenav_worker", "--lane", "index"])]
        if embed_url:  # embedding has a lane (a worker) of its own
            lanes.append(("embed-worker", ["codenav_worker", "--lane", "embed"]))
        for name, argv in (("api", ["codenav_api", "--no-migrate", "--port", str(api_port)]),
                           *lanes, ("watcher", ["codenav_watcher"])):
            services.append(service(name, argv, env, logs))
        client = httpx.Client(base_url=f"http://127.0.0.1:{api_port}", timeout=30,
                              headers={"Authorization": f"Bearer {token}"})
        with psycopg.connect(pg.url, autocommit=True) as conn:
            def indexed() -> bool:
                row = conn.execute(q.REPO_COUNTS, Scope.system(repo).params()).fetchone()
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
        stop_services(services)
        started.close()


def save_edit(live: Live, i: int) -> tuple[str, float]:
    target = live.root / f"pkg{i % 20}" / f"mod{i}.py"
    symbol = f"freshly_saved_symbol_{i}"
    target.write_text(target.read_text() + f"\n\ndef {symbol}():\n    return {i}\n")
    return symbol, time.monotonic()


def lexical_lag(live: Live, symbol: str, saved: float) -> float:
    return searchable_lag(live.client, live.logs, symbol, saved)


def searchable_lag(client: httpx.Client, logs: Path, symbol: str, saved: float) -> float:
    """Seconds from ``saved`` until a lexical search finds ``symbol`` declared."""
    def found() -> bool:
        body = client.post("/v1/search", json={"query": symbol, "limit": 1,
                                                "mode": "lexical"}).json()
        hits = body.get("results") or []
        return bool(hits and hits[0].get("symbol") == symbol)

    wait_until(found, f"edit {symbol} searchable", 60, logs)
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
        runs_before = conn.execute(bq.BENCH_RUN_COUNT).fetchone()[0]  # type: ignore[index]

        def switched() -> bool:
            row = conn.execute(q.REPO_BY_ID, (live.repo.id,)).fetchone()
            changed = conn.execute(bq.BENCH_FILES_CONTAINING,
                                   (live.repo.id, "value + 1 +")).fetchone()[0]  # type: ignore[index]
            return bool(row and row[5] == feature_head and changed == switch)

        wait_until(switched, f"branch switch of {switch} files", 120, live.logs)
        switch_s = time.monotonic() - started
        jobs = conn.execute(bq.BENCH_RUN_COUNT).fetchone()[0] - runs_before  # type: ignore[index]
    return {"files": files, "edits": edits,
            "edit_to_searchable_p50_ms": ms(lags, 50),
            "edit_to_searchable_p95_ms": ms(lags, 95),
            "edit_to_searchable_max_ms": round(max(lags) * 1000, 1),
            "branch_switch_files": switch, "branch_switch_consistent_s": round(switch_s, 2),
            "branch_switch_index_runs": jobs}


def embedding_lag(base: Path, files: int, edits: int, embed_url: str) -> dict[str, Any]:
    with stack(base, files, embed_url) as live:
        def backlog_done() -> bool:
            total, embedded = live.conn.execute(bq.BENCH_EMBED_COVERAGE,
                                                (live.repo.id,)).fetchone()  # type: ignore[misc]
            return bool(total and embedded == total)

        wait_until(backlog_done, "first embedding backlog", 900, live.logs)
        lexical, embedded = [], []
        for i in range(edits):
            symbol, saved = save_edit(live, i)
            lexical.append(lexical_lag(live, symbol, saved))

            def done(symbol: str = symbol) -> bool:
                total, have = live.conn.execute(bq.BENCH_SYMBOL_EMBEDDED,
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


def copy_corpus(source: Path, dest: Path) -> Path:
    """The files of ``source`` (its tracked files in a git work tree; never its .git, and
    never written to: edits go to the copy). A copy already there (``--workdir`` of an
    earlier run) is used as it is, with its index."""
    if dest.is_dir():
        return dest
    listed = subprocess.run(["git", "-C", str(source), "ls-files", "-z"], capture_output=True,
                            check=False)
    if listed.returncode == 0 and listed.stdout:
        names = [n for n in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    else:
        names = [str(p.relative_to(source)) for p in source.rglob("*")
                 if p.is_file() and not {"site-packages", "__pycache__"} & set(p.parts)]
    for name in names:
        src = source / name
        if not src.is_file() or src.is_symlink():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
    return dest


def _editable(path: Path) -> bool:
    """A Python module, or a Java file ending with the body of a class (not a
    package-info.java) to add a method to."""
    if path.suffix == ".py":
        return True
    if path.suffix != ".java":
        return False
    text = path.read_text(errors="replace")
    return "class " in text and text.rstrip().endswith("}")


def _edit(path: Path, i: int, run: str) -> str:
    """Save an edit that declares a new symbol (inside the class of a Java file), named
    for this run, so a reused index cannot answer with an earlier run's edit."""
    text = path.read_text(errors="replace")
    if path.suffix == ".java":
        symbol = f"freshlySaved{run}Symbol{i}"
        cut = text.rstrip().rfind("}")
        path.write_text(text[:cut] + f"    public int {symbol}() {{ return {i}; }}\n}}\n")
    else:
        symbol = f"freshly_saved_{run}_symbol_{i}"
        path.write_text(text + f"\n\ndef {symbol}():\n    return {i}\n")
    return symbol


def backlog_case(base: Path, corpus: Path, edits: int, searches: int) -> dict[str, Any]:
    home = base / "home"
    reused = (home / "pgdata").is_dir()
    root = copy_corpus(corpus, base / corpus.name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_HOME": str(home), "CODENAV_DEBOUNCE_MS": "100",
                "CODENAV_LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1", **NO_RATE_LIMIT})
    log_path = base / "up.log"
    port = free_port()
    codenav = str(Path(sys.executable).with_name("codenav"))
    with log_path.open("wb") as log:
        proc = subprocess.Popen([codenav, "up", "--repo", str(root), "--no-wait", "--port",
                                 str(port)], env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        wait_until(lambda: (home / "stack.json").exists() and "Press Ctrl-C" in
                   log_path.read_text(errors="replace"), "codenav up", 300, home / "logs")
        info = json.loads((home / "stack.json").read_text())
        client = httpx.Client(base_url=info["url"], timeout=60,
                              headers={"Authorization": f"Bearer {info['token']}"})
        started = time.monotonic()

        def repo_status() -> dict[str, Any]:
            body: dict[str, Any] = client.post("/v1/status", json={}).json()
            return {**body["repos"][0], "services": body["services"]}

        def indexed_and_embedding() -> bool:
            st = repo_status()
            emb = st["embeddings"]
            return bool(st["freshness"]["fresh"] and emb.get("available")
                        and 0 < emb.get("total", 0) and st["services"]["embedder"] == "ok")

        wait_until(indexed_and_embedding, "first index, code graph and embedder", 1800,
                   home / "logs")
        indexed_s = time.monotonic() - started
        first = repo_status()["embeddings"]
        with psycopg.connect(info["database_url"], autocommit=True) as conn:
            repo = repos.list_repos(conn)[0]
            # edits to source files (tests and generated code rank lower by design)
            files = [r[0] for r in conn.execute(q.FILES_STATE, (repo.default_tree,)).fetchall()
                     if _editable(root / r[0]) and not is_test_path(r[0])
                     and not is_generated_path(r[0])]
            from index_bench import make_queries

            queries = [f"where is {text} handled" for text in
                       make_queries(conn, repo.id, searches, seed=11)]
        rng = random.Random(5)
        run = uuid.uuid4().hex[:6]
        targets = rng.sample(files, min(2 * edits, len(files)))
        lags, paused = [], []

        def settled() -> None:
            """Each edit is saved once the index lane is idle: an edit's run updates the
            code graph of its dependents after the edit is searchable (seconds for a module
            half the corpus imports), and the next edit's run would wait for that."""
            wait_until(lambda: repo_status()["freshness"]["fresh"], "the index lane idle",
                       600, home / "logs")

        for i, rel in enumerate(targets[:edits]):
            settled()
            symbol = _edit(root / rel, i, run)
            lags.append(searchable_lag(client, home / "logs", symbol, time.monotonic()))
        # The control, same stack and corpus: the same edits with the backlog paused
        # (embedder and embedding workers stopped with SIGSTOP), to see what it costs.
        embedding = [p for child in psutil.Process(proc.pid).children()
                     if "codenav_embedder" in " ".join(child.cmdline()) or
                     "--lane embed" in " ".join(child.cmdline())
                     for p in (child, *child.children(recursive=True))]
        for p in embedding:
            p.send_signal(signal.SIGSTOP)
        try:
            for i, rel in enumerate(targets[edits:], start=edits):
                settled()
                symbol = _edit(root / rel, i, run)
                paused.append(searchable_lag(client, home / "logs", symbol, time.monotonic()))
        finally:
            for p in embedding:
                p.send_signal(signal.SIGCONT)
        t0 = time.perf_counter()  # what issue 11 saw take 25-40 s behind embedding slices
        subprocess.run([codenav, "index", str(root), "--quiet"], env=env, check=True,
                       capture_output=True, timeout=600)
        noop_index_s = time.perf_counter() - t0
        embedder = next(c for c in psutil.Process(proc.pid).children()
                        if "codenav_embedder" in " ".join(c.cmdline()))
        embed_url = f"http://127.0.0.1:{embedder.cmdline()[-1]}/v1/embeddings"
        times, lexical_times, vector_times, fallbacks = [], [], [], 0
        for i, text in enumerate(queries):  # paired: the same query both ways, in turn
            for mode in ("hybrid", "lexical") if i % 2 else ("lexical", "hybrid"):
                t0 = time.perf_counter()
                r = client.post("/v1/search", json={"query": text, "limit": 10, "mode": mode})
                (times if mode == "hybrid" else lexical_times).append(time.perf_counter() - t0)
                if r.status_code != 200:
                    raise RuntimeError(f"{mode} search failed: {r.text[:300]}")
                if mode == "hybrid" and "embedder unavailable" in str(r.json().get("note")):
                    fallbacks += 1
            t0 = time.perf_counter()  # a query vector alone, straight from the embedder
            httpx.post(embed_url, json={"input": [f"{text} ({i})"]}, timeout=30)
            vector_times.append(time.perf_counter() - t0)
        last = repo_status()["embeddings"]
        measured_s = time.monotonic() - started - indexed_s
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(120)
    stopped = [ln for ln in log_path.read_text(errors="replace").splitlines()
               if ln.startswith("codenav stopped in")]
    return {"backlog_corpus": corpus.name, "backlog_files": len(files),
            "backlog_index_reused": reused,
            "backlog_up_to_indexed_s": round(indexed_s, 1),
            "backlog_chunks_total": last.get("total"),
            "backlog_embedded_at_start": first.get("embedded"),
            "backlog_embedded_at_end": last.get("embedded"),
            "backlog_measured_s": round(measured_s, 1),
            "backlog_edits": len(lags),
            "backlog_edit_to_searchable_p50_ms": ms(lags, 50),
            "backlog_edit_to_searchable_p95_ms": ms(lags, 95),
            "backlog_edit_to_searchable_max_ms": round(max(lags) * 1000, 1),
            "paused_backlog_edit_to_searchable_p50_ms": ms(paused, 50),
            "paused_backlog_edit_to_searchable_p95_ms": ms(paused, 95),
            "backlog_noop_index_cli_s": round(noop_index_s, 2),
            "backlog_hybrid_searches": len(times),
            "backlog_hybrid_p50_ms": ms(times, 50),
            "backlog_hybrid_p95_ms": ms(times, 95),
            "backlog_hybrid_lexical_fallbacks": fallbacks,
            "backlog_lexical_p50_ms": ms(lexical_times, 50),
            "backlog_lexical_p95_ms": ms(lexical_times, 95),
            "backlog_query_vector_p50_ms": ms(vector_times, 50),
            "backlog_query_vector_p95_ms": ms(vector_times, 95),
            "backlog_stop": stopped[-1] if stopped else "?"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=100)
    parser.add_argument("--switch", type=int, default=500, help="files changed by the branch")
    parser.add_argument("--embed-files", type=int, default=100,
                        help="repo size of the embedding-lag phase")
    parser.add_argument("--embed-edits", type=int, default=20,
                        help="edits timed until embedded (0 skips the phase)")
    parser.add_argument("--corpus", type=Path, default=None,
                        help="corpus of the backlog phase (default: the standard library)")
    parser.add_argument("--backlog-edits", type=int, default=40,
                        help="edits timed during the embedding backlog (0 skips the phase)")
    parser.add_argument("--backlog-searches", type=int, default=100,
                        help="hybrid searches timed during the embedding backlog")
    parser.add_argument("--backlog-only", action="store_true",
                        help="run the embedding-backlog phase only")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="keep the stacks' state and logs here (default: a temporary "
                        "directory, removed)")
    parser.add_argument("--out", default="bench/out/live_bench.json")
    args = parser.parse_args()
    with contextlib.ExitStack() as keep:
        if args.workdir is None:
            tmp = keep.enter_context(tempfile.TemporaryDirectory(prefix="codenav-live-"))
        else:
            args.workdir.mkdir(parents=True, exist_ok=True)
            tmp = str(args.workdir)
        result: dict[str, Any] = {}
        if not args.backlog_only:
            result |= edits_and_switch(Path(tmp) / "lexical", args.files, args.edits,
                                       args.switch)
        if args.embed_edits and not args.backlog_only:
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
        if args.backlog_edits:
            corpus = args.corpus or Path(sysconfig.get_paths()["stdlib"])
            result |= backlog_case(Path(tmp) / "backlog", corpus.resolve(),
                                   args.backlog_edits, args.backlog_searches)
    for key, value in result.items():
        print(f"{key:<36} {value}")
    if "edit_to_searchable_p95_ms" in result:
        print(f"\nedit-to-searchable p95 {result['edit_to_searchable_p95_ms']} ms (target <= "
              f"1000); branch switch of {args.switch} files consistent in "
              f"{result['branch_switch_consistent_s']} s (target <= 10) with "
              f"{result['branch_switch_index_runs']} index runs")
    if "edit_to_embedded_p50_ms" in result:
        print(f"embedding lag, reported apart: edit-to-embedded p50 "
              f"{result['edit_to_embedded_p50_ms']} ms / p95 "
              f"{result['edit_to_embedded_p95_ms']} ms")
    if "backlog_hybrid_p95_ms" in result:
        print(f"during the embedding backlog of {result['backlog_corpus']} "
              f"({result['backlog_embedded_at_start']} -> {result['backlog_embedded_at_end']} "
              f"of {result['backlog_chunks_total']} chunks embedded while measuring): "
              f"edit-to-searchable p95 {result['backlog_edit_to_searchable_p95_ms']} ms "
              f"(target <= 1000; {result['paused_backlog_edit_to_searchable_p95_ms']} ms "
              f"with the backlog paused), hybrid search p95 "
              f"{result['backlog_hybrid_p95_ms']} ms (target <= 300; lexical p95 "
              f"{result['backlog_lexical_p95_ms']} ms and a query vector alone p95 "
              f"{result['backlog_query_vector_p95_ms']} ms, same queries, same moments), "
              f"{result['backlog_hybrid_lexical_fallbacks']} of "
              f"{result['backlog_hybrid_searches']} hybrid answers lexical for want of a "
              f"query vector")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
