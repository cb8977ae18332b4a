"""Building a repository's graph from its per-content facts, fully or incrementally.

``update`` runs inside an index run, after the files transaction, with the repository
lock held. A full build resolves every file; an incremental one resolves the changed
files and every file whose resolution may depend on them (importers, files referencing
them, subclasses, package siblings of new files, files whose unresolved imports may now
resolve), so no edge is left pointing at a vanished declaration. Rows are replaced in one
transaction (readers keep the previous graph until it commits), written with COPY.
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import psycopg

from codenav.db import queries as q
from codenav.errors import Interrupted
from codenav.graph import centrality
from codenav.graph.context import BaseRow, Context, Fact, FactRow, SymRow
from codenav.graph.modules import CONFIG_RE, ModuleIndex, is_config
from codenav.graph.patterns import PATTERNS
from codenav.graph.resolve import Resolver
from codenav.graph.scope import EdgeRow, ImportRow, ScopeBuilder
from codenav.versions import GRAPH_VERSION

log = logging.getLogger("codenav.graph")

BATCH = 400
"""Files resolved per batch (their references are read together)."""
FULL_SHARE = 0.3
"""An incremental change touching more than this share of the files rebuilds everything."""
MAX_SUBCLASS_DEPTH = 4


@dataclass
class GraphSummary:
    full: bool = False
    files: int = 0
    imports: int = 0
    edges: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)
    """Seconds per phase: load, resolve, write, rank."""

    def lap(self, phase: str, started: float) -> float:
        now = time.monotonic()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - started, 3)
        return now


class _DbLoader:
    """Reads per-content rows by content id and hands them out per path (identical files
    share one content)."""

    def __init__(self, conn: psycopg.Connection, repo_id: int,
                 content_ids: dict[str, int]) -> None:
        self.conn = conn
        self.repo_id = repo_id
        self.content_ids = content_ids

    def _by_content(self, paths: list[str]) -> tuple[list[int], dict[int, list[str]]]:
        owners: dict[int, list[str]] = {}
        for path in paths:
            cid = self.content_ids.get(path)
            if cid is not None:
                owners.setdefault(cid, []).append(path)
        return list(owners), owners

    def symbols(self, paths: list[str]) -> Iterable[SymRow]:
        ids, owners = self._by_content(paths)
        for cid, *rest in self.conn.execute(q.GRAPH_SYMBOLS, (ids,)).fetchall():
            for path in owners[cid]:
                yield (path, *rest)

    def facts(self, paths: list[str], kinds: tuple[str, ...]) -> Iterable[FactRow]:
        ids, owners = self._by_content(paths)
        for cid, *rest in self.conn.execute(q.GRAPH_FACTS, (ids, list(kinds))).fetchall():
            for path in owners[cid]:
                yield (path, *rest)

    def stored_bases(self, paths: list[str]) -> Iterable[BaseRow]:
        return self.conn.execute(q.GRAPH_STORED_BASES, (self.repo_id, paths)).fetchall()

    def definitions(self, names: list[str], languages: tuple[str, ...]) -> Iterable[SymRow]:
        return self.conn.execute(q.GRAPH_DEFINITIONS, (self.repo_id, [n.lower() for n in names],
                                                       list(languages))).fetchall()


def load_index(conn: psycopg.Connection, repo_id: int) -> tuple[ModuleIndex, dict[str, int]]:
    """The repository's module index, and each file's content id."""
    files: dict[str, tuple[str, str]] = {}
    content_ids: dict[str, int] = {}
    for path, language, package, content_id in conn.execute(q.GRAPH_FILES, (repo_id,)):
        files[path] = (language, package)
        content_ids[path] = content_id
    configs: dict[str, str] = {path: body for path, body in
                               conn.execute(q.GRAPH_CONFIGS, (repo_id, CONFIG_RE))}
    return ModuleIndex(files, configs), content_ids


def update(conn: psycopg.Connection, repo_id: int, changed: list[str], deleted: list[str],
           full: bool = False) -> GraphSummary | None:
    """Bring the repository's graph in line with its files; None when nothing to do.

    A failure is logged and leaves the graph marked stale (the next run rebuilds it): the
    graph is derived data, and search must not stop because one repository trips it."""
    try:
        return _update(conn, repo_id, changed, deleted, full)
    except Interrupted:  # a stop, not a failure: the job runs again
        raise
    except Exception:  # derived data: recorded, and rebuilt by the next run
        log.exception("repo %s: graph build failed; marked stale for the next run", repo_id)
        conn.execute(q.GRAPH_STATE_PUT, (repo_id, 0, False, 0, 0.0))
        return None


def mark_stale(conn: psycopg.Connection, repo_id: int) -> None:
    """Record that the repository's graph must be (re)built in full by the next update."""
    conn.execute(q.GRAPH_STATE_PUT, (repo_id, 0, False, 0, 0.0))


