"""Honest freshness: what an answer could not see, and whether a repository is fresh.

Inputs come from the queue (paths seen changing on disk and not reconciled yet, jobs
waiting), the latest index run, and the watcher's heartbeat; this module only decides.
"""

from __future__ import annotations

import time
from typing import Any

SHOWN = 20
WATCHER_STALE_S = 30.0


def annotate(answer: dict[str, Any], stale: dict[str, str], pending_total: int,
             unindexed: int, run: dict[str, Any] | None) -> dict[str, Any]:
    """Flag results from files changed on disk since indexing (``stale: true``), say when
    the index is being updated (served from the last complete state), and how many files
    on disk are not indexed yet."""
    for result in answer.get("results", []):
        if result.get("path") in stale:
            result["stale"] = True
    if answer.get("path") in stale:
        answer["stale"] = True
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


def repo_freshness(pending: dict[str, str], waiting: dict[str, str],
                   run: dict[str, Any] | None, watcher: dict[str, Any] | None,
                   queue_error: str | None = None) -> dict[str, Any]:
    """``fresh`` is true only when nothing is pending, queued or running for the repo and
    a watcher is alive to notice the next change."""
    by_kind: dict[str, list[str]] = {"changed": [], "unindexed": [], "deleted": []}
    for path, kind in sorted(pending.items()):
        by_kind.setdefault(kind, []).append(path)
    reasons = []
    if queue_error:
        reasons.append(f"queue unreachable ({queue_error})")
    if pending:
        reasons.append(f"{len(pending)} changed paths not reconciled yet")
    if waiting:
        reasons.append("index jobs queued: " + ", ".join(sorted(waiting)))
    if run is not None and run.get("state") == "running":
        reasons.append(f"index run in progress ({run.get('files_done', 0)}/"
                       f"{run.get('files_total', 0)} files)")
    if run is None:
        reasons.append("never indexed")
    elif run.get("state") == "failed":
        reasons.append(f"last run failed: {run.get('error', '')}")
    alive = watcher is not None and time.time() - float(watcher.get("at", 0)) < WATCHER_STALE_S
    if not alive:
        reasons.append("no watcher is running: changes on disk are not noticed")
    out: dict[str, Any] = {
        "fresh": not reasons,
        "changed": {k: {"count": len(v), "paths": v[:SHOWN]} for k, v in by_kind.items()},
        "queued_jobs": waiting,
        "watcher": ({"mode": watcher.get("mode"), "alive": alive,
                     "watched_dirs": watcher.get("watched_dirs")} if watcher else
                    {"alive": False}),
    }
    if reasons:
        out["reasons"] = reasons
    return out
