"""Embedding a whole repository on CPU (issue 18's embedding budget). Not a test: it prints
numbers, each measured in this run.

One cold index of CORPUS in a fresh store, then the embed job's own loop (``embed_backlog``
in slices of the worker's budget) against a real embedder process started with
``--tokens``. Printed:

- chunks (all, those too short to get a vector, those to embed), and seconds until every
  chunk of a source file had a vector (tests and fixtures are embedded after them;
  find_files leaves them out unless a query asks), then until all
  chunks had one; measured at the end of each slice, so within ``--slice`` seconds;
- on a sample of the same chunk texts, the bare model's chunks/s with the model's own token
  limit and with ``--tokens``, alternated, in this process: what the cut buys.

    python bench/embed_budget_bench.py /path/to/kafka --tokens 128
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

import bench_queries as bq
from benchkit import stores
from codenav import repos
from codenav.config import Settings
from codenav.db import queries as q
from codenav.embed.client import EmbedClient
from codenav.embed.vectors import embed_backlog, find_model
from codenav.index import reconcile
from codenav.jobs.tasks import EMBED_BUDGET_S
from codenav.lang import conventions
from codenav_embedder.settings import EmbedderSettings
from embed_pipeline_bench import start_embedder


def source_left(conn: psycopg.Connection, tree: int, model: int, tests: list[str]) -> bool:
    return bool(conn.execute(q.EMBED_BACKLOG, {"tree": tree, "model": model, "k": 1,
                                               "later": tests, "after": b""}).fetchall())


def bare_rates(texts: list[str], tokens: int, rounds: int, batch_size: int
               ) -> dict[str, Any]:
    """chunks/s of the bare model on ``texts`` at its own limit and at ``tokens``."""
    from codenav_embedder import encoder

    es = EmbedderSettings.load(env={})
    full = encoder.load(es.model_name(), backend=es.backend, threads=es.threads,
                        cache_dir=es.cache_path())
    cut = encoder.load(es.model_name(), backend=es.backend, threads=es.threads,
                       cache_dir=es.cache_path(), max_tokens=tokens)
    times: dict[int, list[float]] = {full.max_tokens: [], cut.max_tokens: []}
    for enc in (full, cut):
        enc.encode(texts[:64], batch_size=batch_size)  # warm up
    for _ in range(rounds):
        for enc in (full, cut):
            started = time.perf_counter()
            enc.encode(texts, batch_size=batch_size)
            times[enc.max_tokens].append(time.perf_counter() - started)
    prepared = full.prepare(texts)
    longer = sum(cut_off or n > cut.max_tokens
                 for cut_off, n in zip(prepared.truncated, prepared.tokens, strict=True))
    return {"sample": len(texts), "longer_than_cut": longer,
            **{f"bare_chunks_per_s_{t}": round(len(texts) / statistics.median(s), 1)
               for t, s in times.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--tokens", type=int, default=EmbedderSettings.max_tokens,
                        help="CODENAV_EMBED_MAX_TOKENS for the embedder (default: the "
                             "embedder's default; 0: the model's own limit)")
    parser.add_argument("--batch-size", type=int, default=EmbedderSettings.batch_size,
                        help="CODENAV_EMBED_BATCH_SIZE for the embedder and the bare model")
    parser.add_argument("--slice", type=float, default=EMBED_BUDGET_S,
                        help="seconds per embed call (default: the embed job's budget)")
    parser.add_argument("--sample", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", default="bench/out/embed_budget_bench.json")
    args = parser.parse_args()
    root = args.corpus.resolve()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODENAV_")}
    result: dict[str, Any] = {"corpus": str(root), "batch_size": args.batch_size}
    with tempfile.TemporaryDirectory(prefix="codenav-embed-budget-") as tmp:
        base = Path(tmp)
        embedder, url = start_embedder({**env, "CODENAV_EMBED_MAX_TOKENS": str(args.tokens),
                                         "CODENAV_EMBED_BATCH_SIZE": str(args.batch_size)})
        try:
            with stores(base / "home", queue=False) as started:
                settings = Settings.load(env={"CODENAV_DATABASE_URL": started.pg.url,
                                              "CODENAV_HOME": str(base / "home"),
                                              "CODENAV_ALLOWED_ROOTS": str(root)},
                                         dotenv=Path("/nonexistent"))
                with psycopg.connect(started.pg.url, autocommit=True) as conn:
                    repo = repos.register(conn, str(root), root.name)
                    began = time.perf_counter()
                    reconcile.reconcile(settings, repo.id)
                    result["index_s"] = round(time.perf_counter() - began, 1)
                    tree = repo.default_tree
                    paths = [str(p) for (p,) in conn.execute(q.TREE_PATHS, (tree,))]
                    tests = [p for p in paths if conventions.is_test(p)]
                    client = EmbedClient(url)
                    card = client.info()
                    result.update(model=card.name, files=len(paths), test_files=len(tests))
                    conn.execute(q.CHUNK_TEXTS_BACKFILL, (tree,))
                    texts = [t for _, t in conn.execute(q.EMBED_BACKLOG, {
                        "tree": tree, "model": -1, "k": 10**9, "later": [],
                        "after": b""}).fetchall()]
                    row = conn.execute(bq.BENCH_TREE_CHUNKS, (tree,)).fetchone()
                    result.update(chunks_all=row[0] if row else 0,
                                  chunks_short=row[1] if row else 0, chunks=len(texts))
                    embedded, source_s = 0, None
                    began = time.perf_counter()
                    while True:
                        run = embed_backlog(conn, client, repo.id, budget_s=args.slice)
                        embedded += run.embedded
                        now = time.perf_counter() - began
                        model = find_model(conn, card.name)
                        if source_s is None and model is not None \
                                and not source_left(conn, tree, model.id, tests):
                            source_s = now
                            print(f"source files embedded after {now:.0f}s", flush=True)
                        if run.remaining == 0:
                            break
                        if not run.embedded:  # the embedder refused or stalled: no figure
                            raise RuntimeError(f"no progress with {run.remaining} chunks left")
                    whole_s = time.perf_counter() - began
                    client.close()
                    result.update(embedded=embedded, source_embedded_s=round(source_s or 0, 1),
                                  all_embedded_s=round(whole_s, 1),
                                  chunks_per_s=round(embedded / whole_s, 1))
        finally:
            os.killpg(embedder.pid, signal.SIGTERM)
            embedder.wait(30)
    sample = random.Random(7).sample(texts, min(args.sample, len(texts)))
    result.update(bare_rates(sample, args.tokens or 10**6, args.rounds, args.batch_size))
    for key, value in result.items():
        print(f"{key:<28} {value}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
