"""Visibility is part of every query: a static check of db/queries.py and its callers.

Every statement the query path runs (functions that answer a ``Caller`` or within a
``Scope``, in the core and the API) must carry the caller's visible set,
``%(visible)s``, or be listed in ``queries.GLOBAL`` (statements that return no repository's
rows). A new query without the predicate fails here, before any test data could show it.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import codenav
import codenav_api
from codenav.db import queries as q

SYSTEM_FUNCTIONS = {
    # codenav's own jobs (workers), never a caller's request
    ("codenav.embed.vectors", "embed_backlog"), ("codenav.embed.vectors", "ensure_model"),
    ("codenav.embed.vectors", "ensure_index"), ("codenav.embed.vectors", "store_vectors"),
    ("codenav.embed.vectors", "_embed_tree"), ("codenav.embed.vectors", "_embed_pass"),
    # the watcher and operator list every repository; the worker loads one by id
    ("codenav.repos", "list_repos"), ("codenav.repos", "get"),
    # registration writes into the caller's team (admin.register decides which)
    ("codenav.repos", "register"), ("codenav.repos", "team_id"),
    # deletion runs on a scope resolved through visibility; REPO_DELETE itself is scoped,
    # the rest is garbage collection of what no repository references
    ("codenav.repos", "delete"), ("codenav.repos", "collect"),
    # the visible set is computed here (REPOS_VISIBLE; REPO_LIST for the operator only)
    ("codenav.access", "visible_repos"),
    # refs: the worker's sync of one repository from its git, moving refs, collecting trees
    ("codenav.refs", "sync"), ("codenav.refs", "_adopt_git_source"),
    ("codenav.refs", "_index_and_move"), ("codenav.refs", "progress"), ("codenav.refs", "move"),
    ("codenav.refs", "collect_trees"),
    # publishing: the worker's publish job, the CI job's own store writing a bundle, a new
    # repository created in the caller's team (as registration), and an upload merged into
    # the caller's team (it writes rows and answers counts)
    ("codenav.publish", "build"), ("codenav.publish", "_build_one"),
    ("codenav.publish", "write_bundle"), ("codenav.publish", "_create"),
    ("codenav.publish", "receive"),
    # overlays: the worker's overlay job (one overlay by id, its base, its uploads) and the
    # expiry; dropping an overlay's tree runs once the overlay was found through
    # visibility (OVERLAY_DROP is scoped), the rest is garbage collection
    ("codenav.overlays", "build_pending"), ("codenav.overlays", "build_one"),
    ("codenav.overlays", "_store_files"), ("codenav.overlays", "_contents"),
    ("codenav.overlays", "expire"), ("codenav.overlays", "_delete_tree"),
    ("codenav.overlays", "after_index"), ("codenav.overlays", "_graph"),
    ("codenav.overlays", "watch"), ("codenav.overlays", "_version"),
    ("codenav.overlays", "_stored_changes"),
}
MODULES = [m.name for pkg in (codenav, codenav_api)
           for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")]


def _takes_caller(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for arg in [*fn.args.args, *fn.args.kwonlyargs]:
        if arg.annotation is not None and any(
                isinstance(n, ast.Name) and n.id in ("Scope", "Caller")
                for n in ast.walk(arg.annotation)):
            return True
    return False


def _query_path() -> dict[tuple[str, str], set[str]]:
    """(module, function) -> the ``q.NAME`` statements it uses, for every function of a
    module on the query path (one with a function taking a Caller or a Scope)."""
    out: dict[tuple[str, str], set[str]] = {}
    for name in MODULES:
        module = importlib.import_module(name)
        source = inspect.getsourcefile(module)
        if source is None:  # compiled (codenav._native: the word loop): no SQL in it
            assert name == "codenav._native", f"{name}: no Python source to check"
            continue
        tree = ast.parse(Path(source).read_text())
        functions = [n for n in ast.walk(tree)
                     if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
        if not any(_takes_caller(f) for f in functions):
            continue
        for fn in functions:
            used = {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)
                    and isinstance(n.value, ast.Name) and n.value.id == "q"
                    and not isinstance(getattr(q, n.attr, None), int)}  # a number, no SQL
            if used:
                out[(name, fn.name)] = used
    return out


def _text(statement: str) -> str:
    value = getattr(q, statement)
    return inspect.getsource(value) if callable(value) else str(value)


def test_every_statement_on_the_query_path_carries_the_visible_set() -> None:
    found = _query_path()
    assert ("codenav.search.chunks", "lexical_ranking") in found  # the walk sees the query path
    missing = []
    for (module, function), used in sorted(found.items()):
        if (module, function) in SYSTEM_FUNCTIONS:
            continue
        for statement in sorted(used):
            # helpers, not statements: an index's name; a working tree's form of a statement
            # (its own statement is checked where it is named, and the next test checks
            # that the form keeps the predicate)
            if statement in q.GLOBAL or statement in ("hnsw_index_name", "flat_tree"):
                continue
            if "%(visible)s" not in _text(statement):
                missing.append(f"{module}.{function}: {statement}")
    assert not missing, "statements without the visibility predicate:\n" + "\n".join(missing)


def test_a_working_trees_form_of_a_statement_keeps_its_visible_set() -> None:
    """``flat_tree`` replaces only the layered tree functions: every predicate stays."""
    changed = 0
    for name in dir(q):
        statement = getattr(q, name)
        if not name.isupper() or not isinstance(statement, str):
            continue
        flat = q.flat_tree(statement)
        changed += flat != statement
        assert flat.count("%(visible)s") == statement.count("%(visible)s"), name
        assert not any(f"{fn}(%(tree)s)" in flat for fn in
                       ("tree_files", "tree_ranks", "tree_links", "tree_imports",
                        "tree_edges")), name
    assert changed > 40  # the statements that read a tree through its layers


def test_the_visible_set_is_always_an_int_array_bound_by_name() -> None:
    for name in dir(q):
        if name.isupper() and isinstance(getattr(q, name), str):
            text = getattr(q, name)
            assert text.count("%(visible)s") == text.count("ANY(%(visible)s::int[])"), name


def test_the_global_list_names_only_existing_statements_without_the_predicate() -> None:
    for name in q.GLOBAL:
        assert isinstance(getattr(q, name, None), str), name
        assert "%(visible)s" not in getattr(q, name), name


def test_the_check_catches_a_query_path_statement_without_the_predicate() -> None:
    """The check above is not vacuous: a query-path function that ran a statement without
    the predicate would be reported."""
    assert "%(visible)s" not in q.REPO_LIST
    assert "REPO_LIST" not in q.GLOBAL
    assert ("codenav.access", "visible_repos") in SYSTEM_FUNCTIONS
    found = _query_path()
    assert "REPO_LIST" in found[("codenav.access", "visible_repos")]
