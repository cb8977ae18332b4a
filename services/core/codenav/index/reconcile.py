"""Reconciling a repository's index with its files on disk.

``reconcile`` is the one indexing job: it compares disk with the index (by size, mtime and
git blob sha), parses only contents the index has never seen, and points files at them.
It is idempotent: running it twice, or after a crash half-way, converges to the same state.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from codenav import repos, roots
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.errors import Interrupted, NotFound, Unavailable
from codenav.graph import build as graph
from codenav.graph import facts
from codenav.index import history, terms
from codenav.index.blob import SETTLED_SKIPS
from codenav.index.defaults import name_problem, shown
from codenav.index.gitinfo import head_commit, wait_for_checkout
from codenav.index.gitread import is_bare
from codenav.index.ignore import IgnoreRules
from codenav.index.ingest import Batch, FileResult, ingest
from codenav.index.walk import FileEntry, Skip, walk
from codenav.tokens import path_tsvector
from codenav.versions import CHUNKER_VERSION

log = logging.getLogger("codenav.index.reconcile")

BATCH_FILES = 48
CHECKOUT_WAIT_S = 60.0


@dataclass
class RunSummary:
    run_id: int
    files_total: int = 0
    files_changed: int = 0
    """Files whose size, mtime or chunker differ from what the index holds: read again."""
    files_parsed: int = 0
    """Of those, the ones whose content was new to the store, so parsed."""
    files_deleted: int = 0
    files_skipped: int = 0
    seconds: float = 0.0
    commit: str | None = None
    changed_paths: list[str] = field(default_factory=list)
    deleted_paths: list[str] = field(default_factory=list)
    graph_deferred: bool = False
    """The graph of a first index is built by its own job, after the index is searchable."""
    refused: str = ""
    """Why nothing was done: indexing is off for the repository, its root is not allowed
    here, or it was deleted."""
    refs_due: bool = False
    """The repository has refs to bring up to date: it follows some, or it is a bare git
    directory (no working tree: only its refs are indexed)."""


@dataclass
class _Known:
    size: int
    mtime_ns: int
    sha: str
    content_id: int
    chunker: int


def _batches(items: list[FileEntry], size: int) -> Iterator[list[FileEntry]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _progress_writer(conn: psycopg.Connection, run_id: int) -> Callable[..., None]:
    last = [0.0]

    def write(phase: str, total: int, done: int, parsed: int, deleted: int,
              force: bool = False) -> None:
        now = time.monotonic()
        if force or now - last[0] > 0.4:
            last[0] = now
            conn.execute(q.RUN_PROGRESS, (phase, total, done, parsed, deleted, run_id))

    return write


def reconcile(settings: Settings, repo_id: int, paths: list[str] | None = None,
              job_id: str | None = None, defer_graph: bool = False,
              stop: threading.Event | None = None) -> RunSummary:
    """Bring the index of ``repo_id`` in line with disk, for ``paths`` or the whole tree.

    With ``defer_graph``, a first index leaves its graph build to the caller (a separate
    job), so the repository is searchable sooner, and so does a run while that build
    waits; later runs always update the graph in the same run, so it never points at a
    vanished definition. ``stop`` ends the run after the batch in hand (``Interrupted``;
    the run is recorded as stopped): a first index keeps what it published, and the next
    run parses only the rest."""
    started = time.monotonic()
    conn = connect(settings, application_name="codenav-indexer")
    try:
        repo = repos.get(conn, repo_id)
        if repo is None:  # deleted since the job was queued
            return RunSummary(run_id=0, refused=f"no repository with id {repo_id}")
        refused = refusal(settings, repo)
        if refused:
            log.warning("repo %s (%s): not indexed: %s", repo_id, repo.root, refused)
            conn.execute(q.RUN_REFUSED, (repo_id, "", "full" if paths is None else "paths",
                                         job_id, refused[:500]))
            return RunSummary(run_id=0, refused=refused)
        root = Path(roots.resolve(repo.root))  # walk what was checked, not a link to it
        if repo.source == "git" or is_bare(root):  # a mirror: refs only, no working tree
            return RunSummary(run_id=0, refs_due=True)
        conn.execute(q.REPO_LOCK, (repo_id,))
        conn.execute(q.WRITERS_SHARED_LOCK)
        conn.execute(q.RUN_ABANDON, (repo_id,))
        tree_id = worktree(conn, repo_id)
        run_id = conn.execute(q.RUN_START, (repo_id, tree_id, "",
                                            "full" if paths is None else "paths",
                                            job_id)).fetchone()[0]  # type: ignore[index]
        summary = RunSummary(run_id=run_id, refs_due=bool(repo.follow))
        try:
            _reconcile(settings, conn, (repo_id, tree_id, repo.team_id), root, paths, summary,
                       defer_graph, stop)
        except Interrupted as exc:
            _record_end(settings, conn, ("stopped", "stopped", f"{exc.message}; it runs again",
                                         summary.files_total, 0, summary.files_parsed,
                                         summary.files_deleted, run_id))
            raise
        except BaseException as exc:
            _record_end(settings, conn, ("failed", "error",
                                         f"{type(exc).__name__}: {exc}"[:500],
                                         summary.files_total, 0, summary.files_parsed,
                                         summary.files_deleted, run_id))
            raise
        finally:  # an interrupted query can leave the session unusable: closing it unlocks
            with contextlib.suppress(psycopg.Error):
                conn.execute(q.WRITERS_SHARED_UNLOCK)
                conn.execute(q.REPO_UNLOCK, (repo_id,))
        collect_garbage(conn)
        # Term statistics move slowly: refresh them after big changes, not on every save.
        if stats_are_stale(conn, summary.files_parsed, summary.files_total):
            conn.execute(q.RUN_PROGRESS, ("stats", summary.files_total, summary.files_total,
                                          summary.files_parsed, summary.files_deleted, run_id))
            refresh_stats(conn, settings)
        summary.seconds = time.monotonic() - started
        conn.execute(q.RUN_FINISH, ("done", "done", "", summary.files_total,
                                    summary.files_total, summary.files_parsed,
                                    summary.files_deleted, run_id))
        log.info("repo %s: %d files, %d changed, %d parsed, %d deleted in %.2fs", repo_id,
                 summary.files_total, summary.files_changed, summary.files_parsed,
                 summary.files_deleted, summary.seconds)
        return summary
    finally:
        conn.close()


def worktree(conn: psycopg.Connection, repo_id: int) -> int:
    """The id of the repository's working tree (created at its first index)."""
    conn.execute(q.TREE_WORKTREE_ENSURE, (repo_id,))
    row = conn.execute(q.TREE_WORKTREE, (repo_id,)).fetchone()
    assert row is not None
    return int(row[0])


