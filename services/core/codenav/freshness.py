"""Honest freshness: what an answer could not see, and whether a repository is fresh.

Inputs come from the queue (paths seen changing on disk and not reconciled yet, jobs
waiting), the latest index run, and the watcher's heartbeat; this module only decides.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Iterator
from typing import Any

SHOWN = 20
WATCHER_STALE_S = 30.0


def annotate(answer: dict[str, Any], stale: dict[str, str], pending_total: int,
             unindexed: int, run: dict[str, Any] | None) -> dict[str, Any]:
    """Flag results from files changed on disk since indexing (``stale: true``), say when
    the index is being updated (served from the last complete state), and how many files
    on disk are not indexed yet."""
    listed = _mark(answer, stale, "stale", True)
    if listed:
        answer["stale_paths"] = sorted(listed)[:SHOWN]
    if run is not None and run.get("state") == "running":
        answer["index_status"] = "updating" if run.get("scope") == "paths" or \
            run.get("files_done") else "indexing"
        answer["progress"] = {"files_done": run.get("files_done", 0),
                              "files_total": run.get("files_total", 0),
                              "phase": run.get("phase", "")}
    if pending_total:
        answer["pending_changes"] = pending_total
    if unindexed:
        answer["unindexed_files"] = unindexed
    return answer


def _nodes(answer: Any) -> Iterator[dict[str, Any] | str]:
    """Every object of an answer (search results, references, impact chains, outline...)
    and every string held in a list (a list of files), never inside ``content``."""
    todo = [answer]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            yield node
            todo += [v for k, v in node.items() if k != "content" and isinstance(v, dict | list)]
        elif isinstance(node, list):
            for item in node:
                if isinstance(item, str):
                    yield item
                elif isinstance(item, dict | list):
                    todo.append(item)


def answer_paths(node: Any, limit: int = 1000) -> list[str]:
    """The paths an answer mentions (``path`` fields, and strings in lists), to look up in
    the pending changes; at most ``limit``."""
    found: dict[str, None] = {}
    for item in _nodes(node):
        path = item.get("path") if isinstance(item, dict) else item
        if isinstance(path, str):
            found[path] = None
            if len(found) >= limit:
                break
    return list(found)


def _mark(answer: dict[str, Any], paths: Collection[str], key: str, value: Any) -> set[str]:
    """Set ``key`` on every object of the answer whose ``path`` is one of ``paths``; the
    ones that appear only as plain strings are returned."""
    listed: set[str] = set()
    for item in _nodes(answer):
        if isinstance(item, str):
            if item in paths:
                listed.add(item)
        elif isinstance(item.get("path"), str) and item["path"] in paths:
            item[key] = value
    return listed


def mark_local(answer: dict[str, Any], local: set[str]) -> None:
    """With an overlay: every object of the answer whose ``path`` is one of the caller's
    uncommitted files gets ``source: "local"`` (plain-string paths are listed in
    ``local_files``)."""
    if not local:
        return
    listed = _mark(answer, local, "source", "local")
    if listed:
        answer["local_files"] = sorted(listed)


def repo_freshness(pending: dict[str, str], waiting: dict[str, str],
                   run: dict[str, Any] | None, watcher: dict[str, Any] | None,
                   queue_error: str | None = None, published: bool = False) -> dict[str, Any]:
    """``fresh`` is true only when nothing is pending, queued or running for the repo's
    index (files, chunks, graph) and a watcher is alive to notice the next change (a
    repository CI ``published`` has nothing on disk to watch: CI sends its changes), its
    watch caught up: the full reconcile that follows a watch's start has been asked for.
    Embedding is not part of it: a backlog of vectors can take an hour on a CPU while the
    index is current, and it is reported apart (``embedding`` here, coverage in
    ``embeddings``)."""
    waiting = dict(waiting)
    embedding = waiting.pop("embed", None)
    by_kind: dict[str, list[str]] = {"changed": [], "unindexed": [], "deleted": []}
    for path, kind in sorted(pending.items()):
        by_kind.setdefault(kind, []).append(path)
    reasons = []
    if queue_error:
        reasons.append(f"queue unreachable ({queue_error})")
    if pending:
        reasons.append(f"{len(pending)} changed paths not reconciled yet")
    if waiting:
        reasons.append("jobs queued or running: " + ", ".join(
            f"{kind} {job}" if job.startswith("running") else kind
            for kind, job in sorted(waiting.items())))
    if run is not None and run.get("state") == "running":
        reasons.append(f"index run in progress ({run.get('files_done', 0)}/"
                       f"{run.get('files_total', 0)} files)")
    if run is None:
        if not published:
            reasons.append("never indexed")
    elif run.get("state") == "failed":
        reasons.append(f"last run failed: {run.get('error', '')}")
    alive = watcher is not None and time.time() - float(watcher.get("at", 0)) < WATCHER_STALE_S
    if not alive and not published:
        reasons.append("no watcher is running: changes on disk are not noticed")
    elif alive and watcher is not None and watcher.get("catching_up"):
        reasons.append("the watch is starting: a full reconcile follows, for changes made "
                       "before it was up")
    out: dict[str, Any] = {
        "fresh": not reasons,
        "changed": {k: {"count": len(v), "paths": v[:SHOWN]} for k, v in by_kind.items()},
        "queued_jobs": waiting,
        "watcher": ({"mode": watcher.get("mode"), "alive": alive,
                     "watched_dirs": watcher.get("watched_dirs")} if watcher else
                    {"alive": False}),
    }
    if embedding is not None:
        out["embedding"] = "queued"
    if reasons:
        out["reasons"] = reasons
    return out
