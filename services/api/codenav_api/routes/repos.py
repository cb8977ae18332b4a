"""Repositories and index jobs."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends

from codenav import queue, repos
from codenav.db import queries as q
from codenav.errors import NotFound
from codenav.status import run_info
from codenav_api.deps import require_token, services
from codenav_api.models import RepoCreate
from codenav_api.service import Services

router = APIRouter(prefix="/v1", tags=["repos"], dependencies=[Depends(require_token)])


def _repo_dict(repo: repos.Repo) -> dict[str, Any]:
    return {"id": repo.id, "name": repo.name, "root": repo.root,
            "indexed_at": repo.indexed_at.isoformat() if repo.indexed_at else None,
            "indexed_commit": repo.indexed_commit}


@router.get("/repos", summary="Registered repositories")
def list_repos(svc: Services = Depends(services)) -> dict[str, Any]:
    with svc.connection() as conn:
        return {"repos": [_repo_dict(r) for r in repos.list_repos(conn)]}


@router.post("/repos", summary="Register a repository (and queue its indexing)")
def create_repo(body: RepoCreate, svc: Services = Depends(services)) -> dict[str, Any]:
    with svc.connection() as conn:
        repo = repos.register(conn, body.root, body.name)
    out: dict[str, Any] = {"repo": _repo_dict(repo)}
    if body.index:
        out["job_id"] = queue.request_full(svc.redis, svc.settings, repo.id)
    return out


@router.get("/jobs/{job_id}", summary="State and progress of an index job")
def job(job_id: str, svc: Services = Depends(services)) -> dict[str, Any]:
    info = queue.job_info(svc.redis, job_id)
    with svc.connection() as conn:
        run = run_info(conn.execute(q.RUN_BY_JOB, (job_id,)).fetchone())
        repo_id = info.pop("repo_id", None) if info else None
        latest = run_info(conn.execute(q.RUN_LATEST, (repo_id,)).fetchone()) \
            if repo_id is not None else None
    if info is None and run is None:
        raise NotFound(f"no job {job_id!r}", hint="jobs are kept for a day after they finish")
    out: dict[str, Any] = info or {"job_id": job_id, "state": "unknown"}
    if run is not None:
        out["run"] = run
    if latest is not None:
        out["repo_run"] = latest  # the repository's latest run, whichever job runs it
    return out
