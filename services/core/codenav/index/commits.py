"""Indexing one commit into a commit tree, straight from git: no checkout, nothing on disk.

The commit's file list comes from ``git ls-tree``, filtered by the walker's rules (the
tree's own ``.gitignore`` and ``.codenavignore``, secrets, lock files, binaries, symlinks,
submodules, sizes). A file whose blob the tree it derives from already had at that path
keeps that content; a blob the store already holds is not read; the rest is read through
``git cat-file --batch`` and parsed like a file on disk. So indexing ``main@HEAD`` after
``main@HEAD~1`` parses only the blobs that changed.

``build_tree`` then writes the tree (the same for a commit read here and one CI uploaded,
``codenav.publish``): a commit derived from a known tree copies that tree's file rows and
writes only the changed ones, and layers its graph on that tree's (``codenav.graph.build``)
so its graph costs about the changed files. A tree is ``ready`` (refs may point at it) only
once its files and graph are complete; one left half-built by a killed job is started over.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from codenav.access import Repo
from codenav.config import Settings
from codenav.db import queries as q
from codenav.errors import Interrupted
from codenav.graph import build as graph
from codenav.graph import facts
from codenav.index import gitread, terms
from codenav.index.defaults import name_problem, shown
from codenav.index.ignore import IGNORE_FILES, TreeIgnoreRules
from codenav.index.ingest import Batch, FileResult, ingest
from codenav.index.walk import FileEntry, Skip
from codenav.lang import language_for
from codenav.tokens import path_tsvector
from codenav.versions import CHUNKER_VERSION

log = logging.getLogger("codenav.index.commits")

BATCH_FILES = 48
IGNORE_FILE_MAX = 256 * 1024


@dataclass
class TreePlan:
    """What a commit's tree holds, filtered: files to index (with blob ids) and skips."""

    files: list[FileEntry]
    skips: list[Skip]
    gitignored: int = 0


@dataclass
class CommitSummary:
    tree_id: int
    commit: str
    files: int = 0
    parsed: int = 0
    changed: int = 0
    """Files whose content differs from the tree it was derived from (all, if none)."""
    deleted: int = 0
    skipped: int = 0
    derived_from: int | None = None
    reused: bool = False
    """The commit was indexed already: nothing was done."""
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)

    def lap(self, phase: str, started: float) -> float:
        now = time.monotonic()
        self.phases[phase] = round(self.phases.get(phase, 0.0) + now - started, 3)
        return now


Progress = Callable[[str, int, int, int], None]
"""(phase, files total, files done, files parsed)"""


RULE_REASONS = frozenset({"ignored_dir", "lock_file", "secret", "binary", "bad_name"})
"""Skip reasons the path rules give (the others depend on the file: symlink, size...)."""


def plan(gdir: Path, commit: str, max_bytes: int, reader: gitread.BlobReader,
         decided: dict[str, str | None] | None = None) -> TreePlan:
    """The files of ``commit`` codenav indexes, and what it skips and why. ``decided``: what
    the rules said of paths of a tree derived from (None: include), used as it is when the
    two commits have the same ignore files (a commit after a known one checks its new paths
    only). Directories are decided once, as the walker does: nothing below an ignored one
    is looked at."""
    entries = gitread.ls_tree(gdir, commit)
    ignore_files = {e.path: e.sha for e in entries if e.path.rsplit("/", 1)[-1] in IGNORE_FILES
                    and e.mode != gitread.SYMLINK_MODE and e.size <= IGNORE_FILE_MAX}
    texts: dict[str, str] = {}
    for path, sha in ignore_files.items():
        data = reader.read(sha)
        if data is not None:
            texts[path] = data.decode("utf-8", "replace")
    rules = TreeIgnoreRules(texts)
    reuse = decided if decided is not None and \
        decided.get(_IGNORE_KEY) == _ignore_key(ignore_files) else {}
    dirs: dict[str, str | None] = {"": None}
    out = TreePlan([], [])

    def directory(rel: str) -> str | None:
        """Why nothing below ``rel`` is indexed (None: it is walked)."""
        if rel in dirs:
            return dirs[rel]
        parent = rel.rsplit("/", 1)[0] if "/" in rel else ""
        reason = directory(parent)
        if reason is None:
            rules.enter_dir(parent)
            reason = rules.check(rel, is_dir=True)
            if reason == "gitignored":
                out.gitignored += 1
            elif reason:
                out.skips.append(Skip(rel + "/", reason))
            dirs[rel] = reason or None
            return dirs[rel]
        dirs[rel] = "parent"  # below an ignored directory: not listed again
        return "parent"

    for e in entries:
        problem = name_problem(e.path)
        if problem:
            out.skips.append(Skip(shown(e.path), "bad_name", problem))
            continue
        if e.path in reuse:
            reason = reuse[e.path]
        else:
            folder = e.path.rsplit("/", 1)[0] if "/" in e.path else ""
            if directory(folder) is not None:
                continue
            rules.enter_dir(folder)
            reason = rules.check(e.path, is_dir=False)
        if reason == "gitignored":
            out.gitignored += 1
        elif reason:
            out.skips.append(Skip(e.path, reason, size=e.size))
        elif e.mode == gitread.SYMLINK_MODE:
            out.skips.append(Skip(e.path, "symlink", "a link in the commit"))
        elif e.mode == gitread.SUBMODULE_MODE:
            out.skips.append(Skip(e.path, "submodule", f"commit {e.sha[:12]}"))
        elif e.size > max_bytes:
            out.skips.append(Skip(e.path, "too_large", f"{e.size} bytes > {max_bytes}", e.size))
        else:
            out.files.append(FileEntry(e.path, e.size, 0, e.sha))
    return out


