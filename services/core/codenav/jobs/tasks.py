"""The jobs a worker runs (named in ``codenav.jobs.enqueue``). Each is a thin wrapper over
the engine (reconcile, graph build, embedding backlog) and idempotent:
running one twice, or again after a crash half-way, converges to the same index.

Jobs stop early when their worker is asked to stop (``STOP``, set by the horse's signal
handler): at the next checkpoint, or where they are once the soft deadline passes
(``interrupt_now``). A stopped job asks to be run again, so a shutdown loses nothing."""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg

from codenav import refs, repos, roots
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.embed.client import EmbedClient
from codenav.embed.vectors import embed_backlog
from codenav.errors import Interrupted, Unavailable
from codenav.graph import build as graph
from codenav.graph import facts
from codenav.index import grams, history, terms
from codenav.index.gitread import is_bare
from codenav.index.reconcile import reconcile, worktree
from codenav.jobs import enqueue

log = logging.getLogger("codenav.worker")

EMBED_BUDGET_S = 30.0
"""An embed job works this long, then re-queues itself, so the other repositories' backlogs
take turns on the embed lane."""
EMBEDDER_WAIT_S = 60.0
"""An embed job whose embedder went away waits this long for it before queueing itself
again (no failure, no retry used: the embedder being restarted is normal)."""

STOP = threading.Event()
"""Set in a work horse when its worker is stopping."""
_RUNNING_JOB = threading.Event()

_SETTINGS: Settings | None = None

JobFunc = Callable[[int], dict[str, Any]]


def settings() -> Settings:
    global _SETTINGS
    if _SETTINGS is None:
        _SETTINGS = Settings.load()
    return _SETTINGS


def interrupt_now() -> None:
    """Raise ``Interrupted`` in the job where it is (from a signal handler; outside a
    job's body it does nothing)."""
    if _RUNNING_JOB.is_set():
        raise Interrupted("the worker is stopping")


def resumable(kind: str) -> Callable[[JobFunc], JobFunc]:
    """A job that, when interrupted by a stop, asks to be run again and ends cleanly."""

    def wrap(func: JobFunc) -> JobFunc:
        @functools.wraps(func)
        def run(repo_id: int) -> dict[str, Any]:
            _RUNNING_JOB.set()
            try:
                if STOP.is_set():
                    raise Interrupted("the worker is stopping")
                return func(repo_id)
            except Exception as error:
                exc = _interruption(error)
                if exc is None:
                    raise
                _RUNNING_JOB.clear()
                again = enqueue.request_again(enqueue.connect_redis(settings()), settings(), kind,
                                            repo_id)
                log.info("%s job of repo %s stopped (%s); queued again as %s", kind, repo_id,
                         exc.message, again)
                return {"interrupted": True, "reason": exc.message, "again": again}
            finally:
                _RUNNING_JOB.clear()

        return run

    return wrap


