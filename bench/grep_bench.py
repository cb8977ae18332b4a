"""grep benchmark. Not a test: it prints what it measured in this run.

For a corpus (default: the Python standard library; ``--corpus PATH``), indexed through the
real worker and API processes (as ``index_bench.py`` runs them) in a store of its own, or
an already running stack (``--home DIR``: its ``stack.json``), over HTTP:

- **literal**: p50/p99 of ``grep`` for identifiers sampled from the corpus' symbols, and
  for a few common words (many candidate files: the trigram index helps least);
- **regex**: p50/p99 of regexes with a required literal (``name\\s*\\(``) and without one;
- **pathological**: patterns that backtrack exponentially in a backtracking engine, or
  scan every file: the wall time of each (bounded by ``CODENAV_GREP_TIMEOUT_MS``), whether
  it stopped at its budget, and literal greps timed meanwhile from another connection
  against the same greps with nothing else running (paired, same process);
- the trigram index: its size and the time to rebuild it (``REINDEX``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

import bench_queries as bq
from benchkit import stop_services, stores
from codenav import repos
from codenav.auth import create_token
from codenav.config import Settings
from codenav.jobs import enqueue
from index_bench import percentile, start_services, wait_graph, wait_job, wait_ready

COMMON_WORDS = ("import", "return", "public", "self", "error", "string")
PATHOLOGICAL = (
    r"(a|aa)*b$",          # exponential for a backtracking engine
    r"(x+x+)+y",           # the classic catastrophic nesting
    r"(\w+\s?)*;$",        # nested quantifiers over most of every line
    r".*.*.*=.*.*;",       # no literal: every file is scanned
    r"[a-z]{3}[0-9]{3}[a-z]{3}",
)


def _symbols(conn: psycopg.Connection, repo_id: int, n: int) -> list[str]:
    rows = conn.execute(bq.BENCH_SYMBOLS, (repo_id,)).fetchall()
    names = sorted({r[0] for r in rows if r[0].isidentifier()})
    return random.Random(7).sample(names, min(n, len(names)))


def _time(http: httpx.Client, body: dict[str, Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    r = http.post("/v1/grep", json=body)
    took = (time.perf_counter() - started) * 1000
    if r.status_code != 200:
        raise RuntimeError(f"grep {body} answered {r.status_code}: {r.text[:300]}")
    return took, r.json()


def _summary(times: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(times), 1),
            "p99_ms": round(percentile(times, 99), 1), "n": len(times)}


def measure(url: str, token: str, repo: str, database_url: str) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    with psycopg.connect(database_url, autocommit=True) as conn:
        repo_id = next(r.id for r in repos.list_repos(conn) if r.name == repo)
        names = _symbols(conn, repo_id, 100)
        size = conn.execute(bq.BENCH_TRGM_SIZE).fetchone()
        started = time.perf_counter()
        conn.execute(bq.BENCH_TRGM_REINDEX)
        reindex_s = time.perf_counter() - started
    out: dict[str, Any] = {"trigram_index_mb": round(int(size[0]) / 1e6, 1) if size else None,
                           "trigram_reindex_s": round(reindex_s, 1)}
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        _time(http, {"pattern": names[0], "repo": repo})  # warm the connection
        literal = [_time(http, {"pattern": n, "repo": repo}) for n in names]
        out["literal"] = _summary([t for t, _ in literal])
        out["literal"]["median_files_matched"] = statistics.median(
            a["files_matched"] for _, a in literal)
        common = [_time(http, {"pattern": w, "repo": repo}) for w in COMMON_WORDS]
        out["literal_common_words"] = {w: {"ms": round(t, 1), "matches": a["matches_total"],
                                           "exact": a["total_exact"],
                                           "candidates": a["files_candidate"]}
                                       for w, (t, a) in zip(COMMON_WORDS, common, strict=True)}
        regex = [_time(http, {"pattern": rf"\b{n}\s*\(", "regex": True, "repo": repo})
                 for n in names[:50]]
        out["regex_with_literal"] = _summary([t for t, _ in regex])
        scans = [_time(http, {"pattern": rf"[A-Z]\w*{n[-2:]}\b", "regex": True, "repo": repo})
                 for n in names[:10]]
        out["regex_without_trigram"] = _summary([t for t, _ in scans])
        patho = {}
        for pattern in PATHOLOGICAL:
            took, answer = _time(http, {"pattern": pattern, "regex": True, "repo": repo})
            patho[pattern] = {"ms": round(took, 1), "timed_out": bool(answer.get("timed_out")),
                              "files_searched": answer["files_searched"],
                              "files_candidate": answer["files_candidate"]}
        out["pathological"] = patho
        out["pathological_max_ms"] = max(p["ms"] for p in patho.values())
    out["while_pathological"] = _concurrent(url, headers, repo, names[:40])
    return out


def _concurrent(url: str, headers: dict[str, str], repo: str,
                names: list[str]) -> dict[str, Any]:
    """Literal greps alone, then the same ones while pathological greps run back to back
    on another connection: the rest of the service keeps answering."""
    stop = threading.Event()
    ran = []

    def hammer() -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            while not stop.is_set():
                for pattern in PATHOLOGICAL:
                    ran.append(_time(http, {"pattern": pattern, "regex": True,
                                            "repo": repo})[0])

    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        alone = [_time(http, {"pattern": n, "repo": repo})[0] for n in names]
        thread = threading.Thread(target=hammer, daemon=True)
        thread.start()
        time.sleep(0.2)
        loaded = [_time(http, {"pattern": n, "repo": repo})[0] for n in names]
        health = [_health(http) for _ in range(10)]
        stop.set()
        thread.join(120)
    return {"literal_alone": _summary(alone), "literal_meanwhile": _summary(loaded),
            "readyz_meanwhile_p50_ms": round(statistics.median(health), 1),
            "pathological_run_meanwhile": len(ran)}


def _health(http: httpx.Client) -> float:
    started = time.perf_counter()
    http.get("/readyz")
    return (time.perf_counter() - started) * 1000


def own_stack(root: Path, name: str) -> dict[str, Any]:
    """Index ``root`` in a store of its own with a real worker and API, then measure."""
    base = Path(tempfile.mkdtemp(prefix="grep-bench-"))
    with stores(base / "store") as st:
        pg, rd = st.pg, st.rd
        assert rd is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
        env.update({"CODENAV_DATABASE_URL": pg.url, "CODENAV_REDIS_URL": rd.url,
                    "CODENAV_HOME": str(base / "home"), "PYTHONUNBUFFERED": "1",
                    "CODENAV_LOG_LEVEL": "WARNING", "CODENAV_ALLOWED_ROOTS": str(root)})
        settings = Settings.load(env=env, dotenv=Path("/nonexistent"))
        api, worker, url = start_services(base / "logs", env, env)
        try:
            wait_ready(url)
            with psycopg.connect(pg.url, autocommit=True) as conn:
                token, _ = create_token(conn, "bench", "admin")
                repo = repos.register(conn, str(root), name)
                r = enqueue.connect_redis(settings)
                started = time.perf_counter()
                info = wait_job(r, enqueue.request_full(r, settings, repo.id))
                index_s = time.perf_counter() - started
                # a first index leaves the trigram index to the graph job: measure grep
                # once the index holds every body, as it does from then on
                wait_graph(r, info)
                graph_s = time.perf_counter() - started
                conn.execute("VACUUM (ANALYZE)")
            result = {"cold_index_s": round(index_s, 1),
                      "with_graph_and_trigram_index_s": round(graph_s, 1),
                      **measure(url, token, name, pg.url)}
        finally:
            stop_services([worker, api])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", help="directory to index (default: the standard library)")
    parser.add_argument("--home", help="measure the running stack of this CODENAV_HOME "
                        "instead (its repository --repo, indexed already)")
    parser.add_argument("--repo", help="with --home: the repository (default: the only one)")
    parser.add_argument("--out", default="bench/out/grep_bench.json")
    args = parser.parse_args()
    if args.home:
        stack = json.loads((Path(args.home) / "stack.json").read_text())
        with psycopg.connect(stack["database_url"], autocommit=True) as conn:
            names = [r.name for r in repos.list_repos(conn)]
        name = args.repo or names[0]
        result = {"corpus": name, "stack": args.home,
                  **measure(stack["url"], stack["token"], name, stack["database_url"])}
    else:
        root = Path(args.corpus or sysconfig.get_paths()["stdlib"]).resolve()
        result = {"corpus": root.name, "root": str(root), **own_stack(root, root.name)}
    text = json.dumps(result, indent=2)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