_IGNORE_KEY = "\0ignore-files"
"""The entry of ``decided`` naming the ignore files the decisions were made with."""


def _ignore_key(files: dict[str, str]) -> str:
    return ",".join(f"{p}={s}" for p, s in sorted(files.items()))


def decisions(conn: psycopg.Connection, base: int | None,
              known: dict[str, Known]) -> dict[str, str | None] | None:
    """What the rules said of the paths of tree ``base`` (its files: index; its skips by a
    path rule: the rule), and the ignore files it was decided with."""
    if base is None:
        return None
    out: dict[str, str | None] = {p: None for p in known}
    out.update({p: r for p, r in conn.execute(q.TREE_SKIP_REASONS, (base,)).fetchall()
                if r in RULE_REASONS})
    out[_IGNORE_KEY] = _ignore_key({p: k.sha for p, k in known.items()
                                    if p.rsplit("/", 1)[-1] in IGNORE_FILES})
    return out


@dataclass(frozen=True)
class Known:
    """A file of the tree a new one derives from."""

    content_id: int
    sha: str
    language: str
    size: int


def tree_files(conn: psycopg.Connection, tree_id: int | None) -> dict[str, Known]:
    if tree_id is None:
        return {}
    return {path: Known(int(cid), sha, language, int(size)) for path, cid, sha, language, size
            in conn.execute(q.TREE_FILES, (tree_id,)).fetchall()}


def tree_files_at(conn: psycopg.Connection, tree_id: int, paths: list[str]) -> dict[str, Known]:
    """The files of a tree at ``paths`` (a few of its files, without reading the rest)."""
    return {path: Known(int(cid), sha, language, int(size)) for path, cid, sha, language, size
            in conn.execute(q.TREE_FILES_AT, (tree_id, paths)).fetchall()}


def neighbour(conn: psycopg.Connection, repo_id: int, ref: str | None, tree_id: int = 0,
              main: str | None = None) -> int | None:
    """The tree a new commit tree derives from: the ref's current one, else the main
    branch's, else the newest."""
    row = conn.execute(q.TREE_NEIGHBOUR, {"repo": repo_id, "ref": ref or "", "main": main or "",
                                          "tree": tree_id}).fetchone()
    return int(row[0]) if row else None


def resolve_contents(conn: psycopg.Connection, files: list[FileEntry], known: dict[str, Known],
                     team_id: int) -> tuple[list[FileResult], list[FileEntry]]:
    """Files whose content the store already has (the same blob at the same path in the
    tree derived from, or a blob stored under the language its path gives), and the rest,
    which must be read and parsed."""
    found: list[FileResult] = []
    rest: list[FileEntry] = []
    for e in files:
        k = known.get(e.path)
        if k is not None and k.sha == e.sha:
            found.append(FileResult(e.path, e.size, 0, e.sha, k.language, k.content_id))
        else:
            rest.append(e)
    if not rest:
        return found, rest
    stored: dict[tuple[str, str], int] = {
        (sha, lang): int(cid) for cid, sha, lang in
        conn.execute(q.CONTENT_LOOKUP, (CHUNKER_VERSION, sorted({e.sha for e in rest}),
                                        team_id))}
    todo = []
    for e in rest:
        lang = language_for(e.path)
        cid = stored.get((e.sha, lang))
        if cid is None:
            todo.append(e)
        else:
            found.append(FileResult(e.path, e.size, 0, e.sha, lang, cid))
    return found, todo


