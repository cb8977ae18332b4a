"""Indexing and search benchmark (``make bench``). Not a test: it prints numbers.

For each corpus (the Python standard library of this interpreter, plus ``--corpus PATH``):
files, MB, the cold index wall time through the real worker process (RQ job, parser pool,
COPY), files/s, peak RSS of the worker (process tree) and the API, the bare sequential
tree-sitter parse of the same files in the same run and the ratio index/parse,
coldstart 2.3.2's own index of the same corpus in the same run (installed with npm under
``bench/out/peers`` the first time; ``--no-coldstart`` skips it), a warm reindex with
nothing changed, a 10-file change (a comment added inside a function of 10 files, then
taken out again) until searchable and until its graph is updated, and search / find_files
latency p50/p99 over HTTP for 200 queries drawn from the corpus' own symbols: search once
right after the load (``search_first_*``), then all of them after ``VACUUM (ANALYZE)``,
the state autovacuum brings a freshly loaded database to within minutes.

``--runs N`` repeats all of it N times per corpus, each on fresh stores with coldstart
beside it, and prints the medians (ratios paired within each run) and each run's headline
figures; ``make bench`` runs 3, as issue 18's targets are medians of 3.
"""

from __future__ import annotations

import argparse
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
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

import bench_queries as bq
from benchkit import NO_RATE_LIMIT, QUOTED, medians, service, stores, wait_ready
from codenav import repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.db import queries as q
from codenav.embed import vectors
from codenav.embed.client import EmbedClient
from codenav.embed.vectors import embed_backlog
from codenav.index.reconcile import worktree
from codenav.index.walk import walk
from codenav.jobs import enqueue
from codenav.lang import STRUCTURED, language_for
from codenav.parse.chunker import parse_file, parser_for
from codenav_cli.stores import EmbeddedPostgres, EmbeddedRedis, free_port

COLDSTART_KAFKA = {"seconds": 38.8, "rss_mb": 612}
"""coldstart 2.3.2 indexing Apache Kafka: the figures recorded when this benchmark was
written (commit e9839f6), printed labelled as quoted when this run cannot measure it."""
SPREAD = ("cold_index_s", "bare_parse_s", "index_over_parse", "cold_index_postings_s",
          "with_graph_over_parse",
          "coldstart_index_s", "over_coldstart", "search_p50_ms", "find_p50_ms",
          "hybrid_p50_ms")
"""The figures printed for each run as well as their median (``--runs``)."""
COLDSTART_PACKAGE = "@cstart/coldstart@2.3.2"
PEERS = Path(__file__).resolve().parent / "out" / "peers"
"""Where peers are installed for a benchmark (once; ``bench/out`` is not committed)."""


