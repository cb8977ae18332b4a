"""Edges are rebuilt incrementally in the index run that sees a change: the changed files
and every file whose resolution depends on them are re-resolved, so the graph never points
at a vanished declaration, and always equals what a full rebuild would give."""

from __future__ import annotations

import gc
import sys
from pathlib import Path

import psycopg
import pytest

from codenav import repos
from codenav.config import Settings
from codenav.graph import build
from codenav.graph.context import Context
from codenav.graph.scope import ScopeBuilder
from codenav.index import reconcile
from tests.core.graph.expected import snapshot
from tests.core.graph.test_fixture_graphs import index_fixture


def _edges_to(conn: psycopg.Connection, repo: repos.Repo, path: str) -> list[tuple]:
    return conn.execute("SELECT src_path, line, dst_qual FROM graph_edges WHERE repo_id = %s "
                        "AND dst_path = %s ORDER BY 1, 2", (repo.id, path)).fetchall()


def _calls(conn: psycopg.Connection, repo: repos.Repo, src: str) -> set[tuple[int, str, str]]:
    return set(conn.execute("SELECT line, dst_path, dst_qual FROM graph_edges WHERE repo_id = %s "
                            "AND src_path = %s AND kind = 'call'", (repo.id, src)).fetchall())


def _same_as_full_rebuild(conn: psycopg.Connection, repo: repos.Repo) -> None:
    incremental = snapshot(conn, repo.id)
    build.update(conn, repo.default_tree, [], [], full=True)
    assert snapshot(conn, repo.id) == incremental