def ingest_blobs(settings: Settings, gdir: Path, todo: list[FileEntry],
                 team_id: int = 0) -> Iterator[list[FileResult]]:
    """Read and store blobs in batches, in parser processes."""
    yield from ingest(settings, [Batch(str(gdir), todo[i:i + BATCH_FILES], "git")
                                 for i in range(0, len(todo), BATCH_FILES)], team_id=team_id)


def index_commit(settings: Settings, conn: psycopg.Connection, repo: Repo, gdir: Path,
                 commit: str, ref: str | None = None, stop: threading.Event | None = None,
                 progress: Progress | None = None, main: str | None = None,
                 with_graph: bool = True) -> CommitSummary:
    """Index ``commit`` of the git directory ``gdir`` as a commit tree of ``repo_id`` (the
    caller holds the repository lock); reuses a ready tree of that commit. ``main``: the
    repository's main branch, whose tree a new ref derives from first. ``with_graph``
    false: the tree is ready without a graph (a CI job's local index: the server resolves
    the graph of what it is sent)."""
    repo_id = repo.id
    started = time.monotonic()
    row = conn.execute(q.TREE_BY_COMMIT, (repo_id, commit)).fetchone()
    if row is not None and row[1]:
        return CommitSummary(int(row[0]), commit, reused=True)
    summary = CommitSummary(0, commit)
    lap = started
    with gitread.BlobReader(gdir) as reader:
        base = neighbour(conn, repo_id, ref, int(row[0]) if row else 0, main)
        known = tree_files(conn, base)
        tree = plan(gdir, commit, settings.max_file_bytes, reader,
                    decisions(conn, base, known))
        lap = summary.lap("plan", lap)
        results, todo = resolve_contents(conn, tree.files, known, repo.team_id)
        total = len(tree.files)
        if progress:
            progress("parse", total, len(results), 0)
        for batch in ingest_blobs(settings, gdir, todo, repo.team_id):
            results += batch
            summary.parsed += sum(1 for r in batch if r.parsed)
            if progress:
                progress("parse", total, len(results), summary.parsed)
            if stop is not None and stop.is_set():
                raise Interrupted(f"stopped after {len(results)} of {total} files")
        lap = summary.lap("parse", lap)
    skips = tree.skips + [Skip(r.path, r.skip, r.detail, r.size) for r in results if r.skip]
    files = [r for r in results if not r.skip]
    if progress:
        progress("commit", total, total, summary.parsed)
    build_tree(settings, conn, repo_id, commit, files, skips, tree.gitignored, base, summary,
               with_graph)
    summary.seconds = time.monotonic() - started
    log.info("repo %s: commit %s indexed as tree %s: %d files, %d changed, %d parsed in "
             "%.2fs %s", repo_id, commit[:12], summary.tree_id, summary.files, summary.changed,
             summary.parsed, summary.seconds, summary.phases)
    return summary


def write_rows(conn: psycopg.Connection, repo_id: int, tree_id: int,
               written: list[FileResult], deleted: list[str],
               skips: list[tuple[str, str, str | None, int]]) -> None:
    """A git-read tree's own rows (in the caller's transaction): its files, the removal of
    rows a copied layer held for deleted paths, and its skips (path, reason, detail,
    size)."""
    conn.execute(q.FILES_STAGE_CREATE)
    with conn.cursor().copy(q.FILES_STAGE_COPY) as copy:
        for r in written:
            copy.write_row((r.path, r.content_id, r.sha, r.language, r.size, 0,
                            path_tsvector(r.path)))
    conn.execute(q.FILES_UPSERT, (repo_id, tree_id))
    if deleted:  # rows a copied layer held for them
        conn.execute(q.FILES_DELETE, (tree_id, deleted))
    if skips:
        with conn.cursor() as cur:
            cur.executemany(q.SKIPPED_UPSERT, [(repo_id, tree_id, path, reason, detail,
                                                size, 0) for path, reason, detail, size in skips])