def refusal(settings: Settings, repo: repos.Repo) -> str:
    """Why a job must not walk this repository here ("" if it may): indexing is off for
    it (registered with ``index: false``), or its root, resolved on this machine, is not
    an allowed root (a symlink may have been swapped in since it was registered)."""
    if repo.source == "remote":
        return "published by CI (codenav publish): nothing of it is on this server's disk"
    if not repo.index_enabled:
        return "indexing is off for this repository (registered with index: false); " \
            "reindex asks for it"
    return roots.refusal(settings, repo.root) or ""


def _record_end(settings: Settings, conn: psycopg.Connection, args: tuple[Any, ...]) -> None:
    """Record how a run ended, on a new session if an interruption broke this one."""
    try:
        conn.execute(q.RUN_FINISH, args)
    except psycopg.Error:
        with contextlib.suppress(psycopg.Error, Unavailable), \
                connect(settings, application_name="codenav-indexer") as fresh:
            fresh.execute(q.RUN_FINISH, args)


def _scan_paths(root: Path, rules: IgnoreRules, paths: list[str], max_bytes: int,
                known: dict[str, _Known]) -> tuple[list[FileEntry], list[Skip], set[str]]:
    """Stat the given paths (files or directories); returns entries, skips and the set of
    paths (and indexed paths below them) that are gone from disk."""
    entries: list[FileEntry] = []
    skips: list[Skip] = []
    gone: set[str] = set()
    for rel in sorted(set(paths)):
        rel = rel.strip("/")
        if not rel:
            continue
        problem = name_problem(rel)
        if problem:  # never indexed: nothing of it is known to go
            skips.append(Skip(shown(rel), "bad_name", problem))
            continue
        full = root / rel
        try:
            st = os.lstat(full)
        except OSError:
            gone.add(rel)
            gone.update(p for p in known if p.startswith(rel + "/"))
            continue
        if stat.S_ISDIR(st.st_mode):
            reason = rules.check_path(rel, is_dir=True)
            below = [p for p in known if p.startswith(rel + "/")]
            if reason:
                gone.update(below)
                continue
            sub = walk(root / rel, max_bytes, _SubRules(rules, rel))
            prefix = rel + "/"
            seen = {prefix + f.path for f in sub.files}
            entries += [FileEntry(prefix + f.path, f.size, f.mtime_ns) for f in sub.files]
            skips += [Skip(prefix + s.path, s.reason, s.detail, s.size) for s in sub.skipped]
            gone.update(p for p in below if p not in seen)
            continue
        if stat.S_ISLNK(st.st_mode):
            skips.append(Skip(rel, "symlink", ""))
            gone.add(rel)
            continue
        reason = rules.check_path(rel, is_dir=False)
        if reason or not stat.S_ISREG(st.st_mode):
            gone.add(rel)
            if reason and reason != "gitignored":
                skips.append(Skip(rel, reason, size=st.st_size))
            continue
        if st.st_size > max_bytes:
            skips.append(Skip(rel, "too_large", f"{st.st_size} bytes > {max_bytes}",
                              st.st_size))
            gone.add(rel)
            continue
        entries.append(FileEntry(rel, st.st_size, st.st_mtime_ns))
    return entries, skips, gone


