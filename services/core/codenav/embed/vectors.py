"""Embeddings in the index: models, the backlog, storing vectors, coverage, k-NN.

Vectors are keyed by (model, sha256 of the embedded text); ``chunk_texts`` maps each
(chunk, path) to its text hash, shared by every tree that holds the file. Each model has its
own id and dimension, and its own HNSW index, so switching models never mixes dimensions.
Lexical search never waits for any of this: embedding runs on its own, lower-priority queue
after a file's chunks are committed, a tree's source files before its tests.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

import psycopg

from codenav.access import Scope
from codenav.db import queries as q
from codenav.embed.client import EmbedClient
from codenav.errors import ConfigError, Interrupted
from codenav.lang import conventions

log = logging.getLogger("codenav.embed.vectors")

HNSW_MIN_ROWS = 1000
"""The HNSW index of a model is built when a repository's first bulk load is done and at
least this many vectors exist (building on a full table is much faster than growing it row
by row; below this an exact scan is fast anyway)."""
HNSW_EARLY_ROWS = 20_000
"""...or, during a long first load, once this many exist, so exact scans never get slow
meanwhile..."""
HNSW_EARLY_BACKLOG = 100_000
"""...but only while at least this many texts are still to embed. Every vector stored once
the index exists also grows it, on the cores the embedder needs: on 2 cores Kafka's 59,853
vectors took 379 s with the index built at 20,000 and 340 s with it built at the end
(bench/README.md). A load that ends within minutes builds it at its end."""
NEAREST_SCAN = 4
"""A k-NN first reads k times this many of the model's nearest vectors (in every repository)
and keeps its own tree's chunks among them; when fewer than k pass, it walks the index
until k do."""
BATCH = 128
"""Texts per request to the embedder."""
FETCH = 512
"""Texts per backlog page (sorted by length, then sent as requests of BATCH)."""
IN_FLIGHT = 2
"""Requests at the embedder at once (one more waits, ready to go)."""


@dataclass(frozen=True)
class Model:
    id: int
    name: str
    dim: int


def ensure_model(conn: psycopg.Connection, name: str, dim: int) -> Model:
    """The registry row of a model; refuses a model whose dimension changed under the same
    name (its vectors would not be comparable)."""
    row = conn.execute(q.EMBED_MODEL_GET, (name,)).fetchone()
    if row is None:
        row = conn.execute(q.EMBED_MODEL_INSERT, (name, dim)).fetchone() or \
            conn.execute(q.EMBED_MODEL_GET, (name,)).fetchone()
    assert row is not None
    if int(row[1]) != dim:
        raise ConfigError(f"embedding model {name!r} now returns {dim}-dimensional vectors, "
                          f"but the index holds {row[1]}-dimensional ones under that name",
                          hint="give the model a new name (CODENAV_EMBED_MODEL)")
    return Model(int(row[0]), name, dim)


def model_names(conn: psycopg.Connection) -> list[str]:
    """Every embedding model the store knows, oldest first."""
    return [str(r[0]) for r in conn.execute(q.EMBED_MODEL_NAMES).fetchall()]


def find_model(conn: psycopg.Connection, name: str) -> Model | None:
    row = conn.execute(q.EMBED_MODEL_GET, (name,)).fetchone()
    return Model(int(row[0]), name, int(row[1])) if row else None


def vector_literal(vec: list[float]) -> str:
    return "[" + ",".join(f"{v:.6g}" for v in vec) + "]"


def ensure_index(conn: psycopg.Connection, model: Model, backlog: int = 0) -> bool:
    """Build the model's HNSW index once enough vectors exist: when nothing is left to
    embed, or early in a long load (``backlog``: texts still to embed); True if it exists."""
    if conn.execute(q.INDEX_EXISTS, (q.hnsw_index_name(model.id),)).fetchone():
        return True
    count = conn.execute(q.EMBED_MODEL_COUNT, (model.id,)).fetchone()
    rows = int(count[0]) if count else 0
    if backlog == 0 and rows < HNSW_MIN_ROWS:
        return False
    if backlog and (rows < HNSW_EARLY_ROWS or backlog < HNSW_EARLY_BACKLOG):
        return False
    started = time.monotonic()
    conn.execute(q.create_hnsw(model.id, model.dim))
    log.info("built HNSW index for %s (%s vectors) in %.1fs", model.name, rows,
             time.monotonic() - started)
    return True


def store_vectors(conn: psycopg.Connection, model: Model, text_hashes: list[bytes],
                  vectors: list[list[float]]) -> None:
    """Write vectors keyed by text hash in one transaction (COPY into a staging table;
    a vector another worker stored meanwhile is kept)."""
    conn.execute(q.EMBED_STAGE_CREATE)
    with conn.transaction():
        with conn.cursor().copy(q.EMBED_STAGE_COPY) as copy:
            for text_hash, vec in zip(text_hashes, vectors, strict=True):
                copy.write_row((text_hash, vector_literal(vec)))
        conn.execute(q.EMBED_STAGE_INSERT, (model.id,))


@dataclass
class EmbedRun:
    embedded: int = 0
    remaining: int = 0
    seconds: float = 0.0


def embed_backlog(conn: psycopg.Connection, client: EmbedClient, repo_id: int,
                  budget_s: float = 30.0, stop: threading.Event | None = None) -> EmbedRun:
    """Embed what the repository's trees still lack (its default tree first), for up to
    ``budget_s`` seconds; the caller re-queues the rest. Texts are shared by address, so a
    ref that changed ten files costs ten files' texts. ``stop`` ends it early
    (``Interrupted``) without waiting for the requests in flight: what was stored so far
    stays, the rest is embedded next time."""
    started = time.monotonic()
    info = client.info()
    model = ensure_model(conn, info.name, info.dim)
    run = EmbedRun()
    # A round fetches FETCH texts, sorts them by length (so the embedder's batches pad
    # little) and keeps two requests of BATCH in flight (the embedder merges them, and never
    # waits for this side to store vectors or fetch more).
    pool = ThreadPoolExecutor(max_workers=IN_FLIGHT, thread_name_prefix="embed")
    trees = conn.execute(q.EMBED_TREES, {"repo": repo_id, "model": model.id}).fetchall()
    try:
        for tree_id, version in trees:
            if time.monotonic() - started >= budget_s:
                break
            conn.execute(q.CHUNK_TEXTS_BACKFILL, (tree_id,))
            if _embed_tree(conn, client, model, int(tree_id), pool, run, started, budget_s,
                           stop):
                conn.execute(q.EMBED_TREE_DONE, {"model": model.id, "tree": tree_id,
                                                 "version": version})
    finally:
        pool.shutdown(wait=stop is None or not stop.is_set(), cancel_futures=True)
    left = conn.execute(q.EMBED_TREES, {"repo": repo_id, "model": model.id}).fetchall()
    for tree_id, _version in left[:1]:  # the next tree's backlog (the job runs again for it)
        total, done = coverage_counts(conn, model, {"tree": tree_id, "visible": [repo_id]})
        run.remaining = max(total - done, 1)
    if run.remaining == 0 or run.embedded:
        ensure_index(conn, model, backlog=run.remaining)
    run.seconds = time.monotonic() - started
    return run


def _embed_tree(conn: psycopg.Connection, client: EmbedClient, model: Model, tree_id: int,
                pool: ThreadPoolExecutor, run: EmbedRun, started: float, budget_s: float,
                stop: threading.Event | None) -> bool:
    """Embed one tree's backlog within the budget; True when none is left. Source files go
    first, tests and fixtures after them: find_files leaves those out unless a query asks
    for them, so its hybrid answers are whole about half-way through a repository like
    Kafka, where tests hold half the chunks."""
    paths = conn.execute(q.TREE_PATHS, (tree_id,)).fetchall()
    tests = [str(path) for (path,) in paths if conventions.is_test(str(path))]
    passes = [tests, []] if tests else [[]]
    return all(_embed_pass(conn, client, model, tree_id, later, pool, run, started, budget_s,
                           stop) for later in passes)


def _embed_pass(conn: psycopg.Connection, client: EmbedClient, model: Model, tree_id: int,
                later: list[str], pool: ThreadPoolExecutor, run: EmbedRun, started: float,
                budget_s: float, stop: threading.Event | None) -> bool:
    """Embed the tree's backlog outside the paths ``later``; True when none is left.

    The backlog is read a page at a time in text-hash order, each page after the last hash
    read, while the requests of the page before are in flight: the embedder always has the
    next request waiting (IN_FLIGHT sent, one more queued) and never idles while this side
    queries or stores. Within a page, texts go shortest first, so batches pad little."""
    after = b""
    parts: deque[list[tuple[bytes, str]]] = deque()
    pending: deque[tuple[list[tuple[bytes, str]], Future[list[list[float]]]]] = deque()
    exhausted = False
    try:
        while True:
            while not exhausted and len(pending) <= IN_FLIGHT \
                    and time.monotonic() - started < budget_s:
                if not parts:
                    rows = conn.execute(q.EMBED_BACKLOG, {
                        "tree": tree_id, "model": model.id, "k": FETCH, "later": later,
                        "after": after}).fetchall()
                    if not rows:
                        exhausted = True
                        break
                    after = bytes(rows[-1][0])
                    rows.sort(key=lambda r: len(r[1]))
                    parts.extend(rows[i:i + BATCH] for i in range(0, len(rows), BATCH))
                part = parts.popleft()
                pending.append((part, pool.submit(client.embed, [t for _, t in part])))
            if not pending:
                if not exhausted:
                    return False  # the budget is spent; the job runs again for the rest
                # the end of the hash order: done, unless texts came in below the hashes
                # already passed (another worker's backfill of the same tree)
                if not conn.execute(q.EMBED_BACKLOG, {"tree": tree_id, "model": model.id,
                                                      "k": 1, "later": later,
                                                      "after": b""}).fetchall():
                    return True
                after, exhausted = b"", False
                continue
            part, future = pending.popleft()
            vectors = _result(future, stop)
            store_vectors(conn, model, [h for h, _ in part], vectors)
            run.embedded += len(part)
    finally:
        for _part, future in pending:
            future.cancel()


def _result(future: Future[list[list[float]]],
            stop: threading.Event | None) -> list[list[float]]:
    """The future's vectors; ``Interrupted`` as soon as ``stop`` is set."""
    while True:
        if stop is not None and stop.is_set():
            raise Interrupted("stopping: the embedding in flight is dropped")
        try:
            return future.result(timeout=0.2 if stop is not None else None)
        except FutureTimeout:
            continue


