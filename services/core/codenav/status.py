"""``status``: what is indexed, what is running, what was skipped and why."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import redis

from codenav import access, freshness
from codenav.access import Caller, Scope, visible_repos
from codenav.answers import postings_pending, stats
from codenav.config import Settings
from codenav.db import queries as q
from codenav.embed import vectors
from codenav.embed.client import EmbedClient
from codenav.errors import CodenavError
from codenav.jobs import coordination, enqueue
from codenav.versions import CHUNKER_VERSION, SCHEMA_VERSION

SKIPPED_SHOWN = 20
REDACTED_SHOWN = 20


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def run_info(row: tuple | None) -> dict[str, Any] | None:
    if row is None:
        return None
    (run_id, scope, state, phase, total, done, parsed, deleted, error, started, updated,
     finished, job_id) = row
    info: dict[str, Any] = {"id": run_id, "scope": scope, "state": state, "phase": phase,
                            "files_total": total, "files_done": done, "files_parsed": parsed,
                            "files_deleted": deleted, "started_at": _iso(started),
                            "updated_at": _iso(updated)}
    if finished:
        info["finished_at"] = _iso(finished)
        info["seconds"] = round((finished - started).total_seconds(), 2)
    if error:
        info["error"] = error
    if job_id:
        info["job_id"] = job_id
    return info


def redactions(conn: psycopg.Connection, scope: Scope) -> dict[str, Any]:
    """Secrets redacted inside indexed files: counts per file, with lines and kinds."""
    rows = conn.execute(scope.sql(q.REPO_REDACTIONS), scope.params(k=REDACTED_SHOWN)).fetchall()
    out: dict[str, Any] = {"files": int(rows[0][2]) if rows else 0,
                           "secrets": int(rows[0][3]) if rows else 0}
    if rows:
        out["by_file"] = [{"path": path, "count": len(found),
                           "lines": sorted({int(f["line"]) for f in found}),
                           "kinds": sorted({str(f["type"]) for f in found})}
                          for path, found, _files, _total in rows]
    return out


def as_text(conn: psycopg.Connection, scope: Scope) -> dict[str, Any] | None:
    """Files indexed as plain text because their structure could not be read, or None."""
    rows = conn.execute(scope.sql(q.REPO_AS_TEXT), scope.params(k=SKIPPED_SHOWN)).fetchall()
    if not rows:
        return None
    return {"total": int(rows[0][2]),
            "message": "indexed as plain text, without symbols or a code graph: their "
                       "structure could not be read",
            "examples": [{"path": path, "reason": reason} for path, reason, _n in rows]}


def file_count(conn: psycopg.Connection, scope: Scope) -> int:
    row = conn.execute(scope.sql(q.REPO_COUNTS), scope.params()).fetchone()
    return int(row[0]) if row else 0


def repo_status(conn: psycopg.Connection, scope: Scope) -> dict[str, Any]:
    repo = scope.repo
    n_files, total_bytes, _contents = conn.execute(scope.sql(q.REPO_COUNTS),
                                                   scope.params()).fetchone() or (0, 0, 0)
    languages: dict[str, int] = dict(conn.execute(scope.sql(q.REPO_LANGUAGES),
                                                  scope.params()).fetchall())
    chunks = conn.execute(scope.sql(q.REPO_CHUNKS), scope.params()).fetchone()
    skipped: dict[str, int] = dict(conn.execute(q.SKIPPED_SUMMARY, scope.params()).fetchall())
    skipped_list = [{"path": p, "reason": r, **({"detail": d} if d else {})}
                    for p, r, d in conn.execute(q.SKIPPED_LIST, scope.params(k=SKIPPED_SHOWN))]
    gitignored = conn.execute(q.REPO_GITIGNORED, scope.params()).fetchone()
    latest = run_info(conn.execute(q.RUN_LATEST, scope.params()).fetchone())
    running = latest is not None and latest["state"] == "running"
    if running:
        index_status = "updating" if n_files else "indexing"
    elif n_files:
        index_status = "ready"
    elif not repo.index_enabled:
        index_status = "not_indexed"
    else:
        index_status = "empty"
    out: dict[str, Any] = {
        "id": repo.id, "name": repo.name, "team": repo.team, "root": repo.root,
        "index_status": index_status, "indexing": "on" if repo.index_enabled else
        "off (registered with index: false; reindex starts it)",
        "files": int(n_files), "bytes": int(total_bytes),
        "chunks": int(chunks[0]) if chunks else 0, "languages": languages,
        "indexed_at": _iso(repo.indexed_at), "indexed_commit": repo.indexed_commit,
        "skipped": {"total": sum(skipped.values()), "by_reason": skipped,
                    "gitignored": int(gitignored[0]) if gitignored else 0,
                    "examples": skipped_list},
        "redacted": redactions(conn, scope),
    }
    text_only = as_text(conn, scope)
    if text_only:
        out["as_text"] = text_only
    grep_pending = conn.execute(scope.sql(q.REPO_GREP_PENDING), scope.params()).fetchone()
    if grep_pending and grep_pending[0]:
        out["grep_index"] = {
            "files_pending": int(grep_pending[0]),
            "message": "the graph job adds these files to grep's trigram index; until then "
                       "grep reads their bodies itself (the same matches, more slowly)"}
    pending = postings_pending(conn, scope)
    if pending:
        out["file_terms"] = pending
    read = conn.execute(q.HISTORY_STATUS, scope.params()).fetchone()
    if read:  # what find_files' history features were read from (codenav.index.history)
        out["history"] = {"commit": read[0], "files_changed": int(read[1]),
                          "read_at": _iso(read[2])}
    if latest:
        out["last_run"] = latest
    out["ref"] = scope.at.describe()
    out["source"] = repo.source
    if repo.default_ref:
        out["default_ref"] = repo.default_ref
    if repo.follow:
        out["follow"] = {"patterns": list(repo.follow), "keep": repo.keep}
    refs = ref_list(conn, scope)
    if refs:
        out["refs"] = refs
    return out


def ref_list(conn: psycopg.Connection, scope: Scope) -> list[dict[str, Any]]:
    """The named refs of a repository: commit, when it moved and by whom, files, whether
    its graph is layered on another tree's, and the earlier commits it keeps."""
    out = []
    for name, commit, moved_at, moved_by, layered, files, kept in \
            conn.execute(q.REF_LIST, scope.params()).fetchall():
        entry: dict[str, Any] = {"name": name, "commit": commit, "moved_at": _iso(moved_at),
                                 "files": int(files)}
        if moved_by:
            entry["moved_by"] = moved_by
        if layered:
            entry["graph"] = "layered"
        if kept:
            entry["kept"] = list(kept)
        out.append(entry)
    return out