class _SubRules(IgnoreRules):
    """The repo's rules, seen from a subdirectory (paths given relative to it)."""

    def __init__(self, rules: IgnoreRules, prefix: str) -> None:
        super().__init__(root=rules.root)
        self._outer = rules
        self._prefix = prefix

    def enter_dir(self, rel_dir: str) -> None:
        self._outer.load_ancestors(f"{self._prefix}/{rel_dir}/x" if rel_dir else
                                   f"{self._prefix}/x")

    def check(self, rel_path: str, is_dir: bool) -> str | None:
        return self._outer.check(f"{self._prefix}/{rel_path}", is_dir)


def _load_known(conn: psycopg.Connection, tree_id: int,
                paths: list[str] | None) -> dict[str, _Known]:
    if paths is None:
        rows = conn.execute(q.FILES_STATE, (tree_id,)).fetchall()
    else:
        # a bad name was never indexed (and cannot be a statement's parameter)
        clean = [p.strip("/") for p in paths if p.strip("/") and name_problem(p) is None]
        rows = conn.execute(q.FILES_STATE_PATHS, (tree_id, clean,
                                                  [_like_prefix(p) for p in clean])).fetchall()
    return {r[0]: _Known(r[1], r[2], r[3], r[4], r[5]) for r in rows}


def _settled_skips(conn: psycopg.Connection, tree_id: int, paths: list[str] | None
                   ) -> dict[tuple[str, int, int], tuple[str, str]]:
    """(path, size, mtime) -> (reason, detail) of the tree's files (of ``paths``, for a
    path job) skipped for a verdict on their bytes that the current rules would give again
    (``blob.SETTLED_SKIPS``): a binary file without a binary extension was read, and
    reported changed, on every run."""
    reasons = list(SETTLED_SKIPS)
    rows = conn.execute(q.SKIPPED_SETTLED, (tree_id, reasons)).fetchall() if paths is None \
        else conn.execute(q.SKIPPED_SETTLED_PATHS, (tree_id, reasons, paths)).fetchall()
    return {(path, int(size), int(mtime)): (reason, detail)
            for path, reason, detail, size, mtime in rows if SETTLED_SKIPS[reason] == detail}


def _like_prefix(path: str) -> str:
    escaped = path.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "/%"