def _update(conn: psycopg.Connection, repo_id: int, changed: list[str], deleted: list[str],
            full: bool) -> GraphSummary | None:
    started = time.monotonic()
    row = conn.execute(q.GRAPH_STATE_GET, (repo_id,)).fetchone()
    stale = row is None or row[0] != GRAPH_VERSION
    if not (full or stale or changed or deleted):
        return None
    index, content_ids = load_index(conn, repo_id)
    structured = {p for p, (lang, _pkg) in index.files.items() if lang in PATTERNS}
    touched = set(changed) | set(deleted)
    if full or stale or any(is_config(p) for p in touched) or \
            len(touched) > FULL_SHARE * max(len(index.files), 1):
        full = True
        build_set = structured
    else:
        build_set = _affected(conn, repo_id, index, set(changed), set(deleted)) & structured
        if not build_set and not deleted:
            return None
    summary = GraphSummary(full=full, files=len(build_set))
    new_files = bool(set(changed) - _paths(conn, q.GRAPH_KNOWN, repo_id, sorted(changed)))
    _build(conn, repo_id, index, _DbLoader(conn, repo_id, content_ids), build_set,
           set(deleted), full, summary, new_files)
    summary.seconds = time.monotonic() - started
    conn.execute(q.GRAPH_STATE_PUT, (repo_id, GRAPH_VERSION, full, len(build_set),
                                     summary.seconds))
    log.info("repo %s graph: %s build of %d files, %d imports, %d edges in %.2fs %s",
             repo_id, "full" if full else "incremental", len(build_set), summary.imports,
             summary.edges, summary.seconds, summary.phases)
    return summary


def _affected(conn: psycopg.Connection, repo_id: int, index: ModuleIndex, changed: set[str],
              deleted: set[str]) -> set[str]:
    """The files whose edges may change when ``changed`` and ``deleted`` do."""
    touched = sorted(changed | deleted)
    out = set(changed)
    out |= _paths(conn, q.GRAPH_IMPORTERS, repo_id, touched)
    out |= _paths(conn, q.GRAPH_REFERRERS, repo_id, touched)  # potential edges included
    frontier = sorted(out - deleted)
    for _ in range(MAX_SUBCLASS_DEPTH):  # subclasses of subclasses inherit members
        if not frontier:
            break
        found = _paths(conn, q.GRAPH_SUBCLASS_FILES, repo_id, frontier) - out
        out |= found
        frontier = sorted(found)
    known = _paths(conn, q.GRAPH_KNOWN, repo_id, sorted(changed))
    new = sorted(changed - known)
    if new:
        siblings = sorted({s for p in new for s in index.dirs.get(posixpath.dirname(p), [])})
        out |= set(siblings)  # package peers see new names without an import
        out |= _paths(conn, q.GRAPH_WILDCARD_IMPORTERS, repo_id, siblings)
        stems = sorted({posixpath.basename(p).split(".", 1)[0] for p in new} |
                       {posixpath.basename(posixpath.dirname(p)) for p in new} - {""})
        patterns = [f"%{_like(s)}%" for s in stems if len(s) > 1]
        if patterns:
            out |= _paths(conn, q.GRAPH_UNRESOLVED_IMPORTERS, repo_id, patterns)
    return out - deleted