class PeakRss:
    """Samples the summed RSS of a process and its descendants."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                root = psutil.Process(self.pid)
                procs = [root, *root.children(recursive=True)]
                total = 0
                for p in procs:
                    try:
                        total += p.memory_info().rss
                    except psutil.NoSuchProcess:
                        pass
                self.peak = max(self.peak, total)
            except psutil.NoSuchProcess:
                return
            self._stop.wait(0.05)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)


def coldstart_exe() -> Path | None:
    """coldstart 2.3.2's command, installed with npm under ``PEERS`` the first time; None
    when npm is missing or the install fails (its figure is then quoted, and labelled so)."""
    prefix = PEERS / "coldstart-2.3.2"
    exe = prefix / "node_modules" / ".bin" / "coldstart"
    if exe.exists():
        return exe
    npm = shutil.which("npm")
    if npm is None:
        return None
    prefix.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix",
                               str(prefix), COLDSTART_PACKAGE], capture_output=True,
                              timeout=600)
    except subprocess.TimeoutExpired:
        return None
    return exe if done.returncode == 0 and exe.exists() else None


def coldstart_index(exe: Path, root: Path) -> dict[str, Any]:
    """coldstart's full index of ``root`` (``coldstart index``, with a fresh HOME and cache
    directory, so nothing is read from an earlier run): wall time, and the peak RSS of its
    process tree sampled as the worker's is."""
    with tempfile.TemporaryDirectory(prefix="coldstart-") as scratch:
        env = {**os.environ, "HOME": scratch}
        started = time.perf_counter()
        proc = subprocess.Popen([str(exe), "index", "--root", str(root), "--cache-dir",
                                 str(Path(scratch) / "indexes")], env=env, cwd=root,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with PeakRss(proc.pid) as rss:
            _out, err = proc.communicate(timeout=3600)
        seconds = time.perf_counter() - started
    if proc.returncode != 0:
        print(f"  coldstart index failed ({proc.returncode}): {err.decode()[-500:]}",
              file=sys.stderr)
        return {}
    return {"coldstart_index_s": round(seconds, 2),
            "coldstart_peak_rss_mb": round(rss.peak / 2**20)}


def bare_parse(root: Path, max_bytes: int) -> tuple[int, float]:
    """Sequential tree-sitter parse of every structured file the index would parse."""
    files = []
    for entry in walk(root, max_bytes).files:
        lang = language_for(entry.path)
        if lang in STRUCTURED:
            files.append((lang, (root / entry.path).read_bytes()))
    for lang in {lang for lang, _ in files}:
        parser_for(lang)
    started = time.perf_counter()
    for lang, data in files:
        parser_for(lang).parse(data)
    return len(files), time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def make_queries(conn: psycopg.Connection, repo_id: int, n: int, seed: int = 7) -> list[str]:
    rows = conn.execute(bq.BENCH_SYMBOLS, (repo_id,)).fetchall()
    rng = random.Random(seed)
    picks = rng.sample(rows, min(len(rows), n))
    out = []
    from codenav.tokens import identifier_terms

    for i, (symbol, parent) in enumerate(picks):
        kind = i % 4
        if kind == 0:
            out.append(symbol)
        elif kind == 1:
            parts = identifier_terms(symbol)[1:] or identifier_terms(symbol)
            out.append(" ".join(parts))
        elif kind == 2 and parent:
            out.append(f"{parent} {symbol}")
        else:
            pos = rng.randrange(1, len(symbol) - 1)
            out.append(symbol[:pos] + symbol[pos + 1:])
    return out[:n]


LINE_COMMENT = {".py": "#", ".rb": "#", ".java": "//", ".kt": "//", ".scala": "//",
                ".go": "//", ".rs": "//", ".c": "//", ".h": "//", ".cc": "//", ".cpp": "//",
                ".cs": "//", ".php": "//", ".js": "//", ".ts": "//", ".swift": "//"}
"""A line comment per extension: what a 10-file change adds."""


def _edited(text: str, path: str, word: str) -> str | None:
    """``text`` with a comment holding ``word`` added inside its first function or method
    of more than one line (after the declaration's first line: a comment is valid there in
    these languages), or None when the file declares none."""
    try:
        parsed = parse_file(text, language_for(path))
    except Exception:  # noqa: BLE001 - a file the parser refuses is not picked
        return None
    first = next((c for c in parsed.chunks if c.kind in ("function", "method")
                  and c.end_line > c.start_line), None)
    if first is None:
        return None
    lines = text.splitlines(keepends=True)
    at = first.start_line  # 1-based: the new line goes right after it
    lines.insert(at, f"{LINE_COMMENT[Path(path).suffix]} {word}\n")
    return "".join(lines)


def ten_file_change(r: Any, settings: Settings, repo_id: int, root: Path, files: list[Any],
                    url: str, token: str, trials: int = 3, n: int = 10) -> dict[str, Any]:
    """A 10-file change, ``trials`` times (medians): a comment holding a new word is added
    inside a function of ``n`` source files (a seeded pick), those paths are asked for as
    the watcher asks, and the job is timed until it is done (the files searchable, their
    graph updated) and until the graph job that may follow it. A search for the word then
    counts the changed files it finds (it should find all), and the files are put back as
    they were (bytes and mtime; also when interrupted) and reindexed before the next trial."""
    eligible = sorted(f.path for f in files if Path(f.path).suffix in LINE_COMMENT)
    rng = random.Random(7)
    searchable, graph, found = [], [], []
    for trial in range(trials):
        word = "codenavbench" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(8))
        edits: dict[str, str] = {}
        for path in rng.sample(eligible, min(len(eligible), 20 * n)):
            try:
                with (root / path).open(encoding="utf-8", newline="") as f:
                    text = f.read()
            except (OSError, UnicodeDecodeError):
                continue
            new = _edited(text, path, word)
            if new is not None:
                edits[path] = new
            if len(edits) == n:
                break
        if not edits:
            return {}
        saved = {p: ((root / p).read_bytes(), (root / p).stat()) for p in edits}
        try:
            for p, new in edits.items():
                with (root / p).open("w", encoding="utf-8", newline="") as f:
                    f.write(new)
            started = time.perf_counter()
            info = wait_job(r, enqueue.request_paths(r, settings, repo_id, list(edits)))
            searchable.append(time.perf_counter() - started)
            wait_graph(r, info)
            graph.append(time.perf_counter() - started)
            answer = httpx.post(f"{url}/v1/search", json={"query": word, "limit": 50,
                                                          "mode": "lexical"},
                                headers={"Authorization": f"Bearer {token}"}, timeout=30).json()
            found.append(len({h["path"] for h in answer.get("results", [])} & set(edits)))
        finally:
            for p, (data, st) in saved.items():
                (root / p).write_bytes(data)
                os.utime(root / p, ns=(st.st_atime_ns, st.st_mtime_ns))
        wait_job(r, enqueue.request_paths(r, settings, repo_id, list(edits)))
        print(f"  10-file change {trial + 1}/{trials}: {searchable[-1]:.2f}s, graph "
              f"{graph[-1]:.2f}s, found {found[-1]}/{len(edits)}", file=sys.stderr, flush=True)
    return {"ten_file_searchable_s": round(statistics.median(searchable), 2),
            "ten_file_graph_s": round(statistics.median(graph), 2),
            "ten_file_found": min(found)}


