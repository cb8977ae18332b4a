"""Building a tree's graph from its per-content facts, fully or incrementally.

``update`` runs inside an index run, after the files transaction, with the repository
lock held. A full build resolves every file; an incremental one resolves the changed
files and every file whose resolution may depend on them (importers, files referencing
them, subclasses, package siblings of new files, files whose unresolved imports may now
resolve), so no edge is left pointing at a vanished declaration. Rows are replaced in one
transaction (readers keep the previous graph until it commits), written with COPY.

A tree may be *layered* on another (``trees.base_id``, a commit tree derived from a known
one, with perhaps one more layered tree between them, ``mid_id``): it reads the rows below
it for every path it does not hold itself (``graph_layer``).
An incremental build of a layered tree compares what it resolved with the rows it read and
keeps its own rows only for the files whose rows differ, so a commit that changes ten files
stores the graph of about those ten. When its own share grows past ``FULL_SHARE`` the tree
is flattened (it copies the rest and stops depending on its base); a full build does so too.
"""

from __future__ import annotations

import logging
import posixpath
import threading
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import psycopg

from codenav.db import queries as q
from codenav.errors import Interrupted
from codenav.graph import centrality
from codenav.graph.context import CLASS_LIKE, FACT_KINDS, BaseRow, Context, Fact, FactRow, SymRow
from codenav.graph.modules import CONFIG_RE, ModuleIndex, is_config
from codenav.graph.patterns import PATTERNS
from codenav.graph.resolve import Resolver
from codenav.graph.scope import EdgeRow, ImportRow, ScopeBuilder
from codenav.proc import collector_paused
from codenav.versions import GRAPH_VERSION

log = logging.getLogger("codenav.graph")

BATCH = 400
"""Files resolved per batch (their references are read together)."""
PRELOAD_STEP = 64
"""Files whose symbols and facts a build loads at once (a stoppable one looks for a stop
between steps). Not all at once: the client holds a whole result until it is read, and
Apache Kafka's facts in one result left 64 MB more resident for the rest of the build."""
FULL_SHARE = 0.3
"""An incremental change touching more than this share of the files rebuilds everything."""
MAX_SUBCLASS_DEPTH = 4
RANK_MIN_LINKS = 8
RANK_SHARE = 0.005
"""Ranks (PageRank, a search prior) are computed again when files appear or go, or when
more links between files changed than this share of the files (at least RANK_MIN_LINKS):
a few links in a large graph do not move them (a second and more of Python on 6,000
files, at every commit)."""
RANK_TOLERANCE = 0.01
"""A layered tree keeps a file's rank of its own only when its prior (0..1) moved more than
this from its base's (or its importer count changed): ranks are a search prior."""


