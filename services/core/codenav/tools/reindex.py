"""``reindex``: ask the index to refresh a repository, or some of its paths (write)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from codenav.tools.base import Args, Call, Cli, Tool


class ReindexArgs(Args):
    paths: list[str] | None = Field(default=None, max_length=10000,
                                    description="only these repo-relative paths")


def handle(call: Call, args: ReindexArgs) -> dict[str, Any]:
    """Ask the index to refresh: whole repo, just the given paths, or (with ref) that ref
    from the repository's git."""
    from codenav import navigate, roots
    from codenav.db import queries as q
    from codenav.errors import InvalidRequest
    from codenav.jobs import enqueue

    scope, host = call.target, call.host
    if scope.repo.source == "remote":
        raise InvalidRequest(f"{scope.name} is published by CI: nothing of it is on this "
                             "server's disk", hint="run codenav publish in its CI job")
    roots.check(host.settings, scope.repo.root)
    # a repository registered with ``index: false`` is indexed from now on (it was asked)
    if not scope.repo.index_enabled:
        call.conn.execute(q.REPO_ENABLE_INDEX, scope.params())
    if args.ref:
        name = scope.at.ref or scope.at.commit or args.ref
        job_id = enqueue.request_refs(host.redis, host.settings, scope.id, {name: ""})
        return {"repo": scope.name, "scope": "ref", "ref": name, "job_id": job_id}
    if args.paths:
        clean = [navigate.clean_path(p) for p in args.paths]
        job_id = enqueue.request_paths(host.redis, host.settings, scope.id, clean)
        return {"repo": scope.name, "scope": "paths", "paths": clean, "job_id": job_id}
    job_id = enqueue.request_full(host.redis, host.settings, scope.id)
    return {"repo": scope.name, "scope": "full", "job_id": job_id}


def render(data: dict[str, Any]) -> str:
    """queue a reindex of the repo, of some paths, or of a ref from git"""
    return f"queued {data.get('scope', 'index')} job {data.get('job_id', '')} for " \
           f"{data.get('repo')}" + (f" ({len(data['paths'])} paths)" if data.get("paths") else
                                    f" at {data['ref']}" if data.get("ref") else "")


TOOL = Tool("reindex", "Queue a reindex of the repo or of some paths (write)",
            ReindexArgs, handle, render, role="write", cli=Cli(positional=("paths",)), fresh=False,
            counted=False)