def build_tree(settings: Settings, conn: psycopg.Connection, repo_id: int, commit: str,
               files: list[FileResult], skips: list[Skip], gitignored: int, base: int | None,
               summary: CommitSummary, with_graph: bool = True) -> None:
    """Write the commit tree of ``files`` (each with its content stored) and ``skips``,
    derived from the tree ``base`` when there is one, build its graph, and mark it ready."""
    lap = time.monotonic()
    conn.execute(q.TREE_COMMIT_ENSURE, (repo_id, commit))
    row = conn.execute(q.TREE_BY_COMMIT, (repo_id, commit)).fetchone()
    assert row is not None
    tree_id = summary.tree_id = int(row[0])
    summary.files, summary.skipped, summary.derived_from = len(files), len(skips), base
    if row[1]:  # made ready meanwhile (another publish of the same commit)
        summary.reused = True
        return
    known = tree_files(conn, base)
    paths = {r.path for r in files}
    changed = sorted(r.path for r in files if (k := known.get(r.path)) is None or
                     k.content_id != r.content_id)
    deleted = sorted(p for p in known if p not in paths)
    summary.changed, summary.deleted = len(changed), len(deleted)
    by_path = {r.path: r for r in files}
    with conn.transaction():
        clear_tree(conn, tree_id)  # a half-built tree of a killed run starts over
        if base is not None:  # layered: it holds its changed files, reads the rest
            layer_on(conn, tree_id, base, changed + deleted)
            written = [by_path[p] for p in changed]
        else:
            written = files
        write_rows(conn, repo_id, tree_id, written, deleted,
                   [(s.path, s.reason, s.detail, s.size) for s in skips])
    lap = summary.lap("files", lap)
    if not with_graph:
        conn.execute(q.TREE_READY, (gitignored, tree_id))
        return
    terms.fill_pending(settings, conn, tree_id)
    facts.fill_pending(settings, conn, tree_id)
    if base is not None and graph.is_current(conn, base):
        graph.update(conn, tree_id, changed, deleted, current=True,
                     previous={p: known[p].content_id for p in changed if p in known})
    else:
        graph.update(conn, tree_id, [], [], full=True)
    lap = summary.lap("graph", lap)
    conn.execute(q.TREE_READY, (gitignored, tree_id))


def clear_tree(conn: psycopg.Connection, tree_id: int) -> None:
    """Empty a tree that is not ready (what a killed run left of it)."""
    for statement in (q.TREE_CLEAR_FILES, q.TREE_CLEAR_SKIPPED, q.GRAPH_IMPORTS_CLEAR,
                      q.GRAPH_EDGES_CLEAR, q.GRAPH_LINKS_CLEAR, q.GRAPH_LAYER_CLEAR,
                      q.FILE_LAYER_CLEAR, q.GRAPH_RANK_CLEAR, q.TREE_CLEAR_STATE,
                      q.GRAPH_UNLAYER):
        conn.execute(statement, (tree_id,))


MID_SHARE = 0.5
"""A tree derived from one that sits on a mid becomes a mid itself (taking the mid's rows)
once its own share reaches this fraction of the mid's: each commit then holds its changes
since a recent one, and a new mid starts after a few."""


def layer_on(conn: psycopg.Connection, tree_id: int, base: int, paths: list[str]) -> None:
    """Layer ``tree_id`` on the tree ``base`` it derives from, never more than two layers
    deep: on ``base`` itself when ``base`` holds all its rows; on ``base``'s base with
    ``base`` as its mid when ``base`` sits right on its base; else (``base`` sits on a mid)
    with a copy of what ``base`` holds itself, over ``base``'s mid, or, once that copy
    grows past MID_SHARE of the mid, over the base with the mid's rows copied too (it is
    then a mid for the commits after it). ``paths`` (changed or deleted since ``base``) are
    its own, and keep their rank until its graph says otherwise. In the caller's
    transaction."""
    row = conn.execute(q.GRAPH_TREE, (base,)).fetchone()
    assert row is not None
    under, mid = (int(v) if v is not None else None for v in row[1:3])
    if under is None:  # base holds everything
        conn.execute(q.TREE_SET_BASE, (base, None, tree_id))
    elif mid is None:  # base sits right on its base: it is our mid
        conn.execute(q.TREE_SET_BASE, (under, base, tree_id))
    else:
        conn.execute(q.TREE_COPY_OWN_FILES, {"from": base, "to": tree_id})
        conn.execute(q.TREE_COPY_LAYER, {"from": base, "to": tree_id})
        own = _size(conn, q.GRAPH_OWN_SIZE, base)
        if own >= MID_SHARE * max(_size(conn, q.GRAPH_OWN_SIZE, mid), 1):
            conn.execute(q.TREE_COPY_MID, {"mid": mid, "to": tree_id})
            conn.execute(q.TREE_SET_BASE, (under, None, tree_id))
        else:
            conn.execute(q.TREE_SET_BASE, (under, mid, tree_id))
    conn.execute(q.FILE_LAYER_ADD, (tree_id, paths))
    conn.execute(q.TREE_KEEP_RANKS, {"from": base, "to": tree_id, "paths": paths})


def _size(conn: psycopg.Connection, sql: str, tree_id: int) -> int:
    row = conn.execute(sql, (tree_id,)).fetchone()
    return int(row[0]) if row else 0