def _like(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def _paths(conn: psycopg.Connection, sql: str, repo_id: int, values: list[str]) -> set[str]:
    if not values:
        return set()
    return {r[0] for r in conn.execute(sql, (repo_id, values))}


def _batches(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _build(conn: psycopg.Connection, repo_id: int, index: ModuleIndex, loader: _DbLoader,
           build_set: set[str], deleted: set[str], full: bool, summary: GraphSummary,
           new_files: bool) -> None:
    lap = time.monotonic()
    ctx = Context(index, loader, build_set)
    scopes = ScopeBuilder(ctx)
    resolver = Resolver(ctx, scopes)
    if full:
        ctx.preload(sorted(index.files))
    else:
        ctx.preload(sorted(build_set))
    lap = summary.lap("load", lap)
    ordered = sorted(build_set)
    replaced = sorted(build_set | deleted)
    old_links: set[tuple[str, str, int, int]] = set()
    if not full and replaced:
        old_links = {tuple(r) for r in conn.execute(q.GRAPH_PAIRS, (repo_id, replaced))}
    new_links: set[tuple[str, str, int, int]] = set()
    with conn.transaction():
        if full:
            conn.execute(q.GRAPH_IMPORTS_CLEAR, (repo_id,))
            conn.execute(q.GRAPH_EDGES_CLEAR, (repo_id,))
            conn.execute(q.GRAPH_LINKS_CLEAR, (repo_id,))
        elif replaced:
            conn.execute(q.GRAPH_IMPORTS_DELETE, (repo_id, replaced))
            conn.execute(q.GRAPH_EDGES_DELETE, (repo_id, replaced))
            conn.execute(q.GRAPH_LINKS_DELETE, (repo_id, replaced))
        for batch in _batches(ordered, BATCH):
            refs: dict[str, list[Fact]] = {p: [] for p in batch}
            for path, ord_, kind, name, qualifier, alias, line, scope in \
                    loader.facts(batch, ("call", "type")):
                refs[path].append(Fact(ord_, kind, name, qualifier, alias, line, scope))
            lap = summary.lap("load", lap)
            imports: list[ImportRow] = []
            edges: list[EdgeRow] = []
            for path in batch:
                imports += scopes.scope(path).imports
                edges += resolver.edges(path, refs[path])
            links = file_links(imports, edges)
            lap = summary.lap("resolve", lap)
            _write(conn, repo_id, imports, edges, links)
            lap = summary.lap("write", lap)
            summary.imports += len(imports)
            summary.edges += len(edges)
            if not full:
                new_links.update(links)
    lap = summary.lap("write", lap)
    if full or old_links != new_links or deleted or new_files:
        update_ranks(conn, repo_id)
    if full:
        conn.execute(q.GRAPH_ANALYZE)
    summary.lap("rank", lap)


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


def _write(conn: psycopg.Connection, repo_id: int, imports: list[ImportRow],
           edges: list[EdgeRow], links: list[tuple[str, str, int, int]]) -> None:
    with conn.cursor() as cur:
        if imports:
            with cur.copy(q.GRAPH_IMPORTS_COPY) as copy:
                copy.set_types(q.GRAPH_IMPORTS_TYPES)
                for src, ord_, spec, line, dst in imports:
                    copy.write_row((repo_id, src, ord_, spec, line, dst))
        if edges:
            with cur.copy(q.GRAPH_EDGES_COPY) as copy:
                copy.set_types(q.GRAPH_EDGES_TYPES)
                for edge in edges:
                    copy.write_row((repo_id, *edge))
        if links:
            with cur.copy(q.GRAPH_LINKS_COPY) as copy:
                copy.set_types(q.GRAPH_LINKS_TYPES)
                for link in links:
                    copy.write_row((repo_id, *link))


def update_ranks(conn: psycopg.Connection, repo_id: int) -> None:
    """Recompute every file's PageRank and prior (a few hundred ms on a large repo)."""
    nodes = [path for path, language in conn.execute(q.GRAPH_PATHS, (repo_id,))
             if language in PATTERNS]
    links = []
    importers: dict[str, int] = {}
    for src, dst, n_imports, n_refs in conn.execute(q.GRAPH_LINKS, (repo_id,)):
        links.append((src, dst, centrality.link_weight(int(n_imports) + int(n_refs))))
        if n_imports:
            importers[dst] = importers.get(dst, 0) + 1
    ranks = centrality.pagerank(nodes, links)
    priors = centrality.priors(ranks)
    with conn.transaction():
        conn.execute(q.GRAPH_RANK_CLEAR, (repo_id,))
        with conn.cursor().copy(q.GRAPH_RANK_COPY) as copy:
            for path, value in ranks.items():
                copy.write_row((repo_id, path, value, priors[path], importers.get(path, 0)))