def scopes_of(conn: psycopg.Connection, caller: Caller) -> list[Scope]:
    """A scope for every repository the caller may see."""
    repos = visible_repos(conn, caller)
    visible = tuple(r.id for r in repos)
    return [Scope(caller, r, visible) for r in repos]


def status(conn: psycopg.Connection, scopes: list[Scope]) -> dict[str, Any]:
    """The state of the repositories of ``scopes`` (one, or all a caller may see)."""
    started = time.monotonic()
    answer: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION, "chunker_version": CHUNKER_VERSION,
        "repos": [repo_status(conn, s) for s in scopes],
    }
    if not scopes:
        answer["empty"] = {"code": "not_indexed", "message": "no repository is registered; "
                           "run `codenav index PATH`"}
    answer["_stats"] = stats(answer, {}, started)
    return answer


def health(queue_error: str | None, workers: dict[str, int] | None,
           embedder: str | None) -> dict[str, Any]:
    """The services behind the answers, and what is degraded while one is down: the API
    keeps answering from the index it has (``degraded`` says what is missing)."""
    out: dict[str, Any] = {"database": "ok",
                           "queue": f"unreachable ({queue_error})" if queue_error else "ok"}
    degraded = []
    if queue_error:
        degraded.append(f"queue unreachable ({queue_error}): changes on disk wait until it "
                        "is back; answers come from the index as it is")
    if workers is not None:
        out["workers"] = workers
        if not workers.get("index"):
            degraded.append("no index worker is running: index jobs wait for one")
        if embedder is not None and not workers.get("embed"):
            degraded.append("no embedding worker is running: new chunks wait for their "
                            "vectors (search finds them lexically)")
    if embedder is not None:
        out["embedder"] = embedder
        if embedder != "ok":
            degraded.append(f"embedder unavailable ({embedder}): semantic ranking is off, "
                            "answers are lexical")
    out["degraded"] = degraded
    return out