def _reconcile(settings: Settings, conn: psycopg.Connection, target: tuple[int, int, int],
               root: Path, paths: list[str] | None, summary: RunSummary,
               defer_graph: bool = False, stop: threading.Event | None = None) -> None:
    """``target``: the repository, its working tree and its team."""
    repo_id, tree_id, team_id = target
    if not root.is_dir():
        raise NotFound(f"repository root {root} is not a directory on this machine",
                       hint="mount the repository at the same path for the worker")
    if not wait_for_checkout(root, CHECKOUT_WAIT_S):
        raise Unavailable(f"a git operation in {root} has held the index for "
                          f"{CHECKOUT_WAIT_S:.0f}s; not publishing a half-done checkout",
                          hint="the job is retried; remove a stale .git/index.lock if git died")
    progress = _progress_writer(conn, summary.run_id)
    rules = IgnoreRules.for_root(root)
    known = _load_known(conn, tree_id, paths)
    gitignored = 0
    if paths is None:
        result = walk(root, settings.max_file_bytes, rules)
        entries, skips, gitignored = result.files, result.skipped, result.gitignored
        on_disk = {e.path for e in entries}
        gone = {p for p in known if p not in on_disk}
    else:
        entries, skips, gone = _scan_paths(root, rules, paths, settings.max_file_bytes, known)
        # A directory and files inside it may both be asked for: each file once.
        entries = list({e.path: e for e in entries}.values())
        skips = list({s.path: s for s in skips}.values())
        gone -= {e.path for e in entries}
    settled = _settled_skips(conn, tree_id,
                             None if paths is None else [e.path for e in entries])
    todo = []
    kept_skips: list[FileResult] = []  # skipped before for their bytes, unchanged since
    for entry in entries:
        k = known.get(entry.path)
        if k is None and (skip := settled.get((entry.path, entry.size, entry.mtime_ns))):
            kept_skips.append(FileResult(entry.path, entry.size, entry.mtime_ns,
                                         skip=skip[0], detail=skip[1]))
        elif k is None or k.size != entry.size or k.mtime_ns != entry.mtime_ns or \
                k.chunker != CHUNKER_VERSION:
            todo.append(entry)
    summary.files_total = len(entries)
    summary.files_changed = len(todo)
    initial = not known
    progress("parse", len(entries), len(entries) - len(todo), 0, 0, force=True)

    done = len(entries) - len(todo)
    pending: list[FileResult] = []
    skipped_early: list[FileResult] = []
    # A first index whose graph is deferred leaves the graph facts to the graph job too
    # (reference extraction is a third of a cold index's CPU).
    defer_facts = defer_graph and initial
    for batch_results in _ingest(settings, root, todo, defer_facts, team_id):
        pending += batch_results
        done += len(batch_results)
        summary.files_parsed += sum(1 for r in batch_results if r.parsed)
        stopping = stop is not None and stop.is_set()
        if initial and (len(pending) >= 500 or (stopping and pending)):
            # A first index publishes progressively (and what it has when it stops); its
            # skips wait for the final transaction, which replaces the repository's list.
            _apply(conn, (repo_id, tree_id), [r for r in pending if not r.skip], [], [], None,
                   summary, known, final=False)
            skipped_early += [r for r in pending if r.skip]
            pending = []
        progress("parse", len(entries), done, summary.files_parsed, 0)
        if stopping:
            raise Interrupted(f"stopped after {done} of {len(entries)} files")
    progress("commit", len(entries), done, summary.files_parsed, len(gone), force=True)
    _apply(conn, (repo_id, tree_id), kept_skips + skipped_early + pending, sorted(gone), skips,
           paths, summary, known)
    if defer_graph and (initial or graph.awaits_build(conn, tree_id)):
        # A run while the first index's graph job waits (the watcher's catch-up reconcile,
        # say) leaves the build, and the facts it needs, to that job as well: the graph is
        # built in full either way, and here it would hold up the run's answer.
        graph.mark_stale(conn, tree_id)
        summary.graph_deferred = True
    else:  # re-resolve the changed files and every file that depends on them
        progress("graph", len(entries), done, summary.files_parsed, len(gone), force=True)
        terms.fill_pending(settings, conn, tree_id)
        facts.fill_pending(settings, conn, tree_id)
        graph.update(conn, tree_id, summary.changed_paths, summary.deleted_paths,
                     previous={p: known[p].content_id for p in summary.changed_paths
                               if p in known})
    commit = head_commit(root)
    summary.commit = commit
    conn.execute(q.TREE_MARK_INDEXED, (commit, gitignored, tree_id))
    if not summary.graph_deferred:  # else the graph job reads it, after the postings
        history.refresh(conn, repo_id, tree_id, root)


def _ingest(settings: Settings, root: Path, todo: list[FileEntry],
            defer_facts: bool = False, team_id: int = 0) -> Iterator[list[FileResult]]:
    yield from ingest(settings, [Batch(str(root), batch) for batch in _batches(todo, BATCH_FILES)],
                      defer_facts, team_id)


