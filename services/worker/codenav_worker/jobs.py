"""RQ jobs. Each is a thin wrapper over ``codenav.indexer.reconcile`` and idempotent:
running one twice, or again after a crash half-way, converges to the same index."""

from __future__ import annotations

from typing import Any

from codenav import queue, repos
from codenav.config import Settings
from codenav.db import queries as q
from codenav.db.connect import connect
from codenav.embed_client import EmbedClient
from codenav.embeddings import embed_backlog
from codenav.graph import build as graph
from codenav.graph import facts
from codenav.indexer import reconcile

EMBED_BUDGET_S = 30.0
"""An embed job works this long, then re-queues itself, so index jobs never wait long."""

_SETTINGS: Settings | None = None


def settings() -> Settings:
    global _SETTINGS
    if _SETTINGS is None:
        _SETTINGS = Settings.load()
    return _SETTINGS


def _job_id() -> str | None:
    from rq import get_current_job

    job = get_current_job()
    return job.id if job is not None else None


def reconcile_repo(repo_id: int) -> dict[str, Any]:
    """Reconcile a whole repository with its files on disk."""
    s = settings()
    conn = queue.connect_redis(s)
    queue.claim_started(conn, "full", repo_id)
    covered = queue.pending_changes(conn, repo_id)  # a full pass reconciles these too
    summary = reconcile(s, repo_id, None, job_id=_job_id(), defer_graph=True)
    queue.done_paths(conn, repo_id, covered)
    if summary.refused:  # not retried: nothing changes until the repository does
        return {"refused": summary.refused}
    graph_job = queue.request_graph(conn, s, repo_id) if summary.graph_deferred else None
    queue.request_embed(conn, s, repo_id)
    return {"run_id": summary.run_id, "files": summary.files_total,
            "parsed": summary.files_parsed, "deleted": summary.files_deleted,
            "seconds": round(summary.seconds, 3), "graph_job": graph_job}


def build_graph(repo_id: int) -> dict[str, Any]:
    """Build a repository's code graph in full (after its first index), holding the
    repository lock like an index run: a reconcile of saved files waits for it, then
    updates the graph incrementally. Nothing to do when a run already rebuilt it."""
    s = settings()
    rconn = queue.connect_redis(s)
    queue.claim_started(rconn, "graph", repo_id)
    with connect(s, application_name="codenav-graph") as db:
        if repos.get(db, repo_id) is None:  # deleted since the job was queued
            return {"refused": f"no repository with id {repo_id}"}
    queue.mark_running(rconn, "graph", repo_id, _job_id())
    try:
        with connect(s, application_name="codenav-graph") as db:
            db.execute(q.REPO_LOCK, (repo_id,))
            try:
                facts.fill_pending(s, db, repo_id)  # what the first index left for this job
                done = graph.update(db, repo_id, [], [])  # builds in full when marked stale
            finally:
                db.execute(q.REPO_UNLOCK, (repo_id,))
    finally:
        queue.mark_finished(rconn, "graph", repo_id)
    return {"files": done.files if done else 0,
            "seconds": round(done.seconds, 3) if done else 0.0}


def reconcile_pending(repo_id: int) -> dict[str, Any]:
    """Reconcile the paths requested for a repository since the last such job."""
    s = settings()
    conn = queue.connect_redis(s)
    queue.claim_started(conn, "paths", repo_id)
    changes = queue.pending_changes(conn, repo_id)
    if not changes:
        return {"paths": 0}
    summary = reconcile(s, repo_id, sorted(changes), job_id=_job_id())
    queue.done_paths(conn, repo_id, changes)
    if summary.refused:
        return {"refused": summary.refused}
    if summary.files_parsed or summary.changed_paths:
        queue.request_embed(conn, s, repo_id)
    paths = list(changes)
    return {"run_id": summary.run_id, "paths": len(paths), "parsed": summary.files_parsed,
            "deleted": summary.files_deleted, "seconds": round(summary.seconds, 3)}


def embed_repo(repo_id: int) -> dict[str, Any]:
    """Embed the chunks of a repository that have no vector for the configured model yet.
    Works for a bounded time and re-queues itself while a backlog remains."""
    s = settings()
    client = EmbedClient.from_settings(s)
    if client is None:
        return {"embedded": 0, "reason": "no embedder configured (CODENAV_EMBED_URL)"}
    conn = queue.connect_redis(s)
    queue.claim_started(conn, "embed", repo_id)
    try:
        with connect(s, application_name="codenav-embed") as db:
            run = embed_backlog(db, client, repo_id, EMBED_BUDGET_S)
    finally:
        client.close()
    if run.remaining:
        queue.request_embed(conn, s, repo_id)
    return {"embedded": run.embedded, "remaining": run.remaining,
            "seconds": round(run.seconds, 2)}