def coverage_counts(conn: psycopg.Connection, model: Model,
                    scoped: dict[str, Any]) -> tuple[int, int]:
    """(chunks, embedded chunks) of a tree; ``scoped``: its scope's parameters."""
    row = conn.execute(q.EMBED_COVERAGE, {**scoped, "model": model.id}).fetchone()
    chunks = conn.execute(q.EMBED_REPO_CHUNKS, scoped).fetchone()
    total = max(int(row[0]) if row else 0, int(chunks[0]) if chunks else 0)
    return total, int(row[1]) if row else 0


def coverage(conn: psycopg.Connection, model: Model | None, scope: Scope) -> dict[str, Any]:
    """How many of the scope's chunks that get a vector (``min_lines`` lines or more) have
    one of ``model``."""
    if model is None:
        row = conn.execute(scope.sql(q.EMBED_REPO_CHUNKS), scope.params()).fetchone()
        return {"model": None, "embedded": 0, "total": int(row[0]) if row else 0,
                "ratio": 0.0, "min_lines": q.EMBED_MIN_LINES}
    total, done = coverage_counts(conn, model, scope.params())
    return {"model": model.name, "dim": model.dim, "embedded": done, "total": total,
            "backlog": total - done, "ratio": round(done / total, 4) if total else 1.0,
            "min_lines": q.EMBED_MIN_LINES}