@dataclass
class GraphSummary:
    full: bool = False
    files: int = 0
    imports: int = 0
    edges: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase: load, resolve, write, rank."""
    kept: int = 0
    """Files a layered build resolved exactly as its base had them (no row of its own)."""

    def lap(self, phase: str, started: float) -> float:
        now = time.monotonic()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - started, 3)
        return now


@dataclass(frozen=True)
class _Tree:
    """The tree a build writes: its repository (every row carries it) and the tree its graph
    is layered on (None: it holds all its rows)."""

    id: int
    repo_id: int
    base_id: int | None


def _tree(conn: psycopg.Connection, tree_id: int) -> _Tree:
    row = conn.execute(q.GRAPH_TREE, (tree_id,)).fetchone()
    assert row is not None, f"no tree {tree_id}"
    return _Tree(tree_id, int(row[0]), int(row[1]) if row[1] is not None else None)



def _fetched(cur: psycopg.Cursor[Any], size: int = 2000) -> Iterator[Any]:
    """A statement's rows, taken from its result ``size`` at a time. Iterating the cursor
    itself costs a Python call and a result check per row: reading all 1.27 million refs of
    Apache Kafka took 1.0 s that way, 0.77 s like this."""
    while rows := cur.fetchmany(size):
        yield from rows


class _DbLoader:
    """Reads per-content rows by content id and hands them out per path (identical files
    share one content).

    Names, kinds and scopes repeat: on Apache Kafka 1.5 million string values of the facts a
    full build holds are 119,120 distinct strings, and 4.8 million of its references 127,622.
    Each is kept once (``self._strings``), for the build: a full build's peak memory fell
    from 506 to 376 MB."""

    def __init__(self, conn: psycopg.Connection, tree_id: int,
                 content_ids: dict[str, int]) -> None:
        self.conn = conn
        self.tree_id = tree_id
        self.content_ids = content_ids
        self._strings: dict[str, str] = {}

    def _by_content(self, paths: list[str]) -> tuple[list[int], dict[int, list[str]]]:
        owners: dict[int, list[str]] = {}
        for path in paths:
            cid = self.content_ids.get(path)
            if cid is not None:
                owners.setdefault(cid, []).append(path)
        return list(owners), owners

    def symbols(self, paths: list[str]) -> Iterable[SymRow]:
        ids, owners = self._by_content(paths)
        one = self._strings.setdefault
        for cid, name, qual, kind, depth, exported, line in \
                _fetched(self.conn.execute(q.GRAPH_SYMBOLS, (ids,))):
            row = (one(name, name), one(qual, qual), one(kind, kind), depth, exported, line)
            for path in owners[cid]:
                yield (path, *row)

    def facts(self, paths: list[str], kinds: tuple[str, ...]) -> Iterable[FactRow]:
        ids, owners = self._by_content(paths)
        one = self._strings.setdefault
        for cid, ord_, kind, name, qualifier, alias, line, scope in \
                _fetched(self.conn.execute(q.GRAPH_FACTS, (ids, list(kinds)))):
            row = (ord_, one(kind, kind), one(name, name), one(qualifier, qualifier),
                   one(alias, alias), line, one(scope, scope))
            for path in owners[cid]:
                yield (path, *row)

    def references(self, paths: list[str], kinds: tuple[str, ...]) -> dict[str, list[Fact]]:
        """The facts of these kinds of each path (perhaps none), in one statement, their
        strings kept once as ``facts`` keeps them. Without that, the strings resolution
        holds on to (names and qualifiers in its memos and edges) were each a copy: a full
        build of Apache Kafka peaked at 305 MB, against 234 MB."""
        ids, owners = self._by_content(paths)
        found: dict[str, list[Fact]] = {p: [] for p in paths}
        one = self._strings.setdefault
        for cid, ord_, kind, name, qualifier, alias, line, scope in \
                _fetched(self.conn.execute(q.GRAPH_FACTS, (ids, list(kinds)))):
            fact = Fact(ord_, one(kind, kind), one(name, name), one(qualifier, qualifier),
                        one(alias, alias), line, one(scope, scope))
            for path in owners[cid]:
                found[path].append(fact)
        return found

    def stored_bases(self, paths: list[str]) -> Iterable[BaseRow]:
        return self.conn.execute(q.GRAPH_STORED_BASES, (self.tree_id, paths)).fetchall()

    def definitions(self, names: list[str], languages: tuple[str, ...]) -> Iterable[SymRow]:
        return self.conn.execute(q.GRAPH_DEFINITIONS, (self.tree_id, [n.lower() for n in names],
                                                       list(languages))).fetchall()


def load_index(conn: psycopg.Connection, tree_id: int) -> tuple[ModuleIndex, dict[str, int]]:
    """The tree's module index, and each file's content id."""
    files: dict[str, tuple[str, str]] = {}
    content_ids: dict[str, int] = {}
    for path, language, package, content_id in conn.execute(q.GRAPH_FILES, (tree_id,)):
        files[path] = (language, package)
        content_ids[path] = content_id
    configs: dict[str, str] = {path: body for path, body in
                               conn.execute(q.GRAPH_CONFIGS, (tree_id, CONFIG_RE))}
    return ModuleIndex(files, configs), content_ids


def update(conn: psycopg.Connection, tree_id: int, changed: list[str], deleted: list[str],
           full: bool = False, current: bool = False,
           previous: dict[str, int] | None = None,
           stop: threading.Event | None = None) -> GraphSummary | None:
    """Bring the tree's graph in line with its files; None when nothing to do. ``current``:
    the graph it reads (its base's, for a tree just layered on it) is known to be up to
    date except for ``changed`` and ``deleted``, though the tree has no state of its own.
    ``previous``: the content each changed path had before; a file whose interface did not
    change (its declarations and what others follow into it) is re-resolved alone, not with
    every file that depends on it. ``stop``, once set, ends the build at the next file with
    ``Interrupted``, nothing written (an overlay's graph, made obsolete by a newer state).

    A failure is logged and leaves the graph marked stale (the next run rebuilds it): the
    graph is derived data, and search must not stop because one repository trips it."""
    try:
        with collector_paused():
            return _update(conn, tree_id, changed, deleted, full, current, previous, stop)
    except Interrupted:  # a stop, not a failure: the job runs again
        raise
    except Exception:  # derived data: recorded, and rebuilt by the next run
        log.exception("tree %s: graph build failed; marked stale for the next run", tree_id)
        mark_stale(conn, tree_id)
        return None


def mark_stale(conn: psycopg.Connection, tree_id: int) -> None:
    """Record that the tree's graph must be (re)built in full by the next update."""
    conn.execute(q.GRAPH_STATE_PUT, (0, False, 0, 0.0, tree_id))


def awaits_build(conn: psycopg.Connection, tree_id: int) -> bool:
    """Whether the tree's graph is marked for a full build (``mark_stale``) not yet done."""
    row = conn.execute(q.GRAPH_STATE_GET, (tree_id,)).fetchone()
    return row is not None and row[0] == 0


def is_current(conn: psycopg.Connection, tree_id: int) -> bool:
    """Whether the tree's graph was built by this code's resolver and is not stale."""
    row = conn.execute(q.GRAPH_STATE_GET, (tree_id,)).fetchone()
    return row is not None and row[0] == GRAPH_VERSION


def _update(conn: psycopg.Connection, tree_id: int, changed: list[str], deleted: list[str],
            full: bool, current: bool = False,
            previous: dict[str, int] | None = None,
            stop: threading.Event | None = None) -> GraphSummary | None:
    started = time.monotonic()
    stale = not current and not is_current(conn, tree_id)
    if not (full or stale or changed or deleted):
        if current:  # a tree layered on a current graph, with nothing of its own
            conn.execute(q.GRAPH_STATE_PUT, (GRAPH_VERSION, False, 0, 0.0, tree_id))
        return None
    tree = _tree(conn, tree_id)
    _checkpoint(stop)
    index, content_ids = load_index(conn, tree_id)
    _checkpoint(stop)
    structured = {p for p, (lang, _pkg) in index.files.items() if lang in PATTERNS}
    touched = set(changed) | set(deleted)
    if full or stale or any(is_config(p) for p in touched) or \
            len(touched) > FULL_SHARE * max(len(index.files), 1):
        full = True
        build_set = structured
    else:
        stable = _same_interface(conn, changed, previous or {}, content_ids)
        _checkpoint(stop)
        build_set = _affected(conn, tree_id, index, set(changed), set(deleted),
                              stable) & structured
        if not build_set and not deleted:
            conn.execute(q.GRAPH_STATE_PUT, (GRAPH_VERSION, False, 0, 0.0, tree_id))
            return None
    summary = GraphSummary(full=full, files=len(build_set))
    new_files = bool(set(changed) - _paths(conn, q.GRAPH_KNOWN, tree_id, sorted(changed)))
    _checkpoint(stop)
    _build(conn, tree, index, _DbLoader(conn, tree_id, content_ids), build_set,
           set(deleted), full, summary, new_files, stop)
    summary.seconds = time.monotonic() - started
    conn.execute(q.GRAPH_STATE_PUT, (GRAPH_VERSION, full, len(build_set), summary.seconds,
                                     tree_id))
    log.info("tree %s graph: %s build of %d files (%d kept), %d imports, %d edges in %.2fs %s",
             tree_id, "full" if full else "incremental", len(build_set), summary.kept,
             summary.imports, summary.edges, summary.seconds, summary.phases)
    return summary


def _same_interface(conn: psycopg.Connection, changed: list[str], previous: dict[str, int],
                    content_ids: dict[str, int]) -> set[str]:
    """The changed paths whose old and new contents have the same interface key (what
    other files' resolution reads of them)."""
    pairs = {p: (previous[p], content_ids[p]) for p in changed
             if p in previous and p in content_ids}
    if not pairs:
        return set()
    ids = sorted({i for pair in pairs.values() for i in pair})
    keys: dict[int, str | None] = {
        int(cid): key for cid, key in conn.execute(q.GRAPH_INTERFACE_KEYS, {
            "ids": ids, "kinds": list(FACT_KINDS), "classes": sorted(CLASS_LIKE)})}
    return {p for p, (old, new) in pairs.items()
            if keys.get(old) is not None and keys.get(old) == keys.get(new)}


def _affected(conn: psycopg.Connection, tree_id: int, index: ModuleIndex, changed: set[str],
              deleted: set[str], stable: set[str] | None = None) -> set[str]:
    """The files whose edges may change when ``changed`` and ``deleted`` do (a ``stable``
    file, changed without changing its interface, only its own)."""
    stable = stable or set()
    touched = sorted((changed - stable) | deleted)
    out = set(changed)
    if not touched:
        return out
    out |= _paths(conn, q.GRAPH_IMPORTERS, tree_id, touched)
    out |= _paths(conn, q.GRAPH_REFERRERS, tree_id, touched)  # potential edges included
    frontier = sorted(out - deleted - stable)
    for _ in range(MAX_SUBCLASS_DEPTH):  # subclasses of subclasses inherit members
        if not frontier:
            break
        found = _paths(conn, q.GRAPH_SUBCLASS_FILES, tree_id, frontier) - out
        out |= found
        frontier = sorted(found)
    known = _paths(conn, q.GRAPH_KNOWN, tree_id, sorted(changed - stable))
    new = sorted(changed - stable - known)
    if new:
        siblings = sorted({s for p in new for s in index.peers(p)})
        out |= set(siblings)  # package peers see new names without an import
        out |= _paths(conn, q.GRAPH_WILDCARD_IMPORTERS, tree_id, siblings)
        stems = sorted({posixpath.basename(p).split(".", 1)[0] for p in new} |
                       {posixpath.basename(posixpath.dirname(p)) for p in new} - {""})
        patterns = [f"%{_like(s)}%" for s in stems if len(s) > 1]
        if patterns:
            out |= _paths(conn, q.GRAPH_UNRESOLVED_IMPORTERS, tree_id, patterns)
    return out - deleted


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _paths(conn: psycopg.Connection, sql: str, tree_id: int, values: list[str]) -> set[str]:
    if not values:
        return set()
    return {r[0] for r in conn.execute(sql, (tree_id, values))}


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _checkpoint(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Interrupted("a newer state of the tree came in")


def _build(conn: psycopg.Connection, tree: _Tree, index: ModuleIndex, loader: _DbLoader,
           build_set: set[str], deleted: set[str], full: bool, summary: GraphSummary,
           new_files: bool, stop: threading.Event | None = None) -> None:
    lap = time.monotonic()
    ctx = Context(index, loader, build_set)
    scopes = ScopeBuilder(ctx)
    resolver = Resolver(ctx, scopes)
    wanted = sorted(index.files) if full else sorted(build_set)
    for start in range(0, len(wanted), PRELOAD_STEP):
        _checkpoint(stop)
        ctx.preload(wanted[start:start + PRELOAD_STEP])
    lap = summary.lap("load", lap)
    ordered = sorted(build_set)
    replaced = sorted(build_set | deleted)
    layered = tree.base_id is not None and not full
    old_links: set[tuple[str, str, int, int]] = set()
    if not full and replaced:
        old_links = {tuple(r) for r in conn.execute(q.GRAPH_PAIRS, (tree.id, replaced))}
    new_links: set[tuple[str, str, int, int]] = set()
    rewritten = set(deleted)
    with conn.transaction():
        if full:
            if tree.base_id is not None:  # it now holds every row itself
                _flatten(conn, tree)
            conn.execute(q.GRAPH_IMPORTS_CLEAR, (tree.id,))
            conn.execute(q.GRAPH_EDGES_CLEAR, (tree.id,))
            conn.execute(q.GRAPH_LINKS_CLEAR, (tree.id,))
        elif replaced and not layered:
            _drop(conn, tree.id, replaced)
        elif deleted:  # a layered tree hides its base's rows of the files it lost
            gone = sorted(deleted)
            _drop(conn, tree.id, gone)
            conn.execute(q.GRAPH_LAYER_ADD, (tree.id, gone))
        batches = list(_batches(ordered, BATCH))
        with _Writer(conn, tree) as writer:
            refs = _references(ctx, batches[0]) if batches else {}
            for at, batch in enumerate(batches):
                lap = summary.lap("load", lap)
                imports: list[ImportRow] = []
                edges: list[EdgeRow] = []
                for path in batch:
                    _checkpoint(stop)
                    scope = scopes.scope(path)
                    imports += scope.imports
                    edges += resolver.edges(path, refs[path])
                    scope.release_rows()  # other files still read the scope's names
                ctx.drop_locals(batch)
                lap = summary.lap("resolve", lap)
                if layered:
                    writer.settle()
                    imports, edges, differ = _differing(conn, tree.id, batch, imports, edges)
                    summary.kept += len(batch) - len(differ)
                    rewritten.update(differ)
                links = file_links(imports, edges)
                lap = summary.lap("resolve", lap)
                writer.settle()  # the previous batch is in: the connection is free again
                lap = summary.lap("write", lap)
                if at + 1 < len(batches):
                    refs = _references(ctx, batches[at + 1])
                    lap = summary.lap("load", lap)
                writer.write(imports, edges, links)  # while the next batch is resolved
                summary.imports += len(imports)
                summary.edges += len(edges)
                if not full:
                    new_links.update(links)
    lap = summary.lap("write", lap)
    del ctx, scopes, resolver, refs, loader  # the ranks reuse their memory (Kafka: 20 MB)
    if layered:  # the files left as they were kept their links
        old_links = {link for link in old_links if link[0] in rewritten}
        _flatten_if_large(conn, tree, len(index.files))
    moved = len(old_links ^ new_links)
    _checkpoint(stop)  # the edges stand; ranks are derived, and rebuilt next time
    if full or deleted or new_files or moved > max(RANK_MIN_LINKS, RANK_SHARE * len(index.files)):
        update_ranks(conn, tree.id)
    if full:
        conn.execute(q.GRAPH_ANALYZE)
    summary.lap("rank", lap)


def _references(ctx: Context, batch: list[str]) -> dict[str, list[Fact]]:
    """The call and type references of ``batch``'s files (each file's list, perhaps empty),
    and their locals read into ``ctx``: before the batch is resolved, as the connection is
    free then (the writer uses it while the batch is resolved)."""
    refs = ctx.loader.references(batch, ("call", "type"))
    ctx.ensure_locals(batch)
    return refs


class _Writer:
    """Writes a batch's rows (``_write``) in a thread of its own on the build's connection
    and transaction, while the caller resolves the next batch: the server stores one batch
    (COPY and index upkeep, as long as resolving it on Apache Kafka) on one core while
    Python resolves on the other. ``settle`` waits for the batch in flight and raises what
    it raised; the caller settles before it uses the connection itself (psycopg would make
    it wait anyway), and leaving the block settles, so nothing is written after the
    transaction ends."""

    def __init__(self, conn: psycopg.Connection, tree: _Tree) -> None:
        self.conn = conn
        self.tree = tree
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="graph-write")
        self._pending: Future[None] | None = None

    def write(self, imports: list[ImportRow], edges: list[EdgeRow],
              links: list[tuple[str, str, int, int]]) -> None:
        self.settle()
        self._pending = self._pool.submit(_write, self.conn, self.tree, imports, edges, links)

    def settle(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if self._pending is not None:
                wait([self._pending])  # a batch in flight ends before the transaction does
            if exc[0] is None:
                self.settle()
        finally:
            self._pool.shutdown(wait=True)


def _drop(conn: psycopg.Connection, tree_id: int, paths: list[str]) -> None:
    conn.execute(q.GRAPH_IMPORTS_DELETE, (tree_id, paths))
    conn.execute(q.GRAPH_EDGES_DELETE, (tree_id, paths))
    conn.execute(q.GRAPH_LINKS_DELETE, (tree_id, paths))


def _differing(conn: psycopg.Connection, tree_id: int, batch: list[str],
               imports: list[ImportRow], edges: list[EdgeRow]
               ) -> tuple[list[ImportRow], list[EdgeRow], list[str]]:
    """A layered build keeps, of what it resolved for ``batch``, only the files whose rows
    differ from the rows the tree reads now (its own, or its base's); those become its own
    (replacing any it had) and the rest is left as it is. Returns the rows to write and the
    files they are of."""
    def grouped(rows: Iterable[tuple[Any, ...]]) -> dict[str, set[tuple[Any, ...]]]:
        out: dict[str, set[tuple[Any, ...]]] = {}
        for row in rows:
            out.setdefault(row[0], set()).add(tuple(row))
        return out

    new_imports, new_edges = grouped(imports), grouped(edges)
    old_imports = grouped(conn.execute(q.GRAPH_IMPORT_ROWS, (tree_id, batch)).fetchall())
    old_edges = grouped(conn.execute(q.GRAPH_EDGE_ROWS, (tree_id, batch)).fetchall())
    differ = [p for p in batch if new_imports.get(p, set()) != old_imports.get(p, set())
              or new_edges.get(p, set()) != old_edges.get(p, set())]
    if differ:
        _drop(conn, tree_id, differ)
        conn.execute(q.GRAPH_LAYER_ADD, (tree_id, differ))
    keep = set(differ)
    return [r for r in imports if r[0] in keep], [r for r in edges if r[0] in keep], differ


def _flatten_if_large(conn: psycopg.Connection, tree: _Tree, n_files: int) -> None:
    """A layered tree that holds more than FULL_SHARE of its files' rows itself copies the
    rest and stops depending on its base (reads stay one index probe per tree)."""
    own = max(int((conn.execute(q.GRAPH_LAYER_SIZE, (tree.id,)).fetchone() or (0,))[0]),
              int((conn.execute(q.FILE_LAYER_SIZE, (tree.id,)).fetchone() or (0,))[0]))
    if own <= FULL_SHARE * max(n_files, 1):
        return
    with conn.transaction():
        _flatten(conn, tree)
    log.info("tree %s: flattened (%s of %s files were its own)", tree.id, own, n_files)


def _flatten(conn: psycopg.Connection, tree: _Tree) -> None:
    """Copy what a layered tree reads below itself (files, ranks, graph rows) into its own
    rows: it stops depending on its base. The trees it is the mid of are flattened first
    (they read its own rows as partial ones). In the caller's transaction."""
    for (dependent,) in conn.execute(q.TREES_ON_MID, (tree.id,)).fetchall():
        _flatten(conn, _tree(conn, int(dependent)))
    conn.execute(q.TREE_FLATTEN_FILES, {"tree": tree.id})
    conn.execute(q.GRAPH_FLATTEN, {"tree": tree.id})
    conn.execute(q.FILE_LAYER_CLEAR, (tree.id,))
    conn.execute(q.GRAPH_LAYER_CLEAR, (tree.id,))
    conn.execute(q.GRAPH_UNLAYER, (tree.id,))


def file_links(imports: list[ImportRow],
               edges: list[EdgeRow]) -> list[tuple[str, str, int, int]]:
    """(src, dst, imports, references) for each pair of different files linked by an import
    or a verified reference."""
    statements: dict[tuple[str, str], set[int]] = {}
    references: dict[tuple[str, str], int] = {}
    for src, ord_, _spec, _line, dst in imports:
        if dst is not None and dst != src:
            statements.setdefault((src, dst), set()).add(ord_)
    for src, _ord, _line, _scope, kind, dst, _qual, verified, _how in edges:
        if verified and dst != src and kind not in ("import", "reexport"):
            references[(src, dst)] = references.get((src, dst), 0) + 1
    pairs = set(statements) | set(references)
    return sorted((src, dst, len(statements.get((src, dst), ())),
                   references.get((src, dst), 0)) for src, dst in pairs)


def _write(conn: psycopg.Connection, tree: _Tree, imports: list[ImportRow],
           edges: list[EdgeRow], links: list[tuple[str, str, int, int]]) -> None:
    key = (tree.repo_id, tree.id)
    with conn.cursor() as cur:
        if imports:
            with cur.copy(q.GRAPH_IMPORTS_COPY) as copy:
                copy.set_types(q.GRAPH_IMPORTS_TYPES)
                for src, ord_, spec, line, dst in imports:
                    copy.write_row((*key, src, ord_, spec, line, dst))
        if edges:
            with cur.copy(q.GRAPH_EDGES_COPY) as copy:
                copy.set_types(q.GRAPH_EDGES_TYPES)
                for edge in edges:
                    copy.write_row((*key, *edge))
        if links:
            with cur.copy(q.GRAPH_LINKS_COPY) as copy:
                copy.set_types(q.GRAPH_LINKS_TYPES)
                for link in links:
                    copy.write_row((*key, *link))


def update_ranks(conn: psycopg.Connection, tree_id: int) -> None:
    """Recompute every file's PageRank and prior (a few hundred ms on a large repo)."""
    tree = _tree(conn, tree_id)
    nodes = [path for path, language in conn.execute(q.GRAPH_PATHS, (tree_id,))
             if language in PATTERNS]
    links = []
    importers: dict[str, int] = {}
    for src, dst, n_imports, n_refs in conn.execute(q.GRAPH_LINKS, (tree_id,)):
        links.append((src, dst, centrality.link_weight(int(n_imports) + int(n_refs))))
        if n_imports:
            importers[dst] = importers.get(dst, 0) + 1
    ranks = centrality.pagerank(nodes, links)
    priors = centrality.priors(ranks)
    keep = set(ranks)
    if tree.base_id is not None:  # a layered tree keeps the ranks that differ from its base's
        base = {p: (float(prior), int(n)) for p, prior, n in
                conn.execute(q.GRAPH_BASE_RANKS, {"tree": tree_id}).fetchall()}
        own = {str(r[0]) for r in conn.execute(q.FILE_LAYER_PATHS, (tree_id,))}
        keep = {p for p in ranks if p in own or p not in base or
                importers.get(p, 0) != base[p][1] or abs(priors[p] - base[p][0]) > RANK_TOLERANCE}
    with conn.transaction():
        conn.execute(q.GRAPH_RANK_CLEAR, (tree_id,))
        with conn.cursor().copy(q.GRAPH_RANK_COPY) as copy:
            for path in sorted(keep):
                copy.write_row((tree.repo_id, tree_id, path, ranks[path], priors[path],
                                importers.get(path, 0)))
