"""Horizontal scale on one machine: two API processes on two ports, three index workers and
one watcher, started as a cluster starts them (``python -m codenav_api --no-migrate``,
``python -m codenav_worker``, ``python -m codenav_watcher``), against one Postgres and one
Redis, indexing copies of part of the standard library at once while files change.

Afterwards both APIs give identical answers for every tool, no row of the index exists
twice, every content's rows are exactly what one parse gives, each repository's index is
what is on its disk, and a copy indexed concurrently has the same files and graph as one
indexed alone afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import redis
from rq import Queue, Worker
from rq.registry import StartedJobRegistry

from codenav.config import Settings
from codenav.graph.extract import extract
from codenav.index.blob import git_blob_sha
from codenav.index.ignore import IgnoreRules
from codenav.index.walk import walk
from codenav.jobs import enqueue
from codenav.parse.chunker import ChunkLimits, parse_file
from codenav.tokens import file_term_counts
from codenav_cli.stores import free_port

CODENAV = str(Path(sys.executable).with_name("codenav"))
STDLIB = Path(sysconfig.get_paths()["stdlib"])
PACKAGES = ("json", "email", "http", "logging", "urllib", "xml", "concurrent", "importlib",
            "wsgiref", "html", "tomllib", "zoneinfo", "re", "collections", "dbm")
"""About 130 modules, 1.8 MB of Python with imports, classes and calls across packages."""
WORKERS = 3
SETTLE_S = 240.0

DUPLICATES = {
    "contents": "SELECT sha, language, chunker FROM contents GROUP BY 1, 2, 3 "
                "HAVING count(*) > 1",
    "chunks": "SELECT content_id, ord FROM chunks GROUP BY 1, 2 HAVING count(*) > 1",
    "symbols": "SELECT content_id, ord FROM symbols GROUP BY 1, 2 HAVING count(*) > 1",
    "refs": "SELECT content_id, ord FROM refs GROUP BY 1, 2 HAVING count(*) > 1",
    "file_terms": "SELECT term, content_id FROM file_terms GROUP BY 1, 2 HAVING count(*) > 1",
    "files": "SELECT repo_id, path FROM files GROUP BY 1, 2 HAVING count(*) > 1",
    "skipped": "SELECT repo_id, path FROM skipped GROUP BY 1, 2 HAVING count(*) > 1",
    "graph_imports": "SELECT repo_id, src_path, ord, spec, line, dst_path FROM graph_imports "
                     "GROUP BY 1, 2, 3, 4, 5, 6 HAVING count(*) > 1",
    "graph_edges": "SELECT repo_id, src_path, ord, kind, dst_path, dst_qual FROM graph_edges "
                   "GROUP BY 1, 2, 3, 4, 5, 6 HAVING count(*) > 1",
    "graph_links": "SELECT repo_id, src_path, dst_path FROM graph_links GROUP BY 1, 2, 3 "
                   "HAVING count(*) > 1",
    "graph_files": "SELECT repo_id, path FROM graph_files GROUP BY 1, 2 HAVING count(*) > 1",
    "graph_state": "SELECT repo_id FROM graph_state GROUP BY 1 HAVING count(*) > 1",
    "orphan contents": "SELECT c.id FROM contents c WHERE NOT EXISTS "
                       "(SELECT 1 FROM files f WHERE f.content_id = c.id)",
    "contents without facts": "SELECT content_id FROM pending_facts",
    "contents without postings": "SELECT content_id FROM pending_terms",
    "runs left running": "SELECT id FROM index_runs WHERE state = 'running'",
}
"""Each query lists rows that must not exist: a second copy of a row, or leftovers."""

GRAPH_ROWS = {
    "graph_imports": "SELECT src_path, ord, spec, line, dst_path FROM graph_imports "
                     "WHERE repo_id = %s",
    "graph_edges": "SELECT src_path, ord, line, src_scope, kind, dst_path, dst_qual, verified, "
                   "how FROM graph_edges WHERE repo_id = %s",
    "graph_links": "SELECT src_path, dst_path, imports, refs FROM graph_links "
                   "WHERE repo_id = %s",
    "graph_files": "SELECT path, round(rank::numeric, 9), round(prior::numeric, 9), "
                   "imported_by FROM graph_files WHERE repo_id = %s",
    "files": "SELECT path, sha, language, size FROM files WHERE repo_id = %s",
    "skipped": "SELECT path, reason, detail FROM skipped WHERE repo_id = %s",
}
"""A repository's own rows, without its id: equal for two copies of the same tree."""