def _apply(conn: psycopg.Connection, target: tuple[int, int], results: list[FileResult],
           gone: list[str], skips: list[Skip], paths: list[str] | None,
           summary: RunSummary, known: dict[str, _Known], final: bool = True) -> None:
    """Point files at their contents, drop vanished files, record skips: one transaction.
    ``target``: the repository and its working tree."""
    repo_id, tree_id = target
    indexed = [r for r in results if not r.skip]
    skipped_now = [r for r in results if r.skip]
    touch_only = [r for r in indexed if (k := known.get(r.path)) is not None and
                  k.sha == r.sha and k.content_id == r.content_id]
    touch_paths = {r.path for r in touch_only}
    upserts = [r for r in indexed if r.path not in touch_paths]
    removed = list(gone) + [r.path for r in skipped_now if r.path in known]
    with conn.transaction():
        if upserts:
            conn.execute(q.FILES_STAGE_CREATE)
            with conn.cursor().copy(q.FILES_STAGE_COPY) as copy:
                for r in upserts:
                    copy.write_row((r.path, r.content_id, r.sha, r.language, r.size,
                                    r.mtime_ns, path_tsvector(r.path)))
            conn.execute(q.FILES_UPSERT, (repo_id, tree_id))
        for r in touch_only:
            conn.execute(q.FILES_TOUCH, (r.mtime_ns, tree_id, r.path))
        if removed:
            conn.execute(q.FILES_DELETE, (tree_id, removed))
        if upserts or removed:
            conn.execute(q.TREE_FILES_CHANGED, (tree_id,))
            # the texts of a file's old version go, unless another tree holds it too
            old = [(r.path, k.content_id) for r in upserts
                   if (k := known.get(r.path)) is not None and k.content_id != r.content_id]
            old += [(p, known[p].content_id) for p in removed if p in known]
            if old:
                conn.execute(q.CHUNK_TEXTS_RELEASE, ([p for p, _ in old], [c for _, c in old]))
        if final and paths is None:
            conn.execute(q.SKIPPED_CLEAR, (tree_id,))
        else:
            touched = [r.path for r in results] + list(gone)
            if touched:
                conn.execute(q.SKIPPED_DELETE, (tree_id, touched))
        all_skips = [(s.path, s.reason, s.detail, s.size, 0) for s in skips]
        all_skips += [(r.path, r.skip, r.detail, r.size, r.mtime_ns) for r in skipped_now]
        if all_skips:
            with conn.cursor() as cur:
                cur.executemany(q.SKIPPED_UPSERT, [(repo_id, tree_id, *s) for s in all_skips])
    summary.files_deleted += len(removed)
    summary.files_skipped += len(all_skips)
    summary.changed_paths += [r.path for r in upserts]
    summary.deleted_paths += removed


def collect_garbage(conn: psycopg.Connection) -> bool:
    """Delete contents no file points at, unless an indexer is mid-run (it may be about to
    point at them); the last indexer to finish collects."""
    with conn.transaction():
        got = conn.execute(q.GC_TRY_LOCK).fetchone()
        if not got or not got[0]:
            return False
        row = conn.execute(q.GC_DELETE).fetchone()
    return bool(row and row[0])


def refresh_stats(conn: psycopg.Connection, settings: Settings | None = None) -> None:
    """Refresh the planner's statistics and the corpus size used for length normalisation
    (term document frequencies need nothing: they are read live from ``file_terms``).

    With ``settings``, ``chunks`` is analysed on ``conn`` while the other tables are on a
    second connection: at the end of a first index nothing else runs, and the two halves
    take about as long (Apache Kafka: 0.89 s on one connection, 0.69 s on two; bench/README.md,
    "A first index's statistics on two connections"). A table cannot be analysed by two
    sessions at once, so two is the most."""
    if settings is None:
        conn.execute(q.ANALYZE_TABLES)
    else:
        failed: list[BaseException] = []

        def others() -> None:
            try:
                with connect(settings, application_name="codenav-indexer-stats") as other:
                    other.execute(q.ANALYZE_OTHERS)
            except BaseException as exc:  # noqa: BLE001 - raised below, in the caller's thread
                failed.append(exc)

        beside = threading.Thread(target=others, name="codenav-analyze", daemon=True)
        beside.start()
        try:
            conn.execute(q.ANALYZE_CHUNKS)
        finally:
            beside.join()
        if failed:
            raise failed[0]
    conn.execute(q.STATS_REFRESH_CORPUS)


def stats_are_stale(conn: psycopg.Connection, parsed_files: int, files_total: int) -> bool:
    row = conn.execute(q.STATS_CORPUS).fetchone()
    if not row or not row[0]:
        return True
    return parsed_files > max(20, files_total // 20)