def time_queries(url: str, token: str, route: str, queries: list[str],
                 extra: dict[str, Any]) -> list[float]:
    times = []
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"},
                      timeout=30) as client:
        client.post(route, json={"query": queries[0], **extra})  # warm the connection
        for text in queries:
            started = time.perf_counter()
            r = client.post(route, json={"query": text, **extra})
            times.append((time.perf_counter() - started) * 1000)
            if r.status_code >= 500:
                raise RuntimeError(f"{route} failed: {r.text}")
    return times


def fill_vectors(conn: psycopg.Connection, repo_id: int, model: vectors.Model) -> int:
    """Random unit vectors for every chunk the embedding budget did not reach, so that
    hybrid latency is measured over a vector index of the corpus' full size. They stand in
    for the vectors only as load (retrieval quality is measured by ``make eval``)."""
    import numpy as np

    rng = np.random.default_rng(7)
    filled = 0
    while True:
        rows = conn.execute(q.EMBED_BACKLOG, {"tree": worktree(conn, repo_id),
                                              "model": model.id, "k": 5000, "later": [],
                                              "after": b""}).fetchall()
        if not rows:
            return filled
        vecs = rng.standard_normal((len(rows), model.dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        vectors.store_vectors(conn, model, [r[0] for r in rows], vecs.tolist())
        filled += len(rows)


def start_services(logs: Path, api_env: dict[str, str], worker_env: dict[str, str],
                   ) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes], str]:
    """The API and one worker as real processes, logging under ``logs``."""
    api_port = free_port()
    api = service("api", ["codenav_api", "--port", str(api_port)], api_env, logs)
    worker = service("worker", ["codenav_worker"], worker_env, logs)
    return api, worker, f"http://127.0.0.1:{api_port}"


def wait_job(r: Any, job_id: str | None) -> dict[str, Any]:
    """Poll an RQ job until it ends; its info, or RuntimeError if it failed."""
    while True:
        info = enqueue.job_info(r, job_id or "")
        if info and info["state"] in ("finished", "failed"):
            break
        time.sleep(0.02)
    if info["state"] != "finished":
        raise RuntimeError(f"job failed: {info}")
    return info


def wait_graph(r: Any, info: dict[str, Any]) -> None:
    """Wait for the graph job an index job queued, and for the jobs it hands on to (a graph
    job that filled many deferred facts builds the graph in a job process of its own)."""
    graph_job = (info.get("result") or {}).get("graph_job")
    while graph_job:
        graph_job = (wait_job(r, graph_job).get("result") or {}).get("graph_job")