QUERIES: list[tuple[str, dict[str, Any]]] = [
    ("search", {"query": "decode a json document"}),
    ("search", {"query": "send request headers over a connection", "limit": 5}),
    ("search", {"query": "email message attachment filename", "path": "email/**"}),
    ("search", {"query": "RotatingFileHandler", "kind": "class"}),
    ("find_files", {"query": "thread pool executor shutdown"}),
    ("find_files", {"query": "parse [cookie|cookies] header"}),
    ("outline", {"path": "json/decoder.py"}),
    ("read", {"symbol": "JSONDecoder.raw_decode"}),
    ("read", {"path": "http/client.py", "start_line": 1, "end_line": 40}),
    ("definition", {"symbol": "JSONDecoder"}),
    ("references", {"symbol": "JSONDecodeError"}),
    ("dependencies", {"path": "json/__init__.py", "depth": 2}),
    ("impact", {"symbol_or_path": "json/scanner.py"}),
    ("implementations", {"symbol": "Handler"}),
    ("skeleton", {"path": "concurrent"}),
]


@dataclass
class Cluster:
    apis: list[str]
    token: str
    redis: redis.Redis
    settings: Settings

    def call(self, api: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        response = httpx.post(f"{api}/v1/{tool}", json=args, timeout=60,
                              headers={"Authorization": f"Bearer {self.token}"})
        assert response.status_code == 200, f"{api} {tool} {args}: {response.text}"
        answer: dict[str, Any] = response.json()
        return answer

    def register(self, api: str, root: Path) -> None:
        response = httpx.post(f"{api}/v1/repos", json={"root": str(root), "name": root.name},
                              headers={"Authorization": f"Bearer {self.token}"}, timeout=60)
        assert response.status_code == 200, response.text


def _copy_corpus(dest: Path) -> Path:
    dest.mkdir(parents=True)
    for package in PACKAGES:
        shutil.copytree(STDLIB / package, dest / package,
                        ignore=shutil.ignore_patterns("__pycache__", "test", "tests"))
    return dest


def _poll(condition: Callable[[], Any], timeout: float, what: str,
          interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(interval)


@contextmanager
def _process(argv: list[str], env: dict[str, str], cwd: Path, log: Path
             ) -> Iterator[subprocess.Popen[bytes]]:
    """A service process in its own session; SIGTERM (a warm shutdown) at the end, then
    SIGKILL for its whole group (parser pools, RQ work horses)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(30)


def _ready(api: str) -> bool:
    try:
        return httpx.get(f"{api}/readyz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _without_durations(node: Any, repo: str | None = None) -> Any:
    """An answer without its timings and status's usage summary (it counts the calls
    themselves, so two calls in a row differ); given ``repo``, without that repository's
    name and the token counts of ``_stats`` that the name's length changes."""
    if isinstance(node, dict):
        dropped = {"duration_ms", "usage"} | ({"_stats"} if repo is not None else set())
        return {k: "<repo>" if k == "repo" and repo is not None and v == repo else
                _without_durations(v, repo) for k, v in node.items() if k not in dropped}
    if isinstance(node, list):
        return [_without_durations(v, repo) for v in node]
    return node


def _settled(cluster: Cluster, conn: psycopg.Connection, names: list[str]) -> bool:
    """Nothing queued or running anywhere, every worker idle, every repository indexed,
    graphed and fresh as status reports it."""
    index = Queue(enqueue.INDEX_QUEUE, connection=cluster.redis)
    if index.count or StartedJobRegistry(enqueue.INDEX_QUEUE, connection=cluster.redis).count:
        return False
    if any(w.get_state() != "idle" for w in Worker.all(connection=cluster.redis)):
        return False
    graphed = conn.execute("SELECT count(*) FROM graph_state g JOIN repos r ON r.id = g.repo_id "
                           "WHERE r.name = ANY(%s)", (names,)).fetchone()
    if not graphed or graphed[0] != len(names):
        return False
    status = cluster.call(cluster.apis[0], "status", {})
    repos = {r["name"]: r for r in status["repos"]}
    return all(name in repos and repos[name]["index_status"] == "ready" and
               repos[name]["freshness"]["fresh"] for name in names)


def _repo_id(conn: psycopg.Connection, name: str) -> int:
    row = conn.execute("SELECT id FROM repos WHERE name = %s", (name,)).fetchone()
    assert row is not None, name
    return int(row[0])


def _rows(conn: psycopg.Connection, repo_id: int) -> dict[str, set[tuple[Any, ...]]]:
    return {table: set(conn.execute(sql, (repo_id,)).fetchall())  # type: ignore[arg-type]
            for table, sql in GRAPH_ROWS.items()}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_two_apis_and_three_workers_index_one_corpus_once_and_answer_alike(
        tmp_path: Path, settings: Settings, service_env: dict[str, str],
        conn: psycopg.Connection) -> None:
    corpus = _copy_corpus(tmp_path / "corpus")
    edited, same, other = (tmp_path / "repos" / name for name in ("alpha", "beta", "gamma"))
    for root in (edited, same, other):
        shutil.copytree(corpus, root)
    # gamma differs from the others: contents of its own beside the shared ones.
    (other / "json" / "decoder.py").write_text(
        (corpus / "json" / "decoder.py").read_text() + "\n\ndef gamma_only():\n    pass\n")
    shutil.rmtree(other / "dbm")

    run_dir = tmp_path / "run"  # no `codenav` folder here can shadow the installed packages
    run_dir.mkdir()
    token = subprocess.run([CODENAV, "token", "create", "--name", "scale", "--role", "write"],
                           env=service_env, cwd=run_dir, capture_output=True, text=True,
                           timeout=60, check=True)
    ports = [free_port(), free_port()]
    cluster = Cluster([f"http://127.0.0.1:{p}" for p in ports], token.stdout.strip(),
                      redis.Redis.from_url(settings.redis_url), settings)

    with ExitStack() as stack:
        for i, port in enumerate(ports):
            stack.enter_context(_process(
                [sys.executable, "-m", "codenav_api", "--no-migrate", "--host", "127.0.0.1",
                 "--port", str(port)], service_env, run_dir, tmp_path / f"api{i}.log"))
        workers = [stack.enter_context(_process(
            [sys.executable, "-m", "codenav_worker", "--name", f"scale-{i}"], service_env,
            run_dir, tmp_path / f"worker{i}.log")) for i in range(WORKERS)]
        for api in cluster.apis:
            _poll(lambda api=api: _ready(api), 60, f"{api}/readyz")
        _poll(lambda: len(Worker.all(connection=cluster.redis)) == WORKERS, 120,
              "three workers registered")
        stack.enter_context(_process([sys.executable, "-m", "codenav_watcher"], service_env,
                                     run_dir, tmp_path / "watcher.log"))

        # Three repositories at once, through both APIs; while they index, files change on
        # disk (the watcher turns that into path jobs) and a client asks for a path reindex.
        cluster.register(cluster.apis[0], edited)
        cluster.register(cluster.apis[1], same)
        cluster.register(cluster.apis[0], other)
        (edited / "json" / "extra.py").write_text(
            "from json.decoder import JSONDecoder\n\n\nclass StrictDecoder(JSONDecoder):\n"
            "    def decode(self, s):\n        return super().decode(s)\n")
        (edited / "html" / "parser.py").write_text(
            (corpus / "html" / "parser.py").read_text() + "\n\ndef alpha_only():\n    pass\n")
        shutil.rmtree(edited / "dbm")
        cluster.call(cluster.apis[1], "reindex", {"repo": "beta",
                                                  "paths": ["json", "http/client.py"]})
        names = ["alpha", "beta", "gamma"]
        _poll(lambda: _settled(cluster, conn, names), SETTLE_S, "the index to settle",
              interval=0.5)
        assert all(w.poll() is None for w in workers), "a worker died"

        # All three workers worked, and index runs of different repositories overlapped.
        by_worker = {w.name: w.successful_job_count for w in Worker.all(connection=cluster.redis)}
        assert all(count >= 1 for count in by_worker.values()), by_worker
        runs = conn.execute("SELECT repo_id, started_at, finished_at FROM index_runs "
                            "WHERE state = 'done'").fetchall()
        assert any(a[0] != b[0] and a[1] < b[2] and b[1] < a[2] for a in runs for b in runs), \
            "no two repositories were indexed at the same time"

        # Both APIs answer every tool identically, for every repository.
        for name in names:
            for tool, args in QUERIES:
                first, second = (_without_durations(cluster.call(api, tool, {**args, "repo": name}))
                                 for api in cluster.apis)
                assert first == second, f"{tool} {args} on {name}"
        answers = [_without_durations(cluster.call(api, "status", {})) for api in cluster.apis]
        assert answers[0] == answers[1]
        found = cluster.call(cluster.apis[0], "search", {"query": "StrictDecoder",
                                                         "repo": "alpha"})
        assert found["results"][0]["path"] == "json/extra.py"

        # A copy of the corpus indexed after the rest, the reference for beta, while alpha
        # changes again: the old content of the edited file, which no repository holds
        # any more, must be collected although two index runs overlap.
        alone = tmp_path / "repos" / "delta"
        shutil.copytree(corpus, alone)
        extra = edited / "json" / "extra.py"
        extra.write_text(extra.read_text() + "\n    def strict(self):\n        return True\n")
        # Asked for by a client too, so the wait below cannot end before the watcher saw it.
        cluster.call(cluster.apis[0], "reindex", {"repo": "alpha", "paths": ["json/extra.py"]})
        cluster.register(cluster.apis[1], alone)
        _poll(lambda: _settled(cluster, conn, [*names, "delta"]), SETTLE_S, "delta to settle",
              interval=0.5)
        beta, delta = _repo_id(conn, "beta"), _repo_id(conn, "delta")
        beta_rows, delta_rows = _rows(conn, beta), _rows(conn, delta)
        for table in GRAPH_ROWS:
            assert beta_rows[table] == delta_rows[table], table
        assert beta_rows["graph_edges"] and beta_rows["graph_imports"]
        for tool, args in QUERIES:
            if tool in ("read", "outline", "definition", "references", "dependencies",
                        "skeleton"):
                via = [_without_durations(cluster.call(api, tool, {**args, "repo": repo}), repo)
                       for api, repo in zip(cluster.apis, ("beta", "delta"), strict=True)]
                assert via[0] == via[1], f"{tool} {args}: beta and delta differ"

    # Each content was parsed once, however many workers met it at once: the files counted
    # as parsed are at most the contents stored (the first version of json/extra.py has since
    # been collected) and the files of a batch that share a content with another file of it.
    parsed = conn.execute("SELECT sum(files_parsed) FROM index_runs").fetchone()
    stored = conn.execute("SELECT count(*) FROM contents").fetchone()
    twins = conn.execute("SELECT coalesce(sum(n - 1), 0) FROM (SELECT repo_id, content_id, "
                         "count(*) AS n FROM files GROUP BY 1, 2) AS t").fetchone()
    assert parsed and stored and twins
    assert parsed[0] <= stored[0] + 1 + twins[0], (parsed, stored, twins)

    # No row exists twice, and nothing is left behind.
    for what, sql in DUPLICATES.items():
        assert conn.execute(sql).fetchall() == [], what  # type: ignore[arg-type]

    # Each repository's index is what its disk holds.
    for name, root in (("alpha", edited), ("beta", same), ("gamma", other), ("delta", alone)):
        on_disk = {e.path: git_blob_sha((root / e.path).read_bytes())
                   for e in walk(root, settings.max_file_bytes, IgnoreRules.for_root(root)).files}
        indexed = dict(conn.execute("SELECT path, sha FROM files WHERE repo_id = %s",
                                    (_repo_id(conn, name),)).fetchall())
        assert indexed == on_disk, name

    # Each content holds exactly the rows one parse of it gives: nothing doubled or lost
    # when workers stored the same contents at the same time.
    limits = ChunkLimits(settings.chunk_max_lines, settings.chunk_overlap_lines,
                         settings.text_window_lines)
    contents = conn.execute(
        "SELECT c.id, c.language, c.body, (SELECT count(*) FROM chunks WHERE content_id = c.id),"
        " (SELECT count(*) FROM symbols WHERE content_id = c.id),"
        " (SELECT count(*) FROM refs WHERE content_id = c.id),"
        " (SELECT count(*) FROM file_terms WHERE content_id = c.id) FROM contents c").fetchall()
    assert len(contents) > 100
    for content_id, language, body, chunks, symbols, refs, terms in contents:
        parsed = parse_file(body, language, limits)
        facts = parse_file(body, language)
        expected_refs = 0 if facts.error else len(
            extract(body, language, facts.symbols, facts.tree, facts.src))
        assert (chunks, symbols, refs, terms) == (
            len(parsed.chunks), len(parsed.symbols), expected_refs,
            len(file_term_counts(body))), content_id