def report(conn: psycopg.Connection, caller: Caller, repo_name: str | None, settings: Settings,
           rconn: redis.Redis, client: EmbedClient | None,
           ref: str | None = None) -> dict[str, Any]:
    """The ``status`` tool's answer: the repositories (one, or all ``caller`` may see) with
    their refs, freshness and embedding coverage, the queue, and what is degraded; with
    ``ref``, the repository's state at that ref."""
    scopes = [access.resolve(conn, caller, repo_name, ref)] if repo_name or ref else \
        scopes_of(conn, caller)
    visible = {s.id: s for s in scopes}
    answer = status(conn, scopes)
    error = None
    workers = None
    depth: dict[str, Any] = {}
    try:  # the queue first: its state is what changes fastest
        if caller.role == "admin":  # lane depths span every team: admins only
            depth = enqueue.queue_depth(rconn, settings)
        workers = {lane: len(names) for lane, names in coordination.live_workers(rconn).items()}
    except redis.RedisError as exc:
        error = type(exc).__name__
    embedder = probe_embedder(client)
    answer["services"] = health(error, workers, embedder)
    jobs = 0
    for entry in answer["repos"]:
        repo_id = entry.pop("id")
        pending: dict[str, str] = {}
        waiting: dict[str, str] = {}
        watcher = None
        if error is None:
            try:
                pending = enqueue.pending_changes(rconn, repo_id)
                waiting = enqueue.waiting(rconn, repo_id)
                watcher = coordination.watcher_state(rconn, repo_id)
            except redis.RedisError as exc:
                error = type(exc).__name__
        entry["freshness"] = freshness.repo_freshness(pending, waiting,
                                                      entry.get("last_run"), watcher, error,
                                                      entry.get("source") == "remote")
        entry["embeddings"] = embedding_status(conn, visible[repo_id], client, embedder)
        if pending and entry["index_status"] == "ready":
            entry["index_status"] = "stale"
        jobs += len(waiting)
    # Only this caller's repositories: other teams' activity is theirs.
    answer["queue"] = {"error": "queue unreachable"} if error else \
        {"jobs": jobs, "of": "the repositories this token sees", **depth}
    return answer


def probe_embedder(client: EmbedClient | None) -> str | None:
    """``ok``, or why the embedder does not serve (None: none is configured)."""
    if client is None:
        return None
    try:
        client.reset()  # ask now: it may have died or come back since
        client.info()
    except CodenavError as exc:
        return exc.message
    return "ok"


def embedding_status(conn: psycopg.Connection, scope: Scope, client: EmbedClient | None,
                     embedder: str | None) -> dict[str, Any]:
    """Embedding coverage of a repo for the configured model (embedded / total)."""
    if client is None:
        return {"configured": False, "note": "semantic search is off (CODENAV_EMBED_URL)"}
    if embedder != "ok":
        return {"configured": True, "available": False, "note": embedder}
    info = client.info()
    model = vectors.find_model(conn, info.name)
    return {"configured": True, "available": True, **vectors.coverage(conn, model, scope)}


def annotate(conn: psycopg.Connection, scope: Scope, rconn: redis.Redis,
             answer: dict[str, Any]) -> None:
    """Freshness signals on an answer: stale results, runs in progress."""
    run = run_info(conn.execute(q.RUN_LATEST, scope.params()).fetchone())
    stale: dict[str, str] = {}
    pending: dict[str, int] = {}
    if scope.at.kind == "worktree":  # a commit tree never changes: nothing is stale in it
        paths = freshness.answer_paths(answer)
        try:
            stale, pending = enqueue.pending_state(rconn, scope.id, paths)
        except redis.RedisError:
            stale, pending = {}, {}
    freshness.annotate(answer, stale, sum(pending.values()), pending.get("unindexed", 0), run)