def knn(conn: psycopg.Connection, model: Model, vector: list[float], scope: Scope,
        params: dict[str, Any], k: int) -> list[tuple[int, str, float]]:
    """(chunk id, path, cosine distance) of the k nearest chunks in the repository.

    First the ``k * NEAREST_SCAN`` nearest vectors of the model (``q.semantic_nearest``),
    then, if fewer than k of them are the tree's and pass the filters, the walk of the whole
    index (``q.semantic_search``). Both scan the HNSW index iteratively: without that it
    yields at most ``hnsw.ef_search`` (40) candidates before the repo/language/path
    filters, so a small repo in a big index, or any k above 40, came back short. Relaxed
    order, re-sorted here by distance, then path and line (equal texts have equal vectors:
    a store's row order must not rank them)."""
    conn.execute(q.SESSION_VECTOR_SETUP)
    args = {"q": vector_literal(vector), **scope.params(), "k": k, **params}
    rows = conn.execute(q.semantic_nearest(model.id, model.dim, scope.flat),
                        {**args, "scan": k * NEAREST_SCAN}).fetchall()
    if len(rows) < k:  # a filter, or other repositories' vectors, took most of them
        rows = conn.execute(q.semantic_search(model.id, model.dim, scope.flat),
                            args).fetchall()
    rows.sort(key=lambda r: (float(r[2]), str(r[1]), int(r[3])))
    return [(int(r[0]), str(r[1]), float(r[2])) for r in rows]