def bench_corpus(name: str, root: Path, home: Path, pg: EmbeddedPostgres, rd: EmbeddedRedis,
                 n_queries: int, embed_url: str = "", embed_s: float = 0.0,
                 fill: bool = False, coldstart: Path | None = None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    env.update({"CODENAV_DATABASE_URL": pg.url, "CODENAV_REDIS_URL": rd.url,
                "CODENAV_HOME": str(home), "PYTHONUNBUFFERED": "1", "CODENAV_LOG_LEVEL": "WARNING",
                "CODENAV_ALLOWED_ROOTS": str(root), **NO_RATE_LIMIT})
    settings = Settings.load(env=env, dotenv=Path("/nonexistent"))
    if embed_url:  # only the API embeds queries; this script embeds chunks itself, below
        env = {**env, "CODENAV_EMBED_URL": embed_url}
    walked = walk(root, settings.max_file_bytes)
    n_files = len(walked.files)
    mb = sum(f.size for f in walked.files) / 1e6
    n_parsed_files, parse_s = bare_parse(root, settings.max_file_bytes)
    peer = coldstart_index(coldstart, root) if coldstart is not None else {}

    worker_env = {k: v for k, v in env.items() if k != "CODENAV_EMBED_URL"}
    api, worker, url = start_services(home / "logs", env, worker_env)
    try:
        wait_ready(url)
        with psycopg.connect(pg.url, autocommit=True) as conn:
            token, _ = create_token(conn, "bench", "admin")
            repo = repos.register(conn, str(root), name)
            r = enqueue.connect_redis(settings)
            time.sleep(1.0)  # let the worker finish importing and preloading grammars
            with PeakRss(worker.pid) as worker_rss:
                started = time.perf_counter()
                info = wait_job(r, enqueue.request_full(r, settings, repo.id))
                index_s = time.perf_counter() - started
                # the graph job writes the whole-file postings first (find_files counts the
                # files without them from their chunks meanwhile): when it has, in this run
                while conn.execute(bq.BENCH_TERMS_PENDING).fetchone() != (False,):
                    time.sleep(0.05)
                postings_s = time.perf_counter() - started
                wait_graph(r, info)  # a first index builds its code graph in jobs of its own
                with_graph_s = time.perf_counter() - started
            started = time.perf_counter()
            wait_job(r, enqueue.request_full(r, settings, repo.id))
            warm_s = time.perf_counter() - started
            chunks = conn.execute(bq.CHUNK_COUNT).fetchone()[0]  # type: ignore[index]
            graph = conn.execute(bq.BENCH_GRAPH_SHARE, (repo.id, repo.id)).fetchone()
            # after the first build's figures are read: the change updates the graph again
            ten = ten_file_change(r, settings, repo.id, root, walked.files, url, token)
            queries = make_queries(conn, repo.id, n_queries)
            db_mb = conn.execute(bq.DATABASE_SIZE).fetchone()[0] / 1e6  # type: ignore[index]
            semantic: dict[str, Any] = {}
            if embed_url:
                client = EmbedClient(embed_url)
                run = embed_backlog(conn, client, repo.id, budget_s=embed_s)
                model = vectors.find_model(conn, client.info().name)
                client.close()
                semantic = {"embedded_chunks": run.embedded, "embed_s": round(run.seconds, 1),
                            "embed_chunks_per_s": round(run.embedded / run.seconds, 1)
                            if run.seconds else 0.0}
                if fill and model is not None:
                    semantic["synthetic_vectors"] = fill_vectors(conn, repo.id, model)
                    vectors.ensure_index(conn, model)  # as at the end of a first load
                    semantic["hnsw_index"] = bool(conn.execute(
                        q.INDEX_EXISTS, (q.hnsw_index_name(model.id),)).fetchone())
        with PeakRss(api.pid) as api_rss:
            # Right after a bulk load the first reads set hint bits and autovacuum starts
            # on the new tables; time that once, then settle the database as autovacuum
            # would within a minute or two, and time the steady state.
            first_ms = time_queries(url, token, "/v1/search", queries,
                                    {"limit": 10, "mode": "lexical"})
            with psycopg.connect(pg.url, autocommit=True) as vconn:
                vacuum_started = time.perf_counter()
                vconn.execute("VACUUM (ANALYZE)")
                vacuum_s = time.perf_counter() - vacuum_started
            search_ms = time_queries(url, token, "/v1/search", queries,
                                     {"limit": 10, "mode": "lexical"})
            find_ms = time_queries(url, token, "/v1/find_files",
                                   [" ".join(q.split()[:3]) for q in queries],
                                   {"limit": 7, "mode": "lexical"})
            if embed_url:
                hybrid_ms = time_queries(url, token, "/v1/search", queries,
                                         {"limit": 10, "mode": "hybrid"})
                semantic["hybrid_p50_ms"] = round(statistics.median(hybrid_ms), 1)
                semantic["hybrid_p99_ms"] = round(percentile(hybrid_ms, 99), 1)
    finally:
        for proc in (worker, api):
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    return {
        "corpus": name, "root": str(root), "files": n_files, "mb": round(mb, 1),
        "structured_files": n_parsed_files, "chunks": chunks, "db_mb": round(db_mb, 1),
        "cold_index_s": round(index_s, 2), "files_per_s": round(n_files / index_s, 1),
        "cold_index_postings_s": round(postings_s, 2),
        "cold_index_with_graph_s": round(with_graph_s, 2),
        "bare_parse_s": round(parse_s, 2), "index_over_parse": round(index_s / parse_s, 2),
        "with_graph_over_parse": round(with_graph_s / parse_s, 2),
        **peer,
        **({"over_coldstart": round(index_s / peer["coldstart_index_s"], 2),
            "with_graph_over_coldstart": round(with_graph_s / peer["coldstart_index_s"], 2)}
           if peer.get("coldstart_index_s") else {}),
        "warm_reindex_s": round(warm_s, 2),
        **ten,
        "graph_build_s": round(float(graph[0] or 0), 2) if graph else None,
        "imports": int(graph[1]) if graph else 0,
        "imports_internal": int(graph[2]) if graph else 0,
        "worker_peak_rss_mb": round(worker_rss.peak / 2**20),
        "api_peak_rss_mb": round(api_rss.peak / 2**20),
        "search_first_p50_ms": round(statistics.median(first_ms), 1),
        "search_first_p99_ms": round(percentile(first_ms, 99), 1),
        "vacuum_s": round(vacuum_s, 1),
        "search_p50_ms": round(statistics.median(search_ms), 1),
        "search_p99_ms": round(percentile(search_ms, 99), 1),
        "find_p50_ms": round(statistics.median(find_ms), 1),
        "find_p99_ms": round(percentile(find_ms, 99), 1),
        "queries": len(queries),
        **semantic,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", action="append", default=[], help="another directory")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--semantic", type=float, default=0.0, metavar="SECONDS",
                        help="also embed chunks for this long (a running embedder at "
                        "CODENAV_EMBED_URL, or one started here) and time hybrid search")
    parser.add_argument("--fill-vectors", action="store_true",
                        help="after --semantic, give the chunks it did not reach random "
                        "vectors, so hybrid latency is timed over a full-size HNSW index")
    parser.add_argument("--no-stdlib", action="store_true")
    parser.add_argument("--no-coldstart", action="store_true",
                        help="do not install and run coldstart 2.3.2 beside codenav")
    parser.add_argument("--runs", type=int, default=1,
                        help="cold-index each corpus this many times, each on fresh stores "
                        "(coldstart beside it each time); print the medians and each run's "
                        "headline figures")
    parser.add_argument("--out", default="bench/out/index_bench.json")
    args = parser.parse_args()
    corpora: list[tuple[str, Path]] = []
    if not args.no_stdlib:
        corpora.append(("stdlib", Path(sysconfig.get_paths()["stdlib"])))
    for path in args.corpus:
        corpora.append((Path(path).resolve().name or "corpus", Path(path).resolve()))
    results = []
    embed_url = os.environ.get("CODENAV_EMBED_URL", "") if args.semantic else ""
    embedder = None
    if args.semantic and not embed_url:
        from embed_pipeline_bench import start_embedder

        embedder, embed_url = start_embedder(
            {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")})
    coldstart = None if args.no_coldstart else coldstart_exe()
    if coldstart is None and not args.no_coldstart:
        print("coldstart 2.3.2 could not be installed with npm: its figures are quoted",
              file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="codenav-bench-") as tmp:
        base = Path(tmp)
        for name, root in corpora:
            runs = []
            for run in range(args.runs):
                home = base / f"{name}-{run}"
                with stores(home) as started:
                    assert started.rd is not None
                    print(f"benchmarking {name} ({root}), run {run + 1} of {args.runs} ...",
                          file=sys.stderr, flush=True)
                    runs.append(bench_corpus(name, root, home, started.pg, started.rd,
                                             args.queries, embed_url, args.semantic,
                                             args.fill_vectors, coldstart))
                shutil.rmtree(home, ignore_errors=True)
            results.append(medians(runs, SPREAD))
    if embedder is not None:
        os.killpg(embedder.pid, signal.SIGTERM)
        embedder.wait(30)
    keys = list(dict.fromkeys(k for r in results for k in r if not k.endswith("_runs")))
    width = max(len(k) for k in keys) if keys else 0
    for key in keys:
        print(f"{key:<{width}}  " + "  ".join(f"{str(r.get(key, '')):>14}" for r in results))
    for r in results:
        print(f"\n{r['corpus']}: " + (f"medians of {r['runs']} runs; " if "runs" in r else "")
              + f"cold index {r['cold_index_s']}s = {r['index_over_parse']}x the "
              f"bare sequential parse ({r['bare_parse_s']}s; target <= 2.0x), find_files' "
              f"whole-file postings written at {r['cold_index_postings_s']}s, with the code "
              f"graph {r['cold_index_with_graph_s']}s = {r['with_graph_over_parse']}x "
              f"(target <= 4.0x); search p50 "
              f"{r['search_p50_ms']} ms / p99 {r['search_p99_ms']} ms (targets 20 / 100; "
              f"right after the load, before VACUUM: {r['search_first_p50_ms']} / "
              f"{r['search_first_p99_ms']} ms)")
        if "ten_file_searchable_s" in r:
            print(f"  warm no-op reindex {r['warm_reindex_s']}s (target <= 1); a 10-file change "
                  f"searchable in {r['ten_file_searchable_s']}s (target <= 1), graph updated in "
                  f"{r['ten_file_graph_s']}s (target <= 3), medians of 3; a search for its new "
                  f"word found at least {r['ten_file_found']} of the 10 files")
        if "hybrid_p50_ms" in r:
            print(f"  hybrid search p50 {r['hybrid_p50_ms']} ms / p99 {r['hybrid_p99_ms']} ms "
                  f"(target p50 <= 50) over {r['embedded_chunks']} embedded chunks"
                  + (f" + {r['synthetic_vectors']} random vectors (HNSW index: "
                     f"{r.get('hnsw_index')})" if r.get("synthetic_vectors") else ""))
        if "coldstart_index_s" in r:
            cs = r["coldstart_index_s"]
            print(f"  coldstart 2.3.2, measured in this run (`coldstart index`, a fresh cache): "
                  f"{cs}s, peak RSS {r['coldstart_peak_rss_mb']} MB; codenav's cold index over "
                  f"it {r['over_coldstart']}, with the code graph "
                  f"{r['with_graph_over_coldstart']}; worker peak RSS over its "
                  f"{r['worker_peak_rss_mb'] / r['coldstart_peak_rss_mb']:.2f}")
        elif "kafka" in r["corpus"].lower():
            quoted_s, quoted_mb = COLDSTART_KAFKA["seconds"], COLDSTART_KAFKA["rss_mb"]
            print(f"  coldstart 2.3.2 on Kafka ({QUOTED}: the figure recorded in commit "
                  f"e9839f6): {quoted_s}s, {quoted_mb} MB; this run's cold index over that "
                  f"figure {r['cold_index_s'] / quoted_s:.2f}, worker peak RSS over it "
                  f"{r['worker_peak_rss_mb'] / quoted_mb:.2f}")
        for key in SPREAD:
            if f"{key}_runs" in r:
                print(f"  {key}, each run: " + ", ".join(str(v) for v in r[f"{key}_runs"]))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