def _interruption(error: BaseException | None) -> Interrupted | None:
    """The ``Interrupted`` behind ``error``: raised mid-query, it can surface as the error
    of the cleanup that followed (a rollback on the interrupted session)."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, Interrupted):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


def _job_id() -> str | None:
    from rq import get_current_job

    job = get_current_job()
    return job.id if job is not None else None


@resumable("full")
def reconcile_repo(repo_id: int) -> dict[str, Any]:
    """Reconcile a whole repository with its files on disk."""
    s = settings()
    conn = enqueue.connect_redis(s)
    enqueue.claim_started(conn, "full", repo_id)
    covered = enqueue.pending_marks(conn, repo_id)  # a full pass reconciles these too
    summary = reconcile(s, repo_id, None, job_id=_job_id(), defer_graph=True, stop=STOP)
    enqueue.done_paths(conn, repo_id, covered)
    if summary.refused:  # not retried: nothing changes until the repository does
        return {"refused": summary.refused}
    refs_job = enqueue.request_refs(conn, s, repo_id) if summary.refs_due else None
    if not summary.run_id:  # a git directory: only its refs are indexed
        return {"refs_job": refs_job}
    graph_job = enqueue.request_graph(conn, s, repo_id) if summary.graph_deferred else None
    enqueue.request_embed(conn, s, repo_id)
    _overlays_after(conn, s, repo_id, bool(summary.files_parsed or summary.files_deleted))
    return {"run_id": summary.run_id, "files": summary.files_total,
            "parsed": summary.files_parsed, "deleted": summary.files_deleted,
            "seconds": round(summary.seconds, 3), "graph_job": graph_job,
            "refs_job": refs_job}


@resumable("graph")
def build_graph(repo_id: int) -> dict[str, Any]:
    """Build the graph of a repository's working tree in full (after its first index), holding the
    repository lock like an index run: a reconcile of saved files waits for it, then
    updates the graph incrementally. Nothing to do when a run already rebuilt it."""
    s = settings()
    rconn = enqueue.connect_redis(s)
    enqueue.claim_started(rconn, "graph", repo_id)
    with connect(s, application_name="codenav-graph") as db:
        if repos.get(db, repo_id) is None:  # deleted since the job was queued
            return {"refused": f"no repository with id {repo_id}"}
    job_id = _job_id() or "?"
    enqueue.mark_running(rconn, "graph", repo_id, job_id)
    try:
        with connect(s, application_name="codenav-graph") as db:
            db.execute(q.REPO_LOCK, (repo_id,))
            try:
                tree_id = worktree(db, repo_id)
                # what the first index left for this job: find_files' postings first, and
                # the checkout's recent history
                terms.fill_pending(s, db, tree_id)
                _read_history(db, repo_id, tree_id)
                filled = facts.fill_pending(s, db, tree_id)
                if filled >= facts.INLINE_LIMIT:
                    # This process parsed a share of them (``facts.fill_pending``); its heap
                    # keeps that memory, and the build would come on top of it. The build
                    # goes on in a job process of its own (queued before this one's mark
                    # goes, so the graph never looks done meanwhile): on Apache Kafka the
                    # job's process peaked at 290 MB after filling its share, 259 without.
                    again = enqueue.request_graph(rconn, s, repo_id)
                    return {"facts": filled, "graph_job": again}
                # the grep index the first index left, filled by a backend of its own
                # while this process resolves the graph
                with grams.alongside(s):
                    done = graph.update(db, tree_id, [], [])  # builds in full when stale
            finally:  # an interrupted query can leave the session unusable: closing unlocks
                with contextlib.suppress(psycopg.Error):
                    db.execute(q.REPO_UNLOCK, (repo_id,))
    finally:
        enqueue.mark_finished(rconn, "graph", repo_id, job_id)
    return {"files": done.files if done else 0,
            "seconds": round(done.seconds, 3) if done else 0.0}


def _read_history(db: psycopg.Connection, repo_id: int, tree_id: int) -> None:
    """The recent history of the repository's checkout (``codenav.index.history``), when it
    has one on this machine."""
    repo = repos.get(db, repo_id)
    if repo is None or repo.source == "git":
        return
    root = Path(roots.resolve(repo.root))
    if root.is_dir() and not is_bare(root):
        history.refresh(db, repo_id, tree_id, root)


@resumable("refs")
def sync_refs(repo_id: int) -> dict[str, Any]:
    """Index the refs asked for and the followed refs that moved, from the repository's
    git (no checkout), and move them; collect the trees nothing needs any more."""
    s = settings()
    conn = enqueue.connect_redis(s)
    enqueue.claim_started(conn, "refs", repo_id)
    asked = enqueue.asked_refs(conn, repo_id)
    summary = refs.sync(s, repo_id, asked, job_id=_job_id(), stop=STOP)
    enqueue.done_refs(conn, repo_id, asked)
    if summary.moved:
        enqueue.request_embed(conn, s, repo_id)
    return summary.to_json()


@resumable("publish")
def publish_refs(repo_id: int) -> dict[str, Any]:
    """Build the trees of the commits CI published for the repository and move their refs
    (``codenav.publish``)."""
    from codenav import publish

    s = settings()
    conn = enqueue.connect_redis(s)
    enqueue.claim_started(conn, "publish", repo_id)
    pending = enqueue.pending_publishes(conn, repo_id)
    out = publish.build(s, repo_id, pending, STOP)
    for ref in out.pop("done", []):
        enqueue.done_publish(conn, repo_id, ref, pending[ref])
    if out.get("moved"):
        enqueue.request_embed(conn, s, repo_id)
    _overlays_after(conn, s, repo_id, False)  # a repository CI feeds has no watcher's runs
    return out


def _overlays_after(rconn: Any, s: Settings, repo_id: int, changed: bool) -> None:
    """Overlays based on a working tree that moved are rebuilt on it; expired ones go."""
    from codenav import overlays

    if overlays.after_index(s, repo_id, changed):
        enqueue.request_overlay(rconn, s, repo_id)


@resumable("overlay")
def build_overlays(repo_id: int) -> dict[str, Any]:
    """Build the repository's overlays whose state moved (``codenav.overlays``), then embed
    what they added."""
    from codenav import overlays

    s = settings()
    conn = enqueue.connect_redis(s)
    enqueue.claim_started(conn, "overlay", repo_id)
    out = overlays.build_pending(s, repo_id, STOP)
    if out["built"]:
        enqueue.request_embed(conn, s, repo_id)
    return out


@resumable("paths")
def reconcile_pending(repo_id: int) -> dict[str, Any]:
    """Reconcile the paths requested for a repository since the last such job."""
    s = settings()
    conn = enqueue.connect_redis(s)
    enqueue.claim_started(conn, "paths", repo_id)
    changes = enqueue.pending_marks(conn, repo_id)
    if not changes:
        return {"paths": 0}
    summary = reconcile(s, repo_id, sorted(changes), job_id=_job_id(), stop=STOP)
    enqueue.done_paths(conn, repo_id, changes)
    if summary.refused:
        return {"refused": summary.refused}
    if summary.files_parsed or summary.changed_paths:
        enqueue.request_embed(conn, s, repo_id)
        _overlays_after(conn, s, repo_id, True)
    paths = list(changes)
    return {"run_id": summary.run_id, "paths": len(paths), "parsed": summary.files_parsed,
            "deleted": summary.files_deleted, "seconds": round(summary.seconds, 3)}


@resumable("embed")
def embed_repo(repo_id: int) -> dict[str, Any]:
    """Embed the chunks of a repository that have no vector for the configured model yet.
    Works for a bounded time and re-queues itself while a backlog remains."""
    s = settings()
    client = EmbedClient.from_settings(s)
    if client is None:
        return {"embedded": 0, "reason": "no embedder configured (CODENAV_EMBED_URL)"}
    conn = enqueue.connect_redis(s)
    enqueue.claim_started(conn, "embed", repo_id)
    try:
        with connect(s, application_name="codenav-embed") as db:
            try:
                run = embed_backlog(db, client, repo_id, EMBED_BUDGET_S, stop=STOP)
            except Unavailable as exc:  # the embedder went away (restarting, or stopped)
                log.warning("repo %s: %s; embedding resumes when it is back", repo_id,
                            exc.message)
                if not _embedder_back(client, EMBEDDER_WAIT_S):
                    enqueue.request_embed(conn, s, repo_id)
                    return {"embedded": 0, "waiting": exc.message}
                run = embed_backlog(db, client, repo_id, EMBED_BUDGET_S, stop=STOP)
    finally:
        client.close()
    if run.remaining:
        enqueue.request_embed(conn, s, repo_id)
    return {"embedded": run.embedded, "remaining": run.remaining,
            "seconds": round(run.seconds, 2)}


def _embedder_back(client: EmbedClient, timeout: float) -> bool:
    """Wait (bounded, stopping with the worker) until the embedder answers again."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if STOP.wait(1.0):
            raise Interrupted("the worker is stopping")
        try:
            client.reset()
            client.info()
            return True
        except Unavailable:
            continue
    return False