def test_editing_a_callees_file_re_resolves_the_edges_of_its_importers(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    repo = index_fixture(settings, conn, "python", tmp_path)
    root = Path(repo.root)
    assert (18, "app/util.py", "helper") in _calls(conn, repo, "app/models.py")
    util = root / "app" / "util.py"
    original = util.read_text()
    util.write_text(original.replace("def helper(", "def tidy("))
    reconcile.reconcile(settings, repo.id, ["app/util.py"])
    assert not any(q == "helper" for _s, _l, q in _edges_to(conn, repo, "app/util.py"))
    assert not any(dst == "app/util.py" and q == "helper"
                   for _l, dst, q in _calls(conn, repo, "app/models.py"))
    _same_as_full_rebuild(conn, repo)
    util.write_text(original)
    reconcile.reconcile(settings, repo.id, ["app/util.py"])
    assert (18, "app/util.py", "helper") in _calls(conn, repo, "app/models.py")
    _same_as_full_rebuild(conn, repo)


def test_a_deleted_file_leaves_no_edge_pointing_at_it(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    repo = index_fixture(settings, conn, "python", tmp_path)
    assert _edges_to(conn, repo, "app/repo.py")
    (Path(repo.root) / "app" / "repo.py").unlink()
    reconcile.reconcile(settings, repo.id, ["app/repo.py"])
    assert _edges_to(conn, repo, "app/repo.py") == []
    imports = conn.execute("SELECT spec, dst_path FROM graph_imports WHERE repo_id = %s AND "
                           "src_path = 'app/service.py' AND spec = '.repo'",
                           (repo.id,)).fetchall()
    assert imports == [(".repo", None)]  # now external: nothing indexed answers it
    ranked = conn.execute("SELECT count(*) FROM graph_files WHERE repo_id = %s AND "
                          "path = 'app/repo.py'", (repo.id,)).fetchone()
    assert ranked == (0,)
    _same_as_full_rebuild(conn, repo)


def test_a_new_file_resolves_the_imports_that_were_waiting_for_it(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    repo = index_fixture(settings, conn, "python", tmp_path)
    root = Path(repo.root)
    (root / "app" / "audit.py").write_text(
        "from .journal import Journal\n\n\ndef audit():\n    return Journal().write()\n")
    reconcile.reconcile(settings, repo.id, ["app/audit.py"])
    assert _calls(conn, repo, "app/audit.py") == set()
    (root / "app" / "journal.py").write_text(
        "class Journal:\n    def write(self):\n        return 1\n")
    reconcile.reconcile(settings, repo.id, ["app/journal.py"])
    assert _calls(conn, repo, "app/audit.py") == {(5, "app/journal.py", "Journal"),
                                                  (5, "app/journal.py", "Journal.write")}
    _same_as_full_rebuild(conn, repo)


def test_a_class_added_to_a_java_package_is_seen_by_its_peers_without_an_import(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    repo = index_fixture(settings, conn, "java", tmp_path)
    base = Path(repo.root) / "src/main/java/com/acme/model"
    (base / "Teller.java").write_text(
        "package com.acme.model;\n\npublic class Teller {\n"
        "    public void serve(Account account) {\n        Receipt.print(account);\n    }\n}\n")
    reconcile.reconcile(settings, repo.id, ["src/main/java/com/acme/model/Teller.java"])
    teller = "src/main/java/com/acme/model/Teller.java"
    assert not any(q == "Receipt.print" for _l, _d, q in _calls(conn, repo, teller))
    (base / "Receipt.java").write_text(
        "package com.acme.model;\n\npublic class Receipt {\n"
        "    public static void print(Entity entity) {\n    }\n}\n")
    reconcile.reconcile(settings, repo.id, ["src/main/java/com/acme/model/Receipt.java"])
    assert (5, "src/main/java/com/acme/model/Receipt.java", "Receipt.print") in \
        _calls(conn, repo, teller)
    _same_as_full_rebuild(conn, repo)


def test_a_declaration_added_anywhere_in_a_swift_module_is_seen_by_the_whole_module(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """A Swift module is its build target's files in every directory below it: a new file
    in Util/ is seen by its peers elsewhere in the module, and by a file of another module
    that imports it."""
    repo = index_fixture(settings, conn, "swift", tmp_path)
    root = Path(repo.root)
    store = "Sources/Shop/MemoryStore.swift"
    server = "Sources/App/Server.swift"
    (root / store).write_text((root / store).read_text().replace(
        "        items[item.key] = item\n", "        items[item.key] = item\n"
        "        Audit.record(item)\n"))
    (root / server).write_text((root / server).read_text().replace(
        "        let cache = MemoryStore()\n", "        let cache = MemoryStore()\n"
        "        Audit.record(Item(key: key, price: 0))\n"))
    reconcile.reconcile(settings, repo.id, [store, server])
    assert not any(q == "Audit.record" for _l, _d, q in _calls(conn, repo, store))
    audit = "Sources/Shop/Log/Audit.swift"
    (root / "Sources/Shop/Log").mkdir()
    (root / audit).write_text("public enum Audit {\n"
                              "    public static func record(_ item: Item) {}\n}\n")
    reconcile.reconcile(settings, repo.id, [audit])
    assert (10, audit, "Audit.record") in _calls(conn, repo, store)  # same module, no import
    assert (13, audit, "Audit.record") in _calls(conn, repo, server)  # `import Shop`
    _same_as_full_rebuild(conn, repo)


def test_the_files_of_one_package_share_one_member_list_and_release_their_rows(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """A build holds every file's scope: a package of n files must not cost n lists of its
    n files, and a file's own import rows go once the build has them."""
    repo = index_fixture(settings, conn, "java", tmp_path)
    index, content_ids = build.load_index(conn, repo.default_tree)
    ctx = Context(index, build._DbLoader(conn, repo.default_tree, content_ids), set(index.files))
    scopes = ScopeBuilder(ctx)
    model = sorted(p for p in index.files if p.startswith("src/main/java/com/acme/model/"))
    assert len(model) >= 3
    groups = [g for p in model for g in scopes.scope(p).groups if g[0][0] == "package"]
    assert len(groups) == len(model)
    assert {len(members) for _key, _how, members in groups} == {len(model)}
    assert len({id(members) for _key, _how, members in groups}) == 1
    service = next(p for p in index.files if "/service/" in p and p.endswith(".java"))
    scope = scopes.scope(service)
    assert scope.imports
    scope.release_rows()
    assert not scope.imports and not scope.import_edges
    assert scopes.scope(service) is scope and scope.groups  # its names stay for other files


def test_a_files_locals_are_read_for_its_batch_and_let_go_after_while_fields_stay(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """A full build holds every file's facts; the typed locals of functions (most of them)
    only while the file's batch is resolved. Whoever asks for them otherwise reads them."""
    repo = index_fixture(settings, conn, "java", tmp_path)
    index, content_ids = build.load_index(conn, repo.default_tree)
    ledger = "src/main/java/com/acme/service/Ledger.java"
    ctx = Context(index, build._DbLoader(conn, repo.default_tree, content_ids), set(index.files))
    ctx.preload(sorted(index.files))
    facts = ctx.facts(ledger)
    assert facts.locals is None
    assert [v.qualifier for v in facts.variables[("Ledger", "auditor")]] == ["Auditor"]
    assert all(ctx.symbols(ledger).kind(scope) == "class" for scope, _name in facts.variables)
    local = ctx.variables(ledger, "Ledger.open", "account")  # read when asked
    assert local is not None and [v.qualifier for v in local] == ["Account"]
    ctx.drop_locals([ledger])
    assert facts.locals is None
    ctx.ensure_locals([ledger])
    assert facts.locals is not None and ("Ledger.open", "account") in facts.locals
    assert ctx.variables(ledger, "Ledger", "auditor") == facts.variables[("Ledger", "auditor")]


def test_changing_a_base_class_re_resolves_calls_inherited_through_a_subclass(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    repo = index_fixture(settings, conn, "python", tmp_path)
    models = Path(repo.root) / "app" / "models.py"
    service = "app/service.py"
    assert (16, "app/models.py", "Base.save") in _calls(conn, repo, service)
    models.write_text(models.read_text().replace("def save(self)", "def persist(self)"))
    reconcile.reconcile(settings, repo.id, ["app/models.py"])
    assert not any(q == "Base.save" for _l, _d, q in _calls(conn, repo, service))
    _same_as_full_rebuild(conn, repo)


def test_a_run_that_changes_nothing_leaves_the_graph_alone(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    repo = index_fixture(settings, conn, "go", tmp_path)
    before = conn.execute("SELECT built_at FROM graph_state WHERE repo_id = %s",
                          (repo.id,)).fetchone()
    reconcile.reconcile(settings, repo.id)
    after = conn.execute("SELECT built_at FROM graph_state WHERE repo_id = %s",
                         (repo.id,)).fetchone()
    assert before == after


@pytest.mark.parametrize(("family", "comment"), [("python", "# note"), ("java", "// note"),
                                                 ("ts", "// note"), ("go", "// note")])
def test_an_edit_that_keeps_a_files_interface_re_resolves_that_file_alone(
        family: str, comment: str, settings: Settings, conn: psycopg.Connection,
        tmp_path: Path) -> None:
    """Lines move and bodies change, but what other files resolve into it is the same: the
    file is re-resolved alone, and the graph still equals a full rebuild."""
    repo = index_fixture(settings, conn, family, tmp_path)
    row = conn.execute("SELECT dst_path, count(*) FROM graph_links WHERE repo_id = %s "
                       "GROUP BY dst_path ORDER BY 2 DESC, 1 LIMIT 1", (repo.id,)).fetchone()
    assert row is not None and row[1] >= 2, "the fixture has a file others depend on"
    target = Path(repo.root) / row[0]
    text = target.read_text()
    lines = text.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.strip() and
                 not line.lstrip().startswith(("package", "import", "from", "#!", "//", "#")))
    target.write_text("".join(lines[:first]) + f"{comment}: moved down\n\n" + "".join(lines[first:])
                      + f"\n{comment}: the end\n")
    reconcile.reconcile(settings, repo.id, [row[0]])
    resolved = conn.execute("SELECT files_resolved FROM graph_state WHERE repo_id = %s",
                            (repo.id,)).fetchone()
    assert resolved == (1,)
    _same_as_full_rebuild(conn, repo)


_GRAPH_ROWS = {
    "imports": "SELECT src_path, ord, spec, line, dst_path FROM graph_imports WHERE repo_id = %s"
               " ORDER BY 1, 2, 3, 4, 5",
    "edges": "SELECT src_path, ord, line, src_scope, kind, dst_path, dst_qual, verified, how"
             " FROM graph_edges WHERE repo_id = %s ORDER BY 1, 2, 3, 4, 5, 6, 7, 8, 9",
    "links": "SELECT src_path, dst_path, imports, refs FROM graph_links WHERE repo_id = %s"
             " ORDER BY 1, 2, 3, 4",
}


def _graph_rows(conn: psycopg.Connection, repo: repos.Repo) -> dict[str, list[tuple]]:
    return {name: conn.execute(sql, (repo.id,)).fetchall() for name, sql in _GRAPH_ROWS.items()}


def test_a_build_written_batch_by_batch_while_the_next_is_resolved_stores_the_same_graph(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A full build writes each batch in a thread while it resolves the next: with batches of
    two files (many in flight one after another) it stores exactly what one batch stores."""
    repo = index_fixture(settings, conn, "java", tmp_path)
    build.update(conn, repo.default_tree, [], [], full=True)
    whole = _graph_rows(conn, repo)
    assert whole["edges"] and len({r[0] for r in whole["edges"]}) > 4
    monkeypatch.setattr(build, "BATCH", 2)
    summary = build.update(conn, repo.default_tree, [], [], full=True)
    assert summary is not None and summary.edges == len(whole["edges"])
    assert _graph_rows(conn, repo) == whole


def test_a_batch_that_fails_to_be_written_fails_the_build_and_keeps_the_graph_it_had(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer thread's error reaches the build, which rolls back and marks the graph
    stale (``build.update``'s rule for any failure): readers keep the previous graph whole,
    and nothing is written after the transaction ends."""
    repo = index_fixture(settings, conn, "java", tmp_path)
    before = _graph_rows(conn, repo)
    assert before["edges"]
    real_write = build._write
    calls = []

    def failing(*args: object) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise psycopg.errors.DiskFull("no space left for the second batch")
        real_write(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(build, "BATCH", 2)
    monkeypatch.setattr(build, "_write", failing)
    assert build.update(conn, repo.default_tree, [], [], full=True) is None
    assert len(calls) == 2
    assert not build.is_current(conn, repo.default_tree)
    assert _graph_rows(conn, repo) == before


def test_facts_a_first_index_leaves_for_later_equal_those_of_one_parse(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """The graph job extracts a first index's deferred facts from the stored body and
    symbols (no second structure pass): the rows equal those the chunker's own parse gives,
    for every language of the polyglot fixture."""
    from codenav.graph import facts
    from codenav.graph.extract import extract
    from codenav.parse.chunker import parse_file
    from tests.polyglot import make_polyglot

    repo = repos.register(conn, str(make_polyglot(tmp_path)), "polyglot")
    reconcile.reconcile(settings, repo.id, defer_graph=True)
    ids = [r[0] for r in conn.execute("SELECT content_id FROM pending_facts ORDER BY 1")]
    assert facts.fill_batch(conn, ids) == len(ids)
    languages = set()
    for cid, language, body in conn.execute(
            "SELECT id, language, body FROM contents WHERE id = ANY(%s)", (ids,)).fetchall():
        parsed = parse_file(body, language)
        expected = [] if parsed.error else extract(body, language, parsed.symbols,
                                                   parsed.tree, parsed.src)
        stored = conn.execute("SELECT kind, name, qualifier, alias, line, scope FROM refs "
                              "WHERE content_id = %s ORDER BY ord", (cid,)).fetchall()
        assert stored == [tuple(r) for r in expected], language
        if expected:
            languages.add(language)
    assert len(languages) >= 7, languages


def test_a_build_runs_no_cycle_collection_and_leaves_the_collector_on(
        settings: Settings, conn: psycopg.Connection, tmp_path: Path) -> None:
    """A build holds millions of long-lived objects on a large repository: a collection
    of cycles would walk them all, again and again as they grow (``proc.collector_paused``)."""
    repo = index_fixture(settings, conn, "java", tmp_path)
    collections: list[str] = []
    building = build._update.__code__

    def seen(phase: str, info: dict[str, int]) -> None:
        frame = sys._getframe(1)
        while frame is not None:  # a collection started inside the build
            if frame.f_code is building:
                collections.append(phase)
            frame = frame.f_back

    threshold = gc.get_threshold()
    gc.set_threshold(1)  # a collection at every new container object, were it on
    gc.callbacks.append(seen)
    try:
        summary = build.update(conn, repo.default_tree, [], [], full=True)
    finally:
        gc.callbacks.remove(seen)
        gc.set_threshold(*threshold)
    assert summary is not None and summary.edges > 0
    assert collections == [] and gc.isenabled()
