"""Each language family's fixture repository, indexed for real, has exactly the graph its
hand-written ``expected.json`` describes: definitions, resolved imports, verified edges
(with how each resolved), inheritance and potential edges. Verified edges are also scored
(precision and recall per language), which must be perfect on the fixtures."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import psycopg
import pytest

from codenav import repos
from codenav.config import Settings
from codenav.index import reconcile
from tests.core.graph.expected import differences, load, precision_recall, snapshot

FIXTURES = Path(__file__).parents[2] / "fixtures" / "graph"
FAMILIES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").is_file())


def index_fixture(settings: Settings, conn: psycopg.Connection, family: str,
                  dest: Path) -> repos.Repo:
    root = dest / family
    shutil.copytree(FIXTURES / family, root, ignore=shutil.ignore_patterns("expected.json"))
    repo = repos.register(conn, str(root), family)
    reconcile.reconcile(settings, repo.id)
    return repo


def test_every_language_family_has_a_fixture() -> None:
    assert FAMILIES == ["c", "csharp", "go", "java", "php", "python", "ruby", "rust", "swift",
                        "ts"]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_graph_of_a_fixture_is_exactly_the_expected_one(
        family: str, settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    repo = index_fixture(settings, conn, family, tmp_path)
    actual = snapshot(conn, repo.id)
    expected = load(FIXTURES / family / "expected.json")
    assert differences(expected, actual) == {}, json.dumps(differences(expected, actual),
                                                           indent=1)


@pytest.mark.parametrize("family", FAMILIES)
def test_verified_edges_have_perfect_precision_and_recall_per_language(
        family: str, settings: Settings, conn: psycopg.Connection, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    repo = index_fixture(settings, conn, family, tmp_path)
    scores = precision_recall(load(FIXTURES / family / "expected.json"),
                              snapshot(conn, repo.id))
    with capsys.disabled():
        for language, s in scores.items():
            print(f"\n  {family:>7} {language:<11} expected {s['expected']:>3} found "
                  f"{s['found']:>3} precision {s['precision']:.3f} recall {s['recall']:.3f}",
                  end="")
    assert scores
    for language, s in scores.items():
        assert (s["precision"], s["recall"]) == (1.0, 1.0), (language, s)


@pytest.mark.parametrize("family", ["java", "python", "ts"])
def test_a_first_index_that_defers_graph_facts_ends_with_the_expected_graph(
        family: str, settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """What the worker does for a first index: store contents without their graph facts,
    then the graph job fills the facts and builds the graph."""
    from codenav.graph import build, facts

    root = tmp_path / family
    shutil.copytree(FIXTURES / family, root, ignore=shutil.ignore_patterns("expected.json"))
    repo = repos.register(conn, str(root), family)
    summary = reconcile.reconcile(settings, repo.id, defer_graph=True)
    assert summary.graph_deferred
    pending = conn.execute("SELECT count(*) FROM pending_facts").fetchone()
    refs = conn.execute("SELECT count(*) FROM refs").fetchone()
    assert pending is not None and pending[0] > 0 and refs == (0,)
    assert facts.fill_pending(settings, conn, repo.default_tree) == pending[0]
    assert facts.fill_pending(settings, conn, repo.default_tree) == 0  # claimed once
    build.update(conn, repo.default_tree, [], [])
    expected = load(FIXTURES / family / "expected.json")
    actual = snapshot(conn, repo.id)
    assert differences(expected, actual) == {}, json.dumps(differences(expected, actual),
                                                           indent=1)


def test_a_batch_of_deferred_facts_waits_for_a_collection_and_keeps_one_from_starting(
        settings: Settings, conn: psycopg.Connection, db_url: str, tmp_path: Path) -> None:
    """A content's refs have no foreign key, so a batch of deferred facts takes the writers'
    lock for its transaction: a collection in progress holds the batch back until it ends,
    and a collection that comes while a batch is written skips."""
    import threading

    from codenav.db import queries as q
    from codenav.graph import facts

    root = tmp_path / "java"
    shutil.copytree(FIXTURES / "java", root, ignore=shutil.ignore_patterns("expected.json"))
    repo = repos.register(conn, str(root), "java")
    reconcile.reconcile(settings, repo.id, defer_graph=True)
    ids = [r[0] for r in conn.execute("SELECT content_id FROM pending_facts ORDER BY 1")]
    assert ids
    filled: list[int] = []
    with psycopg.connect(db_url) as collector, psycopg.connect(db_url) as writer:
        with collector.transaction():
            assert collector.execute(q.GC_TRY_LOCK).fetchone() == (True,)
            batch = threading.Thread(target=lambda: filled.append(facts.fill_batch(writer, ids)))
            batch.start()
            batch.join(timeout=1.0)
            assert batch.is_alive() and not filled  # held back by the collection
        batch.join(timeout=30)
        assert filled == [len(ids)]
        with writer.transaction():  # a batch in its transaction: no collection starts
            writer.execute(q.WRITERS_SHARED_XACT_LOCK)
            assert not reconcile.collect_garbage(collector)


def test_deferred_facts_filled_by_the_pool_leave_refs_with_current_statistics(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """The graph build reads refs right after the deferred facts are filled: the fill
    analyzes refs, so its plans see the rows just written (without it, on Apache Kafka, every
    batch of the build scanned all of refs in parallel: 11 s of the build's 22)."""
    import dataclasses

    from codenav.graph import facts

    root = tmp_path / "many"
    root.mkdir()
    for i in range(facts.INLINE_LIMIT + 20):
        (root / f"mod{i}.py").write_text(
            f"from mod{(i + 1) % 7} import f{(i + 1) % 7}\n\n\ndef f{i}(x):\n"
            f"    return f{(i + 1) % 7}(x) + {i}\n")
    repo = repos.register(conn, str(root), "many")
    reconcile.reconcile(settings, repo.id, defer_graph=True)
    pooled = dataclasses.replace(settings, parse_processes=2)
    assert facts.fill_pending(pooled, conn, repo.default_tree) >= facts.INLINE_LIMIT
    counted = conn.execute("SELECT count(*) FROM refs").fetchone()
    estimated = conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'refs'").fetchone()
    assert counted is not None and estimated is not None
    assert estimated[0] == counted[0] > 0
